//! Closed-loop workloads (Marlin, EuroSys'25, section 7.5): slots that each keep one flow active,
//! starting the next flow as soon as the previous one completes.
//!
//! Generation gives each slot its first flow, as an ordinary [`FlowSpec`] at the entry's `start`, and a
//! [`ClosedLoop`] that the simulator asks for the size of each later flow when a slot's flow completes.
//! Each slot draws from its own stream, `workload.{i}.slot.{j}`, so the sizes a slot runs do not depend
//! on when the other slots' flows complete: the same seed gives the same sizes in the same order.

use sluice_core::{Rate, Rng, Time, PS_PER_S};

use crate::generator::{FlowSpec, WorkloadContext};
use crate::spec::validate::load_cdf;
use crate::{FlowSizes, WorkloadError, WorkloadSpec};

/// One closed-loop workload entry during a run: its slots and the sizes they draw.
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    /// Index of the workload entry: the group of every flow it starts.
    pub group: u16,
    /// Slots start no flow at or after this time.
    pub end: Time,
    /// The slots, in generation order (sender, then receiver, then the pair's slot number).
    pub slots: Vec<LoopSlot>,
    /// The bytes the loop is expected to carry at most: what its hosts carry in its window (see
    /// [`ClosedLoop::later_flows`]), and the flows running when the window ends, one mean size per slot.
    pub carried_bytes: u64,
    /// The flows the slots are expected to start after their first ones, at most: `carried_bytes` over
    /// the mean size.
    pub later_flows: u64,
    sizes: FlowSizes,
}

/// How the flows that closed loops start during a run are numbered: the `g`-th later flow of slot `s`
/// (slots numbered over all loops, in order; `g` from 1, the slot's first flow being a workload flow) is
/// `generated + ((g - 1) << bits | s)`, where `generated` is the number of workload flows and `bits`
/// the fewest that number every slot.
///
/// An id so made names its slot and its place in the slot, not the order in which slots freed up: it
/// depends on the slot's own history only, so every part of a partitioned run numbers a flow as a run
/// in one piece does, and the same id has the same size (the slot's stream's `g`-th draw) wherever it
/// runs. Ids are sparse where slots progress unevenly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopIds {
    generated: u32,
    bits: u32,
    slots: u32,
}

impl Default for LoopIds {
    /// No closed loop: every id is a workload flow's.
    fn default() -> LoopIds {
        LoopIds::new(u32::MAX, 0)
    }
}

impl LoopIds {
    /// The numbering of the slots of `loops`, in order, after `generated` workload flows.
    pub fn for_loops(generated: u32, loops: &[ClosedLoop]) -> LoopIds {
        LoopIds::new(generated, loops.iter().map(|lp| lp.slots.len()).sum())
    }

    /// The number of each loop's first slot among the slots of `loops`, in order.
    pub fn first_slots(loops: &[ClosedLoop]) -> Vec<u32> {
        let mut first = 0;
        loops
            .iter()
            .map(|lp| {
                let at = first;
                first += lp.slots.len() as u32;
                at
            })
            .collect()
    }

    /// The numbering for `slots` slots after `generated` workload flows.
    pub fn new(generated: u32, slots: usize) -> LoopIds {
        let bits = usize::BITS - slots.saturating_sub(1).leading_zeros();
        LoopIds { generated, bits, slots: slots as u32 }
    }

    /// The id of slot `slot`'s `generation`-th later flow (from 1), or `None` when the ids' 32 bits have
    /// no room for it.
    pub fn id(&self, slot: u32, generation: u32) -> Option<u32> {
        debug_assert!(slot < self.slots && generation >= 1, "slot {slot}, generation {generation}");
        let offset = (u64::from(generation - 1) << self.bits) | u64::from(slot);
        u32::try_from(u64::from(self.generated) + offset).ok()
    }

    /// Whether `id` is a later flow's (not a workload flow's).
    #[inline(always)]
    pub fn is_later(&self, id: u32) -> bool {
        id >= self.generated
    }

    /// The slot and generation of later flow `id`.
    #[inline(always)]
    pub fn split(&self, id: u32) -> (u32, u32) {
        let offset = id - self.generated;
        (offset & ((1u32 << self.bits) - 1), (offset >> self.bits) + 1)
    }

    /// The number of workload flows: the first later id.
    pub fn generated(&self) -> u32 {
        self.generated
    }

    /// The number of slots.
    pub fn slots(&self) -> u32 {
        self.slots
    }
}

/// One slot of a closed loop: a sender-receiver pair that keeps one flow active.
#[derive(Debug, Clone)]
pub struct LoopSlot {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// The id of the slot's first flow in the generated flow list.
    pub first_flow: u32,
    /// The slot's stream, past the draws already made.
    rng: Rng,
}

impl ClosedLoop {
    /// Draws the size of slot `slot`'s next flow from the slot's own stream.
    pub fn next_size(&mut self, slot: usize) -> u64 {
        self.sizes.sample(&mut self.slots[slot].rng)
    }

    /// `count` sizes drawn from the entry's distribution on a stream of their own
    /// (`workload.{group}.sample`), leaving the slots' streams untouched: a sample of the sizes the entry
    /// will run, for settings that depend on the workload's size distribution (Homa's cutoffs).
    pub fn size_sample(&self, seed: u64, count: usize) -> Vec<u64> {
        let mut rng = Rng::named(seed, &format!("workload.{}.sample", self.group));
        (0..count).map(|_| self.sizes.sample(&mut rng)).collect()
    }
}

/// The parameters of a validated [`WorkloadSpec::ClosedLoop`].
struct Entry<'a> {
    cdf: &'a str,
    flows_per_pair: u32,
    receivers: Vec<u32>,
    senders: Vec<u32>,
    start: Time,
    duration: Time,
    size_scale: Option<f64>,
}

impl<'a> Entry<'a> {
    fn of(spec: &'a WorkloadSpec, n_hosts: u32) -> Entry<'a> {
        let WorkloadSpec::ClosedLoop { cdf, flows_per_pair, receivers, senders, start, duration, size_scale } = spec
        else {
            unreachable!("closed-loop generation is only called for closed-loop entries")
        };
        let receivers = receivers.clone().unwrap_or_else(|| (0..n_hosts).collect());
        let senders = senders.clone().unwrap_or_else(|| default_senders(&receivers, n_hosts));
        Entry {
            cdf,
            flows_per_pair: *flows_per_pair,
            receivers,
            senders,
            start: *start,
            duration: *duration,
            size_scale: *size_scale,
        }
    }

    /// The sender-receiver pairs, senders in order, each sender's receivers in order.
    fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let pairs = self.senders.iter().flat_map(|&src| self.receivers.iter().map(move |&dst| (src, dst)));
        pairs.filter(|(src, dst)| src != dst)
    }
}

/// Every host not among `receivers`, or every host when all of them receive.
fn default_senders(receivers: &[u32], n_hosts: u32) -> Vec<u32> {
    let others: Vec<u32> = (0..n_hosts).filter(|h| !receivers.contains(h)).collect();
    if others.is_empty() {
        (0..n_hosts).collect()
    } else {
        others
    }
}

/// The number of slots of a closed-loop entry: its sender-receiver pairs times `flows_per_pair`.
pub(crate) fn slot_count(spec: &WorkloadSpec, n_hosts: u32) -> u64 {
    let entry = Entry::of(spec, n_hosts);
    entry.pairs().count() as u64 * entry.flows_per_pair as u64
}

/// Checks what [`crate::spec`]'s per-key checks cannot: that the entry has at least one pair.
pub(crate) fn check_pairs(spec: &WorkloadSpec, n_hosts: u32) -> Result<(), WorkloadError> {
    if Entry::of(spec, n_hosts).pairs().next().is_some() {
        return Ok(());
    }
    Err(WorkloadError::field("senders", "no sender has a receiver other than itself, so no flow can run"))
}

/// The flows a closed-loop entry is expected to start: its slots' first flows, and one more flow for
/// each mean size that the hosts can carry during `duration`. Every flow crosses a sending and a
/// receiving NIC, so the fewer of the two sides bounds the bytes: `min(senders, receivers) x host_rate x
/// duration / 8`. Congestion control only lowers that figure, so it serves as the bound that memory
/// estimates and the scenario's flow limit are held to.
pub(crate) fn expected_count(spec: &WorkloadSpec, ctx: &WorkloadContext) -> Result<u64, WorkloadError> {
    let entry = Entry::of(spec, ctx.n_hosts);
    let sizes = FlowSizes::new(load_cdf(entry.cdf, ctx.base_dir)?, entry.size_scale);
    let (_, later) = capacity(&entry, &sizes, ctx.host_rate);
    Ok(slot_count(spec, ctx.n_hosts).saturating_add(later))
}

/// The bytes `entry`'s hosts can carry in its window, and the flows of the mean size that makes.
fn capacity(entry: &Entry, sizes: &FlowSizes, host_rate: Rate) -> (u64, u64) {
    let mut sending: Vec<u32> = entry.pairs().map(|(src, _)| src).collect();
    let mut receiving: Vec<u32> = entry.pairs().map(|(_, dst)| dst).collect();
    sending.dedup();
    receiving.sort_unstable();
    receiving.dedup();
    let hosts = sending.len().min(receiving.len()) as f64;
    let bytes = hosts * host_rate as f64 / 8.0 * entry.duration as f64 / PS_PER_S as f64;
    let whole = |x: f64| x.ceil().min(u64::MAX as f64) as u64;
    (whole(bytes), whole(bytes / sizes.mean()))
}

/// The first flow of every slot of entry `index`, in slot order, and the entry's [`ClosedLoop`] with
/// its slots' streams past their first draw (`first_flow` is filled once the flows are numbered).
pub(crate) fn generate(
    spec: &WorkloadSpec,
    index: usize,
    ctx: &WorkloadContext,
) -> Result<(Vec<FlowSpec>, ClosedLoop), WorkloadError> {
    let entry = Entry::of(spec, ctx.n_hosts);
    let sizes = FlowSizes::new(load_cdf(entry.cdf, ctx.base_dir)?, entry.size_scale);
    let group = index as u16;
    let mut flows = Vec::new();
    let mut slots = Vec::new();
    let per_pair = entry.pairs().flat_map(|pair| std::iter::repeat_n(pair, entry.flows_per_pair as usize));
    for (j, (src, dst)) in per_pair.enumerate() {
        let mut rng = Rng::named(ctx.seed, &format!("workload.{index}.slot.{j}"));
        flows.push(FlowSpec::sized(src, dst, sizes.sample(&mut rng), entry.start, group));
        slots.push(LoopSlot { src, dst, first_flow: u32::MAX, rng });
    }
    let end = entry.start.saturating_add(entry.duration);
    let (window_bytes, later_flows) = capacity(&entry, &sizes, ctx.host_rate);
    let last_flows = (slots.len() as f64 * sizes.mean()).ceil() as u64;
    let carried_bytes = window_bytes.saturating_add(last_flows);
    Ok((flows, ClosedLoop { group, end, slots, carried_bytes, later_flows, sizes }))
}

/// Numbers each slot's first flow, given the ids of the entry's flows in the sorted list. Flows of one
/// entry share their start and group, so the sort ordered them by (sender, receiver, size), keeping slot
/// order among equals (a stable sort): ordering the slots the same way pairs them up.
pub(crate) fn number_first_flows(closed: &mut ClosedLoop, first_sizes: &[u64], ids: &[u32]) {
    let mut order: Vec<usize> = (0..closed.slots.len()).collect();
    order.sort_by_key(|&j| (closed.slots[j].src, closed.slots[j].dst, first_sizes[j]));
    for (&j, &id) in order.iter().zip(ids) {
        closed.slots[j].first_flow = id;
    }
}

#[cfg(test)]
mod id_tests {
    use super::LoopIds;

    #[test]
    fn a_later_flows_id_names_its_slot_and_generation() {
        let ids = LoopIds::new(100, 20);
        assert_eq!(ids.id(0, 1), Some(100));
        assert_eq!(ids.id(19, 1), Some(119));
        assert_eq!(ids.id(3, 2), Some(100 + 32 + 3), "20 slots take 5 bits");
        assert_eq!(ids.split(100 + 32 + 3), (3, 2));
        assert!(!ids.is_later(99) && ids.is_later(100));
        let one = LoopIds::new(7, 1);
        assert_eq!((one.id(0, 1), one.id(0, 5)), (Some(7), Some(11)), "one slot: consecutive ids");
        assert_eq!(one.split(11), (0, 5));
    }

    #[test]
    fn ids_beyond_32_bits_are_refused() {
        let ids = LoopIds::new(u32::MAX - 10, 4);
        assert_eq!(ids.id(2, 3), Some(u32::MAX), "4 slots take 2 bits: offset 2 << 2 | 2");
        assert_eq!(ids.id(3, 3), None);
        let wide = LoopIds::new(0, 1 << 16);
        assert_eq!(wide.id(0, 1 << 16), Some(u32::MAX - 0xFFFF));
        assert_eq!(wide.id(0, (1 << 16) + 1), None);
    }
}
