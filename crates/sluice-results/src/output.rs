//! Writing a run's output directory atomically.
//!
//! [`write_outputs`] writes every file into a fresh hidden sibling directory `.<name>.tmp-<pid>` and
//! renames it into place only once all files are complete. An existing output directory is moved aside
//! to `.<name>.old-<pid>` first, replaced, and then removed. Readers therefore see either the previous
//! complete directory or the new complete one, and a failure (of a write, or of the process) never
//! leaves a half-written directory under the requested name. Files are not forced to disk with `fsync`;
//! the guarantee is against failures of the process, not of the machine.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::csv::{write_fct_csv, write_packets_csv, write_queues_csv, write_throughput_csv, write_trace_csv};
use crate::records::{FlowRecord, FlowTrace, PacketTrace, PortRecord, SwitchRecord, ThroughputSeries};
use crate::summary::Summary;

/// Names of the files [`write_outputs`] writes, in the order it writes them.
pub const FILE_NAMES: [&str; 6] =
    ["fct.csv", "summary.json", "queues.csv", "throughput.csv", "trace.csv", "scenario.resolved.toml"];

/// The output files written only when the run asks for them: `packets.csv`, the packet trace.
pub const OPTIONAL_FILE_NAMES: [&str; 1] = ["packets.csv"];

/// Whether `name` is one of the files sluice writes into an output directory.
fn is_output_file(name: &str) -> bool {
    FILE_NAMES.contains(&name) || OPTIONAL_FILE_NAMES.contains(&name)
}

/// Everything that goes into a run's output directory.
#[derive(Debug, Clone, Copy)]
pub struct Outputs<'a> {
    /// Written as `summary.json` (pretty-printed, fields in declaration order, `extra` sorted by key).
    pub summary: &'a Summary,
    /// Written as `fct.csv` (see [`write_fct_csv`]).
    pub flows: &'a [FlowRecord],
    /// Written as the `port` rows of `queues.csv` (see [`write_queues_csv`]).
    pub ports: &'a [PortRecord],
    /// Written as the `switch` rows of `queues.csv`.
    pub switches: &'a [SwitchRecord],
    /// Written as `throughput.csv` (see [`write_throughput_csv`]).
    pub throughput: &'a [ThroughputSeries],
    /// Written as `trace.csv` (see [`write_trace_csv`]).
    pub traces: &'a [FlowTrace],
    /// The fully resolved scenario, written unchanged as `scenario.resolved.toml`.
    pub scenario_toml: &'a str,
    /// Written as `packets.csv` when the run traced packets (see [`write_packets_csv`]).
    pub packets: Option<&'a PacketTrace>,
}

/// A failure to write the output directory, naming the path involved.
#[derive(Debug)]
pub struct OutputError {
    /// The file or directory the failed operation was about.
    pub path: PathBuf,
    /// What was being done, such as `"create directory"` or `"write"`.
    pub action: &'static str,
    /// The underlying error.
    pub source: io::Error,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot {} {}: {}", self.action, self.path.display(), self.source)
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A closure turning an `io::Error` into an [`OutputError`] about `path`.
fn fail<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> OutputError + 'a {
    move |source| OutputError { path: path.to_path_buf(), action, source }
}

/// Writes all output files into `dir` atomically, replacing a previous `dir` (see the module docs).
///
/// Missing parent directories are created. `dir` must not exist as anything but a directory. On error
/// the temporary directory is removed and a previous `dir` is left as it was. What writers of `dir` that
/// died left behind is cleaned up first (see [`write_outputs_unless`]).
pub fn write_outputs(dir: &Path, files: &Outputs<'_>) -> Result<(), OutputError> {
    write_outputs_unless(dir, files, &|| false)
}

/// Like [`write_outputs`], but asks `stop` before each file and before putting the directory in place;
/// when it says so, the temporary directory is removed, a previous `dir` stays as it was, and the error's
/// kind is [`io::ErrorKind::Interrupted`].
///
/// Before writing, the hidden siblings of `dir` left by writers that no longer run (a process killed
/// while writing, found by its process id on Linux) are cleaned up: a temporary directory is removed, and
/// a previous output that was moved aside is put back when `dir` is missing (else removed).
pub fn write_outputs_unless(dir: &Path, files: &Outputs<'_>, stop: &dyn Fn() -> bool) -> Result<(), OutputError> {
    write_dir(dir, stop, &|tmp| write_files(tmp, files, stop))
}

/// Writes output files rendered elsewhere ([`render_outputs`], on another machine of a cluster) into
/// `dir`, atomically as [`write_outputs`] does. Only the names of [`FILE_NAMES`] are accepted.
pub fn write_rendered(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), OutputError> {
    if let Some((name, _)) = files.iter().find(|(name, _)| !is_output_file(name)) {
        let source = io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not an output file's name"));
        return Err(OutputError { path: dir.to_path_buf(), action: "write", source });
    }
    write_dir(dir, &|| false, &|tmp| {
        for (name, bytes) in files {
            let path = tmp.join(name);
            fs::write(&path, bytes).map_err(fail("write", &path))?;
        }
        Ok(())
    })
}

/// Fills a fresh temporary sibling of `dir` with `fill` and puts it in place of `dir`.
fn write_dir(
    dir: &Path,
    stop: &dyn Fn() -> bool,
    fill: &dyn Fn(&Path) -> Result<(), OutputError>,
) -> Result<(), OutputError> {
    let (parent, name) = split(dir)?;
    clean_after_dead_writers(&parent, &name, dir)?;
    ensure_replaceable(dir)?;
    fs::create_dir_all(&parent).map_err(fail("create directory", &parent))?;
    let tmp = sibling(&parent, &name, "tmp");
    remove_stale(&tmp)?;
    fs::create_dir(&tmp).map_err(fail("create directory", &tmp))?;
    let result = fill(&tmp).and_then(|()| unless_stopped(stop, dir)).and_then(|()| install(&tmp, dir, &parent, &name));
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

/// An [`io::ErrorKind::Interrupted`] error once `stop` says so.
fn unless_stopped(stop: &dyn Fn() -> bool, dir: &Path) -> Result<(), OutputError> {
    if !stop() {
        return Ok(());
    }
    let source = io::Error::new(io::ErrorKind::Interrupted, "interrupted");
    Err(OutputError { path: dir.to_path_buf(), action: "finish writing", source })
}

/// Cleans up the `.<name>.tmp-<pid>` and `.<name>.old-<pid>` siblings of `dir` whose process is gone.
/// Without `/proc` no process can be told dead, and nothing is touched.
fn clean_after_dead_writers(parent: &Path, name: &OsString, dir: &Path) -> Result<(), OutputError> {
    if !Path::new("/proc/self").exists() {
        return Ok(());
    }
    let Ok(entries) = fs::read_dir(parent) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Some((kind, pid)) = leftover_of(&entry.file_name(), name) else { continue };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        if kind == "old" && fs::symlink_metadata(dir).is_err() {
            fs::rename(&path, dir).map_err(fail("restore the previous output from", &path))?;
        } else {
            remove_stale(&path)?;
        }
    }
    Ok(())
}

/// `("tmp" | "old", pid)` when `file` is `.<name>.tmp-<pid>` or `.<name>.old-<pid>`.
fn leftover_of(file: &OsString, name: &OsString) -> Option<(&'static str, u32)> {
    let rest = file.to_str()?.strip_prefix('.')?.strip_prefix(name.to_str()?)?;
    let (kind, pid) =
        rest.strip_prefix(".tmp-").map(|p| ("tmp", p)).or_else(|| Some(("old", rest.strip_prefix(".old-")?)))?;
    Some((kind, pid.parse().ok()?))
}

/// Refuses to replace an existing directory that holds anything but sluice's own output files, so that
/// `--out` pointed at a folder of the user's never deletes what they put there.
fn ensure_replaceable(dir: &Path) -> Result<(), OutputError> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry.map_err(fail("list", dir))?;
        let file_name = entry.file_name();
        let ours = file_name.to_str().is_some_and(is_output_file);
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if !ours || !is_file {
            let message = format!(
                "it holds {:?}, which sluice did not write; choose an empty or new output directory",
                file_name
            );
            return Err(OutputError {
                path: dir.to_path_buf(),
                action: "replace",
                source: io::Error::new(io::ErrorKind::AlreadyExists, message),
            });
        }
    }
    Ok(())
}

/// The parent directory of `dir` (`.` for a bare name) and its final name.
fn split(dir: &Path) -> Result<(PathBuf, OsString), OutputError> {
    let name = dir.file_name().ok_or_else(|| {
        let source = io::Error::new(io::ErrorKind::InvalidInput, "the path does not end in a directory name");
        OutputError { path: dir.to_path_buf(), action: "use as output directory", source }
    })?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_os_string()))
}

/// `parent/.<name>.<kind>-<pid>`.
fn sibling(parent: &Path, name: &OsString, kind: &str) -> PathBuf {
    let mut file = OsString::from(".");
    file.push(name);
    file.push(format!(".{kind}-{}", std::process::id()));
    parent.join(file)
}

/// Removes what an earlier, interrupted call of this process may have left at `path`.
fn remove_stale(path: &Path) -> Result<(), OutputError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).map_err(fail("remove stale directory", path)),
        Ok(_) => fs::remove_file(path).map_err(fail("remove stale file", path)),
        Err(_) => Ok(()),
    }
}

/// A function filling one output file.
type Fill<'f> = Box<dyn Fn(&mut dyn Write) -> io::Result<()> + 'f>;

/// The fill function of every file of [`FILE_NAMES`], in that order: the one description of the files'
/// content, shared by [`write_outputs`] and [`render_outputs`].
/// Each file to write, with its name: every one of [`FILE_NAMES`], then the optional ones the run has.
fn fills<'f>(files: &'f Outputs<'_>) -> Vec<(&'static str, Fill<'f>)> {
    let always: [Fill<'f>; 6] = [
        Box::new(|w| write_fct_csv(w, files.flows)),
        Box::new(|w| {
            serde_json::to_writer_pretty(&mut *w, files.summary)?;
            writeln!(w)
        }),
        Box::new(|w| write_queues_csv(w, files.ports, files.switches)),
        Box::new(|w| write_throughput_csv(w, files.throughput)),
        Box::new(|w| write_trace_csv(w, files.traces)),
        Box::new(|w| w.write_all(files.scenario_toml.as_bytes())),
    ];
    let mut fills: Vec<(&'static str, Fill<'f>)> = FILE_NAMES.into_iter().zip(always).collect();
    if let Some(packets) = files.packets {
        fills.push((OPTIONAL_FILE_NAMES[0], Box::new(move |w| write_packets_csv(w, packets))));
    }
    fills
}

/// Every output file's content in memory, byte for byte what [`write_outputs`] writes, paired with its
/// name from [`FILE_NAMES`] (for front ends that hand results over without a directory).
pub fn render_outputs(files: &Outputs<'_>) -> Vec<(&'static str, Vec<u8>)> {
    fills(files)
        .into_iter()
        .map(|(name, fill)| {
            let mut bytes = Vec::new();
            // Writing into a Vec cannot fail: its io::Write never returns an error.
            let _ = fill(&mut bytes);
            (name, bytes)
        })
        .collect()
}

fn write_files(dir: &Path, files: &Outputs<'_>, stop: &dyn Fn() -> bool) -> Result<(), OutputError> {
    for (name, fill) in fills(files) {
        unless_stopped(stop, dir)?;
        write_file(dir, name, &*fill)?;
    }
    Ok(())
}

/// Creates `dir/name` and fills it through a buffered writer.
fn write_file(dir: &Path, name: &str, fill: &dyn Fn(&mut dyn Write) -> io::Result<()>) -> Result<(), OutputError> {
    let path = dir.join(name);
    let file = File::create(&path).map_err(fail("create", &path))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    fill(&mut out).and_then(|()| out.flush()).map_err(fail("write", &path))
}

/// Moves the complete `tmp` directory to `dir`, replacing a previous `dir`.
fn install(tmp: &Path, dir: &Path, parent: &Path, name: &OsString) -> Result<(), OutputError> {
    let existing = match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => true,
        Ok(_) => {
            let source = io::Error::new(io::ErrorKind::AlreadyExists, "it exists and is not a directory");
            return Err(OutputError { path: dir.to_path_buf(), action: "replace", source });
        }
        Err(_) => false,
    };
    if !existing {
        return fs::rename(tmp, dir).map_err(fail("move the new output into place at", dir));
    }
    let backup = sibling(parent, name, "old");
    remove_stale(&backup)?;
    fs::rename(dir, &backup).map_err(fail("move the previous output aside from", dir))?;
    if let Err(source) = fs::rename(tmp, dir) {
        let _ = fs::rename(&backup, dir);
        return Err(OutputError { path: dir.to_path_buf(), action: "move the new output into place at", source });
    }
    fs::remove_dir_all(&backup).map_err(fail("remove the previous output", &backup))
}
