//! Programs that re-express the fixed engines: they fold ACKs and losses the way the plane's fold does
//! (sums, the first loss kind with a count, the latest ACK point, rate and RTT) and report per signal or
//! per interval as the fixed reporting policies do. Reno, DCTCP and BBR run on them with
//! `program = true`; [`deliver`] turns a report back into the loss and ACK their handlers take, so the
//! algorithms' arithmetic is untouched.

use std::sync::{Arc, OnceLock};

use sluice_core::Time;

use super::exec::loss_kind_of;
use super::{Program, ProgramReport};
use crate::api::{Ack, CongestionControl, Ctx, Loss};

/// The registers and the fold shared by the programs of this module.
const FOLD: &str = "\
(def (Report
       (volatile events 0) (volatile first_at 0)
       (volatile acks 0) (volatile acked 0) (volatile acked_packets 0) (volatile dup_acks 0)
       (volatile ecn_bytes 0) (volatile ecn_packets 0) (volatile ecn 0)
       (volatile snd_una 0) (volatile snd_nxt 0) (volatile in_flight 0)
       (volatile rtt 0) (volatile has_rtt 0) (volatile rtt_min max)
       (volatile rate 0) (volatile has_rate 0)
       (volatile losses 0) (volatile loss_kind 0) (volatile loss_in_flight 0) (volatile loss_snd_nxt 0)
       (volatile reordered 0))
     (Control (interval 0)))
; every signal: when the period began, and how many signals it holds
(when true
  (:= Report.first_at (if Report.events Report.first_at Now))
  (:= Report.events (+ Report.events 1))
  (fallthrough))
; ACKs: sums, the newest ACK point, RTT and rate
(when Event.ack
  (:= Report.acks (+ Report.acks Ack.acks))
  (:= Report.acked (+ Report.acked Ack.bytes_acked))
  (:= Report.acked_packets (+ Report.acked_packets Ack.packets_acked))
  (:= Report.dup_acks (+ Report.dup_acks Ack.dup_acks))
  (:= Report.reordered (+ Report.reordered Ack.reordered))
  (:= Report.ecn_bytes (+ Report.ecn_bytes Ack.ecn_bytes))
  (:= Report.ecn_packets (+ Report.ecn_packets Ack.ecn_packets))
  (:= Report.ecn (or Report.ecn Ack.ecn))
  (:= Report.snd_una Ack.snd_una)
  (:= Report.snd_nxt Ack.snd_nxt)
  (:= Report.in_flight Ack.in_flight)
  (:= Report.rtt (if Ack.has_rtt Ack.rtt Report.rtt))
  (:= Report.has_rtt (or Report.has_rtt Ack.has_rtt))
  (:= Report.rtt_min (min Report.rtt_min Ack.rtt_min))
  (:= Report.rate (if Ack.has_rate Ack.rate Report.rate))
  (:= Report.has_rate (or Report.has_rate Ack.has_rate))
  (fallthrough))
; losses: the first kind, their count, the newest sequence points
(when Event.loss
  (:= Report.loss_kind (if Report.losses Report.loss_kind Loss.kind))
  (:= Report.losses (+ Report.losses Loss.count))
  (:= Report.loss_in_flight Loss.in_flight)
  (:= Report.loss_snd_nxt Loss.snd_nxt)
  (fallthrough))
";

/// Per signal, losses urgent: the fixed engine's default policy ([`crate::ReportPolicy::default`]).
const PER_SIGNAL: &str = "\
(when Event.loss (urgent))
(when true (report))
";

/// One report per `Control.interval` picoseconds from the period's first signal, losses urgent: the
/// fixed engine's `ReportEvery::Interval` (CCP's `Wait`), whose deadline wake reports what waits.
const PER_INTERVAL: &str = "\
(when Event.loss (urgent))
(when Event.tick (report))
(when (>= Now (+ Report.first_at Control.interval)) (report))
(when true (wake (+ Report.first_at Control.interval)))
";

/// The text of the per-signal program.
pub fn per_signal_text() -> String {
    format!("{FOLD}{PER_SIGNAL}")
}

/// The text of the per-interval program.
pub fn per_interval_text() -> String {
    format!("{FOLD}{PER_INTERVAL}")
}

/// The per-signal program, parsed once.
pub fn per_signal() -> Arc<Program> {
    static PROGRAM: OnceLock<Arc<Program>> = OnceLock::new();
    Arc::clone(PROGRAM.get_or_init(|| Arc::new(Program::parse(&per_signal_text()).expect("bundled program"))))
}

/// The programs of an algorithm whose `program` parameter is `on`: [`per_signal`] when it is `Some(true)`,
/// none otherwise (the fixed engines report).
pub fn per_signal_when(on: Option<bool>) -> Vec<Arc<Program>> {
    match on {
        Some(true) => vec![per_signal()],
        _ => Vec::new(),
    }
}

/// The per-interval program, parsed once.
pub fn per_interval() -> Arc<Program> {
    static PROGRAM: OnceLock<Arc<Program>> = OnceLock::new();
    Arc::clone(PROGRAM.get_or_init(|| Arc::new(Program::parse(&per_interval_text()).expect("bundled program"))))
}

/// Register numbers of the shared layout (both programs declare the same registers in the same order).
pub mod reg {
    /// Signals in the report.
    pub const EVENTS: u8 = 0;
    /// When the first of them came.
    pub const FIRST_AT: u8 = 1;
    /// ACKs.
    pub const ACKS: u8 = 2;
    /// Acknowledged bytes.
    pub const ACKED: u8 = 3;
    /// Acknowledged packets.
    pub const ACKED_PACKETS: u8 = 4;
    /// Duplicate ACKs.
    pub const DUP_ACKS: u8 = 5;
    /// ECN-echoed bytes.
    pub const ECN_BYTES: u8 = 6;
    /// ECN-echoed packets.
    pub const ECN_PACKETS: u8 = 7;
    /// Some ACK echoed ECE.
    pub const ECN: u8 = 8;
    /// Newest ACK point.
    pub const SND_UNA: u8 = 9;
    /// Newest next byte.
    pub const SND_NXT: u8 = 10;
    /// Newest in-flight bytes.
    pub const IN_FLIGHT: u8 = 11;
    /// Newest RTT sample.
    pub const RTT: u8 = 12;
    /// Some ACK carried an RTT sample.
    pub const HAS_RTT: u8 = 13;
    /// Least RTT sample (`u64::MAX`: none).
    pub const RTT_MIN: u8 = 14;
    /// Newest delivery rate.
    pub const RATE: u8 = 15;
    /// Some ACK carried a delivery rate.
    pub const HAS_RATE: u8 = 16;
    /// Loss signals.
    pub const LOSSES: u8 = 17;
    /// First loss kind (`Loss.kind` code).
    pub const LOSS_KIND: u8 = 18;
    /// Newest in-flight bytes at a loss.
    pub const LOSS_IN_FLIGHT: u8 = 19;
    /// Newest next byte at a loss.
    pub const LOSS_SND_NXT: u8 = 20;
    /// ACKs that revealed reordering.
    pub const REORDERED: u8 = 21;
    /// The reporting interval, picoseconds (control register of the per-interval program).
    pub const INTERVAL: u8 = 22;
}

/// Hands a report of these programs to the algorithm's loss and ACK handlers, in the order the fixed
/// engine's reports do (loss first). The ACK carries the least RTT sample as its one raw sample.
pub fn deliver(cc: &mut dyn CongestionControl, report: &ProgramReport<'_>, ctx: &mut Ctx) {
    let r = |i: u8| report.get(i);
    if r(reg::LOSSES) > 0 {
        let loss = Loss {
            kind: loss_kind_of(r(reg::LOSS_KIND)),
            count: r(reg::LOSSES) as u32,
            in_flight: r(reg::LOSS_IN_FLIGHT),
            snd_nxt: r(reg::LOSS_SND_NXT),
        };
        cc.on_loss(&loss, ctx);
    }
    if r(reg::ACKS) == 0 {
        return;
    }
    let samples: [Time; 1] = [r(reg::RTT_MIN)];
    let ack = Ack {
        acks: r(reg::ACKS) as u32,
        acked_bytes: r(reg::ACKED),
        acked_packets: r(reg::ACKED_PACKETS) as u32,
        ecn_bytes: r(reg::ECN_BYTES),
        ecn_packets: r(reg::ECN_PACKETS) as u32,
        ecn_echo: r(reg::ECN) != 0,
        rtt: (r(reg::HAS_RTT) != 0).then_some(r(reg::RTT)),
        rtt_samples: if samples[0] == u64::MAX { &[] } else { &samples },
        delivery_rate: (r(reg::HAS_RATE) != 0).then_some(r(reg::RATE)),
        snd_una: r(reg::SND_UNA),
        snd_nxt: r(reg::SND_NXT),
        in_flight: r(reg::IN_FLIGHT),
        int: &[],
        remote_delay: None,
        first_at: r(reg::FIRST_AT),
        path_flags: 0,
        dup_acks: r(reg::DUP_ACKS) as u32,
        reordered: r(reg::REORDERED) as u32,
    };
    cc.on_ack(&ack, ctx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_programs_parse_with_the_shared_layout() {
        for p in [per_signal(), per_interval()] {
            let names = ["events", "first_at", "acks", "acked", "rtt_min", "losses", "loss_snd_nxt", "interval"];
            let regs =
                [reg::EVENTS, reg::FIRST_AT, reg::ACKS, reg::ACKED, reg::RTT_MIN, reg::LOSSES, reg::LOSS_SND_NXT];
            for (name, reg) in names.iter().zip(regs.iter().chain([&reg::INTERVAL])) {
                assert_eq!(p.register(name), Some(*reg), "{name}");
            }
        }
        assert!(per_signal().reports_every_signal());
        assert!(!per_interval().reports_every_signal());
    }
}
