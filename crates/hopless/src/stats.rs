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
    /// Slabs this class holds now, and their bytes.
    pub slabs: u64,
    pub slab_bytes: u64,
    /// Blocks those slabs hold in all, free or not.
    pub capacity_blocks: u64,
    /// Blocks outside their slabs now: in use, or cached in a thread's magazine.
    pub outstanding_blocks: u64,
    /// Of those, the blocks in live threads' magazines, read without stopping the threads (each count
    /// is a moment old, and the sum is not taken at one instant).
    pub cached_blocks: u64,
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
    /// The most large blocks in use at once.
    pub large_peak_blocks: u64,
    pub large_cache_hits: u64,
    /// Freed large mappings kept (with their pages) for reuse.
    pub large_cached_bytes: u64,
    /// Free slabs the pools keep resident (touched since last purged, waiting out the purge delay).
    pub free_slab_bytes: u64,
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
            large_peak_blocks: 0,
            large_cache_hits: 0,
            large_cached_bytes: 0,
            free_slab_bytes: 0,
            segments: 0,
            purged_slabs: 0,
            thread_caches: 0,
            limit: None,
            limit_held_bytes: 0,
            limit_refusals: 0,
        }
    }
}

impl ClassStats {
    /// Blocks handed to the program and not freed: out of their slabs and in no magazine. From the
    /// slabs' counts, so without the `stats` feature too.
    pub fn blocks_in_use(&self) -> u64 {
        self.outstanding_blocks.saturating_sub(self.cached_blocks)
    }

    /// Blocks free in the class's slabs (not counting those in magazines).
    pub fn free_blocks(&self) -> u64 {
        self.capacity_blocks.saturating_sub(self.outstanding_blocks)
    }
}

impl Stats {
    /// Bytes in use in all classes and large blocks, from the per-thread counters: zero in the classes
    /// without the `stats` feature ([`Stats::bytes_handed_out`] counts them always).
    pub fn bytes_in_use(&self) -> u64 {
        self.classes.iter().map(|c| c.bytes_in_use).sum::<u64>() + self.large_bytes_in_use
    }

    /// Bytes of the blocks handed to the program and not freed, small, medium and large (from the slabs'
    /// counts, less what the magazines hold; every build).
    pub fn bytes_handed_out(&self) -> u64 {
        self.classes
            .iter()
            .map(|c| c.blocks_in_use() * c.size as u64)
            .sum::<u64>()
            + self.large_bytes_in_use
    }

    /// Bytes of the blocks cached in threads' magazines.
    pub fn magazine_bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.cached_blocks * c.size as u64).sum()
    }

    /// Bytes of the slabs the classes hold (blocks in use, free, in magazines, and each slab's tail too
    /// short for a block).
    pub fn slab_bytes(&self) -> u64 {
        self.classes.iter().map(|c| c.slab_bytes).sum()
    }

    /// Bytes hopless holds for blocks: the classes' slabs, the pools' free resident slabs, large blocks
    /// in use and the free large pages it keeps. At least [`Stats::bytes_handed_out`] (the counts are
    /// read one after another, so a snapshot taken while threads allocate can be off by what moved
    /// meanwhile; [`Stats::bytes_held_free`] never goes below zero).
    pub fn bytes_held(&self) -> u64 {
        self.slab_bytes() + self.free_slab_bytes + self.large_bytes_in_use + self.large_cached_bytes
    }

    /// Bytes held and not handed out: free slab space, magazines, free slabs, cached large pages.
    pub fn bytes_held_free(&self) -> u64 {
        self.bytes_held().saturating_sub(self.bytes_handed_out())
    }

    /// Large blocks in use now.
    pub fn large_blocks_in_use(&self) -> u64 {
        self.large_allocs.saturating_sub(self.large_frees)
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
        writeln!(
            out,
            "held: {} B (slabs {} B, free slabs {} B, large {} B in use and {} B cached); {} B handed out, \
             {} B in magazines",
            self.bytes_held(),
            self.slab_bytes(),
            self.free_slab_bytes,
            self.large_bytes_in_use,
            self.large_cached_bytes,
            self.bytes_handed_out(),
            self.magazine_bytes()
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
