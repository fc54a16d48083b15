//! Flows the unit tests of several algorithms start on.

use crate::api::FlowInfo;

/// A 100 Gb/s fabric flow: 1000 B segments, 82 B of headers, 5 us base RTT over 3 hops.
pub(crate) fn fabric_flow() -> FlowInfo {
    FlowInfo {
        flow_id: 0,
        mss: 1000,
        header_bytes: 82,
        line_rate: 100_000_000_000,
        base_rtt: 5_000_000,
        hops: 3,
        size: None,
        start: 0,
    }
}

/// A 100 Gb/s flow into an endpoint: `mss`-byte segments, 64 B of headers, 8 us base RTT over 4 hops.
pub(crate) fn endpoint_flow(mss: u32) -> FlowInfo {
    FlowInfo { mss, header_bytes: 64, base_rtt: 8_000_000, hops: 4, ..fabric_flow() }
}
