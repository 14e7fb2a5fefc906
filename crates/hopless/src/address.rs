//! What an address is to hopless, from the address alone: a small or medium segment, a large block (a
//! mapping of its own, or an arena span), or foreign. The free paths and `Hopless::owns` ask this before
//! they read any header, so a pointer hopless never handed out is reported instead of faulting.

use crate::large::arena::{self, ARENA_MAP};
use crate::segment::{segment_of, SegmentHeader, SegmentKind, SEGMENT_MAP, SEGMENT_SIZE};

/// What an address is to hopless, from the address alone (see [`locate`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Located {
    /// Not memory hopless handed out or manages.
    Foreign,
    /// Inside a small or medium segment (a block, or the segment's header area).
    Slab(*mut SegmentHeader),
    /// Inside a large mapping, between its header and its end.
    Large(*mut SegmentHeader),
}

/// Finds the segment or large mapping `p` lies in, exactly: a pointer in a 4 MiB slot that a large
/// mapping only partly covers is ours only below the mapping's end (the kernel may place other mappings
/// in the rest of the slot). A block whose alignment is 4 MiB or more starts at a slot boundary; its
/// header lives one slot below it (see `large`), and nothing else of hopless starts at a slot boundary.
///
/// A pointer in an arena (no segment-map bit: arenas are in the arena map instead) is resolved through the
/// arena's span table (`arena::span_of`).
///
/// A foreign pointer in the tail of a large block's slot is told apart by reading that block's header; if
/// another thread unmaps that block at the same moment, the read can fault. Only a pointer hopless never
/// handed out (an invalid free) can meet that window.
#[inline]
pub fn locate(p: *const u8) -> Located {
    let p = p.cast_mut();
    if SEGMENT_MAP.contains(p) {
        let seg = segment_of(p);
        // SAFETY:
        // 1. `seg` is `p` rounded down to 4 MiB, and the map's bit for that slot is set only while a
        //    hopless segment or large mapping starts there (set after the header is written, cleared
        //    before the mapping is unmapped: `SegmentMap::insert`/`remove`).
        // 2. Every such mapping begins with a `SegmentHeader`, so the read is in bounds and aligned.
        // 3. `kind` and `map_len` are written once, when the header is, and never change while the bit is
        //    set, so a racing thread cannot tear them; a free racing the unmapping of the same large block
        //    is the program's double free, which the magic check after this catches or the map refuses.
        let (kind, len) = unsafe { ((*seg).kind, (*seg).map_len) };
        return match kind {
            SegmentKind::Large if p.addr() - seg.addr() < len => Located::Large(seg),
            SegmentKind::Large => Located::Foreign,
            _ => Located::Slab(seg),
        };
    }
    locate_slot_aligned(p)
}

#[cold]
#[inline(never)]
fn locate_slot_aligned(p: *mut u8) -> Located {
    if ARENA_MAP.contains(p) {
        return match arena::span_of(p) {
            Some(seg) => Located::Large(seg),
            None => Located::Foreign,
        };
    }
    if p.addr() & (SEGMENT_SIZE - 1) != 0 || p.addr() < SEGMENT_SIZE {
        return Located::Foreign;
    }
    let seg = p.wrapping_sub(SEGMENT_SIZE).cast::<SegmentHeader>();
    if !SEGMENT_MAP.contains(seg.cast()) {
        return Located::Foreign;
    }
    // SAFETY: the map says a hopless segment or large mapping starts at `seg`.
    let (kind, off, len) = unsafe { ((*seg).kind, (*seg).data_offset, (*seg).map_len) };
    if kind == SegmentKind::Large && off == SEGMENT_SIZE && len > SEGMENT_SIZE {
        Located::Large(seg)
    } else {
        Located::Foreign
    }
}
