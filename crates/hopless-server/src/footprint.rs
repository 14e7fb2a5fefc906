//! The server's memory footprint, as INFO memory and MEMORY STATS report it: bytes in use, their peak,
//! the process's resident set.

use std::sync::atomic::Ordering;

use crate::state::Shared;

pub struct Footprint {
    /// Bytes the allocator has handed out and not had back: hopless's counters with the `stats` feature,
    /// else the store's own count.
    pub used: u64,
    /// The most `used` has been when measured.
    pub peak: u64,
    /// This process's resident set size (0 where `/proc` has none).
    pub rss: u64,
}

impl Footprint {
    /// Measures now, raising the recorded peak to what is in use.
    pub fn measure(shared: &Shared) -> Self {
        let s = hopless::stats().bytes_in_use();
        let used = if s > 0 { s } else { shared.store.stats().bytes_used };
        shared.peak_memory.fetch_max(used, Ordering::Relaxed);
        let rss = rss_bytes();
        let peak = shared.peak_memory.load(Ordering::Relaxed).max(used);
        Footprint { used, peak, rss }
    }

    /// RSS over bytes in use (0 when nothing is in use).
    pub fn fragmentation(&self) -> f64 {
        if self.used > 0 {
            self.rss as f64 / self.used as f64
        } else {
            0.0
        }
    }
}

/// From `/proc/self/status`.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()))
        })
        .map_or(0, |kb| kb * 1024)
}
