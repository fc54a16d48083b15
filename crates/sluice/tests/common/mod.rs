//! Helpers shared by the integration tests that compare a real datapath's results with the simulator's.

use std::path::Path;

/// One fct.csv row: (id, src, size, start_ns, finish_ns).
pub type FctRow = (u64, u32, u64, f64, Option<f64>);

/// fct.csv rows of the results in `dir`.
pub fn fct_rows(dir: &Path) -> Vec<FctRow> {
    let text = std::fs::read_to_string(dir.join("fct.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (id, src, size, start, finish) = (col("id"), col("src"), col("size_bytes"), col("start_ns"), col("finish_ns"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[id].parse().unwrap(),
                f[src].parse().unwrap(),
                f[size].parse().unwrap(),
                f[start].parse().unwrap(),
                f[finish].parse().ok(),
            )
        })
        .collect()
}

/// Checks closed-loop slots run on a real datapath (`real`) against the simulator's (`sim`), one slot
/// per sending host in `srcs`: more than `least` flows each, the simulator's sizes in its order, each
/// flow started within 1 ms of its predecessor's finish, and none after `window_ns`.
pub fn check_closed_loop_slots(sim: &[FctRow], real: &[FctRow], srcs: &[u32], least: usize, window_ns: f64) {
    for &src in srcs {
        let mine = |rows: &[FctRow]| -> Vec<(u64, f64, Option<f64>)> {
            let mut v: Vec<_> = rows.iter().filter(|r| r.1 == src).map(|r| (r.2, r.3, r.4)).collect();
            v.sort_by(|a, b| a.1.total_cmp(&b.1));
            v
        };
        let (s, u) = (mine(sim), mine(real));
        assert!(u.len() > least, "host {src}: {} flows", u.len());
        let n = s.len().min(u.len());
        let sizes = |v: &[(u64, f64, Option<f64>)]| v[..n].iter().map(|f| f.0).collect::<Vec<u64>>();
        assert_eq!(sizes(&s), sizes(&u), "host {src}: the slot's sizes in the simulator's order");
        for w in u.windows(2) {
            let finish = w[0].2.expect("every flow finished");
            assert!(
                w[1].1 >= finish && w[1].1 - finish < 1e6,
                "host {src}: next start {} after finish {finish}",
                w[1].1
            );
        }
        assert!(u.iter().all(|f| f.1 < window_ns), "host {src}: no start after the window");
    }
}

/// Checks that a flow id names the same flow on a real datapath (`real`) as in the simulator (`sim`):
/// every id both ran has the same sender and size (a closed loop's later flows are numbered by slot and
/// generation on every datapath), and more than `least` ids are shared.
pub fn check_ids_name_the_same_flows(sim: &[FctRow], real: &[FctRow], least: usize) {
    let mut shared = 0;
    for r in real {
        if let Some(s) = sim.iter().find(|s| s.0 == r.0) {
            assert_eq!((s.1, s.2), (r.1, r.2), "flow {}: sender and size in the simulator and on the datapath", r.0);
            shared += 1;
        }
    }
    assert!(shared > least, "{shared} flow ids in both runs");
}
