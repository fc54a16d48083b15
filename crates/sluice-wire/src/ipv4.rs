//! IPv4 headers (RFC 791): parsing with checksum verification, the ECN field (RFC 3168) and setting
//! Congestion Experienced with an incremental checksum update (RFC 1624).
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | version (4 bits) and header length in 32-bit words (4 bits) |
//! | 1 | 1 | DSCP (6 bits, RFC 2474) and ECN (2 bits, RFC 3168) |
//! | 2 | 2 | total length |
//! | 4 | 2 | identification |
//! | 6 | 2 | flags (3 bits) and fragment offset (13 bits) |
//! | 8 | 1 | TTL |
//! | 9 | 1 | protocol |
//! | 10 | 2 | header checksum |
//! | 12 | 4 | source address |
//! | 16 | 4 | destination address |
//! | 20 | 0-40 | options |

use crate::{be16, need, WireError};

/// Length of an IPv4 header without options.
pub const MIN_HEADER_LEN: usize = 20;
/// IP protocol number of TCP (IANA).
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP (IANA).
pub const PROTO_UDP: u8 = 17;

/// The ECN codepoint of an IPv4 header (RFC 3168 section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecn {
    /// Not ECN-capable transport (00).
    NotEct,
    /// ECN-capable, ECT(1) (01).
    Ect1,
    /// ECN-capable, ECT(0) (10).
    Ect0,
    /// Congestion experienced (11).
    Ce,
}

impl Ecn {
    /// The codepoint of the two low bits of `tos`.
    #[inline]
    pub fn from_bits(tos: u8) -> Ecn {
        match tos & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit value.
    #[inline]
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }

    /// Whether a switch may mark the packet: ECT(0) or ECT(1).
    #[inline]
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// A parsed IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Header {
    /// Header length in bytes (20 to 60).
    pub header_len: u8,
    /// Differentiated services codepoint (6 bits).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Total length of the datagram, header included.
    pub total_len: u16,
    /// Identification.
    pub id: u16,
    /// Flags and fragment offset, as on the wire.
    pub flags_fragment: u16,
    /// Time to live.
    pub ttl: u8,
    /// Protocol of the payload.
    pub protocol: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

impl Ipv4Header {
    /// Parses and verifies the header at the start of `buf`: version 4, a header length of 20 to 60
    /// bytes that fits `buf`, a total length between the header length and `buf.len()` (link-layer
    /// padding may follow), and a header checksum that verifies.
    pub fn parse(buf: &[u8]) -> Result<Ipv4Header, WireError> {
        need(buf, MIN_HEADER_LEN)?;
        let header_len = ((buf[0] & 0x0f) as usize) * 4;
        if buf[0] >> 4 != 4 || header_len < MIN_HEADER_LEN {
            return Err(WireError::BadIpHeader);
        }
        need(buf, header_len)?;
        let total_len = be16(buf, 2);
        if (total_len as usize) < header_len || total_len as usize > buf.len() {
            return Err(WireError::BadLength);
        }
        if checksum(&buf[..header_len]) != 0 {
            return Err(WireError::BadChecksum);
        }
        let mut src = [0u8; 4];
        let mut dst = [0u8; 4];
        src.copy_from_slice(&buf[12..16]);
        dst.copy_from_slice(&buf[16..20]);
        Ok(Ipv4Header {
            header_len: header_len as u8,
            dscp: buf[1] >> 2,
            ecn: Ecn::from_bits(buf[1]),
            total_len,
            id: be16(buf, 4),
            flags_fragment: be16(buf, 6),
            ttl: buf[8],
            protocol: buf[9],
            src,
            dst,
        })
    }

    /// Whether the datagram is a fragment (more fragments set, or a non-zero offset).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flags_fragment & 0x3fff != 0
    }

    /// Writes a 20-byte header (no options; `header_len` is ignored) with its checksum at the start of
    /// `buf`; returns 20.
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        need(buf, MIN_HEADER_LEN)?;
        buf[0] = 0x45;
        buf[1] = (self.dscp << 2) | self.ecn.bits();
        buf[2..4].copy_from_slice(&self.total_len.to_be_bytes());
        buf[4..6].copy_from_slice(&self.id.to_be_bytes());
        buf[6..8].copy_from_slice(&self.flags_fragment.to_be_bytes());
        buf[8] = self.ttl;
        buf[9] = self.protocol;
        buf[10..12].copy_from_slice(&[0, 0]);
        buf[12..16].copy_from_slice(&self.src);
        buf[16..20].copy_from_slice(&self.dst);
        let sum = checksum(&buf[..MIN_HEADER_LEN]);
        buf[10..12].copy_from_slice(&sum.to_be_bytes());
        Ok(MIN_HEADER_LEN)
    }
}

/// The Internet checksum (RFC 1071) of `bytes`: the ones' complement of the ones' complement sum of
/// its 16-bit words (a trailing odd byte is padded with zero). Over a header that holds its own valid
/// checksum, the result is 0.
pub fn checksum(bytes: &[u8]) -> u16 {
    !fold(sum_words(bytes, 0))
}

/// Adds the 16-bit big-endian words of `bytes` to `sum` (a trailing odd byte padded with zero), without
/// folding the carries.
pub(crate) fn sum_words(bytes: &[u8], mut sum: u64) -> u64 {
    let mut chunks = bytes.chunks_exact(2);
    for w in &mut chunks {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

/// Folds carries into 16 bits (ones' complement addition).
pub(crate) fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Sets Congestion Experienced in the IPv4 header at the start of `ip` and updates its checksum in
/// place by RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')`, where `m` is the 16-bit word holding the TOS
/// byte. Returns `true` when it marked: only an ECT(0) or ECT(1) packet is marked (RFC 3168 section
/// 5), and a header shorter than 20 bytes is left alone.
pub fn set_ce(ip: &mut [u8]) -> bool {
    if ip.len() < MIN_HEADER_LEN || !Ecn::from_bits(ip[1]).is_ect() {
        return false;
    }
    let old = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] |= 3;
    let new = u16::from_be_bytes([ip[0], ip[1]]);
    let hc = be16(ip, 10);
    let sum = (!hc) as u64 + (!old) as u64 + new as u64;
    ip[10..12].copy_from_slice(&(!fold(sum)).to_be_bytes());
    true
}

/// Rewrites the total length of the IPv4 header at the start of `ip` and recomputes its checksum;
/// does nothing to a header it cannot read.
pub fn set_total_len(ip: &mut [u8], total_len: u16) {
    if ip.len() < MIN_HEADER_LEN {
        return;
    }
    let header_len = (((ip[0] & 0x0f) as usize) * 4).clamp(MIN_HEADER_LEN, ip.len().min(60));
    ip[2..4].copy_from_slice(&total_len.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let sum = checksum(&ip[..header_len]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ecn: Ecn) -> Ipv4Header {
        Ipv4Header {
            header_len: 20,
            dscp: 10,
            ecn,
            total_len: 20,
            id: 0x1234,
            flags_fragment: 0x4000,
            ttl: 64,
            protocol: PROTO_UDP,
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
        }
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 section 3's example words sum to 0xddf2 (ones' complement); the checksum is its
        // complement.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&bytes), !0xddf2);
    }

    #[test]
    fn written_headers_verify_and_parse_back() {
        let mut buf = [0u8; 20];
        let h = header(Ecn::Ect0);
        h.write(&mut buf).unwrap();
        assert_eq!(checksum(&buf), 0);
        assert_eq!(Ipv4Header::parse(&buf), Ok(h));
        buf[8] ^= 1;
        assert_eq!(Ipv4Header::parse(&buf), Err(WireError::BadChecksum));
    }

    #[test]
    fn refuses_bad_version_length_and_short_input() {
        let mut buf = [0u8; 24];
        header(Ecn::NotEct).write(&mut buf).unwrap();
        let mut v6 = buf;
        v6[0] = 0x65;
        assert_eq!(Ipv4Header::parse(&v6), Err(WireError::BadIpHeader));
        let mut long = buf;
        long[3] = 200;
        assert_eq!(Ipv4Header::parse(&long), Err(WireError::BadLength));
        assert!(matches!(Ipv4Header::parse(&buf[..19]), Err(WireError::Truncated { .. })));
        let mut options = buf;
        options[0] = 0x46; // 24-byte header, checksum no longer verifies over it
        options[3] = 24;
        assert!(Ipv4Header::parse(&options[..23]).is_err());
    }

    #[test]
    fn set_ce_marks_ect_and_keeps_the_checksum_valid() {
        for (ecn, marks) in [(Ecn::Ect0, true), (Ecn::Ect1, true), (Ecn::NotEct, false), (Ecn::Ce, false)] {
            for id in [0u16, 1, 0x7fff, 0xfffe, 0xffff] {
                let mut buf = [0u8; 20];
                Ipv4Header { id, ..header(ecn) }.write(&mut buf).unwrap();
                assert_eq!(set_ce(&mut buf), marks);
                assert_eq!(checksum(&buf), 0, "{ecn:?} id {id}");
                let parsed = Ipv4Header::parse(&buf).unwrap();
                assert_eq!(parsed.ecn, if ecn == Ecn::NotEct { Ecn::NotEct } else { Ecn::Ce });
                assert_eq!(parsed.dscp, 10);
            }
        }
        assert!(!set_ce(&mut [0x45, 2]));
    }

    #[test]
    fn set_total_len_recomputes_the_checksum() {
        let mut buf = [0u8; 60];
        Ipv4Header { total_len: 40, ..header(Ecn::Ect0) }.write(&mut buf).unwrap();
        set_total_len(&mut buf, 60);
        let h = Ipv4Header::parse(&buf).unwrap();
        assert_eq!(h.total_len, 60);
    }
}
