//! A lone flow without congestion control finishes at its ideal completion time.

mod common;

use common::{star, us, Run};
use sluice_core::serialization_ps;

#[test]
fn single_flow_on_idle_path_meets_ideal_fct() {
    for size in [1_000u64, 7_777, 100_000, 3_000_000] {
        let out = Run::new(star(2, "100Gbps", "1us"), "none").flow(0, 1, size, us("10us")).run();
        let f = &out.flows[0];
        let fct = f.fct().expect("the flow finishes");
        let one_mtu = serialization_ps(1082, 100_000_000_000);
        let diff = fct.abs_diff(f.ideal_fct);
        assert!(diff <= one_mtu, "size {size}: fct {fct} ps vs ideal {} ps (diff {diff} > {one_mtu})", f.ideal_fct);
        assert_eq!(out.run.bytes_delivered, size);
        assert_eq!(out.run.drops, 0);
    }
}
