//! The switch's event loop: one thread, a monotonic nanosecond clock, every host socket polled. Each
//! turn runs the fabric up to now (sending what reaches hosts), then reads what hosts sent. When
//! nothing arrives it sleeps in `ppoll` until shortly before the next departure, then spins, so that
//! departures leave on time without burning a core while the fabric is idle.

use std::io;
use std::time::{Duration, Instant};

use sluice_switch::Fabric;

use crate::ring::RxRing;
use crate::socket::{PacketSocket, RxBatch, TxBatch};

/// How long before its next event the loop stops sleeping and spins: 50 us, longer than a timer
/// wake-up takes on a loaded machine (tens of microseconds; the kernel's default timer slack alone is
/// 50 us, which the loop sets to 1 ns for itself).
pub const SPIN_NS: u64 = 50_000;
/// The longest sleep, so that a stop request is seen within it: 20 ms.
const MAX_SLEEP_NS: u64 = 20_000_000;

/// How the loop waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Sleep in `ppoll` until shortly before the next event.
    Poll,
    /// Never sleep (one core stays busy; the most exact timing).
    Spin,
}

/// What one run of the loop did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Frames read from hosts.
    pub rx_frames: u64,
    /// Frames written to hosts.
    pub tx_frames: u64,
    /// Frames the kernel refused to send (socket buffer full).
    pub tx_dropped: u64,
    /// Frames longer than a packet slot, dropped.
    pub truncated: u64,
    /// Turns of the loop.
    pub turns: u64,
    /// Times it slept in `ppoll`.
    pub sleeps: u64,
    /// Nanoseconds the loop ran.
    pub elapsed_ns: u64,
}

/// Runs `fabric` over `sockets` (host index = position) until `stop` says so or `limit` passes;
/// the fabric's clock is nanoseconds since the call. Returns the loop's counters.
pub fn run(
    fabric: &mut Fabric,
    sockets: &[PacketSocket],
    wait: Wait,
    limit: Option<Duration>,
    stop: &dyn Fn() -> bool,
) -> io::Result<LoopStats> {
    let mut rx = RxBatch::default();
    let fds: Vec<i32> = sockets.iter().map(PacketSocket::raw_fd).collect();
    let mut receive = |host: usize, f: &mut dyn FnMut(Option<&[u8]>)| -> io::Result<usize> {
        let n = rx.recv(&sockets[host])?;
        for i in 0..n {
            f(rx.frame(i));
        }
        Ok(n)
    };
    run_loop(fabric, sockets, &fds, wait, limit, stop, &mut receive)
}

/// [`run`] reading frames from TPACKET_V3 rings (`rings[h]` on host `h`'s link) instead of
/// `recvmmsg`; sending is the same. For measuring the two against each other.
pub fn run_rings(
    fabric: &mut Fabric,
    sockets: &[PacketSocket],
    rings: &mut [RxRing],
    wait: Wait,
    limit: Option<Duration>,
    stop: &dyn Fn() -> bool,
) -> io::Result<LoopStats> {
    let fds: Vec<i32> = rings.iter().map(RxRing::raw_fd).collect();
    let mut receive = |host: usize, f: &mut dyn FnMut(Option<&[u8]>)| -> io::Result<usize> {
        Ok(rings[host].drain(&mut |frame| f(Some(frame))))
    };
    run_loop(fabric, sockets, &fds, wait, limit, stop, &mut receive)
}

/// Reads the frames waiting from host `host`, handing each to the callback (`None`: truncated);
/// returns how many.
type Receive<'a> = dyn FnMut(usize, &mut dyn FnMut(Option<&[u8]>)) -> io::Result<usize> + 'a;

fn run_loop(
    fabric: &mut Fabric,
    sockets: &[PacketSocket],
    fds: &[i32],
    wait: Wait,
    limit: Option<Duration>,
    stop: &dyn Fn() -> bool,
    receive: &mut Receive,
) -> io::Result<LoopStats> {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and changes only this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let start = Instant::now();
    let clock = || start.elapsed().as_nanos() as u64;
    let limit_ns = limit.map(|d| d.as_nanos() as u64);
    let mut tx: Vec<TxBatch> = sockets.iter().map(|_| TxBatch::default()).collect();
    let mut fds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let mut stats = LoopStats::default();
    loop {
        let now = clock();
        if stop() || limit_ns.is_some_and(|l| now >= l) {
            break;
        }
        stats.turns += 1;
        advance(fabric, sockets, &mut tx, now, &mut stats)?;
        let mut got = 0;
        for host in 0..sockets.len() {
            // Departures due before this batch's arrivals go first.
            let t = clock();
            advance(fabric, sockets, &mut tx, t, &mut stats)?;
            let n = receive(host, &mut |frame| match frame {
                Some(frame) => fabric.receive(t, host as u32, frame),
                None => stats.truncated += 1,
            })?;
            got += n;
            stats.rx_frames += n as u64;
        }
        if got == 0 && wait == Wait::Poll {
            let now = clock();
            let until = fabric.next_event_ns().unwrap_or(u64::MAX).min(limit_ns.unwrap_or(u64::MAX));
            let sleep = until.saturating_sub(now).saturating_sub(SPIN_NS).min(MAX_SLEEP_NS);
            if sleep > 0 {
                stats.sleeps += 1;
                poll(&mut fds, sleep)?;
            }
        }
    }
    let end = clock();
    advance(fabric, sockets, &mut tx, end, &mut stats)?;
    stats.elapsed_ns = end;
    Ok(stats)
}

/// Runs the fabric to `now` and sends what reaches hosts, in batches per host.
fn advance(
    fabric: &mut Fabric,
    sockets: &[PacketSocket],
    tx: &mut [TxBatch],
    now: u64,
    stats: &mut LoopStats,
) -> io::Result<()> {
    let mut error = None;
    fabric.advance(now, &mut |host, frame| {
        let batch = &mut tx[host as usize];
        if batch.is_full() {
            match batch.flush(&sockets[host as usize]) {
                Ok(dropped) => stats.tx_dropped += dropped as u64,
                Err(e) => error = Some(e),
            }
        }
        if batch.push(frame) {
            stats.tx_frames += 1;
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    for (batch, socket) in tx.iter_mut().zip(sockets) {
        if !batch.is_empty() {
            stats.tx_dropped += batch.flush(socket)? as u64;
        }
    }
    Ok(())
}

/// Sleeps until a socket is readable or `ns` nanoseconds pass.
fn poll(fds: &mut [libc::pollfd], ns: u64) -> io::Result<()> {
    let timeout = libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
    // SAFETY: `fds` is a live, writable array of `fds.len()` pollfd; `timeout` outlives the call; no
    // signal mask is passed.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &timeout, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
