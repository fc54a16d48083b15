//! Every kind of bad input gives an error naming the file, the 1-based line (or the `--set` argument),
//! the dotted key and what is wrong.

use std::path::{Path, PathBuf};

use sluice_scenario::{load, load_str, resolve, Location, ScenarioError};

/// A valid scenario: a 4-host star with one incast (lines 1-9).
const BASE: &str = "\
[topology]
kind = \"star\"
hosts = 4
rate = \"100Gbps\"

[[workload]]
kind = \"incast\"
receiver = 0
size = \"10KB\"
";

/// Loads and resolves `text` as `bad.toml`, returning the error text.
fn error(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let result = load_str(text, "bad.toml", Path::new("/nonexistent-dir"), &sets).and_then(|s| resolve(&s).map(|_| ()));
    match result {
        Ok(()) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// `BASE` followed by `extra` (whose first line is line 10).
fn with(extra: &str) -> String {
    format!("{BASE}{extra}")
}

#[test]
fn the_base_scenario_is_valid() {
    let scenario = load_str(BASE, "ok.toml", Path::new("."), &[]).unwrap();
    assert_eq!(scenario.name, "ok");
    assert_eq!(resolve(&scenario).unwrap().flows.len(), 3);
}

#[test]
fn syntax_errors_give_line_and_column() {
    assert_eq!(
        error("[topology\nkind = 1\n", &[]),
        "bad.toml:1: TOML syntax error at column 10: invalid table header; expected `.`, `]`"
    );
    assert_eq!(
        error(&with("[cc]\nalgorithm = \n"), &[]),
        "bad.toml:11: TOML syntax error at column 13: invalid string; expected `\"`, `'`"
    );
}

#[test]
fn unknown_keys_list_the_allowed_ones() {
    assert_eq!(
        error(&format!("topo = 1\n{BASE}"), &[]),
        "bad.toml:1: topo: unknown field `topo`, expected one of `name`, `seed`, `base_dir`, `simulation`, \
         `topology`, `link`, `switch`, `host`, `workload`, `cc`, `plane`, `output`, `fault`"
    );
    assert_eq!(
        error(&BASE.replace("hosts = 4", "hosts = 4\nhostz = 3"), &[]),
        "bad.toml:4: topology.hostz: unknown field `hostz`, expected one of `hosts`, `rate`, `delay`"
    );
    let err = error(&with("[switch.pfc]\nenable = false\n"), &[]);
    assert!(
        err.starts_with("bad.toml:11: switch.pfc.enable: unknown field `enable`, expected one of `enabled`"),
        "{err}"
    );
    let err = error(&with("[[workload]]\nkind = \"incast\"\nreceiver = 1\nsize = \"1KB\"\nfoo = 1\n"), &[]);
    assert!(err.starts_with("bad.toml:14: workload.1.foo: unknown field `foo`, expected one of `receiver`"), "{err}");
}

#[test]
fn wrong_types_name_the_key() {
    assert_eq!(
        error(&BASE.replace("hosts = 4", "hosts = \"four\""), &[]),
        "bad.toml:3: topology.hosts: invalid type: string \"four\", expected u32"
    );
    assert_eq!(
        error(&with("[switch.ecn]\nenabled = \"yes\"\n"), &[]),
        "bad.toml:11: switch.ecn.enabled: invalid type: string \"yes\", expected a boolean"
    );
    assert_eq!(
        error(&with("[simulation]\nduration = 5\n"), &[]),
        "bad.toml:11: simulation.duration: invalid value 5: expected a duration such as \"1us\" (a number needs a unit)"
    );
    assert_eq!(
        error(&with("[simulation]\nhuge_pages = \"yes\"\n"), &[]),
        "bad.toml:11: simulation.huge_pages: unknown variant `yes`, expected one of `auto`, `on`, `off`"
    );
}

#[test]
fn misspelled_units_show_the_accepted_form() {
    assert_eq!(
        error(&BASE.replace("100Gbps", "100Gpbs"), &[]),
        "bad.toml:4: topology.rate: invalid value \"100Gpbs\": expected a rate such as \"100Gbps\", \"25Gbps\", \
         \"400Mbps\", \"1.6Tbps\" or \"10Kbps\""
    );
    let err = error(&BASE.replace("\"10KB\"", "\"10KQ\""), &[]);
    assert!(
        err.starts_with("bad.toml:9: workload.0.size: invalid value \"10KQ\": expected a size such as \"1000B\""),
        "{err}"
    );
}

#[test]
fn impossible_topologies_point_at_the_key() {
    let fat_tree = "[topology]\nkind = \"fat_tree\"\nk = 7\nhost_rate = \"100Gbps\"\n\n\
                    [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";
    assert_eq!(error(fat_tree, &[]), "bad.toml:3: topology.k: must be even and at least 2 (got 7)");
    assert_eq!(
        error(&BASE.replace("100Gbps", "0Gbps"), &[]),
        "bad.toml:4: topology.rate: must be a positive rate such as \"100Gbps\" (got 0)"
    );
    assert_eq!(
        error("[topology]\nkind = \"ring\"\n[[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n", &[]),
        "bad.toml:2: topology.kind: unknown variant `ring`, expected one of `fat_tree`, `leaf_spine`, `star`, \
         `dumbbell`, `file`"
    );
    assert_eq!(
        error("[topology]\nhosts = 4\n[[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n", &[]),
        "bad.toml:1: topology: missing field `kind`"
    );
}

fn poisson(load: &str, cdf: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100Gbps\"\n\n[[workload]]\nkind = \"poisson\"\n\
         cdf = \"{cdf}\"\nload = {load}\nduration = \"1ms\"\n"
    )
}

#[test]
fn loads_outside_zero_to_one_are_rejected() {
    let expected = |got: &str| {
        format!(
            "bad.toml:9: workload.0.load: load must be above 0 and at most 1 (a fraction of the host rate), got {got}"
        )
    };
    assert_eq!(error(&poisson("1.5", "websearch"), &[]), expected("1.5"));
    assert_eq!(error(&poisson("0", "websearch"), &[]), expected("0"));
    assert_eq!(error(&poisson("-0.1", "websearch"), &[]), expected("-0.1"));
}

#[test]
fn missing_cdf_files_and_unknown_builtins_are_named() {
    assert_eq!(
        error(&poisson("0.3", "cdfs/nope.cdf"), &[]),
        "bad.toml:8: workload.0.cdf: CDF file /nonexistent-dir/cdfs/nope.cdf not found"
    );
    let err = error(&poisson("0.3", "websurch"), &[]);
    assert!(
        err.starts_with("bad.toml:8: workload.0.cdf: unknown builtin CDF `websurch`; the builtins are websearch"),
        "{err}"
    );
}

#[test]
fn errors_in_later_workloads_name_their_index() {
    let second = "[[workload]]\nkind = \"incast\"\nreceiver = 9\nsize = \"10KB\"\n";
    assert_eq!(
        error(&with(second), &[]),
        "bad.toml:12: workload.1.receiver: host 9 does not exist: the topology has hosts 0 to 3"
    );
    assert_eq!(
        error(&with("[[workload]]\nkind = \"incast\"\nreceiver = 1\n"), &[]),
        "bad.toml:10: workload.1: missing field `size`"
    );
    let err = error(&with("[[workload]]\nkind = \"incastt\"\n"), &[]);
    assert!(
        err.starts_with("bad.toml:11: workload.1.kind: unknown variant `incastt`, expected one of `poisson`"),
        "{err}"
    );
}

#[test]
fn unknown_algorithms_list_the_registered_ones() {
    assert_eq!(
        error(&with("[cc]\nalgorithm = \"hpcx\"\n"), &[]),
        "bad.toml:11: cc.algorithm: unknown algorithm \"hpcx\" (registered: none, reno, cubic, vegas, dctcp, dctcp_burst, \
         dcqcn, timely, hpcc, swift, bbr, bolt, expresspass, ep_aeolus, homa, ndp, tocc, tocc_nounsched, opt, aimd, \
         ec_aware, hostcc, dctcp_host, rocc, doca_rtt)"
    );
}

#[test]
fn bad_algorithm_parameters_name_cc_params_key() {
    assert_eq!(
        error(&with("[cc]\nalgorithm = \"dcqcn\"\n[cc.params]\ng = 2.0\n"), &[]),
        "bad.toml:13: cc.params.g: must be in (0, 1] (algorithm dcqcn)"
    );
    let err = error(&with("[cc.params]\nvariant = \"hpcc\"\ngee = 0.1\n"), &[]);
    assert!(err.starts_with("bad.toml:12: cc.params.gee: unknown parameter (known: variant, g,"), "{err}");
    let err = error(&with("[cc.params]\nrate_ai = \"20Mpbs\"\n"), &[]);
    assert!(err.starts_with("bad.toml:11: cc.params.rate_ai: invalid value \"20Mpbs\": expected a rate"), "{err}");
}

#[test]
fn ecn_thresholds_name_a_registered_algorithm_once_per_rate() {
    let entry = |algorithm: &str| {
        format!(
            "[[switch.ecn.thresholds]]\n{algorithm}rate = \"25Gbps\"\nkmin = \"5KB\"\nkmax = \"20KB\"\npmax = 0.1\n"
        )
    };
    let err = error(&with(&entry("algorithm = \"dctpc\"\n")), &[]);
    assert!(err.starts_with("bad.toml:11: switch.ecn.thresholds.0.algorithm: unknown algorithm \"dctpc\""), "{err}");
    let twice = format!("{}{}", entry("algorithm = \"dctcp\"\n"), entry("algorithm = \"dctcp\"\n"));
    assert!(error(&with(&twice), &[]).contains("25Gbps is listed twice for dctcp"), "{}", error(&with(&twice), &[]));
    let apart = format!("{}{}", entry("algorithm = \"dctcp\"\n"), entry(""));
    let scenario = load_str(&with(&apart), "ok.toml", Path::new("."), &[]).unwrap();
    assert!(resolve(&scenario).is_ok(), "one entry per rate for DCTCP and one for every other algorithm");
}

#[test]
fn algorithm_tables_are_checked_even_when_unused() {
    let err = error(&with("[cc.hpcc]\neta = 0.95\n[cc.dctcp]\ngain = 0.1\n"), &[]);
    assert!(err.starts_with("bad.toml:13: cc.dctcp.gain: unknown parameter (known: "), "{err}");
    assert!(err.ends_with("(algorithm dctcp)"), "{err}");
    let err = error(&with("[cc.dcqcn]\ng = 2.0\n"), &[]);
    assert_eq!(err, "bad.toml:11: cc.dcqcn.g: must be in (0, 1] (algorithm dcqcn)");
    let err = error(&with("[cc.dcqnc]\ng = 0.5\n"), &[]);
    assert!(err.starts_with("bad.toml:10: cc.dcqnc: unknown key: [cc] holds `algorithm`, `params` and"), "{err}");
    let err = error(&with("[cc]\nalgoritm = \"reno\"\n"), &[]);
    assert!(err.starts_with("bad.toml:11: cc.algoritm: unknown key"), "{err}");
    let err = error(&with("[cc]\nreno = 1\n"), &[]);
    assert_eq!(err, "bad.toml:11: cc.reno: must be a table of reno's parameters, such as [cc.reno]; found 1");
    let err = error(&with(""), &["cc.algorithm=homa", "cc.params.volume_contrl=false"]);
    assert!(
        err.starts_with("--set cc.params.volume_contrl=false: cc.params.volume_contrl: unknown parameter"),
        "{err}"
    );
}

#[test]
fn port_references_are_checked_against_the_topology() {
    let err = error(&with("[output]\nthroughput_ports = [\"sw0:1\", \"tor9:0\"]\n"), &[]);
    assert!(err.starts_with("bad.toml:11: output.throughput_ports.1: no node named \"tor9\" in the topology"), "{err}");
    assert_eq!(
        error(&with("[output]\nthroughput_ports = [\"sw0:9\"]\n"), &[]),
        "bad.toml:11: output.throughput_ports.0: node \"sw0\" has 4 ports, 0 to 3; there is no port 9"
    );
    assert_eq!(
        error(&with("[output]\nthroughput_ports = [\"sw0\"]\n"), &[]),
        "bad.toml:11: output.throughput_ports.0: invalid port \"sw0\": expected a port such as \"tor0:p1\" \
         (\"<node name>:p<port number>\", as output files name ports)"
    );
    assert!(error(&with("[output]\nthroughput_ports = [\"sw0:px\"]\n"), &[]).contains("invalid port \"sw0:px\""));
}

#[test]
fn output_lists_are_checked() {
    assert_eq!(
        error(&with("[output]\nbuckets = [\"10KB\", \"1KB\"]\n"), &[]),
        "bad.toml:11: output.buckets.1: bucket edges must be strictly increasing: 1KB follows 10KB"
    );
    assert_eq!(
        error(&with("[output]\nbuckets = [\"10KB\", \"10KB\"]\n"), &[]),
        "bad.toml:11: output.buckets.1: bucket edges must be strictly increasing: 10KB follows 10KB"
    );
    assert_eq!(
        error(&with("[output]\ntrace_flows = [0, 7]\n"), &[]),
        "bad.toml:11: output.trace_flows.1: flow 7 does not exist: the workloads generate 3 flows, ids 0 to 2"
    );
}

#[test]
fn a_scenario_needs_a_workload_and_a_topology() {
    assert_eq!(
        error("[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100Gbps\"\n", &[]),
        "bad.toml: workload: no [[workload]] table: a scenario needs at least one, e.g. [[workload]] \
         kind = \"poisson\", load = 0.3, cdf = \"websearch\""
    );
    assert_eq!(
        error("[[workload]]\nkind = \"incast\"\nreceiver = 0\nsize = \"10KB\"\n", &[]),
        "bad.toml: missing [topology] table: every scenario describes its network, e.g. kind = \"fat_tree\", \
         k = 4, host_rate = \"100Gbps\""
    );
}

#[test]
fn switch_settings_are_checked() {
    assert_eq!(
        error(&with("[switch]\nqueues = 9\n"), &[]),
        "bad.toml:11: switch.queues: must be between 1 and 8 (got 9)"
    );
    let thresholds = "[[switch.ecn.thresholds]]\nrate = \"100Gbps\"\nkmin = \"4KB\"\nkmax = \"1KB\"\npmax = 0.2\n";
    assert_eq!(
        error(&with(thresholds), &[]),
        "bad.toml:12: switch.ecn.thresholds.0.kmin: kmin (4KB) must not exceed kmax (1KB)"
    );
    assert_eq!(
        error(&with("[[switch.ecn.thresholds]]\nrate = \"100Gbps\"\nkmin = \"4KB\"\n"), &[]),
        "bad.toml:10: switch.ecn.thresholds.0: missing field `kmax`"
    );
}

#[test]
fn algorithms_needing_ecn_refuse_a_fabric_without_it() {
    assert_eq!(
        error(&with("[switch.ecn]\nenabled = false\n"), &[]),
        "bad.toml:11: switch.ecn.enabled: algorithm `dcqcn` needs ECN marks from switches echoed on ACKs and \
         congestion notification packets from receivers; the simulator with switch.ecn.enabled = false provides \
         neither; set switch.ecn.enabled = true or choose another algorithm"
    );
    let none = with("[switch.ecn]\nenabled = false\n[cc]\nalgorithm = \"none\"\n");
    let scenario = load_str(&none, "ok.toml", Path::new("."), &[]).unwrap();
    assert!(resolve(&scenario).unwrap().scenario.switch.ecn.thresholds.is_empty());
}

#[test]
fn overridden_values_blame_the_set_argument() {
    let fat_tree = "[topology]\nkind = \"fat_tree\"\nk = 4\nhost_rate = \"100Gbps\"\n\n\
                    [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";
    assert_eq!(
        error(fat_tree, &["topology.k=7"]),
        "--set topology.k=7: topology.k: must be even and at least 2 (got 7)"
    );
    assert!(error(BASE, &["topology.rate=100Gpbs"])
        .starts_with("--set topology.rate=100Gpbs: topology.rate: invalid value \"100Gpbs\""));
    assert_eq!(
        error(BASE, &["cc.params.g=2"]),
        "--set cc.params.g=2: cc.params.g: must be in (0, 1] (algorithm dcqcn)"
    );
    assert_eq!(
        error(BASE, &["switch.queues=9"]),
        "--set switch.queues=9: switch.queues: must be between 1 and 8 (got 9)"
    );
    assert_eq!(error(BASE, &["name=3"]), "--set name=3: name: invalid type: integer `3`, expected a string");
    assert!(
        error(BASE, &["topology.bogus=1"]).starts_with("--set topology.bogus=1: topology.bogus: unknown field `bogus`")
    );
}

#[test]
fn file_lines_stay_right_when_overrides_change_the_document() {
    let fat_tree = "[topology]\nkind = \"fat_tree\"\nk = 5\nhost_rate = \"100Gbps\"\n\n\
                    [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";
    let sets = ["name=renamed", "seed=7", "switch.pfc.enabled=false", "workload.0.size=2KB"];
    assert_eq!(error(fat_tree, &sets), "bad.toml:3: topology.k: must be even and at least 2 (got 5)");
}

#[test]
fn malformed_set_arguments_are_named() {
    assert_eq!(
        error(BASE, &["topology"]),
        "--set topology: expected KEY=VALUE, such as topology.k=4 or cc.params.g=0.01"
    );
    assert_eq!(error(BASE, &["=4"]), "--set =4: the key before `=` is empty; expected KEY=VALUE, such as topology.k=4");
    assert_eq!(
        error(BASE, &["workload.1.size=3"]),
        "--set workload.1.size=3: workload.1.size: index 1 is out of range: `workload` has 1 entries"
    );
    assert_eq!(
        error(BASE, &["topology.kind.x=3"]),
        "--set topology.kind.x=3: topology.kind.x: `topology.kind` is a string, not a table or array"
    );
}

/// A fresh directory for files of one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-scenario-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn errors_from_files_name_the_file() {
    let dir = temp_dir("files");
    let path = dir.join("x.toml");
    std::fs::write(&path, BASE.replace("hosts = 4", "hosts = 0")).unwrap();
    let err = load(&path, &[], None).and_then(|s| resolve(&s)).unwrap_err();
    assert_eq!(err.location, Location::Line { file: path.clone(), line: 3 });
    assert_eq!(err.to_string(), format!("{}:3: topology.hosts: must be at least 1 (got 0)", path.display()));
    let missing = dir.join("missing.toml");
    let err: ScenarioError = load(&missing, &[], None).unwrap_err();
    assert!(err.to_string().starts_with(&format!("{}: cannot read the scenario file: ", missing.display())), "{err}");
    std::fs::write(&path, BASE).unwrap();
    let err = load(&path, &[], Some(u64::MAX)).unwrap_err();
    assert!(
        err.to_string().starts_with("--seed 18446744073709551615: seed 18446744073709551615 is too large"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_flow_list_files_are_named() {
    let text = "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100Gbps\"\n[[workload]]\nkind = \"flow_list\"\n\
                path = \"flows/none.csv\"\n";
    let err = error(text, &[]);
    assert!(err.starts_with("bad.toml:7: workload.0.path: "), "{err}");
    assert!(err.contains("/nonexistent-dir/flows/none.csv"), "{err}");
}

#[test]
fn absurd_link_and_host_values_are_refused() {
    assert_eq!(
        error(&with("[host]\nrto_min = \"0us\"\n"), &[]),
        "bad.toml:11: host.rto_min: 0ps is shorter than the shortest round trip of the topology (4093440ps): every \
         packet would time out before its ACK could return"
    );
    assert!(error(BASE, &["host.rto_min=4us"]).starts_with("--set host.rto_min=4us: host.rto_min: 4us is shorter"));
    assert_eq!(
        error(&with("[link]\nmtu = 1000000000\n"), &[]),
        "bad.toml:11: link.mtu: 1000000000 B is larger than the largest frame, a 9216 B jumbo frame"
    );
    let err = error(BASE, &["link.header_bytes=4294967295"]);
    assert!(err.starts_with("--set link.header_bytes=4294967295: link.header_bytes: 4294967295 B"), "{err}");
}

#[test]
fn buffers_must_hold_what_switches_reserve() {
    // 4 ports x (3 x 100 Gb/s x 1 us = 37.5 KB, plus two 1082 B packets) + 4 x 4 KB reserve + 1082 B
    // = 175,738 B.
    assert_eq!(
        error(&with("[switch]\nbuffer = \"1B\"\n"), &[]),
        "bad.toml:11: switch.buffer: 1B is too small: switch \"sw0\" reserves PFC headroom and 4KB per port on its \
         4 ports and needs room for one 1082 B packet besides, at least 175738B"
    );
    assert!(load_str(&with("[switch]\nbuffer = \"175738B\"\n"), "ok.toml", Path::new("."), &[])
        .and_then(|s| resolve(&s))
        .is_ok());
    assert_eq!(
        error(&with("[switch]\nbuffer = \"8KB\"\n[switch.pfc]\nenabled = false\n"), &[]),
        "bad.toml:11: switch.buffer: 8KB is too small: without PFC a switch needs room for one 1082 B packet in \
         each of its 8 queues, at least 8656B"
    );
}

#[test]
fn scheduler_tables_refuse_unknown_keys() {
    let err = error(&with("[switch.scheduler]\nkind = \"strict\"\nweights = [1, 2]\n"), &[]);
    assert!(err.starts_with("bad.toml:1"), "{err}");
    assert!(err.contains("switch.scheduler"), "{err}");
    assert!(err.ends_with("unknown field `weights`, expected `kind`"), "{err}");
    let err =
        error(&with("[switch.scheduler]\nkind = \"dwrr\"\nweights = [1, 1, 1, 1, 1, 1, 1, 1]\nquantum = 2\n"), &[]);
    assert!(err.ends_with("unknown field `quantum`, expected `kind` or `weights`"), "{err}");
    let ok = with("[switch.scheduler]\nkind = \"dwrr\"\nweights = [1, 1, 1, 1, 1, 1, 1, 2]\n");
    let scenario = load_str(&ok, "ok.toml", Path::new("."), &[]).unwrap();
    assert_eq!(
        scenario.switch.scheduler,
        sluice_sim::config::Scheduler::Dwrr { weights: vec![1, 1, 1, 1, 1, 1, 1, 2] }
    );
}

#[test]
fn huge_fat_trees_blame_k() {
    let text = "[topology]\nkind = \"fat_tree\"\nk = 1000000\nhost_rate = \"100Gbps\"\n\
                [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";
    let err = error(text, &[]);
    assert!(err.starts_with("bad.toml:3: topology.k: k = 1000000: "), "{err}");
}

#[test]
fn sampling_beyond_the_cap_gives_the_count() {
    let text = with("[output]\nthroughput_ports = [\"sw0:0\", \"sw0:1\"]\nsample_interval = \"1ps\"\n");
    assert_eq!(
        error(&text, &[]),
        "bad.toml:12: output.sample_interval: 2 sampled series every 1ps for simulation.time_limit = 1s would \
         record 2000000000000 samples, more than the limit of 10000000; sample less often, name fewer flows and \
         ports, or shorten the run"
    );
    let shorter = error(&text, &["simulation.duration=1ms", "output.sample_interval=100ps"]);
    assert!(shorter.contains("for simulation.duration = 1ms would record 20000000 samples"), "{shorter}");
    assert!(load_str(&text, "ok.toml", Path::new("."), &["output.sample_interval=1us".to_string()]).is_ok());
}

#[test]
fn workloads_past_the_engine_limits_are_refused() {
    let err = error(&with("repeats = 1000000000\nperiod = \"1us\"\n"), &[]);
    assert_eq!(
        err,
        "bad.toml:10: workload.0.repeats: this entry would generate 3000000000 flows, more than the limit of \
         16777216 flows per scenario"
    );
    let poisson = "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.3\nduration = \"2000s\"\n";
    let err = error(&with(poisson), &[]);
    assert!(err.starts_with("bad.toml:14: workload.1.duration: this entry would generate "), "{err}");
    assert!(
        err.ends_with("flows (after 3 flows of earlier entries), more than the limit of 16777216 flows per scenario"),
        "{err}"
    );
    let err = error(BASE, &["simulation.time_limit=2000000s"]);
    assert!(err.ends_with("simulation.time_limit: 2000000s is beyond 2^60 ps (about 13.3 days)"), "{err}");
    let err = error(BASE, &["plane.latency=2000000s"]);
    assert!(err.ends_with("plane.latency: 2000000s is beyond 2^60 ps (about 13.3 days)"), "{err}");
    let err = error(&with("start = \"2000000s\"\n"), &[]);
    assert!(err.starts_with("bad.toml:10: workload.0.start: 2000000s is beyond the largest time"), "{err}");
}

#[test]
fn empty_flow_lists_are_refused() {
    let dir = temp_dir("empty-list");
    std::fs::write(dir.join("none.csv"), "src,dst,size_bytes,start_ns\n").unwrap();
    let text = BASE
        .replace("kind = \"incast\"\nreceiver = 0\nsize = \"10KB\"\n", "kind = \"flow_list\"\npath = \"none.csv\"\n");
    let err = load_str(&text, "bad.toml", &dir, &[]).and_then(|s| resolve(&s)).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.starts_with("bad.toml:8: workload.0.path: "), "{err}");
    assert!(err.ends_with("none.csv lists no flows"), "{err}");
}
