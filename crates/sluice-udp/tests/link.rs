//! The UDP transport's endpoints over an in-memory link: a sender host and a receiver host joined by a
//! bottleneck with a byte buffer, DCTCP-style ECN marking, INT stamping and a propagation delay, run
//! as a small discrete-event loop. Deterministic, so every figure below is exact for its seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use sluice_cc::registry::{lookup, Factory};
use sluice_cc::Needs;
use sluice_core::{Time, PS_PER_MS, PS_PER_S, PS_PER_US};
use sluice_plane::PlaneConfig;
use sluice_udp::{Endpoint, FlowResult, FlowSpec, TransportConfig};
use sluice_wire::sluice::{append_hop, IntRecord, Kind, SluiceHeader};
use sluice_wire::Ecn;

const GBPS: u64 = 1_000_000_000;
const SENDER: u32 = 0;
const RECEIVER: u32 = 1;

/// The bottleneck from the sender to the receiver (the reverse path only delays).
#[derive(Clone, Copy)]
struct Link {
    /// The sender's NIC: faster than the bottleneck, as several senders behind one switch would be.
    nic_rate: u64,
    rate: u64,
    delay: Time,
    buffer: u64,
    /// Mark ECT packets CE when the queue they join holds more than this many bytes.
    k: u64,
    /// Drop every n-th data packet (0: none).
    drop_every: u64,
    /// Drop everything from this time on (the receiver vanishes).
    cut_at: Option<Time>,
    /// The receiver's line rate, where its token pacer runs (default: the sender's NIC rate).
    rx_rate: Option<u64>,
    /// Drop every data packet of this flow sent before this time (a flow starved of the bottleneck).
    starve: Option<(u32, Time)>,
    /// The endpoints back off their retransmission timers (`TransportConfig::rto_backoff`).
    rto_backoff: bool,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            nic_rate: 25 * GBPS,
            rate: 10 * GBPS,
            delay: 10 * PS_PER_US,
            buffer: 400_000,
            k: 30_000,
            drop_every: 0,
            cut_at: None,
            rx_rate: None,
            starve: None,
            rto_backoff: false,
        }
    }
}

/// What a run saw.
#[derive(Default)]
struct Run {
    results: Vec<FlowResult>,
    /// Payload-carrying bytes that crossed the bottleneck, and the time its last one left.
    bottleneck_bytes: u64,
    last_departure: Time,
    /// Queue length sampled at every data packet's arrival, bytes.
    queue_samples: Vec<u64>,
    marked: u64,
    dropped: u64,
    /// Datagrams an endpoint refused.
    refused: u64,
    now: Time,
}

struct Packet {
    to: u32,
    ecn: Ecn,
    bytes: Vec<u8>,
}

fn run(link: Link, specs: Vec<FlowSpec>, limit: Time) -> (Run, Endpoint, Endpoint) {
    run_with(link, specs, limit, None)
}

/// A run whose receiver runs `receiver`'s controllers for receiver-driven flows.
fn run_with(
    link: Link,
    specs: Vec<FlowSpec>,
    limit: Time,
    receiver: Option<Arc<dyn Factory>>,
) -> (Run, Endpoint, Endpoint) {
    run_plane(link, specs, limit, receiver, PlaneConfig::default())
}

/// A run whose sender's plane runs with `plane`.
fn run_plane(
    link: Link,
    specs: Vec<FlowSpec>,
    limit: Time,
    receiver: Option<Arc<dyn Factory>>,
    plane: PlaneConfig,
) -> (Run, Endpoint, Endpoint) {
    let config =
        TransportConfig { line_rate: link.nic_rate, rto_backoff: link.rto_backoff, ..TransportConfig::default() };
    let rx_config = TransportConfig { line_rate: link.rx_rate.unwrap_or(link.nic_rate), ..config };
    let mut hosts = [Endpoint::new(config, plane, 0), Endpoint::new(rx_config, PlaneConfig::default(), 0)];
    if let Some(factory) = receiver {
        hosts[RECEIVER as usize].receive_tokens(factory).unwrap();
    }
    for spec in specs {
        hosts[SENDER as usize].open(spec, 0).unwrap();
    }
    let mut wire: BinaryHeap<Reverse<(Time, u64)>> = BinaryHeap::new();
    let mut packets: Vec<Option<Packet>> = Vec::new();
    let mut out = Run::default();
    let mut link_free: Time = 0;
    let mut sent_data = 0u64;
    let mut buf = vec![0u8; 9000];
    let mut now = 0;
    while now < limit {
        for h in 0..2u32 {
            hosts[h as usize].advance(now);
            while let Some(t) = hosts[h as usize].poll_transmit(now, &mut buf) {
                let mut bytes = buf[..t.len].to_vec();
                let mut ecn = t.ecn;
                let mut at = now + link.delay;
                // Data (probes included) queues at the bottleneck; control packets pass it, as in
                // the software switch's control queue.
                let header = SluiceHeader::parse(&bytes).ok();
                let data = header.is_some_and(|h| h.kind == Kind::Data);
                let starved =
                    link.starve.is_some_and(|(flow, until)| now < until && header.is_some_and(|h| h.flow == flow));
                if h == SENDER && data {
                    sent_data += 1;
                    let wire_bytes = t.len as u64 + 42;
                    let queued = link_free.saturating_sub(now) * link.rate / PS_PER_S / 8;
                    out.queue_samples.push(queued);
                    let cut = link.cut_at.is_some_and(|c| now >= c);
                    if cut
                        || starved
                        || queued + wire_bytes > link.buffer
                        || (link.drop_every > 0 && sent_data.is_multiple_of(link.drop_every))
                    {
                        out.dropped += 1;
                        continue;
                    }
                    if queued > link.k && ecn.is_ect() {
                        ecn = Ecn::Ce;
                        out.marked += 1;
                    }
                    let departure = link_free.max(now) + wire_bytes * 8 * PS_PER_S / link.rate;
                    link_free = departure;
                    let hop = IntRecord {
                        ts_ns: departure / 1000,
                        tx_bytes: out.bottleneck_bytes,
                        qlen: queued,
                        rate: link.rate,
                    };
                    let len = bytes.len();
                    bytes.resize(len + 32, 0);
                    if let Ok(n) = append_hop(&mut bytes, len, &hop) {
                        bytes.truncate(n);
                    }
                    out.bottleneck_bytes += wire_bytes;
                    out.last_departure = departure;
                    at = departure + link.delay;
                } else if link.cut_at.is_some_and(|c| now >= c) {
                    continue;
                }
                packets.push(Some(Packet { to: 1 - h, ecn, bytes }));
                wire.push(Reverse((at, packets.len() as u64 - 1)));
            }
        }
        out.results.extend(hosts[SENDER as usize].take_finished());
        if hosts[SENDER as usize].active() == 0 {
            break;
        }
        let next_arrival = wire.peek().map(|Reverse((t, _))| *t);
        let wakeups = hosts.iter().filter_map(Endpoint::next_wakeup);
        let Some(next) = next_arrival.into_iter().chain(wakeups).min() else { break };
        now = next.max(now + 1);
        while let Some(Reverse((t, id))) = wire.peek().copied() {
            if t > now {
                break;
            }
            wire.pop();
            let p = packets[id as usize].take().unwrap();
            let from = 1 - p.to;
            out.refused += hosts[p.to as usize].handle(t, from, p.ecn, &p.bytes).is_err() as u64;
        }
    }
    out.now = now;
    let [a, b] = hosts;
    (out, a, b)
}

fn spec(id: u32, algorithm: &str, size: Option<u64>, line_rate: u64) -> FlowSpec {
    let a = lookup(algorithm).unwrap();
    FlowSpec {
        id,
        peer: RECEIVER,
        size,
        factory: (a.build)(&toml::Table::new(), line_rate).unwrap(),
        needs: Needs { ecn: a.needs.ecn, cnp: a.needs.cnp, int: a.needs.int, ..Needs::default() },
    }
}

fn specs(n: u32, algorithm: &str, size: u64) -> Vec<FlowSpec> {
    (0..n).map(|id| spec(id, algorithm, Some(size), 10 * GBPS)).collect()
}

/// Bottleneck utilisation over the run: bytes it carried over the time it was needed.
fn utilisation(r: &Run, link: &Link) -> f64 {
    r.bottleneck_bytes as f64 * 8.0 / (r.last_departure as f64 / PS_PER_S as f64) / link.rate as f64
}

fn mean(xs: &[u64]) -> f64 {
    xs.iter().sum::<u64>() as f64 / xs.len().max(1) as f64
}

fn completed(r: &Run, n: usize, size: u64) {
    assert_eq!(r.refused, 0, "no datagram refused");
    assert_eq!(r.results.len(), n, "every flow ends");
    for f in &r.results {
        assert_eq!(f.error, None, "flow {}", f.id);
        assert_eq!(f.size, size, "flow {} delivers everything", f.id);
    }
}

#[test]
fn reno_delivers_a_megabyte_in_order() {
    let link = Link { buffer: 2_000_000, ..Link::default() };
    let (r, a, b) = run(link, specs(1, "reno", 1_000_000), 100 * PS_PER_MS);
    completed(&r, 1, 1_000_000);
    assert_eq!(b.received().map(|(_, bytes)| bytes).sum::<u64>(), 1_000_000);
    assert_eq!((a.counters.retransmits, a.counters.malformed, b.counters.malformed), (0, 0, 0));
    assert!(a.plane_counters().signals > 0 && a.plane_counters().decisions > 0);
}

#[test]
fn dctcp_fills_the_bottleneck_and_holds_the_queue_near_k() {
    let link = Link::default();
    let (r, a, _) = run(link, specs(4, "dctcp", 4_000_000), 200 * PS_PER_MS);
    completed(&r, 4, 4_000_000);
    let u = utilisation(&r, &link);
    assert!(u > 0.9, "utilisation {u:.3}");
    assert!(r.marked > 0, "the queue passed K");
    assert_eq!(r.dropped, 0, "DCTCP keeps the queue below the buffer");
    let late: Vec<u64> = r.queue_samples[r.queue_samples.len() / 2..].to_vec();
    let q = mean(&late);
    assert!(q < 3.0 * link.k as f64, "mean queue {q:.0} B with K = {} B", link.k);
    assert_eq!(a.counters.retransmits, 0);
}

#[test]
fn losses_are_recovered_and_counted() {
    let link = Link { drop_every: 50, ..Link::default() };
    let (r, a, _) = run(link, specs(2, "cubic", 2_000_000), 500 * PS_PER_MS);
    completed(&r, 2, 2_000_000);
    assert!(r.dropped > 0);
    assert!(a.counters.retransmits >= r.dropped, "every drop resent: {} vs {}", a.counters.retransmits, r.dropped);
    assert!(r.results.iter().all(|f| f.retransmitted > 0));
}

/// Runs two 2 MB flows of `algorithm` and checks they complete with no refused packet.
fn two_flows(algorithm: &str) -> (Run, Endpoint, Endpoint, f64) {
    let link = Link::default();
    let (r, a, b) = run(link, specs(2, algorithm, 2_000_000), 500 * PS_PER_MS);
    completed(&r, 2, 2_000_000);
    assert_eq!(a.counters.unknown_flow + a.counters.out_of_window + a.counters.malformed, 0, "{algorithm}");
    assert!(a.plane_counters().decisions > 0, "{algorithm} decided");
    let u = utilisation(&r, &link);
    (r, a, b, u)
}

#[test]
fn dcqcn_slows_down_on_the_receivers_cnps() {
    let (r, a, b, _) = two_flows("dcqcn");
    assert!(b.counters.cnps_sent > 0, "the receiver answered CE marks with CNPs");
    assert!(r.marked > 0);
    // Two flows starting at the 25 Gbps line rate into 10 Gbps overflow the 400 KB buffer before the
    // CNPs (50 us apart) bring the rate down; without PFC those losses are DCQCN's own.
    assert!(a.counters.retransmits >= r.dropped);
}

#[test]
fn hpcc_holds_the_queue_near_empty_from_int_alone() {
    let (r, _, _, u) = two_flows("hpcc");
    assert_eq!(r.marked + r.dropped, 0, "no ECN, no loss: INT alone");
    assert!(u > 0.85, "utilisation {u:.3}");
    assert!(mean(&r.queue_samples) < 5_000.0, "mean queue {:.0} B", mean(&r.queue_samples));
}

#[test]
fn delay_based_algorithms_run_on_echoed_timestamps() {
    let (r, _, _, u) = two_flows("swift");
    assert_eq!(r.dropped, 0);
    assert!(u > 0.9, "swift: utilisation {u:.3}");
    // TIMELY cuts its rate on the queueing of the first round trips and then adds 10 Mbps per update
    // (Mittal et al. SIGCOMM'15 defaults), too slow to refill the link within a 2 MB flow; it runs.
    let (r, _, _, _) = two_flows("timely");
    assert_eq!(r.dropped, 0);
}

#[test]
fn a_vanished_receiver_ends_the_flow_with_an_error() {
    let link = Link { cut_at: Some(50 * PS_PER_US), ..Link::default() };
    let config = TransportConfig::default();
    let (r, a, _) = run(link, vec![spec(0, "reno", None, 10 * GBPS)], 3 * config.peer_timeout);
    assert_eq!(r.results.len(), 1);
    let error = r.results[0].error.as_deref().expect("an error");
    assert!(error.contains("peer 1") && error.contains("gone"), "{error}");
    assert!(r.results[0].finish <= 50 * PS_PER_US + config.peer_timeout + 10 * PS_PER_MS);
    assert!(a.counters.timeouts > 0);
}

/// A flow that gets nothing through for longer than the peer timeout, while its peer answers another
/// flow, is starved, not cut off: it keeps trying and completes once served. (65,536 flows through a
/// 500 Mbps bottleneck get a packet each about every 1.6 s.)
#[test]
fn a_starved_flow_outlives_the_peer_timeout_while_its_peer_answers_another() {
    let config = TransportConfig::default();
    let until = config.peer_timeout * 3 / 2;
    let link = Link { nic_rate: GBPS, rate: GBPS / 10, starve: Some((1, until)), ..Link::default() };
    let flows = vec![spec(0, "reno", None, GBPS), spec(1, "reno", Some(100_000), GBPS)];
    let (r, a, _) = run(link, flows, 3 * config.peer_timeout);
    let starved = r.results.iter().find(|f| f.id == 1).expect("the starved flow completed");
    assert_eq!(starved.error, None, "its peer answered flow 0 all along");
    assert!(starved.finish > until, "it completed at {} ps, once served", starved.finish);
    assert!(a.counters.timeouts > 0);
}

/// The same starved flow with its retransmission timer backed off (RFC 6298): it times out about once
/// per doubling (1, 2, 4, ... ms) instead of once per minimum RTO, and still completes once served.
#[test]
fn a_starved_flow_backs_off_its_retransmission_timer() {
    let config = TransportConfig::default();
    let until = config.peer_timeout * 3 / 2;
    let timeouts = |rto_backoff: bool| {
        let link = Link { nic_rate: GBPS, rate: GBPS / 10, starve: Some((1, until)), rto_backoff, ..Link::default() };
        let flows = vec![spec(0, "reno", None, GBPS), spec(1, "reno", Some(100_000), GBPS)];
        let (r, a, _) = run(link, flows, 3 * config.peer_timeout);
        let starved = r.results.iter().find(|f| f.id == 1).expect("the starved flow completed");
        assert_eq!(starved.error, None);
        assert!(starved.finish > until, "it completed at {} ps, once served", starved.finish);
        a.counters.timeouts
    };
    let (fixed, backed_off) = (timeouts(false), timeouts(true));
    // 1.5 s starved: about 1,500 expiries of a 1 ms timer, about 11 doublings of one.
    assert!(fixed >= 500, "{fixed} timeouts at a fixed timer");
    assert!((8..=20).contains(&backed_off), "{backed_off} timeouts backing off");
}

#[test]
fn streams_end_when_stopped() {
    let config = TransportConfig::default();
    let mut a = Endpoint::new(config, PlaneConfig::default(), 0);
    a.open(spec(3, "reno", None, 10 * GBPS), 0).unwrap();
    assert!(a.open(spec(3, "reno", None, 10 * GBPS), 0).is_err(), "ids are unique");
    let mut buf = vec![0u8; 9000];
    let t = a.poll_transmit(0, &mut buf).expect("the first packet");
    assert_eq!((t.peer, t.ecn), (RECEIVER, Ecn::NotEct));
    a.stop_streams();
    assert_eq!(a.active(), 1, "what was sent must still be acknowledged");
}

/// Runs `n` flows of `size` bytes of the receiver-driven `algorithm` (parameters `params`) with the
/// receiver's token pacer at the bottleneck rate, as at a receiver whose downlink is the bottleneck.
fn token_flows(algorithm: &str, params: &str, link: Link, n: u32, size: u64) -> (Run, Endpoint, Endpoint) {
    let a = lookup(algorithm).unwrap();
    let params: toml::Table = toml::from_str(params).unwrap();
    let factory = (a.build)(&params, link.nic_rate).unwrap();
    let specs = (0..n)
        .map(|id| FlowSpec { id, peer: RECEIVER, size: Some(size), factory: factory.clone(), needs: a.needs })
        .collect();
    run_with(link, specs, 2 * PS_PER_S, Some(factory))
}

#[test]
fn every_receiver_driven_algorithm_delivers_on_tokens() {
    let link = Link { rx_rate: Some(10 * GBPS), ..Link::default() };
    for algorithm in ["ndp", "homa", "expresspass", "ep_aeolus", "tocc", "tocc_nounsched"] {
        let (r, a, b) = token_flows(algorithm, "", link, 2, 2_000_000);
        completed(&r, 2, 2_000_000);
        let (sent, received) = (a.token_counters(), b.token_counters());
        assert!(received.tokens_issued > 0 && sent.tokens_used > 0, "{algorithm}: tokens issued and spent");
        assert!(sent.scheduled_bytes > 0, "{algorithm}: data sent against tokens");
        let refused = a.counters.unknown_flow + a.counters.out_of_window + a.counters.malformed;
        assert_eq!(refused + b.counters.unexpected_kind + b.counters.malformed, 0, "{algorithm}: nothing refused");
        let u = utilisation(&r, &link);
        assert!(u > 0.8, "{algorithm}: utilisation {u:.3}");
        assert!(r.dropped == 0 || received.nacks > 0, "{algorithm}: losses are asked for again");
    }
}

#[test]
fn the_receivers_pacer_keeps_the_bottleneck_queue_short() {
    // NDP's pulls at the receiver's rate clock the senders: after the first window the queue stays
    // within a few packets, where a sender-driven flow without ECN would fill the buffer.
    let link = Link { rx_rate: Some(10 * GBPS), ..Link::default() };
    let (r, _, b) = token_flows("ndp", "", link, 4, 2_000_000);
    completed(&r, 4, 2_000_000);
    let late = &r.queue_samples[r.queue_samples.len() / 2..];
    assert!(mean(late) < 20_000.0, "mean queue {:.0} B", mean(late));
    let c = b.token_counters();
    assert!(c.tokens_issued >= 4 * 2_000_000 / 1416 / 2, "one pull per arrival: {}", c.tokens_issued);
}

#[test]
fn receiver_driven_losses_are_found_by_the_receiver() {
    for algorithm in ["ndp", "homa", "tocc"] {
        let link = Link { rx_rate: Some(10 * GBPS), drop_every: 40, ..Link::default() };
        let (r, a, b) = token_flows(algorithm, "", link, 2, 1_000_000);
        completed(&r, 2, 1_000_000);
        assert!(r.dropped > 0);
        assert!(b.token_counters().nacks > 0, "{algorithm}: the receiver asked for what was missing");
        assert!(a.counters.retransmits > 0, "{algorithm}: and it was sent again");
        assert_eq!(a.counters.timeouts, 0, "{algorithm}: the sender has no retransmission timeout");
    }
}

#[test]
fn homa_grants_the_shortest_flow_first() {
    // One grant at a time (overcommit 1): the 200 KB message finishes before the 2 MB ones that started
    // with it.
    let link = Link { rx_rate: Some(10 * GBPS), ..Link::default() };
    let a = lookup("homa").unwrap();
    let params: toml::Table = toml::from_str("overcommit = 1").unwrap();
    let factory = (a.build)(&params, link.nic_rate).unwrap();
    let specs = [2_000_000, 200_000, 2_000_000]
        .iter()
        .enumerate()
        .map(|(id, &size)| FlowSpec {
            id: id as u32,
            peer: RECEIVER,
            size: Some(size),
            factory: factory.clone(),
            needs: a.needs,
        })
        .collect();
    let (r, _, _) = run_with(link, specs, 2 * PS_PER_S, Some(factory));
    assert_eq!(r.results.len(), 3);
    assert_eq!(r.results[0].id, 1, "the short message ends first");
    let long = r.results.iter().filter(|f| f.id != 1).map(|f| f.finish).min().unwrap();
    assert!(r.results[0].finish * 4 < long, "{} vs {long}", r.results[0].finish);
}

#[test]
fn a_receiver_without_the_algorithm_refuses_and_the_sender_gives_up() {
    let link = Link::default();
    let a = lookup("ndp").unwrap();
    let factory = (a.build)(&toml::Table::new(), link.nic_rate).unwrap();
    let spec = FlowSpec { id: 0, peer: RECEIVER, size: Some(100_000), factory, needs: a.needs };
    let config = TransportConfig::default();
    let (r, _, b) = run(link, vec![spec], 3 * config.peer_timeout);
    assert!(b.counters.unexpected_kind > 0, "requests and data refused");
    let error = r.results[0].error.as_deref().expect("an error");
    assert!(error.contains("runs no receiver"), "{error}");
}

#[test]
fn a_receiver_driven_stream_ends_when_stopped() {
    let link = Link { rx_rate: Some(10 * GBPS), ..Link::default() };
    let a = lookup("expresspass").unwrap();
    let factory = (a.build)(&toml::Table::new(), link.nic_rate).unwrap();
    let config = TransportConfig { line_rate: link.nic_rate, ..TransportConfig::default() };
    let mut tx = Endpoint::new(config, PlaneConfig::default(), 0);
    let mut rx = Endpoint::new(TransportConfig { line_rate: 10 * GBPS, ..config }, PlaneConfig::default(), 0);
    rx.receive_tokens(factory.clone()).unwrap();
    tx.open(FlowSpec { id: 5, peer: RECEIVER, size: None, factory, needs: a.needs }, 0).unwrap();
    let mut buf = vec![0u8; 9000];
    let mut now = 0;
    let mut stopped = false;
    while tx.active() > 0 && now < PS_PER_S {
        if now >= 2 * PS_PER_MS && !stopped {
            tx.stop_streams();
            stopped = true;
        }
        deliver(&mut tx, &mut rx, now, RECEIVER, &mut buf);
        deliver(&mut rx, &mut tx, now, RECEIVER, &mut buf);
        now += PS_PER_US;
    }
    let done = tx.take_finished();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].error, None);
    assert!(done[0].size > 100_000, "it sent for 2 ms: {}", done[0].size);
    assert_eq!(rx.received().map(|(_, b)| b).sum::<u64>(), done[0].size);
}

/// Moves what `from` sends at `now` to `to`, 5 us later, as from peer `peer`.
fn deliver(from: &mut Endpoint, to: &mut Endpoint, now: Time, peer: u32, buf: &mut [u8]) {
    from.advance(now);
    while let Some(t) = from.poll_transmit(now, buf) {
        to.handle(now + 5 * PS_PER_US, peer, t.ecn, &buf[..t.len]).unwrap();
    }
}

#[test]
fn offload_mode_carries_reports_and_decisions_over_the_modelled_channel() {
    use sluice_plane::Mode;
    let link = Link::default();
    let native = run(link, specs(4, "dctcp", 2_000_000), 200 * PS_PER_MS);
    completed(&native.0, 4, 2_000_000);
    assert_eq!(native.1.plane_counters().batches, 0, "native mode sends nothing over the channel");
    let plane = PlaneConfig { mode: Mode::Offload, ..PlaneConfig::default() };
    let (r, a, _) = run_plane(link, specs(4, "dctcp", 2_000_000), 200 * PS_PER_MS, None, plane.clone());
    completed(&r, 4, 2_000_000);
    let c = a.plane_counters();
    assert!(c.batches > 0 && c.batches < c.reports, "reports batched: {} in {} batches", c.reports, c.batches);
    assert!(c.decision_messages > 0 && c.busy_time > 0, "the plane core worked and decided");
    let u = utilisation(&r, &link);
    assert!(u > 0.9, "DCTCP off the datapath still fills the link: {u:.3}");
    // A slow channel (100 us each way) reacts later: more packets pass K before the windows come down
    // (2,632 marks against 1,559 native), and the flows take longer.
    let slow = PlaneConfig { latency: 100 * PS_PER_US, ..plane };
    let (late, _, _) = run_plane(link, specs(4, "dctcp", 2_000_000), 400 * PS_PER_MS, None, slow);
    completed(&late, 4, 2_000_000);
    assert!(late.marked as f64 > 1.3 * native.0.marked as f64, "marks {} against {}", late.marked, native.0.marked);
    let last = |r: &Run| r.results.iter().map(|f| f.finish).max().unwrap();
    assert!(last(&late) > last(&native.0));
}

#[test]
fn a_full_ring_pushes_back_on_the_flows_reports() {
    use sluice_plane::Mode;
    // A plane core of 20 us per report and a ring of 4 cannot keep up with per-ACK reports of 8 flows.
    let plane =
        PlaneConfig { mode: Mode::Offload, ring_capacity: 4, service_time: 20 * PS_PER_US, ..PlaneConfig::default() };
    let (r, a, _) = run_plane(Link::default(), specs(8, "dctcp", 500_000), PS_PER_S, None, plane);
    completed(&r, 8, 500_000);
    let c = a.plane_counters();
    assert!(c.overflows > 0 && c.backpressure_events > 0, "the ring overflowed and pushed back: {c:?}");
}

#[test]
fn a_receiver_driven_flow_is_traced_where_its_algorithm_runs() {
    // ExpressPass decides at the receiver: its trace (credit rate, w) comes from the receiving endpoint,
    // and the sender, whose controller only obeys tokens, traces nothing.
    let a = lookup("expresspass").unwrap();
    let factory = (a.build)(&toml::Table::new(), 10 * GBPS).unwrap();
    let config = TransportConfig { line_rate: 10 * GBPS, ..TransportConfig::default() };
    let mut tx = Endpoint::new(config, PlaneConfig::default(), 0);
    let mut rx = Endpoint::new(config, PlaneConfig::default(), 0);
    tx.trace(&[5], 10 * PS_PER_US);
    rx.trace(&[5], 10 * PS_PER_US);
    rx.receive_tokens(factory.clone()).unwrap();
    tx.open(FlowSpec { id: 5, peer: RECEIVER, size: Some(1_000_000), factory, needs: a.needs }, 0).unwrap();
    let mut buf = vec![0u8; 9000];
    let mut now = 0;
    while tx.active() > 0 && now < 100 * PS_PER_MS {
        deliver(&mut tx, &mut rx, now, RECEIVER, &mut buf);
        deliver(&mut rx, &mut tx, now, RECEIVER, &mut buf);
        now += PS_PER_US;
    }
    assert_eq!(tx.active(), 0, "the flow ended");
    assert!(tx.traces().is_empty(), "the sender's controller traces nothing");
    let traces = rx.traces();
    assert_eq!(traces.len(), 1);
    assert_eq!(traces[0].flow(), 5);
    assert_eq!(traces[0].names(), ["credit_rate_bps", "w", "rtt_ns"]);
    assert!(traces[0].len() > 10, "rows at most 10 us apart over the flow: {}", traces[0].len());
}

/// Packets that overtake each other on the way: every second data packet is delivered before the one
/// sent just ahead of it, and each ACK answering a packet sent before one an earlier ACK answered
/// reaches the plane as reordering (`Ack::reordered`). Delivered in order, nothing is reordered.
#[test]
fn packets_that_overtake_each_other_are_reported_as_reordering() {
    let reordered = |swap: bool| {
        let a = lookup("dctcp").unwrap();
        let factory = (a.build)(&toml::Table::new(), 10 * GBPS).unwrap();
        let config = TransportConfig { line_rate: 10 * GBPS, ..TransportConfig::default() };
        let mut tx = Endpoint::new(config, PlaneConfig::default(), 0);
        let mut rx = Endpoint::new(config, PlaneConfig::default(), 0);
        tx.open(FlowSpec { id: 1, peer: RECEIVER, size: Some(1_000_000), factory, needs: a.needs }, 0).unwrap();
        let mut buf = vec![0u8; 9000];
        let (mut now, mut held, mut count) = (0, None, 0u64);
        while tx.active() > 0 && now < 100 * PS_PER_MS {
            tx.advance(now);
            let mut arriving = Vec::new();
            while let Some(t) = tx.poll_transmit(now, &mut buf) {
                count += 1;
                let packet = (buf[..t.len].to_vec(), t.ecn);
                match swap && count % 2 == 1 {
                    true => held = Some(packet),
                    false => arriving.extend([Some(packet), held.take()].into_iter().flatten()),
                }
            }
            if tx.active() == 0 || now % (20 * PS_PER_US) == 0 {
                arriving.extend(held.take()); // the last packet, or one the sender waits on
            }
            for (datagram, ecn) in &arriving {
                rx.handle(now + 5 * PS_PER_US, RECEIVER, *ecn, datagram).unwrap();
            }
            deliver(&mut rx, &mut tx, now, RECEIVER, &mut buf);
            now += PS_PER_US;
        }
        let done = tx.take_finished();
        assert!(done.len() == 1 && done[0].error.is_none(), "{done:?}");
        tx.plane_counters().reordered
    };
    assert_eq!(reordered(false), 0);
    let swapped = reordered(true);
    assert!(swapped > 100, "about one ACK in two of the flow's 700 packets: {swapped}");
}
