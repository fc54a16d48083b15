//! `sluice test`: a scenario's flows as real UDP traffic. With `--peer ADDR --key FILE`, every flow runs
//! from this host to a `sluice test serve` host over the network between them (no software switch):
//! the two hosts agree on the test over an authenticated control connection (`test_control`), the
//! server receives on a data port it names, and this host sends the flows with the scenario's
//! algorithm and writes the simulator's files. Without `--peer` the flows run on the software switch's
//! bed, as `sluice bed run --datapath udp` runs them (root, the `bed` feature).

use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sluice_core::units::parse_duration;
use sluice_core::PS_PER_NS;
use sluice_scenario::Resolved;

use crate::console::{catch_interrupts, interrupted, note, Failure};
use crate::test_control::{read_key, Channel, ControlError, Message};
use crate::udp::{option, send_line, Receiver};
use crate::udp_plan::{path_round_trip, scenario_flows, Planned, FLOW_LIST_HEADER};
use crate::udp_scenario::{algorithm_params, sender_options, UDP_FRAMING};
use crate::udp_threads::MAX_THREADS;

/// How long a server waits for a client's first message, and a client for the server's answers.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// How long past a test's time limit a server waits for the client's stop.
const GRACE: Duration = Duration::from_secs(30);

/// `sluice test`'s options.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct TestArgs {
    #[command(subcommand)]
    command: Option<TestCommand>,
    /// The scenario file (TOML), as `sluice run` reads it.
    #[arg(required = true)]
    scenario: Option<PathBuf>,
    /// Override a scenario field (repeatable), as `sluice run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// The control address of a `sluice test serve` host (ADDRESS:PORT): every flow runs from this
    /// host to that one over the network between them. Without it, the flows run on the bed.
    #[arg(long, requires = "key")]
    peer: Option<String>,
    /// The file holding the key this host and the peer share (at least 16 bytes, mode 600).
    #[arg(long)]
    key: Option<PathBuf>,
    /// Sender threads, and the peer's receiver threads (default: one per core of this host).
    #[arg(long)]
    threads: Option<usize>,
    /// Output directory (default: `results/NAME-test`, NAME the scenario's name).
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --peer: this host's sender threads poll their sockets this long before sleeping on them
    /// (e.g. 200us; as `sluice udp send --busy-poll`).
    #[arg(long, value_name = "DURATION", requires = "peer")]
    busy_poll: Option<String>,
}

/// `sluice test`'s subcommands.
#[derive(clap::Subcommand)]
pub enum TestCommand {
    /// Receive tests from `sluice test SCENARIO --peer` hosts that hold the key, one at a time, until
    /// SIGINT or SIGTERM.
    Serve(ServeArgs),
}

/// `sluice test serve`'s options.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The control address to listen on; data ports are chosen on the address a client reaches.
    #[arg(long, default_value = "0.0.0.0:5400")]
    bind: String,
    /// The file holding the key clients must hold (at least 16 bytes, mode 600).
    #[arg(long)]
    key: PathBuf,
    /// Serve one connection, then exit.
    #[arg(long)]
    once: bool,
    /// Each test's receiver threads poll their sockets this long before sleeping on them (e.g. 200us;
    /// as `sluice udp recv --busy-poll`): senders on this machine then spend nothing waking them, and
    /// they keep their cores busy while they poll.
    #[arg(long, value_name = "DURATION")]
    busy_poll: Option<String>,
}

/// Runs `sluice test ...`.
pub fn run(args: TestArgs) -> Result<(), Failure> {
    if let Some(TestCommand::Serve(serve_args)) = args.command {
        return serve(&serve_args);
    }
    if let Some(d) = &args.busy_poll {
        option("busy-poll", d, parse_duration)?;
    }
    let path = args.scenario.as_deref().expect("clap requires the scenario");
    let scenario = sluice_scenario::load(path, &args.sets, args.seed).map_err(|e| Failure::Error(e.to_string()))?;
    let resolved = sluice_scenario::resolve(&scenario).map_err(|e| Failure::Error(e.to_string()))?;
    let dir =
        args.out.clone().unwrap_or_else(|| PathBuf::from("results").join(format!("{}-test", scenario_name(&resolved))));
    match &args.peer {
        Some(peer) => with_peer(&args, &resolved, peer, &dir),
        None => on_bed(path, &args, &dir),
    }
}

fn scenario_name(resolved: &Resolved) -> String {
    resolved.scenario.name.clone()
}

#[cfg(feature = "bed")]
fn on_bed(path: &Path, args: &TestArgs, dir: &Path) -> Result<(), Failure> {
    if args.threads.is_some_and(|t| t != 1) {
        return Err(Failure::Error("--threads: on the bed each host runs one sender thread".into()));
    }
    crate::bed::run_udp(path, &args.sets, args.seed, dir)
}

#[cfg(not(feature = "bed"))]
fn on_bed(_: &Path, _: &TestArgs, _: &Path) -> Result<(), Failure> {
    Err(Failure::Error(
        "without --peer the flows run on the software switch's bed, and this sluice was built without it: \
         give --peer ADDRESS:PORT of a `sluice test serve` host, or build with `--features bed` (root)"
            .into(),
    ))
}

/// What a two-machine test cannot run, said before anything starts.
fn refuse_for_peer(resolved: &Resolved) -> Result<(), Failure> {
    let a = resolved.algorithm;
    if a.needs.int {
        return Err(Failure::Error(format!(
            "cc.algorithm {:?} reads INT, which the network between two hosts does not stamp: run it on the bed \
             (`sluice test SCENARIO` without --peer)",
            a.name
        )));
    }
    if a.needs.signal {
        return Err(Failure::Error(format!(
            "cc.algorithm {:?} needs switches that compute its per-hop signal, which the network between two \
             hosts does not have: run it on the bed (`sluice test SCENARIO` without --peer)",
            a.name
        )));
    }
    sluice_cc::contract::check(a, &sluice_cc::contract::Capabilities::UDP).map_err(|m| Failure::Error(m.to_string()))
}

fn with_peer(args: &TestArgs, resolved: &Resolved, peer: &str, dir: &Path) -> Result<(), Failure> {
    refuse_for_peer(resolved)?;
    let key = read_key(args.key.as_deref().expect("clap requires --key with --peer")).map_err(Failure::Error)?;
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 || threads > MAX_THREADS {
        return Err(Failure::Error(format!("--threads {threads}: expected 1 to {MAX_THREADS}")));
    }
    let control = resolve_peer(peer)?;
    let stream = TcpStream::connect_timeout(&SocketAddr::V4(control), HANDSHAKE)
        .map_err(|e| Failure::Error(format!("--peer {peer}: {e}")))?;
    stream.set_read_timeout(Some(HANDSHAKE)).map_err(|e| Failure::Error(e.to_string()))?;
    let fail = |e: ControlError| Failure::Error(format!("--peer {peer}: {e}"));
    let mut channel = Channel::connect(stream, &key).map_err(fail)?;
    channel.send(&start_message(resolved, threads)).map_err(fail)?;
    let port = match channel.receive().map_err(fail)? {
        Message::Ready { port } => port,
        Message::Error { message } => return Err(Failure::Error(format!("--peer {peer} refused the test: {message}"))),
        other => return Err(Failure::Error(format!("--peer {peer}: unexpected answer {other:?}"))),
    };
    let data = SocketAddrV4::new(*control.ip(), port);
    let n = resolved.flows.len();
    note(&format!("test: {n} flow{} of {} to {data}", if n == 1 { "" } else { "s" }, resolved.algorithm.name));
    std::fs::create_dir_all(dir).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
    let sent = send_flows(resolved, data, threads, args.busy_poll.as_deref(), dir);
    let limit = Duration::from_nanos(resolved.scenario.simulation.time_limit / PS_PER_NS) + GRACE;
    channel.stream_mut().set_read_timeout(Some(limit)).map_err(|e| Failure::Error(e.to_string()))?;
    channel.send(&Message::Stop).map_err(fail)?;
    match channel.receive().map_err(fail)? {
        Message::Stats { stats } => {
            let path = dir.join("receiver.json");
            std::fs::write(&path, format!("{stats:#}\n"))
                .map_err(|e| Failure::Error(format!("{}: {e}", path.display())))?
        }
        other => return Err(Failure::Error(format!("--peer {peer}: unexpected answer {other:?}"))),
    }
    sent
}

/// The peer's control address.
fn resolve_peer(peer: &str) -> Result<SocketAddrV4, Failure> {
    let addrs = peer.to_socket_addrs().map_err(|e| Failure::Error(format!("--peer {peer:?}: {e}")))?;
    addrs.filter_map(|a| if let SocketAddr::V4(v4) = a { Some(v4) } else { None }).next().ok_or_else(|| {
        Failure::Error(format!("--peer {peer:?}: expected an IPv4 address and port, like 192.0.2.7:5400"))
    })
}

/// The request for the peer: the receiver side of a receiver-driven algorithm, with its parameters, at
/// the scenario's line rate.
fn start_message(resolved: &Resolved, threads: usize) -> Message {
    let a = resolved.algorithm;
    let receiver_side = a.needs.token_transport && a.needs.receiver;
    let params = algorithm_params(resolved).into_iter().map(|(k, v)| format!("{k}={v}"));
    let limit = resolved.scenario.simulation.time_limit;
    let trips = resolved.flows.iter().map(|f| path_round_trip(resolved, f.src, f.dst, UDP_FRAMING));
    let base_rtt = trips.max().unwrap_or(0);
    Message::Start {
        algorithm: receiver_side.then(|| a.name.to_string()),
        params: if receiver_side { params.collect() } else { Vec::new() },
        line_rate_bps: resolved.line_rate,
        base_rtt_ns: base_rtt / PS_PER_NS,
        // A receiver-driven algorithm's receiver paces one host's tokens: one thread.
        threads: if receiver_side { 1 } else { threads },
        limit_ns: (limit + GRACE.as_nanos() as u64 * PS_PER_NS) / PS_PER_NS,
    }
}

/// Sends every flow of the scenario to `data` with `sluice udp send`'s code, writing its files into `dir`
/// next to the resolved scenario. Every host's closed-loop slots run here, each starting its next flow
/// when its flow completes.
fn send_flows(
    resolved: &Resolved,
    data: SocketAddrV4,
    threads: usize,
    busy_poll: Option<&str>,
    dir: &Path,
) -> Result<(), Failure> {
    let flows = scenario_flows(resolved, UDP_FRAMING, |_| data);
    let list = dir.join("flows.csv");
    let text: String = std::iter::once(FLOW_LIST_HEADER.to_string())
        .chain(flows.iter().map(Planned::csv_line))
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&list, text).map_err(|e| Failure::Error(format!("{}: {e}", list.display())))?;
    let scenario = dir.join("scenario.resolved.toml");
    std::fs::write(&scenario, sluice_scenario::resolved_toml_at(resolved, dir))
        .map_err(|e| Failure::Error(format!("{}: {e}", scenario.display())))?;
    let mut line =
        vec!["--flow-list".to_string(), list.display().to_string(), "--out".into(), dir.display().to_string()];
    line.extend(["--threads".into(), threads.to_string()]);
    line.extend(busy_poll.into_iter().flat_map(|d| ["--busy-poll".to_string(), d.to_string()]));
    if !resolved.closed_loops.is_empty() {
        line.extend(["--closed-loops".into(), scenario.display().to_string()]);
    }
    line.extend(sender_options(resolved, &flows));
    send_line(&line)
}

fn serve(args: &ServeArgs) -> Result<(), Failure> {
    let key = read_key(&args.key).map_err(Failure::Error)?;
    if let Some(d) = &args.busy_poll {
        option("busy-poll", d, parse_duration)?;
    }
    let listener = TcpListener::bind(&args.bind).map_err(|e| Failure::Error(format!("--bind {}: {e}", args.bind)))?;
    listener.set_nonblocking(true).map_err(|e| Failure::Error(e.to_string()))?;
    catch_interrupts()?;
    let local = listener.local_addr().map_err(|e| Failure::Error(e.to_string()))?;
    note(&format!("serving tests on {local}"));
    while !interrupted() {
        let (stream, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(Failure::Error(format!("accepting: {e}"))),
        };
        match serve_one(stream, &key, args.busy_poll.as_deref()) {
            Ok(done) => note(&format!("test from {from}: {done}")),
            Err(why) => note(&format!("refused {from}: {why}")),
        }
        if args.once {
            break;
        }
    }
    Ok(())
}

/// One test: the client's start, the receiver on a fresh port, the client's stop, the counters back.
fn serve_one(stream: TcpStream, key: &[u8], busy_poll: Option<&str>) -> Result<String, String> {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(HANDSHAKE)).map_err(|e| e.to_string())?;
    let local_ip = match stream.local_addr().map_err(|e| e.to_string())? {
        SocketAddr::V4(a) => *a.ip(),
        SocketAddr::V6(_) => return Err("an IPv6 control connection (the UDP datapath is IPv4)".into()),
    };
    let mut channel = Channel::accept(stream, key).map_err(|e| e.to_string())?;
    let start = match channel.receive() {
        Ok(message) => message,
        Err(e) => {
            // Tagged with the server's key: a client holding another key cannot read it either, and
            // says that authentication failed.
            let _ = channel.send(&Message::Error { message: e.to_string() });
            return Err(e.to_string());
        }
    };
    let Message::Start { algorithm, params, line_rate_bps, base_rtt_ns, threads, limit_ns } = start else {
        let _ = channel.send(&Message::Error { message: "expected a start".into() });
        return Err(format!("expected a start, got {start:?}"));
    };
    let mut line = vec!["--bind".to_string(), format!("{local_ip}:0"), "--threads".into(), threads.to_string()];
    line.extend(["--line-rate".into(), format!("{line_rate_bps}bps"), "--base-rtt".into(), format!("{base_rtt_ns}ns")]);
    line.extend(["--duration".into(), format!("{limit_ns}ns")]);
    line.extend(busy_poll.into_iter().flat_map(|d| ["--busy-poll".to_string(), d.to_string()]));
    if let Some(name) = algorithm {
        line.extend(["--algorithm".into(), name]);
        line.extend(params.into_iter().flat_map(|p| ["--param".to_string(), p]));
    }
    let receiver = match Receiver::from_line(&line) {
        Ok(r) => r,
        Err(failure) => {
            let message = failure.message();
            let _ = channel.send(&Message::Error { message: message.clone() });
            return Err(message);
        }
    };
    let port = receiver.local_addr().map_err(|e| e.message())?.port();
    channel.send(&Message::Ready { port }).map_err(|e| e.to_string())?;
    let wait = Duration::from_nanos(limit_ns) + GRACE;
    channel.stream_mut().set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
    let stop = AtomicBool::new(false);
    let (ran, next) = std::thread::scope(|scope| {
        let running = scope.spawn(|| receiver.run(&|| stop.load(Ordering::Relaxed) || interrupted()));
        let next = channel.receive();
        stop.store(true, Ordering::Relaxed);
        (running.join(), next)
    });
    let (stats, _) = ran.map_err(|_| "the receiver panicked".to_string())?.map_err(|e| e.message())?;
    match next {
        Ok(Message::Stop) => {
            channel.send(&Message::Stats { stats: stats.clone() }).map_err(|e| e.to_string())?;
            let flows = stats["flows"].as_u64().unwrap_or(0);
            Ok(format!("received {} bytes in {flows} flow{}", stats["bytes"], if flows == 1 { "" } else { "s" }))
        }
        Ok(other) => Err(format!("expected a stop, got {other:?}")),
        Err(e) => Err(format!("while receiving: {e}")),
    }
}
