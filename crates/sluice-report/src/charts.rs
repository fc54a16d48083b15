//! The charts and tables of one or more overlaid runs.

use crate::html::{legend, table, Kind, Part, Section};
use crate::run::{Point, RunData, Series};
use crate::svg::{self, bytes, color, render, Axis, Line, Plot, Scale};

/// How many equal-count flow groups the slowdown-versus-size chart has (the HPCC and Homa papers' choice).
const SIZE_GROUPS: usize = 20;

/// The most points a CDF line gets; more flows are thinned to evenly spaced quantiles.
const CDF_POINTS: usize = 400;

/// A run and the name it has in legends.
pub struct Named<'a> {
    /// The run.
    pub run: &'a RunData,
    /// Its label.
    pub label: &'a str,
}

/// One equal-count group of flows, sorted by size.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeGroup {
    /// The group's middle, as a percentile of all flows (0 to 100).
    pub percentile: f64,
    /// The median size of the group's flows, in bytes.
    pub size: f64,
    /// Median slowdown of the group.
    pub p50: f64,
    /// 99th-percentile slowdown of the group.
    pub p99: f64,
}

/// Splits flows `(size, slowdown)` sorted by size into at most `groups` groups of (nearly) equal count.
pub fn size_groups(flows: &[(f64, f64)], groups: usize) -> Vec<SizeGroup> {
    let mut sorted = flows.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let n = sorted.len();
    let groups = groups.min(n);
    (0..groups)
        .map(|g| {
            let (start, end) = (g * n / groups, (g + 1) * n / groups);
            let group = &sorted[start..end];
            let mut slowdowns: Vec<f64> = group.iter().map(|f| f.1).collect();
            slowdowns.sort_by(f64::total_cmp);
            SizeGroup {
                percentile: (start + end) as f64 / 2.0 / n as f64 * 100.0,
                size: group[group.len() / 2].0,
                p50: nearest_rank(&slowdowns, 0.5),
                p99: nearest_rank(&slowdowns, 0.99),
            }
        })
        .collect()
}

/// The nearest-rank percentile `q` (0 to 1) of non-empty sorted values.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The sizes at the 10th to 90th percentiles of the flows, as x ticks of the percentile axis (the
/// smallest and largest sizes would not fit at the ends).
fn size_ticks(flows: &[(f64, f64)]) -> Vec<(f64, String)> {
    let mut sizes: Vec<f64> = flows.iter().map(|f| f.0).collect();
    sizes.sort_by(f64::total_cmp);
    (1..10).map(|i| (i as f64 * 10.0, bytes(nearest_rank(&sizes, i as f64 / 10.0)))).collect()
}

/// FCT slowdown (p50 and p99) against flow size, on a percentile axis.
pub fn slowdown_by_size(runs: &[Named]) -> Part {
    let Some(first) = runs.iter().find(|r| !r.run.flows.is_empty()) else {
        return Part::Missing("No finished flows with a size: the slowdown charts are left out.".into());
    };
    let mut lines = Vec::new();
    for (i, named) in runs.iter().enumerate() {
        let groups = size_groups(&named.run.flows, SIZE_GROUPS);
        let series = |pick: fn(&SizeGroup) -> f64| groups.iter().map(|g| (g.percentile, Some(pick(g)))).collect();
        let mut p50 = Line::new(format!("{} p50", named.label), color(i), series(|g| g.p50));
        let mut p99 = Line::new(format!("{} p99", named.label), color(i), series(|g| g.p99));
        p50.dots = true;
        p99.dots = true;
        p99.dashed = true;
        lines.extend([p50, p99]);
    }
    let plot = Plot {
        x: Axis::new("flow size (bytes; x is the flow-count percentile)", Scale::Linear)
            .with_range(0.0, 100.0)
            .with_ticks(size_ticks(&first.run.flows)),
        y: Axis::new("FCT slowdown (log)", Scale::Log),
        lines,
        highlights: Vec::new(),
    };
    let note = format!(
        "Finished flows sorted by size in {SIZE_GROUPS} groups of equal count; p50 solid, p99 dashed. Size ticks \
         are of {}.",
        first.label
    );
    chart("FCT slowdown vs flow size", note, plot)
}

/// The distribution of slowdown over all finished flows with a size.
pub fn slowdown_cdf(runs: &[Named]) -> Part {
    let mut lines = Vec::new();
    for (i, named) in runs.iter().enumerate() {
        let mut slowdowns: Vec<f64> = named.run.flows.iter().map(|f| f.1).collect();
        if slowdowns.is_empty() {
            continue;
        }
        slowdowns.sort_by(f64::total_cmp);
        let mut line = Line::new(named.label, color(i), cdf_points(&slowdowns));
        line.step = true;
        lines.push(line);
    }
    if lines.is_empty() {
        return Part::Missing("No finished flows with a size: the slowdown CDF is left out.".into());
    }
    let plot = Plot {
        x: Axis::new("FCT slowdown (log)", Scale::Log),
        y: Axis::new("fraction of flows", Scale::Linear).with_range(0.0, 1.0),
        lines,
        highlights: Vec::new(),
    };
    chart("Slowdown CDF", "Finished flows with a size, long-lived flows excluded.".into(), plot)
}

/// `(value, fraction of values <= it)` for sorted values, thinned to at most [`CDF_POINTS`].
fn cdf_points(sorted: &[f64]) -> Vec<(f64, Option<f64>)> {
    let n = sorted.len();
    let count = n.min(CDF_POINTS);
    (1..=count)
        .map(|k| {
            let rank = (k * n).div_ceil(count);
            (sorted[rank - 1], Some(rank as f64 / n as f64))
        })
        .collect()
}

/// The per-bucket slowdown table of every run, and a few totals.
pub fn bucket_table(runs: &[Named]) -> Part {
    let overlay = runs.len() > 1;
    let mut header = vec!["bucket", "count", "unfinished", "avg", "p50", "p99", "p99.9"];
    if overlay {
        header.insert(0, "run");
    }
    let mut rows = Vec::new();
    for named in runs {
        for bucket in &named.run.buckets {
            let mut row = vec![svg::escape(&bucket.label), bucket.count.to_string(), bucket.unfinished.to_string()];
            row.extend(bucket.slowdown.iter().map(|s| s.map_or("–".into(), |v| format!("{v:.3}"))));
            if overlay {
                row.insert(0, svg::escape(named.label));
            }
            rows.push(row);
        }
    }
    let mut body = table(&header, &rows, &[]);
    body.push_str(&totals_table(runs));
    Part::Box(Section {
        kind: Kind::Table,
        title: "FCT slowdown per flow-size bucket".into(),
        note: "From summary.json; the overall row is every flow.".into(),
        body,
    })
}

fn totals_table(runs: &[Named]) -> String {
    let Some(first) = runs.first() else { return String::new() };
    let mut header = vec!["run"];
    header.extend(first.run.totals.iter().map(|(name, _)| name.as_str()));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|named| {
            let mut row = vec![svg::escape(named.label)];
            row.extend(named.run.totals.iter().map(|(_, value)| svg::escape(value)));
            row
        })
        .collect();
    format!("<h3>Totals</h3>{}", table(&header, &rows, &[]))
}

/// Time axis unit for times up to `max_ns`: µs below a millisecond, else ms.
fn time_unit(max_ns: f64) -> (f64, &'static str) {
    if max_ns < 1e6 {
        (1e3, "µs")
    } else {
        (1e6, "ms")
    }
}

fn max_time<'a>(series: impl Iterator<Item = &'a Series>) -> f64 {
    series.flat_map(|s| s.points.iter().map(|p| p.0)).fold(0.0, f64::max)
}

/// A time series longer than twice this is thinned to this many runs of consecutive points.
const THIN_BUCKETS: usize = 1500;

/// The note added to a chart whose series were thinned.
const THINNED: &str = " Long series are thinned to the lowest and highest value of each stretch of samples.";

/// One line per (run, series) over time, the time axis in µs or ms, values scaled by `scale`; lines are
/// named with their run's label when `overlay`. Also says whether a series had to be thinned.
fn time_lines<'a>(
    groups: &[(&str, Vec<&'a Series>)],
    points: fn(&Series) -> &[Point],
    scale: f64,
    overlay: bool,
) -> (Vec<Line>, &'static str, bool) {
    let (divisor, unit) = time_unit(max_time(groups.iter().flat_map(|g| g.1.iter().copied())));
    let mut lines = Vec::new();
    let mut thinned = false;
    for (run_label, series) in groups {
        for s in series {
            let name = if overlay { format!("{run_label}: {}", s.label) } else { s.label.clone() };
            let scaled: Vec<Point> = points(s).iter().map(|&(t, v)| (t / divisor, v.map(|v| v / scale))).collect();
            thinned |= scaled.len() > 2 * THIN_BUCKETS;
            lines.push(Line::new(name, color(lines.len()), thin(&scaled, THIN_BUCKETS)));
        }
    }
    (lines, unit, thinned)
}

/// Thins a series of more than `2 * buckets` points to the lowest and highest point of each of `buckets`
/// stretches of consecutive points, in time order, so that peaks and dips survive; a stretch with a gap
/// starts with one.
pub fn thin(points: &[Point], buckets: usize) -> Vec<Point> {
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let mut thinned = Vec::with_capacity(2 * buckets + 1);
    for stretch in points.chunks(points.len().div_ceil(buckets)) {
        if stretch.iter().any(|p| p.1.is_none()) {
            thinned.push((stretch[0].0, None));
        }
        let set = stretch.iter().enumerate().filter_map(|(i, p)| Some((i, p.1?)));
        let lowest = set.clone().min_by(|a, b| a.1.total_cmp(&b.1));
        let highest = set.max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(low), Some(high)) = (lowest, highest) {
            let (first, second) = if low.0 <= high.0 { (low.0, high.0) } else { (high.0, low.0) };
            thinned.push(stretch[first]);
            if second != first {
                thinned.push(stretch[second]);
            }
        }
    }
    thinned
}

/// Throughput over time, one chart per kind of bytes (payload of flows, wire bytes of ports).
pub fn throughput(runs: &[Named]) -> Vec<Part> {
    let kinds = [("payload", "Flow throughput (payload bytes)"), ("wire", "Port throughput (wire bytes)")];
    let mut parts = Vec::new();
    for (kind, title) in kinds {
        let groups: Vec<(&str, Vec<&Series>)> = runs
            .iter()
            .map(|n| (n.label, n.run.throughput.iter().filter(|s| s.kind == kind).collect::<Vec<_>>()))
            .filter(|g| !g.1.is_empty())
            .collect();
        if groups.is_empty() {
            continue;
        }
        let (lines, unit, thinned) = time_lines(&groups, |s| &s.points, 1.0, runs.len() > 1);
        let plot = Plot {
            x: Axis::new(format!("time ({unit})"), Scale::Linear),
            y: Axis::new("throughput (Gbps)", Scale::Linear),
            lines,
            highlights: Vec::new(),
        };
        let mut note = String::from("From throughput.csv: each point is one sampling interval, plotted at its end.");
        if thinned {
            note.push_str(THINNED);
        }
        parts.push(chart(title, note, plot));
    }
    if parts.is_empty() {
        parts.push(Part::Missing(
            "No throughput samples (output.throughput_flows and output.throughput_ports were empty): the \
             throughput charts are left out."
                .into(),
        ));
    }
    parts
}

/// Queue occupancy over time of the sampled ports, when `throughput.csv` has `queue_bytes`.
pub fn queues(runs: &[Named]) -> Part {
    if !runs.iter().any(|n| n.run.has_queue_column) {
        return Part::Missing(
            "throughput.csv has no queue_bytes column: the queue occupancy chart is left out.".into(),
        );
    }
    let groups: Vec<(&str, Vec<&Series>)> = runs
        .iter()
        .map(|n| (n.label, n.run.throughput.iter().filter(|s| !s.queue.is_empty()).collect::<Vec<_>>()))
        .filter(|g| !g.1.is_empty())
        .collect();
    if groups.is_empty() {
        return Part::Missing("No sampled port has queue samples: the queue occupancy chart is left out.".into());
    }
    let (lines, unit, thinned) = time_lines(&groups, |s| &s.queue, 1e3, runs.len() > 1);
    let plot = Plot {
        x: Axis::new(format!("time ({unit})"), Scale::Linear),
        y: Axis::new("queue (KB)", Scale::Linear),
        lines,
        highlights: Vec::new(),
    };
    let mut note = String::from("Each sampled port's queue at the end of every sampling interval.");
    if thinned {
        note.push_str(THINNED);
    }
    chart("Queue occupancy", note, plot)
}

/// One chart per traced congestion-control variable.
pub fn traces(runs: &[Named]) -> Vec<Part> {
    let mut variables: Vec<&String> = runs.iter().flat_map(|n| n.run.traces.keys()).collect();
    variables.sort();
    variables.dedup();
    if variables.is_empty() {
        return vec![Part::Missing(
            "No traced flows (output.trace_flows was empty): the CC variable charts are left out.".into(),
        )];
    }
    variables
        .into_iter()
        .map(|variable| {
            let groups: Vec<(&str, Vec<&Series>)> = runs
                .iter()
                .filter_map(|n| Some((n.label, n.run.traces.get(variable)?.iter().collect::<Vec<_>>())))
                .collect();
            let set = groups.iter().flat_map(|g| &g.1).any(|s| s.points.iter().any(|p| p.1.is_some()));
            if !set {
                return Part::Missing(format!("{variable} was never set in the traced flows: its chart is left out."));
            }
            let (mut lines, unit, thinned) = time_lines(&groups, |s| &s.points, 1.0, runs.len() > 1);
            // A variable keeps its value until the next row: a staircase, not a slope.
            lines.iter_mut().for_each(|line| line.step = true);
            let plot = Plot {
                x: Axis::new(format!("time ({unit})"), Scale::Linear),
                y: Axis::new(variable.as_str(), Scale::Linear),
                lines,
                highlights: Vec::new(),
            };
            let mut note = String::from("From trace.csv; gaps are times the variable was unset.");
            if thinned {
                note.push_str(THINNED);
            }
            chart(&format!("CC variable: {variable}"), note, plot)
        })
        .collect()
}

/// The most lines one chart draws: more (`throughput_flows = "all"`) would be an unreadable tangle.
const MAX_LINES: usize = 20;

/// A chart box: the plot and its legend; lines beyond the twentieth are left out, and the note says so.
pub fn chart(title: &str, mut note: String, mut plot: Plot) -> Part {
    if plot.lines.len() > MAX_LINES {
        note.push_str(&format!(" Showing the first {MAX_LINES} of {} lines.", plot.lines.len()));
        plot.lines.truncate(MAX_LINES);
    }
    let body = format!("{}{}", render(&plot), legend(&plot.lines));
    Part::Box(Section { kind: Kind::Chart, title: title.into(), note, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_have_equal_counts_and_their_own_percentiles() {
        let flows: Vec<(f64, f64)> = (0..100).map(|i| (1000.0 * (100 - i) as f64, 1.0 + i as f64)).collect();
        let groups = size_groups(&flows, 20);
        assert_eq!(groups.len(), 20);
        assert_eq!(groups[0], SizeGroup { percentile: 2.5, size: 3000.0, p50: 98.0, p99: 100.0 });
        assert_eq!(groups[19].percentile, 97.5);
        assert_eq!(size_groups(&flows[..3], 20).len(), 3);
    }

    #[test]
    fn charts_draw_at_most_twenty_lines() {
        let lines = (0..25).map(|i| Line::new(format!("flow {i}"), color(i), vec![(0.0, Some(1.0))])).collect();
        let plot =
            Plot { x: Axis::new("x", Scale::Linear), y: Axis::new("y", Scale::Linear), lines, highlights: vec![] };
        let Part::Box(section) = chart("t", "Note.".into(), plot) else { panic!("a chart is a box") };
        assert_eq!(section.note, "Note. Showing the first 20 of 25 lines.");
        assert_eq!(section.body.matches("<li>").count(), 20);
    }

    #[test]
    fn thinning_keeps_peaks_dips_and_gaps_in_time_order() {
        let points: Vec<Point> = (0..12).map(|i| (i as f64, Some([5.0, 9.0, 1.0][i % 3]))).collect();
        assert_eq!(thin(&points, 6), points, "short series are kept");
        assert_eq!(thin(&points, 2), vec![(2.0, Some(1.0)), (4.0, Some(9.0)), (8.0, Some(1.0)), (10.0, Some(9.0))]);
        let mut gappy = points.clone();
        gappy[7].1 = None;
        assert_eq!(thin(&gappy, 2)[2..], [(6.0, None), (8.0, Some(1.0)), (10.0, Some(9.0))]);
    }

    #[test]
    fn cdf_ends_at_one_and_thins_large_inputs() {
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        let points = cdf_points(&values);
        assert_eq!(points.len(), CDF_POINTS);
        assert_eq!(points.last(), Some(&(1000.0, Some(1.0))));
        assert_eq!(cdf_points(&[2.0, 3.0]), vec![(2.0, Some(0.5)), (3.0, Some(1.0))]);
    }
}
