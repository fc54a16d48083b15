//! The kernel test bed: two network namespaces joined by a veth pair, a `tbf` bottleneck on the sender's
//! side, iperf3 for traffic and `ss -ti` to read the kernel's window and RTT. The host's own network is
//! never touched; namespaces (and with them the veth pair) are removed on drop, and leftovers of an
//! interrupted run with the same names are removed before a new bed is built.
//!
//! This kernel has no netem (no delay emulation) and no RED qdisc (no ECN marking); the bottleneck is a
//! token bucket, whose queue drops from its tail. For delay, ECN and INT, the software switch's bed
//! (`sluice-bed`, `sluice bed run`) serves the kernel datapath too; this crate shares its machine-wide
//! lock. It exists for the kernel datapath's end-to-end tests and benchmarks only (`publish = false`).

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The BTF type a kernel has when BPF programs can implement `tcp_congestion_ops`.
const STRUCT_OPS_TYPE: &[u8] = b"bpf_struct_ops_tcp_congestion_ops";

/// Why the kernel tests cannot run here (not root, tools missing, no BTF); `None` when they can.
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("not root (network namespaces and BPF struct_ops need root)".into());
    }
    for (tool, arg) in [("ip", "-V"), ("tc", "-V"), ("iperf3", "--version"), ("ss", "-V"), ("python3", "--version")] {
        let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Some(format!("`{tool}` is missing (run ./scripts/setup.sh)"));
        }
    }
    let Ok(btf) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        return Some("the kernel has no BTF (/sys/kernel/btf/vmlinux): BPF struct_ops cannot load".into());
    };
    if !btf.windows(STRUCT_OPS_TYPE.len()).any(|w| w == STRUCT_OPS_TYPE) {
        return Some("this kernel cannot register TCP congestion control from BPF (no struct_ops for it)".into());
    }
    if !Path::new("/proc/sys/net/ipv4/tcp_available_congestion_control").exists() {
        return Some("no TCP congestion-control list in /proc".into());
    }
    let probe = Command::new("ip").args(["netns", "list"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Some("`ip netns` does not work here".into());
    }
    None
}

// The machine-wide lock is shared with the switch bed (`sluice-bed`), which builds namespaces too.
pub use sluice_bed::exclusive;

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2));
    uid == Some("0")
}

fn run(args: &[&str]) -> Result<Output, String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(out)
}

/// A sender namespace and a receiver namespace joined by a veth pair with a tbf bottleneck.
pub struct TestBed {
    /// Sender namespace.
    pub sender: String,
    /// Receiver namespace.
    pub receiver: String,
    /// The receiver's address.
    pub receiver_addr: String,
}

/// One iperf3 client run.
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// Goodput the receiver measured, bit/s.
    pub received_bps: f64,
    /// Bytes the receiver got.
    pub received_bytes: u64,
    /// Retransmissions the sender counted.
    pub retransmits: u64,
    /// Streams that carried data, of those opened.
    pub streams_with_data: usize,
    /// Streams opened.
    pub streams: usize,
}

impl TestBed {
    /// Builds the bed with names starting `slk{tag}` (keep tags unique per test) and a `rate` tbf
    /// bottleneck (tc syntax, e.g. "1gbit") with a `limit` byte queue.
    pub fn new(tag: &str, rate: &str, limit: &str) -> Result<TestBed, String> {
        let sender = format!("slk{tag}a");
        let receiver = format!("slk{tag}b");
        let subnet = 100 + tag.bytes().map(|b| b as u32).sum::<u32>() % 100;
        let bed = TestBed { sender, receiver, receiver_addr: format!("10.231.{subnet}.2") };
        bed.remove();
        bed.build(subnet, rate, limit).inspect_err(|_| bed.remove())?;
        Ok(bed)
    }

    fn build(&self, subnet: u32, rate: &str, limit: &str) -> Result<(), String> {
        let (a, b) = (self.sender.as_str(), self.receiver.as_str());
        let (va, vb) = (format!("{a}0"), format!("{b}0"));
        run(&["ip", "netns", "add", a])?;
        run(&["ip", "netns", "add", b])?;
        run(&["ip", "link", "add", &va, "netns", a, "type", "veth", "peer", "name", &vb, "netns", b])?;
        for (ns, dev, host) in [(a, &va, 1), (b, &vb, 2)] {
            run(&["ip", "-n", ns, "addr", "add", &format!("10.231.{subnet}.{host}/24"), "dev", dev])?;
            run(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        run(&[
            "ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", &va, "root", "tbf", "rate", rate, "burst", "128kb",
            "limit", limit,
        ])?;
        Ok(())
    }

    /// Caps the segments per GSO/TSO packet the sender's veth builds (1: every packet a segment, so
    /// that the receiver acknowledges every other segment, as without segmentation offload).
    pub fn limit_gso(&self, segments: u32) -> Result<(), String> {
        let dev = format!("{}0", self.sender);
        run(&["ip", "-n", &self.sender, "link", "set", "dev", &dev, "gso_max_segs", &segments.to_string()])?;
        Ok(())
    }

    /// Removes both namespaces (and so the veth pair and qdisc); quiet when they do not exist.
    pub fn remove(&self) {
        for ns in [&self.sender, &self.receiver] {
            let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
        }
    }

    /// Starts an iperf3 server for one test on `port` in the receiver namespace, and returns once it
    /// listens (a loaded machine can take longer than any fixed pause to start it).
    pub fn server(&self, port: u16) -> Result<Child, String> {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.receiver, "iperf3", "-s", "-1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("iperf3 server: {e}"))?;
        let filter = format!("sport = :{port}");
        for _ in 0..200 {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("iperf3 server on port {port} exited at once ({status})"));
            }
            let listening = Command::new("ip")
                .args(["netns", "exec", &self.receiver, "ss", "-Hltn", &filter])
                .output()
                .is_ok_and(|o| !o.stdout.is_empty());
            if listening {
                return Ok(child);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("iperf3 server on port {port} did not listen within 10 s"))
    }

    /// Starts an iperf3 client (JSON output) on `port` with congestion control `cc`, `streams` parallel
    /// connections, for `seconds`; `extra` are more iperf3 options.
    pub fn client(&self, port: u16, cc: &str, streams: u32, seconds: u32, extra: &[&str]) -> Result<Child, String> {
        let (port, streams, seconds) = (port.to_string(), streams.to_string(), seconds.to_string());
        let mut args = vec!["netns", "exec", &self.sender, "iperf3", "-J", "-c", &self.receiver_addr, "-p", &port];
        args.extend(["-C", cc, "-P", &streams, "-t", &seconds]);
        args.extend(extra);
        Command::new("ip")
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("iperf3 client: {e}"))
    }

    /// Runs one transfer to completion: server, client, result.
    pub fn transfer(&self, port: u16, cc: &str, streams: u32, seconds: u32) -> Result<Transfer, String> {
        let mut server = self.server(port)?;
        let client = self.client(port, cc, streams, seconds, &[]);
        let result = client.and_then(finish);
        let _ = server.kill();
        let _ = server.wait();
        result
    }

    /// `ss -tin` in the sender namespace for connections to `port`.
    pub fn ss(&self, port: u16) -> String {
        let filter = format!("dport = :{port}");
        let out = Command::new("ip").args(["netns", "exec", &self.sender, "ss", "-tin", &filter]).output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
    }
}

/// What [`TestBed::many_flows`] saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ManyFlows {
    /// Connections that delivered every byte.
    pub completed: usize,
    /// Connections opened.
    pub connections: usize,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// Time until the last connection finished (or the timeout), s.
    pub seconds: f64,
    /// Why connections failed on the sending side: each distinct error with how often it occurred.
    pub failures: Vec<(String, usize)>,
    /// `ss -tin` of up to five connections still open at the timeout (empty when all ended).
    pub stuck: Vec<String>,
}

/// Stack of each connection thread of [`TestBed::many_flows`] (they only copy a buffer).
const FLOW_STACK: usize = 64 * 1024;

impl TestBed {
    /// sluice's own traffic generator: `connections` concurrent TCP connections from the sender namespace,
    /// each choosing congestion control `cc` and sending `bytes_each` bytes, received and counted by a sink
    /// process in the receiver namespace. Gives up after `timeout`.
    ///
    /// The two ends run in different processes so that each needs one descriptor a connection, which fits
    /// the common limit of 1024 open files for 1,000 connections.
    pub fn many_flows(
        &self,
        port: u16,
        cc: &str,
        connections: usize,
        bytes_each: u64,
        timeout: Duration,
    ) -> Result<ManyFlows, String> {
        // One descriptor a connection, plus the test process's own (standard streams, pipes, maps).
        ensure_open_files(connections as u64 + 16)?;
        let start = Instant::now();
        let mut sink = Sink::start(&self.receiver, &self.receiver_addr, port, connections, bytes_each)?;
        let addr = format!("{}:{port}", self.receiver_addr);
        let cc = cc.to_string();
        let deadline = start + timeout;
        let namespace = self.sender.clone();
        let senders = std::thread::spawn(move || {
            in_namespace(&namespace, move || send_all(&addr, &cc, connections, bytes_each, deadline))
        });
        while sink.ended() < connections && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stuck = if sink.ended() < connections { self.open_sockets(port) } else { Vec::new() };
        let (opened, failures) = senders.join().map_err(|_| "sender thread panicked".to_string())???;
        let seconds = start.elapsed().as_secs_f64();
        let (completed, bytes) = sink.stop();
        Ok(ManyFlows { completed, connections: opened, bytes, seconds, failures, stuck })
    }

    /// `ss -tin` of the sender's connections to `port` that are still open (the first five), to show why
    /// they did not finish.
    fn open_sockets(&self, port: u16) -> Vec<String> {
        let filter = format!("dport = :{port}");
        let out = run(&["ip", "netns", "exec", &self.sender, "ss", "-tin", &filter]);
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_else(|e| e);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        lines.chunks(2).take(5).map(|c| c.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")).collect()
    }
}

/// The receiving end of [`TestBed::many_flows`]: one process in the receiver namespace that accepts the
/// connections, reads them to the end, and reports each as a line (`done <bytes>` when it delivered all
/// it should, `short <bytes>` otherwise).
struct Sink {
    child: Child,
    completed: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
    received: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// The sink, in Python's standard library (present on every machine the project runs on): one thread and
/// a selector, so the only per-connection cost is the socket.
const SINK_PY: &str = r#"
import selectors, socket, sys
addr, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((addr, port))
listener.listen(n)
listener.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ, None)
print("listening", flush=True)
accepted = ended = 0
while ended < n:
    for key, _ in sel.select():
        if key.data is None:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ, [0])
            accepted += 1
            if accepted == n:
                sel.unregister(listener)
                listener.close()
            continue
        try:
            data = key.fileobj.recv(1 << 16)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if data:
            key.data[0] += len(data)
            continue
        sel.unregister(key.fileobj)
        key.fileobj.close()
        ended += 1
        print("done" if key.data[0] == size else "short", key.data[0], flush=True)
"#;

impl Sink {
    fn start(namespace: &str, addr: &str, port: u16, connections: usize, bytes_each: u64) -> Result<Sink, String> {
        let (port, n, size) = (port.to_string(), connections.to_string(), bytes_each.to_string());
        let mut child = Command::new("ip")
            .args(["netns", "exec", namespace, "python3", "-c", SINK_PY, addr, &port, &n, &size])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("sink (python3): {e}"))?;
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        if !matches!(lines.next(), Some(Ok(ref l)) if l == "listening") {
            let out = child.wait_with_output().map_err(|e| format!("sink: {e}"))?;
            return Err(format!("the sink did not start: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let completed = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let reader = {
            let (completed, ended, received) = (completed.clone(), ended.clone(), received.clone());
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    let (kind, bytes) = line.split_once(' ').unwrap_or((&line, "0"));
                    received.fetch_add(bytes.parse().unwrap_or(0), Ordering::SeqCst);
                    ended.fetch_add(1, Ordering::SeqCst);
                    if kind == "done" {
                        completed.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        };
        Ok(Sink { child, completed, ended, received, reader: Some(reader) })
    }

    fn completed(&self) -> usize {
        self.completed.load(Ordering::SeqCst)
    }

    /// Connections the sink has seen end, complete or not.
    fn ended(&self) -> usize {
        self.ended.load(Ordering::SeqCst)
    }

    /// Ends the sink (at once if it is still waiting for connections that failed) and returns the
    /// connections that completed and the bytes received.
    fn stop(&mut self) -> (usize, u64) {
        let finished = Instant::now() + Duration::from_secs(1);
        while !matches!(self.child.try_wait(), Ok(Some(_))) && Instant::now() < finished {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        (self.completed(), self.received.load(Ordering::SeqCst))
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `f` on a thread that joined network namespace `ns` (threads it starts inherit the namespace;
/// the caller's thread stays where it is).
fn in_namespace<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let file = std::fs::File::open(format!("/var/run/netns/{ns}")).map_err(|e| format!("namespace {ns}: {e}"))?;
    let handle = std::thread::spawn(move || {
        // SAFETY: `file` is an open descriptor of a network namespace, alive for the call; setns only
        // changes this thread's namespace, which no other thread observes.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        if rc != 0 {
            return Err(format!("setns: {}", std::io::Error::last_os_error()));
        }
        Ok(f())
    });
    handle.join().map_err(|_| "namespace thread panicked".to_string())?
}

/// Raises this process's soft limit on open files to `needed` (within the hard limit), or says why it
/// cannot: a soft limit of 1024 is common and would refuse connections mid-test.
fn ensure_open_files(needed: u64) -> Result<(), String> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!("getrlimit(RLIMIT_NOFILE): {}", std::io::Error::last_os_error()));
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    // Raising the hard limit needs CAP_SYS_RESOURCE, which the root test runs have.
    let raised = libc::rlimit { rlim_cur: needed, rlim_max: limit.rlim_max.max(needed) };
    // SAFETY: `raised` is a valid rlimit whose soft value does not exceed the hard one.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(format!(
            "{needed} open files are needed; the limit is {} (hard {}) and raising it failed: {}",
            limit.rlim_cur,
            limit.rlim_max,
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Opens `n` connections at once and sends `bytes_each` on each; returns how many sent everything and
/// the distinct errors of the others with their counts.
fn send_all(
    addr: &str,
    cc: &str,
    n: usize,
    bytes_each: u64,
    deadline: Instant,
) -> Result<(usize, Vec<(String, usize)>), String> {
    let mut threads = Vec::with_capacity(n);
    for _ in 0..n {
        let (addr, cc) = (addr.to_string(), cc.to_string());
        let spawned = std::thread::Builder::new()
            .stack_size(FLOW_STACK)
            .spawn(move || send_one(&addr, &cc, bytes_each, deadline));
        threads.push(spawned.map_err(|e| format!("thread: {e}"))?);
    }
    let mut failures = std::collections::BTreeMap::<String, usize>::new();
    let mut opened = 0;
    for result in threads.into_iter().map(|t| t.join().unwrap_or_else(|_| Err("sender thread panicked".into()))) {
        match result {
            Ok(()) => opened += 1,
            Err(e) => *failures.entry(e).or_default() += 1,
        }
    }
    Ok((opened, failures.into_iter().collect()))
}

/// Sends `bytes` on one connection, then waits for the receiver to close it: a connection is done when
/// the receiver has everything, not when the data is in the socket buffer (closing earlier would leave
/// the kernel to finish an orphaned socket nobody watches).
fn send_one(addr: &str, cc: &str, bytes: u64, deadline: Instant) -> Result<(), String> {
    let left_until = |deadline: Instant| Some(deadline.saturating_duration_since(Instant::now()).max(MIN_WAIT));
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    set_congestion_control(&stream, cc)?;
    stream.set_write_timeout(left_until(deadline)).map_err(|e| e.to_string())?;
    let chunk = vec![0x5a_u8; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..k]).map_err(|e| format!("send: {e}"))?;
        left -= k as u64;
    }
    stream.shutdown(std::net::Shutdown::Write).map_err(|e| e.to_string())?;
    stream.set_read_timeout(left_until(deadline)).map_err(|e| e.to_string())?;
    match stream.read(&mut [0u8; 1]) {
        Ok(0) => Ok(()),
        Ok(_) => Err("the receiver sent data".into()),
        Err(e) => Err(format!("waiting for the receiver to close: {e}")),
    }
}

/// The shortest socket timeout [`send_one`] sets (a zero timeout would mean none).
const MIN_WAIT: Duration = Duration::from_millis(1);

/// Chooses the socket's congestion control (TCP_CONGESTION), as `iperf3 -C` does.
pub fn set_congestion_control(stream: &TcpStream, name: &str) -> Result<(), String> {
    let bytes = name.as_bytes();
    // SAFETY: the descriptor is the live socket `stream` owns; the option value points to `bytes.len()`
    // readable bytes that outlive the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            bytes.as_ptr().cast(),
            bytes.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(format!("TCP_CONGESTION {name}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

impl Drop for TestBed {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Waits for an iperf3 client started by [`TestBed::client`] and reads its JSON result.
pub fn finish(child: Child) -> Result<Transfer, String> {
    let out = child.wait_with_output().map_err(|e| format!("iperf3 client: {e}"))?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("iperf3 output is not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))?;
    if let Some(error) = json.get("error").and_then(|e| e.as_str()) {
        return Err(format!("iperf3: {error}"));
    }
    let end = &json["end"];
    let streams = end["streams"].as_array().map(Vec::as_slice).unwrap_or_default();
    let with_data = streams.iter().filter(|s| s["receiver"]["bytes"].as_u64().unwrap_or(0) > 0).count();
    Ok(Transfer {
        received_bps: end["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0),
        received_bytes: end["sum_received"]["bytes"].as_u64().unwrap_or(0),
        retransmits: end["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
        streams_with_data: with_data,
        streams: streams.len(),
    })
}

/// The connection line of `ss -ti` output (the indented line after each socket) that acknowledged the
/// most bytes: the data connection of an iperf3 test rather than its control connection.
pub fn busiest(ss: &str) -> Option<&str> {
    let acked = |l: &str| {
        let at = l.find("bytes_acked:").map(|i| i + "bytes_acked:".len());
        at.and_then(|i| l[i..].split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok()).unwrap_or(0)
    };
    ss.lines().filter(|l| l.starts_with('\t') || l.starts_with(' ')).max_by_key(|l| acked(l))
}

/// The `cwnd:N` of the busiest connection in `ss -ti` output.
pub fn cwnd_in(ss: &str) -> Option<u32> {
    let line = busiest(ss)?;
    let at = line.find(" cwnd:")? + " cwnd:".len();
    line[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The congestion control of the busiest connection in `ss -ti` output (the line's first word).
pub fn cc_in(ss: &str) -> Option<String> {
    busiest(ss)?.split_whitespace().next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ss_output() {
        let ss = "State Recv-Q\nESTAB 0 0 10.0.0.1:1 10.0.0.2:5201\n\t bbr cwnd:13 bytes_acked:187\n\
                  ESTAB 0 0 10.0.0.1:2 10.0.0.2:5201\n\t sluice_reno wscale:10,10 rtt:5.1/0.4 mss:1448 cwnd:20 \
                  bytes_acked:176037742 segs_out:121596\n";
        assert_eq!(cwnd_in(ss), Some(20));
        assert_eq!(cc_in(ss).as_deref(), Some("sluice_reno"));
        assert_eq!(cwnd_in("nothing"), None);
    }
}
