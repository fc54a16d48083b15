//! The threads of one UDP host. `sluice udp send --threads N` shards its flows over N sender threads and
//! `sluice udp recv --threads N` its sockets over N receiver threads. Each thread owns a socket, an
//! endpoint (its flows' state, timing wheel and CC plane) and its flows' algorithms, so the per-packet
//! path takes no lock; the threads share only the clock's origin and the interrupt flag, and their
//! counters and results are added up when they end.
//!
//! A sender thread's socket has its own port (the threads' ports are consecutive), so the receiver's ACKs
//! come back to the thread that sent the data. Receiver threads share one address with `SO_REUSEPORT`,
//! and a classic BPF program hands each datagram to the socket numbered its source port modulo the
//! threads: a sender socket's flows always meet the same receiver state, and the threads of one sender
//! spread one per receiver thread (the kernel's own hash put three on one socket and none on three
//! others, with eight of each). Each sender
//! thread's NIC pacer holds its flows to its share of the host's line rate (line rate / N); algorithms
//! are still told the host's line rate.

use std::collections::HashMap;
use std::fs;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_cc::registry::Factory;
use sluice_cc::Needs;
use sluice_core::Time;
use sluice_plane::{PlaneConfig, PlaneCounters};
use sluice_results::{BytesKind, FlowTrace, ThroughputSeries};
use sluice_udp::io::Socket;
use sluice_udp::{
    Endpoint, FlowResult, FlowSpec, IoCounters, PeerId, TapCounters, TokenCounters, TraceStream, TraceWriter,
    TransportConfig, TransportCounters, UdpHost,
};

use crate::console::interrupted;
use crate::udp_loops::SenderLoops;
use crate::udp_plan::Planned;

/// Why a flow that SIGINT or SIGTERM stopped did not finish.
pub const INTERRUPTED: &str = "stopped by SIGINT or SIGTERM";

/// The most threads one host runs.
pub const MAX_THREADS: usize = 1024;

/// What every sender thread of a run shares.
pub struct SendSetup {
    /// Transport settings (each thread's NIC share is set from them).
    pub config: TransportConfig,
    /// CC plane settings.
    pub plane: PlaneConfig,
    /// The algorithm of every flow, and what it needs of the datapath.
    pub factory: Arc<dyn Factory>,
    /// The needs the algorithm declares.
    pub needs: Needs,
    /// No flow starts after this, and streams stop here.
    pub limit: Time,
    /// Flows to trace, and the spacing of their rows.
    pub trace: (Vec<u32>, Time),
    /// Flows whose acknowledged payload bytes are counted per interval (`throughput.csv`), and the
    /// interval.
    pub throughput: (Vec<u32>, Time),
    /// Where each sender thread's traced flows stream their records, and whether every flow is traced;
    /// `None`: traced flows keep their rows in memory.
    pub stream: Option<(Vec<TraceStream>, bool)>,
}

/// One sender thread's part of the run.
pub struct SendShard {
    /// Its flows, and their receivers as every thread numbers them.
    pub flows: Vec<(Planned, PeerId)>,
    /// The closed-loop slots whose flows it runs.
    pub loops: Option<SenderLoops>,
}

/// What one thread (sender or receiver) did.
#[derive(Default)]
pub struct ThreadOutcome {
    /// Flows that ended (completed, stopped or failed).
    pub results: Vec<FlowResult>,
    /// Flows started by closed-loop slots.
    pub later: Vec<Planned>,
    /// The transport's counters.
    pub counters: TransportCounters,
    /// The token transport's counters.
    pub tokens: TokenCounters,
    /// The CC plane's counters.
    pub plane: PlaneCounters,
    /// What streamed traces recorded and dropped.
    pub taps: TapCounters,
    /// The socket loop's counters.
    pub io: IoCounters,
    /// Whether its socket used UDP GSO and GRO.
    pub offloads: (bool, bool),
    /// Traced flows' rows.
    pub traces: Vec<FlowTrace>,
    /// Sampled flows' acknowledged bytes per interval.
    pub series: Vec<ThroughputSeries>,
    /// Flows it received: (bytes, flows).
    pub received: (u64, usize),
    /// The thread's CPU time.
    pub cpu: Duration,
    /// Flows it was given (senders).
    pub flows: usize,
    /// The error that stopped it.
    pub error: Option<String>,
}

impl ThreadOutcome {
    /// Adds another thread's counters, results and traces to these.
    pub fn merge(&mut self, o: ThreadOutcome) {
        self.results.extend(o.results);
        self.later.extend(o.later);
        self.counters.add(&o.counters);
        self.tokens.add(&o.tokens);
        self.plane.add(&o.plane);
        self.taps.add(&o.taps);
        self.io.add(&o.io);
        self.offloads = (self.offloads.0 || o.offloads.0, self.offloads.1 || o.offloads.1);
        self.traces.extend(o.traces);
        self.series.extend(o.series);
        self.received = (self.received.0 + o.received.0, self.received.1 + o.received.1);
        self.cpu += o.cpu;
        self.flows += o.flows;
        self.error = self.error.take().or(o.error);
    }

    fn from_host(host: &UdpHost, flows: usize) -> ThreadOutcome {
        let e = &host.endpoint;
        ThreadOutcome {
            counters: e.counters,
            tokens: e.token_counters(),
            plane: e.plane_counters().clone(),
            taps: e.tap_counters(),
            io: host.io,
            offloads: host.offloads(),
            traces: e.traces(),
            received: (e.received().map(|(_, b)| b).sum(), e.received().count()),
            cpu: thread_cpu_time(),
            flows,
            ..ThreadOutcome::default()
        }
    }
}

/// Splits `plan` (with each flow's peer) over at most `threads` shards, in turns by start time, so that
/// each shard gets an even part of every period of the run; closed-loop slots go with their first
/// flows.
pub fn shard(plan: &[Planned], peers: &[PeerId], threads: usize, loops: Option<SenderLoops>) -> Vec<SendShard> {
    let n = threads.clamp(1, plan.len().max(1));
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&k| (plan[k].start, plan[k].id));
    let mut shards: Vec<SendShard> = (0..n).map(|_| SendShard { flows: Vec::new(), loops: None }).collect();
    let mut shard_of = HashMap::with_capacity(plan.len());
    for (turn, k) in order.into_iter().enumerate() {
        shards[turn % n].flows.push((plan[k], peers[k]));
        shard_of.insert(plan[k].id, turn % n);
    }
    if let Some(loops) = loops {
        for (s, part) in shards.iter_mut().zip(loops.split(n, |id| shard_of.get(&id).copied().unwrap_or(0))) {
            s.loops = Some(part);
        }
    }
    shards
}

/// The receivers of `plan` in order of first appearance: every thread numbers them alike
/// (`PeerId` = index), so a shard's peers mean the same in every thread.
pub fn number_peers(plan: &[Planned]) -> (Vec<SocketAddrV4>, Vec<PeerId>) {
    let mut addrs = Vec::new();
    let mut ids: HashMap<SocketAddrV4, PeerId> = HashMap::new();
    let peers = plan
        .iter()
        .map(|f| {
            *ids.entry(f.to).or_insert_with(|| {
                addrs.push(f.to);
                (addrs.len() - 1) as PeerId
            })
        })
        .collect();
    (addrs, peers)
}

/// Binds one socket per sender thread on consecutive ports: from `bind`'s port when it is not 0, else
/// from a port the kernel picks, so that receivers steering by source port
/// ([`Socket::steer_by_source_port`]) give each thread its own receiving socket.
pub fn sender_sockets(bind: SocketAddrV4, threads: usize, offloads: bool) -> Result<Vec<Socket>, String> {
    let fixed = bind.port() != 0;
    let tries = if fixed { 1 } else { 16 };
    let mut last = String::new();
    for _ in 0..tries {
        let first = Socket::bind_with(bind, offloads).map_err(|e| format!("--bind {bind}: {e}"))?;
        let base = first.local_addr().map_err(|e| e.to_string())?;
        let mut sockets = vec![first];
        for k in 1..threads {
            let Some(port) = base.port().checked_add(k as u16).filter(|_| k < usize::from(u16::MAX)) else {
                last = format!("--bind {bind}: no {threads} consecutive ports from {}", base.port());
                break;
            };
            let addr = SocketAddrV4::new(*base.ip(), port);
            match Socket::bind_with(addr, offloads) {
                Ok(s) => sockets.push(s),
                Err(e) => {
                    last = format!("--bind {addr} (thread {k}): {e}");
                    break;
                }
            }
        }
        if sockets.len() == threads {
            return Ok(sockets);
        }
    }
    Err(last)
}

/// Runs the shards, one thread each on its socket, on one clock; returns each thread's outcome in shard
/// order.
pub fn run_senders(
    setup: &SendSetup,
    shards: Vec<SendShard>,
    sockets: Vec<Socket>,
    receivers: &[SocketAddrV4],
) -> Vec<ThreadOutcome> {
    let epoch = Instant::now();
    let n = shards.len() as u64;
    let config = TransportConfig { nic_rate: (n > 1).then(|| (setup.config.nic_rate() / n).max(1)), ..setup.config };
    let jobs: Vec<(usize, (SendShard, Socket))> = shards.into_iter().zip(sockets).enumerate().collect();
    on_threads(jobs, "sender", |(k, (shard, socket))| run_sender(setup, config, (k, socket), epoch, shard, receivers))
}

fn run_sender(
    setup: &SendSetup,
    config: TransportConfig,
    (thread, socket): (usize, Socket),
    epoch: Instant,
    shard: SendShard,
    receivers: &[SocketAddrV4],
) -> ThreadOutcome {
    let mut host = UdpHost::with_epoch(socket, Endpoint::new(config, setup.plane.clone(), 0), epoch);
    for &addr in receivers {
        host.peer(addr);
    }
    match &setup.stream {
        Some((streams, all)) => host.endpoint.stream_traces(&setup.trace.0, *all, streams[thread].clone()),
        None => host.endpoint.trace(&setup.trace.0, setup.trace.1),
    }
    let flows = shard.flows.len();
    let sampled = (setup.throughput.0.iter().copied()).filter(|id| shard.flows.iter().any(|(f, _)| f.id == *id));
    let mut sampler = FlowSampler::new(sampled.collect(), setup.throughput.1);
    let mut loops = shard.loops;
    let mut schedule = Schedule::new(shard.flows);
    let mut results = Vec::new();
    let mut failure = None;
    let (limit, factory, needs) = (setup.limit, &setup.factory, setup.needs);
    let ran = host.run(|e, now| {
        sampler.sample(e, now);
        if let Err(err) = schedule.due(e, now, factory, needs) {
            failure = Some(err);
            return true;
        }
        let finished = e.take_finished();
        // Past the time limit no slot starts another flow.
        let refilling = loops.as_mut().filter(|_| now < limit);
        if let Some(Err(err)) = refilling.map(|l| l.refill(&finished, e, now, factory, needs)) {
            failure = Some(err);
            return true;
        }
        results.extend(finished);
        if interrupted() {
            // SIGINT or SIGTERM: the traffic stops at once, and what was measured so far is reported.
            e.abandon(now, INTERRUPTED);
            results.extend(e.take_finished());
            return true;
        }
        if now >= limit {
            schedule.stop_all(e);
        }
        (schedule.all_started() && e.active() == 0) || now >= limit + 2 * config.peer_timeout
    });
    let now = host.now();
    host.endpoint.abandon(now, "data still unacknowledged when the run ended");
    results.extend(host.endpoint.take_finished());
    ThreadOutcome {
        series: sampler.finish(&host.endpoint, now),
        results,
        later: loops.map_or_else(Vec::new, |l| l.later),
        error: failure.or(ran.err().map(|e| e.to_string())),
        ..ThreadOutcome::from_host(&host, flows)
    }
}

/// Counts the payload bytes some flows have had acknowledged in each interval of the run (a
/// receiver-driven flow's: sent, [`Endpoint::acknowledged`]), as the simulator's
/// `output.throughput_flows` does: one series per flow, a sample at each multiple of the
/// interval (taken at the first loop round at or after it), and a last, shorter one when the run ends.
/// The samples wait for the loop's rounds; a loop that sleeps has nothing arriving to count.
struct FlowSampler {
    interval: Time,
    next: Time,
    /// Flow ids, the bytes acknowledged at the last sample, and the series.
    flows: Vec<(u32, u64, ThroughputSeries)>,
}

impl FlowSampler {
    fn new(ids: Vec<u32>, interval: Time) -> FlowSampler {
        let series = |id: u32| ThroughputSeries {
            label: format!("flow {id}"),
            kind: BytesKind::Payload,
            interval,
            samples: Vec::new(),
            queue_bytes: Vec::new(),
        };
        FlowSampler { interval, next: interval, flows: ids.into_iter().map(|id| (id, 0, series(id))).collect() }
    }

    fn sample(&mut self, e: &Endpoint, now: Time) {
        if self.flows.is_empty() || now < self.next || self.interval == 0 {
            return;
        }
        // A round later than one interval (the loop slept: nothing arrived) samples each boundary it
        // missed, the later ones empty.
        while now >= self.next {
            self.take(e, self.next);
            self.next += self.interval;
        }
    }

    fn take(&mut self, e: &Endpoint, at: Time) {
        for (id, last, series) in &mut self.flows {
            let acked = e.acknowledged(*id).unwrap_or(*last);
            series.samples.push((at, acked - *last));
            *last = acked;
        }
    }

    /// The series, with a last sample at `now` if the run ended after the last one.
    fn finish(mut self, e: &Endpoint, now: Time) -> Vec<ThroughputSeries> {
        let last = self.next - self.interval;
        if now > last && !self.flows.is_empty() {
            self.take(e, now);
        }
        self.flows.into_iter().map(|(_, _, series)| series).collect()
    }
}

/// Opens a thread's planned flows when their start comes and stops streams when their stop comes.
struct Schedule {
    /// Flows by start time, with their peers; `next` is the first not yet opened.
    flows: Vec<(Planned, PeerId)>,
    next: usize,
    /// Streams with stop times, by stop time; `next_stop` is the first not yet stopped.
    stops: Vec<(Time, u32)>,
    next_stop: usize,
    /// Every stream has been stopped.
    stopped: bool,
}

impl Schedule {
    fn new(mut flows: Vec<(Planned, PeerId)>) -> Schedule {
        flows.sort_by_key(|(f, _)| (f.start, f.id));
        let mut stops: Vec<(Time, u32)> = flows.iter().filter_map(|(f, _)| f.stop.map(|t| (t, f.id))).collect();
        stops.sort_unstable();
        Schedule { flows, next: 0, stops, next_stop: 0, stopped: false }
    }

    fn due(&mut self, e: &mut Endpoint, now: Time, factory: &Arc<dyn Factory>, needs: Needs) -> Result<(), String> {
        while let Some((f, peer)) = self.flows.get(self.next).filter(|(f, _)| f.start <= now) {
            let spec = FlowSpec { id: f.id, peer: *peer, size: f.size, factory: factory.clone(), needs };
            e.open(spec, now)?;
            self.next += 1;
        }
        while let Some(&(_, id)) = self.stops.get(self.next_stop).filter(|(at, _)| *at <= now) {
            e.stop_stream(id);
            self.next_stop += 1;
        }
        Ok(())
    }

    fn all_started(&self) -> bool {
        self.next == self.flows.len()
    }

    /// The run is over: flows not yet started never will, and every stream stops. Once: the loop asks
    /// at every round of the drain that follows, and stopping walks every flow.
    fn stop_all(&mut self, e: &mut Endpoint) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.flows.truncate(self.next);
        e.stop_streams();
    }
}

/// `trace.csv` written as the run goes: one writer thread per sender thread drains that thread's traced
/// flows' rings into a part file in the output folder; when the run succeeds the parts are joined, in
/// thread order, into `trace.csv`.
pub struct StreamedTrace {
    writers: Vec<(TraceWriter, PathBuf)>,
    /// The handle each sender thread takes taps from.
    pub streams: Vec<TraceStream>,
    done: PathBuf,
    /// The output folder, if this run made it (removed again, if empty, when the run fails).
    made: Option<PathBuf>,
}

impl StreamedTrace {
    /// Starts the `threads` writers of `dir/trace.csv` for rings of `ring` records and rows at most every
    /// `interval`.
    pub fn start(dir: &Path, threads: usize, ring: usize, interval: Time) -> Result<StreamedTrace, String> {
        let made = (!dir.exists()).then(|| dir.to_path_buf());
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut writers = Vec::with_capacity(threads);
        let mut streams = Vec::with_capacity(threads);
        for k in 0..threads {
            let part = dir.join(format!("trace.csv.partial.{k}"));
            let file = fs::File::create(&part).map_err(|e| format!("{}: {e}", part.display()))?;
            let (writer, stream) = TraceWriter::start(file, ring, interval);
            writers.push((writer, part));
            streams.push(stream);
        }
        Ok(StreamedTrace { writers, streams, done: dir.join("trace.csv"), made })
    }

    /// Ends the writers once the senders are done; joins the parts into `trace.csv` if `keep`, else
    /// removes them (and the output folder, if this run made it and it is empty). Returns the rows
    /// written.
    pub fn finish(self, keep: bool) -> Result<u64, String> {
        let StreamedTrace { writers, streams, done, made } = self;
        drop(streams);
        let mut rows = Ok(0);
        let mut parts = Vec::with_capacity(writers.len());
        for (writer, part) in writers {
            let written = writer.finish().map_err(|e| format!("{}: {e}", part.display()));
            rows = rows.and_then(|n| Ok(n + written?));
            parts.push(part);
        }
        let joined = match (keep, &rows) {
            (true, Ok(_)) => join_parts(&parts, &done),
            _ => Ok(()),
        };
        for part in &parts {
            let _ = fs::remove_file(part);
        }
        if !keep || rows.is_err() || joined.is_err() {
            if let Some(dir) = made {
                let _ = fs::remove_dir(dir);
            }
        }
        joined?;
        rows
    }
}

/// Writes `parts` (each a header and rows) into `done` as one file with one header, through a temporary
/// file.
fn join_parts(parts: &[PathBuf], done: &Path) -> Result<(), String> {
    use std::io::{BufRead, BufReader, Write};
    let tmp = done.with_extension("csv.partial");
    let fail = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    let mut out = std::io::BufWriter::new(fs::File::create(&tmp).map_err(|e| fail(&tmp, e))?);
    for (k, part) in parts.iter().enumerate() {
        let mut input = BufReader::new(fs::File::open(part).map_err(|e| fail(part, e))?);
        if k > 0 {
            let mut header = String::new();
            input.read_line(&mut header).map_err(|e| fail(part, e))?;
        }
        std::io::copy(&mut input, &mut out).map_err(|e| fail(&tmp, e))?;
    }
    out.flush().map_err(|e| fail(&tmp, e))?;
    drop(out);
    fs::rename(&tmp, done).map_err(|e| fail(done, e))
}

/// Runs one receiver per socket, each with the endpoint `make` builds, on one clock, until `stop` says
/// so or `limit`; returns each thread's outcome.
pub fn run_receivers(
    sockets: Vec<Socket>,
    make: &(dyn Fn() -> Endpoint + Sync),
    limit: Option<Time>,
    stop: &(dyn Fn() -> bool + Sync),
) -> Vec<ThreadOutcome> {
    let epoch = Instant::now();
    on_threads(sockets, "receiver", |socket| {
        let mut host = UdpHost::with_epoch(socket, make(), epoch);
        let ran = host.run(|_, now| stop() || limit.is_some_and(|l| now >= l));
        ThreadOutcome { error: ran.err().map(|e| e.to_string()), ..ThreadOutcome::from_host(&host, 0) }
    })
}

/// Runs `work` on each job in a thread of its own and returns their outcomes in the jobs' order; a
/// thread that panicked (in builds that unwind) becomes an outcome with an error naming its `role`.
fn on_threads<J: Send>(jobs: Vec<J>, role: &str, work: impl Fn(J) -> ThreadOutcome + Sync) -> Vec<ThreadOutcome> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs.into_iter().map(|job| scope.spawn(move || work(job))).collect();
        let joined = handles.into_iter().map(|h| h.join());
        joined
            .map(|outcome| {
                outcome.unwrap_or_else(|_| ThreadOutcome {
                    error: Some(format!("a {role} thread panicked")),
                    ..ThreadOutcome::default()
                })
            })
            .collect()
    })
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the live value it is given and touches nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Peak resident memory of this process (`VmHWM`), bytes; 0 where the kernel does not say.
pub fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(id: u32, start: Time, to: &str) -> Planned {
        Planned {
            id,
            src: 0,
            dst: 1,
            to: to.parse().unwrap(),
            size: Some(1000),
            start,
            stop: None,
            ideal_fct: None,
            group: 0,
        }
    }

    #[test]
    fn flows_are_dealt_in_turns_by_start_and_peers_numbered_alike() {
        let plan = [
            planned(7, 30, "10.0.0.2:1"),
            planned(3, 10, "10.0.0.3:1"),
            planned(5, 20, "10.0.0.2:1"),
            planned(1, 10, "10.0.0.4:1"),
            planned(9, 40, "10.0.0.3:1"),
        ];
        let (addrs, peers) = number_peers(&plan);
        let expected: Vec<SocketAddrV4> =
            ["10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1"].iter().map(|a| a.parse().unwrap()).collect();
        assert_eq!(addrs, expected, "in order of first appearance");
        assert_eq!(peers, [0, 1, 0, 2, 1]);
        let shards = shard(&plan, &peers, 2, None);
        let ids = |k: usize| shards[k].flows.iter().map(|(f, _)| f.id).collect::<Vec<_>>();
        // By (start, id): 1, 3, 5, 7, 9, dealt 0, 1, 0, 1, 0.
        assert_eq!(ids(0), [1, 5, 9]);
        assert_eq!(ids(1), [3, 7]);
        assert_eq!(shards[0].flows[0].1, 2, "each flow keeps its peer");
        assert_eq!(shard(&plan, &peers, 16, None).len(), 5, "no more shards than flows");
    }
}
