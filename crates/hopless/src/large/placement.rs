//! Where a large block goes and comes back: [`LargeCache::alloc`] places it in an arena span or a
//! mapping of its own (a cached one first), `free` returns it there and keeps the budget, `resize`
//! moves pages, never bytes.

use core::ptr;

use super::arena::{ARENA_MAP, MAX_ALIGN, MAX_SPAN, SLICE};
use super::budget::{budget, Purge};
use super::mapped::{fit, remap, Evicted};
use super::state::*;
use crate::platform::{now_ms, os_page_size, PageSource};
use crate::segment::{SegmentHeader, SEGMENT_MAP, SEGMENT_SIZE};

impl LargeCache {
    /// Allocates a large block, with a `PROT_NONE` page after it if `guard_page` (hardened mode); null on
    /// failure (too big, or no memory).
    pub fn alloc<P: PageSource>(
        &self,
        source: &P,
        size: usize,
        align: usize,
        zeroed: bool,
        guard_page: bool,
    ) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        if self.huge_caught_up.due(source) {
            self.advise_huge_arenas(source);
        }
        let off = data_offset(align);
        if !guard_page && align <= MAX_ALIGN {
            if let Some(span) = off
                .checked_add(size)
                .and_then(|n| n.checked_next_multiple_of(SLICE))
                .filter(|&n| n <= MAX_SPAN)
            {
                return self.arena_alloc(source, size, off, span / SLICE, zeroed);
            }
        }
        // A mapping of its own is whole pages of the kernel's (16 or 64 KiB on some aarch64 kernels), so
        // that its guard page is one the kernel can protect and its length is what `munmap` frees.
        let page = os_page_size();
        let guard = if guard_page { page } else { 0 };
        let Some(need) = off
            .checked_add(size)
            .and_then(|n| n.checked_next_multiple_of(page))
            .and_then(|n| n.checked_add(guard))
        else {
            return ptr::null_mut();
        };
        if need > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        let huge = align >= SEGMENT_SIZE;
        let mut base = ptr::null_mut();
        let mut len = need;
        // How much of the mapping an earlier user may have written (a reused one, up to its old length);
        // fresh pages read as zero.
        let mut dirty = 0;
        if guard == 0 && !huge {
            let taken = {
                let mut g = self.inner.lock();
                g.pick(need).map(|i| g.remove(i))
            };
            if let Some(e) = taken {
                let old_len = e.len;
                // SAFETY: a cached mapping is a whole reservation that nobody references; it is ours now.
                let e = unsafe { fit(source, e, need) };
                if !e.base.is_null() {
                    base = e.base;
                    len = e.len;
                    dirty = old_len.min(len);
                }
            }
        }
        let reused = !base.is_null();
        if !reused {
            base = if huge {
                source.reserve_offset(need, align, SEGMENT_SIZE)
            } else {
                source.reserve(need, SEGMENT_SIZE)
            };
            if base.is_null() {
                return ptr::null_mut();
            }
            if !SEGMENT_MAP.insert(base.cast()) {
                // SAFETY: the reservation just made, unused.
                unsafe { source.release(base, need, SEGMENT_SIZE) };
                return ptr::null_mut();
            }
            // SAFETY: the whole reservation just made.
            unsafe { source.advise_huge(base, need, crate::platform::Reservation::Mapping) };
        }
        let usable = len - off - guard;
        let seg = base.cast::<SegmentHeader>();
        // SAFETY: `base` is a mapping of `len >= off + size` bytes that only this thread owns now; its
        // first page holds the header and the block starts at `off` inside it.
        unsafe {
            seg.write(large_header(len, off, usable));
            let p = base.add(off);
            if guard != 0 {
                // Hardened: the page after the block faults on any overflow.
                source.protect(base.add(len - guard), guard);
            }
            if zeroed && dirty > off {
                // Pages a grown mapping gained are fresh, hence zero already.
                ptr::write_bytes(p, 0, size.min(dirty - off));
            }
            self.inner.lock().count_alloc(usable, reused);
            p
        }
    }

    /// Frees a large block given its header.
    ///
    /// # Safety
    ///
    /// `seg` is the header of a live large block, which nobody uses any more.
    pub unsafe fn free<P: PageSource>(&self, source: &P, seg: *mut SegmentHeader) {
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        // SAFETY: as above; clearing the magic makes a second free of the same block a reported fault.
        unsafe { (*seg).magic = 0 };
        if ARENA_MAP.contains(seg.cast()) {
            // SAFETY: per the caller; the map says the header is an arena block's.
            return unsafe { self.arena_free(source, seg, usable) };
        }
        let me = Entry {
            base: seg.cast(),
            len,
        };
        // Guarded mappings (hardened mode: usable + offset short of the length) are not cached, nor are
        // segment-aligned ones (their layout is particular) or big ones.
        let guarded = off.checked_add(usable) != Some(len);
        let cacheable = len <= CACHE_MAX_ENTRY && !guarded && off < SEGMENT_SIZE;
        let mut evicted = Evicted::new();
        let mut purge = Purge::new();
        let now = now_ms();
        {
            let mut g = self.inner.lock();
            let recent = g.recent_in_use(now);
            g.count_free(usable);
            let cap = budget(recent, g.bytes_in_use);
            let fits = cacheable && len <= cap;
            let room = if fits { cap - len } else { cap };
            while fits && g.n >= CACHE_ENTRIES {
                evicted.push(g.remove(0));
            }
            g.trim_to(room, &mut evicted, &mut purge);
            let n = g.n;
            match g.entries.get_mut(n) {
                Some(slot) if fits => {
                    *slot = me;
                    g.n = n + 1;
                    g.bytes += len;
                }
                _ => evicted.push(me),
            }
        }
        // SAFETY: evicted mappings (and this one, when it is not cached) are whole reservations that
        // nobody references any more; the purge runs were taken out of their arenas' free sets.
        unsafe {
            evicted.release(source);
            purge.finish(self, source);
        }
    }

    /// Resizes a large block in place or by moving its pages, to hold at least `new_size` bytes. Returns
    /// the block's (possibly new) address, or null when it cannot (the block is then untouched).
    ///
    /// # Safety
    ///
    /// `seg` is the header of a live large block that the caller owns and nobody else uses during the
    /// call; afterwards the caller uses the returned pointer only.
    pub unsafe fn resize<P: PageSource>(
        &self,
        source: &P,
        seg: *mut SegmentHeader,
        new_size: usize,
    ) -> *mut u8 {
        if ARENA_MAP.contains(seg.cast()) {
            // SAFETY: per the caller; the map says it is an arena block.
            return unsafe { self.arena_resize(source, seg, new_size) };
        }
        // SAFETY: per the caller, the header is valid and ours.
        let (len, usable, off) = unsafe { ((*seg).map_len, (*seg).usable, (*seg).data_offset) };
        if off.checked_add(usable) != Some(len) || off >= SEGMENT_SIZE {
            return ptr::null_mut(); // guarded or segment-aligned: the caller copies.
        }
        let page = os_page_size();
        let Some(need) = off
            .checked_add(new_size)
            .and_then(|n| n.checked_next_multiple_of(page))
        else {
            return ptr::null_mut();
        };
        if need > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        let new_len = if need > len {
            // Growth: leave room for the next few steps of a growing buffer.
            need.max((len + len / 4).next_multiple_of(page))
        } else {
            need
        };
        // SAFETY: the whole mapping is the caller's; the header moves with its pages.
        let nb = unsafe { remap(source, seg.cast(), len, new_len) };
        if nb.is_null() {
            return nb;
        }
        let nseg = nb.cast::<SegmentHeader>();
        let new_usable = new_len - off;
        // SAFETY: the header is at the start of the (moved) mapping, which is ours.
        unsafe {
            (*nseg).map_len = new_len;
            (*nseg).usable = new_usable;
        }
        {
            let mut g = self.inner.lock();
            g.bytes_in_use = g
                .bytes_in_use
                .saturating_sub(usable as u64)
                .wrapping_add(new_usable as u64);
            g.peak_bytes = g.peak_bytes.max(g.bytes_in_use);
        }
        nb.wrapping_add(off)
    }

    /// Unmaps every cached mapping, purges every free arena slice and unmaps the empty arenas.
    pub fn clear<P: PageSource>(&self, source: &P) {
        self.shed(source, usize::MAX);
        self.release_arenas(source, false);
    }
}
