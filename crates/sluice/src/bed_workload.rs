//! A scenario's flows on a real datapath in the bed, while the switch runs in this process: a receiver
//! in every receiving host's namespace and a sender with its share of the flows (a flow list) in every
//! sending host's. On the UDP datapath they are `sluice udp recv` and `send`; on kernel TCP,
//! `sluice tcp recv` and `send` with sockets that choose `sluice`, while a `sluice agent` runs the
//! scenario's algorithm. When the senders are done the receivers (and the agent) are stopped, and the
//! senders' `fct.csv` files become one, with the flow ids, hosts and ideal completion times of the
//! simulator's run of the same file, so that `sluice compare` can set them side by side.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use sluice_bed::Bed;
use sluice_core::{Time, PS_PER_NS};
use sluice_scenario::Resolved;

use crate::console::Failure;
use crate::udp_plan::{path_round_trip, scenario_flows, Planned, FLOW_LIST_HEADER};
use crate::udp_scenario::{algorithm_params, sender_options, UDP_FRAMING};

/// The port receivers listen on.
const PORT: u16 = 5300;

/// A real datapath the bed drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Real {
    /// The sluice UDP transport.
    Udp,
    /// Kernel TCP through `sluice agent`.
    Kernel,
}

impl Real {
    /// Payload of a full packet at a 1500-byte MTU, and the bytes it takes on the wire beyond that.
    /// UDP: a sluice header (56) on UDP (8), IPv4 (20) and Ethernet (14). TCP: MSS 1448 with
    /// timestamps (TCP 32, IPv4 20, Ethernet 14).
    fn framing(self) -> (u64, u64) {
        match self {
            Real::Udp => UDP_FRAMING,
            Real::Kernel => (1448, 66),
        }
    }

    /// The subcommand of `sluice` that carries this datapath's traffic.
    fn tool(self) -> &'static str {
        match self {
            Real::Udp => "udp",
            Real::Kernel => "tcp",
        }
    }

    /// Name of the datapath in `summary.json`.
    fn name(self) -> &'static str {
        match self {
            Real::Udp => "udp",
            Real::Kernel => "kernel",
        }
    }
}

/// The datapath processes of a running workload.
pub struct Running {
    dir: PathBuf,
    receivers: Vec<Child>,
    senders: Vec<(u32, Child)>,
    agent: Option<Child>,
    algorithm: String,
    real: Real,
}

/// What the workload gave, once its processes ended.
pub struct Outcome {
    /// Senders that failed, with what they said.
    pub failures: Vec<String>,
}

/// Starts the scenario's flows on `real`: the agent first (kernel TCP), then receivers, then one sender
/// per sending host. Files go under `dir/hosts/h<i>/`.
pub fn start(real: Real, resolved: &Resolved, bed: &Bed, dir: &Path, exe: &Path) -> Result<Running, Failure> {
    let agent = match real {
        Real::Kernel => Some(start_agent(resolved, bed, dir, exe)?),
        Real::Udp => None,
    };
    let plans = plan(real, resolved, bed);
    let mut receivers = Vec::new();
    for dst in receiving_hosts(resolved) {
        let host = &bed.hosts[dst as usize];
        let mut c = host.command(exe.to_str().unwrap_or("sluice"));
        c.args([real.tool(), "recv", "--bind", &format!("{}:{PORT}", host.ip())]);
        if real == Real::Udp {
            let host_dir = host_dir(dir, dst)?;
            c.arg("--stats").arg(host_dir.join("receiver.json"));
            c.arg("--trace").arg(host_dir.join(RECEIVER_TRACE));
            c.args(receiver_options(resolved, dst));
        }
        receivers.push(spawn(c)?);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let loops = closed_loop_file(resolved, dir)?;
    let mut senders = Vec::new();
    for (src, flows) in plans.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
        let host_dir = host_dir(dir, src as u32)?;
        let list = host_dir.join("flows.csv");
        let text: String = std::iter::once(FLOW_LIST_HEADER.to_string())
            .chain(flows.iter().map(Planned::csv_line))
            .map(|l| l + "\n")
            .collect();
        fs::write(&list, text).map_err(|e| Failure::Error(format!("{}: {e}", list.display())))?;
        let mut c = bed.hosts[src].command(exe.to_str().unwrap_or("sluice"));
        c.args([real.tool(), "send", "--flow-list"]).arg(&list).arg("--out").arg(&host_dir);
        c.args(match real {
            Real::Udp => sender_options(resolved, flows),
            Real::Kernel => kernel_sender_options(resolved),
        });
        if let Some(file) = loops.as_ref().filter(|_| has_slots(resolved, src as u32)) {
            c.arg("--closed-loops").arg(file).args(["--host", &src.to_string()]);
        }
        senders.push((src as u32, spawn(c)?));
    }
    Ok(Running {
        dir: dir.to_path_buf(),
        receivers,
        senders,
        agent,
        algorithm: resolved.algorithm.name.to_string(),
        real,
    })
}

/// The resolved scenario, written for the UDP senders that run closed-loop slots (`None` without closed
/// loops): each resolves it to continue its slots' size streams as the simulator does.
fn closed_loop_file(resolved: &Resolved, dir: &Path) -> Result<Option<PathBuf>, Failure> {
    if resolved.closed_loops.is_empty() {
        return Ok(None);
    }
    let file = dir.join("closed_loops.toml");
    fs::create_dir_all(dir).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
    let text = sluice_scenario::resolved_toml(resolved);
    fs::write(&file, text).map_err(|e| Failure::Error(format!("{}: {e}", file.display())))?;
    Ok(Some(file))
}

/// Whether host `src` sends in some closed-loop slot.
fn has_slots(resolved: &Resolved, src: u32) -> bool {
    resolved.closed_loops.iter().any(|l| l.slots.iter().any(|s| s.src == src))
}

/// Starts `sluice agent` with the scenario's algorithm (and its parameters) for every socket that
/// chooses `sluice`, and turns ECN on in every host's TCP; waits until its names are registered.
fn start_agent(resolved: &Resolved, bed: &Bed, dir: &Path, exe: &Path) -> Result<Child, Failure> {
    for host in &bed.hosts {
        let ok = host.command("sysctl").args(["-qw", "net.ipv4.tcp_ecn=1"]).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Err(Failure::Error(format!("turning ECN on in {}", host.namespace)));
        }
    }
    let algorithm = resolved.algorithm.name;
    let mut c = Command::new(exe);
    c.args(["agent", "--default", algorithm, "--stats"]).arg(dir.join("agent.json"));
    for (key, value) in algorithm_params(resolved) {
        c.args(["--param", &format!("{algorithm}.{key}={value}")]);
    }
    let child = spawn(c)?;
    let t = std::time::Instant::now();
    while !registered() {
        if t.elapsed() > std::time::Duration::from_secs(20) {
            return Err(Failure::Error("sluice agent did not register its congestion control within 20 s".into()));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(child)
}

/// Whether `sluice` is among the kernel's congestion controls.
fn registered() -> bool {
    let list = fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    list.split_whitespace().any(|n| n == "sluice")
}

impl Running {
    /// Waits for every sender, then stops the receivers (SIGTERM, so that they write their counters).
    pub fn wait(mut self) -> Outcome {
        let mut failures = Vec::new();
        for (src, child) in self.senders.drain(..) {
            match child.wait_with_output() {
                Ok(o) if o.status.success() => {}
                Ok(o) => failures.push(format!("sender h{src}: {}", String::from_utf8_lossy(&o.stderr).trim())),
                Err(e) => failures.push(format!("sender h{src}: {e}")),
            }
        }
        for child in self.receivers.iter_mut().chain(self.agent.as_mut()) {
            // SAFETY: kill(2) on the pid of a child this process spawned and has not yet reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        for mut child in self.receivers.drain(..).chain(self.agent.take()) {
            let _ = child.wait();
        }
        Outcome { failures }
    }

    /// Where the workload writes.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The algorithm the flows ran.
    pub fn algorithm(&self) -> &str {
        &self.algorithm
    }

    /// The datapath.
    pub fn real(&self) -> Real {
        self.real
    }
}

/// What the switch saw of a bed run, for its summary.json.
pub struct SwitchFigures {
    /// The `faults` section (each `[[fault]]` entry's packets dropped and marked).
    pub faults: Value,
    /// The `switch_signal` section, or null without a switch signal.
    pub signal: Value,
    /// Tokens the switch's token limiters dropped and marked.
    pub token_limiters: (u64, u64),
}

/// The token transport's counters that the simulator's summary.json has under `receiver_driven`, for
/// the same section of the bed's: every host's sender and receiver counts summed, the switch's token
/// limiters' drops and marks, and the same ratios. `None` for an algorithm without tokens.
fn token_summary(dir: &Path, (dropped, marked): (u64, u64)) -> Option<Value> {
    let mut sums = serde_json::Map::new();
    for host in host_dirs(dir) {
        for file in ["summary.json", "receiver.json"] {
            let Ok(text) = fs::read_to_string(host.join(file)) else { continue };
            let summary: Value = serde_json::from_str(&text).unwrap_or_default();
            let Some(tokens) = summary["tokens"].as_object() else { continue };
            for (key, value) in tokens {
                let sum = sums.get(key).and_then(Value::as_u64).unwrap_or(0) + value.as_u64().unwrap_or(0);
                sums.insert(key.clone(), sum.into());
            }
        }
    }
    let count = |key: &str| sums.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (issued, wasted) = (count("tokens_issued"), count("tokens_wasted") + count("tokens_stale"));
    if issued + count("requests") == 0 {
        return None;
    }
    let per_token = |n: u64| sluice_results::round6(n as f64 / issued.max(1) as f64);
    sums.insert("tokens_dropped".into(), dropped.into());
    sums.insert("tokens_marked".into(), marked.into());
    sums.insert("token_drop_ratio".into(), per_token(dropped).into());
    sums.insert("token_waste_ratio".into(), per_token(wasted).into());
    Some(Value::Object(sums))
}

/// Merges the senders' results into `dir/fct.csv` and `dir/summary.json`, rows in id order (flows that
/// closed loops started during the run carry the simulator's ids already). The switch's `faults` (a JSON array) become summary.json's
/// `faults` section unless it is empty, its `signal` (what its signal hooks did) the `switch_signal`
/// section unless it is null, and with a token transport the hosts' token counters and the switch's
/// token limiters the `extra.receiver_driven` section, as the simulator writes it.
pub fn merge(real: Real, dir: &Path, algorithm: &str, outcome: &Outcome, switch: SwitchFigures) -> Result<(), Failure> {
    let mut header = None;
    let mut rows: Vec<(u64, String)> = Vec::new();
    const SUMMED: [&str; 8] = [
        "retransmits",
        "timeouts",
        "data_packets",
        "flows",
        "failed",
        "delivered_bytes",
        "signals_path",
        "signals_switch",
    ];
    let mut totals: Value = SUMMED.iter().map(|k| (k.to_string(), json!(0))).collect::<serde_json::Map<_, _>>().into();
    for host in host_dirs(dir) {
        let Ok(text) = fs::read_to_string(host.join("fct.csv")) else { continue };
        let mut lines = text.lines();
        header = header.or(lines.next().map(str::to_string));
        rows.extend(
            lines.map(|l| (l.split(',').next().and_then(|id| id.parse().ok()).unwrap_or(u64::MAX), l.to_string())),
        );
        if let Ok(summary) = fs::read_to_string(host.join("summary.json")) {
            let summary: Value = serde_json::from_str(&summary).unwrap_or_default();
            for key in SUMMED {
                totals[key] = json!(totals[key].as_u64().unwrap_or(0) + summary[key].as_u64().unwrap_or(0));
            }
        }
    }
    merge_traces(dir)?;
    merge_flow_throughput(dir)?;
    let header = header.ok_or_else(|| Failure::Error(format!("no sender wrote results under {}", dir.display())))?;
    rows.sort();
    let fct: String = std::iter::once(header).chain(rows.into_iter().map(|(_, l)| l)).map(|l| l + "\n").collect();
    fs::write(dir.join("fct.csv"), fct).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
    let mut summary = json!({
        "datapath": real.name(),
        "algorithm": algorithm,
        "totals": totals,
        "sender_failures": outcome.failures,
        "partial": crate::console::interrupted(),
    });
    if switch.faults.as_array().is_some_and(|f| !f.is_empty()) {
        summary["faults"] = switch.faults;
    }
    if !switch.signal.is_null() {
        summary["switch_signal"] = switch.signal;
    }
    if let Some(tokens) = token_summary(dir, switch.token_limiters) {
        summary["extra"] = json!({ "receiver_driven": tokens });
    }
    fs::write(dir.join("summary.json"), format!("{summary:#}\n"))
        .map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))
}

/// Where a UDP receiver writes the traces of the receiver-driven flows it receives, in its host's folder.
const RECEIVER_TRACE: &str = "receiver-trace.csv";

/// Concatenates the senders' `trace.csv` files and the receivers' traces of receiver-driven flows (their
/// rows are per flow, and flow ids are the run's).
fn merge_traces(dir: &Path) -> Result<(), Failure> {
    let mut header = None;
    let mut rows = Vec::new();
    for host in host_dirs(dir) {
        for name in ["trace.csv", RECEIVER_TRACE] {
            let Ok(text) = fs::read_to_string(host.join(name)) else { continue };
            let mut lines = text.lines();
            let Some(first) = lines.next() else { continue };
            header = header.or(Some(first.to_string()));
            rows.extend(lines.map(str::to_string));
        }
    }
    let Some(header) = header else { return Ok(()) };
    let text: String = std::iter::once(header).chain(rows).map(|l| l + "\n").collect();
    fs::write(dir.join("trace.csv"), text).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))
}

/// Appends the senders' per-flow series (`throughput.csv` of each host, from the scenario's
/// `output.throughput_flows`) to the switch's `throughput.csv`, after its ports' rows, by flow id.
fn merge_flow_throughput(dir: &Path) -> Result<(), Failure> {
    let mut rows: Vec<(u64, String)> = Vec::new();
    for host in host_dirs(dir) {
        let Ok(text) = fs::read_to_string(host.join("throughput.csv")) else { continue };
        let flow = |l: &str| l.strip_prefix("flow ").and_then(|r| r.split(',').next()?.parse().ok());
        rows.extend(text.lines().skip(1).map(|l| (flow(l).unwrap_or(u64::MAX), l.to_string())));
    }
    if rows.is_empty() {
        return Ok(());
    }
    // Stable: each flow's samples stay in time order.
    rows.sort_by_key(|(id, _)| *id);
    let path = dir.join("throughput.csv");
    let fail = |e: std::io::Error| Failure::Error(format!("{}: {e}", path.display()));
    let mut text =
        fs::read_to_string(&path).unwrap_or_else(|_| format!("{}\n", sluice_results::csv::THROUGHPUT_HEADER));
    for (_, line) in rows {
        text.push_str(&line);
        text.push('\n');
    }
    fs::write(&path, text).map_err(fail)
}

/// Each sending host's flows, with receivers' addresses and the simulator's flow ids.
fn plan(real: Real, resolved: &Resolved, bed: &Bed) -> Vec<Vec<Planned>> {
    let mut plans = vec![Vec::new(); bed.hosts.len()];
    let to = |dst: u32| format!("{}:{PORT}", bed.hosts[dst as usize].ip()).parse().expect("bed addresses are IPv4");
    for flow in scenario_flows(resolved, real.framing(), to) {
        plans[flow.src as usize].push(flow);
    }
    plans
}

/// The UDP receiver's options: a receiver-driven algorithm's receiver side runs at host `dst`, with the
/// scenario's parameters, at the host's line rate (its token pacer's rate) and the longest unloaded
/// round trip of the flows it receives.
fn receiver_options(resolved: &Resolved, dst: u32) -> Vec<String> {
    let needs = resolved.algorithm.needs;
    if !(needs.token_transport && needs.receiver) {
        return Vec::new();
    }
    let mut args = vec!["--algorithm".to_string(), resolved.algorithm.name.to_string()];
    for (key, value) in algorithm_params(resolved) {
        args.extend(["--param".to_string(), format!("{key}={value}")]);
    }
    args.extend(["--line-rate".into(), format!("{}bps", resolved.line_rate)]);
    let base = resolved.flows.iter().filter(|f| f.dst == dst).map(|f| round_trip(Real::Udp, resolved, f.src, dst));
    args.extend(["--base-rtt".into(), format!("{}ns", base.max().unwrap_or(0) / PS_PER_NS)]);
    let s = &resolved.scenario;
    let traced: Vec<String> = resolved
        .flows
        .iter()
        .enumerate()
        .filter(|(id, f)| f.dst == dst && s.output.trace_flows.contains(&(*id as u64)))
        .map(|(id, _)| id.to_string())
        .collect();
    if !traced.is_empty() {
        args.extend(["--trace-flows".into(), traced.join(",")]);
        args.extend(["--trace-interval".into(), format!("{}ns", s.output.trace_interval / PS_PER_NS)]);
    }
    args
}

/// The kernel sender's options: its sockets choose `sluice` (the agent's algorithm), and the
/// scenario's time limit.
fn kernel_sender_options(resolved: &Resolved) -> Vec<String> {
    let limit = resolved.scenario.simulation.time_limit / PS_PER_NS;
    vec!["--congestion".into(), "sluice".into(), "--duration".into(), format!("{limit}ns")]
}

/// The path's unloaded round trip for a full packet of `real`'s framing: propagation both ways and the
/// packet's serialisation on every link (the simulator's base RTT, less the ACK's serialisation).
fn round_trip(real: Real, resolved: &Resolved, src: u32, dst: u32) -> Time {
    path_round_trip(resolved, src, dst, real.framing())
}

fn receiving_hosts(resolved: &Resolved) -> Vec<u32> {
    let mut hosts: Vec<u32> = resolved.flows.iter().map(|f| f.dst).collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts
}

fn host_dir(dir: &Path, host: u32) -> Result<PathBuf, Failure> {
    let d = dir.join("hosts").join(format!("h{host}"));
    fs::create_dir_all(&d).map_err(|e| Failure::Error(format!("{}: {e}", d.display())))?;
    Ok(d)
}

fn host_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        fs::read_dir(dir.join("hosts")).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    dirs.sort();
    dirs
}

fn spawn(mut c: Command) -> Result<Child, Failure> {
    c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| Failure::Error(format!("starting {c:?}: {e}")))
}
