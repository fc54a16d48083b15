//! The algorithm registry: names, what each needs from the datapath, and how to build it from
//! scenario parameters.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_core::Rate;

use crate::api::{CongestionControl, FlowInfo, Needs};
use crate::hostctl::{HostControl, HostInfo};
use crate::receiver::ReceiverControl;

/// What an algorithm controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// A congestion window.
    Window,
    /// A pacing rate.
    Rate,
    /// Both a window and a pacing rate.
    WindowAndRate,
    /// Nothing: the flow sends at line rate.
    None,
}

/// A rejected algorithm parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter's name under `[cc.params]`, when the error is about one parameter.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "parameter `{key}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ParamError {}

/// Builds one controller per flow from resolved parameters.
pub trait Factory: Send + Sync {
    /// A controller for a new flow.
    fn create(&self, flow: &FlowInfo) -> Box<dyn CongestionControl>;
    /// Every parameter with the value in force (defaults filled in), for `scenario.resolved.toml`.
    fn resolved(&self) -> toml::Table;
    /// Receiver side: at most one congestion notification packet per flow per this interval (0 = flag
    /// every ACK of a marked packet); `None` when the algorithm uses no CNPs.
    fn cnp_interval(&self) -> Option<sluice_core::Time> {
        None
    }
    /// The receiver-side controller for a new flow, for algorithms that decide at the receiver too
    /// (token-based CC, endpoint acknowledgment policies); `None` (the default) leaves the receiver to the
    /// datapath's own behaviour.
    fn receiver(&self, _flow: &FlowInfo) -> Option<Box<dyn ReceiverControl>> {
        None
    }
    /// The token (receiver-driven) transport settings the datapath must run for this algorithm; `None`
    /// (the default) for sender-driven algorithms.
    fn token_transport(&self) -> Option<crate::token::TokenTransport> {
        None
    }
    /// The host-level policy of a host, for algorithms that act on whole hosts (host congestion: local
    /// traffic throttling, ECN marking on receive); `None` (the default) for per-flow algorithms.
    fn host_policy(&self, _host: &HostInfo) -> Option<Box<dyn HostControl>> {
        None
    }
    /// The switch side of the algorithm's per-hop signal ([`crate::signal`]), which every switch runs at
    /// each egress port; `None` (the default) for algorithms that need none.
    fn switch_signal(&self) -> Option<Arc<dyn crate::signal::SwitchSignal>> {
        None
    }
}

/// A registered algorithm.
pub struct Algorithm {
    /// The name scenarios use (`cc.algorithm = "dcqcn"`).
    pub name: &'static str,
    /// One line for `sluice list`.
    pub summary: &'static str,
    /// What it controls.
    pub control: Control,
    /// What the datapath must provide besides `control`; [`crate::contract::check`] holds it against a
    /// datapath's [`crate::contract::Capabilities`].
    pub needs: Needs,
    /// Builds a factory from `[cc.params]` for hosts whose NIC runs at `line_rate` (defaults scale with it).
    pub build: BuildFn,
}

/// How an [`Algorithm`] builds its factory: `(params, line_rate)`, see [`Algorithm::build`].
pub type BuildFn = fn(params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError>;

impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Algorithm").field("name", &self.name).finish()
    }
}

/// Every algorithm sluice ships.
pub fn registry() -> &'static [Algorithm] {
    &REGISTRY
}

/// The algorithm registered under `name`.
pub fn lookup(name: &str) -> Option<&'static Algorithm> {
    REGISTRY.iter().find(|a| a.name == name)
}

static REGISTRY: [Algorithm; 25] = [
    crate::none::ALGORITHM,
    crate::reno::ALGORITHM,
    crate::cubic::ALGORITHM,
    crate::vegas::ALGORITHM,
    crate::dctcp::ALGORITHM,
    crate::dctcp_burst::ALGORITHM,
    crate::dcqcn::ALGORITHM,
    crate::timely::ALGORITHM,
    crate::hpcc::ALGORITHM,
    crate::swift::ALGORITHM,
    crate::bbr::ALGORITHM,
    crate::bolt::ALGORITHM,
    crate::expresspass::ALGORITHM,
    crate::expresspass::ALGORITHM_AEOLUS,
    crate::homa::ALGORITHM,
    crate::ndp::ALGORITHM,
    crate::tocc::ALGORITHM,
    crate::tocc::ALGORITHM_NO_UNSCHEDULED,
    crate::opt::ALGORITHM,
    crate::aimd::ALGORITHM,
    crate::ecaware::ALGORITHM,
    crate::hostcc::ALGORITHM,
    crate::dctcp_host::ALGORITHM,
    crate::rocc::ALGORITHM,
    crate::doca_rtt::ALGORITHM,
];

/// A parameter value given as text on a command line (`KEY=VALUE`): read as TOML (`20`, `0.5`,
/// `true`, `[1, 2]`), else taken as a string (`200Mbps`, `50us`), which the config's own parsing of
/// units then reads.
pub fn param_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// Overlays user parameters on a default config: every key of `params` must be a field of `C`.
pub fn merge_params<C: Serialize + DeserializeOwned>(defaults: &C, params: &toml::Table) -> Result<C, ParamError> {
    let mut table = toml::Table::try_from(defaults)
        .map_err(|e| ParamError { key: None, message: format!("cannot represent defaults: {e}") })?;
    for (key, value) in params {
        if !table.contains_key(key) && !is_optional_field::<C>(key, defaults) {
            let known = known_fields::<C>().unwrap_or_else(|| table.keys().cloned().collect());
            return Err(ParamError {
                key: Some(key.clone()),
                message: format!("unknown parameter (known: {})", known.join(", ")),
            });
        }
        table.insert(key.clone(), value.clone());
    }
    let config = toml::Value::Table(table).try_into::<C>().map_err(|e| ParamError {
        key: first_key_in(&e.to_string(), params).or_else(|| failing_key(defaults, params)),
        message: e.message().to_string(),
    })?;
    reject_ignored_keys(&config, defaults, params)?;
    Ok(config)
}

/// The parameter that fails on its own over the defaults, for messages that name no field (those of a
/// flattened part, such as the token transport's settings).
fn failing_key<C: Serialize + DeserializeOwned>(defaults: &C, params: &toml::Table) -> Option<String> {
    let base = toml::Table::try_from(defaults).ok()?;
    let fails = |key: &String, value: &toml::Value| {
        let mut table = base.clone();
        table.insert(key.clone(), value.clone());
        toml::Value::Table(table).try_into::<C>().is_err()
    };
    params.iter().find(|(k, v)| fails(k, v)).map(|(k, _)| k.clone())
}

/// A parameter that the config does not hold after deserializing was ignored: a config with a flattened
/// part accepts any key (serde's `flatten` defeats `deny_unknown_fields`), so the round trip is the check
/// that also catches a misspelled key there.
fn reject_ignored_keys<C: Serialize>(config: &C, defaults: &C, params: &toml::Table) -> Result<(), ParamError> {
    let Ok(back) = toml::Table::try_from(config) else { return Ok(()) };
    let Some(key) = params.keys().find(|k| !back.contains_key(*k)) else { return Ok(()) };
    let known = toml::Table::try_from(defaults).map(|t| t.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    Err(ParamError { key: Some(key.clone()), message: format!("unknown parameter (known: {})", known.join(", ")) })
}

/// Whether `key` is an `Option` field left out of the serialized defaults (serialized as absent).
fn is_optional_field<C: Serialize + DeserializeOwned>(key: &str, _defaults: &C) -> bool {
    let mut probe = toml::Table::new();
    probe.insert(key.to_string(), toml::Value::Boolean(false));
    // An unknown field fails with "unknown field"; a known optional one fails on its type instead.
    match toml::Value::Table(probe).try_into::<C>() {
        Ok(_) => true,
        Err(e) => !e.to_string().contains("unknown field"),
    }
}

/// Every field name of `C`, including `Option` fields left out of the serialized defaults, read
/// from serde's "unknown field `x`, expected one of `a`, `b`" message; `None` if it reads otherwise.
fn known_fields<C: DeserializeOwned>() -> Option<Vec<String>> {
    let mut probe = toml::Table::new();
    probe.insert("\u{0}".to_string(), toml::Value::Boolean(false));
    let message = toml::Value::Table(probe).try_into::<C>().err()?.to_string();
    let (_, list) = message.split_once("expected one of ")?;
    let names: Vec<String> = list.split('`').skip(1).step_by(2).map(str::to_string).collect();
    (!names.is_empty()).then_some(names)
}

/// Picks the parameter a serde message talks about, if it names one of the user's keys.
fn first_key_in(message: &str, params: &toml::Table) -> Option<String> {
    params.keys().find(|k| message.contains(&format!("`{k}`"))).cloned()
}

/// A [`Factory`] for an algorithm whose controller is built from a config struct and the flow.
pub struct ConfigFactory<C> {
    /// The resolved config.
    pub config: C,
    /// Builds a controller.
    pub make: fn(&C, &FlowInfo) -> Box<dyn CongestionControl>,
    /// The receiver's CNP interval for this config, for algorithms that use CNPs.
    pub cnp_interval: Option<fn(&C) -> sluice_core::Time>,
}

impl<C: Serialize + Send + Sync> Factory for ConfigFactory<C> {
    fn create(&self, flow: &FlowInfo) -> Box<dyn CongestionControl> {
        (self.make)(&self.config, flow)
    }

    fn resolved(&self) -> toml::Table {
        toml::Table::try_from(&self.config).unwrap_or_default()
    }

    fn cnp_interval(&self) -> Option<sluice_core::Time> {
        self.cnp_interval.map(|f| f(&self.config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Events;

    const LINE_RATE: Rate = 100_000_000_000;

    fn host() -> HostInfo {
        HostInfo {
            line_rate: LINE_RATE,
            interconnect_rate: 128_000_000_000,
            max_throttle_level: 3,
            sample_interval: 1_000_000,
        }
    }

    /// What each algorithm's factory builds with default parameters, against what its entry declares:
    /// a datapath trusts the declaration to decide whether it can run the algorithm, so a factory that
    /// built a receiver, token transport or host policy its entry does not declare would lose it silently.
    #[test]
    fn a_bad_value_of_a_flattened_setting_names_its_key() {
        let homa = lookup("homa").unwrap();
        let params: toml::Table = toml::from_str("overcommit = \"lots\"\nsrpt = true").unwrap();
        let err = (homa.build)(&params, 100_000_000_000).err().expect("refused");
        assert_eq!(err.key.as_deref(), Some("overcommit"), "{err}");
        assert!(err.to_string().starts_with("parameter `overcommit`: "), "{err}");
    }

    #[test]
    fn command_line_values_are_toml_or_text() {
        assert_eq!(param_value("20"), toml::Value::Integer(20));
        assert_eq!(param_value("0.5"), toml::Value::Float(0.5));
        assert_eq!(param_value("true"), toml::Value::Boolean(true));
        assert_eq!(param_value("200Mbps"), toml::Value::String("200Mbps".into()));
    }

    #[test]
    fn declared_needs_match_what_the_factory_builds() {
        let flow = crate::test_flows::fabric_flow();
        for a in registry() {
            let factory = (a.build)(&toml::Table::new(), LINE_RATE).unwrap_or_else(|e| panic!("{}: {e}", a.name));
            let built = (
                factory.token_transport().is_some(),
                factory.receiver(&flow).is_some(),
                factory.host_policy(&host()).is_some(),
                factory.switch_signal().is_some(),
            );
            let declared = (a.needs.token_transport, a.needs.receiver, a.needs.host_policy, a.needs.signal);
            assert_eq!(
                built, declared,
                "{}: (token transport, receiver, host policy, switch signal) built vs declared",
                a.name
            );
        }
    }

    /// The events a controller binds need switch or receiver features its entry must declare.
    #[test]
    fn bound_events_are_declared_as_needs() {
        let flow = crate::test_flows::fabric_flow();
        for a in registry() {
            let factory = (a.build)(&toml::Table::new(), LINE_RATE).unwrap_or_else(|e| panic!("{}: {e}", a.name));
            let events = factory.create(&flow).events();
            assert_eq!(events.contains(Events::CNP), a.needs.cnp, "{}: CNP", a.name);
            assert_eq!(factory.cnp_interval().is_some(), a.needs.cnp, "{}: CNP interval", a.name);
            assert_eq!(events.contains(Events::PACKET_FLAGS), a.needs.bolt, "{}: Bolt's path flags", a.name);
            let feedback = a.needs.bolt || a.needs.signal;
            assert_eq!(events.contains(Events::FEEDBACK), feedback, "{}: switch feedback", a.name);
            assert_eq!(events.contains(Events::HOST), a.needs.host_signal, "{}: receiving host's signals", a.name);
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = registry().iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), registry().len());
    }
}
