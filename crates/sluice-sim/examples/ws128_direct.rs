//! Runs the ws128 benchmark flows on the k=8 fat-tree with DCQCN, straight from the simulator API.
use std::path::Path;
use std::time::Instant;

use sluice_sim::*;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "scenarios/flows/ws128_l30_2ms.flows.csv".into());
    let text = std::fs::read_to_string(&path).expect("flows file");
    let flows: Vec<FlowSpec> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            FlowSpec {
                src: v[0] as u32,
                dst: v[1] as u32,
                size: v[2],
                start: v[3] * 1000,
                stop: None,
                group: 0,
                algorithm: 0,
            }
        })
        .collect();
    let spec = sluice_topo::TopologySpec::fat_tree(8, 100_000_000_000);
    let topology = sluice_topo::build(&spec, Path::new(".")).unwrap();
    let routes = topology.routes();
    let alg = sluice_cc::lookup("dcqcn").unwrap();
    let mut params = toml::Table::new();
    params.insert("variant".into(), toml::Value::String("hpcc".into()));
    let factory = (alg.build)(&params, 100_000_000_000).unwrap();
    let mut switch = SwitchConfig::default();
    switch.ecn.thresholds = vec![(100_000_000_000, EcnThresholds::red_for_rate(100_000_000_000))];
    let input = SimInput { switch, ..SimInput::new(topology, routes, flows.into(), factory, alg.needs) };
    let t = Instant::now();
    let out = Simulation::new(input).run(&mut |_| {});
    let wall = t.elapsed().as_secs_f64();
    let finished = out.flows.iter().filter(|f| f.finish.is_some()).count();
    println!(
        "wall {wall:.3}s sim {:.3}ms events {} ({:.1}M/s) hops {} ({:.1}M/s) finished {finished}/{} drops {} pauses {} peak pkts {}",
        out.run.sim_time as f64 / 1e9,
        out.counters.events,
        out.counters.events as f64 / wall / 1e6,
        out.counters.packet_hops,
        out.counters.packet_hops as f64 / wall / 1e6,
        out.flows.len(),
        out.counters.drops,
        out.counters.pfc_pauses,
        out.peak_packets
    );
}
