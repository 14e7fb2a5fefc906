//! Large blocks as arena spans: taking a run of free slices, giving it back (coalescing), growing and
//! shrinking in place, and releasing arenas left empty.

use core::ptr;

use super::arena::{self, Arena, MAX_SPAN, SLICE};
use super::budget::{budget, Purge};
use super::mapped::Evicted;
use super::state::*;
use crate::platform::{now_ms, PageSource};
use crate::segment::SegmentHeader;

impl LargeInner {
    /// Takes a free run of `n` slices as a span in use, in the oldest arena where it faults in the fewest
    /// clean slices (see [`arena::first_fit`]): (arena, start slice, how many bytes from the span's start
    /// may be non-zero).
    pub(super) fn arena_take(&mut self, n: usize) -> Option<(*mut Arena, usize, usize)> {
        let mut best: Option<(*mut Arena, usize, usize)> = None;
        let mut a = self.arenas;
        while !a.is_null() {
            // SAFETY: the arenas on the list are live and, under the lock, ours to read.
            unsafe {
                if (*a).free_slices >= n {
                    if let Some((s, clean)) = arena::first_fit(a, n) {
                        if best.is_none_or(|(_, _, c)| clean < c) {
                            best = Some((a, s, clean));
                            if clean == 0 {
                                break;
                            }
                        }
                    }
                }
                a = (*a).next;
            }
        }
        let (a, s, _) = best?;
        // SAFETY: a listed arena; the run is free.
        let dirty = unsafe { arena::take(a, s, n) };
        Some((a, s, dirty))
    }

    /// Unlinks `a` if it is empty and clean and another arena remains; returns it to be unmapped once
    /// the lock is released, or null.
    pub(super) fn unlink_if_unused(&mut self, a: *mut Arena) -> *mut Arena {
        // SAFETY: listed arenas are live; the lock is held.
        let unused = unsafe {
            arena::is_empty(a) && (*a).dirty_free == 0 && (self.arenas != a || !(*a).next.is_null())
        };
        if unused {
            self.unlink_where(|x| x == a)
        } else {
            ptr::null_mut()
        }
    }

    /// Unlinks every arena `pick` chooses; returns them chained through `next` (null: none).
    pub(super) fn unlink_where(&mut self, mut pick: impl FnMut(*mut Arena) -> bool) -> *mut Arena {
        let mut gone: *mut Arena = ptr::null_mut();
        let mut link: *mut *mut Arena = &mut self.arenas;
        // SAFETY: `link` points at the list head or a listed arena's `next`; listed arenas are live, and
        // the lock is held (`&mut self`).
        unsafe {
            while !(*link).is_null() {
                let a = *link;
                if pick(a) {
                    *link = (*a).next;
                    (*a).next = gone;
                    gone = a;
                } else {
                    link = &mut (*a).next;
                }
            }
        }
        gone
    }
}

impl LargeCache {
    /// A block of `size` bytes, `off` bytes into a span of `n` slices of an arena (a new arena when none
    /// has a free run that long).
    pub(super) fn arena_alloc<P: PageSource>(
        &self,
        source: &P,
        size: usize,
        off: usize,
        n: usize,
        zeroed: bool,
    ) -> *mut u8 {
        let len = n * SLICE;
        let usable = len - off;
        let take = |g: &mut LargeInner| {
            let t = g.arena_take(n)?;
            g.count_alloc(usable, t.2 > 0);
            Some(t)
        };
        let (a, s, dirty) = loop {
            let in_use = {
                let mut g = self.inner.lock();
                if let Some(t) = take(&mut g) {
                    break t;
                }
                g.bytes_in_use as usize
            };
            source.note_dense_bytes(in_use.saturating_add(usable));
            let fresh = arena::create(source);
            if fresh.is_null() {
                return ptr::null_mut();
            }
            let mut g = self.inner.lock();
            // The list stays oldest first, so that blocks pack into the oldest arenas and the newest
            // empty out to be given back.
            let mut link: *mut *mut Arena = &mut g.arenas;
            // SAFETY: `link` points at the list head or a listed arena's `next` (live, under the lock);
            // the new arena is ours alone until it is linked.
            unsafe {
                while !(*link).is_null() {
                    link = &mut (**link).next;
                }
                *link = fresh;
            }
            if let Some(t) = take(&mut g) {
                break t;
            }
        };
        let seg = arena::span_at(a, s);
        // SAFETY: `take` made the span ours: `len` bytes of a live arena from `seg`, the block `off` bytes
        // in; `dirty` bounds the bytes an earlier user may have left non-zero.
        unsafe {
            seg.write(large_header(len, off, usable));
            let p = seg.cast::<u8>().add(off);
            if zeroed && dirty > off {
                ptr::write_bytes(p, 0, size.min(dirty - off));
            }
            p
        }
    }

    /// Frees an arena block: its span joins the free runs; the budget may purge free slices and unmap
    /// an arena left unused.
    ///
    /// # Safety
    ///
    /// `seg` heads a live span of one of this heap's arenas, which nobody uses any more.
    pub(super) unsafe fn arena_free<P: PageSource>(
        &self,
        source: &P,
        seg: *mut SegmentHeader,
        usable: usize,
    ) {
        let a = arena::arena_of(seg);
        let s = arena::slice_of(a, seg);
        let mut evicted = Evicted::new();
        let mut purge = Purge::new();
        let now = now_ms();
        let unused = {
            let mut g = self.inner.lock();
            // SAFETY: per the caller, a listed arena; the lock is held.
            let n = unsafe { arena::give(a, s) };
            if n == 0 {
                drop(g);
                crate::report::Msg::new()
                    .str("hopless: fatal: a large block freed twice at once (double free) at ")
                    .hex(seg.addr())
                    .str("\n")
                    .fatal();
            }
            let recent = g.recent_in_use(now);
            g.count_free(usable);
            let cap = budget(recent, g.bytes_in_use);
            g.trim_to(cap, &mut evicted, &mut purge);
            g.unlink_if_unused(a)
        };
        // SAFETY: evicted mappings and purge runs were taken out under the lock; an unlinked arena is
        // empty and on no list.
        unsafe {
            evicted.release(source);
            purge.finish(self, source);
            if !unused.is_null() {
                arena::release(source, unused);
            }
        }
    }

    /// Resizes an arena block: in place (shrinking, or growing into the free run after it, with a
    /// quarter more room), else by moving it with that room. Null when the new size is too big for an
    /// arena (the caller copies it into a mapping of its own) or no memory.
    ///
    /// # Safety
    ///
    /// As for [`LargeCache::resize`], for an arena block.
    pub(super) unsafe fn arena_resize<P: PageSource>(
        &self,
        source: &P,
        seg: *mut SegmentHeader,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        let p = seg.cast::<u8>().wrapping_add(off);
        let Some(need) = off
            .checked_add(new_size)
            .and_then(|n| n.checked_next_multiple_of(SLICE))
            .filter(|&n| n <= MAX_SPAN)
        else {
            return ptr::null_mut();
        };
        let a = arena::arena_of(seg);
        let s = arena::slice_of(a, seg);
        let (n, m) = (len / SLICE, need / SLICE);
        if m == n {
            return p;
        }
        // Growth in place is counted against the memory limit before it is made (a move is counted by
        // the `alloc` and `free` it takes).
        let extra = m.saturating_sub(n) * SLICE;
        let resized = {
            if !crate::limit::take(extra) {
                return ptr::null_mut();
            }
            let mut g = self.inner.lock();
            // SAFETY: a listed arena, under the lock; the span is ours (`n` slices from `s`).
            let k = unsafe {
                if m < n {
                    arena::shrink(a, s, n, m);
                    Some(m)
                } else {
                    // Room for the next steps of a growing buffer, but not under a memory limit,
                    // which counts the span as `m` slices (reserved above).
                    let room = if crate::limit::is_set() { 0 } else { n / 4 };
                    let want = m.max(n + room).min(MAX_SPAN / SLICE);
                    arena::grow(a, s, n, m, want)
                }
            };
            match k {
                Some(k) => crate::limit::settle(usable + extra, k * SLICE - off),
                None => crate::limit::give(extra),
            }
            if let Some(k) = k {
                g.bytes_in_use = g
                    .bytes_in_use
                    .saturating_sub(usable as u64)
                    .wrapping_add((k * SLICE - off) as u64);
                g.peak_bytes = g.peak_bytes.max(g.bytes_in_use);
            }
            k
        };
        if let Some(k) = resized {
            // SAFETY: the header of the caller's block.
            unsafe {
                (*seg).map_len = k * SLICE;
                (*seg).usable = k * SLICE - off;
            }
            return p;
        }
        // Move, with a quarter more room, so a buffer growing in small steps is copied a logarithmic
        // number of times.
        let mut q = self.alloc(
            source,
            new_size.max(usable.saturating_add(usable / 4)),
            off,
            false,
            false,
        );
        if q.is_null() {
            q = self.alloc(source, new_size, off, false, false);
        }
        if !q.is_null() {
            // SAFETY: the old block's `usable` bytes (less than `new_size`: it grows) are the caller's; the
            // new block is distinct and at least that big; then the old one is given up.
            unsafe {
                ptr::copy_nonoverlapping(p, q, usable.min(new_size));
                self.free(source, seg);
            }
        }
        q
    }

    /// Gives every arena the huge-page advice for arenas (see
    /// [`PageSource::dense_mark_passed`](crate::platform::PageSource::dense_mark_passed)).
    /// Under the lock, so that none is unmapped meanwhile: a few `madvise` calls, once in a process.
    pub fn advise_huge_arenas<P: PageSource>(&self, source: &P) {
        let g = self.inner.lock();
        let mut a = g.arenas;
        while !a.is_null() {
            // SAFETY: listed arenas are live while the lock is held, each one whole reservation of
            // `ARENA_SIZE` bytes from `source` (`arena::create`).
            unsafe {
                source.advise_huge(a.cast(), arena::ARENA_SIZE, crate::platform::Reservation::Arena);
                a = (*a).next;
            }
        }
    }

    /// Unmaps the empty arenas, or every arena if `all` (for a heap being dropped: its blocks are gone).
    pub fn release_arenas<P: PageSource>(&self, source: &P, all: bool) {
        // SAFETY: listed arenas are live; `unlink_where` calls this under the lock.
        let mut gone = self
            .inner
            .lock()
            .unlink_where(|a| all || unsafe { arena::is_empty(a) });
        while !gone.is_null() {
            // SAFETY: unlinked above, so no one else reaches it; per the caller nothing in it is used.
            unsafe {
                let next = (*gone).next;
                arena::release(source, gone);
                gone = next;
            }
        }
    }
}
