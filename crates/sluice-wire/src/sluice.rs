//! The sluice header, version 1: what the sluice UDP transport puts at the start of every UDP payload,
//! followed by the signal field when the header's `SIGNAL` flag is set, the INT hop records switches
//! append, then the payload.
//!
//! Header (56 bytes, big-endian):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 2 | magic `0x534c` ("SL") |
//! | 2 | 1 | version, 1 |
//! | 3 | 1 | kind ([`Kind`]) |
//! | 4 | 2 | flags ([`Flags`]) |
//! | 6 | 1 | INT hop count `n` |
//! | 7 | 1 | with the `SIGNAL` flag: the switches that wrote the signal field (0: none yet); else reserved, 0 |
//! | 8 | 4 | flow id |
//! | 12 | 4 | payload length (bytes after the INT records) |
//! | 16 | 8 | sequence number (data: byte offset; ack and nack: cumulative bytes received; token: the token's number; request: the flow's size, `u64::MAX` when unknown; stop: the sender's next new byte; signal: the switch's value) |
//! | 24 | 8 | send timestamp, ns (the sender's clock; a signal packet: the switch's clock) |
//! | 32 | 8 | echoed timestamp, ns (an ack's or a signal packet's copy of the data packet's send timestamp) |
//! | 40 | 8 | offset: an ack's selectively acknowledged data packet (its byte offset); a nack's packet to resend; a token's priority queue for the data it grants (0: the sender's own); scheduled data: the number of the token it spends; a request: the bytes sent before any token |
//! | 48 | 4 | bytes: an ack's payload bytes newly received since the previous ack; a token's grant in payload bytes; a request: the sender's first window (its unsent bytes, at most one BDP); a signal packet: the node id of the switch that sent it |
//! | 52 | 4 | CE bytes: an ack's share of those bytes that arrived with Congestion Experienced; a request: the flow's payload bytes per packet |
//!
//! With the `SIGNAL` flag, the signal field follows (8 bytes): the value the switches of the path wrote
//! for a switch signal (`sluice_cc::signal`), combined hop by hop by the design's rule, as a big-endian
//! `u64`; byte 7 counts the switches that wrote it. A data packet carries the field for switches to
//! write; an ack carries the field of the data packet it answers, as the receiver echoes it. A switch
//! rewrites the field in place ([`set_signal`]), so the packet's length does not change.
//!
//! A signal packet ([`Kind::Signal`]) goes from a switch to a data packet's sender, addressed as if the
//! data packet's receiver sent it (so the sender's transport finds the flow by its peer and id): its
//! flow id is the data packet's, and it carries the switch's value, the switch's node id and the data
//! packet's send timestamp.
//!
//! Both are version 1: a packet without the flag and of the other kinds is laid out as before, and a
//! reader that does not know the flag or the kind refuses the packet rather than misreading it.
//!
//! Then `n` INT hop records of 32 bytes each, one per switch egress the packet crossed, in path order
//! (the fields of HPCC's INT, Li et al. SIGCOMM'19 section 3.2, as the simulator's `IntHop`):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | egress timestamp, ns (the switch's clock) |
//! | 8 | 8 | cumulative bytes the egress port transmitted |
//! | 16 | 8 | the egress queue's length when the packet left, bytes |
//! | 24 | 8 | the egress link's rate, bit/s |
//!
//! Then the payload (`payload length` bytes). The UDP payload holds exactly these three parts.

use crate::{be16, be32, be64, need, WireError};

/// Length of the header (without the signal field).
pub const HEADER_LEN: usize = 56;
/// Length of the signal field that follows the header when the `SIGNAL` flag is set.
pub const SIGNAL_LEN: usize = 8;
/// Length of one INT hop record.
pub const HOP_LEN: usize = 32;
/// The magic number at offset 0 ("SL").
pub const MAGIC: u16 = 0x534c;
/// The header version this code reads and writes.
pub const VERSION: u8 = 1;
/// Most INT records one packet carries (the count is one byte).
pub const MAX_HOPS: usize = 255;

/// What a sluice packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Payload of a flow.
    Data = 1,
    /// Acknowledgment.
    Ack = 2,
    /// Negative acknowledgment: asks for a resend from the sequence number.
    Nack = 3,
    /// A receiver's grant of credit (token offset and bytes), for receiver-driven transports.
    Token = 4,
    /// A congestion notification (DCQCN's CNP).
    Cnp = 5,
    /// A sender's request to send, which opens a receiver-driven flow at its receiver.
    Request = 6,
    /// A sender's request to stop issuing tokens (ExpressPass's early CREDIT_STOP).
    Stop = 7,
    /// A switch signal's feedback packet, from a switch to a data packet's sender.
    Signal = 8,
}

impl Kind {
    /// The kind with on-wire value `v`.
    pub fn from_u8(v: u8) -> Result<Kind, WireError> {
        Ok(match v {
            1 => Kind::Data,
            2 => Kind::Ack,
            3 => Kind::Nack,
            4 => Kind::Token,
            5 => Kind::Cnp,
            6 => Kind::Request,
            7 => Kind::Stop,
            8 => Kind::Signal,
            _ => return Err(WireError::UnknownKind(v)),
        })
    }
}

/// Flag bits of a sluice header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(pub u16);

impl Flags {
    /// The acknowledged data packet arrived with Congestion Experienced.
    pub const ECN_ECHO: u16 = 1 << 0;
    /// Switches append an INT record to this packet.
    pub const INT_REQUEST: u16 = 1 << 1;
    /// This data packet is a retransmission.
    pub const RETRANSMIT: u16 = 1 << 2;
    /// The first packet of a flow.
    pub const FIRST: u16 = 1 << 3;
    /// The last packet of a flow.
    pub const LAST: u16 = 1 << 4;
    /// The sender's algorithm wants a congestion notification packet for Congestion Experienced marks
    /// (DCQCN's notification point runs at the receiver).
    pub const CNP_REQUEST: u16 = 1 << 5;
    /// Data of a receiver-driven flow: its receiver runs the algorithm's receiver controller.
    pub const RECEIVER_DRIVEN: u16 = 1 << 6;
    /// Receiver-driven data sent against a token (its number is in the offset field).
    pub const SCHEDULED: u16 = 1 << 7;
    /// A header-only probe that follows a receiver-driven flow's unscheduled burst (Aeolus).
    pub const PROBE: u16 = 1 << 8;
    /// The sender echoes a Congestion Experienced mark it saw on a token (ToCC).
    pub const TOKEN_ECHO: u16 = 1 << 9;
    /// More than one BDP of the flow is unsent from this packet on (ToCC's volume flag).
    pub const MORE_THAN_BDP: u16 = 1 << 10;
    /// The signal field follows the header; byte 7 counts the switches that wrote it. Set and cleared
    /// by the encoder from [`SluiceHeader::signal`].
    pub const SIGNAL: u16 = 1 << 11;
    /// Every bit version 1 defines.
    pub const ALL: u16 = (1 << 12) - 1;

    /// Whether `bit` is set.
    #[inline]
    pub fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// The fixed header of a sluice packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SluiceHeader {
    /// Packet kind.
    pub kind: Kind,
    /// Flags.
    pub flags: Flags,
    /// INT records following the header.
    pub int_hops: u8,
    /// Flow id.
    pub flow: u32,
    /// Payload bytes after the INT records.
    pub payload_len: u32,
    /// Sequence number (see the layout).
    pub seq: u64,
    /// Send timestamp, ns.
    pub sent_ns: u64,
    /// Echoed timestamp, ns.
    pub echo_ns: u64,
    /// Kind-specific offset (see the layout): a token's grant limit, an ack's selectively acknowledged
    /// data offset.
    pub offset: u64,
    /// Kind-specific byte count: a token's grant size, an ack's newly received payload bytes.
    pub bytes: u32,
    /// An ack's newly received payload bytes that arrived with Congestion Experienced.
    pub ce_bytes: u32,
    /// The signal field, present exactly when the `SIGNAL` flag is set.
    pub signal: Option<SignalField>,
}

/// A packet's signal field: the value the switches of its path wrote, and how many wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SignalField {
    /// The combined value (meaningless while `hops` is 0).
    pub value: u64,
    /// The switches that wrote it.
    pub hops: u8,
}

impl SluiceHeader {
    /// A header of `kind` for `flow` with every other field zero.
    pub fn new(kind: Kind, flow: u32) -> SluiceHeader {
        SluiceHeader {
            kind,
            flags: Flags::default(),
            int_hops: 0,
            flow,
            payload_len: 0,
            seq: 0,
            sent_ns: 0,
            echo_ns: 0,
            offset: 0,
            bytes: 0,
            ce_bytes: 0,
            signal: None,
        }
    }

    /// Bytes of the header and, when present, the signal field: where the INT records start.
    #[inline]
    pub fn len(&self) -> usize {
        HEADER_LEN + if self.signal.is_some() { SIGNAL_LEN } else { 0 }
    }

    /// Whether the header has no bytes (never); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Parses the header at the start of `buf`, and the signal field after it when the `SIGNAL` flag is
    /// set, checking magic, version, kind, flags and reserved fields (not the lengths of what follows:
    /// see [`SluicePacket::parse`]).
    pub fn parse(buf: &[u8]) -> Result<SluiceHeader, WireError> {
        need(buf, HEADER_LEN)?;
        if be16(buf, 0) != MAGIC {
            return Err(WireError::BadMagic);
        }
        if buf[2] != VERSION {
            return Err(WireError::BadVersion(buf[2]));
        }
        let kind = Kind::from_u8(buf[3])?;
        let flags = be16(buf, 4);
        if flags & !Flags::ALL != 0 {
            return Err(WireError::UnknownFlags(flags & !Flags::ALL));
        }
        let signal = if flags & Flags::SIGNAL != 0 {
            need(buf, HEADER_LEN + SIGNAL_LEN)?;
            Some(SignalField { value: be64(buf, HEADER_LEN), hops: buf[7] })
        } else if buf[7] != 0 {
            return Err(WireError::Reserved);
        } else {
            None
        };
        Ok(SluiceHeader {
            kind,
            flags: Flags(flags),
            int_hops: buf[6],
            flow: be32(buf, 8),
            payload_len: be32(buf, 12),
            seq: be64(buf, 16),
            sent_ns: be64(buf, 24),
            echo_ns: be64(buf, 32),
            offset: be64(buf, 40),
            bytes: be32(buf, 48),
            ce_bytes: be32(buf, 52),
            signal,
        })
    }

    /// Writes the header at the start of `buf`, as it is (counts included), with the signal field when
    /// there is one (the `SIGNAL` flag follows [`SluiceHeader::signal`]); returns [`SluiceHeader::len`].
    pub fn write(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.len();
        need(buf, len)?;
        let flags = match self.signal {
            Some(_) => self.flags.0 | Flags::SIGNAL,
            None => self.flags.0 & !Flags::SIGNAL,
        };
        buf[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        buf[2] = VERSION;
        buf[3] = self.kind as u8;
        buf[4..6].copy_from_slice(&flags.to_be_bytes());
        buf[6] = self.int_hops;
        buf[7] = self.signal.map_or(0, |s| s.hops);
        buf[8..12].copy_from_slice(&self.flow.to_be_bytes());
        buf[12..16].copy_from_slice(&self.payload_len.to_be_bytes());
        buf[16..24].copy_from_slice(&self.seq.to_be_bytes());
        buf[24..32].copy_from_slice(&self.sent_ns.to_be_bytes());
        buf[32..40].copy_from_slice(&self.echo_ns.to_be_bytes());
        buf[40..48].copy_from_slice(&self.offset.to_be_bytes());
        buf[48..52].copy_from_slice(&self.bytes.to_be_bytes());
        buf[52..56].copy_from_slice(&self.ce_bytes.to_be_bytes());
        if let Some(signal) = self.signal {
            buf[HEADER_LEN..HEADER_LEN + SIGNAL_LEN].copy_from_slice(&signal.value.to_be_bytes());
        }
        Ok(len)
    }
}

/// Whether `udp_payload` starts like a sluice header of this version (magic and version only).
#[inline]
pub fn is_sluice(udp_payload: &[u8]) -> bool {
    udp_payload.len() >= HEADER_LEN && be16(udp_payload, 0) == MAGIC && udp_payload[2] == VERSION
}

/// One switch's INT record (the fields of the simulator's `IntHop`, times in ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntRecord {
    /// When the packet left the egress port, ns.
    pub ts_ns: u64,
    /// Cumulative bytes the egress port transmitted.
    pub tx_bytes: u64,
    /// Egress queue length in bytes when the packet left.
    pub qlen: u64,
    /// Egress link rate, bit/s.
    pub rate: u64,
}

impl IntRecord {
    /// Reads a record from the first [`HOP_LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<IntRecord, WireError> {
        need(b, HOP_LEN)?;
        Ok(IntRecord { ts_ns: be64(b, 0), tx_bytes: be64(b, 8), qlen: be64(b, 16), rate: be64(b, 24) })
    }

    /// Writes the record into the first [`HOP_LEN`] bytes of `b`.
    pub fn write(&self, b: &mut [u8]) -> Result<usize, WireError> {
        need(b, HOP_LEN)?;
        b[0..8].copy_from_slice(&self.ts_ns.to_be_bytes());
        b[8..16].copy_from_slice(&self.tx_bytes.to_be_bytes());
        b[16..24].copy_from_slice(&self.qlen.to_be_bytes());
        b[24..32].copy_from_slice(&self.rate.to_be_bytes());
        Ok(HOP_LEN)
    }
}

/// A parsed sluice packet: header, INT records and payload, borrowed from the UDP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SluicePacket<'a> {
    /// The header.
    pub header: SluiceHeader,
    hops: &'a [u8],
    /// The payload.
    pub payload: &'a [u8],
}

impl<'a> SluicePacket<'a> {
    /// Parses a whole UDP payload: the header (with its signal field when flagged), then exactly
    /// `int_hops` records and `payload_len` bytes.
    pub fn parse(buf: &'a [u8]) -> Result<SluicePacket<'a>, WireError> {
        let header = SluiceHeader::parse(buf)?;
        let hops_at = header.len();
        let hops_end = hops_at + header.int_hops as usize * HOP_LEN;
        need(buf, hops_end)?;
        if buf.len() - hops_end != header.payload_len as usize {
            return Err(WireError::BadLength);
        }
        Ok(SluicePacket { header, hops: &buf[hops_at..hops_end], payload: &buf[hops_end..] })
    }

    /// The INT records, in path order.
    pub fn hops(&self) -> impl Iterator<Item = IntRecord> + 'a {
        self.hops.chunks_exact(HOP_LEN).filter_map(|c| IntRecord::parse(c).ok())
    }

    /// The number of INT records.
    pub fn hop_count(&self) -> usize {
        self.hops.len() / HOP_LEN
    }
}

/// Encodes a packet into `buf`: `header` (with its signal field, if any) with its hop count and payload
/// length taken from `hops` and `payload`, the records, the payload. Returns the bytes written.
pub fn encode(header: &SluiceHeader, hops: &[IntRecord], payload: &[u8], buf: &mut [u8]) -> Result<usize, WireError> {
    let total = encode_filler(header, hops, payload.len(), buf)?;
    buf[total - payload.len()..total].copy_from_slice(payload);
    Ok(total)
}

/// Writes a sluice packet of `header`, `hops` and `payload_len` bytes of payload into `buf`, leaving the
/// payload's bytes as `buf` holds them: filler that no receiver reads, which a sender whose buffers
/// are reused need not write again for every packet. Returns the packet's length.
pub fn encode_filler(
    header: &SluiceHeader,
    hops: &[IntRecord],
    payload_len: usize,
    buf: &mut [u8],
) -> Result<usize, WireError> {
    if hops.len() > MAX_HOPS || payload_len > u32::MAX as usize {
        return Err(WireError::BadLength);
    }
    let hops_at = header.len();
    let total = hops_at + hops.len() * HOP_LEN + payload_len;
    need(buf, total)?;
    let header = SluiceHeader { int_hops: hops.len() as u8, payload_len: payload_len as u32, ..*header };
    header.write(buf)?;
    for (i, hop) in hops.iter().enumerate() {
        hop.write(&mut buf[hops_at + i * HOP_LEN..])?;
    }
    Ok(total)
}

/// Appends `hop` after the INT records of the sluice packet in `buf[..len]`, moving the payload up by
/// [`HOP_LEN`] bytes within `buf` (no allocation) and counting the record in the header. Returns the new
/// length, or [`WireError::NoRoom`] when `buf` cannot hold it or the packet has [`MAX_HOPS`] records;
/// `buf` is unchanged on error.
pub fn append_hop(buf: &mut [u8], len: usize, hop: &IntRecord) -> Result<usize, WireError> {
    let packet = SluicePacket::parse(buf.get(..len).ok_or(WireError::BadLength)?)?;
    let count = packet.hop_count();
    if count >= MAX_HOPS || len + HOP_LEN > buf.len() {
        return Err(WireError::NoRoom);
    }
    let at = packet.header.len() + count * HOP_LEN;
    buf.copy_within(at..len, at + HOP_LEN);
    hop.write(&mut buf[at..])?;
    buf[6] = count as u8 + 1;
    Ok(len + HOP_LEN)
}

/// Sets the signal field of the sluice packet in `buf` (a whole UDP payload) to `value`, written by
/// `hops` switches, in place. [`WireError::NoSignalField`] when the packet has no signal field; `buf`
/// is unchanged on error.
pub fn set_signal(buf: &mut [u8], value: u64, hops: u8) -> Result<(), WireError> {
    let packet = SluicePacket::parse(buf)?;
    if packet.header.signal.is_none() {
        return Err(WireError::NoSignalField);
    }
    buf[7] = hops;
    buf[HEADER_LEN..HEADER_LEN + SIGNAL_LEN].copy_from_slice(&value.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> SluiceHeader {
        SluiceHeader {
            flags: Flags(Flags::INT_REQUEST | Flags::FIRST),
            seq: 1 << 40,
            sent_ns: 123_456_789,
            echo_ns: 42,
            offset: 9000,
            bytes: 1500,
            ce_bytes: 500,
            ..SluiceHeader::new(Kind::Data, 7)
        }
    }

    #[test]
    fn layout_matches_the_table() {
        let mut buf = [0u8; 128];
        let hop = IntRecord { ts_ns: 1, tx_bytes: 2, qlen: 3, rate: 4 };
        let n = encode(&header(), &[hop], b"abc", &mut buf).unwrap();
        assert_eq!(n, HEADER_LEN + HOP_LEN + 3);
        assert_eq!(&buf[0..4], &[0x53, 0x4c, 1, 1]);
        assert_eq!(&buf[4..8], &[0, 0b1010, 1, 0]);
        assert_eq!(&buf[8..16], &[0, 0, 0, 7, 0, 0, 0, 3]);
        assert_eq!(buf[16 + 2], 1); // seq = 1 << 40
        assert_eq!(&buf[HEADER_LEN + 7..HEADER_LEN + 8], &[1]);
        assert_eq!(&buf[HEADER_LEN + 31..HEADER_LEN + 32], &[4]);
        assert_eq!(&buf[n - 3..n], b"abc");
        let p = SluicePacket::parse(&buf[..n]).unwrap();
        assert_eq!(p.hops().collect::<Vec<_>>(), vec![hop]);
        assert_eq!(p.payload, b"abc");
        assert_eq!(p.header.int_hops, 1);
    }

    /// A packet with filler for payload parses as one written in full, and the filler is whatever the
    /// buffer held; a buffer too small is refused.
    #[test]
    fn a_packet_with_filler_keeps_the_buffers_bytes_as_its_payload() {
        let mut full = [7u8; 128];
        let mut filler = [7u8; 128];
        let n = encode(&header(), &[], &[7; 20], &mut full).unwrap();
        assert_eq!(encode_filler(&header(), &[], 20, &mut filler), Ok(n));
        assert_eq!(full[..n], filler[..n]);
        let p = SluicePacket::parse(&filler[..n]).unwrap();
        assert_eq!((p.header.payload_len, p.payload), (20, &[7u8; 20][..]));
        assert_eq!(
            encode_filler(&header(), &[], 100, &mut filler),
            Err(WireError::Truncated { need: n + 80, have: 128 })
        );
    }

    #[test]
    fn refuses_what_version_1_does_not_define() {
        let mut buf = [0u8; 64];
        let n = encode(&header(), &[], b"12345678", &mut buf).unwrap();
        let cases: [(usize, u8, WireError); 5] = [
            (0, 0, WireError::BadMagic),
            (2, 2, WireError::BadVersion(2)),
            (3, 9, WireError::UnknownKind(9)),
            (4, 0x80, WireError::UnknownFlags(0x8000)),
            (7, 1, WireError::Reserved),
        ];
        for (at, value, error) in cases {
            let mut bad = buf;
            bad[at] = value;
            assert_eq!(SluicePacket::parse(&bad[..n]), Err(error));
        }
        assert_eq!(SluicePacket::parse(&buf[..n - 1]), Err(WireError::BadLength));
        let mut many = buf;
        many[6] = 3;
        assert!(matches!(SluicePacket::parse(&many[..n]), Err(WireError::Truncated { .. })));
    }

    #[test]
    fn the_signal_field_follows_the_header_and_byte_7_counts_its_writers() {
        let mut buf = [0u8; 128];
        let h = SluiceHeader { signal: Some(SignalField { value: 0xabcd, hops: 3 }), ..header() };
        let hop = IntRecord { ts_ns: 1, tx_bytes: 2, qlen: 3, rate: 4 };
        let n = encode(&h, &[hop], b"xy", &mut buf).unwrap();
        assert_eq!(n, HEADER_LEN + SIGNAL_LEN + HOP_LEN + 2);
        assert_eq!(&buf[4..8], &[0b1000, 0b1010, 1, 3]);
        assert_eq!(&buf[HEADER_LEN..HEADER_LEN + SIGNAL_LEN], &[0, 0, 0, 0, 0, 0, 0xab, 0xcd]);
        let p = SluicePacket::parse(&buf[..n]).unwrap();
        assert_eq!(p.header.signal, Some(SignalField { value: 0xabcd, hops: 3 }));
        assert!(p.header.flags.has(Flags::SIGNAL));
        assert_eq!(p.hops().collect::<Vec<_>>(), vec![hop]);
        assert_eq!(p.payload, b"xy");
        set_signal(&mut buf[..n], 7, 4).unwrap();
        assert_eq!(SluicePacket::parse(&buf[..n]).unwrap().header.signal, Some(SignalField { value: 7, hops: 4 }));
        // The flag without room for the field, and byte 7 set without the flag, are refused.
        assert!(matches!(SluiceHeader::parse(&buf[..HEADER_LEN + 4]), Err(WireError::Truncated { .. })));
        let mut plain = [0u8; 64];
        let m = encode(&header(), &[], b"", &mut plain).unwrap();
        assert_eq!(set_signal(&mut plain[..m], 7, 1), Err(WireError::NoSignalField));
        plain[7] = 1;
        assert_eq!(SluicePacket::parse(&plain[..m]), Err(WireError::Reserved));
        // The encoder sets the flag from the field alone.
        let stray = SluiceHeader { flags: Flags(Flags::SIGNAL), ..header() };
        let k = encode(&stray, &[], b"", &mut plain).unwrap();
        assert_eq!(k, HEADER_LEN);
        assert!(!SluicePacket::parse(&plain[..k]).unwrap().header.flags.has(Flags::SIGNAL));
    }

    #[test]
    fn a_signal_packet_carries_value_node_and_echo() {
        let mut buf = [0u8; 64];
        let h = SluiceHeader { seq: 5_000, bytes: 9, echo_ns: 77, sent_ns: 80, ..SluiceHeader::new(Kind::Signal, 4) };
        let n = encode(&h, &[], &[], &mut buf).unwrap();
        assert_eq!(buf[3], 8);
        assert_eq!(SluicePacket::parse(&buf[..n]).unwrap().header, h);
    }

    #[test]
    fn append_hop_moves_the_payload_and_counts() {
        let mut buf = [0u8; HEADER_LEN + 2 * HOP_LEN + 4];
        let n = encode(&header(), &[], b"data", &mut buf).unwrap();
        let a = IntRecord { ts_ns: 10, tx_bytes: 20, qlen: 30, rate: 40 };
        let b = IntRecord { ts_ns: 11, tx_bytes: 21, qlen: 31, rate: 41 };
        let n = append_hop(&mut buf, n, &a).unwrap();
        let n = append_hop(&mut buf, n, &b).unwrap();
        assert_eq!(n, buf.len());
        let p = SluicePacket::parse(&buf[..n]).unwrap();
        assert_eq!(p.hops().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(p.payload, b"data");
        let before = buf;
        assert_eq!(append_hop(&mut buf, n, &a), Err(WireError::NoRoom));
        assert_eq!(buf, before);
    }
}
