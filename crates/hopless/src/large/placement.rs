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

/// Where a large block goes.
#[derive(Clone, Copy)]
enum Place {
    /// An arena span of this many bytes.
    Span(usize),
    /// A mapping of its own, `need` bytes with a `guard`-byte guard page at its end.
    Mapping { need: usize, guard: usize },
}

/// Where a block of `size` bytes aligned to `align` goes (`None`: too big). Up to [`MAX_SPAN`] and
/// [`MAX_ALIGN`], unguarded, an arena span; otherwise a mapping of its own, whole pages of the kernel's
/// (16 or 64 KiB on some aarch64 kernels), so that its guard page is one the kernel can protect and its
/// length is what `munmap` frees.
fn plan(size: usize, align: usize, guard_page: bool) -> Option<Place> {
    let off = data_offset(align);
    if !guard_page && align <= MAX_ALIGN {
        if let Some(span) = off
            .checked_add(size)
            .and_then(|n| n.checked_next_multiple_of(SLICE))
            .filter(|&n| n <= MAX_SPAN)
        {
            return Some(Place::Span(span));
        }
    }
    let page = os_page_size();
    let guard = if guard_page { page } else { 0 };
    let need = off
        .checked_add(size)?
        .checked_next_multiple_of(page)?
        .checked_add(guard)?;
    (need <= isize::MAX as usize / 2).then_some(Place::Mapping { need, guard })
}

impl LargeCache {
    /// Allocates a large block, with a `PROT_NONE` page after it if `guard_page` (hardened mode); null on
    /// failure (too big, no memory, or past the memory limit: the block counts its usable bytes there
    /// until it is freed).
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
        let off = data_offset(align);
        let Some(place) = plan(size, align, guard_page) else {
            return ptr::null_mut();
        };
        // What the block will count: its usable bytes, known before it is placed (a cached mapping is
        // made exactly `need` long while a limit is set: see `fit`).
        let usable = match place {
            Place::Span(span) => span - off,
            Place::Mapping { need, guard } => need - off - guard,
        };
        if !crate::limit::take(usable) {
            return ptr::null_mut();
        }
        if self.huge_caught_up.due(source) {
            self.advise_huge_arenas(source);
        }
        let p = match place {
            Place::Span(span) => self.arena_alloc(source, size, off, span / SLICE, zeroed),
            Place::Mapping { need, guard } => self.map_block(source, size, align, zeroed, need, guard),
        };
        if p.is_null() {
            crate::limit::give(usable);
        } else {
            // SAFETY: a block just placed starts `off` bytes after its header (both kinds).
            let placed = unsafe { (*p.wrapping_sub(off).cast::<SegmentHeader>()).usable };
            // Equal but for a cached mapping's slack taken while no limit was set.
            crate::limit::settle(usable, placed);
        }
        p
    }

    /// A block of its own mapping, `need` bytes long with a `guard`-byte guard page at its end.
    fn map_block<P: PageSource>(
        &self,
        source: &P,
        size: usize,
        align: usize,
        zeroed: bool,
        need: usize,
        guard: usize,
    ) -> *mut u8 {
        let off = data_offset(align);
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
                let e = unsafe { fit(source, e, need, crate::limit::is_set()) };
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
        crate::limit::give(usable);
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
        let extra = new_len.saturating_sub(len);
        if !crate::limit::take(extra) {
            return ptr::null_mut();
        }
        // SAFETY: the whole mapping is the caller's; the header moves with its pages.
        let nb = unsafe { remap(source, seg.cast(), len, new_len) };
        if nb.is_null() {
            crate::limit::give(extra);
            return nb;
        }
        let nseg = nb.cast::<SegmentHeader>();
        let new_usable = new_len - off;
        crate::limit::settle(usable + extra, new_usable);
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
