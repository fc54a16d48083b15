//! The host interconnect model: host congestion (Agarwal et al., "Understanding Host Interconnect
//! Congestion", HotNets'22, and "hostCC", SIGCOMM'23; TAURUS sections 2.3 and 3.3).
//!
//! A receiving NIC buffers arriving data packets and writes them into host memory (DMA) one at a time.
//! The write rate is bounded by the interconnect (PCIe) and by the memory bandwidth left over by local
//! memory-intensive traffic (an MLC-like load, possibly changing over time, throttled in MBA-like
//! levels). When local traffic leaves the NIC less than the line rate, the NIC buffer fills (the
//! IIO-occupancy signal grows); a full buffer drops packets, or, with `pfc`, pauses the ToR's port.
//!
//! Bandwidth sharing: with local traffic `L` (after throttling), memory bandwidth `M`, NIC line rate
//! `N` and interconnect rate `P`, the DMA rate is `min(P, max(M - L, M N / (N + L)))`: the NIC gets
//! what local traffic leaves, and when both oversubscribe memory, a share in proportion to demand (the
//! memory controller serves requests from both in turn).
//!
//! Every `sample_interval` the host samples its signals ([`sluice_cc::HostSignal`]: buffer occupancy and
//! interconnect utilization over the interval), hands them to the algorithm's host policy
//! ([`sluice_cc::HostControl`]), which may change the throttle level and turn ECN marking of received
//! packets on or off, and keeps the sample for the ACKs the host sends: they carry it back to the senders
//! whose algorithms bind [`sluice_cc::Events::HOST`] (TAURUS section 3.3: remote host signals embedded in
//! feedback packets).

use std::collections::VecDeque;

use sluice_cc::{HostControl, HostCtx, HostInfo, HostSignal};
use sluice_core::{serialization_ps, Rate, Time, PS_PER_S};

use crate::config::HostBusConfig;
use crate::engine::packet::{Kind, FLAG_CE, FLAG_ECT};
use crate::engine::{Core, Event, HostModelEvent};
use crate::net::port::Port;

/// A host's NIC-to-memory path.
pub struct HostBus {
    config: HostBusConfig,
    line_rate: Rate,
    policy: Option<Box<dyn HostControl>>,
    queue: VecDeque<(u32, u32)>,
    bytes: u64,
    busy: bool,
    /// The path is handing a written packet to the transport (it passes the path).
    pub delivering: bool,
    level: u8,
    marking: bool,
    paused: bool,
    xoff: u64,
    xon: u64,
    sampling: bool,
    /// Bytes written to memory in the current sampling period.
    period_bytes: u64,
    /// Peak buffer occupancy, bytes.
    pub max_bytes: u64,
    /// The latest sample, which the host's ACKs carry.
    latest: Option<HostSignal>,
}

impl std::fmt::Debug for HostBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBus").field("bytes", &self.bytes).field("level", &self.level).finish()
    }
}

impl HostBus {
    /// The path of a host whose NIC runs at `line_rate` and whose link has one-way delay `delay`, with
    /// the algorithm's host `policy`.
    pub fn new(
        config: &HostBusConfig,
        line_rate: Rate,
        delay: Time,
        packet: u32,
        policy: Option<Box<dyn HostControl>>,
    ) -> HostBus {
        // PFC headroom: what arrives during a pause frame's round trip plus two packets in transit.
        let headroom = 2 * delay as u128 * line_rate as u128 / 8 / PS_PER_S as u128 + 2 * packet as u128;
        let xoff = config.buffer.saturating_sub(headroom as u64).max(packet as u64);
        HostBus {
            config: config.clone(),
            line_rate,
            policy,
            queue: VecDeque::new(),
            bytes: 0,
            busy: false,
            delivering: false,
            level: 0,
            marking: false,
            paused: false,
            xoff,
            xon: xoff.saturating_sub(2 * packet as u64),
            sampling: false,
            period_bytes: 0,
            max_bytes: 0,
            latest: None,
        }
    }

    /// Local demand at `now`, before throttling.
    pub fn demand_at(&self, now: Time) -> Rate {
        let steps = &self.config.load_schedule;
        steps.iter().rev().find(|s| s.at <= now).map_or(self.config.local_load, |s| s.load)
    }

    /// The DMA rate at `now` (see the module docs).
    pub fn dma_rate(&self, now: Time) -> Rate {
        let c = &self.config;
        let fraction = c.throttle_levels[(self.level as usize).min(c.throttle_levels.len() - 1)];
        let local = (self.demand_at(now) as f64 * fraction) as u128;
        let memory = c.memory_rate as u128;
        let left = memory.saturating_sub(local);
        let share = memory * self.line_rate as u128 / (self.line_rate as u128 + local).max(1);
        (left.max(share) as Rate).min(c.interconnect_rate).max(1)
    }

    /// The path of a host with NIC `nic` (`packet` bytes per full packet on the wire); `factory` supplies
    /// the algorithm's host policy.
    pub fn for_host(config: &HostBusConfig, nic: &Port, packet: u32, factory: &dyn sluice_cc::Factory) -> HostBus {
        let info = HostInfo {
            line_rate: nic.rate,
            interconnect_rate: config.interconnect_rate,
            max_throttle_level: (config.throttle_levels.len() - 1) as u8,
            sample_interval: config.sample_interval,
        };
        HostBus::new(config, nic.rate, nic.delay, packet, factory.host_policy(&info))
    }

    /// Takes data packet `pkt`, arriving at host node `node` through NIC `nic`, into the NIC buffer (or
    /// drops it); returns whether it did. A packet the path delivers itself (`delivering`) and control
    /// packets pass. `data_queue` is the priority a PFC pause stops. Kept out of line: the receive path
    /// of runs without the model stays as it was.
    #[cold]
    #[inline(never)]
    pub fn intercept(&mut self, core: &mut Core, node: u32, nic: &Port, data_queue: u8, pkt: u32) -> bool {
        let p = core.arena.get(pkt);
        if self.delivering || p.kind != Kind::Data {
            return false;
        }
        let wire = p.wire;
        if self.bytes + wire as u64 > self.config.buffer {
            core.counters.host_drops += 1;
            core.counters.bytes_dropped += p.payload as u64;
            core.arena.free(pkt);
            return true;
        }
        self.queue.push_back((pkt, wire));
        self.bytes += wire as u64;
        self.max_bytes = self.max_bytes.max(self.bytes);
        if self.config.pfc && !self.paused && self.bytes >= self.xoff {
            self.paused = true;
            send_pfc(core, nic, data_queue, true);
        }
        if !self.busy {
            self.busy = true;
            let done = core.now + serialization_ps(wire as u64, self.dma_rate(core.now));
            core.schedule(done, Event::HostModel(HostModelEvent::BusDma { host: node }));
        }
        if !self.sampling {
            self.sampling = true;
            let at = core.now + self.config.sample_interval;
            core.schedule(at, Event::HostModel(HostModelEvent::BusSample { host: node }));
        }
        true
    }

    /// The NIC of host node `node` finished writing its head packet into memory: returns it, for the
    /// host to hand to its transport with [`HostBus::delivering`] set.
    pub fn on_dma(&mut self, core: &mut Core, node: u32, nic: &Port, data_queue: u8) -> u32 {
        let (pkt, wire) = self.queue.pop_front().expect("a write in progress");
        self.bytes -= wire as u64;
        self.period_bytes += wire as u64;
        match self.queue.front() {
            Some(&(_, next)) => {
                let done = core.now + serialization_ps(next as u64, self.dma_rate(core.now));
                core.schedule(done, Event::HostModel(HostModelEvent::BusDma { host: node }));
            }
            None => self.busy = false,
        }
        let resume = self.config.pfc && self.paused && self.bytes <= self.xon;
        let p = core.arena.get_mut(pkt);
        if self.marking && p.flags & FLAG_ECT != 0 && p.flags & FLAG_CE == 0 {
            p.flags |= FLAG_CE;
            core.counters.host_ecn_marks += 1;
        }
        core.counters.host_dma_packets += 1;
        core.counters.host_dma_delay_sum += core.now - p.sent_at;
        if resume {
            self.paused = false;
            send_pfc(core, nic, data_queue, false);
        }
        pkt
    }

    /// The latest sample of the host's signals, if it has taken one.
    pub fn latest(&self) -> Option<HostSignal> {
        self.latest
    }

    /// Samples the host signals of host node `node`, hands them to the host policy and keeps them for the
    /// host's ACKs.
    pub fn on_sample(&mut self, core: &mut Core, node: u32) {
        let interval = self.config.sample_interval;
        let moved_bits = self.period_bytes as f64 * 8.0;
        let utilization = moved_bits * PS_PER_S as f64 / interval as f64 / self.config.interconnect_rate as f64;
        let signal = HostSignal { iio_occupancy: self.bytes, pcie_utilization: utilization.min(1.0), at: core.now };
        let idle = self.period_bytes == 0 && self.bytes == 0;
        self.period_bytes = 0;
        if let Some(policy) = self.policy.as_mut() {
            let mut ctx = HostCtx::new(core.now);
            policy.on_host(&signal, &mut ctx);
            let d = *ctx.decisions();
            if let Some(level) = d.throttle_level {
                self.level = level.min((self.config.throttle_levels.len() - 1) as u8);
            }
            if let Some(mark) = d.mark_ecn {
                self.marking = mark;
            }
        }
        self.sampling = !(idle && self.level == 0 && !self.marking);
        if self.sampling {
            core.schedule(core.now + interval, Event::HostModel(HostModelEvent::BusSample { host: node }));
        }
        self.latest = Some(signal);
    }
}

/// A PFC frame from the NIC `nic` to its ToR: pause or resume `queue`.
fn send_pfc(core: &mut Core, nic: &Port, queue: u8, pause: bool) {
    core.counters.pfc_pauses += pause as u64;
    let (peer, port) = (nic.peer, nic.peer_port);
    core.schedule_across(core.now + nic.delay, Event::Pfc { node: peer, port, queue, pause });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_load_leaves_the_nic_what_memory_has_left_or_a_proportional_share() {
        let config = HostBusConfig { enabled: true, local_load: 0, ..HostBusConfig::default() };
        let mut bus = HostBus::new(&config, 100_000_000_000, 1_000_000, 1064, None);
        assert_eq!(bus.dma_rate(0), 126_000_000_000, "idle memory: the interconnect bounds DMA");
        bus.config.local_load = 300_000_000_000;
        // 375 - 300 = 75 Gbps left; proportional share 375 * 100 / 400 = 93.75 Gbps.
        assert_eq!(bus.dma_rate(0), 93_750_000_000);
        bus.level = 2;
        // Throttled to 50%: 150 Gbps local, 225 Gbps left, capped at 126.
        assert_eq!(bus.dma_rate(0), 126_000_000_000);
        bus.level = 1;
        // 70%: 210 Gbps local; 165 left.
        assert_eq!(bus.dma_rate(0), 126_000_000_000);
        bus.config.local_load = 500_000_000_000;
        // 350 local: 25 left; share 375 * 100 / 450 = 83.33 Gbps.
        assert_eq!(bus.dma_rate(0), 83_333_333_333);
    }

    #[test]
    fn validation_names_the_key() {
        let bad = HostBusConfig { enabled: true, throttle_levels: vec![1.0, 1.5], ..HostBusConfig::default() };
        assert_eq!(bad.validate().unwrap_err().0, "host.bus.throttle_levels");
        let bad = HostBusConfig { enabled: true, sample_interval: 0, ..HostBusConfig::default() };
        assert_eq!(bad.validate().unwrap_err().0, "host.bus.sample_interval");
        assert!(HostBusConfig { enabled: true, ..HostBusConfig::default() }.validate().is_ok());
    }
}
