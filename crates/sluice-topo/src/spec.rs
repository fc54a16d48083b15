//! Topology specifications as written in scenario files, and their validation.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sluice_core::serde_units::{duration, opt_rate, rate};
use sluice_core::{Rate, Time, MAX_TIME, MAX_TIME_TEXT, PS_PER_US};

use crate::graph::{PortNo, Topology, MAX_NODES};
use crate::{file, generate, TopoError};

/// Default propagation delay of every generated link: 1 us, as in the HPCC artifact's topology files
/// (`0.001ms` per link) and the shared benchmark topologies.
pub const DEFAULT_DELAY: Time = PS_PER_US;

fn default_delay() -> Time {
    DEFAULT_DELAY
}

fn default_oversubscription() -> u32 {
    1
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

/// A topology as a scenario describes it; [`build`] turns it into a [`Topology`].
///
/// Written in TOML with a `kind` key, e.g.
/// `{ kind = "fat_tree", k = 8, host_rate = "100Gbps" }`. Rates are written like `"100Gbps"` and delays
/// like `"1us"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// A three-tier k-ary fat-tree (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center
    /// Network Architecture", SIGCOMM 2008), generalised by optional overrides.
    ///
    /// Defaults follow the paper: `k` pods, each of `k/2` ToRs and `k/2` aggregation switches, `k/2`
    /// hosts per ToR, `(k/2)^2` cores. Every ToR links to every aggregation switch of its pod;
    /// aggregation switch `j` of every pod links to cores `j*c .. (j+1)*c - 1` with
    /// `c = cores / aggs_per_pod`. Host `h` sits under ToR `h / hosts_per_tor`.
    ///
    /// Node ids: hosts first (0..hosts), then ToRs (pod by pod), aggregation switches, cores. Ports: a
    /// ToR's host ports first (in host order), then its uplinks in aggregation order; an aggregation
    /// switch's ToR ports, then core ports in core order; a core's port `p` leads to pod `p`.
    FatTree {
        /// The switch radix of the canonical fat-tree; even, at least 2.
        k: u32,
        /// Number of pods; default `k` (Al-Fares et al.).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pods: Option<u32>,
        /// ToRs per pod; default `k/2` (Al-Fares et al.).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tors_per_pod: Option<u32>,
        /// Aggregation switches per pod; default `k/2` (Al-Fares et al.).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        aggs_per_pod: Option<u32>,
        /// Hosts per ToR; default `k/2 * oversubscription` (Al-Fares et al. for oversubscription 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosts_per_tor: Option<u32>,
        /// Core switches; default `(k/2)^2` (Al-Fares et al.). Must be a multiple of `aggs_per_pod`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cores: Option<u32>,
        /// ToR oversubscription factor when `hosts_per_tor` is not given; default 1 (full bisection
        /// bandwidth, Al-Fares et al.).
        #[serde(default = "default_oversubscription", skip_serializing_if = "is_one")]
        oversubscription: u32,
        /// Host-to-ToR link rate.
        #[serde(with = "rate")]
        host_rate: Rate,
        /// ToR-to-aggregation link rate; default `host_rate` (uniform links, as in Al-Fares et al.).
        #[serde(default, with = "opt_rate", skip_serializing_if = "Option::is_none")]
        tor_agg_rate: Option<Rate>,
        /// Aggregation-to-core link rate; default `tor_agg_rate` (uniform links, as in Al-Fares et al.).
        #[serde(default, with = "opt_rate", skip_serializing_if = "Option::is_none")]
        agg_core_rate: Option<Rate>,
        /// Propagation delay of every link; default [`DEFAULT_DELAY`] (1 us).
        #[serde(default = "default_delay", with = "duration")]
        delay: Time,
    },
    /// A two-tier leaf-spine: `tors` ToRs of `hosts_per_tor` hosts each, every ToR linked once to each of
    /// `spines` spines. Node ids: hosts, ToRs, spines; ToR ports: hosts first, then spines in order.
    LeafSpine {
        /// Hosts under each ToR.
        hosts_per_tor: u32,
        /// Number of ToRs (leaves).
        tors: u32,
        /// Number of spines.
        spines: u32,
        /// Host-to-ToR link rate.
        #[serde(with = "rate")]
        host_rate: Rate,
        /// ToR-to-spine link rate; default `host_rate` (uniform links).
        #[serde(default, with = "opt_rate", skip_serializing_if = "Option::is_none")]
        uplink_rate: Option<Rate>,
        /// Propagation delay of every link; default [`DEFAULT_DELAY`] (1 us).
        #[serde(default = "default_delay", with = "duration")]
        delay: Time,
    },
    /// One switch (`"sw0"`) with `hosts` hosts; host `i` on switch port `i`. For incast experiments.
    Star {
        /// Number of hosts.
        hosts: u32,
        /// Rate of every link.
        #[serde(with = "rate")]
        rate: Rate,
        /// Propagation delay of every link; default [`DEFAULT_DELAY`] (1 us).
        #[serde(default = "default_delay", with = "duration")]
        delay: Time,
    },
    /// Two switches (`"sw0"` with the left hosts, `"sw1"` with the right hosts) joined by one bottleneck
    /// link. Hosts `0..left` are on the left, `left..left+right` on the right; the bottleneck is the last
    /// port of each switch.
    Dumbbell {
        /// Hosts on the left switch.
        left: u32,
        /// Hosts on the right switch.
        right: u32,
        /// Host-to-switch link rate.
        #[serde(with = "rate")]
        host_rate: Rate,
        /// Rate of the switch-to-switch link.
        #[serde(with = "rate")]
        bottleneck_rate: Rate,
        /// Propagation delay of every link; default [`DEFAULT_DELAY`] (1 us).
        #[serde(default = "default_delay", with = "duration")]
        delay: Time,
    },
    /// A topology file: sluice TOML when the name ends in `.toml`, otherwise the HPCC ns-3 artifact's
    /// `topology.txt` format. A relative path resolves against the base directory given to [`build`].
    File {
        /// The file's path.
        path: String,
    },
}

/// The fat-tree's parameters with every default applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FatTreeShape {
    pub k: u32,
    pub pods: u32,
    pub tors_per_pod: u32,
    pub aggs_per_pod: u32,
    pub hosts_per_tor: u32,
    pub cores: u32,
    pub host_rate: Rate,
    pub tor_agg_rate: Rate,
    pub agg_core_rate: Rate,
    pub delay: Time,
}

impl FatTreeShape {
    /// Hosts: every ToR of every pod with its hosts.
    /// Saturates rather than wraps, so that an absurd shape fails the size check.
    pub(crate) fn hosts(&self) -> u64 {
        (self.pods as u64 * self.tors_per_pod as u64).saturating_mul(self.hosts_per_tor as u64)
    }

    /// Hosts, ToRs, aggregation and core switches (saturating, like [`FatTreeShape::hosts`]).
    pub(crate) fn nodes(&self) -> u64 {
        let switches = self.pods as u64 * (self.tors_per_pod as u64 + self.aggs_per_pod as u64) + self.cores as u64;
        self.hosts().saturating_add(switches)
    }

    /// Whether the shape is the canonical k-ary fat-tree.
    pub(crate) fn is_canonical(&self) -> bool {
        let half = self.k / 2;
        (self.pods, self.tors_per_pod, self.aggs_per_pod, self.hosts_per_tor, self.cores)
            == (self.k, half, half, half, half * half)
    }
}

impl TopologySpec {
    /// A canonical k-ary fat-tree with every link at `rate` and 1 us delay.
    pub fn fat_tree(k: u32, rate: Rate) -> TopologySpec {
        TopologySpec::FatTree {
            k,
            pods: None,
            tors_per_pod: None,
            aggs_per_pod: None,
            hosts_per_tor: None,
            cores: None,
            oversubscription: 1,
            host_rate: rate,
            tor_agg_rate: None,
            agg_core_rate: None,
            delay: DEFAULT_DELAY,
        }
    }

    /// A leaf-spine with every link at `rate` and 1 us delay.
    pub fn leaf_spine(hosts_per_tor: u32, tors: u32, spines: u32, rate: Rate) -> TopologySpec {
        TopologySpec::LeafSpine {
            hosts_per_tor,
            tors,
            spines,
            host_rate: rate,
            uplink_rate: None,
            delay: DEFAULT_DELAY,
        }
    }

    /// A star of `hosts` hosts with every link at `rate` and 1 us delay.
    pub fn star(hosts: u32, rate: Rate) -> TopologySpec {
        TopologySpec::Star { hosts, rate, delay: DEFAULT_DELAY }
    }

    /// A dumbbell with 1 us links.
    pub fn dumbbell(left: u32, right: u32, host_rate: Rate, bottleneck_rate: Rate) -> TopologySpec {
        TopologySpec::Dumbbell { left, right, host_rate, bottleneck_rate, delay: DEFAULT_DELAY }
    }

    /// The nodes and hosts of a generated topology, worked out without building it; `None` for a topology
    /// file (known only once read) or a fat-tree whose parameters do not check.
    pub fn generated_size(&self) -> Option<(u64, u64)> {
        match *self {
            TopologySpec::FatTree { .. } => self.fat_tree_shape().ok().map(|shape| (shape.nodes(), shape.hosts())),
            TopologySpec::LeafSpine { hosts_per_tor, tors, spines, .. } => {
                let hosts = hosts_per_tor as u64 * tors as u64;
                Some((hosts + tors as u64 + spines as u64, hosts))
            }
            TopologySpec::Star { hosts, .. } => Some((hosts as u64 + 1, hosts as u64)),
            TopologySpec::Dumbbell { left, right, .. } => {
                let hosts = left as u64 + right as u64;
                Some((hosts + 2, hosts))
            }
            TopologySpec::File { .. } => None,
        }
    }

    /// Checks the specification without building it (files are only read by [`build`]).
    pub fn validate(&self) -> Result<(), TopoError> {
        self.check_delay()?;
        match *self {
            TopologySpec::FatTree { .. } => self.fat_tree_shape().map(|_| ()),
            TopologySpec::LeafSpine { hosts_per_tor, tors, spines, host_rate, uplink_rate, .. } => {
                validate_leaf_spine(hosts_per_tor, tors, spines, host_rate, uplink_rate)
            }
            TopologySpec::Star { hosts, rate, .. } => {
                positive(&[("hosts", hosts)])?;
                nonzero_rates(&[("rate", Some(rate))])?;
                check_size(hosts as u64 + 1, hosts as u64)
            }
            TopologySpec::Dumbbell { left, right, host_rate, bottleneck_rate, .. } => {
                validate_dumbbell(left, right, host_rate, bottleneck_rate)
            }
            TopologySpec::File { ref path } if path.trim().is_empty() => {
                Err(TopoError::field("path", "the topology file path is empty"))
            }
            TopologySpec::File { .. } => Ok(()),
        }
    }

    /// Rejects a link delay past [`MAX_TIME`], which the simulator's clock could not add up.
    fn check_delay(&self) -> Result<(), TopoError> {
        let delay = match *self {
            TopologySpec::FatTree { delay, .. }
            | TopologySpec::LeafSpine { delay, .. }
            | TopologySpec::Star { delay, .. }
            | TopologySpec::Dumbbell { delay, .. } => delay,
            TopologySpec::File { .. } => return Ok(()),
        };
        if delay > MAX_TIME {
            return Err(TopoError::field("delay", format!("must not exceed {MAX_TIME_TEXT}")));
        }
        Ok(())
    }

    /// Resolves and checks the fat-tree parameters (only for [`TopologySpec::FatTree`]).
    pub(crate) fn fat_tree_shape(&self) -> Result<FatTreeShape, TopoError> {
        let TopologySpec::FatTree {
            k,
            pods,
            tors_per_pod,
            aggs_per_pod,
            hosts_per_tor,
            cores,
            oversubscription,
            host_rate,
            tor_agg_rate,
            agg_core_rate,
            delay,
        } = *self
        else {
            return Err(TopoError::general("not a fat-tree specification"));
        };
        let overrides = [pods, tors_per_pod, aggs_per_pod, hosts_per_tor, cores];
        check_fat_tree_inputs(k, overrides, oversubscription)?;
        if overrides.iter().all(Option::is_none) {
            check_canonical_size(k, oversubscription)?;
        }
        nonzero_rates(&[
            ("host_rate", Some(host_rate)),
            ("tor_agg_rate", tor_agg_rate),
            ("agg_core_rate", agg_core_rate),
        ])?;
        let half = k / 2;
        let tor_agg_rate = tor_agg_rate.unwrap_or(host_rate);
        let shape = FatTreeShape {
            k,
            pods: pods.unwrap_or(k),
            tors_per_pod: tors_per_pod.unwrap_or(half),
            aggs_per_pod: aggs_per_pod.unwrap_or(half),
            hosts_per_tor: hosts_per_tor.unwrap_or(half.saturating_mul(oversubscription)),
            cores: cores.unwrap_or(half.saturating_mul(half)),
            host_rate,
            tor_agg_rate,
            agg_core_rate: agg_core_rate.unwrap_or(tor_agg_rate),
            delay,
        };
        check_fat_tree_size(&shape)?;
        Ok(shape)
    }
}

/// Checks `k`, the count overrides (`pods`, `tors_per_pod`, `aggs_per_pod`, `hosts_per_tor`, `cores`)
/// and `oversubscription`.
fn check_fat_tree_inputs(k: u32, overrides: [Option<u32>; 5], oversubscription: u32) -> Result<(), TopoError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(TopoError::field("k", format!("must be even and at least 2 (got {k})")));
    }
    let names = ["pods", "tors_per_pod", "aggs_per_pod", "hosts_per_tor", "cores"];
    for (name, value) in names.into_iter().zip(overrides) {
        positive(&[(name, value.unwrap_or(1))])?;
    }
    positive(&[("oversubscription", oversubscription)])?;
    if overrides[3].is_some() && oversubscription != 1 {
        return Err(TopoError::field("oversubscription", "give either hosts_per_tor or oversubscription, not both"));
    }
    Ok(())
}

/// A canonical fat-tree too large to build is `k`'s fault (or `oversubscription`'s), not that of the
/// counts `k` implies: `k^3/4` hosts, `5k^2/4` switches, and ToRs with `k/2` uplinks.
fn check_canonical_size(k: u32, oversubscription: u32) -> Result<(), TopoError> {
    let half = k as u64 / 2;
    let hosts_per_tor = half * oversubscription as u64;
    let nodes = k as u64 * half * (hosts_per_tor + 1) + k as u64 * half + half * half;
    let degree = (hosts_per_tor + half).max(k as u64);
    let key = if oversubscription == 1 { "k" } else { "oversubscription" };
    check_size(nodes, degree).map_err(|e| TopoError::field(key, format!("k = {k}: {}", e.message)))
}

fn validate_leaf_spine(
    hosts_per_tor: u32,
    tors: u32,
    spines: u32,
    host_rate: Rate,
    uplink_rate: Option<Rate>,
) -> Result<(), TopoError> {
    positive(&[("hosts_per_tor", hosts_per_tor), ("tors", tors), ("spines", spines)])?;
    nonzero_rates(&[("host_rate", Some(host_rate)), ("uplink_rate", uplink_rate)])?;
    let (hosts_per_tor, tors, spines) = (hosts_per_tor as u64, tors as u64, spines as u64);
    check_size(hosts_per_tor * tors + tors + spines, (hosts_per_tor + spines).max(tors))
}

fn validate_dumbbell(left: u32, right: u32, host_rate: Rate, bottleneck_rate: Rate) -> Result<(), TopoError> {
    positive(&[("left", left), ("right", right)])?;
    nonzero_rates(&[("host_rate", Some(host_rate)), ("bottleneck_rate", Some(bottleneck_rate))])?;
    check_size(left as u64 + right as u64 + 2, left.max(right) as u64 + 1)
}

fn check_fat_tree_size(shape: &FatTreeShape) -> Result<(), TopoError> {
    if !shape.cores.is_multiple_of(shape.aggs_per_pod) {
        return Err(TopoError::field(
            "cores",
            format!("must be a multiple of aggs_per_pod ({}), got {}", shape.aggs_per_pod, shape.cores),
        ));
    }
    let (pods, tors, aggs, hosts) =
        (shape.pods as u64, shape.tors_per_pod as u64, shape.aggs_per_pod as u64, shape.hosts_per_tor as u64);
    let degree = (hosts + aggs).max(tors + shape.cores as u64 / aggs).max(pods);
    check_size(shape.nodes(), degree)
}

/// Rejects zero counts, naming the key.
fn positive(counts: &[(&str, u32)]) -> Result<(), TopoError> {
    match counts.iter().find(|(_, value)| *value == 0) {
        Some((name, _)) => Err(TopoError::field(name, "must be at least 1 (got 0)")),
        None => Ok(()),
    }
}

/// Rejects zero rates, naming the key.
fn nonzero_rates(rates: &[(&str, Option<Rate>)]) -> Result<(), TopoError> {
    match rates.iter().find(|(_, value)| *value == Some(0)) {
        Some((name, _)) => Err(TopoError::field(name, "must be a positive rate such as \"100Gbps\" (got 0)")),
        None => Ok(()),
    }
}

/// Rejects topologies with too many nodes or a switch with more ports than a port number can address.
fn check_size(nodes: u64, max_degree: u64) -> Result<(), TopoError> {
    if nodes > MAX_NODES {
        return Err(TopoError::general(format!("{nodes} nodes is more than the limit of {MAX_NODES}")));
    }
    if max_degree > PortNo::MAX as u64 + 1 {
        return Err(TopoError::general(format!(
            "a switch would have {max_degree} ports, more than the limit of {}",
            PortNo::MAX as u32 + 1
        )));
    }
    Ok(())
}

/// Validates `spec` and builds its topology; `File` paths that are relative resolve against `base_dir`
/// (normally the directory of the scenario file).
pub fn build(spec: &TopologySpec, base_dir: &Path) -> Result<Topology, TopoError> {
    spec.validate()?;
    match spec {
        TopologySpec::FatTree { .. } => generate::fat_tree(&spec.fat_tree_shape()?),
        TopologySpec::LeafSpine { hosts_per_tor, tors, spines, host_rate, uplink_rate, delay } => {
            generate::leaf_spine(*hosts_per_tor, *tors, *spines, *host_rate, uplink_rate.unwrap_or(*host_rate), *delay)
        }
        TopologySpec::Star { hosts, rate, delay } => generate::star(*hosts, *rate, *delay),
        TopologySpec::Dumbbell { left, right, host_rate, bottleneck_rate, delay } => {
            generate::dumbbell(*left, *right, *host_rate, *bottleneck_rate, *delay)
        }
        TopologySpec::File { path } => file::load(&base_dir.join(path)),
    }
}
