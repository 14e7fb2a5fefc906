//! A segment's and a slab's headers: the layout constants, [`SegmentHeader`], [`Slab`] (with its
//! invariants), and the O(1) way from a block pointer to both (`segment_of`, `slab_of`).
//!
//! The layout (a segment's header, its granule table, its slab headers, then the slab slots) and the
//! way from a block pointer to its slab are in the parent module's documentation.
//!
//! Invariants:
//! - a block is in exactly one place: a thread's magazine, free in its slab (bit set, or at or beyond
//!   `carved`), or in use;
//! - the bitmap is the truth for "is this block free"; only the owning class's lock holder writes it;
//! - `free == set bits + (capacity - carved)`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::map::{map_bits, SlotMap};
use super::remote::RemoteFrees;

pub const SEGMENT_SHIFT: usize = 22;
/// Size and alignment of a segment.
pub const SEGMENT_SIZE: usize = 1 << SEGMENT_SHIFT;
pub const SMALL_SLAB_SHIFT: u32 = 16;
pub const MEDIUM_SLAB_SHIFT: u32 = 19;
/// Slab slots per segment (small segments; medium ones use the first 8).
pub const MAX_SLABS: usize = SEGMENT_SIZE >> SMALL_SLAB_SHIFT as usize;
/// Blocks per slab, at most: classes under 64 bytes use only the start of their 64 KiB slot (the rest is
/// never touched, so never resident). This keeps every slab header small (a 128-byte bitmap instead of
/// 1 KiB for the 8-byte class), and the header area a few pages per segment instead of seventeen: at a
/// million KV items that is 5 bytes per item less.
pub const MAX_BLOCKS: usize = 1024;
/// Bitmap words per slab.
pub const BITMAP_WORDS: usize = MAX_BLOCKS / 64;

pub const SEGMENT_MAGIC: u64 = 0x686f_706c_6573_7321; // "hopless!"
pub const SLAB_MAGIC: u32 = 0x5ab1_ab1e;
pub const SLAB_POOLED: u32 = 0xf4ee_51ab;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub enum SegmentKind {
    Small = 1,
    Medium = 2,
    Large = 3,
}

/// The first bytes of every segment.
#[repr(C, align(64))]
pub struct SegmentHeader {
    /// [`SEGMENT_MAGIC`]: checked on the slow paths to refuse pointers that are not ours.
    pub magic: u64,
    pub kind: SegmentKind,
    /// log2 of the slab slot size (small and medium segments).
    pub slab_shift: u32,
    /// First slot not covered by the headers.
    pub first_slot: u16,
    /// Small and medium segments: how many of its slabs are on its pool's clean list, under the pool
    /// lock (`central::sleep`: the segment sleeps when all of them are).
    pub clean: u16,
    /// Large blocks: the profile's record of the block when it was sampled (`profile::table`), else 0.
    /// (In the padding before `map_len`: the header keeps its size.)
    pub sample: u32,
    /// Large blocks: the mapping's length (the mapping starts at the header), the block's offset from
    /// the header, and the bytes usable from there.
    pub map_len: usize,
    pub data_offset: usize,
    pub usable: usize,
    /// Small and medium segments: the pool's next segment (so a dropped heap can release them all).
    pub next: *mut SegmentHeader,
    /// Small and medium segments: which of the segment's huge pages a purge already advised
    /// `MADV_NOHUGEPAGE` (bit i: the i-th), in the low 32 bits, under the huge-page epoch in the high
    /// 32 (`central::purge::HUGE_EPOCH`); see `central::purge::leave_huge_once`. Zero in a new segment.
    pub left_huge: AtomicU64,
}

/// One 64 KiB granule of a small or medium segment in its granule table (see [`GRANULES_OFFSET`]): the
/// slab that covers it (a small slab covers one granule, a medium slab eight) and that slab's class's
/// magazine.
#[repr(C)]
pub struct Granule {
    /// The class's [`mag_offset`](crate::cache::mag_offset): set by [`Slab::init`] when the slab joins
    /// a class; stale while it is pooled, when its `carved` of 0 refuses every block.
    pub mag_offset: AtomicU32,
    /// The slab header's byte offset from the segment's first slab header: set once, when the segment is
    /// made. Zero names header 0, which lies under the header area and is never a slab (its `carved` is
    /// 0 for good), so a table not written yet refuses every block too.
    pub slab: AtomicU32,
}

/// Where a small or medium segment keeps its granule table: right after its header, a [`Granule`] for
/// each of the segment's [`MAX_SLABS`] 64 KiB granules.
///
/// The C free path finds a block's slab header and magazine here, with two loads from one line whose
/// address comes from the block's address and its segment alone. Found from the segment's slab shift
/// (a load, then a shift by it), with the magazine read from the header, they would be the end of a
/// chain of loads, which the next `malloc` of the class waits for through the magazine's count
/// (`hopless bench alloc --c-abi`, `pair-16`, Intel Xeon: 10.1 ns with the table, 12.0 ns with the
/// chain).
pub const GRANULES_OFFSET: usize = core::mem::size_of::<SegmentHeader>();

/// Where the slab headers start in a small or medium segment: after the granule table (512 bytes, so
/// each header still starts on a line).
pub const SLABS_OFFSET: usize = GRANULES_OFFSET + MAX_SLABS * core::mem::size_of::<Granule>();

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum SlabState {
    /// In its segment pool's dirty list; belongs to no class. (Also what a slab header of a sleeping
    /// segment reads: its page is decommitted, so zero.)
    Pooled = 0,
    /// Belongs to a class and is on its partial list (it has free blocks).
    Partial = 1,
    /// Belongs to a class and has no free blocks; on no list.
    Full = 2,
    /// Taken off the pool's dirty list to be purged; on no list.
    Purging = 3,
    /// Belongs to a class and is owned by a thread cache (`owner`): on that cache's list of owned
    /// slabs (linked through `prev` and `next`), not on the class's.
    Owned = 4,
    /// In its segment pool's clean list (purged, or never touched); belongs to no class.
    Clean = 5,
    /// The first slab of a sleeping segment, on its pool's sleeping list: every slab of the segment was
    /// clean, and the headers past the segment's first page are decommitted (`central::sleep`).
    Asleep = 6,
}

/// A slab header. Lives in the segment's header area, never in block memory.
///
/// Who writes it: while `owner == 0` the slab is its class's, and the class's lock covers every
/// mutable field below. While `owner` is a thread cache's token (state `Owned`), only the thread
/// holding that cache writes `bitmap`, `free`, `hint`, `carved`, `state` and the links, without a lock;
/// any other thread writes only `remote` (atomic read-modify-writes: a remote free). `owner` changes
/// from 0 to a token and back only under the class lock (`ClassHeap::adopt`, `ClassHeap::hand_over`),
/// so a class lock holder reads it stably.
///
/// Invariants while the slab belongs to a class (`magic == SLAB_MAGIC`), under its writer (checked by
/// [`Slab::check`] after every `take` and `put` in debug builds):
/// - `free == (set bits of bitmap below carved) + (capacity - carved)`: every block is either free here or
///   out (handed out, in a magazine, or freed remotely and not folded yet). `ClassHeap::refill`/`flush`
///   and the `empty` count rely on it.
/// - a block is free in at most one of `bitmap` and `remote`; `Slab::is_free` reads both.
/// - `carved <= capacity <= MAX_BLOCKS`; no bit at or above `carved` is set. `check_free` relies on it to
///   refuse never-handed-out blocks.
/// - no bitmap word below `hint` has a set bit (`take` starts its search there).
/// - `state` is `Partial` exactly when the slab is on its class's partial list (`free > 0` then), `Full`
///   when `free == 0` and it is on no list, `Owned` when it is on one of its owner's lists.
///
/// While the slab belongs to no class (`magic != SLAB_MAGIC`: pooled, purging, or a slot that was never
/// a slab), `carved == 0`: `SlabPool::put` clears it, and fresh headers are zeroed. The C free path's
/// check (`handed_out_class_in`) relies on it instead of testing the magic.
///
/// `class`, `capacity`, `div_shift`, `div_inv` and `start` change only when the slab joins a class
/// (`init`), while no block of it is out: that is why the lock-free readers (`check_free`,
/// `handed_out_in`, `is_free`) may read them; so do its granules' entries in the segment's
/// granule table ([`GRANULES_OFFSET`]). `div_shift` and `div_inv` are functions of the
/// class, copied here so that the free path reads one header and no class table.
#[repr(C, align(64))]
pub struct Slab {
    /// `SLAB_MAGIC` while the slab belongs to a class, `SLAB_POOLED` while in a pool.
    pub magic: u32,
    pub class: u32,
    pub state: SlabState,
    /// The class's `size_class::div_shift` (with `div_inv`, the free path's block-index test).
    pub div_shift: u8,
    /// Free blocks (set bits plus the uncarved tail).
    pub free: u32,
    pub capacity: u32,
    /// Blocks below `carved` have been handed out at least once; the bitmap speaks only for them. Written
    /// under the class lock; read without it by `free`, which refuses a block at or beyond it (never
    /// handed out). Only grows while any block of the slab is in use, so a correct free always passes.
    pub carved: AtomicU32,
    /// While the slab belongs to a class: no bitmap word below `hint` has a set bit. While it is on its
    /// pool's dirty list: when it went there, the low 32 bits of `platform::now_ms` (the pool purges it
    /// once it has stayed unused for the purge delay; see `central`), read and written under the pool
    /// lock. One field for both keeps the slab's own part at 192 bytes, three cache lines.
    pub hint: u32,
    /// The class's `CLASS_DIV_INV`: `size_class::exact_block_index` of an offset is the index of the
    /// block starting there, or a number far above any block count when none does.
    pub div_inv: u64,
    pub start: *mut u8,
    /// The token of the thread cache that owns the slab, or 0 while it is its class's (see above). In
    /// the first line, which a flush's check has just read: the flush goes by it for every run.
    pub owner: AtomicU32,
    /// Whether the slab had an owner since it joined its class: only then can `remote` hold anything,
    /// so `init` clears it only then (with owned slabs off, its lines are never touched).
    pub was_owned: u32,
    pub next: *mut Slab,
    /// Bit `i` set: block `i` is free (for `i < carved`).
    /// Written only under the class lock; read without it by the double-free check of a block whose
    /// key or mark says it may be in its slab (atomics, relaxed: plain moves on x86-64).
    pub bitmap: [AtomicU64; BITMAP_WORDS],
    /// The list link back (`next` is in the first line, which the lists' walks read anyway).
    pub prev: *mut Slab,
    /// The blocks other threads freed into an owned slab, not folded into `bitmap` yet
    /// (`segment::remote`). Past the first three lines: only a slab with remote frees touches them.
    pub remote: RemoteFrees<BITMAP_WORDS>,
}

// Six cache lines (three for the slab, three for its remote frees): with the headers starting 576 bytes
// into the segment, each starts on a line, so the free path's fields (the first 48 bytes) are one line.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Slab>() == 384);

/// Blocks on their way back to one slab, each checked without the class lock
/// ([`Slab::check_return`]): the slab header, a word of its bitmap, and the bits of the blocks in that
/// word (never zero). A flush's locked part then costs a few instructions per word, not per block.
///
/// `bits == 0` is a fold request ([`Returning::fold`]).
#[derive(Clone, Copy, Debug)]
pub struct Returning {
    pub slab: *mut Slab,
    pub word: u32,
    pub bits: u64,
}

impl Returning {
    /// A request to fold `slab`'s remote frees under its class's lock: a remote free found the slab
    /// handed to its class meanwhile (`RemoteFree::Recorded { fold_now: true }`).
    pub const fn fold(slab: *mut Slab) -> Self {
        Returning {
            slab,
            word: 0,
            bits: 0,
        }
    }
}

/// Size of the header area (segment header and every slab header), rounded to a page.
pub const HEADER_AREA: usize =
    (SLABS_OFFSET + MAX_SLABS * core::mem::size_of::<Slab>()).next_multiple_of(crate::platform::PAGE_SIZE);

/// Which 4 MiB-aligned addresses are hopless segments or large mappings.
pub type SegmentMap = SlotMap<SEGMENT_SHIFT, { map_bits(SEGMENT_SHIFT) / 64 }>;

/// The process-wide segment map (shared by every heap in the process).
pub static SEGMENT_MAP: SegmentMap = SlotMap::new();

/// The segment a pointer into it (or into its first 4 MiB, for a large block) belongs to.
#[inline(always)]
pub fn segment_of(p: *mut u8) -> *mut SegmentHeader {
    p.map_addr(|a| a & !(SEGMENT_SIZE - 1)).cast()
}

/// The slab header array of a small or medium segment.
#[inline(always)]
pub fn slabs_of(seg: *mut SegmentHeader) -> *mut Slab {
    // SAFETY-free: pointer arithmetic with wrapping semantics; callers only dereference for small and
    // medium segments, whose header area holds MAX_SLABS slab headers at this offset.
    seg.cast::<u8>().wrapping_add(SLABS_OFFSET).cast()
}

/// The granule table of a small or medium segment (see [`GRANULES_OFFSET`]).
#[inline(always)]
pub fn granules_of(seg: *mut SegmentHeader) -> *const Granule {
    // Pointer arithmetic with wrapping semantics; callers only dereference for small and medium
    // segments, whose header area holds the table at this offset.
    seg.cast::<u8>().wrapping_add(GRANULES_OFFSET).cast()
}

/// Fills the granule table of a segment being made, whose slab slots are `1 << slab_shift` bytes: each
/// granule names the slab header of the slot it lies in (the granules under the header area name
/// header 0, never a slab). The magazines come with [`set_granule_magazines`].
///
/// # Safety
///
/// `seg` is a small or medium segment being made, its header area writable and not yet shared.
pub unsafe fn init_granules(seg: *mut SegmentHeader, slab_shift: u32) {
    let granules = granules_of(seg);
    for g in 0..MAX_SLABS {
        let slab = ((g >> (slab_shift - SMALL_SLAB_SHIFT)) * core::mem::size_of::<Slab>()) as u32;
        // SAFETY: `g < MAX_SLABS`, an entry of the table in `seg`'s header area (per the caller).
        unsafe { (*granules.add(g)).slab.store(slab, Ordering::Relaxed) };
    }
}

/// Names the magazine at `mag_offset` in the granule table for every 64 KiB granule of the slab slot at
/// `start`, `slot_size` bytes long (one granule for a small slab, eight for a medium one).
///
/// # Safety
///
/// `start` is a slab slot of a live small or medium segment, and the caller may write its slab's
/// header (it holds the class lock and is making the slab its class's).
pub unsafe fn set_granule_magazines(start: *mut u8, slot_size: usize, mag_offset: u32) {
    let seg = segment_of(start);
    let first = (start.addr() & (SEGMENT_SIZE - 1)) >> SMALL_SLAB_SHIFT;
    for g in first..first + (slot_size >> SMALL_SLAB_SHIFT) {
        // SAFETY: the slot lies in the segment `seg`, so its granules are below `MAX_SLABS`: entries of
        // the table in the live segment's header area (per the caller).
        unsafe {
            (*granules_of(seg).add(g))
                .mag_offset
                .store(mag_offset, Ordering::Relaxed)
        };
    }
}

/// `p`'s 64 KiB granule in its segment's granule table.
///
/// # Safety
///
/// `seg` is `p`'s segment, a live small or medium one.
#[inline(always)]
pub unsafe fn granule_of(seg: *mut SegmentHeader, p: *mut u8) -> *const Granule {
    let granule = (p.addr() & (SEGMENT_SIZE - 1)) >> SMALL_SLAB_SHIFT;
    // SAFETY: `granule < MAX_SLABS` (`p` is inside the 4 MiB segment), and the table is in the header
    // area of the live segment `seg` (per the caller).
    unsafe { granules_of(seg).add(granule) }
}

/// The slab holding `p`, in a small or medium segment.
///
/// # Safety
///
/// `p` points into a live small or medium segment.
#[inline(always)]
pub unsafe fn slab_of(seg: *mut SegmentHeader, p: *mut u8) -> *mut Slab {
    // SAFETY: the caller guarantees `seg` is a live small/medium segment, whose header is initialised.
    let shift = unsafe { (*seg).slab_shift };
    // `p`'s offset in its segment (`seg` is `segment_of(p)`), from `p` alone: a mask, however `seg` was
    // found.
    let slot = (p.addr() & (SEGMENT_SIZE - 1)) >> shift;
    // SAFETY: slot < MAX_SLABS because p is inside the 4 MiB segment and slots are at least 64 KiB.
    unsafe { slabs_of(seg).add(slot) }
}

/// The small or medium segment `p` lies in, from the segment map and the segment's kind; `None` for a
/// large mapping or an address hopless does not manage.
///
/// # Safety
///
/// As for [`Slab::handed_out_class`].
#[inline(always)]
pub unsafe fn slab_segment(p: *mut u8) -> Option<*mut SegmentHeader> {
    if !SEGMENT_MAP.contains(p) {
        return None;
    }
    let seg = segment_of(p);
    // SAFETY: the map's bit says a hopless segment or large mapping starts at `seg` (see `locate`), so its
    // header is mapped and `kind`, written once before the bit was set, is stable.
    (unsafe { (*seg).kind } != SegmentKind::Large).then_some(seg)
}
