//! Loading the BPF side, registering its congestion-control names, and reaching its maps.
//!
//! The shared maps (decisions, reports ring, config, counters) are pinned by name under a bpffs directory
//! so that flows started under one agent keep running through their programs when it dies (the watchdog
//! falls back to Reno) and a restarted agent finds them again. The struct_ops registrations are links:
//! dropping them, or the agent's death closing their descriptors, unregisters the names at once.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType, Object, ObjectBuilder, RingBuffer, RingBufferBuilder};
use serde::Serialize;

use crate::codec::Decision;

/// The compiled BPF object (built by build.rs from bpf/sluice.bpf.c).
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sluice.bpf.o"));

/// The benchmark's floor program (bpf/floor.bpf.c): a `cong_control` that only runs the kernel's Reno.
const FLOOR_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/floor.bpf.o"));

/// The congestion-control name the floor program registers (not an agent name: [`registered_names`]
/// does not list it).
pub const FLOOR_NAME: &str = "slkfloor";

/// The congestion-control names the BPF side registers, in slot order, with the algorithm each one
/// selects (`None`: the agent's port rules and default decide).
pub const SLOTS: [(&str, Option<&str>); 8] = [
    ("sluice", None),
    ("sluice_reno", Some("reno")),
    ("sluice_cubic", Some("cubic")),
    ("sluice_vegas", Some("vegas")),
    ("sluice_dctcp", Some("dctcp")),
    ("sluice_bbr", Some("bbr")),
    ("sluice_swift", Some("swift")),
    ("sluice_timely", Some("timely")),
];

/// Byte offsets of the fields of `struct slk_settings` (bpf/sluice.h), the config map's one value.
mod cfg {
    pub const EPOCH: usize = 0;
    pub const WATCHDOG_NS: usize = 8;
    pub const BATCH_ACKS: usize = 16;
    pub const DEADLINE_NS: usize = 24;
    pub const WAKEUP_BYTES: usize = 32;
    pub const SIZE: usize = 48;
}

/// The BPF side's counters (`enum slk_counter` in bpf/sluice.h), summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounters {
    /// ACKs folded.
    pub acks: u64,
    /// Reports submitted to the ring.
    pub reports: u64,
    /// Of them, urgent (woke the agent at once).
    pub urgent: u64,
    /// Ring-buffer reservations that failed (ring full): the fold is kept for the next report.
    pub ringbuf_full: u64,
    /// Decisions applied.
    pub applied: u64,
    /// Decisions rejected as stale.
    pub stale: u64,
    /// Decisions rejected as malformed.
    pub malformed: u64,
    /// Times a flow fell back to the kernel's Reno.
    pub fallbacks: u64,
    /// Times a flow was handed back to the agent.
    pub resumed: u64,
    /// ACKs of flows without per-flow state.
    pub no_state: u64,
}

impl KernelCounters {
    fn from_slots(v: &[u64]) -> KernelCounters {
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        KernelCounters {
            acks: at(0),
            reports: at(1),
            urgent: at(2),
            ringbuf_full: at(3),
            applied: at(4),
            stale: at(5),
            malformed: at(6),
            fallbacks: at(7),
            resumed: at(8),
            no_state: at(9),
        }
    }
}

/// Counters in the counters map's value (`SLK_C_MAX` in bpf/sluice.h).
const COUNTER_SLOTS: u32 = 10;

/// What went wrong loading or talking to the BPF side.
#[derive(Debug)]
pub struct KernelError(pub String);

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KernelError {}

fn kerr(what: &str, e: impl fmt::Display) -> KernelError {
    KernelError(format!("{what}: {e}"))
}

/// The bit [`Maps::write_raw_decision`] flips in a generation word; the agent's own increments would take
/// 2^31 writes to one slot to reach a value it wrote.
const FOREIGN_GENERATION_BIT: u32 = 1 << 31;

/// Writes the agent's decisions: each drain's decisions in one batch, then their flows' generation
/// words in another, so that a drain costs two system calls instead of three per decision (a
/// 1,000-flow start answered one by one kept the agent writing for milliseconds while reports aged
/// toward the watchdog). The writer keeps its own copy of the words it wrote; a word it has not written
/// yet is read from the map once (an earlier agent's flows watch it too).
#[derive(Debug, Default)]
pub struct DecisionWriter {
    words: std::collections::HashMap<u32, u32>,
}

impl DecisionWriter {
    /// Writes `decisions` (at most one per flow); returns how many the map refused (full, or a write
    /// error), whose flows get the same state with their next answer.
    pub fn write(&mut self, maps: &Maps, decisions: &[Decision]) -> u64 {
        if decisions.is_empty() {
            return 0;
        }
        let written = maps.put_decisions(decisions);
        let mut refused = (decisions.len() - written.len()) as u64;
        let mut words = std::collections::BTreeMap::new();
        for id in &written {
            let slot = generation_slot(*id);
            let word = match self.words.get(&slot) {
                Some(&w) => w,
                None => match maps.generation(slot) {
                    Ok(w) => w,
                    Err(_) => {
                        refused += 1;
                        continue;
                    }
                },
            };
            let next = word.wrapping_add(1);
            self.words.insert(slot, next);
            words.insert(slot, next);
        }
        let words: Vec<(u32, u32)> = words.into_iter().collect();
        if !words.is_empty() && maps.set_generations(&words).is_err() {
            // Unknown which words moved: forget them all, so the next write reads them again.
            for (slot, _) in &words {
                self.words.remove(slot);
            }
            refused += words.len() as u64;
        }
        refused
    }
}

/// Slots of the decision-generation array (`SLK_GEN_SLOTS` in bpf/sluice.h).
pub const GEN_SLOTS: u32 = 65536;

/// The generation word that flow `flow_id` watches.
pub fn generation_slot(flow_id: u64) -> u32 {
    (flow_id as u32) & (GEN_SLOTS - 1)
}

/// The BPF side's settings, written to its config map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSettings {
    /// Watchdog timeout, ns.
    pub watchdog_ns: u64,
    /// ACKs per report.
    pub batch_acks: u32,
    /// Report deadline, ns.
    pub deadline_ns: u64,
    /// Wake the agent when this many bytes wait in the ring.
    pub wakeup_bytes: u32,
}

/// Handles on the pinned maps (usable without loading the programs: tests and tools).
pub struct Maps {
    decisions: MapHandle,
    decision_gen: MapHandle,
    reports: MapHandle,
    config: MapHandle,
    counters: MapHandle,
}

impl Maps {
    /// Opens the maps pinned under `pin_dir`.
    pub fn open(pin_dir: &Path) -> Result<Maps, KernelError> {
        let open = |name: &str| {
            MapHandle::from_pinned_path(pin_dir.join(name)).map_err(|e| kerr(&format!("open pinned map {name}"), e))
        };
        Ok(Maps {
            decisions: open("slk_decisions")?,
            decision_gen: open("slk_decision_gen")?,
            reports: open("slk_reports")?,
            config: open("slk_config")?,
            counters: open("slk_counters")?,
        })
    }

    fn from_object(object: &Object) -> Result<Maps, KernelError> {
        let find = |name: &str| {
            let map = object
                .maps()
                .find(|m| m.name() == name)
                .ok_or_else(|| KernelError(format!("the BPF object has no map {name}")))?;
            MapHandle::try_from(&map).map_err(|e| kerr(&format!("map {name}"), e))
        };
        Ok(Maps {
            decisions: find("slk_decisions")?,
            decision_gen: find("slk_decision_gen")?,
            reports: find("slk_reports")?,
            config: find("slk_config")?,
            counters: find("slk_counters")?,
        })
    }

    fn settings(&self) -> Result<[u8; cfg::SIZE], KernelError> {
        let value = self.config.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).map_err(|e| kerr("read settings", e))?;
        Ok(value.and_then(|v| v.try_into().ok()).unwrap_or([0; cfg::SIZE]))
    }

    /// Reads the settings field at byte `offset`.
    fn setting(&self, offset: usize) -> Result<u64, KernelError> {
        let bytes = self.settings()?;
        Ok(u64::from_ne_bytes(bytes[offset..offset + 8].try_into().unwrap_or([0; 8])))
    }

    /// Writes the settings and the epoch, keeping the flow id counter (the BPF side advances it
    /// atomically; it only changes when a flow starts, which a fresh epoch does not race with harmfully:
    /// an id taken meanwhile is only ever reused if this write lands between its read and its add).
    fn write_settings(&self, settings: &KernelSettings, epoch: u32) -> Result<(), KernelError> {
        let mut bytes = self.settings()?;
        for (offset, value) in [
            (cfg::EPOCH, epoch as u64),
            (cfg::WATCHDOG_NS, settings.watchdog_ns),
            (cfg::BATCH_ACKS, settings.batch_acks as u64),
            (cfg::DEADLINE_NS, settings.deadline_ns),
            (cfg::WAKEUP_BYTES, settings.wakeup_bytes as u64),
        ] {
            bytes[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
        }
        self.config.update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY).map_err(|e| kerr("write settings", e))
    }

    /// The epoch of the agent that registered last.
    pub fn epoch(&self) -> Result<u32, KernelError> {
        Ok(self.setting(cfg::EPOCH)? as u32)
    }

    /// Writes a decision for its flow (one at a time; the agent writes through a [`DecisionWriter`]).
    pub fn write_decision(&self, d: &Decision) -> Result<(), KernelError> {
        let mut writer = DecisionWriter::default();
        match writer.write(self, std::slice::from_ref(d)) {
            0 => Ok(()),
            _ => Err(KernelError(format!("write decision of flow {}", d.flow_id))),
        }
    }

    /// Writes any bytes as a flow's decision (fault injection: the BPF side must reject bad ones), then
    /// moves the flow's decision generation: the BPF side reads the decisions map only when that word
    /// changed, so the decision must be in place before the word moves. The word's top bit is flipped
    /// rather than the word incremented: a running agent's [`DecisionWriter`] increments its own copy,
    /// and its next values must differ from this one for the flow to see them.
    pub fn write_raw_decision(&self, flow_id: u64, value: &[u8]) -> Result<(), KernelError> {
        self.decisions.update(&flow_id.to_ne_bytes(), value, MapFlags::ANY).map_err(|e| kerr("write decision", e))?;
        let slot = generation_slot(flow_id);
        let word = self.generation(slot)? ^ FOREIGN_GENERATION_BIT;
        self.set_generations(&[(slot, word)])
    }

    /// The generation word of `slot`.
    fn generation(&self, slot: u32) -> Result<u32, KernelError> {
        let value = self
            .decision_gen
            .lookup(&slot.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| kerr("read decision generation", e))?;
        Ok(value.and_then(|v| v.as_slice().try_into().ok()).map(u32::from_ne_bytes).unwrap_or(0))
    }

    /// Writes generation words (slot, value) in one batch.
    fn set_generations(&self, words: &[(u32, u32)]) -> Result<(), KernelError> {
        let keys: Vec<u8> = words.iter().flat_map(|(slot, _)| slot.to_ne_bytes()).collect();
        let values: Vec<u8> = words.iter().flat_map(|(_, word)| word.to_ne_bytes()).collect();
        self.decision_gen
            .update_batch(&keys, &values, words.len() as u32, MapFlags::ANY, MapFlags::ANY)
            .map_err(|e| kerr("write decision generations", e))
    }

    /// Writes decisions in one batch; where the batch fails, one by one. Returns the flow ids whose
    /// decision is in the map.
    fn put_decisions(&self, decisions: &[Decision]) -> Vec<u64> {
        let keys: Vec<u8> = decisions.iter().flat_map(|d| d.flow_id.to_ne_bytes()).collect();
        let values: Vec<u8> = decisions.iter().flat_map(|d| d.encode()).collect();
        let batch = self.decisions.update_batch(&keys, &values, decisions.len() as u32, MapFlags::ANY, MapFlags::ANY);
        if batch.is_ok() {
            return decisions.iter().map(|d| d.flow_id).collect();
        }
        decisions
            .iter()
            .filter(|d| self.decisions.update(&d.flow_id.to_ne_bytes(), &d.encode(), MapFlags::ANY).is_ok())
            .map(|d| d.flow_id)
            .collect()
    }

    /// Flow ids with a decision in the map now.
    pub fn decided_flows(&self) -> Vec<u64> {
        self.decisions.keys().filter_map(|k| k.try_into().ok().map(u64::from_ne_bytes)).collect()
    }

    /// The BPF side's counters, summed over CPUs (the map's one value is `struct slk_counters`, one per CPU).
    pub fn counters(&self) -> Result<KernelCounters, KernelError> {
        let per_cpu = self
            .counters
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| kerr("read counters", e))?
            .unwrap_or_default();
        let mut sums = vec![0u64; COUNTER_SLOTS as usize];
        for value in &per_cpu {
            for (sum, word) in sums.iter_mut().zip(value.chunks_exact(8)) {
                *sum += u64::from_ne_bytes(word.try_into().unwrap_or([0; 8]));
            }
        }
        Ok(KernelCounters::from_slots(&sums))
    }

    /// A consumer of the reports ring that hands each message to `on_message`.
    pub fn ring<'a>(&'a self, on_message: impl FnMut(&[u8]) -> i32 + 'a) -> Result<RingBuffer<'a>, KernelError> {
        let mut builder = RingBufferBuilder::new();
        builder.add(&self.reports, on_message).map_err(|e| kerr("ring buffer", e))?;
        builder.build().map_err(|e| kerr("ring buffer", e))
    }
}

/// The loaded BPF side: its object, its registrations, and its maps.
pub struct Datapath {
    _object: Object,
    links: Vec<Link>,
    /// The shared maps.
    pub maps: Maps,
    pin_dir: PathBuf,
}

impl Datapath {
    /// Loads the BPF object (reusing maps pinned under `pin_dir` by an earlier agent), writes the
    /// settings and a new epoch, and registers every congestion-control name of [`SLOTS`].
    pub fn load(pin_dir: &Path, settings: &KernelSettings) -> Result<Datapath, KernelError> {
        ensure_bpffs(pin_dir)?;
        quiet_libbpf();
        let mut builder = ObjectBuilder::default();
        builder.pin_root_path(pin_dir).map_err(|e| kerr("pin path", e))?;
        let open = builder.open_memory(OBJECT).map_err(|e| kerr("open the BPF object", e))?;
        let mut object = open.load().map_err(|e| {
            if pin_dir.join("slk_config").exists() {
                KernelError(format!(
                    "load the BPF object: {e}; maps pinned at {} may be from another version of sluice: remove \
                     that directory (flows still using them fall back to Reno) or choose another --pin-dir",
                    pin_dir.display()
                ))
            } else {
                kerr("load the BPF object (verifier or BTF)", e)
            }
        })?;
        let maps = Maps::from_object(&object)?;
        let epoch = maps.epoch()? + 1;
        maps.write_settings(settings, epoch)?;
        let mut links = Vec::new();
        for mut map in object.maps_mut().filter(|m| m.map_type() == MapType::StructOps) {
            let name = map.name().to_string_lossy().into_owned();
            let link = map.attach_struct_ops().map_err(|e| {
                kerr(&format!("register congestion control {name} (is another sluice agent running?)"), e)
            })?;
            links.push(link);
        }
        Ok(Datapath { _object: object, links, maps, pin_dir: pin_dir.to_path_buf() })
    }

    /// Unregisters every name (sockets that use one keep running on its programs and their watchdog).
    pub fn unregister(&mut self) {
        self.links.clear();
    }

    /// Removes the pins: a later agent then starts with fresh maps and cannot take flows over.
    pub fn unpin(&self) -> Result<(), KernelError> {
        for name in ["slk_decisions", "slk_decision_gen", "slk_reports", "slk_config", "slk_counters"] {
            let path = self.pin_dir.join(name);
            if path.exists() {
                std::fs::remove_file(&path).map_err(|e| kerr(&format!("unpin {}", path.display()), e))?;
            }
        }
        let _ = std::fs::remove_dir(&self.pin_dir);
        Ok(())
    }
}

/// The floor program, registered as [`FLOOR_NAME`] while this value lives (benchmarks only).
pub struct Floor {
    _object: Object,
    _link: Link,
}

impl Floor {
    /// Loads and registers the floor program.
    pub fn register() -> Result<Floor, KernelError> {
        quiet_libbpf();
        let open = ObjectBuilder::default().open_memory(FLOOR_OBJECT).map_err(|e| kerr("open the floor object", e))?;
        let mut object = open.load().map_err(|e| kerr("load the floor object", e))?;
        let link = object
            .maps_mut()
            .find(|m| m.map_type() == MapType::StructOps)
            .ok_or_else(|| KernelError("the floor object has no struct_ops".into()))?
            .attach_struct_ops()
            .map_err(|e| kerr(&format!("register {FLOOR_NAME}"), e))?;
        Ok(Floor { _object: object, _link: link })
    }
}

/// Run time the kernel accounted to sluice's programs (with `kernel.bpf_stats_enabled` = 1), per
/// program id: programs of earlier agents come and go as their sockets close, so costs are differences
/// per program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfRunTime {
    /// (program id, is cong_control, run_time_ns, run_cnt) of every loaded `slk_*` program.
    pub programs: Vec<(u32, bool, u64, u64)>,
}

/// Run time of sluice's programs over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BpfCost {
    /// `cong_control` runs (one per ACK).
    pub acks: u64,
    /// Their total run time, ns.
    pub ack_ns: u64,
    /// Runs of every sluice program.
    pub calls: u64,
    /// Their total run time, ns.
    pub call_ns: u64,
}

impl BpfCost {
    /// Mean ns per ACK.
    pub fn ns_per_ack(&self) -> f64 {
        self.ack_ns as f64 / self.acks.max(1) as f64
    }

    /// Mean ns per call of any sluice program.
    pub fn ns_per_call(&self) -> f64 {
        self.call_ns as f64 / self.calls.max(1) as f64
    }
}

impl BpfRunTime {
    /// Reads the counters of every loaded program named `slk_*` (names are cut to 15 characters).
    pub fn read() -> BpfRunTime {
        BpfRunTime::read_prefix("slk_")
    }

    /// Reads the counters of the floor program (`flr_*`).
    pub fn read_floor() -> BpfRunTime {
        BpfRunTime::read_prefix("flr_")
    }

    fn read_prefix(prefix: &str) -> BpfRunTime {
        let mut programs = Vec::new();
        for prog in libbpf_rs::query::ProgInfoIter::default() {
            let name = prog.name.to_string_lossy();
            if name.starts_with(prefix) {
                programs.push((prog.id, name.contains("_cong"), prog.run_time_ns, prog.run_cnt));
            }
        }
        BpfRunTime { programs }
    }

    /// The cost between `earlier` and this reading.
    pub fn since(&self, earlier: &BpfRunTime) -> BpfCost {
        let mut cost = BpfCost::default();
        for &(id, per_ack, ns, runs) in &self.programs {
            let (ns0, runs0) = earlier.programs.iter().find(|p| p.0 == id).map_or((0, 0), |p| (p.2, p.3));
            let (dns, druns) = (ns.saturating_sub(ns0), runs.saturating_sub(runs0));
            cost.calls += druns;
            cost.call_ns += dns;
            if per_ack {
                cost.acks += druns;
                cost.ack_ns += dns;
            }
        }
        cost
    }
}

/// Sections of a profiling build's `slk_profile` map (`enum slk_section` in bpf/sluice.bpf.c).
pub const PROFILE_SECTIONS: [&str; 5] = ["decide", "storage", "lookup", "report", "reserve"];

/// What a profiling build of the BPF side (`SLUICE_BPF_CFLAGS=-DSLK_PROFILE=1`) measured so far: per
/// section of [`PROFILE_SECTIONS`], (runs, total ns) summed over CPUs; `None` in a normal build.
pub fn read_profile() -> Option<Vec<(&'static str, u64, u64)>> {
    let info = libbpf_rs::query::MapInfoIter::default().filter(|m| m.name.to_string_lossy() == "slk_profile").last()?;
    let map = MapHandle::from_map_id(info.id).ok()?;
    let per_cpu = map.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
    let n = PROFILE_SECTIONS.len();
    let mut sums = vec![0u64; 2 * n];
    for value in &per_cpu {
        for (sum, word) in sums.iter_mut().zip(value.chunks_exact(8)) {
            *sum += u64::from_ne_bytes(word.try_into().unwrap_or([0; 8]));
        }
    }
    Some(PROFILE_SECTIONS.iter().enumerate().map(|(i, name)| (*name, sums[n + i], sums[i])).collect())
}

/// The congestion-control names registered now (from the kernel's list).
pub fn registered_names() -> Vec<String> {
    let list = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    list.split_whitespace().filter(|n| n.starts_with("sluice")).map(str::to_string).collect()
}

/// Mounts bpffs at /sys/fs/bpf when `pin_dir` lies under it and it is not mounted (systemd usually does).
fn ensure_bpffs(pin_dir: &Path) -> Result<(), KernelError> {
    let root = Path::new("/sys/fs/bpf");
    if !pin_dir.starts_with(root) {
        return Ok(());
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if mounts.lines().any(|l| l.split_whitespace().nth(1) == Some("/sys/fs/bpf") && l.contains(" bpf ")) {
        return Ok(());
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "bpf", "bpf", "/sys/fs/bpf"])
        .status()
        .map_err(|e| kerr("mount bpffs at /sys/fs/bpf", e))?;
    if !status.success() {
        return Err(KernelError("cannot mount bpffs at /sys/fs/bpf (root needed)".into()));
    }
    Ok(())
}

/// Keeps libbpf's informational chatter off the terminal; warnings and errors still show.
fn quiet_libbpf() {
    fn print(_level: libbpf_rs::PrintLevel, msg: String) {
        eprint!("libbpf: {msg}");
    }
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, print)));
}

/// How long a drain may wait for a wake-up.
pub fn poll_timeout(ns: u64) -> Duration {
    Duration::from_nanos(ns.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_slots_match_the_bpf_side() {
        let header = include_str!("../bpf/sluice.h");
        let line = header.lines().find(|l| l.starts_with("#define SLK_GEN_SLOTS ")).expect("SLK_GEN_SLOTS");
        assert_eq!(line.split_whitespace().nth(2), Some(GEN_SLOTS.to_string().as_str()));
        assert!(GEN_SLOTS.is_power_of_two(), "the BPF side masks with GEN_SLOTS - 1");
        assert_eq!(generation_slot(1), 1);
        assert_eq!(generation_slot(GEN_SLOTS as u64 + 7), 7, "ids that share a slot wrap around");
    }
}
