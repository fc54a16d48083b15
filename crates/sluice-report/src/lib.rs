//! `sluice report`: one self-contained HTML file of charts for a results directory, several overlaid
//! ones, or a sweep directory.
//!
//! The report works offline: it holds no script and loads nothing (its Content-Security-Policy forbids
//! any request), and every chart is inline SVG.
//!
//! Why hand-written SVG rather than a charting library: the report needs line charts on linear and log
//! axes, a staircase CDF and a heat map, which come to a few hundred lines of plain Rust with no
//! dependencies. `plotters` would bring a font stack and its own text layout for the same charts, and a
//! vendored JavaScript library would put a few hundred kilobytes of script into every report and make the
//! charts depend on a browser's script engine. Generated SVG is deterministic by construction (every
//! number is printed with fixed precision, and nothing depends on the clock or the machine), scales with
//! the page, and keeps the HTML readable: hovering a line or point shows its name and value through SVG
//! `<title>` elements, without script.
//!
//! Layout: [`csv`] reads sluice's CSV files, [`run`] a results directory, [`sweep`] a sweep directory,
//! [`charts`] turns runs into chart and table boxes, [`svg`] draws, [`html`] assembles the page and
//! [`label`] names overlaid runs by what differs between their scenarios. [`compare`] sets results
//! directories of any datapath side by side as a text table (`sluice compare`).

pub mod charts;
pub mod compare;
pub mod csv;
pub mod error;
pub mod html;
pub mod label;
pub mod run;
pub mod svg;
pub mod sweep;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use error::ReportError;

use charts::Named;
use html::Part;
use run::RunData;
use sweep::Sweep;

/// The file name of a report when `--out` is not given.
pub const DEFAULT_NAME: &str = "report.html";

/// Renders the report of `dirs` (result directories, or one sweep directory) and writes it atomically to
/// `out`, by default `report.html` in the single directory, else in the current directory. `labels`
/// name the result directories instead of their scenario differences (one per directory, or none).
/// Returns the path written; on any error nothing is written.
pub fn write_report(dirs: &[PathBuf], out: Option<&Path>, labels: &[String]) -> Result<PathBuf, ReportError> {
    let html = render_report(dirs, labels)?;
    let out = out.map_or_else(|| default_out(dirs), Path::to_path_buf);
    write_atomically(&out, html.as_bytes())?;
    Ok(out)
}

/// Where the report goes without `--out`.
pub fn default_out(dirs: &[PathBuf]) -> PathBuf {
    match dirs {
        [dir] => dir.join(DEFAULT_NAME),
        _ => PathBuf::from(DEFAULT_NAME),
    }
}

/// The report of `dirs` as HTML (see [`write_report`]).
pub fn render_report(dirs: &[PathBuf], labels: &[String]) -> Result<String, ReportError> {
    if dirs.is_empty() {
        return Err(ReportError::usage("name at least one results or sweep directory"));
    }
    for dir in dirs {
        if !dir.is_dir() {
            return Err(ReportError::at(dir, "no such directory"));
        }
    }
    match dirs.iter().find(|d| d.join("sweep.json").is_file()) {
        Some(dir) if dirs.len() > 1 => Err(ReportError::at(dir, "a sweep directory is reported on its own")),
        Some(_) if !labels.is_empty() => Err(ReportError::usage("--label names result directories, not a sweep")),
        Some(dir) => Ok(render_sweep(&Sweep::read(dir)?)),
        None => render_runs(dirs, labels),
    }
}

fn render_sweep(sweep: &Sweep) -> String {
    let (header, parts) = sweep::parts(sweep);
    let name = sweep.dir.file_name().map_or_else(|| sweep.dir.display().to_string(), |n| n.to_string_lossy().into());
    html::page(&format!("sluice sweep: {name}"), &header, &parts)
}

fn render_runs(dirs: &[PathBuf], labels: &[String]) -> Result<String, ReportError> {
    if !labels.is_empty() && labels.len() != dirs.len() {
        let message =
            format!("{} --label for {} directories: give one per directory, or none", labels.len(), dirs.len());
        return Err(ReportError::usage(message));
    }
    let runs: Vec<RunData> = dirs.iter().map(|d| RunData::read(d)).collect::<Result<_, _>>()?;
    let labels = if labels.is_empty() { run_labels(&runs) } else { labels.to_vec() };
    let named: Vec<Named> = runs.iter().zip(&labels).map(|(run, label)| Named { run, label }).collect();
    let header: Vec<String> = named
        .iter()
        .map(|n| format!("<code>{}</code>: {}", svg::escape(&n.run.dir.display().to_string()), svg::escape(n.label)))
        .collect();
    let title = match named.as_slice() {
        [one] => format!("sluice report: {}", one.label),
        many => format!("sluice report: {} runs", many.len()),
    };
    Ok(html::page(&title, &header, &run_parts(&named)))
}

/// A single run is named by its scenario (or directory); overlaid runs by what differs between them.
fn run_labels(runs: &[RunData]) -> Vec<String> {
    if let [run] = runs {
        let name = run.scenario.as_ref().and_then(|s| s.get("name")?.as_str().map(str::to_string));
        let dir = || run.dir.file_name().map_or_else(|| run.dir.display().to_string(), |n| n.to_string_lossy().into());
        return vec![name.unwrap_or_else(dir)];
    }
    let flat: Vec<_> = runs.iter().map(|r| r.scenario.as_ref().map(label::flatten)).collect();
    label::difference_labels(&flat)
}

fn run_parts(runs: &[Named]) -> Vec<Part> {
    let mut parts = vec![charts::slowdown_by_size(runs), charts::slowdown_cdf(runs), charts::bucket_table(runs)];
    parts.extend(charts::throughput(runs));
    parts.push(charts::queues(runs));
    parts.extend(charts::traces(runs));
    parts
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: readers see the old file
/// or the whole new one, and a failure leaves nothing behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let name = path.file_name().ok_or_else(|| ReportError::at(path, "not a file name"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temp = parent.join(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let written = std::fs::File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temp, path));
    renamed.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        ReportError::at(path, format!("cannot write: {e}"))
    })
}
