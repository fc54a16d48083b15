//! The network (layer 2): egress ports, switches, and the switch features that plug into them.

pub mod bolt;
pub mod fault;
pub mod port;
pub mod signal;
pub mod switch;
pub mod tokens;

use sluice_topo::Routes;

use crate::config::{LinkConfig, RdEnv, SwitchConfig};

/// What every switch shares: settings and routes.
#[derive(Debug)]
pub struct Fabric<'a> {
    /// Switch settings.
    pub config: &'a SwitchConfig,
    /// Packet sizes.
    pub link: &'a LinkConfig,
    /// Equal-cost next hops per node and destination host.
    pub routes: &'a Routes,
    /// Receiver-driven transport settings (token limiters, trimming, Aeolus), when a token algorithm runs.
    pub rd: Option<&'a RdEnv>,
}
