//! How many flows a workload entry will generate, worked out before generating anything, so that an
//! absurd entry is refused instead of exhausting memory.

use sluice_core::{Time, PS_PER_S};

use crate::generator::WorkloadContext;
use crate::spec::validate::{existing_file, load_cdf};
use crate::{WorkloadError, WorkloadSpec};

/// The most flows all workload entries of a scenario may generate together: 2^24 (16,777,216).
///
/// An engineering bound, far below the id width (flow ids are `u32` in the simulator): flows are
/// generated as a run reaches them and retired when they finish, but each keeps its result row and a
/// few ids until the rows are written (peak RSS grows by about 143 bytes per flow of a memcached
/// load), so 2^24 flows need about 2.3 GiB. Past that, a count is almost certainly a typo (a `repeats`
/// or a `duration` a thousand times too large). Poisson entries are held to their expected count, which
/// the drawn count exceeds by a few standard deviations at most.
pub const MAX_FLOWS: u64 = 1 << 24;

impl WorkloadSpec {
    /// The number of flows the entry generates on `ctx`'s hosts, without generating them: exact for
    /// incast (senders x repeats), permutation (one per host), all-to-all (`h x (h - 1)`), long-lived
    /// flows and flow lists (the file's flow lines); for Poisson the expected count, participating hosts x
    /// duration / mean gap, where the mean gap is `mean_size x 8 / (host_rate x load)`; for a closed loop
    /// the most it can start (see [`crate::ClosedLoop`]): its slots plus the mean sizes its hosts carry in
    /// `duration`. The entry must be
    /// valid ([`WorkloadSpec::validate_in`]); Poisson reads its CDF and flow lists their file.
    pub fn flow_count(&self, ctx: &WorkloadContext) -> Result<u64, WorkloadError> {
        let hosts = |list: &Option<Vec<u32>>| list.as_ref().map_or(ctx.n_hosts as u64, |l| l.len() as u64);
        Ok(match self {
            WorkloadSpec::Poisson { cdf, load, duration, hosts: list, size_scale, .. } => {
                let mean = load_cdf(cdf, ctx.base_dir)?.mean() * size_scale.unwrap_or(1.0);
                poisson_count(hosts(list), *duration, mean, ctx.host_rate as f64 * load)
            }
            WorkloadSpec::Incast { senders, sender_list, repeats, .. } => {
                let count = match (senders, sender_list) {
                    (_, Some(list)) => list.len() as u64,
                    (Some(n), None) => *n as u64,
                    (None, None) => ctx.n_hosts.saturating_sub(1) as u64,
                };
                count * *repeats as u64
            }
            WorkloadSpec::Permutation { .. } => ctx.n_hosts as u64,
            WorkloadSpec::AllToAll { hosts: list, .. } => hosts(list) * hosts(list).saturating_sub(1),
            WorkloadSpec::LongLived { flows } => flows.len() as u64,
            WorkloadSpec::FlowList { path } => flow_list_count(path, ctx)?,
            WorkloadSpec::ClosedLoop { .. } => crate::closed_loop::expected_count(self, ctx)?,
        })
    }
}

/// Expected Poisson arrivals: each of `hosts` starts one flow per mean gap during `duration`.
fn poisson_count(hosts: u64, duration: Time, mean_bytes: f64, offered_bps: f64) -> u64 {
    let per_host = duration as f64 / PS_PER_S as f64 * offered_bps / (mean_bytes * 8.0);
    (per_host * hosts as f64).ceil().min(u64::MAX as f64) as u64
}

/// The flow lines of a flow list: lines that are neither blank nor comments, less a header line.
fn flow_list_count(path: &str, ctx: &WorkloadContext) -> Result<u64, WorkloadError> {
    let file = existing_file(path, ctx.base_dir, "flow list")?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| WorkloadError::field("path", format!("cannot read flow list {}: {e}", file.display())))?;
    let mut lines = crate::flowlist::content_lines(&text);
    let Some(first) = lines.next() else {
        return Ok(0);
    };
    let header = crate::flowlist::is_header(first);
    Ok(lines.count() as u64 + u64::from(!header))
}

/// The key to blame when an entry generates too many flows: the one that multiplies the count.
pub(crate) fn count_field(spec: &WorkloadSpec) -> Option<&'static str> {
    match spec {
        WorkloadSpec::Poisson { .. } => Some("duration"),
        WorkloadSpec::Incast { .. } => Some("repeats"),
        WorkloadSpec::AllToAll { .. } => Some("hosts"),
        WorkloadSpec::LongLived { .. } => Some("flows"),
        WorkloadSpec::FlowList { .. } => Some("path"),
        WorkloadSpec::Permutation { .. } => None,
        WorkloadSpec::ClosedLoop { .. } => Some("duration"),
    }
}
