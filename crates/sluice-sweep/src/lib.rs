//! Configuration sweeps: run one base scenario over a grid or a sample of settings, on local cores,
//! resumably, and collect one table with a row of metrics per run; then pick the best configuration.
//!
//! The layers, lowest first: [`spec`] reads the sweep file; [`axes`] checks and indexes each axis;
//! [`plan`] lists the runs; [`metrics`] and [`table`] turn a run's summary into a row and rows into CSV
//! and Parquet; [`pick`] parses and judges objectives and constraints; [`sweep`] checks a whole sweep
//! against its base scenario; [`exec`] runs it on local threads; [`finish`] collects the table, picks
//! and writes the sweep directory.
//!
//! The simulator itself is not a dependency: the caller passes the function that runs one resolved
//! scenario ([`exec::RunFn`]), so front ends (the command line, Python, a Ray task) run the same code.

pub mod axes;
pub mod error;
pub mod exec;
pub mod finish;
pub mod metrics;
pub mod pick;
pub mod plan;
pub mod spec;
pub mod sweep;
pub mod table;

pub use error::SweepError;
pub use exec::{run_local, Outcome, Progress, RunFn};
pub use finish::{collect, write, Best, Finished};
pub use sweep::{Prepared, Sweep, SweepOptions, LARGE_SWEEP};
