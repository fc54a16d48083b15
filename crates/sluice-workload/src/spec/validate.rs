//! Checks of workload entries against the topology, before anything is generated.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sluice_core::{format_duration, Time, MAX_TIME, MAX_TIME_TEXT};

use super::{LongLivedFlow, WorkloadSpec};
use crate::cdf::builtin;
use crate::{SizeCdf, WorkloadError};

impl WorkloadSpec {
    /// Checks for values that cannot work on a topology of `n_hosts` hosts: a load outside `(0, 1]`, a zero
    /// duration, host ids out of range, more incast senders than other hosts, the receiver among the
    /// senders, a stop not after its start, an unknown builtin CDF (the message lists the builtins) or a
    /// missing file (the message names the path). Relative paths are resolved against the current folder;
    /// see [`WorkloadSpec::validate_in`] to give the scenario file's folder.
    pub fn validate(&self, n_hosts: u32) -> Result<(), WorkloadError> {
        self.validate_in(n_hosts, Path::new(""))
    }

    /// [`WorkloadSpec::validate`] with relative file paths resolved against `base_dir`.
    pub fn validate_in(&self, n_hosts: u32, base_dir: &Path) -> Result<(), WorkloadError> {
        match self {
            WorkloadSpec::Poisson { cdf, load, start, duration, hosts, size_scale, .. } => {
                resolve_cdf(cdf, base_dir)?;
                check_load(*load)?;
                check_window(*start, *duration)?;
                check_host_set(hosts.as_deref(), n_hosts, "hosts")?;
                check_size_scale(*size_scale)
            }
            WorkloadSpec::Incast { receiver, senders, sender_list, size, start, period, repeats } => {
                check_host(*receiver, n_hosts, "receiver")?;
                check_senders(*receiver, *senders, sender_list.as_deref(), n_hosts)?;
                check_size(*size)?;
                check_rounds(*start, *period, *repeats)
            }
            WorkloadSpec::Permutation { size, start } => {
                if n_hosts < 2 {
                    return Err(WorkloadError::new("a permutation needs at least two hosts"));
                }
                check_size(*size)?;
                check_time(*start, "start")
            }
            WorkloadSpec::AllToAll { size, hosts, start } => {
                check_host_set(hosts.as_deref(), n_hosts, "hosts")?;
                check_size(*size)?;
                check_time(*start, "start")
            }
            WorkloadSpec::LongLived { flows } => check_long_lived(flows, n_hosts),
            WorkloadSpec::FlowList { path } => existing_file(path, base_dir, "flow list").map(|_| ()),
            WorkloadSpec::ClosedLoop { cdf, flows_per_pair, receivers, senders, start, duration, size_scale } => {
                resolve_cdf(cdf, base_dir)?;
                if *flows_per_pair == 0 {
                    return Err(WorkloadError::field("flows_per_pair", "flows_per_pair must be at least 1"));
                }
                check_host_list(receivers.as_deref(), n_hosts, "receivers")?;
                check_host_list(senders.as_deref(), n_hosts, "senders")?;
                check_window(*start, *duration)?;
                check_size_scale(*size_scale)?;
                crate::closed_loop::check_pairs(self, n_hosts)
            }
        }
    }
}

/// Where a `cdf` key points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CdfSource {
    /// A builtin distribution name.
    Builtin(String),
    /// An existing file.
    File(PathBuf),
}

/// Resolves a `cdf` key: a builtin name wins; otherwise it is a file path relative to `base_dir`.
pub(crate) fn resolve_cdf(cdf: &str, base_dir: &Path) -> Result<CdfSource, WorkloadError> {
    if builtin::is_builtin(cdf) {
        return Ok(CdfSource::Builtin(cdf.to_string()));
    }
    let path = base_dir.join(cdf);
    if path.is_file() {
        return Ok(CdfSource::File(path));
    }
    let looks_like_path = cdf.contains(['/', '\\', '.']);
    let message = if looks_like_path {
        format!("CDF file {} not found", path.display())
    } else {
        format!("{} (or give the path of a CDF file)", builtin::unknown(cdf).message)
    };
    Err(WorkloadError::field("cdf", message))
}

/// Loads the distribution a `cdf` key names; errors name the key and, for files, the file and line.
pub(crate) fn load_cdf(cdf: &str, base_dir: &Path) -> Result<SizeCdf, WorkloadError> {
    let loaded = match resolve_cdf(cdf, base_dir)? {
        CdfSource::Builtin(name) => SizeCdf::builtin(&name),
        CdfSource::File(path) => SizeCdf::from_file(path),
    };
    loaded.map_err(|e| e.with_field("cdf"))
}

/// The path of an existing file, `path` resolved against `base_dir`.
pub(crate) fn existing_file(path: &str, base_dir: &Path, what: &str) -> Result<PathBuf, WorkloadError> {
    let resolved = base_dir.join(path);
    if resolved.is_file() {
        Ok(resolved)
    } else {
        Err(WorkloadError::field("path", format!("{what} file {} not found", resolved.display())))
    }
}

fn check_load(load: f64) -> Result<(), WorkloadError> {
    if load > 0.0 && load <= 1.0 {
        Ok(())
    } else {
        Err(WorkloadError::field(
            "load",
            format!("load must be above 0 and at most 1 (a fraction of the host rate), got {load}"),
        ))
    }
}

fn check_window(start: Time, duration: Time) -> Result<(), WorkloadError> {
    if duration == 0 {
        return Err(WorkloadError::field("duration", "duration must be positive"));
    }
    match start.checked_add(duration) {
        Some(end) => check_time(end, "duration"),
        None => Err(WorkloadError::field("duration", format!("start + duration is beyond {MAX_TIME_TEXT}"))),
    }
}

/// Rejects a time past [`MAX_TIME`], naming the key that gave it.
fn check_time(time: Time, field: &str) -> Result<(), WorkloadError> {
    if time > MAX_TIME {
        let message =
            format!("{} is beyond the largest time a scenario may give, {MAX_TIME_TEXT}", format_duration(time));
        return Err(WorkloadError::field(field, message));
    }
    Ok(())
}

fn check_size_scale(size_scale: Option<f64>) -> Result<(), WorkloadError> {
    match size_scale {
        Some(scale) if !(scale > 0.0 && scale.is_finite()) => {
            Err(WorkloadError::field("size_scale", format!("size_scale must be a positive number, got {scale}")))
        }
        _ => Ok(()),
    }
}

fn check_size(size: u64) -> Result<(), WorkloadError> {
    if size == 0 {
        return Err(WorkloadError::field("size", "size must be at least 1 byte"));
    }
    Ok(())
}

/// Checks that host `id` exists.
pub(crate) fn check_host(id: u32, n_hosts: u32, field: &str) -> Result<(), WorkloadError> {
    if id < n_hosts {
        return Ok(());
    }
    let range = if n_hosts == 0 { "no hosts".to_string() } else { format!("hosts 0 to {}", n_hosts - 1) };
    Err(WorkloadError::field(field, format!("host {id} does not exist: the topology has {range}")))
}

/// Checks a set of participating hosts (`None`: all of them): ids in range, no repeats, at least two.
fn check_host_set(hosts: Option<&[u32]>, n_hosts: u32, field: &str) -> Result<(), WorkloadError> {
    let count = match hosts {
        Some(list) => check_distinct_hosts(list, n_hosts, field)?,
        None => n_hosts as usize,
    };
    if count < 2 {
        return Err(WorkloadError::field(field, format!("needs at least two hosts, has {count}")));
    }
    Ok(())
}

/// Checks a list of hosts, when one is given: not empty, ids in range, no repeats.
fn check_host_list(hosts: Option<&[u32]>, n_hosts: u32, field: &str) -> Result<(), WorkloadError> {
    match hosts {
        Some([]) => Err(WorkloadError::field(field, format!("{field} is empty"))),
        Some(list) => check_distinct_hosts(list, n_hosts, field).map(|_| ()),
        None => Ok(()),
    }
}

/// Checks that the hosts of `list` exist and are distinct; returns how many there are.
fn check_distinct_hosts(list: &[u32], n_hosts: u32, field: &str) -> Result<usize, WorkloadError> {
    let mut seen = BTreeSet::new();
    for &id in list {
        check_host(id, n_hosts, field)?;
        if !seen.insert(id) {
            return Err(WorkloadError::field(field, format!("host {id} is listed twice")));
        }
    }
    Ok(list.len())
}

fn check_senders(
    receiver: u32,
    senders: Option<u32>,
    sender_list: Option<&[u32]>,
    n_hosts: u32,
) -> Result<(), WorkloadError> {
    let others = n_hosts.saturating_sub(1);
    match (senders, sender_list) {
        (Some(_), Some(_)) => {
            Err(WorkloadError::field("sender_list", "give either `senders` (a count) or `sender_list`, not both"))
        }
        (Some(count), None) if count == 0 || count > others => Err(WorkloadError::field(
            "senders",
            format!("senders must be between 1 and the {others} hosts other than the receiver, got {count}"),
        )),
        (None, Some(list)) => check_sender_list(receiver, list, n_hosts),
        (None, None) if others == 0 => Err(WorkloadError::field("receiver", "an incast needs at least two hosts")),
        _ => Ok(()),
    }
}

fn check_sender_list(receiver: u32, list: &[u32], n_hosts: u32) -> Result<(), WorkloadError> {
    if list.is_empty() {
        return Err(WorkloadError::field("sender_list", "sender_list is empty"));
    }
    check_distinct_hosts(list, n_hosts, "sender_list")?;
    if list.contains(&receiver) {
        return Err(WorkloadError::field("sender_list", format!("the receiver {receiver} is among the senders")));
    }
    Ok(())
}

fn check_rounds(start: Time, period: Option<Time>, repeats: u32) -> Result<(), WorkloadError> {
    if repeats == 0 {
        return Err(WorkloadError::field("repeats", "repeats must be at least 1"));
    }
    if repeats == 1 {
        return check_time(start, "start");
    }
    let period = match period {
        Some(p) if p > 0 => p,
        _ => return Err(WorkloadError::field("period", "a positive period is needed when repeats is above 1")),
    };
    let last = period.checked_mul(Time::from(repeats - 1)).and_then(|offset| start.checked_add(offset));
    match last {
        Some(last) if last <= MAX_TIME => Ok(()),
        _ => Err(WorkloadError::field("period", format!("the last round starts beyond {MAX_TIME_TEXT}"))),
    }
}

fn check_long_lived(flows: &[LongLivedFlow], n_hosts: u32) -> Result<(), WorkloadError> {
    if flows.is_empty() {
        return Err(WorkloadError::field("flows", "no flows listed"));
    }
    for (i, flow) in flows.iter().enumerate() {
        check_long_lived_flow(flow, n_hosts)
            .map_err(|e| WorkloadError { message: format!("flows[{i}]: {}", e.message), ..e })?;
    }
    Ok(())
}

fn check_long_lived_flow(flow: &LongLivedFlow, n_hosts: u32) -> Result<(), WorkloadError> {
    check_host(flow.src, n_hosts, "flows")?;
    check_host(flow.dst, n_hosts, "flows")?;
    if flow.src == flow.dst {
        return Err(WorkloadError::field("flows", format!("source and destination are both host {}", flow.src)));
    }
    if flow.stop <= flow.start {
        let (start, stop) = (format_duration(flow.start), format_duration(flow.stop));
        return Err(WorkloadError::field("flows", format!("stop {stop} is not after start {start}")));
    }
    check_time(flow.stop, "flows")
}
