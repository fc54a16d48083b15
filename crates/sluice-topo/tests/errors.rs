//! Every kind of bad input gives its own error, naming the offending key or file line.

use std::path::Path;

use sluice_topo::{build, TopoError, TopologySpec};

const G100: u64 = 100_000_000_000;

fn spec(text: &str) -> TopologySpec {
    toml::from_str(text).unwrap()
}

fn error_of(text: &str) -> TopoError {
    let spec = spec(text);
    let validated = spec.validate().unwrap_err();
    assert_eq!(build(&spec, Path::new(".")).unwrap_err(), validated, "build validates first");
    validated
}

fn assert_field(text: &str, field: &str, needle: &str) {
    let err = error_of(text);
    assert_eq!(err.field.as_deref(), Some(field), "{err}");
    assert!(err.message.contains(needle), "{err:?} should mention {needle:?}");
}

const FAT: &str = "kind = \"fat_tree\"\nhost_rate = \"100Gbps\"\n";

#[test]
fn fat_tree_k_must_be_even_and_positive() {
    assert_field(&format!("{FAT}k = 7"), "k", "even and at least 2 (got 7)");
    assert_field(&format!("{FAT}k = 0"), "k", "(got 0)");
}

#[test]
fn fat_tree_counts_must_be_positive() {
    for key in ["pods", "tors_per_pod", "aggs_per_pod", "hosts_per_tor", "cores", "oversubscription"] {
        assert_field(&format!("{FAT}k = 8\n{key} = 0"), key, "at least 1");
    }
}

#[test]
fn fat_tree_rates_must_be_positive() {
    assert_field("kind = \"fat_tree\"\nk = 8\nhost_rate = \"0Gbps\"", "host_rate", "positive rate");
    assert_field(&format!("{FAT}k = 8\ntor_agg_rate = \"0bps\""), "tor_agg_rate", "positive rate");
    assert_field(&format!("{FAT}k = 8\nagg_core_rate = \"0bps\""), "agg_core_rate", "positive rate");
}

#[test]
fn fat_tree_cores_must_divide_among_aggs() {
    assert_field(&format!("{FAT}k = 8\ncores = 10"), "cores", "multiple of aggs_per_pod (4), got 10");
    assert_field(&format!("{FAT}k = 8\naggs_per_pod = 3"), "cores", "multiple of aggs_per_pod (3), got 16");
}

#[test]
fn fat_tree_oversubscription_conflicts_with_hosts_per_tor() {
    assert_field(&format!("{FAT}k = 8\nhosts_per_tor = 8\noversubscription = 2"), "oversubscription", "either");
}

#[test]
fn oversized_topologies_are_rejected_before_building() {
    let err = error_of(&format!("{FAT}k = 1000"));
    assert_eq!(err.field.as_deref(), Some("k"), "{err}");
    assert!(err.message.contains("limit"), "{err}");
    // (k/2)^2 cores overflow a u32 here; the error is still k's, not that of the cores it implies.
    assert_field(&format!("{FAT}k = 1000000"), "k", "k = 1000000: ");
    assert_field(
        &format!(
            "{FAT}k = 64
oversubscription = 100000"
        ),
        "oversubscription",
        "limit",
    );
    let err = error_of(&format!(
        "{FAT}k = 8
pods = 100000000"
    ));
    assert_eq!(err.field, None, "an explicit count is not k's fault: {err}");
    let err = error_of("kind = \"star\"\nhosts = 70000\nrate = \"1Gbps\"");
    assert!(err.message.contains("70000 ports"), "{err}");
}

#[test]
fn other_kinds_reject_zero_counts_and_rates() {
    assert_field(
        "kind = \"leaf_spine\"\nhosts_per_tor = 4\ntors = 2\nspines = 0\nhost_rate = \"1Gbps\"",
        "spines",
        "at least 1",
    );
    assert_field(
        "kind = \"leaf_spine\"\nhosts_per_tor = 4\ntors = 2\nspines = 2\nhost_rate = \"1Gbps\"\nuplink_rate = \"0Gbps\"",
        "uplink_rate",
        "positive",
    );
    assert_field("kind = \"star\"\nhosts = 0\nrate = \"1Gbps\"", "hosts", "at least 1");
    assert_field("kind = \"star\"\nhosts = 2\nrate = \"0Gbps\"", "rate", "positive");
    assert_field(
        "kind = \"dumbbell\"\nleft = 1\nright = 1\nhost_rate = \"1Gbps\"\nbottleneck_rate = \"0Gbps\"",
        "bottleneck_rate",
        "positive",
    );
    assert_field(
        "kind = \"dumbbell\"\nleft = 0\nright = 1\nhost_rate = \"1Gbps\"\nbottleneck_rate = \"1Gbps\"",
        "left",
        "at least 1",
    );
    assert_field("kind = \"file\"\npath = \"\"", "path", "empty");
    assert_field("kind = \"star\"\nhosts = 2\nrate = \"1Gbps\"\ndelay = \"2000000s\"", "delay", "13.3 days");
}

fn file_error(path: &str) -> String {
    let spec = TopologySpec::File { path: path.into() };
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let err = build(&spec, &base).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("path"), "{err}");
    assert!(err.message.contains(path), "the message names the file: {err}");
    err.message
}

fn assert_file_error(path: &str, line: Option<usize>, needle: &str) {
    let message = file_error(path);
    if let Some(line) = line {
        assert!(message.contains(&format!("{path}:{line}: ")), "{message:?} should point at line {line}");
    }
    assert!(message.contains(needle), "{message:?} should mention {needle:?}");
}

#[test]
fn toml_file_errors() {
    assert_file_error("missing.toml", None, "cannot read");
    assert_file_error("bad_unknown_node.toml", Some(11), "unknown node \"s1\"");
    assert_file_error("bad_duplicate.toml", Some(10), "duplicate node name \"h0\"");
    assert_file_error("bad_two_nics.toml", Some(19), "host \"h0\" has more than one link");
    assert_file_error("bad_disconnected.toml", None, "host \"h1\" cannot be reached from host \"h0\"");
    assert_file_error("bad_syntax.toml", Some(8), "100Gbps");
    assert_file_error("bad_key.toml", Some(3), "router");
}

#[test]
fn hpcc_file_errors() {
    assert_file_error("bad_hpcc_header.txt", Some(1), "node_num switch_num link_num");
    assert_file_error("bad_hpcc_rate.txt", Some(4), "\"100Gpbs\"");
    assert_file_error("bad_hpcc_count.txt", Some(1), "link_num is 3 but the file has 2 link lines");
    assert_file_error("bad_hpcc_id.txt", Some(4), "\"3\" is not a node id below node_num 3");
    assert_file_error("bad_hpcc_loss.txt", Some(3), "error rate 0.01");
    assert_file_error("bad_hpcc_host_link.txt", Some(3), "joins two hosts");
    // Without switches the (blank) switch-id line is absent: the first link line is read as a link.
    assert_file_error("bad_hpcc_no_switch.txt", Some(3), "link \"n0\"-\"n1\" joins two hosts");
    // A three-line file claiming 2^24 nodes is refused before any node is built.
    assert_file_error("bad_hpcc_too_many_nodes.txt", Some(1), "node_num 16777216 cannot be joined by 1 links");
}

#[test]
fn topology_paths_must_be_regular_files() {
    for path in ["/dev/zero", "/proc"] {
        let message = file_error(path);
        assert!(message.contains("not a regular file"), "{message}");
    }
}

#[test]
fn errors_display_their_field() {
    let err = TopologySpec::fat_tree(3, G100).validate().unwrap_err();
    assert_eq!(err.to_string(), "topology k: must be even and at least 2 (got 3)");
    let boxed: Box<dyn std::error::Error> = Box::new(err);
    assert!(boxed.to_string().starts_with("topology k:"));
}
