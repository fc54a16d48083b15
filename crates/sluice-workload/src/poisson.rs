//! Open-loop Poisson arrivals with sizes from a CDF (the HPCC artifact's `traffic_gen/traffic_gen.py`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sluice_core::{Rate, Rng, Time, PS_PER_S};

use crate::generator::{participants, FlowSpec, WorkloadContext};
use crate::spec::validate::load_cdf;
use crate::{Destinations, FlowSizes, WorkloadError, WorkloadSpec};

/// Everything one Poisson entry needs to generate its hosts' flows, again and again.
#[derive(Debug, Clone)]
pub(crate) struct PoissonPlan {
    sizes: FlowSizes,
    /// The participating hosts, in the entry's order.
    hosts: Vec<u32>,
    picker: DestinationPicker,
    /// Mean gap between flow starts of one host, in picoseconds.
    mean_gap: f64,
    start: Time,
    duration: Time,
    group: u16,
    /// The scenario seed and the entry's index, which name each host's random stream.
    seed: u64,
    index: usize,
}

impl PoissonPlan {
    /// The plan of Poisson entry `index` (`spec` must be a validated [`WorkloadSpec::Poisson`]).
    pub(crate) fn new(spec: &WorkloadSpec, index: usize, ctx: &WorkloadContext) -> Result<PoissonPlan, WorkloadError> {
        let WorkloadSpec::Poisson { cdf, load, start, duration, destinations, hosts, size_scale } = spec else {
            unreachable!("PoissonPlan::new is only called for Poisson entries")
        };
        let sizes = FlowSizes::new(load_cdf(cdf, ctx.base_dir)?, *size_scale);
        let hosts = participants(hosts, ctx.n_hosts);
        Ok(PoissonPlan {
            picker: DestinationPicker::new(&hosts, *destinations, ctx.rack_of)?,
            mean_gap: mean_gap_ps(sizes.mean(), ctx.host_rate, *load)?,
            sizes,
            hosts,
            start: *start,
            duration: *duration,
            group: index as u16,
            seed: ctx.seed,
            index,
        })
    }

    /// A cursor over the entry's flows, sorted by `(start, src, dst, size)` (ties in generation order:
    /// host by host in the entry's order, each host's flows in turn), drawn as they are needed.
    pub(crate) fn cursor(&self) -> PoissonCursor {
        let hosts = (0..self.hosts.len()).map(|position| self.arrivals(position)).collect();
        let mut cursor = PoissonCursor { hosts, queue: BinaryHeap::new() };
        for position in 0..cursor.hosts.len() {
            cursor.refill(self, position);
        }
        cursor
    }

    /// The arrivals of the host at `position`, before its first flow: its own random stream,
    /// `workload.{entry}.host.{host}`.
    fn arrivals(&self, position: usize) -> HostArrivals {
        let name = format!("workload.{}.host.{}", self.index, self.hosts[position]);
        HostArrivals {
            rng: Rng::named(self.seed, &name),
            elapsed: 0.0,
            ahead: None,
            drawn: 0,
            queued: 0,
            done: false,
            position,
        }
    }

    /// Draws the next flow of the host at `position`: for each flow the host's stream gives, in order,
    /// the gap since the previous start, the destination and the size; starts are sums of the
    /// exponential gaps truncated to whole picoseconds, the first one gap after `start`.
    fn draw(&self, host: &mut HostArrivals) -> Option<FlowSpec> {
        if host.done {
            return None;
        }
        host.elapsed += host.rng.exponential(self.mean_gap);
        if host.elapsed >= self.duration as f64 {
            host.done = true;
            return None;
        }
        let dst = self.picker.pick(host.position, &mut host.rng);
        let size = self.sizes.sample(&mut host.rng);
        let src = self.hosts[host.position];
        Some(FlowSpec::sized(src, dst, size, self.start + host.elapsed as Time, self.group))
    }
}

#[cfg(test)]
impl PoissonPlan {
    /// Every flow, host by host in the entry's order and each host's in turn: the order the flows are
    /// drawn in, before sorting.
    pub(crate) fn drawn(&self) -> Vec<FlowSpec> {
        let mut flows = Vec::new();
        for position in 0..self.hosts.len() {
            let mut host = self.arrivals(position);
            while let Some(f) = self.draw(&mut host) {
                flows.push(f);
            }
        }
        flows
    }
}

/// One host's arrivals during a walk through the entry's flows.
#[derive(Debug)]
struct HostArrivals {
    rng: Rng,
    /// Picoseconds from the entry's start to the last flow drawn.
    elapsed: f64,
    /// The first flow of the host's next batch, drawn already.
    ahead: Option<FlowSpec>,
    /// Flows drawn so far: the next one's rank in the host's generation order.
    drawn: u64,
    /// Flows of the current batch still in the queue.
    queued: usize,
    /// The host's arrivals have passed the entry's duration.
    done: bool,
    position: usize,
}

/// A queued flow: its sort key, then its generation order (host position, rank within the host).
type Queued = Reverse<(Time, u32, u32, u64, usize, u64)>;

/// Where a walk through one Poisson entry's flows (in sorted order) stands. Each host's arrivals come in
/// batches of equal start times (almost always one flow); a host's next batch is drawn once its current
/// one has left the queue, so the queue holds about one flow per host.
#[derive(Debug)]
pub(crate) struct PoissonCursor {
    hosts: Vec<HostArrivals>,
    queue: BinaryHeap<Queued>,
}

impl PoissonCursor {
    /// Queues the next batch of the host at `position`: every flow it draws with the start of the first.
    fn refill(&mut self, plan: &PoissonPlan, position: usize) {
        let host = &mut self.hosts[position];
        let Some(first) = host.ahead.take().or_else(|| plan.draw(host)) else { return };
        host.queued = 0;
        let mut next = Some(first);
        while let Some(f) = next.filter(|f| f.start == first.start) {
            self.queue.push(Reverse((f.start, f.src, f.dst, f.size, position, host.drawn)));
            host.drawn += 1;
            host.queued += 1;
            next = plan.draw(host);
        }
        host.ahead = next;
    }

    /// The entry's next flow.
    pub(crate) fn next(&mut self, plan: &PoissonPlan) -> Option<FlowSpec> {
        let Reverse((start, src, dst, size, position, _)) = self.queue.pop()?;
        self.hosts[position].queued -= 1;
        if self.hosts[position].queued == 0 {
            self.refill(plan, position);
        }
        Some(FlowSpec::sized(src, dst, size, start, plan.group))
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
#[derive(Debug, Clone)]
enum DestinationPicker {
    /// Any participant other than the sender.
    AllToAll(Vec<u32>),
    /// Participants grouped by rack: `hosts` sorted by rack, and the index range of each sender's rack.
    InterRack { hosts: Vec<u32>, rack_range: Vec<(usize, usize)> },
}

impl DestinationPicker {
    fn new(hosts: &[u32], destinations: Destinations, rack_of: &[u32]) -> Result<DestinationPicker, WorkloadError> {
        match destinations {
            Destinations::AllToAll => Ok(DestinationPicker::AllToAll(hosts.to_vec())),
            Destinations::InterRack => DestinationPicker::inter_rack(hosts, rack_of),
        }
    }

    fn inter_rack(participants: &[u32], rack_of: &[u32]) -> Result<DestinationPicker, WorkloadError> {
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
