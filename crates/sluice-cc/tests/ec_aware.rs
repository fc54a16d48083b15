//! The EC-aware DACK/IACK state machines (Chong and Krishnan section II) against hand-derived sequences.

use sluice_cc::ecaware::{EcAwareConfig, EcInitiator, EcTarget, Fairness, Halt};
use sluice_cc::{
    Ack, AckKind, Arrival, CongestionControl, Ctx, FlowInfo, Loss, LossKind, QueueMove, ReceiverControl, RxCtx,
    StreamSample,
};

const MSS: u64 = 2048;

fn flow() -> FlowInfo {
    FlowInfo {
        flow_id: 0,
        mss: MSS as u32,
        header_bytes: 64,
        line_rate: 100_000_000_000,
        base_rtt: 8_000_000,
        hops: 4,
        size: None,
        start: 0,
    }
}

fn initiator() -> EcInitiator {
    let mut i = EcInitiator::new(EcAwareConfig::default());
    i.on_start(&flow(), &mut Ctx::new(0));
    i
}

/// One ACK of `acked` new bytes (0: a DACK) leaving `in_flight`; returns the window it set.
fn ack(i: &mut EcInitiator, acked: u64, in_flight: u64) -> u64 {
    let mut ctx = Ctx::new(0);
    i.on_ack(&Ack::single(acked, (acked / MSS) as u32, false, None, 0, in_flight, in_flight, 0), &mut ctx);
    ctx.decisions().cwnd.expect("every acknowledgment sets the window")
}

#[test]
fn initiator_walks_h_inf_h_minus1_h0_h1_and_back() {
    let mut i = initiator();
    assert_eq!((i.state(), i.cwnd()), (Halt::Unthrottled, 200_000), "OPT threshold: 2 x 100 KB BDP");
    // DACK: halt; nothing more may leave.
    assert_eq!(ack(&mut i, 0, 20_480), 20_480);
    assert_eq!(i.state(), Halt::Minus1);
    // IACK in H(-1): H0, one packet.
    assert_eq!(ack(&mut i, MSS, 18_432), 18_432 + MSS);
    assert_eq!(i.state(), Halt::Zero);
    // The packet left (in flight back to 20 480); a second IACK in a row: H1, counter reset, two packets.
    assert_eq!(ack(&mut i, MSS, 18_432), 18_432 + 2 * MSS);
    assert_eq!((i.state(), i.counter()), (Halt::One, 0));
    // Nothing sent since: the two unspent packets carry over and two more are allowed.
    assert_eq!(ack(&mut i, MSS, 16_384), 16_384 + 4 * MSS);
    assert_eq!(i.counter(), 1);
    for n in 2..6 {
        ack(&mut i, MSS, 16_384);
        assert_eq!((i.state(), i.counter()), (Halt::One, n));
    }
    // The sixth IACK in H1 reaches the threshold (6): back to H-inf and the full threshold.
    assert_eq!(ack(&mut i, MSS, 16_384), 200_000);
    assert_eq!(i.state(), Halt::Unthrottled);
    // Congested target: DACK and IACK alternate, the initiator oscillates between H(-1) and H0.
    for _ in 0..3 {
        assert_eq!(ack(&mut i, 0, 30_720), 30_720);
        assert_eq!(i.state(), Halt::Minus1);
        assert_eq!(ack(&mut i, MSS, 28_672), 28_672 + MSS);
        assert_eq!(i.state(), Halt::Zero);
    }
}

#[test]
fn after_a_nack_the_initiator_resends_one_packet_per_dack() {
    let mut i = initiator();
    ack(&mut i, 0, 40_960);
    // Go-back-N rewound: nothing in flight; one packet may go at once.
    let mut ctx = Ctx::new(0);
    i.on_loss(&Loss { kind: LossKind::Nack, count: 1, in_flight: 0, snd_nxt: 81_920 }, &mut ctx);
    assert_eq!((i.state(), ctx.decisions().cwnd), (Halt::Retransmit, Some(MSS)));
    // It left; each DACK (a pre-drop packet finished processing) lets one more go.
    assert_eq!(ack(&mut i, 0, MSS), 2 * MSS);
    assert_eq!(ack(&mut i, 0, 2 * MSS), 3 * MSS);
    assert_eq!(i.state(), Halt::Retransmit);
    // The first IACK acknowledges resent data: back to H(-1), and as an IACK on to H0 with one packet.
    assert_eq!(ack(&mut i, MSS, 2 * MSS), 3 * MSS);
    assert_eq!(i.state(), Halt::Zero);
}

#[test]
fn a_folded_report_replays_its_dacks_then_its_iacks() {
    let mut i = initiator();
    let mut ctx = Ctx::new(0);
    let folded = Ack { acks: 3, dup_acks: 1, ..Ack::single(2 * MSS, 2, false, None, 0, 0, 10_240, 0) };
    i.on_ack(&folded, &mut ctx);
    // DACK: H(-1); IACK: H0 (+1); IACK: H1 (+2).
    assert_eq!((i.state(), i.counter()), (Halt::One, 0));
    assert_eq!(ctx.decisions().cwnd, Some(10_240 + 3 * MSS));
}

fn target() -> (EcTarget, RxCtx) {
    let mut t = EcTarget::new(EcAwareConfig::default());
    let mut ctx = RxCtx::new(0);
    t.on_start(&flow(), &mut ctx);
    (t, ctx)
}

fn arrive(t: &mut EcTarget, accepted: bool, rcv_nxt: u64, queue_bytes: u64) -> (AckKind, Option<u64>) {
    let mut ctx = RxCtx::new(0);
    t.on_data(&Arrival { accepted, rcv_nxt, queue_bytes, ..Arrival::default() }, &mut ctx);
    (ctx.decisions().ack, ctx.decisions().ack_seq)
}

/// The flow's packet `seq` crossed the threshold; returns (DACKs first, ack kind, ack sequence).
fn cross(t: &mut EcTarget, seq: u64, queue_bytes: u64) -> (u32, AckKind, Option<u64>) {
    let mut ctx = RxCtx::new(0);
    t.on_crossed(&QueueMove { at: 0, seq, bytes: MSS as u32, queue_bytes }, &mut ctx);
    let d = ctx.decisions();
    (d.dacks_before, d.ack, d.ack_seq)
}

fn processed(t: &mut EcTarget, seq: u64) -> AckKind {
    let mut ctx = RxCtx::new(0);
    t.on_processed(&QueueMove { at: 0, seq, bytes: MSS as u32, queue_bytes: 0 }, &mut ctx);
    ctx.decisions().ack
}

fn sample(t: &mut EcTarget, packets: u64, min: u64, max: u64, streams: u32) {
    let s = StreamSample { at: 0, packets, min_packets: min, max_packets: max, streams };
    t.on_sample(&s, &mut RxCtx::new(0));
}

#[test]
fn target_iacks_below_the_threshold_and_dacks_above_it() {
    let (mut t, start) = target();
    assert_eq!(start.decisions().queue_watch, Some(9 * 1024), "watches the 9 KB threshold");
    assert_eq!(start.decisions().sample_every, Some(8_000_000));
    // Queue at 4 224 bytes after the arrival: not congested, IACK of everything accepted.
    assert_eq!(arrive(&mut t, true, 4096, 4224), (AckKind::Immediate, Some(4096)));
    // 10 000 bytes > 9 216: congested, standalone DACK at once.
    assert_eq!(arrive(&mut t, true, 6144, 10_000).0, AckKind::Delayed);
    // Its packet crosses below the threshold while the queue is still congested: DACK, then IACK of
    // the highest sequence below the threshold (its end), not of everything received.
    assert_eq!(cross(&mut t, 4096, 10_000), (1, AckKind::Immediate, Some(6144)));
    // Crossing when the queue is no longer congested: the IACK alone.
    assert_eq!(cross(&mut t, 6144, 8000), (0, AckKind::Immediate, Some(8192)));
    // Processed packets get no acknowledgment in normal operation.
    assert_eq!(processed(&mut t, 4096), AckKind::Default);
}

#[test]
fn after_a_drop_pre_drop_packets_pace_the_resend_with_dacks() {
    let (mut t, _) = target();
    arrive(&mut t, true, 20_480, 30_000);
    // A drop: the datapath NACKs 20 480; packets below it "arrived before the drop".
    assert_eq!(arrive(&mut t, false, 20_480, 81_000).0, AckKind::Withhold);
    assert_eq!((t.covered_until(), t.recovering()), (20_480, true));
    // A pre-drop packet crossing: the NACK already acknowledged it, no IACK.
    assert_eq!(cross(&mut t, 10_240, 20_000).1, AckKind::Withhold);
    // While pre-drop packets are processed, resent packets arriving congested get no DACK...
    assert_eq!(arrive(&mut t, true, 22_528, 20_000).0, AckKind::Withhold);
    // ...and each processed pre-drop packet sends one.
    assert_eq!(processed(&mut t, 16_384), AckKind::Delayed);
    assert_eq!(processed(&mut t, 18_432), AckKind::Delayed);
    assert!(!t.recovering(), "the last pre-drop packet is processed");
    assert_eq!(processed(&mut t, 20_480), AckKind::Default);
    assert_eq!(arrive(&mut t, true, 24_576, 20_000).0, AckKind::Delayed);
}

#[test]
fn fairness_coalesces_the_fast_stream_and_suppresses_dacks_of_the_slow_one() {
    let (mut t, _) = target();
    // 10 packets against a slowest of 4 (> 1.25 x 4): coalesce every other crossing IACK.
    sample(&mut t, 10, 4, 10, 3);
    assert_eq!(t.fairness(), Fairness::CoalesceIacks);
    assert_eq!(cross(&mut t, 0, 5000).1, AckKind::Withhold);
    assert_eq!(cross(&mut t, 2048, 5000), (0, AckKind::Immediate, Some(4096)), "covers the skipped one");
    assert_eq!(cross(&mut t, 4096, 5000).1, AckKind::Withhold);
    // 4 packets against a fastest of 10: suppress DACKs, so IACKs come in a row and the initiator
    // reaches H1.
    sample(&mut t, 4, 4, 10, 3);
    assert_eq!(t.fairness(), Fairness::SuppressDacks);
    assert_eq!(arrive(&mut t, true, 10_240, 20_000).0, AckKind::Withhold);
    assert_eq!(cross(&mut t, 8192, 20_000), (0, AckKind::Immediate, Some(10_240)));
    // Within the margin, or alone: no action.
    sample(&mut t, 9, 8, 10, 3);
    assert_eq!(t.fairness(), Fairness::Neutral);
    sample(&mut t, 10, 10, 10, 1);
    assert_eq!(t.fairness(), Fairness::Neutral);
    assert_eq!(arrive(&mut t, true, 12_288, 20_000).0, AckKind::Delayed);
}
