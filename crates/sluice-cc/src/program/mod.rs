//! Datapath programs: a small fold over per-signal fields with conditions that decide when to report
//! (CCP's control programs and fold functions; Narayan et al., "The Case for Moving Congestion Control
//! Out of the Datapath", HotNets 2017, sections 2.2 and 2.4: `Measure`, `Report`, urgent events and
//! `Install`).
//!
//! An algorithm declares programs ([`crate::CongestionControl::programs`]) and installs one of them at
//! run time ([`crate::Ctx::install`]). The datapath runs the installed program on every signal (ACK,
//! loss, sent data, CNP, feedback, probe, host signal, and the program's own wake): registers are
//! updated by the clauses whose conditions hold, and a `(report)` or `(urgent)` statement hands the
//! registers to the algorithm ([`crate::CongestionControl::on_report`]).
//!
//! One representation runs everywhere: a [`Program`] is a verified list of clauses over a postfix
//! bytecode ([`Op`]) with at most [`MAX_OPS`] instructions, [`MAX_REGISTERS`] registers and an operand
//! stack of at most [`MAX_STACK`] entries. There are no jumps: each instruction runs at most once per
//! signal, so a program's cost per signal is bounded by its length. Arithmetic is on `u64`, saturating;
//! division and remainder by zero give 0; shifts by 64 or more give 0. Values are the datapath's units:
//! times in picoseconds, rates in bit/s, sizes in bytes.
//!
//! The text form ([`Program::parse`]) is close to CCP's DSL:
//!
//! ```
//! let program = sluice_cc::program::Program::parse(
//!     "(def (Report (volatile acked 0) (volatile marked 0)))
//!      (when Event.ack
//!        (:= Report.acked (+ Report.acked Ack.bytes_acked))
//!        (:= Report.marked (+ Report.marked Ack.ecn_bytes))
//!        (fallthrough))
//!      (when (>= Report.acked 64000) (report))",
//! )
//! .unwrap();
//! assert_eq!(program.register("marked"), Some(1));
//! ```
//!
//! See `docs/programs.md` for the language.

mod exec;
pub mod library;
mod parse;

use std::fmt;

pub use exec::{loss_kind_code, loss_kind_of, Input, Machine, Outcome};

/// Most registers (report and control together) one program declares.
pub const MAX_REGISTERS: usize = 32;
/// Most bytecode instructions in one program (conditions, assignments and wakes together).
pub const MAX_OPS: usize = 512;
/// Most clauses in one program.
pub const MAX_CLAUSES: usize = 32;
/// Most statements in one program.
pub const MAX_STATEMENTS: usize = 128;
/// Deepest operand stack one expression may use.
pub const MAX_STACK: usize = 16;
/// Longest program text, bytes.
pub const MAX_SOURCE: usize = 64 * 1024;
/// Control registers one [`Install`] may set.
pub const MAX_INSTALL_SETS: usize = 4;

/// A value a signal offers a program: `Ack.bytes_acked`, `Now`, `Event.loss`.
///
/// Absent values read as 0 (with a `has_` field telling them apart) except `Ack.rtt_min`, which reads
/// as `u64::MAX` (`max`) so that `min` folds over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Field {
    /// The signal's time, picoseconds.
    Now,
    /// 1 for an ACK.
    EventAck,
    /// 1 for a loss.
    EventLoss,
    /// 1 for sent data.
    EventSent,
    /// 1 for a congestion notification (a CNP, or an ACK whose echo counts as one).
    EventCnp,
    /// 1 for custom feedback.
    EventFeedback,
    /// 1 for an RTT probe result.
    EventProbe,
    /// 1 for a host congestion signal.
    EventHost,
    /// 1 for the program's own wake (`(wake T)` came due).
    EventTick,
    /// ACKs this signal stands for (1 for one ACK).
    AckAcks,
    /// Newly acknowledged payload bytes.
    AckBytesAcked,
    /// Newly acknowledged packets.
    AckPacketsAcked,
    /// Newly acknowledged bytes whose ACK echoed ECE.
    AckEcnBytes,
    /// Newly acknowledged packets whose ACK echoed ECE.
    AckEcnPackets,
    /// 1 when the ACK echoed ECE.
    AckEcn,
    /// Duplicate ACKs (acknowledging nothing new).
    AckDupAcks,
    /// The latest RTT sample, picoseconds (0 without one).
    AckRtt,
    /// 1 when the ACK carries an RTT sample.
    AckHasRtt,
    /// The least of the ACK's RTT samples, picoseconds (`max` without one).
    AckRttMin,
    /// Delivery rate, bit/s (0 without one).
    AckRate,
    /// 1 when the ACK carries a delivery rate.
    AckHasRate,
    /// Cumulative ACK point.
    AckSndUna,
    /// Next new byte.
    AckSndNxt,
    /// Bytes in flight after the ACK.
    AckInFlight,
    /// Time the ACK spent at the receiver, picoseconds (0 without one).
    AckRemoteDelay,
    /// Path flags echoed on the ACK.
    AckPathFlags,
    /// INT records on the ACK.
    AckIntHops,
    /// Largest egress queue among the INT records, bytes.
    AckIntMaxQlen,
    /// How the loss was detected: 1 fast retransmit, 2 NACK, 3 timeout.
    LossKind,
    /// Loss signals this one stands for.
    LossCount,
    /// Bytes in flight at the loss.
    LossInFlight,
    /// Next byte the sender will send at the loss.
    LossSndNxt,
    /// Payload bytes sent.
    SentBytes,
    /// Packets sent.
    SentPackets,
    /// Of the sent bytes, those sent again.
    SentRetransmittedBytes,
    /// Queue a switch reported (Bolt's notification), bytes.
    FeedbackQueue,
    /// Egress link rate of that queue, bit/s.
    FeedbackLinkRate,
    /// When the data packet that triggered the feedback was sent, picoseconds.
    FeedbackSentAt,
    /// RTT a probe measured, picoseconds.
    ProbeRtt,
    /// NIC-to-memory buffer occupancy, bytes.
    HostIioOccupancy,
    /// Host interconnect utilization, millionths.
    HostPcieUtilPpm,
    /// Maximum segment size, bytes.
    FlowMss,
    /// Base RTT of the path, picoseconds.
    FlowBaseRtt,
    /// Line rate, bit/s.
    FlowLineRate,
    /// ACKs that revealed reordering ([`crate::api::Ack::reordered`]).
    AckReordered,
}

/// Number of [`Field`] values.
pub const FIELD_COUNT: usize = 45;

impl Field {
    /// Every field, in declaration order.
    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Now,
        Field::EventAck,
        Field::EventLoss,
        Field::EventSent,
        Field::EventCnp,
        Field::EventFeedback,
        Field::EventProbe,
        Field::EventHost,
        Field::EventTick,
        Field::AckAcks,
        Field::AckBytesAcked,
        Field::AckPacketsAcked,
        Field::AckEcnBytes,
        Field::AckEcnPackets,
        Field::AckEcn,
        Field::AckDupAcks,
        Field::AckRtt,
        Field::AckHasRtt,
        Field::AckRttMin,
        Field::AckRate,
        Field::AckHasRate,
        Field::AckSndUna,
        Field::AckSndNxt,
        Field::AckInFlight,
        Field::AckRemoteDelay,
        Field::AckPathFlags,
        Field::AckIntHops,
        Field::AckIntMaxQlen,
        Field::LossKind,
        Field::LossCount,
        Field::LossInFlight,
        Field::LossSndNxt,
        Field::SentBytes,
        Field::SentPackets,
        Field::SentRetransmittedBytes,
        Field::FeedbackQueue,
        Field::FeedbackLinkRate,
        Field::FeedbackSentAt,
        Field::ProbeRtt,
        Field::HostIioOccupancy,
        Field::HostPcieUtilPpm,
        Field::FlowMss,
        Field::FlowBaseRtt,
        Field::FlowLineRate,
        Field::AckReordered,
    ];

    /// The name programs use.
    pub fn name(self) -> &'static str {
        match self {
            Field::Now => "Now",
            Field::EventAck => "Event.ack",
            Field::EventLoss => "Event.loss",
            Field::EventSent => "Event.sent",
            Field::EventCnp => "Event.cnp",
            Field::EventFeedback => "Event.feedback",
            Field::EventProbe => "Event.probe",
            Field::EventHost => "Event.host",
            Field::EventTick => "Event.tick",
            Field::AckAcks => "Ack.acks",
            Field::AckBytesAcked => "Ack.bytes_acked",
            Field::AckPacketsAcked => "Ack.packets_acked",
            Field::AckEcnBytes => "Ack.ecn_bytes",
            Field::AckEcnPackets => "Ack.ecn_packets",
            Field::AckEcn => "Ack.ecn",
            Field::AckDupAcks => "Ack.dup_acks",
            Field::AckRtt => "Ack.rtt",
            Field::AckHasRtt => "Ack.has_rtt",
            Field::AckRttMin => "Ack.rtt_min",
            Field::AckRate => "Ack.rate",
            Field::AckHasRate => "Ack.has_rate",
            Field::AckSndUna => "Ack.snd_una",
            Field::AckSndNxt => "Ack.snd_nxt",
            Field::AckInFlight => "Ack.in_flight",
            Field::AckRemoteDelay => "Ack.remote_delay",
            Field::AckPathFlags => "Ack.path_flags",
            Field::AckIntHops => "Ack.int_hops",
            Field::AckIntMaxQlen => "Ack.int_max_qlen",
            Field::LossKind => "Loss.kind",
            Field::LossCount => "Loss.count",
            Field::LossInFlight => "Loss.in_flight",
            Field::LossSndNxt => "Loss.snd_nxt",
            Field::SentBytes => "Sent.bytes",
            Field::SentPackets => "Sent.packets",
            Field::SentRetransmittedBytes => "Sent.retransmitted_bytes",
            Field::FeedbackQueue => "Feedback.queue",
            Field::FeedbackLinkRate => "Feedback.link_rate",
            Field::FeedbackSentAt => "Feedback.sent_at",
            Field::ProbeRtt => "Probe.rtt",
            Field::HostIioOccupancy => "Host.iio_occupancy",
            Field::HostPcieUtilPpm => "Host.pcie_util_ppm",
            Field::FlowMss => "Flow.mss",
            Field::FlowBaseRtt => "Flow.base_rtt",
            Field::FlowLineRate => "Flow.line_rate",
            Field::AckReordered => "Ack.reordered",
        }
    }

    /// The field named `name`.
    pub fn lookup(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A one-operand operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unary {
    /// 1 when the operand is 0, else 0.
    Not,
    /// Number of bits set (population count).
    Bits,
}

/// A two-operand operation (`a op b`, `a` pushed first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// Saturating sum.
    Add,
    /// Saturating difference (0 below zero).
    Sub,
    /// Saturating product.
    Mul,
    /// Quotient; 0 when dividing by 0.
    Div,
    /// Remainder; 0 when dividing by 0.
    Rem,
    /// The smaller.
    Min,
    /// The larger.
    Max,
    /// 1 when `a < b`.
    Lt,
    /// 1 when `a <= b`.
    Le,
    /// 1 when `a > b`.
    Gt,
    /// 1 when `a >= b`.
    Ge,
    /// 1 when equal.
    Eq,
    /// 1 when different.
    Ne,
    /// 1 when both are non-zero.
    And,
    /// 1 when either is non-zero.
    Or,
    /// Bitwise and.
    BitAnd,
    /// Bitwise or.
    BitOr,
    /// Bitwise exclusive or.
    BitXor,
    /// `a << b`; 0 when `b >= 64`.
    Shl,
    /// `a >> b`; 0 when `b >= 64`.
    Shr,
}

/// One bytecode instruction over the operand stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Pushes a constant.
    Const(u64),
    /// Pushes a field of the signal.
    Field(Field),
    /// Pushes register `r`.
    Load(u8),
    /// Pops one operand, pushes the result.
    Unary(Unary),
    /// Pops two operands, pushes the result.
    Binary(Binary),
    /// Pops `c`, `a`, `b` (pushed in that order), pushes `a` when `c` is non-zero, else `b`.
    Select,
}

/// A run of instructions that leaves one value: `start..start + len` of [`Program::ops`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expr {
    /// First instruction.
    pub start: u16,
    /// Instructions.
    pub len: u16,
}

/// One statement of a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stmt {
    /// `(:= Report.x e)`: register `reg` takes the value of `expr` (seen by later statements).
    Assign {
        /// The register.
        reg: u8,
        /// Its new value.
        expr: Expr,
    },
    /// `(report)`: hand the registers to the algorithm after this signal.
    Report,
    /// `(urgent)`: as `report`, counted as urgent (CCP's `OnUrgent`).
    Urgent,
    /// `(fallthrough)`: go on to the next clause after this one.
    Fallthrough,
    /// `(wake e)`: run the program again at time `e` (as `Event.tick`) if a signal since the last report
    /// waits then, unless a wake is already pending.
    Wake(Expr),
}

/// `(when cond stmt...)`: its statements run when `cond` is non-zero; the first clause that runs ends
/// the signal's evaluation unless it falls through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    /// The condition.
    pub cond: Expr,
    /// First statement in [`Program::stmts`].
    pub first: u16,
    /// Statements.
    pub len: u16,
}

/// Whether a register is reported or set by the algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `Report.x`: handed to the algorithm with every report.
    Report,
    /// `Control.x`: set by the algorithm when it installs the program ([`Install`]).
    Control,
}

/// A declared register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    /// Its name, without the scope.
    pub name: String,
    /// Report or control register.
    pub scope: Scope,
    /// Value when the program is installed.
    pub init: u64,
    /// Reset to `init` after every report (CCP's `volatile`).
    pub volatile: bool,
}

/// A verified datapath program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    registers: Vec<Register>,
    ops: Vec<Op>,
    stmts: Vec<Stmt>,
    clauses: Vec<Clause>,
}

/// Why a program was refused: where (1-based line and column of the text; 0:0 for a program built in
/// code) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramError {
    /// Line, from 1 (0 when the program has no text).
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
    /// What is wrong, and what was expected.
    pub message: String,
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "{}:{}: {}", self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for ProgramError {}

fn invalid(message: String) -> ProgramError {
    ProgramError { line: 0, column: 0, message }
}

impl Program {
    /// Parses and verifies a program from its text.
    pub fn parse(text: &str) -> Result<Program, ProgramError> {
        parse::parse(text)
    }

    /// Builds a program from its parts and verifies it (the bytecode form, for datapaths that receive
    /// programs already compiled).
    pub fn new(
        registers: Vec<Register>,
        ops: Vec<Op>,
        stmts: Vec<Stmt>,
        clauses: Vec<Clause>,
    ) -> Result<Program, ProgramError> {
        let program = Program { registers, ops, stmts, clauses };
        program.verify()?;
        Ok(program)
    }

    /// Checks every bound: sizes, register and statement indices, and that every expression leaves
    /// exactly one value without taking the stack past [`MAX_STACK`] or below empty.
    pub fn verify(&self) -> Result<(), ProgramError> {
        if self.registers.len() > MAX_REGISTERS {
            return Err(invalid(format!("{} registers, at most {MAX_REGISTERS}", self.registers.len())));
        }
        if self.ops.len() > MAX_OPS {
            return Err(invalid(format!("{} instructions, at most {MAX_OPS}", self.ops.len())));
        }
        if self.stmts.len() > MAX_STATEMENTS {
            return Err(invalid(format!("{} statements, at most {MAX_STATEMENTS}", self.stmts.len())));
        }
        if self.clauses.is_empty() || self.clauses.len() > MAX_CLAUSES {
            return Err(invalid(format!("{} clauses, 1 to {MAX_CLAUSES}", self.clauses.len())));
        }
        for (i, a) in self.registers.iter().enumerate() {
            if self.registers[..i].iter().any(|b| b.name == a.name) {
                return Err(invalid(format!("register `{}` declared twice", a.name)));
            }
            if a.volatile && a.scope == Scope::Control {
                return Err(invalid(format!("control register `{}` cannot be volatile", a.name)));
            }
        }
        for clause in &self.clauses {
            self.verify_expr(clause.cond)?;
            let end = clause.first as usize + clause.len as usize;
            let Some(stmts) = self.stmts.get(clause.first as usize..end) else {
                return Err(invalid(format!("clause statements {}..{end} out of range", clause.first)));
            };
            for stmt in stmts {
                match *stmt {
                    Stmt::Assign { reg, expr } => {
                        if reg as usize >= self.registers.len() {
                            return Err(invalid(format!("assignment to register {reg}, which is not declared")));
                        }
                        self.verify_expr(expr)?;
                    }
                    Stmt::Wake(expr) => self.verify_expr(expr)?,
                    Stmt::Report | Stmt::Urgent | Stmt::Fallthrough => {}
                }
            }
        }
        Ok(())
    }

    fn verify_expr(&self, expr: Expr) -> Result<(), ProgramError> {
        let end = expr.start as usize + expr.len as usize;
        let Some(ops) = self.ops.get(expr.start as usize..end) else {
            return Err(invalid(format!("expression {}..{end} out of range", expr.start)));
        };
        let mut depth = 0usize;
        for op in ops {
            let (pops, pushes) = match *op {
                Op::Const(_) | Op::Field(_) => (0, 1),
                Op::Load(r) => {
                    if r as usize >= self.registers.len() {
                        return Err(invalid(format!("load of register {r}, which is not declared")));
                    }
                    (0, 1)
                }
                Op::Unary(_) => (1, 1),
                Op::Binary(_) => (2, 1),
                Op::Select => (3, 1),
            };
            if depth < pops {
                return Err(invalid(format!("{op:?} needs {pops} operands, the stack holds {depth}")));
            }
            depth = depth - pops + pushes;
            if depth > MAX_STACK {
                return Err(invalid(format!("expression needs more than {MAX_STACK} stack entries")));
            }
        }
        if depth != 1 {
            return Err(invalid(format!("expression leaves {depth} values, not 1")));
        }
        Ok(())
    }

    /// The registers, in declaration order (report registers, then control registers); a report's
    /// register values come in this order.
    pub fn registers(&self) -> &[Register] {
        &self.registers
    }

    /// The index of the register named `name` (either scope).
    pub fn register(&self, name: &str) -> Option<u8> {
        self.registers.iter().position(|r| r.name == name).map(|i| i as u8)
    }

    /// The bytecode.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The statements of every clause.
    pub fn stmts(&self) -> &[Stmt] {
        &self.stmts
    }

    /// The clauses, in evaluation order.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// Whether every signal ends in a report: every clause that does not fall through reports, and the
    /// last one is `(when true ...)` without `fallthrough`, so that evaluation always ends in a clause
    /// that reported. In native mode such a program is a per-signal handler call, as a per-ACK reporting
    /// policy is, and its reports count as no plane messages.
    pub fn reports_every_signal(&self) -> bool {
        let stmts = |c: &Clause| &self.stmts[c.first as usize..(c.first + c.len) as usize];
        let falls = |c: &Clause| stmts(c).contains(&Stmt::Fallthrough);
        let reports = |c: &Clause| stmts(c).iter().any(|s| matches!(s, Stmt::Report | Stmt::Urgent));
        let Some(last) = self.clauses.last() else { return false };
        let always = last.cond.len == 1 && matches!(self.ops[last.cond.start as usize], Op::Const(c) if c != 0);
        always && !falls(last) && self.clauses.iter().all(|c| falls(c) || reports(c))
    }

    /// Bytes a report of this program takes as a plane message: a 16-byte header and 8 per register.
    pub fn message_bytes(&self) -> u32 {
        16 + 8 * self.registers.len() as u32
    }
}

/// An algorithm's decision to install one of its declared programs ([`crate::Ctx::install`]), with
/// values for up to [`MAX_INSTALL_SETS`] of its control registers (CCP's `Install` with its
/// parameters). Installing starts the program afresh: every register takes its initial value, then the
/// values given here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Install {
    /// Index of the program in [`crate::CongestionControl::programs`].
    pub program: u8,
    /// `(register, value)` pairs; the first `sets` are used.
    pub values: [(u8, u64); MAX_INSTALL_SETS],
    /// How many of `values` are used.
    pub sets: u8,
}

impl Install {
    /// Installs `program` with its registers' initial values.
    pub fn program(program: u8) -> Install {
        Install { program, ..Install::default() }
    }

    /// Also sets register `reg` to `value`. Panics past [`MAX_INSTALL_SETS`] values: that is a bug
    /// in the algorithm, not a datapath condition.
    pub fn with(mut self, reg: u8, value: u64) -> Install {
        assert!((self.sets as usize) < MAX_INSTALL_SETS, "at most {MAX_INSTALL_SETS} values per install");
        self.values[self.sets as usize] = (reg, value);
        self.sets += 1;
        self
    }

    /// The `(register, value)` pairs to set.
    pub fn values(&self) -> &[(u8, u64)] {
        &self.values[..self.sets as usize]
    }
}

/// What an installed program hands the algorithm: the register values at a report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgramReport<'a> {
    /// Index of the program that reported.
    pub program: u8,
    /// Every register's value at the report, in declaration order (before volatile ones reset).
    pub registers: &'a [u64],
    /// Whether an `(urgent)` statement made the report.
    pub urgent: bool,
}

impl ProgramReport<'_> {
    /// Register `reg`'s value (0 for an index the program does not have).
    pub fn get(&self, reg: u8) -> u64 {
        self.registers.get(reg as usize).copied().unwrap_or(0)
    }
}
