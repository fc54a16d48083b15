//! RoCC's switch side (Taheri et al., CoNEXT'20; the authors' OMNeT++ model, `SwitchEtherQueue`): every
//! egress port computes a fair rate with a PI controller on its queue length once per update interval,
//! and tells the flows queued there.
//!
//! Every `update_interval` (T) a port computes, in rate units (`rate_unit`) and queue units
//! (`queue_unit`), from the queue `q` now and `q_old` one interval before:
//! - `q >= q_max` while the fair rate is above an eighth of the maximum: the fair rate drops to the
//!   minimum (multiplicative decrease);
//! - else `q - q_old >= q_mid` under the same condition: the fair rate halves;
//! - else the PI step `F = F - a (q - q_ref) - b (q - q_old)`, whose gains tune themselves to the rate:
//!   with `level` the smallest power of two (2 to 64) such that `F >= F_max / level`, `a = alpha_bar /
//!   (level / 2)` and `b = beta_bar / (level / 2)`;
//!
//! clamped to `[min_rate, link rate]`. The fair rate reaches senders as [`crate::Feedback::Signal`]: in
//! a feedback packet to each flow with a data packet leaving a non-empty queue, at most once per flow
//! per interval (the paper's rate messages), or written into every departing data packet, the path's
//! minimum echoed on its ACK (`feedback = "path"`).
//!
//! The model runs its update on a clock; here a port updates at the first packet it enqueues or
//! dequeues at or after each interval boundary, with the queue that packet sees (an idle port's missed
//! intervals all see that queue), so a run schedules no event for it.

use std::collections::HashSet;

use sluice_core::{Rate, Time};

use crate::rocc::{RoccConfig, RoccFeedback};
use crate::signal::{Combine, PacketView, PortSignal, PortView, Stamp, SwitchSignal};

/// RoCC's switch side with one run's settings.
#[derive(Debug, Clone)]
pub struct RoccSwitch {
    config: RoccConfig,
}

impl RoccSwitch {
    /// The switch side of `config`.
    pub fn new(config: RoccConfig) -> RoccSwitch {
        RoccSwitch { config }
    }
}

impl SwitchSignal for RoccSwitch {
    fn name(&self) -> &'static str {
        "rocc"
    }

    fn combine(&self) -> Combine {
        Combine::Min
    }

    fn port(&self, rate: Rate) -> Box<dyn PortSignal> {
        Box::new(RoccPort::new(&self.config, rate))
    }
}

/// RoCC's state at one egress port.
#[derive(Debug, Clone)]
pub struct RoccPort {
    interval: Time,
    rate_unit: Rate,
    queue_unit: u64,
    q_ref: i64,
    q_mid: i64,
    q_max: i64,
    f_min: i64,
    f_max: i64,
    alpha_bar: f64,
    beta_bar: f64,
    path: bool,
    /// The fair rate, in rate units.
    fair: i64,
    /// The queue at the previous update, bytes.
    q_old: u64,
    /// When the next update is due.
    next_update: Time,
    /// Flows told the current fair rate since the last update.
    told: HashSet<u64>,
}

impl RoccPort {
    /// A port whose link runs at `rate`, its fair rate at the link rate.
    pub fn new(config: &RoccConfig, rate: Rate) -> RoccPort {
        let unit = config.rate_unit.max(1);
        let q_unit = config.queue_unit.max(1);
        let units = |bytes: u64| (bytes / q_unit) as i64;
        let f_max = (rate / unit) as i64;
        RoccPort {
            interval: config.update_interval,
            rate_unit: unit,
            queue_unit: q_unit,
            q_ref: units(config.q_ref),
            q_mid: units(config.q_mid),
            q_max: units(config.q_max),
            f_min: ((config.min_rate / unit) as i64).min(f_max),
            f_max,
            alpha_bar: config.alpha_bar,
            beta_bar: config.beta_bar,
            path: config.feedback == RoccFeedback::Path,
            fair: f_max,
            q_old: 0,
            next_update: config.update_interval,
            told: HashSet::new(),
        }
    }

    /// The fair rate in bit/s.
    pub fn fair_rate(&self) -> Rate {
        self.fair as Rate * self.rate_unit
    }

    /// Runs the updates due by `now`, each with queue `queue` (bytes).
    fn catch_up(&mut self, now: Time, queue: u64) {
        while now >= self.next_update {
            if queue == 0 && self.q_old == 0 && self.fair == self.f_max {
                // A fixed point: every further update leaves the port as it is.
                let behind = (now - self.next_update) / self.interval + 1;
                self.next_update += behind * self.interval;
                self.told.clear();
                return;
            }
            self.update(queue);
            self.next_update += self.interval;
        }
    }

    /// One update of the fair rate with queue `queue` (bytes).
    fn update(&mut self, queue: u64) {
        let q = (queue / self.queue_unit) as i64;
        let q_old = (self.q_old / self.queue_unit) as i64;
        let above_eighth = self.fair > self.f_max / 8;
        let fair = if q >= self.q_max && above_eighth {
            self.f_min
        } else if q - q_old >= self.q_mid && above_eighth {
            self.fair / 2
        } else {
            let mut level = 2;
            while self.fair < self.f_max / level && level < 64 {
                level *= 2;
            }
            let ratio = level as f64 / 2.0;
            let (a, b) = (self.alpha_bar / ratio, self.beta_bar / ratio);
            // The model assigns the double to an int: truncation toward zero.
            (self.fair as f64 - a * (q - self.q_ref) as f64 - b * (q - q_old) as f64) as i64
        };
        self.fair = fair.clamp(self.f_min, self.f_max);
        self.q_old = queue;
        self.told.clear();
    }
}

impl PortSignal for RoccPort {
    fn on_enqueue(&mut self, port: &PortView, _packet: &PacketView) -> Stamp {
        self.catch_up(port.now, port.queue_bytes);
        Stamp::NONE
    }

    fn on_dequeue(&mut self, port: &PortView, packet: &PacketView) -> Stamp {
        self.catch_up(port.now, port.queue_bytes);
        if !packet.data {
            return Stamp::NONE;
        }
        if self.path {
            return Stamp { write: Some(self.fair_rate()), feedback: None };
        }
        if port.queue_bytes > 0 && self.told.insert(packet.flow) {
            return Stamp { write: None, feedback: Some(self.fair_rate()) };
        }
        Stamp::NONE
    }

    fn value(&self) -> u64 {
        self.fair_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::PS_PER_US;

    const G100: Rate = 100_000_000_000;

    fn view(now: Time, queue: u64) -> PortView {
        PortView {
            now,
            node: 7,
            port: 1,
            queue_bytes: queue,
            rate: G100,
            tx_bytes: 0,
            buffer_used: queue,
            buffer_size: 32_000_000,
        }
    }

    fn data(flow: u64) -> PacketView {
        PacketView { flow, data: true, wire_bytes: 1048, signal: None }
    }

    fn port() -> RoccPort {
        RoccPort::new(&RoccConfig::for_line_rate(G100), G100)
    }

    #[test]
    fn a_queue_above_its_reference_lowers_the_fair_rate_and_an_empty_one_raises_it() {
        let mut p = port();
        let q_ref = RoccConfig::for_line_rate(G100).q_ref;
        let t = 40 * PS_PER_US;
        p.on_dequeue(&view(t, q_ref * 2), &data(1));
        let after_growth = p.fair_rate();
        assert!(after_growth < G100, "{after_growth}");
        p.on_dequeue(&view(2 * t, q_ref * 2), &data(1));
        let steady_above = p.fair_rate();
        assert!(steady_above < after_growth, "a standing queue above q_ref keeps cutting");
        p.on_dequeue(&view(3 * t, 0), &data(1));
        assert!(p.fair_rate() > steady_above, "an empty queue raises the rate");
    }

    #[test]
    fn a_queue_past_q_max_drops_to_the_minimum_and_fast_growth_halves() {
        let config = RoccConfig::for_line_rate(G100);
        let t = config.update_interval;
        let mut p = port();
        p.on_enqueue(&view(t, config.q_max), &data(1));
        assert_eq!(p.fair_rate(), config.min_rate / config.rate_unit * config.rate_unit);
        let mut p = port();
        p.on_enqueue(&view(t, config.q_mid), &data(1));
        assert_eq!(p.fair_rate(), G100 / 2);
    }

    #[test]
    fn each_queued_flow_hears_once_per_interval_and_an_empty_queue_tells_nobody() {
        let mut p = port();
        let t = 40 * PS_PER_US;
        assert_eq!(p.on_dequeue(&view(t, 0), &data(1)), Stamp::NONE, "nothing queued behind it");
        let first = p.on_dequeue(&view(t + 1, 5_000), &data(1));
        assert!(first.feedback.is_some());
        assert_eq!(p.on_dequeue(&view(t + 2, 5_000), &data(1)), Stamp::NONE, "told already");
        assert!(p.on_dequeue(&view(t + 3, 5_000), &data(2)).feedback.is_some());
        assert!(p.on_dequeue(&view(2 * t, 5_000), &data(1)).feedback.is_some(), "a new interval");
        let ack = PacketView { data: false, ..data(3) };
        assert_eq!(p.on_dequeue(&view(2 * t, 5_000), &ack), Stamp::NONE);
    }

    #[test]
    fn an_idle_port_skips_ahead_without_walking_every_interval() {
        let mut p = port();
        p.on_dequeue(&view(10 * PS_PER_US * 1_000_000, 0), &data(1));
        assert_eq!(p.fair_rate(), G100);
        assert!(p.next_update > 10 * PS_PER_US * 1_000_000);
    }
}
