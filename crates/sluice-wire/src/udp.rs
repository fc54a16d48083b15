//! UDP headers (RFC 768) and their checksum over the IPv4 pseudo-header.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 2 | source port |
//! | 2 | 2 | destination port |
//! | 4 | 2 | length (header and payload) |
//! | 6 | 2 | checksum (0: none, allowed over IPv4) |

use crate::ipv4::{fold, sum_words, PROTO_UDP};
use crate::{be16, need, WireError};

/// Length of a UDP header.
pub const HEADER_LEN: usize = 8;

/// A UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length of header and payload.
    pub len: u16,
    /// Checksum as on the wire (0: none).
    pub checksum: u16,
}

impl UdpHeader {
    /// Parses the header at the start of `buf`, the UDP datagram (link padding may follow): the length
    /// field must lie between 8 and `buf.len()`. The checksum is not verified (see [`checksum`]).
    pub fn parse(buf: &[u8]) -> Result<UdpHeader, WireError> {
        need(buf, HEADER_LEN)?;
        let len = be16(buf, 4);
        if (len as usize) < HEADER_LEN || len as usize > buf.len() {
            return Err(WireError::BadLength);
        }
        Ok(UdpHeader { src_port: be16(buf, 0), dst_port: be16(buf, 2), len, checksum: be16(buf, 6) })
    }

    /// Writes the header at the start of `buf`; returns 8.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need(buf, HEADER_LEN)?;
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..6].copy_from_slice(&self.len.to_be_bytes());
        buf[6..8].copy_from_slice(&self.checksum.to_be_bytes());
        Ok(HEADER_LEN)
    }
}

/// The UDP checksum of `datagram` (header and payload, with its checksum field taken as zero) between
/// IPv4 addresses `src` and `dst` (RFC 768). A computed 0 is sent as 0xffff, since 0 means none.
pub fn checksum(src: [u8; 4], dst: [u8; 4], datagram: &[u8]) -> u16 {
    let mut sum = sum_words(&src, 0);
    sum = sum_words(&dst, sum);
    sum += PROTO_UDP as u64 + datagram.len() as u64;
    // The checksum field itself counts as zero, so a filled-in datagram gives the same result.
    if datagram.len() >= HEADER_LEN {
        sum = sum_words(&datagram[..6], sum);
        sum = sum_words(&datagram[8..], sum);
    } else {
        sum = sum_words(datagram, sum);
    }
    match !fold(sum) {
        0 => 0xffff,
        c => c,
    }
}

/// Recomputes and stores the checksum of `datagram` when it has one (a zero checksum stays zero).
pub fn refresh_checksum(src: [u8; 4], dst: [u8; 4], datagram: &mut [u8]) {
    if datagram.len() < HEADER_LEN || be16(datagram, 6) == 0 {
        return;
    }
    datagram[6..8].copy_from_slice(&[0, 0]);
    let c = checksum(src, dst, datagram);
    datagram[6..8].copy_from_slice(&c.to_be_bytes());
}

/// Whether the checksum of `datagram` verifies (a zero checksum, none, always does).
pub fn verify(src: [u8; 4], dst: [u8; 4], datagram: &[u8]) -> bool {
    if datagram.len() < HEADER_LEN {
        return false;
    }
    let stored = be16(datagram, 6);
    stored == 0 || checksum(src, dst, datagram) == stored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_verifies_after_refresh_and_catches_a_flipped_bit() {
        let (src, dst) = ([192, 0, 2, 1], [192, 0, 2, 2]);
        let mut d = [0u8; 13];
        UdpHeader { src_port: 4000, dst_port: 5000, len: 13, checksum: 1 }.write(&mut d).unwrap();
        d[8..].copy_from_slice(b"hello");
        refresh_checksum(src, dst, &mut d);
        assert!(verify(src, dst, &d));
        d[9] ^= 0x40;
        assert!(!verify(src, dst, &d));
        let h = UdpHeader::parse(&d).unwrap();
        assert_eq!((h.src_port, h.dst_port, h.len), (4000, 5000, 13));
    }

    #[test]
    fn a_zero_checksum_means_none() {
        let mut d = [0u8; 8];
        UdpHeader { src_port: 1, dst_port: 2, len: 8, checksum: 0 }.write(&mut d).unwrap();
        refresh_checksum([1; 4], [2; 4], &mut d);
        assert_eq!(&d[6..8], &[0, 0]);
        assert!(verify([1; 4], [2; 4], &d));
    }

    #[test]
    fn refuses_lengths_outside_the_buffer() {
        let mut d = [0u8; 8];
        UdpHeader { src_port: 1, dst_port: 2, len: 9, checksum: 0 }.write(&mut d).unwrap();
        assert_eq!(UdpHeader::parse(&d), Err(WireError::BadLength));
        d[5] = 7;
        assert_eq!(UdpHeader::parse(&d), Err(WireError::BadLength));
        assert!(UdpHeader::parse(&d[..7]).is_err());
    }
}
