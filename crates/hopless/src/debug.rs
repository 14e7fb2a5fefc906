//! Debug and hardened modes (feature `debug`; switched on at run time by `HOPLESS_DEBUG=1` /
//! `HOPLESS_HARDENED=1`, read with `getenv` at the first allocation, or by [`crate::mode::set_mode`] before it).
//!
//! Debug mode bypasses the thread caches (as SLUB's debug switches off its fast path): no thread is given
//! a cache, so every allocation and free falls from the (unchanged) fast path to the slow path, which sees
//! the mode and goes to the central heap under its class lock, where the slab bitmap is the truth, and
//! - a free checks the segment and slab header magic, that the pointer is a block start, and the bitmap
//!   bit: a double free is caught at the second free, not at a later flush;
//! - each block carries a redzone after the requested bytes (pattern `0xFB`) and the requested size in its
//!   last 8 bytes; a free checks the redzone and reports the offset of the first damaged byte;
//! - freed blocks (and new slabs) are filled with `0xDD`; an allocation checks its block is still all
//!   poison, so a write after free is reported with its offset when the block is handed out again;
//! - a lock-free ring of the last 256 operations (pointer, class, thread, operation, and for a free its
//!   call stack of up to 12 return addresses from the C runtime's unwinder) is kept; reports list the
//!   entries for the faulting pointer, then the call stacks of the operation refused and of the
//!   pointer's last free (`platform::stack`).
//!
//! Every report is one block on stderr written without allocating, then `abort()`.
//!
//! Hardened mode: new slabs hand out their blocks in random order (as `SLAB_FREELIST_RANDOM`), large
//! blocks get a `PROT_NONE` guard page after them (and skip the mapping cache), and every block is
//! checked on the thread-cached paths of `heap::hardened`: a guard word before each block (double frees,
//! underflows), a redzone after the requested bytes (overflows), poison checked at reuse (writes after
//! free). Like debug mode it gives no thread a fast-path cache, so the fast path needs no test.

// Debug-mode checks index blocks by sizes they validated first (see each function).
#![allow(clippy::indexing_slicing)]

use core::sync::atomic::{AtomicU64, Ordering};

use crate::report::{fault, record, OpKind};
use crate::segment::{slab_of, SEGMENT_MAGIC, SLAB_MAGIC};
use crate::size_class::{self, class_size};

pub const POISON: u8 = 0xDD;
pub const REDZONE: u8 = 0xFB;
/// Redzone bytes at least, plus the 8-byte size trailer.
pub const REDZONE_MIN: usize = 16;
const TRAILER: usize = 8;

// ------------------------------------------------------------------------------------------------------
// Checked blocks.

/// The class a debug-mode block of (`size`, `align`) uses (room for the redzone and trailer).
pub fn class_for(size: usize, align: usize) -> Option<usize> {
    size_class::class_for(size.checked_add(REDZONE_MIN + TRAILER)?, align)
}

/// Makes a freshly taken block ready: checks it is still all poison (reports a write after free), then
/// writes the redzone and the size trailer.
///
/// # Safety
///
/// `p` is a block of `class` the caller just took from the central heap.
pub unsafe fn prepare(p: *mut u8, class: usize, size: usize, zeroed: bool) {
    let cs = class_size(class);
    // SAFETY: the block has `cs` bytes and is ours.
    let bytes = unsafe { core::slice::from_raw_parts_mut(p, cs) };
    if let Some(off) = first_not(bytes, POISON) {
        fault(
            "write after free (a freed block was modified before it was reused)",
            p,
            class,
            Some(off),
        );
    }
    // The class was chosen with room for the redzone and trailer (`class_for`): size + 24 <= cs.
    let trailer_at = cs.saturating_sub(TRAILER);
    let (body, trailer) = bytes.split_at_mut(trailer_at.min(bytes.len()));
    let (user, red) = body.split_at_mut(size.min(body.len()));
    if zeroed {
        user.fill(0);
    }
    red.fill(REDZONE);
    for (t, b) in trailer.iter_mut().zip((size as u64).to_le_bytes()) {
        *t = b;
    }
    record(OpKind::Alloc, p, class);
}

/// Checks a block being freed: headers, redzone; then poisons it. The bitmap check (double free) is the
/// caller's, under the class lock.
///
/// # Safety
///
/// `p` is in a live small/medium segment and is a block start of `class`, not yet freed.
pub unsafe fn check_and_poison(p: *mut u8, class: usize) {
    let cs = class_size(class);
    // SAFETY: per the caller, the block has `cs` bytes.
    let bytes = unsafe { core::slice::from_raw_parts_mut(p, cs) };
    let trailer_at = cs.saturating_sub(TRAILER);
    let mut t = [0u8; 8];
    for (d, s) in t.iter_mut().zip(bytes.iter().skip(trailer_at)) {
        *d = *s;
    }
    let size = u64::from_le_bytes(t) as usize;
    if size > trailer_at.saturating_sub(REDZONE_MIN) {
        fault(
            "the block's size trailer is damaged (overflow past its redzone)",
            p,
            class,
            Some(cs - TRAILER),
        );
    }
    if let Some(off) = first_not(bytes.get(size..trailer_at).unwrap_or_default(), REDZONE) {
        fault("buffer overflow into the redzone", p, class, Some(size + off));
    }
    bytes.fill(POISON);
}

/// The offset of the first byte of `bytes` that is not `pattern`. Compares whole aligned words, eight
/// at a time with no early exit inside a group (so the compiler can vectorise it), then finds the byte.
pub fn first_not(bytes: &[u8], pattern: u8) -> Option<usize> {
    let word = u64::from_ne_bytes([pattern; 8]);
    // SAFETY: every bit pattern is a valid u64, so viewing the aligned middle as words is sound.
    let (head, words, _) = unsafe { bytes.align_to::<u64>() };
    let byte_at = |from: usize| {
        bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .position(|&b| b != pattern)
            .map(|o| from + o)
    };
    if head.iter().any(|&b| b != pattern) {
        return byte_at(0);
    }
    let groups = words.chunks_exact(8);
    let rest = groups.remainder();
    let grouped = words.len() - rest.len();
    for (i, g) in groups.enumerate() {
        if g.iter().fold(0, |acc, w| acc | (w ^ word)) != 0 {
            return byte_at(head.len() + i * 64);
        }
    }
    for (i, w) in rest.iter().enumerate() {
        if *w != word {
            return byte_at(head.len() + (grouped + i) * 8);
        }
    }
    byte_at(head.len() + words.len() * 8)
}

/// Checks the headers a free of `p` relies on; returns the class. Reports foreign pointers, damaged
/// segment or slab headers and pointers that are not block starts.
///
/// # Safety
///
/// None beyond `p` being the program's claim of a hopless block.
pub unsafe fn check_headers(p: *mut u8) -> Option<usize> {
    let (seg, large) = match crate::address::locate(p) {
        crate::address::Located::Foreign => {
            fault("free of a pointer hopless did not allocate", p, usize::MAX, None)
        }
        crate::address::Located::Large(seg) => (seg, true),
        crate::address::Located::Slab(seg) => (seg, false),
    };
    // SAFETY: `locate` found the header in the segment map or an arena: it is mapped. Only the magic is
    // read before it is known to be intact (a freed arena block's header may be zeroes).
    let magic = unsafe { (*seg).magic };
    if magic != SEGMENT_MAGIC {
        fault(
            "free into a damaged segment header (or a second free of a large block)",
            p,
            usize::MAX,
            None,
        );
    }
    if large {
        return None;
    }
    // SAFETY: a small/medium segment.
    let s = unsafe { &*slab_of(seg, p) };
    if s.magic != SLAB_MAGIC {
        fault(
            "free into a damaged slab header (magic overwritten)",
            p,
            usize::MAX,
            None,
        );
    }
    let class = s.class as usize;
    if class >= size_class::NUM_CLASSES {
        fault(
            "free into a damaged slab header (class out of range)",
            p,
            usize::MAX,
            None,
        );
    }
    let off = p.addr().wrapping_sub(s.start.addr());
    if off % class_size(class) != 0 || off / class_size(class) >= s.capacity as usize {
        fault(
            "free of a pointer that is not the start of a block",
            p,
            class,
            None,
        );
    }
    Some(class)
}

/// A cheap random number for the hardened mode's slab order.
pub fn random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0x243f_6a88_85a3_08d3);
    let mut x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::first_not;

    #[test]
    fn first_not_finds_the_first_odd_byte_anywhere() {
        for len in (0..200).step_by(7).chain([64, 128, 4096]) {
            let mut v = vec![0xDDu8; len];
            assert_eq!(first_not(&v, 0xDD), None);
            // Under Miri each position is a scan of the whole buffer: a sample does, with the first
            // and last 9 bytes (every offset in a word at both ends).
            let step = if cfg!(miri) { 1 + len / 16 } else { 1 };
            let ends = (0..len.min(9)).chain(len.saturating_sub(9)..len);
            for at in (0..len).step_by(step).chain(ends) {
                v[at] = 1;
                assert_eq!(first_not(&v, 0xDD), Some(at), "len {len} at {at}");
                v[at] = 0xDD;
            }
        }
    }
}
