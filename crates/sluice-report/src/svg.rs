//! Hand-written SVG charts: line charts on linear or log axes, and heat maps. Every number is printed with
//! fixed precision, so the same data always gives the same bytes.

use std::fmt::Write;

/// Width and height of every chart's coordinate system; the SVG scales to its box's width.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 340.0;
/// Space for the tick labels and axis titles around the plotting area.
const LEFT: f64 = 78.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 52.0;

/// Series colours (Tableau 10): distinct on white and for the common kinds of colour blindness.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

/// The colour of series number `index` (repeats after ten).
pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Proportional; starts at zero when every value is non-negative.
    Linear,
    /// Logarithmic (base 10); only positive values are drawn.
    Log,
}

/// One axis: its title (with unit), scale, and optionally fixed ticks and range.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The axis title, unit included: `slowdown`, `time (µs)`.
    pub title: String,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// Ticks at these positions with these labels instead of computed ones.
    pub ticks: Option<Vec<(f64, String)>>,
    /// A fixed range instead of the data's.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// An axis with computed ticks and range.
    pub fn new(title: impl Into<String>, scale: Scale) -> Axis {
        Axis { title: title.into(), scale, ticks: None, range: None }
    }

    /// The same axis with fixed ticks.
    pub fn with_ticks(mut self, ticks: Vec<(f64, String)>) -> Axis {
        self.ticks = Some(ticks);
        self
    }

    /// The same axis with a fixed range.
    pub fn with_range(mut self, low: f64, high: f64) -> Axis {
        self.range = Some((low, high));
        self
    }
}

/// A series drawn as a line; points with `y = None` break it.
#[derive(Debug, Clone)]
pub struct Line {
    /// Shown when hovering the line.
    pub name: String,
    /// CSS colour.
    pub color: &'static str,
    /// The points in x order.
    pub points: Vec<(f64, Option<f64>)>,
    /// Draw as a staircase (a CDF).
    pub step: bool,
    /// Draw dashed (a second statistic of the same series).
    pub dashed: bool,
    /// Draw a dot at every point, with its values on hover.
    pub dots: bool,
}

impl Line {
    /// A plain solid line.
    pub fn new(name: impl Into<String>, color: &'static str, points: Vec<(f64, Option<f64>)>) -> Line {
        Line { name: name.into(), color, points, step: false, dashed: false, dots: false }
    }
}

/// A highlighted point: a ring with a label (the best run of a sweep).
#[derive(Debug, Clone)]
pub struct Highlight {
    /// The point.
    pub at: (f64, f64),
    /// Text next to the ring.
    pub label: String,
}

/// A line chart.
#[derive(Debug, Clone)]
pub struct Plot {
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The series.
    pub lines: Vec<Line>,
    /// Highlighted points.
    pub highlights: Vec<Highlight>,
}

/// Maps data values on one axis to pixel positions.
struct Mapping {
    scale: Scale,
    low: f64,
    high: f64,
    from: f64,
    to: f64,
}

impl Mapping {
    fn position(&self, value: f64) -> f64 {
        let t = |v: f64| if self.scale == Scale::Log { v.log10() } else { v };
        let span = t(self.high) - t(self.low);
        let fraction = if span > 0.0 { (t(value) - t(self.low)) / span } else { 0.5 };
        self.from + fraction * (self.to - self.from)
    }

    fn contains(&self, value: f64) -> bool {
        value.is_finite() && (self.scale == Scale::Linear || value > 0.0)
    }
}

/// The data range of an axis: positive values only on a log axis; `None` without any.
fn data_range(values: impl Iterator<Item = f64>, scale: Scale) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for v in values.filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0)) {
        range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
    }
    range
}

/// The shown range and ticks of an axis, from its data range.
fn layout(axis: &Axis, data: Option<(f64, f64)>) -> ((f64, f64), Vec<(f64, String)>) {
    let range = match (axis.range, data.unwrap_or((1.0, 1.0))) {
        (Some(fixed), _) => fixed,
        (None, (low, high)) if axis.scale == Scale::Log => log_range(low, high),
        (None, (low, high)) => linear_range(low, high),
    };
    let ticks = match &axis.ticks {
        Some(ticks) => ticks.clone(),
        None if axis.scale == Scale::Log => log_ticks(range),
        None => linear_ticks(range),
    };
    (range, ticks)
}

fn linear_range(low: f64, high: f64) -> (f64, f64) {
    let low = if low >= 0.0 { 0.0 } else { low };
    if high > low {
        let step = nice_step((high - low) / 5.0);
        (low, (high / step).ceil() * step)
    } else {
        (low - 1.0, low + 1.0)
    }
}

/// From the largest 1, 2 or 5 times a power of ten at or below `low` to the smallest at or above `high`.
fn log_range(low: f64, high: f64) -> (f64, f64) {
    let power = |v: f64| 10f64.powf(v.log10().floor());
    let below = [5.0, 2.0, 1.0].into_iter().map(|m| m * power(low)).find(|v| *v <= low * 1.000001);
    let above = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power(high)).find(|v| *v >= high / 1.000001);
    let (low, high) = (below.unwrap_or(power(low)), above.unwrap_or(10.0 * power(high)));
    if high > low {
        (low, high)
    } else {
        (low, low * 10.0)
    }
}

/// A step of 1, 2 or 5 times a power of ten, at least `rough`.
fn nice_step(rough: f64) -> f64 {
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|step| *step >= rough).unwrap_or(10.0 * power)
}

fn linear_ticks((low, high): (f64, f64)) -> Vec<(f64, String)> {
    let step = nice_step((high - low) / 5.0);
    let first = (low / step).ceil() as i64;
    let last = (high / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).map(|v| (v, number(v))).collect()
}

fn log_ticks((low, high): (f64, f64)) -> Vec<(f64, String)> {
    let (first, last) = (low.log10().floor() as i32, high.log10().ceil() as i32);
    let multiples: &[f64] = if high / low <= 1000.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut ticks = Vec::new();
    for power in first..=last {
        for m in multiples {
            let v = m * 10f64.powi(power);
            if v >= low / 1.000001 && v <= high * 1.000001 {
                ticks.push((v, number(v)));
            }
        }
    }
    ticks
}

/// A number in at most four significant digits, with k/M/G for thousands, millions and billions.
pub fn number(value: f64) -> String {
    let (scaled, suffix) = match value.abs() {
        a if a >= 1e9 => (value / 1e9, "G"),
        a if a >= 1e6 => (value / 1e6, "M"),
        a if a >= 1e4 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    format!("{}{suffix}", trim(&format!("{scaled:.3}")))
}

/// A size in bytes with the unit sluice uses (powers of 1000): `64KB`, `1.5MB`.
pub fn bytes(value: f64) -> String {
    let (scaled, unit) = match value {
        v if v >= 1e9 => (v / 1e9, "GB"),
        v if v >= 1e6 => (v / 1e6, "MB"),
        v if v >= 1e3 => (v / 1e3, "KB"),
        v => (v, "B"),
    };
    format!("{}{unit}", trim(&format!("{scaled:.1}")))
}

/// Drops trailing zeros (and a trailing point) of a decimal number.
fn trim(text: &str) -> String {
    if text.contains('.') {
        let text = text.trim_end_matches('0').trim_end_matches('.');
        if text == "-0" {
            "0".into()
        } else {
            text.into()
        }
    } else {
        text.into()
    }
}

/// Escapes text for HTML and SVG content and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Renders a line chart as an `<svg>` element.
pub fn render(plot: &Plot) -> String {
    let points = || plot.lines.iter().flat_map(|l| l.points.iter().copied());
    let xs = points().map(|p| p.0).chain(plot.highlights.iter().map(|h| h.at.0));
    let ys = points().filter_map(|p| p.1).chain(plot.highlights.iter().map(|h| h.at.1));
    let (x_range, x_ticks) = layout(&plot.x, data_range(xs, plot.x.scale));
    let (y_range, y_ticks) = layout(&plot.y, data_range(ys, plot.y.scale));
    let x = Mapping { scale: plot.x.scale, low: x_range.0, high: x_range.1, from: LEFT, to: WIDTH - RIGHT };
    let y = Mapping { scale: plot.y.scale, low: y_range.0, high: y_range.1, from: HEIGHT - BOTTOM, to: TOP };
    let mut svg = open_svg();
    draw_axes(&mut svg, &x, &y, &x_ticks, &y_ticks, &plot.x.title, &plot.y.title);
    for line in &plot.lines {
        draw_line(&mut svg, line, &x, &y);
    }
    for highlight in &plot.highlights {
        draw_highlight(&mut svg, highlight, &x, &y);
    }
    svg.push_str("</svg>");
    svg
}

fn open_svg() -> String {
    format!(
        "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         font-family=\"system-ui, sans-serif\" font-size=\"12\">"
    )
}

fn draw_axes(
    svg: &mut String,
    x: &Mapping,
    y: &Mapping,
    x_ticks: &[(f64, String)],
    y_ticks: &[(f64, String)],
    x_title: &str,
    y_title: &str,
) {
    let (left, right, top, bottom) = (x.from, x.to, y.to, y.from);
    for (value, label) in x_ticks.iter().filter(|(v, _)| x.contains(*v)) {
        let px = x.position(*value);
        let _ =
            write!(svg, "<line x1=\"{px:.1}\" y1=\"{top:.1}\" x2=\"{px:.1}\" y2=\"{bottom:.1}\" stroke=\"#e6e6e6\"/>");
        let _ = write!(
            svg,
            "<text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            bottom + 16.0,
            escape(label)
        );
    }
    for (value, label) in y_ticks.iter().filter(|(v, _)| y.contains(*v)) {
        let py = y.position(*value);
        let _ =
            write!(svg, "<line x1=\"{left:.1}\" y1=\"{py:.1}\" x2=\"{right:.1}\" y2=\"{py:.1}\" stroke=\"#e6e6e6\"/>");
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
            left - 6.0,
            py + 4.0,
            escape(label)
        );
    }
    let _ = write!(
        svg,
        "<path d=\"M{left:.1},{top:.1}V{bottom:.1}H{right:.1}\" fill=\"none\" stroke=\"#555\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#111\">{}</text>\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#111\">{}</text>",
        (left + right) / 2.0,
        HEIGHT - 10.0,
        escape(x_title),
        (top + bottom) / 2.0,
        escape(y_title)
    );
}

/// The pixel positions of a line, split where a value is missing or cannot be drawn.
fn segments(line: &Line, x: &Mapping, y: &Mapping) -> Vec<Vec<(f64, f64)>> {
    let mut segments = vec![Vec::new()];
    let mut previous_y: Option<f64> = None;
    for &(px, py) in &line.points {
        match py.filter(|v| y.contains(*v) && x.contains(px)) {
            Some(value) => {
                let current = segments.last_mut().expect("segments is never empty");
                if let (true, Some(before)) = (line.step, previous_y) {
                    current.push((x.position(px), y.position(before)));
                }
                current.push((x.position(px), y.position(value)));
                previous_y = Some(value);
            }
            None => {
                segments.push(Vec::new());
                previous_y = None;
            }
        }
    }
    segments.retain(|s| !s.is_empty());
    segments
}

fn draw_line(svg: &mut String, line: &Line, x: &Mapping, y: &Mapping) {
    let dash = if line.dashed { " stroke-dasharray=\"6 4\"" } else { "" };
    let name = escape(&line.name);
    let mut path = String::new();
    for segment in segments(line, x, y) {
        for (i, (px, py)) in segment.iter().enumerate() {
            let _ = write!(path, "{}{px:.1},{py:.1}", if i == 0 { 'M' } else { 'L' });
        }
        if segment.len() == 1 {
            // A lone point would be invisible as a path; a dot shows it.
            let (px, py) = segment[0];
            let _ = write!(svg, "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{}\"/>", line.color);
        }
    }
    let _ = write!(
        svg,
        "<path d=\"{path}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\"{dash}><title>{name}</title></path>",
        line.color
    );
    if line.dots {
        for &(px, py) in &line.points {
            let Some(value) = py.filter(|v| y.contains(*v) && x.contains(px)) else { continue };
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"><title>{name}: {}</title></circle>",
                x.position(px),
                y.position(value),
                line.color,
                number(value)
            );
        }
    }
}

fn draw_highlight(svg: &mut String, highlight: &Highlight, x: &Mapping, y: &Mapping) {
    let (vx, vy) = highlight.at;
    if !(x.contains(vx) && y.contains(vy)) {
        return;
    }
    let (px, py) = (x.position(vx), y.position(vy));
    let anchor = if px > (x.from + x.to) / 2.0 { "end" } else { "start" };
    let dx = if anchor == "end" { -12.0 } else { 12.0 };
    let _ = write!(
        svg,
        "<circle class=\"best\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"9\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2.5\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" fill=\"#d62728\" font-weight=\"bold\">{}</text>",
        px + dx,
        py - 10.0,
        escape(&highlight.label)
    );
}

/// A heat map: one cell per (x, y) category pair, coloured by value, the value printed in it.
#[derive(Debug, Clone)]
pub struct HeatMap {
    /// Horizontal axis title.
    pub x_title: String,
    /// Vertical axis title.
    pub y_title: String,
    /// Column labels, left to right.
    pub x_labels: Vec<String>,
    /// Row labels, bottom to top.
    pub y_labels: Vec<String>,
    /// `values[row][column]`; `None` for a missing cell.
    pub values: Vec<Vec<Option<f64>>>,
    /// The cell to outline (row, column).
    pub best: Option<(usize, usize)>,
}

/// Colour stops of the value scale (viridis), from the lowest value to the highest.
const STOPS: [(u8, u8, u8); 5] = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)];

/// The scale colour at `t` in [0, 1], and whether text on it should be dark.
fn scale_color(t: f64) -> (String, bool) {
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let (r, g, bl) = (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2));
    (format!("#{r:02x}{g:02x}{bl:02x}"), t > 2.0)
}

/// Renders a heat map as an `<svg>` element, with a colour bar on the right.
pub fn render_heatmap(map: &HeatMap) -> String {
    let cells = map.values.iter().flatten().flatten().copied();
    let (low, high) = data_range(cells, Scale::Linear).unwrap_or((0.0, 1.0));
    let unit = |v: f64| if high > low { (v - low) / (high - low) } else { 0.5 };
    let (columns, rows) = (map.x_labels.len().max(1) as f64, map.y_labels.len().max(1) as f64);
    let (left, right, top, bottom) = (LEFT + 20.0, WIDTH - 90.0, TOP, HEIGHT - BOTTOM);
    let (cell_w, cell_h) = ((right - left) / columns, (bottom - top) / rows);
    let mut svg = open_svg();
    for (row, values) in map.values.iter().enumerate() {
        for (column, value) in values.iter().enumerate() {
            let (cx, cy) = (left + column as f64 * cell_w, bottom - (row + 1) as f64 * cell_h);
            let Some(value) = value else {
                let _ = write!(svg, "<rect x=\"{cx:.1}\" y=\"{cy:.1}\" width=\"{cell_w:.1}\" height=\"{cell_h:.1}\" fill=\"#f4f4f4\" stroke=\"#fff\"/>");
                continue;
            };
            let (fill, dark_text) = scale_color(unit(*value));
            let text = if dark_text { "#111" } else { "#fff" };
            let _ = write!(
                svg,
                "<rect x=\"{cx:.1}\" y=\"{cy:.1}\" width=\"{cell_w:.1}\" height=\"{cell_h:.1}\" fill=\"{fill}\" stroke=\"#fff\"><title>{}</title></rect>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{text}\">{}</text>",
                number(*value),
                cx + cell_w / 2.0,
                cy + cell_h / 2.0 + 4.0,
                number(*value)
            );
        }
    }
    if let Some((row, column)) = map.best {
        let (cx, cy) = (left + column as f64 * cell_w, bottom - (row + 1) as f64 * cell_h);
        let _ = write!(
            svg,
            "<rect class=\"best\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"4\"/>",
            cx + 2.0,
            cy + 2.0,
            cell_w - 4.0,
            cell_h - 4.0
        );
    }
    for (column, label) in map.x_labels.iter().enumerate() {
        let px = left + (column as f64 + 0.5) * cell_w;
        let _ = write!(
            svg,
            "<text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            bottom + 16.0,
            escape(label)
        );
    }
    for (row, label) in map.y_labels.iter().enumerate() {
        let py = bottom - (row as f64 + 0.5) * cell_h;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
            left - 6.0,
            py + 4.0,
            escape(label)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#111\">{}</text>\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#111\">{}</text>",
        (left + right) / 2.0,
        HEIGHT - 10.0,
        escape(&map.x_title),
        (top + bottom) / 2.0,
        escape(&map.y_title)
    );
    draw_color_bar(&mut svg, (low, high), right + 24.0, top, bottom);
    svg.push_str("</svg>");
    svg
}

/// A vertical bar of the value scale with its lowest and highest values.
fn draw_color_bar(svg: &mut String, (low, high): (f64, f64), x: f64, top: f64, bottom: f64) {
    const STEPS: usize = 24;
    let step = (bottom - top) / STEPS as f64;
    for i in 0..STEPS {
        let (fill, _) = scale_color((i as f64 + 0.5) / STEPS as f64);
        let y = bottom - (i + 1) as f64 * step;
        let _ =
            write!(svg, "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"14\" height=\"{:.1}\" fill=\"{fill}\"/>", step + 0.5);
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\">{}</text>",
        x + 18.0,
        top + 10.0,
        number(high),
        x + 18.0,
        bottom,
        number(low)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_sizes_are_short() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(12_000.0), "12k");
        assert_eq!(number(3_250_000.0), "3.25M");
        assert_eq!(bytes(64_000.0), "64KB");
        assert_eq!(bytes(1_500_000.0), "1.5MB");
        assert_eq!(bytes(512.0), "512B");
    }

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        assert_eq!(linear_range(0.0, 93.0), (0.0, 100.0));
        let ticks: Vec<f64> = linear_ticks((0.0, 100.0)).into_iter().map(|t| t.0).collect();
        assert_eq!(ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(log_range(1.0, 37.0), (1.0, 50.0));
        assert_eq!(log_range(3.12, 12.8), (2.0, 20.0));
        let labels: Vec<String> = log_ticks((1.0, 100.0)).into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100"]);
    }

    #[test]
    fn gaps_break_lines_and_steps_add_corners() {
        let x = Mapping { scale: Scale::Linear, low: 0.0, high: 10.0, from: 0.0, to: 10.0 };
        let y = Mapping { scale: Scale::Linear, low: 0.0, high: 10.0, from: 10.0, to: 0.0 };
        let mut line =
            Line::new("a", color(0), vec![(0.0, Some(1.0)), (1.0, None), (2.0, Some(2.0)), (3.0, Some(3.0))]);
        assert_eq!(segments(&line, &x, &y), vec![vec![(0.0, 9.0)], vec![(2.0, 8.0), (3.0, 7.0)]]);
        line.step = true;
        assert_eq!(segments(&line, &x, &y)[1], vec![(2.0, 8.0), (3.0, 8.0), (3.0, 7.0)]);
    }
}
