//! Cache prefetch hints. The endpoint knows which flows it serves next (the ready queue's order), so it
//! asks the CPU to bring their state into cache while it serves the current one: at 65,536 flows a flow's
//! state has left every cache by the time its turn comes again, and waiting for it on each turn costs
//! more than the transport's own work (BENCHMARKS.md, "many flows"). A hint changes no result.

/// Cache line bytes on the CPUs this runs on (x86_64 and most aarch64).
const LINE: usize = 64;
/// Lines one call prefetches at most. A core keeps only so many loads from memory under way: asking
/// for a whole flow's state (19 lines) twice a turn left the sender waiting on its prefetches, and 4 to
/// 10 lines sent 8-15% more packets/s at 65,536 flows over loopback (BENCHMARKS.md).
const MAX_LINES: usize = 8;

/// Asks the CPU to bring the bytes of `value` (its first 8 cache lines) into its caches.
#[inline]
pub fn prefetch<T: ?Sized>(value: &T) {
    let start = value as *const T as *const u8 as usize;
    let end = start + std::mem::size_of_val(value).min(MAX_LINES * LINE);
    let mut at = start & !(LINE - 1);
    while at < end {
        line(at as *const u8);
        at += LINE;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: `_mm_prefetch` needs SSE, which is in the x86_64 baseline every build of this target
    // enables. The instruction is a hint: it reads nothing the program can observe and never faults,
    // whatever the address, so no pointer it is given can make it unsound.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn line(_: *const u8) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_value_may_be_prefetched_and_stays_as_it_was() {
        let big = vec![7u8; 10 * LINE * MAX_LINES];
        prefetch(big.as_slice());
        prefetch(&big[3..5]);
        prefetch(&());
        let empty: &[u64] = &[];
        prefetch(empty);
        assert!(big.iter().all(|&b| b == 7));
    }
}
