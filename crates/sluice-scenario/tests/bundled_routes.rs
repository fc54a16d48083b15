//! The routes of every bundled scenario's topology (`scenarios/` and its subfolders) equal the
//! breadth-first route table for every node and destination host.

use std::path::{Path, PathBuf};

use sluice_scenario::{load, resolve};

/// Every `.toml` file under `dir`, recursively, sorted.
fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            files.extend(scenario_files(&path));
        } else if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn bundled_topologies_route_as_the_search_does() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let files = scenario_files(&scenarios);
    assert!(files.len() >= 16, "{} scenario files", files.len());
    for path in files {
        let scenario = load(&path, &[], None).unwrap_or_else(|e| panic!("{e}"));
        let resolved = resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let (topo, routes) = (&resolved.topology, &resolved.routes);
        assert!(routes.is_closed_form(), "{}: {}", path.display(), topo.describe());
        let table = topo.routes_by_search();
        for node in 0..topo.nodes.len() as u32 {
            for dst in 0..topo.num_hosts() {
                assert_eq!(routes.next_hops(node, dst), table.next_hops(node, dst), "{}", path.display());
            }
        }
    }
}
