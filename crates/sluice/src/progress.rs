//! A one-line progress display on stderr: simulated time, events per second and an ETA.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use sluice_sim::Progress;

/// Draws progress once the run has taken a second, at most a few times a second, on a terminal only.
#[derive(Debug)]
pub struct ProgressLine {
    started: Instant,
    last_draw: Option<Instant>,
    enabled: bool,
    drawn: bool,
}

impl ProgressLine {
    /// A progress line; `quiet` or a non-terminal stderr disables it.
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine {
            started: Instant::now(),
            last_draw: None,
            enabled: !quiet && std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Called by the simulator with a snapshot.
    pub fn update(&mut self, p: &Progress) {
        let elapsed = self.started.elapsed();
        if !self.enabled || elapsed < Duration::from_secs(1) {
            return;
        }
        if self.last_draw.is_some_and(|t| t.elapsed() < Duration::from_millis(200)) {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.drawn = true;
        let _ = write!(std::io::stderr(), "\r{}\x1b[K", line(p, elapsed));
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// The text of one progress line.
pub fn line(p: &Progress, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rate = p.events as f64 / secs;
    let by_time = p.now as f64 / p.end.max(1) as f64;
    let by_flows = if p.flows == 0 { 0.0 } else { p.flows_finished as f64 / p.flows as f64 };
    let fraction = by_time.max(by_flows).clamp(1e-6, 1.0);
    let eta = secs * (1.0 - fraction) / fraction;
    format!(
        "simulated {:.3} ms | flows {}/{} | {:.1}M events/s | ~{:.0} s left",
        p.now as f64 / 1e9,
        p.flows_finished,
        p.flows,
        rate / 1e6,
        eta
    )
}
