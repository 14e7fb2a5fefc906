//! A magazine's operations: per thread, per class, a stack of free block pointers (its layout is in
//! `thread_cache.rs`): pop, push, the push of a block being freed with its key, refill and flush, and the
//! flush epochs the keys carry.
//!
//! Alloc is `slots[--count]`, free is `slots[count++] = p` (the block alloc hands out is read from a
//! copy of the top slot, [`Magazine::top`], so that it need not wait for the count's load, then checked
//! against the slot). Nothing here takes a lock or does an atomic read-modify-write, and allocation
//! never loads or stores the memory of a block: "what is free next" is in this metadata, not inside the
//! free block (the SLUB "extra hop" this project exists to remove). A free writes one word into the
//! block it takes back, its free key (see `free_key`), as glibc's tcache does: the block was just in the
//! caller's hands, so its line is warm. When a magazine is empty or full the caller falls to the
//! `#[cold]` slow path (`slow`, then `heap`), which refills half a magazine from the central heap or
//! flushes the newer half back to it.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use super::free_key::*;
use super::thread_cache::{Magazine, ThreadCache};
use crate::size_class::{class_size, GROWN_BUDGET, MAG_CAPACITY, MAG_GROWN, MAG_MAX, NUM_CLASSES};
use crate::stats::stat;

/// Every so many of a cache's flush epochs, each of its open magazines takes a new one
/// ([`ThreadCache::next_epoch`]): a quarter of the 65 536 a key tells apart.
pub const EPOCH_REFRESH: u32 = 1 << 14;

/// What [`ThreadCache::push_keyed`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Push {
    /// The block is in the magazine, its key written.
    Done,
    /// No room (or the empty cache): nothing was read or written.
    Full,
    /// The block's first word is a key for another place: check before freeing (nothing was written).
    Suspect,
}

impl Push {
    /// What a free does once its push is tried, the same on every free path: a block now in the
    /// magazine is counted (`free_fast`); one whose first word is a key for another place goes to
    /// `suspect` (the look where the key says), one that found no room to `full` (a flush first).
    ///
    /// # Safety
    ///
    /// `tc` is the cache the push went into and `class` its magazine's class; `tc` is live when the
    /// push is [`Push::Done`] (the empty cache never takes a block).
    #[inline(always)]
    #[cfg_attr(not(feature = "stats"), allow(unused_variables))]
    pub unsafe fn settle(
        self,
        tc: *mut ThreadCache,
        class: usize,
        suspect: impl FnOnce(),
        full: impl FnOnce(),
    ) {
        match self {
            Push::Done => {
                // SAFETY: per the caller, a push that is done went into a live cache.
                stat!(unsafe { (*tc).counters[class].free_fast.bump() });
            }
            Push::Suspect => suspect(),
            Push::Full => full(),
        }
    }
}

/// What a flush leaves in a slot it took `p` from: `p` with its low bit set (blocks are aligned to at
/// least 8, so no block is ever that). The owner's check of an unwritten free then tells a block popped
/// from the slot (`p` still there) from one flushed from it ([`ThreadCache::take_newest`]).
#[inline(always)]
fn flushed(p: *mut u8) -> *mut u8 {
    p.map_addr(|a| a | 1)
}

impl ThreadCache {
    /// Sets the capacity of `class` if the thread has not used it yet.
    ///
    /// # Safety
    ///
    /// `tc` is a live (not the empty) cache of the calling thread; `class < NUM_CLASSES`.
    #[inline]
    pub unsafe fn open(tc: *mut ThreadCache, class: usize) {
        // SAFETY: per the caller, the magazine is the calling thread's own.
        unsafe {
            let m = Self::mag(tc, class);
            if (*m).cap == 0 {
                (*m).cap = MAG_CAPACITY.get(class).copied().unwrap_or(2);
                // An epoch no magazine of this cache had since its count last wrapped.
                let e = Self::next_epoch(tc);
                Self::flush_state_of(m)
                    .0
                    .store(tag_at((*tc).id as usize, e), Ordering::Relaxed);
            }
        }
    }

    /// Pops a block, or returns null when the magazine is empty.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn pop(tc: *mut ThreadCache, class: usize) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { Self::try_pop(tc, class) }.unwrap_or(core::ptr::null_mut())
    }

    /// Pops a block; `None` when the magazine is empty. The fast path's form: the answer is the count
    /// test alone (whatever the slot holds), handed out from the `top` copy after a predicted test
    /// against the slot (see [`Magazine::top`]).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn try_pop(tc: *mut ThreadCache, class: usize) -> Option<*mut u8> {
        // SAFETY: per the caller, `m` is a magazine only this thread writes.
        unsafe { Self::try_pop_in(Self::mag(tc, class)) }
    }

    /// [`ThreadCache::try_pop`] from the magazine `m`.
    ///
    /// # Safety
    ///
    /// `m` is a valid magazine only the calling thread writes: of its cache, of the static empty one, or
    /// a magazine of its own (the SLUB experiment's model of hopless).
    #[inline(always)]
    pub unsafe fn try_pop_in(m: *mut Magazine) -> Option<*mut u8> {
        // SAFETY: forwarded.
        match unsafe { Self::pop_in(m) } {
            Popped::Hit(p) => Some(p),
            Popped::Stale(p) => Some(stale_top(p)),
            Popped::Empty => None,
        }
    }

    /// [`ThreadCache::try_pop_in`] with the stale-copy case left to the caller ([`Popped::Stale`]), so
    /// that a fast path with more to do after the pop can send that case out of line whole, instead
    /// of calling out and keeping its registers across the call.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::try_pop_in`].
    #[inline(always)]
    pub unsafe fn pop_in(m: *mut Magazine) -> Popped {
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        if n == 0 {
            return Popped::Empty;
        }
        let n = n - 1;
        // SAFETY: the owner's own field (see `top`), read before the refresh below writes it.
        let guess = unsafe { (*m).top };
        // n < count <= MAG_MAX.
        let p = Self::slot_of(m, n as usize).load(Ordering::Relaxed);
        count.store(n, Ordering::Relaxed);
        // SAFETY: as above; the new top slot (or `top` itself when the magazine is now empty).
        unsafe { (*m).top = Self::slot_below(m, n as usize).load(Ordering::Relaxed) };
        if guess != p {
            return Popped::Stale(p);
        }
        Popped::Hit(guess)
    }

    /// Pushes a block; false when the magazine is full (and nothing was written).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`]; `p` is a block of `class` that the caller gives up.
    #[inline(always)]
    pub unsafe fn push(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        unsafe { Self::push_in(Self::mag(tc, class), p) }
    }

    /// [`ThreadCache::push`] into the magazine `m`.
    ///
    /// # Safety
    ///
    /// `m` is a valid magazine only the calling thread writes; `p` a block of its class that the caller
    /// gives up.
    #[inline(always)]
    pub unsafe fn push_in(m: *mut Magazine, p: *mut u8) -> bool {
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        // SAFETY: per the caller; the slot written below is under `cap <= MAG_MAX`.
        if n >= unsafe { (*m).cap } {
            return false;
        }
        Self::slot_of(m, n as usize).store(p, Ordering::Relaxed);
        // SAFETY: the owner's own field.
        unsafe { (*m).top = p };
        count.store(n + 1, Ordering::Release);
        true
    }

    /// Pushes a block being freed, after its double-free check: writes its key for the slot it takes,
    /// unless its first word is a key for another place ([`Push::Suspect`]: the caller checks).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::push`]; `p` is a block of at least 8 bytes, aligned to 8.
    #[inline(always)]
    pub unsafe fn push_keyed(tc: *mut ThreadCache, class: usize, p: *mut u8) -> Push {
        // SAFETY: per the caller.
        unsafe { Self::push_keyed_in(tc, Self::mag(tc, class), p) }
    }

    /// [`ThreadCache::push_keyed`] into the magazine `m` of `tc`.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::push_keyed`], with `m` the magazine of `p`'s class in `tc`.
    #[inline(always)]
    pub unsafe fn push_keyed_in(tc: *mut ThreadCache, m: *mut Magazine, p: *mut u8) -> Push {
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        // SAFETY: as above.
        let (cap, tag) = unsafe { ((*m).cap, (*m).tag) };
        if n >= cap {
            return Push::Full;
        }
        let key = slot_key(p, tag, n as usize);
        // SAFETY: per the caller, the block's first word is ours to read and write.
        unsafe {
            // The word and the key this push writes differ in their address parts when the word is
            // not a key (the common case: one test of the low bits). Otherwise `d` is 0 for the very
            // key this push writes (a block popped from this slot, unwritten since), else the
            // difference from a key for another place.
            let d = opaque(key_word(p) ^ key);
            if d & KEY_LOW == 0 {
                // A key: the program did not write the block since it was handed out.
                unwritten();
                if d != 0 && !Self::popped_this_epoch(tc, m, n, p, d) {
                    return Push::Suspect;
                }
            }
            write_key(p, key);
        }
        Self::slot_of(m, n as usize).store(p, Ordering::Relaxed);
        // SAFETY: the owner's own field.
        unsafe { (*m).top = p };
        count.store(n + 1, Ordering::Release);
        Push::Done
    }

    /// Pushes a block whose double-free check is done, writing its key; false when full.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::push_keyed`].
    #[inline]
    pub unsafe fn push_checked(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        unsafe {
            let m = Self::mag(tc, class);
            let n = Self::count_of(m).load(Ordering::Relaxed);
            if n >= (*m).cap {
                return false;
            }
            write_key(p, slot_key(p, (*m).tag, n as usize));
            Self::push(tc, class, p)
        }
    }

    /// Fills an empty magazine with `blocks` (at most its capacity); the blocks are not touched, and
    /// the refill filter is left to the first look (`refill_filter`).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`]; the magazine is empty; `blocks` are free blocks of `class`.
    pub unsafe fn fill(tc: *mut ThreadCache, class: usize, blocks: &[*mut u8]) {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = blocks.len().min(MAG_MAX);
        for (i, &p) in blocks.get(..n).unwrap_or_default().iter().enumerate() {
            Self::slot_of(m, i).store(p, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe {
            (*m).refills = (*m).refills.saturating_add(n as u32);
            (*m).active = 1;
            (*m).refilled = n as u32;
            (*m).refill_filter = [0; 2];
            (*m).looks = 0;
            (*m).top = Self::slot_below(m, n).load(Ordering::Relaxed);
        }
        Self::count_of(m).store(n as u32, Ordering::Release);
    }

    /// Takes the newest `k` blocks (the top of the magazine) into `out` (which holds at least `k`);
    /// returns how many it took, leaves each tagged ([`flushed`]) in the slot it took it from, and
    /// starts the magazine's next flush epoch (`cache::free_key`). The blocks that stay do not move, so
    /// every keyed block's key still names its slot, and nothing is read or written in block memory.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`].
    pub unsafe fn take_newest(
        tc: *mut ThreadCache,
        class: usize,
        k: usize,
        out: &mut [MaybeUninit<*mut u8>],
    ) -> usize {
        // SAFETY: forwarded.
        unsafe { Self::take(tc, class, k, out, true) }
    }

    /// Takes `k` more of the newest blocks into `out` after [`ThreadCache::take_newest`] took some, in
    /// the same flush epoch: one flush of more than [`BATCH_MAX`](crate::size_class::BATCH_MAX) blocks,
    /// a scratch buffer at a time. Returns how many it took.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::take_newest`], which the calling thread called on this magazine last: no
    /// push, refill or other flush of it since.
    pub unsafe fn take_more(
        tc: *mut ThreadCache,
        class: usize,
        k: usize,
        out: &mut [MaybeUninit<*mut u8>],
    ) -> usize {
        // SAFETY: forwarded.
        unsafe { Self::take(tc, class, k, out, false) }
    }

    /// [`ThreadCache::take_newest`] (`opens_epoch`) or [`ThreadCache::take_more`].
    ///
    /// # Safety
    ///
    /// As for those.
    unsafe fn take(
        tc: *mut ThreadCache,
        class: usize,
        k: usize,
        out: &mut [MaybeUninit<*mut u8>],
        opens_epoch: bool,
    ) -> usize {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let count = Self::count_of(m);
        let n = (count.load(Ordering::Relaxed) as usize).min(MAG_MAX);
        let k = k.min(n).min(out.len());
        if k == 0 {
            // Nothing written: a thread's exit looks at every class's magazine, and a store to one it
            // never used would turn a page that reads as the zero page into a copy (a write fault, and
            // a TLB shootdown on every core running the process), to be given back again at once.
            return 0;
        }
        // The blocks taken keep their keys: the next epoch tells them from the blocks pushed after
        // this. Each slot taken keeps its block, tagged (`flushed`), until a later push or refill
        // writes it: a reader (the double-free check) that saw the old count still finds the block
        // there, and the owner's check of an earlier epoch's key tells a block popped from a slot from
        // one flushed from it (`own_key_says`).
        count.store((n - k) as u32, Ordering::Release);
        // SAFETY: per the caller, `tc` is the calling thread's cache; `top`, `refills` and the flush
        // state are its own fields.
        unsafe {
            (*m).top = Self::slot_below(m, n - k).load(Ordering::Relaxed);
            if opens_epoch {
                Self::move_to_epoch(m, (*tc).id as usize, Self::next_epoch(tc), (n - k) as u32);
                (*m).refills = 0;
            } else {
                // The flush goes on in its epoch: it now started lower, and keys of the epoch before
                // in the slots it takes no longer count as written since (`keyed_since_flush`).
                Self::flush_state_of(m).2.store((n - k) as u32, Ordering::Relaxed);
            }
        }
        Self::take_slots(m, n - k, out.get_mut(..k).unwrap_or_default());
        k
    }

    /// Copies the blocks of the slots from `from` into `out` (one per entry), leaving each slot holding
    /// its block tagged ([`flushed`]).
    fn take_slots(m: *mut Magazine, from: usize, out: &mut [MaybeUninit<*mut u8>]) {
        for (i, o) in out.iter_mut().enumerate() {
            let slot = Self::slot_of(m, from + i);
            let p = slot.load(Ordering::Relaxed);
            slot.store(flushed(p), Ordering::Relaxed);
            o.write(p);
        }
    }

    /// Grows the full magazine of `class` (doubling its capacity, up to [`MAG_GROWN`] and the cache's
    /// [`GROWN_BUDGET`]) when it has flushed before and its refills since its last flush brought at
    /// least its capacity in blocks:
    /// the class's working set is larger than the magazine and cycles through the central heap (a
    /// count that only wanders between empty and full, as in a thread that frees other threads' blocks
    /// and allocates as many, refills less before it fills), where each block would pay a flush and a
    /// refill (a bitmap edit under the class lock each way, and a double-free look at its next free,
    /// its key being of an epoch the flush closed). Grown, the blocks stay in their slots, keyed for
    /// them. False when it did not grow.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`].
    pub unsafe fn grow(tc: *mut ThreadCache, class: usize) -> bool {
        // SAFETY: per the caller, the magazine and the budget are the calling thread's own.
        unsafe {
            let m = Self::mag(tc, class);
            let cap = (*m).cap;
            let most = MAG_GROWN.get(class).copied().unwrap_or(0);
            // Not before its first flush (`epoch_step` 0): a burst of allocations freed at once is a
            // working set seen once, which growth would keep in the magazine (and its slabs resident
            // while the thread idles); a working set that cycles comes round again.
            if (*m).refills < cap || cap == 0 || cap >= most || (*m).epoch_step == 0 {
                return false;
            }
            let to = cap.saturating_mul(2).min(most);
            let bytes = (to - cap) as usize * class_size(class);
            if (*tc).grown_bytes + bytes > GROWN_BUDGET {
                return false;
            }
            (*tc).grown_bytes += bytes;
            (*m).cap = to;
            (*m).active = 1;
            true
        }
    }

    /// Halves the capacity of a grown magazine of `class` (not below its first one) when it filled
    /// without a refill since its last flush: the class is only freed now, and the blocks a larger
    /// working set left are better back in their slabs. Returns how many blocks the magazine keeps
    /// through the flush that follows: half its capacity.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`].
    pub unsafe fn shrink(tc: *mut ThreadCache, class: usize) -> usize {
        // SAFETY: per the caller.
        unsafe {
            let m = Self::mag(tc, class);
            let first = MAG_CAPACITY.get(class).copied().unwrap_or(2);
            if (*m).refills == 0 && (*m).cap > first {
                let to = ((*m).cap / 2).max(first);
                Self::give_up_growth(tc, class, to);
            }
            ((*m).cap / 2) as usize
        }
    }

    /// Sets the capacity of the magazine of `class` back to `to` (at least its first one, at most what
    /// it is), giving the growth back to the cache's budget. The magazine holds at most `to` blocks
    /// once its caller's flush is done.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::open`].
    pub unsafe fn give_up_growth(tc: *mut ThreadCache, class: usize, to: u32) {
        // SAFETY: per the caller.
        unsafe {
            let m = Self::mag(tc, class);
            let cap = (*m).cap;
            let to = to.max(MAG_CAPACITY.get(class).copied().unwrap_or(2));
            if cap > to {
                (*m).cap = to;
                let bytes = (cap - to) as usize * class_size(class);
                (*tc).grown_bytes = (*tc).grown_bytes.saturating_sub(bytes);
            }
        }
    }

    /// Moves the magazine `m` of cache `id` to epoch `e`: its epoch so far becomes the one before, for
    /// the slots below `from` (where a flush started, or the count when an idle magazine moves on).
    ///
    /// # Safety
    ///
    /// `m` is a magazine of the calling thread's live cache, whose id is `id`.
    unsafe fn move_to_epoch(m: *mut Magazine, id: usize, e: usize, from: u32) {
        let (tag, step, last_from) = Self::flush_state_of(m);
        step.store(
            (epoch_of(tag.load(Ordering::Relaxed)) ^ e) as u32,
            Ordering::Relaxed,
        );
        last_from.store(from, Ordering::Relaxed);
        tag.store(tag_at(id, e), Ordering::Relaxed);
    }

    /// The cache's next flush epoch (see `epochs`), within the key's 16 bits.
    ///
    /// Every [`EPOCH_REFRESH`] epochs, each open magazine of the cache moves on to an epoch of its own
    /// first, as if it had flushed nothing: an idle magazine's epoch (and the one before it) would
    /// otherwise grow old while busier classes take the counter round, until a fresh key of another
    /// class took the same 16 bits (a block of that key whose slab then went to the idle class, freed
    /// twice, would pass for one popped in its epoch). So every magazine's epoch and the one before it
    /// are at most twice that old, each a different value of the last 65 536.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache of the calling thread.
    unsafe fn next_epoch(tc: *mut ThreadCache) -> usize {
        // SAFETY: per the caller, only this thread writes it and its magazines' epochs.
        unsafe {
            (*tc).epochs = (*tc).epochs.wrapping_add(1);
            if (*tc).epochs & (EPOCH_REFRESH - 1) == 0 {
                let id = (*tc).id as usize;
                for class in 0..NUM_CLASSES {
                    let m = Self::mag(tc, class);
                    if (*m).cap == 0 {
                        continue;
                    }
                    (*tc).epochs = (*tc).epochs.wrapping_add(1);
                    // Keys of the epoch it leaves count as the epoch before's only for blocks still
                    // in the magazine (below the count), which the slot look finds anyway.
                    let from = Self::count_of(m).load(Ordering::Relaxed);
                    Self::move_to_epoch(m, id, (*tc).epochs as usize & EPOCH_MASK, from);
                }
                (*tc).epochs = (*tc).epochs.wrapping_add(1);
            }
            (*tc).epochs as usize & EPOCH_MASK
        }
    }
}

/// What a pop found: the block, from the `top` copy; the block, with the copy stale (a path changed
/// the slots without it: the block is the top slot's, and the caller goes out of line to keep the
/// test a branch, see `Magazine::top`); or an empty magazine.
pub enum Popped {
    Hit(*mut u8),
    Stale(*mut u8),
    Empty,
}

/// A pop's way out when the magazine's `top` copy was stale (a path changed the slots without it): the
/// top slot's block. Out of line, so that the test stays a branch: as a select, the pop's result would wait for the
/// slot's load again (see `Magazine::top`).
#[cold]
#[inline(never)]
fn stale_top(p: *mut u8) -> *mut u8 {
    core::hint::black_box(p)
}
