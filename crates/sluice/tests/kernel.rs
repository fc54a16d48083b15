//! The kernel datapath, end to end: `sluice agent` drives real TCP flows between two network namespaces
//! through a 1 Gbps tbf bottleneck. Each test prints what it measured. They need root, iperf3, `ip netns`
//! and a kernel with BTF; without them each test says why and passes, except in CI (`CI=true`), where it
//! fails. They run one at a time (a machine-wide file lock, which benchmarks take too), since they share
//! the CPUs and the registered congestion-control names.

#![cfg(feature = "kernel")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_kernel::codec::{Decision, D_CWND, VERSION};
use sluice_kernel::loader::{registered_names, Maps};
use sluice_testbed::{cc_in, cwnd_in, exclusive, finish, unavailable, TestBed};

/// Transfer length of throughput checks, s.
const SECONDS: u32 = 5;

/// The test bed's lock, or `None` (the test skips) where the kernel tests cannot run. In CI (`CI=true`,
/// which the test command passes on) every kernel test must run, so there a missing piece fails the test.
fn guard(test: &str) -> Option<std::fs::File> {
    if let Some(why) = unavailable() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!in_ci, "{test} must run in CI (CI=true) but cannot: {why}");
        eprintln!("skipping {test}: {why}");
        return None;
    }
    let lock = exclusive().expect("the kernel test-bed lock");
    assert!(registered_names().is_empty(), "a sluice agent is already running: {:?}", registered_names());
    Some(lock)
}

/// A running `sluice agent` process with its own pin directory; killed and cleaned up on drop.
struct Agent {
    child: Option<Child>,
    pin_dir: PathBuf,
    stats: PathBuf,
}

impl Agent {
    fn start(tag: &str, args: &[&str]) -> Agent {
        let pin_dir = PathBuf::from(format!("/sys/fs/bpf/slk-test-{tag}"));
        let stats = std::env::temp_dir().join(format!("slk-agent-{tag}-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&stats);
        let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("agent")
            .arg("--pin-dir")
            .arg(&pin_dir)
            .arg("--stats")
            .arg(&stats)
            .args(args)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sluice agent");
        let agent = Agent { child: Some(child), pin_dir, stats };
        let t = Instant::now();
        while registered_names().len() < 8 {
            assert!(t.elapsed() < Duration::from_secs(20), "the agent did not register its names");
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }

    /// SIGTERM, wait, and the run's summary.
    fn stop(mut self) -> serde_json::Value {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()));
        let exit = child.wait().expect("agent exit");
        assert!(exit.success(), "the agent exited with {exit}");
        let text = std::fs::read_to_string(&self.stats).expect("agent stats");
        serde_json::from_str(&text).expect("stats JSON")
    }

    /// SIGKILL: no cleanup runs in the agent.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn maps(&self) -> Maps {
        Maps::open(&self.pin_dir).expect("pinned maps")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.pin_dir);
        let _ = std::fs::remove_file(&self.stats);
    }
}

fn wait_unregistered() {
    let t = Instant::now();
    while !registered_names().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(5), "still registered: {:?}", registered_names());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gbps(bps: f64) -> String {
    format!("{:.3} Gbps", bps / 1e9)
}

#[test]
fn agent_reno_and_cubic_reach_the_kernels_throughput() {
    let Some(_lock) = guard("agent_reno_and_cubic_reach_the_kernels_throughput") else { return };
    let bed = TestBed::new("tp", "1gbit", "1mb").expect("test bed");
    let agent = Agent::start("tp", &[]);
    for (kernel, ours) in [("reno", "sluice_reno"), ("cubic", "sluice_cubic")] {
        let k = bed.transfer(5201, kernel, 1, SECONDS).expect("kernel transfer");
        let s = bed.transfer(5201, ours, 1, SECONDS).expect("agent transfer");
        let ratio = s.received_bps / k.received_bps;
        eprintln!(
            "throughput through 1 Gbps tbf: kernel {kernel} {} ({} retransmits), agent {ours} {} ({} \
             retransmits): {:.1}%",
            gbps(k.received_bps),
            k.retransmits,
            gbps(s.received_bps),
            s.retransmits,
            ratio * 100.0
        );
        assert!(ratio >= 0.95, "{ours} reached {:.1}% of kernel {kernel}", ratio * 100.0);
    }
    let summary = agent.stop();
    eprintln!("agent: fallbacks {}, ring-full {}", summary["kernel"]["fallbacks"], summary["kernel"]["ringbuf_full"]);
    wait_unregistered();
}

#[test]
fn window_and_pacing_decisions_show_in_the_kernel() {
    let Some(_lock) = guard("window_and_pacing_decisions_show_in_the_kernel") else { return };
    let bed = TestBed::new("dc", "1gbit", "1mb").expect("test bed");
    let config = std::env::temp_dir().join(format!("slk-dc-{}.toml", std::process::id()));
    let rules = "[[rule]]\nports = \"5302\"\nalgorithm = \"fixed\"\nparams = { cwnd_packets = 20 }\n\
                 [[rule]]\nports = \"5303\"\nalgorithm = \"fixed\"\nparams = { cwnd_packets = 2000, rate = \"200Mbps\" }\n";
    std::fs::write(&config, rules).expect("write config");
    let agent = Agent::start("dc", &["--config", config.to_str().expect("utf-8 path")]);

    let mut server = bed.server(5302).expect("server");
    let client = bed.client(5302, "sluice", 1, 3, &[]).expect("client");
    std::thread::sleep(Duration::from_millis(1500));
    let ss = bed.ss(5302);
    let fixed = finish(client).expect("fixed-window transfer");
    let _ = server.kill();
    let _ = server.wait();
    eprintln!(
        "fixed window 20: ss shows {:?} cwnd {:?}; transfer {}",
        cc_in(&ss),
        cwnd_in(&ss),
        gbps(fixed.received_bps)
    );
    assert_eq!(cc_in(&ss).as_deref(), Some("sluice"), "{ss}");
    assert_eq!(cwnd_in(&ss), Some(20), "{ss}");

    let paced = bed.transfer(5303, "sluice", 1, SECONDS).expect("paced transfer");
    let error = paced.received_bps / 200e6 - 1.0;
    eprintln!("pacing at 200 Mbps: received {} ({:+.1}%)", gbps(paced.received_bps), error * 100.0);
    assert!(error.abs() <= 0.05, "paced at 200 Mbps, got {}", gbps(paced.received_bps));
    agent.stop();
    let _ = std::fs::remove_file(&config);
    wait_unregistered();
}

#[test]
fn a_killed_agent_falls_back_and_a_restarted_one_takes_over() {
    let Some(_lock) = guard("a_killed_agent_falls_back_and_a_restarted_one_takes_over") else { return };
    let bed = TestBed::new("kl", "1gbit", "1mb").expect("test bed");
    // The first agent holds the flow at a window of 2 packets, so the fallback's own growth shows.
    let mut first = Agent::start("kl", &["--default", "fixed", "--param", "fixed.cwnd_packets=2"]);
    let mut server = bed.server(5304).expect("server");
    let client = bed.client(5304, "sluice", 1, 6, &[]).expect("client");
    std::thread::sleep(Duration::from_millis(1500));
    let held = bed.ss(5304);
    first.kill();
    wait_unregistered();
    eprintln!("agent killed mid-transfer: names unregistered");
    let counters = first.maps().counters().expect("counters");
    std::thread::sleep(Duration::from_millis(1500));
    let during = first.maps().counters().expect("counters");
    let grown = bed.ss(5304);
    eprintln!(
        "window under the agent {:?}, 1.5 s after its death {:?}; fallbacks {}, to Cubic {}",
        cwnd_in(&held),
        cwnd_in(&grown),
        during.fallbacks,
        during.fallbacks_to_cubic
    );
    assert_eq!(cwnd_in(&held), Some(2), "{held}");
    assert!(during.fallbacks > counters.fallbacks || during.fallbacks > 0, "no fallback: {during:?}");
    // The default fallback is the kernel's Cubic where it exports Cubic's functions to BPF (they are
    // named in its BTF); elsewhere the BPF side falls back to Reno.
    let btf = std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default();
    let cubic_exported = btf.windows(b"cubictcp_cong_avoid".len()).any(|w| w == b"cubictcp_cong_avoid");
    assert_eq!(during.fallbacks_to_cubic > 0, cubic_exported, "fallbacks to the kernel's Cubic: {during:?}");
    assert!(during.acks > counters.acks, "the flow kept going without the agent");
    assert!(cwnd_in(&grown).unwrap_or(0) > 2, "the kernel's Cubic did not take the window over: {grown}");
    let second = Agent::start("kl", &["--default", "reno"]);
    let transfer = finish(client).expect("the transfer completes");
    let _ = server.kill();
    let _ = server.wait();
    let summary = second.stop();
    eprintln!(
        "kill/restart: transfer {} in 6 s; taken over {}, resumed {}",
        gbps(transfer.received_bps),
        summary["agent"]["flows_taken_over"],
        summary["kernel"]["resumed"]
    );
    assert!(transfer.received_bps > 0.5e9, "the flow did not stall: {}", gbps(transfer.received_bps));
    assert!(summary["agent"]["flows_taken_over"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(summary["kernel"]["resumed"].as_u64().unwrap_or(0) >= 1, "{summary}");
    wait_unregistered();
    drop(first);
}

#[test]
fn a_thousand_connections_complete_under_the_agent() {
    let Some(_lock) = guard("a_thousand_connections_complete_under_the_agent") else { return };
    let bed = TestBed::new("th", "1gbit", "1mb").expect("test bed");
    let agent = Agent::start("th", &["--default", "cubic"]);
    let flows = bed.many_flows(5310, "sluice", 1000, 256 * 1024, Duration::from_secs(60)).expect("traffic");
    std::thread::sleep(Duration::from_millis(500));
    let summary = agent.stop();
    eprintln!(
        "1000 connections x 256 KiB: {} of {} completed in {:.2} s ({}); agent CPU {:.1}% of one core, {:.0} \
         messages/s, flows started {}, ended {}; kernel fallbacks {}, resumed {}, ring-full {}; answers past the \
         watchdog {}, longest answer {} us",
        flows.completed,
        flows.connections,
        flows.seconds,
        gbps(flows.bytes as f64 * 8.0 / flows.seconds),
        summary["cpu_fraction"].as_f64().unwrap_or(0.0) * 100.0,
        summary["messages_per_second"].as_f64().unwrap_or(0.0),
        summary["agent"]["flows_started"],
        summary["agent"]["flows_ended"],
        summary["kernel"]["fallbacks"],
        summary["kernel"]["resumed"],
        summary["kernel"]["ringbuf_full"],
        summary["agent"]["answer_lag"]["over_watchdog"],
        summary["agent"]["answer_lag"]["max_us"]
    );
    assert_eq!(
        (flows.connections, flows.completed),
        (1000, 1000),
        "failed connections: {:?}; still open at the timeout: {:#?}",
        flows.failures,
        flows.stuck
    );
    assert!(summary["agent"]["flows_started"].as_u64().unwrap_or(0) >= 1000, "{summary}");
    // Under SCHED_FIFO four runs counted 0, 0, 0 and 65 fallbacks (the last at a load average of 15);
    // under the normal scheduler 1,124-1,663, with answers up to 323 ms late. A quarter of the flows
    // falling back would mean the agent lags as it did before.
    if summary["realtime"].as_bool() == Some(true) {
        let fallbacks = summary["kernel"]["fallbacks"].as_u64().unwrap_or(u64::MAX);
        assert!(fallbacks <= 250, "{fallbacks} watchdog fallbacks: the agent answered late ({summary})");
    }
    wait_unregistered();
}

#[test]
fn stale_and_malformed_decisions_are_rejected_and_counted() {
    let Some(_lock) = guard("stale_and_malformed_decisions_are_rejected_and_counted") else { return };
    let bed = TestBed::new("rj", "1gbit", "1mb").expect("test bed");
    let agent = Agent::start("rj", &["--default", "reno"]);
    let maps = agent.maps();
    let mut server = bed.server(5305).expect("server");
    let client = bed.client(5305, "sluice", 1, 3, &[]).expect("client");
    std::thread::sleep(Duration::from_millis(1000));
    let flows = maps.live_flows();
    assert!(!flows.is_empty(), "no live flow");
    let epoch = maps.epoch().expect("epoch");
    let before = maps.counters().expect("counters");
    let (mut malformed, mut stale) = (before.malformed, before.stale);
    let t = Instant::now();
    while (malformed == before.malformed || stale == before.stale) && t.elapsed() < Duration::from_secs(1) {
        for &flow in &flows {
            let d =
                Decision { flags: D_CWND, flow_id: flow, epoch, seq: 1, report_seq: 1, cwnd_pkts: 3, pacing_bps: 0 };
            maps.write_raw_decision(flow, &d.encode_with(0xdead_beef, VERSION));
            std::thread::sleep(Duration::from_millis(5));
            let old = Decision { epoch: epoch - 1, seq: u32::MAX, ..d };
            maps.write_raw_decision(flow, &old.encode());
            std::thread::sleep(Duration::from_millis(5));
        }
        let now = maps.counters().expect("counters");
        (malformed, stale) = (now.malformed, now.stale);
    }
    let transfer = finish(client).expect("transfer");
    let _ = server.kill();
    let _ = server.wait();
    let summary = agent.stop();
    eprintln!(
        "BPF side rejected {} malformed and {} stale decisions; agent rejected {} malformed and {} stale reports; \
         transfer {}",
        malformed - before.malformed,
        stale - before.stale,
        summary["agent"]["malformed"],
        summary["agent"]["stale"],
        gbps(transfer.received_bps)
    );
    assert!(malformed > before.malformed, "a malformed decision was not rejected");
    assert!(stale > before.stale, "a stale decision was not rejected");
    wait_unregistered();
}

#[test]
fn bad_agent_settings_name_what_is_wrong_and_exit_2() {
    // Settings are checked before anything is loaded, so this runs anywhere.
    let dir = std::env::temp_dir().join(format!("slk-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("agent.toml");
    std::fs::write(&file, "[[rule]]\nports = \"5201\"\nalgorithm = \"hpcc\"\n").expect("write");
    let cases: [(&[&str], &str); 5] = [
        (&["--rule", "70000=reno"], "rule[1] (ports 70000).ports: `70000` is not a port"),
        (&["--default", "renoo"], "default: unknown algorithm `renoo`"),
        (&["--watchdog", "10"], "--watchdog 10"),
        (&["--fallback", "vegas"], "--fallback vegas: expected `cubic` or `reno`"),
        (&["--config", file.to_str().expect("utf-8")], "agent.toml: rule[1] (ports 5201): algorithm `hpcc` needs"),
    ];
    for (args, expected) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice")).arg("agent").args(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The least throughput through the 1 Gbps tbf each delay- or rate-based algorithm must keep, bit/s.
///
/// Measured on the 2-core test machine (docs/kernel.md "Delay- and rate-based algorithms"): Vegas
/// 0.60-0.74 Gbps, BBR 0.76-0.85, Swift 0.79-0.86, TIMELY 0.35-0.61. The bottleneck is a token bucket
/// without propagation delay, so RTT samples swing between ~6 us (tokens left) and a 64 KB GSO burst's
/// 0.5 ms and more; delay-based control reads that as queueing and gives up some throughput. The bounds
/// sit well above each algorithm's collapse (a 2-packet window, or TIMELY's 0.1 Gbps rate floor, which
/// the flows fell to before the adapter fixes) and below the measured spread, which a loaded 2-core CI
/// machine widens.
const LEAST_THROUGHPUT: [(&str, f64); 4] =
    [("sluice_vegas", 0.45e9), ("sluice_bbr", 0.6e9), ("sluice_swift", 0.6e9), ("sluice_timely", 0.25e9)];

#[test]
fn delay_and_rate_algorithms_keep_the_bottleneck_utilised() {
    let Some(_lock) = guard("delay_and_rate_algorithms_keep_the_bottleneck_utilised") else { return };
    let bed = TestBed::new("dr", "1gbit", "1mb").expect("test bed");
    let agent = Agent::start("dr", &[]);
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    if available.split_whitespace().any(|n| n == "bbr") {
        let k = bed.transfer(5306, "bbr", 1, SECONDS).expect("kernel bbr transfer");
        eprintln!("reference: kernel bbr {} ({} retransmits)", gbps(k.received_bps), k.retransmits);
    }
    let mut results = Vec::new();
    for (name, least) in LEAST_THROUGHPUT {
        let t = bed.transfer(5306, name, 1, SECONDS).expect("transfer");
        eprintln!("{name} through the 1 Gbps tbf: {} ({} retransmits)", gbps(t.received_bps), t.retransmits);
        results.push((name, least, t.received_bps));
    }
    let summary = agent.stop();
    eprintln!("agent: fallbacks {}, ring-full {}", summary["kernel"]["fallbacks"], summary["kernel"]["ringbuf_full"]);
    for (name, least, bps) in results {
        assert!(bps >= least, "{name} reached only {} (at least {} expected)", gbps(bps), gbps(least));
    }
    wait_unregistered();
}

/// What one flow's algorithm got from its datapath program, and the windows it set.
#[derive(Debug, Default, Clone)]
struct ProgramLog {
    reports: u64,
    urgent: u64,
    /// Each register summed over the reports.
    sums: Vec<u64>,
    /// The registers of the first report.
    first: Vec<u64>,
    /// The registers of the last report.
    last: Vec<u64>,
    /// The programs whose reports came (the algorithm's numbers).
    programs: std::collections::BTreeSet<u8>,
    /// The windows the algorithm set after reports, packets, and when.
    windows: Vec<(Instant, u64)>,
}

type ProgramLogs = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, ProgramLog>>>;

/// An algorithm whose program reports and windows are recorded in `logs`.
struct Recording {
    inner: Box<dyn sluice_cc::CongestionControl>,
    flow: u64,
    mss: u64,
    logs: ProgramLogs,
}

impl sluice_cc::CongestionControl for Recording {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn events(&self) -> sluice_cc::Events {
        self.inner.events()
    }
    fn on_start(&mut self, flow: &sluice_cc::FlowInfo, ctx: &mut sluice_cc::Ctx) {
        self.inner.on_start(flow, ctx)
    }
    fn on_ack(&mut self, ack: &sluice_cc::Ack<'_>, ctx: &mut sluice_cc::Ctx) {
        self.inner.on_ack(ack, ctx)
    }
    fn on_loss(&mut self, loss: &sluice_cc::Loss, ctx: &mut sluice_cc::Ctx) {
        self.inner.on_loss(loss, ctx)
    }
    fn on_timer(&mut self, id: sluice_cc::TimerId, ctx: &mut sluice_cc::Ctx) {
        self.inner.on_timer(id, ctx)
    }
    fn report_policy(&self) -> sluice_cc::ReportPolicy {
        self.inner.report_policy()
    }
    fn programs(&self) -> Vec<std::sync::Arc<sluice_cc::program::Program>> {
        self.inner.programs()
    }
    fn on_report(&mut self, report: &sluice_cc::program::ProgramReport<'_>, ctx: &mut sluice_cc::Ctx) {
        self.inner.on_report(report, ctx);
        let mut logs = self.logs.lock().expect("logs");
        let log = logs.entry(self.flow).or_default();
        log.reports += 1;
        log.urgent += report.urgent as u64;
        log.programs.insert(report.program);
        log.sums.resize(report.registers.len(), 0);
        for (sum, value) in log.sums.iter_mut().zip(report.registers) {
            *sum = sum.saturating_add(*value);
        }
        if log.first.is_empty() {
            log.first = report.registers.to_vec();
        }
        log.last = report.registers.to_vec();
        if let Some(cwnd) = ctx.decisions().cwnd {
            log.windows.push((Instant::now(), cwnd.div_ceil(self.mss).max(2)));
        }
    }
}

struct RecordingFactory {
    inner: std::sync::Arc<dyn sluice_cc::registry::Factory>,
    logs: ProgramLogs,
}

impl sluice_cc::registry::Factory for RecordingFactory {
    fn create(&self, flow: &sluice_cc::FlowInfo) -> Box<dyn sluice_cc::CongestionControl> {
        let inner = self.inner.create(flow);
        Box::new(Recording { inner, flow: flow.flow_id, mss: flow.mss.max(1) as u64, logs: self.logs.clone() })
    }
    fn resolved(&self) -> toml::Table {
        self.inner.resolved()
    }
}

/// The agent in this process (its loop on a thread), with `rules` and `params`, every rule's algorithm
/// recording into `logs`.
fn agent_in_process(
    tag: &str,
    rules: &[&str],
    params: &[&str],
    logs: &ProgramLogs,
) -> std::thread::JoinHandle<Result<sluice_kernel::runtime::RunSummary, sluice_kernel::loader::KernelError>> {
    let mut config = sluice_kernel::config::AgentConfig {
        pin_dir: PathBuf::from(format!("/sys/fs/bpf/slk-test-{tag}")),
        ..Default::default()
    };
    for rule in rules {
        config.add_rule_arg(rule).expect("rule");
    }
    for param in params {
        config.add_param_arg(param).expect("param");
    }
    let mut resolved = config.resolve("test").expect("settings");
    for rule in &mut resolved.rules {
        rule.factory = std::sync::Arc::new(RecordingFactory { inner: rule.factory.clone(), logs: logs.clone() });
    }
    let agent = std::thread::spawn(move || {
        sluice_kernel::runtime::run(resolved, &sluice_kernel::runtime::RunOptions::default(), &mut |_| {})
    });
    let t = Instant::now();
    while registered_names().len() < 8 {
        assert!(!agent.is_finished(), "the agent stopped before registering");
        assert!(t.elapsed() < Duration::from_secs(20), "the agent did not register its names");
        std::thread::sleep(Duration::from_millis(20));
    }
    agent
}

fn stop_in_process(
    agent: std::thread::JoinHandle<Result<sluice_kernel::runtime::RunSummary, sluice_kernel::loader::KernelError>>,
) -> sluice_kernel::runtime::RunSummary {
    std::thread::sleep(Duration::from_millis(300));
    sluice_kernel::runtime::request_stop();
    let summary = agent.join().expect("agent thread").expect("agent run");
    wait_unregistered();
    summary
}

/// A transfer on `port` through the sluice name, with `ss` read half-way (and when).
fn transfer_with_ss(bed: &TestBed, port: u16) -> (sluice_testbed::Transfer, (Instant, String, Instant)) {
    let mut server = bed.server(port).expect("server");
    let client = bed.client(port, "sluice", 1, SECONDS, &[]).expect("client");
    std::thread::sleep(Duration::from_millis(SECONDS as u64 * 500));
    let ss = (Instant::now(), bed.ss(port), Instant::now());
    let transfer = finish(client).expect("transfer");
    let _ = server.kill();
    let _ = server.wait();
    (transfer, ss)
}

/// The flow of `logs` that moved the most bytes (iperf3's data connection, not its control one), by
/// register `snd_una` of its last report.
fn busiest_flow(logs: &ProgramLogs, snd_una: usize) -> ProgramLog {
    let logs = logs.lock().expect("logs");
    logs.values().max_by_key(|l| l.last.get(snd_una).copied().unwrap_or(0)).cloned().expect("a flow reported")
}

/// DCTCP with its reporting as a datapath program (`program = true`) and `dctcp_burst` run their
/// programs on the BPF side: reports arrive with registers that account for every byte acknowledged,
/// the windows the algorithm sets are the kernel's, and the run matches DCTCP's fixed-engine form.
#[test]
fn datapath_programs_run_on_the_kernels_acks() {
    use sluice_cc::program::library::reg;
    let Some(_lock) = guard("datapath_programs_run_on_the_kernels_acks") else { return };
    let bed = TestBed::new("pg", "1gbit", "1mb").expect("test bed");

    let logs = ProgramLogs::default();
    let agent = agent_in_process("pgf", &["5320=dctcp"], &[], &logs);
    let fixed = bed.transfer(5320, "sluice", 1, SECONDS).expect("fixed-engine transfer");
    let fixed_summary = stop_in_process(agent);
    assert!(logs.lock().unwrap().is_empty(), "the fixed engines report through no program");
    assert_eq!(fixed_summary.kernel.program_reports, 0);

    let agent = agent_in_process("pg", &["5321=dctcp", "5322=dctcp_burst"], &["dctcp.program=true"], &logs);
    let (program, ss) = transfer_with_ss(&bed, 5321);
    let dctcp = busiest_flow(&logs, reg::SND_UNA as usize);
    logs.lock().unwrap().clear();
    let (burst, burst_ss) = transfer_with_ss(&bed, 5322);
    let burst_flow = busiest_flow(&logs, 7);
    let summary = stop_in_process(agent);

    let (a, k) = (&summary.agent, &summary.kernel);
    eprintln!(
        "dctcp fixed engines {} ({} retransmits); dctcp program {} ({} retransmits), {} reports ({} urgent); \
         dctcp_burst {} ({} retransmits), {} reports ({} urgent)",
        gbps(fixed.received_bps),
        fixed.retransmits,
        gbps(program.received_bps),
        program.retransmits,
        dctcp.reports,
        dctcp.urgent,
        gbps(burst.received_bps),
        burst.retransmits,
        burst_flow.reports,
        burst_flow.urgent
    );
    eprintln!(
        "agent: installs {} (failed {}), program reports {} (dropped {}); kernel: program signals {}, program \
         reports {}, programs lost {}, ring full {}, fallbacks {}",
        a.installs,
        a.installs_failed,
        a.program_reports,
        a.program_reports_dropped,
        k.program_signals,
        k.program_reports,
        k.programs_lost,
        k.ringbuf_full,
        k.fallbacks
    );
    eprintln!("answers: {:?}", a.answer_lag);
    assert!(a.installs >= 2 && a.installs_failed == 0, "every program flow's program was written: {a:?}");
    assert!(k.program_reports > 1000 && k.program_signals >= k.program_reports, "{k:?}");
    assert_eq!(k.programs_lost, 0);
    assert!(a.program_reports * 10 >= k.program_reports * 9, "the agent handled the BPF side's reports: {a:?}");

    // Every byte acknowledged under sluice is in exactly one report: DCTCP's program reports each ACK's
    // bytes, so from the ACK point before the first report (the SYN and iperf3's cookie were acknowledged
    // before the socket chose sluice) they add up to the ACK point of the last one.
    let (acked, snd_una) = (reg::ACKED as usize, reg::SND_UNA as usize);
    let base = dctcp.first[snd_una] - dctcp.first[acked];
    let (sum, last) = (dctcp.sums[acked], dctcp.last[snd_una]);
    eprintln!("dctcp program: {sum} bytes acknowledged in reports, ACK point {base} before them and {last} after");
    assert!(last >= program.received_bytes, "{last} acknowledged, {} received", program.received_bytes);
    assert_eq!(base + sum, last, "every acknowledged byte is reported once");
    // Most ACKs carry an RTT sample, in picoseconds; the registers are per ACK.
    let samples = dctcp.sums[reg::HAS_RTT as usize];
    let rtt_us = dctcp.sums[reg::RTT as usize] / samples.max(1) / 1_000_000;
    eprintln!("dctcp program: {samples} RTT samples in {} reports, mean {rtt_us} us", dctcp.reports);
    assert!(samples * 2 >= dctcp.reports && (1..1_000_000).contains(&rtt_us), "RTT {rtt_us} us");
    let registers = &dctcp.last;
    assert!(registers[reg::SND_NXT as usize] >= last && registers[reg::ACKS as usize] == 1, "{registers:?}");
    // dctcp_burst reports once per window: the windows' sums (w_acked) and what the last report holds
    // since its window (acked).
    let (held, w_acked, snd_una) = (0, 3, 7);
    let (first, last) = (&burst_flow.first, &burst_flow.last);
    let base = first[snd_una] - first[w_acked] - first[held];
    let sum = burst_flow.sums[w_acked] + last[held];
    eprintln!(
        "dctcp_burst: {sum} bytes acknowledged in reports, ACK point {base} before them and {} after",
        last[snd_una]
    );
    // Its last report came at most a window before the end.
    assert!(
        last[snd_una] as f64 >= 0.95 * burst.received_bytes as f64,
        "{} of {}",
        last[snd_una],
        burst.received_bytes
    );
    assert_eq!(base + sum, last[snd_una], "every acknowledged byte is reported once");

    // The kernel's window is one the algorithm set around the time `ss` read it.
    for (name, log, (before, ss, after)) in [("dctcp", &dctcp, &ss), ("dctcp_burst", &burst_flow, &burst_ss)] {
        let cwnd = cwnd_in(ss).expect("ss shows the window") as u64;
        let slack = Duration::from_millis(20);
        let around: Vec<u64> =
            log.windows.iter().filter(|(at, _)| *at + slack >= *before && *at <= *after + slack).map(|w| w.1).collect();
        let range = (around.iter().min(), around.iter().max());
        eprintln!("{name}: ss cwnd {cwnd}; the algorithm set {} windows then, {range:?}", around.len());
        assert!(around.contains(&cwnd), "{name}: the kernel's window {cwnd} is not one the algorithm set then");
    }
    let ratio = program.received_bps / fixed.received_bps;
    eprintln!("dctcp program / fixed engines: {:.3}", ratio);
    assert!((ratio - 1.0).abs() <= 0.05, "the program form reached {:.1}% of the fixed form", ratio * 100.0);
    assert!(burst.received_bps >= 0.9 * fixed.received_bps, "dctcp_burst reached {}", gbps(burst.received_bps));
}

/// A flow running its program on the BPF side keeps going when the agent dies: the watchdog hands it to
/// the kernel's Cubic or Reno while the program keeps running, and a restarted agent takes the flow over,
/// writes its program again and gets its reports.
#[test]
fn a_program_flow_falls_back_when_the_agent_dies_and_is_taken_over() {
    let Some(_lock) = guard("a_program_flow_falls_back_when_the_agent_dies_and_is_taken_over") else { return };
    let bed = TestBed::new("pk", "1gbit", "1mb").expect("test bed");
    let args = ["--default", "dctcp", "--param", "dctcp.program=true"];
    let mut first = Agent::start("pk", &args);
    let mut server = bed.server(5323).expect("server");
    let client = bed.client(5323, "sluice", 1, 6, &[]).expect("client");
    std::thread::sleep(Duration::from_millis(1500));
    let before = first.maps().counters().expect("counters");
    first.kill();
    wait_unregistered();
    std::thread::sleep(Duration::from_millis(1500));
    let during = first.maps().counters().expect("counters");
    eprintln!("agent killed: {before:?} -> {during:?}");
    assert!(before.program_reports > 0, "the program ran before: {before:?}");
    assert!(during.fallbacks > before.fallbacks, "no fallback: {during:?}");
    assert!(during.program_signals > before.program_signals, "the program kept running: {during:?}");
    let second = Agent::start("pk", &args);
    let transfer = finish(client).expect("the transfer completes");
    let _ = server.kill();
    let _ = server.wait();
    let summary = second.stop();
    eprintln!(
        "program flow kill/restart: transfer {} in 6 s; summary agent {} kernel {}",
        gbps(transfer.received_bps),
        summary["agent"],
        summary["kernel"]
    );
    assert!(transfer.received_bps > 0.5e9, "the flow did not stall: {}", gbps(transfer.received_bps));
    let agent = &summary["agent"];
    assert!(agent["flows_taken_over"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(agent["installs"].as_u64().unwrap_or(0) >= 1, "{summary}");
    assert!(agent["program_reports"].as_u64().unwrap_or(0) > 0, "{summary}");
    assert!(summary["kernel"]["resumed"].as_u64().unwrap_or(0) >= 1, "{summary}");
    wait_unregistered();
    drop(first);
}

/// BBR with `program = true` replaces its program at run time (`ctx.install`, CCP's Install): the
/// per-signal program in STARTUP, the per-interval one in PROBE_BW. On kernel TCP the agent writes each
/// install to the BPF side, whose reports then come from the new program.
#[test]
fn a_program_installed_at_run_time_reaches_the_kernel() {
    let Some(_lock) = guard("a_program_installed_at_run_time_reaches_the_kernel") else { return };
    let bed = TestBed::new("pi", "1gbit", "1mb").expect("test bed");
    let logs = ProgramLogs::default();
    let agent = agent_in_process("pi", &["5324=bbr"], &["bbr.program=true"], &logs);
    let transfer = bed.transfer(5324, "sluice", 1, SECONDS).expect("transfer");
    let summary = stop_in_process(agent);
    let flow = busiest_flow(&logs, sluice_cc::program::library::reg::SND_UNA as usize);
    let (a, k) = (&summary.agent, &summary.kernel);
    eprintln!(
        "bbr program: {} ({} retransmits); programs {:?}, {} reports; agent installs {} (failed {}), program \
         reports {} (dropped {}); kernel program reports {}, lost {}, fallbacks {}",
        gbps(transfer.received_bps),
        transfer.retransmits,
        flow.programs,
        flow.reports,
        a.installs,
        a.installs_failed,
        a.program_reports,
        a.program_reports_dropped,
        k.program_reports,
        k.programs_lost,
        k.fallbacks
    );
    assert_eq!(flow.programs, [0, 1].into(), "reports of both programs reached BBR");
    assert!(a.installs >= 2 && a.installs_failed == 0, "{a:?}");
    assert!(k.program_reports > 100 && k.programs_lost == 0, "{k:?}");
    assert!(transfer.received_bps >= 0.6e9, "bbr with its programs reached {}", gbps(transfer.received_bps));
}
