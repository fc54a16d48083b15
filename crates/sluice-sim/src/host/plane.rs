//! The simulator's side of the CC plane: each flow's [`FlowDriver`] (fold, trigger, filters, timers,
//! the algorithm) runs with its host as the datapath (`SimPath`). In native mode due reports reach the
//! algorithm at once; in offload mode they cross the modelled channel (batching, latency, ring, plane
//! core), one [`HostChannel`] per host, and decisions come back after the latency.

use sluice_cc::{Ack, CongestionControl, Decisions, Feedback, FlowInfo, HostSignal, Loss, Sent};
use sluice_core::{Rate, Time};
use sluice_plane::{ChannelEvent, Datapath, FlowDriver, Fold, HostChannel, Message, PlaneConfig, PlaneCounters, Wake};

use crate::engine::{Core, Event, PlaneEvent};
use crate::host::{Host, HostEnv};
use crate::transport::flow::{Flow, FlowTrace};

/// A host's plane: its end of the offload channel.
pub type HostPlane = HostChannel;

/// The simulator's event for `host`'s channel step `e`.
fn channel_event(e: ChannelEvent, host: u32) -> Event {
    match e {
        ChannelEvent::BatchDeadline => Event::Plane(PlaneEvent::Batch { host }),
        ChannelEvent::Arrive => Event::Plane(PlaneEvent::Arrive { host }),
        ChannelEvent::CoreDone => Event::Plane(PlaneEvent::Done { host }),
        ChannelEvent::Decision => Event::Plane(PlaneEvent::Decision { host }),
    }
}

/// A flow's datapath for one call into its driver: the host that sends it, with the flow's own
/// datapath state borrowed beside the driver.
pub(crate) struct SimPath<'a, 'e> {
    host: &'a mut Host,
    core: &'a mut Core,
    env: &'a HostEnv<'e>,
    id: u32,
    dst: u32,
    cwnd: &'a mut u64,
    rate: &'a mut Rate,
    probe_requested: &'a mut bool,
    trace: &'a mut Option<Box<FlowTrace>>,
}

impl Datapath for SimPath<'_, '_> {
    fn now(&self) -> Time {
        self.core.now
    }

    fn config(&self) -> &PlaneConfig {
        self.env.plane
    }

    fn line_rate(&self) -> Rate {
        self.host.nic.rate
    }

    fn plane(&mut self) -> (&PlaneConfig, &mut PlaneCounters) {
        (self.env.plane, &mut self.host.plane.counters)
    }

    fn arm(&mut self, wake: Wake, at: Time) {
        let flow = self.id;
        match wake {
            Wake::Timer { id, gen } => self.core.schedule(at, Event::CcTimer { flow, id, gen }),
            Wake::Flush => self.core.schedule(at, Event::Plane(PlaneEvent::Flush { flow })),
        }
    }

    fn apply(&mut self, d: &Decisions) {
        apply(self.cwnd, self.rate, self.probe_requested, d, self.host.nic.rate);
        self.host.maybe_probe(self.core, self.env, self.probe_requested, self.id, self.dst);
    }

    fn ran(&mut self, cc: &dyn CongestionControl) {
        if let Some(trace) = self.trace.as_mut() {
            trace.record(self.core.now, &mut |out| cc.trace(out));
        }
    }

    fn send_report(&mut self, report: Fold) -> Option<Fold> {
        let (now, node) = (self.core.now, self.host.node);
        let message = Message { flow: self.id, report, created: now };
        let core = &mut *self.core;
        self.host
            .plane
            .send_report(message, now, self.env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)));
        None
    }

    fn send_decisions(&mut self, d: Decisions) {
        let (now, node) = (self.core.now, self.host.node);
        let core = &mut *self.core;
        let schedule = &mut |at, e| core.schedule(at, channel_event(e, node));
        self.host.plane.send_decisions(self.id, d, now, self.env.plane, schedule);
    }

    fn charge_core(&mut self) {
        self.host.plane.charge_core(self.core.now, self.env.plane);
    }
}

/// Applies decisions that reached the datapath: window, rate (capped at line rate) and probe requests.
fn apply(cwnd: &mut u64, rate: &mut Rate, probe_requested: &mut bool, d: &Decisions, line_rate: u64) {
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

impl Host {
    /// Runs `call` on flow `id`'s driver with this host as its datapath.
    fn drive<R>(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        f: &mut Flow,
        id: u32,
        call: impl FnOnce(&mut FlowDriver, &mut SimPath) -> R,
    ) -> R {
        let Flow { driver, cwnd, rate, probe_requested, trace, dst, .. } = f;
        let mut dp = SimPath { host: self, core, env, id, dst: *dst, cwnd, rate, probe_requested, trace };
        call(driver, &mut dp)
    }

    /// Starts flow `id`'s algorithm; its start decisions take effect at once.
    pub(crate) fn start_cc(
        &mut self,
        core: &mut Core,
        env: &HostEnv,
        f: &mut Flow,
        id: u32,
        cc: Box<dyn CongestionControl>,
        info: &FlowInfo,
    ) {
        self.drive(core, env, f, id, |d, dp| d.start(cc, info, dp));
    }

    /// An ACK arrived for flow `id`; `cnp` when its echo counts as a congestion notification.
    pub(crate) fn signal_ack(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, ack: &Ack, cnp: bool) {
        self.drive(core, env, f, id, |d, dp| d.on_ack(ack, cnp, dp));
    }

    /// Data was sent for flow `id` (only for algorithms that bind TX).
    pub(crate) fn signal_sent(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, sent: &Sent) {
        self.drive(core, env, f, id, |d, dp| d.on_sent(sent, dp));
    }

    /// A loss was detected for flow `id`.
    pub(crate) fn signal_loss(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, loss: &Loss) {
        self.drive(core, env, f, id, |d, dp| d.on_loss(loss, dp));
    }

    /// A CNP arrived for flow `id`.
    pub(crate) fn signal_cnp(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32) {
        self.drive(core, env, f, id, |d, dp| d.on_cnp(dp));
    }

    /// Custom feedback arrived for flow `id`.
    pub fn signal_feedback(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, fb: Feedback) {
        self.drive(core, env, f, id, |d, dp| d.on_feedback(fb, dp));
    }

    /// A host congestion signal was sampled for flow `id` (host models call this).
    pub fn signal_host(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, signal: HostSignal) {
        self.drive(core, env, f, id, |d, dp| d.on_host(signal, dp));
    }

    /// An RTT probe of flow `id` came back.
    pub(crate) fn signal_probe(&mut self, core: &mut Core, env: &HostEnv, f: &mut Flow, id: u32, rtt: Time) {
        self.drive(core, env, f, id, |d, dp| d.on_probe(rtt, dp));
    }

    /// A CC timer of flow `id` fired (armed as generation `gen`).
    pub fn on_cc_timer(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32, timer: u8, gen: u32) {
        let f = &mut flows[id as usize];
        if self.drive(core, env, f, id, |d, dp| d.on_timer(timer, gen, dp)) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// A flow's fold deadline passed.
    pub fn on_plane_flush(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow], id: u32) {
        let f = &mut flows[id as usize];
        if self.drive(core, env, f, id, |d, dp| d.on_flush(dp)) {
            self.after_decisions(core, env, flows, id);
        }
    }

    /// The batcher's deadline passed.
    pub fn on_plane_batch(&mut self, core: &mut Core, env: &HostEnv) {
        let node = self.node;
        self.plane.on_batch_deadline(core.now, env.plane, &mut |at, e| core.schedule(at, channel_event(e, node)));
    }

    /// A transfer reached the plane.
    pub fn on_plane_arrive(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
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
    pub fn on_plane_done(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        if let Some(message) = self.plane.on_core_done() {
            let f = &mut flows[message.flow as usize];
            if f.finish.is_none() {
                self.drive(core, env, f, message.flow, |d, dp| d.deliver(&message.report, dp));
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
    pub fn on_decision(&mut self, core: &mut Core, env: &HostEnv, flows: &mut [Flow]) {
        let Some((id, d)) = self.plane.take_decision() else { return };
        let f = &mut flows[id as usize];
        if f.finish.is_some() {
            return;
        }
        apply(&mut f.cwnd, &mut f.rate, &mut f.probe_requested, &d, self.nic.rate);
        self.maybe_probe(core, env, &mut f.probe_requested, id, f.dst);
        self.after_decisions(core, env, flows, id);
    }
}
