//! Packet formats that the sluice software switch and the sluice UDP transport share: Ethernet II
//! ([`eth`]), IPv4 ([`ipv4`]), UDP ([`udp`]) and the sluice header with its signal field and INT hop
//! records ([`sluice`]), plus [`frame`], which finds them all in one received frame.
//!
//! Parsers read borrowed bytes and return `Result`; they never panic and never allocate, whatever
//! the input. Encoders write into a buffer the caller owns and say how many bytes they wrote. Every
//! multi-byte field is big-endian (network order).

pub mod error;
pub mod eth;
pub mod frame;
pub mod ipv4;
pub mod sluice;
pub mod udp;

pub use error::WireError;
pub use frame::{Frame, L4};
pub use ipv4::Ecn;
pub use sluice::{Flags, IntRecord, Kind, SignalField, SluiceHeader, SluicePacket};

/// Reads a big-endian `u16` at `at`; the caller has checked the length.
#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads a big-endian `u32` at `at`; the caller has checked the length.
#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads a big-endian `u64` at `at`; the caller has checked the length.
#[inline]
pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// Fails with [`WireError::Truncated`] unless `buf` holds at least `need` bytes.
#[inline]
pub(crate) fn need(buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need {
        return Err(WireError::Truncated { need, have: buf.len() });
    }
    Ok(())
}
