//! Transparent huge pages for the heap of a large run.
//!
//! At thousands of hosts a run touches its packets, ports and queues at random across tens to hundreds
//! of megabytes. With 4 KiB pages most of those touches also miss the TLB, whose reach is a few
//! megabytes, and each miss costs a page walk on top of the cache miss. Linux backs anonymous memory
//! with 2 MiB pages where a program asks for them (`madvise(MADV_HUGEPAGE)`), and in its usual
//! `madvise` mode of transparent huge pages only there; the C library's allocator does not ask.
//!
//! [`HugePageHeap`] wraps the system allocator. Once [`enable`]d, it asks for huge pages for the C
//! library's main heap (the one region that `brk` extends, where small and medium allocations live) as
//! it grows, and for every allocation of 2 MiB or more (which the C library then maps apart). It also
//! makes the heap grow in steps of [`HEAP_STEP`], so that the kernel can back new memory with whole huge
//! pages as it is first touched, and has what the program built before in small pages moved into huge
//! ones. The advice changes no allocation's size or content, so a run's results are the same with it
//! or without it; only its speed and resident memory move.
//!
//! It acts only in a program that installs [`HugePageHeap`] as its global allocator (the `sluice`
//! command does); elsewhere (the Python package, which shares its process with the interpreter's heap)
//! [`enable`] does nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// The size of a huge page (x86-64 and arm64 with 4 KiB base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// How much the heap grows at least each time it grows, once enabled, and the size from which an
/// allocation is mapped apart from it: whole huge pages for the kernel to back at first touch, and a
/// vector that grows by doubling stays in the heap up to this size. With 4 MiB (and 2 MiB as the
/// mapping threshold) the k=32 scale run was no faster than without huge pages: likely because the C
/// library grows a mapped block by moving it (`mremap`), and the kernel splits huge pages moved to an
/// address of another alignment into small ones. The cost is memory: a vector's old buffers stay in the
/// heap for later allocations, so a run whose memory is mostly one growing table (a third of a million
/// flows) peaked at 110 MB against 60 MB; `"auto"` leaves such runs in small pages.
pub const HEAP_STEP: usize = 32 << 20;

/// The global allocator of a program whose large runs may use huge pages: the system allocator, and
/// advice to the kernel once [`enable`] is called.
#[derive(Debug, Clone, Copy, Default)]
pub struct HugePageHeap;

/// [`HugePageHeap`] handled an allocation: it is the program's global allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Allocations are followed and advised.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Start of the C library's main heap (0: unknown).
static HEAP_START: AtomicUsize = AtomicUsize::new(0);
/// The main heap is advised up to here: an allocation ending below needs nothing.
static ADVISED_END: AtomicUsize = AtomicUsize::new(0);

/// From now on, asks the kernel for huge pages for the heap and for large allocations, if this
/// program's global allocator is [`HugePageHeap`] (on Linux with the GNU C library); returns whether it
/// does.
pub fn enable() -> bool {
    if !INSTALLED.load(Relaxed) || !os::supported() {
        return false;
    }
    if !ENABLED.swap(true, Relaxed) {
        if HEAP_START.load(Relaxed) == 0 {
            HEAP_START.store(os::heap_start().unwrap_or(0), Relaxed);
        }
        os::grow_heap_by_at_least(HEAP_STEP);
        let heap = HEAP_START.load(Relaxed);
        let touched = os::heap_end();
        advise_heap();
        // What the program built before (the topology, the scenario's flows) is in small pages.
        if heap != 0 && touched > heap {
            os::collapse(heap, touched - heap);
        }
    }
    true
}

/// From now on, asks for nothing more, and lets the heap grow in the C library's own steps again. What
/// was advised keeps its huge pages.
pub fn disable() {
    if ENABLED.swap(false, Relaxed) {
        os::grow_heap_by_at_least(os::DEFAULT_TOP_PAD);
    }
}

/// Whether the heap is advised now ([`enable`]).
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Advises what an allocation of `size` bytes at `ptr` may have added: the heap grown past what was
/// advised, or a large allocation of its own. One comparison for an allocation inside the advised heap.
#[inline(always)]
fn follow(ptr: *mut u8, size: usize) {
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
    if ENABLED.load(Relaxed) && (ptr as usize).saturating_add(size) > ADVISED_END.load(Relaxed) && !ptr.is_null() {
        advise_new(ptr as usize, size);
    }
}

#[cold]
#[inline(never)]
fn advise_new(addr: usize, size: usize) {
    let heap = HEAP_START.load(Relaxed);
    let brk = os::heap_end();
    if heap != 0 && (heap..brk).contains(&addr) {
        advise_heap();
    } else if size >= HUGE_PAGE {
        os::advise(addr, size);
    }
}

/// Advises the main heap from where it was last advised to its end.
fn advise_heap() {
    let heap = HEAP_START.load(Relaxed);
    if heap == 0 {
        return;
    }
    let end = os::heap_end();
    let from = ADVISED_END.load(Relaxed).max(heap);
    if end > from {
        os::advise(from, end - from);
        ADVISED_END.fetch_max(end, Relaxed);
    }
}

// SAFETY: every method hands its arguments unchanged to `System`, whose implementation upholds
// `GlobalAlloc`'s contract, and returns what it returned. `follow` only reads the pointer's address and
// gives the kernel advice about pages already mapped; it neither reads nor writes the memory, and it
// allocates nothing (so it never calls back into the allocator).
unsafe impl GlobalAlloc for HugePageHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract for `layout`, as `System.alloc` requires.
        let ptr = unsafe { System.alloc(layout) };
        follow(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        follow(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (that is, `System`) gave, with its layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`, and the caller upholds `realloc`'s contract for `new_size`.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        follow(moved, new_size);
        moved
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod os {
    /// Base page size (the kernel's `madvise` takes a range starting on one).
    const PAGE: usize = 4096;

    pub(super) fn supported() -> bool {
        true
    }

    /// Where the main heap starts, from the process's own map.
    pub(super) fn heap_start() -> Option<usize> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let line = maps.lines().find(|l| l.ends_with("[heap]"))?;
        usize::from_str_radix(line.split('-').next()?, 16).ok()
    }

    /// The current end of the main heap (the program break).
    pub(super) fn heap_end() -> usize {
        // SAFETY: `sbrk(0)` moves nothing; it returns the current program break.
        unsafe { libc::sbrk(0) as usize }
    }

    /// The C library's own padding of each growth of its heap (`M_TOP_PAD`'s default, 128 KiB), and
    /// the size from which it maps an allocation apart (`M_MMAP_THRESHOLD`'s starting value).
    pub(super) const DEFAULT_TOP_PAD: usize = 128 << 10;

    /// The largest `M_MMAP_THRESHOLD` the C library takes on 64-bit machines (32 MiB).
    const MAX_MMAP_THRESHOLD: usize = 32 << 20;

    /// Makes the C library's main heap grow by at least `step` bytes at a time and serve every
    /// allocation below `step` (up to 32 MiB). Setting either turns off the C library's own adjustment
    /// of the mapping threshold, which otherwise rises with the large blocks freed.
    pub(super) fn grow_heap_by_at_least(step: usize) {
        let pad = libc::c_int::try_from(step).unwrap_or(libc::c_int::MAX);
        let apart = libc::c_int::try_from(step.min(MAX_MMAP_THRESHOLD)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` changes tuning parameters of the allocator; these values are in their ranges.
        unsafe {
            libc::mallopt(libc::M_TOP_PAD, pad);
            libc::mallopt(libc::M_MMAP_THRESHOLD, apart);
        }
    }

    /// Asks the kernel to put what is already in small pages in `[addr, addr + len)` into huge pages now
    /// (Linux 6.1 and later; elsewhere the kernel refuses, and its background thread may do so later).
    pub(super) fn collapse(addr: usize, len: usize) {
        let start = addr & !(PAGE - 1);
        let len = len + (addr - start);
        // SAFETY: MADV_COLLAPSE moves the range's contents into huge pages without changing them or
        // their addresses; an error (an old kernel, no huge page free) leaves the range as it was.
        unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_COLLAPSE) };
    }

    /// Asks for huge pages for the mapped pages of `[addr, addr + len)`; advice only, so a failure (an
    /// unmapped page, a kernel without transparent huge pages) changes nothing and is ignored.
    pub(super) fn advise(addr: usize, len: usize) {
        let start = addr & !(PAGE - 1);
        let len = len + (addr - start);
        // SAFETY: MADV_HUGEPAGE changes no mapping and no content; on a range that is not all mapped the
        // kernel advises what is and returns an error, which is ignored.
        unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod os {
    pub(super) fn supported() -> bool {
        false
    }
    pub(super) fn heap_start() -> Option<usize> {
        None
    }
    pub(super) fn heap_end() -> usize {
        0
    }
    pub(super) const DEFAULT_TOP_PAD: usize = 0;
    pub(super) fn grow_heap_by_at_least(_: usize) {}
    pub(super) fn advise(_: usize, _: usize) {}
    pub(super) fn collapse(_: usize, _: usize) {}
}
