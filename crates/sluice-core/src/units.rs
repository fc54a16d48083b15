//! Integer units: time in picoseconds, rate in bit/s, size in bytes; parsing and formatting.

use std::fmt;

/// Simulated time in picoseconds. `u64` covers about 213 days of simulated time.
pub type Time = u64;
/// A link or pacing rate in bits per second.
pub type Rate = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: Time = 1_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: Time = 1_000_000;
/// Picoseconds per millisecond.
pub const PS_PER_MS: Time = 1_000_000_000;
/// Picoseconds per second.
pub const PS_PER_S: Time = 1_000_000_000_000;

/// The largest time a scenario may give (a start, a stop, a duration, a timeout or a delay): 2^60 ps,
/// about 13.3 days. An engineering bound: `Time` ends at 2^64 ps (about 213 days), and the simulator adds
/// a few such times together (a start plus a duration plus a timeout plus path delays); keeping each
/// below 1/16 of the range means such sums cannot overflow.
pub const MAX_TIME: Time = 1 << 60;

/// [`MAX_TIME`] in words, for messages.
pub const MAX_TIME_TEXT: &str = "2^60 ps (about 13.3 days)";

/// Why a unit string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The text that failed to parse.
    pub input: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid value {:?}: expected {}", self.input, self.expected)
    }
}

impl std::error::Error for UnitError {}

const DURATION_FORM: &str = "a duration such as \"500ps\", \"100ns\", \"1us\", \"2.5ms\" or \"1s\"";
const RATE_FORM: &str = "a rate such as \"100Gbps\", \"25Gbps\", \"400Mbps\", \"1.6Tbps\" or \"10Kbps\"";
const SIZE_FORM: &str =
    "a size such as \"1000B\", \"64KB\", \"32MB\", \"1GB\" (powers of 1000) or \"64KiB\", \"32MiB\" (powers of 1024)";

/// Splits `"2.5ms"` into the number `2.5` (as an exact decimal) and the unit `"ms"`.
fn split_number(text: &str) -> Option<(Decimal, &str)> {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let number = Decimal::parse(&text[..end])?;
    Some((number, text[end..].trim()))
}

/// A non-negative decimal number held exactly as `mantissa / 10^scale`.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    mantissa: u128,
    scale: u32,
}

impl Decimal {
    fn parse(text: &str) -> Option<Decimal> {
        let text: String = text.chars().filter(|c| *c != '_').collect();
        if text.is_empty() || text == "." {
            return None;
        }
        let (int, frac) = match text.split_once('.') {
            Some((i, f)) => (i, f),
            None => (text.as_str(), ""),
        };
        if frac.contains('.') || frac.len() > 18 {
            return None;
        }
        let digits = format!("{int}{frac}");
        let mantissa = if digits.is_empty() { 0 } else { digits.parse::<u128>().ok()? };
        Some(Decimal { mantissa, scale: frac.len() as u32 })
    }

    /// `self * multiplier`, required to be a whole number that fits in `u64`.
    fn times(self, multiplier: u64) -> Option<u64> {
        let product = self.mantissa.checked_mul(multiplier as u128)?;
        let divisor = 10u128.pow(self.scale);
        if product % divisor != 0 {
            return None;
        }
        u64::try_from(product / divisor).ok()
    }
}

fn unit_error(input: &str, expected: &'static str) -> UnitError {
    UnitError { input: input.to_string(), expected }
}

/// Parses a duration (`"1us"`, `"2.5ms"`) into picoseconds. A unit is required; values must be whole
/// picoseconds.
pub fn parse_duration(text: &str) -> Result<Time, UnitError> {
    let (number, unit) = split_number(text).ok_or_else(|| unit_error(text, DURATION_FORM))?;
    let multiplier = match unit {
        "ps" => 1,
        "ns" => PS_PER_NS,
        "us" | "µs" => PS_PER_US,
        "ms" => PS_PER_MS,
        "s" => PS_PER_S,
        _ => return Err(unit_error(text, DURATION_FORM)),
    };
    number.times(multiplier).ok_or_else(|| unit_error(text, DURATION_FORM))
}

/// Parses a rate (`"100Gbps"`) into bits per second. A unit is required.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let (number, unit) = split_number(text).ok_or_else(|| unit_error(text, RATE_FORM))?;
    let multiplier = match unit {
        "bps" => 1,
        "Kbps" | "kbps" => 1_000,
        "Mbps" => 1_000_000,
        "Gbps" => 1_000_000_000,
        "Tbps" => 1_000_000_000_000,
        _ => return Err(unit_error(text, RATE_FORM)),
    };
    number.times(multiplier).ok_or_else(|| unit_error(text, RATE_FORM))
}

/// Parses a size (`"32MB"`, `"64KiB"`, `"1000B"`) into bytes. `KB`/`MB`/`GB` are powers of 1000 (as the
/// HPCC artifact's configs use), `KiB`/`MiB`/`GiB` powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (number, unit) = split_number(text).ok_or_else(|| unit_error(text, SIZE_FORM))?;
    let multiplier = match unit {
        "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(unit_error(text, SIZE_FORM)),
    };
    number.times(multiplier).ok_or_else(|| unit_error(text, SIZE_FORM))
}

/// Writes `value` with the largest unit that divides it exactly, so that parsing gives it back.
fn format_exact(value: u64, units: &[(&str, u64)]) -> String {
    for (name, size) in units {
        if value != 0 && value.is_multiple_of(*size) {
            return format!("{}{}", value / size, name);
        }
    }
    let (name, _) = units[units.len() - 1];
    format!("{value}{name}")
}

/// Formats picoseconds as the shortest exact duration string (`1000000` -> `"1us"`).
pub fn format_duration(ps: Time) -> String {
    format_exact(ps, &[("s", PS_PER_S), ("ms", PS_PER_MS), ("us", PS_PER_US), ("ns", PS_PER_NS), ("ps", 1)])
}

/// Formats bit/s as the shortest exact rate string (`100_000_000_000` -> `"100Gbps"`).
pub fn format_rate(bps: Rate) -> String {
    format_exact(
        bps,
        &[("Tbps", 1_000_000_000_000), ("Gbps", 1_000_000_000), ("Mbps", 1_000_000), ("Kbps", 1_000), ("bps", 1)],
    )
}

/// Formats bytes as the shortest exact decimal size string (`32_000_000` -> `"32MB"`).
pub fn format_size(bytes: u64) -> String {
    format_exact(bytes, &[("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1_000), ("B", 1)])
}

/// Time to serialize `bytes` at `rate`, in picoseconds, rounded up so that a link never runs faster than
/// its rate.
#[inline]
pub fn serialization_ps(bytes: u64, rate: Rate) -> Time {
    // A packet's bits in picoseconds fit 64 bits (up to about 2.3 MB): a 64-bit division, not the
    // 128-bit one's call, on the path of every paced packet.
    if bytes <= u64::MAX / (8 * PS_PER_S) {
        return (bytes * 8 * PS_PER_S).div_ceil(rate);
    }
    let bits = bytes as u128 * 8 * PS_PER_S as u128;
    bits.div_ceil(rate as u128) as Time
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_round_trip() {
        assert_eq!(parse_duration("1us"), Ok(PS_PER_US));
        assert_eq!(parse_duration("2.5ms"), Ok(2_500_000_000));
        assert_eq!(parse_duration("500ps"), Ok(500));
        assert_eq!(parse_duration("0.0001ns"), Err(unit_error("0.0001ns", DURATION_FORM)));
        assert!(parse_duration("10").is_err(), "a unit is required");
        assert!(parse_duration("1 sec").is_err());
        for ps in [1, 1_000, 1_500_000, 20 * PS_PER_MS, 3 * PS_PER_S] {
            assert_eq!(parse_duration(&format_duration(ps)), Ok(ps));
        }
    }

    #[test]
    fn rates_parse_and_misspellings_fail() {
        assert_eq!(parse_rate("100Gbps"), Ok(100_000_000_000));
        assert_eq!(parse_rate("1.6Tbps"), Ok(1_600_000_000_000));
        assert_eq!(parse_rate("20Mbps"), Ok(20_000_000));
        let err = parse_rate("100Gpbs").unwrap_err();
        assert!(err.to_string().contains("100Gpbs"));
        assert!(err.to_string().contains("100Gbps"), "the message shows the expected form: {err}");
        assert_eq!(format_rate(400_000_000_000), "400Gbps");
    }

    #[test]
    fn sizes_parse_in_both_bases() {
        assert_eq!(parse_size("32MB"), Ok(32_000_000));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("1000B"), Ok(1000));
        assert!(parse_size("32 megs").is_err());
        assert_eq!(format_size(400_000), "400KB");
    }

    #[test]
    fn serialization_rounds_up() {
        assert_eq!(serialization_ps(1000, 100_000_000_000), 80_000);
        assert_eq!(serialization_ps(1, 3), 2_666_666_666_667);
    }

    #[test]
    fn serialization_agrees_with_the_wide_division_on_both_sides_of_its_64_bit_limit() {
        let wide = |bytes: u64, rate: Rate| (bytes as u128 * 8 * PS_PER_S as u128).div_ceil(rate as u128) as Time;
        let limit = u64::MAX / (8 * PS_PER_S);
        for bytes in [0, 1, 64, 1_048, 9_000, limit - 1, limit, limit + 1, 1 << 40] {
            for rate in [1, 3, 1_000_000_007, 25_000_000_000, 100_000_000_000, 400_000_000_000, u64::MAX] {
                assert_eq!(serialization_ps(bytes, rate), wide(bytes, rate), "{bytes} B at {rate} b/s");
            }
        }
    }
}
