//! Flow-list CSV (`src,dst,size_bytes,start_ns[,algorithm]`), as `[[workload]] kind = "flow_list"` reads
//! it.

use sluice_workload::parse_flow_list;

/// Host counts each input is parsed against: none, the smallest network, a usual one and the largest.
const HOST_COUNTS: [u32; 4] = [0, 2, 128, u32::MAX];

/// Parses the input against several host counts; every flow accepted must satisfy the documented
/// checks (hosts below the count, distinct ends, at least 1 byte), and every algorithm number must name
/// one of the names returned.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for n_hosts in HOST_COUNTS {
        match parse_flow_list(text, n_hosts) {
            Ok((flows, names)) => {
                for flow in flows {
                    assert!(usize::from(flow.algorithm) <= names.len(), "unnumbered algorithm: {flow:?}");
                    assert!(flow.src < n_hosts && flow.dst < n_hosts, "host out of range: {flow:?}");
                    assert_ne!(flow.src, flow.dst, "flow to itself: {flow:?}");
                    assert!(flow.size >= 1, "empty flow: {flow:?}");
                }
            }
            Err(e) => drop(e.to_string()),
        }
    }
}
