//! The host-level policy API: algorithms that act on a whole host rather than on one flow.
//!
//! Host congestion (contention inside the host between the NIC's DMA writes and local memory traffic;
//! Agarwal et al., "hostCC", SIGCOMM'23; TAURUS section 3.3) is seen and resolved at the host: a host
//! policy reads the host's congestion signals ([`HostSignal`]: NIC-to-memory buffer occupancy and
//! interconnect utilization) and decides two host actions:
//! - throttle the host's local memory traffic in levels, as Intel Memory Bandwidth Allocation (MBA) does
//!   (hostCC's host-local response);
//! - set ECN Congestion Experienced on received data packets, so that the senders' ECN-based congestion
//!   control backs off (hostCC's network response).
//!
//! A policy is a [`HostControl`] object, one per host, built by the algorithm's factory
//! ([`crate::Factory::host_policy`]); the datapath calls [`HostControl::on_host`] for every sample and
//! applies the [`HostDecisions`] written into the [`HostCtx`].

use sluice_core::{Rate, Time};

use crate::api::HostSignal;

/// Static facts about a host, given to its policy when it is built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostInfo {
    /// The NIC's line rate.
    pub line_rate: Rate,
    /// Bandwidth of the host interconnect the NIC writes through (PCIe), bit/s.
    pub interconnect_rate: Rate,
    /// Highest local-traffic throttle level the host supports (levels run 0 = unthrottled to this).
    pub max_throttle_level: u8,
    /// How often the datapath samples the host signals.
    pub sample_interval: Time,
}

/// The decisions a host policy made while handling one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostDecisions {
    /// New local-traffic throttle level (MBA-like; 0 = unthrottled), if changed. The datapath clamps it to
    /// [`HostInfo::max_throttle_level`].
    pub throttle_level: Option<u8>,
    /// Start (`true`) or stop (`false`) marking ECN CE on received data packets, if changed.
    pub mark_ecn: Option<bool>,
}

/// The handle a host policy gets with each sample: the current time and a place for decisions.
#[derive(Debug)]
pub struct HostCtx {
    now: Time,
    decisions: HostDecisions,
}

impl HostCtx {
    /// A context for a sample at `now`.
    pub fn new(now: Time) -> HostCtx {
        HostCtx { now, decisions: HostDecisions::default() }
    }

    /// The time of the sample.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Sets the local-traffic throttle level.
    #[inline]
    pub fn set_throttle_level(&mut self, level: u8) {
        self.decisions.throttle_level = Some(level);
    }

    /// Turns ECN marking of received data packets on or off.
    #[inline]
    pub fn mark_ecn(&mut self, on: bool) {
        self.decisions.mark_ecn = Some(on);
    }

    /// The decisions written so far.
    pub fn decisions(&self) -> &HostDecisions {
        &self.decisions
    }
}

/// A host-level policy instance, one per host.
pub trait HostControl: Send {
    /// The registered algorithm name.
    fn name(&self) -> &'static str;

    /// A host signal was sampled.
    fn on_host(&mut self, signal: &HostSignal, ctx: &mut HostCtx);

    /// Reports the policy's state variables as `(name, value)` pairs.
    fn trace(&self, _out: &mut dyn FnMut(&'static str, f64)) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_record_the_last_call() {
        let mut ctx = HostCtx::new(7);
        ctx.set_throttle_level(2);
        ctx.set_throttle_level(3);
        ctx.mark_ecn(true);
        assert_eq!(ctx.decisions(), &HostDecisions { throttle_level: Some(3), mark_ecn: Some(true) });
        assert_eq!(ctx.now(), 7);
    }
}
