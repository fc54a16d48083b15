//! Runs resolved scenarios on the simulator and turns the results into files and a summary.
//!
//! The `sluice` binary is a thin shell over [`run_scenario`]; other front ends (a Python package,
//! configuration sweeps) call the same function.

#[cfg(feature = "kernel")]
pub mod agent;
#[cfg(feature = "bed")]
pub mod bed;
#[cfg(feature = "bed")]
pub mod bed_workload;
pub mod closed_loop_summary;
pub mod console;
pub mod estimate;
pub mod group_summary;
pub mod host_summary;
pub mod huge_pages;
pub mod progress;
pub mod runner;
pub mod sweep_command;
pub mod tcp;
pub mod test_command;
pub mod test_control;
pub mod udp;
pub mod udp_loops;
pub mod udp_plan;
pub mod udp_scenario;
pub mod udp_threads;

pub use estimate::{estimate, RunEstimate};
pub use runner::{
    outputs, run_into, run_scenario, run_scenario_until, simulation_input, threads_note, time_limit_warning,
    trace_cap_warning, RunOutcome,
};
