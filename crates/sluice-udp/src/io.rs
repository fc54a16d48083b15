//! Batched UDP socket I/O for IPv4: `sendmmsg` with a per-datagram TOS byte (the ECN codepoint in its
//! low two bits), `recvmmsg` that reads each datagram's TOS back (`IP_RECVTOS`), and a wait on the
//! socket with a nanosecond timeout (`ppoll`). Every buffer is allocated once, with the batch.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Datagrams moved by one system call at most.
pub const BATCH: usize = 32;
/// Bytes of one datagram buffer: an MTU of up to 9000 bytes.
pub const SLOT: usize = 9000;
/// Room for one IP_TOS control message (an int), aligned.
const CMSG_ROOM: usize = 32;
/// Socket buffers asked for, bytes: enough for a few milliseconds at 10 Gbps.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// A non-blocking IPv4 UDP socket with batched I/O.
pub struct Socket {
    socket: UdpSocket,
}

/// Datagrams to send: fill with [`SendBatch::push`], then [`Socket::send`].
pub struct SendBatch {
    data: Vec<u8>,
    lens: Vec<usize>,
    to: Vec<libc::sockaddr_in>,
    tos: Vec<u8>,
    cmsgs: Vec<[u64; CMSG_ROOM / 8]>,
}

/// Datagrams received by [`Socket::recv`].
pub struct RecvBatch {
    data: Vec<u8>,
    from: Vec<libc::sockaddr_in>,
    cmsgs: Vec<[u64; CMSG_ROOM / 8]>,
    lens: [usize; BATCH],
    tos: [u8; BATCH],
    count: usize,
}

impl Socket {
    /// Binds `addr`, non-blocking, with large buffers and the TOS byte of arrivals reported.
    pub fn bind(addr: SocketAddrV4) -> io::Result<Socket> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        let s = Socket { socket };
        s.set_int(libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        // Larger buffers are a wish (the kernel caps them at net.core.*mem_max), not a need.
        let _ = s.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, SOCKET_BUFFER);
        let _ = s.set_int(libc::SOL_SOCKET, libc::SO_SNDBUF, SOCKET_BUFFER);
        Ok(s)
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
        let n = batch.lens.len();
        if n == 0 {
            return Ok(0);
        }
        let mut iovs = [EMPTY_IOV; BATCH];
        let mut headers = empty_headers();
        batch.prepare(&mut iovs, &mut headers);
        // SAFETY: `prepare` pointed the first `n` headers at `iovs` and at the batch's own address and
        // control buffers, all of which live (and do not move) until the call returns.
        let rc = unsafe { libc::sendmmsg(self.socket.as_raw_fd(), headers.as_mut_ptr(), n as u32, 0) };
        batch.clear();
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                _ => Err(e),
            };
        }
        Ok(rc as usize)
    }

    /// Receives what waits, up to [`BATCH`] datagrams; 0 when nothing does.
    pub fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let mut iovs = [EMPTY_IOV; BATCH];
        let mut headers = empty_headers();
        batch.prepare(&mut iovs, &mut headers);
        // SAFETY: `prepare` pointed every header at `iovs` and at the batch's own data slots,
        // addresses and control room, sized as the headers say, which live until the call returns; a
        // null timeout with MSG_DONTWAIT does not block.
        let rc = unsafe {
            libc::recvmmsg(
                self.socket.as_raw_fd(),
                headers.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            batch.count = 0;
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        batch.count = rc as usize;
        for (k, h) in headers.iter().take(batch.count).enumerate() {
            batch.lens[k] = (h.msg_len as usize).min(SLOT);
            batch.tos[k] = read_tos_cmsg(&h.msg_hdr);
        }
        Ok(batch.count)
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
        SendBatch {
            data: vec![0; BATCH * SLOT],
            lens: Vec::with_capacity(BATCH),
            to: Vec::with_capacity(BATCH),
            tos: Vec::with_capacity(BATCH),
            cmsgs: vec![[0; CMSG_ROOM / 8]; BATCH],
        }
    }
}

impl SendBatch {
    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.lens.len() == BATCH
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
        let k = self.lens.len().min(BATCH - 1);
        &mut self.data[k * SLOT..(k + 1) * SLOT]
    }

    /// Adds the datagram written into [`SendBatch::next_buffer`]: `len` bytes to `to` with IP TOS
    /// `tos`. Ignored when the batch is full.
    pub fn push(&mut self, len: usize, to: SocketAddrV4, tos: u8) {
        if self.is_full() {
            return;
        }
        self.lens.push(len.min(SLOT));
        self.to.push(sockaddr(to));
        self.tos.push(tos);
    }

    fn clear(&mut self) {
        self.lens.clear();
        self.to.clear();
        self.tos.clear();
    }

    /// Points one header per datagram at its data (through `iovs`), address and TOS control message.
    fn prepare(&mut self, iovs: &mut [libc::iovec; BATCH], headers: &mut [libc::mmsghdr; BATCH]) {
        for k in 0..self.lens.len() {
            iovs[k] = libc::iovec { iov_base: self.data[k * SLOT..].as_mut_ptr().cast(), iov_len: self.lens[k] };
            write_tos_cmsg(&mut self.cmsgs[k], self.tos[k]);
            let h = &mut headers[k].msg_hdr;
            h.msg_name = (&mut self.to[k] as *mut libc::sockaddr_in).cast();
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut iovs[k];
            h.msg_iovlen = 1;
            h.msg_control = self.cmsgs[k].as_mut_ptr().cast();
            // SAFETY: CMSG_SPACE only computes a size.
            h.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) } as _;
        }
    }
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch {
            data: vec![0; BATCH * SLOT],
            // SAFETY: an all-zero sockaddr_in is a valid (unspecified) address.
            from: vec![unsafe { zeroed() }; BATCH],
            cmsgs: vec![[0; CMSG_ROOM / 8]; BATCH],
            lens: [0; BATCH],
            tos: [0; BATCH],
            count: 0,
        }
    }
}

impl RecvBatch {
    /// Datagrams of the last [`Socket::recv`].
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the last receive took nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Datagram `k`: its bytes, its sender, and the TOS byte of its IP header (0 if the kernel did
    /// not report one).
    pub fn get(&self, k: usize) -> (&[u8], SocketAddrV4, u8) {
        let from = &self.from[k];
        let addr = SocketAddrV4::new(Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr)), u16::from_be(from.sin_port));
        (&self.data[k * SLOT..k * SLOT + self.lens[k]], addr, self.tos[k])
    }

    fn prepare(&mut self, iovs: &mut [libc::iovec; BATCH], headers: &mut [libc::mmsghdr; BATCH]) {
        for k in 0..BATCH {
            iovs[k] = libc::iovec { iov_base: self.data[k * SLOT..].as_mut_ptr().cast(), iov_len: SLOT };
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
fn empty_headers() -> [libc::mmsghdr; BATCH] {
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

/// Writes an IP_TOS control message carrying `tos` (as an int, which Linux takes for IP_TOS).
fn write_tos_cmsg(room: &mut [u64; CMSG_ROOM / 8], tos: u8) {
    // SAFETY: a msghdr whose control buffer is `room` (CMSG_ROOM bytes, 8-aligned) yields a first
    // header inside it; CMSG_SPACE(int) <= CMSG_ROOM, so the header and its int fit.
    unsafe {
        let mut h: libc::msghdr = zeroed();
        h.msg_control = room.as_mut_ptr().cast();
        h.msg_controllen = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&h);
        (*c).cmsg_level = libc::IPPROTO_IP;
        (*c).cmsg_type = libc::IP_TOS;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), tos as libc::c_int);
    }
}

/// The TOS byte in a received datagram's control messages, 0 if none.
fn read_tos_cmsg(h: &libc::msghdr) -> u8 {
    // SAFETY: the kernel filled `msg_control` up to `msg_controllen` with well-formed control
    // messages; CMSG_FIRSTHDR/NXTHDR stay within that length and every data read is inside its
    // message's `cmsg_len`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP
                && (*c).cmsg_type == libc::IP_TOS
                && (*c).cmsg_len as usize > libc::CMSG_LEN(0) as usize
            {
                return *libc::CMSG_DATA(c);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    0
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

    #[test]
    fn waiting_on_a_quiet_socket_times_out() {
        let a = Socket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        assert!(!a.wait(Some(Duration::from_millis(5))).unwrap());
        let mut batch = RecvBatch::default();
        assert_eq!(a.recv(&mut batch).unwrap(), 0);
    }
}
