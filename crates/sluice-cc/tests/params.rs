//! Scenario parameters of DCTCP and DCQCN: defaults, overlays and rejected input.

mod common;

use common::{flow, G100};
use sluice_cc::dcqcn::{self, DcqcnConfig, DcqcnVariant};
use sluice_cc::dctcp::DctcpConfig;
use sluice_cc::{lookup, Control, Needs};
use sluice_core::{Rate, PS_PER_US};

const GBPS: Rate = 1_000_000_000;
const MBPS: Rate = 1_000_000;

fn params(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

fn build_err(name: &str, text: &str) -> sluice_cc::ParamError {
    match (lookup(name).unwrap().build)(&params(text), G100) {
        Ok(_) => panic!("{name}: `{text}` was accepted"),
        Err(e) => e,
    }
}

#[test]
fn registry_entries_declare_what_they_need() {
    let dctcp = lookup("dctcp").unwrap();
    assert_eq!(dctcp.control, Control::Window);
    assert_eq!(dctcp.needs, Needs { ecn: true, ..Needs::NOTHING });
    let dcqcn = lookup("dcqcn").unwrap();
    assert_eq!(dcqcn.control, Control::Rate);
    assert_eq!(dcqcn.needs, Needs { ecn: true, cnp: true, ..Needs::NOTHING });
}

#[test]
fn unknown_parameters_are_named_with_the_known_ones() {
    let e = build_err("dctcp", "gain = 0.1");
    assert_eq!(e.key.as_deref(), Some("gain"));
    assert!(e.message.contains("init_ssthresh_packets"), "optional fields are listed too: {e}");
    assert!(e.message.contains("clamp_alpha_on_loss"), "{e}");
    let e = build_err("dcqcn", "rate_increase = \"5Mbps\"");
    assert_eq!(e.key.as_deref(), Some("rate_increase"));
    assert!(e.message.contains("rate_ai"), "{e}");
    assert!(e.to_string().starts_with("parameter `rate_increase`"), "{e}");
}

#[test]
fn wrong_types_and_values_are_named() {
    for (name, text, key) in [
        ("dctcp", "g = \"1/16\"", "g"),
        ("dctcp", "init_cwnd_packets = -1", "init_cwnd_packets"),
        ("dctcp", "init_ssthresh_packets = \"64\"", "init_ssthresh_packets"),
        ("dctcp", "clamp_alpha_on_loss = 1", "clamp_alpha_on_loss"),
        ("dctcp", "g = 0.0", "g"),
        ("dctcp", "init_alpha = 1.5", "init_alpha"),
        ("dctcp", "init_cwnd_packets = 0", "init_cwnd_packets"),
        ("dcqcn", "fast_recovery_stages = \"one\"", "fast_recovery_stages"),
        ("dcqcn", "rate_ai = 20", "rate_ai"),
        ("dcqcn", "rate_ai = \"20Mbs\"", "rate_ai"),
        ("dcqcn", "alpha_interval = \"0us\"", "alpha_interval"),
        ("dcqcn", "variant = \"mellanox\"", "variant"),
        ("dcqcn", "variant = 1", "variant"),
        ("dcqcn", "byte_counter = \"1MB\"", "byte_counter"),
        ("dcqcn", "variant = \"paper\"\nrate_decrease_interval = \"4us\"", "rate_decrease_interval"),
        ("dcqcn", "variant = \"paper\"\nbyte_counter = 0", "byte_counter"),
    ] {
        let e = build_err(name, text);
        assert_eq!(e.key.as_deref(), Some(key), "{name}: `{text}`: {e}");
    }
    let e = build_err("dcqcn", "variant = \"mellanox\"");
    assert!(e.message.contains("paper") && e.message.contains("hpcc"), "{e}");
}

#[test]
fn dctcp_defaults_and_overlay() {
    assert_eq!(DctcpConfig::resolve(&toml::Table::new()).unwrap(), DctcpConfig::default());
    let c = DctcpConfig::resolve(&params("init_cwnd_packets = 1\ninit_ssthresh_packets = 64\ng = 1")).unwrap();
    assert_eq!((c.init_cwnd_packets, c.init_ssthresh_packets, c.g), (1, Some(64), 1.0));
    assert_eq!((c.init_alpha, c.min_cwnd_packets, c.clamp_alpha_on_loss), (1.0, 2, false));
}

#[test]
fn hpcc_defaults_scale_with_the_line_rate() {
    for (line, ai, hai) in [(25, 5, 50), (100, 20, 200), (400, 80, 800)] {
        let c = DcqcnConfig::for_line_rate(DcqcnVariant::Hpcc, line * GBPS);
        assert_eq!((c.rate_ai, c.rate_hai), (ai * MBPS, hai * MBPS), "{line}G");
    }
    // The shared benchmark's settings at 100G.
    let c = DcqcnConfig::resolve(&toml::Table::new(), G100).unwrap();
    assert_eq!(c.variant, DcqcnVariant::Hpcc);
    assert_eq!(c.g, 1.0 / 256.0);
    assert_eq!(c.alpha_interval, PS_PER_US);
    assert_eq!(c.rate_decrease_interval, Some(4 * PS_PER_US));
    assert_eq!(c.increase_interval, 300 * PS_PER_US);
    assert_eq!(c.fast_recovery_stages, 1);
    assert_eq!(c.min_rate, GBPS);
    assert_eq!(c.byte_counter, None);
    assert!(!c.clamp_target_rate && !c.window_bdp);
}

#[test]
fn variant_is_read_first_and_the_rest_overlaid() {
    let c = DcqcnConfig::resolve(&params("variant = \"paper\"\nrate_ai = \"10Mbps\""), G100).unwrap();
    assert_eq!(c.variant, DcqcnVariant::Paper);
    assert_eq!(c.rate_ai, 10 * MBPS, "overlaid");
    // The other values are the paper's, not hpcc's.
    assert_eq!(c.increase_interval, 55 * PS_PER_US);
    assert_eq!(c.alpha_interval, 55 * PS_PER_US);
    assert_eq!(c.byte_counter, Some(10_000_000));
    assert_eq!(c.fast_recovery_stages, 5);
    assert_eq!((c.rate_hai, c.min_rate), (200 * MBPS, 100 * MBPS));
    assert_eq!(c.rate_decrease_interval, None);
    assert!(c.clamp_target_rate);
    let c = DcqcnConfig::resolve(&params("variant = \"paper\"\nbyte_counter = \"1MB\""), G100).unwrap();
    assert_eq!(c.byte_counter, Some(1_000_000));
}

#[test]
fn cnp_interval_is_readable_by_the_receiver() {
    assert_eq!(dcqcn::cnp_interval(&toml::Table::new(), G100), Ok(0), "hpcc: every marked packet");
    assert_eq!(dcqcn::cnp_interval(&params("variant = \"paper\""), G100), Ok(50 * PS_PER_US));
    assert_eq!(dcqcn::cnp_interval(&params("cnp_interval = \"4us\""), G100), Ok(4 * PS_PER_US));
    assert_eq!(dcqcn::cnp_interval(&params("bogus = 1"), G100).unwrap_err().key.as_deref(), Some("bogus"));
}

#[test]
fn resolved_parameters_build_the_same_config_again() {
    for (name, text) in [
        ("dctcp", ""),
        ("dctcp", "init_ssthresh_packets = 64"),
        ("dcqcn", ""),
        ("dcqcn", "variant = \"paper\"\ncnp_interval = \"40us\""),
    ] {
        let algorithm = lookup(name).unwrap();
        let factory = (algorithm.build)(&params(text), G100).unwrap();
        let resolved = factory.resolved();
        let again = (algorithm.build)(&resolved, G100).unwrap().resolved();
        assert_eq!(resolved, again, "{name}: `{text}`");
        let cc = factory.create(&flow(G100));
        assert_eq!(cc.name(), name);
    }
    let resolved = (lookup("dcqcn").unwrap().build)(&toml::Table::new(), G100).unwrap().resolved();
    assert_eq!(resolved["rate_ai"].as_str(), Some("20Mbps"));
    assert_eq!(resolved["variant"].as_str(), Some("hpcc"));
}

#[test]
fn configs_built_in_code_can_be_validated() {
    let hpcc = DcqcnConfig::for_line_rate(DcqcnVariant::Hpcc, G100);
    assert_eq!(hpcc.validate(), Ok(()));
    let missing = DcqcnConfig { rate_decrease_interval: None, ..hpcc.clone() };
    assert_eq!(missing.validate().unwrap_err().key.as_deref(), Some("rate_decrease_interval"));
    let paper = DcqcnConfig { byte_counter: None, ..DcqcnConfig::for_line_rate(DcqcnVariant::Paper, G100) };
    assert_eq!(paper.validate().unwrap_err().key.as_deref(), Some("byte_counter"));
    let dctcp = DctcpConfig { min_cwnd_packets: 0, ..DctcpConfig::default() };
    assert_eq!(dctcp.validate().unwrap_err().key.as_deref(), Some("min_cwnd_packets"));
}

/// Every algorithm, the token ones with their flattened transport settings included, rejects a key it does
/// not know and names it.
#[test]
fn every_algorithm_rejects_a_misspelled_parameter() {
    for algorithm in sluice_cc::registry() {
        let e = build_err(algorithm.name, "volume_contrl = false");
        assert_eq!(e.key.as_deref(), Some("volume_contrl"), "{}: {e}", algorithm.name);
        assert!(e.message.starts_with("unknown parameter (known: "), "{}: {e}", algorithm.name);
    }
    let homa = build_err("homa", "volume_contrl = false");
    assert!(homa.message.contains("volume_control"), "the transport's own keys are listed: {homa}");
}

/// The round trip that catches misspellings keeps every real key: each algorithm accepts its resolved
/// parameters back.
#[test]
fn every_algorithm_accepts_its_resolved_parameters() {
    for algorithm in sluice_cc::registry() {
        let resolved = (algorithm.build)(&toml::Table::new(), G100).unwrap().resolved();
        let again = (algorithm.build)(&resolved, G100).unwrap_or_else(|e| panic!("{}: {e}", algorithm.name));
        assert_eq!(again.resolved(), resolved, "{}", algorithm.name);
    }
}
