//! RTT probes reach an algorithm: DOCA PCC's reference RTT algorithm (`doca_rtt`) keeps one probe in
//! flight on the bundled 8:1 incast (20 MB a sender). Probes wait in the data queue, so their round
//! trips grow with the receiver's queue, and the rate falls from line rate and recovers; every flow
//! finishes. Datapaths without probes refuse it (the datapath matrix checks that for each).

use std::fs;
use std::path::Path;
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

#[test]
fn doca_rtt_steers_by_the_round_trips_of_its_probes() {
    let dir = std::env::temp_dir().join(format!("sluice-probes-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast8.toml");
    let sets = ["cc.algorithm=doca_rtt", "workload.0.size=20MB", "output.trace_flows=[0]", "output.trace_interval=0ps"];
    let mut command = Command::new(SLUICE);
    command.arg("run").arg(&scenario).arg("--quiet").arg("--out").arg(&dir);
    for set in sets {
        command.args(["--set", set]);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let fct = fs::read_to_string(dir.join("fct.csv")).unwrap();
    assert_eq!(fct.lines().skip(1).filter(|l| l.split(',').nth(5).is_some_and(|f| !f.is_empty())).count(), 8);
    let trace = fs::read_to_string(dir.join("trace.csv")).unwrap();
    let values = |name: &str| -> Vec<f64> {
        let rows = trace.lines().skip(1).map(|l| l.split(',').collect::<Vec<_>>());
        rows.filter(|r| r[2] == name && !r[3].is_empty()).map(|r| r[3].parse().unwrap()).collect()
    };
    let (rates, rtts, probes) = (values("rate_bps"), values("rtt_ns"), values("probes"));
    let answered = *probes.last().unwrap();
    assert!(answered > 100.0, "one probe in flight all along: {answered} answers");
    assert!(rtts.iter().any(|&r| r < 13_000.0), "unloaded round trips under base_rtt: {:?}", &rtts[..3]);
    let highest = rtts.iter().cloned().fold(0.0, f64::max);
    assert!(highest > 100_000.0, "probes wait behind the eight senders' queue: {highest} ns");
    let line = 100e9;
    assert_eq!(rates[0], line, "a new flow starts at line rate");
    let lowest = rates.iter().cloned().fold(line, f64::min);
    assert!(lowest < line / 8.0, "the round trips cut the rate below a fair share: {lowest}");
    assert!(rates.last().unwrap() > &lowest, "and it rises again as the queue drains");
    let _ = fs::remove_dir_all(&dir);
}
