//! The capability contract on the simulator ([`sluice_cc::contract`]): the simulator provides every
//! capability, less what the scenario's own settings switch off. Resolving switches INT stamping and
//! Bolt's switch logic on for an algorithm that needs them, so no setting takes those away. A scenario can
//! switch off ECN marking, and with it go the CNPs that receivers send for marked packets; and hosts
//! sample congestion signals for their ACKs to carry only with the host interconnect model on.

use sluice_cc::contract::{self, Capabilities, Capability, CapabilitySet};
use sluice_cc::Algorithm;
use sluice_sim::config::SwitchConfig;

use crate::error::ScenarioError;
use crate::mix::Mix;
use crate::scenario::Scenario;

/// A setting that, when off, takes capabilities away from the simulator.
struct Setting {
    /// The scenario key, for the error's location.
    key: &'static str,
    /// Whether the scenario (with its switch settings as resolved) switched it off.
    off: fn(&Scenario, &SwitchConfig) -> bool,
    /// What the simulator lacks then.
    takes: CapabilitySet,
    /// The simulator so reduced, as messages name it.
    leaves: &'static str,
}

const SETTINGS: [Setting; 2] = [
    Setting {
        key: "switch.ecn.enabled",
        off: |_, switch| !switch.ecn.enabled,
        takes: CapabilitySet::of(&[Capability::Ecn, Capability::Cnp]),
        leaves: "the simulator with switch.ecn.enabled = false",
    },
    Setting {
        key: "host.bus.enabled",
        off: |s, _| !s.host.bus.enabled,
        takes: CapabilitySet::of(&[Capability::HostSignal]),
        leaves: "the simulator with host.bus.enabled = false (no host samples its signals)",
    },
];

/// Checks every algorithm of the run (the run's own and any others `cc.workloads` names) against the
/// simulator as `switch` leaves it; the error is located at the setting that took a capability away.
pub(crate) fn check(
    s: &Scenario,
    switch: &SwitchConfig,
    algorithm: &Algorithm,
    mix: Option<&Mix>,
) -> Result<(), ScenarioError> {
    let others = mix.map_or(&[][..], |m| &m.others[..]);
    let algorithms = std::iter::once(algorithm).chain(others.iter().map(|(a, _)| *a));
    for a in algorithms {
        contract::check(a, &Capabilities::SIMULATOR).map_err(|m| s.error_at("cc.algorithm", m.to_string()))?;
        for setting in SETTINGS.iter().filter(|setting| (setting.off)(s, switch)) {
            let reduced = Capabilities::SIMULATOR.without(setting.leaves, setting.takes);
            contract::check(a, &reduced).map_err(|missing| refusal(s, setting, &missing))?;
        }
    }
    Ok(())
}

fn refusal(s: &Scenario, setting: &Setting, missing: &contract::Missing) -> ScenarioError {
    let key = setting.key;
    s.error_at(key, format!("{missing}; set {key} = true or choose another algorithm"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const TWO_WORKLOADS: &str = "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"25Gbps\"\n\
        [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n\
        [[workload]]\nkind = \"permutation\"\nsize = \"1KB\"\n";

    fn resolve(sets: &[&str]) -> Result<crate::Resolved, String> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let s = crate::load_str(TWO_WORKLOADS, "t.toml", Path::new("."), &sets).map_err(|e| e.to_string())?;
        crate::resolve(&s).map_err(|e| e.to_string())
    }

    #[test]
    fn without_ecn_marks_a_mix_member_that_needs_them_is_refused_by_name() {
        let err = resolve(&["cc.algorithm=cubic", "cc.workloads=[\"cubic\", \"dctcp\"]", "switch.ecn.enabled=false"])
            .expect_err("dctcp needs ECN marks");
        assert!(err.contains("switch.ecn.enabled: algorithm `dctcp` needs ECN marks from switches"), "{err}");
        assert!(err.contains("the simulator with switch.ecn.enabled = false does not provide it"), "{err}");
    }

    #[test]
    fn without_ecn_marks_algorithms_that_do_not_need_them_run() {
        for algorithm in ["cubic", "hpcc", "bolt", "ndp", "none", "ec_aware"] {
            let set = format!("cc.algorithm={algorithm}");
            assert!(resolve(&[&set, "switch.ecn.enabled=false"]).is_ok(), "{algorithm}");
        }
        let mix = resolve(&["cc.algorithm=cubic", "cc.workloads=[\"cubic\", \"hpcc\"]", "switch.ecn.enabled=false"]);
        assert!(mix.is_ok_and(|r| r.scenario.switch.int), "hpcc's INT is switched on, not taken away");
    }

    #[test]
    fn host_signals_need_hosts_that_sample_them() {
        let err = resolve(&["cc.algorithm=dctcp_host"]).expect_err("no host samples its signals");
        assert!(err.contains("host.bus.enabled: algorithm `dctcp_host` needs the receiving host's"), "{err}");
        assert!(err.contains("set host.bus.enabled = true or choose another algorithm"), "{err}");
        assert!(resolve(&["cc.algorithm=dctcp_host", "host.bus.enabled=true"]).is_ok());
    }
}
