//! Decision filters (TAURUS section 3.5): a boundary filter clamps decisions to what the datapath can
//! carry out, a duplicate filter drops decisions equal to the last one sent.

use sluice_cc::Decisions;
use sluice_core::Rate;

use crate::config::PlaneConfig;
use crate::counters::PlaneCounters;

/// Per-flow filter state: the last decisions that went to the datapath.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    last_cwnd: Option<u64>,
    last_rate: Option<Rate>,
}

impl Filters {
    /// Filters `d` in place for a flow whose NIC runs at `line_rate`.
    pub fn apply(&mut self, d: &mut Decisions, line_rate: Rate, config: &PlaneConfig, counters: &mut PlaneCounters) {
        if let Some(rate) = d.rate {
            counters.decisions += 1;
            let clamped = rate.clamp(config.min_rate.min(line_rate), line_rate);
            if clamped != rate {
                counters.filtered_boundary += 1;
            }
            d.rate = self.dedup_rate(clamped, config, counters);
        }
        if let Some(cwnd) = d.cwnd {
            counters.decisions += 1;
            let clamped = cwnd.max(config.min_cwnd).min(config.max_cwnd.unwrap_or(u64::MAX));
            if clamped != cwnd {
                counters.filtered_boundary += 1;
            }
            d.cwnd = self.dedup_cwnd(clamped, config, counters);
        }
    }

    fn dedup_rate(&mut self, rate: Rate, config: &PlaneConfig, counters: &mut PlaneCounters) -> Option<Rate> {
        if config.duplicate_filter && self.last_rate == Some(rate) {
            counters.filtered_duplicate += 1;
            return None;
        }
        self.last_rate = Some(rate);
        Some(rate)
    }

    fn dedup_cwnd(&mut self, cwnd: u64, config: &PlaneConfig, counters: &mut PlaneCounters) -> Option<u64> {
        if config.duplicate_filter && self.last_cwnd == Some(cwnd) {
            counters.filtered_duplicate += 1;
            return None;
        }
        self.last_cwnd = Some(cwnd);
        Some(cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_then_duplicate() {
        let config = PlaneConfig::default();
        let mut counters = PlaneCounters::default();
        let mut f = Filters::default();
        let mut d = Decisions { rate: Some(500_000_000_000), cwnd: Some(0), ..Decisions::default() };
        f.apply(&mut d, 100_000_000_000, &config, &mut counters);
        assert_eq!(d.rate, Some(100_000_000_000), "capped at line rate");
        assert_eq!(d.cwnd, Some(1), "raised to the minimum window");
        assert_eq!(counters.filtered_boundary, 2);
        let mut again = Decisions { rate: Some(100_000_000_000), cwnd: Some(5000), ..Decisions::default() };
        f.apply(&mut again, 100_000_000_000, &config, &mut counters);
        assert_eq!(again.rate, None, "unchanged rate is not sent again");
        assert_eq!(again.cwnd, Some(5000));
        assert_eq!((counters.decisions, counters.filtered_duplicate), (4, 1));
        let mut slow = Decisions { rate: Some(10), ..Decisions::default() };
        f.apply(&mut slow, 100_000_000_000, &config, &mut counters);
        assert_eq!(slow.rate, Some(100_000), "raised to the 100 Kbps floor");
        let capped = PlaneConfig { max_cwnd: Some(64_000), ..PlaneConfig::default() };
        let mut big = Decisions { cwnd: Some(1_000_000), ..Decisions::default() };
        f.apply(&mut big, 100_000_000_000, &capped, &mut counters);
        assert_eq!(big.cwnd, Some(64_000), "capped at max_cwnd");
    }
}
