//! `sluice udp send` and `sluice udp recv`: the UDP datapath between two hosts (or two network
//! namespaces), with any algorithm of the library the datapath can run. The sender writes `fct.csv` in
//! the columns the simulator writes, so runs of both compare side by side.

use std::fs;
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use sluice_cc::contract::{self, Capabilities};
use sluice_cc::registry::{lookup, Factory};
use sluice_core::units::{parse_duration, parse_rate, parse_size};
use sluice_core::{Time, PS_PER_S};
use sluice_plane::{PlaneConfig, PlaneCounters};
use sluice_results::csv::{write_fct_csv, write_throughput_csv, write_trace_csv};
use sluice_results::{ideal_fct, FlowRecord};
use sluice_scenario::Resolved;
use sluice_udp::config::{ETHERNET_BYTES, IP_UDP_BYTES};
use sluice_udp::io::Socket;
use sluice_udp::{Endpoint, FlowResult, TokenCounters, TransportConfig, TransportCounters};

use crate::closed_loop_summary::closed_loop_summary;
use crate::udp_loops::SenderLoops;
use crate::udp_plan::{all_at_once, read_flow_list, Planned};
use crate::udp_threads::{
    number_peers, peak_resident_bytes, run_receivers, run_senders, sender_sockets, shard, SendSetup, StreamedTrace,
    ThreadOutcome, INTERRUPTED, MAX_THREADS,
};

use crate::console::{note, out, Failure};

/// The two ends of the UDP datapath.
#[derive(clap::Subcommand)]
pub enum UdpCommand {
    /// Receive flows and acknowledge them, until SIGINT or SIGTERM (or --duration).
    Recv(Box<RecvArgs>),
    /// Send flows to a receiver, each run by an algorithm of the library.
    Send(Box<SendArgs>),
}

/// Options of `sluice udp recv`.
#[derive(clap::Args)]
pub struct RecvArgs {
    /// Address and port to receive on.
    #[arg(long, default_value = "0.0.0.0:5300")]
    bind: String,
    /// Stop after this long (e.g. 30s).
    #[arg(long)]
    duration: Option<String>,
    /// At most one CNP per flow per this interval, for algorithms that use CNPs (default 50us, DCQCN).
    #[arg(long, default_value = "50us")]
    cnp_interval: String,
    /// Run this receiver-driven algorithm's receiver side (its tokens) for the flows that ask for it;
    /// senders of `ndp`, `homa`, `expresspass`, `ep_aeolus`, `tocc` and `tocc_nounsched` need it.
    #[arg(long)]
    algorithm: Option<String>,
    /// Parameter `KEY=VALUE` of --algorithm (as in a scenario's [cc.params]); give the senders' values.
    #[arg(long = "param", value_name = "KEY=VALUE", requires = "algorithm")]
    params: Vec<String>,
    /// The receiving host's line rate: its token pacer's rate and what receiver controllers are told.
    #[arg(long, default_value = "10Gbps")]
    line_rate: String,
    /// Base RTT receiver controllers are told.
    #[arg(long, default_value = "20us")]
    base_rtt: String,
    /// Write the receiver's counters as JSON here on exit.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Read arrivals one datagram per message, without UDP GRO (to measure what it brings).
    #[arg(long)]
    no_offloads: bool,
    /// Trace the receiver controllers of these receiver-driven flows (ids, comma-separated) into the
    /// file given by --trace, in the simulator's trace.csv format.
    #[arg(long, value_delimiter = ',', value_name = "IDS", requires = "trace")]
    trace_flows: Vec<u32>,
    /// Spacing of trace rows (as the simulator's `output.trace_interval`).
    #[arg(long, default_value = "1us")]
    trace_interval: String,
    /// Where --trace-flows writes its rows on exit.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Receiver threads, each with its own socket on the --bind address (SO_REUSEPORT): the kernel
    /// keeps each sender socket's flows on one of them.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Keep polling the socket this long after the last datagram before sleeping on it (e.g. 200us), as
    /// Linux's busy_poll: senders on the same machine then spend nothing waking this receiver, and each
    /// receiver thread keeps its core busy while traffic lasts.
    #[arg(long, default_value = "0us")]
    busy_poll: String,
}

/// Options of `sluice udp send`.
#[derive(clap::Args)]
pub struct SendArgs {
    /// The receiver's address and port.
    #[arg(long, required_unless_present = "flow_list", conflicts_with = "flow_list")]
    to: Option<String>,
    /// Flows to send from a CSV list instead (receivers, sizes, start and stop times; see the docs).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["flows", "size"])]
    flow_list: Option<PathBuf>,
    /// Local address and port.
    #[arg(long, default_value = "0.0.0.0:0")]
    bind: String,
    /// The algorithm of every flow (`sluice list` shows them and which datapaths run them).
    #[arg(long, default_value = "dctcp")]
    algorithm: String,
    /// Algorithm parameter `KEY=VALUE` (numbers, booleans or strings, as in a scenario's [cc.params]).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// CC plane setting `KEY=VALUE`, as in a scenario's [plane]: `mode=offload` runs the algorithms
    /// behind the modelled channel (`latency`, `batch_bytes`, `batch_deadline`, `service_time`,
    /// `ring_capacity`, ...).
    #[arg(long = "plane", value_name = "KEY=VALUE")]
    plane: Vec<String>,
    /// Flows to send at once.
    #[arg(long, default_value_t = 1)]
    flows: u32,
    /// Bytes per flow (e.g. 1MB); without it, flows are streams that run for --duration.
    #[arg(long)]
    size: Option<String>,
    /// How long streams run (default 5s); with --size, the limit on the whole run (default 60s).
    #[arg(long)]
    duration: Option<String>,
    /// The sending host's line rate: the pacer's ceiling and what algorithms are told.
    #[arg(long, default_value = "10Gbps")]
    line_rate: String,
    /// Base RTT algorithms assume before their first sample.
    #[arg(long, default_value = "20us")]
    base_rtt: String,
    /// IP MTU of the path.
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Send one ACK per this many data packets.
    #[arg(long, default_value_t = 1)]
    ack_every: u32,
    /// Packets a flow sends in a row when its turn comes (window and pacing allowing), as Linux fq's
    /// quantum; 1 is strict packet-by-packet round robin.
    #[arg(long, default_value_t = TransportConfig::default().quantum)]
    quantum: u32,
    /// A flow with no acknowledgment for this long, from a peer silent for as long, ends with an error.
    #[arg(long, default_value = "1s")]
    peer_timeout: String,
    /// Minimum retransmission timeout.
    #[arg(long, default_value = "1ms")]
    rto_min: String,
    /// Double the retransmission timeout at each expiry without progress, up to 60 s (RFC 6298; the
    /// scenario's `host.rto_backoff`).
    #[arg(long)]
    rto_backoff: bool,
    /// Trace the algorithm's variables of these flows (ids, comma-separated) into trace.csv.
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    trace_flows: Vec<u32>,
    /// Trace every flow (as --trace-flows with every id; each traced flow's ring takes --trace-ring
    /// records of 32 bytes).
    #[arg(long, conflicts_with = "trace_flows")]
    trace_all: bool,
    /// Spacing of trace rows (as the simulator's `output.trace_interval`); with --out, a variable's row is
    /// written when its value changes, and `0ns` writes every change.
    #[arg(long, default_value = "1us")]
    trace_interval: String,
    /// Records each traced flow's ring holds until the trace writer drains it; records that find it
    /// full are dropped and counted (`trace.dropped` in summary.json).
    #[arg(long, default_value_t = sluice_udp::trace_ring::DEFAULT_RING_RECORDS)]
    trace_ring: usize,
    /// Count these flows' acknowledged payload bytes per --sample-interval into throughput.csv (ids,
    /// comma-separated; as the simulator's `output.throughput_flows`).
    #[arg(long, value_delimiter = ',', value_name = "IDS", requires = "out")]
    throughput_flows: Vec<u32>,
    /// Sampling interval of --throughput-flows (as the simulator's `output.sample_interval`).
    #[arg(long, default_value = "10us")]
    sample_interval: String,
    /// Directory for fct.csv and summary.json (and trace.csv with --trace-flows, throughput.csv with
    /// --throughput-flows).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Send one datagram per message, without UDP GSO (to measure what it brings).
    #[arg(long)]
    no_offloads: bool,
    /// Run the closed-loop slots of host --host of this resolved scenario (every host's slots without
    /// --host, as a two-machine test sends every flow from one host): each starts its next flow when
    /// its flow in the flow list (or a later one) completes.
    #[arg(long, value_name = "SCENARIO", requires = "flow_list")]
    closed_loops: Option<PathBuf>,
    /// The scenario's index of the host this sender runs on (with --closed-loops).
    #[arg(long, requires = "closed_loops")]
    host: Option<u32>,
    /// Sender threads: the flows are dealt to them in turns by start time; each has its own socket
    /// (--bind's port + its number, when the port is not 0) and paces its flows to line rate / N.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Keep polling the socket this long after the last datagram in or out before sleeping on it (e.g.
    /// 200us), as Linux's busy_poll; each sender thread keeps its core busy while it polls.
    #[arg(long, default_value = "0us")]
    busy_poll: String,
}

/// Runs `sluice udp ...`.
pub fn run(command: UdpCommand) -> Result<(), Failure> {
    match command {
        UdpCommand::Recv(args) => recv(*args),
        UdpCommand::Send(args) => send(*args),
    }
}

/// The value of `--FLAG` parsed by `parse`, or an error naming the flag and the value.
pub(crate) fn option<T, E: std::fmt::Display>(
    flag: &str,
    value: &str,
    parse: fn(&str) -> Result<T, E>,
) -> Result<T, Failure> {
    parse(value).map_err(|e| Failure::Error(format!("--{flag} {value:?}: {e}")))
}

fn address(flag: &str, value: &str) -> Result<SocketAddrV4, Failure> {
    value.parse().map_err(|_| {
        Failure::Error(format!("--{flag} {value:?}: expected an IPv4 address and port, like 10.0.0.2:5300"))
    })
}

fn bind(flag: &str, value: &str, offloads: bool) -> Result<Socket, Failure> {
    let addr = address(flag, value)?;
    Socket::bind_with(addr, offloads).map_err(|e| Failure::Error(format!("--{flag} {addr}: {e}")))
}

fn recv(args: RecvArgs) -> Result<(), Failure> {
    let receiver = Receiver::bind(&args)?;
    let threads = receiver.sockets.len();
    let local = receiver.local_addr()?;
    crate::console::catch_interrupts()?;
    note(&format!("receiving on {local}{}", if threads > 1 { format!(" ({threads} threads)") } else { String::new() }));
    let (stats, total) = receiver.run(&crate::console::interrupted)?;
    if let Some(path) = &args.stats {
        write_new(path, &format!("{stats:#}\n"))?;
    }
    if let Some(path) = &args.trace {
        let mut text = Vec::new();
        write_trace_csv(&mut text, &total.traces).map_err(|e| Failure::Error(e.to_string()))?;
        write_new(path, std::str::from_utf8(&text).expect("CSV is UTF-8"))?;
    }
    let c = total.counters;
    out(&format!(
        "received {} bytes in {} flows; {} ACKs, {} CNPs, {} CE marks, {} tokens, {} NACKs\n",
        total.received.0,
        total.received.1,
        c.acks_sent,
        c.cnps_sent,
        c.ce_received,
        total.tokens.tokens_issued,
        total.tokens.nacks
    ))
}

/// `sluice udp recv`'s options as a command line gives them (for callers that build one).
#[derive(clap::Parser)]
struct RecvLine {
    #[command(flatten)]
    args: RecvArgs,
}

/// A receiver with its sockets bound, ready to run: what `sluice udp recv` runs, and what a `sluice test
/// serve` host runs for each test.
pub struct Receiver {
    sockets: Vec<Socket>,
    config: TransportConfig,
    cnp: Time,
    trace: (Vec<u32>, Time),
    tokens: Option<Arc<dyn Factory>>,
    limit: Option<Time>,
}

impl Receiver {
    /// A receiver from `sluice udp recv`'s options given as a command line (without the program name).
    pub fn from_line(line: &[String]) -> Result<Receiver, Failure> {
        let parsed =
            <RecvLine as clap::Parser>::try_parse_from(std::iter::once("recv").chain(line.iter().map(String::as_str)))
                .map_err(|e| Failure::Error(e.to_string().lines().next().unwrap_or("bad options").to_string()))?;
        Receiver::bind(&parsed.args)
    }

    /// Checks `args` and binds the sockets.
    fn bind(args: &RecvArgs) -> Result<Receiver, Failure> {
        let threads = thread_count(args.threads)?;
        if threads > 1 && args.algorithm.is_some() {
            return Err(Failure::Error(
                "--threads with --algorithm: a receiver-driven algorithm paces the host's tokens on one link, \
                 so its receiver runs on one thread"
                    .into(),
            ));
        }
        let limit = args.duration.as_deref().map(|d| option("duration", d, parse_duration)).transpose()?;
        let cnp = option("cnp-interval", &args.cnp_interval, parse_duration)?;
        let config = TransportConfig {
            line_rate: option("line-rate", &args.line_rate, parse_rate)?,
            base_rtt: option("base-rtt", &args.base_rtt, parse_duration)?,
            busy_poll: option("busy-poll", &args.busy_poll, parse_duration)?,
            ..TransportConfig::default()
        };
        config.validate().map_err(Failure::Error)?;
        let trace = (args.trace_flows.clone(), option("trace-interval", &args.trace_interval, parse_duration)?);
        let tokens = match &args.algorithm {
            Some(name) => {
                let algorithm = checked_algorithm(name)?;
                let params = parse_params(&args.params)?;
                let factory = (algorithm.build)(&params, config.line_rate)
                    .map_err(|e| Failure::Error(format!("--param: {e}")))?;
                // Checked here, where an error can still be told; each thread repeats it on its endpoint.
                Endpoint::new(config, PlaneConfig::default(), 0).receive_tokens(factory.clone()).map_err(|why| {
                    Failure::Error(format!("--algorithm {name:?}: {why}; its receivers need no --algorithm"))
                })?;
                Some(factory)
            }
            None => None,
        };
        let sockets = shared_sockets(&args.bind, threads, !args.no_offloads)?;
        Ok(Receiver { sockets, config, cnp, trace, tokens, limit })
    }

    /// The address the receiver's sockets share.
    pub fn local_addr(&self) -> Result<SocketAddrV4, Failure> {
        self.sockets[0].local_addr().map_err(|e| Failure::Error(e.to_string()))
    }

    /// Receives until `stop` says so or the time limit; returns the `--stats` JSON and the threads'
    /// outcomes added up.
    pub fn run(self, stop: &(dyn Fn() -> bool + Sync)) -> Result<(serde_json::Value, ThreadOutcome), Failure> {
        let Receiver { sockets, config, cnp, trace, tokens, limit } = self;
        let make = || {
            let mut endpoint = Endpoint::new(config, PlaneConfig::default(), 0);
            endpoint.set_cnp_interval(cnp);
            endpoint.trace(&trace.0, trace.1);
            if let Some(factory) = &tokens {
                endpoint.receive_tokens(factory.clone()).expect("checked before the threads started");
            }
            endpoint
        };
        let outcomes = run_receivers(sockets, &make, limit, stop);
        let per_thread: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|o| json!({ "flows": o.received.1, "bytes": o.received.0, "cpu_s": o.cpu.as_secs_f64() }))
            .collect();
        let total = merged(outcomes)?;
        let c = total.counters;
        let stats = json!({
            "flows": total.received.1,
            "bytes": total.received.0,
            "acks_sent": c.acks_sent,
            "cnps_sent": c.cnps_sent,
            "ce_received": c.ce_received,
            "tokens": token_stats(&total.tokens),
            "refused": refused(&c),
            "threads": per_thread,
            "cpu_s": total.cpu.as_secs_f64(),
        });
        Ok((stats, total))
    }
}

/// `--threads N`, checked.
fn thread_count(threads: usize) -> Result<usize, Failure> {
    if threads == 0 || threads > MAX_THREADS {
        return Err(Failure::Error(format!("--threads {threads}: expected 1 to {MAX_THREADS}")));
    }
    Ok(threads)
}

/// `threads` sockets on the address `value` (one plain socket for one thread); the later ones take the
/// port the first was given when `value`'s port is 0.
fn shared_sockets(value: &str, threads: usize, offloads: bool) -> Result<Vec<Socket>, Failure> {
    if threads == 1 {
        return Ok(vec![bind("bind", value, offloads)?]);
    }
    let mut addr = address("bind", value)?;
    let mut sockets = Vec::with_capacity(threads);
    for _ in 0..threads {
        let socket = Socket::bind_shared(addr, offloads).map_err(|e| Failure::Error(format!("--bind {addr}: {e}")))?;
        addr = socket.local_addr().map_err(|e| Failure::Error(e.to_string()))?;
        sockets.push(socket);
    }
    // The kernel's hash stays in charge where the program cannot be attached: it still keeps each sender
    // socket on one receiver thread, only less evenly.
    if let Err(e) = sockets[0].steer_by_source_port(threads as u32) {
        note(&format!("receiver threads are chosen by the kernel's hash (steering by source port: {e})"));
    }
    Ok(sockets)
}

/// The threads' outcomes added up; the first thread error fails the command.
fn merged(outcomes: Vec<ThreadOutcome>) -> Result<ThreadOutcome, Failure> {
    let mut total = ThreadOutcome::default();
    for o in outcomes {
        total.merge(o);
    }
    match total.error.take() {
        Some(e) => Err(Failure::Error(e)),
        None => Ok(total),
    }
}

/// The algorithm named `name`, if the UDP datapath runs it.
fn checked_algorithm(name: &str) -> Result<&'static sluice_cc::registry::Algorithm, Failure> {
    let algorithm =
        lookup(name).ok_or_else(|| Failure::Error(format!("--algorithm {name:?}: unknown (see `sluice list`)")))?;
    contract::check(algorithm, &Capabilities::UDP).map_err(|m| Failure::Error(m.to_string()))?;
    Ok(algorithm)
}

/// `sluice udp send`'s options as a command line gives them (for callers that build one).
#[derive(clap::Parser)]
struct SendLine {
    #[command(flatten)]
    args: SendArgs,
}

/// Runs `sluice udp send` with its options given as a command line (without the program name): what a
/// two-machine `sluice test` runs on the sending host.
pub fn send_line(line: &[String]) -> Result<(), Failure> {
    let parsed =
        <SendLine as clap::Parser>::try_parse_from(std::iter::once("send").chain(line.iter().map(String::as_str)))
            .map_err(|e| Failure::Error(e.to_string().lines().next().unwrap_or("bad options").to_string()))?;
    send(parsed.args)
}

fn send(args: SendArgs) -> Result<(), Failure> {
    let threads = thread_count(args.threads)?;
    let algorithm = checked_algorithm(&args.algorithm)?;
    let config = TransportConfig {
        mtu: args.mtu,
        line_rate: option("line-rate", &args.line_rate, parse_rate)?,
        base_rtt: option("base-rtt", &args.base_rtt, parse_duration)?,
        ack_every_packets: args.ack_every,
        quantum: args.quantum,
        peer_timeout: option("peer-timeout", &args.peer_timeout, parse_duration)?,
        rto_min: option("rto-min", &args.rto_min, parse_duration)?,
        rto_backoff: args.rto_backoff,
        busy_poll: option("busy-poll", &args.busy_poll, parse_duration)?,
        ..TransportConfig::default()
    };
    config.validate().map_err(Failure::Error)?;
    let params = parse_params(&args.params)?;
    let factory = (algorithm.build)(&params, config.line_rate).map_err(|e| Failure::Error(format!("--param: {e}")))?;
    let plane = plane_config(&args.plane)?;
    let size = args.size.as_deref().map(|s| option("size", s, parse_size)).transpose()?;
    if size == Some(0) || args.flows == 0 {
        return Err(Failure::Error("--size and --flows must be positive".into()));
    }
    let plan = match (&args.flow_list, &args.to) {
        (Some(path), _) => read_flow_list(path).map_err(Failure::Error)?,
        (None, Some(to)) => all_at_once(args.flows, address("to", to)?, size),
        (None, None) => return Err(Failure::Error("give --to or --flow-list".into())),
    };
    let sized = plan.iter().all(|f| f.size.is_some());
    let default_limit = if sized { 60 * PS_PER_S } else { 5 * PS_PER_S };
    let limit =
        args.duration.as_deref().map(|d| option("duration", d, parse_duration)).transpose()?.unwrap_or(default_limit);
    let (receivers, peers) = number_peers(&plan);
    let loops = match &args.closed_loops {
        Some(path) => {
            let framing = (config.payload_bytes(0) as u64, per_packet_bytes());
            let loaded = SenderLoops::load(path, args.host, &plan, &peers, framing);
            Some(loaded.map_err(|e| Failure::Error(format!("--closed-loops {}: {e}", path.display())))?)
        }
        None => None,
    };
    let trace_interval = option("trace-interval", &args.trace_interval, parse_duration)?;
    let sample_interval = option("sample-interval", &args.sample_interval, parse_duration)?;
    if sample_interval == 0 {
        return Err(Failure::Error("--sample-interval must be positive".into()));
    }
    if args.trace_ring == 0 {
        return Err(Failure::Error("--trace-ring 0: a ring holds at least one record".into()));
    }
    let loop_scenario = loops.as_ref().map(SenderLoops::scenario);
    let shards = shard(&plan, &peers, threads, loops);
    let sockets =
        sender_sockets(address("bind", &args.bind)?, shards.len(), !args.no_offloads).map_err(Failure::Error)?;
    let streamed = match &args.out {
        Some(dir) if args.trace_all || !args.trace_flows.is_empty() => {
            Some(StreamedTrace::start(dir, shards.len(), args.trace_ring, trace_interval).map_err(Failure::Error)?)
        }
        _ => None,
    };
    let setup = SendSetup {
        config,
        plane,
        factory,
        needs: algorithm.needs,
        limit,
        trace: (args.trace_flows.clone(), trace_interval),
        throughput: (args.throughput_flows.clone(), sample_interval),
        stream: streamed.as_ref().map(|t| (t.streams.clone(), args.trace_all)),
    };
    crate::console::catch_interrupts()?;
    let outcomes = run_senders(&setup, shards, sockets, &receivers);
    drop(setup);
    let per_thread: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| json!({ "flows": o.flows, "data_packets": o.counters.data_sent, "cpu_s": o.cpu.as_secs_f64() }))
        .collect();
    let total = merged(outcomes);
    let trace_rows = streamed.map(|t| t.finish(total.is_ok()).map_err(Failure::Error)).transpose()?;
    let mut total = total?;
    let mut plan = plan;
    plan.append(&mut total.later);
    total.traces.sort_by_key(sluice_results::FlowTrace::flow);
    report(&args, &total, &per_thread, config, &plan, trace_rows, loop_scenario.as_deref())
}

/// Wire bytes of a packet beyond its payload: the sluice header, UDP, IPv4 and Ethernet.
fn per_packet_bytes() -> u64 {
    (IP_UDP_BYTES + ETHERNET_BYTES) as u64 + sluice_wire::sluice::HEADER_LEN as u64
}

/// `KEY=VALUE` pairs as a [cc.params] table (values as `sluice_cc::registry::param_value` reads them).
fn parse_params(pairs: &[String]) -> Result<toml::Table, Failure> {
    let mut table = toml::Table::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Failure::Error(format!("--param {pair:?}: expected KEY=VALUE")));
        };
        table.insert(key.trim().to_string(), sluice_cc::registry::param_value(value));
    }
    Ok(table)
}

/// The plane settings `KEY=VALUE` pairs give (the rest at their defaults), checked.
fn plane_config(pairs: &[String]) -> Result<PlaneConfig, Failure> {
    let table = parse_params(pairs)?;
    let plane: PlaneConfig = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| Failure::Error(format!("--plane: {}", e.message().trim_end())))?;
    plane.validate().map_err(|(key, message)| Failure::Error(format!("--plane {key}: {message}")))?;
    Ok(plane)
}

/// The plane's counters, as JSON.
fn plane_stats(c: &PlaneCounters) -> serde_json::Value {
    json!({
        "signals": c.signals,
        "reordered": c.reordered,
        "reports": c.reports,
        "decisions": c.decisions,
        "batches": c.batches,
        "decision_messages": c.decision_messages,
        "core_busy_ns": c.busy_time as f64 / sluice_core::PS_PER_NS as f64,
        "overflows": c.overflows,
        "merges": c.merges,
        "evictions": c.evictions,
        "backpressure_events": c.backpressure_events,
    })
}

/// The token transport's counters, as JSON.
fn token_stats(t: &TokenCounters) -> serde_json::Value {
    json!({
        "requests": t.requests,
        "tokens_issued": t.tokens_issued,
        "tokens_used": t.tokens_used,
        "tokens_stale": t.tokens_stale,
        "tokens_wasted": t.tokens_wasted,
        "unscheduled_bytes": t.unscheduled_bytes,
        "scheduled_bytes": t.scheduled_bytes,
        "nacks": t.nacks,
        "rx_timeouts": t.rx_timeouts,
        "tx_timeouts": t.tx_timeouts,
        "early_stops": t.early_stops,
        "probes": t.probes,
    })
}

fn refused(c: &TransportCounters) -> serde_json::Value {
    json!({
        "malformed": c.malformed,
        "unknown_flow": c.unknown_flow,
        "wrong_peer": c.wrong_peer,
        "out_of_window": c.out_of_window,
        "unexpected_kind": c.unexpected_kind,
        "too_many_flows": c.too_many_flows,
    })
}

fn report(
    args: &SendArgs,
    total: &ThreadOutcome,
    per_thread: &[serde_json::Value],
    config: TransportConfig,
    plan: &[Planned],
    trace_rows: Option<u64>,
    loop_scenario: Option<&Resolved>,
) -> Result<(), Failure> {
    let results = &total.results;
    let partial = crate::console::interrupted();
    let failed: Vec<&FlowResult> =
        results.iter().filter(|r| r.error.as_deref().is_some_and(|e| e != INTERRUPTED)).collect();
    let delivered: u64 = results.iter().map(|r| r.size).sum();
    let first = results.iter().map(|r| r.start).min().unwrap_or(0);
    let last = results.iter().map(|r| r.finish).max().unwrap_or(0);
    let seconds = (last - first) as f64 / PS_PER_S as f64;
    let per_second = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    let goodput = per_second(delivered as f64 * 8.0);
    let c = total.counters;
    if let Some(dir) = &args.out {
        let by_id: std::collections::HashMap<u32, &Planned> = plan.iter().map(|f| (f.id, f)).collect();
        let mut records: Vec<FlowRecord> =
            results.iter().filter_map(|r| Some(record(r, config, by_id.get(&r.id)?))).collect();
        records.sort_by_key(|r| r.id);
        let mut fct = Vec::new();
        write_fct_csv(&mut fct, &records).map_err(|e| Failure::Error(e.to_string()))?;
        let mut summary = json!({
            "datapath": "udp",
            "algorithm": args.algorithm,
            "partial": partial,
            "flows": results.len(),
            "failed": failed.len(),
            "delivered_bytes": delivered,
            "goodput_bps": goodput,
            "data_packets": c.data_sent,
            "data_packets_per_s": per_second(c.data_sent as f64),
            "goodput_jain": goodput_jain(results),
            "retransmits": c.retransmits,
            "timeouts": c.timeouts,
            "signals_path": c.signals_path,
            "signals_switch": c.signals_switch,
            "tokens": token_stats(&total.tokens),
            "refused": refused(&c),
            "plane": plane_stats(&total.plane),
            "io": { "send_calls": total.io.send_calls, "send_dropped": total.io.send_dropped,
                    "recv_calls": total.io.recv_calls, "gso": total.offloads.0, "gro": total.offloads.1 },
            "threads": per_thread,
            "cpu_s": total.cpu.as_secs_f64(),
            "peak_rss_bytes": peak_resident_bytes(),
            "trace": trace_rows.map(|rows| json!({
                "rows": rows,
                "dropped": total.taps.dropped,
                "ring_records": args.trace_ring,
            })),
        });
        // Completion times next to the ideal under fair sharing, as the simulator reports them.
        if let Some(loops) = loop_scenario.and_then(|r| closed_loop_summary(r, &records)) {
            summary["closed_loops"] = loops;
        }
        fs::create_dir_all(dir).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
        write_new(&dir.join("fct.csv"), std::str::from_utf8(&fct).expect("CSV is UTF-8"))?;
        if !total.traces.is_empty() {
            let mut text = Vec::new();
            write_trace_csv(&mut text, &total.traces).map_err(|e| Failure::Error(e.to_string()))?;
            write_new(&dir.join("trace.csv"), std::str::from_utf8(&text).expect("CSV is UTF-8"))?;
        }
        if !total.series.is_empty() {
            let mut series = total.series.clone();
            series.sort_by_key(|s| s.label.trim_start_matches("flow ").parse::<u32>().unwrap_or(u32::MAX));
            let mut text = Vec::new();
            write_throughput_csv(&mut text, &series).map_err(|e| Failure::Error(e.to_string()))?;
            write_new(&dir.join("throughput.csv"), std::str::from_utf8(&text).expect("CSV is UTF-8"))?;
        }
        write_new(&dir.join("summary.json"), &format!("{summary:#}\n"))?;
    }
    out(&format!(
        "{} flow(s) of {}: {} bytes in {:.3} s, {:.2} Gbps goodput; {} data packets, {} resent, {} timeouts\n",
        results.len(),
        args.algorithm,
        delivered,
        seconds,
        goodput / 1e9,
        c.data_sent,
        c.retransmits,
        c.timeouts
    ))?;
    if partial {
        let stopped = results.iter().filter(|r| r.error.as_deref() == Some(INTERRUPTED)).count();
        let place = args.out.as_ref().map_or(String::new(), |d| format!(" in {} (marked partial)", d.display()));
        return Err(Failure::Interrupted(format!(
            "interrupted: traffic stopped; {} flows ended before, {stopped} stopped, their results{place}",
            results.len() - stopped
        )));
    }
    match failed.first() {
        Some(f) => Err(Failure::Error(format!(
            "{} of {} flows failed; flow {}: {}",
            failed.len(),
            results.len(),
            f.id,
            f.error.as_deref().unwrap_or("")
        ))),
        None => Ok(()),
    }
}

/// Jain's fairness index of the flows' goodputs (bytes over each flow's own lifetime); `null` without
/// a flow that lasted.
fn goodput_jain(results: &[FlowResult]) -> serde_json::Value {
    let rates: Vec<f64> =
        results.iter().filter(|r| r.finish > r.start).map(|r| r.size as f64 / (r.finish - r.start) as f64).collect();
    let sum: f64 = rates.iter().sum();
    let squares: f64 = rates.iter().map(|x| x * x).sum();
    if rates.is_empty() || squares == 0.0 {
        return serde_json::Value::Null;
    }
    json!(sum * sum / (rates.len() as f64 * squares))
}

fn record(r: &FlowResult, config: TransportConfig, f: &Planned) -> FlowRecord {
    let wire = r.size + r.size.div_ceil(config.payload_bytes(0) as u64) * per_packet_bytes();
    let estimate = ideal_fct(config.base_rtt, wire.max(1), config.line_rate);
    FlowRecord {
        id: r.id as u64,
        src: f.src,
        dst: f.dst,
        size: f.size.unwrap_or(r.size),
        delivered: r.size,
        start: r.start,
        finish: r.error.is_none().then_some(r.finish),
        ideal_fct: f.ideal_fct.unwrap_or(estimate).max(1),
        retransmitted_bytes: r.retransmitted,
        long_lived: f.size.is_none(),
        group: f.group,
        received: r.size,
        started: true,
    }
}

/// Writes `text` to `path` through a temporary file, so a failed write leaves nothing half written.
fn write_new(path: &std::path::Path, text: &str) -> Result<(), Failure> {
    let tmp = path.with_extension("partial");
    fs::write(&tmp, text)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(|e| Failure::Error(format!("{}: {e}", path.display())))
}
