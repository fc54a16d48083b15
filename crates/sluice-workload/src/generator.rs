//! Turning workload entries into one deterministic, time-ordered stream of flows.

use std::path::Path;

use sluice_core::{Rate, Rng, Time};

use crate::algorithms::{AlgorithmNames, RowAlgorithm};
use crate::closed_loop::{self, ClosedLoop};
use crate::count::{count_field, MAX_FLOWS};
use crate::poisson::PoissonPlan;
use crate::spec::LongLivedFlow;
use crate::stream::{EntryPlan, FlowSource};
use crate::{flowlist, WorkloadError, WorkloadSpec};

/// The `size` of a long-lived flow: it has no size and sends until its `stop` time.
pub const UNBOUNDED_SIZE: u64 = u64::MAX;

/// One flow to simulate. Its id is its index in the list [`generate`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowSpec {
    /// Sending host, `0..n_hosts`.
    pub src: u32,
    /// Receiving host, `0..n_hosts`, never `src`.
    pub dst: u32,
    /// Bytes to deliver; [`UNBOUNDED_SIZE`] for long-lived flows.
    pub size: u64,
    /// When the sender starts, in picoseconds.
    pub start: Time,
    /// For long-lived flows only: when the sender stops.
    pub stop: Option<Time>,
    /// Index of the workload entry that produced the flow.
    pub group: u16,
    /// The algorithm the flow itself names: 0 for its entry's, `k` for
    /// [`Workload::algorithms`]`[k - 1]` (a long-lived flow's `algorithm`, a flow list's fifth column).
    pub algorithm: u16,
}

impl FlowSpec {
    /// A flow of `size` bytes (no stop time).
    pub(crate) fn sized(src: u32, dst: u32, size: u64, start: Time, group: u16) -> FlowSpec {
        FlowSpec { src, dst, size, start, stop: None, group, algorithm: 0 }
    }
}

/// What the generators need to know about the network and the run.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadContext<'a> {
    /// Number of hosts; host ids are `0..n_hosts`.
    pub n_hosts: u32,
    /// NIC rate of each host, which Poisson loads are fractions of.
    pub host_rate: Rate,
    /// Rack (ToR) index of each host, indexed by host id; needed by `inter_rack` destinations.
    pub rack_of: &'a [u32],
    /// Scenario seed; entry `i` draws from the stream `workload.{i}`.
    pub seed: u64,
    /// Folder that relative file paths are resolved against (the scenario file's folder).
    pub base_dir: &'a Path,
}

/// A scenario's workload: the flows known before the run, and the closed loops that start more flows
/// during it.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// Every flow of the open-loop entries, and the first flow of every closed-loop slot, in the order
    /// `(start, src, dst, size, group)`; a flow's id is its position. Generated as they are read.
    pub flows: FlowSource,
    /// The closed-loop entries, in entry order; their later flows get ids past `flows` as they start.
    pub closed_loops: Vec<ClosedLoop>,
    /// The algorithms single flows name ([`FlowSpec::algorithm`]), in order of first appearance.
    pub algorithms: Vec<RowAlgorithm>,
}

/// Validates every entry and plans its flows, in the order `(start, src, dst, size, group)` with ties in
/// the order each entry generates them, so that flow ids are deterministic. Entry `i` draws from its own
/// random stream `Rng::named(seed, "workload.{i}")` (Poisson hosts from `workload.{i}.host.{h}`,
/// closed-loop slots from `workload.{i}.slot.{j}`), so adding an entry or a host does not change the
/// flows of the others. The flows themselves are generated as they are read ([`FlowSource`]); with
/// closed loops, one pass here numbers their first flows. Errors name the entry.
pub fn generate_workload(specs: &[WorkloadSpec], ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    if specs.len() > usize::from(u16::MAX) + 1 {
        return Err(WorkloadError::new(format!("{} workload entries; at most 65536 are supported", specs.len())));
    }
    let mut total = 0;
    for (index, spec) in specs.iter().enumerate() {
        total += counted(spec, ctx, total).map_err(|e| e.with_entry(index))?;
    }
    let mut plans = Vec::with_capacity(specs.len());
    let mut closed_loops = Vec::new();
    let mut first_sizes = Vec::new();
    let mut names = AlgorithmNames::default();
    for (index, spec) in specs.iter().enumerate() {
        if let WorkloadSpec::ClosedLoop { .. } = spec {
            let (first, closed) = closed_loop::generate(spec, index, ctx).map_err(|e| e.with_entry(index))?;
            first_sizes.push(first.iter().map(|f| f.size).collect::<Vec<u64>>());
            plans.push(EntryPlan::list(first));
            closed_loops.push(closed);
        } else {
            plans.push(plan_entry(spec, index, ctx, &mut names).map_err(|e| e.with_entry(index))?);
        }
    }
    let flows = FlowSource::new(plans);
    if !closed_loops.is_empty() {
        let ids = first_flow_ids(&flows, &closed_loops, specs.len());
        for ((closed, sizes), ids) in closed_loops.iter_mut().zip(&first_sizes).zip(&ids) {
            closed_loop::number_first_flows(closed, sizes, ids);
        }
    }
    Ok(Workload { flows, closed_loops, algorithms: names.names })
}

/// One pass over `flows` (which counts them): the ids of each closed loop's flows (its slots' first
/// flows), in id order.
fn first_flow_ids(flows: &FlowSource, loops: &[ClosedLoop], entries: usize) -> Vec<Vec<u32>> {
    let mut loop_of_group = vec![None; entries];
    for (k, lp) in loops.iter().enumerate() {
        loop_of_group[lp.group as usize] = Some(k);
    }
    let mut ids = vec![Vec::new(); loops.len()];
    let mut id = 0u32;
    flows.scan(|f| {
        if let Some(k) = loop_of_group[f.group as usize] {
            ids[k].push(id);
        }
        id += 1;
    });
    ids
}

/// The flows of every entry, as [`generate_workload`] gives them, in a vector; a closed-loop entry
/// contributes the first flow of each of its slots.
pub fn generate(specs: &[WorkloadSpec], ctx: &WorkloadContext) -> Result<Vec<FlowSpec>, WorkloadError> {
    generate_workload(specs, ctx).map(|w| w.flows.to_vec())
}

/// Validates `spec` and returns how many flows it generates, refusing counts that would take the
/// scenario's flows (`before` from earlier entries) past [`MAX_FLOWS`].
fn counted(spec: &WorkloadSpec, ctx: &WorkloadContext, before: u64) -> Result<u64, WorkloadError> {
    spec.validate_in(ctx.n_hosts, ctx.base_dir)?;
    let count = spec.flow_count(ctx)?;
    if count.saturating_add(before) <= MAX_FLOWS {
        return Ok(count);
    }
    let earlier = if before > 0 { format!(" (after {before} flows of earlier entries)") } else { String::new() };
    let message = format!(
        "this entry would generate {count} flows{earlier}, more than the limit of {MAX_FLOWS} flows per scenario"
    );
    Err(match count_field(spec) {
        Some(field) => WorkloadError::field(field, message),
        None => WorkloadError::new(message),
    })
}

/// How entry `index` generates its flows (`spec` is validated by [`counted`]); the random choices an
/// entry makes once (incast senders, a permutation) are made here.
fn plan_entry(
    spec: &WorkloadSpec,
    index: usize,
    ctx: &WorkloadContext,
    names: &mut AlgorithmNames,
) -> Result<EntryPlan, WorkloadError> {
    let group = index as u16;
    let mut rng = Rng::named(ctx.seed, &format!("workload.{index}"));
    match spec {
        WorkloadSpec::Poisson { .. } => Ok(EntryPlan::Poisson(PoissonPlan::new(spec, index, ctx)?)),
        WorkloadSpec::Incast { receiver, senders, sender_list, size, start, period, repeats } => {
            let mut senders =
                sender_list.clone().unwrap_or_else(|| pick_senders(*receiver, *senders, ctx.n_hosts, &mut rng));
            senders.sort_unstable();
            let (receiver, size, start, period, repeats) = (*receiver, *size, *start, period.unwrap_or(0), *repeats);
            Ok(EntryPlan::Incast { senders, receiver, size, start, period, repeats, group })
        }
        WorkloadSpec::Permutation { size, start } => {
            let targets = derangement(ctx.n_hosts, &mut rng);
            Ok(EntryPlan::Permutation { targets, size: *size, start: *start, group })
        }
        WorkloadSpec::AllToAll { size, start, hosts } => {
            let mut hosts = participants(hosts, ctx.n_hosts);
            hosts.sort_unstable();
            Ok(EntryPlan::AllToAll { hosts, size: *size, start: *start, group })
        }
        WorkloadSpec::LongLived { flows } => Ok(EntryPlan::list(long_lived(flows, index, names)?)),
        WorkloadSpec::FlowList { path } => {
            Ok(EntryPlan::list(flowlist::read(path, ctx.base_dir, ctx.n_hosts, index, names)?))
        }
        WorkloadSpec::ClosedLoop { .. } => unreachable!("closed loops are generated by closed_loop::generate"),
    }
}

/// The listed hosts, or every host.
pub(crate) fn participants(hosts: &Option<Vec<u32>>, n_hosts: u32) -> Vec<u32> {
    hosts.clone().unwrap_or_else(|| (0..n_hosts).collect())
}

/// `count` distinct senders (default: all) drawn uniformly from the hosts other than `receiver`.
fn pick_senders(receiver: u32, count: Option<u32>, n_hosts: u32, rng: &mut Rng) -> Vec<u32> {
    let mut others: Vec<u32> = (0..n_hosts).filter(|&h| h != receiver).collect();
    let count = count.map_or(others.len(), |c| c as usize);
    for i in 0..count {
        let j = i + rng.below((others.len() - i) as u64) as usize;
        others.swap(i, j);
    }
    others.truncate(count);
    others
}

/// A uniformly random derangement of `0..n` (`n >= 2`): Fisher-Yates shuffles until no host maps to itself
/// (about e = 2.7 tries on average).
fn derangement(n: u32, rng: &mut Rng) -> Vec<u32> {
    loop {
        let mut targets: Vec<u32> = (0..n).collect();
        for i in (1..targets.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            targets.swap(i, j);
        }
        if targets.iter().enumerate().all(|(i, &t)| i as u32 != t) {
            return targets;
        }
    }
}

/// The long-lived flows of entry `index`, numbering the algorithms they name in `names`.
fn long_lived(
    flows: &[LongLivedFlow],
    index: usize,
    names: &mut AlgorithmNames,
) -> Result<Vec<FlowSpec>, WorkloadError> {
    let mut out = Vec::with_capacity(flows.len());
    for (j, flow) in flows.iter().enumerate() {
        let field = || format!("flows.{j}.algorithm");
        let algorithm = match &flow.algorithm {
            None => 0,
            Some(name) => {
                let at = || RowAlgorithm { name: name.clone(), entry: index, field: field(), file_line: None };
                names.number(name, at).map_err(|m| WorkloadError::field(&field(), m))?
            }
        };
        let (src, dst, start, stop) = (flow.src, flow.dst, flow.start, Some(flow.stop));
        out.push(FlowSpec { src, dst, size: UNBOUNDED_SIZE, start, stop, group: index as u16, algorithm });
    }
    Ok(out)
}
