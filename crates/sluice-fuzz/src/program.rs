//! Datapath programs (`sluice_cc::program`): their text form, and bytecode built from raw bytes.
//!
//! Text: a refused program names a line and column inside the text and says what is wrong; an
//! accepted one verifies, rebuilds from its parts to itself, and runs on every kind of signal. Bytecode
//! (an input starting with a 0 byte): whatever the verifier accepts runs without a panic, which is
//! what lets a datapath run programs it did not parse.

use std::sync::Arc;

use sluice_cc::program::{
    Binary, Clause, Expr, Field, Input, Machine, Op, Program, Register, Scope, Stmt, Unary, FIELD_COUNT,
};
use sluice_cc::{Ack, Feedback, FlowInfo, HostSignal, IntHop, Loss, LossKind, Sent};

/// Text or bytecode, by the first byte.
pub fn run(data: &[u8]) {
    match data.split_first() {
        Some((0, rest)) => bytecode(rest),
        _ => text(data),
    }
}

fn text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let program = match Program::parse(text) {
        Ok(program) => program,
        Err(e) => {
            let lines = text.split('\n').count() as u32;
            assert!(e.line >= 1 && e.line <= lines.max(1), "line {} of {lines}: {e}", e.line);
            assert!(e.column >= 1, "column {}: {e}", e.column);
            assert!(!e.message.is_empty());
            return;
        }
    };
    assert_eq!(program.verify(), Ok(()));
    let rebuilt = Program::new(
        program.registers().to_vec(),
        program.ops().to_vec(),
        program.stmts().to_vec(),
        program.clauses().to_vec(),
    );
    assert_eq!(rebuilt.as_ref(), Ok(&program), "a parsed program is its parts");
    exercise(Arc::new(program), data);
}

/// Runs the program on one signal of every kind, with values drawn from the input.
fn exercise(program: Arc<Program>, data: &[u8]) {
    let values: Vec<(u8, u64)> =
        data.chunks(9).take(4).map(|c| (c[0], c[1..].iter().fold(0u64, |v, b| v << 8 | *b as u64))).collect();
    let mut machine = Machine::new(Arc::clone(&program), 0, &values);
    let n = |i: usize| data.get(i).copied().unwrap_or(0) as u64 * 1000;
    let flow = FlowInfo {
        flow_id: 1,
        mss: 1000,
        header_bytes: 48,
        line_rate: 100_000_000_000,
        base_rtt: n(0) + 1,
        hops: 2,
        size: None,
        start: 0,
    };
    let hops = [IntHop { ts: n(1), tx_bytes: n(2), qlen: n(3), rate: n(4) }];
    let mut ack = Ack::single(n(5), 1, n(6) % 2 == 1, Some(n(7)), n(8), n(9), n(10), n(11));
    ack.int = &hops;
    ack.delivery_rate = Some(n(12));
    let loss = Loss { kind: LossKind::Timeout, count: n(13) as u32, in_flight: n(14), snd_nxt: n(15) };
    let sent = Sent { bytes: n(16), packets: 1, retransmitted_bytes: 0 };
    let feedback = Feedback::QueueNotification { queue: n(17), link_rate: n(18), at: n(19), sent_at: n(20) };
    let host = HostSignal { iio_occupancy: n(21), pcie_utilization: n(22) as f64 / 1e5, at: n(23) };
    let inputs = [
        Input::at(1, &flow).ack(&ack, true),
        Input::at(2, &flow).loss(&loss),
        Input::at(3, &flow).sent(&sent),
        Input::at(4, &flow).cnp(),
        Input::at(5, &flow).feedback(&feedback),
        Input::at(6, &flow).probe(n(24)),
        Input::at(7, &flow).host(&host),
        Input::at(u64::MAX, &flow).tick(),
    ];
    for input in inputs.iter().cycle().take(24) {
        let outcome = machine.run(input);
        assert!(!outcome.urgent || outcome.report, "an urgent report is a report");
        assert_eq!(machine.registers().len(), program.registers().len());
        if outcome.report {
            machine.reset_volatile();
        }
    }
}

/// A program from raw bytes: a register count, then (kind, operand) pairs as one expression that a
/// clause tests and assigns; only what the verifier accepts runs.
fn bytecode(data: &[u8]) {
    let Some((&count, rest)) = data.split_first() else { return };
    let registers = (0..count % 40)
        .map(|i| Register {
            name: format!("r{i}"),
            scope: if i % 5 == 4 { Scope::Control } else { Scope::Report },
            init: i as u64,
            volatile: i % 3 == 0,
        })
        .collect();
    const BINARY: [Binary; 20] = [
        Binary::Add,
        Binary::Sub,
        Binary::Mul,
        Binary::Div,
        Binary::Rem,
        Binary::Min,
        Binary::Max,
        Binary::Lt,
        Binary::Le,
        Binary::Gt,
        Binary::Ge,
        Binary::Eq,
        Binary::Ne,
        Binary::And,
        Binary::Or,
        Binary::BitAnd,
        Binary::BitOr,
        Binary::BitXor,
        Binary::Shl,
        Binary::Shr,
    ];
    let ops: Vec<Op> = rest
        .chunks_exact(2)
        .take(600)
        .map(|pair| {
            let arg = pair[1];
            match pair[0] % 6 {
                0 => Op::Const(arg as u64 * 0x0101_0101_0101_0101),
                1 => Op::Field(Field::ALL[arg as usize % FIELD_COUNT]),
                2 => Op::Load(arg % 40),
                3 => Op::Unary(if arg % 2 == 0 { Unary::Not } else { Unary::Bits }),
                4 => Op::Binary(BINARY[arg as usize % BINARY.len()]),
                _ => Op::Select,
            }
        })
        .collect();
    let expr = Expr { start: 0, len: ops.len() as u16 };
    let reg = rest.first().copied().unwrap_or(0) % 40;
    let stmts = vec![Stmt::Assign { reg, expr }, Stmt::Wake(expr), Stmt::Fallthrough, Stmt::Urgent];
    let clauses = vec![Clause { cond: expr, first: 0, len: 3 }, Clause { cond: expr, first: 3, len: 1 }];
    if let Ok(program) = Program::new(registers, ops, stmts, clauses) {
        exercise(Arc::new(program), data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_programs_run() {
        for text in [
            sluice_cc::program::library::per_signal_text(),
            sluice_cc::program::library::per_interval_text(),
            sluice_cc::dctcp_burst::PROGRAM.to_string(),
        ] {
            run(text.as_bytes());
        }
        run(&[0, 3, 0, 7, 2, 1, 4, 0]);
        run(b"(def (Report (a 0))) (when (/ Report.a 0) (report))");
    }
}
