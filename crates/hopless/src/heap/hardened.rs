//! Hardened mode (feature `debug`, switched on by `HOPLESS_HARDENED=1`): checked blocks that keep the
//! thread caches. Debug mode's large-block checks live here too, shared.
//!
//! A slab block of class size `cs`, asked for `size` bytes (the class is chosen so `size + 16 <= cs`):
//!
//! ```text
//! | size bytes: the program's | redzone 0xFB (8..=REDZONE_MAX bytes) | ... | guard word of the next block |
//! 0                           size                                          cs - 8                       cs
//! ```
//!
//! The *guard word* of a block is the 8 bytes before it: the last 8 bytes of the block before, which
//! that block never uses (for a slab's first block, of the slot before). While the block is in use it holds the requested size, mixed with the block's address and the
//! per-process secret; its free swaps in a "freed" value. So:
//! - a second free of the block, from any thread, before the block is handed out again, finds "freed":
//!   a double free. The swap is atomic, so two threads freeing the block at the same instant are caught
//!   too (one of them finds "freed").
//! - a guard word that decodes to neither means the 8 bytes before the block were overwritten (an
//!   underflow), or the block was not in use.
//! - the redzone catches an overflow of up to `REDZONE_MAX` bytes past the requested size, at free;
//!   further, it runs into the next block's guard word, caught at that block's free.
//! - a free fills the block with poison (`0xDD`, up to `POISON_MAX` bytes, short of the next block's
//!   guard), and an allocation checks the poison is intact: a write after free is caught when the block
//!   is handed out again. The first word may instead hold a free key or slab mark that hopless wrote
//!   (a magazine flush writes them), which the check accepts. New slabs are poisoned when made.
//!
//! Large blocks carry the same redzone after the requested bytes and the size, mixed the same way, in
//! their last 8 usable bytes (a double free is caught by the header, as in every mode), plus a
//! `PROT_NONE` guard page after the mapping (hardened mode only).
//!
//! The fast path does not change: as in debug mode, no thread gets a fast-path cache, so every operation
//! reaches a slow path, which sees the mode and comes here. The thread's real cache is used only by
//! these checked paths (the thread's `tls::HARDENED` word). `usable_size` reports the requested size.

use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};

use super::Heap;
use crate::address::{locate, Located};
use crate::cache::{free_salt, read_key, KeySays, ThreadCache};
use crate::debug::{first_not, POISON, REDZONE};
use crate::platform::PageSource;
use crate::report::{fault, report_bad_free};
use crate::segment::{
    slab_of, SegmentHeader, Slab, HEADER_AREA, MEDIUM_SLAB_SHIFT, SEGMENT_MAGIC, SMALL_SLAB_SHIFT,
};
use crate::size_class::{self, class_size};

/// Redzone bytes written and checked after the requested size, at most.
pub const REDZONE_MAX: usize = 256;
/// Bytes of a freed block poisoned and checked at reuse, at most (the head of a bigger block).
pub const POISON_MAX: usize = 1024;
/// Bytes a block needs beyond the request: the smallest redzone and the next block's guard word.
const OVERHEAD: usize = 16;
const GUARD: usize = 8;
const LIVE: u64 = 1 << 63;
const FREED: u64 = 0x3e9d_4b1f_a7c6_05e2;
const POISON_WORD: u64 = u64::from_ne_bytes([POISON; 8]);

/// What a guard word says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Guard {
    Live(usize),
    Freed,
    Damaged,
}

fn mix(p: *mut u8) -> u64 {
    let x = (p.addr() ^ free_salt()) as u64;
    x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ x
}

/// Sizes use the low 47 bits; a 16-bit check of the size sits above them, then the live bit, so a
/// changed byte anywhere in the word is caught (but for a 2^-16 chance in the low bytes).
const SIZE_BITS: u32 = 47;
const SIZE_MASK: u64 = (1 << SIZE_BITS) - 1;

fn check_of(size: u64) -> u64 {
    ((size ^ (size >> 21)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) << SIZE_BITS
}

fn live(p: *mut u8, size: usize) -> u64 {
    let size = size as u64 & SIZE_MASK;
    mix(p) ^ LIVE ^ check_of(size) ^ size
}

fn freed(p: *mut u8) -> u64 {
    mix(p) ^ FREED
}

/// Decodes a guard word; a live size above `max` counts as damage.
fn decode(v: u64, p: *mut u8, max: usize) -> Guard {
    let t = v ^ mix(p);
    let size = t & SIZE_MASK;
    if t == FREED {
        Guard::Freed
    } else if t & LIVE != 0 && t & !LIVE & !SIZE_MASK == check_of(size) && size <= max as u64 {
        Guard::Live(size as usize)
    } else {
        Guard::Damaged
    }
}

/// The class of a hardened block of (`size`, `align`), with room for the redzone and the guard word.
pub fn class_for(size: usize, align: usize) -> Option<usize> {
    size_class::class_for(size.checked_add(OVERHEAD)?, align)
}

/// The guard word of block `p`: the 8 bytes before it. For a slab's first block they are the last 8
/// bytes of the slot before (another slab's, whose blocks stop short of them in this mode, and which a
/// purge keeps: see `SlabPool::purge`), or of the header slots (past the headers: asserted below).
///
/// # Safety
///
/// `p` is a block start in a live slab; the caller holds the block (allocating or freeing it).
unsafe fn guard_of(p: *mut u8) -> &'static AtomicU64 {
    // SAFETY: per the caller; the word is aligned to 8 (slots and class sizes are multiples of 8), mapped
    // (the same segment), and nobody else writes it: the block before stops its redzone and poison
    // short of it. Every access to a guard word is atomic; the segment outlives the reference's uses.
    unsafe { AtomicU64::from_ptr(p.sub(GUARD).cast::<u64>()) }
}

// The first slab of a segment starts at the first slot past the headers: 8 bytes before it are free.
const _: () =
    assert!(HEADER_AREA % (1 << SMALL_SLAB_SHIFT) != 0 && HEADER_AREA % (1 << MEDIUM_SLAB_SHIFT) != 0);

/// Poisons the blocks of a new slab so that the write-after-free check holds for their first use.
///
/// # Safety
///
/// `s` was just initialised for `class`; the caller owns it (class lock held, no block handed out).
pub(super) unsafe fn poison_new_slab(s: *mut Slab, class: usize, _slot_size: usize) {
    let cs = class_size(class);
    let len = cs.saturating_sub(GUARD).min(POISON_MAX);
    // SAFETY: per the caller; every block of the slab lies inside its slot and is ours.
    unsafe {
        for i in 0..(*s).capacity as usize {
            ptr::write_bytes((*s).start.add(i * cs), POISON, len);
        }
    }
}

/// A block just taken for the program: checks its poison, then writes the redzone and the guard word.
///
/// # Safety
///
/// `p` is a block of `class` that the caller just took (from a magazine or its slab).
unsafe fn prepare(p: *mut u8, class: usize, size: usize, zeroed: bool) {
    let body = class_size(class) - GUARD;
    let checked = body.min(POISON_MAX);
    // SAFETY: per the caller, the block's `body` bytes are ours; `size + 8 <= body` (see `class_for`).
    unsafe {
        let first = p.cast::<u64>().read();
        if first != POISON_WORD && read_key(p) == KeySays::Nothing {
            let word = first.to_ne_bytes();
            let off = word.iter().position(|&b| b != POISON).unwrap_or(0);
            fault(
                "write after free (a freed block was modified before it was reused)",
                p,
                class,
                Some(off),
            );
        }
        let rest = core::slice::from_raw_parts(p.add(8), checked - 8);
        if let Some(off) = first_not(rest, POISON) {
            fault(
                "write after free (a freed block was modified before it was reused)",
                p,
                class,
                Some(8 + off),
            );
        }
        ptr::write_bytes(p.add(size), REDZONE, (body - size).min(REDZONE_MAX));
        if zeroed {
            ptr::write_bytes(p, 0, size);
        }
        guard_of(p).store(live(p, size), Ordering::Relaxed);
    }
}

/// A block the program frees: marks its guard word freed (catching a double free and an underflow),
/// checks the redzone, poisons it.
///
/// # Safety
///
/// `p` is a block start of `class` in the live slab `s`, handed out at least once (`Slab::check_free`).
unsafe fn release(s: *mut Slab, p: *mut u8, class: usize) {
    let body = class_size(class) - GUARD;
    // SAFETY: per the caller.
    let old = unsafe { guard_of(p) }.swap(freed(p), Ordering::AcqRel);
    let size = match decode(old, p, body - 8) {
        Guard::Live(size) => size,
        Guard::Freed => fault("double free", p, class, None),
        Guard::Damaged => {
            // SAFETY: as above; a lock-free read of the bitmap.
            if unsafe { Slab::is_free(s, p) } {
                fault("free of a block that is not in use (double free)", p, class, None);
            }
            fault(
                "the 8 bytes before the block were overwritten (buffer underflow), or the block is not \
                 in use",
                p,
                class,
                None,
            );
        }
    };
    // SAFETY: the block's `body` bytes are the program's until now; `size + 8 <= body`.
    unsafe {
        let red = core::slice::from_raw_parts(p.add(size), (body - size).min(REDZONE_MAX));
        if let Some(off) = first_not(red, REDZONE) {
            fault("buffer overflow into the redzone", p, class, Some(size + off));
        }
        ptr::write_bytes(p, POISON, body.min(POISON_MAX));
    }
}

impl<P: PageSource> Heap<P> {
    /// Hardened mode: allocates a checked block through `tc` (null: uncached). Null on failure.
    ///
    /// # Safety
    ///
    /// `tc` is null or the calling thread's live cache.
    pub(crate) unsafe fn hardened_alloc(
        &self,
        tc: *mut ThreadCache,
        size: usize,
        align: usize,
        zeroed: bool,
    ) -> *mut u8 {
        let Some(class) = class_for(size, align) else {
            return self.checked_large_alloc(size, align, zeroed, 0);
        };
        // SAFETY: per the caller.
        let p = unsafe { self.take_block(tc, class) };
        if !p.is_null() {
            // SAFETY: a block of `class` just taken: its slab is live.
            unsafe { prepare(p, class, size, zeroed) };
        }
        p
    }

    /// Hardened mode: a checked free (see the module docs). Everything that is not an in-use block is
    /// reported.
    ///
    /// # Safety
    ///
    /// `tc` is null or the calling thread's live cache; `p` is the program's claim of a live block.
    pub(crate) unsafe fn hardened_free(&self, tc: *mut ThreadCache, p: *mut u8) {
        match locate(p) {
            Located::Foreign => fault("free of a pointer hopless did not allocate", p, usize::MAX, None),
            // SAFETY: `locate` found the header mapped.
            Located::Large(seg) => unsafe { self.checked_large_free(seg, p) },
            Located::Slab(seg) => {
                // SAFETY: `locate` found `p` in a live small/medium segment.
                let s = unsafe { slab_of(seg, p) };
                // SAFETY: as above.
                let class = match unsafe { Slab::check_free(seg, p) } {
                    Ok(c) => c,
                    Err(e) => report_bad_free(e, p, usize::MAX, s),
                };
                // SAFETY: a block start of `class` handed out before; the magazine is this thread's.
                unsafe {
                    release(s, p, class);
                    if tc.is_null() {
                        self.flush_marked(class, &[p]);
                    } else if !ThreadCache::push(tc, class, p) {
                        self.free_flush(tc, class, p);
                    }
                }
            }
        }
    }

    /// Hardened mode: the requested size of a live block; 0 for anything else.
    ///
    /// # Safety
    ///
    /// None beyond `p` being a pointer the program may claim is a block.
    pub(crate) unsafe fn hardened_size(&self, p: *mut u8) -> usize {
        match locate(p) {
            Located::Foreign => 0,
            // SAFETY: a mapped header.
            Located::Large(seg) => unsafe { self.checked_large_size(seg, p) }.unwrap_or(0),
            // SAFETY: a live small/medium segment holds `p`; the guard word is read atomically.
            Located::Slab(seg) => unsafe {
                match Slab::check_free(seg, p) {
                    Ok(class) => match decode(
                        guard_of(p).load(Ordering::Relaxed),
                        p,
                        class_size(class) - OVERHEAD,
                    ) {
                        Guard::Live(size) => size,
                        _ => 0,
                    },
                    Err(_) => 0,
                }
            },
        }
    }

    /// Hardened mode: `realloc`. In place while the block's class (or a large block's mapping) still
    /// fits, its redzone checked and rewritten; otherwise allocate, copy, free. A large block that moves
    /// to grow gets a quarter more room, so a buffer grown in small steps is copied a bounded number of
    /// times. Null on failure, the old block untouched; a pointer that is not a live block is reported.
    ///
    /// # Safety
    ///
    /// As for [`Heap::hardened_free`]; `new_size > 0`, `align` a power of two.
    pub(crate) unsafe fn hardened_realloc(
        &self,
        tc: *mut ThreadCache,
        p: *mut u8,
        new_size: usize,
        align: usize,
    ) -> *mut u8 {
        // SAFETY: per the caller.
        let old = unsafe { self.hardened_size(p) };
        if old == 0 {
            // SAFETY: not a live block: the free reports it.
            unsafe { self.hardened_free(tc, p) };
            return ptr::null_mut();
        }
        match locate(p) {
            // SAFETY: a live block of that slab (its guard word decoded).
            Located::Slab(seg) => unsafe {
                let s = slab_of(seg, p);
                let class = (*s).class as usize;
                if class_for(new_size, align) == Some(class) {
                    release_in_place(p, class, old);
                    prepare_in_place(p, class, new_size);
                    return p;
                }
            },
            // SAFETY: a live large block (its trailer decoded).
            Located::Large(seg) => unsafe {
                let usable = (*seg).usable;
                if new_size.checked_add(OVERHEAD).is_some_and(|n| n <= usable)
                    && new_size > usable / 2
                    && p.addr() & align.wrapping_sub(1) == 0
                {
                    check_large_redzone(p, old, usable);
                    write_large_tail(p, new_size, usable);
                    return p;
                }
            },
            Located::Foreign => {}
        }
        let q = if class_for(new_size, align).is_none() && new_size > old {
            self.checked_large_alloc(new_size, align, false, new_size / 4)
        } else {
            // SAFETY: per the caller.
            unsafe { self.hardened_alloc(tc, new_size, align, false) }
        };
        if !q.is_null() {
            // SAFETY: both blocks hold min(old, new) bytes and are distinct; `p` is given up.
            unsafe {
                ptr::copy_nonoverlapping(p, q, old.min(new_size));
                self.hardened_free(tc, p);
            }
        }
        q
    }

    /// A large block for a checked mode: `size` bytes (plus `slack` more room), the redzone after them,
    /// the mixed size in the last 8 usable bytes.
    pub(crate) fn checked_large_alloc(
        &self,
        size: usize,
        align: usize,
        zeroed: bool,
        slack: usize,
    ) -> *mut u8 {
        let Some(need) = size.checked_add(OVERHEAD).and_then(|n| n.checked_add(slack)) else {
            return ptr::null_mut();
        };
        let p = self
            .large
            .alloc(&self.source, need, align, zeroed, crate::mode::hardened());
        if let Located::Large(seg) = locate(p) {
            // SAFETY: a live large block of at least `need` bytes, ours.
            unsafe { write_large_tail(p, size, (*seg).usable) };
        }
        p
    }

    /// The requested size of a live checked large block; `None` if `p` is not one.
    ///
    /// # Safety
    ///
    /// `seg` is a mapped large-block header and `p` lies in its mapping.
    pub(crate) unsafe fn checked_large_size(&self, seg: *mut SegmentHeader, p: *mut u8) -> Option<usize> {
        // SAFETY: per the caller.
        unsafe {
            if (*seg).magic != SEGMENT_MAGIC || p != seg.cast::<u8>().add((*seg).data_offset) {
                return None;
            }
            let usable = (*seg).usable;
            match decode(p.add(usable - GUARD).cast::<u64>().read(), p, usable - OVERHEAD) {
                Guard::Live(size) => Some(size),
                _ => None,
            }
        }
    }

    /// A checked large block's free: header, trailer, redzone; then the mapping goes.
    ///
    /// # Safety
    ///
    /// As for [`Heap::checked_large_size`].
    pub(crate) unsafe fn checked_large_free(&self, seg: *mut SegmentHeader, p: *mut u8) {
        // SAFETY: per the caller.
        unsafe {
            if (*seg).magic != SEGMENT_MAGIC {
                fault(
                    "free of a large block that is not in use (double free), or a damaged header",
                    p,
                    usize::MAX,
                    None,
                );
            }
            let start = seg.cast::<u8>().add((*seg).data_offset);
            if p != start {
                fault(
                    "free of a pointer that is not the start of a block",
                    p,
                    usize::MAX,
                    None,
                );
            }
            let usable = (*seg).usable;
            let Some(size) = self.checked_large_size(seg, p) else {
                fault(
                    "the block's size trailer is damaged (an overflow past its redzone)",
                    p,
                    usize::MAX,
                    Some(usable - GUARD),
                );
            };
            check_large_redzone(p, size, usable);
            if crate::mode::debug_on() {
                crate::report::record(crate::report::OpKind::Free, p, 0xff);
            }
            self.large.free(&self.source, seg);
        }
    }
}

/// The checks of [`release`] for a block resized in place (no poison: the program keeps the bytes).
///
/// # Safety
///
/// `p` is a live block of `class`, of requested size `size`, owned by the caller.
unsafe fn release_in_place(p: *mut u8, class: usize, size: usize) {
    let body = class_size(class) - GUARD;
    // SAFETY: per the caller.
    unsafe {
        let red = core::slice::from_raw_parts(p.add(size), (body - size).min(REDZONE_MAX));
        if let Some(off) = first_not(red, REDZONE) {
            fault("buffer overflow into the redzone", p, class, Some(size + off));
        }
    }
}

/// The writes of [`prepare`] for a block resized in place.
///
/// # Safety
///
/// As for [`release_in_place`]; `new_size` fits the class (`class_for`).
unsafe fn prepare_in_place(p: *mut u8, class: usize, new_size: usize) {
    let body = class_size(class) - GUARD;
    // SAFETY: per the caller.
    unsafe {
        ptr::write_bytes(p.add(new_size), REDZONE, (body - new_size).min(REDZONE_MAX));
        guard_of(p).store(live(p, new_size), Ordering::Relaxed);
    }
}

/// # Safety
///
/// `p` is a live large block with `usable` bytes and requested size `size` (`size + 16 <= usable`).
unsafe fn check_large_redzone(p: *mut u8, size: usize, usable: usize) {
    // SAFETY: per the caller.
    let red = unsafe { core::slice::from_raw_parts(p.add(size), (usable - GUARD - size).min(REDZONE_MAX)) };
    if let Some(off) = first_not(red, REDZONE) {
        fault(
            "buffer overflow into the redzone",
            p,
            usize::MAX,
            Some(size + off),
        );
    }
}

/// # Safety
///
/// `p` is a large block with `usable` bytes, owned by the caller; `size + 16 <= usable`.
unsafe fn write_large_tail(p: *mut u8, size: usize, usable: usize) {
    // SAFETY: per the caller.
    unsafe {
        ptr::write_bytes(p.add(size), REDZONE, (usable - GUARD - size).min(REDZONE_MAX));
        p.add(usable - GUARD).cast::<u64>().write(live(p, size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_words_decode_only_what_was_written() {
        let p = ptr::without_provenance_mut::<u8>(0x7f00_1234_5670);
        for size in [0, 1, 8, 100, 4000] {
            assert_eq!(decode(live(p, size), p, 4096), Guard::Live(size));
            assert_eq!(decode(live(p, size), p.wrapping_add(16), 4096), Guard::Damaged);
        }
        assert_eq!(decode(live(p, 5000), p, 4096), Guard::Damaged);
        assert_eq!(decode(freed(p), p, 4096), Guard::Freed);
        assert_eq!(decode(POISON_WORD, p, 4096), Guard::Damaged);
        assert_eq!(decode(0, p, 4096), Guard::Damaged);
        // A damaged byte anywhere in a live word is caught.
        for byte in 0..8 {
            for bits in [0x01u64, 0x41, 0xff] {
                let v = live(p, 100) ^ (bits << (byte * 8));
                assert_eq!(decode(v, p, 4096), Guard::Damaged, "byte {byte} ^ {bits:#x}");
            }
        }
    }
}
