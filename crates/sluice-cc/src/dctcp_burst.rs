//! `dctcp_burst`: DCTCP whose reports come from a datapath program ([`crate::program`]) that no fixed
//! reporting policy can express: once per window of data, as CCP's DCTCP reports (Narayan et al.,
//! HotNets 2017, section 2.4: a fold over per-packet measurements), and at once when the ECN-marked
//! fraction of the last `n_acks` ACKs rises to `threshold_percent`.
//!
//! The program keeps the ECE bits of the last `n_acks` ACKs as a shift register and counts them with
//! `bits`; crossing the threshold upward is an urgent report (falling below it re-arms the trigger,
//! silently). The window's acknowledged and marked bytes are folded in registers and reported when the
//! ACK point passes the window's end.
//!
//! The algorithm on a report, with a Reno window (RFC 5681, RFC 6582) for growth and loss recovery:
//! - a loss reduces as Reno does (and ends CWR);
//! - a crossing cuts the window at once by `fraction / 2`, where `fraction` is the marked share of the
//!   last `n_acks` ACKs, unless the window was already cut this round trip (CWR until the ACK point
//!   passes the `snd_nxt` of the cut; RFC 3168 section 6.1.2);
//! - a window report updates `alpha = (1 - g) alpha + g F` with `F` the window's marked fraction (RFC 8257
//!   section 3.3), then cuts by `alpha / 2` if the window saw a mark and no cut happened in it, or else
//!   grows the window by the window's acknowledged bytes as Reno does.
//!
//! DCTCP (`dctcp`) cuts on the first echoed mark of a window by the `alpha` of earlier windows, which lags
//! a sudden burst of marks by a round trip; here a burst that marks at least `threshold_percent` of
//! recent ACKs is met by a cut as deep as the burst, within the round trip. The per-ACK fixed engines
//! cannot express this trigger: it needs state across reports (the last `n_acks` marks) that the
//! datapath keeps and tests on every ACK.
//!
//! The program is a parameter (`program`, text): a scenario may replace it, as long as it declares the
//! registers the algorithm reads ([`REPORT_REGISTERS`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_core::Rate;

use crate::api::{Ack, CongestionControl, Ctx, Events, FlowInfo, Loss, Needs};
use crate::program::{loss_kind_of, Install, Program, ProgramReport};
use crate::registry::{merge_params, Algorithm, ConfigFactory, Control, Factory, ParamError};
use crate::reno::{RenoWindow, WindowParams};

/// The bundled program. Control registers `n`, `mask` and `percent` are set from the parameters when
/// the program is installed.
pub const PROGRAM: &str = "\
(def (Report
       (acked 0) (marked 0) (acks 0)
       (volatile w_acked 0) (volatile w_marked 0) (volatile w_acks 0) (volatile window 0)
       (snd_una 0) (snd_nxt 0) (window_end 0)
       (history 0) (fill 0) (recent 0) (above 0) (volatile crossed 0)
       (volatile losses 0) (volatile loss_kind 0) (volatile loss_in_flight 0) (volatile loss_snd_nxt 0))
     (Control (n 16) (mask 0xffff) (percent 50)))
; a loss: reported at once
(when Event.loss
  (:= Report.loss_kind (if Report.losses Report.loss_kind Loss.kind))
  (:= Report.losses (+ Report.losses Loss.count))
  (:= Report.loss_in_flight Loss.in_flight)
  (:= Report.loss_snd_nxt Loss.snd_nxt)
  (urgent))
; other signals than ACKs change nothing
(when (not Event.ack))
; every ACK: the window's sums, the ACK point, and the ECE bits of the last n ACKs
(when true
  (:= Report.acked (+ Report.acked Ack.bytes_acked))
  (:= Report.marked (+ Report.marked Ack.ecn_bytes))
  (:= Report.acks (+ Report.acks Ack.acks))
  (:= Report.snd_una Ack.snd_una)
  (:= Report.snd_nxt Ack.snd_nxt)
  (:= Report.history (& (| (<< Report.history 1) Ack.ecn) Control.mask))
  (:= Report.fill (min (+ Report.fill 1) Control.n))
  (:= Report.recent (bits Report.history))
  (fallthrough))
; the marked share of the last n ACKs rises to the threshold: report at once
(when (and (not Report.above) (>= Report.fill Control.n) (>= (* Report.recent 100) (* Control.n Control.percent)))
  (:= Report.above 1)
  (:= Report.crossed 1)
  (urgent))
; it falls below the threshold again: the next rise reports
(when (and Report.above (< (* Report.recent 100) (* Control.n Control.percent)))
  (:= Report.above 0)
  (fallthrough))
; the ACK point passed the window's end: report the window's sums (RFC 8257's alpha update)
(when (and (> Report.acked 0) (>= Report.snd_una Report.window_end))
  (:= Report.w_acked Report.acked)
  (:= Report.w_marked Report.marked)
  (:= Report.w_acks Report.acks)
  (:= Report.acked 0)
  (:= Report.marked 0)
  (:= Report.acks 0)
  (:= Report.window 1)
  (:= Report.window_end Report.snd_nxt)
  (report))
";

/// The registers the algorithm reads from its program's reports, in the order [`Registers`] keeps them.
pub const REPORT_REGISTERS: [&str; 12] = [
    "w_acked",
    "w_marked",
    "w_acks",
    "window",
    "snd_una",
    "snd_nxt",
    "recent",
    "crossed",
    "losses",
    "loss_kind",
    "loss_in_flight",
    "loss_snd_nxt",
];

/// `dctcp_burst` parameters (`[cc.params]` of a scenario with `cc.algorithm = "dctcp_burst"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpBurstConfig {
    /// EWMA gain `g` of the per-window marked fraction, in (0, 1]. Default 1/16: RFC 8257 section 3.3.
    pub g: f64,
    /// Initial `alpha`, in [0, 1]. Default 1: RFC 8257 section 3.3.
    pub init_alpha: f64,
    /// ACKs whose ECE bits the burst trigger looks at, 1 to 64 (one 64-bit register).
    /// Default 16: about one window of a 25 Gbit/s, 10 us path at 1500-byte packets with delayed ACKs.
    pub n_acks: u32,
    /// The trigger fires when at least this percentage of the last `n_acks` ACKs echoed a mark, 1 to
    /// 100. Default 50: half of a window marked is a queue well past DCTCP's marking threshold.
    pub threshold_percent: u32,
    /// Initial congestion window in full-sized segments (at least 1). Default 10: RFC 6928.
    pub init_cwnd_packets: u32,
    /// Floor of the window after a cut and of `ssthresh` after a loss, in segments (at least 1).
    /// Default 2: RFC 5681 eq. 4.
    pub min_cwnd_packets: u32,
    /// The datapath program, as text ([`PROGRAM`] when absent); it must declare [`REPORT_REGISTERS`],
    /// and its control registers `n`, `mask` and `percent`, if declared, are set from the parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

impl Default for DctcpBurstConfig {
    fn default() -> Self {
        DctcpBurstConfig {
            g: 1.0 / 16.0,
            init_alpha: 1.0,
            n_acks: 16,
            threshold_percent: 50,
            init_cwnd_packets: 10,
            min_cwnd_packets: 2,
            program: None,
        }
    }
}

impl DctcpBurstConfig {
    /// Overlays `[cc.params]` on the defaults and checks the ranges and the program.
    pub fn resolve(params: &toml::Table) -> Result<DctcpBurstConfig, ParamError> {
        let config = merge_params(&DctcpBurstConfig::default(), params)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the ranges and that the program parses and declares what the algorithm reads.
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key: &str, message: String| Err(ParamError { key: Some(key.into()), message });
        if !(self.g > 0.0 && self.g <= 1.0) {
            return err("g", "must be in (0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.init_alpha) {
            return err("init_alpha", "must be in [0, 1]".into());
        }
        if !(1..=64).contains(&self.n_acks) {
            return err("n_acks", "must be 1 to 64 (the ACKs fit one 64-bit register)".into());
        }
        if !(1..=100).contains(&self.threshold_percent) {
            return err("threshold_percent", "must be 1 to 100".into());
        }
        if self.init_cwnd_packets == 0 {
            return err("init_cwnd_packets", "must be at least 1".into());
        }
        if self.min_cwnd_packets == 0 {
            return err("min_cwnd_packets", "must be at least 1".into());
        }
        self.compile().map(drop)
    }

    /// The program, parsed, with the indices of the registers the algorithm reads.
    pub fn compile(&self) -> Result<(Arc<Program>, Registers), ParamError> {
        let text = self.program.as_deref().unwrap_or(PROGRAM);
        let err = |message: String| ParamError { key: Some("program".into()), message };
        let program = Program::parse(text).map_err(|e| err(e.to_string()))?;
        let mut at = [0u8; REPORT_REGISTERS.len()];
        for (slot, name) in at.iter_mut().zip(REPORT_REGISTERS) {
            *slot = program.register(name).ok_or_else(|| {
                err(format!("the program does not declare register `{name}`, which dctcp_burst reads"))
            })?;
        }
        let control = |name: &str| program.register(name);
        let registers = Registers { at, n: control("n"), mask: control("mask"), percent: control("percent") };
        Ok((Arc::new(program), registers))
    }

    fn window(&self) -> WindowParams {
        WindowParams {
            init_cwnd_packets: self.init_cwnd_packets,
            init_ssthresh_packets: None,
            min_cwnd_packets: self.min_cwnd_packets,
            abc_limit_packets: 1,
        }
    }
}

/// Where the algorithm finds what it reads in its program's registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registers {
    /// [`REPORT_REGISTERS`], in order.
    at: [u8; REPORT_REGISTERS.len()],
    n: Option<u8>,
    mask: Option<u8>,
    percent: Option<u8>,
}

/// The registry entry.
pub const ALGORITHM: Algorithm = Algorithm {
    name: "dctcp_burst",
    summary: "DCTCP on a datapath program: alpha per window, an at-once cut when the ECN share of the last N ACKs crosses a threshold",
    control: Control::Window,
    needs: Needs {
        ecn: true,
        program: true,
        ..Needs::NOTHING
    },
    build,
};

/// The resolved config with its program compiled once for every flow (serialized as the config).
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
struct Compiled {
    config: DctcpBurstConfig,
    #[serde(skip)]
    program: Arc<Program>,
    #[serde(skip)]
    registers: Registers,
}

fn build(params: &toml::Table, _line_rate: Rate) -> Result<Arc<dyn Factory>, ParamError> {
    let config = DctcpBurstConfig::resolve(params)?;
    let (program, registers) = config.compile()?;
    Ok(Arc::new(ConfigFactory {
        config: Compiled { config, program, registers },
        make: |c, _| Box::new(DctcpBurst::with_program(c.config.clone(), Arc::clone(&c.program), c.registers)),
        cnp_interval: None,
    }))
}

/// The controller of one flow. Window quantities are bytes.
#[derive(Debug, Clone)]
pub struct DctcpBurst {
    config: DctcpBurstConfig,
    program: Arc<Program>,
    registers: Registers,
    window: RenoWindow,
    alpha: f64,
    /// `snd_nxt` at the last cut while in CWR.
    cwr_end: Option<u64>,
    /// Cuts made by the burst trigger.
    burst_cuts: u64,
    /// Cuts made at a window's end.
    window_cuts: u64,
}

impl DctcpBurst {
    /// A controller with `config`, its program compiled from it. Panics on a config that
    /// [`DctcpBurstConfig::validate`] refuses.
    pub fn new(config: DctcpBurstConfig) -> DctcpBurst {
        let (program, registers) = config.compile().expect("a validated config");
        DctcpBurst::with_program(config, program, registers)
    }

    fn with_program(config: DctcpBurstConfig, program: Arc<Program>, registers: Registers) -> DctcpBurst {
        let window = RenoWindow::new(config.window(), 1);
        let alpha = config.init_alpha;
        DctcpBurst { config, program, registers, window, alpha, cwr_end: None, burst_cuts: 0, window_cuts: 0 }
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.window.cwnd()
    }

    /// The per-window marked-fraction estimate.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Cuts made by the burst trigger and at windows' ends.
    pub fn cuts(&self) -> (u64, u64) {
        (self.burst_cuts, self.window_cuts)
    }

    /// The install of the program with the parameters in its control registers.
    pub fn install(&self) -> Install {
        let mut install = Install::program(0);
        let n = self.config.n_acks as u64;
        let mask = if n >= 64 { u64::MAX } else { (1 << n) - 1 };
        for (reg, value) in [
            (self.registers.n, n),
            (self.registers.mask, mask),
            (self.registers.percent, self.config.threshold_percent as u64),
        ] {
            if let Some(reg) = reg {
                install = install.with(reg, value);
            }
        }
        install
    }

    /// Cuts the window by `fraction / 2` and enters CWR until `snd_nxt` is acknowledged.
    fn cut(&mut self, fraction: f64, snd_nxt: u64) {
        let cwnd = self.window.cwnd();
        let reduction = (cwnd as f64 * fraction / 2.0) as u64;
        let cwnd = cwnd.saturating_sub(reduction).max(self.window.min_cwnd());
        self.window.set_cwnd(cwnd);
        self.window.set_ssthresh(cwnd);
        self.cwr_end = Some(snd_nxt);
    }

    fn may_cut(&self) -> bool {
        self.cwr_end.is_none() && !self.window.in_loss_window()
    }
}

impl CongestionControl for DctcpBurst {
    fn name(&self) -> &'static str {
        "dctcp_burst"
    }

    fn events(&self) -> Events {
        Events::ACK | Events::LOSS
    }

    fn on_start(&mut self, flow: &FlowInfo, ctx: &mut Ctx) {
        let (program, registers) = (Arc::clone(&self.program), self.registers);
        *self = DctcpBurst::with_program(self.config.clone(), program, registers);
        self.window = RenoWindow::new(self.config.window(), flow.mss);
        ctx.set_cwnd(self.window.cwnd());
        ctx.install(self.install());
    }

    fn programs(&self) -> Vec<Arc<Program>> {
        vec![Arc::clone(&self.program)]
    }

    fn on_report(&mut self, report: &ProgramReport<'_>, ctx: &mut Ctx) {
        let at = self.registers.at;
        let r = |i: usize| report.get(at[i]);
        let [w_acked, w_marked, w_acks, window, snd_una, snd_nxt, recent, crossed, losses, kind, in_flight, loss_nxt] =
            std::array::from_fn(r);
        let before = self.window.cwnd();
        if losses > 0 {
            let loss = Loss { kind: loss_kind_of(kind), count: losses as u32, in_flight, snd_nxt: loss_nxt };
            if let Some(flight) = self.window.loss_flight(&loss) {
                self.cwr_end = None;
                self.window.reduce(loss.kind, flight / 2);
            }
        }
        if snd_nxt > 0 || snd_una > 0 {
            let may_grow = self.window.on_ack(&Ack::single(0, 0, false, None, snd_una, snd_nxt, 0, ctx.now()));
            if self.cwr_end.is_some_and(|end| snd_una >= end) {
                self.cwr_end = None;
            }
            if crossed != 0 && self.may_cut() {
                let fraction = recent as f64 / self.config.n_acks as f64;
                self.cut(fraction.min(1.0), snd_nxt);
                self.burst_cuts += 1;
            }
            if window != 0 && w_acked > 0 {
                let g = self.config.g;
                let fraction = w_marked as f64 / w_acked as f64;
                self.alpha = ((1.0 - g) * self.alpha + g * fraction).clamp(0.0, 1.0);
                if w_marked > 0 && self.may_cut() {
                    self.cut(self.alpha, snd_nxt);
                    self.window_cuts += 1;
                } else if self.cwr_end.is_none() && may_grow {
                    self.window.grow(w_acked, w_acks as u32);
                }
            }
        }
        if self.window.cwnd() != before {
            ctx.set_cwnd(self.window.cwnd());
        }
    }

    /// `cwnd` and `ssthresh` in bytes, `alpha`, and the cuts of the burst trigger and of windows' ends.
    fn trace(&self, out: &mut dyn FnMut(&'static str, f64)) {
        out("cwnd", self.window.cwnd() as f64);
        out("ssthresh", self.window.ssthresh() as f64);
        out("alpha", self.alpha);
        out("burst_cuts", self.burst_cuts as f64);
        out("window_cuts", self.window_cuts as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Input, Machine};

    fn flow() -> FlowInfo {
        FlowInfo {
            flow_id: 1,
            mss: 1000,
            header_bytes: 48,
            line_rate: 25_000_000_000,
            base_rtt: 10_000_000,
            hops: 2,
            size: None,
            start: 0,
        }
    }

    /// The algorithm with its program installed, fed ACKs the way the plane's driver does.
    struct Flow {
        cc: DctcpBurst,
        machine: Machine,
        urgent: u32,
        reports: u32,
        snd_nxt: u64,
        snd_una: u64,
    }

    impl Flow {
        fn new(config: DctcpBurstConfig) -> Flow {
            let mut cc = DctcpBurst::new(config);
            let mut ctx = Ctx::new(0);
            cc.on_start(&flow(), &mut ctx);
            let install = ctx.decisions().install.unwrap();
            let machine = Machine::new(cc.programs()[0].clone(), 0, install.values());
            Flow { cc, machine, urgent: 0, reports: 0, snd_nxt: 100_000, snd_una: 0 }
        }

        /// One ACK of 1000 bytes, marked or not; returns whether it made a report.
        fn ack(&mut self, ecn: bool) -> bool {
            self.snd_una += 1000;
            self.snd_nxt += 1000;
            let ack = Ack::single(1000, 1, ecn, Some(10_000_000), self.snd_una, self.snd_nxt, 50_000, 0);
            let outcome = self.machine.run(&Input::at(0, &flow()).ack(&ack, false));
            if outcome.report {
                let values = self.machine.registers().to_vec();
                self.machine.reset_volatile();
                let report = ProgramReport { program: 0, registers: &values, urgent: outcome.urgent };
                self.cc.on_report(&report, &mut Ctx::new(0));
                self.reports += 1;
                self.urgent += outcome.urgent as u32;
            }
            outcome.report
        }
    }

    #[test]
    fn a_burst_of_marks_cuts_within_the_round_trip() {
        let config = DctcpBurstConfig { n_acks: 8, threshold_percent: 50, init_alpha: 0.0, ..Default::default() };
        let mut f = Flow::new(config);
        // The first ACK passes window_end 0: one window report, then none until snd_una passes 101000.
        assert!(f.ack(false));
        for _ in 0..20 {
            f.ack(false);
        }
        let cwnd = f.cc.cwnd();
        assert_eq!(f.urgent, 0);
        // 3 marks in the last 8: under 50%; the 4th crosses it: an urgent report and a cut of 4/8 / 2.
        for i in 0..3 {
            assert!(!f.ack(i % 2 == 0) || f.urgent == 0);
        }
        assert_eq!(f.urgent, 0, "2 of 8 marked");
        for _ in 0..2 {
            f.ack(true);
        }
        assert_eq!(f.urgent, 1, "4 of the last 8 marked");
        assert_eq!(f.cc.cuts(), (1, 0));
        assert_eq!(f.cc.cwnd(), cwnd - cwnd / 4);
        // Still above: no further urgent report while marks go on.
        for _ in 0..4 {
            f.ack(true);
        }
        assert_eq!(f.urgent, 1);
        // Below again, then above again: the trigger re-arms; CWR still holds the second cut back.
        for _ in 0..8 {
            f.ack(false);
        }
        for _ in 0..4 {
            f.ack(true);
        }
        assert_eq!(f.urgent, 2);
        assert_eq!(f.cc.cuts().0, 1, "one cut per round trip");
    }

    #[test]
    fn dctcp_cuts_by_past_windows_where_the_trigger_cuts_by_the_burst() {
        // After a quiet window alpha is near 0: DCTCP's cut on the burst's first mark takes almost
        // nothing and holds the window for the round trip (CWR); the trigger cuts by the burst's share.
        let config = crate::dctcp::DctcpConfig { init_alpha: 0.0, ..Default::default() };
        let mut dctcp = crate::dctcp::Dctcp::new(config);
        dctcp.on_start(&flow(), &mut Ctx::new(0));
        let (mut una, mut nxt, mut before) = (0, 100_000, 0);
        for i in 0..30 {
            (una, nxt) = (una + 1000, nxt + 1000);
            if i == 26 {
                before = dctcp.cwnd();
            }
            dctcp.on_ack(&Ack::single(1000, 1, i >= 26, Some(1), una, nxt, 50_000, 0), &mut Ctx::new(0));
        }
        assert!(dctcp.in_cwr());
        assert_eq!(dctcp.cwnd(), before, "a cut by alpha = 0");
        let mut f = Flow::new(DctcpBurstConfig { n_acks: 8, init_alpha: 0.0, ..Default::default() });
        for i in 0..30 {
            if i == 26 {
                before = f.cc.cwnd();
            }
            f.ack(i >= 26);
        }
        assert_eq!(f.cc.cuts(), (1, 0));
        assert_eq!(f.cc.cwnd(), before - before / 4, "a cut by 4 of 8 marked, halved");
    }

    #[test]
    fn a_replacement_program_must_declare_what_the_algorithm_reads() {
        let text = "(def (Report (w_acked 0))) (when true (report))";
        let e = DctcpBurstConfig { program: Some(text.into()), ..Default::default() }.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "parameter `program`: the program does not declare register `w_marked`, which dctcp_burst reads"
        );
        let e = DctcpBurstConfig { program: Some("(def) (when (+ 1) (report))".into()), ..Default::default() }
            .validate()
            .unwrap_err();
        assert_eq!(e.to_string(), "parameter `program`: 1:13: `+` takes at least 2 operands, found 1");
        let bad = DctcpBurstConfig { n_acks: 65, ..Default::default() }.validate().unwrap_err();
        assert_eq!(bad.key.as_deref(), Some("n_acks"));
    }
}
