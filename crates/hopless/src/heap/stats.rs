//! A snapshot of the heap's counters, read without stopping other threads.

use super::Heap;
use crate::cache::ThreadCache;
use crate::platform::PageSource;
use crate::segment::Slab;
use crate::size_class::{class_size, NUM_CLASSES};
use core::sync::atomic::Ordering;

impl<P: PageSource> Heap<P> {
    /// A snapshot of every counter. Thread counters and magazines are read without stopping their
    /// threads, and each lock is held only while its own counters are read: a snapshot taken while
    /// threads allocate is a moment old and not of one instant, never torn within a counter.
    pub fn stats(&self) -> crate::stats::Stats {
        let mut st = crate::stats::Stats::default();
        let mut outstanding = [0i64; NUM_CLASSES];
        let mut peak = [0i64; NUM_CLASSES];
        for (class, c) in st.classes.iter_mut().enumerate() {
            let slot = self.pool(class).slot_size();
            let g = self.class(class).inner.lock();
            c.refills = g.counters.refills;
            c.flushes = g.counters.flushes;
            c.slabs = u64::from(g.slabs);
            c.slab_bytes = c.slabs * slot as u64;
            c.capacity_blocks = c.slabs * u64::from(Slab::capacity_for(class, slot));
            if let (Some(o), Some(p)) = (outstanding.get_mut(class), peak.get_mut(class)) {
                *o = g.counters.outstanding;
                *p = g.counters.peak_outstanding;
            }
        }
        {
            let g = self.caches.lock();
            st.thread_caches = g.made;
            // What threads moved through the slabs they own (no class lock): added to the class's.
            // And what live threads' magazines hold: a parked cache's are empty (its thread's exit
            // flushed them), and a class without slabs has no block anywhere, so its magazines (each
            // on its own page, most never touched) are not read.
            let mut tc = g.all;
            while !tc.is_null() {
                // SAFETY: caches on the `all` list stay mapped while the registry lock is held; the
                // owned counters are atomics, and `count_seen` reads a magazine's count through one.
                unsafe {
                    let live = (*tc).live.load(Ordering::Relaxed);
                    for (class, c) in st.classes.iter_mut().enumerate() {
                        let (Some(k), Some(o)) = ((*tc).owned.get(class), outstanding.get_mut(class)) else {
                            continue;
                        };
                        c.refills += k.refills.load(Ordering::Relaxed);
                        c.flushes += k.flushes.load(Ordering::Relaxed);
                        *o = o.wrapping_add(k.outstanding.load(Ordering::Relaxed));
                        if live && c.slabs > 0 {
                            c.cached_blocks += ThreadCache::count_seen(tc, class) as u64;
                        }
                    }
                    tc = (*tc).next_all;
                }
            }
            // Blocks out of their slabs now; the class's own peak (at its refills) is a floor for the
            // peak, which owned refills do not track.
            for (class, c) in st.classes.iter_mut().enumerate() {
                let (o, p) = (
                    outstanding.get(class).copied().unwrap_or(0),
                    peak.get(class).copied().unwrap_or(0),
                );
                c.outstanding_blocks = o.max(0) as u64;
                c.peak_bytes = p.max(o).max(0) as u64 * class_size(class) as u64;
            }
            #[cfg(feature = "stats")]
            {
                let mut tc = g.all;
                while !tc.is_null() {
                    // SAFETY: caches on the `all` list are never freed; counters are atomics.
                    unsafe {
                        for (class, c) in st.classes.iter_mut().enumerate() {
                            let k = &(*tc).counters[class];
                            c.alloc_fast += k.alloc_fast.get();
                            c.alloc_slow += k.alloc_slow.get();
                            c.free_fast += k.free_fast.get();
                            c.free_slow += k.free_slow.get();
                        }
                        tc = (*tc).next_all;
                    }
                }
            }
        }
        for (class, c) in st.classes.iter_mut().enumerate() {
            // A refill counts as one slow alloc that moved a batch; frees mirror that.
            let allocs = c.alloc_fast + c.alloc_slow;
            let frees = c.free_fast + c.free_slow;
            c.bytes_in_use = allocs.saturating_sub(frees) * class_size(class) as u64;
        }
        self.large.with_counters(|l| {
            st.large_allocs = l.allocs;
            st.large_frees = l.frees;
            st.large_cache_hits = l.hits;
            st.large_cached_bytes = l.cached_bytes() as u64;
            st.large_bytes_in_use = l.bytes_in_use;
            st.large_peak_bytes = l.peak_bytes;
            st.large_peak_blocks = l.peak_blocks;
        });
        for pool in self.pools() {
            let g = pool.inner.lock();
            st.segments += g.segments;
            st.purged_slabs += g.purged;
            st.free_slab_bytes += (g.dirty.len * pool.slot_size()) as u64;
        }
        st.limit = Some(crate::limit::get()).filter(|&l| l != crate::limit::NONE);
        st.limit_held_bytes = crate::limit::held() as u64;
        st.limit_refusals = crate::limit::refused();
        st
    }
}

#[cfg(test)]
impl<P: PageSource> Heap<P> {
    /// The large cache's counters, to drive its budget in tests.
    pub(crate) fn large_counters_for_test<R>(&self, f: impl FnOnce(&mut crate::large::LargeInner) -> R) -> R {
        self.large.with_counters_mut(f)
    }
}
