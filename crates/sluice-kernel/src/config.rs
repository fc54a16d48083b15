//! The agent's settings: which algorithm each flow gets (by the name its socket chose, else by port
//! rules, else the default), algorithm parameters, and the BPF side's batching and watchdog. Read from a
//! small TOML file and/or command-line options; every error names what is wrong and where.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_cc::contract::{self, Capabilities};
use sluice_cc::registry::{lookup, Factory};
use sluice_core::{Rate, Time, PS_PER_MS, PS_PER_US};

use crate::fixed;

/// Where bpffs pins the agent's maps by default (a restarted agent finds its flows there).
pub const DEFAULT_PIN_DIR: &str = "/sys/fs/bpf/sluice";

/// A rejected setting: where it was and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, option or field the error is about (`agent.toml: rule[2].ports`, `--rule`).
    pub place: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn error(place: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { place: place.into(), message: message.into() }
}

/// A port rule: flows whose local or remote port is in `lo..=hi` get `algorithm`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortRule {
    /// A port (`"5201"`) or an inclusive range (`"5200-5299"`).
    pub ports: String,
    /// The algorithm's name.
    pub algorithm: String,
    /// Parameters for this rule's flows (else `[params.<algorithm>]`, else the algorithm's defaults).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub params: toml::Table,
}

/// The agent's settings, as written in its TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Algorithm for flows that chose "sluice" and match no rule. Default "cubic", Linux's default
    /// congestion control (`net.ipv4.tcp_congestion_control`).
    pub default: String,
    /// Port rules, first match wins.
    #[serde(rename = "rule")]
    pub rules: Vec<PortRule>,
    /// Per-algorithm parameters (`[params.reno]`).
    pub params: BTreeMap<String, toml::Table>,
    /// The BPF side falls back to the kernel's own congestion control ([`AgentConfig::fallback`]) when a
    /// report has waited this long for an answer. Default 10 ms (~100 RTTs of a datacenter path).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub watchdog: Time,
    /// What the watchdog hands a flow to: the kernel's `cubic` (default: Linux's default congestion
    /// control, net.ipv4.tcp_congestion_control) or its `reno`.
    pub fallback: Fallback,
    /// A flow reports after this many ACKs... Default 16: a 64 KB GSO burst is ~45 segments, ACKed by
    /// ~16-23 delayed ACKs, so about one report per burst.
    pub batch_acks: u32,
    /// ...or once its oldest folded ACK is this old, or the flow's smoothed RTT when that is longer (up
    /// to half the watchdog): CCP's datapath reports once per RTT by default (Narayan et al.,
    /// SIGCOMM'18, section 4). Checked at ACKs. Default 1 ms, a tenth of the watchdog so that a slow
    /// flow answers well within it.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub deadline: Time,
    /// Wake the agent after each CPU submitted this many bytes of reports. Default 16 KiB (~100 reports):
    /// TAURUS section 3.4 finds batching of 128-512 B per transfer efficient; a wake-up costs ~15 us here,
    /// so about 0.15 us per report.
    pub wakeup_bytes: u32,
    /// How long the agent sleeps waiting for a wake-up before it drains anyway. Default 1 ms (the
    /// batching deadline).
    #[serde(with = "sluice_core::serde_units::duration")]
    pub poll: Time,
    /// The NIC rate algorithms are told (FlowInfo::line_rate; rates are capped at it). Default 10 Gbps,
    /// the speed a veth pair reports.
    #[serde(with = "sluice_core::serde_units::rate")]
    pub line_rate: Rate,
    /// The idle round trip algorithms are told (FlowInfo::base_rtt) for a flow whose first report has no
    /// RTT sample; otherwise they get the socket's measured RTT. Default 100 us, a datacenter path.
    #[serde(with = "sluice_core::serde_units::duration")]
    pub base_rtt: Time,
    /// Where the maps are pinned.
    pub pin_dir: PathBuf,
    /// The agent's loop runs under SCHED_FIFO at this priority (1-99; 0: the normal time-sharing
    /// scheduler). Default 10: the watchdog is a 10 ms deadline, and under the normal scheduler the
    /// 1,000-connection check's sender threads kept the agent off the CPU for up to 323 ms
    /// (docs/kernel.md, "Watchdog fallbacks under load"). 10 stays below the kernel's threaded interrupt
    /// handlers (priority 50, kernel/irq/manage.c) and its own real-time threads; the loop sleeps
    /// between drains, and the kernel's real-time throttling (kernel.sched_rt_runtime_us) bounds it.
    pub realtime_priority: u8,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            default: "cubic".into(),
            rules: Vec::new(),
            params: BTreeMap::new(),
            watchdog: 10 * PS_PER_MS,
            fallback: Fallback::Cubic,
            batch_acks: 16,
            deadline: PS_PER_MS,
            wakeup_bytes: 16 * 1024,
            poll: PS_PER_MS,
            line_rate: 10_000_000_000,
            base_rtt: 100 * PS_PER_US,
            pin_dir: PathBuf::from(DEFAULT_PIN_DIR),
            realtime_priority: 10,
        }
    }
}

/// The kernel's own congestion control a flow falls back to while the agent is away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    /// `tcp_reno_cong_avoid`: no state of its own.
    Reno,
    /// The `cubictcp_*` functions, started from the window in force when the flow falls back.
    Cubic,
}

impl Fallback {
    /// Parses `--fallback`.
    pub fn parse_arg(text: &str) -> Result<Fallback, ConfigError> {
        match text {
            "cubic" => Ok(Fallback::Cubic),
            "reno" => Ok(Fallback::Reno),
            _ => Err(error(format!("--fallback {text}"), "expected `cubic` or `reno`")),
        }
    }

    /// The BPF side's code for it (`SLK_FALLBACK_*` in bpf/sluice.h).
    pub fn code(self) -> u64 {
        match self {
            Fallback::Reno => 0,
            Fallback::Cubic => 1,
        }
    }
}

/// What kernel TCP provides to algorithms: [`Capabilities::KERNEL_TCP`]. The agent runs one sender-side
/// controller per flow ([`crate::adapter::FlowAdapter`]) and nothing at receivers or hosts.
pub const CAPABILITIES: Capabilities = Capabilities::KERNEL_TCP;

/// Whether the kernel datapath can run the algorithm `name`: the `fixed` test algorithm, or a registered
/// algorithm whose requirements kernel TCP meets ([`contract::check`]); the error says what is missing.
pub fn supported(name: &str) -> Result<(), String> {
    if name == fixed::NAME {
        return Ok(());
    }
    let Some(algorithm) = lookup(name) else {
        return Err(format!("unknown algorithm `{name}` (kernel datapath runs: {})", supported_names().join(", ")));
    };
    contract::check(algorithm, &CAPABILITIES).map_err(|missing| missing.to_string())
}

/// Every algorithm the kernel datapath runs.
pub fn supported_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> =
        sluice_cc::registry::registry().iter().map(|a| a.name).filter(|n| supported(n).is_ok()).collect();
    names.push(fixed::NAME);
    names
}

/// Parses `"5201"` or `"5200-5299"`.
pub fn parse_ports(text: &str) -> Result<(u16, u16), String> {
    let port = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("`{s}` is not a port (0-65535)"));
    let (lo, hi) = match text.split_once('-') {
        Some((lo, hi)) => (port(lo)?, port(hi)?),
        None => (port(text)?, port(text)?),
    };
    if lo > hi {
        return Err(format!("range `{text}` is empty (start above end)"));
    }
    Ok((lo, hi))
}

impl AgentConfig {
    /// Reads a TOML file.
    pub fn load(path: &Path) -> Result<AgentConfig, ConfigError> {
        let place = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| error(&place, format!("cannot read: {e}")))?;
        toml::from_str(&text).map_err(|e| error(&place, e.to_string().trim_end().to_string()))
    }

    /// Adds a rule given as `PORTS=ALGORITHM` on the command line.
    pub fn add_rule_arg(&mut self, arg: &str) -> Result<(), ConfigError> {
        let (ports, algorithm) =
            arg.split_once('=').ok_or_else(|| error(format!("--rule {arg}"), "expected PORTS=ALGORITHM"))?;
        self.rules.push(PortRule { ports: ports.into(), algorithm: algorithm.into(), params: toml::Table::new() });
        Ok(())
    }

    /// Sets an algorithm parameter given as `ALGORITHM.KEY=VALUE` on the command line (the value is read
    /// as TOML, else taken as a string: `fixed.cwnd_packets=20`, `fixed.rate=200Mbps`).
    pub fn add_param_arg(&mut self, arg: &str) -> Result<(), ConfigError> {
        let place = format!("--param {arg}");
        let (path, value) = arg.split_once('=').ok_or_else(|| error(&place, "expected ALGORITHM.KEY=VALUE"))?;
        let (algorithm, key) = path.split_once('.').ok_or_else(|| error(&place, "expected ALGORITHM.KEY=VALUE"))?;
        let value = sluice_cc::registry::param_value(value);
        self.params.entry(algorithm.to_string()).or_default().insert(key.to_string(), value);
        Ok(())
    }

    /// Sets a duration option (`--watchdog 10ms`).
    pub fn parse_duration_arg(option: &str, text: &str) -> Result<Time, ConfigError> {
        sluice_core::parse_duration(text).map_err(|e| error(format!("--{option} {text}"), e.to_string()))
    }

    /// Checks every setting and builds the algorithms; `origin` names the file or "options".
    pub fn resolve(&self, origin: &str) -> Result<Resolved, ConfigError> {
        self.check_numbers(origin)?;
        let mut library = Library::default();
        for name in self.params.keys() {
            let place = format!("{origin}: params.{name}");
            library.factory(name, self.params_of(name), self.line_rate).map_err(|m| error(&place, m))?;
        }
        let default = library
            .factory(&self.default, self.params_of(&self.default), self.line_rate)
            .map_err(|m| error(format!("{origin}: default"), m))?;
        let mut rules = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let place = format!("{origin}: rule[{}] (ports {})", i + 1, rule.ports);
            let (lo, hi) = parse_ports(&rule.ports).map_err(|m| error(format!("{place}.ports"), m))?;
            let params = if rule.params.is_empty() { self.params_of(&rule.algorithm) } else { &rule.params };
            let factory = library.factory(&rule.algorithm, params, self.line_rate).map_err(|m| error(&place, m))?;
            rules.push(ResolvedRule { lo, hi, algorithm: rule.algorithm.clone(), factory });
        }
        Ok(Resolved { config: self.clone(), default: (self.default.clone(), default), rules, library })
    }

    fn params_of(&self, name: &str) -> &toml::Table {
        static EMPTY: std::sync::OnceLock<toml::Table> = std::sync::OnceLock::new();
        self.params.get(name).unwrap_or_else(|| EMPTY.get_or_init(toml::Table::new))
    }

    fn check_numbers(&self, origin: &str) -> Result<(), ConfigError> {
        let positive = [
            ("watchdog", self.watchdog),
            ("deadline", self.deadline),
            ("poll", self.poll),
            ("line_rate", self.line_rate),
            ("base_rtt", self.base_rtt),
            ("batch_acks", self.batch_acks as u64),
            ("wakeup_bytes", self.wakeup_bytes as u64),
        ];
        if let Some((field, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(error(format!("{origin}: {field}"), "must be positive"));
        }
        if self.deadline >= self.watchdog {
            return Err(error(format!("{origin}: deadline"), "must be shorter than the watchdog"));
        }
        if self.realtime_priority > 99 {
            return Err(error(
                format!("{origin}: realtime_priority"),
                "must be 1-99 (SCHED_FIFO), or 0 for the normal scheduler",
            ));
        }
        Ok(())
    }
}

/// Built algorithm factories, by name and parameters.
#[derive(Default)]
pub struct Library {
    built: Vec<(String, toml::Table, Arc<dyn Factory>)>,
}

impl Library {
    /// The factory for `name` with `params`, built once.
    pub fn factory(&mut self, name: &str, params: &toml::Table, line_rate: Rate) -> Result<Arc<dyn Factory>, String> {
        if let Some((_, _, f)) = self.built.iter().find(|(n, p, _)| n == name && p == params) {
            return Ok(f.clone());
        }
        supported(name)?;
        let factory = if name == fixed::NAME {
            fixed::build(params)
        } else {
            let algorithm = lookup(name).ok_or_else(|| format!("unknown algorithm `{name}`"))?;
            (algorithm.build)(params, line_rate)
        }
        .map_err(|e| format!("algorithm `{name}`: {e}"))?;
        self.built.push((name.into(), params.clone(), factory.clone()));
        Ok(factory)
    }
}

/// A checked rule.
pub struct ResolvedRule {
    /// First port.
    pub lo: u16,
    /// Last port.
    pub hi: u16,
    /// Algorithm name.
    pub algorithm: String,
    /// Its factory.
    pub factory: Arc<dyn Factory>,
}

/// Checked settings with built algorithms.
pub struct Resolved {
    /// The settings.
    pub config: AgentConfig,
    /// The default algorithm.
    pub default: (String, Arc<dyn Factory>),
    /// Port rules in order.
    pub rules: Vec<ResolvedRule>,
    /// Every factory built so far (per-name slots reuse them).
    pub library: Library,
}

impl Resolved {
    /// The algorithm for a flow: the one its socket named (`slot_algorithm`), else the first rule matching
    /// either port, else the default.
    pub fn choose(&mut self, slot_algorithm: Option<&str>, lport: u16, rport: u16) -> (String, Arc<dyn Factory>) {
        if let Some(name) = slot_algorithm {
            let params = self.config.params.get(name).cloned().unwrap_or_default();
            if let Ok(f) = self.library.factory(name, &params, self.config.line_rate) {
                return (name.to_string(), f);
            }
        }
        let hit = |p: u16, r: &ResolvedRule| (r.lo..=r.hi).contains(&p);
        match self.rules.iter().find(|r| hit(lport, r) || hit(rport, r)) {
            Some(rule) => (rule.algorithm.clone(), rule.factory.clone()),
            None => self.default.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_choose_by_port_and_names_win() {
        let mut c = AgentConfig::default();
        c.add_rule_arg("5201=reno").unwrap();
        c.add_rule_arg("6000-6010=vegas").unwrap();
        let mut r = c.resolve("options").unwrap();
        assert_eq!(r.choose(None, 40000, 5201).0, "reno");
        assert_eq!(r.choose(None, 6005, 1).0, "vegas");
        assert_eq!(r.choose(None, 1, 2).0, "cubic");
        assert_eq!(r.choose(Some("bbr"), 40000, 5201).0, "bbr");
    }

    #[test]
    fn errors_name_the_place() {
        let mut c = AgentConfig::default();
        c.add_rule_arg("5201=reno").unwrap();
        c.add_rule_arg("70000=reno").unwrap();
        let e = c.resolve("agent.toml").err().unwrap();
        assert_eq!(e.place, "agent.toml: rule[2] (ports 70000).ports");
        let mut c = AgentConfig::default();
        c.add_rule_arg("80=hpcc").unwrap();
        let e = c.resolve("options").err().unwrap();
        assert!(e.message.contains("in-band telemetry"), "{e}");
        let c = AgentConfig { default: "renoo".into(), ..AgentConfig::default() };
        assert!(c.resolve("options").err().unwrap().message.contains("unknown algorithm `renoo`"));
        assert!(AgentConfig::default().add_rule_arg("5201").is_err());
        let mut c = AgentConfig::default();
        c.add_param_arg("fixed.cwnd_packets=20").unwrap();
        c.add_param_arg("fixed.rate=200Mbps").unwrap();
        assert_eq!(c.params["fixed"]["cwnd_packets"].as_integer(), Some(20));
        assert!(c.resolve("options").is_ok());
        assert!(c.add_param_arg("cwnd=3").is_err());
        assert_eq!(AgentConfig::parse_duration_arg("watchdog", "5").err().unwrap().place, "--watchdog 5");
        assert_eq!(AgentConfig::default().fallback, Fallback::Cubic);
        assert_eq!(Fallback::parse_arg("reno").unwrap(), Fallback::Reno);
        assert_eq!(Fallback::parse_arg("vegas").err().unwrap().place, "--fallback vegas");
        let c: AgentConfig = toml::from_str("fallback = \"reno\"").unwrap();
        assert_eq!((c.fallback, c.fallback.code()), (Fallback::Reno, 0));
        let c: Result<AgentConfig, _> = toml::from_str("fallback = \"bbr\"");
        assert!(c.err().unwrap().to_string().contains("unknown variant `bbr`"));
        let c: Result<AgentConfig, _> = toml::from_str("watchdog = 5");
        assert!(c.is_err());
        let c: AgentConfig = toml::from_str("watchdog = \"1ms\"").unwrap();
        assert_eq!(c.resolve("f").err().unwrap().place, "f: deadline");
        let c: AgentConfig = toml::from_str("realtime_priority = 100").unwrap();
        assert_eq!(c.resolve("f").err().unwrap().place, "f: realtime_priority");
        let c: AgentConfig = toml::from_str("realtime_priority = 0").unwrap();
        assert!(c.resolve("f").is_ok(), "0 is the normal scheduler");
    }

    #[test]
    fn algorithms_that_report_through_datapath_programs_run() {
        let flow = sluice_cc::FlowInfo {
            flow_id: 1,
            mss: 1448,
            header_bytes: 66,
            line_rate: 10_000_000_000,
            base_rtt: 100_000_000,
            hops: 1,
            size: None,
            start: 0,
        };
        for (name, param) in
            [("reno", "program=true"), ("dctcp", "program=true"), ("bbr", "program=true"), ("dctcp_burst", "n_acks=8")]
        {
            let mut c = AgentConfig::default();
            c.add_rule_arg(&format!("5201={name}")).unwrap();
            c.add_param_arg(&format!("{name}.{param}")).unwrap();
            let mut r = c.resolve("options").unwrap_or_else(|e| panic!("{name}: {e}"));
            let (chosen, factory) = r.choose(None, 5201, 1);
            assert_eq!(chosen, name);
            assert!(!factory.create(&flow).programs().is_empty(), "{name} with {param} installs a program");
        }
        let mut c = AgentConfig::default();
        c.add_rule_arg("5201=dctcp_burst").unwrap();
        c.add_param_arg("dctcp_burst.program=(def (Report (x 0)))\n(when true (foo))").unwrap();
        let e = c.resolve("options").err().unwrap();
        assert_eq!(e.place, "options: params.dctcp_burst");
        assert!(e.message.contains("parameter `program`: 2:"), "a bad program names the place in it: {e}");
    }

    #[test]
    fn the_kernel_runs_what_its_capabilities_meet_and_the_fixed_test_algorithm() {
        let runs = ["reno", "cubic", "vegas", "dctcp", "dctcp_burst", "timely", "swift", "bbr", "opt", "aimd", "fixed"];
        assert_eq!(supported_names(), runs);
        let e = supported("ndp").unwrap_err();
        assert_eq!(
            e,
            "algorithm `ndp` needs the token transport (receiver-issued pull packets) and a receiver-side \
             controller; kernel TCP provides neither"
        );
        assert!(supported("none").unwrap_err().contains("no congestion control at all"));
        assert!(supported("hostcc").unwrap_err().contains("a host policy"));
        assert!(supported("nope").unwrap_err().starts_with("unknown algorithm `nope` (kernel datapath runs: reno,"));
    }

    #[test]
    fn toml_rules_and_params() {
        let text = r#"
            default = "reno"
            [[rule]]
            ports = "5300-5399"
            algorithm = "fixed"
            params = { cwnd_packets = 20 }
            [params.cubic]
            beta = 0.7
        "#;
        let c: AgentConfig = toml::from_str(text).unwrap();
        let mut r = c.resolve("agent.toml").unwrap();
        assert_eq!(r.choose(None, 5300, 1).0, "fixed");
        let bad: AgentConfig = toml::from_str("[params.cubic]\nnope = 1").unwrap();
        let e = bad.resolve("agent.toml").err().unwrap();
        assert_eq!(e.place, "agent.toml: params.cubic");
        assert!(e.message.contains("nope"), "{e}");
    }
}
