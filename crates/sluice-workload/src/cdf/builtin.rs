//! The distributions embedded in the crate (copies of the published files, see `data/SOURCES.md`).

use super::{parse, SizeCdf};
use crate::WorkloadError;

/// Payload bytes per packet in HomaSimulation's `DCTCP_MsgSizeDist.txt`, whose sizes count packets: the
/// simulator multiplies them by `maxDataBytesPerPkt` (`MsgSizeDistributions.cc`), which its applications set
/// to the 1500 B Ethernet payload less the IP, UDP and Homa data headers.
pub const DCTCP_PACKET_BYTES: u64 = 1442;

/// Shape of the generalized Pareto tail of the Facebook key-value sizes (HomaSimulation
/// `MsgSizeDistributions.cc`, `getFacebookSizeInterarrival`).
const MEMCACHED_TAIL_SHAPE: f64 = 0.348238;
/// Scale of that tail, in bytes (same source).
const MEMCACHED_TAIL_SCALE: f64 = 214.476;
/// Largest key-value size drawn, `0x40000000` B (same source).
const MEMCACHED_MAX_SIZE: u64 = 0x4000_0000;

/// Names and one-line descriptions of the builtin distributions, in the order they are documented.
const BUILTINS: &[(&str, &str)] = &[
    ("websearch", "web search (DCTCP paper), HPCC artifact WebSearch_distribution.txt, interpolated; mean 1.71 MB, max 30 MB"),
    ("fb_hadoop", "Facebook Hadoop, HPCC artifact FbHdp_distribution.txt, interpolated; mean 120 KB, max 10 MB"),
    ("alistorage", "Alibaba storage 2019, HPCC artifact AliStorage2019.txt, interpolated; mean 40.9 KB, max 2 MB"),
    ("google_rpc", "Google RPC 2008, HPCC artifact GoogleRPC2008.txt, interpolated; mean 2.89 KB, max 15.2 MB"),
    ("dctcp_homa", "web search (DCTCP paper), HomaSimulation DCTCP_MsgSizeDist.txt, packets of 1442 B, step; mean 2.52 MB, max 28.8 MB"),
    ("hadoop_homa", "Facebook Hadoop, HomaSimulation Facebook_HadoopDist_All.txt, step; mean 127.8 KB, max 10 MB"),
    ("webserver", "Facebook web server (intra-cluster), HomaSimulation, step; mean 62.9 KB, max 1 MB"),
    ("cache_follower", "Facebook cache follower (intra-cluster), HomaSimulation, step; mean 693 KB, max 3.84 MB"),
    ("memcached", "Facebook memcached ETC key-value sizes, HomaSimulation, 1-15 B head + generalized Pareto tail; mean 185 B"),
];

/// Names and one-line descriptions of the distributions [`SizeCdf::builtin`] knows.
pub fn builtin_names() -> &'static [(&'static str, &'static str)] {
    BUILTINS
}

/// The comma-separated builtin names, for error messages.
pub(crate) fn name_list() -> String {
    BUILTINS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// Whether `name` is a builtin distribution.
pub(crate) fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|(known, _)| *known == name)
}

/// Loads the builtin distribution `name`.
pub(super) fn load(name: &str) -> Result<SizeCdf, WorkloadError> {
    let hpcc = |text: &str| SizeCdf::parse_hpcc(text);
    let homa = |text: &str| SizeCdf::parse_homa(text, 1);
    let parsed = match name {
        "websearch" => hpcc(include_str!("../../data/WebSearch_distribution.txt")),
        "fb_hadoop" => hpcc(include_str!("../../data/FbHdp_distribution.txt")),
        "alistorage" => hpcc(include_str!("../../data/AliStorage2019.txt")),
        "google_rpc" => hpcc(include_str!("../../data/GoogleRPC2008.txt")),
        "dctcp_homa" => SizeCdf::parse_homa(include_str!("../../data/DCTCP_MsgSizeDist.txt"), DCTCP_PACKET_BYTES),
        "hadoop_homa" => homa(include_str!("../../data/Facebook_HadoopDist_All.txt")),
        "webserver" => homa(include_str!("../../data/Facebook_WebServerDist_IntraCluster.txt")),
        "cache_follower" => homa(include_str!("../../data/Facebook_CacheFollowerDist_IntraCluster.txt")),
        "memcached" => memcached(),
        _ => return Err(unknown(name)),
    };
    parsed.map_err(|e| e.with_file(name))
}

/// The error for a name that is not a builtin.
pub(crate) fn unknown(name: &str) -> WorkloadError {
    WorkloadError::new(format!("unknown builtin CDF `{name}`; the builtins are {}", name_list()))
}

/// Facebook key-value sizes: the 15-point head of `FacebookKeyValueMsgSizeDist.txt` (cumulative 0.47 at
/// 15 B) continued by HomaSimulation's generalized Pareto tail, rounded and capped as it draws them.
fn memcached() -> Result<SizeCdf, WorkloadError> {
    let head = parse::homa_points(include_str!("../../data/FacebookKeyValueMsgSizeDist.txt"), 1)?;
    Ok(SizeCdf::with_pareto_tail(head, MEMCACHED_TAIL_SHAPE, MEMCACHED_TAIL_SCALE, MEMCACHED_MAX_SIZE))
}
