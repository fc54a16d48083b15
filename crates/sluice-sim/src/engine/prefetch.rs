//! A cache hint: the run loop asks the CPU to start loading what an event due shortly will read, so that
//! at scale (millions of packets and tens of thousands of ports, far beyond the caches) the load overlaps
//! the events before it instead of stalling the one that needs it. A hint never changes a result.

/// Asks the CPU to bring the cache line holding `value` closer (into every level); does nothing on
/// targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    prefetch_address((value as *const T).cast::<u8>());
}

/// Asks the CPU to bring both cache lines a record of up to 64 bytes may straddle: its first and its
/// last byte's (the same line when the record is aligned to it).
#[inline(always)]
pub fn prefetch_record<T>(value: &T) {
    const { assert!(std::mem::size_of::<T>() <= 64, "a record of at most one cache line") };
    let first = (value as *const T).cast::<u8>();
    prefetch_address(first);
    prefetch_address(first.wrapping_add(std::mem::size_of::<T>().saturating_sub(1)));
}

/// The hint for the line holding `address`, which need not point into anything.
#[inline(always)]
fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache: it reads nothing into the program, writes nothing and
    // cannot fault, whatever the address; SSE, which it needs, is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
