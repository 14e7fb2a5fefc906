//! The magazine: per thread, per class, a stack of free block pointers, and [`ThreadCache`], a thread's
//! magazines of every class.
//!
//! Alloc is `slots[--count]`, free is `slots[count++] = p` (the block alloc hands out is read from a
//! copy of the top slot, [`Magazine::top`], so that it need not wait for the count's load, then checked
//! against the slot). Nothing here takes a lock or does an atomic
//! read-modify-write, and allocation never loads or stores the memory of a block: "what is free next" is
//! in this metadata, not inside the free block (the SLUB "extra hop" this project exists to remove). A
//! free writes one word into the block it takes back, its free key (below), as glibc's tcache does: the
//! block was just in the caller's hands, so its line is warm. When a magazine is empty
//! or full the caller falls to the `#[cold]` slow path (`slow`, then `heap`), which refills half a magazine from the
//! central heap or flushes the newer half back to it.

use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::free_key::*;
use super::owned::{OwnedSlabs, FORK_GENERATION, TOKEN_ID_BITS};
use crate::size_class::{self, MAG_CAPACITY, MAG_MAX, NUM_CLASSES, SMALL_MAX};
#[cfg(feature = "stats")]
use crate::stats::ThreadCounters;

/// Every so many of a cache's flush epochs, each of its open magazines takes a new one
/// ([`ThreadCache::next_epoch`]): a quarter of the 65 536 a key tells apart.
pub const EPOCH_REFRESH: u32 = 1 << 14;

/// Looks through the refilled slots after which the rest of a refill is keyed (see
/// [`ThreadCache::check_refilled`]).
pub const KEY_AFTER_LOOKS: u32 = 2;

/// Free blocks of one class owned by one thread. One or more cache lines of its own.
///
/// Invariant: `count <= cap <= MAG_MAX`; `slots[..count]` are distinct free blocks of this class, each
/// in use by nobody and not free in its slab's bitmap. `cap` is zero until the thread first uses the
/// class (so a cache costs pages only for the classes its thread uses), and always in the static empty
/// cache, whose fast paths therefore fall through to set-up.
///
/// Only the owning thread writes a magazine. Another thread may read `count` and `slots[..count]` (the
/// double-free check looks for a block in every thread's cache), so the owner writes `count` with
/// release after the slots it covers, and single slots atomically; on x86-64 both are plain moves.
#[repr(C, align(64))]
pub struct Magazine {
    pub count: u32,
    pub cap: u32,
    /// This magazine's part of the free key: the process's salt with its cache's id in bits 55..64 (set
    /// with `cap`) and its flush epoch in bits 32..48 (the next at each flush, `take_newest`).
    pub tag: u64,
    /// Slots below this (and below `count`) may hold blocks a refill put there, which carry what their
    /// last free or flush left (a key for another slot or cache, a mark) rather than their slot's key;
    /// the double-free check looks through them (pops do not lower it, so the range may also hold
    /// blocks pushed since: looking at them too is only slower, never wrong). Every slot at or above it
    /// that holds anything but a fresh block holds its slot's key. Zero after
    /// [`ThreadCache::key_refilled`] gave the refill's blocks their keys.
    pub refilled: u32,
    /// Frees since the last refill whose double-free check looked through the refilled slots (a block with
    /// a key for elsewhere or a mark, whose filter bit is set): at [`KEY_AFTER_LOOKS`], the rest of the refill is keyed
    /// ([`ThreadCache::check_refilled`]). In the padding after `refilled`: the slots do not move.
    pub looks: u32,
    /// A 128-bit filter of the refilled blocks still here (bit `refill_bit(p)` set for each): a block
    /// whose bit is clear is not among them, so the double-free check of such a block skips the look
    /// through the refilled slots. Zero from each refill to the first look after it
    /// (`ThreadCache::refilled_to_look`), which builds it from the slots below `refilled` and the
    /// count then: most refills are never looked through, and hashing every block they move cost 8
    /// of the refill's 14 instructions a block. A built filter is never zero (the look builds it
    /// only from at least one slot, and each sets a bit), so zero says "not built". Cleared with
    /// `refilled` by [`ThreadCache::key_refilled`].
    pub refill_filter: [u64; 2],
    /// Where the last flush started: it took the slots from here up to the count it found.
    pub flushed_from: u32,
    /// The last epoch XOR the one before it (how a key of the epoch before differs from this epoch's
    /// in its epoch bits), or 0 before the first flush.
    pub epoch_step: u32,
    /// A copy of the top slot, `slots[count - 1]`, so that a pop's result
    /// does not wait for the count. In a free-then-malloc chain (a program freeing a block and
    /// allocating again at once) the count is a store a moment old, and the top slot's address needs
    /// it: `slots[--count]` waits for two store-to-load forwards in a row (the count's, then the
    /// slot's), where `top` waits for one. Pushes, pops, refills ([`ThreadCache::fill`]) and flushes
    /// ([`ThreadCache::take_newest`]) all keep it. A pop still loads the slot and hands that out
    /// whenever the two differ, so `top` is only a guess a predicted branch confirms: a path that
    /// changed the slots and forgot the copy would cost a mispredict, never a wrong block. A
    /// `malloc`/`free` pair of 16 B in a C loop on the 2-core Intel VM: 9.7 ns without it, 5.8 with
    /// it (4.9 in `bench alloc --c-abi`'s `pair-16`). Right below `slots` (asserted), where
    /// `slots[-1]` would be: the pop's refresh from `slots[count - 1]` needs no test when the count
    /// reaches 0 (it reads `top`). Only the owner reads or writes it.
    pub top: *mut u8,
    pub slots: [*mut u8; MAG_MAX],
}

// `top` is where `slots[-1]` would be (see `ThreadCache::try_pop_in`).
const _: () = assert!(
    core::mem::offset_of!(Magazine, slots) == core::mem::offset_of!(Magazine, top) + core::mem::size_of::<*mut u8>()
);

/// One thread's cache. Allocated from the page source, never through the allocator's public path; parked
/// for the next thread when its thread exits (its magazine pages given back), or unmapped past a limit.
/// The registry fields come first so that a parked cache keeps only its first page.
impl Magazine {
    /// An empty magazine of capacity `cap` (at most [`MAG_MAX`]) and no key tag.
    pub const fn with_capacity(cap: u32) -> Self {
        Magazine {
            count: 0,
            cap,
            tag: 0,
            refilled: 0,
            looks: 0,
            refill_filter: [0; 2],
            flushed_from: 0,
            epoch_step: 0,
            top: core::ptr::null_mut(),
            slots: [core::ptr::null_mut(); MAG_MAX],
        }
    }
}

#[repr(C)]
pub struct ThreadCache {
    /// Every cache the registry holds (live and parked), and the parked ones.
    pub next_all: *mut ThreadCache,
    pub next_parked: *mut ThreadCache,
    /// The kernel thread id of the owner (for finding caches whose thread died without retiring them).
    pub owner_tid: AtomicI32,
    /// This cache's number in `CACHE_TABLE` (1..`MAX_CACHE_ID`), or 0 when the table was full.
    pub id: u32,
    /// 1 while the cache is parked with its magazine pages resident (counted in the registry's `warm`);
    /// guarded by the registry lock.
    pub warm: u32,
    /// A thread uses this cache (false while parked).
    pub live: AtomicBool,
    /// The token its slabs carry as their owner (`cache::owned`); 0: it owns none.
    pub token: u32,
    /// `owned::FORK_GENERATION` when its holder took it: older, its holder was a thread of a parent
    /// process, and its owned slabs are left alone (`Heap::new_thread_cache`).
    pub generation: u32,
    /// The last flush epoch handed to one of this cache's magazines: opening a magazine and each flush
    /// take the next (`cache::free_key`). A key's epoch then names one magazine's stretch between two
    /// flushes whatever the class (a slab emptied and taken by another class keeps its blocks' keys),
    /// and a cache taken again continues where its last holder stopped (its magazine pages, given
    /// back, read as zero). Only the holder writes it; in the first page, which a parked cache keeps.
    pub epochs: u32,
    #[cfg(feature = "stats")]
    pub counters: [ThreadCounters; NUM_CLASSES],
    pub mags: [Magazine; NUM_CLASSES],
    /// Per class: set by a thread that freed a block into one of this cache's owned slabs (the first
    /// since its last fold); the owner folds its slabs of the class at its next refill. After the
    /// magazines, so that they start where they did before owned slabs.
    pub remote_hint: [AtomicU32; NUM_CLASSES],
    /// Per class, the slabs this cache owns (`cache::owned`). Empty whenever the cache is parked (its
    /// thread's exit handed them to their classes), so the pages this lies in may be given back.
    pub owned: [OwnedSlabs; NUM_CLASSES],
}

/// Where the magazine of `class` is in a [`ThreadCache`], in bytes. The C fast paths go from a block's slab
/// header (`Slab::mag_offset`) or from `malloc`'s size ([`MALLOC_MAG_OFFSET`]) to the magazine with one
/// add, instead of multiplying a class index by the magazine's size.
pub const fn mag_offset(class: usize) -> u32 {
    (core::mem::offset_of!(ThreadCache, mags) + class * core::mem::size_of::<Magazine>()) as u32
}

/// The class whose magazine is at `off` (the inverse of [`mag_offset`]; for the slow paths and counters).
#[inline]
pub const fn class_at_mag_offset(off: u32) -> usize {
    (off as usize - core::mem::offset_of!(ThreadCache, mags)) / core::mem::size_of::<Magazine>()
}

/// `MALLOC_MAG_OFFSET[(size + 7) / 8]` is the [`mag_offset`] of C `malloc(size)`'s class
/// (`size_class::malloc_class`), for `size` in `0..=SMALL_MAX`: one table load on `malloc`'s path.
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub static MALLOC_MAG_OFFSET: [u32; SMALL_MAX / 8 + 1] = {
    let mut out = [0u32; SMALL_MAX / 8 + 1];
    let mut i = 0;
    while i < out.len() {
        out[i] = mag_offset(size_class::SMALL_CLASS_OF[i] as usize);
        i += 1;
    }
    out
};

// The offsets fit the slab header's `u32` with room to spare.
const _: () = assert!(core::mem::size_of::<ThreadCache>() < u32::MAX as usize);

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

/// What [`ThreadCache::own_key_says`] makes of a key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OwnKey {
    /// Popped from the slot the key names and handed out since: a correct free.
    Popped,
    /// From before a flush that may have taken the block: look in its slab and this magazine's refill.
    Stale,
    /// Look where the key says.
    Look,
}

/// What a flush leaves in a slot it took `p` from: `p` with its low bit set (blocks are aligned to at
/// least 8, so no block is ever that). The owner's check of an unwritten free then tells a block popped
/// from the slot (`p` still there) from one flushed from it ([`ThreadCache::take_newest`]).
#[inline(always)]
fn flushed(p: *mut u8) -> *mut u8 {
    p.map_addr(|a| a | 1)
}

/// Whether a slot value read below a count read just before is `p`: the block itself, or the block
/// tagged by a flush that took it after that count was read (a slot below the count is written only
/// after the count drops below it, and rewritten before the count rises above it again).
#[inline]
fn is_or_flushed(v: *mut u8, p: *mut u8) -> bool {
    // `p` is 8-aligned: `p` and `flushed(p)` differ in bit 0 alone, so one masked compare tells both.
    v.addr() & !1 == p.addr()
}

impl ThreadCache {
    /// The cache of a thread that has not allocated yet: every capacity zero. (Used to initialise
    /// statics and fresh caches; its counters are never shared through the constant.)
    #[allow(clippy::declare_interior_mutable_const)]
    pub const EMPTY: ThreadCache = {
        // SAFETY: `zeroed` is sound for a type whose every field accepts the all-zero bit pattern:
        // 1. the integers (`count`, `cap`, `tag`, `refilled`, `id`, `token`, `generation`, the owned
        //    lists' `len`, ...) and their arrays: zero is a value (token 0: it owns no slab);
        // 2. the raw pointers (`slots`, `next_all`, `next_parked`, the owned lists' heads): null is a
        //    value (never dereferenced while null: the lists end at null, and slots below `count == 0`
        //    are never read);
        // 3. the atomics (`owner_tid`, `live`, the counters, the remote-free hints) have the layout of
        //    their integers;
        // 4. there are no references, `NonNull`s, enums or `bool`s outside atomics.
        // The constant is copied into statics and fresh caches, so no interior mutability is shared.
        unsafe { core::mem::zeroed() }
    };

    /// The magazine of `class`.
    ///
    /// # Safety
    ///
    /// `tc` is a live cache of the calling thread (or the static empty one) and `class < NUM_CLASSES`.
    #[inline(always)]
    pub unsafe fn mag(tc: *mut ThreadCache, class: usize) -> *mut Magazine {
        // SAFETY: per the caller, `mag_offset(class)` is a magazine's offset in `*tc`.
        unsafe { Self::mag_at(tc, mag_offset(class)) }
    }

    /// The magazine at byte offset `off` of `tc`.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`], with `off == mag_offset(class)`.
    #[inline(always)]
    pub unsafe fn mag_at(tc: *mut ThreadCache, off: u32) -> *mut Magazine {
        // SAFETY: per the caller, `off` is a magazine's offset inside `*tc`; no reference is created.
        unsafe { tc.byte_add(off as usize).cast::<Magazine>() }
    }

    #[inline(always)]
    fn count_of(m: *mut Magazine) -> &'static AtomicU32 {
        // SAFETY: `m` is a valid magazine (callers' contract); its `count` is aligned for an atomic and
        // every concurrent access to it is atomic. The cache outlives every use of the reference.
        unsafe { AtomicU32::from_ptr(&raw mut (*m).count) }
    }

    #[inline(always)]
    fn slot_of(m: *mut Magazine, i: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: as for `count_of`; `i < MAG_MAX` is the callers' contract.
        unsafe { AtomicPtr::from_ptr((&raw mut (*m).slots).cast::<*mut u8>().add(i)) }
    }

    /// `slots[i - 1]`, or `top` when `i` is 0: the top slot of a magazine holding `i` blocks, or the
    /// copy itself when it holds none.
    #[inline(always)]
    fn slot_below(m: *mut Magazine, i: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: as for `count_of`; `i <= MAG_MAX` is the callers' contract, and `top` is right below
        // `slots` (asserted at `Magazine`), so the word is `slots[i - 1]`, or `top` at 0, inside the
        // magazine. The owner accesses `top` alone, plainly or through this, never at once.
        unsafe { AtomicPtr::from_ptr((&raw mut (*m).top).add(i)) }
    }

    /// `tag`, `epoch_step` and `flushed_from`, which another thread's double-free check reads
    /// ([`ThreadCache::may_have_flushed`]): the owner writes them atomically (and reads them plainly).
    #[inline(always)]
    fn flush_state_of(m: *mut Magazine) -> (&'static AtomicU64, &'static AtomicU32, &'static AtomicU32) {
        // SAFETY: as for `count_of`.
        unsafe {
            (
                AtomicU64::from_ptr(&raw mut (*m).tag),
                AtomicU32::from_ptr(&raw mut (*m).epoch_step),
                AtomicU32::from_ptr(&raw mut (*m).flushed_from),
            )
        }
    }

    /// Blocks in the magazine of `class`.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`].
    #[inline(always)]
    pub unsafe fn count(tc: *mut ThreadCache, class: usize) -> usize {
        // SAFETY: per the caller.
        Self::count_of(unsafe { Self::mag(tc, class) }).load(Ordering::Relaxed) as usize
    }

    /// The block in slot `i` of the magazine of `class` (for tests).
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::mag`]; `i < MAG_MAX`.
    #[cfg(test)]
    pub unsafe fn slot(tc: *mut ThreadCache, class: usize, i: usize) -> *mut u8 {
        // SAFETY: per the caller.
        Self::slot_of(unsafe { Self::mag(tc, class) }, i).load(Ordering::Relaxed)
    }

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
                Self::flush_state_of(m).0.store(tag_at((*tc).id as usize, e), Ordering::Relaxed);
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
        let count = Self::count_of(m);
        let n = count.load(Ordering::Relaxed);
        if n == 0 {
            return None;
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
            return Some(stale_top(p));
        }
        Some(guess)
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
            // The word and the key this push writes, rotated so that the address parts are the high
            // bits: above `WHERE_MASK` when they differ, so the word is not a key (the common case, one
            // compare). Otherwise `d` (rotated back) is 0 for the very key this push writes (a block
            // popped from this slot, unwritten since), else the difference from a key for another
            // place.
            let x = opaque((key_word(p) ^ key).rotate_left(WHERE_ROTATE));
            if x <= WHERE_MASK {
                // A key: the program did not write the block since it was handed out.
                unwritten();
                let d = x.rotate_right(WHERE_ROTATE);
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

    /// The first word of `p` is a key, other than the one slot `n` would get (`d`: the difference).
    /// When it is this cache's key of this epoch for another slot, and that slot does not hold `p`
    /// below the count, the block was popped from there since (pushed there since the last flush, it
    /// left the slot only by a pop): a correct free, decided with one look ([`ThreadCache::holds_at`],
    /// as the slow path would). Anything else is for the slow path ([`ThreadCache::own_key_says`],
    /// then the look where the key says).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache, `m` one of its magazines, holding `n` blocks.
    #[inline]
    unsafe fn popped_this_epoch(tc: *mut ThreadCache, m: *mut Magazine, n: u32, p: *mut u8, d: usize) -> bool {
        // SAFETY: `tc` is the calling thread's live cache, per the caller.
        let id = unsafe { (*tc).id };
        // Another cache's key, or another epoch's (the id and epoch bits differ: all but the slot's).
        if (d >> EPOCH_SHIFT) & !((MAG_MAX - 1) << (SLOT_SHIFT - EPOCH_SHIFT)) != 0 || id == 0 {
            return false;
        }
        let slot = ((d >> SLOT_SHIFT) & (MAG_MAX - 1)) ^ n as usize;
        // The count the caller read: only this thread changes it.
        !Self::slot_below_holds(m, slot, n as usize, p)
    }

    /// What the slow path makes of a block whose first word is a key other than the one the next push
    /// into the magazine of `class` would write (a free [`Push::Suspect`] sent here), when it is this
    /// cache's:
    /// - [`OwnKey::Popped`]: of this epoch, or of the one before for a slot below where the last flush
    ///   started (pushed there since the last flush that could have taken it), and the slot does not
    ///   hold it below the count; or of an earlier epoch with the slot, at or above the count, holding
    ///   it untagged (no flush took it from there: [`ThreadCache::take_newest`] tags the slots it
    ///   takes). Popped from that slot since, and handed out: a correct free.
    /// - [`OwnKey::Stale`]: of an earlier epoch, the slot holding something else: a flush may have
    ///   taken it, so it may be free in its slab or refilled into this magazine (the caller looks).
    /// - [`OwnKey::Look`]: anything else (the slot holds it below the count, another cache's key, a
    ///   mark, a cache without an id): the caller looks where the key says.
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache (or the empty one), `class < NUM_CLASSES`, and `p` a
    /// block of `class` whose first word the caller may read.
    pub unsafe fn own_key_says(tc: *mut ThreadCache, class: usize, p: *mut u8) -> OwnKey {
        // SAFETY: per the caller.
        if unsafe { (*tc).id } == 0 {
            return OwnKey::Look;
        }
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // At most the capacity (a full magazine's free comes here too): slots count modulo `MAG_MAX`.
        let n = Self::count_of(m).load(Ordering::Relaxed) as usize;
        // SAFETY: per the caller; the owner reads its own magazine's tag plainly.
        let d = unsafe { key_word(p) ^ slot_key(p, (*m).tag, n & (MAG_MAX - 1)) };
        if d & KEY_LOW != 0 || d >> ID_SHIFT != 0 {
            return OwnKey::Look;
        }
        let slot = ((d >> SLOT_SHIFT) & (MAG_MAX - 1)) ^ (n & (MAG_MAX - 1));
        let holds = Self::slot_of(m, slot).load(Ordering::Relaxed) == p;
        if slot < n && holds {
            return OwnKey::Look;
        }
        if Self::keyed_since_flush(m, (d >> EPOCH_SHIFT) & EPOCH_MASK, slot) || holds {
            OwnKey::Popped
        } else {
            OwnKey::Stale
        }
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
        // SAFETY: per the caller, `tc` is the calling thread's cache; `top` is its own field.
        unsafe {
            (*m).top = Self::slot_below(m, n - k).load(Ordering::Relaxed);
            Self::move_to_epoch(m, (*tc).id as usize, Self::next_epoch(tc), (n - k) as u32);
        }
        // `k <= out.len()`: one bound for the loop.
        for (i, o) in out.get_mut(..k).unwrap_or_default().iter_mut().enumerate() {
            let slot = Self::slot_of(m, n - k + i);
            let p = slot.load(Ordering::Relaxed);
            slot.store(flushed(p), Ordering::Relaxed);
            o.write(p);
        }
        k
    }

    /// Moves the magazine `m` of cache `id` to epoch `e`: its epoch so far becomes the one before, for
    /// the slots below `from` (where a flush started, or the count when an idle magazine moves on).
    ///
    /// # Safety
    ///
    /// `m` is a magazine of the calling thread's live cache, whose id is `id`.
    unsafe fn move_to_epoch(m: *mut Magazine, id: usize, e: usize, from: u32) {
        let (tag, step, last_from) = Self::flush_state_of(m);
        step.store((epoch_of(tag.load(Ordering::Relaxed)) ^ e) as u32, Ordering::Relaxed);
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

    /// Whether slot `slot` of the magazine of `class` holds `p` (a keyed block's key names its slot:
    /// blocks never move between slots). Any thread may ask.
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    #[inline]
    pub unsafe fn holds_at(tc: *mut ThreadCache, class: usize, slot: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        unsafe { Self::mag_holds_at(Self::mag(tc, class), slot, p) }
    }

    /// Whether a flush of the magazine of `class` may have taken a block its free put in slot `slot`
    /// at flush epoch `epoch` (a slot key's): not when the key is of this epoch, nor of the one before
    /// for a slot below where the last flush started. A key that is not may be in that slot still (a
    /// look there says), or was popped from it and handed out: nowhere else, so the double-free check
    /// need not look in the slab or a refill. Any thread may ask; read while the owner flushes, the
    /// answer can be a flush late, as the look at the slot can.
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::holds_at`].
    pub unsafe fn may_have_flushed(tc: *mut ThreadCache, class: usize, slot: usize, epoch: usize) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let tag = Self::flush_state_of(m).0.load(Ordering::Relaxed);
        // Zero: a magazine not opened, or whose pages were given back: nothing to go by.
        tag == 0 || !Self::keyed_since_flush(m, epoch ^ epoch_of(tag), slot)
    }

    /// Whether a key for `slot` whose epoch differs from the magazine `m`'s by `step` (their XOR) was
    /// written since the last flush that could have taken its block: of this epoch, or of the one
    /// before for a slot below where the last flush started.
    fn keyed_since_flush(m: *mut Magazine, step: usize, slot: usize) -> bool {
        let (_, last, from) = Self::flush_state_of(m);
        step == 0
            || (step == last.load(Ordering::Relaxed) as usize && slot < from.load(Ordering::Relaxed) as usize)
    }

    /// [`ThreadCache::holds_at`] for the magazine `m`.
    ///
    /// # Safety
    ///
    /// `m` is a magazine of a cache of the registry that stays mapped during the call.
    #[inline]
    unsafe fn mag_holds_at(m: *mut Magazine, slot: usize, p: *mut u8) -> bool {
        let n = (Self::count_of(m).load(Ordering::Acquire) as usize).min(MAG_MAX);
        Self::slot_below_holds(m, slot, n, p)
    }

    /// Whether `slot`, below the count `n` (at most [`MAG_MAX`]) of `m`, holds `p` (or `p` tagged by a
    /// flush).
    #[inline(always)]
    fn slot_below_holds(m: *mut Magazine, slot: usize, n: usize, p: *mut u8) -> bool {
        slot < n && is_or_flushed(Self::slot_of(m, slot).load(Ordering::Relaxed), p)
    }

    /// Whether `p` is among the blocks a refill put in this thread's magazine of `class` that may still be
    /// there (a query: nothing is counted; the double-free check uses [`ThreadCache::check_refilled`]).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache; `class < NUM_CLASSES`.
    pub unsafe fn holds_refilled(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // SAFETY: as above.
        Self::refilled_slots_hold(m, unsafe { Self::refilled_to_look(m, p) }, p)
    }

    /// The double-free check's look for a block `p` whose key says it is elsewhere, or that carries a
    /// mark (flushed to its slab since its last free, perhaps refilled since), among the blocks the
    /// last refill put in this thread's magazine of `class`: whether it is
    /// there. A look that went through the refilled slots (`p`'s filter bit was set) and found nothing
    /// is counted, and the [`KEY_AFTER_LOOKS`]th since the refill keys the rest of the refill
    /// ([`ThreadCache::key_refilled`]): a program that frees its blocks unwritten would otherwise pay
    /// that look at every free, and one that does so now and then pays one look, not the keying's read
    /// and write of every block still in the magazine. (The empty cache, a checked mode's, holds
    /// nothing, so it never looks.)
    ///
    /// # Safety
    ///
    /// As for [`ThreadCache::holds_refilled`], and `tc`'s pushes write keys (the default mode; hardened
    /// mode's cache pushes without them, and its frees never reach this check) or `tc` is the empty
    /// cache.
    pub unsafe fn check_refilled(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        // SAFETY: as above.
        let end = unsafe { Self::refilled_to_look(m, p) };
        if end == 0 {
            return false;
        }
        if Self::refilled_slots_hold(m, end, p) {
            return true;
        }
        // SAFETY: as above; only this thread writes the magazine.
        unsafe {
            (*m).looks += 1;
            if (*m).looks >= KEY_AFTER_LOOKS {
                Self::key_refilled(tc, class);
            }
        }
        false
    }

    /// How many slots the look for `p` goes through: those below `refilled` and `count`, or
    /// none when `p`'s bit in the refill filter is clear (`p` is not a refilled block still here).
    /// The first look after a refill builds the filter (zero until then) from those slots. That finds
    /// every refilled block still in the magazine: a slot below the count changes only after a pop
    /// took the count below it, and a pop hands its block out (freed again, it comes back keyed).
    ///
    /// # Safety
    ///
    /// `m` is a magazine of the calling thread's live cache.
    unsafe fn refilled_to_look(m: *mut Magazine, p: *mut u8) -> usize {
        let n = Self::count_of(m).load(Ordering::Relaxed);
        // SAFETY: per the caller; only this thread writes the magazine and reads its filter.
        let end = unsafe { (*m).refilled.min(n) as usize }.min(MAG_MAX);
        if end == 0 {
            return 0;
        }
        // SAFETY: as above.
        let filter = unsafe {
            if (*m).refill_filter == [0; 2] {
                let mut filter = [0u64; 2];
                for i in 0..end {
                    let b = refill_bit(Self::slot_of(m, i).load(Ordering::Relaxed));
                    if let Some(w) = filter.get_mut(b / 64) {
                        *w |= 1 << (b % 64);
                    }
                }
                (*m).refill_filter = filter;
            }
            (*m).refill_filter
        };
        let b = refill_bit(p);
        if filter.get(b / 64).is_none_or(|w| w & (1 << (b % 64)) == 0) {
            return 0;
        }
        end
    }

    /// Whether one of the first `end` slots of `m` holds `p`.
    fn refilled_slots_hold(m: *mut Magazine, end: usize, p: *mut u8) -> bool {
        (0..end).any(|i| Self::slot_of(m, i).load(Ordering::Relaxed) == p)
    }

    /// Writes its slot key, as a push would have, into every block a refill left in the magazine of
    /// `class` that carries a mark (the slab mark) or a key other than its slot's (the key of
    /// its last free, before a flush took it), and empties the refilled range: from here on every
    /// such block in the magazine carries the key of the slot that holds it. A fresh block, never
    /// written, is left so (the keying does not touch its page, and nothing in it can send a free to
    /// the refilled slots). Another cache's key is most often its stale one; it can also be a double
    /// free from another thread that its check missed, into this magazine's free block, which both
    /// magazines will then hand out: writing over the first word that program may write by then
    /// adds nothing to that. Caches without an id are not keyed: their keys send a free that finds
    /// another slot's key to the search of every magazine, slower than the look this saves.
    /// The double-free check of a keyed block then needs no look through the refilled slots (the key
    /// names the slot that holds it), and a free of one of these blocks from another thread finds its
    /// key and that slot.
    ///
    /// For a program that frees blocks without writing their first word, each free of a refilled block
    /// otherwise looked through up to half a magazine; this writes the blocks still there once per
    /// refill instead (the slow path's writes, never the allocation's).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache, `class < NUM_CLASSES`, and pushes write keys (the
    /// default mode): slots at and above `refilled` hold blocks keyed for their slot.
    unsafe fn key_refilled(tc: *mut ThreadCache, class: usize) {
        // SAFETY: per the caller.
        if unsafe { (*tc).id } == 0 {
            return;
        }
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = Self::count_of(m).load(Ordering::Relaxed);
        // SAFETY: as above; only this thread writes the magazine.
        let (end, tag, own) = unsafe { ((*m).refilled.min(n) as usize, (*m).tag, (*tc).id as usize) };
        for i in 0..end.min(MAG_MAX) {
            let p = Self::slot_of(m, i).load(Ordering::Relaxed);
            // SAFETY: `slots[..count]` are free blocks of this magazine (the invariant on `Magazine`),
            // at least 8 bytes and aligned to 8; their first words are the allocator's.
            unsafe {
                let stale = match read_key(p) {
                    KeySays::Slab => true,
                    // Any key but this slot's own: the key of the block's last free, before a flush
                    // took it (a block keyed since sits in its key's slot).
                    KeySays::Slot { id, slot } => id != own || slot != i,
                    KeySays::Nothing => false,
                };
                if stale {
                    write_key(p, slot_key(p, tag, i));
                }
            }
        }
        // SAFETY: as above.
        unsafe {
            (*m).refilled = 0;
            (*m).refill_filter = [0; 2];
        }
    }

    /// Whether the magazine of `class` holds `p`. Any thread may ask (the double-free check).
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    pub unsafe fn holds(tc: *mut ThreadCache, class: usize, p: *mut u8) -> bool {
        // SAFETY: per the caller.
        let m = unsafe { Self::mag(tc, class) };
        let n = (Self::count_of(m).load(Ordering::Acquire) as usize).min(MAG_MAX);
        (0..n).any(|i| is_or_flushed(Self::slot_of(m, i).load(Ordering::Relaxed), p))
    }
}

impl ThreadCache {
    /// Whether a remote free into one of this cache's slabs of `class` was hinted since the last call
    /// (and clears the hint).
    ///
    /// # Safety
    ///
    /// `tc` is a live cache of the calling thread.
    #[inline]
    pub unsafe fn take_hint(tc: *mut ThreadCache, class: usize) -> bool {
        // SAFETY: per the caller; the hint is an atomic.
        unsafe {
            (*tc)
                .remote_hint
                .get(class)
                .is_some_and(|h| h.load(Ordering::Relaxed) != 0 && h.swap(0, Ordering::Acquire) != 0)
        }
    }

    /// Whether the cache was taken before the process last forked: its holder was a thread of a parent
    /// process, which may have been changing its owned slabs when the process forked.
    ///
    /// # Safety
    ///
    /// `tc` is a cache the calling thread is taking.
    pub unsafe fn held_before_fork(tc: *mut ThreadCache) -> bool {
        // SAFETY: per the caller.
        unsafe { (*tc).generation != FORK_GENERATION.load(Ordering::Relaxed) }
    }

    /// Gives the cache a token for its next holder: the next incarnation of its id (never 0: ids start
    /// at 1), or 0 for a cache without an id (it owns no slabs). Records the fork generation it is taken
    /// in.
    ///
    /// # Safety
    ///
    /// `tc` is a cache the calling thread is taking (no other thread uses it), with no owned slab left.
    pub unsafe fn renew_token(tc: *mut ThreadCache) {
        // SAFETY: per the caller.
        unsafe {
            let id = (*tc).id;
            (*tc).token = if id == 0 {
                0
            } else {
                let incarnation = ((*tc).token >> TOKEN_ID_BITS).wrapping_add(1);
                (incarnation << TOKEN_ID_BITS) | id
            };
            (*tc).generation = FORK_GENERATION.load(Ordering::Relaxed);
        }
    }
}

/// A pop's way out when the magazine's `top` copy was stale (a path changed the slots without it): the
/// top slot's block. Out of line, so that the test stays a branch: as a select, the pop's result would wait for the
/// slot's load again (see `Magazine::top`).
#[cold]
#[inline(never)]
fn stale_top(p: *mut u8) -> *mut u8 {
    core::hint::black_box(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test-owned cache, reached only through its raw pointer (so Miri's borrow
    /// tracking sees no other owner retag it while the tests write through the pointer),
    /// freed when the guard drops.
    struct TestCache(*mut ThreadCache);

    impl Drop for TestCache {
        fn drop(&mut self) {
            // SAFETY: the pointer came from `Box::into_raw` in `cache_with_id` and is
            // freed only here, once.
            drop(unsafe { Box::from_raw(self.0) });
        }
    }

    /// Test-owned words as blocks: `b(i)` is the `i`th word's address.
    fn word_blocks(words: &mut [usize]) -> impl Fn(usize) -> *mut u8 {
        let base: *mut usize = words.as_mut_ptr();
        move |i| base.wrapping_add(i).cast()
    }

    /// A test-owned cache with id `id`: the guard, and the pointer the tests use.
    fn cache_with_id(id: u32) -> (TestCache, *mut ThreadCache) {
        let mut tc = Box::new(ThreadCache::EMPTY);
        tc.id = id;
        let tcp = Box::into_raw(tc);
        (TestCache(tcp), tcp)
    }

    #[test]
    fn magazine_is_lifo_and_bounded() {
        let mut tc = Box::new(ThreadCache::EMPTY);
        let tcp: *mut ThreadCache = &mut *tc;
        let mut blocks = [0u64; MAG_MAX + 1];
        // SAFETY: a test-owned cache; block pointers are never dereferenced.
        unsafe {
            assert!(ThreadCache::pop(tcp, 3).is_null());
            assert!(
                !ThreadCache::push(tcp, 3, blocks.as_mut_ptr().cast()),
                "empty cache takes nothing"
            );
            ThreadCache::open(tcp, 3);
            let cap = MAG_CAPACITY[3] as usize;
            for i in 0..cap {
                assert!(ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(i).cast()));
            }
            assert!(!ThreadCache::push(tcp, 3, blocks.as_mut_ptr().add(cap).cast()));
            for i in (0..cap).rev() {
                assert_eq!(ThreadCache::pop(tcp, 3), blocks.as_mut_ptr().add(i).cast());
            }
            assert!(ThreadCache::pop(tcp, 3).is_null());
        }
    }

    #[test]
    fn magazine_offsets_name_the_class_magazines() {
        let mut tc = Box::new(ThreadCache::EMPTY);
        let tcp: *mut ThreadCache = &mut *tc;
        for c in 0..NUM_CLASSES {
            assert_eq!(class_at_mag_offset(mag_offset(c)), c);
            // SAFETY: a test-owned cache; `c` is in range and the offset is its magazine's.
            unsafe { assert_eq!(ThreadCache::mag_at(tcp, mag_offset(c)), ThreadCache::mag(tcp, c)) };
        }
        for size in 0..=SMALL_MAX {
            let want = size_class::malloc_class(size).map(mag_offset);
            assert_eq!(
                MALLOC_MAG_OFFSET.get((size + 7) >> 3).copied(),
                want,
                "size {size}"
            );
        }
    }

    /// Every `EPOCH_REFRESH` epochs of a cache, an idle magazine moves on to an epoch of its own: the
    /// one it leaves counts as the epoch before for the blocks it held then.
    #[test]
    fn idle_magazines_take_new_epochs_as_the_cache_counts_on() {
        let (_tc, tcp) = cache_with_id(7);
        let mut blocks = [0usize; 4];
        let b = word_blocks(&mut blocks);
        // SAFETY: a test-owned cache; the blocks are test-owned words.
        unsafe {
            ThreadCache::open(tcp, 2);
            ThreadCache::open(tcp, 3);
            for i in 0..2 {
                b(i).cast::<usize>().write(1);
                assert_eq!(ThreadCache::push_keyed(tcp, 3, b(i)), Push::Done);
            }
            b(2).cast::<usize>().write(1);
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Done);
            let idle = ThreadCache::mag(tcp, 3);
            let before = epoch_of((*idle).tag);
            // The next flush of class 2 takes the counter past a multiple of the refresh.
            (*tcp).epochs = EPOCH_REFRESH - 1;
            let mut out = [core::ptr::null_mut(); 1];
            assert_eq!(ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)), 1);
            let after = epoch_of((*idle).tag);
            assert_ne!(after, before, "the idle magazine has a new epoch");
            assert_eq!((*idle).epoch_step as usize, before ^ after);
            assert_eq!((*idle).flushed_from, 2, "its blocks then were below the count");
            assert_ne!(after, epoch_of((*ThreadCache::mag(tcp, 2)).tag));
            // Its blocks, keyed in the epoch it left, popped and freed again unwritten: taken back.
            assert_eq!(ThreadCache::pop(tcp, 3), b(1));
            assert_eq!(ThreadCache::pop(tcp, 3), b(0));
            assert_eq!(ThreadCache::push_keyed(tcp, 3, b(0)), Push::Suspect);
            assert_eq!(ThreadCache::own_key_says(tcp, 3, b(0)), OwnKey::Popped);
        }
    }

    /// Keys two flushes old: the slow path's word on them. A block popped from a slot that still holds
    /// it untagged is taken back; one whose slot a flush tagged may be in its slab (stale).
    #[test]
    fn a_key_two_flushes_old_is_popped_while_its_slot_holds_the_block() {
        let (_tc, tcp) = cache_with_id(7);
        let mut blocks = [0usize; 4];
        let b = word_blocks(&mut blocks);
        // SAFETY: a test-owned cache; the blocks are test-owned words.
        unsafe {
            ThreadCache::open(tcp, 2);
            for i in 0..4 {
                b(i).cast::<usize>().write(0x1234_5678 + i);
                assert_eq!(ThreadCache::push_keyed(tcp, 2, b(i)), Push::Done);
            }
            let mut out = [core::ptr::null_mut(); 1];
            assert_eq!(ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)), 1);
            assert_eq!(ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)), 1);
            assert_eq!(out[0], b(2));
            assert_eq!(ThreadCache::pop(tcp, 2), b(1));
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(1)), Push::Suspect);
            assert_eq!(ThreadCache::own_key_says(tcp, 2, b(1)), OwnKey::Popped);
            assert!(ThreadCache::push_checked(tcp, 2, b(1)));
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Suspect);
            assert_eq!(ThreadCache::own_key_says(tcp, 2, b(2)), OwnKey::Stale);
            assert_eq!(ThreadCache::own_key_says(tcp, 2, b(3)), OwnKey::Stale);
        }
    }

    /// The free path's one-compare test: two keys of one block and magazine differ only in where the
    /// block went and in the epoch, and rotated by `WHERE_ROTATE` their difference is the slot
    /// difference and the epoch difference, in the low bits.
    #[test]
    fn keys_of_one_block_differ_only_in_the_slot_and_epoch() {
        let mut x = 0x9e37_79b9_7f4a_7c15usize;
        for round in 0..64 {
            x = x.rotate_left(23).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
            let p = core::ptr::without_provenance_mut::<u8>(x & ((1 << 47) - 8));
            let tag = tag_of(round % MAX_CACHE_ID) ^ (x as u64 & 0xffff);
            for slot in 0..MAG_MAX {
                assert_eq!(
                    (slot_key(p, tag, slot) ^ slot_key(p, tag, 0)).rotate_left(WHERE_ROTATE),
                    slot << (SLOT_SHIFT - EPOCH_SHIFT)
                );
            }
            let later = tag_at(round % MAX_CACHE_ID, round + 1) ^ (x as u64 & 0xffff);
            let d = (slot_key(p, later, 5) ^ slot_key(p, tag, 0)).rotate_left(WHERE_ROTATE);
            assert!(d <= WHERE_MASK && d & EPOCH_MASK != 0, "round {round}: {d:#x}");
            assert_eq!(d >> (SLOT_SHIFT - EPOCH_SHIFT), 5);
        }
    }

    /// Regression: with keys stored rotated (where the block went in the low 16 bits), a program's 1- or
    /// 2-byte write to a freed block's first bytes (a string's NUL) left a word that read as a key for
    /// another slot, and every such free took the slow check (27 ns instead of 7 in a C loop). A 4-byte
    /// write breaks it too: the epoch sits above the address part's 32 bits.
    #[test]
    fn a_write_to_a_blocks_first_bytes_breaks_its_key() {
        let mut x = 0x2545_f491_4f6c_dd1dusize;
        for round in 0..64 {
            x = x.rotate_left(17).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ round;
            let mut word = 0usize;
            let p: *mut u8 = (&mut word as *mut usize).cast();
            let tag = tag_of(round % MAX_CACHE_ID) ^ (x as u64 & 0xffff);
            let slot = round % MAG_MAX;
            for (bytes, value) in [(1, 0u32), (1, 0x41), (2, 0x2e2e), (4, 0x0807_0605), (4, 0)] {
                // SAFETY: `p` is this test's word.
                unsafe {
                    write_key(p, slot_key(p, tag, slot));
                    match bytes {
                        1 => p.write(value as u8),
                        2 => p.cast::<u16>().write_unaligned(value as u16),
                        _ => p.cast::<u32>().write_unaligned(value),
                    }
                    let after = key_word(p);
                    if after != slot_key(p, tag, slot) {
                        assert_ne!(
                            after & KEY_LOW,
                            slot_key(p, tag, slot) & KEY_LOW,
                            "a {bytes}-byte write left the address part whole"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_pushed_block_carries_its_slot_and_a_written_one_is_taken() {
        let (_tc, tcp) = cache_with_id(7);
        let mut blocks = [0usize; 8];
        let b = word_blocks(&mut blocks);
        // SAFETY: a test-owned cache; the blocks are test-owned words.
        unsafe {
            ThreadCache::open(tcp, 2);
            for i in 0..4 {
                b(i).cast::<usize>().write(0x1234_5678 + i); // written by "the program"
                assert_eq!(ThreadCache::push_keyed(tcp, 2, b(i)), Push::Done);
                assert_eq!(read_key(b(i)), KeySays::Slot { id: 7, slot: i });
            }
            // In the magazine at slot 3: a second free is suspect.
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Suspect);
            // Popped and freed again unwritten: its own slot's key, a correct free.
            assert_eq!(ThreadCache::pop(tcp, 2), b(3));
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Done);
            // Popped (slots 3 and 2), then slot 3's block freed first, into slot 2, and slot 2's block
            // into slot 3: keys of this epoch whose slots do not hold them below the count, both
            // correct.
            assert_eq!(ThreadCache::pop(tcp, 2), b(3));
            assert_eq!(ThreadCache::pop(tcp, 2), b(2));
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Done);
            assert_eq!(read_key(b(3)), KeySays::Slot { id: 7, slot: 2 });
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Done);
            assert_eq!(read_key(b(2)), KeySays::Slot { id: 7, slot: 3 });
            // Flushed from slot 3, its key unwritten: freed again, it is stale (an earlier epoch's
            // key, and the flush left its slot holding it tagged): its slab is looked at.
            let mut out = [core::ptr::null_mut(); 1];
            assert_eq!(ThreadCache::take_newest(tcp, 2, 1, crate::scratch::as_buffer(&mut out)), 1);
            assert_eq!(out[0], b(2));
            assert_eq!(read_key(b(2)), KeySays::Slot { id: 7, slot: 3 });
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(2)), Push::Suspect);
            assert_eq!(ThreadCache::own_key_says(tcp, 2, b(2)), OwnKey::Stale);
            // Slot 2's block popped now: an earlier epoch's key (for the slow path), its slot holding
            // it untagged at the count: popped, a correct free.
            assert_eq!(ThreadCache::pop(tcp, 2), b(3));
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(3)), Push::Suspect);
            assert_eq!(ThreadCache::own_key_says(tcp, 2, b(3)), OwnKey::Popped);
            assert!(ThreadCache::push_checked(tcp, 2, b(3)));
            // Still in the magazine (slot 1): suspect, whatever slot the push would take.
            assert_eq!(ThreadCache::push_keyed(tcp, 2, b(1)), Push::Suspect);
        }
    }
}
