//! A flow and its CC algorithm: each flow's [`FlowDriver`] (fold, trigger, filters, timers, the
//! algorithm) runs with the flow's host as the datapath ([`SimPath`]). In native mode due reports reach
//! the algorithm at once; in offload mode they cross the host's modelled channel (batching, latency, ring,
//! plane core; the host runs its steps), and decisions come back after the latency.

use sluice_cc::{Ack, CongestionControl, Decisions, Feedback, FlowInfo, HostSignal, Loss, Sent};
use sluice_core::{Rate, Time};
use sluice_plane::{ChannelEvent, Datapath, FlowDriver, Fold, Message, PlaneConfig, PlaneCounters, Wake};

use crate::engine::packet::Kind;
use crate::engine::{Event, PlaneEvent};
use crate::transport::flow::{Flow, FlowTrace};
use crate::transport::{HostEnv, HostIo};

/// The simulator's event for host node `host`'s channel step `e`.
pub fn channel_event(e: ChannelEvent, host: u32) -> Event {
    Event::Plane(match e {
        ChannelEvent::BatchDeadline => PlaneEvent::Batch { host },
        ChannelEvent::Arrive => PlaneEvent::Arrive { host },
        ChannelEvent::CoreDone => PlaneEvent::Done { host },
        ChannelEvent::Decision => PlaneEvent::Decision { host },
    })
}

/// A flow's datapath for one call into its driver: the host that sends it, with the flow's own
/// datapath state borrowed beside the driver.
pub struct SimPath<'a, 'h, 'e> {
    io: &'a mut HostIo<'h>,
    env: &'a HostEnv<'e>,
    id: u32,
    dst: u32,
    cwnd: &'a mut u64,
    rate: &'a mut Rate,
    probe_requested: &'a mut bool,
    trace: &'a mut Option<Box<FlowTrace>>,
}

impl Datapath for SimPath<'_, '_, '_> {
    fn now(&self) -> Time {
        self.io.core.now
    }

    fn config(&self) -> &PlaneConfig {
        self.env.plane
    }

    fn line_rate(&self) -> Rate {
        self.io.nic.rate
    }

    fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters) {
        (self.env.plane, &mut self.io.channel.counters)
    }

    fn arm(&mut self, wake: Wake, at: Time) {
        let flow = self.id;
        match wake {
            Wake::Timer { id, gen } => self.io.core.schedule(at, Event::CcTimer { flow, id, gen }),
            Wake::Flush => self.io.core.schedule(at, Event::Plane(PlaneEvent::Flush { flow })),
        }
    }

    fn apply(&mut self, d: &Decisions) {
        apply(self.cwnd, self.rate, self.probe_requested, d, self.io.nic.rate);
        maybe_probe(self.io, self.env, self.probe_requested, self.id, self.dst);
    }

    fn ran(&mut self, cc: &dyn CongestionControl) {
        if let Some(trace) = self.trace.as_mut() {
            trace.record(self.io.core.now, &mut |out| cc.trace(out));
        }
    }

    fn send_report(&mut self, report: Fold) -> Option<Fold> {
        let (now, node) = (self.io.core.now, self.io.node);
        let message = Message { flow: self.id, report, created: now };
        let core = &mut *self.io.core;
        self.io
            .channel
            .send_report(message, now, self.env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)));
        None
    }

    fn send_decisions(&mut self, d: Decisions) {
        let (now, node) = (self.io.core.now, self.io.node);
        let core = &mut *self.io.core;
        let schedule = &mut |at, e| core.schedule(at, channel_event(e, node));
        self.io.channel.send_decisions(self.id, d, now, self.env.plane, schedule);
    }

    fn charge_core(&mut self) {
        self.io.channel.charge_core(self.io.core.now, self.env.plane);
    }
}

/// Applies decisions that reached the datapath: window, rate (capped at line rate) and probe requests.
pub fn apply(cwnd: &mut u64, rate: &mut Rate, probe_requested: &mut bool, d: &Decisions, line_rate: u64) {
    if let Some(c) = d.cwnd {
        *cwnd = c.max(1);
    }
    if let Some(r) = d.rate {
        *rate = r.clamp(1, line_rate);
    }
    if d.probe {
        *probe_requested = true;
    }
}

/// Sends the RTT probe flow `id` (to `dst`) asked for, if any.
pub fn maybe_probe(io: &mut HostIo, env: &HostEnv, requested: &mut bool, id: u32, dst: u32) {
    if !*requested {
        return;
    }
    *requested = false;
    // A probe measures the round trip the flow's data sees: it leaves first, as a control packet, but
    // waits in the switches' data queue (its echo comes back as an ACK does).
    let mut probe = env.control_packet(Kind::Probe, id, dst, 0);
    probe.queue = env.data_queue;
    probe.sent_at = io.core.now;
    io.queue_control(env, probe);
}

/// Runs `call` on flow `id`'s driver with its host as the datapath; a flow that has not started or has
/// finished has no driver, and `call` does not run (it returns the default).
pub fn drive<R: Default>(
    io: &mut HostIo,
    env: &HostEnv,
    f: &mut Flow,
    id: u32,
    call: impl FnOnce(&mut FlowDriver, &mut SimPath) -> R,
) -> R {
    let Flow { driver, cwnd, rate, probe_requested, trace, dst, .. } = f;
    let Some(driver) = driver.as_deref_mut() else { return R::default() };
    let mut dp = SimPath { io, env, id, dst: *dst, cwnd, rate, probe_requested, trace };
    call(driver, &mut dp)
}

/// Starts flow `id`'s algorithm; its start decisions take effect at once.
pub fn start(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, cc: Box<dyn CongestionControl>, info: &FlowInfo) {
    f.driver = Some(Box::default());
    drive(io, env, f, id, |d, dp| d.start(cc, info, dp));
}

/// An ACK arrived for flow `id`; `cnp` when its echo counts as a congestion notification.
pub fn on_ack(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, ack: &Ack, cnp: bool) {
    drive(io, env, f, id, |d, dp| d.on_ack(ack, cnp, dp));
}

/// Data was sent for flow `id` (only for algorithms that bind TX).
pub fn on_sent(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, sent: &Sent) {
    drive(io, env, f, id, |d, dp| d.on_sent(sent, dp));
}

/// A loss was detected for flow `id`.
pub fn on_loss(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, loss: &Loss) {
    drive(io, env, f, id, |d, dp| d.on_loss(loss, dp));
}

/// A CNP arrived for flow `id`.
pub fn on_cnp(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32) {
    drive(io, env, f, id, |d, dp| d.on_cnp(dp));
}

/// Custom feedback arrived for flow `id`.
pub fn on_feedback(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, fb: Feedback) {
    drive(io, env, f, id, |d, dp| d.on_feedback(fb, dp));
}

/// A newer sample of flow `id`'s receiving host arrived on an ACK.
pub fn on_host(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, signal: HostSignal) {
    drive(io, env, f, id, |d, dp| d.on_host(signal, dp));
}

/// An RTT probe of flow `id` came back.
pub fn on_probe(io: &mut HostIo, env: &HostEnv, f: &mut Flow, id: u32, rtt: Time) {
    drive(io, env, f, id, |d, dp| d.on_probe(rtt, dp));
}
