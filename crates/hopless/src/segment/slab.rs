//! A slab's free bitmap: carving, taking and returning blocks, and the checks that tell a handed-out
//! block start from anything else ([`FreeError`]). The bitmap is the truth for "is this block free";
//! only the owning class's lock holder writes it (see the invariants on [`Slab`]).

use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::Ordering;

use super::header::*;
use crate::size_class;

/// Why a block cannot be freed into its slab.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FreeError {
    /// The pointer is not inside any hopless segment.
    Foreign,
    /// The pointer is inside a slab but not at the start of a block.
    NotBlockStart,
    /// The slab belongs to another class than the one the pointer was freed as.
    WrongClass,
    /// The slab is not in use by any class (header magic wrong).
    BadSlab,
    /// The block was never handed out.
    NeverAllocated,
    /// The block's bit is already set, or it sits in a thread's cache: freed twice.
    DoubleFree,
    /// A large block that is not in use (freed already: a double free).
    LargeNotInUse,
    /// The pointer lies in hopless's own metadata (a segment's header area, a large block's header).
    Metadata,
}

impl FreeError {
    pub fn describe(self) -> &'static str {
        match self {
            FreeError::Foreign => "free of a pointer hopless did not allocate",
            FreeError::NotBlockStart => "free of a pointer that is not the start of a block",
            FreeError::WrongClass => "free of a block with the wrong size (class differs from its slab's)",
            FreeError::BadSlab => {
                "free of a pointer in a slab that is not in use (freed twice after its slab emptied, a \
                 pointer hopless never handed out, or a damaged header)"
            }
            FreeError::NeverAllocated => "free of a block that was never allocated",
            FreeError::DoubleFree => "double free",
            FreeError::LargeNotInUse => "double free (or free of a damaged header) of a large block",
            FreeError::Metadata => "free of a pointer into hopless's own metadata (a header, not a block)",
        }
    }
}

impl Slab {
    /// How many blocks of `class` a slab of `slot_size` bytes holds.
    pub fn capacity_for(class: usize, slot_size: usize) -> u32 {
        (slot_size / size_class::class_size(class)).min(MAX_BLOCKS) as u32
    }

    /// Makes a pooled slab belong to `class`; everything in it free.
    ///
    /// # Safety
    ///
    /// `slab` is a valid slab header nobody else touches (caller holds the class lock and took it from a
    /// pool); `start` is its slot, `slot_size` the slot's size.
    pub unsafe fn init(slab: *mut Slab, class: usize, start: *mut u8, slot_size: usize) {
        let capacity = Self::capacity_for(class, slot_size);
        // SAFETY: per the caller, the header is valid and exclusively ours.
        let s = unsafe { &mut *slab };
        s.magic = SLAB_MAGIC;
        s.class = class as u32;
        s.state = SlabState::Partial;
        s.free = capacity;
        s.capacity = capacity;
        // A shift below 64 (a power of two dividing a class size).
        s.div_shift = size_class::div_shift(class) as u8;
        // A class out of range cannot happen (callers pass a class index); 0 would make every block
        // index 0, which the carved test then decides.
        s.div_inv = size_class::CLASS_DIV_INV.get(class).copied().unwrap_or(0);
        s.carved.store(0, Ordering::Relaxed);
        // The free path's magazine in the granule table, for every 64 KiB granule the slab covers (one
        // for a small slab, eight for a medium one), before any block of it is handed out (the pooled
        // slab's `carved` of 0 refuses its blocks until then).
        // SAFETY: `start` is the slot of this slab, which the caller holds under the class lock.
        unsafe { set_granule_magazines(start, slot_size, crate::cache::mag_offset(class)) };
        s.hint = 0;
        s.start = start;
        s.prev = ptr::null_mut();
        s.next = ptr::null_mut();
        for w in &s.bitmap {
            w.store(0, Ordering::Relaxed);
        }
        // The class's, with no remote free: only a double free of a block of the slab's last life can
        // have left a bit, and only if it had an owner then.
        s.owner.store(0, Ordering::Relaxed);
        if s.was_owned != 0 {
            s.remote.clear();
            s.was_owned = 0;
        }
    }

    /// Takes up to `out.len()` free blocks, lowest freed first, then fresh ones from the uncarved tail
    /// (each filled with `carve_fill` if given). Returns how many it took.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the slab's class.
    pub unsafe fn take(slab: *mut Slab, out: &mut [MaybeUninit<*mut u8>], carve_fill: Option<u8>) -> usize {
        // Field by field through the raw pointer, never `&mut Slab`: `free_ptr` reads `class` of a slab
        // without its lock (stable while any block of the slab is in use), and a reference to the whole
        // header would count as writing that field too.
        // SAFETY:
        // 1. The caller holds the class lock, which owns every mutable field of the header: no other
        //    thread writes `free`, `hint`, `carved` or the bitmap meanwhile (lock-free readers only load).
        // 2. `want <= free`, and `free` counts the set bits below `carved` plus the uncarved tail
        //    (`Slab::check`), so the loops below find `want` blocks without running off the bitmap.
        // 3. Every address computed is `start + i * size` with `i < capacity`, inside the slab's slot;
        //    only `carve_fill` writes to one, a block that is now the caller's.
        unsafe {
            let s = slab;
            let size = size_class::class_size((*s).class as usize);
            let want = out.len().min((*s).free as usize);
            let start = (*s).start;
            let mut got = 0;
            let carved_words = ((*s).carved.load(Ordering::Relaxed) as usize).div_ceil(64);
            let mut w = (*s).hint as usize;
            while got < want && w < carved_words {
                let Some(slot) = (*s).bitmap.get(w) else {
                    break;
                };
                let mut word = slot.load(Ordering::Relaxed);
                while word != 0 && got < want {
                    // A run of free blocks at once (blocks freed together lie together): one address
                    // computed, the rest one add each.
                    let bit = word.trailing_zeros();
                    let run = ((word >> bit).trailing_ones() as usize).min(want - got);
                    word &= !(u64::MAX >> (64 - run as u32) << bit);
                    let mut p = start.wrapping_add((w * 64 + bit as usize) * size);
                    for o in out.get_mut(got..got + run).unwrap_or_default() {
                        o.write(p);
                        p = p.wrapping_add(size);
                    }
                    got += run;
                }
                slot.store(word, Ordering::Relaxed);
                if word == 0 {
                    w += 1;
                }
            }
            (*s).hint = w as u32;
            let mut carved = (*s).carved.load(Ordering::Relaxed) as usize;
            while got < want {
                let p = start.wrapping_add(carved * size);
                if let Some(o) = out.get_mut(got) {
                    o.write(p);
                }
                // Debug mode: a block is poison until handed out, fresh ones included.
                if let Some(fill) = carve_fill {
                    core::ptr::write_bytes(p, fill, size);
                }
                carved += 1;
                got += 1;
            }
            (*s).carved.store(carved as u32, Ordering::Relaxed);
            (*s).free -= got as u32;
            // Not under Miri: the same tests check it natively, and Miri runs them ten times over.
            debug_assert!(cfg!(miri) || Slab::check(s));
            got
        }
    }

    /// Hardened mode: marks every block of a new slab free in the bitmap, so [`Slab::take_random`] can
    /// choose among all of them.
    ///
    /// # Safety
    ///
    /// As for [`Slab::init`], right after it.
    pub unsafe fn make_all_carved(slab: *mut Slab) {
        // SAFETY: per the caller, the header is ours.
        unsafe {
            let cap = (*slab).capacity as usize;
            for (i, word) in (*slab).bitmap.iter().enumerate().take(cap.div_ceil(64)) {
                let bits = (cap - i * 64).min(64);
                word.store(
                    if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 },
                    Ordering::Relaxed,
                );
            }
            (*slab).carved.store(cap as u32, Ordering::Relaxed);
            (*slab).hint = 0;
        }
    }

    /// Hardened mode: takes free blocks in random order.
    ///
    /// # Safety
    ///
    /// As for [`Slab::take`].
    pub unsafe fn take_random(slab: *mut Slab, out: &mut [MaybeUninit<*mut u8>], rng: fn() -> u64) -> usize {
        // SAFETY: the caller holds the class lock; field-wise access as in `take`.
        unsafe {
            let s = slab;
            let size = size_class::class_size((*s).class as usize);
            let words = ((*s).carved.load(Ordering::Relaxed) as usize).div_ceil(64);
            let want = out.len().min((*s).free as usize);
            let mut got = 0;
            // Blocks past `carved` (a slab made before the mode was read) are carved first, in order.
            while got < want && (*s).carved.load(Ordering::Relaxed) < (*s).capacity {
                let c = (*s).carved.load(Ordering::Relaxed);
                if let Some(o) = out.get_mut(got) {
                    o.write((*s).start.wrapping_add(c as usize * size));
                }
                (*s).carved.store(c + 1, Ordering::Relaxed);
                got += 1;
            }
            while got < want {
                let words = words.clamp(1, BITMAP_WORDS);
                let mut w = (rng() as usize) % words;
                // `want <= free`, so some word has a set bit.
                while (*s).bitmap.get(w).is_some_and(|x| x.load(Ordering::Relaxed) == 0) {
                    w = (w + 1) % words;
                }
                let Some(slot) = (*s).bitmap.get(w) else {
                    break;
                };
                let word = slot.load(Ordering::Relaxed);
                let r = (rng() % 64) as u32;
                let bit = (word.rotate_right(r).trailing_zeros() + r) % 64;
                slot.store(word & !(1u64 << bit), Ordering::Relaxed);
                if let Some(o) = out.get_mut(got) {
                    o.write((*s).start.wrapping_add((w * 64 + bit as usize) * size));
                }
                got += 1;
            }
            (*s).hint = 0;
            (*s).free -= got as u32;
            // Not under Miri: the same tests check it natively, and Miri runs them ten times over.
            debug_assert!(cfg!(miri) || Slab::check(s));
            got
        }
    }

    /// Returns one block to its slab, checking that it is a block of this slab that is in use
    /// ([`Slab::check_return`], then [`Slab::put_index`]).
    ///
    /// # Safety
    ///
    /// The caller holds the lock of `class`, and `slab` is the header [`slab_of`] found for `p`.
    pub unsafe fn put(slab: *mut Slab, class: usize, p: *mut u8) -> Result<(), FreeError> {
        // SAFETY: per the caller.
        unsafe {
            let index = Slab::check_return(slab, class, p)?;
            Slab::put_index(slab, class, index)
        }
    }

    /// The checks of a return that need no lock: `p` is the start of a block of this slab, the slab
    /// belongs to `class`, and the block was handed out at least once. Returns the block's index. The
    /// fields read are stable while any block of the slab is out (see [`Slab`]), so for a block that is
    /// out the answer stays true until the block is back; for one that is not (a double free), whatever
    /// changed meanwhile is seen again by [`Slab::put_index`] under the lock.
    ///
    /// # Safety
    ///
    /// `slab` is the header [`slab_of`] found for `p` in a live small or medium segment.
    #[inline]
    pub unsafe fn check_return(slab: *mut Slab, class: usize, p: *mut u8) -> Result<u32, FreeError> {
        // SAFETY: per the caller; field-wise access as in `check_free`.
        unsafe {
            let s = slab;
            if (*s).magic != SLAB_MAGIC {
                return Err(FreeError::BadSlab);
            }
            if (*s).class as usize != class {
                return Err(FreeError::WrongClass);
            }
            Slab::handed_out_index(s, p)
        }
    }

    /// The index of the block `p` starts in this in-use slab, if that block was handed out at least
    /// once: `NotBlockStart` or `NeverAllocated` otherwise (see `size_class::CLASS_DIV_INV`).
    ///
    /// # Safety
    ///
    /// `slab` is a slab header of a live small or medium segment whose magic the caller checked.
    #[inline]
    pub unsafe fn handed_out_index(slab: *mut Slab, p: *mut u8) -> Result<u32, FreeError> {
        // SAFETY: per the caller; the fields read are stable while a block of the slab is out.
        unsafe {
            let offset = p.addr().wrapping_sub((*slab).start.addr()) as u64;
            let index = size_class::exact_block_index(offset, (*slab).div_inv, u32::from((*slab).div_shift));
            Slab::handed_out(
                index,
                u64::from((*slab).capacity),
                u64::from((*slab).carved.load(Ordering::Relaxed)),
            )
        }
    }

    /// Block `index` (from `size_class::exact_block_index`) of a slab of `capacity` blocks carved up to
    /// `carved`, if it is a block start handed out at least once; else what it is. The test of
    /// [`Slab::handed_out_index`], for callers that read the slab's fields once for many blocks.
    #[inline(always)]
    pub fn handed_out(index: u64, capacity: u64, carved: u64) -> Result<u32, FreeError> {
        if index >= capacity {
            Err(FreeError::NotBlockStart)
        } else if index >= carved {
            Err(FreeError::NeverAllocated)
        } else {
            Ok(index as u32)
        }
    }

    /// Marks the blocks of bitmap word `w` whose bits are set in `bits` (each checked by
    /// [`Slab::check_return`]) free in their slab: what [`Slab::put_index`] does for one block, for up
    /// to 64 at once. The error names the index of a block it concerns (the lowest one that is free
    /// already, for a double free).
    ///
    /// # Safety
    ///
    /// As for [`Slab::put_index`]; `bits` is not zero.
    #[inline]
    pub unsafe fn put_bits(slab: *mut Slab, class: usize, w: u32, bits: u64) -> Result<(), (FreeError, u32)> {
        let low = w * 64 + bits.trailing_zeros();
        let top = w * 64 + 63 - bits.leading_zeros();
        // SAFETY: per the caller, we hold the class lock, so the header's fields are ours to read and
        // write; `w` indexes the bitmap through `get`.
        unsafe {
            let s = slab;
            if (*s).magic != SLAB_MAGIC || (*s).class as usize != class {
                return Err((FreeError::DoubleFree, low));
            }
            if top >= (*s).carved.load(Ordering::Relaxed) {
                return Err((FreeError::DoubleFree, top));
            }
            let Some(word) = (*s).bitmap.get(w as usize) else {
                return Err((FreeError::NotBlockStart, low));
            };
            let old = word.load(Ordering::Relaxed);
            if old & bits != 0 {
                return Err((FreeError::DoubleFree, w * 64 + (old & bits).trailing_zeros()));
            }
            word.store(old | bits, Ordering::Relaxed);
            if w < (*s).hint {
                (*s).hint = w;
            }
            (*s).free += bits.count_ones();
            // Not under Miri: the same tests check it natively, and Miri runs them ten times over.
            debug_assert!(cfg!(miri) || Slab::check(s));
            Ok(())
        }
    }

    /// The address of block `index` of `slab` (for reports: nothing is read or written there).
    ///
    /// # Safety
    ///
    /// `slab` is a slab header of a live small or medium segment.
    pub unsafe fn block_at(slab: *mut Slab, index: u32) -> *mut u8 {
        // SAFETY: per the caller, the header is mapped; the address is only computed.
        unsafe {
            let size = size_class::class_size((*slab).class as usize);
            (*slab).start.wrapping_add(index as usize * size)
        }
    }

    /// Marks block `index` (checked by [`Slab::check_return`]) free in its slab. Under the lock it sees
    /// again what may have changed since that check if the block was not out: the slab left the class
    /// (or joined it anew, carved less), or the block's bit is set. Each is a double free.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of `class`; `slab` is a slab header of a live small or medium segment.
    #[inline]
    pub unsafe fn put_index(slab: *mut Slab, class: usize, index: u32) -> Result<(), FreeError> {
        // SAFETY: forwarded; one bit, never zero.
        unsafe { Slab::put_bits(slab, class, index / 64, 1u64 << (index % 64)) }.map_err(|(e, _)| e)
    }

    /// Checks, without the class lock, that `p` is a block of an in-use slab that was handed out at
    /// least once; returns its class. Whether it is free already is for the caller (the double-free key
    /// and [`Slab::put`]).
    ///
    /// # Safety
    ///
    /// `seg` is a live small or medium segment and `p` lies inside it.
    #[inline]
    pub unsafe fn check_free(seg: *mut SegmentHeader, p: *mut u8) -> Result<usize, FreeError> {
        // SAFETY: per the caller; the fields read here are stable while any block of the slab is in use
        // (written only when the slab joins or leaves a class), and `carved` is atomic.
        unsafe {
            if (*seg).magic != SEGMENT_MAGIC {
                return Err(FreeError::BadSlab);
            }
            let s = slab_of(seg, p);
            if (*s).magic != SLAB_MAGIC {
                let slot = (p.addr() - seg.addr()) >> (*seg).slab_shift;
                return Err(if slot < (*seg).first_slot as usize {
                    FreeError::Metadata
                } else {
                    FreeError::BadSlab
                });
            }
            Slab::handed_out_index(s, p)?;
            Ok((*s).class as usize)
        }
    }

    /// The free path's check, the common case of [`Slab::check_free`] in a few instructions: `Some(class)`
    /// when `p` is the start of a block of an in-use slab that was handed out at least once. `None` says
    /// only "not that": a large block, or anything [`Slab::check_free`] would refuse, which the caller
    /// hands to the full lookup (`locate`, `check_free`) to free or report. It accepts nothing that
    /// `check_free` refuses: it skips only the segment magic (the map's bit says a hopless segment starts
    /// there), the slab magic (`carved == 0` outside a class: see [`Slab`]) and `index < capacity`
    /// (`carved <= capacity`).
    ///
    /// # Safety
    ///
    /// Any address may be asked about, as of [`locate`], with its one window: the header of a segment that
    /// another thread unmaps at the same moment (only an invalid free can meet it).
    #[inline(always)]
    pub unsafe fn handed_out_class(p: *mut u8) -> Option<usize> {
        // SAFETY: per the caller.
        let seg = unsafe { slab_segment(p) }?;
        // SAFETY: `slab_segment` found `p` in a live small or medium segment.
        unsafe { Slab::handed_out_in(seg, p) }.map(crate::cache::class_at_mag_offset)
    }

    /// [`Slab::handed_out_class`] once `p`'s segment is known to be a small or medium one, answering with
    /// where the class's magazine is in a thread cache (from the segment's granule table) rather than the
    /// class.
    ///
    /// # Safety
    ///
    /// `seg` is `segment_of(p)` and a live small or medium segment.
    #[inline(always)]
    pub unsafe fn handed_out_in(seg: *mut SegmentHeader, p: *mut u8) -> Option<u32> {
        // SAFETY: per the caller, `p` is inside the live small or medium segment `seg`, so its granule is
        // in the segment's table and names one of the segment's slab headers (header 0 while zero, else
        // one written from a slot below `MAX_SLABS`). The slab fields read here are stable while a block
        // of the slab is out (see [`Slab`]); a racing reader of a slab that just left its class sees
        // `carved == 0`, or a state the full check would also have seen a moment earlier. No magic test
        // is needed: a slab that does not belong to a class (pooled, purging, never used, or a slot
        // under the header area) has `carved == 0`, so no index passes.
        unsafe {
            // The slab header and the magazine from the granule table, not from the segment's slab
            // shift: loads whose address needs only `p` and `seg` (see `GRANULES_OFFSET`).
            let granule = granule_of(seg, p);
            let s = slabs_of(seg).byte_add((*granule).slab.load(Ordering::Relaxed) as usize);
            let mag_offset = (*granule).mag_offset.load(Ordering::Relaxed);
            let offset = p.addr().wrapping_sub((*s).start.addr()) as u64;
            // One test for "a block start" and "handed out" (see `size_class::CLASS_DIV_INV`).
            let index = size_class::exact_block_index(offset, (*s).div_inv, u32::from((*s).div_shift));
            if index >= u64::from((*s).carved.load(Ordering::Relaxed)) {
                return None;
            }
            Some(mag_offset)
        }
    }

    /// Whether block `p` of this slab is free: in its bitmap, or freed remotely and not folded yet.
    /// Without the slab's writer the answer is a moment's: a block this thread holds (in use, or the
    /// subject of a free) cannot change state, so for the double-free check it is exact. The remote
    /// bits are read first: a fold sets a block's bit in the bitmap before it clears the remote one
    /// (`RemoteFrees::fold`), so a block freed remotely is never missed between the two.
    ///
    /// # Safety
    ///
    /// `p` passed [`Slab::check_free`] (its slab is live).
    pub unsafe fn is_free(slab: *mut Slab, p: *mut u8) -> bool {
        // SAFETY: per the caller; field-wise access as in `take`.
        unsafe {
            let offset = p.addr().wrapping_sub((*slab).start.addr()) as u64;
            let i =
                size_class::exact_block_index(offset, (*slab).div_inv, u32::from((*slab).div_shift)) as usize;
            if i >= MAX_BLOCKS {
                return false;
            }
            if (*slab).remote.is_free(i as u32) {
                return true;
            }
            match (*slab).bitmap.get(i / 64) {
                Some(w) => w.load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0,
                None => false,
            }
        }
    }

    /// Moves the blocks other threads freed into this slab into its bitmap (the owner's fold, or the
    /// class lock holder's for a slab of its class). Returns how many moved; `Err(index)`: block `index`
    /// was free in both (a double free).
    ///
    /// # Safety
    ///
    /// The caller is the slab's writer (see [`Slab`]): its owner, or the holder of its class's lock
    /// while it has none.
    pub unsafe fn fold_remote(slab: *mut Slab) -> Result<u32, u32> {
        // SAFETY: per the caller, nobody else writes `bitmap`, `free` or `hint` meanwhile; `remote`
        // is atomics.
        unsafe {
            let moved = (*slab).remote.fold(&(*slab).bitmap)?;
            if moved != 0 {
                (*slab).free += moved;
                // A folded block may sit below the search hint.
                (*slab).hint = 0;
            }
            Ok(moved)
        }
    }

    /// Whether the header's invariants hold (see [`Slab`]); debug builds assert it after every change.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the slab's class.
    pub unsafe fn check(slab: *const Slab) -> bool {
        // SAFETY: per the caller, nobody changes the header meanwhile.
        unsafe {
            let s = &*slab;
            let carved = s.carved.load(Ordering::Relaxed) as usize;
            let cap = s.capacity as usize;
            if carved > cap || cap > MAX_BLOCKS {
                return false;
            }
            let mut set = 0usize;
            for (i, w) in s.bitmap.iter().enumerate() {
                let word = w.load(Ordering::Relaxed);
                let lo = i * 64;
                // Bits at or above `carved` must be clear.
                let valid = if carved >= lo + 64 {
                    u64::MAX
                } else if carved > lo {
                    (1u64 << (carved - lo)) - 1
                } else {
                    0
                };
                if word & !valid != 0 || (i < s.hint as usize && word != 0) {
                    return false;
                }
                set += word.count_ones() as usize;
            }
            s.free as usize == set + (cap - carved)
        }
    }

    /// Index of `p` in this slab (for reports).
    pub fn index_of(&self, p: *mut u8) -> usize {
        let size = size_class::class_size(self.class as usize);
        p.addr().wrapping_sub(self.start.addr()) / size.max(1)
    }
}
