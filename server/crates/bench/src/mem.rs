//! Memory measurements: a counting global allocator (Rust heap) and the process's peak
//! resident set (which also covers Z3's C++ heap), reset through `/proc/self/clear_refs`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates to the system allocator; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let now = CURRENT.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

/// A measurement window: Rust heap peak above the start, and the process's peak RSS.
pub struct Window {
    heap_start: usize,
    rss_start_kb: Option<u64>,
}

impl Window {
    pub fn start() -> Window {
        let heap_start = CURRENT.load(Ordering::Relaxed);
        PEAK.store(heap_start, Ordering::Relaxed);
        // "5" resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        Window {
            heap_start,
            rss_start_kb: status_kb("self", "VmRSS"),
        }
    }

    /// Peak Rust heap growth in bytes during the window.
    pub fn heap_peak(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.heap_start)
    }

    /// Peak RSS growth in KiB during the window (None where /proc is unavailable).
    pub fn rss_peak_growth_kb(&self) -> Option<u64> {
        Some(status_kb("self", "VmHWM")?.saturating_sub(self.rss_start_kb?))
    }
}

/// A `kB` field of `/proc/<pid>/status`.
pub fn status_kb(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Total RAM in KiB from `/proc/meminfo`.
pub fn status_kb_meminfo() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
