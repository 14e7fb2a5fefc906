//! Arenas: where large blocks of up to [`MAX_SPAN`] live, so that the pages a freed block leaves serve the
//! next large block of any size without a page fault.
//!
//! An arena is a 64 MiB region aligned to its size and cut into 16 KiB slices. The first two slices hold the
//! [`Arena`] header: a bitmap of free slices, a bitmap of dirty ones (handed out since the arena was
//! mapped or the slice last purged, so possibly resident and non-zero), and per slice the length of the
//! span in use that starts there. A large block is a span of whole slices: its [`SegmentHeader`] in the
//! span's first page, the block from one page (or its alignment, at most [`MAX_ALIGN`]) in. Free spans
//! are the runs of free bits, so neighbours coalesce by being freed; an allocation takes the lowest place
//! that faults in the fewest clean slices ([`first_fit`]); a block grows in place into a free run after
//! it.
//!
//! From a pointer `p`: [`ARENA_MAP`] says whether `p`'s 64 MiB slot is an arena, `arena = p & !(64 MiB -
//! 1)`, and the span is found from the slice table ([`locate`]); for a block start it is one load. The
//! segment map never covers an arena, so the small-block free path never mistakes block bytes for a slab
//! header.
//!
//! Memory goes back to the OS by purging (`MADV_DONTNEED`) free dirty slices when the large cache's budget
//! says so (see `large`), and by unmapping an arena once it is free and clean and another arena exists
//! (or on trim).
//!
//! Invariants (under the large cache's lock, which owns every arena's bitmaps and counters):
//! - the slices `1..SLICES` are tiled by spans in use (`spans[start] == len`), free runs (free bits set)
//!   and runs being purged (neither: taken out by [`take_purge`] until [`return_purged`]);
//! - `spans[i]` is non-zero only at the start of a span in use, or [`FREED`] at a free slice where a
//!   freed span started (so that a second free of it finds a header whose magic is cleared): a slice
//!   covered by a span in use holds 0 except at its start. [`locate`] relies on this, lock-free;
//! - `free_slices` counts the free bits, `dirty_free` the slices both free and dirty.

use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::platform::{PageSource, PAGE_SIZE};
use crate::segment::{map_bits, SegmentHeader, SlotMap};

pub const ARENA_SHIFT: usize = if cfg!(miri) { 23 } else { 26 };
/// Size and alignment of an arena (8 MiB under Miri).
pub const ARENA_SIZE: usize = 1 << ARENA_SHIFT;
pub const SLICE_SHIFT: usize = 14;
/// The unit spans are made of.
pub const SLICE: usize = 1 << SLICE_SHIFT;
/// Slices per arena, the header's included.
pub const SLICES: usize = ARENA_SIZE >> SLICE_SHIFT;
const WORDS: usize = SLICES / 64;
/// The biggest span an arena serves; a bigger block gets a mapping of its own.
pub const MAX_SPAN: usize = ARENA_SIZE / 4;
/// The biggest alignment an arena block may have: its data starts less than a slice into its span, so
/// that a block pointer names its span's first slice.
pub const MAX_ALIGN: usize = SLICE / 2;
/// `spans[i]` of a free slice where a freed span started.
const FREED: u32 = u32::MAX;

/// Which 64 MiB-aligned slots are arenas (process-wide, like the segment map).
pub static ARENA_MAP: SlotMap<ARENA_SHIFT, { map_bits(ARENA_SHIFT) / 64 }> = SlotMap::new();

/// An arena's header, at its start.
#[repr(C)]
pub struct Arena {
    /// The next arena of the same heap (under the large cache's lock).
    pub next: *mut Arena,
    pub free_slices: usize,
    pub dirty_free: usize,
    free: [u64; WORDS],
    dirty: [u64; WORDS],
    /// Per slice: the length in slices of the span in use starting there, [`FREED`], or 0.
    spans: [AtomicU32; SLICES],
}

/// The slices the header takes, at the arena's start.
pub const HEADER_SLICES: usize = core::mem::size_of::<Arena>().div_ceil(SLICE);

const _: () = assert!(HEADER_SLICES < 64 && MAX_ALIGN >= PAGE_SIZE);

/// Maps a new arena: every slice but the header's free and clean. Null when out of memory.
pub fn create<P: PageSource>(source: &P) -> *mut Arena {
    let base = source.reserve(ARENA_SIZE, ARENA_SIZE);
    if base.is_null() {
        return ptr::null_mut();
    }
    let a = base.cast::<Arena>();
    // SAFETY: a fresh zeroed reservation of ARENA_SIZE bytes, aligned, that only this thread knows; the
    // header fits in its first slice. Zero is a valid `spans` array (atomics of 0) and dirty bitmap.
    unsafe {
        (*a).next = ptr::null_mut();
        (*a).free_slices = SLICES - HEADER_SLICES;
        (*a).dirty_free = 0;
        (*a).free = [!0; WORDS];
        if let Some(w) = (*a).free.first_mut() {
            *w = !0 << HEADER_SLICES; // the header's slices
        }
    }
    if !ARENA_MAP.insert(base.cast()) {
        // SAFETY: the reservation just made, unused.
        unsafe { source.release(base, ARENA_SIZE, ARENA_SIZE) };
        return ptr::null_mut();
    }
    // SAFETY: the whole reservation just made.
    unsafe { source.advise_huge(base, ARENA_SIZE, crate::platform::Reservation::Arena) };
    a
}

/// Unmaps an arena.
///
/// # Safety
///
/// `a` came from [`create`] with this source, is on no list any more, and nothing in it is used.
pub unsafe fn release<P: PageSource>(source: &P, a: *mut Arena) {
    ARENA_MAP.remove(a.cast());
    // SAFETY: per the caller.
    unsafe { source.release(a.cast(), ARENA_SIZE, ARENA_SIZE) };
}

/// The arena a pointer into it lies in.
#[inline]
pub fn arena_of<T>(p: *mut T) -> *mut Arena {
    p.cast::<u8>().map_addr(|a| a & !(ARENA_SIZE - 1)).cast()
}

/// The first bit at or after `from` that is set in `word(w)` (or clear, if `clear`).
fn next_bit(word: impl Fn(usize) -> u64, from: usize, clear: bool) -> Option<usize> {
    let flip = if clear { !0 } else { 0 };
    let mut w = from / 64;
    if w >= WORDS {
        return None;
    }
    let mut x = (word(w) ^ flip) & (!0u64 << (from % 64));
    loop {
        if x != 0 {
            return Some(w * 64 + x.trailing_zeros() as usize);
        }
        w += 1;
        if w >= WORDS {
            return None;
        }
        x = word(w) ^ flip;
    }
}

/// Calls `f(word index, mask)` for the bits `s..e` of a bitmap.
fn for_range(s: usize, e: usize, mut f: impl FnMut(usize, u64)) {
    let mut i = s;
    while i < e {
        let w = i / 64;
        let lo = i % 64;
        let hi = (e - w * 64).min(64);
        let mask = if hi - lo == 64 {
            !0
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        f(w, mask);
        i = w * 64 + hi;
    }
}

fn set_bits(bits: &mut [u64; WORDS], s: usize, e: usize, on: bool) {
    for_range(s, e, |w, m| {
        if let Some(x) = bits.get_mut(w) {
            if on {
                *x |= m;
            } else {
                *x &= !m;
            }
        }
    });
}

fn count_bits(bits: &[u64; WORDS], s: usize, e: usize) -> usize {
    let mut n = 0;
    for_range(s, e, |w, m| {
        n += (bits.get(w).copied().unwrap_or(0) & m).count_ones() as usize
    });
    n
}

/// The last set bit below `e` and at or above `s`.
fn last_bit(bits: &[u64; WORDS], s: usize, e: usize) -> Option<usize> {
    let mut last = None;
    for_range(s, e, |w, m| {
        let x = bits.get(w).copied().unwrap_or(0) & m;
        if x != 0 {
            last = Some(w * 64 + 63 - x.leading_zeros() as usize);
        }
    });
    last
}

/// Where to put a span of `n` slices in `a`: at the start or the end of a free run at least that long,
/// taking as few clean slices as it can (each clean slice is 4 page faults to come), and among those the
/// lowest address (first fit: it packs blocks low and leaves the long free runs high, where best fit by
/// run length scattered them and faulted 4× as many pages per op on random churn). Returns (start, clean
/// slices taken).
///
/// # Safety
///
/// `a` is a live arena and the caller holds the large cache's lock.
pub unsafe fn first_fit(a: *mut Arena, n: usize) -> Option<(usize, usize)> {
    // SAFETY: per the caller.
    let (free, dirty) = unsafe { (&(*a).free, &(*a).dirty) };
    let word = |w: usize| free.get(w).copied().unwrap_or(0);
    let mut best: Option<(usize, usize)> = None;
    let mut i = HEADER_SLICES;
    while let Some(s) = next_bit(word, i, false) {
        let e = next_bit(word, s, true).unwrap_or(SLICES);
        if e - s >= n {
            for at in [s, e - n] {
                let clean = n - count_bits(dirty, at, at + n);
                if best.is_none_or(|(_, c)| clean < c) {
                    best = Some((at, clean));
                }
            }
            if best.is_some_and(|(_, c)| c == 0) {
                break;
            }
        }
        i = e;
    }
    best
}

/// Takes the free slices `s..s + n` out of the free set, marks them dirty, and clears their span entries
/// (no longer the start of anything). Returns the last of them that was dirty already, if any.
///
/// # Safety
///
/// As for [`first_fit`]; the slices are free.
unsafe fn take_slices(a: *mut Arena, s: usize, n: usize) -> Option<usize> {
    let e = s + n;
    // SAFETY: per the caller; the header's fields are only written under the lock.
    unsafe {
        let was_dirty = count_bits(&(*a).dirty, s, e);
        let last = last_bit(&(*a).dirty, s, e);
        set_bits(&mut (*a).free, s, e, false);
        set_bits(&mut (*a).dirty, s, e, true);
        (*a).free_slices -= n;
        (*a).dirty_free -= was_dirty;
        for i in s..e {
            if let Some(x) = span_entry(a, i) {
                x.store(0, Ordering::Relaxed);
            }
        }
        last
    }
}

/// Takes the free run `s..s + n` as a span in use. Returns how many of its bytes from the span's start
/// may be non-zero (up to the end of its last dirty slice).
///
/// # Safety
///
/// As for [`take_slices`].
pub unsafe fn take(a: *mut Arena, s: usize, n: usize) -> usize {
    // SAFETY: per the caller.
    let last = unsafe { take_slices(a, s, n) };
    // SAFETY: as above; the entry is read lock-free by `locate`, hence the release store.
    if let Some(x) = unsafe { span_entry(a, s) } {
        x.store(n as u32, Ordering::Release);
    }
    last.map_or(0, |l| (l + 1 - s) * SLICE)
}

/// Puts the slices `s..s + n` (in use, or being purged if `clean`) back into the free set.
///
/// # Safety
///
/// As for [`first_fit`]; nothing uses the slices any more.
unsafe fn give_slices(a: *mut Arena, s: usize, n: usize, clean: bool) {
    let e = s + n;
    // SAFETY: per the caller.
    unsafe {
        if clean {
            set_bits(&mut (*a).dirty, s, e, false);
        }
        set_bits(&mut (*a).free, s, e, true);
        (*a).free_slices += n;
        (*a).dirty_free += count_bits(&(*a).dirty, s, e);
    }
}

/// Slice `i`'s entry in the span table.
///
/// # Safety
///
/// `a` is a live arena for as long as the reference is used.
unsafe fn span_entry<'a>(a: *mut Arena, i: usize) -> Option<&'a AtomicU32> {
    // SAFETY: per the caller; `spans` is only ever accessed atomically, so shared references to it never
    // alias a mutable one.
    unsafe { (*a).spans.get(i) }
}

/// The slice of `a` where the span headed by `seg` starts.
pub fn slice_of(a: *mut Arena, seg: *mut SegmentHeader) -> usize {
    (seg.addr() - a.addr()) >> SLICE_SHIFT
}

/// The header address of the span starting at slice `s`.
pub fn span_at(a: *mut Arena, s: usize) -> *mut SegmentHeader {
    a.cast::<u8>().wrapping_add(s << SLICE_SHIFT).cast()
}

/// Frees the span in use starting at `s`; returns its length in slices (0: it was not in use, a race of
/// two frees of one block).
///
/// # Safety
///
/// As for [`first_fit`]; nothing uses the span any more.
pub unsafe fn give(a: *mut Arena, s: usize) -> usize {
    // SAFETY: per the caller, `a` is live.
    let Some(entry) = (unsafe { span_entry(a, s) }) else {
        return 0;
    };
    let n = entry.load(Ordering::Relaxed);
    if n == 0 || n == FREED {
        return 0;
    }
    entry.store(FREED, Ordering::Release);
    // SAFETY: per the caller.
    unsafe { give_slices(a, s, n as usize, false) };
    n as usize
}

/// Shrinks the span in use at `s` from `n` to `m` slices, freeing the tail.
///
/// # Safety
///
/// As for [`first_fit`]; `0 < m < n`, `n` the span's length, and nothing uses the tail any more.
pub unsafe fn shrink(a: *mut Arena, s: usize, n: usize, m: usize) {
    // SAFETY: per the caller, `a` is live.
    if let Some(e) = unsafe { span_entry(a, s) } {
        e.store(m as u32, Ordering::Release);
    }
    // SAFETY: per the caller.
    unsafe { give_slices(a, s + m, n - m, false) };
}

/// Grows the span in use at `s` from `n` to at least `m` slices (and up to `want`) into the free run
/// after it; returns its new length, or `None` when that run is too short.
///
/// # Safety
///
/// As for [`first_fit`]; `n` is the span's length, `n < m <= want`.
pub unsafe fn grow(a: *mut Arena, s: usize, n: usize, m: usize, want: usize) -> Option<usize> {
    let from = s + n;
    // SAFETY: per the caller.
    let free = unsafe { &(*a).free };
    // The end of the free run at `from` (`from` itself when that slice is not free).
    let end = next_bit(|w| free.get(w).copied().unwrap_or(0), from, true).unwrap_or(SLICES);
    if end < s + m {
        return None;
    }
    let new = want.min(end - s);
    // SAFETY: per the caller; `from..s + new` are free.
    unsafe { take_slices(a, from, new - n) };
    // SAFETY: per the caller, `a` is live.
    if let Some(e) = unsafe { span_entry(a, s) } {
        e.store(new as u32, Ordering::Release);
    }
    Some(new)
}

/// Takes a free, dirty run of at most `max` slices out of the free set to purge it: `(start, length)`.
/// The arena is not empty while it is out; give it back with [`return_purged`].
///
/// # Safety
///
/// As for [`first_fit`].
pub unsafe fn take_purge(a: *mut Arena, max: usize) -> Option<(usize, usize)> {
    // SAFETY: per the caller.
    let (free, dirty) = unsafe { (&(*a).free, &(*a).dirty) };
    let both = |w: usize| free.get(w).copied().unwrap_or(0) & dirty.get(w).copied().unwrap_or(0);
    let s = next_bit(both, HEADER_SLICES, false)?;
    let e = next_bit(both, s, true)
        .unwrap_or(SLICES)
        .min(s.saturating_add(max.max(1)));
    let n = e - s;
    // SAFETY: per the caller.
    unsafe {
        set_bits(&mut (*a).free, s, e, false);
        (*a).free_slices -= n;
        (*a).dirty_free -= n;
    }
    Some((s, n))
}

/// Gives back a run [`take_purge`] took, clean now.
///
/// # Safety
///
/// As for [`first_fit`]; the run came from `take_purge` on `a` and its pages were decommitted.
pub unsafe fn return_purged(a: *mut Arena, s: usize, n: usize) {
    // SAFETY: per the caller.
    unsafe { give_slices(a, s, n, true) };
}

/// Whether every slice of `a` is free.
///
/// # Safety
///
/// As for [`first_fit`].
pub unsafe fn is_empty(a: *mut Arena) -> bool {
    // SAFETY: per the caller.
    unsafe { (*a).free_slices == SLICES - HEADER_SLICES }
}

/// The large block of an arena that `p` lies in (its span's header), or `None` for an address in a free
/// slice or the arena's header. Lock-free: reads only the span table (see the module's invariants). A free
/// slice where a freed block started still names that block's header, whose magic is cleared, so a
/// second free is reported as one.
///
/// Callers check first that `p` lies in an arena (its [`ARENA_MAP`] bit is set): the arena is then mapped
/// (an invalid free racing the arena's release is the one window, as for `address::locate`).
pub fn span_of(p: *const u8) -> Option<*mut SegmentHeader> {
    let a = arena_of(p.cast_mut());
    let i = (p.addr() - a.addr()) >> SLICE_SHIFT;
    let mut j = i;
    while j >= HEADER_SLICES {
        // SAFETY: the map says `a` is a live arena.
        let v = unsafe { span_entry(a, j) }.map_or(0, |e| e.load(Ordering::Acquire));
        if v == FREED {
            if j == i {
                return Some(span_at(a, j));
            }
        } else if v != 0 {
            return (j + v as usize > i).then(|| span_at(a, j));
        }
        j -= 1;
    }
    None
}
