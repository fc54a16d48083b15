//! An endpoint on a real socket: the loop that takes datagrams in batches, lets the endpoint's clock
//! run on the monotonic clock, sends what it has in batches, and sleeps on the socket until its next
//! wake-up.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use sluice_core::{Time, PS_PER_NS};
use sluice_wire::Ecn;

use crate::endpoint::Endpoint;
use crate::io::{RecvBatch, SendBatch, Socket, RECV_BATCH};
use crate::PeerId;

/// How many datagrams ahead of the one it handles the loop prefetches flow state.
const PREFETCH_AHEAD: usize = 4;

/// What the socket loop did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// `sendmmsg` calls.
    pub send_calls: u64,
    /// Datagrams the kernel did not take (its buffer was full).
    pub send_dropped: u64,
    /// `recvmmsg` calls that returned datagrams.
    pub recv_calls: u64,
    /// Waits on the socket.
    pub waits: u64,
}

impl IoCounters {
    /// Adds `o`'s counts to these (the sockets of one host's threads).
    pub fn add(&mut self, o: &IoCounters) {
        let IoCounters { send_calls, send_dropped, recv_calls, waits } = *o;
        self.send_calls += send_calls;
        self.send_dropped += send_dropped;
        self.recv_calls += recv_calls;
        self.waits += waits;
    }
}

/// An endpoint bound to a socket.
pub struct UdpHost {
    socket: Socket,
    /// The transport.
    pub endpoint: Endpoint,
    peers: Vec<SocketAddrV4>,
    peer_ids: HashMap<SocketAddrV4, PeerId>,
    /// The peer of the previous datagram: a batch mostly comes from one peer, and this spares hashing
    /// its address for each datagram.
    last_peer: Option<(SocketAddrV4, PeerId)>,
    epoch: Instant,
    send: SendBatch,
    recv: RecvBatch,
    /// What the loop did.
    pub io: IoCounters,
    /// When a round last moved a datagram (for [`crate::TransportConfig::busy_poll`]).
    last_busy: Time,
}

impl UdpHost {
    /// `endpoint` on `socket`; its clock starts now.
    pub fn new(socket: Socket, endpoint: Endpoint) -> UdpHost {
        UdpHost::with_epoch(socket, endpoint, Instant::now())
    }

    /// `endpoint` on `socket`, its clock counting from `epoch`: the threads of one host share one clock,
    /// so that their flows' start and finish times compare.
    pub fn with_epoch(socket: Socket, endpoint: Endpoint, epoch: Instant) -> UdpHost {
        set_timer_slack();
        UdpHost {
            send: SendBatch::for_mtu(endpoint.settings().mtu),
            recv: socket.recv_batch(),
            socket,
            endpoint,
            peers: Vec::new(),
            peer_ids: HashMap::new(),
            last_peer: None,
            epoch,
            io: IoCounters::default(),
            last_busy: 0,
        }
    }

    /// Whether the socket sends with UDP GSO and receives with UDP GRO.
    pub fn offloads(&self) -> (bool, bool) {
        self.socket.offloads()
    }

    /// The socket's address.
    pub fn local_addr(&self) -> io::Result<SocketAddrV4> {
        self.socket.local_addr()
    }

    /// The endpoint's clock: picoseconds since the host was made.
    pub fn now(&self) -> Time {
        self.epoch.elapsed().as_nanos() as Time * PS_PER_NS
    }

    /// The peer id of `addr`, numbering it if new.
    pub fn peer(&mut self, addr: SocketAddrV4) -> PeerId {
        if let Some((_, id)) = self.last_peer.filter(|(last, _)| *last == addr) {
            return id;
        }
        let next = self.peers.len() as PeerId;
        let id = *self.peer_ids.entry(addr).or_insert(next);
        if id == next {
            self.peers.push(addr);
        }
        self.last_peer = Some((addr, id));
        id
    }

    /// The address of peer `id`.
    pub fn peer_addr(&self, id: PeerId) -> Option<SocketAddrV4> {
        self.peers.get(id as usize).copied()
    }

    /// Runs until `done` says so (asked after every round) or a socket error. A round that moved
    /// nothing sleeps on the socket once the endpoint's `busy_poll` has passed since one that did.
    pub fn run(&mut self, mut done: impl FnMut(&mut Endpoint, Time) -> bool) -> io::Result<()> {
        loop {
            let busy = self.round()?;
            let now = self.now();
            if done(&mut self.endpoint, now) {
                return Ok(());
            }
            if busy {
                self.last_busy = now;
            } else if now.saturating_sub(self.last_busy) >= self.endpoint.settings().busy_poll {
                self.sleep(now)?;
            }
        }
    }

    /// One round: receive, run due timers, send. Returns whether anything moved.
    pub fn round(&mut self) -> io::Result<bool> {
        let received = self.receive()?;
        let now = self.now();
        self.endpoint.advance(now);
        let sent = self.transmit(now)?;
        Ok(received + sent > 0)
    }

    fn receive(&mut self) -> io::Result<usize> {
        let n = self.socket.recv(&mut self.recv)?;
        if n == 0 {
            return Ok(0);
        }
        self.io.recv_calls += 1;
        let now = self.now();
        // The datagrams of one message share their sender: its peer is looked up once.
        let mut peers = [0; RECV_BATCH];
        for (m, peer) in peers.iter_mut().enumerate().take(self.recv.messages()) {
            *peer = self.peer(self.recv.sender(m));
        }
        let prefetching = self.endpoint.prefetches();
        for k in 0..n {
            if prefetching {
                self.prefetch(&peers, k + PREFETCH_AHEAD, false);
                self.prefetch(&peers, k + PREFETCH_AHEAD / 2, true);
            }
            let (bytes, message, tos) = self.recv.datagram(k);
            // A refused datagram is counted by the endpoint; the loop goes on.
            let _ = self.endpoint.handle(now, peers[message], Ecn::from_bits(tos), bytes);
        }
        Ok(n)
    }

    /// Asks the endpoint to bring datagram `k`'s flow state into cache (see [`Endpoint::prefetch_for`]).
    fn prefetch(&self, peers: &[PeerId], k: usize, deep: bool) {
        if k < self.recv.len() {
            let (bytes, message, _) = self.recv.datagram(k);
            self.endpoint.prefetch_for(peers[message], bytes, deep);
        }
    }

    fn transmit(&mut self, now: Time) -> io::Result<usize> {
        let mut total = 0;
        loop {
            while !self.send.is_full() {
                let Some(t) = self.endpoint.poll_transmit(now, self.send.next_buffer()) else { break };
                let Some(to) = self.peer_addr(t.peer) else { continue };
                self.send.push(t.len, to, t.ecn.bits());
            }
            let queued = self.send.len();
            if queued == 0 {
                return Ok(total);
            }
            let went = self.socket.send(&mut self.send)?;
            self.io.send_calls += 1;
            self.io.send_dropped += (queued - went) as u64;
            total += queued;
        }
    }

    /// Sleeps on the socket until the endpoint's next wake-up (at most 100 ms, so `done` is asked).
    fn sleep(&mut self, now: Time) -> io::Result<()> {
        let limit = Duration::from_millis(100);
        let timeout = match self.endpoint.next_wakeup() {
            Some(at) if at <= now => return Ok(()),
            Some(at) => Duration::from_nanos((at - now) / PS_PER_NS).min(limit),
            None => limit,
        };
        self.io.waits += 1;
        self.socket.wait(Some(timeout))?;
        Ok(())
    }
}

/// Asks the kernel to wake this thread within 1 us of its timers instead of the default 50 us, so
/// that pacing delays hold.
fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches nothing else.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
    }
}
