//! The central heap: per class, the slabs with free blocks; below it, per segment kind, the pool of slabs
//! that belong to no class. Each class has its own lock, held only for one batch move (a refill or a
//! flush of at most a magazine); the pool lock nests inside a class lock, never the other way round.
//!
//! Memory goes back to the OS here: a class keeps at most [`KEEP_EMPTY_SMALL`] fully free slabs; the rest
//! return to the pool's dirty list, where each waits, resident, for the purge delay ([`PURGE_DELAY_MS`]).
//! A dirty slab is purged (`madvise(MADV_DONTNEED)`, with no lock held, then kept as a clean slab: zero,
//! not resident) once it has stayed on the list that long, or at once when the list is longer than its
//! cap ([`SlabPool::max_dirty`]). `trim` purges them all.
//!
//! # Why purges wait
//!
//! A producer/consumer program empties slabs and fills new ones all the time: each medium class cycles
//! about one slab through the pool. Purging the moment the dirty list passed a few slabs (as hopless did)
//! made every such cycle an `madvise` and a page fault per page when the producer carved it again: about
//! 1 900 `madvise` calls and tens of thousands of context switches in a CPython run where mimalloc made 4.
//! A slab taken again within the delay costs nothing now; `get` takes the most recently emptied first.
//!
//! Waiting does not raise the pool's own peak: a dirty slab was in use a moment before, and `get` takes
//! dirty slabs before it reserves a segment, so in-use plus dirty never exceeds the pool's earlier peak in
//! use. What it can raise is the process's peak when another pool (or the large blocks, or the program's
//! other memory) grows within the delay: by at most the cap. Checks happen where the pool lock is taken
//! anyway: each `put`, each refill that took a slab from the pool (after the class lock is dropped),
//! and each large free (`Heap::free_large`); a program that stops calling into the heap keeps at most
//! the caps resident until `trim`.

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::cache::hint_owner;
use crate::lock::SpinLock;
use crate::platform::{now_ms, PageSource, Reservation};
use crate::report::report_bad_free;
use crate::scratch;
use crate::segment::{
    segment_of, slab_of, FreeError, RemoteFree, Returning, SegmentHeader, SegmentKind, Slab, SlabList, SlabState,
    HEADER_AREA, MAX_SLABS, MEDIUM_SLAB_SHIFT, SEGMENT_MAGIC, SEGMENT_MAP, SEGMENT_SIZE, SLAB_MAGIC, SLAB_POOLED,
    SMALL_SLAB_SHIFT,
};
use crate::size_class::{self, is_medium, MAG_MAX};
use crate::stats::CentralCounters;

/// What the checked modes ask of the layers below the heap (all off in the default mode). The heap
/// passes it down, so these layers never look the modes up themselves.
#[derive(Clone, Copy)]
pub(crate) struct Checks {
    /// Fill each block with this byte as a slab first carves it (debug mode: poison until handed out).
    pub carve_fill: Option<u8>,
    /// A new slab makes all its blocks takeable at once and hands them out in random order, drawing
    /// from `random_source` (hardened mode).
    pub random: bool,
    pub random_source: fn() -> u64,
    /// Called on each new slab (its header, class and slot size) before its first block is taken, under
    /// the class lock (the checked modes poison it).
    pub new_slab: Option<unsafe fn(*mut Slab, usize, usize)>,
    /// A purge keeps the slot's last page (hardened mode keeps a guard word there).
    pub keep_last_page: bool,
}

impl Checks {
    pub(crate) const NONE: Checks = Checks {
        carve_fill: None,
        random: false,
        random_source: || 0,
        new_slab: None,
        keep_last_page: false,
    };
}

/// Fully free slabs a small class keeps for itself (medium classes keep none: their slabs are 512 KiB).
pub const KEEP_EMPTY_SMALL: u32 = 1;

/// How long a dirty slab waits in its pool before it is purged: about the large blocks' budget window
/// (`large::budget`), long beside a producer/consumer cycle, short beside a program's phases.
pub const PURGE_DELAY_MS: u32 = 100;

/// Slabs a refill from the pool purges at most, of those that waited out the delay (a few `madvise`
/// calls on a path that is slow anyway; `put` purges one each time a slab falls free, and a large free
/// all that are due).
pub const PURGES_PER_CHECK: usize = 8;

/// The most slabs [`SlabPool::purge_up_to`] purges at once: a stack array of pointers.
pub const PURGE_BATCH: usize = 64;

/// The huge-page epoch: bumped after [`SlabPool::advise_huge_all`] has given existing segments the
/// huge-page advice again, which undoes the `MADV_NOHUGEPAGE` their purges left. A segment's
/// `left_huge` record counts only under the epoch it was made in (see [`leave_huge_once`]).
pub static HUGE_EPOCH: AtomicU32 = AtomicU32::new(0);

/// One class's share of the central heap.
#[repr(C, align(128))]
pub struct ClassHeap {
    pub inner: SpinLock<ClassInner>,
}

/// A class's slabs, under the class lock. Invariants (relied on by `ClassHeap::refill`,
/// `ClassHeap::flush` and `Heap::trim`):
/// - `partial` holds exactly the class's slabs with `free > 0`, each in state `Partial`; the class's other
///   slabs are `Full` and on no list; `slabs` counts both;
/// - `empty` is the number of slabs on `partial` with `free == capacity`, at most [`KEEP_EMPTY_SMALL`] for
///   a small class after a flush (medium classes keep none); a slab beyond that goes back to its pool;
/// - `counters.outstanding` is the number of the class's blocks out of its slabs (handed out or in
///   magazines).
pub struct ClassInner {
    /// Slabs of this class with at least one free block.
    pub partial: SlabList,
    /// Slabs on `partial` that are entirely free.
    pub empty: u32,
    /// Slabs this class holds.
    pub slabs: u32,
    pub counters: CentralCounters,
}

impl ClassHeap {
    pub const fn new() -> Self {
        ClassHeap {
            inner: SpinLock::new(ClassInner {
                partial: SlabList::new(),
                empty: 0,
                slabs: 0,
                counters: CentralCounters {
                    refills: 0,
                    flushes: 0,
                    outstanding: 0,
                    peak_outstanding: 0,
                },
            }),
        }
    }

    /// Moves up to `out.len()` free blocks of `class` (this class) out of its slabs, taking new slabs from
    /// `pool`. Returns how many (fewer only when the page source is out of memory).
    pub(crate) fn refill<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        checks: Checks,
        out: &mut [MaybeUninit<*mut u8>],
    ) -> usize {
        let mut g = self.inner.lock();
        let mut got = 0;
        let mut visited_pool = false;
        while got < out.len() {
            let mut s = g.partial.head;
            if s.is_null() {
                s = pool.get(source);
                visited_pool = true;
                if s.is_null() {
                    break;
                }
                // SAFETY: a slab fresh from the pool is ours; we hold the class lock it will belong to.
                unsafe {
                    Slab::init(s, class, (*s).start, pool.slot_size());
                    if let Some(prepare) = checks.new_slab {
                        prepare(s, class, pool.slot_size());
                    }
                    if checks.random {
                        // Every block becomes takeable at once (`prepare` made them all ready).
                        Slab::make_all_carved(s);
                    }
                    g.partial.push_front(s);
                }
                g.slabs += 1;
                g.empty += 1;
            }
            // SAFETY: `s` is on this class's partial list and we hold the class lock.
            unsafe {
                if (*s).free == (*s).capacity {
                    g.empty -= 1;
                }
                let rest = out.get_mut(got..).unwrap_or_default();
                got += if checks.random {
                    Slab::take_random(s, rest, checks.random_source)
                } else {
                    Slab::take(s, rest, checks.carve_fill)
                };
                if (*s).free == 0 {
                    g.partial.remove(s);
                    (*s).state = SlabState::Full;
                }
            }
        }
        g.counters.refills += 1;
        g.counters.outstanding = g.counters.outstanding.wrapping_add(got as i64);
        g.counters.peak_outstanding = g.counters.peak_outstanding.max(g.counters.outstanding);
        drop(g);
        if visited_pool {
            // A program that only allocates for a while still gives back what stayed dirty too long.
            pool.purge_expired(source, checks.keep_last_page, PURGES_PER_CHECK, pool.max_dirty());
        }
        got
    }

    /// Returns at most [`MAG_MAX`] blocks of `class` (this class) to their slabs; slabs that become free
    /// beyond what the class keeps go to `pool`, and those it hands back are purged after the lock is
    /// dropped. A block that is not an in-use block of this class is reported and the process aborts.
    ///
    /// Each block is checked before the lock is taken (its segment, slab, class and index: what stays
    /// true while the block is out); the lock covers only what another thread may change, the slab's
    /// bitmap and lists. A producer's refill then waits on a consumer's flush for a few instructions a
    /// block, not the whole check.
    ///
    /// # Safety
    ///
    /// Each pointer was handed out by this heap (or is a fault to report); no caller uses them again.
    pub(crate) unsafe fn flush<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        checks: Checks,
        blocks: &[*mut u8],
    ) {
        let mut checked = scratch::buffer::<Returning, MAG_MAX>();
        let mut victims = scratch::buffer::<*mut Slab, MAG_MAX>();
        for chunk in blocks.chunks(MAG_MAX) {
            let checked = Self::check_returns(class, chunk, &mut checked);
            let nv = {
                let mut g = self.inner.lock();
                // SAFETY: forwarded; the guard is this class's; the blocks were checked just above.
                unsafe { Self::flush_checked(&mut g, class, pool, checked, &mut victims) }
            };
            // SAFETY: `flush_checked` wrote the first `nv`.
            for &v in unsafe { scratch::written(&victims, nv) } {
                // SAFETY: `put` handed these back to purge, and we hold no lock.
                unsafe { pool.purge(source, v, checks.keep_last_page) };
            }
        }
    }

    /// The locked half of a flush for runs another path checked ([`ClassHeap::check_returns`]) and
    /// sorted: blocks of class slabs, blocks of slabs whose owner may have changed since, and fold
    /// requests ([`Returning::fold`]). Purges what the pool hands back once the lock is dropped.
    ///
    /// # Safety
    ///
    /// `runs` came from `check_returns` for this class (or are fold requests for slabs of it), and no
    /// caller uses their blocks again.
    pub(crate) unsafe fn flush_runs<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        checks: Checks,
        runs: &[Returning],
    ) {
        let mut victims = scratch::buffer::<*mut Slab, MAG_MAX>();
        let nv = {
            let mut g = self.inner.lock();
            // SAFETY: forwarded; the guard is this class's.
            unsafe { Self::flush_checked(&mut g, class, pool, runs, &mut victims) }
        };
        // SAFETY: `flush_checked` wrote the first `nv`.
        for &v in unsafe { scratch::written(&victims, nv) } {
            // SAFETY: `put` handed these back to purge, and we hold no lock.
            unsafe { pool.purge(source, v, checks.keep_last_page) };
        }
    }

    /// [`ClassHeap::flush`]'s work under the class lock the caller holds (`g`), checks included: the
    /// slabs that `pool` hands back to purge go into `victims`; returns how many. The caller purges
    /// them once the lock is dropped.
    ///
    /// # Safety
    ///
    /// As for [`ClassHeap::flush`]; `g` guards this class.
    pub(crate) unsafe fn flush_locked(
        g: &mut ClassInner,
        class: usize,
        pool: &SlabPool,
        blocks: &[*mut u8],
        victims: &mut [MaybeUninit<*mut Slab>; MAG_MAX],
    ) -> usize {
        let mut checked = scratch::buffer::<Returning, MAG_MAX>();
        let mut nv = 0;
        for chunk in blocks.chunks(MAG_MAX) {
            let checked = Self::check_returns(class, chunk, &mut checked);
            let room = victims.get_mut(nv..).unwrap_or_default();
            // SAFETY: forwarded; the blocks were checked just above.
            nv += unsafe { Self::flush_checked(g, class, pool, checked, room) };
        }
        nv
    }

    /// The lock-free half of a flush: each of `blocks` (the first [`MAG_MAX`]; callers pass chunks of
    /// that) is a handed-out block start of an in-use slab of `class` in a segment of its kind, or it is
    /// reported (the process stops). Returns the blocks gathered by slab and bitmap word, in `out` (not
    /// zeroed first: a flush is on the path of every magazine that overflows). A block named twice
    /// within one word's run is a double free, reported here; the locked half catches the rest.
    pub(crate) fn check_returns<'a>(
        class: usize,
        blocks: &[*mut u8],
        out: &'a mut [MaybeUninit<Returning>; MAG_MAX],
    ) -> &'a [Returning] {
        let want_kind = if is_medium(class) {
            SegmentKind::Medium
        } else {
            SegmentKind::Small
        };
        // A batch's blocks mostly share segments and slabs. A segment found in the map with the class's
        // kind stays so (small and medium segments of a heap are never unmapped), so it is checked
        // once for a run of blocks in it. Each block whose slab differs from the one before is checked
        // in full (`Slab::check_return`); the blocks after it take the inner loop while they are
        // handed-out blocks of the same slab: the slab passed its magic and class and stays in the
        // class while a block of it is out, so its start, divisor, capacity and `carved` (which only
        // grows while a block is out, and each of these blocks was handed out before the flush began)
        // hold for them too. One test says so: the exact index of the block's offset from the slab's
        // start (`size_class::exact_block_index`, above `u64::MAX / size` unless the offset, as an
        // unsigned number, is a multiple of the size) under both the capacity and `carved` means the
        // offset is that index times the size, inside the slab. A block that fails it (another slab's,
        // or a bad one) leaves the inner loop and takes the full check.
        let mut checked_seg = ptr::null_mut();
        let mut n = 0;
        let mut rest = blocks;
        while let Some((&p, after)) = rest.split_first() {
            let seg = segment_of(p);
            if seg != checked_seg {
                if !SEGMENT_MAP.contains(p) {
                    report_bad_free(FreeError::Foreign, p, class, ptr::null_mut());
                }
                // SAFETY: the segment map says `p` is in a live hopless segment, so its header is
                // mapped.
                let (magic, kind) = unsafe { ((*seg).magic, (*seg).kind) };
                if magic != SEGMENT_MAGIC || kind != want_kind {
                    report_bad_free(FreeError::BadSlab, p, class, ptr::null_mut());
                }
                checked_seg = seg;
            }
            // SAFETY: `seg` is a live segment of the class's kind.
            let slab = unsafe { slab_of(seg, p) };
            // SAFETY: `slab` is `p`'s slab header in a live small or medium segment.
            let index = match unsafe { Slab::check_return(slab, class, p) } {
                Ok(index) => index,
                Err(e) => report_bad_free(e, p, class, slab),
            };
            // SAFETY: `slab` is an in-use slab of `class` (just checked), whose fields read here stay
            // as they are while a block of it (`p`) is out; see above for `carved`.
            let (start, inv, shift, handed_out) = unsafe {
                (
                    (*slab).start.addr(),
                    (*slab).div_inv,
                    u32::from((*slab).div_shift),
                    u64::from((*slab).capacity).min(u64::from((*slab).carved.load(Ordering::Relaxed))),
                )
            };
            let mut run = Returning {
                slab,
                word: index / 64,
                bits: 1u64 << (index % 64),
            };
            rest = after;
            while let Some((&q, after)) = rest.split_first() {
                let index = size_class::exact_block_index(q.addr().wrapping_sub(start) as u64, inv, shift);
                if index >= handed_out {
                    break;
                }
                let index = index as u32;
                let (word, bit) = (index / 64, 1u64 << (index % 64));
                if word == run.word {
                    if run.bits & bit != 0 {
                        report_bad_free(FreeError::DoubleFree, q, class, slab);
                    }
                    run.bits |= bit;
                } else {
                    n += Self::emit(out, n, run);
                    run = Returning { slab, word, bits: bit };
                }
                rest = after;
            }
            n += Self::emit(out, n, run);
        }
        // SAFETY: the first `n` entries of `out` were written just above (`emit` counts only what it
        // wrote).
        unsafe { scratch::written(out, n) }
    }

    /// Writes `run` at `out[n]`; returns how many it wrote (0 only past the end, which a caller's
    /// chunk of at most [`MAG_MAX`] blocks never reaches: a run holds at least one block).
    #[inline(always)]
    fn emit(out: &mut [MaybeUninit<Returning>; MAG_MAX], n: usize, run: Returning) -> usize {
        match out.get_mut(n) {
            Some(o) => {
                o.write(run);
                1
            }
            None => 0,
        }
    }

    /// The locked half of a flush: marks each checked run of blocks free in its slab and moves slabs
    /// between the class's lists and `pool` (see [`ClassHeap::flush_locked`]).
    ///
    /// # Safety
    ///
    /// `g` guards this class; `runs` came from [`ClassHeap::check_returns`] for this class, and no
    /// caller uses their blocks again.
    unsafe fn flush_checked(
        g: &mut ClassInner,
        class: usize,
        pool: &SlabPool,
        runs: &[Returning],
        victims: &mut [MaybeUninit<*mut Slab>],
    ) -> usize {
        let keep = if is_medium(class) { 0 } else { KEEP_EMPTY_SMALL };
        let mut nv = 0;
        let mut returned = 0u64;
        for r in runs {
            let s = r.slab;
            // SAFETY: the class lock, held, is what a slab needs to leave the class (and to be adopted
            // or handed over), so the magic, class and owner a slab of the class shows stay as read.
            let (still_ours, owner) = unsafe {
                (
                    (*s).magic == SLAB_MAGIC && (*s).class as usize == class,
                    (*s).owner.load(Ordering::SeqCst),
                )
            };
            if !still_ours {
                if r.bits == 0 {
                    // A stale fold request: the slab left the class, which it could only do once
                    // every block of it was folded in (by the hand-over that the request raced).
                    continue;
                }
                // Its blocks were checked as out, which keeps a slab in its class: one of them was
                // freed already (as `put_bits` would report).
                let index = r.word * 64 + r.bits.trailing_zeros();
                // SAFETY: the address is only reported.
                report_bad_free(FreeError::DoubleFree, unsafe { Slab::block_at(s, index) }, class, s);
            }
            if owner != 0 {
                // A thread's slab: a remote free (or, for a fold request, a hint to its owner).
                if r.bits != 0 {
                    // Free in the owner's bitmap: a double free (as in `Heap::flush_owned`).
                    // SAFETY: `s` is the blocks' slab header (checked); the bitmap is atomics.
                    let twice = unsafe { (*s).bitmap.get(r.word as usize) }.map_or(0, |w| w.load(Ordering::Relaxed)) & r.bits;
                    if twice != 0 {
                        let index = r.word * 64 + twice.trailing_zeros();
                        // SAFETY: the address is only reported.
                        report_bad_free(FreeError::DoubleFree, unsafe { Slab::block_at(s, index) }, class, s);
                    }
                    // SAFETY: as above; `remote` is atomics.
                    match unsafe { (*s).remote.free_bits(&(*s).owner, r.word, r.bits) } {
                        // SAFETY: as above; the address is only reported.
                        Err(index) => report_bad_free(FreeError::DoubleFree, unsafe { Slab::block_at(s, index) }, class, s),
                        Ok(RemoteFree::Recorded {
                            notify_owner: Some(t),
                            ..
                        }) => hint_owner(t, class),
                        Ok(_) => {}
                    }
                } else {
                    hint_owner(owner, class);
                }
                continue;
            }
            if r.bits == 0 {
                // A fold request (`Returning::fold`): the blocks are in the slab's remote bits.
                // SAFETY: the class's slab, whose writer we are (class lock, no owner).
                match unsafe { Slab::fold_remote(s) } {
                    Ok(0) => continue,
                    Ok(moved) => returned += u64::from(moved),
                    // SAFETY: as above; the address is only reported.
                    Err(index) => report_bad_free(FreeError::DoubleFree, unsafe { Slab::block_at(s, index) }, class, s),
                }
            } else {
                // SAFETY: we hold the class lock and `s` is the blocks' slab header (checked).
                if let Err((e, index)) = unsafe { Slab::put_bits(s, class, r.word, r.bits) } {
                    // SAFETY: as above; the address is only reported.
                    report_bad_free(e, unsafe { Slab::block_at(s, index) }, class, s);
                }
                returned += u64::from(r.bits.count_ones());
            }
            // SAFETY: `s` belongs to this class (`put_bits` saw it), whose lock we hold.
            unsafe { nv += Self::file_returned(g, keep, pool, s, victims.get_mut(nv..).unwrap_or_default()) };
        }
        g.counters.flushes += 1;
        g.counters.outstanding = g.counters.outstanding.wrapping_sub(returned as i64);
        nv
    }

    /// Files a slab of the class that blocks just came back to: onto the partial list if it was full,
    /// and back to `pool` if it is all free beyond the `keep` empty slabs the class holds (the slab the
    /// pool hands back to purge goes into `victims[0]`; returns 1 then, else 0).
    ///
    /// # Safety
    ///
    /// `g` guards this class; `s` is a class slab of it (no owner), in state `Partial` or `Full`.
    unsafe fn file_returned(
        g: &mut ClassInner,
        keep: u32,
        pool: &SlabPool,
        s: *mut Slab,
        victims: &mut [MaybeUninit<*mut Slab>],
    ) -> usize {
        // SAFETY: per the caller.
        unsafe {
            if (*s).state == SlabState::Full {
                if (*s).free == 0 {
                    return 0;
                }
                (*s).state = SlabState::Partial;
                g.partial.push_front(s);
            }
            if (*s).free == (*s).capacity {
                if g.empty < keep {
                    g.empty += 1;
                } else {
                    g.partial.remove(s);
                    g.slabs -= 1;
                    let v = pool.put(s);
                    if !v.is_null() {
                        if let Some(slot) = victims.get_mut(0) {
                            slot.write(v);
                            return 1;
                        }
                    }
                }
            }
            0
        }
    }

    /// A slab for a thread cache to own, with `token` as its owner: the class's partial slab with the
    /// most recent frees (its remote frees folded first), else a fresh one from `pool`. Null when the
    /// page source has no memory. Default mode only (no checks: an owned slab is carved in order).
    pub(crate) fn adopt<P: PageSource>(&self, class: usize, pool: &SlabPool, source: &P, token: u32) -> *mut Slab {
        let mut visited_pool = false;
        let s = {
            let mut g = self.inner.lock();
            let mut s = g.partial.head;
            if s.is_null() {
                s = pool.get(source);
                visited_pool = true;
                if s.is_null() {
                    return s;
                }
                // SAFETY: a slab fresh from the pool is ours; we hold the class lock it will belong to.
                unsafe { Slab::init(s, class, (*s).start, pool.slot_size()) };
                g.slabs += 1;
            } else {
                // SAFETY: class lock held; `s` is on the class's partial list, so the class's (no
                // owner): we are its writer.
                unsafe {
                    g.partial.remove(s);
                    // Counted as empty by what it was on the list, before the fold: a remote free
                    // whose fold request has not reached the lock yet may make it empty here.
                    if (*s).free == (*s).capacity {
                        g.empty -= 1;
                    }
                    match Slab::fold_remote(s) {
                        Ok(moved) => {
                            g.counters.outstanding = g.counters.outstanding.wrapping_sub(i64::from(moved));
                        }
                        Err(index) => report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s),
                    }
                }
            }
            // SAFETY: off every list, under the class lock: ours to give. From the store on, frees
            // from other threads go to its remote bits; the owner's list links it through `prev` and
            // `next`.
            unsafe {
                (*s).state = SlabState::Owned;
                (*s).prev = ptr::null_mut();
                (*s).next = ptr::null_mut();
                (*s).was_owned = 1;
                (*s).owner.store(token, Ordering::SeqCst);
            }
            s
        };
        if visited_pool {
            pool.purge_expired(source, false, PURGES_PER_CHECK, pool.max_dirty());
        }
        s
    }

    /// Takes back a slab a thread cache owned (its thread exits, or the slab fell free): no owner from
    /// now on, the remote frees that still saw one folded, then filed as the class's (onto `pool` if it
    /// is free beyond what the class keeps; that slab is purged here, after the lock). `outstanding`:
    /// the cache's count of blocks out of its slabs, which the class's takes over.
    ///
    /// # Safety
    ///
    /// `s` is a slab of this class owned by a cache the calling thread holds (or took from a thread
    /// that is gone), on no list any more.
    pub(crate) unsafe fn hand_over<P: PageSource>(&self, class: usize, pool: &SlabPool, source: &P, s: *mut Slab) {
        let keep = if is_medium(class) { 0 } else { KEEP_EMPTY_SMALL };
        let mut victim = [ptr::null_mut(); 1];
        let nv = {
            let mut g = self.inner.lock();
            // SAFETY: per the caller, ours until the store in `hand_over`; after it, the class lock
            // (held) makes us its writer.
            unsafe {
                match (*s).remote.hand_over(&(*s).owner, &(*s).bitmap) {
                    Ok(moved) => {
                        if moved != 0 {
                            (*s).free += moved;
                            (*s).hint = 0;
                            g.counters.outstanding = g.counters.outstanding.wrapping_sub(i64::from(moved));
                        }
                    }
                    Err(index) => report_bad_free(FreeError::DoubleFree, Slab::block_at(s, index), class, s),
                }
                (*s).prev = ptr::null_mut();
                (*s).next = ptr::null_mut();
                // As a full slab that blocks just came back to, if any are free.
                (*s).state = SlabState::Full;
                // `file_returned` writes only a slab pointer into it.
                Self::file_returned(&mut g, keep, pool, s, scratch::as_buffer(&mut victim))
            }
        };
        if nv != 0 {
            // SAFETY: `put` handed it back to purge, and we hold no lock.
            unsafe { pool.purge(source, victim[0], false) };
        }
    }

    /// Adds what a thread cache counted of this class's blocks without the lock (its thread exits).
    pub(crate) fn take_counts(&self, refills: u64, flushes: u64, outstanding: i64) {
        let mut g = self.inner.lock();
        g.counters.refills += refills;
        g.counters.flushes += flushes;
        g.counters.outstanding = g.counters.outstanding.wrapping_add(outstanding);
    }
}

impl Default for ClassHeap {
    fn default() -> Self {
        Self::new()
    }
}

/// Slabs of one segment kind that belong to no class.
pub struct SlabPool {
    pub kind: SegmentKind,
    /// What its segments hold, for the huge-page setting: [`Reservation::SparseSlabs`] for the pools of
    /// the classes whose blocks fill part of a slab (the 8 to 48 B ones) and of the medium classes.
    pub holds: Reservation,
    /// Keep every dirty slab resident (no purge but `trim`): the SLUB experiment's working set stays
    /// faulted in. Off unless a benchmark turns it on.
    pub keep_dirty: AtomicBool,
    /// How long a dirty slab waits before it is purged ([`PURGE_DELAY_MS`]; tests change it).
    pub purge_delay_ms: AtomicU32,
    /// Segments reserved so far (the large-mapping cache gives pages back as this grows).
    pub reserved: AtomicUsize,
    /// Whether a clean slab (or a fresh segment's first) was taken since `Heap::trim` last purged the
    /// clean ones: only then may a huge page have made clean slabs resident, and only then does the next
    /// trim look at them again (so that a second `malloc_trim` finds nothing to give, and a program that
    /// trims often pays no `madvise` per clean slab each time).
    pub clean_taken: AtomicBool,
    pub inner: SpinLock<PoolInner>,
}

/// A pool's lists, under the pool lock. Invariants (relied on by `get`, `put` and `take_expired`):
/// - every slab on `dirty` or `clean` is in state `Pooled` with `carved == 0`; a slab taken off to be
///   purged is `Purging` and on no list until `purge` files it as clean;
/// - `dirty` is ordered by the time each slab went there (kept in its `hint`), newest at the head: `get` takes the head (the warmest), the
///   purges take the tail (the one unused longest).
pub struct PoolInner {
    /// Touched since last purged; most recently returned first.
    pub dirty: SlabList,
    /// Purged or never touched.
    pub clean: SlabList,
    pub segments: u64,
    pub purged: u64,
    /// Every segment this pool reserved.
    pub all: *mut SegmentHeader,
}

// SAFETY: the lists and segment pointers are only followed under the pool lock.
unsafe impl Send for PoolInner {}

impl SlabPool {
    pub const fn new(kind: SegmentKind, holds: Reservation) -> Self {
        SlabPool {
            kind,
            holds,
            keep_dirty: AtomicBool::new(false),
            purge_delay_ms: AtomicU32::new(PURGE_DELAY_MS),
            reserved: AtomicUsize::new(0),
            clean_taken: AtomicBool::new(false),
            inner: SpinLock::new(PoolInner {
                dirty: SlabList::new(),
                clean: SlabList::new(),
                segments: 0,
                purged: 0,
                all: ptr::null_mut(),
            }),
        }
    }

    pub const fn slab_shift(&self) -> u32 {
        match self.kind {
            SegmentKind::Medium => MEDIUM_SLAB_SHIFT,
            _ => SMALL_SLAB_SHIFT,
        }
    }

    pub const fn slot_size(&self) -> usize {
        1 << self.slab_shift()
    }

    /// Dirty slabs kept resident at most, however recently used: 16 MiB of each kind. A producer/consumer
    /// program cycles about one slab per active medium class (the CPython case of issue 26 had about 16
    /// such classes); a thread that frees 1 600 blocks of 4 KiB and allocates as many of 3 KiB at once
    /// (`fifo-lifo-1600`) moves 100 small slabs through the pool. Beyond it the oldest is purged at once.
    /// The pool of the smallest classes keeps 4 MiB of slabs (64), each of which they fill at most in
    /// part.
    pub const fn max_dirty(&self) -> usize {
        match (self.kind, self.holds) {
            (SegmentKind::Medium, _) => 32,
            (_, Reservation::SparseSlabs) => 64,
            _ => 256,
        }
    }

    /// Dirty slabs kept when a thread exits (1 MiB of small slabs, 2 MiB of medium: the caps hopless had
    /// before purges waited). A thread's exit flushes its magazines, which empties the slabs only it was
    /// carving; a program that ends thousands of threads gives those pages back at once, as before, rather
    /// than keeping up to [`SlabPool::max_dirty`] resident for the delay.
    pub const fn exit_dirty(&self) -> usize {
        match (self.kind, self.holds) {
            (SegmentKind::Medium, _) | (_, Reservation::SparseSlabs) => 4,
            _ => 16,
        }
    }

    /// Whether the oldest dirty slab (the tail) should go now: the list is longer than `cap`, or the slab
    /// has waited out the purge delay. Never while `keep_dirty` is on.
    fn purge_due(&self, g: &PoolInner, now: u64, cap: usize) -> bool {
        if g.dirty.tail.is_null() || self.keep_dirty.load(Ordering::Relaxed) {
            return false;
        }
        let delay = self.purge_delay_ms.load(Ordering::Relaxed);
        // SAFETY: pool lock held (`g`); the tail is a pooled slab header of this pool, whose `hint` holds
        // when it became dirty.
        let since = unsafe { (*g.dirty.tail).hint };
        // Wrapping: right for any wait under 49 days (a longer one only waits for the next delay).
        g.dirty.len > cap || (now as u32).wrapping_sub(since) >= delay
    }

    /// Takes a slab (dirty first: it is warm), reserving a new segment when the pool is empty. Null when
    /// the page source has no memory.
    pub fn get<P: PageSource>(&self, source: &P) -> *mut Slab {
        {
            let mut g = self.inner.lock();
            // SAFETY: we hold the pool lock, which owns both lists.
            let s = unsafe {
                let s = g.dirty.pop_front();
                if s.is_null() {
                    let c = g.clean.pop_front();
                    if !c.is_null() {
                        self.clean_taken.store(true, Ordering::Relaxed);
                    }
                    c
                } else {
                    s
                }
            };
            if !s.is_null() {
                return s;
            }
        }
        let base = source.reserve(SEGMENT_SIZE, SEGMENT_SIZE);
        if base.is_null() {
            return ptr::null_mut();
        }
        let seg = base.cast::<SegmentHeader>();
        if !SEGMENT_MAP.insert(seg.cast()) {
            // SAFETY: the reservation just made, unused.
            unsafe { source.release(base, SEGMENT_SIZE, SEGMENT_SIZE) };
            return ptr::null_mut();
        }
        if self.holds == Reservation::Slabs {
            source.note_dense_bytes((self.reserved.load(Ordering::Relaxed) + 1) * SEGMENT_SIZE);
        }
        // SAFETY: the whole reservation just made.
        unsafe { source.advise_huge(base, SEGMENT_SIZE, self.holds) };
        let shift = self.slab_shift();
        let first_slot = HEADER_AREA.div_ceil(1 << shift);
        let slots = SEGMENT_SIZE >> shift;
        debug_assert!(slots <= MAX_SLABS);
        // SAFETY: `base` is a fresh, zeroed, 4 MiB-aligned reservation that only this thread knows; the
        // header area fits before `first_slot`.
        unsafe {
            seg.write(SegmentHeader {
                magic: SEGMENT_MAGIC,
                kind: self.kind,
                slab_shift: shift,
                first_slot: first_slot as u32,
                map_len: SEGMENT_SIZE,
                data_offset: 0,
                usable: 0,
                next: ptr::null_mut(),
                left_huge: AtomicU64::new(0),
            });
            crate::segment::init_granules(seg, shift);
            let slabs = crate::segment::slabs_of(seg);
            for slot in first_slot..slots {
                let s = slabs.add(slot);
                (&raw mut (*s).magic).write(SLAB_POOLED);
                (&raw mut (*s).state).write(SlabState::Pooled);
                (&raw mut (*s).start).write(base.add(slot << shift));
            }
            self.reserved.fetch_add(1, Ordering::Relaxed);
            self.clean_taken.store(true, Ordering::Relaxed);
            let mut g = self.inner.lock();
            g.segments += 1;
            (*seg).next = g.all;
            g.all = seg;
            // Hand out the lowest slot; queue the rest so lower addresses go first.
            for slot in (first_slot + 1..slots).rev() {
                g.clean.push_front(slabs.add(slot));
            }
            slabs.add(first_slot)
        }
    }

    /// Takes back a slab its class no longer needs. Returns a slab the caller must purge with
    /// [`SlabPool::purge`] once it holds no lock, or null.
    ///
    /// # Safety
    ///
    /// `s` is a slab of this pool's kind that belongs to the calling class (whose lock is held) and is on
    /// no list; no block of it is in use or in a magazine.
    pub unsafe fn put(&self, s: *mut Slab) -> *mut Slab {
        // SAFETY: per the caller, the header is ours until it is on the pool's list.
        unsafe {
            (*s).magic = SLAB_POOLED;
            (*s).state = SlabState::Pooled;
            // No block of a slab outside a class passes the C free path's check (see `Slab`).
            (*s).carved.store(0, Ordering::Relaxed);
        }
        // Read before the pool lock (a vDSO read, a few nanoseconds: `put` runs once per emptied slab).
        let now = now_ms();
        let mut g = self.inner.lock();
        // SAFETY: pool lock held; `s` is on no list.
        unsafe {
            (*s).hint = now as u32;
            g.dirty.push_front(s);
            if self.purge_due(&g, now, self.max_dirty()) {
                let v = g.dirty.pop_back();
                (*v).state = SlabState::Purging;
                return v;
            }
        }
        ptr::null_mut()
    }

    /// Takes the oldest dirty slab if it is due for a purge (past the delay, or the list longer than
    /// `cap`: see [`SlabPool::put`]), or null. The caller purges it with [`SlabPool::purge`] once it holds
    /// no lock.
    pub fn take_expired(&self, cap: usize) -> *mut Slab {
        let now = now_ms();
        let mut g = self.inner.lock();
        if !self.purge_due(&g, now, cap) {
            return ptr::null_mut();
        }
        // SAFETY: pool lock held; the tail exists (`purge_due`), and off the list it is ours.
        unsafe {
            let v = g.dirty.pop_back();
            (*v).state = SlabState::Purging;
            v
        }
    }

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
    /// decommitted with one call each, not two calls a slab. (A trim of 330 MB of 100-byte blocks made
    /// 31 000 `madvise` calls before.) In hardened mode each slot keeps its last page, so slots are not
    /// joined.
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
                leave_huge_once(source, seg, start, len);
                source.decommit(start, len);
            }
            rest = rest.get(n..).unwrap_or_default();
        }
        for &s in slabs.iter() {
            // SAFETY: as above.
            unsafe { (*s).state = SlabState::Pooled };
        }
        let mut g = self.inner.lock();
        g.purged += slabs.len() as u64;
        for &s in slabs.iter() {
            // SAFETY: pool lock held; `s` is on no list.
            unsafe { g.clean.push_front(s) };
        }
    }

    /// Releases every segment of the pool.
    ///
    /// # Safety
    ///
    /// Nothing uses any block, slab or header of this pool any more.
    pub unsafe fn release_all<P: PageSource>(&mut self, source: &P) {
        let g = self.inner.get_mut();
        let mut seg = g.all;
        while !seg.is_null() {
            // SAFETY: per the caller, the segment is unused; read its link before releasing it.
            unsafe {
                let next = (*seg).next;
                SEGMENT_MAP.remove(seg.cast());
                source.release(seg.cast(), SEGMENT_SIZE, SEGMENT_SIZE);
                seg = next;
            }
        }
        g.all = ptr::null_mut();
        g.dirty = SlabList::new();
        g.clean = SlabList::new();
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

    /// Takes the clean slab at the tail, for the caller to [`SlabPool::purge`] (which files it at the
    /// head), or null: `trim`'s pass over slabs that a huge page may have made resident.
    pub fn take_clean(&self) -> *mut Slab {
        self.take_to_purge(|g| &mut g.clean)
    }

    /// How many slabs are on the clean list.
    pub fn clean_len(&self) -> usize {
        self.inner.lock().clean.len
    }

    /// Takes one dirty slab to purge (for trimming), or null.
    pub fn take_dirty(&self) -> *mut Slab {
        self.take_to_purge(|g| &mut g.dirty)
    }

    /// Takes the slab at the tail of the list `list` picks, marked `Purging`, or null.
    fn take_to_purge(&self, list: impl FnOnce(&mut PoolInner) -> &mut SlabList) -> *mut Slab {
        let mut g = self.inner.lock();
        // SAFETY: pool lock held.
        let v = unsafe { list(&mut g).pop_back() };
        if !v.is_null() {
            // SAFETY: `v` is off every list; we own it now.
            unsafe { (*v).state = SlabState::Purging };
        }
        v
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
/// # Safety
///
/// As for [`PageSource::leave_huge`]: `seg` is a small or medium segment of `source`, one whole
/// reservation of `SEGMENT_SIZE` bytes, and `start..start + len` lies in it.
unsafe fn leave_huge_once<P: PageSource>(source: &P, seg: *mut SegmentHeader, start: *mut u8, len: usize) {
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
        return;
    }
    // Recorded only where the source gives advice at all (once it has advised any huge pages, it
    // does for good); read before the call, so a record never stands for a call that did nothing.
    let advising = source.huge_pages_used();
    // SAFETY: per the caller.
    unsafe { source.leave_huge(seg.cast(), SEGMENT_SIZE, start, len) };
    if bits == 0 || !advising {
        return;
    }
    let _ = record.fetch_update(Ordering::Release, Ordering::Relaxed, |cur| {
        Some(if cur >> 32 == epoch { cur | bits } else { epoch << 32 | bits })
    });
}

/// Sorts slabs by their slots' addresses: an insertion sort, for the at most [`PURGE_BATCH`] slabs a
/// purge is given (core's sort would bring its panic on an inconsistent order into the library, which
/// `scripts/check_no_panic.sh` refuses).
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

