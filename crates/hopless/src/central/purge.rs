//! A pool's slabs back to the OS: the slabs the pool's lists hand over (`put`, `take_expired`,
//! `take_dirty`, `take_clean`) are decommitted with no lock held, sorted so that neighbouring slots go in
//! one call, then filed as clean. Each segment records which of its huge pages its purges left already
//! ([`leave_huge_once`]), so that the advice, which takes the process's memory-map lock, is given once.

use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

use super::pool::SlabPool;
use crate::platform::PageSource;
use crate::segment::{segment_of, SegmentHeader, Slab, SlabState, HEADER_AREA, SEGMENT_SIZE};

/// The most slabs [`SlabPool::purge_up_to`] purges at once: a stack array of pointers.
pub const PURGE_BATCH: usize = 64;

/// The huge-page epoch: bumped after [`SlabPool::advise_huge_all`] has given existing segments the
/// huge-page advice again, which undoes the `MADV_NOHUGEPAGE` their purges left. A segment's
/// `left_huge` record counts only under the epoch it was made in (see [`leave_huge_once`]).
pub static HUGE_EPOCH: AtomicU32 = AtomicU32::new(0);

impl SlabPool {
    /// Purges up to `max` dirty slabs that waited out the delay or stand beyond the first `cap`
    /// ([`SlabPool::purge_up_to`]); the caller holds no lock.
    pub fn purge_expired<P: PageSource>(&self, source: &P, keep_last_page: bool, max: usize, cap: usize) {
        // SAFETY: `take_expired` hands over slabs of this pool to purge; the caller holds no lock.
        unsafe { self.purge_up_to(source, keep_last_page, max, || self.take_expired(cap)) };
    }

    /// Takes slabs with `take` until it answers null or `max` were taken, and purges them in batches of
    /// up to [`PURGE_BATCH`] ([`SlabPool::purge_all`]); returns how many.
    ///
    /// # Safety
    ///
    /// `take` hands over slabs of this pool to purge (`take_expired`, `take_dirty`, `take_clean`), each
    /// once; the caller holds no lock.
    pub unsafe fn purge_up_to<P: PageSource>(
        &self,
        source: &P,
        keep_last_page: bool,
        max: usize,
        mut take: impl FnMut() -> *mut Slab,
    ) -> usize {
        let mut done = 0;
        while done < max {
            let mut batch = [ptr::null_mut::<Slab>(); PURGE_BATCH];
            let mut n = 0;
            for slot in batch.iter_mut().take(max - done) {
                let v = take();
                if v.is_null() {
                    break;
                }
                *slot = v;
                n += 1;
            }
            if n == 0 {
                break;
            }
            // SAFETY: per the caller, the first `n` were handed over to purge, each once.
            unsafe { self.purge_all(source, batch.get_mut(..n).unwrap_or_default(), keep_last_page) };
            done += n;
            if n < PURGE_BATCH {
                // `take` answered null, or `max` is reached.
                break;
            }
        }
        done
    }

    /// Purges a slab [`SlabPool::put`] handed back, then files it as clean.
    ///
    /// # Safety
    ///
    /// `s` came from `put`, `take_expired` or `take_dirty` of this pool and has not been purged yet. `keep_last_page`:
    /// hardened mode, where the slot's last 8 bytes are the guard word of the next slot's first block.
    pub unsafe fn purge<P: PageSource>(&self, source: &P, s: *mut Slab, keep_last_page: bool) {
        // SAFETY: per the caller.
        unsafe { self.purge_all(source, &mut [s], keep_last_page) }
    }

    /// Purges slabs [`SlabPool::put`], `take_expired`, `take_dirty` or `take_clean` handed over, then
    /// files them as clean under one lock. Sorted by address first: a run of slots next to each other in
    /// one segment (a trim's or an emptied segment's, often a whole segment) leaves huge pages and is
    /// decommitted with one call each, not two calls a slab (slab by slab, a trim of 330 MB of 100-byte
    /// blocks would make 31 000 `madvise` calls). In hardened mode each slot keeps its last page, so
    /// slots are not joined.
    ///
    /// # Safety
    ///
    /// Each slab came from one of those calls of this pool, is not purged yet, and is named once.
    pub unsafe fn purge_all<P: PageSource>(&self, source: &P, slabs: &mut [*mut Slab], keep_last_page: bool) {
        let slot = self.slot_size();
        let keep = if keep_last_page {
            crate::platform::PAGE_SIZE
        } else {
            0
        };
        // SAFETY: each slab, in state Purging, is on no list and belongs to nobody: only this thread
        // touches it and its memory (the caller's contract), and `start` of a pooled slab is its slot's
        // first byte, fixed for the segment's life.
        unsafe { sort_by_start(slabs) };
        let mut rest = &*slabs;
        while let Some((&first, _)) = rest.split_first() {
            // SAFETY: as above.
            let start = unsafe { (*first).start };
            let seg = segment_of(start);
            // The run: the slabs whose slots follow each other from `first`'s, in its segment.
            let mut n = 1;
            while keep == 0
                && rest.get(n).is_some_and(|&s| {
                    // SAFETY: as above.
                    let a = unsafe { (*s).start };
                    segment_of(a) == seg && a.addr() == start.addr() + n * slot
                })
            {
                n += 1;
            }
            let len = n * slot - keep;
            // SAFETY: the run's slots are `n` consecutive slots of `seg` (checked above; one slot when
            // `keep` is not 0), so `start..start + len` lies in the segment, which is one whole
            // reservation of `SEGMENT_SIZE` bytes that `get` made from `source` (segments are never
            // released while their pool lives); nothing uses the slots' memory (the slabs are ours).
            unsafe {
                if leave_huge_once(source, seg, start, len) & 1 != 0 {
                    decommit_header_tail(source, seg, slot, keep);
                }
                source.decommit(start, len);
            }
            rest = rest.get(n..).unwrap_or_default();
        }
        let mut sleepers = [ptr::null_mut::<Slab>(); PURGE_BATCH];
        let n = {
            let mut g = self.inner.lock();
            g.purged += slabs.len() as u64;
            for &s in slabs.iter() {
                // SAFETY: pool lock held; `s` is ours and on no list (as above); its segment is a live
                // one of this pool, whose count the pool lock covers.
                unsafe {
                    (*s).state = SlabState::Clean;
                    g.clean.push_front(s);
                    (*segment_of((*s).start)).clean += 1;
                }
            }
            // SAFETY: pool lock held (`g`); the slabs were just filed clean, sorted by address above.
            unsafe { self.take_sleepers(&mut g, slabs, &mut sleepers) }
        };
        // SAFETY: the first `n` came from `take_sleepers` just now, each once; no lock is held.
        unsafe { self.put_to_sleep(source, sleepers.get(..n).unwrap_or_default()) };
    }

    /// Gives every segment of this pool reserved so far the huge-page advice for what it holds (see
    /// [`PageSource::dense_mark_passed`]), then bumps [`HUGE_EPOCH`]: the advice undid what purges
    /// left, so their records no longer count.
    pub fn advise_huge_all<P: PageSource>(&self, source: &P) {
        let mut seg = self.inner.lock().all;
        while !seg.is_null() {
            // SAFETY: segments are never released while their pool lives, and a segment's `next` is
            // written once, under the pool lock, before the segment is linked at the head (read above
            // under that lock): each link followed here is a live segment's, final. The segment is one
            // whole reservation of `SEGMENT_SIZE` bytes from `source`.
            unsafe {
                source.advise_huge(seg.cast(), SEGMENT_SIZE, self.holds);
                seg = (*seg).next;
            }
        }
        // After every advice above (Release: a purge that reads the new epoch makes its own advice
        // after them).
        HUGE_EPOCH.fetch_add(1, Ordering::Release);
    }
}

/// Leaves huge pages for `start..start + len` in `seg` ([`PageSource::leave_huge`]), unless every huge
/// page the range touches was left already under the current [`HUGE_EPOCH`] (the segment's
/// `left_huge`): `MADV_NOHUGEPAGE` takes the process's memory-map lock for writing, which every page
/// fault of every thread waits on, and a segment's purges would otherwise repeat it for each of the 32
/// small slabs a huge page holds.
///
/// Why a record can be trusted: it is written after the advice it records, under the epoch read before
/// that advice. The only advice that undoes `MADV_NOHUGEPAGE` on a segment in use is
/// [`SlabPool::advise_huge_all`]'s (a segment's own, at its creation, comes before any slab of it
/// exists), and the epoch moves on after it. A purge that read the old epoch made a record that stops
/// counting when it moves; one that read the new epoch made its advice after `advise_huge_all`'s. A
/// record written under an old epoch over a newer one loses nothing but the newer bits (those huge pages
/// are advised again by the next purge that touches them).
///
/// Returns the huge pages it left now and recorded (bit `i`: the segment's `i`-th), 0 when it gave no
/// advice or the source gives none.
///
/// # Safety
///
/// As for [`PageSource::leave_huge`]: `seg` is a small or medium segment of `source`, one whole
/// reservation of `SEGMENT_SIZE` bytes, and `start..start + len` lies in it.
unsafe fn leave_huge_once<P: PageSource>(
    source: &P,
    seg: *mut SegmentHeader,
    start: *mut u8,
    len: usize,
) -> u64 {
    let huge = crate::platform::huge_page_size();
    let from = start.addr() - seg.addr();
    let (first, last) = (from / huge, (from + len).div_ceil(huge));
    // Only where one bit a huge page fits (a 4 MiB segment holds 2 of 2 MiB; with 64 KiB base pages a
    // huge page is 512 MiB and the source leaves nothing anyway).
    let bits = if last <= 32 && first < last {
        ((1u64 << last) - 1) & !((1u64 << first) - 1)
    } else {
        0
    };
    let epoch = u64::from(HUGE_EPOCH.load(Ordering::Acquire));
    // SAFETY: per the caller, `seg` is a live segment header (headers are never unmapped while the
    // pool lives); `left_huge` is an atomic.
    let record = unsafe { &(*seg).left_huge };
    let seen = record.load(Ordering::Acquire);
    if bits != 0 && seen >> 32 == epoch && seen & bits == bits {
        return 0;
    }
    // Recorded only where the source gives advice at all (once it has advised any huge pages, it
    // does for good); read before the call, so a record never stands for a call that did nothing.
    let advising = source.huge_pages_used();
    // SAFETY: per the caller.
    unsafe { source.leave_huge(seg.cast(), SEGMENT_SIZE, start, len) };
    if bits == 0 || !advising {
        return 0;
    }
    let _ = record.fetch_update(Ordering::Release, Ordering::Relaxed, |cur| {
        Some(if cur >> 32 == epoch {
            cur | bits
        } else {
            epoch << 32 | bits
        })
    });
    bits
}

/// Decommits the part of a segment's first slot past its header area ([`HEADER_AREA`]), which holds
/// nothing: a huge page made it resident with the slabs beside it, and leaving that huge page keeps it
/// resident as small pages (36 KiB a small segment, 484 KiB a medium one) unless it goes too. Rounded to
/// the kernel's pages (with 64 KiB pages a small segment has no such part). `keep` bytes at its end
/// stay: in hardened mode they hold the guard word of the first slab's first block.
///
/// # Safety
///
/// `seg` is a small or medium segment of `source` whose slots are `slot` bytes, one whole reservation
/// of `SEGMENT_SIZE` bytes.
unsafe fn decommit_header_tail<P: PageSource>(source: &P, seg: *mut SegmentHeader, slot: usize, keep: usize) {
    let page = crate::platform::os_page_size();
    let from = HEADER_AREA.next_multiple_of(page);
    let end = (HEADER_AREA.div_ceil(slot) * slot).saturating_sub(keep) / page * page;
    if from < end {
        // SAFETY: `from..end` lies in the segment's first slots, below its first slab slot (`get`
        // starts the slabs at `HEADER_AREA.div_ceil(slot)`) less `keep`, past the header area: nothing
        // is stored there (hardened mode's guard word is in the `keep` bytes), and nothing reads it.
        unsafe { source.decommit(seg.cast::<u8>().add(from), end - from) };
    }
}

/// Sorts slabs by their slots' addresses: an insertion sort, for the at most [`PURGE_BATCH`] slabs a
/// purge is given (core's sort would bring its panic on an inconsistent order into the library, which
/// `scripts/check/no_panic.sh` refuses).
///
/// # Safety
///
/// Every pointer is a slab header whose `start` may be read.
unsafe fn sort_by_start(slabs: &mut [*mut Slab]) {
    for i in 1..slabs.len() {
        let mut j = i;
        while j > 0 {
            let Some([a, b]) = slabs.get_mut(j - 1..=j) else {
                break;
            };
            // SAFETY: per the caller.
            if unsafe { (**a).start.addr() <= (**b).start.addr() } {
                break;
            }
            core::mem::swap(a, b);
            j -= 1;
        }
    }
}
