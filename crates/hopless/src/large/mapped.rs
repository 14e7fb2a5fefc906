//! Mappings of their own (blocks above the arenas' largest span, or aligned past them, or guarded):
//! the cache of recently freed ones, picked by size, fitted by trimming or moving their pages, evicted
//! oldest first.

use super::state::*;
use crate::platform::PageSource;
use crate::segment::{SEGMENT_MAP, SEGMENT_SIZE};

impl LargeInner {
    /// Removes entry `i` (shifting the younger ones down) and returns it.
    pub(super) fn remove(&mut self, i: usize) -> Entry {
        let n = self.n.min(CACHE_ENTRIES);
        let Some(&e) = self.entries.get(i) else {
            return NO_ENTRY;
        };
        if i >= n {
            return NO_ENTRY;
        }
        self.entries.copy_within(i + 1..n, i);
        self.n = n - 1;
        self.bytes = self.bytes.saturating_sub(e.len);
        e
    }

    /// The cached mapping to serve a block of `need` bytes of mapping: the smallest at least that big
    /// and at most twice it (a long tail is trimmed), else the biggest at least three quarters of it (it
    /// is grown: its pages move, only the new ones fault in).
    pub(super) fn pick(&self, need: usize) -> Option<usize> {
        let mut fits = None;
        let mut fits_len = usize::MAX;
        let mut grow = None;
        let mut grow_len = 0;
        for (i, e) in self.entries.iter().enumerate().take(self.n) {
            if e.len >= need {
                if e.len - need <= need && e.len < fits_len {
                    fits = Some(i);
                    fits_len = e.len;
                }
            } else if e.len >= need - need / 4 && e.len > grow_len {
                grow = Some(i);
                grow_len = e.len;
            }
        }
        fits.or(grow)
    }
}

/// Mappings taken out of the cache under its lock, to unmap once it is released: every entry at most,
/// plus the mapping being freed.
pub(super) struct Evicted {
    pub(super) list: [Entry; CACHE_ENTRIES + 1],
    pub(super) n: usize,
}

impl Evicted {
    pub(super) const fn new() -> Self {
        Evicted {
            list: [NO_ENTRY; CACHE_ENTRIES + 1],
            n: 0,
        }
    }

    pub(super) fn push(&mut self, e: Entry) {
        if let Some(slot) = self.list.get_mut(self.n) {
            *slot = e;
            self.n += 1;
        }
    }

    /// # Safety
    ///
    /// Every pushed entry is a whole large mapping that nobody references any more.
    pub(super) unsafe fn release<P: PageSource>(&self, source: &P) {
        for e in self.list.iter().take(self.n) {
            // SAFETY: per the caller.
            unsafe { release(source, *e) };
        }
    }
}

/// Makes a cached mapping `need` bytes long: trims a tail of more than half of `need` (a shorter one stays
/// as the block's slack; any tail when `exact`: the memory limit counts the block as `need`), or grows it
/// (in place, or by moving its pages to a new aligned place). Returns the mapping as it is now; a null
/// base when it could not grow (it is then released). A source that cannot resize leaves a bigger mapping
/// as it is.
///
/// # Safety
///
/// `e` is a whole large mapping that nobody references any more, now the caller's.
pub(super) unsafe fn fit<P: PageSource>(source: &P, e: Entry, need: usize, exact: bool) -> Entry {
    if e.len >= need && (e.len == need || (!exact && e.len - need <= need / 2)) {
        return e;
    }
    // SAFETY: per the caller, the whole reservation is ours and unused.
    let nb = unsafe { remap(source, e.base, e.len, need) };
    if nb.is_null() {
        if e.len > need {
            return e;
        }
        // SAFETY: as above; it is still the whole reservation.
        unsafe { release(source, e) };
        return NO_ENTRY;
    }
    Entry { base: nb, len: need }
}

/// Resizes a large mapping (in place, or by moving its pages to a new aligned place) and keeps the
/// segment map right. Null when it cannot; the mapping is then untouched and still in the map.
///
/// The old address leaves the map before the move: once the kernel has moved the pages, another thread's
/// new mapping may land there, and must not lose its entry to a late removal of ours.
///
/// # Safety
///
/// `base` and `len` are a whole large mapping that the caller owns and nobody else references.
pub(super) unsafe fn remap<P: PageSource>(source: &P, base: *mut u8, len: usize, new_len: usize) -> *mut u8 {
    SEGMENT_MAP.remove(base.cast());
    // SAFETY: per the caller; the header moves with the pages.
    let nb = unsafe { source.resize(base, len, new_len, SEGMENT_SIZE) };
    let live = if nb.is_null() { base } else { nb };
    if !SEGMENT_MAP.insert(live.cast()) {
        // Outside the map's range: the block could not be freed by address. The old mapping was in the
        // map, and a moved one lands where `reserve` puts every mapping, which the map covers for 47-bit
        // addresses: this cannot happen.
        crate::report::Msg::new()
            .str("hopless: fatal: mremap returned an address outside the segment map\n")
            .fatal();
    }
    nb
}

/// Unmaps a large mapping and forgets it in the segment map.
///
/// # Safety
///
/// `e` is a whole large mapping that nobody references any more.
pub(super) unsafe fn release<P: PageSource>(source: &P, e: Entry) {
    if e.base.is_null() {
        return;
    }
    SEGMENT_MAP.remove(e.base.cast());
    // SAFETY: per the caller.
    unsafe { source.release(e.base, e.len, SEGMENT_SIZE) };
}
