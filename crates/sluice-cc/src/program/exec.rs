//! Running a program: one signal's fields in, registers updated, and whether to report or wake.

use std::sync::Arc;

use sluice_core::Time;

use super::{Binary, Expr, Field, Op, Program, Stmt, Unary, FIELD_COUNT, MAX_REGISTERS, MAX_STACK};
use crate::api::{Ack, Feedback, FlowInfo, HostSignal, Loss, LossKind, Sent};

/// The fields one signal offers a program (every [`Field`]; those of other signal kinds read 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    values: [u64; FIELD_COUNT],
}

impl Input {
    /// A signal at `now` of the flow `flow` with no kind yet (every other field 0).
    pub fn at(now: Time, flow: &FlowInfo) -> Input {
        let mut input = Input { values: [0; FIELD_COUNT] };
        input.set(Field::Now, now);
        input.set(Field::AckRttMin, u64::MAX);
        input.set(Field::FlowMss, flow.mss as u64);
        input.set(Field::FlowBaseRtt, flow.base_rtt);
        input.set(Field::FlowLineRate, flow.line_rate);
        input
    }

    fn set(&mut self, field: Field, value: u64) {
        self.values[field as usize] = value;
    }

    /// The value of `field`.
    pub fn get(&self, field: Field) -> u64 {
        self.values[field as usize]
    }

    /// An ACK (`cnp` when its echo counts as a congestion notification).
    pub fn ack(mut self, ack: &Ack<'_>, cnp: bool) -> Input {
        self.set(Field::EventAck, 1);
        self.set(Field::EventCnp, cnp as u64);
        self.set(Field::AckAcks, ack.acks as u64);
        self.set(Field::AckBytesAcked, ack.acked_bytes);
        self.set(Field::AckPacketsAcked, ack.acked_packets as u64);
        self.set(Field::AckEcnBytes, ack.ecn_bytes);
        self.set(Field::AckEcnPackets, ack.ecn_packets as u64);
        self.set(Field::AckEcn, ack.ecn_echo as u64);
        self.set(Field::AckDupAcks, ack.dup_acks as u64);
        self.set(Field::AckReordered, ack.reordered as u64);
        self.set(Field::AckRtt, ack.rtt.unwrap_or(0));
        self.set(Field::AckHasRtt, ack.rtt.is_some() as u64);
        let least = ack.rtt_samples.iter().copied().chain(ack.rtt).min();
        self.set(Field::AckRttMin, least.unwrap_or(u64::MAX));
        self.set(Field::AckRate, ack.delivery_rate.unwrap_or(0));
        self.set(Field::AckHasRate, ack.delivery_rate.is_some() as u64);
        self.set(Field::AckSndUna, ack.snd_una);
        self.set(Field::AckSndNxt, ack.snd_nxt);
        self.set(Field::AckInFlight, ack.in_flight);
        self.set(Field::AckRemoteDelay, ack.remote_delay.unwrap_or(0));
        self.set(Field::AckPathFlags, ack.path_flags as u64);
        self.set(Field::AckIntHops, ack.int.len() as u64);
        self.set(Field::AckIntMaxQlen, ack.int.iter().map(|h| h.qlen).max().unwrap_or(0));
        self
    }

    /// A loss.
    pub fn loss(mut self, loss: &Loss) -> Input {
        self.set(Field::EventLoss, 1);
        self.set(Field::LossKind, loss_kind_code(loss.kind));
        self.set(Field::LossCount, loss.count as u64);
        self.set(Field::LossInFlight, loss.in_flight);
        self.set(Field::LossSndNxt, loss.snd_nxt);
        self
    }

    /// Sent data.
    pub fn sent(mut self, sent: &Sent) -> Input {
        self.set(Field::EventSent, 1);
        self.set(Field::SentBytes, sent.bytes);
        self.set(Field::SentPackets, sent.packets as u64);
        self.set(Field::SentRetransmittedBytes, sent.retransmitted_bytes);
        self
    }

    /// A congestion notification packet.
    pub fn cnp(mut self) -> Input {
        self.set(Field::EventCnp, 1);
        self
    }

    /// Custom feedback.
    pub fn feedback(mut self, feedback: &Feedback) -> Input {
        self.set(Field::EventFeedback, 1);
        match *feedback {
            Feedback::QueueNotification { queue, link_rate, sent_at, .. } => {
                self.set(Field::FeedbackQueue, queue);
                self.set(Field::FeedbackLinkRate, link_rate);
                self.set(Field::FeedbackSentAt, sent_at);
            }
            // A switch signal has no program fields: a program sees that feedback came.
            Feedback::Signal { .. } => {}
        }
        self
    }

    /// An RTT probe result.
    pub fn probe(mut self, rtt: Time) -> Input {
        self.set(Field::EventProbe, 1);
        self.set(Field::ProbeRtt, rtt);
        self
    }

    /// A host congestion signal.
    pub fn host(mut self, signal: &HostSignal) -> Input {
        self.set(Field::EventHost, 1);
        self.set(Field::HostIioOccupancy, signal.iio_occupancy);
        self.set(Field::HostPcieUtilPpm, (signal.pcie_utilization.clamp(0.0, 1.0) * 1e6) as u64);
        self
    }

    /// The program's wake came due.
    pub fn tick(mut self) -> Input {
        self.set(Field::EventTick, 1);
        self
    }
}

/// `Loss.kind`'s code for `kind`.
pub fn loss_kind_code(kind: LossKind) -> u64 {
    match kind {
        LossKind::FastRetransmit => 1,
        LossKind::Nack => 2,
        LossKind::Timeout => 3,
    }
}

/// The loss kind `Loss.kind`'s `code` stands for (fast retransmit for an unknown code).
pub fn loss_kind_of(code: u64) -> LossKind {
    match code {
        2 => LossKind::Nack,
        3 => LossKind::Timeout,
        _ => LossKind::FastRetransmit,
    }
}

/// What one signal's run asks of the datapath.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// A `(report)` or `(urgent)` ran: hand the registers to the algorithm.
    pub report: bool,
    /// An `(urgent)` ran.
    pub urgent: bool,
    /// The time the last `(wake e)` that ran asked for.
    pub wake: Option<Time>,
}

/// An installed program with its registers: one flow's program state.
#[derive(Debug, Clone)]
pub struct Machine {
    program: Arc<Program>,
    index: u8,
    registers: [u64; MAX_REGISTERS],
}

impl Machine {
    /// Installs `program` (the algorithm's program number `index`): registers take their initial
    /// values, then `values` (register, value) pairs for registers the program has.
    pub fn new(program: Arc<Program>, index: u8, values: &[(u8, u64)]) -> Machine {
        let mut registers = [0; MAX_REGISTERS];
        for (slot, r) in registers.iter_mut().zip(program.registers()) {
            *slot = r.init;
        }
        for &(reg, value) in values {
            if (reg as usize) < program.registers().len() {
                registers[reg as usize] = value;
            }
        }
        Machine { program, index, registers }
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The algorithm's number for it.
    pub fn index(&self) -> u8 {
        self.index
    }

    /// Every register's value, in declaration order.
    pub fn registers(&self) -> &[u64] {
        &self.registers[..self.program.registers().len()]
    }

    /// After a report: volatile registers take their initial values again.
    pub fn reset_volatile(&mut self) {
        for (slot, r) in self.registers.iter_mut().zip(self.program.registers()) {
            if r.volatile {
                *slot = r.init;
            }
        }
    }

    /// Runs the program on one signal: the clauses in order, the first whose condition holds runs its
    /// statements, and evaluation ends there unless it falls through.
    pub fn run(&mut self, input: &Input) -> Outcome {
        let Machine { program, registers, .. } = self;
        let mut outcome = Outcome::default();
        for clause in program.clauses() {
            if eval(program, registers, clause.cond, input) == 0 {
                continue;
            }
            let mut fall = false;
            let stmts = &program.stmts()[clause.first as usize..(clause.first + clause.len) as usize];
            for stmt in stmts {
                match *stmt {
                    Stmt::Assign { reg, expr } => registers[reg as usize] = eval(program, registers, expr, input),
                    Stmt::Report => outcome.report = true,
                    Stmt::Urgent => {
                        outcome.report = true;
                        outcome.urgent = true;
                    }
                    Stmt::Fallthrough => fall = true,
                    Stmt::Wake(expr) => outcome.wake = Some(eval(program, registers, expr, input)),
                }
            }
            if !fall {
                break;
            }
        }
        outcome
    }
}

/// The value of one operand that needs no stack.
#[inline]
fn operand(op: Op, registers: &[u64; MAX_REGISTERS], input: &Input) -> Option<u64> {
    match op {
        Op::Const(v) => Some(v),
        Op::Field(f) => Some(input.get(f)),
        Op::Load(r) => Some(registers[r as usize]),
        _ => None,
    }
}

/// Evaluates a verified expression: the stack stays within [`MAX_STACK`] and never underflows. The
/// common shapes (one operand; an operation over two operands) skip the stack.
fn eval(program: &Program, registers: &[u64; MAX_REGISTERS], expr: Expr, input: &Input) -> u64 {
    let ops = &program.ops()[expr.start as usize..(expr.start + expr.len) as usize];
    match *ops {
        [a] => {
            if let Some(v) = operand(a, registers, input) {
                return v;
            }
        }
        [a, b, Op::Binary(op)] => {
            if let (Some(x), Some(y)) = (operand(a, registers, input), operand(b, registers, input)) {
                return binary(op, x, y);
            }
        }
        _ => {}
    }
    let mut stack = [0u64; MAX_STACK];
    let mut top = 0usize;
    for &op in ops {
        match op {
            Op::Const(_) | Op::Field(_) | Op::Load(_) => {
                stack[top] = operand(op, registers, input).unwrap_or(0);
                top += 1;
            }
            Op::Unary(u) => {
                let a = stack[top - 1];
                stack[top - 1] = match u {
                    Unary::Not => (a == 0) as u64,
                    Unary::Bits => a.count_ones() as u64,
                };
            }
            Op::Binary(b) => {
                let (x, y) = (stack[top - 2], stack[top - 1]);
                top -= 1;
                stack[top - 1] = binary(b, x, y);
            }
            Op::Select => {
                let (c, a, b) = (stack[top - 3], stack[top - 2], stack[top - 1]);
                top -= 2;
                stack[top - 1] = if c != 0 { a } else { b };
            }
        }
    }
    stack[0]
}

fn binary(op: Binary, a: u64, b: u64) -> u64 {
    match op {
        Binary::Add => a.saturating_add(b),
        Binary::Sub => a.saturating_sub(b),
        Binary::Mul => a.saturating_mul(b),
        Binary::Div => a.checked_div(b).unwrap_or(0),
        Binary::Rem => a.checked_rem(b).unwrap_or(0),
        Binary::Min => a.min(b),
        Binary::Max => a.max(b),
        Binary::Lt => (a < b) as u64,
        Binary::Le => (a <= b) as u64,
        Binary::Gt => (a > b) as u64,
        Binary::Ge => (a >= b) as u64,
        Binary::Eq => (a == b) as u64,
        Binary::Ne => (a != b) as u64,
        Binary::And => (a != 0 && b != 0) as u64,
        Binary::Or => (a != 0 || b != 0) as u64,
        Binary::BitAnd => a & b,
        Binary::BitOr => a | b,
        Binary::BitXor => a ^ b,
        Binary::Shl => a.checked_shl(b.min(64) as u32).unwrap_or(0),
        Binary::Shr => a.checked_shr(b.min(64) as u32).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> FlowInfo {
        FlowInfo {
            flow_id: 1,
            mss: 1000,
            header_bytes: 48,
            line_rate: 10_000_000_000,
            base_rtt: 8_000_000,
            hops: 2,
            size: None,
            start: 0,
        }
    }

    fn machine(text: &str) -> Machine {
        Machine::new(Arc::new(Program::parse(text).unwrap()), 0, &[])
    }

    fn ack(bytes: u64, ecn: bool, at: Time) -> Input {
        Input::at(at, &flow()).ack(&Ack::single(bytes, 1, ecn, Some(5_000), 0, 0, 0, at), false)
    }

    #[test]
    fn arithmetic_is_total() {
        let cases = [
            ("(- 1 2)", 0),
            ("(+ max 1)", u64::MAX),
            ("(* max 2)", u64::MAX),
            ("(/ 7 0)", 0),
            ("(% 7 0)", 0),
            ("(% 7 3)", 1),
            ("(<< 1 64)", 0),
            ("(>> 8 200)", 0),
            ("(<< 1 3)", 8),
            ("(bits 0xff00)", 8),
            ("(if 0 5 6)", 6),
            ("(if 2 5 6)", 5),
            ("(and 1 0)", 0),
            ("(or 0 7)", 1),
            ("(not 0)", 1),
            ("(min 3 1 2)", 1),
            ("(max 3 1 2)", 3),
            ("(^ 6 3)", 5),
            ("(| 4 1)", 5),
            ("(& 6 3)", 2),
            ("(!= 1 1)", 0),
            ("(== Flow.mss 1000)", 1),
        ];
        for (expr, want) in cases {
            let mut m = machine(&format!("(def (Report (x 0))) (when true (:= Report.x {expr}))"));
            m.run(&ack(0, false, 0));
            assert_eq!(m.registers()[0], want, "{expr}");
        }
    }

    #[test]
    fn clauses_run_in_order_until_one_does_not_fall_through() {
        let mut m = machine(
            "(def (Report (volatile acked 0) (volatile marks 0) (seen 0)))
             (when Event.ack (:= Report.acked (+ Report.acked Ack.bytes_acked)) (:= Report.seen (+ Report.seen 1)) (fallthrough))
             (when Ack.ecn (:= Report.marks (+ Report.marks 1)) (urgent))
             (when (>= Report.acked 3000) (report) (wake (+ Now 10)))
             (when true (:= Report.seen 100))",
        );
        assert_eq!(m.run(&ack(1000, false, 1)), Outcome::default());
        assert_eq!(m.registers(), &[1000, 0, 100], "no clause reported: the last one ran");
        assert_eq!(m.run(&ack(1000, true, 2)), Outcome { report: true, urgent: true, wake: None });
        assert_eq!(m.registers(), &[2000, 1, 101], "the urgent clause ends the evaluation");
        m.reset_volatile();
        assert_eq!(m.registers(), &[0, 0, 101], "non-volatile registers persist across reports");
        m.run(&ack(3000, false, 3));
        assert_eq!(m.run(&ack(0, false, 4)), Outcome { report: true, urgent: false, wake: Some(14) });
        let mut other = Input::at(5, &flow()).loss(&Loss { kind: LossKind::Nack, count: 1, in_flight: 0, snd_nxt: 0 });
        assert_eq!(other.get(Field::LossKind), 2);
        other = other.tick();
        assert_eq!(m.run(&other), Outcome { report: true, urgent: false, wake: Some(15) }, "acked is still 3000");
    }

    #[test]
    fn install_values_set_control_registers() {
        let p = Arc::new(Program::parse("(def (Report (a 1)) (Control (limit 5))) (when true (report))").unwrap());
        let m = Machine::new(Arc::clone(&p), 2, &[(1, 9), (7, 3)]);
        assert_eq!(m.registers(), &[1, 9], "an index the program lacks is ignored");
        assert_eq!(m.index(), 2);
    }
}
