//! The agent's main loop: load and register the BPF side, drain the reports ring (woken by urgent
//! reports and a filling ring, else every poll interval), run the algorithms, write their decisions,
//! and unregister on exit.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use sluice_core::{Time, PS_PER_NS, PS_PER_US};

use crate::agent::{Agent, AgentCounters};
use crate::config::Resolved;
use crate::loader::{poll_timeout, Datapath, KernelCounters, KernelError, KernelSettings};
use crate::program::Tapes;

/// How the agent runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop after this long (else on SIGINT or SIGTERM).
    pub duration: Option<Duration>,
    /// Log a status line this often.
    pub status_every: Option<Duration>,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The agent's epoch.
    pub epoch: u32,
    /// Wall time, s.
    pub wall_seconds: f64,
    /// CPU time the agent used (user + system), s.
    pub cpu_seconds: f64,
    /// `cpu_seconds / wall_seconds`: fraction of one core.
    pub cpu_fraction: f64,
    /// Ring-buffer drains.
    pub drains: u64,
    /// The longest time between two drains, us: the loop waits at most the poll time (1 ms) between
    /// drains, so a longer gap is time the loop could not run (answers late by that much).
    pub longest_drain_gap_us: u64,
    /// Messages per second read from the ring.
    pub messages_per_second: f64,
    /// Flows still under control at exit.
    pub flows_left: usize,
    /// What the agent counted.
    pub agent: AgentCounters,
    /// What the BPF side counted during the run (differences of its counters).
    pub kernel: KernelCounters,
    /// Whether the loop ran under SCHED_FIFO (`realtime_priority`).
    pub realtime: bool,
}

/// The monotonic clock, in sluice time (ps); the BPF side's `bpf_ktime_get_ns` reads the same clock.
pub fn monotonic() -> Time {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64) * PS_PER_NS
}

/// CPU time the calling thread used so far (user + system), s: the agent's loop runs on one thread, so
/// this is the agent's cost even when it shares its process (benchmarks).
pub fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_THREAD is a valid `who`, so only it is written.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0;
    if !ok {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks a running agent loop (in this process) to stop, as SIGTERM does.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_signal(_signal: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM end the loop cleanly (so that the names are unregistered).
fn catch_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe, and has the
        // `extern "C" fn(c_int)` signature `signal` expects.
        unsafe { libc::signal(signal, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }
}

/// Runs the agent until `duration` passes or a signal arrives; `log` gets status lines.
pub fn run(resolved: Resolved, options: &RunOptions, log: &mut dyn FnMut(&str)) -> Result<RunSummary, KernelError> {
    let config = resolved.config.clone();
    let settings = KernelSettings {
        watchdog_ns: config.watchdog / PS_PER_NS,
        batch_acks: config.batch_acks,
        deadline_ns: config.deadline / PS_PER_NS,
        wakeup_bytes: config.wakeup_bytes,
        fallback: config.fallback,
    };
    STOP.store(false, Ordering::SeqCst);
    catch_signals();
    let mut datapath = Datapath::load(&config.pin_dir, &settings)?;
    let epoch = datapath.maps.epoch()?;
    log(&format!(
        "sluice agent: epoch {epoch}, registered {}; maps pinned at {}",
        crate::loader::SLOTS.map(|s| s.0).join(" "),
        config.pin_dir.display()
    ));
    let realtime = config.realtime_priority > 0 && realtime(config.realtime_priority, log);
    let result = drive(&datapath, Agent::new(resolved, epoch), (config.poll, config.watchdog), options, log)
        .map(|summary| RunSummary { realtime, ..summary });
    datapath.unregister();
    let summary = result?;
    if summary.flows_left == 0 {
        datapath.unpin()?;
        log("sluice agent: unregistered; no flows left, maps unpinned");
    } else {
        log(&format!(
            "sluice agent: unregistered; {} flows still run on sluice's programs (watchdog fallback), maps stay \
             pinned at {} for a restarted agent",
            summary.flows_left,
            config.pin_dir.display()
        ));
    }
    Ok(summary)
}

/// Puts the calling thread (the agent's loop) under SCHED_FIFO at `priority`; logs and returns false
/// when the kernel refuses (no CAP_SYS_NICE): the agent then runs under the normal scheduler, and its
/// answer lag in the summary shows what that costs it.
fn realtime(priority: u8, log: &mut dyn FnMut(&str)) -> bool {
    let param = libc::sched_param { sched_priority: libc::c_int::from(priority) };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0 names the calling
    // thread, whose scheduling policy is all the call changes.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        return true;
    }
    let why = std::io::Error::last_os_error();
    log(&format!("sluice agent: SCHED_FIFO {priority} refused ({why}); normal scheduler"));
    false
}

fn drive(
    datapath: &Datapath,
    agent: Agent,
    (poll, watchdog): (Time, Time),
    options: &RunOptions,
    log: &mut dyn FnMut(&str),
) -> Result<RunSummary, KernelError> {
    let start = (Instant::now(), cpu_seconds(), datapath.maps.counters()?);
    let watchdog_ns = watchdog / PS_PER_NS;
    let agent = RefCell::new(agent);
    let now = Cell::new(monotonic());
    let ring = datapath.maps.ring(|bytes| {
        agent.borrow_mut().handle(bytes, now.get());
        0
    })?;
    let mut decisions = Vec::new();
    let (mut installs, mut tapes) = (Vec::new(), Tapes::default());
    let (mut drains, mut last_status) = (0u64, Instant::now());
    let (mut last_drain, mut longest_gap) = (monotonic(), 0);
    while !STOP.load(Ordering::SeqCst) && options.duration.is_none_or(|d| start.0.elapsed() < d) {
        let wait = agent.borrow().next_deadline().map_or(poll, |at| at.saturating_sub(monotonic()).min(poll));
        let _ = ring.poll(poll_timeout(wait / PS_PER_NS));
        now.set(monotonic());
        longest_gap = longest_gap.max(now.get().saturating_sub(last_drain));
        last_drain = now.get();
        let _ = ring.consume();
        drains += 1;
        let mut a = agent.borrow_mut();
        a.poll(now.get());
        // A flow's program state goes before the decision that turns it on.
        installs.clear();
        a.installs(&mut installs);
        for install in &installs {
            let written = datapath.maps.install(&mut tapes, a.epoch(), install);
            if let Err(e) = &written {
                log(&format!(
                    "sluice agent: flow {:#x}: its program runs in the agent on folded reports: {e}",
                    install.flow_id
                ));
            }
            a.installed(install.flow_id, install.install, written.is_ok());
        }
        decisions.clear();
        a.decisions(&mut decisions);
        datapath.maps.write_decisions(&decisions);
        a.record_answers(&decisions, monotonic() / PS_PER_NS, watchdog_ns);
        if options.status_every.is_some_and(|every| last_status.elapsed() >= every) {
            last_status = Instant::now();
            let k = datapath.maps.counters()?;
            log(&status_line(&a, &k));
        }
    }
    drop(ring);
    let agent = agent.into_inner();
    let wall = start.0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - start.1;
    let kernel = difference(datapath.maps.counters()?, start.2);
    Ok(RunSummary {
        epoch: agent.epoch(),
        wall_seconds: wall,
        cpu_seconds: cpu,
        cpu_fraction: cpu / wall.max(1e-9),
        drains,
        longest_drain_gap_us: longest_gap / PS_PER_US,
        messages_per_second: agent.counters.messages as f64 / wall.max(1e-9),
        flows_left: agent.flows(),
        agent: agent.counters.clone(),
        kernel,
        realtime: false,
    })
}

fn status_line(a: &Agent, k: &KernelCounters) -> String {
    format!(
        "flows {} | messages {} (malformed {}, stale {}) | kernel: acks {} reports {} ring-full {} applied {} \
         rejected {}+{} fallbacks {} resumed {}",
        a.flows(),
        a.counters.messages,
        a.counters.malformed,
        a.counters.stale,
        k.acks,
        k.reports,
        k.ringbuf_full,
        k.applied,
        k.stale,
        k.malformed,
        k.fallbacks,
        k.resumed
    )
}

fn difference(now: KernelCounters, then: KernelCounters) -> KernelCounters {
    KernelCounters {
        acks: now.acks.saturating_sub(then.acks),
        reports: now.reports.saturating_sub(then.reports),
        urgent: now.urgent.saturating_sub(then.urgent),
        ringbuf_full: now.ringbuf_full.saturating_sub(then.ringbuf_full),
        applied: now.applied.saturating_sub(then.applied),
        stale: now.stale.saturating_sub(then.stale),
        malformed: now.malformed.saturating_sub(then.malformed),
        fallbacks: now.fallbacks.saturating_sub(then.fallbacks),
        resumed: now.resumed.saturating_sub(then.resumed),
        no_state: now.no_state.saturating_sub(then.no_state),
        fallbacks_to_cubic: now.fallbacks_to_cubic.saturating_sub(then.fallbacks_to_cubic),
        program_signals: now.program_signals.saturating_sub(then.program_signals),
        program_reports: now.program_reports.saturating_sub(then.program_reports),
        programs_lost: now.programs_lost.saturating_sub(then.programs_lost),
    }
}
