//! The token transport's settings for a run: the algorithm's [`TokenTransport`] with what the run's flows
//! resolve (token size, Homa's overcommitment and unscheduled priority cutoffs).

use sluice_cc::token::TokenTransport;
use sluice_core::{Rate, Time};

/// Run-wide settings of the transport.
#[derive(Debug, Clone)]
pub struct RdEnv {
    /// The algorithm's transport settings.
    pub transport: TokenTransport,
    /// Payload bytes per token (K).
    pub token_bytes: u64,
    /// Homa unscheduled priority cutoffs: a flow of size <= `cutoffs[i]` sends unscheduled packets in
    /// queue `1 + i` (empty without priorities).
    pub cutoffs: Vec<u64>,
}

impl RdEnv {
    /// Settings for a run whose flows have `sizes` (Homa cutoffs split their unscheduled bytes evenly).
    /// An `overcommit` of 0 is resolved here from the sizes ([`workload_overcommit`]).
    pub fn new(mut transport: TokenTransport, mtu: u32, sizes: &[u64], line_rate: Rate, base_rtt: Time) -> RdEnv {
        let token_bytes = transport.token_bytes(mtu);
        let bdp = (line_rate as u128 * base_rtt as u128 / 8 / sluice_core::PS_PER_S as u128) as u64;
        let unscheduled = transport.unscheduled.bytes(None, bdp);
        if transport.overcommit == 0 {
            transport.overcommit = workload_overcommit(sizes, unscheduled);
        }
        let cutoffs = if transport.priorities {
            let levels = 7 - transport.overcommit.min(6) as usize;
            unscheduled_cutoffs(sizes, unscheduled, levels)
        } else {
            Vec::new()
        };
        RdEnv { transport, token_bytes, cutoffs }
    }

    /// Time between two tokens of one NIC or switch port at `rate`: the token and the data it releases
    /// together fill the link (ExpressPass's limiter, NDP's pull pacer).
    pub fn token_gap(&self, rate: Rate, header_bytes: u32) -> Time {
        sluice_cc::token::token_gap(&self.transport, self.token_bytes, rate, header_bytes)
    }

    /// The queue of an unscheduled packet of a flow of `size` bytes.
    pub(crate) fn unscheduled_queue(&self, size: u64, data_queue: u8) -> u8 {
        if self.cutoffs.is_empty() {
            return data_queue;
        }
        let level = self.cutoffs.iter().position(|&c| size <= c).unwrap_or(self.cutoffs.len() - 1);
        1 + level as u8
    }

    /// The queue of scheduled packets of a flow of SRPT rank `rank`.
    pub(crate) fn scheduled_queue(&self, rank: usize) -> u64 {
        if self.cutoffs.is_empty() {
            return u64::MAX;
        }
        let first = 8 - self.transport.overcommit.min(6) as usize;
        (first + rank).min(7) as u64
    }
}

/// Homa's overcommitment degree for a workload of `sizes`: the number of scheduled priority levels
/// (HomaSimulation's `numSendersToKeepGranted` equals its scheduled levels, set per workload: 1 for the
/// key-value workload, 6 of 8 for web server, 7 of 8 for Hadoop, cache follower and DCTCP), chosen as
/// Homa does by splitting the 7 data levels between scheduled and unscheduled packets in proportion to the
/// bytes each kind carries (`min(size, unscheduled)` per flow is unscheduled), at least one level each.
/// Without sized flows (long-lived only) it is 4, HomaSimulation's all-RPC setting.
pub fn workload_overcommit(sizes: &[u64], unscheduled: u64) -> u32 {
    let total: u128 = sizes.iter().map(|&s| s as u128).sum();
    if total == 0 {
        return 4;
    }
    let unscheduled_bytes: u128 = sizes.iter().map(|&s| s.min(unscheduled) as u128).sum();
    let scheduled_share = (total - unscheduled_bytes) as f64 / total as f64;
    ((7.0 * scheduled_share).round() as u32).clamp(1, 6)
}

/// Homa's unscheduled cutoffs (section 3.4): sort flows by size and split the unscheduled bytes they send
/// (`min(size, unscheduled)` each) into `levels` equal shares; smaller flows get the higher levels.
pub fn unscheduled_cutoffs(sizes: &[u64], unscheduled: u64, levels: usize) -> Vec<u64> {
    let mut sorted: Vec<u64> = sizes.to_vec();
    sorted.sort_unstable();
    let total: u128 = sorted.iter().map(|&s| s.min(unscheduled) as u128).sum();
    let mut cutoffs = Vec::with_capacity(levels);
    let mut acc: u128 = 0;
    let mut next = 1;
    for &s in &sorted {
        acc += s.min(unscheduled) as u128;
        while next < levels && acc * levels as u128 >= total * next as u128 {
            if cutoffs.last() != Some(&s) {
                cutoffs.push(s);
            }
            next += 1;
        }
    }
    cutoffs.push(u64::MAX);
    cutoffs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoffs_split_unscheduled_bytes_evenly() {
        // 100 flows of 1 KB and 10 of 100 KB with 10 KB unscheduled: 100 KB + 100 KB of unscheduled bytes.
        let mut sizes = vec![1_000; 100];
        sizes.extend([100_000; 10]);
        let c = unscheduled_cutoffs(&sizes, 10_000, 2);
        assert_eq!(c, vec![1_000, u64::MAX]);
        let c = unscheduled_cutoffs(&sizes, 10_000, 4);
        assert_eq!(c[0], 1_000);
        assert_eq!(*c.last().unwrap(), u64::MAX);
    }

    #[test]
    fn overcommitment_follows_the_workloads_scheduled_bytes() {
        // Key-value: every message fits in its unscheduled bytes, one scheduled level.
        assert_eq!(workload_overcommit(&[100, 500, 2_000, 9_000], 10_000), 1);
        // Bulk: nearly all bytes are scheduled, all but one of the 7 data levels.
        assert_eq!(workload_overcommit(&[1_000_000, 3_000_000, 500], 10_000), 6);
        // Half the bytes scheduled: 7 x 0.5 rounds to 4 levels.
        assert_eq!(workload_overcommit(&[30_000, 10_000], 10_000), 4);
        assert_eq!(workload_overcommit(&[], 10_000), 4, "no sized flows: HomaSimulation's all-RPC setting");
        let homa = TokenTransport { overcommit: 0, priorities: true, srpt: true, ..TokenTransport::default() };
        // 8 Gbps x 10 us: 10 KB unscheduled; 600 messages of 10 B to 6 KB.
        let key_value: Vec<u64> = (1..=600).map(|i| i * 10).collect();
        let env = RdEnv::new(homa, 1_000, &key_value, 8_000_000_000, 10_000_000);
        assert_eq!(env.transport.overcommit, 1, "0 is resolved from the run's flows");
        assert_eq!(env.cutoffs.len(), 6, "the other 6 levels carry unscheduled packets");
        let fixed = TokenTransport { overcommit: 3, priorities: true, srpt: true, ..TokenTransport::default() };
        assert_eq!(RdEnv::new(fixed, 1_000, &[100], 8_000_000_000, 10_000_000).transport.overcommit, 3);
    }
}
