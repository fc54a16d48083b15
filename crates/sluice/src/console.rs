//! The terminal side of the command line: standard output that reports failed writes (a closed pipe is a
//! reader that has seen enough, as for `head`), notes on standard error that never abort the program, and
//! the interrupt flag that SIGINT and SIGTERM raise.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a command did not finish normally, and with which exit status it ends.
#[derive(Debug)]
pub enum Failure {
    /// Bad input, or a run or write that failed: the message is printed, exit status 2.
    Error(String),
    /// SIGINT or SIGTERM stopped the command: the message says how far it got, exit status 130.
    Interrupted(String),
    /// The reader of standard output went away: nothing more is printed, exit status 0.
    ClosedPipe,
    /// The command did its work but part of it failed (runs of a sweep): the message is printed, exit
    /// status 1.
    Partial(String),
}

impl Failure {
    /// Prints the message (if any) on standard error and gives the exit status.
    pub fn report(self) -> ExitCode {
        match self {
            Failure::Error(message) => {
                note(&format!("error: {message}"));
                ExitCode::from(2)
            }
            Failure::Interrupted(message) => {
                note(&format!("sluice: {message}"));
                ExitCode::from(130)
            }
            Failure::ClosedPipe => ExitCode::SUCCESS,
            Failure::Partial(message) => {
                note(&format!("sluice: {message}"));
                ExitCode::from(1)
            }
        }
    }

    /// What the failure says, for a caller that passes it on (a test server to its client).
    pub fn message(&self) -> String {
        match self {
            Failure::Error(m) | Failure::Interrupted(m) | Failure::Partial(m) => m.clone(),
            Failure::ClosedPipe => "standard output was closed".into(),
        }
    }

    /// The failure for an error writing to standard output.
    pub fn of_stdout(e: io::Error) -> Failure {
        match e.kind() {
            io::ErrorKind::BrokenPipe => Failure::ClosedPipe,
            _ => Failure::Error(format!("cannot write to standard output: {e}")),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Error(message)
    }
}

/// Writes `text` to standard output and flushes it.
pub fn out(text: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(Failure::of_stdout)
}

/// Writes a line to standard error. A failure is ignored: there is nowhere left to report it, and a
/// closed or full standard error must not stop a run.
pub fn note(line: &str) {
    let _ = writeln!(io::stderr(), "{line}");
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// From now on SIGINT and SIGTERM raise the interrupt flag instead of killing the process, so that a run
/// can stop and clean up; a second signal ends the process at once (exit status 130), and whatever the
/// first one left half-done is cleaned up by the next run that writes to the same place.
pub fn catch_interrupts() -> Result<(), Failure> {
    ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    })
    .map_err(|e| Failure::Error(format!("cannot catch SIGINT and SIGTERM: {e}")))
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
