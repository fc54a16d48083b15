//! Serde adapters so that configuration structs hold integer units but read and write their text forms.
//!
//! Use with `#[serde(with = "sluice_core::serde_units::duration")]` (also `rate`, `size`, and the
//! `opt_*` variants for `Option` fields). Sizes also accept a bare integer (bytes).

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;

use crate::units::{format_duration, format_rate, format_size, parse_duration, parse_rate, parse_size, UnitError};

struct UnitVisitor {
    parse: fn(&str) -> Result<u64, UnitError>,
    expecting: &'static str,
    allow_integer: bool,
}

impl<'de> Visitor<'de> for UnitVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        (self.parse)(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        if self.allow_integer && v >= 0 {
            Ok(v as u64)
        } else {
            Err(E::custom(format!("invalid value {v}: expected {} (a number needs a unit)", self.expecting)))
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.visit_i64(v as i64)
    }
}

macro_rules! unit_module {
    ($name:ident, $opt:ident, $parse:path, $format:path, $expecting:expr, $int:expr) => {
        #[doc = concat!("Serde adapter for a `u64` written as ", $expecting, ".")]
        pub mod $name {
            use super::*;

            /// Reads the text form.
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
                d.deserialize_any(UnitVisitor { parse: $parse, expecting: $expecting, allow_integer: $int })
            }

            /// Writes the text form.
            pub fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$format(*value))
            }
        }

        #[doc = concat!("Serde adapter for an `Option<u64>` written as ", $expecting, ".")]
        pub mod $opt {
            use super::*;

            /// Reads the text form; absent fields need `#[serde(default)]`.
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
                super::$name::deserialize(d).map(Some)
            }

            /// Writes the text form (or nothing).
            pub fn serialize<S: Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
                match value {
                    Some(v) => s.serialize_str(&$format(*v)),
                    None => s.serialize_none(),
                }
            }
        }
    };
}

unit_module!(duration, opt_duration, parse_duration, format_duration, "a duration such as \"1us\"", false);
unit_module!(rate, opt_rate, parse_rate, format_rate, "a rate such as \"100Gbps\"", false);
unit_module!(size, opt_size, parse_size, format_size, "a size such as \"32MB\" or a number of bytes", true);
