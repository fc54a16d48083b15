//! A 16:1 incast with and without PFC.
//!
//! Setting: a star of 17 hosts at 100 Gbps and 1 us; hosts 1..=16 each send 2 MB to host 0 at the same
//! instant, so the switch port towards host 0 is offered 16 times its rate. The algorithm is `none`
//! (line rate, unlimited window): nothing but the fabric limits the senders, so with PFC on the pause
//! frames do all the work, and with PFC off loss recovery does.
//!
//! - PFC on: no drops, every flow finishes, nothing is sent twice, pauses are sent, and the shared
//!   buffer peaks below both the configured size and the bound derived in [`lossless_bound`].
//! - PFC off, 200 KB buffer, go-back-N and selective repeat: drops occur, every flow still finishes,
//!   bytes are retransmitted, and payload is conserved exactly: every byte a host sent either reached a
//!   host or was dropped, and every byte beyond the flows' sizes is a retransmission.

mod common;

use common::{star, time, Run};
use sluice_core::{Time, PS_PER_MS};
use sluice_sim::{LossRecovery, SimOutput, StopRule};

const SENDERS: u32 = 16;
const FLOW_BYTES: u64 = 2_000_000;
/// Wire bytes of a full data packet (1000 B payload + 82 B headers).
const WIRE: u64 = 1082;
/// PFC headroom per ingress port: what arrives after an XOFF is decided is at most the pause frame's
/// flight (1 us) plus the data already on the wire (1 us) at 12.5 B/ns, plus the packet the sender is
/// serializing and one more: 25 000 + 2 x 1082 = 27 164 B. 40 KB leaves a margin.
const HEADROOM: u64 = 40_000;
/// Simulated time of every run. Without congestion control the 16 senders, which start at one instant
/// and stay in step, keep the 200 KB buffer overflowing: which of their simultaneous packets the switch
/// admits changes from one instant to the next, so every flow loses packets, and most of what is sent
/// is dropped (congestion collapse). The slowest case (lossy, go-back-N) finishes after about 150 ms.
const RUN_TIME: Time = 250 * PS_PER_MS;

fn incast(pfc: bool, buffer: u64, recovery: LossRecovery) -> SimOutput {
    let mut run = Run::new(star(SENDERS + 1, "100Gbps", "1us"), "none");
    for src in 1..=SENDERS {
        run = run.flow(src, 0, FLOW_BYTES, time("10us"));
    }
    run.switch.buffer = buffer;
    run.switch.pfc.enabled = pfc;
    run.switch.pfc.headroom = Some(HEADROOM);
    run.host.loss_recovery = recovery;
    // Run a fixed time well past the last completion rather than stopping when the last flow
    // finishes: the counters are compared once no packet is left in flight (a sender may still have
    // resends of bytes the receiver already holds on the wire when its last ACK arrives).
    run.stop = StopRule { duration: Some(RUN_TIME), time_limit: RUN_TIME };
    let out = run.run();
    let last = out.flows.iter().filter_map(|f| f.finish).max().unwrap_or(0);
    println!(
        "pfc {pfc}, buffer {buffer} B, {recovery:?}: {}/{} flows finished, last at {:.1} us; drops {} \
         ({} B), retransmitted {} B, sent {} B, delivered {} B; PFC pauses {}, paused {:.1} us; \
         max switch buffer {} B, timeouts {}",
        out.flows.iter().filter(|f| f.finish.is_some()).count(),
        out.flows.len(),
        last as f64 / 1e6,
        out.run.drops,
        out.run.bytes_dropped,
        out.run.retransmitted_bytes,
        out.run.bytes_sent,
        out.run.bytes_delivered,
        out.run.pfc_pauses,
        out.run.pfc_pause_time as f64 / 1e6,
        out.switches[0].max_buffer,
        out.counters.timeouts,
    );
    out
}

/// The most the shared buffer can hold in this incast with PFC on.
///
/// The switch (switch.rs) reserves `headroom + reserve` per port and leaves `pool = buffer - 17 x
/// (headroom + reserve)` to share. An ingress queue may grow its shared part `s_i` while `s_i <= (pool -
/// S) / 8` (shift 3), `S` being the shared bytes of all queues; past that it pauses its sender and
/// what still arrives goes to its headroom. The 16 senders start together and are served in turn, so
/// their queues grow alike: each stops at `s = (pool - 16 s) / 8`, i.e. `S = 16 s = 2/3 pool`. With
/// one packet of slack per queue (the S a queue saw at its last admission may lag by a packet per
/// queue): `s_i <= (pool - S + 16 WIRE) / 8 + WIRE`, so `S <= 2/3 pool + 16 WIRE`; the bound allows
/// twice that slack. On top come every port's reserve and the 16 senders' headroom.
fn lossless_bound(buffer: u64, reserve: u64) -> u64 {
    let ports = SENDERS as u64 + 1;
    let pool = buffer - ports * (HEADROOM + reserve);
    let shared = 2 * pool / 3 + SENDERS as u64 * (2 * WIRE);
    shared + ports * reserve + SENDERS as u64 * HEADROOM
}

fn assert_all_finished(out: &SimOutput) {
    for f in &out.flows {
        assert!(f.finish.is_some(), "flow {} ({} -> {}) did not finish", f.id, f.src, f.dst);
        assert_eq!(f.delivered, FLOW_BYTES, "flow {} delivered {} B", f.id, f.delivered);
    }
}

#[test]
fn lossless_incast_has_no_drops_and_a_bounded_buffer() {
    let reserve = sluice_sim::PfcConfig::default().reserve;
    for buffer in [32_000_000, 4_000_000] {
        let out = incast(true, buffer, LossRecovery::GoBackN);
        assert_all_finished(&out);
        assert_eq!(out.run.drops, 0, "a lossless fabric dropped packets");
        assert_eq!(out.run.retransmitted_bytes, 0);
        assert_eq!(out.run.bytes_sent, SENDERS as u64 * FLOW_BYTES, "something was sent twice");
        assert_eq!(out.run.bytes_delivered, out.run.bytes_sent);
        assert!(out.run.pfc_pauses > 0, "a 16:1 incast at line rate must pause the senders");
        assert!(out.run.pfc_pause_time > 0);

        let max = out.switches[0].max_buffer;
        let bound = lossless_bound(buffer, reserve);
        let pool = buffer - (SENDERS as u64 + 1) * (HEADROOM + reserve);
        println!("  buffer {buffer} B: peak {max} B, derived bound {bound} B, 2/3 of the pool {} B", 2 * pool / 3);
        assert!(max < buffer, "peak {max} B reached the configured buffer {buffer} B");
        assert!(max <= bound, "peak {max} B above the derived bound {bound} B");
        // The bound is tight: PFC holds the queue near the 2/3-of-pool equilibrium rather than far below.
        assert!(max >= 2 * pool / 3 * 95 / 100, "peak {max} B well below the PFC equilibrium");
        let bottleneck = common::port(&out, "sw0", 0);
        assert_eq!(bottleneck.drops, 0);
    }
}

#[test]
fn lossy_incast_drops_and_recovers() {
    let buffer = 200_000;
    for recovery in [LossRecovery::GoBackN, LossRecovery::Selective] {
        let out = incast(false, buffer, recovery);
        assert_all_finished(&out);
        let r = &out.run;
        assert!(r.drops > 0, "{recovery:?}: a 16:1 incast into a 200 KB buffer must drop");
        assert_eq!(out.run.pfc_pauses, 0);
        assert!(r.retransmitted_bytes > 0, "{recovery:?}: drops were not retransmitted");
        // Conservation: each payload byte put on a link reached a host or was dropped in the switch.
        assert_eq!(r.bytes_sent, r.bytes_delivered + r.bytes_dropped, "{recovery:?}: payload not conserved");
        // Each byte of each flow was sent once for the first time; everything else was a resend.
        assert_eq!(r.bytes_sent - r.retransmitted_bytes, SENDERS as u64 * FLOW_BYTES, "{recovery:?}");
        let per_flow: u64 = out.flows.iter().map(|f| f.retransmitted_bytes).sum();
        assert_eq!(per_flow, r.retransmitted_bytes, "{recovery:?}: per-flow resends do not add up");
        let bottleneck = common::port(&out, "sw0", 0);
        assert_eq!(bottleneck.drops, r.drops, "{recovery:?}: drops elsewhere than at the congested port");
        // Dynamic threshold with alpha 1 and one congested queue: q <= free = buffer - q after admission,
        // so the queue never exceeds (buffer + one packet) / 2.
        assert!(
            bottleneck.max_queue <= (buffer + WIRE) / 2,
            "{recovery:?}: queue {} B above the dynamic threshold",
            bottleneck.max_queue
        );
    }
}
