//! The capability contract between algorithms and datapaths.
//!
//! An algorithm requires capabilities: the [`Needs`] of its registry entry and the control it applies
//! ([`Control`]). A datapath declares the capabilities it provides ([`Capabilities`]). [`check`] is the
//! one place that holds the two against each other; every datapath runs it before it accepts an
//! algorithm, so an algorithm that would lose part of itself on a datapath (its receiver side, its host
//! policy, its transport) is refused there instead of running as something else.
//!
//! Adding a datapath is one declaration:
//!
//! ```
//! use sluice_cc::contract::{Capabilities, Capability::*, CapabilitySet};
//!
//! const MY_DATAPATH: Capabilities = Capabilities::new("my datapath", CapabilitySet::of(&[Ecn, Window, PacingRate]));
//! assert!(sluice_cc::contract::check(sluice_cc::lookup("dctcp").unwrap(), &MY_DATAPATH).is_ok());
//! ```

use std::fmt;

use crate::api::Needs;
use crate::registry::{Algorithm, Control};

/// One thing a datapath may provide to an algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Switches mark ECN and receivers echo the marks on ACKs ([`Needs::ecn`]).
    Ecn,
    /// Receivers send congestion notification packets ([`Needs::cnp`]).
    Cnp,
    /// Switches stamp in-band telemetry that ACKs carry back ([`Needs::int`]).
    Int,
    /// Switches run Bolt's programmable egress logic ([`Needs::bolt`]).
    Bolt,
    /// The token (receiver-driven) transport ([`Needs::token_transport`]).
    TokenTransport,
    /// The receiver-side controller of a token algorithm runs at receivers and issues its tokens
    /// ([`Needs::receiver`] with [`Needs::token_transport`]).
    Receiver,
    /// A receiver-side controller chooses how each arrival of a sender-driven flow is acknowledged
    /// (endpoint-congestion policies: [`Needs::receiver`] without the token transport).
    AckPolicy,
    /// The algorithm's host policy runs at hosts ([`Needs::host_policy`]).
    HostPolicy,
    /// The datapath applies a congestion window ([`Control::Window`], [`Control::WindowAndRate`]).
    Window,
    /// The datapath paces at a rate ([`Control::Rate`], [`Control::WindowAndRate`]).
    PacingRate,
    /// The datapath lets a flow send with no congestion control at all ([`Control::None`]).
    Uncontrolled,
    /// The datapath runs an algorithm's datapath programs on every signal ([`Needs::program`]).
    Programs,
    /// Switches run an algorithm's switch-side signal and its values reach the sender ([`Needs::signal`]).
    Signal,
    /// The datapath sends RTT probes when an algorithm asks ([`Needs::probe`]): a probe packet the
    /// receiver echoes at once, its round trip handed to [`crate::CongestionControl::on_probe`].
    Probe,
    /// Receiving hosts sample their congestion signals (NIC-to-memory buffer occupancy, interconnect
    /// use) and their ACKs carry the latest sample back to the sender ([`Needs::host_signal`]).
    HostSignal,
}

impl Capability {
    /// Every capability, in the order messages list them.
    pub const ALL: [Capability; 15] = [
        Capability::Ecn,
        Capability::Cnp,
        Capability::Int,
        Capability::Bolt,
        Capability::TokenTransport,
        Capability::Receiver,
        Capability::AckPolicy,
        Capability::HostPolicy,
        Capability::Window,
        Capability::PacingRate,
        Capability::Uncontrolled,
        Capability::Programs,
        Capability::Signal,
        Capability::Probe,
        Capability::HostSignal,
    ];

    /// What it is, in words that fit "algorithm `x` needs ...".
    pub fn describe(self) -> &'static str {
        match self {
            Capability::Ecn => "ECN marks from switches echoed on ACKs",
            Capability::Cnp => "congestion notification packets from receivers",
            Capability::Int => "in-band telemetry from switches",
            Capability::Bolt => "Bolt's programmable switches",
            Capability::TokenTransport => "the token transport (receiver-issued pull packets)",
            Capability::Receiver => "a receiver-side controller",
            Capability::AckPolicy => "a receiver-side acknowledgment policy",
            Capability::HostPolicy => "a host policy (control of whole hosts beside their flows)",
            Capability::Window => "a congestion window",
            Capability::PacingRate => "a pacing rate",
            Capability::Uncontrolled => {
                "leave to send with no congestion control at all, which a shared network cannot take"
            }
            Capability::Programs => "a datapath that runs its programs on every ACK and loss (CCP fold functions)",
            Capability::Signal => "switches that compute its per-hop signal and send it back to the sender",
            Capability::Probe => "RTT probes: packets the receiver echoes at once, sent when the algorithm asks",
            Capability::HostSignal => {
                "the receiving host's congestion signals (NIC-to-memory buffer occupancy) carried back on ACKs"
            }
        }
    }

    /// A short name for listings (`sluice list`).
    pub fn short(self) -> &'static str {
        match self {
            Capability::Ecn => "ECN",
            Capability::Cnp => "CNP",
            Capability::Int => "INT",
            Capability::Bolt => "Bolt switches",
            Capability::TokenTransport => "token transport",
            Capability::Receiver => "receiver controller",
            Capability::AckPolicy => "acknowledgment policy",
            Capability::HostPolicy => "host policy",
            Capability::Window => "window",
            Capability::PacingRate => "pacing rate",
            Capability::Uncontrolled => "uncontrolled sending",
            Capability::Programs => "datapath programs",
            Capability::Signal => "switch signals",
            Capability::Probe => "RTT probes",
            Capability::HostSignal => "receiving host's signals",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of [`Capability`] values.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct CapabilitySet(u16);

impl CapabilitySet {
    /// No capability.
    pub const EMPTY: CapabilitySet = CapabilitySet(0);
    /// Every capability.
    pub const ALL: CapabilitySet = CapabilitySet::of(&Capability::ALL);

    /// The set of `list`.
    pub const fn of(list: &[Capability]) -> CapabilitySet {
        let mut set = CapabilitySet::EMPTY;
        let mut i = 0;
        while i < list.len() {
            set = set.with(list[i]);
            i += 1;
        }
        set
    }

    /// This set and `c`.
    pub const fn with(self, c: Capability) -> CapabilitySet {
        CapabilitySet(self.0 | c.bit())
    }

    /// This set less `c`.
    pub const fn without(self, c: Capability) -> CapabilitySet {
        CapabilitySet(self.0 & !c.bit())
    }

    /// Whether `c` is in the set.
    pub const fn contains(self, c: Capability) -> bool {
        self.0 & c.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The capabilities of this set that `other` lacks.
    pub const fn minus(self, other: CapabilitySet) -> CapabilitySet {
        CapabilitySet(self.0 & !other.0)
    }

    /// This set and every member of `other`.
    pub const fn union(self, other: CapabilitySet) -> CapabilitySet {
        CapabilitySet(self.0 | other.0)
    }

    /// The members, in [`Capability::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for CapabilitySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<Capability> for CapabilitySet {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> CapabilitySet {
        iter.into_iter().fold(CapabilitySet::EMPTY, CapabilitySet::with)
    }
}

/// What one datapath provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The datapath, as messages name it ("kernel TCP").
    pub datapath: &'static str,
    /// What it provides.
    pub provides: CapabilitySet,
}

impl Capabilities {
    /// The packet-level simulator: every capability (a scenario's settings can take some away).
    pub const SIMULATOR: Capabilities = Capabilities::new("the simulator", CapabilitySet::ALL);

    /// Linux kernel TCP through the BPF datapath and `sluice agent`. ACKs carry the kernel's ECN echo
    /// (ECE) counts; the agent writes a window and a pacing rate (`sk_pacing_rate`) per flow, and gives
    /// rate-only algorithms a window that does not limit them. It runs per-flow sender controllers only:
    /// no receiver-side controller, no host policy, no token transport, and the kernel receives no
    /// CNPs, INT records or Bolt's switch feedback. Every flow stays under congestion control: the
    /// agent's or, when it is away, the kernel's own. The BPF side runs a flow's datapath program on
    /// every ACK, loss and timeout (the fields the kernel knows; docs/programs.md). No switch computes a
    /// per-hop signal ([`Needs::signal`]) for kernel flows, and the receiver's ACKs carry no host signals.
    pub const KERNEL_TCP: Capabilities = Capabilities::new(
        "kernel TCP",
        CapabilitySet::of(&[Capability::Ecn, Capability::Window, Capability::PacingRate, Capability::Programs]),
    );

    /// The user-space UDP transport (`sluice-udp`). Receivers echo CE marks on ACKs and send CNPs when the
    /// sender's algorithm asks for them; ACKs carry back the INT records switches appended (the sluice
    /// software switch does); the sender applies a window and paces at a rate per flow, or sends at line
    /// rate for `none` (a traffic generator's unlimited flow). Receiver-driven algorithms run their
    /// token transport as UDP control packets, with their receiver-side controllers at the receivers.
    /// Switch-side signals run at the sluice software switch's ports: data packets carry the signal
    /// field, receivers echo it on ACKs, and switches' signal packets reach the sender.
    /// No acknowledgment policy (a real host has no modelled processing queue), host policy or Bolt
    /// switch logic. Datapath programs run in the sender's plane driver on every signal, as in the
    /// simulator.
    ///
    /// Real receivers sample no host congestion signals ([`Needs::host_signal`]).
    pub const UDP: Capabilities = Capabilities::new(
        "the UDP datapath",
        CapabilitySet::of(&[
            Capability::Ecn,
            Capability::Cnp,
            Capability::Int,
            Capability::TokenTransport,
            Capability::Receiver,
            Capability::Window,
            Capability::PacingRate,
            Capability::Uncontrolled,
            Capability::Programs,
            Capability::Signal,
        ]),
    );

    /// A datapath named `datapath` providing `provides`.
    pub const fn new(datapath: &'static str, provides: CapabilitySet) -> Capabilities {
        Capabilities { datapath, provides }
    }

    /// The same datapath, described as `datapath`, without `taken`: a setting that switches a
    /// capability off.
    pub const fn without(self, datapath: &'static str, taken: CapabilitySet) -> Capabilities {
        Capabilities { datapath, provides: self.provides.minus(taken) }
    }
}

/// Every datapath sluice ships, for listings.
pub const DATAPATHS: [Capabilities; 3] = [Capabilities::SIMULATOR, Capabilities::KERNEL_TCP, Capabilities::UDP];

/// What `algorithm` requires of a datapath: its declared [`Needs`] and the control it applies.
pub fn requirements(algorithm: &Algorithm) -> CapabilitySet {
    algorithm.needs.capabilities().union(control_set(algorithm.control))
}

impl Needs {
    /// The capabilities these needs name (the control an algorithm applies aside).
    pub fn capabilities(&self) -> CapabilitySet {
        [
            (self.ecn, Capability::Ecn),
            (self.cnp, Capability::Cnp),
            (self.int, Capability::Int),
            (self.bolt, Capability::Bolt),
            (self.token_transport, Capability::TokenTransport),
            (self.receiver && self.token_transport, Capability::Receiver),
            (self.receiver && !self.token_transport, Capability::AckPolicy),
            (self.host_policy, Capability::HostPolicy),
            (self.program, Capability::Programs),
            (self.signal, Capability::Signal),
            (self.probe, Capability::Probe),
            (self.host_signal, Capability::HostSignal),
        ]
        .into_iter()
        .filter_map(|(on, c)| on.then_some(c))
        .collect()
    }
}

fn control_set(control: Control) -> CapabilitySet {
    match control {
        Control::Window => CapabilitySet::of(&[Capability::Window]),
        Control::Rate => CapabilitySet::of(&[Capability::PacingRate]),
        Control::WindowAndRate => CapabilitySet::of(&[Capability::Window, Capability::PacingRate]),
        Control::None => CapabilitySet::of(&[Capability::Uncontrolled]),
    }
}

/// An algorithm a datapath cannot run, and every capability it would miss there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The algorithm's registered name.
    pub algorithm: &'static str,
    /// The datapath, as [`Capabilities::datapath`] names it.
    pub datapath: &'static str,
    /// What the algorithm requires and the datapath lacks (never empty).
    pub missing: CapabilitySet,
}

impl fmt::Display for Missing {
    /// "algorithm `ndp` needs the token transport (...) and a receiver-side controller; kernel TCP
    /// provides neither".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.missing.iter().map(Capability::describe).collect();
        let verdict = match words.len() {
            1 => "does not provide it",
            2 => "provides neither",
            _ => "provides none of them",
        };
        write!(f, "algorithm `{}` needs {}; {} {verdict}", self.algorithm, and_list(&words), self.datapath)
    }
}

impl std::error::Error for Missing {}

/// "a", "a and b", "a, b and c".
fn and_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// Whether `datapath` provides everything `algorithm` requires; the error names every capability missing.
pub fn check(algorithm: &Algorithm, datapath: &Capabilities) -> Result<(), Missing> {
    let missing = requirements(algorithm).minus(datapath.provides);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Missing { algorithm: algorithm.name, datapath: datapath.datapath, missing })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{lookup, registry};

    fn missing(name: &str, datapath: &Capabilities) -> Vec<Capability> {
        check(lookup(name).unwrap(), datapath).err().map_or_else(Vec::new, |m| m.missing.iter().collect())
    }

    #[test]
    fn the_simulator_runs_every_algorithm() {
        for a in registry() {
            assert_eq!(check(a, &Capabilities::SIMULATOR), Ok(()), "{}", a.name);
        }
    }

    #[test]
    fn requirements_follow_needs_and_control() {
        use Capability::*;
        assert_eq!(requirements(lookup("dctcp").unwrap()), CapabilitySet::of(&[Ecn, Window]));
        assert_eq!(requirements(lookup("dcqcn").unwrap()), CapabilitySet::of(&[Ecn, Cnp, PacingRate]));
        assert_eq!(requirements(lookup("bbr").unwrap()), CapabilitySet::of(&[Window, PacingRate]));
        assert_eq!(requirements(lookup("none").unwrap()), CapabilitySet::of(&[Uncontrolled]));
        assert_eq!(requirements(lookup("ndp").unwrap()), CapabilitySet::of(&[TokenTransport, Receiver, Window]));
        assert_eq!(requirements(lookup("hostcc").unwrap()), CapabilitySet::of(&[Ecn, HostPolicy, Window]));
    }

    #[test]
    fn kernel_tcp_misses_what_its_agent_does_not_run() {
        use Capability::*;
        let kernel = Capabilities::KERNEL_TCP;
        assert_eq!(missing("ndp", &kernel), [TokenTransport, Receiver]);
        assert_eq!(missing("expresspass", &kernel), [TokenTransport, Receiver]);
        assert_eq!(missing("ec_aware", &kernel), [AckPolicy]);
        assert_eq!(missing("hostcc", &kernel), [HostPolicy]);
        assert_eq!(missing("dcqcn", &kernel), [Cnp]);
        assert_eq!(missing("none", &kernel), [Uncontrolled]);
        for fine in ["reno", "cubic", "dctcp", "dctcp_burst", "timely", "bbr", "opt", "aimd"] {
            assert_eq!(missing(fine, &kernel), [], "{fine}");
        }
    }

    #[test]
    fn the_message_names_the_algorithm_the_datapath_and_every_missing_capability() {
        let ndp = check(lookup("ndp").unwrap(), &Capabilities::KERNEL_TCP).unwrap_err();
        assert_eq!(
            ndp.to_string(),
            "algorithm `ndp` needs the token transport (receiver-issued pull packets) and a receiver-side \
             controller; kernel TCP provides neither"
        );
        let hpcc = check(lookup("hpcc").unwrap(), &Capabilities::KERNEL_TCP).unwrap_err();
        assert_eq!(
            hpcc.to_string(),
            "algorithm `hpcc` needs in-band telemetry from switches; kernel TCP does not provide it"
        );
        let bare = Capabilities::new("a bare wire", CapabilitySet::EMPTY);
        let dcqcn = check(lookup("dcqcn").unwrap(), &bare).unwrap_err();
        assert_eq!(
            dcqcn.to_string(),
            "algorithm `dcqcn` needs ECN marks from switches echoed on ACKs, congestion notification packets \
             from receivers and a pacing rate; a bare wire provides none of them"
        );
    }

    #[test]
    fn a_setting_can_take_capabilities_away() {
        let taken = CapabilitySet::of(&[Capability::Ecn, Capability::Cnp]);
        let no_ecn = Capabilities::SIMULATOR.without("the simulator without ECN", taken);
        assert_eq!(missing("dctcp", &no_ecn), [Capability::Ecn]);
        assert_eq!(missing("reno", &no_ecn), []);
        assert_eq!(no_ecn.datapath, "the simulator without ECN");
    }

    #[test]
    fn sets_hold_what_was_put_in() {
        let set = CapabilitySet::EMPTY.with(Capability::Int).with(Capability::Window);
        assert!(set.contains(Capability::Int) && !set.contains(Capability::Ecn));
        assert_eq!(set.without(Capability::Int), CapabilitySet::of(&[Capability::Window]));
        assert_eq!(CapabilitySet::ALL.iter().count(), Capability::ALL.len());
        assert_eq!(format!("{set:?}"), "{Int, Window}");
    }
}
