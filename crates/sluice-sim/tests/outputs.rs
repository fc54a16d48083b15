//! What the simulator reports for the output files: the receivers' in-order bytes, which flows
//! started, whether the time limit stopped the run, and throughput samples that reach the end of it.

mod common;

use common::{series, star, time, Run};
use sluice_results::BytesKind;
use sluice_sim::{Observe, StopRule};

/// Two 100 KB flows into host 0 of a star, sampled every 7 us (the run ends between samples).
fn incast() -> Run {
    let mut run = Run::new(star(3, "100Gbps", "1us"), "dcqcn").flow(1, 0, 100_000, 0).flow(2, 0, 100_000, 0);
    // Hosts are nodes 0..=2 and the switch `sw0` node 3; its port 0 leads to host 0.
    run.observe = Observe {
        throughput_flows: vec![0, 1],
        throughput_ports: vec![(3, 0)],
        sample_interval: time("7us"),
        ..Observe::default()
    };
    run
}

#[test]
fn finished_flows_received_every_byte_once() {
    let out = incast().run();
    for f in &out.flows {
        assert!(f.finish.is_some() && f.started, "flow {} finished", f.id);
        assert_eq!(f.received, f.size, "flow {}: the receiver took each byte once", f.id);
    }
    assert!(!out.run.hit_time_limit, "every flow finished before the limit");
    assert_eq!(out.run.data_drops, 0);
}

#[test]
fn samples_cover_the_run_up_to_its_last_event() {
    let out = incast().run();
    let end = out.run.sim_time;
    assert_ne!(end % time("7us"), 0, "the run ends between two samples");
    for label in ["flow 0", "flow 1"] {
        let s = series(&out, label);
        assert_eq!(s.kind, BytesKind::Payload);
        assert_eq!(s.samples.last().map(|&(t, _)| t), Some(end), "{label}: the last, partial interval is kept");
        assert_eq!(s.samples.iter().map(|&(_, b)| b).sum::<u64>(), 100_000, "{label}");
        let lengths: Vec<_> = s.intervals().map(|(_, length, _)| length).collect();
        assert!(lengths[..lengths.len() - 1].iter().all(|&l| l == time("7us")), "{label}: {lengths:?}");
        assert_eq!(*lengths.last().unwrap(), end % time("7us"));
    }
    let port = series(&out, "sw0:p0");
    assert_eq!(port.kind, BytesKind::Wire);
    let wire: u64 = port.samples.iter().map(|&(_, b)| b).sum();
    assert!(wire > 200_000, "the port counts headers too: {wire} B");
}

#[test]
fn a_run_cut_by_its_time_limit_says_so() {
    let mut run = incast().flow(1, 2, 10_000, time("50us"));
    run.stop = StopRule { duration: None, time_limit: time("10us") };
    let out = run.run();
    assert!(out.run.hit_time_limit);
    let late = &out.flows[2];
    assert!(!late.started && late.finish.is_none() && late.received == 0, "{late:?}");
    for f in &out.flows[..2] {
        assert!(f.started && f.finish.is_none(), "flow {}: 200 KB into one 100 Gbps link take over 16 us", f.id);
        assert!(f.received > 0 && f.received < f.size, "flow {} received part of its bytes: {f:?}", f.id);
    }
}

#[test]
fn a_fixed_duration_is_no_time_limit() {
    let mut run = incast();
    run.stop = StopRule { duration: Some(time("5us")), time_limit: time("1s") };
    let out = run.run();
    assert!(out.flows.iter().all(|f| f.finish.is_none()), "5 us are too short for 100 KB");
    assert!(!out.run.hit_time_limit, "the run lasted as long as it was asked to");
}
