//! Frames in and out of one veth with an AF_PACKET socket (packet(7)): batched receive with
//! `recvmmsg` and batched send with `sendmmsg`, non-blocking, one socket per host link.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use sluice_switch::pool::SLOT_BYTES;

/// Frames per `recvmmsg` or `sendmmsg` call: 32, the burst size of DPDK's forwarding examples
/// (`MAX_PKT_BURST` in examples/l2fwd), enough to amortise the system call.
pub const BATCH: usize = 32;
/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux 4.20): the socket does not see frames the
/// interface sends, its own included.
pub(crate) const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Socket buffer each way, bytes: 8 MiB holds about 5,000 full frames, a few ms of a 10 Gbit/s link,
/// so a burst from a host waits in the socket rather than being dropped while the loop is busy.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// An AF_PACKET socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    /// The interface name.
    pub name: String,
}

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(rc)
}

fn set_int(fd: RawFd, level: libc::c_int, option: libc::c_int, value: libc::c_int, what: &str) -> io::Result<()> {
    // SAFETY: `fd` is an open socket; the option value points to a live c_int of the size passed.
    let rc = unsafe {
        libc::setsockopt(fd, level, option, (&value as *const libc::c_int).cast(), size_of::<libc::c_int>() as u32)
    };
    check(rc, what).map(|_| ())
}

impl PacketSocket {
    /// Opens a raw socket on interface `name` that receives every frame arriving there.
    pub fn open(name: &str) -> io::Result<PacketSocket> {
        let cname = CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: `cname` is a NUL-terminated string alive for the call.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if index == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {name}")));
        }
        // Protocol 0 receives nothing until bind names the protocol and interface, so no frame of
        // another interface slips in before the bind.
        // SAFETY: a plain system call with constant arguments.
        let raw =
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        check(raw, "socket(AF_PACKET)")?;
        // SAFETY: `raw` is a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        set_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING")?;
        set_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, SOCKET_BUFFER, "SO_RCVBUFFORCE")?;
        set_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, SOCKET_BUFFER, "SO_SNDBUFFORCE")?;
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value to fill in.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = index as i32;
        // SAFETY: `addr` is a valid sockaddr_ll whose size is passed; the kernel only reads it.
        let rc = unsafe {
            libc::bind(raw, (&addr as *const libc::sockaddr_ll).cast(), size_of::<libc::sockaddr_ll>() as u32)
        };
        check(rc, "bind(AF_PACKET)")?;
        Ok(PacketSocket { fd, name: name.to_string() })
    }

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Receive buffers for one batch.
pub struct RxBatch {
    bufs: Vec<[u8; SLOT_BYTES]>,
    lens: [usize; BATCH],
    truncated: [bool; BATCH],
    count: usize,
}

impl Default for RxBatch {
    fn default() -> Self {
        RxBatch { bufs: vec![[0; SLOT_BYTES]; BATCH], lens: [0; BATCH], truncated: [false; BATCH], count: 0 }
    }
}

/// An `mmsghdr` array pointing at `bufs[i][..lens[i]]` (receive: whole buffers), built per call so
/// that no pointer outlives the buffers it points into.
fn headers(bufs: &mut [[u8; SLOT_BYTES]], lens: &[usize], iov: &mut [libc::iovec; BATCH]) -> [libc::mmsghdr; BATCH] {
    // SAFETY: mmsghdr is plain old data; all-zero (null pointers, zero lengths) is a valid value.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (i, buf) in bufs.iter_mut().enumerate().take(lens.len()) {
        iov[i] = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: lens[i] };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    msgs
}

impl RxBatch {
    /// Reads up to [`BATCH`] frames waiting on `socket` without blocking; returns how many.
    pub fn recv(&mut self, socket: &PacketSocket) -> io::Result<usize> {
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        let mut msgs = headers(&mut self.bufs, &[SLOT_BYTES; BATCH], &mut iov);
        // SAFETY: `msgs` holds BATCH headers, each with one iovec pointing into a distinct buffer of
        // `self.bufs` of the length given; all live across the call, which writes only into them.
        let n = unsafe {
            libc::recvmmsg(socket.raw_fd(), msgs.as_mut_ptr(), BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            self.count = 0;
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        self.count = n as usize;
        for (i, m) in msgs.iter().enumerate().take(self.count) {
            self.lens[i] = (m.msg_len as usize).min(SLOT_BYTES);
            self.truncated[i] = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        }
        Ok(self.count)
    }

    /// Frame `i` of the last batch, or `None` when it was longer than a slot (truncated).
    pub fn frame(&self, i: usize) -> Option<&[u8]> {
        (i < self.count && !self.truncated[i]).then(|| &self.bufs[i][..self.lens[i]])
    }
}

/// Frames waiting to be sent on one socket.
pub struct TxBatch {
    bufs: Vec<[u8; SLOT_BYTES]>,
    lens: [usize; BATCH],
    count: usize,
}

impl Default for TxBatch {
    fn default() -> Self {
        TxBatch { bufs: vec![[0; SLOT_BYTES]; BATCH], lens: [0; BATCH], count: 0 }
    }
}

impl TxBatch {
    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.count == BATCH
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Copies `frame` into the batch (the caller flushes a full batch first); frames longer than a
    /// slot are refused with `false`.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        if self.is_full() || frame.len() > SLOT_BYTES {
            return false;
        }
        self.bufs[self.count][..frame.len()].copy_from_slice(frame);
        self.lens[self.count] = frame.len();
        self.count += 1;
        true
    }

    /// Sends the batch on `socket`; returns the frames the kernel refused (dropped).
    pub fn flush(&mut self, socket: &PacketSocket) -> io::Result<usize> {
        let mut sent = 0;
        while sent < self.count {
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
            let mut msgs = headers(&mut self.bufs[sent..self.count], &self.lens[sent..self.count], &mut iov);
            // SAFETY: the first `count - sent` headers each point at one live buffer of the batch with
            // its frame length; the kernel only reads them.
            let n = unsafe { libc::sendmmsg(socket.raw_fd(), msgs.as_mut_ptr(), (self.count - sent) as u32, 0) };
            if n <= 0 {
                let e = io::Error::last_os_error();
                let dropped = self.count - sent;
                self.count = 0;
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(dropped),
                    _ if n == 0 => Ok(dropped),
                    _ => Err(e),
                };
            }
            sent += n as usize;
        }
        self.count = 0;
        Ok(0)
    }
}
