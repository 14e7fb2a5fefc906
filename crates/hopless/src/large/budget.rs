//! The retention budget: how much free large memory stays resident (a quarter more than the most in
//! use over the last [`RETAIN_MS`], plus what of that is free now), and giving back the excess in
//! batches: cached mappings first, then purged arena slices.

use core::ptr;
use core::sync::atomic::Ordering;

use super::arena::{self, Arena, SLICE};
use super::mapped::Evicted;
use super::state::*;
use crate::platform::PageSource;
use crate::segment::SEGMENT_SIZE;

/// What the cache may hold when at most `recent` bytes of large blocks were live over the last
/// [`RETAIN_MS`] (counting the one being freed) and `in_use` are live now: a quarter more than
/// `recent` (so a lone block's mapping, header page included, fits), plus what was in use then and is
/// free now, within [`CACHE_MIN_BYTES`]..=[`CACHE_MAX_BYTES`].
///
/// So the budget bounds the footprint, blocks in use and free memory together, by what it may have
/// been at the recent peak (2.25 times `recent`), rather than bounding the free memory alone. A
/// program that frees its blocks and allocates them again at once (the next phase of a batch job) finds
/// the holes that were between its blocks resident too. With the free memory alone bounded by a
/// quarter over `recent`, freeing every block of `large-churn` (32 blocks of 256 KiB to 8 MiB) would
/// purge some of them, and each run after would fault about 2 000 pages in again (none with this
/// bound).
#[inline]
pub(super) fn budget(recent: u64, in_use: u64) -> usize {
    let b = recent
        .saturating_add(recent / 4)
        .saturating_add(recent.saturating_sub(in_use));
    (b.min(CACHE_MAX_BYTES as u64) as usize).max(CACHE_MIN_BYTES)
}

impl LargeInner {
    /// Evicts the oldest cached mappings, then takes free dirty arena slices out to purge, until what is
    /// kept fits in `room` bytes (or `purge` is full).
    pub(super) fn trim_to(&mut self, room: usize, evicted: &mut Evicted, purge: &mut Purge) {
        while self.n > 0 && self.cached_bytes() > room {
            evicted.push(self.remove(0));
        }
        while self.cached_bytes() > room && !purge.is_full() {
            let want = (self.cached_bytes() - room).div_ceil(SLICE);
            let Some(run) = self.take_purge(want) else {
                break;
            };
            purge.push(run);
        }
    }

    /// Takes a run of at most `max` free dirty slices out to purge, from the emptiest arena that has one.
    pub(super) fn take_purge(&mut self, max: usize) -> Option<Run> {
        let mut pick: *mut Arena = ptr::null_mut();
        let mut a = self.arenas;
        while !a.is_null() {
            // SAFETY: listed arenas are live; the lock is held.
            unsafe {
                if (*a).dirty_free > 0 && (pick.is_null() || (*a).free_slices > (*pick).free_slices) {
                    pick = a;
                }
                a = (*a).next;
            }
        }
        if pick.is_null() {
            return None;
        }
        // SAFETY: a listed arena, under the lock.
        let (s, n) = unsafe { arena::take_purge(pick, max) }?;
        Some(Run {
            arena: pick,
            start: s,
            len: n,
        })
    }

    pub(super) fn count_alloc(&mut self, usable: usize, hit: bool) {
        self.allocs = self.allocs.wrapping_add(1);
        self.hits = self.hits.wrapping_add(u64::from(hit));
        self.bytes_in_use = self.bytes_in_use.wrapping_add(usable as u64);
        self.peak_bytes = self.peak_bytes.max(self.bytes_in_use);
        self.peak_blocks = self.peak_blocks.max(self.allocs.wrapping_sub(self.frees));
        self.window_peak = self.window_peak.max(self.bytes_in_use);
    }

    /// What the budget follows at time `now` (ms): the most large bytes in use in the current window of
    /// [`RETAIN_MS`] and the one before it (a window older than that is forgotten).
    pub fn recent_in_use(&mut self, now: u64) -> u64 {
        let age = now.wrapping_sub(self.window_at);
        if age >= RETAIN_MS {
            self.prev_peak = if age < 2 * RETAIN_MS { self.window_peak } else { 0 };
            self.window_peak = self.bytes_in_use;
            self.window_at = now;
        }
        self.bytes_in_use.max(self.window_peak).max(self.prev_peak)
    }

    pub(super) fn count_free(&mut self, usable: usize) {
        self.frees = self.frees.wrapping_add(1);
        self.bytes_in_use = self.bytes_in_use.saturating_sub(usable as u64);
    }
}

impl LargeCache {
    /// The small and medium pools have reserved `segments` segments in all. For each one reserved since
    /// the last call, the cache gives back one segment's worth of its oldest mappings: freed large
    /// blocks make way for the small heap's growth instead of sitting resident beside it.
    #[inline]
    pub fn slab_segments<P: PageSource>(&self, source: &P, segments: usize) {
        let seen = self.slab_segments_seen.load(Ordering::Relaxed);
        if seen != segments
            && self
                .slab_segments_seen
                .compare_exchange(seen, segments, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.shed(source, segments.wrapping_sub(seen).saturating_mul(SEGMENT_SIZE));
        }
    }

    /// Gives back at least `bytes` of kept free memory (or all): the oldest cached mappings are unmapped,
    /// then free arena slices purged.
    #[cold]
    #[inline(never)]
    pub(super) fn shed<P: PageSource>(&self, source: &P, bytes: usize) {
        let mut evicted = Evicted::new();
        let mut freed = 0usize;
        {
            let mut g = self.inner.lock();
            while g.n > 0 && freed < bytes {
                let e = g.remove(0);
                freed = freed.saturating_add(e.len);
                evicted.push(e);
            }
        }
        // SAFETY: evicted mappings are whole reservations that nobody references any more.
        unsafe { evicted.release(source) };
        while freed < bytes {
            let mut purge = Purge::new();
            {
                let mut g = self.inner.lock();
                while freed < bytes && !purge.is_full() {
                    let Some(run) = g.take_purge((bytes - freed).div_ceil(SLICE)) else {
                        break;
                    };
                    freed = freed.saturating_add(run.len * SLICE);
                    purge.push(run);
                }
            }
            if purge.n == 0 {
                break;
            }
            // SAFETY: the runs were taken out of their arenas' free sets under the lock.
            unsafe { purge.finish(self, source) };
        }
    }
}

/// A run of free arena slices taken out to purge.
#[derive(Clone, Copy)]
pub(super) struct Run {
    pub(super) arena: *mut Arena,
    pub(super) start: usize,
    pub(super) len: usize,
}

pub(super) const PURGE_RUNS: usize = 16;

/// Runs taken out of their arenas under the lock, to purge once it is released and give back clean.
pub(super) struct Purge {
    pub(super) runs: [Run; PURGE_RUNS],
    pub(super) n: usize,
}

impl Purge {
    pub(super) const fn new() -> Self {
        Purge {
            runs: [Run {
                arena: ptr::null_mut(),
                start: 0,
                len: 0,
            }; PURGE_RUNS],
            n: 0,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.n >= PURGE_RUNS
    }

    pub(super) fn push(&mut self, r: Run) {
        if let Some(slot) = self.runs.get_mut(self.n) {
            *slot = r;
            self.n += 1;
        }
    }

    /// Decommits the runs (no lock held), then gives them back clean and unmaps arenas left unused.
    ///
    /// # Safety
    ///
    /// Every run was taken out of a listed arena of `cache` with `take_purge`, and not yet given back.
    pub(super) unsafe fn finish<P: PageSource>(&mut self, cache: &LargeCache, source: &P) {
        if self.n == 0 {
            return;
        }
        for r in self.runs.iter().take(self.n) {
            // SAFETY: per the caller, nobody else may use the run's slices until they are given back;
            // the arena is one whole reservation of `ARENA_SIZE` bytes from `source` (`arena::create`).
            unsafe {
                let (span, len) = (arena::span_at(r.arena, r.start).cast::<u8>(), r.len * SLICE);
                source.leave_huge(r.arena.cast(), arena::ARENA_SIZE, span, len);
                source.decommit(span, len);
            }
        }
        let mut unused = [ptr::null_mut::<Arena>(); PURGE_RUNS];
        {
            let mut g = cache.inner.lock();
            for (r, u) in self.runs.iter().take(self.n).zip(unused.iter_mut()) {
                // SAFETY: per the caller; the arena stays listed while a run of it is out.
                unsafe { arena::return_purged(r.arena, r.start, r.len) };
                *u = g.unlink_if_unused(r.arena);
            }
        }
        for &u in unused.iter().filter(|u| !u.is_null()) {
            // SAFETY: unlinked under the lock: empty, on no list.
            unsafe { arena::release(source, u) };
        }
        self.n = 0;
    }
}
