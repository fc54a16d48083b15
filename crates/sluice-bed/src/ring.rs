//! The alternative receive path, kept to measure against [`crate::socket::RxBatch`]: a TPACKET_V3
//! memory-mapped receive ring (packet(7), the kernel's `Documentation/networking/packet_mmap.rst`).
//! The kernel fills blocks of frames and hands a block over when it is full or when its retire timer
//! runs out; the reader walks the block in place and gives it back.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// `PACKET_RX_RING` (linux/if_packet.h).
const PACKET_RX_RING: libc::c_int = 5;
/// `PACKET_VERSION` (linux/if_packet.h).
const PACKET_VERSION: libc::c_int = 10;
/// `TPACKET_V3` (linux/if_packet.h).
const TPACKET_V3: libc::c_int = 2;
/// `TP_STATUS_USER`: the block belongs to the reader.
const TP_STATUS_USER: u32 = 1;
/// `TP_STATUS_KERNEL`: the block belongs to the kernel.
const TP_STATUS_KERNEL: u32 = 0;
/// Bytes per block: 256 KiB, about 170 full-size frames.
const BLOCK_SIZE: usize = 256 << 10;
/// Blocks in the ring: 16 (4 MiB).
const BLOCKS: usize = 16;
/// The frame size the ring is declared with (TPACKET_V3 packs frames by their length; this only
/// bounds them).
const FRAME_SIZE: usize = 2048;

/// `struct tpacket_req3` (linux/if_packet.h).
#[repr(C)]
struct TpacketReq3 {
    block_size: libc::c_uint,
    block_nr: libc::c_uint,
    frame_size: libc::c_uint,
    frame_nr: libc::c_uint,
    retire_blk_tov: libc::c_uint,
    sizeof_priv: libc::c_uint,
    feature_req_word: libc::c_uint,
}

/// Offsets in `struct tpacket_block_desc` and `struct tpacket3_hdr` (linux/if_packet.h).
mod offset {
    pub const BLOCK_STATUS: usize = 8;
    pub const NUM_PKTS: usize = 12;
    pub const FIRST_PKT: usize = 16;
    pub const NEXT: usize = 0;
    pub const SNAPLEN: usize = 12;
    pub const MAC: usize = 24;
}

/// A TPACKET_V3 receive ring on one interface.
pub struct RxRing {
    fd: OwnedFd,
    map: *mut u8,
    block: usize,
}

// SAFETY: the mapping is owned by this value alone and only touched through `&mut self`.
unsafe impl Send for RxRing {}

fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

impl RxRing {
    /// Opens a ring on interface `name`; `retire_ms` is the block retire timer (at least 1 ms).
    pub fn open(name: &str, retire_ms: u32) -> io::Result<RxRing> {
        let cname = CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: `cname` is a NUL-terminated string alive for the call.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if index == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {name}")));
        }
        // SAFETY: a plain system call with constant arguments.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        check(raw, "socket(AF_PACKET)")?;
        // SAFETY: `raw` is a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let ignore: libc::c_int = 1;
        // SAFETY: the option value points to a live c_int of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                crate::socket::PACKET_IGNORE_OUTGOING,
                (&ignore as *const i32).cast(),
                4,
            )
        };
        check(rc, "PACKET_IGNORE_OUTGOING")?;
        let version = TPACKET_V3;
        // SAFETY: the option value points to a live c_int of the size passed.
        let rc = unsafe { libc::setsockopt(raw, libc::SOL_PACKET, PACKET_VERSION, (&version as *const i32).cast(), 4) };
        check(rc, "PACKET_VERSION")?;
        let req = TpacketReq3 {
            block_size: BLOCK_SIZE as u32,
            block_nr: BLOCKS as u32,
            frame_size: FRAME_SIZE as u32,
            frame_nr: (BLOCK_SIZE * BLOCKS / FRAME_SIZE) as u32,
            retire_blk_tov: retire_ms.max(1),
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        // SAFETY: the option value points to a live tpacket_req3 of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                PACKET_RX_RING,
                (&req as *const TpacketReq3).cast(),
                size_of::<TpacketReq3>() as u32,
            )
        };
        check(rc, "PACKET_RX_RING")?;
        let len = BLOCK_SIZE * BLOCKS;
        // SAFETY: maps the ring the kernel just allocated for this socket; the length is the ring's.
        let map = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, raw, 0)
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring = RxRing { fd, map: map.cast(), block: 0 };
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
        Ok(ring)
    }

    /// The descriptor, for polling.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    fn status(&self, block: usize) -> &AtomicU32 {
        // SAFETY: the status word lies inside the mapping (block < BLOCKS), is 4-byte aligned (blocks
        // are page aligned, the offset is 8) and is only accessed atomically by this process, as the
        // kernel's protocol expects (it writes the block before releasing the status).
        unsafe { AtomicU32::from_ptr(self.map.add(block * BLOCK_SIZE + offset::BLOCK_STATUS).cast()) }
    }

    fn read_u32(&self, at: usize) -> u32 {
        debug_assert!(at + 4 <= BLOCK_SIZE * BLOCKS);
        // SAFETY: `at` lies inside the mapping (checked by the callers against the block's bounds) and
        // the block belongs to the reader (its status was seen as user with acquire ordering).
        unsafe { self.map.add(at).cast::<u32>().read_unaligned() }
    }

    /// Hands every frame of the blocks the kernel has released to `f`, then gives the blocks back;
    /// returns the frames handed over.
    pub fn drain(&mut self, f: &mut dyn FnMut(&[u8])) -> usize {
        let mut frames = 0;
        while self.status(self.block).load(Ordering::Acquire) & TP_STATUS_USER != 0 {
            let base = self.block * BLOCK_SIZE;
            let count = self.read_u32(base + offset::NUM_PKTS);
            let mut at = base + self.read_u32(base + offset::FIRST_PKT) as usize;
            for _ in 0..count {
                if at + 32 > base + BLOCK_SIZE {
                    break;
                }
                let snaplen = self.read_u32(at + offset::SNAPLEN) as usize;
                // SAFETY: `at + MAC` is inside the block (checked above); the u16 is read unaligned.
                let mac = unsafe { self.map.add(at + offset::MAC).cast::<u16>().read_unaligned() } as usize;
                if at + mac + snaplen <= base + BLOCK_SIZE {
                    // SAFETY: the frame's bytes lie inside this block, which the reader owns until it
                    // releases the status below.
                    f(unsafe { std::slice::from_raw_parts(self.map.add(at + mac), snaplen) });
                    frames += 1;
                }
                let next = self.read_u32(at + offset::NEXT) as usize;
                if next == 0 {
                    break;
                }
                at += next;
            }
            self.status(self.block).store(TP_STATUS_KERNEL, Ordering::Release);
            self.block = (self.block + 1) % BLOCKS;
        }
        frames
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `open`, which nothing borrows any more.
        unsafe { libc::munmap(self.map.cast(), BLOCK_SIZE * BLOCKS) };
    }
}
