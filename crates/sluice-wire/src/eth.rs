//! Ethernet II headers (IEEE 802.3 with an EtherType; no VLAN tags).
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 6 | destination MAC |
//! | 6 | 6 | source MAC |
//! | 12 | 2 | EtherType |

use crate::{be16, need, WireError};

/// Length of an Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// The EtherType of IPv4 (IEEE registry).
pub const ETHERTYPE_IPV4: u16 = 0x0800;

/// An Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthHeader {
    /// Destination MAC address.
    pub dst: [u8; 6],
    /// Source MAC address.
    pub src: [u8; 6],
    /// EtherType of the payload.
    pub ethertype: u16,
}

impl EthHeader {
    /// Parses the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<EthHeader, WireError> {
        need(buf, HEADER_LEN)?;
        let mut dst = [0u8; 6];
        let mut src = [0u8; 6];
        dst.copy_from_slice(&buf[0..6]);
        src.copy_from_slice(&buf[6..12]);
        Ok(EthHeader { dst, src, ethertype: be16(buf, 12) })
    }

    /// Writes the header at the start of `buf`; returns [`HEADER_LEN`].
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need(buf, HEADER_LEN)?;
        buf[0..6].copy_from_slice(&self.dst);
        buf[6..12].copy_from_slice(&self.src);
        buf[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
        Ok(HEADER_LEN)
    }
}

/// Overwrites the destination and source MAC addresses of the frame in `frame` (no-op on a frame
/// shorter than a header).
#[inline]
pub fn set_addresses(frame: &mut [u8], dst: [u8; 6], src: [u8; 6]) {
    if frame.len() >= 12 {
        frame[0..6].copy_from_slice(&dst);
        frame[6..12].copy_from_slice(&src);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_short_input() {
        let h = EthHeader { dst: [1, 2, 3, 4, 5, 6], src: [7, 8, 9, 10, 11, 12], ethertype: ETHERTYPE_IPV4 };
        let mut buf = [0u8; 20];
        assert_eq!(h.write(&mut buf), Ok(14));
        assert_eq!(&buf[12..14], &[0x08, 0x00]);
        assert_eq!(EthHeader::parse(&buf), Ok(h));
        assert_eq!(EthHeader::parse(&buf[..13]), Err(WireError::Truncated { need: 14, have: 13 }));
        assert!(h.write(&mut [0u8; 3]).is_err());
    }
}
