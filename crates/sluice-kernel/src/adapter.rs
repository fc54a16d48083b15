//! One kernel flow's side of the plane: reports from the BPF side become folded signals of the flow's
//! [`FlowDriver`] (the same driver the other datapaths use), which hands them to the algorithm when its
//! reporting policy says so; the decisions that pass the plane's filters become a [`Decision`] for the
//! BPF side. The agent polls the driver (timers, fold deadlines) instead of arming wakes.
//!
//! A flow whose algorithm installs a datapath program runs it on the BPF side: the adapter hands the
//! program (at the flow's start and at every `ctx.install`) to the agent to write, and the program's
//! reports go to the algorithm's `on_report`. Until the BPF side runs it, and when it cannot, the
//! flow's folded reports run through the driver's own interpreter (each as one ACK and its losses).

use std::sync::Arc;

use sluice_cc::registry::Factory;
use sluice_cc::{Ack, Decisions, FlowInfo, Loss, LossKind};
use sluice_core::{Rate, Time, PS_PER_S, PS_PER_US};
use sluice_plane::trigger::Urgency;
use sluice_plane::{Datapath, FlowDriver, Fold, PlaneConfig, PlaneCounters, Wake};

use crate::codec::{Decision, ProgramReport, Report, D_CWND, D_PROGRAM, D_RATE, F_URGENT};
use crate::program::Install;

/// Bytes of headers per segment on the wire: IPv4 (20) + TCP with timestamps (32) + Ethernet (14).
pub const HEADER_BYTES: u32 = 66;
/// Smallest window sent to the kernel, packets. 2: RFC 5681 eq. 4 and Linux `tcp_reno_ssthresh` floor.
pub const MIN_CWND_PACKETS: u32 = 2;
/// Window given to rate-only algorithms, in rate-delay products, so that the window never limits them
/// (TIMELY and DCQCN run without a window; Mittal et al. SIGCOMM'15 section 5).
pub const RATE_ONLY_WINDOW_RTTS: u64 = 2;
/// Window of a rate-only flow before its first RTT sample, packets (Linux `TCP_INIT_CWND`, RFC 6928).
pub const INIT_CWND_PACKETS: u32 = 10;

/// Why a report was not handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// Its sequence number is not newer than one already handled.
    Stale,
    /// A program report of an install that is not the flow's current one on the BPF side (an earlier
    /// program, or one this agent did not write): its registers are not handed to the algorithm.
    OtherInstall,
}

/// The window and rate in force, and whether the BPF side is owed a decision.
#[derive(Debug, Default)]
struct Answer {
    cwnd: Option<u64>,
    rate: Option<Rate>,
    owed: bool,
}

/// The kernel datapath for one call into a flow's driver.
struct KernelPath<'a> {
    now: Time,
    line_rate: Rate,
    config: &'a PlaneConfig,
    counters: &'a mut PlaneCounters,
    answer: &'a mut Answer,
}

impl Datapath for KernelPath<'_> {
    fn now(&self) -> Time {
        self.now
    }

    fn config(&self) -> &PlaneConfig {
        self.config
    }

    fn line_rate(&self) -> Rate {
        self.line_rate
    }

    fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters) {
        (self.config, self.counters)
    }

    /// The agent polls every flow at its next deadline, so wakes need no bookkeeping here.
    fn arm(&mut self, _wake: Wake, _at: Time) {}

    fn apply(&mut self, d: &Decisions) {
        if d.cwnd.is_some() {
            self.answer.cwnd = d.cwnd;
            self.answer.owed = true;
        }
        if d.rate.is_some() {
            self.answer.rate = d.rate;
            self.answer.owed = true;
        }
    }
}

/// The plane state and controller of one kernel flow.
pub struct FlowAdapter {
    /// The algorithm's name.
    pub algorithm: String,
    driver: FlowDriver,
    rate_only: bool,
    answer: Answer,
    last_report: u32,
    decision_seq: u32,
    mss: u32,
    srtt_us: u32,
    /// When the BPF side sent the oldest report still waiting for an answer (its `now_ns`, CLOCK_MONOTONIC
    /// ns; 0: none waits). The BPF side's watchdog clock starts there too: an answer covers every report
    /// before it, so timing only the newest would hide a drain that came late.
    oldest_unanswered_ns: u64,
    /// Reports this flow handled.
    pub reports: u64,
    /// The driver's install count when the adapter last handed the program over.
    installs_seen: u64,
    /// The install the BPF side runs (written and turned on by the decisions), if any.
    live_install: Option<u32>,
    base_rtt: Time,
    line_rate: Rate,
}

impl FlowAdapter {
    /// A controller for a new flow (or one taken over from a previous agent), started at `now`.
    pub fn new(algorithm: String, factory: &Arc<dyn Factory>, info: &FlowInfo, plane: &PlaneConfig) -> FlowAdapter {
        let rate_only =
            sluice_cc::registry::lookup(&algorithm).is_some_and(|a| a.control == sluice_cc::registry::Control::Rate);
        let mut flow = FlowAdapter {
            algorithm,
            driver: FlowDriver::default(),
            rate_only,
            answer: Answer { owed: true, ..Answer::default() },
            last_report: 0,
            decision_seq: 0,
            mss: info.mss.max(1),
            srtt_us: 0,
            oldest_unanswered_ns: 0,
            reports: 0,
            installs_seen: 0,
            live_install: None,
            base_rtt: info.base_rtt,
            line_rate: info.line_rate,
        };
        let mut counters = PlaneCounters::default();
        let mut dp = KernelPath {
            now: info.start,
            line_rate: info.line_rate,
            config: plane,
            counters: &mut counters,
            answer: &mut flow.answer,
        };
        flow.driver.start(factory.create(info), info, &mut dp);
        flow
    }

    /// The static facts the algorithm gets about a kernel flow first seen in `report`. The base RTT is the
    /// RTT the kernel measured for the socket (the handshake's, in a start report) when it has one, and
    /// the configured `base_rtt` only otherwise: algorithms seed their minimum-RTT filters with it (BBR's
    /// RTprop plays Linux's handshake RTT), so a configured value below the path's real RTT would stay
    /// their minimum and shrink their window to a fraction of the path's BDP.
    pub fn info(report: &Report, line_rate: Rate, base_rtt: Time, now: Time) -> FlowInfo {
        let measured = report.srtt_us as Time * PS_PER_US;
        FlowInfo {
            flow_id: report.flow_id,
            mss: report.mss.max(1),
            header_bytes: HEADER_BYTES,
            line_rate,
            base_rtt: if measured > 0 { measured } else { base_rtt },
            hops: 1,
            size: None,
            start: now,
        }
    }

    /// Takes report number `seq`, made at `now_ns` by the BPF side with the flow's `mss` and `srtt_us`,
    /// unless it is older than one already taken: it is owed an answer.
    fn take(&mut self, seq: u32, now_ns: u64, mss: u32, srtt_us: u32) -> Result<(), Rejected> {
        if seq <= self.last_report {
            return Err(Rejected::Stale);
        }
        self.last_report = seq;
        if self.oldest_unanswered_ns == 0 {
            self.oldest_unanswered_ns = now_ns.max(1);
        }
        self.answer.owed = true;
        self.reports += 1;
        self.mss = mss.max(1);
        self.srtt_us = srtt_us;
        Ok(())
    }

    /// Folds a report; hands the fold to the algorithm when its policy says so.
    pub fn on_report(
        &mut self,
        r: &Report,
        now: Time,
        line_rate: Rate,
        plane: &PlaneConfig,
        counters: &mut PlaneCounters,
    ) -> Result<(), Rejected> {
        self.take(r.seq, r.now_ns, r.mss, r.srtt_us)?;
        let urgency = urgency_of(r);
        let mss = self.mss;
        let mut dp = KernelPath { now, line_rate, config: plane, counters, answer: &mut self.answer };
        if self.driver.program().is_some() {
            // The program has not reached the BPF side (or cannot): the driver runs it on the report's
            // losses and its ACKs as one, as the BPF side does with what it folded when it takes a program.
            let in_flight = r.in_flight_pkts as u64 * mss as u64;
            for (count, kind) in [(r.losses, LossKind::FastRetransmit), (r.rtos, LossKind::Timeout)] {
                if count > 0 {
                    self.driver.on_loss(&Loss { kind, count, in_flight, snd_nxt: r.snd_nxt }, &mut dp);
                }
            }
            if r.acks > 0 {
                let samples = samples_of(r);
                self.driver.on_ack(&ack_of(r, mss, &samples), false, &mut dp);
            }
            return Ok(());
        }
        dp.counters.signals += r.losses as u64 + r.rtos as u64 + r.acks as u64;
        dp.counters.reordered += if r.acks > 0 { r.reorders as u64 } else { 0 };
        self.driver.on_folded(urgency, &mut dp, |fold, at| fold_report(fold, r, mss, at));
        Ok(())
    }

    /// A report of the flow's program from the BPF side: its registers go to the algorithm when the
    /// program is the flow's current install.
    pub fn on_program_report(
        &mut self,
        r: &ProgramReport,
        now: Time,
        line_rate: Rate,
        plane: &PlaneConfig,
        counters: &mut PlaneCounters,
    ) -> Result<(), Rejected> {
        self.take(r.seq, r.now_ns, r.mss, r.srtt_us)?;
        if self.live_install != Some(r.install) {
            return Err(Rejected::OtherInstall);
        }
        let mut dp = KernelPath { now, line_rate, config: plane, counters, answer: &mut self.answer };
        dp.counters.signals += (r.signals as u64).saturating_sub(1);
        self.driver.on_program_report(r.index, &r.registers, r.flags & F_URGENT != 0, &mut dp);
        Ok(())
    }

    /// The program to write to the BPF side for flow `flow_id` when the algorithm installed one since
    /// the last call (numbered `next`, which then advances). A removal (an index the algorithm did not
    /// declare) turns the BPF side's program off with the next decision. An error names why the
    /// program cannot run there; the driver then runs it on the folded reports.
    pub fn install(&mut self, flow_id: u64, next: &mut u32) -> Option<Result<Install, String>> {
        if self.driver.installs() == self.installs_seen {
            return None;
        }
        self.installs_seen = self.driver.installs();
        self.live_install = None;
        self.answer.owed = true;
        let installed = self.driver.installed()?;
        *next = next.wrapping_add(1).max(1);
        Some(Install::new(flow_id, *next, installed, self.base_rtt, self.line_rate))
    }

    /// Install `install` was written to the BPF side (`ok`) or not: the next decision turns it on.
    pub fn installed(&mut self, install: u32, ok: bool) {
        self.live_install = ok.then_some(install);
        self.answer.owed = true;
    }

    /// Runs due timers and reports a fold that waited past its deadline.
    pub fn poll(&mut self, now: Time, line_rate: Rate, plane: &PlaneConfig, counters: &mut PlaneCounters) {
        let mut dp = KernelPath { now, line_rate, config: plane, counters, answer: &mut self.answer };
        self.driver.poll(&mut dp);
    }

    /// The earliest time [`FlowAdapter::poll`] has work.
    pub fn next_deadline(&self) -> Option<Time> {
        self.driver.next_deadline()
    }

    /// The decision owed to the BPF side (an answer to every report, so that its watchdog knows the
    /// agent is alive), carrying the window and rate in force; `None` when nothing is owed.
    pub fn decision(&mut self, flow_id: u64, epoch: u32) -> Option<Decision> {
        if !self.answer.owed {
            return None;
        }
        self.answer.owed = false;
        self.decision_seq += 1;
        let mut d =
            Decision { flow_id, epoch, seq: self.decision_seq, report_seq: self.last_report, ..Decision::default() };
        if self.live_install.is_some() {
            d.flags |= D_PROGRAM;
        }
        if let Some(rate) = self.answer.rate {
            d.flags |= D_RATE;
            d.pacing_bps = rate;
        }
        let cwnd_pkts = match (self.answer.cwnd, self.answer.rate) {
            (Some(cwnd), _) if !self.rate_only => Some(cwnd.div_ceil(self.mss as u64)),
            (_, Some(rate)) if self.rate_only => Some(self.rate_window(rate)),
            _ => None,
        };
        if let Some(pkts) = cwnd_pkts {
            d.flags |= D_CWND;
            d.cwnd_pkts = pkts.clamp(MIN_CWND_PACKETS as u64, u32::MAX as u64) as u32;
        }
        Some(d)
    }

    /// The send time (ns) of the oldest report an answer being written covers; `None` when every report
    /// was answered already (a later decision from a timer answers no new report).
    pub fn newly_answered_report_ns(&mut self) -> Option<u64> {
        match std::mem::take(&mut self.oldest_unanswered_ns) {
            0 => None,
            sent => Some(sent),
        }
    }

    /// A window for a rate-only algorithm: [`RATE_ONLY_WINDOW_RTTS`] rate-delay products.
    fn rate_window(&self, rate: Rate) -> u64 {
        if self.srtt_us == 0 {
            return INIT_CWND_PACKETS as u64;
        }
        let bytes = rate as u128 * self.srtt_us as u128 * PS_PER_US as u128 / PS_PER_S as u128 / 8;
        ((bytes * RATE_ONLY_WINDOW_RTTS as u128) as u64 / self.mss as u64).max(INIT_CWND_PACKETS as u64)
    }
}

/// How urgent a report is: losses first, then ECN echoes.
fn urgency_of(r: &Report) -> Urgency {
    if r.losses > 0 || r.rtos > 0 {
        Urgency::Loss
    } else if r.acks > 0 && (r.ece_pkts > 0 || r.ece_bytes > 0) {
        Urgency::Ecn
    } else {
        Urgency::Normal
    }
}

/// Folds one BPF report (losses, then its ACKs as one) into `fold`.
fn fold_report(fold: &mut Fold, r: &Report, mss: u32, now: Time) {
    let in_flight = r.in_flight_pkts as u64 * mss as u64;
    for (count, kind) in [(r.losses, LossKind::FastRetransmit), (r.rtos, LossKind::Timeout)] {
        if count > 0 {
            fold.add_loss(&Loss { kind, count, in_flight, snd_nxt: r.snd_nxt }, now);
        }
    }
    if r.acks == 0 {
        return;
    }
    let samples = samples_of(r);
    fold.add_ack(&ack_of(r, mss, &samples), now);
}

/// A report's raw RTT samples, ps.
fn samples_of(r: &Report) -> Vec<Time> {
    r.rtt_us.iter().map(|&us| us as Time * PS_PER_US).collect()
}

/// A report's ACKs as one.
fn ack_of<'a>(r: &Report, mss: u32, samples: &'a [Time]) -> Ack<'a> {
    let in_flight = r.in_flight_pkts as u64 * mss as u64;
    let ecn = r.ece_pkts > 0 || r.ece_bytes > 0;
    Ack {
        acks: r.acks,
        acked_bytes: r.acked_bytes,
        acked_packets: r.acked_pkts,
        ecn_bytes: r.ece_bytes,
        ecn_packets: r.ece_pkts,
        ecn_echo: ecn,
        rtt: samples.last().copied().or((r.srtt_us > 0).then(|| r.srtt_us as Time * PS_PER_US)),
        rtt_samples: samples,
        delivery_rate: (r.delivery_bps > 0).then_some(r.delivery_bps),
        snd_una: r.snd_una,
        snd_nxt: r.snd_nxt,
        in_flight,
        int: &[],
        remote_delay: None,
        first_at: r.first_ns.saturating_mul(1000),
        path_flags: 0,
        // The BPF fold does not count ACKs that acknowledged nothing new; kernel TCP turns them
        // into its own loss signal, which arrives above as `Loss`, and its reordering detections.
        dup_acks: 0,
        reordered: r.reorders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Kind;
    use sluice_cc::registry::lookup;

    fn report(seq: u32, acks: u32, losses: u32) -> Report {
        Report {
            kind: Some(Kind::Report),
            flow_id: 1,
            seq,
            acks,
            acked_pkts: acks * 2,
            acked_bytes: acks as u64 * 2 * 1448,
            losses,
            mss: 1448,
            cwnd_pkts: 10,
            in_flight_pkts: 10,
            srtt_us: 100,
            snd_una: seq as u64 * 50_000,
            snd_nxt: seq as u64 * 50_000 + 14_480,
            rtt_us: vec![100],
            ..Report::default()
        }
    }

    fn reno() -> FlowAdapter {
        let factory = (lookup("reno").unwrap().build)(&toml::Table::new(), 10_000_000_000).unwrap();
        let info = FlowAdapter::info(&report(1, 0, 0), 10_000_000_000, 100 * PS_PER_US, 0);
        FlowAdapter::new("reno".into(), &factory, &info, &PlaneConfig::default())
    }

    #[test]
    fn reno_grows_on_acks_and_halves_on_loss() {
        let mut f = reno();
        let (plane, mut counters) = (PlaneConfig::default(), PlaneCounters::default());
        let d = f.decision(1, 1).unwrap();
        assert_eq!((d.cwnd_pkts, d.seq, d.flags), (10, 1, D_CWND), "the initial window goes out first");
        f.on_report(&report(1, 8, 0), 1, 10_000_000_000, &plane, &mut counters).unwrap();
        let grown = f.decision(1, 1).unwrap();
        assert!(grown.cwnd_pkts > 10, "slow start: {}", grown.cwnd_pkts);
        assert_eq!((grown.seq, grown.report_seq), (2, 1));
        f.on_report(&report(2, 1, 1), 2, 10_000_000_000, &plane, &mut counters).unwrap();
        let cut = f.decision(1, 1).unwrap();
        assert!(cut.cwnd_pkts < grown.cwnd_pkts, "loss: {} -> {}", grown.cwnd_pkts, cut.cwnd_pkts);
        assert_eq!(counters.urgent_reports, 1);
        assert_eq!(f.decision(1, 1), None, "nothing owed until the next report");
    }

    #[test]
    fn the_kernels_reorderings_reach_the_algorithm_as_the_out_of_order_signal() {
        let mut r = report(1, 4, 0);
        r.reorders = 3;
        let mut fold = Fold::default();
        fold_report(&mut fold, &r, 1448, 7);
        assert_eq!(fold.ack().reordered, 3);
        let mut f = reno();
        let (plane, mut counters) = (PlaneConfig::default(), PlaneCounters::default());
        f.on_report(&r, 1, 10_000_000_000, &plane, &mut counters).unwrap();
        assert_eq!(counters.reordered, 3);
    }

    #[test]
    fn the_base_rtt_is_the_kernels_measurement_when_there_is_one() {
        let measured = FlowAdapter::info(&report(1, 0, 0), 1, 100 * PS_PER_US, 0);
        assert_eq!(measured.base_rtt, 100 * PS_PER_US, "srtt_us of the report");
        let mut r = report(1, 0, 0);
        r.srtt_us = 730;
        assert_eq!(FlowAdapter::info(&r, 1, 100 * PS_PER_US, 0).base_rtt, 730 * PS_PER_US);
        r.srtt_us = 0;
        assert_eq!(FlowAdapter::info(&r, 1, 42 * PS_PER_US, 0).base_rtt, 42 * PS_PER_US, "no sample: configured");
    }

    fn dctcp_program() -> FlowAdapter {
        let mut params = toml::Table::new();
        params.insert("program".into(), true.into());
        let factory = (lookup("dctcp").unwrap().build)(&params, 10_000_000_000).unwrap();
        let info = FlowAdapter::info(&report(1, 0, 0), 10_000_000_000, 100 * PS_PER_US, 0);
        FlowAdapter::new("dctcp".into(), &factory, &info, &PlaneConfig::default())
    }

    /// What the BPF side sends when DCTCP's per-signal program reports one ACK of `acked` bytes.
    fn program_report(seq: u32, install: u32, acked: u64, losses: u64) -> ProgramReport {
        use sluice_cc::program::library::reg;
        let mut registers = vec![0u64; sluice_cc::program::library::per_signal().registers().len()];
        registers[reg::EVENTS as usize] = 1;
        // A loss is its own signal, reported at once.
        registers[reg::ACKS as usize] = (losses == 0) as u64;
        registers[reg::ACKED as usize] = if losses == 0 { acked } else { 0 };
        registers[reg::ACKED_PACKETS as usize] = registers[reg::ACKED as usize] / 1448;
        registers[reg::SND_UNA as usize] = seq as u64 * 100_000;
        registers[reg::SND_NXT as usize] = seq as u64 * 100_000 + 14_480;
        registers[reg::RTT as usize] = 100 * PS_PER_US;
        registers[reg::HAS_RTT as usize] = 1;
        registers[reg::RTT_MIN as usize] = 100 * PS_PER_US;
        registers[reg::LOSSES as usize] = losses;
        registers[reg::LOSS_KIND as usize] = 1;
        registers[reg::LOSS_IN_FLIGHT as usize] = losses * 14_480;
        registers[reg::IN_FLIGHT as usize] = losses * 14_480;
        registers[reg::LOSS_SND_NXT as usize] = (seq as u64 - 1) * 100_000 + losses * 14_480;
        ProgramReport {
            flow_id: 1,
            seq,
            install,
            index: 0,
            mss: 1448,
            srtt_us: 100,
            signals: 1,
            flags: if losses > 0 { F_URGENT } else { 0 },
            registers,
            ..ProgramReport::default()
        }
    }

    #[test]
    fn a_program_is_handed_over_once_per_install_and_its_reports_reach_the_algorithm() {
        let mut f = dctcp_program();
        let (plane, mut counters) = (PlaneConfig::default(), PlaneCounters::default());
        let mut next = 0;
        let install = f.install(1, &mut next).unwrap().unwrap();
        assert_eq!((install.install, install.index, next), (1, 0, 1));
        assert_eq!(install.registers, f.driver.installed().unwrap().2, "the driver's registers");
        assert_eq!((install.base_rtt, install.line_rate), (100 * PS_PER_US, 10_000_000_000));
        assert!(f.install(1, &mut next).is_none(), "nothing new to install");
        let first = f.decision(1, 1).unwrap();
        assert_eq!(first.flags & D_PROGRAM, 0, "not written yet: the fold stays on");

        // Until the BPF side runs the program, folded reports run through the driver's interpreter.
        f.on_report(&report(1, 8, 0), 1, 10_000_000_000, &plane, &mut counters).unwrap();
        let grown = f.decision(1, 1).unwrap();
        assert!(grown.cwnd_pkts > first.cwnd_pkts, "{} -> {}", first.cwnd_pkts, grown.cwnd_pkts);
        assert_eq!(counters.signals, 1);

        f.installed(1, true);
        let on = f.decision(1, 1).unwrap();
        assert_eq!(on.flags & D_PROGRAM, D_PROGRAM, "written: the decision turns it on");
        f.on_program_report(&program_report(2, 1, 14_480, 0), 2, 10_000_000_000, &plane, &mut counters).unwrap();
        let more = f.decision(1, 1).unwrap();
        assert!(more.cwnd_pkts > on.cwnd_pkts && more.flags & D_PROGRAM != 0, "{more:?}");
        f.on_program_report(&program_report(3, 1, 1448, 1), 3, 10_000_000_000, &plane, &mut counters).unwrap();
        let cut = f.decision(1, 1).unwrap();
        assert!(cut.cwnd_pkts < more.cwnd_pkts, "the urgent loss report cut the window: {more:?} -> {cut:?}");

        // Another install's report is not this program's: dropped, though it is answered.
        let other = program_report(4, 9, 1448, 0);
        assert_eq!(f.on_program_report(&other, 4, 10_000_000_000, &plane, &mut counters), Err(Rejected::OtherInstall));
        assert_eq!(f.decision(1, 1).map(|d| (d.cwnd_pkts, d.report_seq)), Some((cut.cwnd_pkts, 4)));
        let stale = program_report(4, 1, 1448, 0);
        assert_eq!(f.on_program_report(&stale, 5, 10_000_000_000, &plane, &mut counters), Err(Rejected::Stale));
        // A program that could not be written leaves the fold on.
        f.installed(2, false);
        assert_eq!(f.decision(1, 1).unwrap().flags & D_PROGRAM, 0);
    }

    #[test]
    fn stale_reports_are_rejected() {
        let mut f = reno();
        let (plane, mut counters) = (PlaneConfig::default(), PlaneCounters::default());
        f.on_report(&report(5, 1, 0), 1, 1, &plane, &mut counters).unwrap();
        assert_eq!(f.on_report(&report(5, 1, 0), 2, 1, &plane, &mut counters), Err(Rejected::Stale));
        assert_eq!(f.on_report(&report(3, 1, 0), 2, 1, &plane, &mut counters), Err(Rejected::Stale));
    }

    #[test]
    fn rate_only_algorithms_get_a_window_that_does_not_limit_them() {
        let factory = (lookup("timely").unwrap().build)(&toml::Table::new(), 10_000_000_000).unwrap();
        let info = FlowAdapter::info(&report(1, 0, 0), 10_000_000_000, 100 * PS_PER_US, 0);
        let mut f = FlowAdapter::new("timely".into(), &factory, &info, &PlaneConfig::default());
        let (plane, mut counters) = (PlaneConfig::default(), PlaneCounters::default());
        f.on_report(&report(1, 4, 0), 1, 10_000_000_000, &plane, &mut counters).unwrap();
        let d = f.decision(1, 1).unwrap();
        assert_eq!(d.flags & (D_RATE | D_CWND), D_RATE | D_CWND);
        let bdp_pkts = d.pacing_bps / 8 / 10_000 / 1448;
        assert!(d.cwnd_pkts as u64 >= 2 * bdp_pkts, "{} vs {}", d.cwnd_pkts, bdp_pkts);
    }

    /// The agent hands an algorithm ACKs and losses (the adapter's fold) and its timers, nothing else: an
    /// algorithm it accepts must bind no other handler, which would never be called here.
    #[test]
    fn accepted_algorithms_bind_only_the_events_the_agent_delivers() {
        use sluice_cc::{Events, FlowInfo};
        let delivered = Events::ACK | Events::LOSS | Events::TIMER;
        let flow = FlowInfo {
            flow_id: 1,
            mss: 1448,
            header_bytes: HEADER_BYTES,
            line_rate: 10_000_000_000,
            base_rtt: 100 * sluice_core::PS_PER_US,
            hops: 1,
            size: None,
            start: 0,
        };
        let mut library = crate::config::Library::default();
        for name in crate::config::supported_names() {
            let factory = library.factory(name, &toml::Table::new(), flow.line_rate).unwrap();
            let events = factory.create(&flow).events();
            assert!(delivered.contains(events), "{name} binds {events:?}, the agent delivers {delivered:?}");
        }
    }
}
