//! The huge-page allocator asks the kernel for huge pages once enabled, for the heap as it grows and for
//! large allocations, and for nothing before or after. Checked in the process's own map: the kernel shows
//! `hg` among the `VmFlags` of `/proc/self/smaps` for a range advised `MADV_HUGEPAGE`.
//!
//! Its own program (no test harness): the C library's main heap serves the main thread, and the harness
//! would run the checks on a thread of their own, whose allocations come from another arena.

#[global_allocator]
static ALLOCATOR: sluice::huge_pages::HugePageHeap = sluice::huge_pages::HugePageHeap;

use sluice::huge_pages::{disable, enable, enabled, HUGE_PAGE};

/// The `VmFlags` of the mapping that holds `addr`.
fn flags_at(addr: usize) -> String {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut inside = false;
    for line in smaps.lines() {
        let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
        // A mapping's first line starts with its range; its fields (`Size:`, `VmFlags:`) follow.
        if let Some((start, end)) = range {
            if let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) {
                inside = (start..end).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.trim().to_string();
            }
        }
    }
    panic!("no mapping holds {addr:#x}")
}

fn advised(addr: usize) -> bool {
    flags_at(addr).split_whitespace().any(|f| f == "hg")
}

/// Why the check cannot run here, if it cannot.
fn skip_reason() -> Option<&'static str> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return Some("the huge-page advice is made on Linux with the GNU C library only");
    }
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
        return Some("this kernel has no transparent huge pages");
    }
    None
}

fn main() {
    if let Some(reason) = skip_reason() {
        println!("huge_pages: skipped: {reason}");
        return;
    }
    let large = |bytes: usize| vec![1u8; bytes];
    let before = large(4 * HUGE_PAGE);
    assert!(!enabled());
    assert!(!advised(before.as_ptr() as usize), "nothing is advised before it is enabled");

    assert!(enable(), "the allocator is installed, so enabling takes effect");
    let small = Box::new([7u8; 64]);
    let heap = &*small as *const [u8; 64] as usize;
    assert!(advised(heap), "the heap is advised when enabled: {}", flags_at(heap));
    // Mapped apart from the heap (above the 32 MiB from which the C library does so once enabled).
    let after = large(20 * HUGE_PAGE);
    assert!(advised(after.as_ptr() as usize), "a large allocation is advised");
    // Medium blocks, below the C library's mapping threshold, grow the heap past what was advised.
    let grown: Vec<Vec<u8>> = (0..1024).map(|_| large(64 << 10)).collect();
    let last = grown.last().expect("blocks").as_ptr() as usize;
    assert!(advised(last), "the grown heap is advised: {}", flags_at(last));

    disable();
    assert!(!enabled());
    let later = large(4 * HUGE_PAGE);
    assert!(!advised(later.as_ptr() as usize), "nothing new is advised once disabled");
    assert!(advised(after.as_ptr() as usize), "what was advised stays so");
    println!("huge_pages: the heap and large allocations were advised while enabled, and only then");
}
