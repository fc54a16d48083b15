//! The agent's state, apart from the kernel: every flow's adapter, what reports did, and the decisions
//! owed. [`crate::runtime`] feeds it ring-buffer bytes and writes the decisions it returns.

use std::collections::HashMap;

use serde::Serialize;
use sluice_core::Time;
use sluice_plane::{PlaneConfig, PlaneCounters};

use crate::adapter::{FlowAdapter, Rejected};
use crate::codec::{Decision, Kind, Report, F_FALLBACK};
use crate::config::Resolved;
use crate::loader::SLOTS;

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
    /// Decisions the BPF side's map refused (full, or the flow already gone).
    pub decision_write_errors: u64,
    /// The plane's counters (signals, reports delivered, filters).
    pub plane: PlaneCounters,
}

/// The agent: flows by id, with their algorithms.
pub struct Agent {
    resolved: Resolved,
    plane: PlaneConfig,
    epoch: u32,
    flows: HashMap<u64, FlowAdapter>,
    /// What happened so far.
    pub counters: AgentCounters,
}

impl Agent {
    /// An agent with checked settings, answering as `epoch`.
    pub fn new(resolved: Resolved, epoch: u32) -> Agent {
        let plane = PlaneConfig::default();
        Agent { resolved, plane, epoch, flows: HashMap::new(), counters: AgentCounters::default() }
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
        let report = match Report::parse(bytes) {
            Ok(r) => r,
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
        if flow.on_report(r, now, line_rate, &self.plane, &mut self.counters.plane) == Err(Rejected::Stale) {
            self.counters.stale += 1;
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
    fn an_unknown_flow_is_taken_over() {
        let mut a = agent();
        a.handle(&report(Kind::Report, 9, 500, 1), 0);
        assert_eq!((a.flows(), a.counters.flows_taken_over), (1, 1));
        assert_eq!(a.algorithms(), vec![(9, "reno".to_string())]);
    }
}
