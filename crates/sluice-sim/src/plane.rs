//! The simulator's side of the CC plane: signals from the transport go through [`sluice_plane`]'s
//! per-flow fold and trigger; in native mode due reports reach the algorithm at once, in offload mode
//! they cross the modelled channel (batching, latency, ring, plane core) and decisions come back after
//! the latency. Decision filters apply in both modes.

use std::collections::VecDeque;

use sluice_cc::api::MAX_TIMERS;
use sluice_cc::{Ack, CongestionControl, Ctx, Decisions, Feedback, HostSignal, Loss, Sent, TimerId};
use sluice_core::Time;
use sluice_plane::trigger::Urgency;
use sluice_plane::{Batcher, Filters, Fold, Message, Mode, PlaneConfig, PlaneCore, PlaneCounters, Trigger};

use crate::engine::{Core, Event};
use crate::flow::Flow;
use crate::host::{Host, HostEnv};

/// A flow's plane state: its fold, when it reports, and its filters.
#[derive(Debug, Default)]
pub struct FlowPlane {
    /// Signals folded since the last report.
    pub fold: Fold,
    /// When the fold becomes a report (set when the flow starts).
    pub trigger: Option<Trigger>,
    /// Decision filters.
    pub filters: Filters,
    /// A flush check is scheduled at this time.
    pub flush_at: Option<Time>,
}

/// A host's plane: the datapath's batcher, transfers and decisions in flight, and the plane core.
#[derive(Debug, Default)]
pub struct HostPlane {
    batcher: Batcher,
    batch_deadline_at: Option<Time>,
    in_transit: VecDeque<Vec<Message>>,
    core: PlaneCore,
    core_scheduled: bool,
    decisions: VecDeque<(u32, Decisions)>,
    /// What this host's plane did.
    pub counters: PlaneCounters,
}

/// Calls `call` on the flow's controller and returns its decisions, recording a trace row for traced
/// flows. Timer requests take effect at once (timers live with the algorithm).
pub fn run_cc(
    core: &mut Core,
    f: &mut Flow,
    id: u32,
    call: impl FnOnce(&mut dyn CongestionControl, &mut Ctx),
) -> Option<Decisions> {
    let cc = f.cc.as_mut()?;
    let mut ctx = Ctx::new(core.now);
    call(cc.as_mut(), &mut ctx);
    let d = *ctx.decisions();
    for i in 0..MAX_TIMERS {
        if d.cancel_timers[i] || d.set_timers[i].is_some() {
            f.timer_gen[i] = f.timer_gen[i].wrapping_add(1);
        }
        if let Some(at) = d.set_timers[i] {
            core.schedule(at, Event::CcTimer { flow: id, id: i as u8, gen: f.timer_gen[i] });
        }
    }
    if let (Some(trace), Some(cc)) = (f.trace.as_mut(), f.cc.as_deref()) {
        trace.record(core.now, &mut |out| cc.trace(out));
    }
    Some(d)
}

/// Applies decisions that reached the datapath: window, rate (capped at line rate) and probe requests.
pub fn apply(f: &mut Flow, d: &Decisions, line_rate: u64) {
    if let Some(cwnd) = d.cwnd {
        f.cwnd = cwnd.max(1);
    }
    if let Some(rate) = d.rate {
        f.rate = rate.clamp(1, line_rate);
    }
    if d.probe {
        f.probe_requested = true;
    }
}

impl Host {
    fn plane_mode(env: &HostEnv) -> Mode {
        env.plane.mode
    }

    /// Filters decisions made at `now` and sends them to the datapath: at once in native mode, after the
    /// channel latency in offload mode. Report-policy changes take effect at once.
    pub(crate) fn commit(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, mut d: Decisions) {
        if let (Some(policy), Some(trigger)) = (d.report, f.plane.trigger.as_mut()) {
            trigger.set_policy(policy, env.plane.report);
        }
        f.plane.filters.apply(&mut d, self.nic.rate, env.plane, &mut self.plane.counters);
        if d.cwnd.is_none() && d.rate.is_none() && !d.probe {
            return;
        }
        match Self::plane_mode(env) {
            Mode::Native => {
                apply(f, &d, self.nic.rate);
                self.maybe_probe(core, env, f, id);
            }
            Mode::Offload => {
                self.plane.counters.decision_messages += 1;
                let at = self.plane.core.busy_until.max(core.now) + env.plane.latency;
                self.plane.decisions.push_back((id, d));
                core.schedule(at, Event::DecisionArrive { host: self.node });
            }
        }
    }

    /// Whether the flow's signals go straight to its handlers (native mode, per-event reporting).
    fn direct(env: &HostEnv, f: &Flow) -> bool {
        Self::plane_mode(env) == Mode::Native && f.plane.trigger.as_ref().is_some_and(|t| t.per_event())
    }

    /// An ACK arrived for flow `id`; `cnp` when its echo counts as a congestion notification.
    pub(crate) fn signal_ack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, ack: &Ack, cnp: bool) {
        self.plane.counters.signals += 1 + cnp as u64;
        if Self::direct(env, f) {
            let events = f.events;
            let d = run_cc(core, f, id, |cc, ctx| {
                if cnp && events.contains(sluice_cc::Events::CNP) {
                    cc.on_cnp(ctx);
                }
                if events.contains(sluice_cc::Events::ACK) {
                    cc.on_ack(ack, ctx);
                }
            });
            if let Some(d) = d {
                self.commit(core, env, f, id, d);
            }
            return;
        }
        f.plane.fold.add_ack(ack, core.now);
        if cnp {
            f.plane.fold.add_cnp(core.now);
        }
        let urgency = if ack.ecn_echo || cnp { Urgency::Ecn } else { Urgency::Normal };
        self.folded(core, env, f, id, urgency);
    }

    /// One signal of flow `id`: handed straight to the algorithm (`direct`) when its reports are per event
    /// in native mode, else folded (`fold`) and reported when due.
    #[allow(clippy::too_many_arguments)]
    fn signal(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        f: &mut Flow,
        id: u32,
        urgency: Urgency,
        direct: impl FnOnce(&mut dyn CongestionControl, &mut Ctx),
        fold: impl FnOnce(&mut Fold, Time),
    ) {
        self.plane.counters.signals += 1;
        if Self::direct(env, f) {
            if let Some(d) = run_cc(core, f, id, direct) {
                self.commit(core, env, f, id, d);
            }
            return;
        }
        fold(&mut f.plane.fold, core.now);
        self.folded(core, env, f, id, urgency);
    }

    /// Data was sent for flow `id` (only for algorithms that bind TX).
    pub(crate) fn signal_sent(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, sent: &Sent) {
        self.signal(
            core,
            env,
            f,
            id,
            Urgency::Normal,
            |cc, ctx| cc.on_sent(sent, ctx),
            |fold, at| fold.add_sent(sent, at),
        );
    }

    /// A loss was detected for flow `id`.
    pub(crate) fn signal_loss(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, loss: &Loss) {
        self.signal(
            core,
            env,
            f,
            id,
            Urgency::Loss,
            |cc, ctx| cc.on_loss(loss, ctx),
            |fold, at| fold.add_loss(loss, at),
        );
    }

    /// A CNP arrived for flow `id`.
    pub(crate) fn signal_cnp(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        self.signal(core, env, f, id, Urgency::Ecn, |cc, ctx| cc.on_cnp(ctx), |fold, at| fold.add_cnp(at));
    }

    /// Custom feedback arrived for flow `id`.
    pub fn signal_feedback(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, fb: Feedback) {
        self.signal(
            core,
            env,
            f,
            id,
            Urgency::Ecn,
            |cc, ctx| cc.on_feedback(&fb, ctx),
            |fold, at| fold.add_feedback(fb, at),
        );
    }

    /// A host congestion signal was sampled for flow `id` (host models call this).
    pub fn signal_host(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, signal: HostSignal) {
        self.signal(
            core,
            env,
            f,
            id,
            Urgency::Normal,
            |cc, ctx| cc.on_host(&signal, ctx),
            |fold, at| fold.add_host(signal, at),
        );
    }

    /// An RTT probe of flow `id` came back.
    pub(crate) fn signal_probe(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, rtt: Time) {
        self.signal(
            core,
            env,
            f,
            id,
            Urgency::Normal,
            |cc, ctx| cc.on_probe(rtt, ctx),
            |fold, at| fold.add_probe(rtt, at),
        );
    }

    /// A signal was folded: report if due, else make sure the fold is flushed by its deadline.
    fn folded(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, urgency: Urgency) {
        let Some(trigger) = f.plane.trigger.as_ref() else { return };
        if trigger.due(&f.plane.fold, urgency, core.now) {
            if trigger.urgent(urgency) {
                self.plane.counters.urgent_reports += 1;
            }
            self.report(core, env, f, id);
            return;
        }
        let hold = (f.base_rtt as f64 * env.plane.max_hold_rtts) as Time;
        let deadline = trigger.deadline(&f.plane.fold, hold);
        if let (Some(at), None) = (deadline, f.plane.flush_at) {
            f.plane.flush_at = Some(at);
            core.schedule(at, Event::PlaneFlush { flow: id });
        }
    }

    /// The fold of flow `id` is due: hand it to the algorithm (native) or to the channel (offload).
    fn report(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        let report = std::mem::take(&mut f.plane.fold);
        if let Some(trigger) = f.plane.trigger.as_mut() {
            trigger.reported(&report);
        }
        match Self::plane_mode(env) {
            Mode::Native => {
                self.plane.counters.reports += 1;
                self.plane.counters.message_bytes += report.message_bytes() as u64;
                self.deliver(core, env, f, id, &report);
            }
            Mode::Offload => self.enqueue_message(core, env, Message { flow: id, report, created: core.now }),
        }
    }

    fn deliver(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, report: &Fold) {
        let events = f.events;
        if let Some(d) = run_cc(core, f, id, |cc, ctx| report.deliver(cc, events, ctx)) {
            self.commit(core, env, f, id, d);
        }
    }

    fn enqueue_message(&mut self, core: &mut Core, env: &HostEnv, message: Message) {
        let p = &mut self.plane;
        if p.batcher.push(message, env.plane, &mut p.counters) {
            self.send_batch(core, env);
        } else if p.batch_deadline_at.is_none() {
            let at = p.batcher.deadline(env.plane).expect("a message waits");
            p.batch_deadline_at = Some(at);
            core.schedule(at, Event::PlaneBatch { host: self.node });
        }
    }

    fn send_batch(&mut self, core: &mut Core, env: &HostEnv) {
        let p = &mut self.plane;
        let batch = p.batcher.take(env.plane, &mut p.counters);
        p.in_transit.push_back(batch);
        core.schedule(core.now + env.plane.latency, Event::PlaneArrive { host: self.node });
    }

    /// A flow's fold deadline passed.
    pub fn on_plane_flush(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        f.plane.flush_at = None;
        if f.plane.fold.is_empty() || f.finish.is_some() {
            return;
        }
        self.report(core, env, f, id);
        self.after_decisions(core, env, flows, id);
    }

    /// The batcher's deadline passed.
    pub fn on_plane_batch(&mut self, core: &mut Core, env: &HostEnv) {
        self.plane.batch_deadline_at = None;
        if self.plane.batcher.is_empty() {
            return;
        }
        match self.plane.batcher.deadline(env.plane) {
            Some(at) if at > core.now => {
                self.plane.batch_deadline_at = Some(at);
                core.schedule(at, Event::PlaneBatch { host: self.node });
            }
            _ => self.send_batch(core, env),
        }
    }

    /// A transfer reached the plane.
    pub fn on_plane_arrive(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let Some(batch) = self.plane.in_transit.pop_front() else { return };
        let p = &mut self.plane;
        if let Some(stretch) = p.core.arrive(batch, env.plane, &mut p.counters) {
            self.stretch_flows(flows, stretch);
        }
        self.schedule_core(core, env);
    }

    fn schedule_core(&mut self, core: &mut Core, env: &HostEnv) {
        let p = &mut self.plane;
        if p.core_scheduled {
            return;
        }
        if let Some(done) = p.core.start_next(core.now, env.plane, &mut p.counters) {
            p.core_scheduled = true;
            core.schedule(done, Event::PlaneDone { host: self.node });
        }
    }

    fn stretch_flows(&mut self, flows: &mut [Flow], stretch: u32) {
        for &id in &self.senders {
            if let Some(t) = flows[id as usize].plane.trigger.as_mut() {
                t.set_stretch(stretch);
            }
        }
    }

    /// The plane core finished a message: the algorithm handles it and its decisions head back.
    pub fn on_plane_done(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        self.plane.core_scheduled = false;
        if let Some(message) = self.plane.core.finish() {
            let f = &mut flows[message.flow as usize];
            if f.finish.is_none() {
                self.deliver(core, env, f, message.flow, &message.report);
            }
        }
        if let Some(stretch) = self.plane.core.relieve(env.plane) {
            self.stretch_flows(flows, stretch);
        }
        self.schedule_core(core, env);
    }

    /// Decisions reached the datapath.
    pub fn on_decision(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let Some((id, d)) = self.plane.decisions.pop_front() else { return };
        let f = &mut flows[id as usize];
        if f.finish.is_some() {
            return;
        }
        apply(f, &d, self.nic.rate);
        self.maybe_probe(core, env, f, id);
        self.after_decisions(core, env, flows, id);
    }

    /// A CC timer of flow `id` fired: the algorithm runs where it lives (on the plane core in offload
    /// mode, which charges the core one service time).
    pub(crate) fn cc_timer(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, timer: u8) {
        if Self::plane_mode(env) == Mode::Offload {
            let p = &mut self.plane;
            p.core.charge(core.now, env.plane, &mut p.counters);
        }
        if let Some(d) = run_cc(core, f, id, |cc, ctx| cc.on_timer(TimerId(timer), ctx)) {
            self.commit(core, env, f, id, d);
        }
    }

    /// The plane configuration's checks of a new flow: its reporting policy.
    pub(crate) fn start_plane(f: &mut Flow, plane: &PlaneConfig) {
        let policy = f.cc.as_ref().map(|cc| cc.report_policy()).unwrap_or_default();
        f.plane.trigger = Some(Trigger::new(policy, plane.report));
    }
}
