//! One flow's glue between a datapath and its algorithm, the same on every datapath: signals are handed
//! to the algorithm at once or folded until the reporting policy says a report is due; the algorithm's
//! timers and its decisions (report policy, filters, window, rate, probes) are kept here; the datapath
//! only tells the time, wakes the driver when asked, and applies what comes out.
//!
//! A datapath implements [`Datapath`] for the duration of one call (usually a struct of borrows of its
//! own state) and calls the [`FlowDriver`]'s methods as signals arrive. Event-driven datapaths (the
//! simulator) act on [`Datapath::arm`] and call back [`FlowDriver::on_timer`] and
//! [`FlowDriver::on_flush`]; polled ones (the kernel agent) ignore `arm` and call [`FlowDriver::poll`]
//! at [`FlowDriver::next_deadline`].
//!
//! An algorithm that installs a datapath program ([`sluice_cc::program`]) has its signals run through
//! the program instead of the fold and reporting policy: each signal updates the program's registers,
//! a `(report)` or `(urgent)` hands them to the algorithm ([`CongestionControl::on_report`]), and a
//! `(wake t)` takes the place of the fold's deadline.

use std::sync::Arc;

use sluice_cc::api::MAX_TIMERS;
use sluice_cc::program::{Input, Install, Machine, Outcome, Program, ProgramReport, MAX_REGISTERS};
use sluice_cc::{Ack, CongestionControl, Ctx, Decisions, Events, Feedback, FlowInfo, HostSignal, Loss, Sent, TimerId};
use sluice_core::{Rate, Time};

use crate::config::{Mode, PlaneConfig};
use crate::counters::PlaneCounters;
use crate::filter::Filters;
use crate::fold::Fold;
use crate::trigger::{Trigger, Urgency};

/// What a datapath does for a flow's driver.
pub trait Datapath {
    /// The datapath's clock, picoseconds.
    fn now(&self) -> Time;
    /// The plane settings the flow runs under.
    fn config(&self) -> &PlaneConfig;
    /// The flow's line rate (the rate filter's ceiling).
    fn line_rate(&self) -> Rate;
    /// The plane settings together with where the plane's work is counted.
    fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters);
    /// Where the plane's work is counted.
    fn counters(&mut self) -> &mut PlaneCounters {
        self.plane().1
    }
    /// Asks to be woken at `at`: an event-driven datapath calls [`FlowDriver::on_timer`] or
    /// [`FlowDriver::on_flush`] then (a stale wake is ignored there); a polled one may do nothing.
    fn arm(&mut self, wake: Wake, at: Time);
    /// Decisions take effect now: window, rate (the datapath caps it at its line rate) and probe requests.
    fn apply(&mut self, decisions: &Decisions);
    /// The algorithm just ran (for traces of its variables).
    fn ran(&mut self, _cc: &dyn CongestionControl) {}
    /// Offload mode: a due report leaves for the plane core. A datapath without a channel hands it back
    /// (the default), and the driver delivers it at once, as in native mode.
    fn send_report(&mut self, report: Fold) -> Option<Fold> {
        Some(report)
    }
    /// Offload mode: decisions leave the plane core for the datapath, where they take effect on arrival;
    /// without a channel (the default) they take effect at once.
    fn send_decisions(&mut self, decisions: Decisions) {
        self.apply(&decisions);
    }
    /// Offload mode: the algorithm ran on the plane core outside a report (a timer fired), which costs
    /// the core a service time; nothing without a channel (the default).
    fn charge_core(&mut self) {}
}

/// Why a datapath wakes a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Algorithm timer `id`, armed as generation `gen` (a later arm or a cancel makes it stale).
    Timer {
        /// The timer.
        id: u8,
        /// Its generation when armed.
        gen: u32,
    },
    /// The fold's deadline: report what waits even if the policy's period is not over.
    Flush,
}

/// One flow's algorithm with its plane state: fold, trigger, filters and timers.
#[derive(Default)]
pub struct FlowDriver {
    cc: Option<Box<dyn CongestionControl>>,
    events: Events,
    fold: Fold,
    trigger: Option<Trigger>,
    filters: Filters,
    /// How long a fold may wait for its period (`max_hold_rtts` base RTTs).
    hold: Time,
    /// A flush wake is armed for this time.
    flush_at: Option<Time>,
    timers: [Option<Time>; MAX_TIMERS],
    timer_gen: [u32; MAX_TIMERS],
    /// The programs the algorithm declared.
    programs: Vec<Arc<Program>>,
    /// The installed program with its registers, boxed: 32 registers would double the driver of every
    /// flow, which most flows never give a program.
    machine: Option<Box<Machine>>,
    /// The installed program reports every signal (a per-signal handler call in native mode).
    every_signal: bool,
    /// A signal reached the program since its last report.
    pending: bool,
    /// Installs so far ([`FlowDriver::installs`]).
    installs: u64,
    /// The flow's facts, for the programs' `Flow.*` fields.
    info: Option<FlowInfo>,
}

impl std::fmt::Debug for FlowDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowDriver")
            .field("running", &self.cc.is_some())
            .field("events", &self.events)
            .field("fold", &self.fold)
            .field("trigger", &self.trigger)
            .field("timers", &self.timers)
            .field("program", &self.machine.as_ref().map(|m| m.index()))
            .finish()
    }
}

impl FlowDriver {
    /// Starts `cc` for the flow `info` describes: its start handler runs, and its decisions take effect
    /// at once in either mode (the algorithm is set up with the flow, before its first packet) without
    /// passing the filters. The reporting policy is the one the algorithm declares after starting.
    pub fn start(&mut self, cc: Box<dyn CongestionControl>, info: &FlowInfo, dp: &mut impl Datapath) {
        self.events = cc.events();
        self.cc = Some(cc);
        self.hold = (info.base_rtt as f64 * dp.config().max_hold_rtts) as Time;
        self.info = Some(info.clone());
        let Some(d) = self.run(dp, |cc, ctx| cc.on_start(info, ctx)) else { return };
        self.programs = self.cc.as_ref().map(|cc| cc.programs()).unwrap_or_default();
        match d.install {
            Some(install) => self.install(install),
            None if !self.programs.is_empty() => self.install(Install::program(0)),
            None => {}
        }
        let policy = self.cc.as_ref().map(|cc| cc.report_policy()).unwrap_or_default();
        let mut trigger = Trigger::new(policy, dp.config().report);
        if let Some(policy) = d.report {
            trigger.set_policy(policy, dp.config().report);
        }
        self.trigger = Some(trigger);
        dp.apply(&d);
    }

    /// The flow ended: the algorithm is released and every pending wake goes stale.
    pub fn finish(&mut self) {
        self.cc = None;
        self.machine = None;
        self.timers = [None; MAX_TIMERS];
        for gen in &mut self.timer_gen {
            *gen = gen.wrapping_add(1);
        }
    }

    /// Whether an algorithm runs (started and not finished).
    pub fn running(&self) -> bool {
        self.cc.is_some()
    }

    /// The handlers the algorithm binds.
    pub fn events(&self) -> Events {
        self.events
    }

    /// The algorithm, for datapaths that look at its state without running it (cache prefetching).
    pub fn cc(&self) -> Option<&(dyn CongestionControl + 'static)> {
        self.cc.as_deref()
    }

    /// The algorithm, for datapath hooks outside the plane (per-packet flags).
    pub fn cc_mut(&mut self) -> Option<&mut (dyn CongestionControl + 'static)> {
        self.cc.as_deref_mut()
    }

    /// The fold waiting to be reported.
    pub fn fold(&self) -> &Fold {
        &self.fold
    }

    /// The installed program's number and registers, when the algorithm installed one.
    pub fn program(&self) -> Option<(u8, &[u64])> {
        self.machine.as_ref().map(|m| (m.index(), m.registers()))
    }

    /// The installed program itself, with its number and registers: what a datapath that runs programs
    /// itself installs (the registers are the initial values with the install's values, or where the
    /// driver's own interpreter left them).
    pub fn installed(&self) -> Option<(&Program, u8, &[u64])> {
        self.machine.as_ref().map(|m| (m.program(), m.index(), m.registers()))
    }

    /// How many installs (at start and by `ctx.install`, removals included) happened: a datapath that
    /// runs programs itself installs again when this moves.
    pub fn installs(&self) -> u64 {
        self.installs
    }

    /// The datapath ran the installed program itself and it reported `registers` (as they were before
    /// volatile ones reset) for program `program`: they reach the algorithm as the driver's own
    /// interpreter's reports do.
    pub fn on_program_report(&mut self, program: u8, registers: &[u64], urgent: bool, dp: &mut impl Datapath) {
        if self.cc.is_none() {
            return;
        }
        dp.counters().signals += 1;
        let n = registers.len().min(MAX_REGISTERS);
        let mut values = [0u64; MAX_REGISTERS];
        values[..n].copy_from_slice(&registers[..n]);
        let message_bytes = 16 + 8 * n as u32;
        self.pending = false;
        self.deliver_registers(program, &values[..n], urgent, message_bytes, dp);
    }

    /// Lengthens the aggregation period by `factor` (back-pressure from the channel), 1 restores it.
    pub fn set_stretch(&mut self, factor: u32) {
        if let Some(trigger) = self.trigger.as_mut() {
            trigger.set_stretch(factor);
        }
    }

    /// An ACK arrived; `cnp` when its echo counts as a congestion notification.
    pub fn on_ack(&mut self, ack: &Ack, cnp: bool, dp: &mut impl Datapath) {
        let counters = dp.counters();
        counters.signals += 1 + cnp as u64;
        counters.reordered += ack.reordered as u64;
        if self.machine.is_some() {
            self.program_signal(dp, |input| input.ack(ack, cnp));
            return;
        }
        if self.direct(dp) {
            let events = self.events;
            let d = self.run(dp, |cc, ctx| {
                if cnp && events.contains(Events::CNP) {
                    cc.on_cnp(ctx);
                }
                if events.contains(Events::ACK) {
                    cc.on_ack(ack, ctx);
                }
            });
            if let Some(d) = d {
                self.commit(d, dp);
            }
            return;
        }
        let now = dp.now();
        self.fold.add_ack(ack, now);
        if cnp {
            self.fold.add_cnp(now);
        }
        let urgency = if ack.ecn_echo || cnp { Urgency::Ecn } else { Urgency::Normal };
        self.folded(urgency, dp);
    }

    /// Data was sent (for algorithms that bind TX).
    pub fn on_sent(&mut self, sent: &Sent, dp: &mut impl Datapath) {
        self.signal(
            Urgency::Normal,
            dp,
            |cc, ctx| cc.on_sent(sent, ctx),
            |fold, at| fold.add_sent(sent, at),
            |input| input.sent(sent),
        );
    }

    /// A loss was detected.
    pub fn on_loss(&mut self, loss: &Loss, dp: &mut impl Datapath) {
        self.signal(
            Urgency::Loss,
            dp,
            |cc, ctx| cc.on_loss(loss, ctx),
            |fold, at| fold.add_loss(loss, at),
            |input| input.loss(loss),
        );
    }

    /// A congestion notification packet arrived.
    pub fn on_cnp(&mut self, dp: &mut impl Datapath) {
        self.signal(Urgency::Ecn, dp, |cc, ctx| cc.on_cnp(ctx), |fold, at| fold.add_cnp(at), Input::cnp);
    }

    /// Custom feedback arrived.
    pub fn on_feedback(&mut self, feedback: Feedback, dp: &mut impl Datapath) {
        self.signal(
            Urgency::Ecn,
            dp,
            |cc, ctx| cc.on_feedback(&feedback, ctx),
            |fold, at| fold.add_feedback(feedback, at),
            |input| input.feedback(&feedback),
        );
    }

    /// A host congestion signal was sampled.
    pub fn on_host(&mut self, signal: HostSignal, dp: &mut impl Datapath) {
        self.signal(
            Urgency::Normal,
            dp,
            |cc, ctx| cc.on_host(&signal, ctx),
            |fold, at| fold.add_host(signal, at),
            |input| input.host(&signal),
        );
    }

    /// An RTT probe came back after `rtt`.
    pub fn on_probe(&mut self, rtt: Time, dp: &mut impl Datapath) {
        self.signal(
            Urgency::Normal,
            dp,
            |cc, ctx| cc.on_probe(rtt, ctx),
            |fold, at| fold.add_probe(rtt, at),
            |input| input.probe(rtt),
        );
    }

    /// Signals the datapath folded itself (`fold` adds them, e.g. from a report that already aggregates
    /// many ACKs): reported when due, never handed over one by one. A datapath that folds signals runs
    /// an installed program itself ([`FlowDriver::on_program_report`]) or hands them over one by one
    /// ([`FlowDriver::on_ack`], [`FlowDriver::on_loss`]); folded signals go to the fixed engines.
    pub fn on_folded(&mut self, urgency: Urgency, dp: &mut impl Datapath, fold: impl FnOnce(&mut Fold, Time)) {
        fold(&mut self.fold, dp.now());
        self.folded(urgency, dp);
    }

    /// A wake for algorithm timer `id` armed as `gen`: the algorithm's timer handler runs unless the wake
    /// is stale. Returns whether it ran.
    pub fn on_timer(&mut self, id: u8, gen: u32, dp: &mut impl Datapath) -> bool {
        if self.cc.is_none() || self.timer_gen[id as usize] != gen {
            return false;
        }
        self.fire_timer(id, dp);
        true
    }

    /// The fold's deadline wake: what waits is reported. Returns whether a report went out.
    /// With a program installed, the wake its `(wake t)` asked for: the program runs on a tick signal
    /// if a signal reached it since its last report.
    pub fn on_flush(&mut self, dp: &mut impl Datapath) -> bool {
        self.flush_at = None;
        if self.machine.is_some() {
            if !self.pending || self.cc.is_none() {
                return false;
            }
            return self.run_program(dp, Input::tick);
        }
        if self.fold.is_empty() || self.cc.is_none() {
            return false;
        }
        self.report(dp);
        true
    }

    /// Polled datapaths: runs due timers and reports a fold that waited past its deadline.
    pub fn poll(&mut self, dp: &mut impl Datapath) {
        let now = dp.now();
        for id in 0..MAX_TIMERS {
            if self.cc.is_some() && self.timers[id].is_some_and(|at| at <= now) {
                self.fire_timer(id as u8, dp);
            }
        }
        if self.machine.is_some() {
            if self.flush_at.is_some_and(|at| at <= now) {
                self.on_flush(dp);
            }
            return;
        }
        let deadline = self.trigger.as_ref().and_then(|t| t.deadline(&self.fold, self.hold));
        if self.cc.is_some() && !self.fold.is_empty() && deadline.is_some_and(|at| at <= now) {
            self.flush_at = None;
            self.report(dp);
        }
    }

    /// The earliest time [`FlowDriver::poll`] has work.
    pub fn next_deadline(&self) -> Option<Time> {
        let timers = self.timers.iter().flatten().copied().min();
        let flush = match self.machine {
            Some(_) => self.flush_at.filter(|_| self.pending),
            None => self.trigger.as_ref().and_then(|t| t.deadline(&self.fold, self.hold)),
        };
        match (timers, flush) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Offload mode: a report that crossed the channel reaches the algorithm on the plane core.
    pub fn deliver(&mut self, report: &Fold, dp: &mut impl Datapath) {
        let events = self.events;
        if let Some(d) = self.run(dp, |cc, ctx| report.deliver(cc, events, ctx)) {
            self.commit(d, dp);
        }
    }

    fn fire_timer(&mut self, id: u8, dp: &mut impl Datapath) {
        self.timers[id as usize] = None;
        if dp.config().mode == Mode::Offload {
            dp.charge_core();
        }
        if let Some(d) = self.run(dp, |cc, ctx| cc.on_timer(TimerId(id), ctx)) {
            self.commit(d, dp);
        }
    }

    /// Whether signals go straight to the handlers: native mode with per-event reporting.
    fn direct(&self, dp: &impl Datapath) -> bool {
        dp.config().mode == Mode::Native && self.trigger.as_ref().is_some_and(|t| t.per_event())
    }

    /// One signal: handed straight to the algorithm (`direct`) when its reports are per event in native
    /// mode, else folded (`fold`) and reported when due.
    fn signal(
        &mut self,
        urgency: Urgency,
        dp: &mut impl Datapath,
        direct: impl FnOnce(&mut dyn CongestionControl, &mut Ctx),
        fold: impl FnOnce(&mut Fold, Time),
        input: impl FnOnce(Input) -> Input,
    ) {
        dp.counters().signals += 1;
        if self.machine.is_some() {
            self.program_signal(dp, input);
            return;
        }
        if self.direct(dp) {
            if let Some(d) = self.run(dp, direct) {
                self.commit(d, dp);
            }
            return;
        }
        self.on_folded(urgency, dp, fold);
    }

    /// A signal was folded: report if due, else make sure the fold is flushed by its deadline.
    fn folded(&mut self, urgency: Urgency, dp: &mut impl Datapath) {
        let Some(trigger) = self.trigger.as_ref() else { return };
        if self.fold.is_empty() {
            return;
        }
        if trigger.due(&self.fold, urgency, dp.now()) {
            if trigger.urgent(urgency) {
                dp.counters().urgent_reports += 1;
            }
            self.report(dp);
            return;
        }
        if let (Some(at), None) = (trigger.deadline(&self.fold, self.hold), self.flush_at) {
            self.flush_at = Some(at);
            dp.arm(Wake::Flush, at);
        }
    }

    /// The fold is due: the algorithm gets it now (native) or after the channel (offload). In native mode
    /// the fold's buffers are kept for the next period.
    fn report(&mut self, dp: &mut impl Datapath) {
        let report = std::mem::take(&mut self.fold);
        if let Some(trigger) = self.trigger.as_mut() {
            trigger.reported(&report);
        }
        self.hand_over(report, Fold::message_bytes, dp);
    }

    /// A report leaves the fold: through the channel in offload mode (which may keep it), counted with
    /// the size `message_bytes` gives, delivered, and its buffers kept for the next period.
    fn hand_over(&mut self, report: Fold, message_bytes: impl FnOnce(&Fold) -> u32, dp: &mut impl Datapath) {
        let report = match dp.config().mode {
            Mode::Native => report,
            Mode::Offload => match dp.send_report(report) {
                Some(report) => report,
                None => return,
            },
        };
        let counters = dp.counters();
        counters.reports += 1;
        counters.message_bytes += message_bytes(&report) as u64;
        self.deliver(&report, dp);
        if self.fold.is_empty() {
            self.fold = report;
            self.fold.clear();
        }
    }

    /// Calls `call` on the algorithm and returns its decisions; timer requests take effect at once
    /// (timers live with the algorithm). `None` when no algorithm runs.
    fn run(
        &mut self,
        dp: &mut impl Datapath,
        call: impl FnOnce(&mut dyn CongestionControl, &mut Ctx),
    ) -> Option<Decisions> {
        let cc = self.cc.as_deref_mut()?;
        let mut ctx = Ctx::new(dp.now());
        call(cc, &mut ctx);
        let d = *ctx.decisions();
        for i in 0..MAX_TIMERS {
            if d.cancel_timers[i] || d.set_timers[i].is_some() {
                self.timer_gen[i] = self.timer_gen[i].wrapping_add(1);
                self.timers[i] = None;
            }
            if let Some(at) = d.set_timers[i] {
                self.timers[i] = Some(at);
                dp.arm(Wake::Timer { id: i as u8, gen: self.timer_gen[i] }, at);
            }
        }
        dp.ran(cc);
        Some(d)
    }

    /// Installs one of the declared programs afresh; an index the algorithm did not declare removes the
    /// program (the fold and reporting policy report again).
    fn install(&mut self, install: Install) {
        self.pending = false;
        self.installs += 1;
        self.machine = self
            .programs
            .get(install.program as usize)
            .map(|program| Box::new(Machine::new(Arc::clone(program), install.program, install.values())));
        self.every_signal = self.machine.as_ref().is_some_and(|m| m.program().reports_every_signal());
    }

    /// A signal for the installed program: `input` adds the signal's fields.
    fn program_signal(&mut self, dp: &mut impl Datapath, input: impl FnOnce(Input) -> Input) {
        if self.cc.is_none() {
            return;
        }
        self.run_program(dp, input);
    }

    /// Runs the program on one signal; reports if it says so, else arms its wake unless one is armed
    /// (as a fold's deadline is). Returns whether it reported.
    fn run_program(&mut self, dp: &mut impl Datapath, input: impl FnOnce(Input) -> Input) -> bool {
        let (Some(machine), Some(info)) = (self.machine.as_mut(), self.info.as_ref()) else { return false };
        let outcome: Outcome = machine.run(&input(Input::at(dp.now(), info)));
        self.pending = true;
        if outcome.report {
            self.program_report(outcome.urgent, dp);
            return true;
        }
        if let (Some(at), None) = (outcome.wake, self.flush_at) {
            self.flush_at = Some(at);
            dp.arm(Wake::Flush, at);
        }
        false
    }

    /// The program reported: its registers go to the algorithm, at once in native mode (a program that
    /// reports every signal is then a handler call and counts no message, as a per-ACK policy does),
    /// through the channel in offload mode; volatile registers start again.
    fn program_report(&mut self, urgent: bool, dp: &mut impl Datapath) {
        let Some(machine) = self.machine.as_mut() else { return };
        self.pending = false;
        let index = machine.index();
        let mut values = [0u64; MAX_REGISTERS];
        let n = machine.registers().len();
        values[..n].copy_from_slice(machine.registers());
        let message_bytes = machine.program().message_bytes();
        machine.reset_volatile();
        self.deliver_registers(index, &values[..n], urgent, message_bytes, dp);
    }

    /// Program `index` reported `values`: they go to the algorithm, at once in native mode (a program
    /// that reports every signal is then a handler call and counts no message, as a per-ACK policy
    /// does), through the channel in offload mode.
    fn deliver_registers(
        &mut self,
        index: u8,
        values: &[u64],
        urgent: bool,
        message_bytes: u32,
        dp: &mut impl Datapath,
    ) {
        let n = values.len();
        let native = dp.config().mode == Mode::Native;
        if native && self.every_signal {
            let report = ProgramReport { program: index, registers: &values[..n], urgent };
            if let Some(d) = self.run(dp, |cc, ctx| cc.on_report(&report, ctx)) {
                self.commit(d, dp);
            }
            return;
        }
        if urgent {
            dp.counters().urgent_reports += 1;
        }
        let mut report = std::mem::take(&mut self.fold);
        report.program = Some(index);
        report.registers.extend_from_slice(&values[..n]);
        report.urgent = urgent;
        report.signals = 1;
        report.first_at = Some(dp.now());
        self.hand_over(report, |_| message_bytes, dp);
    }

    /// Decisions made now: report-policy changes and program installs take effect at once; the rest
    /// passes the filters and goes to the datapath (at once in native mode, through the channel in
    /// offload mode).
    fn commit(&mut self, mut d: Decisions, dp: &mut impl Datapath) {
        if let (Some(policy), Some(trigger)) = (d.report, self.trigger.as_mut()) {
            trigger.set_policy(policy, dp.config().report);
        }
        if let Some(install) = d.install {
            self.install(install);
        }
        let line_rate = dp.line_rate();
        let (config, counters) = dp.plane();
        self.filters.apply(&mut d, line_rate, config, counters);
        if d.cwnd.is_none() && d.rate.is_none() && !d.probe {
            return;
        }
        match dp.config().mode {
            Mode::Native => dp.apply(&d),
            Mode::Offload => dp.send_decisions(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cc::{ReportEvery, ReportPolicy};

    /// Grows the window by the bytes each ACK call acknowledges, arms timer 0 at start, halves the
    /// window on its timer and on losses; reports per `every`.
    struct Counting {
        every: ReportEvery,
        cwnd: u64,
        acks_seen: Vec<u32>,
    }

    impl CongestionControl for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn events(&self) -> Events {
            Events::ACK | Events::LOSS | Events::TIMER
        }
        fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut Ctx) {
            ctx.set_cwnd(self.cwnd);
            ctx.set_timer(TimerId(0), 1_000);
        }
        fn on_ack(&mut self, ack: &Ack<'_>, ctx: &mut Ctx) {
            self.acks_seen.push(ack.acks);
            self.cwnd += ack.acked_bytes;
            ctx.set_cwnd(self.cwnd);
        }
        fn on_loss(&mut self, _loss: &Loss, ctx: &mut Ctx) {
            self.cwnd /= 2;
            ctx.set_cwnd(self.cwnd);
        }
        fn on_timer(&mut self, _id: TimerId, ctx: &mut Ctx) {
            self.cwnd /= 2;
            ctx.set_cwnd(self.cwnd);
        }
        fn report_policy(&self) -> ReportPolicy {
            ReportPolicy { every: self.every, urgent_loss: true, urgent_ecn: false }
        }
    }

    /// A datapath that records what the driver asked of it.
    #[derive(Default)]
    struct Recorder {
        now: Time,
        config: PlaneConfig,
        counters: PlaneCounters,
        wakes: Vec<(Wake, Time)>,
        applied: Vec<Decisions>,
        sent_reports: Vec<Fold>,
        sent_decisions: Vec<Decisions>,
        charged: u32,
        channel: bool,
    }

    impl Datapath for Recorder {
        fn now(&self) -> Time {
            self.now
        }
        fn config(&self) -> &PlaneConfig {
            &self.config
        }
        fn line_rate(&self) -> Rate {
            10_000_000_000
        }
        fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters) {
            (&self.config, &mut self.counters)
        }
        fn arm(&mut self, wake: Wake, at: Time) {
            self.wakes.push((wake, at));
        }
        fn apply(&mut self, d: &Decisions) {
            self.applied.push(*d);
        }
        fn send_report(&mut self, report: Fold) -> Option<Fold> {
            if !self.channel {
                return Some(report);
            }
            self.sent_reports.push(report);
            None
        }
        fn send_decisions(&mut self, d: Decisions) {
            self.sent_decisions.push(d);
        }
        fn charge_core(&mut self) {
            self.charged += 1;
        }
    }

    fn info() -> FlowInfo {
        FlowInfo {
            flow_id: 1,
            mss: 1000,
            header_bytes: 48,
            line_rate: 10_000_000_000,
            base_rtt: 10_000,
            hops: 1,
            size: None,
            start: 0,
        }
    }

    fn started(every: ReportEvery, dp: &mut Recorder) -> FlowDriver {
        let mut driver = FlowDriver::default();
        let cc = Counting { every, cwnd: 10_000, acks_seen: Vec::new() };
        driver.start(Box::new(cc), &info(), dp);
        driver
    }

    fn ack(at: Time) -> Ack<'static> {
        Ack::single(1000, 1, false, None, 0, 10_000, 9_000, at)
    }

    fn loss() -> Loss {
        Loss { kind: sluice_cc::LossKind::FastRetransmit, count: 1, in_flight: 9_000, snd_nxt: 10_000 }
    }

    #[test]
    fn start_applies_unfiltered_and_arms_the_timer() {
        let mut dp = Recorder::default();
        let driver = started(ReportEvery::Ack, &mut dp);
        assert!(driver.running());
        assert_eq!(dp.applied.len(), 1);
        assert_eq!(dp.applied[0].cwnd, Some(10_000));
        assert_eq!(dp.wakes, [(Wake::Timer { id: 0, gen: 1 }, 1_000)]);
        assert_eq!(dp.counters.decisions, 0, "start decisions skip the filters");
        assert_eq!(driver.next_deadline(), Some(1_000));
    }

    #[test]
    fn per_ack_reports_go_straight_to_the_algorithm() {
        let mut dp = Recorder::default();
        let mut driver = started(ReportEvery::Ack, &mut dp);
        for t in 1..=3 {
            dp.now = t;
            driver.on_ack(&ack(t), false, &mut dp);
        }
        let cwnds: Vec<_> = dp.applied.iter().map(|d| d.cwnd).collect();
        assert_eq!(cwnds, [Some(10_000), Some(11_000), Some(12_000), Some(13_000)]);
        assert!(driver.fold().is_empty(), "nothing folded");
        assert_eq!((dp.counters.signals, dp.counters.reports), (3, 0));
    }

    #[test]
    fn folded_acks_are_reported_when_due_and_the_fold_keeps_its_buffers() {
        let mut dp = Recorder::default();
        let mut driver = started(ReportEvery::Acks(2), &mut dp);
        dp.now = 5;
        let samples = [7_000; 64];
        let with_samples = Ack { rtt_samples: &samples, ..ack(5) };
        driver.on_ack(&with_samples, false, &mut dp);
        assert_eq!(dp.applied.len(), 1, "one ACK of two: nothing yet");
        assert_eq!(dp.wakes.last(), Some(&(Wake::Flush, 5 + 10_000)), "flush one base RTT after the first");
        driver.on_ack(&ack(6), false, &mut dp);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(12_000), "both ACKs in one report");
        assert_eq!(dp.counters.reports, 1);
        assert!(driver.fold().is_empty());
        assert!(driver.fold().rtt_samples.capacity() >= 64, "the report's buffers are reused");
    }

    #[test]
    fn losses_are_urgent_and_a_flush_reports_what_waits() {
        let mut dp = Recorder::default();
        let mut driver = started(ReportEvery::Acks(8), &mut dp);
        driver.on_ack(&ack(0), false, &mut dp);
        driver.on_loss(&loss(), &mut dp);
        assert_eq!(dp.counters.urgent_reports, 1);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(6_000), "one report: the loss, then the ACK");
        driver.on_ack(&ack(1), false, &mut dp);
        dp.now = 20_000;
        assert!(driver.on_flush(&mut dp), "the waiting ACK is reported");
        assert!(!driver.on_flush(&mut dp), "nothing left to flush");
    }

    #[test]
    fn stale_timer_wakes_are_ignored() {
        let mut dp = Recorder::default();
        let mut driver = started(ReportEvery::Ack, &mut dp);
        assert!(!driver.on_timer(0, 0, &mut dp), "an older generation");
        dp.now = 1_000;
        assert!(driver.on_timer(0, 1, &mut dp));
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(5_000));
        driver.finish();
        assert!(!driver.running());
        assert!(!driver.on_timer(0, 1, &mut dp), "a finished flow's timers are stale");
        assert_eq!(driver.next_deadline(), None);
    }

    #[test]
    fn polling_fires_due_timers_and_flushes_late_folds() {
        let mut dp = Recorder::default();
        let mut driver = started(ReportEvery::Acks(4), &mut dp);
        dp.now = 500;
        driver.on_ack(&ack(500), false, &mut dp);
        assert_eq!(driver.next_deadline(), Some(1_000), "the timer comes before the flush");
        driver.poll(&mut dp);
        assert_eq!(dp.applied.len(), 1, "nothing due yet");
        dp.now = 1_000;
        driver.poll(&mut dp);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(5_000), "the timer fired");
        assert_eq!(driver.next_deadline(), Some(500 + 10_000));
        dp.now = 10_500;
        driver.poll(&mut dp);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(6_000), "the fold was reported");
        assert_eq!(driver.next_deadline(), None);
    }

    #[test]
    fn offload_sends_reports_and_decisions_through_the_channel() {
        let mut dp = Recorder { channel: true, ..Recorder::default() };
        dp.config.mode = Mode::Offload;
        let mut driver = started(ReportEvery::Ack, &mut dp);
        assert_eq!(dp.applied.len(), 1, "start decisions apply at once in either mode");
        driver.on_ack(&ack(0), false, &mut dp);
        assert_eq!(dp.sent_reports.len(), 1, "per-ACK reports still cross the channel");
        assert_eq!(dp.counters.reports, 0, "the channel counts what it carries");
        let report = dp.sent_reports.pop().unwrap();
        driver.deliver(&report, &mut dp);
        assert_eq!(dp.sent_decisions.last().and_then(|d| d.cwnd), Some(11_000));
        dp.now = 1_000;
        driver.on_timer(0, 1, &mut dp);
        assert_eq!(dp.charged, 1, "a timer runs on the plane core");
    }

    #[test]
    fn offload_without_a_channel_delivers_at_once() {
        let mut dp = Recorder::default();
        dp.config.mode = Mode::Offload;
        let mut driver = started(ReportEvery::Ack, &mut dp);
        driver.on_ack(&ack(0), false, &mut dp);
        assert_eq!(dp.counters.reports, 1);
        assert_eq!(dp.sent_decisions.last().and_then(|d| d.cwnd), Some(11_000));
    }

    /// Counts ACK bytes through a program: reports every `limit` bytes (a control register), losses
    /// urgent, and a wake 100 ps after the period's first signal; switches to program 1 on a loss.
    struct Programmed {
        programs: Vec<Arc<Program>>,
        reports: Vec<(u8, Vec<u64>, bool)>,
    }

    const BYTES: &str = "(def (Report (volatile acked 0) (volatile first 0) (volatile n 0)) (Control (limit 3000)))
        (when true (:= Report.first (if Report.n Report.first Now)) (:= Report.n (+ Report.n 1)) (fallthrough))
        (when Event.loss (urgent))
        (when Event.tick (report))
        (when Event.ack (:= Report.acked (+ Report.acked Ack.bytes_acked)) (fallthrough))
        (when (>= Report.acked Control.limit) (report))
        (when true (wake (+ Report.first 100)))";

    impl Programmed {
        fn new() -> Programmed {
            let every = "(def (Report (volatile acked 0))) (when true (:= Report.acked Ack.bytes_acked) (report))";
            let programs = [BYTES, every].map(|t| Arc::new(Program::parse(t).unwrap())).to_vec();
            Programmed { programs, reports: Vec::new() }
        }
    }

    impl CongestionControl for Programmed {
        fn name(&self) -> &'static str {
            "programmed"
        }
        fn events(&self) -> Events {
            Events::ACK | Events::LOSS
        }
        fn on_start(&mut self, _flow: &FlowInfo, ctx: &mut Ctx) {
            ctx.install(Install::program(0).with(3, 2000));
        }
        fn on_ack(&mut self, _ack: &Ack<'_>, _ctx: &mut Ctx) {
            panic!("a program's signals reach on_report only");
        }
        fn programs(&self) -> Vec<Arc<Program>> {
            self.programs.clone()
        }
        fn on_report(&mut self, report: &ProgramReport<'_>, ctx: &mut Ctx) {
            self.reports.push((report.program, report.registers.to_vec(), report.urgent));
            ctx.set_cwnd(report.registers[0]);
            if report.urgent {
                ctx.install(Install::program(1));
            }
        }
    }

    fn programmed(dp: &mut Recorder) -> FlowDriver {
        let mut driver = FlowDriver::default();
        driver.start(Box::new(Programmed::new()), &info(), dp);
        driver
    }

    #[test]
    fn a_program_folds_reports_wakes_and_is_replaced_at_run_time() {
        let mut dp = Recorder::default();
        let mut driver = programmed(&mut dp);
        assert_eq!(driver.program(), Some((0, &[0, 0, 0, 2000][..])), "installed with its control value");
        dp.now = 10;
        driver.on_ack(&ack(10), false, &mut dp);
        assert_eq!(dp.wakes, [(Wake::Flush, 110)], "the program's wake, 100 after the first signal");
        dp.now = 20;
        driver.on_ack(&ack(20), false, &mut dp);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(2000), "2000 bytes reach the limit");
        assert_eq!((dp.counters.reports, dp.counters.message_bytes), (1, 16 + 4 * 8));
        assert_eq!(driver.program(), Some((0, &[0, 0, 0, 2000][..])), "volatile registers start again");
        dp.now = 30;
        driver.on_ack(&ack(30), false, &mut dp);
        assert_eq!(dp.wakes.len(), 1, "a wake is armed already");
        dp.now = 110;
        assert!(driver.on_flush(&mut dp), "the wake reports what waits");
        assert!(!driver.on_flush(&mut dp), "nothing waits");
        driver.on_loss(&loss(), &mut dp);
        assert_eq!(dp.counters.urgent_reports, 1);
        assert_eq!(driver.program().map(|p| p.0), Some(1), "the algorithm installed program 1");
        let reports = dp.counters.reports;
        dp.now = 120;
        driver.on_ack(&ack(120), false, &mut dp);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(1000), "program 1 reports every ACK");
        assert_eq!(dp.counters.reports, reports, "a per-signal program is a handler call in native mode");
        assert_eq!(dp.counters.signals, 5);
    }

    #[test]
    fn offload_carries_program_reports_through_the_channel() {
        let mut dp = Recorder { channel: true, ..Recorder::default() };
        dp.config.mode = Mode::Offload;
        let mut driver = programmed(&mut dp);
        driver.on_loss(&loss(), &mut dp);
        assert_eq!(dp.sent_reports.len(), 1);
        let report = dp.sent_reports.pop().unwrap();
        assert_eq!((report.program, report.urgent, report.message_bytes()), (Some(0), true, 48));
        assert!(!report.mergeable(), "register values do not merge");
        driver.deliver(&report, &mut dp);
        assert_eq!(driver.program().map(|p| p.0), Some(1));
        driver.on_ack(&ack(0), false, &mut dp);
        assert_eq!(dp.sent_reports.len(), 1, "per-signal reports cross the channel in offload mode");
    }

    #[test]
    fn a_datapath_that_folds_itself_keeps_the_program() {
        let mut dp = Recorder::default();
        let mut driver = FlowDriver::default();
        let cc = Counting { every: ReportEvery::Acks(2), cwnd: 10_000, acks_seen: Vec::new() };
        driver.start(Box::new(cc), &info(), &mut dp);
        assert_eq!(driver.program(), None, "no programs declared: the fold and policy report");
        let mut programmed = programmed(&mut dp);
        programmed.on_folded(Urgency::Normal, &mut dp, |fold, at| fold.add_loss(&loss(), at));
        assert_eq!(programmed.program().map(|p| p.0), Some(0), "the program stays for the datapath to run");
    }

    #[test]
    fn a_datapath_that_runs_the_program_itself_hands_its_reports_over() {
        let mut dp = Recorder::default();
        let mut driver = programmed(&mut dp);
        assert_eq!(driver.installs(), 1);
        let (program, index, registers) = driver.installed().unwrap();
        assert_eq!((program.registers().len(), index, registers[3]), (4, 0, 2000), "the install's values");
        driver.on_program_report(0, &[2500, 7, 1, 2000], false, &mut dp);
        assert_eq!(dp.counters.reports, 1);
        assert_eq!(dp.applied.last().and_then(|d| d.cwnd), Some(2500), "the algorithm read the registers");
        driver.on_program_report(0, &[100, 7, 1, 2000], true, &mut dp);
        assert_eq!(driver.program().map(|p| p.0), Some(1), "the urgent report installed program 1");
        assert_eq!(driver.installs(), 2);
        assert_eq!(dp.counters.reports, 2);
    }
}
