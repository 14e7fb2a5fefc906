//! Counters, compiled out unless the `stats` feature is on.
//!
//! Thread counters live in the thread cache and are bumped with a relaxed load and store (never an atomic
//! read-modify-write: only the owning thread writes them; a snapshot reads them racily but without tearing).
//! Central counters live under each class's lock.

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::size_class::{class_size, NUM_CLASSES};

/// A counter written by one thread and read by any.
#[derive(Default)]
#[repr(transparent)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline(always)]
    pub fn bump(&self) {
        self.add(1);
    }
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0
            .store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Per thread, per class.
#[derive(Default)]
pub struct ThreadCounters {
    pub alloc_fast: Counter,
    pub alloc_slow: Counter,
    pub free_fast: Counter,
    pub free_slow: Counter,
}

/// Per class, under the class lock.
#[derive(Clone, Copy, Default, Debug)]
pub struct CentralCounters {
    pub refills: u64,
    pub flushes: u64,
    /// Blocks outside their slabs (in use or in a magazine), and the most there ever were.
    pub outstanding: i64,
    pub peak_outstanding: i64,
}

/// One class in a [`Stats`] snapshot.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ClassStats {
    pub size: usize,
    pub alloc_fast: u64,
    pub alloc_slow: u64,
    pub free_fast: u64,
    pub free_slow: u64,
    pub refills: u64,
    pub flushes: u64,
    /// Slabs this class holds now.
    pub slabs: u64,
    /// Blocks outside their slabs now: in use, or cached in a thread's magazine.
    pub outstanding_blocks: u64,
    /// Blocks allocated and not freed, times the block size.
    pub bytes_in_use: u64,
    /// The most bytes this class ever had outside its slabs (in use or cached in magazines).
    pub peak_bytes: u64,
}

/// A snapshot of every counter (see [`crate::stats()`]).
#[derive(Clone, Debug)]
pub struct Stats {
    pub classes: [ClassStats; NUM_CLASSES],
    pub large_allocs: u64,
    pub large_frees: u64,
    pub large_bytes_in_use: u64,
    pub large_peak_bytes: u64,
    pub large_cache_hits: u64,
    /// Freed large mappings kept (with their pages) for reuse.
    pub large_cached_bytes: u64,
    /// Segments reserved from the OS, and slabs purged back to it.
    pub segments: u64,
    pub purged_slabs: u64,
    pub thread_caches: u64,
    /// The memory limit, if one is set ([`crate::Hopless::set_limit`]).
    pub limit: Option<usize>,
    /// What counts against the limit (whether or not one is set): the slabs lent to the size classes
    /// and the usable bytes of the large blocks in use.
    pub limit_held_bytes: u64,
    /// Requests the limit refused.
    pub limit_refusals: u64,
}

impl Default for Stats {
    fn default() -> Self {
        let mut classes = [ClassStats::default(); NUM_CLASSES];
        for (i, c) in classes.iter_mut().enumerate() {
            c.size = class_size(i);
        }
        Stats {
            classes,
            large_allocs: 0,
            large_frees: 0,
            large_bytes_in_use: 0,
            large_peak_bytes: 0,
            large_cache_hits: 0,
            large_cached_bytes: 0,
            segments: 0,
            purged_slabs: 0,
            thread_caches: 0,
            limit: None,
            limit_held_bytes: 0,
            limit_refusals: 0,
        }
    }
}

impl Stats {
    /// Bytes in use in all classes and large blocks.
    pub fn bytes_in_use(&self) -> u64 {
        self.classes.iter().map(|c| c.bytes_in_use).sum::<u64>() + self.large_bytes_in_use
    }

    /// A slabinfo-style table: one line per class that was ever used.
    pub fn write_slabinfo(&self, out: &mut impl fmt::Write) -> fmt::Result {
        writeln!(
            out,
            "{:>7} {:>12} {:>10} {:>12} {:>10} {:>9} {:>9} {:>6} {:>12} {:>12}",
            "class",
            "alloc_fast",
            "alloc_slow",
            "free_fast",
            "free_slow",
            "refills",
            "flushes",
            "slabs",
            "in_use_B",
            "peak_B"
        )?;
        for c in self
            .classes
            .iter()
            .filter(|c| c.alloc_fast + c.alloc_slow + c.slabs > 0)
        {
            writeln!(
                out,
                "{:>7} {:>12} {:>10} {:>12} {:>10} {:>9} {:>9} {:>6} {:>12} {:>12}",
                c.size,
                c.alloc_fast,
                c.alloc_slow,
                c.free_fast,
                c.free_slow,
                c.refills,
                c.flushes,
                c.slabs,
                c.bytes_in_use,
                c.peak_bytes
            )?;
        }
        writeln!(
            out,
            "large: {} allocs, {} frees, {} cache hits, {} B cached, {} B in use, {} B peak; {} segments, \
             {} slabs purged, {} thread caches",
            self.large_allocs,
            self.large_frees,
            self.large_cache_hits,
            self.large_cached_bytes,
            self.large_bytes_in_use,
            self.large_peak_bytes,
            self.segments,
            self.purged_slabs,
            self.thread_caches
        )?;
        if let Some(limit) = self.limit {
            writeln!(
                out,
                "limit: {} B, {} B held, {} requests refused",
                limit, self.limit_held_bytes, self.limit_refusals
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_slabinfo(f)
    }
}

/// Runs the statements only with the `stats` feature.
macro_rules! stat {
    ($($t:tt)*) => {
        #[cfg(feature = "stats")]
        {
            $($t)*
        }
    };
}
pub(crate) use stat;
