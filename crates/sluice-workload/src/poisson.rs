//! Open-loop Poisson arrivals with sizes from a CDF (the HPCC artifact's `traffic_gen/traffic_gen.py`).

use sluice_core::{Rate, Rng, Time, PS_PER_S};

use crate::generator::{participants, FlowSpec, WorkloadContext};
use crate::spec::validate::load_cdf;
use crate::{Destinations, FlowSizes, WorkloadError, WorkloadSpec};

/// The flows of Poisson entry `index` (`spec` must be a validated [`WorkloadSpec::Poisson`]).
pub(crate) fn generate(
    spec: &WorkloadSpec,
    index: usize,
    ctx: &WorkloadContext,
) -> Result<Vec<FlowSpec>, WorkloadError> {
    let WorkloadSpec::Poisson { cdf, load, start, duration, destinations, hosts, size_scale } = spec else {
        unreachable!("poisson::generate is only called for Poisson entries")
    };
    let sizes = FlowSizes::new(load_cdf(cdf, ctx.base_dir)?, *size_scale);
    let hosts = participants(hosts, ctx.n_hosts);
    let plan = Plan {
        picker: DestinationPicker::new(&hosts, *destinations, ctx.rack_of)?,
        mean_gap: mean_gap_ps(sizes.mean(), ctx.host_rate, *load)?,
        sizes,
        start: *start,
        duration: *duration,
        group: index as u16,
    };
    let mut flows = Vec::new();
    for (position, &host) in hosts.iter().enumerate() {
        let mut rng = Rng::named(ctx.seed, &format!("workload.{index}.host.{host}"));
        plan.host_flows(position, host, &mut rng, &mut flows);
    }
    Ok(flows)
}

/// Everything one Poisson entry needs to generate a host's flows.
struct Plan<'a> {
    sizes: FlowSizes,
    picker: DestinationPicker<'a>,
    /// Mean gap between flow starts of one host, in picoseconds.
    mean_gap: f64,
    start: Time,
    duration: Time,
    group: u16,
}

impl Plan<'_> {
    /// Appends the flows of `host` (at `position` among the participants). For each flow the host's stream
    /// gives, in order, the gap since the previous start, the destination and the size; starts are sums of
    /// the exponential gaps truncated to whole picoseconds, the first one gap after `start`.
    fn host_flows(&self, position: usize, host: u32, rng: &mut Rng, flows: &mut Vec<FlowSpec>) {
        let mut elapsed = 0.0;
        loop {
            elapsed += rng.exponential(self.mean_gap);
            if elapsed >= self.duration as f64 {
                return;
            }
            let dst = self.picker.pick(position, rng);
            let size = self.sizes.sample(rng);
            flows.push(FlowSpec::sized(host, dst, size, self.start + elapsed as Time, self.group));
        }
    }
}

/// Mean time between a host's flow starts, in picoseconds: `mean_size * 8 / (host_rate * load)`.
fn mean_gap_ps(mean_bytes: f64, host_rate: Rate, load: f64) -> Result<f64, WorkloadError> {
    if host_rate == 0 {
        return Err(WorkloadError::new("the host rate is 0, so no load can be offered"));
    }
    Ok(mean_bytes * 8.0 / (host_rate as f64 * load) * PS_PER_S as f64)
}

/// Chooses destinations uniformly among the other participating hosts, or among those in other racks.
enum DestinationPicker<'a> {
    /// Any participant other than the sender.
    AllToAll(&'a [u32]),
    /// Participants grouped by rack: `hosts` sorted by rack, and the index range of each sender's rack.
    InterRack { hosts: Vec<u32>, rack_range: Vec<(usize, usize)> },
}

impl<'a> DestinationPicker<'a> {
    fn new(
        hosts: &'a [u32],
        destinations: Destinations,
        rack_of: &[u32],
    ) -> Result<DestinationPicker<'a>, WorkloadError> {
        match destinations {
            Destinations::AllToAll => Ok(DestinationPicker::AllToAll(hosts)),
            Destinations::InterRack => DestinationPicker::inter_rack(hosts, rack_of),
        }
    }

    fn inter_rack(participants: &[u32], rack_of: &[u32]) -> Result<DestinationPicker<'a>, WorkloadError> {
        let racks = participants.iter().map(|&h| rack(h, rack_of)).collect::<Result<Vec<u32>, _>>()?;
        let mut order: Vec<usize> = (0..participants.len()).collect();
        order.sort_by_key(|&i| racks[i]);
        let sorted_racks: Vec<u32> = order.iter().map(|&i| racks[i]).collect();
        let rack_range: Vec<(usize, usize)> = racks
            .iter()
            .map(|r| (sorted_racks.partition_point(|x| x < r), sorted_racks.partition_point(|x| x <= r)))
            .collect();
        let (lo, hi) = rack_range[0];
        if hi - lo == participants.len() {
            let message = format!("every participating host is in rack {}, so inter_rack has no destination", racks[0]);
            return Err(WorkloadError::field("destinations", message));
        }
        let hosts = order.iter().map(|&i| participants[i]).collect();
        Ok(DestinationPicker::InterRack { hosts, rack_range })
    }

    /// A destination for the sender at `position` among the participants.
    fn pick(&self, position: usize, rng: &mut Rng) -> u32 {
        match self {
            DestinationPicker::AllToAll(hosts) => {
                let i = rng.below(hosts.len() as u64 - 1) as usize;
                hosts[if i >= position { i + 1 } else { i }]
            }
            DestinationPicker::InterRack { hosts, rack_range } => {
                let (lo, hi) = rack_range[position];
                let i = rng.below((hosts.len() - (hi - lo)) as u64) as usize;
                hosts[if i >= lo { i + hi - lo } else { i }]
            }
        }
    }
}

/// The rack of host `host`, or an error if `rack_of` does not cover it.
fn rack(host: u32, rack_of: &[u32]) -> Result<u32, WorkloadError> {
    rack_of.get(host as usize).copied().ok_or_else(|| {
        WorkloadError::field(
            "destinations",
            format!("inter_rack needs the rack of every host, and host {host} has none"),
        )
    })
}
