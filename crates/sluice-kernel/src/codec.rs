//! The messages between the BPF side and the agent (the Rust mirror of `bpf/sluice.h`), with their
//! validation: reports are parsed from untrusted ring-buffer bytes and never panic, decisions are encoded
//! for the flows' cells.

use std::fmt;

/// First word of every message: "SLK1" as a little-endian u32.
pub const MAGIC: u32 = 0x314b_4c53;
/// Message layout version; bumped with any change to `bpf/sluice.h`.
pub const VERSION: u16 = 3;
/// Raw RTT samples one report carries at most.
pub const RTT_SAMPLES: usize = 8;
/// Size of a report in bytes.
pub const REPORT_BYTES: usize = 160;
/// Size of a decision in bytes.
pub const DECISION_BYTES: usize = 40;
/// Size of a program report (`struct slk_preport`) in bytes.
pub const PROGRAM_REPORT_BYTES: usize = 336;
/// Registers a program report carries at most (`SLK_REGS`).
pub const REGISTERS: usize = 32;
/// The kind byte of a program report (`SLK_KIND_PROGRAM`).
const KIND_PROGRAM: u8 = 4;

/// Report flag: sent at once (loss, RTO or flow start).
pub const F_URGENT: u16 = 1;
/// Report flag: the watchdog runs the kernel's Reno for this flow.
pub const F_FALLBACK: u16 = 2;
/// Decision flag: `cwnd_pkts` is set.
pub const D_CWND: u16 = 1;
/// Decision flag: `pacing_bps` is set.
pub const D_RATE: u16 = 2;
/// Decision flag: the flow's datapath program (its state written before the decision) runs in place of
/// the fold; a decision without it puts the flow back on the fold.
pub const D_PROGRAM: u16 = 4;

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A flow started (its socket chose a sluice congestion control).
    Start,
    /// Signals folded since the previous report.
    Report,
    /// The flow's socket released its congestion control (closed or switched away).
    End,
}

/// A report from the BPF side: the flow's signals folded over one batch, and latest values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// What the report is about.
    pub kind: Option<Kind>,
    /// Registered name the socket chose (index into [`crate::loader::SLOTS`]).
    pub slot: u8,
    /// Flow id, unique while the pinned maps live.
    pub flow_id: u64,
    /// Agent epoch in force when the report was made.
    pub epoch: u32,
    /// Per-flow sequence number, from 1.
    pub seq: u32,
    /// Monotonic clock at submit, ns.
    pub now_ns: u64,
    /// Monotonic clock at the first folded ACK, ns (0 when none).
    pub first_ns: u64,
    /// ACKs folded.
    pub acks: u32,
    /// Packets newly acknowledged (delivered).
    pub acked_pkts: u32,
    /// Bytes newly acknowledged.
    pub acked_bytes: u64,
    /// Of them, acknowledged by ACKs echoing ECE.
    pub ece_bytes: u64,
    /// Packets acknowledged by ACKs echoing ECE.
    pub ece_pkts: u32,
    /// Loss-recovery entries (fast retransmits) in the period.
    pub losses: u32,
    /// Retransmission timeouts in the period.
    pub rtos: u32,
    /// Reordering detections in the period.
    pub reorders: u32,
    /// Maximum segment size, bytes.
    pub mss: u32,
    /// The window in force, packets.
    pub cwnd_pkts: u32,
    /// Packets in flight.
    pub in_flight_pkts: u32,
    /// Smoothed RTT, us.
    pub srtt_us: u32,
    /// Bytes acknowledged since the flow started.
    pub snd_una: u64,
    /// `snd_una` plus the bytes outstanding.
    pub snd_nxt: u64,
    /// Latest delivery-rate sample, bit/s (0 = none).
    pub delivery_bps: u64,
    /// Local port.
    pub lport: u16,
    /// Remote port.
    pub rport: u16,
    /// `F_*` bits.
    pub flags: u16,
    /// Raw RTT samples of the period, us, oldest first.
    pub rtt_us: Vec<u32>,
}

/// Why bytes from the ring buffer are not a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// Fewer bytes than a report.
    Short(usize),
    /// The first word is not [`MAGIC`].
    Magic(u32),
    /// A layout version this agent does not speak.
    Version(u16),
    /// An unknown kind byte.
    Kind(u8),
    /// More RTT samples claimed than a report holds.
    Samples(u16),
    /// Flow id 0 is never assigned.
    FlowId,
    /// A program report shorter or longer than [`PROGRAM_REPORT_BYTES`].
    ProgramLength(usize),
    /// More registers claimed than a program report holds.
    Registers(u8),
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Short(n) => write!(f, "{n} bytes, a report has {REPORT_BYTES}"),
            CodecError::Magic(m) => write!(f, "bad magic {m:#010x}"),
            CodecError::Version(v) => write!(f, "version {v}, this agent speaks {VERSION}"),
            CodecError::Kind(k) => write!(f, "unknown kind {k}"),
            CodecError::Samples(n) => write!(f, "{n} RTT samples, at most {RTT_SAMPLES}"),
            CodecError::FlowId => f.write_str("flow id 0"),
            CodecError::ProgramLength(n) => write!(f, "{n} bytes, a program report has {PROGRAM_REPORT_BYTES}"),
            CodecError::Registers(n) => write!(f, "{n} registers, a program report holds at most {REGISTERS}"),
        }
    }
}

/// Little-endian field reader over a report's bytes (lengths are checked once, up front).
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

impl Report {
    /// Parses and validates a report from ring-buffer bytes.
    pub fn parse(bytes: &[u8]) -> Result<Report, CodecError> {
        if bytes.len() < REPORT_BYTES {
            return Err(CodecError::Short(bytes.len()));
        }
        let mut r = Fields { bytes: &bytes[..REPORT_BYTES], at: 0 };
        let magic = r.u32();
        if magic != MAGIC {
            return Err(CodecError::Magic(magic));
        }
        let version = r.u16();
        if version != VERSION {
            return Err(CodecError::Version(version));
        }
        let kind = match r.u8() {
            1 => Kind::Start,
            2 => Kind::Report,
            3 => Kind::End,
            k => return Err(CodecError::Kind(k)),
        };
        let mut report = Report { kind: Some(kind), slot: r.u8(), flow_id: r.u64(), ..Report::default() };
        if report.flow_id == 0 {
            return Err(CodecError::FlowId);
        }
        report.read_body(&mut r)?;
        Ok(report)
    }

    fn read_body(&mut self, r: &mut Fields<'_>) -> Result<(), CodecError> {
        self.epoch = r.u32();
        self.seq = r.u32();
        self.now_ns = r.u64();
        self.first_ns = r.u64();
        self.acks = r.u32();
        self.acked_pkts = r.u32();
        self.acked_bytes = r.u64();
        self.ece_bytes = r.u64();
        self.ece_pkts = r.u32();
        self.losses = r.u32();
        self.rtos = r.u32();
        self.reorders = r.u32();
        self.mss = r.u32();
        self.cwnd_pkts = r.u32();
        self.in_flight_pkts = r.u32();
        self.srtt_us = r.u32();
        self.snd_una = r.u64();
        self.snd_nxt = r.u64();
        self.delivery_bps = r.u64();
        self.lport = r.u16();
        self.rport = r.u16();
        let n = r.u16();
        self.flags = r.u16();
        if n as usize > RTT_SAMPLES {
            return Err(CodecError::Samples(n));
        }
        let samples: Vec<u32> = (0..RTT_SAMPLES).map(|_| r.u32()).collect();
        self.rtt_us = samples[..n as usize].to_vec();
        Ok(())
    }

    /// Encodes the report as the BPF side lays it out (tests and fault injection).
    pub fn encode(&self) -> [u8; REPORT_BYTES] {
        let mut out = Vec::with_capacity(REPORT_BYTES);
        let kind = match self.kind {
            Some(Kind::Start) => 1u8,
            Some(Kind::Report) => 2,
            Some(Kind::End) => 3,
            None => 0,
        };
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&[kind, self.slot]);
        out.extend_from_slice(&self.flow_id.to_le_bytes());
        for v in [self.epoch, self.seq] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.now_ns, self.first_ns] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.acks, self.acked_pkts] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.acked_bytes, self.ece_bytes] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let words = [self.ece_pkts, self.losses, self.rtos, self.reorders, self.mss];
        for v in words.into_iter().chain([self.cwnd_pkts, self.in_flight_pkts, self.srtt_us]) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.snd_una, self.snd_nxt, self.delivery_bps] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let n = self.rtt_us.len().min(RTT_SAMPLES) as u16;
        for v in [self.lport, self.rport, n, self.flags] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..RTT_SAMPLES {
            out.extend_from_slice(&self.rtt_us.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        let mut bytes = [0; REPORT_BYTES];
        bytes.copy_from_slice(&out);
        bytes
    }
}

/// A flow's datapath program reported: its registers as they were when it said `(report)` or
/// `(urgent)` (the Rust mirror of `struct slk_preport`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProgramReport {
    /// Registered name the socket chose.
    pub slot: u8,
    /// Flow id.
    pub flow_id: u64,
    /// Agent epoch in force when the report was made.
    pub epoch: u32,
    /// Per-flow sequence number (shared with the flow's other reports).
    pub seq: u32,
    /// Monotonic clock at submit, ns.
    pub now_ns: u64,
    /// The agent's install number of the program that ran.
    pub install: u32,
    /// `F_*` bits: `F_URGENT` when the program said `(urgent)`, `F_FALLBACK` while the flow is on its fallback.
    pub flags: u16,
    /// The algorithm's number for the program.
    pub index: u8,
    /// Maximum segment size, bytes.
    pub mss: u32,
    /// The window in force, packets.
    pub cwnd_pkts: u32,
    /// Packets in flight.
    pub in_flight_pkts: u32,
    /// Smoothed RTT, us.
    pub srtt_us: u32,
    /// Bytes acknowledged since the flow started.
    pub snd_una: u64,
    /// `snd_una` plus the bytes outstanding.
    pub snd_nxt: u64,
    /// Local port.
    pub lport: u16,
    /// Remote port.
    pub rport: u16,
    /// Signals the program ran since its previous report.
    pub signals: u32,
    /// The program's registers, in declaration order.
    pub registers: Vec<u64>,
}

impl ProgramReport {
    /// Parses and validates a program report from ring-buffer bytes.
    pub fn parse(bytes: &[u8]) -> Result<ProgramReport, CodecError> {
        if bytes.len() != PROGRAM_REPORT_BYTES {
            return Err(CodecError::ProgramLength(bytes.len()));
        }
        let mut r = Fields { bytes, at: 0 };
        let magic = r.u32();
        if magic != MAGIC {
            return Err(CodecError::Magic(magic));
        }
        let version = r.u16();
        if version != VERSION {
            return Err(CodecError::Version(version));
        }
        let kind = r.u8();
        if kind != KIND_PROGRAM {
            return Err(CodecError::Kind(kind));
        }
        let mut p = ProgramReport { slot: r.u8(), flow_id: r.u64(), ..ProgramReport::default() };
        if p.flow_id == 0 {
            return Err(CodecError::FlowId);
        }
        p.epoch = r.u32();
        p.seq = r.u32();
        p.now_ns = r.u64();
        p.install = r.u32();
        p.flags = r.u16();
        p.index = r.u8();
        let n = r.u8();
        if n as usize > REGISTERS {
            return Err(CodecError::Registers(n));
        }
        p.mss = r.u32();
        p.cwnd_pkts = r.u32();
        p.in_flight_pkts = r.u32();
        p.srtt_us = r.u32();
        p.snd_una = r.u64();
        p.snd_nxt = r.u64();
        p.lport = r.u16();
        p.rport = r.u16();
        p.signals = r.u32();
        let registers: Vec<u64> = (0..REGISTERS).map(|_| r.u64()).collect();
        p.registers = registers[..n as usize].to_vec();
        Ok(p)
    }

    /// Encodes the report as the BPF side lays it out (tests and fault injection).
    pub fn encode(&self) -> [u8; PROGRAM_REPORT_BYTES] {
        let mut out = Vec::with_capacity(PROGRAM_REPORT_BYTES);
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&[KIND_PROGRAM, self.slot]);
        out.extend_from_slice(&self.flow_id.to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.now_ns.to_le_bytes());
        out.extend_from_slice(&self.install.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        let n = self.registers.len().min(REGISTERS);
        out.extend_from_slice(&[self.index, n as u8]);
        for v in [self.mss, self.cwnd_pkts, self.in_flight_pkts, self.srtt_us] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.snd_una.to_le_bytes());
        out.extend_from_slice(&self.snd_nxt.to_le_bytes());
        out.extend_from_slice(&self.lport.to_le_bytes());
        out.extend_from_slice(&self.rport.to_le_bytes());
        out.extend_from_slice(&self.signals.to_le_bytes());
        for i in 0..REGISTERS {
            out.extend_from_slice(&self.registers.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        let mut bytes = [0; PROGRAM_REPORT_BYTES];
        bytes.copy_from_slice(&out);
        bytes
    }
}

/// A message from the ring buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A flow started, reported folded signals, or ended.
    Report(Report),
    /// A flow's program reported.
    Program(ProgramReport),
}

impl Message {
    /// Parses and validates any message from ring-buffer bytes (its kind byte tells which).
    pub fn parse(bytes: &[u8]) -> Result<Message, CodecError> {
        if bytes.get(6) == Some(&KIND_PROGRAM) {
            ProgramReport::parse(bytes).map(Message::Program)
        } else {
            Report::parse(bytes).map(Message::Report)
        }
    }
}

/// A decision for the BPF side: the flow's window and pacing rate in force, applied once per new `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decision {
    /// `D_*` bits saying which fields are set.
    pub flags: u16,
    /// The flow.
    pub flow_id: u64,
    /// The agent's epoch.
    pub epoch: u32,
    /// Per-flow decision sequence number, from 1.
    pub seq: u32,
    /// The newest report this decision answers.
    pub report_seq: u32,
    /// Congestion window, packets.
    pub cwnd_pkts: u32,
    /// Pacing rate, bit/s.
    pub pacing_bps: u64,
}

impl Decision {
    /// The map value the BPF side reads.
    pub fn encode(&self) -> [u8; DECISION_BYTES] {
        self.encode_with(MAGIC, VERSION)
    }

    /// The map value with a chosen magic and version (fault injection in tests).
    pub fn encode_with(&self, magic: u32, version: u16) -> [u8; DECISION_BYTES] {
        let mut out = [0; DECISION_BYTES];
        out[0..4].copy_from_slice(&magic.to_le_bytes());
        out[4..6].copy_from_slice(&version.to_le_bytes());
        out[6..8].copy_from_slice(&self.flags.to_le_bytes());
        out[8..16].copy_from_slice(&self.flow_id.to_le_bytes());
        out[16..20].copy_from_slice(&self.epoch.to_le_bytes());
        out[20..24].copy_from_slice(&self.seq.to_le_bytes());
        out[24..28].copy_from_slice(&self.report_seq.to_le_bytes());
        out[28..32].copy_from_slice(&self.cwnd_pkts.to_le_bytes());
        out[32..40].copy_from_slice(&self.pacing_bps.to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        Report {
            kind: Some(Kind::Report),
            slot: 2,
            flow_id: 7,
            epoch: 3,
            seq: 11,
            now_ns: 1_000,
            first_ns: 900,
            acks: 16,
            acked_pkts: 32,
            acked_bytes: 46_336,
            ece_bytes: 1448,
            ece_pkts: 1,
            losses: 1,
            rtos: 0,
            reorders: 0,
            mss: 1448,
            cwnd_pkts: 40,
            in_flight_pkts: 38,
            srtt_us: 120,
            snd_una: 1 << 33,
            snd_nxt: (1 << 33) + 55_000,
            delivery_bps: 940_000_000,
            lport: 40_000,
            rport: 5201,
            flags: F_URGENT,
            rtt_us: vec![110, 130, 125],
        }
    }

    #[test]
    fn reports_round_trip() {
        let r = sample();
        assert_eq!(Report::parse(&r.encode()), Ok(r));
    }

    #[test]
    fn malformed_reports_are_rejected_without_panicking() {
        let good = sample().encode();
        assert_eq!(Report::parse(&good[..100]), Err(CodecError::Short(100)));
        let mut bad = good;
        bad[0] ^= 1;
        assert!(matches!(Report::parse(&bad), Err(CodecError::Magic(_))));
        let mut bad = good;
        bad[4] = 9;
        assert_eq!(Report::parse(&bad), Err(CodecError::Version(9)));
        let mut bad = good;
        bad[6] = 42;
        assert_eq!(Report::parse(&bad), Err(CodecError::Kind(42)));
        let mut bad = good;
        bad[124] = 200;
        assert_eq!(Report::parse(&bad), Err(CodecError::Samples(200)));
        let mut bad = good;
        bad[8..16].fill(0);
        assert_eq!(Report::parse(&bad), Err(CodecError::FlowId));
        for len in 0..REPORT_BYTES {
            let _ = Report::parse(&good[..len]);
        }
    }

    fn program_sample() -> ProgramReport {
        ProgramReport {
            slot: 4,
            flow_id: 9 << 16 | 3,
            epoch: 2,
            seq: 12,
            now_ns: 5_000,
            install: 7,
            flags: F_URGENT,
            index: 1,
            mss: 1448,
            cwnd_pkts: 30,
            in_flight_pkts: 28,
            srtt_us: 90,
            snd_una: 1 << 34,
            snd_nxt: (1 << 34) + 40_000,
            lport: 40_001,
            rport: 5301,
            signals: 3,
            registers: (0..22).map(|i| i * 1000 + 1).collect(),
        }
    }

    #[test]
    fn program_reports_round_trip_and_are_told_apart_by_kind() {
        let p = program_sample();
        let bytes = p.encode();
        assert_eq!(ProgramReport::parse(&bytes), Ok(p.clone()));
        assert_eq!(Message::parse(&bytes), Ok(Message::Program(p)));
        assert_eq!(Message::parse(&sample().encode()), Ok(Message::Report(sample())));
    }

    #[test]
    fn malformed_program_reports_are_rejected_without_panicking() {
        let good = program_sample().encode();
        assert_eq!(ProgramReport::parse(&good[..200]), Err(CodecError::ProgramLength(200)));
        let mut bad = good;
        bad[39] = 33;
        assert_eq!(Message::parse(&bad), Err(CodecError::Registers(33)));
        assert_eq!(
            CodecError::Registers(33).to_string(),
            "33 registers, a program report holds at most 32",
            "the error names what is wrong"
        );
        let mut bad = good;
        bad[8..16].fill(0);
        assert_eq!(Message::parse(&bad), Err(CodecError::FlowId));
        let mut bad = good;
        bad[4] = 2;
        assert_eq!(Message::parse(&bad), Err(CodecError::Version(2)));
        for len in 0..PROGRAM_REPORT_BYTES {
            let _ = Message::parse(&good[..len]);
        }
    }

    #[test]
    fn decisions_lay_out_like_the_c_struct() {
        let d = Decision {
            flags: D_CWND | D_RATE,
            flow_id: 9,
            epoch: 2,
            seq: 5,
            report_seq: 4,
            cwnd_pkts: 20,
            pacing_bps: 1 << 40,
        };
        let b = d.encode();
        assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), MAGIC);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 9);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 20);
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 1 << 40);
    }
}
