//! The machine-wide lock of sluice's namespace beds and kernel benchmarks.

/// Takes the machine-wide lock of kernel test beds, switch beds and benchmarks, waiting for whoever
/// holds it: they register the same congestion-control names, create namespaces and share the CPUs,
/// so only one may run at a time, in this process or another. The lock is held until the returned
/// file is dropped.
pub fn exclusive() -> Result<std::fs::File, String> {
    let path = std::env::temp_dir().join("sluice-kernel-datapath.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.lock().map_err(|e| format!("lock {}: {e}", path.display()))?;
    Ok(file)
}
