//! Batched UDP socket I/O for IPv4: `sendmmsg` with a per-datagram TOS byte (the ECN codepoint in its
//! low two bits), `recvmmsg` that reads each datagram's TOS back (`IP_RECVTOS`), and a wait on the
//! socket with a nanosecond timeout (`ppoll`). Every buffer is allocated once, with the batch.
//!
//! Where the kernel has them (Linux 4.18 and 5.0 on), consecutive datagrams of one size to one peer
//! with one TOS byte leave as one UDP GSO send (`UDP_SEGMENT`: the kernel cuts the buffer into
//! datagrams, so one system call and one trip down the stack carry many), and arrivals the kernel
//! coalesced (`UDP_GRO`) are cut back into their datagrams here. Both fall back to one datagram per
//! message when the kernel says no.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::Duration;

/// Datagrams one `sendmmsg` carries at most: 64, so that a GSO send of a path's MTU holds as many
/// segments as the kernel takes (`UDP_MAX_SEGMENTS` 64, or 62 of 1,056 bytes in 64 KiB), one skb down
/// the stack for each (32 gave 2-3% fewer packets/s at 65,536 flows over loopback, BENCHMARKS.md).
pub const SEND_BATCH: usize = 64;
/// Messages one `recvmmsg` takes at most (each up to 64 KiB of coalesced datagrams with GRO).
pub const RECV_BATCH: usize = 32;
/// Bytes of one datagram buffer: an MTU of up to 9000 bytes.
pub const SLOT: usize = 9000;
/// Bytes of one receive buffer with GRO: a coalesced arrival holds up to 64 KiB.
const GRO_SLOT: usize = 65_536;
/// Room for the control messages of one message: IP_TOS and UDP_SEGMENT (an int and a u16), or an
/// arrival's TOS and GRO size, each with its header, aligned.
const CMSG_ROOM: usize = 64;
/// `UDP_SEGMENT` and `UDP_GRO` (linux/udp.h), socket option and control message types at `SOL_UDP`.
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// Segments of one GSO send at most (linux/udp.h `UDP_MAX_SEGMENTS`).
const MAX_SEGMENTS: usize = 64;
/// Payload bytes of one GSO send at most: a UDP datagram's length field, less the IPv4 and UDP
/// headers.
const MAX_GSO_BYTES: usize = 65_535 - 28;
/// Attaches a classic BPF program that picks the socket of an `SO_REUSEPORT` group (linux/asm-generic/
/// socket.h; the same number on x86-64 and arm64).
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;
/// Socket buffers asked for, bytes: enough for a few milliseconds at 10 Gbps.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// A non-blocking IPv4 UDP socket with batched I/O.
pub struct Socket {
    socket: UdpSocket,
    /// Sends group datagrams with UDP GSO.
    gso: std::cell::Cell<bool>,
    /// The kernel may coalesce arrivals (UDP GRO).
    gro: bool,
}

/// Datagrams to send: fill with [`SendBatch::push`], then [`Socket::send`].
pub struct SendBatch {
    data: Vec<u8>,
    /// Bytes of one datagram's buffer.
    slot: usize,
    lens: Vec<usize>,
    to: Vec<libc::sockaddr_in>,
    tos: Vec<u8>,
    cmsgs: Vec<[u64; CMSG_ROOM / 8]>,
    /// Per message of the last `prepare`, the datagrams it carries.
    groups: Vec<usize>,
}

/// One datagram of a [`RecvBatch`]: where it lies in the batch's buffer, and its message.
#[derive(Debug, Clone, Copy, Default)]
struct Datagram {
    offset: usize,
    len: usize,
    message: usize,
}

/// Datagrams received by [`Socket::recv`].
pub struct RecvBatch {
    data: Vec<u8>,
    slot: usize,
    from: Vec<libc::sockaddr_in>,
    cmsgs: Vec<[u64; CMSG_ROOM / 8]>,
    tos: [u8; RECV_BATCH],
    datagrams: Vec<Datagram>,
    /// Messages of the last [`Socket::recv`] (each one datagram, or several the kernel coalesced).
    messages: usize,
}

impl Socket {
    /// Binds `addr`, non-blocking, with large buffers and the TOS byte of arrivals reported; with UDP
    /// GSO and GRO where the kernel has them.
    pub fn bind(addr: SocketAddrV4) -> io::Result<Socket> {
        Socket::bind_with(addr, true)
    }

    /// Binds `addr` as [`Socket::bind`], with UDP GSO and GRO only if `offloads` (for measuring what
    /// they bring).
    pub fn bind_with(addr: SocketAddrV4, offloads: bool) -> io::Result<Socket> {
        Socket::configure(UdpSocket::bind(addr)?, offloads)
    }

    /// Binds `addr` as [`Socket::bind_with`], with `SO_REUSEPORT`: several sockets (one per receiving
    /// thread) share the address, and the kernel hands each the datagrams of its share of the senders'
    /// addresses (by a hash of both ends), so every flow stays on one socket.
    pub fn bind_shared(addr: SocketAddrV4, offloads: bool) -> io::Result<Socket> {
        // SAFETY: socket(2) takes three integers and returns a new descriptor or -1.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor just returned by socket(2) and owned by nothing else.
        let socket = unsafe { UdpSocket::from_raw_fd(fd) };
        let one: libc::c_int = 1;
        let sockaddr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: addr.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
            sin_zero: [0; 8],
        };
        // SAFETY: the option value is a live c_int of the size passed; the address is a live
        // sockaddr_in of the size passed; the descriptor is the socket's own.
        let rc = unsafe {
            let size = size_of::<libc::c_int>() as libc::socklen_t;
            if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, (&one as *const libc::c_int).cast(), size)
                != 0
            {
                -1
            } else {
                let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
                libc::bind(fd, (&sockaddr as *const libc::sockaddr_in).cast(), len)
            }
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Socket::configure(socket, offloads)
    }

    /// Makes a group of `sockets` sockets sharing this one's address ([`Socket::bind_shared`], this one
    /// among them) hand each datagram to the socket numbered its sender's port modulo `sockets`, in the
    /// order they were bound, instead of the kernel's hash: senders on consecutive ports (the threads
    /// of `sluice udp send`) then spread evenly, one per receiving socket, where the hash may put two on
    /// one socket and none on another. A classic BPF program does the choosing in the kernel.
    pub fn steer_by_source_port(&self, sockets: u32) -> io::Result<()> {
        let op = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
        let net = libc::SKF_NET_OFF as u32;
        let mut program = [
            // X = the IPv4 header's length, 4 x its IHL field.
            op(libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH, net),
            // A = the UDP source port, the first 16 bits after the IP header.
            op(libc::BPF_LD | libc::BPF_H | libc::BPF_IND, net),
            op(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, sockets.max(1)),
            op(libc::BPF_RET | libc::BPF_A, 0),
        ];
        let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_mut_ptr() };
        // SAFETY: the option value is a live sock_fprog of the size passed, pointing at a live program
        // of `len` instructions that the kernel copies before returning; the descriptor is this socket's.
        let rc = unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_ATTACH_REUSEPORT_CBPF,
                (&fprog as *const libc::sock_fprog).cast(),
                size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn configure(socket: UdpSocket, offloads: bool) -> io::Result<Socket> {
        socket.set_nonblocking(true)?;
        let mut s = Socket { socket, gso: std::cell::Cell::new(false), gro: false };
        s.set_int(libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        // Larger buffers are a wish (the kernel caps them at net.core.*mem_max), not a need.
        let _ = s.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, SOCKET_BUFFER);
        let _ = s.set_int(libc::SOL_SOCKET, libc::SO_SNDBUF, SOCKET_BUFFER);
        if offloads {
            // A kernel without UDP GSO refuses to read the option; one without GRO, to set it.
            s.gso.set(s.get_int(libc::SOL_UDP, UDP_SEGMENT).is_ok());
            s.gro = s.set_int(libc::SOL_UDP, UDP_GRO, 1).is_ok();
        }
        Ok(s)
    }

    /// Whether sends use UDP GSO and arrivals may come coalesced (UDP GRO).
    pub fn offloads(&self) -> (bool, bool) {
        (self.gso.get(), self.gro)
    }

    /// A receive batch sized for this socket (larger buffers when the kernel coalesces arrivals).
    pub fn recv_batch(&self) -> RecvBatch {
        RecvBatch::with_slot(if self.gro { GRO_SLOT } else { SLOT })
    }

    fn get_int(&self, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: the option buffer is a live c_int whose size is passed with it; the descriptor is
        // this socket's own.
        let rc = unsafe {
            libc::getsockopt(self.socket.as_raw_fd(), level, name, (&mut value as *mut libc::c_int).cast(), &mut len)
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(value)
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddrV4> {
        match self.socket.local_addr()? {
            std::net::SocketAddr::V4(a) => Ok(a),
            std::net::SocketAddr::V6(_) => Err(io::Error::other("an IPv4 socket has an IPv6 address")),
        }
    }

    fn set_int(&self, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        // SAFETY: the option value is a live c_int and its size is passed with it; the descriptor is
        // this socket's own.
        let rc = unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                level,
                name,
                (&value as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends the batch; returns how many datagrams the kernel took (0 when its buffer is full). The
    /// batch is emptied either way: what did not go is the transport's loss to recover.
    pub fn send(&self, batch: &mut SendBatch) -> io::Result<usize> {
        if batch.lens.is_empty() {
            return Ok(0);
        }
        let mut result = self.send_once(batch, self.gso.get());
        if self.gso.get() && matches!(&result, Err(e) if gso_refused(e)) {
            // The kernel (or the route's device) takes no GSO after all: one datagram per message from now on.
            self.gso.set(false);
            result = self.send_once(batch, false);
        }
        batch.clear();
        result
    }

    fn send_once(&self, batch: &mut SendBatch, gso: bool) -> io::Result<usize> {
        let mut iovs = [EMPTY_IOV; SEND_BATCH];
        let mut headers = empty_headers();
        let messages = batch.prepare(&mut iovs, &mut headers, gso);
        // SAFETY: `prepare` pointed the first `messages` headers at `iovs` and at the batch's own
        // address and control buffers, all of which live (and do not move) until the call returns.
        let rc = unsafe { libc::sendmmsg(self.socket.as_raw_fd(), headers.as_mut_ptr(), messages as u32, 0) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                _ => Err(e),
            };
        }
        Ok(batch.groups[..rc as usize].iter().sum())
    }

    /// Receives what waits, up to [`RECV_BATCH`] messages (more datagrams when the kernel coalesced
    /// them); returns the datagrams, 0 when nothing waits.
    pub fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut iovs = [EMPTY_IOV; RECV_BATCH];
        let mut headers = empty_headers();
        batch.prepare(&mut iovs, &mut headers);
        batch.datagrams.clear();
        batch.messages = 0;
        // SAFETY: `prepare` pointed every header at `iovs` and at the batch's own data slots,
        // addresses and control room, sized as the headers say, which live until the call returns; a
        // null timeout with MSG_DONTWAIT does not block.
        let rc = unsafe {
            libc::recvmmsg(
                self.socket.as_raw_fd(),
                headers.as_mut_ptr(),
                RECV_BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        for (k, h) in headers.iter().take(rc as usize).enumerate() {
            let (tos, segment) = read_cmsgs(&h.msg_hdr);
            batch.tos[k] = tos;
            batch.split(k, (h.msg_len as usize).min(batch.slot), segment);
        }
        batch.messages = rc as usize;
        Ok(batch.datagrams.len())
    }

    /// Waits until a datagram arrives or `timeout` passes (`None`: no limit); returns whether one
    /// arrived. A signal ends the wait early.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let mut fd = libc::pollfd { fd: self.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ts = timeout
            .map(|t| libc::timespec { tv_sec: t.as_secs() as libc::time_t, tv_nsec: t.subsec_nanos() as libc::c_long });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: one live pollfd, a timespec that outlives the call or null, and no signal mask.
        let rc = unsafe { libc::ppoll(&mut fd, 1, ts_ptr, std::ptr::null()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
        }
        Ok(rc > 0)
    }
}

impl Default for SendBatch {
    fn default() -> Self {
        SendBatch::for_mtu(SLOT as u32)
    }
}

impl SendBatch {
    /// A batch whose buffers hold a datagram of a path of `mtu` bytes (at least a 1500-byte MTU's, for
    /// control packets with INT records): 64 buffers of 1,536 bytes take 98 KB, where buffers for a
    /// 9,000-byte MTU take 576 KB.
    pub fn for_mtu(mtu: u32) -> SendBatch {
        let slot = (mtu.max(1500) as usize).min(SLOT).next_multiple_of(64);
        SendBatch {
            slot,
            data: vec![0; SEND_BATCH * slot],
            lens: Vec::with_capacity(SEND_BATCH),
            to: Vec::with_capacity(SEND_BATCH),
            tos: Vec::with_capacity(SEND_BATCH),
            cmsgs: vec![[0; CMSG_ROOM / 8]; SEND_BATCH],
            groups: Vec::with_capacity(SEND_BATCH),
        }
    }

    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.lens.len() == SEND_BATCH
    }

    /// Datagrams in the batch.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// The buffer of the next datagram; [`SendBatch::push`] then records its length and destination.
    pub fn next_buffer(&mut self) -> &mut [u8] {
        let k = self.lens.len().min(SEND_BATCH - 1);
        &mut self.data[k * self.slot..(k + 1) * self.slot]
    }

    /// Adds the datagram written into [`SendBatch::next_buffer`]: `len` bytes to `to` with IP TOS
    /// `tos`. Ignored when the batch is full.
    pub fn push(&mut self, len: usize, to: SocketAddrV4, tos: u8) {
        if self.is_full() {
            return;
        }
        self.lens.push(len.min(self.slot));
        self.to.push(sockaddr(to));
        self.tos.push(tos);
    }

    fn clear(&mut self) {
        self.lens.clear();
        self.to.clear();
        self.tos.clear();
    }

    /// Datagrams `k` on that one GSO send carries with datagram `k` (1 without `gso`): the same peer,
    /// TOS and length, but the last, which may be shorter, within the kernel's limits.
    fn group_at(&self, k: usize, gso: bool) -> usize {
        let size = self.lens[k];
        let mut n = 1;
        while gso && k + n < self.lens.len() && n < MAX_SEGMENTS && (n + 1) * size <= MAX_GSO_BYTES {
            let j = k + n;
            let same = self.to[j].sin_addr.s_addr == self.to[k].sin_addr.s_addr
                && self.to[j].sin_port == self.to[k].sin_port
                && self.tos[j] == self.tos[k]
                && self.lens[j] <= size
                && self.lens[j - 1] == size;
            if !same {
                break;
            }
            n += 1;
        }
        n
    }

    /// Points one header per message at its datagrams (through `iovs`, one each, in order), address
    /// and control messages (TOS, and the segment size of a GSO send). Returns the messages.
    fn prepare(
        &mut self,
        iovs: &mut [libc::iovec; SEND_BATCH],
        headers: &mut [libc::mmsghdr; SEND_BATCH],
        gso: bool,
    ) -> usize {
        for (k, (iov, &len)) in iovs.iter_mut().zip(&self.lens).enumerate() {
            *iov = libc::iovec { iov_base: self.data[k * self.slot..].as_mut_ptr().cast(), iov_len: len };
        }
        self.groups.clear();
        let mut k = 0;
        while k < self.lens.len() {
            let n = self.group_at(k, gso);
            let m = self.groups.len();
            let segment = (n > 1).then_some(self.lens[k] as u16);
            let control = write_send_cmsgs(&mut self.cmsgs[m], self.tos[k], segment);
            let h = &mut headers[m].msg_hdr;
            h.msg_name = (&mut self.to[k] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut iovs[k];
            h.msg_iovlen = n as _;
            h.msg_control = self.cmsgs[m].as_mut_ptr().cast();
            h.msg_controllen = control as _;
            self.groups.push(n);
            k += n;
        }
        self.groups.len()
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::with_slot(SLOT)
    }
}

impl RecvBatch {
    /// A batch of [`RECV_BATCH`] buffers of `slot` bytes each.
    fn with_slot(slot: usize) -> RecvBatch {
        RecvBatch {
            data: vec![0; RECV_BATCH * slot],
            slot,
            // SAFETY: an all-zero sockaddr_in is a valid (unspecified) address.
            from: vec![unsafe { zeroed() }; RECV_BATCH],
            cmsgs: vec![[0; CMSG_ROOM / 8]; RECV_BATCH],
            tos: [0; RECV_BATCH],
            datagrams: Vec::with_capacity(RECV_BATCH * MAX_SEGMENTS),
            messages: 0,
        }
    }

    /// Datagrams of the last [`Socket::recv`].
    pub fn len(&self) -> usize {
        self.datagrams.len()
    }

    /// Whether the last receive took nothing.
    pub fn is_empty(&self) -> bool {
        self.datagrams.is_empty()
    }

    /// Datagram `k`: its bytes, its sender, and the TOS byte of its IP header (0 if the kernel did
    /// not report one).
    pub fn get(&self, k: usize) -> (&[u8], SocketAddrV4, u8) {
        let (bytes, message, tos) = self.datagram(k);
        (bytes, self.sender(message), tos)
    }

    /// Messages of the last receive: the datagrams of one message share their sender.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// The sender of message `m`.
    pub fn sender(&self, m: usize) -> SocketAddrV4 {
        let from = &self.from[m];
        SocketAddrV4::new(Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)), u16::from_be(from.sin_port))
    }

    /// Datagram `k`: its bytes, the message it came in, and the TOS byte of its IP header (0 if the
    /// kernel did not report one).
    pub fn datagram(&self, k: usize) -> (&[u8], usize, u8) {
        let d = self.datagrams[k];
        (&self.data[d.offset..d.offset + d.len], d.message, self.tos[d.message])
    }

    /// Records message `k` of `len` bytes as its datagrams: one, or `segment`-sized pieces of an
    /// arrival the kernel coalesced (the last may be shorter).
    fn split(&mut self, k: usize, len: usize, segment: Option<usize>) {
        let size = segment.unwrap_or(len).max(1);
        let mut at = 0;
        loop {
            let piece = size.min(len - at);
            self.datagrams.push(Datagram { offset: k * self.slot + at, len: piece, message: k });
            at += piece;
            if at >= len {
                return;
            }
        }
    }

    fn prepare(&mut self, iovs: &mut [libc::iovec; RECV_BATCH], headers: &mut [libc::mmsghdr; RECV_BATCH]) {
        let slot = self.slot;
        for k in 0..RECV_BATCH {
            iovs[k] = libc::iovec { iov_base: self.data[k * slot..].as_mut_ptr().cast(), iov_len: slot };
            let h = &mut headers[k].msg_hdr;
            h.msg_name = (&mut self.from[k] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut iovs[k];
            h.msg_iovlen = 1;
            h.msg_control = self.cmsgs[k].as_mut_ptr().cast();
            h.msg_controllen = CMSG_ROOM as _;
        }
    }
}

/// An iovec that points nowhere, to initialise arrays.
const EMPTY_IOV: libc::iovec = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };

/// Headers that point nowhere, filled by a batch's `prepare`.
fn empty_headers<const N: usize>() -> [libc::mmsghdr; N] {
    // SAFETY: an all-zero mmsghdr is a valid empty header (null pointers, zero lengths).
    unsafe { zeroed() }
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

/// Whether a send failed because the kernel or the route's device takes no UDP GSO.
fn gso_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP))
}

/// Writes a send's control messages into `room`: IP_TOS carrying `tos` (as an int, which Linux takes
/// for IP_TOS) and, for a GSO send, UDP_SEGMENT carrying the segment size (a u16). Returns their length.
fn write_send_cmsgs(room: &mut [u64; CMSG_ROOM / 8], tos: u8, segment: Option<u16>) -> usize {
    // SAFETY: CMSG_SPACE only computes sizes.
    let (int_space, u16_space) =
        unsafe { (libc::CMSG_SPACE(size_of::<libc::c_int>() as u32), libc::CMSG_SPACE(size_of::<u16>() as u32)) };
    let total = (int_space + if segment.is_some() { u16_space } else { 0 }) as usize;
    // SAFETY: a msghdr whose control buffer is `room` (CMSG_ROOM bytes, 8-aligned) and `total` long
    // (CMSG_SPACE(int) + CMSG_SPACE(u16) <= CMSG_ROOM) yields headers inside it: the first, and for a
    // GSO send the next one, each with room for its data; the buffer is zeroed first, as CMSG_NXTHDR
    // reads the header it steps over.
    unsafe {
        *room = [0; CMSG_ROOM / 8];
        let mut h: libc::msghdr = zeroed();
        h.msg_control = room.as_mut_ptr().cast();
        h.msg_controllen = total as _;
        let c = libc::CMSG_FIRSTHDR(&h);
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_TOS;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), tos as libc::c_int);
        if let Some(size) = segment {
            let c = libc::CMSG_NXTHDR(&h, c);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size);
        }
    }
    total
}

/// The TOS byte (0 if none) and the GRO segment size (if the kernel coalesced datagrams) in a received
/// message's control messages.
fn read_cmsgs(h: &libc::msghdr) -> (u8, Option<usize>) {
    let (mut tos, mut segment) = (0, None);
    // SAFETY: the kernel filled `msg_control` up to `msg_controllen` with well-formed control
    // messages; CMSG_FIRSTHDR/NXTHDR stay within that length and every data read is inside its
    // message's `cmsg_len`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let len = (*c).cmsg_len as usize;
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TOS) if len > libc::CMSG_LEN(0) as usize => tos = *libc::CMSG_DATA(c),
                (libc::SOL_UDP, UDP_GRO) if len >= libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize => {
                    let size = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                    segment = usize::try_from(size).ok().filter(|&s| s > 0);
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (tos, segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_cross_loopback_with_their_tos() {
        let a = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let b = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let to = b.local_addr().unwrap();
        let mut out = SendBatch::default();
        for (k, tos) in [(0u8, 0u8), (1, 2), (2, 3)] {
            out.next_buffer()[..3].copy_from_slice(&[k, k, k]);
            out.push(3, to, tos);
        }
        assert_eq!(a.send(&mut out).unwrap(), 3);
        assert!(out.is_empty());
        assert!(b.wait(Some(Duration::from_secs(2))).unwrap());
        let mut got = Vec::new();
        let mut batch = RecvBatch::default();
        while got.len() < 3 {
            b.wait(Some(Duration::from_millis(100))).unwrap();
            b.recv(&mut batch).unwrap();
            for k in 0..batch.len() {
                let (bytes, from, tos) = batch.get(k);
                assert_eq!(from, a.local_addr().unwrap());
                got.push((bytes.to_vec(), tos & 3));
            }
        }
        assert_eq!(got, [(vec![0, 0, 0], 0), (vec![1, 1, 1], 2), (vec![2, 2, 2], 3)], "ECN bits survive");
    }

    /// Sends 20 datagrams of 1000 bytes and one of 500 to one peer in one batch, and reads them back.
    fn round_trip(offloads: bool) -> (Socket, Vec<Vec<u8>>) {
        let a = Socket::bind_with(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), offloads).unwrap();
        let b = Socket::bind_with(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), offloads).unwrap();
        let to = b.local_addr().unwrap();
        let mut out = SendBatch::default();
        for k in 0..21u8 {
            let len = if k == 20 { 500 } else { 1000 };
            out.next_buffer()[..len].fill(k);
            out.push(len, to, 1);
        }
        assert_eq!(a.send(&mut out).unwrap(), 21, "every datagram went");
        let mut got = Vec::new();
        let mut batch = b.recv_batch();
        while got.len() < 21 {
            assert!(b.wait(Some(Duration::from_secs(2))).unwrap(), "{} of 21 arrived", got.len());
            b.recv(&mut batch).unwrap();
            for k in 0..batch.len() {
                let (bytes, _, tos) = batch.get(k);
                assert_eq!(tos & 3, 1, "ECT(1) on every datagram");
                got.push(bytes.to_vec());
            }
        }
        (a, got)
    }

    #[test]
    fn one_gso_send_arrives_as_its_datagrams() {
        for offloads in [true, false] {
            let (a, got) = round_trip(offloads);
            let expected: Vec<Vec<u8>> = (0..21u8).map(|k| vec![k; if k == 20 { 500 } else { 1000 }]).collect();
            assert_eq!(got, expected, "offloads {offloads}: in order, whole, cut where they were");
            if !offloads {
                assert_eq!(a.offloads(), (false, false));
            }
        }
    }

    #[test]
    fn a_gso_group_ends_at_a_new_peer_tos_or_size() {
        let peer = |port| SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
        let mut batch = SendBatch::default();
        for (len, port, tos) in [(1000, 1, 0), (1000, 1, 0), (600, 1, 0), (1000, 1, 0), (1000, 2, 0), (1000, 2, 1)] {
            batch.push(len, peer(port), tos);
        }
        let mut iovs = [EMPTY_IOV; SEND_BATCH];
        let mut headers = empty_headers();
        assert_eq!(batch.prepare(&mut iovs, &mut headers, true), 4);
        assert_eq!(batch.groups, [3, 1, 1, 1], "a shorter datagram ends its group; so do a new peer and TOS");
        assert_eq!(headers[0].msg_hdr.msg_iovlen, 3);
        assert_eq!(batch.prepare(&mut iovs, &mut headers, false), 6, "without GSO, a message each");
    }

    #[test]
    fn waiting_on_a_quiet_socket_times_out() {
        let a = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        assert!(!a.wait(Some(Duration::from_millis(5))).unwrap());
        let mut batch = RecvBatch::default();
        assert_eq!(a.recv(&mut batch).unwrap(), 0);
    }
}
