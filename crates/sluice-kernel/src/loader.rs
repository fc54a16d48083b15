//! Loading the BPF side, registering its congestion-control names, and reaching its maps.
//!
//! The shared maps (flow cells, reports ring, config, counters) are pinned by name under a bpffs
//! directory so that flows started under one agent keep running through their programs when it dies (the
//! watchdog falls back to Reno) and a restarted agent finds them again. The struct_ops registrations are
//! links: dropping them, or the agent's death closing their descriptors, unregisters the names at once.
//! The flow-cell array is mapped into the agent's memory: decisions are written with plain stores under
//! each cell's sequence lock, with no system call.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType, Object, ObjectBuilder, RingBuffer, RingBufferBuilder};
use serde::Serialize;

use crate::codec::{Decision, DECISION_BYTES};
use crate::config::Fallback;
use crate::program::{Install, Tapes};

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
    pub const FALLBACK: usize = 48;
    pub const SIZE: usize = 56;
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
    /// ACKs of flows without per-flow state (no free cell).
    pub no_state: u64,
    /// Of the fallbacks, those that ran the kernel's Cubic (the others ran its Reno).
    pub fallbacks_to_cubic: u64,
    /// Signals (ACKs, losses, timeouts, wakes) run through flows' datapath programs.
    pub program_signals: u64,
    /// Of the reports, those of datapath programs.
    pub program_reports: u64,
    /// Times a flow left its program because its state was missing or not its own (it folds again).
    pub programs_lost: u64,
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
            fallbacks_to_cubic: at(10),
            program_signals: at(11),
            program_reports: at(12),
            programs_lost: at(13),
        }
    }
}

/// Counters in the counters map's value (`SLK_C_MAX` in bpf/sluice.h).
const COUNTER_SLOTS: u32 = 14;

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

/// The layout of `struct slk_cell` (bpf/sluice.h): one live flow's decision (the agent's cache line) and
/// the BPF side's state for it (the other three lines: the flow's state, and Cubic's during a fallback).
pub mod cell {
    /// Cells in the array (`SLK_CELLS`): the most flows the datapath controls at once.
    pub const COUNT: usize = 65536;
    /// Bits of a flow id that name its cell (`SLK_CELL_BITS`).
    pub const BITS: u32 = 16;
    /// Bytes per cell.
    pub const BYTES: usize = 256;
    /// Offset of the generation word (the sequence lock of the decision at offset 0).
    pub const GEN: usize = 40;
    /// Offset of `struct slk_flow`, whose first field is the id of the flow holding the cell (0: free).
    pub const FLOW: usize = 64;

    /// The cell of flow `flow_id`.
    pub fn of(flow_id: u64) -> usize {
        (flow_id as usize) & (COUNT - 1)
    }
}

/// The flow-cell array mapped into this process. The BPF side reads and writes the same memory; this
/// process touches it only through atomics, as memory shared with another process.
struct Cells {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: `Cells` owns its mapping (unmapped only on drop) and gives access to it only through atomic
// types, which may be shared and used from any thread.
unsafe impl Send for Cells {}
// SAFETY: as above: every access through `&Cells` is an atomic load or store.
unsafe impl Sync for Cells {}

impl Cells {
    /// Maps the array whose descriptor `map` is (created with BPF_F_MMAPABLE).
    fn map(map: &MapHandle) -> Result<Cells, KernelError> {
        Cells::mapped(libc::MAP_SHARED, map.as_fd().as_raw_fd()).map_err(|e| kerr("map the flow cells into memory", e))
    }

    /// A fresh read-write mapping of the array's size: of descriptor `fd`, or anonymous memory (fd -1
    /// with MAP_ANONYMOUS).
    fn mapped(flags: libc::c_int, fd: libc::c_int) -> std::io::Result<Cells> {
        let len = cell::COUNT * cell::BYTES;
        // SAFETY: a fresh mapping of `len` bytes at an address the kernel chooses, so no existing memory is
        // affected; for a descriptor the kernel checks that it is a mmapable array of at least `len` bytes.
        // The result is checked for MAP_FAILED before use.
        let at = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, fd, 0) };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(at.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(Cells { base, len })
    }

    fn at(&self, cell: usize, offset: usize, width: usize) -> *mut u8 {
        assert!(
            cell < cell::COUNT && offset + width <= cell::BYTES && offset.is_multiple_of(width),
            "cell {cell} +{offset}"
        );
        // SAFETY: cell < COUNT and offset + width <= BYTES, so the address lies inside the mapping of
        // COUNT * BYTES bytes.
        unsafe { self.base.as_ptr().add(cell * cell::BYTES + offset) }
    }

    fn word32(&self, cell: usize, offset: usize) -> &AtomicU32 {
        // SAFETY: `at` checked the bounds; the address is 4-aligned (the mapping is page-aligned, BYTES is
        // a multiple of 4 and `at` checked that offset is too); the memory stays mapped while `self`
        // lives, and this process reaches it only through atomics.
        unsafe { &*self.at(cell, offset, 4).cast::<AtomicU32>() }
    }

    fn word64(&self, cell: usize, offset: usize) -> &AtomicU64 {
        // SAFETY: as in `word32`, with 8-byte alignment.
        unsafe { &*self.at(cell, offset, 8).cast::<AtomicU64>() }
    }

    /// Writes a decision's bytes into `cell` under its sequence lock: the generation word goes odd, the
    /// decision is written, and the word goes to the next even value, which tells the BPF side (it reads
    /// the decision only while the word is even and unchanged across its copy; bpf/sluice.bpf.c
    /// `read_decision`). A word left odd by a writer that died mid-write is carried on from.
    fn write(&self, cell: usize, value: &[u8]) {
        let gen = self.word32(cell, cell::GEN);
        let writing = gen.load(Ordering::Relaxed) | 1;
        gen.store(writing, Ordering::Relaxed);
        fence(Ordering::Release);
        let mut bytes = [0u8; DECISION_BYTES];
        let n = value.len().min(DECISION_BYTES);
        bytes[..n].copy_from_slice(&value[..n]);
        for (i, word) in bytes.chunks_exact(8).enumerate() {
            let word = u64::from_ne_bytes(word.try_into().expect("8 bytes"));
            self.word64(cell, i * 8).store(word, Ordering::Relaxed);
        }
        gen.store(writing.wrapping_add(1), Ordering::Release);
    }

    /// The id of the flow holding `cell` (0: free).
    fn holder(&self, cell: usize) -> u64 {
        self.word64(cell, cell::FLOW).load(Ordering::Relaxed)
    }
}

#[cfg(test)]
impl Cells {
    /// Private anonymous memory of the array's size, for tests of the writer.
    fn anonymous() -> Cells {
        Cells::mapped(libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1).expect("anonymous mapping")
    }
}

impl Drop for Cells {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping made in `Cells::map`, unmapped only here; every
        // reference handed out borrows `self`, so none outlives it.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
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
    /// What the watchdog hands a flow to.
    pub fallback: Fallback,
}

/// Handles on the pinned maps (usable without loading the programs: tests and tools).
pub struct Maps {
    cells: Cells,
    reports: MapHandle,
    config: MapHandle,
    counters: MapHandle,
    tapes: MapHandle,
    pstates: MapHandle,
}

impl Maps {
    /// Opens the maps pinned under `pin_dir`.
    pub fn open(pin_dir: &Path) -> Result<Maps, KernelError> {
        let open = |name: &str| {
            MapHandle::from_pinned_path(pin_dir.join(name)).map_err(|e| kerr(&format!("open pinned map {name}"), e))
        };
        Ok(Maps {
            cells: Cells::map(&open("slk_cells")?)?,
            reports: open("slk_reports")?,
            config: open("slk_config")?,
            counters: open("slk_counters")?,
            tapes: open("slk_tapes")?,
            pstates: open("slk_pstates")?,
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
            cells: Cells::map(&find("slk_cells")?)?,
            reports: find("slk_reports")?,
            config: find("slk_config")?,
            counters: find("slk_counters")?,
            tapes: find("slk_tapes")?,
            pstates: find("slk_pstates")?,
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
            (cfg::FALLBACK, settings.fallback.code()),
        ] {
            bytes[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
        }
        self.config.update(&0u32.to_ne_bytes(), &bytes, MapFlags::ANY).map_err(|e| kerr("write settings", e))
    }

    /// The epoch of the agent that registered last.
    pub fn epoch(&self) -> Result<u32, KernelError> {
        Ok(self.setting(cfg::EPOCH)? as u32)
    }

    /// Writes each decision into its flow's cell. The agent does not read the cell's owner first: that
    /// line is the BPF side's, written at every report, and reading it would move it to the agent's core
    /// and back. A decision for a flow that has ended meanwhile is rejected as stale by the cell's next
    /// holder (its flow id is not theirs).
    pub fn write_decisions(&self, decisions: &[Decision]) {
        for d in decisions {
            self.cells.write(cell::of(d.flow_id), &d.encode());
        }
    }

    /// Writes a flow's program for agent `epoch`: its tape, unless `tapes` says this agent wrote it
    /// already, then its state (registers), which replaces the flow's previous install at once. The
    /// decision that turns the program on must follow.
    pub fn install(&self, tapes: &mut Tapes, epoch: u32, install: &Install) -> Result<(), KernelError> {
        let slot = match tapes.find(&install.tape) {
            Some(slot) => slot,
            None => {
                let slot = tapes.next().map_err(KernelError)?;
                let mut value = Vec::with_capacity(8 + install.tape.len());
                value.extend_from_slice(&(epoch as u64).to_ne_bytes());
                value.extend_from_slice(&install.tape);
                self.tapes
                    .update(&slot.to_ne_bytes(), &value, MapFlags::ANY)
                    .map_err(|e| kerr(&format!("write program tape {slot}"), e))?;
                tapes.written(install.tape.clone());
                slot
            }
        };
        let key = (cell::of(install.flow_id) as u32).to_ne_bytes();
        self.pstates
            .update(&key, &install.state(epoch, slot), MapFlags::ANY)
            .map_err(|e| kerr(&format!("write the program state of flow {:#x}", install.flow_id), e))
    }

    /// Writes any bytes (up to a decision's size, the rest zero) as the decision in flow `flow_id`'s
    /// cell, whoever holds it (fault injection: the BPF side must reject bad ones).
    pub fn write_raw_decision(&self, flow_id: u64, value: &[u8]) {
        self.cells.write(cell::of(flow_id), value);
    }

    /// The flows that hold a cell now (live flows of this and earlier agents).
    pub fn live_flows(&self) -> Vec<u64> {
        (0..cell::COUNT).map(|at| self.cells.holder(at)).filter(|&id| id != 0).collect()
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
        for name in ["slk_cells", "slk_reports", "slk_config", "slk_counters", "slk_tapes", "slk_pstates"] {
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
pub const PROFILE_SECTIONS: [&str; 5] = ["decide", "report", "reserve", "program", "interpreter"];

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

    fn define(name: &str) -> String {
        let header = include_str!("../bpf/sluice.h");
        let line = header.lines().find(|l| l.starts_with(&format!("#define {name} "))).expect(name);
        line.split_whitespace().nth(2).expect("a value").to_string()
    }

    #[test]
    fn the_cell_layout_matches_the_bpf_side() {
        assert_eq!(define("SLK_CELLS"), cell::COUNT.to_string());
        assert_eq!(define("SLK_CELL_BITS"), cell::BITS.to_string());
        assert_eq!(1usize << cell::BITS, cell::COUNT, "a flow id's low bits name its cell");
        let header = include_str!("../bpf/sluice.h");
        for (what, value) in [
            ("sizeof(struct slk_cell) == ", cell::BYTES),
            ("offsetof(struct slk_cell, gen) == ", cell::GEN),
            ("offsetof(struct slk_cell, flow) == ", cell::FLOW),
        ] {
            assert!(header.contains(&format!("{what}{value},")), "bpf/sluice.h asserts {what}{value}");
        }
        assert_eq!(cell::of(1), 1);
        assert_eq!(cell::of((7 << cell::BITS) | 9), 9);
    }

    #[test]
    fn a_decision_is_written_under_the_cells_sequence_lock() {
        use crate::codec::D_CWND;
        let cells = Cells::anonymous();
        let gen = |at: usize| cells.word32(at, cell::GEN).load(Ordering::Relaxed);
        let decision = |at: usize| -> Vec<u8> {
            (0..DECISION_BYTES / 8)
                .flat_map(|i| cells.word64(at, i * 8).load(Ordering::Relaxed).to_ne_bytes())
                .collect()
        };
        let d = Decision {
            flags: D_CWND,
            flow_id: (5 << cell::BITS) | 3,
            epoch: 2,
            seq: 7,
            report_seq: 9,
            cwnd_pkts: 40,
            pacing_bps: 0,
        };
        cells.write(3, &d.encode());
        assert_eq!((gen(3), decision(3)), (2, d.encode().to_vec()), "complete: the word is even and moved");
        cells.write(3, &d.encode());
        assert_eq!(gen(3), 4, "every write moves the word");
        cells.word32(3, cell::GEN).store(5, Ordering::Relaxed);
        cells.write(3, &d.encode());
        assert_eq!(gen(3), 6, "a word left odd by a writer that died mid-write goes on to the next even value");
        cells.write(4, &[1, 2, 3]);
        let mut short = vec![0u8; DECISION_BYTES];
        short[..3].copy_from_slice(&[1, 2, 3]);
        assert_eq!(decision(4), short, "a short raw value is zero-filled");
        assert_eq!((gen(2), gen(5), cells.holder(3)), (0, 0, 0), "neighbours and the BPF side's line untouched");
        cells.word64(3, cell::FLOW).store(d.flow_id, Ordering::Relaxed);
        assert_eq!(cells.holder(3), d.flow_id);
    }
}
