//! `sluice agent`: its options, how they become settings, and the run (the binary's subcommand).

use std::path::PathBuf;
use std::time::Duration;

use sluice_core::PS_PER_NS;

use crate::console::note;
use sluice_kernel::config::{AgentConfig, ConfigError, Fallback};
use sluice_kernel::runtime::{run as run_agent, RunOptions};

/// Options of `sluice agent`; they override the settings file.
#[derive(clap::Args)]
pub struct AgentArgs {
    /// Settings file (TOML): default, [[rule]] ports/algorithm/params, [params.ALGORITHM], watchdog, ...
    #[arg(long)]
    config: Option<PathBuf>,
    /// Algorithm for flows that chose "sluice" and match no rule (default cubic).
    #[arg(long)]
    default: Option<String>,
    /// Port rule `PORTS=ALGORITHM` (`5201=reno`, `6000-6099=bbr`); local or remote port; first match wins.
    #[arg(long = "rule", value_name = "PORTS=ALGORITHM")]
    rules: Vec<String>,
    /// Algorithm parameter `ALGORITHM.KEY=VALUE` (`fixed.cwnd_packets=20`).
    #[arg(long = "param", value_name = "ALGORITHM.KEY=VALUE")]
    params: Vec<String>,
    /// Fall back to the kernel's own congestion control when the agent has not answered for this long
    /// (default 10ms).
    #[arg(long)]
    watchdog: Option<String>,
    /// What a flow falls back to: `cubic` (default) or `reno`, the kernel's own.
    #[arg(long)]
    fallback: Option<String>,
    /// ACKs folded per report in the kernel (default 16).
    #[arg(long)]
    batch_acks: Option<u32>,
    /// Report deadline in the kernel (default 1ms).
    #[arg(long)]
    deadline: Option<String>,
    /// SCHED_FIFO priority of the agent's loop, 1-99, or 0 for the normal scheduler (default 10).
    #[arg(long)]
    realtime_priority: Option<u8>,
    /// bpffs directory for the shared maps (default /sys/fs/bpf/sluice).
    #[arg(long)]
    pin_dir: Option<PathBuf>,
    /// Stop after this long (default: run until SIGINT or SIGTERM).
    #[arg(long)]
    duration: Option<String>,
    /// Print a status line this often (e.g. 1s).
    #[arg(long)]
    status_every: Option<String>,
    /// Write the run's summary (counters, CPU, messages/s) as JSON here on exit.
    #[arg(long)]
    stats: Option<PathBuf>,
}

fn settings(args: &AgentArgs) -> Result<(AgentConfig, String), ConfigError> {
    let (mut config, origin) = match &args.config {
        Some(path) => (AgentConfig::load(path)?, path.display().to_string()),
        None => (AgentConfig::default(), "options".to_string()),
    };
    if let Some(default) = &args.default {
        config.default = default.clone();
    }
    for rule in &args.rules {
        config.add_rule_arg(rule)?;
    }
    for param in &args.params {
        config.add_param_arg(param)?;
    }
    if let Some(text) = &args.fallback {
        config.fallback = Fallback::parse_arg(text)?;
    }
    if let Some(text) = &args.watchdog {
        config.watchdog = AgentConfig::parse_duration_arg("watchdog", text)?;
    }
    if let Some(text) = &args.deadline {
        config.deadline = AgentConfig::parse_duration_arg("deadline", text)?;
    }
    if let Some(n) = args.batch_acks {
        config.batch_acks = n;
    }
    if let Some(priority) = args.realtime_priority {
        config.realtime_priority = priority;
    }
    if let Some(dir) = &args.pin_dir {
        config.pin_dir = dir.clone();
    }
    Ok((config, origin))
}

fn duration(option: &str, text: &Option<String>) -> Result<Option<Duration>, String> {
    let Some(text) = text else { return Ok(None) };
    let ps = AgentConfig::parse_duration_arg(option, text).map_err(|e| e.to_string())?;
    Ok(Some(Duration::from_nanos(ps / PS_PER_NS)))
}

/// Runs the agent; errors name the option, file or field at fault.
pub fn run(args: AgentArgs) -> Result<(), String> {
    let (config, origin) = settings(&args).map_err(|e| e.to_string())?;
    let resolved = config.resolve(&origin).map_err(|e| e.to_string())?;
    let options = RunOptions {
        duration: duration("duration", &args.duration)?,
        status_every: duration("status-every", &args.status_every)?,
    };
    let summary = run_agent(resolved, &options, &mut |line| note(line)).map_err(|e| e.to_string())?;
    note(&format!(
        "sluice agent: {:.1} s, CPU {:.2}% of one core, {:.0} messages/s, malformed {}, stale {}; kernel: \
         ring-full {}, decisions applied {}, rejected stale {} malformed {}, fallbacks {}, resumed {}",
        summary.wall_seconds,
        summary.cpu_fraction * 100.0,
        summary.messages_per_second,
        summary.agent.malformed,
        summary.agent.stale,
        summary.kernel.ringbuf_full,
        summary.kernel.applied,
        summary.kernel.stale,
        summary.kernel.malformed,
        summary.kernel.fallbacks,
        summary.kernel.resumed
    ));
    let (a, k) = (&summary.agent, &summary.kernel);
    if a.installs + a.installs_failed + a.program_reports > 0 {
        note(&format!(
            "sluice agent: datapath programs: {} installed ({} failed), {} reports to the algorithms ({} of other \
             installs dropped); kernel: {} signals through programs, {} program reports, {} left their program",
            a.installs,
            a.installs_failed,
            a.program_reports,
            a.program_reports_dropped,
            k.program_signals,
            k.program_reports,
            k.programs_lost
        ));
    }
    let lag = &summary.agent.answer_lag;
    note(&format!(
        "sluice agent: answers to {} reports: {} within 1 ms, {} within 2 ms, {} within 5 ms, {} within 10 ms, {} \
         later; {} past the watchdog; mean {} us, longest {} us",
        lag.answers,
        lag.within_1ms,
        lag.within_2ms,
        lag.within_5ms,
        lag.within_10ms,
        lag.later,
        lag.over_watchdog,
        lag.total_us / lag.answers.max(1),
        lag.max_us
    ));
    if let Some(path) = &args.stats {
        let json = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
