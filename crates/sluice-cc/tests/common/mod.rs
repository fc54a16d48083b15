//! Helpers shared by the controller tests: hand-built flows, ACKs and losses.

#![allow(dead_code)]

use sluice_cc::{Ack, FlowInfo, Loss, LossKind};
use sluice_core::{Rate, Time, PS_PER_US};

/// Payload bytes per packet in every test.
pub const MSS: u64 = 1000;
/// 100 Gb/s.
pub const G100: Rate = 100_000_000_000;

/// A flow with 1000 B segments at `line_rate` and a 10 us base RTT.
pub fn flow(line_rate: Rate) -> FlowInfo {
    FlowInfo {
        flow_id: 1,
        mss: MSS as u32,
        header_bytes: 48,
        line_rate,
        base_rtt: 10 * PS_PER_US,
        hops: 2,
        size: None,
        start: 0,
    }
}

/// An ACK of `acked` new bytes that moves the ACK point to `snd_una`, with `snd_nxt` sent so far.
pub fn ack(acked: u64, snd_una: u64, snd_nxt: u64, ecn_echo: bool) -> Ack<'static> {
    Ack::single(acked, acked.div_ceil(MSS) as u32, ecn_echo, None, snd_una, snd_nxt, snd_nxt - snd_una, 0)
}

/// A loss of `kind` with `in_flight` bytes outstanding and `snd_nxt` sent so far.
pub fn loss(kind: LossKind, in_flight: u64, snd_nxt: u64) -> Loss {
    Loss { kind, count: 1, in_flight, snd_nxt }
}

/// The trace of a controller as `(name, value)` pairs.
pub fn trace(cc: &dyn sluice_cc::CongestionControl) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    cc.trace(&mut |name, value| out.push((name, value)));
    out
}

/// Microseconds to picoseconds.
pub fn us(n: u64) -> Time {
    n * PS_PER_US
}
