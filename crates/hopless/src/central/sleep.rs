//! Sleeping segments: a small segment whose every slab is clean gives back its slab headers too.
//!
//! A purge leaves a slab's slot decommitted, but its header stays in the segment's header area, which
//! was made resident when the segment was (every header is written then): 28 KiB a 4 MiB small
//! segment, 0.7% of what its slabs held, kept for good. After a burst of small blocks that is what stays
//! resident of it (3.5 MiB of a freed GiB). So once every slab of a segment is clean, the segment goes
//! to sleep: its slabs leave the clean list, the header pages past the first one (which holds the
//! segment header, the granule table and the first slabs' headers) are decommitted, and its first slab
//! stands for it on the pool's sleeping list. `get` wakes one when the dirty and clean lists are empty,
//! before it reserves a new segment: the headers are written as a new segment's are.
//!
//! What reads a sleeping segment's headers without the pool lock is a free of a pointer into it, which
//! no correct program makes (no block of it is out): it reads zero (`carved == 0`) from a decommitted
//! page and a stale pooled header from the first page, and both refuse every block. A medium segment's
//! headers fit its first page, and with 64 KiB pages so do a small segment's first ones: where a sleep
//! would give nothing back, segments do not sleep.

use core::ptr;

use super::pool::{PoolInner, SlabPool};
use super::purge::PURGE_BATCH;
use crate::platform::PageSource;
use crate::segment::{
    segment_of, slabs_of, SegmentHeader, Slab, SlabState, SEGMENT_SIZE, SLABS_OFFSET, SLAB_POOLED,
};

/// Segments put to sleep and woken, in every pool of the process (for tests).
#[cfg(test)]
pub static SLEPT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
#[cfg(test)]
pub static WOKEN: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

impl SlabPool {
    /// The header bytes a sleep decommits: from the first OS page boundary past the first slab's header
    /// (which stands for the sleeping segment) to the end of the page that holds the last one. Empty
    /// where the headers fit that page.
    fn sleep_range(&self) -> (usize, usize) {
        let page = crate::platform::os_page_size();
        let header = core::mem::size_of::<Slab>();
        let slots = SEGMENT_SIZE >> self.slab_shift();
        let from = (SLABS_OFFSET + (self.first_slot() + 1) * header).next_multiple_of(page);
        let to = (SLABS_OFFSET + slots * header).next_multiple_of(page);
        (from, to)
    }

    /// Takes off the clean list every slab of each segment of `slabs` whose slabs are now all clean,
    /// and collects the segments' first slabs in `out` (how many it returns). They sleep once
    /// [`SlabPool::put_to_sleep`] has decommitted their headers.
    ///
    /// # Safety
    ///
    /// `g` is this pool's locked inner state; `slabs` are slabs of this pool just filed clean, sorted by
    /// address (so each segment's are together).
    pub(super) unsafe fn take_sleepers(
        &self,
        g: &mut PoolInner,
        slabs: &[*mut Slab],
        out: &mut [*mut Slab; PURGE_BATCH],
    ) -> usize {
        let (from, to) = self.sleep_range();
        if from >= to {
            return 0;
        }
        let slots = SEGMENT_SIZE >> self.slab_shift();
        let mut n = 0;
        let mut last = ptr::null_mut::<SegmentHeader>();
        for &s in slabs {
            // SAFETY: per the caller, `s` is a clean slab of this pool: `start` is its slot's first
            // byte, fixed for the segment's life.
            let seg = segment_of(unsafe { (*s).start });
            if seg == last {
                continue;
            }
            last = seg;
            // SAFETY: `seg` is a live small or medium segment of this pool (segments are never
            // released while their pool lives); `first_slot` is fixed at its creation.
            let first = unsafe { (*seg).first_slot } as usize;
            let headers = slabs_of(seg);
            // SAFETY: the count is written only under the pool lock, held (per the caller).
            let all_clean = unsafe { (*seg).clean } as usize == slots - first;
            let Some(slot) = out.get_mut(n) else {
                break;
            };
            if !all_clean {
                continue;
            }
            for i in first..slots {
                // SAFETY: every slab of the segment is on the clean list (its count says so: every
                // filing and taking of a clean slab moves it under the pool lock, held).
                unsafe { g.clean.remove(headers.add(i)) };
            }
            // SAFETY: as above.
            unsafe { (*seg).clean = 0 };
            // SAFETY: `first` is a slab of the segment; off every list now, it is ours until it sleeps.
            let stand_in = unsafe { headers.add(first) };
            // SAFETY: as above.
            unsafe { (*stand_in).state = SlabState::Asleep };
            *slot = stand_in;
            n += 1;
        }
        n
    }

    /// Decommits the header pages of the segments [`SlabPool::take_sleepers`] took (by their first
    /// slabs), then files them on the sleeping list. The caller holds no lock.
    ///
    /// # Safety
    ///
    /// Each slab came from `take_sleepers` of this pool and is named once.
    pub(super) unsafe fn put_to_sleep<P: PageSource>(&self, source: &P, sleepers: &[*mut Slab]) {
        let (from, to) = self.sleep_range();
        for &s in sleepers {
            // SAFETY: per the caller, `s` is the first slab of a small segment of this pool whose slabs
            // are on no list and belong to nobody: only this thread touches their headers. `from..to`
            // lies in the segment's header area, past its first page; what it holds is slab headers,
            // all of them written again by `wake` before any is used.
            unsafe {
                let seg = segment_of((*s).start);
                source.decommit(seg.cast::<u8>().add(from), to - from);
            }
        }
        #[cfg(test)]
        SLEPT.fetch_add(sleepers.len(), core::sync::atomic::Ordering::Relaxed);
        let mut g = self.inner.lock();
        for &s in sleepers {
            // SAFETY: pool lock held; `s` is on no list, and its header is on the segment's first page,
            // which the decommit left.
            unsafe { g.sleeping.push_front(s) };
        }
    }

    /// Wakes the sleeping segment `sleeper` stands for: its headers written as a new segment's; returns
    /// its first slab.
    ///
    /// # Safety
    ///
    /// `sleeper` was just taken off this pool's sleeping list.
    pub(super) unsafe fn wake(&self, sleeper: *mut Slab) -> *mut Slab {
        #[cfg(test)]
        WOKEN.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        // SAFETY: off the sleeping list, the segment and all its slabs are ours; its segment header and
        // granule table are as they were made, and `start` of its first slab is on its first page.
        unsafe { self.carve(segment_of((*sleeper).start)) }
    }

    /// Writes the slab headers of `seg` as a new segment's (every slab clean), files all but the
    /// first on the clean list and returns the first.
    ///
    /// # Safety
    ///
    /// `seg` is a small or medium segment of this pool, new (zeroed past its segment header and granule
    /// table) or taken off the sleeping list; none of its slabs is on a list or belongs to anyone.
    pub(super) unsafe fn carve(&self, seg: *mut SegmentHeader) -> *mut Slab {
        let shift = self.slab_shift();
        let slots = SEGMENT_SIZE >> shift;
        // SAFETY: per the caller, the segment header is written and fixed.
        let first = unsafe { (*seg).first_slot } as usize;
        let slabs = slabs_of(seg);
        for slot in first..slots {
            // SAFETY: per the caller, the headers are ours alone; zeroing one sets every field as a new
            // segment's (a sleeping segment's headers on its first page still hold their pooled state).
            // The first is handed out, so it is not filed clean.
            unsafe {
                let s = slabs.add(slot);
                ptr::write_bytes(s, 0, 1);
                (&raw mut (*s).magic).write(SLAB_POOLED);
                let state = if slot == first {
                    SlabState::Pooled
                } else {
                    SlabState::Clean
                };
                (&raw mut (*s).state).write(state);
                (&raw mut (*s).start).write(seg.cast::<u8>().add(slot << shift));
            }
        }
        let mut g = self.inner.lock();
        // Hand out the lowest slot; queue the rest so lower addresses go first.
        for slot in (first + 1..slots).rev() {
            // SAFETY: pool lock held; each header was written above and is on no list.
            unsafe { g.clean.push_front(slabs.add(slot)) };
        }
        // SAFETY: the count is written only under the pool lock, held; the segment is ours (per the
        // caller) until its slabs are on the list.
        unsafe { (*seg).clean = (slots - first - 1) as u16 };
        // SAFETY: `first < slots`: the header area is smaller than a segment.
        unsafe { slabs.add(first) }
    }
}
