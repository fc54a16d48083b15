//! `sluice tcp send` and `sluice tcp recv`: flows over kernel TCP with a chosen congestion control (one
//! of the kernel's, or `sluice` and `sluice_<algorithm>` while `sluice agent` runs), for running a
//! scenario's flows on the kernel datapath. The sender writes `fct.csv` in the simulator's columns.
//!
//! A flow's completion time runs from its first byte written (after the connection is set up: the
//! simulator has no handshake) until the receiver, having read every byte, answers with one byte of its
//! own; so it ends half a round trip after the receiver has everything, where the simulator's ends
//! when the last ACK reaches the sender.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_core::units::parse_duration;
use sluice_core::{Time, PS_PER_NS, PS_PER_S};
use sluice_results::csv::write_fct_csv;
use sluice_results::FlowRecord;

use crate::console::{interrupted, note, out, Failure};
use crate::udp_plan::{read_flow_list, Planned};

/// Bytes per write.
const CHUNK: usize = 64 * 1024;

/// The two ends of kernel TCP flows.
#[derive(clap::Subcommand)]
pub enum TcpCommand {
    /// Accept flows, read them to the end and answer each with one byte, until SIGINT or SIGTERM.
    Recv {
        /// Address and port to listen on.
        #[arg(long, default_value = "0.0.0.0:5301")]
        bind: String,
    },
    /// Send the flows of a flow list (the format of `sluice udp send --flow-list`).
    Send {
        /// The flows: receivers, sizes, start and stop times.
        #[arg(long, value_name = "FILE")]
        flow_list: PathBuf,
        /// The congestion control every socket chooses (TCP_CONGESTION).
        #[arg(long, default_value = "cubic")]
        congestion: String,
        /// Stop what still runs after this long.
        #[arg(long, default_value = "60s")]
        duration: String,
        /// Directory for fct.csv and summary.json.
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs `sluice tcp ...`.
pub fn run(command: TcpCommand) -> Result<(), Failure> {
    match command {
        TcpCommand::Recv { bind } => recv(&bind),
        TcpCommand::Send { flow_list, congestion, duration, out: dir } => {
            let limit = parse_duration(&duration).map_err(|e| Failure::Error(format!("--duration: {e}")))?;
            send(&flow_list, &congestion, limit, &dir)
        }
    }
}

fn recv(bind: &str) -> Result<(), Failure> {
    let addr: SocketAddrV4 =
        bind.parse().map_err(|_| Failure::Error(format!("--bind {bind:?}: expected ADDRESS:PORT")))?;
    let listener = TcpListener::bind(addr).map_err(|e| Failure::Error(format!("--bind {addr}: {e}")))?;
    listener.set_nonblocking(true).map_err(|e| Failure::Error(e.to_string()))?;
    crate::console::catch_interrupts()?;
    note(&format!("receiving on {addr}"));
    let bytes = Arc::new(AtomicU64::new(0));
    let mut flows = 0u64;
    while !interrupted() {
        match listener.accept() {
            Ok((stream, _)) => {
                flows += 1;
                let bytes = bytes.clone();
                thread::spawn(move || drain(stream, &bytes));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(Failure::Error(format!("accept: {e}"))),
        }
    }
    out(&format!("received {} bytes in {flows} flows\n", bytes.load(Ordering::Relaxed)))
}

/// Reads a flow to its end, then answers with one byte.
fn drain(mut stream: TcpStream, total: &AtomicU64) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
    let _ = stream.write_all(&[1]);
}

/// What one flow did.
struct Done {
    flow: Planned,
    start: Time,
    finish: Option<Time>,
    delivered: u64,
    error: Option<String>,
}

fn send(list: &std::path::Path, congestion: &str, limit: Time, dir: &std::path::Path) -> Result<(), Failure> {
    let plan = read_flow_list(list).map_err(Failure::Error)?;
    let epoch = Instant::now();
    let deadline = epoch + Duration::from_nanos(limit / PS_PER_NS);
    let workers: Vec<_> = plan
        .into_iter()
        .map(|flow| {
            let congestion = congestion.to_string();
            thread::spawn(move || one_flow(flow, &congestion, epoch, deadline))
        })
        .collect();
    let done: Vec<Done> = workers.into_iter().map(|w| w.join().expect("a flow's thread does not panic")).collect();
    report(&done, congestion, dir)
}

/// Runs one flow: waits for its start, connects, chooses the congestion control, writes its bytes (or
/// until its stop), and waits for the receiver's answer.
fn one_flow(flow: Planned, congestion: &str, epoch: Instant, deadline: Instant) -> Done {
    let at = epoch + Duration::from_nanos(flow.start / PS_PER_NS);
    thread::sleep(at.saturating_duration_since(Instant::now()));
    let since = |t: Instant| t.duration_since(epoch).as_nanos() as Time * PS_PER_NS;
    let mut done = Done { flow, start: since(Instant::now()), finish: None, delivered: 0, error: None };
    let result = TcpStream::connect(flow.to).map_err(|e| format!("connect {}: {e}", flow.to)).and_then(|mut s| {
        set_congestion(&s, congestion)?;
        done.start = since(Instant::now());
        let stop = flow.stop.map(|t| epoch + Duration::from_nanos(t / PS_PER_NS)).unwrap_or(deadline).min(deadline);
        done.delivered = write_flow(&mut s, flow.size, stop)?;
        s.shutdown(Shutdown::Write).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))))
            .map_err(|e| e.to_string())?;
        let mut answer = [0u8; 1];
        s.read_exact(&mut answer).map_err(|e| format!("waiting for the receiver's answer: {e}"))?;
        Ok(since(Instant::now()))
    });
    match result {
        Ok(t) if flow.size.is_none_or(|size| done.delivered == size) => done.finish = Some(t),
        Ok(_) => done.error = Some("the run ended before the flow".into()),
        Err(e) => done.error = Some(e),
    }
    done
}

/// Writes `size` bytes (a stream: until `stop`); returns the bytes written.
fn write_flow(s: &mut TcpStream, size: Option<u64>, stop: Instant) -> Result<u64, String> {
    let chunk = vec![0u8; CHUNK];
    let mut written = 0u64;
    while size.is_none_or(|size| written < size) && Instant::now() < stop {
        let n = size.map_or(CHUNK as u64, |size| (size - written).min(CHUNK as u64)) as usize;
        s.write_all(&chunk[..n]).map_err(|e| format!("write: {e}"))?;
        written += n as u64;
    }
    Ok(written)
}

fn set_congestion(stream: &TcpStream, name: &str) -> Result<(), String> {
    let bytes = name.as_bytes();
    // SAFETY: the option value is `name`'s bytes with their length; the descriptor is the stream's own.
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
        return Err(format!("congestion control {name:?}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn report(done: &[Done], congestion: &str, dir: &std::path::Path) -> Result<(), Failure> {
    let mut records: Vec<FlowRecord> = done.iter().map(record).collect();
    records.sort_by_key(|r| r.id);
    let mut fct = Vec::new();
    write_fct_csv(&mut fct, &records).map_err(|e| Failure::Error(e.to_string()))?;
    let failed: Vec<&Done> = done.iter().filter(|d| d.error.is_some()).collect();
    let delivered: u64 = done.iter().map(|d| d.delivered).sum();
    let summary = json!({
        "datapath": "kernel",
        "congestion": congestion,
        "flows": done.len(),
        "failed": failed.len(),
        "delivered_bytes": delivered,
        "errors": failed.iter().map(|d| format!("flow {}: {}", d.flow.id, d.error.as_deref().unwrap_or(""))).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(dir).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
    std::fs::write(dir.join("fct.csv"), fct).map_err(|e| Failure::Error(format!("{}: {e}", dir.display())))?;
    std::fs::write(dir.join("summary.json"), format!("{summary:#}\n")).map_err(|e| Failure::Error(e.to_string()))?;
    out(&format!("{} flow(s) over kernel TCP ({congestion}): {delivered} bytes\n", done.len()))?;
    match failed.first() {
        Some(d) => Err(Failure::Error(format!(
            "{} flows failed; flow {}: {}",
            failed.len(),
            d.flow.id,
            d.error.as_deref().unwrap_or("")
        ))),
        None => Ok(()),
    }
}

fn record(d: &Done) -> FlowRecord {
    let f = &d.flow;
    FlowRecord {
        id: f.id as u64,
        src: f.src,
        dst: f.dst,
        size: f.size.unwrap_or(d.delivered),
        delivered: d.delivered,
        start: d.start,
        finish: d.finish,
        ideal_fct: f.ideal_fct.unwrap_or(PS_PER_S).max(1),
        retransmitted_bytes: 0,
        long_lived: f.size.is_none(),
        group: f.group,
        received: d.delivered,
        started: true,
    }
}
