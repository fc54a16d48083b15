//! Bringing the bed up and down with iproute2 and ethtool: a network namespace per host holding one
//! end of a veth pair (`eth0`, with the host's address and a static neighbour entry for every other
//! host), the other end in the root namespace for the switch process. Names start with [`NS_PREFIX`]
//! and [`LINK_PREFIX`], so leftovers of a run that crashed are found and removed before a new bed is
//! built.

use std::process::{Command, Output, Stdio};

use sluice_switch::HostAddr;

/// Prefix of the hosts' namespaces: `slsw-h0`, `slsw-h1`, ...
pub const NS_PREFIX: &str = "slsw-h";
/// Prefix of the root-namespace ends of the veth pairs: `slsw0`, `slsw1`, ...
pub const LINK_PREFIX: &str = "slsw";
/// Name of each host's interface inside its namespace.
pub const HOST_DEV: &str = "eth0";
/// Prefix length of the hosts' subnet (10.77.0.0/16, see [`HostAddr::numbered`]).
pub const PREFIX_LEN: u8 = 16;

/// One host of the bed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedHost {
    /// Its namespace.
    pub namespace: String,
    /// The root-namespace end of its link, where the switch reads and writes its frames.
    pub link: String,
    /// Its addresses.
    pub addr: HostAddr,
}

/// A bed: one namespace and link per host.
#[derive(Debug)]
pub struct Bed {
    /// The hosts, by host index.
    pub hosts: Vec<BedHost>,
    /// Remove the namespaces when dropped.
    owned: bool,
}

pub(crate) fn run(args: &[&str]) -> Result<Output, String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(out)
}

fn mac(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

fn ip(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

impl BedHost {
    /// Host `index` with addresses `addr`.
    pub fn new(index: usize, addr: HostAddr) -> BedHost {
        BedHost { namespace: format!("{NS_PREFIX}{index}"), link: format!("{LINK_PREFIX}{index}"), addr }
    }

    /// The host's IPv4 address as text.
    pub fn ip(&self) -> String {
        ip(self.addr.ip)
    }

    /// A command run inside the host's namespace (`ip netns exec`).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.namespace, program]);
        c
    }
}

impl Bed {
    /// The bed of `hosts` as names only, not built (see [`Bed::up`] and [`Bed::attach`]).
    fn named(hosts: &[HostAddr], owned: bool) -> Bed {
        Bed { hosts: hosts.iter().enumerate().map(|(i, a)| BedHost::new(i, *a)).collect(), owned }
    }

    /// Removes any bed left over, then builds one for `hosts`; the bed is removed again when the
    /// returned value is dropped unless [`Bed::keep`] is called.
    pub fn up(hosts: &[HostAddr]) -> Result<Bed, String> {
        remove_stale();
        let bed = Bed::named(hosts, true);
        for (i, host) in bed.hosts.iter().enumerate() {
            bed.build_host(host).map_err(|e| format!("host {i}: {e}"))?;
        }
        Ok(bed)
    }

    /// A bed for `hosts` that is already up (from `sluice bed up`), checked link by link; dropping it
    /// leaves it up.
    pub fn attach(hosts: &[HostAddr]) -> Result<Bed, String> {
        let bed = Bed::named(hosts, false);
        for host in &bed.hosts {
            run(&["ip", "link", "show", "dev", &host.link]).map_err(|_| format!("no link {}", host.link))?;
            run(&["ip", "netns", "exec", &host.namespace, "true"])
                .map_err(|_| format!("no namespace {}", host.namespace))?;
        }
        if run(&["ip", "link", "show", "dev", &format!("{LINK_PREFIX}{}", hosts.len())]).is_ok() {
            return Err(format!("the bed that is up has more than {} hosts", hosts.len()));
        }
        Ok(bed)
    }

    /// Leaves the bed up when this value is dropped.
    pub fn keep(&mut self) {
        self.owned = false;
    }

    fn build_host(&self, host: &BedHost) -> Result<(), String> {
        let (ns, link) = (host.namespace.as_str(), host.link.as_str());
        run(&["ip", "netns", "add", ns])?;
        run(&[
            "ip",
            "link",
            "add",
            link,
            "address",
            &mac(host.addr.gateway_mac),
            "type",
            "veth",
            "peer",
            "name",
            HOST_DEV,
            "address",
            &mac(host.addr.mac),
            "netns",
            ns,
        ])?;
        // The root end carries no address: the root namespace must neither answer nor forward the
        // hosts' traffic; only the switch process reads it.
        std::fs::write(format!("/proc/sys/net/ipv6/conf/{link}/disable_ipv6"), "1")
            .map_err(|e| format!("{link}: {e}"))?;
        std::fs::write(format!("/proc/sys/net/ipv4/conf/{link}/forwarding"), "0")
            .map_err(|e| format!("{link}: {e}"))?;
        run(&["ip", "link", "set", link, "up"])?;
        offloads_off(&["ethtool"], link)?;
        let exec = ["ip", "netns", "exec", ns];
        run(&[&exec[..], &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]].concat())?;
        let cidr = format!("{}/{PREFIX_LEN}", host.ip());
        run(&["ip", "-n", ns, "addr", "add", &cidr, "dev", HOST_DEV])?;
        run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        run(&["ip", "-n", ns, "link", "set", HOST_DEV, "up"])?;
        offloads_off(&[&exec[..], &["ethtool"]].concat(), HOST_DEV)?;
        for other in self.hosts.iter().filter(|o| o.namespace != host.namespace) {
            let (peer, gw) = (other.ip(), mac(host.addr.gateway_mac));
            run(&["ip", "-n", ns, "neigh", "replace", &peer, "lladdr", &gw, "dev", HOST_DEV, "nud", "permanent"])?;
        }
        Ok(())
    }

    /// Removes this bed's namespaces (their veth pairs go with them); quiet about what is gone.
    pub fn remove(&self) {
        for host in &self.hosts {
            let _ = Command::new("ip").args(["netns", "del", &host.namespace]).stderr(Stdio::null()).status();
            let _ = Command::new("ip").args(["link", "del", &host.link]).stderr(Stdio::null()).status();
        }
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        if self.owned {
            self.remove();
        }
    }
}

/// Turns off segmentation and receive offloads and checksum offload on `dev` (`ethtool` run through
/// `prefix`): the switch must see each packet as the MTU-sized frame a NIC would send, not a 64 KB
/// TSO/GSO/GRO aggregate, and with its checksum filled in, since a frame it forwards reaches the other
/// host as received from a wire (a partial checksum would be dropped there).
fn offloads_off(prefix: &[&str], dev: &str) -> Result<(), String> {
    let args = [prefix, &["-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"]].concat();
    run(&args).map(|_| ())
}

/// Names of leftover bed namespaces and links (from a run that did not clean up).
pub fn stale() -> (Vec<String>, Vec<String>) {
    let listed = |args: &[&str]| run(args).map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let namespaces = listed(&["ip", "netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX))
        .map(str::to_string)
        .collect();
    let links = listed(&["ip", "-o", "link", "show"])
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n))
        .filter(|n| {
            n.strip_prefix(LINK_PREFIX).is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
        .collect();
    (namespaces, links)
}

/// Removes every leftover bed namespace and link; returns how many namespaces and links it found.
pub fn remove_stale() -> (usize, usize) {
    let (namespaces, links) = stale();
    for ns in &namespaces {
        let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
    }
    for link in &links {
        let _ = Command::new("ip").args(["link", "del", link]).stderr(Stdio::null()).status();
    }
    (namespaces.len(), links.len())
}
