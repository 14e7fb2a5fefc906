//! Thread-owned slabs (`docs/central-heap.md`, "Thread-owned slabs"; off by default,
//! `HOPLESS_OWNED_SLABS=1`). A thread cache refills
//! its magazines from slabs it owns and flushes its blocks back into them with plain writes: no class
//! lock, no atomic read-modify-write. A block of another thread's slab goes to that slab's remote bits
//! (`segment::remote`, one `fetch_or` per run of a bitmap word), and the first such free since the
//! owner's last fold sets a hint in the owner's cache; the owner folds at its next refill of the class.
//! Only adopting a slab (from the class's partial ones, or fresh from the pool), handing one back (it
//! fell free, or the thread exits) and a thread's exit take the class lock.
//!
//! A cache owns at most [`OWNED_MAX`] slabs of a small class. A working set beyond that takes the rest
//! from the class's slabs under its lock, as without owned slabs; the owned ones stay, full, until
//! blocks come back to them.
//!
//! Small classes, the default mode and caches with a token only (`Heap::owns_slabs`): the checked
//! modes, caches without an id and medium classes use the class path, which meets an owned slab only
//! to free into it remotely. Medium classes stay with their class because their slabs are 512 KiB: two
//! per thread and class raise the peak RSS of a CPython producer/consumer run by 14% (62 MB against
//! 54.6 MB, three runs each), for no time gained; small classes alone cost about 3% there.

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::Ordering;

use super::Heap;
use crate::cache::{hint_owner, OwnedSlabs, ThreadCache};
use crate::central::ClassHeap;
use crate::platform::PageSource;
use crate::report::report_bad_free;
use crate::scratch;
use crate::segment::{FreeError, RemoteFree, Returning, Slab};
use crate::size_class::{is_medium, BATCH_MAX, NUM_CLASSES};

/// Slabs a cache owns of one small class at most (64 KiB each: 1 MiB).
pub const OWNED_MAX: u32 = 16;

/// The owned slabs of `class` in `tc`, by raw pointer: the stats snapshot reads their counters from
/// another thread, so no `&mut` to the whole entry is made. Null for a class out of range.
///
/// # Safety
///
/// `tc` is a live cache (not the static empty one).
unsafe fn owned_of(tc: *mut ThreadCache, class: usize) -> *mut OwnedSlabs {
    if class >= NUM_CLASSES {
        return ptr::null_mut();
    }
    // SAFETY: per the caller, `tc` is valid; `class` is in the array's range.
    unsafe { (&raw mut (*tc).owned).cast::<OwnedSlabs>().add(class) }
}

/// Puts `s` first on the list whose head is `head`.
///
/// # Safety
///
/// The caller is `s`'s owner (see `Slab`) and the list's; `s` is on no list.
unsafe fn push(head: *mut *mut (), s: *mut Slab) {
    // SAFETY: per the caller, the links of `s` and of the list's slabs are ours to write.
    unsafe {
        let first = (*head).cast::<Slab>();
        (*s).prev = ptr::null_mut();
        (*s).next = first;
        if !first.is_null() {
            (*first).prev = s;
        }
        *head = s.cast();
    }
}

/// Takes `s` off the list whose head is `head`.
///
/// # Safety
///
/// As for [`push`]; `s` is on that list.
unsafe fn unlink(head: *mut *mut (), s: *mut Slab) {
    // SAFETY: per the caller.
    unsafe {
        let (p, n) = ((*s).prev, (*s).next);
        if p.is_null() {
            *head = n.cast();
        } else {
            (*p).next = n;
        }
        if !n.is_null() {
            (*n).prev = p;
        }
        (*s).prev = ptr::null_mut();
        (*s).next = ptr::null_mut();
    }
}

impl<P: PageSource> Heap<P> {
    /// Whether `tc` refills from and flushes into slabs it owns for `class`: owned slabs on, a small
    /// class, the default mode, a cache with a token.
    ///
    /// # Safety
    ///
    /// `tc` is null or a live cache of the calling thread (or the static empty one).
    #[inline]
    pub(super) unsafe fn owns_slabs(&self, tc: *mut ThreadCache, class: usize) -> bool {
        !tc.is_null()
            && !is_medium(class)
            && self.owned_on.load(Ordering::Relaxed)
            && !crate::mode::checked()
            // SAFETY: per the caller; `token` is written only by the thread taking the cache.
            && unsafe { (*tc).token } != 0
    }

    /// Moves up to `out.len()` free blocks of `class` into `out` for `tc`'s magazine: from its own
    /// slabs (their remote frees folded in when hinted and the free blocks are used up), adopting
    /// another while it owns fewer than the most, else from the class's slabs. Returns how many (fewer
    /// only when out of memory).
    ///
    /// # Safety
    ///
    /// `tc` is a live cache of the calling thread and [`Heap::owns_slabs`] holds for it.
    pub(super) unsafe fn refill_owned(
        &self,
        tc: *mut ThreadCache,
        class: usize,
        out: &mut [MaybeUninit<*mut u8>],
    ) -> usize {
        // SAFETY: per the caller.
        let o = unsafe { owned_of(tc, class) };
        if o.is_null() {
            return 0;
        }
        // SAFETY: per the caller, the cache and its owned slabs are the calling thread's: it alone
        // writes their bitmaps, counts and links (see `Slab`).
        unsafe {
            let token = (*tc).token;
            let mut got = 0;
            let mut from_class = 0;
            while let Some(rest) = out.get_mut(got..).filter(|r| !r.is_empty()) {
                let mut s = (*o).partial.cast::<Slab>();
                if s.is_null() {
                    // Remote frees are folded only once the blocks already free are used up: each fold
                    // then moves more blocks, and the lines other threads write move here less often.
                    if ThreadCache::take_hint(tc, class) {
                        self.fold_owned(o, class);
                        continue;
                    }
                    if (*o).len >= OWNED_MAX {
                        // The rest from the class's slabs, under its lock, as without owned slabs.
                        from_class = self.refill_into(class, rest);
                        break;
                    }
                    s = self
                        .class(class)
                        .adopt(class, self.pool(class), &self.source, token);
                    if s.is_null() {
                        break;
                    }
                    (*o).len += 1;
                    push(&raw mut (*o).partial, s);
                    self.note_segments();
                }
                let n = Slab::take(s, rest, None);
                got += n;
                if (*s).free == 0 {
                    unlink(&raw mut (*o).partial, s);
                    push(&raw mut (*o).full, s);
                }
                if n == 0 {
                    break;
                }
            }
            OwnedSlabs::bump(&(*o).refills);
            OwnedSlabs::add(&(*o).outstanding, got as i64);
            got + from_class
        }
    }

    /// Folds the remote frees of every owned slab of `class` that has some, moving the slabs that
    /// were full and have free blocks now to the partial list, and handing back those that are all free
    /// beyond the first.
    ///
    /// # Safety
    ///
    /// `o` is the calling thread's entry for `class` in its live cache.
    unsafe fn fold_owned(&self, o: *mut OwnedSlabs, class: usize) {
        // SAFETY: per the caller, the owned slabs are the calling thread's to write.
        unsafe {
            for full in [true, false] {
                let head: *mut *mut () = if full {
                    &raw mut (*o).full
                } else {
                    &raw mut (*o).partial
                };
                let mut s = (*head).cast::<Slab>();
                while !s.is_null() {
                    let next = (*s).next;
                    if (*s).remote.has_pending() {
                        match Slab::fold_remote(s) {
                            Ok(moved) => OwnedSlabs::add(&(*o).outstanding, -i64::from(moved)),
                            Err(index) => {
                                report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s)
                            }
                        }
                        if full && (*s).free != 0 {
                            unlink(head, s);
                            push(&raw mut (*o).partial, s);
                        }
                        if (*s).free == (*s).capacity && (*o).len > 1 {
                            unlink(&raw mut (*o).partial, s);
                            (*o).len -= 1;
                            self.class(class)
                                .hand_over(class, self.pool(class), &self.source, s);
                        }
                    }
                    s = next;
                }
            }
        }
    }

    /// Returns blocks of `class` from `tc`'s magazine: those of its own slabs with plain writes, those
    /// of other threads' slabs as remote frees, those of the class's slabs under the class lock. Every
    /// block is checked first (`ClassHeap::check_returns`); a fault is reported and the process stops.
    ///
    /// # Safety
    ///
    /// As for [`Heap::refill_owned`]; each pointer was handed out by this heap (or is a fault to
    /// report), and no caller uses them again.
    pub(super) unsafe fn flush_owned(&self, tc: *mut ThreadCache, class: usize, blocks: &[*mut u8]) {
        // SAFETY: per the caller.
        let o = unsafe { owned_of(tc, class) };
        if o.is_null() {
            // SAFETY: forwarded.
            return unsafe { self.flush(class, blocks) };
        }
        // Not zeroed first: a flush is on the path of every magazine that overflows.
        let mut checked = scratch::buffer::<Returning, BATCH_MAX>();
        let mut to_class = scratch::buffer::<Returning, BATCH_MAX>();
        // SAFETY: per the caller, the cache is the calling thread's; so are the slabs whose owner is
        // its token (only their owner sets a token, under the class lock, and only it clears it).
        unsafe {
            let token = (*tc).token;
            for chunk in blocks.chunks(BATCH_MAX) {
                let runs = ClassHeap::check_returns(class, chunk, &mut checked);
                let mut nc = 0;
                let mut back = 0i64;
                for &r in runs {
                    let s = r.slab;
                    let owner = (*s).owner.load(Ordering::Relaxed);
                    if owner == token {
                        let was_full = (*s).free == 0;
                        // Freed by another thread too and not folded yet: a double free (the fold
                        // would find it, but a take from the bitmap may come first).
                        let twice = (*s).remote.word(r.word) & r.bits;
                        if twice != 0 {
                            let index = r.word * 64 + twice.trailing_zeros();
                            report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s);
                        }
                        if let Err((e, index)) = Slab::put_bits(s, class, r.word, r.bits) {
                            report_bad_free(e, Slab::block_at(s, index), class, s);
                        }
                        back += i64::from(r.bits.count_ones());
                        if was_full {
                            unlink(&raw mut (*o).full, s);
                            push(&raw mut (*o).partial, s);
                        }
                        if (*s).free == (*s).capacity && (*o).len > 1 {
                            unlink(&raw mut (*o).partial, s);
                            (*o).len -= 1;
                            self.class(class)
                                .hand_over(class, self.pool(class), &self.source, s);
                        }
                        continue;
                    }
                    let to_lock = if owner != 0 {
                        // Free in the owner's bitmap: a double free (a block this thread frees is out,
                        // so its bit there is clear; the owner may take it meanwhile, which makes
                        // this look miss, never err).
                        let twice = (*s)
                            .bitmap
                            .get(r.word as usize)
                            .map_or(0, |w| w.load(Ordering::Relaxed))
                            & r.bits;
                        if twice != 0 {
                            let index = r.word * 64 + twice.trailing_zeros();
                            report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s);
                        }
                        match (*s).remote.free_bits(&(*s).owner, r.word, r.bits) {
                            Err(index) => {
                                report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s)
                            }
                            Ok(RemoteFree::Recorded {
                                notify_owner,
                                fold_now,
                            }) => {
                                if let Some(t) = notify_owner {
                                    hint_owner(t, class);
                                }
                                // Handed to the class meanwhile: fold under its lock.
                                fold_now.then_some(Returning::fold(s))
                            }
                            Ok(_) => None,
                        }
                    } else {
                        Some(r)
                    };
                    if let Some(r) = to_lock {
                        if let Some(slot) = to_class.get_mut(nc) {
                            slot.write(r);
                            nc += 1;
                        }
                    }
                }
                if nc > 0 {
                    // The first `nc` entries were written just above (`nc` counts only those).
                    let runs = scratch::written(&to_class, nc);
                    self.class(class)
                        .flush_runs(class, self.pool(class), &self.source, self.checks(), runs);
                }
                OwnedSlabs::bump(&(*o).flushes);
                OwnedSlabs::add(&(*o).outstanding, -back);
            }
        }
    }

    /// Hands every slab `tc` owns to its class and adds its counters to the class's: its thread exits,
    /// or its cache is taken from a thread that died without the exit hook.
    ///
    /// # Safety
    ///
    /// `tc` is a cache only the calling thread uses now, whose magazines were flushed, and whose owned
    /// slabs nobody else writes (its thread is gone or is the caller).
    pub(super) unsafe fn hand_over_owned(&self, tc: *mut ThreadCache) {
        for class in 0..NUM_CLASSES {
            // SAFETY: per the caller.
            unsafe {
                let o = owned_of(tc, class);
                if o.is_null() {
                    continue;
                }
                for head in [&raw mut (*o).partial, &raw mut (*o).full] {
                    let mut s = (*head).cast::<Slab>();
                    *head = ptr::null_mut();
                    while !s.is_null() {
                        let next = (*s).next;
                        self.class(class)
                            .hand_over(class, self.pool(class), &self.source, s);
                        s = next;
                    }
                }
                (*o).len = 0;
                self.take_owned_counts(o, class);
            }
        }
    }

    /// Forgets the slabs a cache of a thread of the parent process owned (`fork`: that thread may have
    /// been changing them when the process forked). They keep a token nobody holds: their blocks still
    /// out are freed into their remote bits and never reused, as mimalloc does with the pages of such
    /// threads.
    ///
    /// # Safety
    ///
    /// `tc` is a cache the calling thread is taking over in a `fork` child.
    pub(super) unsafe fn forget_owned(&self, tc: *mut ThreadCache) {
        for class in 0..NUM_CLASSES {
            // SAFETY: per the caller.
            unsafe {
                let o = owned_of(tc, class);
                if o.is_null() {
                    continue;
                }
                (*o).partial = ptr::null_mut();
                (*o).full = ptr::null_mut();
                (*o).len = 0;
                self.take_owned_counts(o, class);
            }
        }
    }

    /// Moves an owned entry's counters into its class's.
    ///
    /// # Safety
    ///
    /// `o` is an entry of a cache only the calling thread uses.
    unsafe fn take_owned_counts(&self, o: *mut OwnedSlabs, class: usize) {
        // SAFETY: per the caller; the counters are atomics.
        unsafe {
            let r = (*o).refills.swap(0, Ordering::Relaxed);
            let f = (*o).flushes.swap(0, Ordering::Relaxed);
            let n = (*o).outstanding.swap(0, Ordering::Relaxed);
            if r | f != 0 || n != 0 {
                self.class(class).take_counts(r, f, n);
            }
        }
    }
}
