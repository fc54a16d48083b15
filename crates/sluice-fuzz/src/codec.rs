//! The kernel agent's message codec: reports parsed from the BPF ring buffer's untrusted bytes.
//!
//! The codec is compiled here from `sluice-kernel`'s source file: it is pure Rust, while depending on
//! `sluice-kernel` would build its BPF objects and libbpf, which the fuzzer does not need.

// Decisions and flags are the agent's; only reports are parsed from peer bytes. The file's doc links
// point into `sluice-kernel` (its loader), and resolve there.
#[allow(dead_code, rustdoc::broken_intra_doc_links)]
#[path = "../../sluice-kernel/src/codec.rs"]
mod kernel;

pub use kernel::{Kind, Message, ProgramReport, Report, REPORT_BYTES};

/// Parses the input as a message (a report or a program's report); an accepted one must encode back to
/// bytes that parse to itself.
pub fn run(data: &[u8]) {
    match Message::parse(data) {
        Ok(Message::Report(report)) => {
            let again = Report::parse(&report.encode());
            assert_eq!(again.as_ref(), Ok(&report), "a parsed report does not round-trip");
        }
        Ok(Message::Program(report)) => {
            let again = ProgramReport::parse(&report.encode());
            assert_eq!(again.as_ref(), Ok(&report), "a parsed program report does not round-trip");
        }
        Err(e) => drop(e.to_string()),
    }
}

/// Seed messages made by the codec itself: one of each kind, with none, some and all RTT samples, and
/// program reports with none, some and all registers.
pub fn seed_messages() -> Vec<(String, Vec<u8>)> {
    let kinds = [("start", Kind::Start), ("report", Kind::Report), ("end", Kind::End)];
    let mut seeds = Vec::new();
    for (name, kind) in kinds {
        for samples in [0, 3, kernel::RTT_SAMPLES] {
            let report = sample_report(kind, samples);
            seeds.push((format!("{name}-{samples}-rtts"), report.encode().to_vec()));
        }
    }
    for registers in [0, 22, kernel::REGISTERS] {
        let report = ProgramReport {
            slot: 4,
            flow_id: 42,
            epoch: 3,
            seq: 8,
            now_ns: 2_000_000,
            install: 1,
            flags: kernel::F_URGENT,
            mss: 1448,
            cwnd_pkts: 10,
            in_flight_pkts: 9,
            srtt_us: 50,
            snd_una: 1 << 20,
            snd_nxt: (1 << 20) + 14_480,
            lport: 40_000,
            rport: 5201,
            signals: 1,
            registers: (0..registers as u64).map(|i| i * 1448).collect(),
            ..ProgramReport::default()
        };
        seeds.push((format!("program-{registers}-registers"), report.encode().to_vec()));
    }
    seeds
}

fn sample_report(kind: Kind, samples: usize) -> Report {
    Report {
        kind: Some(kind),
        slot: 1,
        flow_id: 42,
        epoch: 3,
        seq: 7,
        now_ns: 2_000_000,
        first_ns: 1_990_000,
        acks: 16,
        acked_pkts: 16,
        acked_bytes: 16 * 1448,
        ece_bytes: 1448,
        ece_pkts: 1,
        losses: u32::from(kind == Kind::Report),
        mss: 1448,
        cwnd_pkts: 10,
        in_flight_pkts: 9,
        srtt_us: 50,
        snd_una: 1 << 20,
        snd_nxt: (1 << 20) + 14_480,
        delivery_bps: 10_000_000_000,
        lport: 40_000,
        rport: 5201,
        flags: kernel::F_URGENT,
        rtt_us: (0..samples as u32).map(|i| 40 + i).collect(),
        ..Report::default()
    }
}
