//! A plain-text table of a [`Summary`] for the terminal (fits in 100 columns unless a value is wider than
//! its column, which then widens).

use std::fmt::Write;

use sluice_core::{Time, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};

use crate::summary::{BucketStats, LinkUtilisation, Peak, Summary};

/// First line of the table.
const TITLE: &str = "FCT slowdown by flow size (long-lived flows excluded)";
/// Header of the bucket label column.
const SIZE_HEADER: &str = "flow size";

/// Column headers after the bucket label, and their widths.
const COLUMNS: [(&str, usize); 9] = [
    ("count", 8),
    ("unfin", 7),
    ("avg", 8),
    ("p50", 8),
    ("p95", 8),
    ("p99", 8),
    ("p99.9", 8),
    ("fct avg us", 12),
    ("fct p99 us", 12),
];

/// Renders `summary` as an aligned table: one row per size bucket and one for all flows, with count,
/// unfinished flows, slowdown mean and percentiles and FCT; then one line each for throughput, buffers,
/// drops, ECN, PFC, retransmissions, unfinished and long-lived flows, and the run itself (with wall time).
pub fn render_table(summary: &Summary) -> String {
    let rows: Vec<&BucketStats> = summary.buckets.iter().chain([&summary.overall]).collect();
    let label_width = rows.iter().map(|b| b.label.len()).max().unwrap_or(0).max(SIZE_HEADER.len());
    let cells: Vec<Vec<String>> = rows.iter().map(|b| bucket_cells(b)).collect();
    // A column widens for a value longer than it, so that neighbours never run together.
    let widths: Vec<usize> = COLUMNS
        .iter()
        .enumerate()
        .map(|(k, (_, width))| cells.iter().map(|row| row[k].len() + 1).fold(*width, usize::max))
        .collect();
    let mut out = String::from(TITLE);
    out.push('\n');
    let header: Vec<String> = COLUMNS.iter().map(|(name, _)| name.to_string()).collect();
    push_row(&mut out, label_width, &widths, SIZE_HEADER, &header);
    for (bucket, row) in rows.iter().zip(&cells) {
        push_row(&mut out, label_width, &widths, &bucket.label, row);
    }
    out.push('\n');
    for (name, value) in total_lines(summary) {
        let _ = writeln!(out, "{name:<15}{value}");
    }
    out
}

/// Nanoseconds of a summary in picoseconds, for [`human_time`].
fn ps(ns: f64) -> Time {
    (ns * 1e3).round() as Time
}

fn push_row(out: &mut String, label_width: usize, widths: &[usize], label: &str, cells: &[String]) {
    let _ = write!(out, "{label:<label_width$}");
    for (width, cell) in widths.iter().zip(cells) {
        let _ = write!(out, "{cell:>width$}");
    }
    out.push('\n');
}

fn bucket_cells(b: &BucketStats) -> Vec<String> {
    let fixed = |v: Option<f64>, decimals: usize| v.map_or("-".to_string(), |v| format!("{v:.decimals$}"));
    let s = b.slowdown;
    vec![
        b.count.to_string(),
        b.unfinished.to_string(),
        fixed(s.map(|s| s.avg), 2),
        fixed(s.map(|s| s.p50), 2),
        fixed(s.map(|s| s.p95), 2),
        fixed(s.map(|s| s.p99), 2),
        fixed(s.map(|s| s.p999), 2),
        fixed(b.fct_ns.map(|f| f.avg / 1e3), 2),
        fixed(b.fct_ns.map(|f| f.p99 / 1e3), 2),
    ]
}

fn total_lines(s: &Summary) -> Vec<(&'static str, String)> {
    let t = &s.totals;
    let ll = &s.long_lived;
    let peak =
        |p: &Option<Peak>| p.as_ref().map_or("-".to_string(), |p| format!("{} at {}", human_bytes(p.bytes), p.at));
    let jain = ll.jain_fairness.map_or("-".to_string(), |j| format!("{j:.3}"));
    vec![
        (
            "throughput",
            format!(
                "{:.2} Gbps goodput ({:.2} while active), {:.2} sent, over {} simulated",
                t.goodput_gbps,
                t.goodput_while_active_gbps,
                t.bytes_sent_over_sim_time_gbps,
                human_time(ps(s.run.sim_time_ns))
            ),
        ),
        ("link use", utilisation_line(t.link_utilisation.as_ref())),
        ("max buffer", format!("switch {}; port {}", peak(&t.max_switch_buffer), peak(&t.max_port_queue))),
        (
            "drops",
            format!(
                "{} data packets ({}), {} control packets",
                t.data_drops,
                human_bytes(t.bytes_dropped),
                t.control_drops
            ),
        ),
        ("ECN marks", t.ecn_marks.to_string()),
        ("PFC pauses", format!("{} pauses, {} paused", t.pfc_pauses, human_time(ps(t.pfc_pause_time_ns)))),
        ("retransmitted", human_bytes(t.retransmitted_bytes)),
        ("unfinished", unfinished_line(s)),
        ("long-lived", format!("{} flows, {:.3} Gbps total, Jain index {jain}", ll.count, ll.total_gbps)),
        ("run", run_line(s)),
    ]
}

fn utilisation_line(u: Option<&LinkUtilisation>) -> String {
    u.map_or("-".to_string(), |u| {
        format!("max {:.1}% at {}, mean {:.1}% over {} switch ports", u.max * 100.0, u.max_at, u.mean * 100.0, u.ports)
    })
}

fn unfinished_line(s: &Summary) -> String {
    let o = &s.overall;
    let mut line = format!("{} of {} flows", o.unfinished, o.count);
    if o.not_started > 0 {
        line += &format!(" ({} never started)", o.not_started);
    }
    if s.run.hit_time_limit {
        line += " (the run hit its time limit)";
    }
    line
}

fn run_line(s: &Summary) -> String {
    let r = &s.run;
    let rate = if s.wall_seconds > 0.0 {
        format!(" ({:.0} events/s)", r.events as f64 / s.wall_seconds)
    } else {
        String::new()
    };
    format!("seed {}, {} events, {} packet hops, {:.2} s wall{rate}", r.seed, r.events, r.packet_hops, s.wall_seconds)
}

/// Bytes with a decimal unit and three decimals (`"1.234 MB"`), or plain bytes below 1000.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "KB")];
    match UNITS.iter().find(|(unit, _)| bytes >= *unit) {
        Some((unit, name)) => format!("{:.3} {name}", bytes as f64 / *unit as f64),
        None => format!("{bytes} B"),
    }
}

/// A picosecond time in the largest unit not above it, with three decimals (`"10.000 ms"`).
fn human_time(ps: Time) -> String {
    const UNITS: [(Time, &str); 4] = [(PS_PER_S, "s"), (PS_PER_MS, "ms"), (PS_PER_US, "us"), (PS_PER_NS, "ns")];
    match UNITS.iter().find(|(unit, _)| ps >= *unit) {
        Some((unit, name)) => format!("{:.3} {name}", ps as f64 / *unit as f64),
        None => format!("{ps} ps"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buckets::Buckets;
    use crate::records::{FlowRecord, RunInfo};

    fn summary() -> Summary {
        let flows: Vec<FlowRecord> = (0..1000u64)
            .map(|i| FlowRecord {
                id: i,
                src: 0,
                dst: 1,
                size: 1 + i * 1_999,
                delivered: 0,
                start: 0,
                finish: (i % 100 != 7 && i % 100 != 17).then_some(1_000_000 + i * 10_000),
                ideal_fct: 1_000_000,
                retransmitted_bytes: 0,
                long_lived: false,
                group: 0,
                received: 0,
                started: i % 100 != 17,
            })
            .collect();
        let run =
            RunInfo { seed: 7, sim_time: 10 * PS_PER_MS, events: 123_456_789, wall_seconds: 2.5, ..RunInfo::default() };
        Summary::compute(&flows, &[], &[], &run, &Buckets::default())
    }

    #[test]
    fn table_is_aligned_and_fits_100_columns() {
        let text = render_table(&summary());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 100), "{text}");
        assert!(lines[1].starts_with("flow size") && lines[1].ends_with("fct p99 us"), "{text}");
        let table_width = lines[1].len();
        assert!(lines[2..7].iter().all(|l| l.len() == table_width), "{text}");
        assert!(lines[2].starts_with("<10KB "), "{text}");
        assert!(lines[6].starts_with("all "), "{text}");
        assert!(text.contains("unfinished     20 of 1000 flows (10 never started)"), "{text}");
        assert!(text.contains("over 10.000 ms simulated"), "{text}");
        assert!(text.contains("2.50 s wall (49382716 events/s)"), "{text}");
    }

    #[test]
    fn slowdowns_wider_than_their_column_stay_apart() {
        let mut s = summary();
        let stats = s.overall.slowdown.as_mut().unwrap();
        (stats.avg, stats.p50, stats.p95) = (33_275.16, 33_376.3, 59_790.12);
        let text = render_table(&s);
        let all = text.lines().find(|l| l.starts_with("all ")).unwrap();
        assert!(all.contains(" 33275.16 33376.30 59790.12 "), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2..7].iter().all(|l| l.len() == lines[1].len()), "still aligned: {text}");
    }

    #[test]
    fn empty_buckets_show_dashes() {
        let s = Summary::compute(&[], &[], &[], &RunInfo::default(), &Buckets::default());
        let text = render_table(&s);
        assert!(text.lines().nth(2).unwrap().trim_end().ends_with("-"), "{text}");
        assert!(text.contains("Jain index -"), "{text}");
        assert!(text.contains("0 flows, 0.000 Gbps total"), "no negative zero: {text}");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_234_567), "1.235 MB");
        assert_eq!(human_time(1_500), "1.500 ns");
        assert_eq!(human_time(999), "999 ps");
        assert_eq!(human_time(2 * PS_PER_S), "2.000 s");
    }
}
