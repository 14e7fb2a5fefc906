//! Blocks coming back to a class, read top-down: [`ClassHeap::flush`] checks each block without the lock
//! ([`ClassHeap::check_returns`]), then marks the checked runs free under it
//! ([`ClassHeap::flush_checked`]) and files each slab they return to ([`ClassHeap::file_returned`]);
//! slabs that fall free beyond what the class keeps go to the pool, and are purged once the lock is
//! dropped. A slab a thread cache owned comes back the same way ([`ClassHeap::hand_over`]).

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::Ordering;

use super::class_heap::{Checks, ClassHeap, ClassInner, KEEP_EMPTY_SMALL};
use super::pool::SlabPool;
use crate::cache::hint_owner;
use crate::platform::PageSource;
use crate::report::report_bad_free;
use crate::scratch;
use crate::segment::{
    segment_of, slab_of, FreeError, RemoteFree, Returning, SegmentKind, Slab, SlabState, SEGMENT_MAGIC,
    SEGMENT_MAP, SLAB_MAGIC,
};
use crate::size_class::{self, is_medium, BATCH_MAX};

impl ClassHeap {
    /// Returns at most [`BATCH_MAX`] blocks of `class` (this class) to their slabs; slabs that become free
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
        let mut checked = scratch::buffer::<Returning, BATCH_MAX>();
        let mut victims = scratch::buffer::<*mut Slab, BATCH_MAX>();
        for chunk in blocks.chunks(BATCH_MAX) {
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
        let mut victims = scratch::buffer::<*mut Slab, BATCH_MAX>();
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
        victims: &mut [MaybeUninit<*mut Slab>; BATCH_MAX],
    ) -> usize {
        let mut checked = scratch::buffer::<Returning, BATCH_MAX>();
        let mut nv = 0;
        for chunk in blocks.chunks(BATCH_MAX) {
            let checked = Self::check_returns(class, chunk, &mut checked);
            let room = victims.get_mut(nv..).unwrap_or_default();
            // SAFETY: forwarded; the blocks were checked just above.
            nv += unsafe { Self::flush_checked(g, class, pool, checked, room) };
        }
        nv
    }

    /// The lock-free half of a flush: each of `blocks` (the first [`BATCH_MAX`]; callers pass chunks of
    /// that) is a handed-out block start of an in-use slab of `class` in a segment of its kind, or it is
    /// reported (the process stops). Returns the blocks gathered by slab and bitmap word, in `out` (not
    /// zeroed first: a flush is on the path of every magazine that overflows). A block named twice
    /// within one word's run is a double free, reported here; the locked half catches the rest.
    pub(crate) fn check_returns<'a>(
        class: usize,
        blocks: &[*mut u8],
        out: &'a mut [MaybeUninit<Returning>; BATCH_MAX],
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
                    run = Returning {
                        slab,
                        word,
                        bits: bit,
                    };
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
    /// chunk of at most [`BATCH_MAX`] blocks never reaches: a run holds at least one block).
    #[inline(always)]
    fn emit(out: &mut [MaybeUninit<Returning>; BATCH_MAX], n: usize, run: Returning) -> usize {
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
                report_bad_free(
                    FreeError::DoubleFree,
                    unsafe { Slab::block_at(s, index) },
                    class,
                    s,
                );
            }
            if owner != 0 {
                // A thread's slab: a remote free (or, for a fold request, a hint to its owner).
                if r.bits != 0 {
                    // Free in the owner's bitmap: a double free (as in `Heap::flush_owned`).
                    // SAFETY: `s` is the blocks' slab header (checked); the bitmap is atomics.
                    let twice = unsafe { (*s).bitmap.get(r.word as usize) }
                        .map_or(0, |w| w.load(Ordering::Relaxed))
                        & r.bits;
                    if twice != 0 {
                        let index = r.word * 64 + twice.trailing_zeros();
                        // SAFETY: the address is only reported.
                        report_bad_free(
                            FreeError::DoubleFree,
                            unsafe { Slab::block_at(s, index) },
                            class,
                            s,
                        );
                    }
                    // SAFETY: as above; `remote` is atomics.
                    match unsafe { (*s).remote.free_bits(&(*s).owner, r.word, r.bits) } {
                        // SAFETY: as above; the address is only reported.
                        Err(index) => report_bad_free(
                            FreeError::DoubleFree,
                            unsafe { Slab::block_at(s, index) },
                            class,
                            s,
                        ),
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
                    Err(index) => report_bad_free(
                        FreeError::DoubleFree,
                        unsafe { Slab::block_at(s, index) },
                        class,
                        s,
                    ),
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

    /// Takes back a slab a thread cache owned (its thread exits, or the slab fell free): no owner from
    /// now on, the remote frees that still saw one folded, then filed as the class's (onto `pool` if it
    /// is free beyond what the class keeps; that slab is purged here, after the lock). `outstanding`:
    /// the cache's count of blocks out of its slabs, which the class's takes over.
    ///
    /// # Safety
    ///
    /// `s` is a slab of this class owned by a cache the calling thread holds (or took from a thread
    /// that is gone), on no list any more.
    pub(crate) unsafe fn hand_over<P: PageSource>(
        &self,
        class: usize,
        pool: &SlabPool,
        source: &P,
        s: *mut Slab,
    ) {
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
}
