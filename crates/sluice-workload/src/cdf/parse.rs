//! Line-by-line readers of the two CDF text formats. Errors carry the 1-based line number; the caller adds
//! the file name.

use std::fmt::Display;

use crate::WorkloadError;

/// Largest distance from 100 % (or 1.0) still accepted as the end of a CDF, for rounding in the files.
const END_TOLERANCE: f64 = 1e-9;

/// The points of a HomaSimulation file, sizes already in bytes.
#[derive(Debug, Clone)]
pub(crate) struct HomaPoints {
    /// The mean written on the first line, in bytes.
    pub stated_mean: f64,
    /// `(size_bytes, cumulative_prob)` in file order.
    pub points: Vec<(u64, f64)>,
    /// Line number of the last point, for errors about how the CDF ends.
    pub last_line: usize,
}

/// Numbered data lines: `(1-based line number, whitespace-separated tokens)`, without blank lines and
/// `#` comments.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let line = line.split('#').next().unwrap_or_default().trim();
        (!line.is_empty()).then(|| (i + 1, line.split_whitespace().collect()))
    })
}

/// Number of values on the first data line.
pub(super) fn first_line_tokens(text: &str) -> Result<usize, WorkloadError> {
    data_lines(text).next().map(|(_, tokens)| tokens.len()).ok_or_else(empty)
}

fn empty() -> WorkloadError {
    WorkloadError::new("empty file: no CDF points")
}

/// A finite number, or an error naming the token.
fn number(token: &str, line: usize, what: &str) -> Result<f64, WorkloadError> {
    match token.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(WorkloadError::at_line(line, format!("{what} `{token}` is not a number"))),
    }
}

/// Checks that neither the size nor the cumulative value of `point` falls below the previous point's.
fn check_rising<T: PartialOrd + Display>(
    previous: Option<&(T, f64)>,
    point: &(T, f64),
    line: usize,
    what: &str,
) -> Result<(), WorkloadError> {
    let Some(previous) = previous else {
        return Ok(());
    };
    if point.0 < previous.0 {
        let message = format!("size {} is below the previous size {}: sizes must not decrease", point.0, previous.0);
        return Err(WorkloadError::at_line(line, message));
    }
    if point.1 < previous.1 {
        let message = format!("the CDF decreases: cumulative {what} {} is below the previous {}", point.1, previous.1);
        return Err(WorkloadError::at_line(line, message));
    }
    Ok(())
}

/// Reads `size_bytes cdf_percent` lines (HPCC artifact format), checking that the CDF rises to 100 %.
pub(super) fn hpcc_points(text: &str) -> Result<Vec<(f64, f64)>, WorkloadError> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut last_line = 0;
    for (line, tokens) in data_lines(text) {
        let point = hpcc_point(&tokens, line)?;
        check_rising(points.last(), &point, line, "percent")?;
        points.push(point);
        last_line = line;
    }
    let &(_, end) = points.last().ok_or_else(empty)?;
    if (end - 100.0).abs() > END_TOLERANCE {
        let hint = if end <= 1.0 { " (this format gives cumulative percent, 0 to 100)" } else { "" };
        return Err(WorkloadError::at_line(last_line, format!("the CDF ends at {end}%, not at 100%{hint}")));
    }
    Ok(points)
}

/// The largest flow size a CDF may give: 2^50 B (1 PiB). Far beyond any published distribution (the
/// largest builtin, memcached's tail, is capped at 1 GiB), it keeps sizes exact in `f64` (below 2^53), so
/// means and loads stay finite and sums of many flows' bytes stay inside `u64`.
pub const MAX_CDF_SIZE: u64 = 1 << 50;

fn too_large(line: usize, size: &str) -> WorkloadError {
    WorkloadError::at_line(line, format!("size {size} is larger than the {MAX_CDF_SIZE} B (2^50) a flow may have"))
}

fn hpcc_point(tokens: &[&str], line: usize) -> Result<(f64, f64), WorkloadError> {
    let [size, percent] = tokens else {
        let message = format!("expected two numbers `size_bytes cdf_percent`, found {} values", tokens.len());
        return Err(WorkloadError::at_line(line, message));
    };
    let size = number(size, line, "size")?;
    let percent = number(percent, line, "percent")?;
    if size < 0.0 {
        return Err(WorkloadError::at_line(line, format!("size {size} is negative")));
    }
    if size > MAX_CDF_SIZE as f64 {
        return Err(too_large(line, &size.to_string()));
    }
    if !(0.0..=100.0).contains(&percent) {
        return Err(WorkloadError::at_line(line, format!("cumulative percent {percent} is outside 0 to 100")));
    }
    Ok((size, percent))
}

/// Reads a HomaSimulation file: the mean alone on the first line, then `size cumulative_prob` lines with
/// sizes in units of `unit_bytes`. Does not check where the CDF ends (see [`check_homa_end`]).
pub(crate) fn homa_points(text: &str, unit_bytes: u64) -> Result<HomaPoints, WorkloadError> {
    if unit_bytes == 0 {
        return Err(WorkloadError::new("the size unit must be at least 1 byte"));
    }
    let mut lines = data_lines(text);
    let (first_line, tokens) = lines.next().ok_or_else(empty)?;
    let stated_mean = homa_mean(&tokens, first_line)? * unit_bytes as f64;
    let mut points: Vec<(u64, f64)> = Vec::new();
    let mut last_line = first_line;
    for (line, tokens) in lines {
        let point = homa_point(&tokens, line, unit_bytes)?;
        check_rising(points.last(), &point, line, "probability")?;
        points.push(point);
        last_line = line;
    }
    if points.is_empty() {
        return Err(WorkloadError::at_line(first_line, "no CDF points after the mean on the first line"));
    }
    Ok(HomaPoints { stated_mean, points, last_line })
}

fn homa_mean(tokens: &[&str], line: usize) -> Result<f64, WorkloadError> {
    let [mean] = tokens else {
        let message = format!(
            "expected the mean size alone on the first line (HomaSimulation format), found {} values",
            tokens.len()
        );
        return Err(WorkloadError::at_line(line, message));
    };
    number(mean, line, "mean")
}

fn homa_point(tokens: &[&str], line: usize, unit_bytes: u64) -> Result<(u64, f64), WorkloadError> {
    let [size, prob] = tokens else {
        let message = format!("expected two numbers `size cumulative_prob`, found {} values", tokens.len());
        return Err(WorkloadError::at_line(line, message));
    };
    let not_whole = || WorkloadError::at_line(line, format!("size `{size}` is not a whole number"));
    let size = size.parse::<u64>().map_err(|_| not_whole())?;
    let bytes = size
        .checked_mul(unit_bytes)
        .ok_or_else(|| WorkloadError::at_line(line, format!("size {size} x {unit_bytes} B overflows")))?;
    if bytes > MAX_CDF_SIZE {
        return Err(too_large(line, &format!("{bytes} B")));
    }
    let prob = number(prob, line, "probability")?;
    if !(0.0..=1.0).contains(&prob) {
        return Err(WorkloadError::at_line(line, format!("cumulative probability {prob} is outside 0 to 1")));
    }
    Ok((bytes, prob))
}

/// Checks that a HomaSimulation CDF ends at probability 1.
pub(super) fn check_homa_end(homa: &HomaPoints) -> Result<(), WorkloadError> {
    let end = homa.points[homa.points.len() - 1].1;
    if (end - 1.0).abs() > END_TOLERANCE {
        return Err(WorkloadError::at_line(homa.last_line, format!("the CDF ends at {end}, not at 1")));
    }
    Ok(())
}
