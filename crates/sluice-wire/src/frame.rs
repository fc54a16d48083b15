//! One received Ethernet frame read down to its transport: where the IPv4 header is, the 5-tuple, and
//! for UDP whether it carries a sluice header. Also the rewrites a switch makes in place: CE marking,
//! appending an INT record and writing a signal value.

use crate::eth::{self, EthHeader, ETHERTYPE_IPV4};
use crate::ipv4::{self, Ipv4Header, PROTO_TCP, PROTO_UDP};
use crate::sluice::{self, IntRecord, SluiceHeader};
use crate::udp::{self, UdpHeader};
use crate::{be16, WireError};

/// The transport of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    /// TCP with its ports and the bytes of payload after its header.
    Tcp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
        /// Payload bytes (0: a pure ACK or control segment).
        payload_len: usize,
    },
    /// UDP, and the sluice header when the payload starts with one.
    Udp {
        /// The UDP header.
        header: UdpHeader,
        /// The sluice header, when there is one.
        sluice: Option<SluiceHeader>,
    },
    /// Anything else (ICMP, other protocols, fragments, a transport header that does not parse).
    Other,
}

/// A parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The Ethernet header.
    pub eth: EthHeader,
    /// The IPv4 header (at offset [`eth::HEADER_LEN`]).
    pub ip: Ipv4Header,
    /// The transport.
    pub l4: L4,
}

/// A flow's 5-tuple: addresses, protocol, ports (0 where the transport has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiveTuple {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// IP protocol.
    pub protocol: u8,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl Frame {
    /// Parses an Ethernet II frame carrying IPv4 (the IPv4 header is verified; see
    /// [`Ipv4Header::parse`]). A transport that does not parse reads as [`L4::Other`].
    pub fn parse(buf: &[u8]) -> Result<Frame, WireError> {
        let eth = EthHeader::parse(buf)?;
        if eth.ethertype != ETHERTYPE_IPV4 {
            return Err(WireError::NotIpv4(eth.ethertype));
        }
        let ip_bytes = &buf[eth::HEADER_LEN..];
        let ip = Ipv4Header::parse(ip_bytes)?;
        let body = &ip_bytes[ip.header_len as usize..ip.total_len as usize];
        let l4 = if ip.is_fragment() { L4::Other } else { transport(ip.protocol, body) };
        Ok(Frame { eth, ip, l4 })
    }

    /// The 5-tuple.
    pub fn five_tuple(&self) -> FiveTuple {
        let (src_port, dst_port) = match self.l4 {
            L4::Tcp { src_port, dst_port, .. } => (src_port, dst_port),
            L4::Udp { header, .. } => (header.src_port, header.dst_port),
            L4::Other => (0, 0),
        };
        FiveTuple { src: self.ip.src, dst: self.ip.dst, protocol: self.ip.protocol, src_port, dst_port }
    }

    /// Bytes of the frame up to the end of the IP datagram (link padding excluded).
    pub fn len(&self) -> usize {
        eth::HEADER_LEN + self.ip.total_len as usize
    }

    /// Whether the frame is only headers (never: an IPv4 header is at least 20 bytes); for clippy's
    /// `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }
}

fn transport(protocol: u8, body: &[u8]) -> L4 {
    match protocol {
        PROTO_TCP if body.len() >= 20 => {
            let header_len = ((body[12] >> 4) as usize) * 4;
            if header_len < 20 || header_len > body.len() {
                return L4::Other;
            }
            L4::Tcp { src_port: be16(body, 0), dst_port: be16(body, 2), payload_len: body.len() - header_len }
        }
        PROTO_UDP => match UdpHeader::parse(body) {
            Ok(header) => {
                let payload = &body[udp::HEADER_LEN..header.len as usize];
                let sluice = if sluice::is_sluice(payload) { SluiceHeader::parse(payload).ok() } else { None };
                L4::Udp { header, sluice }
            }
            Err(_) => L4::Other,
        },
        _ => L4::Other,
    }
}

/// Sets Congestion Experienced on the IPv4 packet in `frame` (an Ethernet frame), fixing the header
/// checksum; `true` when it marked (see [`ipv4::set_ce`]).
#[inline]
pub fn set_ce(frame: &mut [u8]) -> bool {
    frame.get_mut(eth::HEADER_LEN..).is_some_and(ipv4::set_ce)
}

/// Appends INT record `hop` to the sluice packet in `frame[..len]`, an Ethernet frame whose buffer
/// `frame` may grow into, as long as the IP datagram stays within `mtu` bytes. Rewrites the UDP length,
/// the IP total length and checksum, and the UDP checksum when there is one. Returns the new frame
/// length; on error (not a sluice packet, or [`WireError::NoRoom`]) the frame is unchanged.
pub fn append_int(frame: &mut [u8], len: usize, mtu: usize, hop: &IntRecord) -> Result<usize, WireError> {
    let parsed = Frame::parse(frame.get(..len).ok_or(WireError::BadLength)?)?;
    let L4::Udp { header, sluice: Some(_) } = parsed.l4 else {
        return Err(WireError::BadMagic);
    };
    let ip_at = eth::HEADER_LEN;
    let udp_at = ip_at + parsed.ip.header_len as usize;
    let payload_at = udp_at + udp::HEADER_LEN;
    let payload_len = header.len as usize - udp::HEADER_LEN;
    let limit = (ip_at + mtu).min(frame.len());
    if parsed.ip.total_len as usize + sluice::HOP_LEN > mtu || header.len as usize + sluice::HOP_LEN > u16::MAX as usize
    {
        return Err(WireError::NoRoom);
    }
    // The datagram ends where the IP header says; padding after it is dropped.
    let room = limit.checked_sub(payload_at).ok_or(WireError::NoRoom)?;
    let grown = sluice::append_hop(&mut frame[payload_at..payload_at + room], payload_len, hop)?;
    let udp_len = (udp::HEADER_LEN + grown) as u16;
    frame[udp_at + 4..udp_at + 6].copy_from_slice(&udp_len.to_be_bytes());
    let total = parsed.ip.total_len + sluice::HOP_LEN as u16;
    ipv4::set_total_len(&mut frame[ip_at..], total);
    let (src, dst) = (parsed.ip.src, parsed.ip.dst);
    udp::refresh_checksum(src, dst, &mut frame[udp_at..udp_at + udp_len as usize]);
    Ok(ip_at + total as usize)
}

/// Writes `value`, now written by `hops` switches, into the signal field of the sluice packet in
/// `frame[..len]` (an Ethernet frame), and fixes the UDP checksum when there is one. The lengths do not
/// change. On error (not a sluice packet, or [`WireError::NoSignalField`]) the frame is unchanged.
pub fn set_signal(frame: &mut [u8], len: usize, value: u64, hops: u8) -> Result<(), WireError> {
    let parsed = Frame::parse(frame.get(..len).ok_or(WireError::BadLength)?)?;
    let L4::Udp { header, sluice: Some(_) } = parsed.l4 else {
        return Err(WireError::BadMagic);
    };
    let udp_at = eth::HEADER_LEN + parsed.ip.header_len as usize;
    let udp_end = udp_at + header.len as usize;
    sluice::set_signal(&mut frame[udp_at + udp::HEADER_LEN..udp_end], value, hops)?;
    udp::refresh_checksum(parsed.ip.src, parsed.ip.dst, &mut frame[udp_at..udp_end]);
    Ok(())
}

/// Writes a whole frame into `buf`: Ethernet, a 20-byte IPv4 header, UDP and `udp_payload`, with both
/// checksums. `ip` supplies addresses, DSCP, ECN, id and TTL; its lengths and protocol are set here.
/// Returns the frame length.
pub fn write_udp(
    buf: &mut [u8],
    eth: &EthHeader,
    ip: &Ipv4Header,
    ports: (u16, u16),
    udp_payload: &[u8],
) -> Result<usize, WireError> {
    let udp_len = udp::HEADER_LEN + udp_payload.len();
    let total = ipv4::MIN_HEADER_LEN + udp_len;
    if total > u16::MAX as usize {
        return Err(WireError::BadLength);
    }
    let frame_len = eth::HEADER_LEN + total;
    crate::need(buf, frame_len)?;
    EthHeader { ethertype: ETHERTYPE_IPV4, ..*eth }.write(buf)?;
    let ip = Ipv4Header { header_len: 20, total_len: total as u16, protocol: PROTO_UDP, ..*ip };
    ip.write(&mut buf[eth::HEADER_LEN..])?;
    let udp_at = eth::HEADER_LEN + ipv4::MIN_HEADER_LEN;
    UdpHeader { src_port: ports.0, dst_port: ports.1, len: udp_len as u16, checksum: 1 }.write(&mut buf[udp_at..])?;
    buf[udp_at + udp::HEADER_LEN..frame_len].copy_from_slice(udp_payload);
    udp::refresh_checksum(ip.src, ip.dst, &mut buf[udp_at..frame_len]);
    Ok(frame_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ecn;
    use crate::sluice::{encode, Kind, SluicePacket, HOP_LEN};

    fn sample(ecn: Ecn, payload: &[u8], buf: &mut [u8]) -> usize {
        let eth = EthHeader { dst: [2; 6], src: [4; 6], ethertype: 0 };
        let ip = Ipv4Header {
            header_len: 20,
            dscp: 0,
            ecn,
            total_len: 0,
            id: 9,
            flags_fragment: 0x4000,
            ttl: 64,
            protocol: 0,
            src: [10, 1, 0, 1],
            dst: [10, 1, 0, 2],
        };
        write_udp(buf, &eth, &ip, (1000, 2000), payload).unwrap()
    }

    #[test]
    fn parses_a_udp_frame_and_its_five_tuple() {
        let mut buf = [0u8; 100];
        let n = sample(Ecn::Ect0, b"plain", &mut buf);
        let f = Frame::parse(&buf[..n]).unwrap();
        assert_eq!(f.len(), n);
        assert!(matches!(f.l4, L4::Udp { sluice: None, .. }));
        let t = f.five_tuple();
        assert_eq!((t.protocol, t.src_port, t.dst_port), (17, 1000, 2000));
        assert!(udp::verify(t.src, t.dst, &buf[34..n]));
        assert!(set_ce(&mut buf[..n]));
        assert_eq!(Frame::parse(&buf[..n]).unwrap().ip.ecn, Ecn::Ce);
    }

    #[test]
    fn append_int_grows_every_length_and_keeps_checksums() {
        let mut payload = [0u8; 80];
        let header = crate::sluice::SluiceHeader {
            flags: crate::sluice::Flags(crate::sluice::Flags::INT_REQUEST),
            ..crate::sluice::SluiceHeader::new(Kind::Data, 3)
        };
        let p = encode(&header, &[], b"0123456789", &mut payload).unwrap();
        let mut buf = [0u8; 256];
        let n = sample(Ecn::Ect1, &payload[..p], &mut buf);
        let hop = IntRecord { ts_ns: 5, tx_bytes: 6, qlen: 7, rate: 8 };
        let m = append_int(&mut buf, n, 1500, &hop).unwrap();
        assert_eq!(m, n + HOP_LEN);
        let f = Frame::parse(&buf[..m]).unwrap();
        let L4::Udp { header: udp_header, sluice: Some(s) } = f.l4 else { panic!("not sluice") };
        assert_eq!(s.int_hops, 1);
        assert_eq!(udp_header.len as usize, m - 34);
        assert!(udp::verify(f.ip.src, f.ip.dst, &buf[34..m]));
        let sp = SluicePacket::parse(&buf[42..m]).unwrap();
        assert_eq!(sp.hops().next(), Some(hop));
        assert_eq!(sp.payload, b"0123456789");
        // An MTU that leaves no room for the record refuses it and leaves the frame alone.
        let before = buf;
        assert_eq!(append_int(&mut buf, m, m - 14, &hop), Err(WireError::NoRoom));
        assert_eq!(buf, before);
        // Plain UDP is not stamped.
        let mut plain = [0u8; 100];
        let k = sample(Ecn::NotEct, b"x", &mut plain);
        assert_eq!(append_int(&mut plain, k, 1500, &hop), Err(WireError::BadMagic));
    }

    #[test]
    fn set_signal_rewrites_the_field_in_place_and_keeps_checksums() {
        use crate::sluice::{SignalField, SIGNAL_LEN};
        let mut payload = [0u8; 100];
        let header = crate::sluice::SluiceHeader {
            signal: Some(SignalField::default()),
            ..crate::sluice::SluiceHeader::new(Kind::Data, 3)
        };
        let p = encode(&header, &[], b"0123456789", &mut payload).unwrap();
        assert_eq!(p, crate::sluice::HEADER_LEN + SIGNAL_LEN + 10);
        let mut buf = [0u8; 256];
        let n = sample(Ecn::Ect0, &payload[..p], &mut buf);
        set_signal(&mut buf, n, 0x0102_0304_0506_0708, 2).unwrap();
        let f = Frame::parse(&buf[..n]).unwrap();
        let L4::Udp { sluice: Some(s), .. } = f.l4 else { panic!("not sluice") };
        assert_eq!(s.signal, Some(SignalField { value: 0x0102_0304_0506_0708, hops: 2 }));
        assert!(udp::verify(f.ip.src, f.ip.dst, &buf[34..n]));
        assert_eq!(SluicePacket::parse(&buf[42..n]).unwrap().payload, b"0123456789");
        // An INT record goes after the signal field.
        let hop = IntRecord { ts_ns: 5, tx_bytes: 6, qlen: 7, rate: 8 };
        let m = append_int(&mut buf, n, 1500, &hop).unwrap();
        let sp = SluicePacket::parse(&buf[42..m]).unwrap();
        assert_eq!((sp.hops().next(), sp.header.signal.map(|s| s.hops)), (Some(hop), Some(2)));
        assert_eq!(sp.payload, b"0123456789");
        // A packet without the field is refused and left alone.
        let mut plain = [0u8; 256];
        let q = encode(&crate::sluice::SluiceHeader::new(Kind::Data, 3), &[], b"x", &mut payload).unwrap();
        let k = sample(Ecn::Ect0, &payload[..q], &mut plain);
        let before = plain;
        assert_eq!(set_signal(&mut plain, k, 1, 1), Err(WireError::NoSignalField));
        assert_eq!(plain, before);
    }

    #[test]
    fn refuses_non_ipv4_frames() {
        let mut buf = [0u8; 60];
        EthHeader { dst: [1; 6], src: [2; 6], ethertype: 0x86dd }.write(&mut buf).unwrap();
        assert_eq!(Frame::parse(&buf), Err(WireError::NotIpv4(0x86dd)));
    }
}
