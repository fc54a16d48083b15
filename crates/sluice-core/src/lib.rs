//! Shared foundations of sluice: integer units and their text forms, and deterministic random streams.
//!
//! Every quantity in sluice is an integer in a fixed base unit so that runs are exact and reproducible:
//! time in picoseconds ([`Time`]), rates in bits per second ([`Rate`]), sizes in bytes. The parsers accept
//! the forms users write in scenario files (`"1us"`, `"100Gbps"`, `"32MB"`) and reject anything else with
//! a message that says what was expected.

pub mod rng;
pub mod units;

pub use rng::Rng;
pub use units::{
    format_duration, format_rate, format_size, parse_duration, parse_rate, parse_size, serialization_ps, Rate, Time,
    UnitError, MAX_TIME, MAX_TIME_TEXT, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US,
};
pub mod serde_units;
