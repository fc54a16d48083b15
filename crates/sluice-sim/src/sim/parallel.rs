//! One run on several threads (layer 5): conservative parallel discrete-event simulation, the network
//! cut into parts (hosts in blocks of consecutive indices, which are a fat-tree's pods and racks; each
//! switch with most of its neighbours) that run side by side, one thread each.
//!
//! A packet or a PFC frame crossing from one part to another is due a link's propagation delay after it
//! left at the earliest, so the parts step through simulated time in windows as long as the shortest
//! such delay (the lookahead, as UNISON for ns-3 and the classic Chandy-Misra-Bryant schemes use it):
//! within a window every part handles its own events alone, and between windows they hand each other
//! what crossed. The order of simultaneous events never depends on the threads
//! ([`crate::engine::EventTies`]), so a run gives byte-identical results on any number of threads.
//!
//! A run that ends when its flows have finished must stop at the instant the last one finished, which no
//! part knows ahead. A flow finishes on an acknowledgment, at least four link delays after it sent its
//! last byte; so while some flow has bytes left to send the end is more than a window away. Once every
//! flow has sent everything, the parts run their windows in turn on one thread, in time order, and stop
//! where a run in one piece stops.
//!
//! Each part builds its own nodes' state (the ports and queues of its switches) and a bare record of the
//! others' (a switch without ports, a host with a one-queue NIC); a flow lives in the parts of its
//! two hosts, the sender's half in one and the receiver's in the other, and the records are assembled
//! from the part that owns each element.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use sluice_core::Time;
use sluice_results::{FlowRecord, PortRecord, SwitchRecord, ThroughputSeries};
use sluice_topo::{NodeKind, Topology};

use super::run::{split, Parts};
use super::{Balance, Progress, SimInput, SimOutput, Simulation};
use crate::engine::partition::{Mail, Partition};
use crate::engine::Event;
use crate::net::Fabric;
use crate::stats::FaultStats;
use crate::transport::HostEnv;

/// What a part of a partitioned run keeps beside its simulation.
#[derive(Debug, Default)]
pub(super) struct PartState {
    /// Workload arrivals and throughput samples this part handled: every part handles all of them, and
    /// the run counts them once.
    replicated: u64,
    /// The flows this part sends that had not finished when its last flow started.
    unfinished: Option<Vec<u32>>,
    /// How many of `unfinished`, from the front, have finished or sent their last byte: either stays so.
    sent_all: usize,
    /// When the closed loops this part sends in start their last flows at the latest.
    loops_end: Option<Time>,
}

/// A run cut into parts that run on threads of their own, with results identical to [`Simulation`]'s.
pub struct PartitionedRun {
    parts: Vec<Simulation>,
    part_of: Arc<[u16]>,
    lookahead: Time,
    /// The times long-lived flows stop whose receivers read the size their senders set then, sorted.
    stops: Vec<Time>,
}

impl std::fmt::Debug for PartitionedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedRun").field("parts", &self.parts.len()).field("lookahead", &self.lookahead).finish()
    }
}

impl PartitionedRun {
    /// Builds `input` as `threads` parts, or says why this run cannot be cut (a feature whose state is
    /// shared by hosts of different parts, links without propagation delay).
    pub fn new(input: SimInput, threads: usize) -> Result<PartitionedRun, String> {
        if threads < 2 {
            return Err(format!("a partitioned run takes 2 threads or more, not {threads}"));
        }
        let hosts = input.topology.hosts.len();
        if hosts < threads {
            return Err(format!("{threads} threads need at least as many hosts; the topology has {hosts}"));
        }
        let stops = stops_receivers_read(&input);
        let part_of: Arc<[u16]> = assign_parts(&input.topology, threads).into();
        let lookahead = lookahead(&input.topology, &part_of);
        if lookahead == 0 {
            return Err("links without propagation delay leave a partitioned run no lookahead".into());
        }
        let parts = (0..threads)
            .map(|part| {
                let partition = Box::new(Partition::new(part as u16, part_of.clone()));
                let mut sim = Simulation::build(input.clone(), Some(partition));
                sim.part = Some(PartState::default());
                sim
            })
            .collect();
        Ok(PartitionedRun { parts, part_of, lookahead, stops })
    }

    /// The time the run stops at the latest.
    pub fn end_time(&self) -> Time {
        self.parts[0].end_time()
    }

    /// Runs to the end as [`Simulation::run_until`] does: `progress` is called about every million
    /// events, and the run is abandoned when `stop` says so.
    pub fn run_until(
        self,
        progress: &mut dyn FnMut(&Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<SimOutput, Progress> {
        let n = self.parts.len();
        let first = &self.parts[0];
        let plan = Plan {
            end: first.end_time(),
            until_done: first.stop.duration.is_none(),
            generated: first.flows.ids(),
            lookahead: self.lookahead,
            stops: self.stops,
        };
        let shared = Shared::new(n);
        let part_of = self.part_of.clone();
        let cells: Vec<Mutex<Simulation>> = self.parts.into_iter().map(Mutex::new).collect();
        let mut reporter = Reporter { progress, stop, next_report: 1 << 20 };
        let outcome = std::thread::scope(|scope| {
            for part in 1..n {
                let (cells, shared, plan) = (&cells, &shared, &plan);
                scope.spawn(move || worker(part, cells, shared, plan, None));
            }
            worker(0, &cells, &shared, &plan, Some(&mut reporter))
        });
        let parts: Vec<Simulation> =
            cells.into_iter().map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
        match outcome {
            Outcome::Abandoned(at) => Err(at),
            Outcome::Finished { past_end, balance } => {
                let mut output = assemble(parts, &plan, past_end, &part_of);
                output.balance = Some(balance);
                Ok(output)
            }
        }
    }
}

/// The stop times of the long-lived flows whose receivers read the size the sender sets at the stop,
/// sorted: a receiver-driven receiver learns there where the stream ends, and one that acknowledges
/// several packets at once acknowledges the last one at once. Each is a window's end, where the
/// sender's part, which alone knows what it sent, tells the receiver's part.
fn stops_receivers_read(input: &SimInput) -> Vec<Time> {
    let receivers_read =
        input.factory.token_transport().is_some() || input.host.ack_every_packets > 1 || input.host.ack_every_bytes > 0;
    if !receivers_read {
        return Vec::new();
    }
    let mut stops: Vec<Time> = input.flows.iter().filter_map(|f| f.stop).collect();
    stops.sort_unstable();
    stops.dedup();
    stops
}

/// Cuts the network into `parts`: hosts in blocks of consecutive indices, then switches layer by layer
/// outward from the hosts, each to the part most of its already placed neighbours are in (a tie to the
/// part with the fewest switches, which spreads a fat-tree's core evenly).
fn assign_parts(topology: &Topology, parts: usize) -> Vec<u16> {
    const UNSET: u16 = u16::MAX;
    let mut part_of = vec![UNSET; topology.nodes.len()];
    let hosts = topology.hosts.len();
    for (index, &node) in topology.hosts.iter().enumerate() {
        part_of[node as usize] = (index * parts / hosts) as u16;
    }
    let mut switches = vec![0usize; parts];
    loop {
        let mut placed = Vec::new();
        for (node, kind) in topology.nodes.iter().enumerate().map(|(i, n)| (i, n.kind)) {
            if kind != NodeKind::Switch || part_of[node] != UNSET {
                continue;
            }
            let mut votes = vec![0usize; parts];
            for port in &topology.ports[node] {
                if let Some(&p) = part_of.get(port.peer as usize).filter(|&&p| p != UNSET) {
                    votes[p as usize] += 1;
                }
            }
            let best = (0..parts).max_by_key(|&p| (votes[p], std::cmp::Reverse(switches[p]), std::cmp::Reverse(p)));
            if let Some(p) = best.filter(|&p| votes[p] > 0) {
                switches[p] += 1;
                placed.push((node, p as u16));
            }
        }
        if placed.is_empty() {
            break;
        }
        for (node, p) in placed {
            part_of[node] = p;
        }
    }
    part_of.iter().map(|&p| if p == UNSET { 0 } else { p }).collect()
}

/// The window: the shortest propagation delay of a link between two parts, and no more than four link
/// delays of any link (the least time from a flow's last byte leaving to its acknowledgment arriving).
fn lookahead(topology: &Topology, part_of: &[u16]) -> Time {
    let mut cut = Time::MAX;
    let mut shortest = Time::MAX;
    for (node, ports) in topology.ports.iter().enumerate() {
        for port in ports {
            shortest = shortest.min(port.delay);
            if part_of[node] != part_of[port.peer as usize] {
                cut = cut.min(port.delay);
            }
        }
    }
    cut.min(shortest.saturating_mul(4))
}

/// What every thread knows of the run.
struct Plan {
    end: Time,
    until_done: bool,
    /// The workload's flows; closed loops add flows during the run, each counted by its sender's part.
    generated: u64,
    lookahead: Time,
    /// Times at which a window ends, for the senders' parts to tell the receivers' the sizes of the
    /// long-lived flows that stop then ([`stops_receivers_read`]).
    stops: Vec<Time>,
}

impl Plan {
    /// The end of the window that starts at `next`, the earliest event of every part, after a window
    /// that ended at `last`: a lookahead on, but no further than the run's end and the next stop; and
    /// when a stop is due at `next` and no window ended there yet, the empty window up to it.
    fn window_end(&self, next: Time, last: Time) -> Time {
        let at = self.stops.partition_point(|&s| s < next);
        if self.stops.get(at) == Some(&next) && last < next {
            return next;
        }
        let stop = self.stops[at..].iter().copied().find(|&s| s > next).unwrap_or(Time::MAX);
        next.saturating_add(self.lookahead).min(self.end.saturating_add(1)).min(stop)
    }

    /// Whether long-lived flows stop at `time`, a window's end, and their receivers must hear of it.
    fn stops_at(&self, time: Time) -> bool {
        self.stops.binary_search(&time).is_ok()
    }
}

/// What the threads exchange between windows.
struct Shared {
    barrier: SpinBarrier,
    /// `mail[to][from]`: events part `from` made for part `to` in the last window.
    mail: Vec<Vec<Mutex<Vec<Mail>>>>,
    /// Each part's next event time (`Time::MAX`: none).
    next: Vec<AtomicU64>,
    /// The events each part handled in the last window.
    window_events: Vec<AtomicU64>,
    /// Each part's flows have all sent their last byte and no flow is still to start.
    could_end: Vec<AtomicBool>,
    /// Each part's finished flows, events (replicated ones counted by part 0 only) and flows its closed
    /// loops started.
    finished: Vec<AtomicU64>,
    events: Vec<AtomicU64>,
    started: Vec<AtomicU64>,
    /// Part 0 was asked to abandon the run.
    abandon: AtomicBool,
    /// The last window ended the run (every flow finished).
    ended: AtomicBool,
}

impl Shared {
    fn new(n: usize) -> Shared {
        let atomics = || (0..n).map(|_| AtomicU64::new(0)).collect();
        Shared {
            barrier: SpinBarrier::new(n),
            mail: (0..n).map(|_| (0..n).map(|_| Mutex::new(Vec::new())).collect()).collect(),
            next: atomics(),
            window_events: atomics(),
            could_end: (0..n).map(|_| AtomicBool::new(false)).collect(),
            finished: atomics(),
            events: atomics(),
            started: atomics(),
            abandon: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    fn sum(values: &[AtomicU64]) -> u64 {
        values.iter().map(|v| v.load(Ordering::Acquire)).sum()
    }
}

/// A barrier whose threads wait busy when each has a core of its own: windows are tens of microseconds
/// long, about what waking a sleeping thread costs. They spin, then yield their core between looks.
/// With more threads than cores a busy thread would hold the core the last one needs, so they sleep.
struct SpinBarrier {
    threads: usize,
    /// Every thread has a core: wait busy, never asleep.
    busy: bool,
    /// Threads that arrived in the current round.
    arrived: AtomicUsize,
    /// Rounds completed; a waiting thread leaves when it moves.
    round: AtomicUsize,
    /// Threads asleep, and where they sleep.
    sleepers: Mutex<usize>,
    wake: Condvar,
    /// A thread panicked: the others must not wait for it.
    broken: AtomicBool,
}

/// Breaks the barrier when the thread that holds it panics, so that the others fail instead of waiting.
struct Breaker<'a>(&'a SpinBarrier);

impl Drop for Breaker<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.broken.store(true, Ordering::Release);
            self.0.wake.notify_all();
        }
    }
}

/// Spins a waiting thread with a core of its own makes before it yields between looks.
const SPINS: u32 = 20_000;

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        SpinBarrier {
            threads,
            busy: threads <= cores,
            arrived: AtomicUsize::new(0),
            round: AtomicUsize::new(0),
            sleepers: Mutex::new(0),
            wake: Condvar::new(),
            broken: AtomicBool::new(false),
        }
    }

    /// Waits until every thread has arrived.
    fn wait(&self) {
        let round = self.round.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            // Under the lock: a thread going to sleep either sees the new round or is woken.
            let sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            self.round.store(round.wrapping_add(1), Ordering::Release);
            if *sleepers > 0 {
                self.wake.notify_all();
            }
            return;
        }
        if self.busy {
            let mut spins = 0;
            while self.round.load(Ordering::Acquire) == round {
                assert!(!self.broken.load(Ordering::Acquire), "another thread of the partitioned run failed");
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            return;
        }
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        *sleepers += 1;
        while self.round.load(Ordering::Acquire) == round {
            assert!(!self.broken.load(Ordering::Acquire), "another thread of the partitioned run failed");
            let timeout = std::time::Duration::from_millis(50);
            sleepers = self.wake.wait_timeout(sleepers, timeout).unwrap_or_else(|e| e.into_inner()).0;
        }
        *sleepers -= 1;
    }
}

/// Part 0's link to the caller: progress reports and the question whether to go on.
struct Reporter<'a> {
    progress: &'a mut dyn FnMut(&Progress),
    stop: &'a dyn Fn() -> bool,
    next_report: u64,
}

/// How a thread's loop ended.
enum Outcome {
    /// The run reached its end; `past_end`: events were left beyond its stop time. Part 0's thread
    /// returns how evenly the parts shared the windows (the others, an empty count).
    Finished { past_end: bool, balance: Balance },
    /// The caller abandoned it at this point.
    Abandoned(Progress),
}

/// Locks a part (a thread that panicked holding it has already failed the run).
fn lock(cell: &Mutex<Simulation>) -> std::sync::MutexGuard<'_, Simulation> {
    cell.lock().unwrap_or_else(|e| e.into_inner())
}

/// One thread's loop over windows, for part `me`. A window takes two meetings of the threads: each part
/// takes its mail and publishes its next event; they meet and agree on the window; each runs it and
/// posts what it sent; they meet again. (One meeting a window, each part publishing the earliest event
/// it sent beside its own, measured no faster on ws128.)
fn worker(
    me: usize,
    cells: &[Mutex<Simulation>],
    shared: &Shared,
    plan: &Plan,
    mut reporter: Option<&mut Reporter>,
) -> Outcome {
    let _breaker = Breaker(&shared.barrier);
    // Where the last window ended: every thread follows the same windows.
    let mut last_until = 0;
    let mut balance = Balance { parts: cells.len(), ..Balance::default() };
    loop {
        if let Some(r) = reporter.as_deref_mut() {
            // From what the parts published last time: at most a window old.
            if r.report(shared, plan) {
                shared.abandon.store(true, Ordering::Release);
            }
        }
        {
            let mut sim = lock(&cells[me]);
            take_mail(&mut sim, me, shared);
            publish(&mut sim, me, shared, plan);
        }
        shared.barrier.wait();
        let next = shared.next.iter().map(|t| t.load(Ordering::Acquire)).min().unwrap_or(Time::MAX);
        if shared.abandon.load(Ordering::Acquire) {
            let events = Shared::sum(&shared.events);
            let finished = Shared::sum(&shared.finished);
            let flows = plan.generated + Shared::sum(&shared.started);
            let at = Progress { now: next, end: plan.end, events, flows_finished: finished, flows };
            return Outcome::Abandoned(at);
        }
        if next == Time::MAX || next > plan.end {
            return Outcome::Finished { past_end: next != Time::MAX, balance };
        }
        let until = plan.window_end(next, last_until);
        last_until = until;
        let in_turn = plan.until_done && shared.could_end.iter().all(|c| c.load(Ordering::Acquire));
        if !in_turn {
            let mut sim = lock(&cells[me]);
            let before = sim.core.counters.events;
            sim.window(until, usize::MAX);
            shared.window_events[me].store(sim.core.counters.events - before, Ordering::Release);
            if plan.stops_at(until) {
                sim.tell_stops(until);
            }
            post(&mut sim, me, shared);
        } else if me == 0 {
            let mut all: Vec<_> = cells.iter().map(lock).collect();
            let before: u64 = all.iter().map(|p| p.core.counters.events).sum();
            let ended = in_turn_window(&mut all, until, plan);
            // Parts that take turns are one thread's work: the window's busiest "part" did all of it.
            let events = all.iter().map(|p| p.core.counters.events).sum::<u64>() - before;
            for (part, count) in shared.window_events.iter().enumerate() {
                count.store(if part == 0 { events } else { 0 }, Ordering::Release);
            }
            for (part, sim) in all.iter_mut().enumerate() {
                if plan.stops_at(until) {
                    sim.tell_stops(until);
                }
                post(sim, part, shared);
            }
            shared.ended.store(ended, Ordering::Release);
        }
        shared.barrier.wait();
        if me == 0 {
            balance.windows += 1;
            balance.busiest += shared.window_events.iter().map(|e| e.load(Ordering::Acquire)).max().unwrap_or(0);
        }
        if shared.ended.load(Ordering::Acquire) {
            return Outcome::Finished { past_end: false, balance };
        }
    }
}

/// Queues the events other parts sent part `me`.
fn take_mail(sim: &mut Simulation, me: usize, shared: &Shared) {
    for from in &shared.mail[me] {
        let mut mail = from.lock().unwrap_or_else(|e| e.into_inner());
        for item in mail.iter() {
            match *item {
                Mail::Event(ref remote) => sim.core.deliver(remote),
                Mail::LoopFlow { flow, at } => sim.receive_loop_flow(flow, at),
                Mail::Stopped { flow, size, finished } => {
                    sim.core.partition.as_deref_mut().expect("a part").hold_stop(flow, size, finished)
                }
            }
        }
        // Emptied in place: the list goes back to its sender with its buffer ([`Partition::post_to`]).
        mail.clear();
    }
}

/// Publishes part `me`'s next event, whether it could end in the next window, and its counts.
fn publish(sim: &mut Simulation, me: usize, shared: &Shared, plan: &Plan) {
    let could_end = plan.until_done && sim.could_end();
    let replicated = if me == 0 { 0 } else { sim.part.as_ref().map_or(0, |p| p.replicated) };
    shared.next[me].store(sim.core.queue.peek_time().unwrap_or(Time::MAX), Ordering::Release);
    shared.could_end[me].store(could_end, Ordering::Release);
    shared.finished[me].store(sim.core.counters.flows_finished, Ordering::Release);
    shared.events[me].store(sim.core.counters.events - replicated, Ordering::Release);
    shared.started[me].store(sim.loops.started(), Ordering::Release);
}

impl Reporter<'_> {
    /// Reports progress about every million events; returns whether the caller wants the run abandoned.
    fn report(&mut self, shared: &Shared, plan: &Plan) -> bool {
        let events = Shared::sum(&shared.events);
        if events < self.next_report {
            return false;
        }
        self.next_report = (events >> 20 << 20) + (1 << 20);
        let finished = Shared::sum(&shared.finished);
        let flows = plan.generated + Shared::sum(&shared.started);
        let now = shared.next.iter().map(|t| t.load(Ordering::Acquire)).min().unwrap_or(Time::MAX).min(plan.end);
        (self.progress)(&Progress { now, end: plan.end, events, flows_finished: finished, flows });
        (self.stop)()
    }
}

/// Hands what part `from` made for other parts to their mailboxes.
fn post(sim: &mut Simulation, from: usize, shared: &Shared) {
    let partition = sim.core.partition.as_deref_mut().expect("a part of a partitioned run");
    for (to, boxes) in shared.mail.iter().enumerate() {
        if to != from {
            let mut mailbox = boxes[from].lock().unwrap_or_else(|e| e.into_inner());
            partition.post_to(to as u16, &mut mailbox);
        }
    }
}

/// Runs every part's events before `until` on this thread, in time order, and stops at the end of the
/// instant the last flow finishes, if it does; returns whether it did.
fn in_turn_window(parts: &mut [std::sync::MutexGuard<'_, Simulation>], until: Time, plan: &Plan) -> bool {
    let mut finished: u64 = parts.iter().map(|p| p.core.counters.flows_finished).sum();
    // No closed loop starts a flow any more: every part could end.
    let total = plan.generated + parts.iter().map(|p| p.loops.started()).sum::<u64>();
    let mut limit = until;
    let mut ended = false;
    loop {
        let due = parts.iter().enumerate().filter_map(|(i, p)| p.core.queue.peek_time().map(|t| (t, i))).min();
        let Some((time, i)) = due.filter(|&(t, _)| t < limit) else { break };
        let before = parts[i].core.counters.flows_finished;
        parts[i].window(limit, 1);
        finished += parts[i].core.counters.flows_finished - before;
        if !ended && finished == total {
            ended = true;
            limit = time + 1;
        }
    }
    ended
}

impl Simulation {
    /// Handles this part's events due before `until`, `at_most` of them.
    fn window(&mut self, until: Time, at_most: usize) {
        let (mut parts, fabric, env) = split!(self);
        let state = self.part.as_mut().expect("a part of a partitioned run");
        for _ in 0..at_most {
            let Some((time, event)) = parts.core.queue.pop_before(until) else { break };
            handle(&mut parts, &fabric, &env, state, time, event);
            if !parts.core.freed_slots.is_empty() {
                self.loops.refill(parts.core, parts.settings, parts.flows, parts.hosts);
            }
        }
    }

    /// A closed loop of another part started flow `id` at `start`, and this part receives it: the flow's
    /// receiving half is made as the sender's part made the flow (the same slot and generation, the same
    /// draw of the slot's stream).
    fn receive_loop_flow(&mut self, id: u32, start: Time) {
        let (mut parts, _, env) = split!(self);
        let slot = parts.flows.loop_ids().split(id).0;
        let Some((made, spec)) = self.loops.next_flow(slot, start) else {
            unreachable!("the sender's part numbered flow {id}")
        };
        debug_assert_eq!(made, id, "both parts number a slot's flows alike");
        let mut flow = parts.settings.make(id, &spec);
        flow.slot = Some(slot);
        parts.flows.push_later(id, flow);
        parts.start_receiver(id, &env, start);
    }

    /// Tells the receivers' parts the sizes of the long-lived flows this part sends that stop at `at`,
    /// the end of the window just run: what they had sent by then is all they send.
    fn tell_stops(&mut self, at: Time) {
        let partition = self.core.partition.as_deref_mut().expect("a part of a partitioned run");
        for id in self.arrivals.stopping_at(at) {
            let Some(f) = self.flows.get(id) else { continue };
            let (sender, receiver) = (self.hosts[f.src as usize].node, self.hosts[f.dst as usize].node);
            if !partition.owns(sender) || partition.owns(receiver) {
                continue;
            }
            let size = f.max_sent.max(f.snd_una);
            let stopped = Mail::Stopped { flow: id, size, finished: f.snd_una >= size };
            partition.send(partition.part_of(receiver), stopped);
        }
    }

    /// Whether every flow this part sends could finish in the next window: none is still to start and
    /// each has sent its last byte.
    fn could_end(&mut self) -> bool {
        if self.arrivals.has_starts() {
            return false;
        }
        let (flows, hosts) = (&self.flows, &self.hosts);
        let partition = self.core.partition.as_deref().expect("a part of a partitioned run");
        let sends = |host: u32| partition.owns(hosts[host as usize].node);
        let state = self.part.as_mut().expect("a part of a partitioned run");
        if self.core.now < *state.loops_end.get_or_insert_with(|| self.loops.last_end(sends)) {
            return false;
        }
        // Made once no flow is still to start here: the workload's flows and the closed loops' so far.
        let unfinished = state.unfinished.get_or_insert_with(|| {
            (0..flows.generated_made())
                .chain(flows.later_ids())
                .filter(|&id| flows.get(id).is_some_and(|f| f.finish.is_none() && sends(f.src)))
                .collect()
        });
        // Each flow is passed once over the run, however many windows look.
        while let Some(&id) = unfinished.get(state.sent_all) {
            let f = &flows[id as usize];
            if f.finish.is_none() && f.max_sent < f.size {
                return false;
            }
            state.sent_all += 1;
        }
        true
    }
}

/// Handles one event of a part. Finished flows are not retired in a partitioned run: a flow's packets
/// may be in another part, where its sender's part cannot count them.
fn handle(parts: &mut Parts, fabric: &Fabric, env: &HostEnv, state: &mut PartState, time: Time, event: Event) {
    parts.core.now = time;
    parts.core.counters.events += 1;
    if matches!(event, Event::Arrival | Event::Sample) {
        state.replicated += 1;
    }
    parts.prefetch_ahead();
    parts.dispatch::<false>(event, fabric, env);
    parts.core.finished.clear();
}

/// The run's records from its parts: each flow's from its sender's part (with what its receiver's part
/// received), each port's and switch's from the part that owns it, and the counters summed.
fn assemble(mut parts: Vec<Simulation>, plan: &Plan, past_end: bool, part_of: &[u16]) -> SimOutput {
    let mut now = parts.iter().map(|p| p.core.now).max().unwrap_or(0);
    if !plan.until_done {
        now = now.max(plan.end);
    }
    let finished: u64 = parts.iter().map(|p| p.core.counters.flows_finished).sum();
    let total = plan.generated + parts.iter().map(|p| p.loops.started()).sum::<u64>();
    let hit_time_limit = plan.until_done && past_end && finished < total;
    let host_node: Vec<u32> = parts[0].hosts.iter().map(|h| h.node).collect();
    let topology = &parts[0].settings.topology;
    let switches: Vec<(u32, usize)> =
        parts[0].switches.iter().map(|s| (s.node, topology.ports[s.node as usize].len())).collect();
    let observe = parts[0].settings.observe.clone();
    let receiver_driven = parts[0].rd.is_some();
    let replicated: Vec<u64> = parts.iter().map(|p| p.part.as_ref().map_or(0, |s| s.replicated)).collect();
    let mut outputs: Vec<SimOutput> = parts
        .drain(..)
        .map(|mut p| {
            p.core.now = now;
            p.finish(hit_time_limit)
        })
        .collect();
    let owner_of_host = |host: u32| part_of[host_node[host as usize] as usize] as usize;
    let flows = merge_flows(&outputs, total as usize, &owner_of_host, receiver_driven);
    // Rows are in id order, and closed loops' ids are sparse.
    let row = |id: u64| &flows[flows.binary_search_by_key(&id, |r| r.id).expect("every flow has a row")];
    // A flow's trace is its controller's: the sender's, or a receiver-driven flow's receiver's (its
    // sender-side controller traces nothing).
    let tracing_part = |flow: u64| {
        let f = row(flow);
        owner_of_host(if receiver_driven { f.dst } else { f.src })
    };
    let mut traces: Vec<_> = outputs
        .iter()
        .enumerate()
        .flat_map(|(p, out)| out.traces.iter().filter(move |t| tracing_part(t.flow()) == p).cloned())
        .collect();
    traces.sort_by_key(|t| t.flow());
    let (ports, switch_records) = merge_switches(&outputs, &switches, part_of);
    let mut throughput = Vec::new();
    for (i, f) in observe.throughput_flows.iter().enumerate() {
        let f = row(u64::from(*f));
        let sender = &outputs[owner_of_host(f.src)].throughput[i];
        throughput.push(if receiver_driven {
            delivered_by_either(sender, &outputs[owner_of_host(f.dst)].throughput[i])
        } else {
            sender.clone()
        });
    }
    let offset = observe.throughput_flows.len();
    for (i, (node, _)) in observe.throughput_ports.iter().enumerate() {
        throughput.push(outputs[part_of[*node as usize] as usize].throughput[offset + i].clone());
    }
    let mut counters = crate::stats::Counters::default();
    let mut plane = sluice_plane::PlaneCounters::default();
    let mut pause_time = 0;
    for out in &outputs {
        counters.add(&out.counters);
        plane.add(&out.plane);
        pause_time += out.run.pfc_pause_time;
    }
    counters.events -= replicated[1..].iter().sum::<u64>();
    let mut run = outputs[0].run.clone();
    run.events = counters.events;
    run.packet_hops = counters.packet_hops;
    run.bytes_sent = counters.bytes_sent;
    run.bytes_delivered = counters.bytes_delivered;
    run.bytes_dropped = counters.bytes_dropped;
    run.retransmitted_bytes = counters.retransmitted_bytes;
    run.timeouts = counters.timeouts;
    run.pfc_pauses = counters.pfc_pauses;
    run.pfc_pause_time = pause_time;
    run.drops = counters.drops;
    run.data_drops = counters.data_drops;
    SimOutput {
        flows,
        ports,
        switches: switch_records,
        throughput,
        traces,
        run,
        counters,
        peak_packets: outputs.iter().map(|o| o.peak_packets).sum(),
        plane,
        faults: merge_faults(&outputs),
        packet_trace: merge_packet_traces(&mut outputs, observe.packet_trace.as_ref().map_or(0, |c| c.max_rows)),
        balance: None,
    }
}

/// The packet trace from its parts' rows: each port's rows come from the part that owns its switch,
/// settled together in packets.csv's order and bound.
fn merge_packet_traces(outputs: &mut [SimOutput], max_rows: u64) -> Option<sluice_results::PacketTrace> {
    let mut merged = outputs[0].packet_trace.take()?;
    for out in &mut outputs[1..] {
        let part = out.packet_trace.take().expect("every part traces packets");
        merged.rows.extend(part.rows);
        merged.skipped += part.skipped;
    }
    crate::engine::trace::settle(&mut merged, max_rows);
    Some(merged)
}

/// A receiver-driven flow's throughput series from its sender's and its receiver's parts. The flow's
/// delivered bytes at a sample are the larger of what its sender has acknowledged and what its receiver
/// holds (the sampler's rule), and each part knows one of the two: so the larger of the two parts'
/// running totals, sample by sample.
fn delivered_by_either(sender: &ThroughputSeries, receiver: &ThroughputSeries) -> ThroughputSeries {
    debug_assert_eq!(sender.samples.len(), receiver.samples.len(), "both parts sample at the same times");
    let (mut at_sender, mut at_receiver, mut last) = (0, 0, 0);
    let samples = sender
        .samples
        .iter()
        .zip(&receiver.samples)
        .map(|(&(time, by_sender), &(_, by_receiver))| {
            at_sender += by_sender;
            at_receiver += by_receiver;
            let delivered = u64::max(at_sender, at_receiver);
            let bytes = delivered - last;
            last = delivered;
            (time, bytes)
        })
        .collect();
    ThroughputSeries { samples, ..sender.clone() }
}

/// Each fault's statistics, summed over the parts: a fault's switch runs in one part, and the others
/// report zeros for it.
fn merge_faults(outputs: &[SimOutput]) -> Vec<FaultStats> {
    let mut faults = outputs[0].faults.clone();
    for out in &outputs[1..] {
        for (total, part) in faults.iter_mut().zip(&out.faults) {
            total.add(part);
        }
    }
    faults
}

/// Each flow's record from its sender's part, with the bytes its receiver's part received, in id order.
/// A receiver-driven flow has delivered the larger of what its sender has acknowledged and what its
/// receiver holds ([`super::report::flow_record`]), each known to one part; a long-lived flow's size is
/// what it delivered.
fn merge_flows(
    outputs: &[SimOutput],
    total: usize,
    owner_of_host: &dyn Fn(u32) -> usize,
    receiver_driven: bool,
) -> Vec<FlowRecord> {
    let mut rows: Vec<FlowRecord> = Vec::with_capacity(total);
    for (p, out) in outputs.iter().enumerate() {
        rows.extend(out.flows.iter().filter(|r| owner_of_host(r.src) == p).cloned());
    }
    rows.sort_unstable_by_key(|r| r.id);
    assert_eq!(rows.len(), total, "every flow has a row in its sender's part");
    for (p, out) in outputs.iter().enumerate() {
        for row in out.flows.iter().filter(|r| owner_of_host(r.dst) == p) {
            if let Ok(at) = rows.binary_search_by_key(&row.id, |r| r.id) {
                let merged = &mut rows[at];
                merged.received = row.received;
                if receiver_driven {
                    merged.delivered = merged.delivered.max(row.delivered);
                    if merged.long_lived {
                        merged.size = merged.delivered;
                    }
                }
            }
        }
    }
    rows
}

/// Each switch's record and its ports' from the part that owns the switch. A part has ports at its own
/// switches only, so each part's port records are its switches' in order.
fn merge_switches(
    outputs: &[SimOutput],
    switches: &[(u32, usize)],
    part_of: &[u16],
) -> (Vec<PortRecord>, Vec<SwitchRecord>) {
    let mut ports = Vec::new();
    let mut records = Vec::new();
    let mut next_port = vec![0; outputs.len()];
    for (index, &(node, count)) in switches.iter().enumerate() {
        let part = part_of[node as usize] as usize;
        let out = &outputs[part];
        ports.extend_from_slice(&out.ports[next_port[part]..next_port[part] + count]);
        records.push(out.switches[index].clone());
        next_port[part] += count;
    }
    debug_assert!(next_port.iter().zip(outputs).all(|(&n, out)| n == out.ports.len()), "every port taken once");
    (ports, records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::test_inputs::fat_tree_input;

    /// A part sends some arrivals to other parts, which the plain switch hop would keep: no part takes it,
    /// though the same run in one piece does.
    #[test]
    fn no_part_takes_the_plain_switch_hop() {
        assert!(Simulation::new(fat_tree_input()).plain(), "the run in one piece");
        let run = PartitionedRun::new(fat_tree_input(), 2).expect("the run can be cut");
        assert!(run.parts.iter().all(|part| !part.plain() && part.switches.iter().all(|s| !s.is_plain())));
    }

    /// Each part builds the ports of its own switches and its own hosts' NIC queues, and a bare record
    /// of the rest: every switch's ports exist once over the parts, whatever the thread count.
    #[test]
    fn each_part_builds_the_ports_of_its_own_nodes_only() {
        let input = fat_tree_input();
        let topology = input.topology.clone();
        let queues = input.switch.queues.max(1) as usize;
        for threads in [2, 4] {
            let run = PartitionedRun::new(input.clone(), threads).expect("the run can be cut");
            let mut built = vec![0; topology.nodes.len()];
            for (part, sim) in run.parts.iter().enumerate() {
                let own = |node: u32| run.part_of[node as usize] as usize == part;
                for sw in &sim.switches {
                    let expected = if own(sw.node) { topology.ports[sw.node as usize].len() } else { 0 };
                    assert_eq!(sw.ports.len(), expected, "switch {} in part {part} of {threads}", sw.node);
                    built[sw.node as usize] += usize::from(!sw.ports.is_empty());
                }
                for host in &sim.hosts {
                    let expected = if own(host.node) { queues } else { 1 };
                    assert_eq!(host.nic.queue_count(), expected, "host {} in part {part} of {threads}", host.node);
                }
            }
            for (node, count) in built.iter().enumerate() {
                let is_switch = topology.nodes[node].kind == NodeKind::Switch;
                assert_eq!(
                    *count,
                    usize::from(is_switch),
                    "node {node}: ports built {count} times on {threads} threads"
                );
            }
        }
    }
}
