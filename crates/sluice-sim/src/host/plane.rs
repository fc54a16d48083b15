//! The host's end of the CC plane: the steps of its offload channel (batching deadline, transfer, plane
//! core, decisions back) and the flow events that run the algorithm (CC timers, fold deadlines). The
//! per-flow glue between a flow and its algorithm is [`crate::transport::cc`].

use sluice_plane::HostChannel;

use crate::engine::{Core, PlaneEvent};
use crate::host::Host;
use crate::transport::cc::{self, channel_event};
use crate::transport::flow::Flow;
use crate::transport::HostEnv;

/// A host's plane: its end of the offload channel.
pub type HostPlane = HostChannel;

impl Host {
    /// A step of this host's plane channel, or a flow's fold deadline.
    pub fn on_plane_event(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], event: PlaneEvent) {
        match event {
            PlaneEvent::Flush { flow } => self.on_plane_flush(core, env, flows, flow),
            PlaneEvent::Batch { .. } => self.on_plane_batch(core, env),
            PlaneEvent::Arrive { .. } => self.on_plane_arrive(core, env, flows),
            PlaneEvent::Done { .. } => self.on_plane_done(core, env, flows),
            PlaneEvent::Decision { .. } => self.on_decision(core, env, flows),
        }
    }

    /// A CC timer of flow `id` fired (armed as generation `gen`).
    pub fn on_cc_timer(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32, timer: u8, gen: u32) {
        let f = &mut flows[id as usize];
        if cc::drive(&mut self.io(core), env, f, id, |d, dp| d.on_timer(timer, gen, dp)) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// A flow's fold deadline passed.
    fn on_plane_flush(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        if cc::drive(&mut self.io(core), env, f, id, |d, dp| d.on_flush(dp)) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// The batcher's deadline passed.
    fn on_plane_batch(&mut self, core: &mut Core, env: &HostEnv) {
        let node = self.node;
        self.plane.on_batch_deadline(core.now, env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)));
    }

    /// A transfer reached the plane.
    fn on_plane_arrive(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let node = self.node;
        let now = core.now;
        if let Some(stretch) =
            self.plane.on_arrive(now, env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)))
        {
            self.stretch_flows(flows, stretch);
        }
    }

    fn stretch_flows(&mut self, flows: &mut [Flow], stretch: u32) {
        for &id in &self.senders {
            flows[id as usize].driver.set_stretch(stretch);
        }
    }

    /// The plane core finished a message: the algorithm handles it and its decisions head back.
    fn on_plane_done(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        if let Some(message) = self.plane.on_core_done() {
            let f = &mut flows[message.flow as usize];
            if f.finish.is_none() {
                cc::drive(&mut self.io(core), env, f, message.flow, |d, dp| d.deliver(&message.report, dp));
            }
        }
        let node = self.node;
        let now = core.now;
        let schedule = &mut |at, e| core.schedule(at, channel_event(e, node));
        if let Some(stretch) = self.plane.after_core_done(now, env.plane, schedule) {
            self.stretch_flows(flows, stretch);
        }
    }

    /// Decisions reached the datapath.
    fn on_decision(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let Some((id, d)) = self.plane.take_decision() else { return };
        let f = &mut flows[id as usize];
        if f.finish.is_some() {
            return;
        }
        cc::apply(&mut f.cwnd, &mut f.rate, &mut f.probe_requested, &d, self.nic.rate);
        cc::maybe_probe(&mut self.io(core), env, &mut f.probe_requested, id, f.dst);
        self.after_decisions(core, env, flows, id);
    }
}
