//! One-line progress displays on stderr: the simulation's (simulated time, events per second and an
//! ETA) and route setup's (destination hosts done).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use sluice_sim::Progress;
use sluice_topo::RouteProgress;

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

/// Reports the route search of a large topology file once setup has taken a second, so that it is
/// never silent: a redrawn line on a terminal, otherwise a plain line every few seconds.
#[derive(Debug)]
pub struct RouteSetupLine {
    started: Instant,
    last_draw: Option<Instant>,
    enabled: bool,
    terminal: bool,
    drawn: bool,
}

impl RouteSetupLine {
    /// A route setup line, counting from now; `quiet` disables it.
    pub fn new(quiet: bool) -> RouteSetupLine {
        RouteSetupLine {
            started: Instant::now(),
            last_draw: None,
            enabled: !quiet,
            terminal: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Called by route setup after each destination host.
    pub fn update(&mut self, p: RouteProgress) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        // A log file gets few lines; a terminal gets a smooth line.
        let interval = if self.terminal { Duration::from_millis(200) } else { Duration::from_secs(5) };
        if self.last_draw.is_some_and(|t| t.elapsed() < interval) {
            return;
        }
        self.last_draw = Some(Instant::now());
        self.drawn = true;
        let text = route_line(p, self.started.elapsed());
        let _ = if self.terminal {
            write!(std::io::stderr(), "\r{text}\x1b[K")
        } else {
            writeln!(std::io::stderr(), "{text}")
        };
    }

    /// Clears the line on a terminal.
    pub fn finish(&mut self) {
        if self.drawn && self.terminal {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

/// The text of one route setup line.
pub fn route_line(p: RouteProgress, elapsed: Duration) -> String {
    let fraction = p.done as f64 / p.total.max(1) as f64;
    let secs = elapsed.as_secs_f64();
    let eta = secs * (1.0 - fraction) / fraction.max(1e-6);
    format!(
        "computing routes: {}/{} destination hosts ({:.0}%) | {:.0} s so far, ~{:.0} s left",
        p.done,
        p.total,
        fraction * 100.0,
        secs,
        eta
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_line_shows_count_share_and_time_left() {
        let text = route_line(RouteProgress { done: 250, total: 1000 }, Duration::from_secs(3));
        assert_eq!(text, "computing routes: 250/1000 destination hosts (25%) | 3 s so far, ~9 s left");
    }
}
