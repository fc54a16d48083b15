//! Property tests of the simulator on random small scenarios: random topology (star, dumbbell, fat-tree
//! k=2 or 4, leaf-spine), workload (incast, permutation, short Poisson), algorithm (any of the
//! registry, with the host interconnect model for those that read its signals), PFC on or off, switch buffer size, and chosen data packets of flow 0 dropped or CE-marked
//! on their last hop (`[[fault]]`, for workloads that always have a flow 0). Each case is a small run; `PROPTEST_CASES` sets how
//! many (default 256) and `PROPTEST_RNG_SEED` which (default fixed).
//!
//! What is checked, from the run's counters (`RunInfo`, the engine's `Counters`) and records:
//! - byte accounting: payload delivered plus dropped never exceeds payload sent (equality holds only
//!   once nothing is in flight, and a run stops as soon as its last flow finishes), retransmitted bytes
//!   are part of the bytes sent, and what senders saw acknowledged reached the receivers;
//! - queues: no port's maximum queue and no switch's maximum buffer occupancy exceeds the switch buffer;
//!   averages lie between 0 and the maximum;
//! - flows: one record per generated flow, in id order, each either finished (all bytes acknowledged,
//!   after its start) or reported unfinished (no finish time, bytes missing), agreeing with the
//!   finished-flow counter and the summary's unfinished count;
//! - determinism: a second run of the same scenario and seed writes byte-identical output files.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use sluice::{run_scenario, RunOutcome};
use sluice_scenario::{load_str, resolve, Resolved};

/// Cases run when `PROPTEST_CASES` is not set.
const DEFAULT_CASES: u32 = 256;

/// Seed of the case generator when `PROPTEST_RNG_SEED` is not set: the test command runs the same
/// cases every time; set the variable to explore others.
const DEFAULT_RNG_SEED: u64 = 20_261_125;

/// Simulated time after which a run stops even with flows left (reported unfinished).
const TIME_LIMIT: &str = "20ms";

#[derive(Debug, Clone)]
enum Topology {
    Star { hosts: u32 },
    Dumbbell { left: u32, right: u32 },
    FatTree { k: u32 },
    LeafSpine { hosts_per_tor: u32, tors: u32, spines: u32 },
}

impl Topology {
    fn hosts(&self) -> u32 {
        match *self {
            Topology::Star { hosts } => hosts,
            Topology::Dumbbell { left, right } => left + right,
            Topology::FatTree { k } => k * k * k / 4,
            Topology::LeafSpine { hosts_per_tor, tors, .. } => hosts_per_tor * tors,
        }
    }

    fn toml(&self, rate: &str) -> String {
        match *self {
            Topology::Star { hosts } => format!("kind = \"star\"\nhosts = {hosts}\nrate = \"{rate}\""),
            Topology::Dumbbell { left, right } => format!(
                "kind = \"dumbbell\"\nleft = {left}\nright = {right}\nhost_rate = \"{rate}\"\nbottleneck_rate = \"{rate}\""
            ),
            Topology::FatTree { k } => format!("kind = \"fat_tree\"\nk = {k}\nhost_rate = \"{rate}\""),
            Topology::LeafSpine { hosts_per_tor, tors, spines } => format!(
                "kind = \"leaf_spine\"\nhosts_per_tor = {hosts_per_tor}\ntors = {tors}\nspines = {spines}\nhost_rate = \"{rate}\""
            ),
        }
    }
}

#[derive(Debug, Clone)]
enum Workload {
    Incast { senders: u32, size_kb: u32 },
    Permutation { size_kb: u32 },
    Poisson { load: f64, duration_us: u32 },
}

impl Workload {
    fn toml(&self, hosts: u32) -> String {
        match *self {
            Workload::Incast { senders, size_kb } => {
                let senders = senders.min(hosts - 1);
                format!("kind = \"incast\"\nreceiver = 0\nsenders = {senders}\nsize = \"{size_kb}KB\"")
            }
            Workload::Permutation { size_kb } => format!("kind = \"permutation\"\nsize = \"{size_kb}KB\""),
            Workload::Poisson { load, duration_us } => {
                format!("kind = \"poisson\"\ncdf = \"google_rpc\"\nload = {load}\nduration = \"{duration_us}us\"")
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    topology: Topology,
    rate: &'static str,
    workload: Workload,
    algorithm: &'static str,
    pfc: bool,
    buffer_kb: u32,
    seed: u64,
    /// Drop (true) or mark (false) these data packets of flow 0.
    fault: Option<(bool, Vec<u64>)>,
}

impl Case {
    fn toml(&self) -> String {
        format!(
            "name = \"property\"\nseed = {seed}\n\n[simulation]\ntime_limit = \"{TIME_LIMIT}\"\n\n[topology]\n{topology}\n\n\
             [[workload]]\n{workload}\n\n[switch]\nbuffer = \"{buffer}KB\"\n\n[switch.pfc]\nenabled = {pfc}\n\n\
             [cc]\nalgorithm = \"{algorithm}\"\n",
            seed = self.seed,
            topology = self.topology.toml(self.rate),
            workload = self.workload.toml(self.topology.hosts()),
            buffer = self.buffer_kb,
            pfc = self.pfc,
            algorithm = self.algorithm,
        ) + &self.fault_toml()
            + self.host_toml()
    }

    /// The host interconnect model, for algorithms that read the host signals it samples.
    fn host_toml(&self) -> &'static str {
        let host_signal = sluice_cc::lookup(self.algorithm).is_some_and(|a| a.needs.host_signal);
        if host_signal {
            "\n[host.bus]\nenabled = true\n"
        } else {
            ""
        }
    }

    /// The fault entry, for workloads that always generate flow 0 (a Poisson window may generate none).
    fn fault_toml(&self) -> String {
        match (&self.fault, &self.workload) {
            (None, _) | (_, Workload::Poisson { .. }) => String::new(),
            (Some((drop, packets)), _) => format!(
                "\n[[fault]]\nkind = \"{}\"\nflow = 0\npackets = {packets:?}\n",
                if *drop { "drop" } else { "mark" }
            ),
        }
    }
}

fn topologies() -> impl Strategy<Value = Topology> {
    prop_oneof![
        (2u32..=8).prop_map(|hosts| Topology::Star { hosts }),
        (1u32..=4, 1u32..=4).prop_map(|(left, right)| Topology::Dumbbell { left, right }),
        prop_oneof![Just(2u32), Just(4)].prop_map(|k| Topology::FatTree { k }),
        (1u32..=4, 2u32..=3, 1u32..=2).prop_map(|(hosts_per_tor, tors, spines)| Topology::LeafSpine {
            hosts_per_tor,
            tors,
            spines
        }),
    ]
}

fn workloads() -> impl Strategy<Value = Workload> {
    prop_oneof![
        (1u32..=7, 1u32..=200).prop_map(|(senders, size_kb)| Workload::Incast { senders, size_kb }),
        (1u32..=100).prop_map(|size_kb| Workload::Permutation { size_kb }),
        (1u32..=5, 5u32..=30)
            .prop_map(|(tenths, duration_us)| Workload::Poisson { load: f64::from(tenths) / 10.0, duration_us }),
    ]
}

fn algorithms() -> impl Strategy<Value = &'static str> {
    let names: Vec<&'static str> = sluice_cc::registry().iter().map(|a| a.name).collect();
    proptest::sample::select(names)
}

fn cases() -> impl Strategy<Value = Case> {
    (
        topologies(),
        prop_oneof![Just("10Gbps"), Just("25Gbps"), Just("100Gbps")],
        workloads(),
        algorithms(),
        any::<bool>(),
        prop_oneof![Just(64u32), Just(256), Just(1024), Just(32 * 1024)],
        0u64..1000,
        proptest::option::of((any::<bool>(), proptest::collection::vec(0u64..200, 1..4))),
    )
        .prop_map(|(topology, rate, workload, algorithm, pfc, buffer_kb, seed, fault)| Case {
            topology,
            rate,
            workload,
            algorithm,
            pfc,
            buffer_kb,
            seed,
            fault,
        })
}

/// A fresh output folder for one run.
fn out_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("sluice-properties-{}-{n}", std::process::id()))
}

/// Every file of a run's output folder, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .expect("the run wrote its folder")
        .map(|e| {
            let path = e.expect("readable folder").path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), fs::read(&path).expect("readable file"))
        })
        .collect();
    out.sort();
    out
}

fn run(resolved: &Resolved, dir: &Path) -> RunOutcome {
    run_scenario(resolved, Some(dir), &mut |_| {}).expect("the run writes its results")
}

fn check_bytes(outcome: &RunOutcome) {
    let run = &outcome.output.run;
    assert!(
        run.bytes_delivered + run.bytes_dropped <= run.bytes_sent,
        "delivered {} + dropped {} > sent {}",
        run.bytes_delivered,
        run.bytes_dropped,
        run.bytes_sent
    );
    assert!(
        run.retransmitted_bytes <= run.bytes_sent,
        "retransmitted {} > sent {}",
        run.retransmitted_bytes,
        run.bytes_sent
    );
    let acknowledged: u64 = outcome.output.flows.iter().map(|f| f.delivered).sum();
    assert!(acknowledged <= run.bytes_delivered, "acknowledged {acknowledged} > delivered {}", run.bytes_delivered);
}

fn check_queues(outcome: &RunOutcome, buffer: u64) {
    for port in &outcome.output.ports {
        assert!(port.max_queue <= buffer, "port {} queued {} B, buffer {buffer} B", port.label(), port.max_queue);
        assert!((0.0..=port.max_queue as f64).contains(&port.avg_queue), "port {}: {port:?}", port.label());
    }
    for switch in &outcome.output.switches {
        assert!(switch.max_buffer <= buffer, "switch {} held {} B, buffer {buffer} B", switch.node, switch.max_buffer);
        assert!((0.0..=switch.max_buffer as f64).contains(&switch.avg_buffer), "{switch:?}");
    }
}

fn check_flows(outcome: &RunOutcome, resolved: &Resolved) {
    let records = &outcome.output.flows;
    assert_eq!(records.len(), resolved.flows.len(), "one record per flow");
    for (i, (record, spec)) in records.iter().zip(&resolved.flows).enumerate() {
        assert_eq!((record.id, record.src, record.dst, record.size), (i as u64, spec.src, spec.dst, spec.size));
        match record.finish {
            Some(finish) => {
                assert_eq!(record.delivered, record.size, "finished flow {i} missing bytes");
                assert!(finish >= record.start, "flow {i} finished before it started");
            }
            None => assert!(record.delivered < record.size, "unfinished flow {i} has every byte"),
        }
    }
    let finished = records.iter().filter(|f| f.finish.is_some()).count() as u64;
    assert_eq!(finished, outcome.output.counters.flows_finished, "finished-flow counter");
    let unfinished = outcome.summary.overall.unfinished;
    assert_eq!(unfinished, records.len() as u64 - finished, "summary's unfinished count");
}

/// Runs the case and checks every property; `false` when the scenario check refuses the case, which it
/// may do only for a buffer smaller than what PFC reserves at a switch.
fn check_case(case: &Case) -> bool {
    let text = case.toml();
    let scenario = load_str(&text, "property.toml", Path::new("."), &[])
        .unwrap_or_else(|e| panic!("generated scenario does not load: {e}\n{text}"));
    let resolved = match resolve(&scenario) {
        Ok(resolved) => resolved,
        Err(e) if case.pfc && e.to_string().contains(": switch.buffer: ") => return false,
        Err(e) => panic!("generated scenario does not resolve: {e}\n{text}"),
    };
    let (first, second) = (out_dir(), out_dir());
    let outcome = run(&resolved, &first);
    check_bytes(&outcome);
    check_queues(&outcome, u64::from(case.buffer_kb) * 1000);
    check_flows(&outcome, &resolved);
    run(&resolved, &second);
    let (a, b) = (files(&first), files(&second));
    let _ = (fs::remove_dir_all(&first), fs::remove_dir_all(&second));
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs between two runs of the same seed\n{text}");
    }
    assert_eq!(a.len(), b.len(), "both runs write the same files");
    true
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_CASES);
    let defaults = ProptestConfig::default();
    let rng_seed = match std::env::var_os("PROPTEST_RNG_SEED") {
        Some(_) => defaults.rng_seed,
        None => RngSeed::Fixed(DEFAULT_RNG_SEED),
    };
    ProptestConfig { cases, rng_seed, failure_persistence: None, ..defaults }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn small_runs_keep_the_simulator_invariants(case in cases()) {
        prop_assume!(check_case(&case), "buffer below the PFC reservation");
    }
}
