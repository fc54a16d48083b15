//! The BPF side's datapath-program interpreter (`bpf/program.h`): a verified
//! [`sluice_cc::program::Program`] flattened into a tape that only skips forward (the commonest
//! operand shapes fused into one instruction), run by one bounded open-coded loop per signal over the
//! flow's registers.
//!
//! The TCP hooks (`bpf/sluice.bpf.c`) run a flow's tape on every ACK, loss and timeout; [`Install`] is
//! what the agent writes for a flow (its tape, shared through [`Tapes`], and its registers). The
//! [`Interpreter`] runs the same interpreter under `BPF_PROG_TEST_RUN` (`bpf/program.bpf.c`), which the
//! tests use to hold it against the Rust interpreter signal by signal and to measure its cost per signal.

use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};
use sluice_cc::program::{Binary, Field, Input, Op, Program, Stmt, Unary, FIELD_COUNT, MAX_REGISTERS};

use crate::loader::KernelError;

/// Tapes the BPF side holds at once (`SLK_TAPES`): distinct programs, shared by the flows that run them.
pub const TAPES: usize = 64;
/// Bytes of `struct slk_pstate` (bpf/sluice.h): one flow's program state.
pub const STATE_BYTES_TCP: usize = 312;

/// The field numbers `bpf/program.h` fills on the TCP hooks (`SLP_F_*`), which must be the Rust
/// [`Field`]s' numbers.
pub const TCP_FIELDS: [(Field, usize); 26] = [
    (Field::Now, 0),
    (Field::EventAck, 1),
    (Field::EventLoss, 2),
    (Field::EventTick, 8),
    (Field::AckAcks, 9),
    (Field::AckBytesAcked, 10),
    (Field::AckPacketsAcked, 11),
    (Field::AckEcnBytes, 12),
    (Field::AckEcnPackets, 13),
    (Field::AckEcn, 14),
    (Field::AckRtt, 16),
    (Field::AckHasRtt, 17),
    (Field::AckRttMin, 18),
    (Field::AckRate, 19),
    (Field::AckHasRate, 20),
    (Field::AckSndUna, 21),
    (Field::AckSndNxt, 22),
    (Field::AckInFlight, 23),
    (Field::LossKind, 28),
    (Field::LossCount, 29),
    (Field::LossInFlight, 30),
    (Field::LossSndNxt, 31),
    (Field::FlowMss, 41),
    (Field::FlowBaseRtt, 42),
    (Field::FlowLineRate, 43),
    (Field::AckReordered, 44),
];

/// A flow's program for the BPF side: written by the agent when the flow starts one (at its start or by
/// `ctx.install`), before the decision that turns it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// The flow.
    pub flow_id: u64,
    /// The agent's number for this install (program reports echo it; older ones are dropped).
    pub install: u32,
    /// The algorithm's number for the program.
    pub index: u8,
    /// The program's tape (`struct slp_prog`).
    pub tape: Vec<u8>,
    /// The registers to start from, in declaration order.
    pub registers: Vec<u64>,
    /// `Flow.base_rtt`, ps.
    pub base_rtt: u64,
    /// `Flow.line_rate`, bit/s.
    pub line_rate: u64,
}

impl Install {
    /// The flow's program for `program` (the algorithm's number `index`), starting from `registers`.
    pub fn new(
        flow_id: u64,
        install: u32,
        (program, index, registers): (&Program, u8, &[u64]),
        base_rtt: u64,
        line_rate: u64,
    ) -> Result<Install, String> {
        let tape = encode(program)?;
        Ok(Install { flow_id, install, index, tape, registers: registers.to_vec(), base_rtt, line_rate })
    }

    /// `struct slk_pstate` for this install by agent `epoch`, its tape in slot `tape`.
    pub fn state(&self, epoch: u32, tape: u32) -> [u8; STATE_BYTES_TCP] {
        let mut out = [0u8; STATE_BYTES_TCP];
        out[0..8].copy_from_slice(&self.flow_id.to_ne_bytes());
        out[8..12].copy_from_slice(&epoch.to_ne_bytes());
        out[12..16].copy_from_slice(&self.install.to_ne_bytes());
        out[16..20].copy_from_slice(&tape.to_ne_bytes());
        out[20] = self.index;
        let n = self.registers.len().min(MAX_REGISTERS);
        out[22..24].copy_from_slice(&(n as u16).to_ne_bytes());
        out[32..40].copy_from_slice(&self.base_rtt.to_ne_bytes());
        out[40..48].copy_from_slice(&self.line_rate.to_ne_bytes());
        for (i, v) in self.registers.iter().take(n).enumerate() {
            out[56 + i * 8..64 + i * 8].copy_from_slice(&v.to_ne_bytes());
        }
        out
    }
}

/// The tapes written to the BPF side by this agent, by content: flows running the same program share
/// its slot, and a slot is never rewritten while the agent runs (a flow may be running it).
#[derive(Debug, Default)]
pub struct Tapes {
    written: Vec<Vec<u8>>,
}

impl Tapes {
    /// The slot holding `tape`, if written.
    pub fn find(&self, tape: &[u8]) -> Option<u32> {
        self.written.iter().position(|t| t == tape).map(|i| i as u32)
    }

    /// The slot the next new tape takes, or why there is none.
    pub fn next(&self) -> Result<u32, String> {
        if self.written.len() >= TAPES {
            return Err(format!("the BPF side holds {TAPES} distinct programs at once, all taken"));
        }
        Ok(self.written.len() as u32)
    }

    /// `tape` was written to slot [`Tapes::next`].
    pub fn written(&mut self, tape: Vec<u8>) {
        self.written.push(tape);
    }
}

/// The compiled interpreter (`bpf/program.bpf.c`).
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/program.bpf.o"));

/// Tape instructions the BPF side holds (`SLP_TAPE`).
pub const TAPE: usize = 768;

/// Outcome bit: the program reported.
pub const OUT_REPORT: u32 = 1;
/// Outcome bit: the report was urgent.
pub const OUT_URGENT: u32 = 2;
/// Outcome bit: the program asked for a wake.
pub const OUT_WAKE: u32 = 4;
/// Outcome bit: the tape was malformed (never for a tape this module encoded).
pub const OUT_ERROR: u32 = 8;

/// Tape instruction kinds (`SLP_*` in bpf/program.bpf.c).
mod kind {
    pub const CONST: u8 = 0;
    pub const FIELD: u8 = 1;
    pub const LOAD: u8 = 2;
    pub const NOT: u8 = 3;
    pub const BITS: u8 = 4;
    pub const BINARY: u8 = 5;
    pub const SELECT: u8 = 6;
    pub const SKIP_IF_ZERO: u8 = 7;
    pub const ASSIGN: u8 = 8;
    pub const REPORT: u8 = 9;
    pub const URGENT: u8 = 10;
    pub const WAKE: u8 = 11;
    pub const STOP: u8 = 12;
    pub const BIN_RF: u8 = 13;
    pub const BIN_RC: u8 = 14;
    pub const BIN_RR: u8 = 15;
    pub const SET_RF: u8 = 16;
}

/// Bytes of `struct slp_prog`.
const PROG_BYTES: usize = 8 + TAPE * 16 + MAX_REGISTERS * 8 + MAX_REGISTERS;
/// Bytes of `struct slp_state` (the test harness's).
const STATE_BYTES: usize = 2 * MAX_REGISTERS * 8 + 24;

/// One tape instruction: kind, two one-byte operands, a 64-bit operand.
type Insn = (u8, u8, u8, u64);

fn binary_code(b: Binary) -> u8 {
    match b {
        Binary::Add => 0,
        Binary::Sub => 1,
        Binary::Mul => 2,
        Binary::Div => 3,
        Binary::Rem => 4,
        Binary::Min => 5,
        Binary::Max => 6,
        Binary::Lt => 7,
        Binary::Le => 8,
        Binary::Gt => 9,
        Binary::Ge => 10,
        Binary::Eq => 11,
        Binary::Ne => 12,
        Binary::And => 13,
        Binary::Or => 14,
        Binary::BitAnd => 15,
        Binary::BitOr => 16,
        Binary::BitXor => 17,
        Binary::Shl => 18,
        Binary::Shr => 19,
    }
}

/// The tape of `program`: each clause is its condition, a forward skip over its body when the
/// condition is 0, and its statements (expressions before their assignments and wakes), ended by a
/// stop unless the clause falls through. An error when the tape exceeds [`TAPE`].
pub fn tape(program: &Program) -> Result<Vec<Insn>, String> {
    let expr = |out: &mut Vec<Insn>, e: sluice_cc::program::Expr| {
        let ops = &program.ops()[e.start as usize..(e.start + e.len) as usize];
        let mut i = 0;
        while i < ops.len() {
            // The commonest shapes take one instruction: a register with a field, a constant or a
            // register under a binary operation.
            if let [Op::Load(r), second, Op::Binary(b), ..] = ops[i..] {
                let fused = match second {
                    Op::Field(f) => Some((kind::BIN_RF, f as u64)),
                    Op::Const(c) => Some((kind::BIN_RC, c)),
                    Op::Load(q) => Some((kind::BIN_RR, q as u64)),
                    _ => None,
                };
                if let Some((k, arg)) = fused {
                    out.push((k, r, binary_code(b), arg));
                    i += 3;
                    continue;
                }
            }
            out.push(match ops[i] {
                Op::Const(v) => (kind::CONST, 0, 0, v),
                Op::Field(f) => (kind::FIELD, 0, 0, f as u64),
                Op::Load(r) => (kind::LOAD, r, 0, 0),
                Op::Unary(Unary::Not) => (kind::NOT, 0, 0, 0),
                Op::Unary(Unary::Bits) => (kind::BITS, 0, 0, 0),
                Op::Binary(b) => (kind::BINARY, binary_code(b), 0, 0),
                Op::Select => (kind::SELECT, 0, 0, 0),
            });
            i += 1;
        }
    };
    let mut out = Vec::new();
    for clause in program.clauses() {
        expr(&mut out, clause.cond);
        let mut body = Vec::new();
        let mut falls = false;
        for stmt in &program.stmts()[clause.first as usize..(clause.first + clause.len) as usize] {
            match *stmt {
                Stmt::Assign { reg, expr: e } => match program.ops()[e.start as usize..(e.start + e.len) as usize] {
                    [Op::Field(f)] => body.push((kind::SET_RF, reg, 0, f as u64)),
                    _ => {
                        expr(&mut body, e);
                        body.push((kind::ASSIGN, reg, 0, 0));
                    }
                },
                Stmt::Wake(e) => {
                    expr(&mut body, e);
                    body.push((kind::WAKE, 0, 0, 0));
                }
                Stmt::Report => body.push((kind::REPORT, 0, 0, 0)),
                Stmt::Urgent => body.push((kind::URGENT, 0, 0, 0)),
                Stmt::Fallthrough => falls = true,
            }
        }
        if !falls {
            body.push((kind::STOP, 0, 0, 0));
        }
        out.push((kind::SKIP_IF_ZERO, 0, 0, body.len() as u64));
        out.extend(body);
    }
    if out.len() > TAPE {
        return Err(format!("the program's tape has {} instructions, the BPF side holds {TAPE}", out.len()));
    }
    Ok(out)
}

/// `struct slp_prog` for `program`.
pub fn encode(program: &Program) -> Result<Vec<u8>, String> {
    let tape = tape(program)?;
    let mut bytes = Vec::with_capacity(PROG_BYTES);
    bytes.extend((tape.len() as u32).to_ne_bytes());
    bytes.extend((program.registers().len() as u32).to_ne_bytes());
    for i in 0..TAPE {
        let (k, a, b, arg) = tape.get(i).copied().unwrap_or((kind::STOP, 0, 0, 0));
        bytes.extend([k, a, b, 0, 0, 0, 0, 0]);
        bytes.extend(arg.to_ne_bytes());
    }
    let registers = program.registers();
    for i in 0..MAX_REGISTERS {
        bytes.extend(registers.get(i).map_or(0, |r| r.init).to_ne_bytes());
    }
    bytes.extend((0..MAX_REGISTERS).map(|i| registers.get(i).is_some_and(|r| r.volatile) as u8));
    Ok(bytes)
}

/// What one signal did on the BPF side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// [`OUT_REPORT`], [`OUT_URGENT`], [`OUT_WAKE`], [`OUT_ERROR`] bits.
    pub outcome: u32,
    /// The registers after the signal (volatile ones reset after a report).
    pub registers: Vec<u64>,
    /// The registers as reported, when the signal reported.
    pub reported: Option<Vec<u64>>,
    /// The wake the program asked for, when it did.
    pub wake: Option<u64>,
    /// The wake pending after the signal, kept as the TCP hooks keep it (a report keeps what was
    /// pending; a wake asked for is kept unless one is pending; a tick clears it before running).
    pub pending_wake: Option<u64>,
}

/// The interpreter loaded into the kernel with one installed program.
pub struct Interpreter {
    object: Object,
    registers: usize,
}

impl Interpreter {
    /// Loads the interpreter (needs root) and installs `program` with `values` for its registers.
    pub fn load(program: &Program, values: &[(u8, u64)]) -> Result<Interpreter, KernelError> {
        let bytes = encode(program).map_err(KernelError)?;
        let open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| KernelError(format!("open the interpreter: {e}")))?;
        let object = open.load().map_err(|e| KernelError(format!("load the interpreter: {e}")))?;
        let interpreter = Interpreter { object, registers: program.registers().len() };
        interpreter.write("slp_progs", &bytes)?;
        let mut state = vec![0u8; STATE_BYTES];
        for (i, r) in program.registers().iter().enumerate() {
            let value = values.iter().rev().find(|(reg, _)| *reg as usize == i).map_or(r.init, |(_, v)| *v);
            state[i * 8..i * 8 + 8].copy_from_slice(&value.to_ne_bytes());
        }
        interpreter.write("slp_states", &state)?;
        Ok(interpreter)
    }

    fn write(&self, map: &str, value: &[u8]) -> Result<(), KernelError> {
        let map = self
            .object
            .maps()
            .find(|m| m.name() == map)
            .ok_or_else(|| KernelError(format!("the interpreter has no map {map}")))?;
        map.update(&0u32.to_ne_bytes(), value, MapFlags::ANY).map_err(|e| KernelError(format!("write {e}")))
    }

    fn run(&self, name: &str, input: &Input, repeat: u32) -> Result<(u32, Duration), KernelError> {
        let data: Vec<u8> = Field::ALL.iter().flat_map(|f| input.get(*f).to_ne_bytes()).collect();
        debug_assert_eq!(data.len(), FIELD_COUNT * 8);
        let program = self
            .object
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or_else(|| KernelError(format!("the interpreter has no program {name}")))?;
        let run = libbpf_rs::ProgramInput { data_in: Some(&data), repeat, ..Default::default() };
        let out = program.test_run(run).map_err(|e| KernelError(format!("run {name}: {e}")))?;
        Ok((out.return_value, out.duration))
    }

    /// Runs the program on one signal.
    pub fn signal(&self, input: &Input) -> Result<Signal, KernelError> {
        let (outcome, _) = self.run("slp_signal", input, 1)?;
        let map = self
            .object
            .maps()
            .find(|m| m.name() == "slp_states")
            .ok_or_else(|| KernelError("the interpreter has no state map".into()))?;
        let state = map
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| KernelError(format!("read the state: {e}")))?
            .ok_or_else(|| KernelError("the state map is empty".into()))?;
        let word = |i: usize| u64::from_ne_bytes(state[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        let registers = (0..self.registers).map(word).collect();
        let reported =
            (outcome & OUT_REPORT != 0).then(|| (0..self.registers).map(|i| word(MAX_REGISTERS + i)).collect());
        let wake = (outcome & OUT_WAKE != 0).then(|| word(2 * MAX_REGISTERS + 1));
        let pending_wake = Some(word(2 * MAX_REGISTERS)).filter(|&w| w != 0);
        Ok(Signal { outcome, registers, reported, wake, pending_wake })
    }

    /// Average time of one signal over `repeat` runs, and of the same test run with an empty program
    /// (the floor to subtract).
    pub fn cost(&self, input: &Input, repeat: u32) -> Result<(Duration, Duration), KernelError> {
        let (_, run) = self.run("slp_signal", input, repeat)?;
        let (_, floor) = self.run("slp_floor", input, repeat)?;
        Ok((run, floor))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sluice_cc::program::{library, Machine};
    use sluice_cc::{Ack, FlowInfo, Loss, LossKind};

    use super::*;

    fn flow() -> FlowInfo {
        FlowInfo {
            flow_id: 1,
            mss: 1000,
            header_bytes: 66,
            line_rate: 25_000_000_000,
            base_rtt: 10_000_000,
            hops: 2,
            size: None,
            start: 0,
        }
    }

    /// ACKs with marks in bursts, a few losses and wakes.
    fn signals() -> Vec<Input> {
        let mut out = Vec::new();
        let (mut una, mut nxt) = (0u64, 100_000u64);
        for i in 0..300u64 {
            let now = 1_000_000 * i;
            (una, nxt) = (una + 1448, nxt + 1448);
            let marked = (i / 20) % 3 == 1 && i % 4 != 0;
            let mut ack = Ack::single(1448, 1, marked, Some(9_000_000 + (i * 7919) % 3_000_000), una, nxt, 60_000, now);
            ack.delivery_rate = (i % 5 != 0).then_some(20_000_000_000 + i * 1_000_000);
            out.push(Input::at(now, &flow()).ack(&ack, false));
            if i % 97 == 50 {
                let loss = Loss { kind: LossKind::Nack, count: 1, in_flight: 50_000, snd_nxt: nxt };
                out.push(Input::at(now + 1, &flow()).loss(&loss));
            }
            if i % 31 == 7 {
                out.push(Input::at(now + 2, &flow()).tick());
            }
        }
        out
    }

    /// The BPF interpreter and the Rust one agree on every signal: outcome, wake, reported registers,
    /// registers after the report, and the wake left pending (the plane driver's rule, which the TCP
    /// hooks share with the harness: `slp_next_wake` in bpf/program.h).
    fn agree(name: &str, program: Arc<Program>, values: &[(u8, u64)]) -> Option<(Interpreter, usize)> {
        let interpreter = match Interpreter::load(&program, values) {
            Ok(interpreter) => interpreter,
            Err(e) if sluice_testbed::unavailable().is_some() => {
                eprintln!("skipping {name}: {e}");
                return None;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        let mut machine = Machine::new(Arc::clone(&program), 0, values);
        let (mut pending, mut kept): (Option<u64>, usize) = (None, 0);
        for (i, input) in signals().iter().enumerate() {
            let bpf = interpreter.signal(input).unwrap();
            if input.get(Field::EventTick) == 1 {
                pending = None;
            }
            let rust = machine.run(input);
            if let (false, Some(at), None) = (rust.report, rust.wake, pending) {
                pending = Some(at.max(1));
            }
            let reported = rust.report.then(|| machine.registers().to_vec());
            if rust.report {
                machine.reset_volatile();
            }
            let bit = |on: bool, bit: u32| if on { bit } else { 0 };
            let outcome =
                bit(rust.report, OUT_REPORT) | bit(rust.urgent, OUT_URGENT) | bit(rust.wake.is_some(), OUT_WAKE);
            assert_eq!(bpf.outcome, outcome, "{name}: signal {i}");
            assert_eq!(bpf.wake, rust.wake, "{name}: signal {i}");
            assert_eq!(bpf.reported, reported, "{name}: signal {i}");
            assert_eq!(bpf.registers, machine.registers(), "{name}: signal {i}");
            assert_eq!(bpf.pending_wake, pending, "{name}: signal {i}");
            kept += pending.is_some() as usize;
        }
        Some((interpreter, kept))
    }

    #[test]
    fn the_bpf_interpreter_agrees_with_the_rust_one() {
        let interval = [(library::reg::INTERVAL, 8_000_000)];
        agree("per_signal", library::per_signal(), &[]);
        if let Some((_, kept)) = agree("per_interval", library::per_interval(), &interval) {
            assert!(kept > 0, "per_interval's wakes were kept pending on some signals");
        }
        let burst = sluice_cc::dctcp_burst::DctcpBurst::new(Default::default());
        let install = burst.install();
        let program = Arc::new(Program::parse(sluice_cc::dctcp_burst::PROGRAM).unwrap());
        let Some((interpreter, _)) = agree("dctcp_burst", program, install.values()) else { return };
        let input = &signals()[100];
        let fixed = Interpreter::load(&library::per_signal(), &[]).unwrap();
        for (name, interpreter) in [("dctcp_burst", &interpreter), ("per_signal", &fixed)] {
            let (run, floor) = interpreter.cost(input, 200_000).unwrap();
            eprintln!(
                "{name}'s program in BPF: {} ns per signal ({} ns test-run floor)",
                run.as_nanos(),
                floor.as_nanos()
            );
        }
    }

    #[test]
    fn the_tcp_hooks_fill_the_fields_the_rust_side_names() {
        for (field, number) in TCP_FIELDS {
            assert_eq!(field as usize, number, "{}", field.name());
            assert_eq!(Field::ALL[number], field);
        }
        let header = include_str!("../bpf/program.h");
        for (field, number) in TCP_FIELDS {
            let name = format!("SLP_F_{}", field.name().replace('.', "_").to_ascii_uppercase());
            assert!(header.contains(&format!("#define {name} {number}\n")), "{name} {number} in program.h");
        }
    }

    #[test]
    fn an_install_lays_out_like_the_c_struct_and_tapes_are_shared() {
        let program = library::per_signal();
        let registers: Vec<u64> = (0..program.registers().len() as u64).collect();
        let install = Install::new(7 << 16 | 5, 3, (&program, 0, &registers), 90_000_000, 10_000_000_000).unwrap();
        let state = install.state(2, 1);
        let word = |at: usize| u64::from_ne_bytes(state[at..at + 8].try_into().unwrap());
        assert_eq!(word(0), 7 << 16 | 5);
        assert_eq!(u32::from_ne_bytes(state[8..12].try_into().unwrap()), 2, "epoch");
        assert_eq!(u32::from_ne_bytes(state[12..16].try_into().unwrap()), 3, "install");
        assert_eq!(u32::from_ne_bytes(state[16..20].try_into().unwrap()), 1, "tape");
        assert_eq!(u16::from_ne_bytes(state[22..24].try_into().unwrap()), 23, "registers");
        assert_eq!((word(32), word(40)), (90_000_000, 10_000_000_000));
        assert_eq!((word(56), word(56 + 22 * 8)), (0, 22));
        let mut tapes = Tapes::default();
        assert_eq!((tapes.find(&install.tape), tapes.next()), (None, Ok(0)));
        tapes.written(install.tape.clone());
        assert_eq!(tapes.find(&install.tape), Some(0), "a second flow shares the slot");
        for _ in 1..TAPES {
            tapes.written(Vec::new());
        }
        assert_eq!(tapes.next().unwrap_err(), "the BPF side holds 64 distinct programs at once, all taken");
    }

    #[test]
    fn the_programs_of_the_kernels_algorithms_fit_the_tape() {
        let mut config = crate::config::AgentConfig::default();
        for (name, param) in [("reno", "program=true"), ("dctcp", "program=true"), ("bbr", "program=true")] {
            config.add_param_arg(&format!("{name}.{param}")).unwrap();
        }
        let mut library = crate::config::Library::default();
        let mut programs = 0;
        for name in crate::config::supported_names() {
            let params = config.params.get(name).cloned().unwrap_or_default();
            let factory = library.factory(name, &params, 10_000_000_000).unwrap();
            let flow = FlowInfo { flow_id: 1, mss: 1448, ..flow() };
            for program in factory.create(&flow).programs() {
                let tape = tape(&program).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(tape.len() <= TAPE, "{name}");
                programs += 1;
            }
        }
        assert_eq!(programs, 5, "reno's, dctcp's, bbr's two and dctcp_burst's");
    }

    #[test]
    fn a_parsed_program_always_fits_the_tape() {
        // Each expression of a parsed program is emitted once: at most 512 operations, 128 statements
        // and two instructions per clause, under the tape's 768.
        for program in [library::per_signal(), library::per_interval()] {
            assert!(tape(&program).unwrap().len() <= TAPE);
        }
        // Bytecode built elsewhere may share one expression between clauses and exceed it.
        let mut ops = vec![Op::Const(1)];
        for _ in 0..255 {
            ops.extend([Op::Const(1), Op::Binary(Binary::Add)]);
        }
        let cond = sluice_cc::program::Expr { start: 0, len: ops.len() as u16 };
        let clause = |first| sluice_cc::program::Clause { cond, first, len: 1 };
        let shared =
            Program::new(Vec::new(), ops, vec![Stmt::Report, Stmt::Report], vec![clause(0), clause(1)]).unwrap();
        assert_eq!(tape(&shared).unwrap_err(), "the program's tape has 1028 instructions, the BPF side holds 768");
    }
}
