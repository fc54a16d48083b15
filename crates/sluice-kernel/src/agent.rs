//! The agent's state, apart from the kernel: every flow's adapter, what reports did, and the decisions
//! owed. [`crate::runtime`] feeds it ring-buffer bytes and writes the decisions it returns.

use std::collections::HashMap;

use serde::Serialize;
use sluice_core::Time;
use sluice_plane::{PlaneConfig, PlaneCounters};

use crate::adapter::{FlowAdapter, Rejected};
use crate::codec::{Decision, Kind, Message, ProgramReport, Report, F_FALLBACK};
use crate::config::Resolved;
use crate::loader::SLOTS;
use crate::program::Install;

/// What the agent saw (for its summary and the benchmarks).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentCounters {
    /// Messages read from the ring buffer.
    pub messages: u64,
    /// Of them, rejected as malformed (bad magic, version, kind, sizes).
    pub malformed: u64,
    /// Of them, rejected as stale (a sequence number not newer than one handled).
    pub stale: u64,
    /// Flows started.
    pub flows_started: u64,
    /// Flows ended.
    pub flows_ended: u64,
    /// Flows first seen mid-transfer (taken over from a previous agent).
    pub flows_taken_over: u64,
    /// Reports that said the flow ran on the kernel's fallback.
    pub fallback_reports: u64,
    /// Decisions written to the BPF side.
    pub decisions: u64,
    /// Reports of datapath programs handed to the algorithms.
    pub program_reports: u64,
    /// Program reports of an install that was not the flow's current one (dropped).
    pub program_reports_dropped: u64,
    /// Programs written to the BPF side (at flows' starts and by `ctx.install`).
    pub installs: u64,
    /// Programs that could not be written there (their flows' programs run in the agent instead).
    pub installs_failed: u64,
    /// How long reports waited for their answers.
    pub answer_lag: AnswerLag,
    /// The plane's counters (signals, reports delivered, filters).
    pub plane: PlaneCounters,
}

/// How long reports waited for their answers: from the BPF side's submit (the report's `now_ns`) of the
/// oldest report an answer covers until the answer was in the flow's cell. The BPF side's watchdog falls
/// back when this exceeds its time, so `over_watchdog` is the agent's own count of the fallbacks it
/// caused by lagging: compare it with the kernel's `fallbacks` to tell agent lag from anything else.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerLag {
    /// Reports answered (each counted once, by its first answer).
    pub answers: u64,
    /// Answered within 1 ms.
    pub within_1ms: u64,
    /// Within 1-2 ms.
    pub within_2ms: u64,
    /// Within 2-5 ms.
    pub within_5ms: u64,
    /// Within 5-10 ms.
    pub within_10ms: u64,
    /// Later than 10 ms.
    pub later: u64,
    /// Later than the watchdog time.
    pub over_watchdog: u64,
    /// The longest wait, us.
    pub max_us: u64,
    /// Sum of the waits, us (the mean is `total_us / answers`).
    pub total_us: u64,
}

impl AnswerLag {
    /// Counts one answer written `lag_ns` after its report, against a watchdog of `watchdog_ns`.
    pub fn record(&mut self, lag_ns: u64, watchdog_ns: u64) {
        let us = lag_ns / 1000;
        self.answers += 1;
        self.total_us += us;
        self.max_us = self.max_us.max(us);
        let bucket = match us {
            0..1_000 => &mut self.within_1ms,
            1_000..2_000 => &mut self.within_2ms,
            2_000..5_000 => &mut self.within_5ms,
            5_000..10_000 => &mut self.within_10ms,
            _ => &mut self.later,
        };
        *bucket += 1;
        if lag_ns > watchdog_ns {
            self.over_watchdog += 1;
        }
    }
}

/// The agent: flows by id, with their algorithms.
pub struct Agent {
    resolved: Resolved,
    plane: PlaneConfig,
    epoch: u32,
    flows: HashMap<u64, FlowAdapter>,
    /// The last install number handed out.
    install_seq: u32,
    /// What happened so far.
    pub counters: AgentCounters,
}

impl Agent {
    /// An agent with checked settings, answering as `epoch`.
    pub fn new(resolved: Resolved, epoch: u32) -> Agent {
        let plane = PlaneConfig::default();
        // Install numbers carry the epoch in their high bits: a restarted agent's installs are not taken
        // for its predecessor's, whose reports may still wait in the ring.
        let install_seq = (epoch & 0xfff) << 20;
        Agent { resolved, plane, epoch, flows: HashMap::new(), install_seq, counters: AgentCounters::default() }
    }

    /// The agent's epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Flows under control now.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// The algorithm of each flow (id, name).
    pub fn algorithms(&self) -> Vec<(u64, String)> {
        self.flows.iter().map(|(id, f)| (*id, f.algorithm.clone())).collect()
    }

    /// Handles one message from the ring buffer at `now` (ps); malformed and stale ones are counted.
    pub fn handle(&mut self, bytes: &[u8], now: Time) {
        self.counters.messages += 1;
        let report = match Message::parse(bytes) {
            Ok(Message::Report(r)) => r,
            Ok(Message::Program(p)) => return self.on_program_report(&p, now),
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        if report.flags & F_FALLBACK != 0 {
            self.counters.fallback_reports += 1;
        }
        match report.kind {
            Some(Kind::End) => self.end(&report),
            Some(Kind::Start) => {
                self.counters.flows_started += 1;
                self.flows.remove(&report.flow_id);
                self.start(&report, now);
            }
            _ => {
                if !self.flows.contains_key(&report.flow_id) {
                    self.counters.flows_taken_over += 1;
                    self.start(&report, now);
                }
                self.on_report(&report, now);
            }
        }
    }

    fn start(&mut self, r: &Report, now: Time) {
        let slot_algorithm = SLOTS.get(r.slot as usize).and_then(|s| s.1);
        let (name, factory) = self.resolved.choose(slot_algorithm, r.lport, r.rport);
        let config = &self.resolved.config;
        let info = FlowAdapter::info(r, config.line_rate, config.base_rtt, now);
        let mut flow = FlowAdapter::new(name, &factory, &info, &self.plane);
        if r.kind == Some(Kind::Start) {
            // The start message is the flow's first report: later ones must be newer.
            let _ = flow.on_report(r, now, config.line_rate, &self.plane, &mut self.counters.plane);
        }
        self.flows.insert(r.flow_id, flow);
    }

    fn on_report(&mut self, r: &Report, now: Time) {
        let line_rate = self.resolved.config.line_rate;
        let Some(flow) = self.flows.get_mut(&r.flow_id) else { return };
        if flow.on_report(r, now, line_rate, &self.plane, &mut self.counters.plane).is_err() {
            self.counters.stale += 1;
        }
    }

    fn on_program_report(&mut self, p: &ProgramReport, now: Time) {
        if p.flags & F_FALLBACK != 0 {
            self.counters.fallback_reports += 1;
        }
        if !self.flows.contains_key(&p.flow_id) {
            // A flow of an earlier agent: its program is this agent's to install again.
            self.counters.flows_taken_over += 1;
            let header = Report {
                kind: Some(Kind::Report),
                slot: p.slot,
                flow_id: p.flow_id,
                seq: p.seq,
                mss: p.mss,
                srtt_us: p.srtt_us,
                lport: p.lport,
                rport: p.rport,
                ..Report::default()
            };
            self.start(&header, now);
        }
        let line_rate = self.resolved.config.line_rate;
        let Some(flow) = self.flows.get_mut(&p.flow_id) else { return };
        match flow.on_program_report(p, now, line_rate, &self.plane, &mut self.counters.plane) {
            Ok(()) => self.counters.program_reports += 1,
            Err(Rejected::Stale) => self.counters.stale += 1,
            Err(Rejected::OtherInstall) => self.counters.program_reports_dropped += 1,
        }
    }

    /// The programs to write to the BPF side: one per flow whose algorithm installed one since the last
    /// call. Each must be answered with [`Agent::installed`] before the decisions are taken.
    pub fn installs(&mut self, out: &mut Vec<Install>) {
        for (id, flow) in self.flows.iter_mut() {
            match flow.install(*id, &mut self.install_seq) {
                Some(Ok(install)) => out.push(install),
                Some(Err(_)) => self.counters.installs_failed += 1,
                None => {}
            }
        }
    }

    /// Install `install` of flow `flow_id` was written to the BPF side (`ok`) or not.
    pub fn installed(&mut self, flow_id: u64, install: u32, ok: bool) {
        if ok {
            self.counters.installs += 1;
        } else {
            self.counters.installs_failed += 1;
        }
        if let Some(flow) = self.flows.get_mut(&flow_id) {
            flow.installed(install, ok);
        }
    }

    fn end(&mut self, r: &Report) {
        if self.flows.remove(&r.flow_id).is_some() {
            self.counters.flows_ended += 1;
        }
    }

    /// Runs timers and fold deadlines due at `now`.
    pub fn poll(&mut self, now: Time) {
        let line_rate = self.resolved.config.line_rate;
        for flow in self.flows.values_mut() {
            flow.poll(now, line_rate, &self.plane, &mut self.counters.plane);
        }
    }

    /// The earliest deadline of any flow.
    pub fn next_deadline(&self) -> Option<Time> {
        self.flows.values().filter_map(FlowAdapter::next_deadline).min()
    }

    /// Counts how long the reports that `written` answer waited: they were written at `at_ns`
    /// (CLOCK_MONOTONIC ns, the clock of the reports' `now_ns`).
    pub fn record_answers(&mut self, written: &[Decision], at_ns: u64, watchdog_ns: u64) {
        for d in written {
            let Some(flow) = self.flows.get_mut(&d.flow_id) else { continue };
            if let Some(sent) = flow.newly_answered_report_ns() {
                self.counters.answer_lag.record(at_ns.saturating_sub(sent), watchdog_ns);
            }
        }
    }

    /// The decisions owed, one per flow that reported or decided since the last call.
    pub fn decisions(&mut self, out: &mut Vec<Decision>) {
        let epoch = self.epoch;
        for (id, flow) in self.flows.iter_mut() {
            if let Some(d) = flow.decision(*id, epoch) {
                out.push(d);
            }
        }
        self.counters.decisions += out.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;

    fn report(kind: Kind, flow_id: u64, seq: u32, slot: u8) -> Vec<u8> {
        let acks = if kind == Kind::Start { 0 } else { 4 };
        Report {
            kind: Some(kind),
            slot,
            flow_id,
            seq,
            acks,
            acked_pkts: 2 * acks,
            acked_bytes: 2 * acks as u64 * 1448,
            mss: 1448,
            cwnd_pkts: 10,
            in_flight_pkts: 10,
            srtt_us: 50,
            lport: 40000,
            rport: 5201,
            rtt_us: vec![50],
            ..Report::default()
        }
        .encode()
        .to_vec()
    }

    fn agent() -> Agent {
        let mut config = AgentConfig::default();
        config.add_rule_arg("5201=reno").unwrap();
        Agent::new(config.resolve("options").unwrap(), 7)
    }

    #[test]
    fn flows_start_report_and_end() {
        let mut a = agent();
        a.handle(&report(Kind::Start, 1, 1, 0), 0);
        a.handle(&report(Kind::Start, 2, 1, 2), 0);
        assert_eq!(a.flows(), 2);
        let mut names = a.algorithms();
        names.sort();
        assert_eq!(names, vec![(1, "reno".to_string()), (2, "cubic".to_string())], "port rule, then slot name");
        let mut out = Vec::new();
        a.decisions(&mut out);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|d| d.epoch == 7 && d.seq == 1 && d.cwnd_pkts == 10));
        a.handle(&report(Kind::Report, 1, 2, 0), 1);
        a.handle(&report(Kind::End, 1, 3, 0), 2);
        assert_eq!((a.flows(), a.counters.flows_ended), (1, 1));
    }

    #[test]
    fn malformed_and_stale_reports_are_rejected_and_counted() {
        let mut a = agent();
        a.handle(&report(Kind::Start, 1, 1, 0), 0);
        a.handle(&report(Kind::Report, 1, 2, 0), 1);
        a.handle(&report(Kind::Report, 1, 2, 0), 2);
        a.handle(&report(Kind::Report, 1, 1, 0), 3);
        let mut bad = report(Kind::Report, 1, 3, 0);
        bad[0] = 0;
        a.handle(&bad, 4);
        a.handle(&bad[..20], 5);
        a.handle(&[], 6);
        assert_eq!((a.counters.stale, a.counters.malformed, a.counters.messages), (2, 3, 7));
        a.handle(&report(Kind::Report, 1, 3, 0), 7);
        assert_eq!(a.counters.stale, 2, "the next fresh report is handled");
    }

    #[test]
    fn answer_lag_counts_from_the_oldest_report_an_answer_covers() {
        let mut a = agent();
        let mut start = Report::parse(&report(Kind::Start, 1, 1, 0)).unwrap();
        start.now_ns = 1_000_000;
        a.handle(&start.encode(), 0);
        let mut out = Vec::new();
        a.decisions(&mut out);
        a.record_answers(&out, 1_500_000, 10_000_000);
        a.record_answers(&out, 2_000_000, 10_000_000);
        let lag = &a.counters.answer_lag;
        assert_eq!((lag.answers, lag.within_1ms, lag.max_us), (1, 1, 500), "one answer, 0.5 ms");
        let mut late = Report::parse(&report(Kind::Report, 1, 2, 0)).unwrap();
        late.now_ns = 3_000_000;
        a.handle(&late.encode(), 0);
        out.clear();
        a.decisions(&mut out);
        a.record_answers(&out, 15_000_000, 10_000_000);
        let lag = &a.counters.answer_lag;
        assert_eq!((lag.answers, lag.later, lag.over_watchdog, lag.max_us), (2, 1, 1, 12_000), "12 ms: past 10 ms");
        assert_eq!(lag.total_us, 12_500);
        // Two reports drained together: one answer covers both, and the older one waited longest (the
        // BPF side's watchdog runs from it).
        for (seq, sent) in [(3, 20_000_000), (4, 29_000_000)] {
            let mut r = Report::parse(&report(Kind::Report, 1, seq, 0)).unwrap();
            r.now_ns = sent;
            a.handle(&r.encode(), 0);
        }
        out.clear();
        a.decisions(&mut out);
        a.record_answers(&out, 31_000_000, 10_000_000);
        let lag = &a.counters.answer_lag;
        assert_eq!((lag.answers, lag.over_watchdog, lag.max_us), (3, 2, 12_000), "11 ms from report 3, not 2 ms");
    }

    #[test]
    fn program_reports_of_unknown_flows_take_them_over_and_their_programs_are_installed_again() {
        let mut config = AgentConfig::default();
        config.add_rule_arg("5201=dctcp_burst").unwrap();
        let mut a = Agent::new(config.resolve("options").unwrap(), 7);
        let p = ProgramReport {
            flow_id: 9,
            seq: 40,
            install: 3,
            mss: 1448,
            lport: 40000,
            rport: 5201,
            ..Default::default()
        };
        a.handle(&p.encode(), 0);
        assert_eq!((a.flows(), a.counters.flows_taken_over), (1, 1));
        assert_eq!(a.counters.program_reports_dropped, 1, "an earlier agent's install");
        let mut installs = Vec::new();
        a.installs(&mut installs);
        assert_eq!(installs.len(), 1);
        assert_eq!((installs[0].flow_id, installs[0].install), (9, 7 << 20 | 1), "the epoch is in the number");
        a.installed(9, installs[0].install, true);
        let mut out = Vec::new();
        a.decisions(&mut out);
        assert_eq!(out[0].flags & crate::codec::D_PROGRAM, crate::codec::D_PROGRAM);
        let mut mine = p.clone();
        (mine.seq, mine.install, mine.registers) = (41, installs[0].install, vec![0; 22]);
        a.handle(&mine.encode(), 1);
        assert_eq!((a.counters.program_reports, a.counters.installs), (1, 1));
    }

    #[test]
    fn an_unknown_flow_is_taken_over() {
        let mut a = agent();
        a.handle(&report(Kind::Report, 9, 500, 1), 0);
        assert_eq!((a.flows(), a.counters.flows_taken_over), (1, 1));
        assert_eq!(a.algorithms(), vec![(9, "reno".to_string())]);
    }
}
