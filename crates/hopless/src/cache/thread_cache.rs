//! The thread cache's layout: [`ThreadCache`], a thread's magazines of every class and what the registry
//! and the free key keep beside them; [`Magazine`], one class's stack of free block pointers; the offset
//! of each class's magazine in the cache ([`mag_offset`], [`MALLOC_MAG_OFFSET`]), which the C fast paths
//! add to the cache's address instead of multiplying a class index; and the accessors the magazine's
//! operations (`magazine.rs`) and the double-free look (`double_free.rs`) read and write it through.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::owned::{OwnedSlabs, FORK_GENERATION, TOKEN_ID_BITS};
use crate::size_class::{self, MAG_MAX, NUM_CLASSES, SMALL_MAX};
#[cfg(feature = "stats")]
use crate::stats::ThreadCounters;

/// Free blocks of one class owned by one thread. One or more cache lines of its own.
///
/// Invariant: `count <= cap <= MAG_GROWN[class] <= MAG_MAX`; `slots[..count]` are distinct free blocks of this class, each
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
    /// with `cap`) and its flush epoch in bits 25..41 (the next at each flush, `take_newest`).
    pub tag: u64,
    /// Slots below this (and below `count`) may hold blocks a refill put there, which carry what their
    /// last free or flush left (a key for another slot or cache, a mark) rather than their slot's key;
    /// the double-free check looks through them (pops do not lower it, so the range may also hold
    /// blocks pushed since: looking at them too is only slower, never wrong). Every slot at or above it
    /// that holds anything but a fresh block holds its slot's key. Zero after
    /// [`ThreadCache::key_refilled`] gave the refill's blocks their keys.
    pub refilled: u32,
    /// Frees since the last refill whose double-free check looked through the refilled slots (a block with
    /// a key for elsewhere or a mark, whose filter bit is set): at
    /// [`KEY_AFTER_LOOKS`](super::double_free::KEY_AFTER_LOOKS), the rest of the refill is keyed
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
    /// Blocks refilled since the last flush: a magazine that fills after at least its capacity's worth,
    /// its class's working set cycling through the central heap, grows instead of flushing
    /// (`ThreadCache::grow`); one that fills with none (only frees since) shrinks.
    pub refills: u32,
    /// Nonzero when the magazine refilled or grew since the cache's last decay pass (`Heap::decay`):
    /// a grown magazine without either for a whole pass is not cycling, and shrinks.
    pub active: u32,
    /// A copy of the top slot, `slots[count - 1]`, so that a pop's result
    /// does not wait for the count. In a free-then-malloc chain (a program freeing a block and
    /// allocating again at once) the count is a store a moment old, and the top slot's address needs
    /// it: `slots[--count]` waits for two store-to-load forwards in a row (the count's, then the
    /// slot's), where `top` waits for one. Pushes, pops, refills ([`ThreadCache::fill`]) and flushes
    /// ([`ThreadCache::take_newest`]) all keep it. A pop still loads the slot and hands that out
    /// whenever the two differ, so `top` is only a guess a predicted branch confirms: a path that
    /// changed the slots and forgot the copy would cost a mispredict, never a wrong block.
    /// `hopless bench alloc --c-abi`, `pair-16` (a `malloc`/`free` pair of 16 B, 2-core Intel VM):
    /// 4.9 ns with it, 9.7 ns without. Right below `slots` (asserted), where
    /// `slots[-1]` would be: the pop's refresh from `slots[count - 1]` needs no test when the count
    /// reaches 0 (it reads `top`). Only the owner reads or writes it.
    pub top: *mut u8,
    pub slots: [*mut u8; MAG_MAX],
}

// `top` is where `slots[-1]` would be (see `ThreadCache::try_pop_in`), and the slots start a cache line.
const _: () = assert!(
    core::mem::offset_of!(Magazine, slots)
        == core::mem::offset_of!(Magazine, top) + core::mem::size_of::<*mut u8>()
        && core::mem::offset_of!(Magazine, slots) == 64
);

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
            refills: 0,
            active: 0,
            top: core::ptr::null_mut(),
            slots: [core::ptr::null_mut(); MAG_MAX],
        }
    }
}

/// One thread's cache. Allocated from the page source, never through the allocator's public path; parked
/// for the next thread when its thread exits (its magazine pages given back), or unmapped past a limit.
/// The registry fields come first so that a parked cache keeps only its first page.
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
    /// Bytes of blocks the magazines may hold beyond their first capacities (`MAG_CAPACITY`), at most
    /// `GROWN_BUDGET`: the room their growth took. Only the holder reads or writes it; zero when every
    /// magazine is at its first capacity.
    pub grown_bytes: usize,
    /// When the next decay pass of grown magazines is due (ms of `platform::now_ms`); only read while
    /// `grown_bytes` is nonzero.
    pub decay_at: u64,
    /// Bytes the holder allocates before its next sample (`profile`): every allocation's size comes off
    /// it ([`ThreadCache::charge`]), and the one that runs it out is sampled, which draws the next. Drawn
    /// when a thread takes the cache (`slow::cache_or_init`). Only the holder touches it.
    pub sample_left: usize,
    /// The holder's generator for those draws (`profile::sampler`).
    pub sample_rng: u64,
    /// True while the holder takes a sample: what it allocates meanwhile (the unwinder may) is not
    /// sampled again.
    pub sampling: bool,
    #[cfg(feature = "stats")]
    pub counters: [ThreadCounters; NUM_CLASSES],
    pub mags: [Magazine; NUM_CLASSES],
    /// Per class: set by a thread that freed a block into one of this cache's owned slabs (the first
    /// since its last fold); the owner folds its slabs of the class at its next refill. After the
    /// magazines, so that nothing of owned slabs lies between the registry fields and the magazines.
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

    /// Takes `size` bytes off the sampling countdown ([`ThreadCache::sample_left`]); true when they run
    /// it out, and the allocation is to be sampled (which draws the next count).
    ///
    /// # Safety
    ///
    /// `tc` is the calling thread's live cache (never the shared empty one).
    #[inline(always)]
    pub unsafe fn charge(tc: *mut ThreadCache, size: usize) -> bool {
        // SAFETY: per the caller, a field only this thread touches.
        unsafe {
            let (left, out) = (*tc).sample_left.overflowing_sub(size);
            (*tc).sample_left = left;
            out
        }
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
    pub(super) fn count_of(m: *mut Magazine) -> &'static AtomicU32 {
        // SAFETY: `m` is a valid magazine (callers' contract); its `count` is aligned for an atomic and
        // every concurrent access to it is atomic. The cache outlives every use of the reference.
        unsafe { AtomicU32::from_ptr(&raw mut (*m).count) }
    }

    #[inline(always)]
    pub(super) fn slot_of(m: *mut Magazine, i: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: as for `count_of`; `i < MAG_MAX` is the callers' contract.
        unsafe { AtomicPtr::from_ptr((&raw mut (*m).slots).cast::<*mut u8>().add(i)) }
    }

    /// `slots[i - 1]`, or `top` when `i` is 0: the top slot of a magazine holding `i` blocks, or the
    /// copy itself when it holds none.
    #[inline(always)]
    pub(super) fn slot_below(m: *mut Magazine, i: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: as for `count_of`; `i <= MAG_MAX` is the callers' contract, and `top` is right below
        // `slots` (asserted at `Magazine`), so the word is `slots[i - 1]`, or `top` at 0, inside the
        // magazine. The owner accesses `top` alone, plainly or through this, never at once.
        unsafe { AtomicPtr::from_ptr((&raw mut (*m).top).add(i)) }
    }

    /// `tag`, `epoch_step` and `flushed_from`, which another thread's double-free check reads
    /// ([`ThreadCache::may_have_flushed`]): the owner writes them atomically (and reads them plainly).
    #[inline(always)]
    pub(super) fn flush_state_of(
        m: *mut Magazine,
    ) -> (&'static AtomicU64, &'static AtomicU32, &'static AtomicU32) {
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

    /// Blocks in the magazine of `class` as any thread sees them (a snapshot's count, `Heap::stats`):
    /// the owner may push or pop meanwhile, so the count may be a moment old.
    ///
    /// # Safety
    ///
    /// `tc` is a cache of the registry that stays mapped during the call; `class < NUM_CLASSES`.
    #[inline]
    pub unsafe fn count_seen(tc: *mut ThreadCache, class: usize) -> usize {
        // SAFETY: per the caller; the count is read through an atomic.
        (Self::count_of(unsafe { Self::mag(tc, class) }).load(Ordering::Relaxed) as usize).min(MAG_MAX)
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
