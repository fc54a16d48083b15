//! The retransmission timer's back-off, which every datapath's sender applies alike.
//!
//! RFC 6298, section 5.5: each time the retransmission timer expires, the sender doubles it, up to a
//! maximum, and a new round-trip sample (here: the acknowledgment point moving) takes it back to its
//! computed value. Without it, a flow that gets no turn through a congested port (tens of thousands of
//! flows through one bottleneck) times out once per minimum RTO for as long as it starves, and its
//! sender spends its time on timers rather than on packets. Off by default: the simulator's hosts model
//! RoCE NICs, whose timeout does not grow (the HPCC artifact), and every datapath follows the
//! scenario's `host.rto_backoff`.

use sluice_core::{Time, PS_PER_S};

/// The most a backed-off timer waits: 60 s, the least maximum RFC 6298 (section 2.5) allows.
pub const RTO_MAX: Time = 60 * PS_PER_S;

/// The timer after `timeouts` expiries in a row without progress: `rto` doubled that many times, at most
/// [`RTO_MAX`] (and never less than `rto`).
pub fn backed_off(rto: Time, timeouts: u32) -> Time {
    let ceiling = RTO_MAX.max(rto);
    let doubled = 1u64.checked_shl(timeouts).and_then(|factor| rto.checked_mul(factor));
    doubled.map_or(ceiling, |t| t.min(ceiling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::PS_PER_MS;

    #[test]
    fn the_timer_doubles_with_each_expiry_up_to_its_maximum() {
        let rto = 10 * PS_PER_MS;
        assert_eq!(backed_off(rto, 0), rto);
        assert_eq!(backed_off(rto, 1), 2 * rto);
        assert_eq!(backed_off(rto, 3), 8 * rto);
        // 10 ms doubled 13 times is 81.92 s: held at 60 s, also where the shift would overflow.
        assert_eq!(backed_off(rto, 13), RTO_MAX);
        assert_eq!(backed_off(rto, 63), RTO_MAX);
        assert_eq!(backed_off(rto, u32::MAX), RTO_MAX);
        // A minimum above the maximum stays the minimum.
        assert_eq!(backed_off(2 * RTO_MAX, 5), 2 * RTO_MAX);
    }
}
