//! Why bytes were refused.

use std::fmt;

/// Why a parser refused its input or an encoder its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the format needs.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        have: usize,
    },
    /// An Ethernet frame that does not carry IPv4 (the EtherType found).
    NotIpv4(u16),
    /// An IPv4 header whose version field is not 4, or whose header length is below 20 bytes.
    BadIpHeader,
    /// An IPv4 header checksum that does not verify.
    BadChecksum,
    /// A length field that disagrees with the bytes there.
    BadLength,
    /// An IPv4 fragment (only whole datagrams are parsed past the IP header).
    Fragment,
    /// A sluice header whose magic number is wrong (not a sluice packet).
    BadMagic,
    /// A sluice header of a version this code does not know.
    BadVersion(u8),
    /// A sluice packet kind this version does not define.
    UnknownKind(u8),
    /// Sluice flag bits this version does not define.
    UnknownFlags(u16),
    /// A reserved sluice field that is not zero.
    Reserved,
    /// An INT record would not fit: the packet is at its size limit or has 255 records.
    NoRoom,
    /// A signal value for a sluice packet that carries no signal field (its sender did not ask).
    NoSignalField,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { need, have } => write!(f, "truncated: {need} bytes needed, {have} there"),
            WireError::NotIpv4(t) => write!(f, "not IPv4 (EtherType {t:#06x})"),
            WireError::BadIpHeader => write!(f, "bad IPv4 header (version or header length)"),
            WireError::BadChecksum => write!(f, "IPv4 header checksum does not verify"),
            WireError::BadLength => write!(f, "a length field disagrees with the bytes there"),
            WireError::Fragment => write!(f, "IPv4 fragment"),
            WireError::BadMagic => write!(f, "not a sluice header (wrong magic)"),
            WireError::BadVersion(v) => write!(f, "sluice header version {v} is not supported"),
            WireError::UnknownKind(k) => write!(f, "unknown sluice packet kind {k}"),
            WireError::UnknownFlags(b) => write!(f, "unknown sluice flag bits {b:#06x}"),
            WireError::Reserved => write!(f, "a reserved sluice field is not zero"),
            WireError::NoRoom => write!(f, "no room for another INT record"),
            WireError::NoSignalField => write!(f, "the sluice packet carries no signal field"),
        }
    }
}

impl std::error::Error for WireError {}
