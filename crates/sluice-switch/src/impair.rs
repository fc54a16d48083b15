//! The text form of an impairment, as the command line takes it:
//! `ACTION PROTO SRC:PORT DST:PORT PICK`, fields separated by spaces, where ACTION is `drop` or `mark`,
//! PROTO `udp`, `tcp` or a protocol number, and PICK `packets=N[,N...]` (positions among the flow's data
//! packets, 0 first) or `fraction=F` with F in (0, 1]. Example: `drop udp 10.77.0.1:40000
//! 10.77.0.3:9000 packets=3,17`. A flow of the sluice UDP transport is named by its addresses and its
//! flow id instead, since one socket carries many flows: `ACTION sluice SRC DST flow=ID PICK`, as in
//! `drop sluice 10.77.0.1 10.77.0.3 flow=0 packets=600`.

use std::net::Ipv4Addr;
use std::str::FromStr;

use sluice_wire::frame::FiveTuple;
use sluice_wire::ipv4::{PROTO_TCP, PROTO_UDP};

use crate::config::{ImpairAction, Impairment, Pick};

/// Most positions one impairment lists (keeps a typo from building a huge list).
pub const MAX_PACKETS: usize = 10_000;

fn endpoint(text: &str) -> Result<([u8; 4], u16), String> {
    let (ip, port) = text.rsplit_once(':').ok_or_else(|| format!("`{text}` is not ADDRESS:PORT"))?;
    let ip: Ipv4Addr = ip.parse().map_err(|_| format!("`{ip}` is not an IPv4 address"))?;
    let port: u16 = port.parse().map_err(|_| format!("`{port}` is not a port number"))?;
    Ok((ip.octets(), port))
}

fn pick(text: &str) -> Result<Pick, String> {
    if let Some(list) = text.strip_prefix("packets=") {
        let mut packets = list
            .split(',')
            .map(|n| n.parse::<u64>().map_err(|_| format!("`{n}` is not a packet position")))
            .collect::<Result<Vec<u64>, String>>()?;
        if packets.len() > MAX_PACKETS {
            return Err(format!("more than {MAX_PACKETS} packet positions"));
        }
        packets.sort_unstable();
        packets.dedup();
        return Ok(Pick::Packets(packets));
    }
    if let Some(f) = text.strip_prefix("fraction=") {
        let f: f64 = f.parse().map_err(|_| format!("`{f}` is not a number"))?;
        if !(f > 0.0 && f <= 1.0) {
            return Err(format!("fraction {f} is not in (0, 1]"));
        }
        return Ok(Pick::Fraction(f));
    }
    Err(format!("`{text}` is neither packets=N[,N...] nor fraction=F"))
}

fn address(text: &str) -> Result<[u8; 4], String> {
    text.parse::<Ipv4Addr>().map(|ip| ip.octets()).map_err(|_| format!("`{text}` is not an IPv4 address"))
}

fn action(text: &str) -> Result<ImpairAction, String> {
    match text {
        "drop" => Ok(ImpairAction::Drop),
        "mark" => Ok(ImpairAction::Mark),
        other => Err(format!("`{other}` is neither drop nor mark")),
    }
}

/// `ACTION sluice SRC DST flow=ID PICK`.
fn sluice_flow(text: &str, fields: &[&str]) -> Result<Impairment, String> {
    let [action_text, _, src, dst, id, which] = fields[..] else {
        return Err(format!("`{text}`: expected ACTION sluice SRC DST flow=ID PICK"));
    };
    let id = id.strip_prefix("flow=").ok_or_else(|| format!("`{id}` is not flow=ID"))?;
    let id: u32 = id.parse().map_err(|_| format!("`{id}` is not a flow id"))?;
    let flow = FiveTuple { src: address(src)?, dst: address(dst)?, protocol: PROTO_UDP, src_port: 0, dst_port: 0 };
    Ok(Impairment { flow, sluice_flow: Some(id), action: action(action_text)?, pick: pick(which)? })
}

impl FromStr for Impairment {
    type Err = String;

    fn from_str(text: &str) -> Result<Impairment, String> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.get(1) == Some(&"sluice") {
            return sluice_flow(text, &fields);
        }
        let [action_text, proto, src, dst, which] = fields[..] else {
            return Err(format!("`{text}`: expected ACTION PROTO SRC:PORT DST:PORT PICK"));
        };
        let action = action(action_text)?;
        let protocol = match proto {
            "udp" => PROTO_UDP,
            "tcp" => PROTO_TCP,
            n => n.parse().map_err(|_| format!("`{n}` is not udp, tcp, sluice or a protocol number"))?,
        };
        let ((src, src_port), (dst, dst_port)) = (endpoint(src)?, endpoint(dst)?);
        let flow = FiveTuple { src, dst, protocol, src_port, dst_port };
        Ok(Impairment { flow, sluice_flow: None, action, pick: pick(which)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_both_picks() {
        let i: Impairment = "drop udp 10.77.0.1:40000 10.77.0.3:9000 packets=17,3,3".parse().unwrap();
        assert_eq!(i.action, ImpairAction::Drop);
        assert_eq!(i.pick, Pick::Packets(vec![3, 17]));
        assert_eq!(i.flow.src, [10, 77, 0, 1]);
        assert_eq!((i.flow.protocol, i.flow.src_port, i.flow.dst_port), (17, 40000, 9000));
        let m: Impairment = "mark 6 10.0.0.1:1 10.0.0.2:2 fraction=0.5".parse().unwrap();
        assert_eq!((m.action, m.flow.protocol, m.pick), (ImpairAction::Mark, 6, Pick::Fraction(0.5)));
        assert_eq!((i.sluice_flow, m.sluice_flow), (None, None));
    }

    #[test]
    fn reads_a_sluice_flow_by_its_id() {
        let i: Impairment = "drop sluice 10.77.0.1 10.77.0.2 flow=7 packets=600".parse().unwrap();
        assert_eq!((i.sluice_flow, i.flow.protocol, i.flow.dst), (Some(7), 17, [10, 77, 0, 2]));
        let mine = FiveTuple { src: [10, 77, 0, 1], dst: [10, 77, 0, 2], protocol: 17, src_port: 4, dst_port: 9 };
        assert!(i.matches(&mine, Some(7)), "any ports, the same id");
        assert!(!i.matches(&mine, Some(8)), "another flow of the same socket");
        assert!(!i.matches(&mine, None), "a UDP packet without a sluice header");
        let by_tuple: Impairment = "drop udp 10.77.0.1:4 10.77.0.2:9 packets=1".parse().unwrap();
        assert!(by_tuple.matches(&mine, Some(8)) && !by_tuple.same_flow(&i));
    }

    #[test]
    fn refuses_malformed_text() {
        for bad in [
            "",
            "drop udp 10.0.0.1:1 10.0.0.2:2",
            "skip udp 10.0.0.1:1 10.0.0.2:2 packets=1",
            "drop sctp 10.0.0.1:1 10.0.0.2:2 packets=1",
            "drop udp 10.0.0.1 10.0.0.2:2 packets=1",
            "drop udp 10.0.0.1:70000 10.0.0.2:2 packets=1",
            "drop udp 10.0.0.1:1 10.0.0.2:2 fraction=0",
            "drop udp 10.0.0.1:1 10.0.0.2:2 fraction=NaN",
            "drop udp 10.0.0.1:1 10.0.0.2:2 packets=x",
            "drop sluice 10.0.0.1 10.0.0.2 packets=1",
            "drop sluice 10.0.0.1:1 10.0.0.2 flow=1 packets=1",
            "drop sluice 10.0.0.1 10.0.0.2 flow=-1 packets=1",
            "drop sluice 10.0.0.1 10.0.0.2 id=1 packets=1",
        ] {
            assert!(bad.parse::<Impairment>().is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,80}") {
            let _ = text.parse::<Impairment>();
        }
    }
}
