//! Signal-level aggregation: the three engines of TAURUS section 3.4 in one per-flow fold.
//!
//! Accumulable signals (acknowledged and ECN-marked bytes and packets, sent bytes, CNPs) are summed;
//! coalescent ones (loss, ECN echo) are merged into one flag with a count; raw ones (RTT samples, INT
//! records, custom feedback, probe results) are kept as they came. Latest-value fields (ACK point, RTT,
//! delivery rate) keep the newest.
//!
//! A flow that runs a datapath program ([`sluice_cc::program`]) folds nothing here: its program's
//! registers are the fold, and a report carries their values ([`Fold::program`], [`Fold::registers`]).

use sluice_cc::{Ack, CongestionControl, Ctx, Events, Feedback, HostSignal, IntHop, Loss, ProgramReport, Sent};
use sluice_core::{Rate, Time};

/// The signals of one flow folded over one reporting period. Taken whole, it is a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fold {
    /// ACKs folded.
    pub acks: u32,
    /// Newly acknowledged bytes.
    pub acked_bytes: u64,
    /// Newly acknowledged packets.
    pub acked_packets: u32,
    /// Acknowledged bytes whose ACK echoed ECE.
    pub ecn_bytes: u64,
    /// Acknowledged packets whose ACK echoed ECE.
    pub ecn_packets: u32,
    /// Some ACK echoed ECE.
    pub ecn_echo: bool,
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Packets sent.
    pub sent_packets: u32,
    /// Of the sent bytes, those sent again.
    pub retransmitted_bytes: u64,
    /// Congestion notification packets received.
    pub cnps: u32,
    /// The first loss of the period, with the count of all.
    pub loss: Option<Loss>,
    /// Latest RTT sample.
    pub rtt: Option<Time>,
    /// Latest delivery-rate sample.
    pub delivery_rate: Option<Rate>,
    /// Latest endpoint delay.
    pub remote_delay: Option<Time>,
    /// ACK point after the latest ACK.
    pub snd_una: u64,
    /// Next new byte after the latest ACK.
    pub snd_nxt: u64,
    /// In flight after the latest ACK.
    pub in_flight: u64,
    /// Every RTT sample of the period.
    pub rtt_samples: Vec<Time>,
    /// INT records of the latest ACK.
    pub int: Vec<IntHop>,
    /// Custom feedback of the period, in arrival order.
    pub feedback: Vec<Feedback>,
    /// Probe results of the period.
    pub probes: Vec<Time>,
    /// Host congestion signals of the period, in sampling order.
    pub host: Vec<HostSignal>,
    /// When the first signal of the period reached the datapath.
    pub first_at: Option<Time>,
    /// Signals folded.
    pub signals: u32,
    /// Union of the path flags of the folded ACKs.
    pub path_flags: u8,
    /// Duplicate ACKs (DACKs) among the folded ACKs.
    pub dup_acks: u32,
    /// Folded ACKs that revealed reordering ([`Ack::reordered`]).
    pub reordered: u32,
    /// A datapath program's report: the algorithm's number for the program that made it (the fields
    /// above stay empty, [`Fold::registers`] holds the report).
    pub program: Option<u8>,
    /// The program's register values at the report, in declaration order.
    pub registers: Vec<u64>,
    /// The program's report was urgent.
    pub urgent: bool,
}

impl Fold {
    /// Whether nothing was folded.
    pub fn is_empty(&self) -> bool {
        self.signals == 0
    }

    fn touch(&mut self, at: Time) {
        self.signals += 1;
        self.first_at.get_or_insert(at);
    }

    /// Folds one ACK report (usually a single ACK from the datapath).
    pub fn add_ack(&mut self, ack: &Ack<'_>, at: Time) {
        self.touch(at);
        self.acks += ack.acks;
        self.dup_acks += ack.dup_acks;
        self.reordered += ack.reordered;
        self.acked_bytes += ack.acked_bytes;
        self.acked_packets += ack.acked_packets;
        self.ecn_bytes += ack.ecn_bytes;
        self.ecn_packets += ack.ecn_packets;
        self.ecn_echo |= ack.ecn_echo;
        self.path_flags |= ack.path_flags;
        if ack.rtt.is_some() {
            self.rtt = ack.rtt;
        }
        self.rtt_samples.extend_from_slice(ack.rtt_samples);
        if ack.delivery_rate.is_some() {
            self.delivery_rate = ack.delivery_rate;
        }
        if ack.remote_delay.is_some() {
            self.remote_delay = ack.remote_delay;
        }
        self.snd_una = ack.snd_una;
        self.snd_nxt = ack.snd_nxt;
        self.in_flight = ack.in_flight;
        if !ack.int.is_empty() {
            self.int.clear();
            self.int.extend_from_slice(ack.int);
        }
    }

    /// Folds sent data.
    pub fn add_sent(&mut self, sent: &Sent, at: Time) {
        self.touch(at);
        self.sent_bytes += sent.bytes;
        self.sent_packets += sent.packets;
        self.retransmitted_bytes += sent.retransmitted_bytes;
    }

    /// Folds a loss (coalescent: the first kind is kept, the count grows).
    pub fn add_loss(&mut self, loss: &Loss, at: Time) {
        self.touch(at);
        match &mut self.loss {
            Some(first) => {
                first.count += loss.count;
                first.in_flight = loss.in_flight;
                first.snd_nxt = loss.snd_nxt;
            }
            None => self.loss = Some(*loss),
        }
    }

    /// Folds a congestion notification.
    pub fn add_cnp(&mut self, at: Time) {
        self.touch(at);
        self.cnps += 1;
    }

    /// Folds custom feedback.
    pub fn add_feedback(&mut self, feedback: Feedback, at: Time) {
        self.touch(at);
        self.feedback.push(feedback);
    }

    /// Folds a host congestion signal (raw).
    pub fn add_host(&mut self, signal: HostSignal, at: Time) {
        self.touch(at);
        self.host.push(signal);
    }

    /// Folds an RTT probe result.
    pub fn add_probe(&mut self, rtt: Time, at: Time) {
        self.touch(at);
        self.probes.push(rtt);
    }

    /// Merges a later fold of the same flow into this one (ring merges under back-pressure).
    pub fn merge(&mut self, later: Fold) {
        self.signals += later.signals;
        if self.first_at.is_none() {
            self.first_at = later.first_at;
        }
        self.acks += later.acks;
        self.dup_acks += later.dup_acks;
        self.reordered += later.reordered;
        self.acked_bytes += later.acked_bytes;
        self.acked_packets += later.acked_packets;
        self.ecn_bytes += later.ecn_bytes;
        self.ecn_packets += later.ecn_packets;
        self.ecn_echo |= later.ecn_echo;
        self.path_flags |= later.path_flags;
        self.sent_bytes += later.sent_bytes;
        self.sent_packets += later.sent_packets;
        self.retransmitted_bytes += later.retransmitted_bytes;
        self.cnps += later.cnps;
        if let Some(loss) = later.loss {
            let at = later.first_at.unwrap_or(0);
            self.signals -= 1;
            self.add_loss(&loss, at);
        }
        if later.acks > 0 {
            self.rtt = later.rtt.or(self.rtt);
            self.delivery_rate = later.delivery_rate.or(self.delivery_rate);
            self.remote_delay = later.remote_delay.or(self.remote_delay);
            self.snd_una = later.snd_una;
            self.snd_nxt = later.snd_nxt;
            self.in_flight = later.in_flight;
            if !later.int.is_empty() {
                self.int = later.int;
            }
        }
        self.rtt_samples.extend(later.rtt_samples);
        self.feedback.extend(later.feedback);
        self.probes.extend(later.probes);
        self.host.extend(later.host);
    }

    /// Whether merging loses nothing but raw samples' separation: folds without raw feedback or probes
    /// merge; those carrying them are unmergeable and are evicted instead when the ring overflows.
    pub fn mergeable(&self) -> bool {
        self.feedback.is_empty() && self.probes.is_empty() && self.host.is_empty() && self.program.is_none()
    }

    /// Size of this report as a message, bytes: a 16-byte header (flow, kind, count, timestamp), 16 for
    /// the ACK sums, 8 for the send sums, 4 each for CNPs, loss and every RTT or probe sample, 16 per INT
    /// hop and per feedback record.
    /// A program's report is the header and 8 bytes per register.
    pub fn message_bytes(&self) -> u32 {
        if self.program.is_some() {
            return 16 + 8 * self.registers.len() as u32;
        }
        let mut bytes = 16;
        if self.acks > 0 {
            bytes += 16;
        }
        if self.sent_packets > 0 {
            bytes += 8;
        }
        if self.cnps > 0 {
            bytes += 4;
        }
        if self.loss.is_some() {
            bytes += 4;
        }
        bytes += 4 * (self.rtt_samples.len() + self.probes.len()) as u32;
        bytes += 16 * (self.int.len() + self.feedback.len() + self.host.len()) as u32;
        bytes
    }

    /// The folded ACKs as an [`Ack`] report.
    pub fn ack(&self) -> Ack<'_> {
        Ack {
            acks: self.acks,
            acked_bytes: self.acked_bytes,
            acked_packets: self.acked_packets,
            ecn_bytes: self.ecn_bytes,
            ecn_packets: self.ecn_packets,
            ecn_echo: self.ecn_echo,
            rtt: self.rtt,
            rtt_samples: &self.rtt_samples,
            delivery_rate: self.delivery_rate,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            in_flight: self.in_flight,
            int: &self.int,
            remote_delay: self.remote_delay,
            first_at: self.first_at.unwrap_or(0),
            path_flags: self.path_flags,
            dup_acks: self.dup_acks,
            reordered: self.reordered,
        }
    }

    /// Hands the report to the handlers `events` binds, in the order loss, CNP, sent, ACK, feedback,
    /// probes, host signals; the decisions accumulate in `ctx` (the last one of a kind wins).
    /// A program's report goes to [`CongestionControl::on_report`] instead.
    pub fn deliver(&self, cc: &mut dyn CongestionControl, events: Events, ctx: &mut Ctx) {
        if let Some(program) = self.program {
            cc.on_report(&ProgramReport { program, registers: &self.registers, urgent: self.urgent }, ctx);
            return;
        }
        if let (Some(loss), true) = (&self.loss, events.contains(Events::LOSS)) {
            cc.on_loss(loss, ctx);
        }
        if self.cnps > 0 && events.contains(Events::CNP) {
            cc.on_cnp(ctx);
        }
        if self.sent_packets > 0 && events.contains(Events::TX) {
            let sent = Sent {
                bytes: self.sent_bytes,
                packets: self.sent_packets,
                retransmitted_bytes: self.retransmitted_bytes,
            };
            cc.on_sent(&sent, ctx);
        }
        if self.acks > 0 && events.contains(Events::ACK) {
            cc.on_ack(&self.ack(), ctx);
        }
        if events.contains(Events::FEEDBACK) {
            for feedback in &self.feedback {
                cc.on_feedback(feedback, ctx);
            }
        }
        if events.contains(Events::PROBE) {
            for rtt in &self.probes {
                cc.on_probe(*rtt, ctx);
            }
        }
        if events.contains(Events::HOST) {
            for signal in &self.host {
                cc.on_host(signal, ctx);
            }
        }
    }

    /// Empties the fold, keeping its allocations.
    pub fn clear(&mut self) {
        let (mut samples, mut int, mut feedback, mut probes, mut host, mut registers) = (
            std::mem::take(&mut self.rtt_samples),
            std::mem::take(&mut self.int),
            std::mem::take(&mut self.feedback),
            std::mem::take(&mut self.probes),
            std::mem::take(&mut self.host),
            std::mem::take(&mut self.registers),
        );
        samples.clear();
        int.clear();
        feedback.clear();
        probes.clear();
        host.clear();
        registers.clear();
        *self = Fold { rtt_samples: samples, int, feedback, probes, host, registers, ..Fold::default() };
    }
}

/// A report: a taken fold.
pub type Report = Fold;

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_cc::LossKind;

    fn ack(bytes: u64, ece: bool, rtt: Time, una: u64) -> Ack<'static> {
        Ack::single(bytes, 1, ece, Some(rtt), una, una + 10_000, 10_000, 0)
    }

    #[test]
    fn accumulable_sum_coalescent_merge_raw_keep() {
        let mut f = Fold::default();
        let samples = [5u64];
        let mut a = ack(1000, true, 5, 1000);
        a.rtt_samples = &samples;
        f.add_ack(&a, 10);
        let samples2 = [7u64];
        let mut b = ack(1000, false, 7, 2000);
        b.rtt_samples = &samples2;
        f.add_ack(&b, 20);
        let loss = Loss { kind: LossKind::Nack, count: 1, in_flight: 5000, snd_nxt: 9000 };
        f.add_loss(&loss, 30);
        f.add_loss(&Loss { kind: LossKind::Timeout, ..loss }, 40);
        assert_eq!((f.acks, f.acked_bytes, f.ecn_bytes, f.ecn_packets), (2, 2000, 1000, 1));
        assert!(f.ecn_echo);
        assert_eq!(f.rtt, Some(7));
        assert_eq!(f.rtt_samples, vec![5, 7]);
        assert_eq!(f.snd_una, 2000);
        let l = f.loss.unwrap();
        assert_eq!((l.kind, l.count), (LossKind::Nack, 2), "the first kind is kept, the count sums");
        assert_eq!(f.first_at, Some(10));
        assert_eq!(f.signals, 4);
        // 16 header + 16 ACK sums + 4 loss + 2 x 4 RTT samples.
        assert_eq!(f.message_bytes(), 44);
    }

    /// Records which handlers a report reached.
    struct Recorder(Vec<&'static str>);

    impl CongestionControl for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn events(&self) -> Events {
            Events::ACK | Events::HOST
        }
        fn on_start(&mut self, _flow: &sluice_cc::FlowInfo, _ctx: &mut Ctx) {}
        fn on_ack(&mut self, ack: &Ack<'_>, _ctx: &mut Ctx) {
            assert_eq!(ack.acks, 2);
            self.0.push("ack");
        }
        fn on_loss(&mut self, _loss: &Loss, _ctx: &mut Ctx) {
            self.0.push("loss");
        }
        fn on_host(&mut self, signal: &HostSignal, _ctx: &mut Ctx) {
            assert_eq!(signal.iio_occupancy, 4096);
            self.0.push("host");
        }
    }

    #[test]
    fn a_report_reaches_only_the_bound_handlers() {
        let mut f = Fold::default();
        f.add_ack(&ack(1000, false, 5, 1000), 0);
        f.add_ack(&ack(1000, false, 5, 2000), 1);
        f.add_loss(&Loss { kind: LossKind::Timeout, count: 1, in_flight: 0, snd_nxt: 0 }, 2);
        f.add_host(HostSignal { iio_occupancy: 4096, pcie_utilization: 0.9, at: 3 }, 3);
        assert!(!f.mergeable(), "raw host samples are not merged away");
        let mut cc = Recorder(Vec::new());
        let events = cc.events();
        f.deliver(&mut cc, events, &mut Ctx::new(4));
        assert_eq!(cc.0, vec!["ack", "host"], "the loss is not bound, so it is not delivered");
    }

    #[test]
    fn merge_equals_folding_everything_into_one() {
        let (mut one, mut a, mut b) = (Fold::default(), Fold::default(), Fold::default());
        for (i, fold) in [&mut a, &mut b].into_iter().enumerate() {
            let x = ack(500, i == 1, 3 + i as u64, 500 * (i as u64 + 1));
            fold.add_ack(&x, i as u64);
            one.add_ack(&x, i as u64);
            fold.add_cnp(i as u64);
            one.add_cnp(i as u64);
        }
        a.merge(b);
        assert_eq!(a, one);
    }
}
