//! The host's end of the CC plane: the steps of its offload channel (batching deadline, transfer, plane
//! core, decisions back) and the flow events that run the algorithm (CC timers, fold deadlines). The
//! per-flow glue between a flow and its algorithm is [`crate::transport::cc`].

use sluice_plane::HostChannel;

use crate::engine::PlaneEvent;
use crate::host::Senders;
use crate::transport::cc::{self, channel_event};
use crate::transport::flow::Flow;
use crate::transport::table::FlowTable;
use crate::transport::{HostEnv, HostIo};

/// A host's plane: its end of the offload channel.
pub type HostPlane = HostChannel;

/// A step of host `io`'s plane channel, or a flow's fold deadline (`senders` are the host's sending
/// flows). Returns the flow whose decisions may have opened its window or pacing, for the host to queue.
pub fn on_event(
    io: &mut HostIo,
    env: &HostEnv,
    flows: &mut FlowTable,
    senders: &Senders,
    event: PlaneEvent,
) -> Option<u32> {
    match event {
        PlaneEvent::Flush { flow } => flush(io, env, flows, flow),
        PlaneEvent::Batch { .. } => {
            let node = io.node;
            let core = &mut *io.core;
            io.channel.on_batch_deadline(core.now, env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)));
            None
        }
        PlaneEvent::Arrive { .. } => {
            let (node, now) = (io.node, io.core.now);
            let core = &mut *io.core;
            if let Some(stretch) =
                io.channel.on_arrive(now, env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)))
            {
                stretch_flows(flows, senders, stretch);
            }
            None
        }
        PlaneEvent::Done { .. } => {
            core_done(io, env, flows, senders);
            None
        }
        PlaneEvent::Decision { .. } => decision(io, env, flows),
    }
}

/// A CC timer of flow `id` fired (armed as generation `gen`); returns whether the algorithm ran.
pub fn on_cc_timer(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, timer: u8, gen: u32) -> bool {
    cc::drive(io, env, f, id, |d, dp| d.on_timer(timer, gen, dp))
}

/// Flow `id`'s fold deadline passed.
fn flush(io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, id: u32) -> Option<u32> {
    cc::drive(io, env, &mut flows[id as usize], id, |d, dp| d.on_flush(dp)).then_some(id)
}

/// The plane's batching changed how many ACKs each report folds (offload mode).
fn stretch_flows(flows: &mut FlowTable, senders: &Senders, stretch: u32) {
    for id in senders.iter() {
        if let Some(driver) = flows[id as usize].driver.as_deref_mut() {
            driver.set_stretch(stretch);
        }
    }
}

/// The plane core finished a message: the algorithm handles it and its decisions head back.
fn core_done(io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable, senders: &Senders) {
    if let Some(message) = io.channel.on_core_done() {
        let f = &mut flows[message.flow as usize];
        if f.finish.is_none() {
            cc::drive(io, env, f, message.flow, |d, dp| d.deliver(&message.report, dp));
        }
    }
    let (node, now) = (io.node, io.core.now);
    let core = &mut *io.core;
    let schedule = &mut |at, e| core.schedule(at, channel_event(e, node));
    if let Some(stretch) = io.channel.after_core_done(now, env.plane, schedule) {
        stretch_flows(flows, senders, stretch);
    }
}

/// Decisions reached the datapath.
fn decision(io: &mut HostIo, env: &HostEnv, flows: &mut FlowTable) -> Option<u32> {
    let (id, d) = io.channel.take_decision()?;
    let f = &mut flows[id as usize];
    if f.finish.is_some() {
        return None;
    }
    cc::apply(&mut f.cwnd, &mut f.rate, &mut f.probe_requested, &d, io.nic.rate);
    cc::maybe_probe(io, env, &mut f.probe_requested, id, f.dst);
    Some(id)
}
