//! Segments and slabs: where blocks live, and how a block pointer finds its slab in O(1).
//!
//! A segment is 4 MiB, aligned to 4 MiB. Its first bytes hold a [`SegmentHeader`], then an array of
//! [`Slab`] headers, one per slab slot. The rest is cut into equal slab slots: 64 KiB for small classes,
//! 512 KiB for medium ones. The slots that the headers cover are never handed out, so block memory is
//! aligned to the slot size and no header shares a cache line with a block.
//!
//! From any block pointer `p`: `segment = p & !(4 MiB - 1)`, `slot = (p - segment) >> slab_shift`,
//! `slab = &segment.slabs[slot]`. A large block is a segment of its own kind with the block after the
//! header page, so the same two lines find its header.
//!
//! Invariants:
//! - a block is in exactly one place: a thread's magazine, free in its slab (bit set, or at or beyond
//!   `carved`), or in use;
//! - the bitmap is the truth for "is this block free"; only the owning class's lock holder writes it;
//! - `free == set bits + (capacity - carved)`.

use core::ptr;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::size_class;

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
    pub first_slot: u32,
    /// Large blocks: the mapping's length (the mapping starts at the header), the block's offset from
    /// the header, and the bytes usable from there.
    pub map_len: usize,
    pub data_offset: usize,
    pub usable: usize,
    /// Small and medium segments: the pool's next segment (so a dropped heap can release them all).
    pub next: *mut SegmentHeader,
}

/// Where the slab headers start in a small or medium segment.
pub const SLABS_OFFSET: usize = core::mem::size_of::<SegmentHeader>();

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum SlabState {
    /// In its segment pool's dirty or clean list; belongs to no class.
    Pooled = 0,
    /// Belongs to a class and is on its partial list (it has free blocks).
    Partial = 1,
    /// Belongs to a class and has no free blocks; on no list.
    Full = 2,
    /// Taken off the pool's dirty list to be purged; on no list.
    Purging = 3,
}

/// A slab header. Lives in the segment's header area, never in block memory.
///
/// Invariants while the slab belongs to a class (`magic == SLAB_MAGIC`), all under that class's lock
/// (checked by [`Slab::check`] after every `take` and `put` in debug builds):
/// - `free == (set bits of bitmap below carved) + (capacity - carved)`: every block is either free here or
///   out (handed out, or in a magazine). `ClassHeap::refill`/`flush` and the `empty` count rely on it.
/// - `carved <= capacity <= MAX_BLOCKS`; no bit at or above `carved` is set. `check_free` relies on it to
///   refuse never-handed-out blocks.
/// - no bitmap word below `hint` has a set bit (`take` starts its search there).
/// - `state` is `Partial` exactly when the slab is on its class's partial list (`free > 0` then), `Full`
///   when `free == 0` and it is on no list.
///
/// While the slab belongs to no class (`magic != SLAB_MAGIC`: pooled, purging, or a slot that was never
/// a slab), `carved == 0`: `SlabPool::put` clears it, and fresh headers are zeroed. The C free path's
/// check (`handed_out_class_in`) relies on it instead of testing the magic.
///
/// `class`, `capacity`, `div_shift`, `div_inv`, `mag_offset` and `start` change only when the slab joins a
/// class (`init`), while no block of it is out: that is why the lock-free readers (`check_free`,
/// `handed_out_in`, `is_free`) may read them. `div_shift`, `div_inv` and `mag_offset` are functions of
/// the class, copied here so that the free path reads one header and no class table.
#[repr(C)]
pub struct Slab {
    /// [`SLAB_MAGIC`] while the slab belongs to a class, [`SLAB_POOLED`] while in a pool.
    pub magic: u32,
    pub class: u32,
    pub state: SlabState,
    /// The class's `size_class::div_shift` (with `div_inv`, the free path's block-index test).
    pub div_shift: u8,
    /// Free blocks (set bits plus the uncarved tail).
    pub free: u32,
    pub capacity: u32,
    /// Where the class's magazine is in a thread cache (`thread_cache::mag_offset(class)`), so that the
    /// C free path goes from the header to the magazine with an add.
    pub mag_offset: u32,
    /// Blocks below `carved` have been handed out at least once; the bitmap speaks only for them. Written
    /// under the class lock; read without it by `free`, which refuses a block at or beyond it (never
    /// handed out). Only grows while any block of the slab is in use, so a correct free always passes.
    pub carved: AtomicU32,
    /// No bitmap word below `hint` has a set bit.
    pub hint: u32,
    /// The class's `CLASS_DIV_INV`: `size_class::exact_block_index` of an offset is the index of the
    /// block starting there, or a number far above any block count when none does.
    pub div_inv: u64,
    pub start: *mut u8,
    pub prev: *mut Slab,
    pub next: *mut Slab,
    /// Bit `i` set: block `i` is free (for `i < carved`).
    /// Written only under the class lock; read without it by the double-free check of a block marked as
    /// being in its slab (atomics, relaxed: plain moves on x86-64).
    pub bitmap: [AtomicU64; BITMAP_WORDS],
}

/// A block on its way back to its slab, checked without the class lock ([`Slab::check_return`]): the
/// block, its slab header and its index there.
#[derive(Clone, Copy, Debug)]
pub struct Returning {
    pub p: *mut u8,
    pub slab: *mut Slab,
    pub index: u32,
}

/// Size of the header area (segment header and every slab header), rounded to a page.
pub const HEADER_AREA: usize =
    (SLABS_OFFSET + MAX_SLABS * core::mem::size_of::<Slab>()).next_multiple_of(crate::platform::PAGE_SIZE);

/// Which `1 << SHIFT`-aligned slots of the address space hold a region of hopless's: one bit per slot of
/// the 47-bit user address space (zero `.bss`, of which only the pages covering used addresses become
/// resident). The slow paths consult it before reading a header, so freeing a pointer hopless never handed
/// out is reported instead of faulting on an unmapped header.
pub struct SlotMap<const SHIFT: usize, const WORDS: usize> {
    words: [AtomicU64; WORDS],
}

/// The bits a map of `1 << shift`-sized slots needs: 47-bit user addresses; under Miri (whose fake
/// addresses are small) a smaller map keeps the interpreter from tracking megabytes of static memory.
pub const fn map_bits(shift: usize) -> usize {
    if cfg!(miri) {
        1 << (40 - shift)
    } else {
        1 << (47 - shift)
    }
}

/// Which 4 MiB-aligned addresses are hopless segments or large mappings.
pub type SegmentMap = SlotMap<SEGMENT_SHIFT, { map_bits(SEGMENT_SHIFT) / 64 }>;

/// The process-wide segment map (shared by every heap in the process).
pub static SEGMENT_MAP: SegmentMap = SlotMap::new();

impl<const SHIFT: usize, const WORDS: usize> Default for SlotMap<SHIFT, WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SHIFT: usize, const WORDS: usize> SlotMap<SHIFT, WORDS> {
    pub const fn new() -> Self {
        SlotMap {
            words: [const { AtomicU64::new(0) }; WORDS],
        }
    }

    #[inline]
    fn slot(addr: usize) -> Option<(usize, u64)> {
        let i = addr >> SHIFT;
        (i < WORDS * 64).then_some((i / 64, 1u64 << (i % 64)))
    }

    /// Records a region starting at `seg` (returns false if its address is outside the map: the region
    /// must not be used). The first slot (address 0) is never recorded, so a null pointer is never found
    /// in the map: the C free path relies on it instead of testing for null first.
    pub fn insert(&self, seg: *mut SegmentHeader) -> bool {
        if seg.addr() >> SHIFT == 0 {
            return false;
        }
        match Self::slot(seg.addr()) {
            Some((w, bit)) => match self.words.get(w) {
                Some(word) => {
                    word.fetch_or(bit, Ordering::Release);
                    true
                }
                None => false,
            },
            None => false,
        }
    }

    pub fn remove(&self, seg: *mut SegmentHeader) {
        if let Some(word) = Self::slot(seg.addr()).and_then(|(w, bit)| Some((self.words.get(w)?, bit))) {
            word.0.fetch_and(!word.1, Ordering::Release);
        }
    }

    /// Whether `p` lies in a slot recorded in the map (for the segment map: the first 4 MiB of a hopless
    /// segment or large mapping).
    #[inline]
    pub fn contains(&self, p: *const u8) -> bool {
        match Self::slot(p.addr()) {
            Some((w, bit)) => self
                .words
                .get(w)
                .is_some_and(|word| word.load(Ordering::Acquire) & bit != 0),
            None => false,
        }
    }
}

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
/// arena's span table (`arena::locate`).
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
    if crate::arena::ARENA_MAP.contains(p) {
        return crate::arena::locate(p);
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
    /// Makes a pooled slab belong to `class`; everything in it free.
    ///
    /// # Safety
    ///
    /// `slab` is a valid slab header nobody else touches (caller holds the class lock and took it from a
    /// pool); `start` is its slot, `slot_size` the slot's size.
    pub unsafe fn init(slab: *mut Slab, class: usize, start: *mut u8, slot_size: usize) {
        let capacity = (slot_size / size_class::class_size(class)).min(MAX_BLOCKS) as u32;
        // SAFETY: per the caller, the header is valid and exclusively ours.
        let s = unsafe { &mut *slab };
        s.magic = SLAB_MAGIC;
        s.class = class as u32;
        s.state = SlabState::Partial;
        s.free = capacity;
        s.capacity = capacity;
        // A shift below 64 (a power of two dividing a class size).
        s.div_shift = size_class::div_shift(class) as u8;
        s.mag_offset = crate::thread_cache::mag_offset(class);
        // A class out of range cannot happen (callers pass a class index); 0 would make every block
        // index 0, which the carved test then decides.
        s.div_inv = size_class::CLASS_DIV_INV.get(class).copied().unwrap_or(0);
        s.carved.store(0, Ordering::Relaxed);
        s.hint = 0;
        s.start = start;
        s.prev = ptr::null_mut();
        s.next = ptr::null_mut();
        for w in &s.bitmap {
            w.store(0, Ordering::Relaxed);
        }
    }

    /// Takes up to `out.len()` free blocks, lowest freed first, then fresh ones from the uncarved tail
    /// (each filled with `carve_fill` if given). Returns how many it took.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the slab's class.
    pub unsafe fn take(slab: *mut Slab, out: &mut [*mut u8], carve_fill: Option<u8>) -> usize {
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
                    let bit = word.trailing_zeros() as usize;
                    word &= word - 1;
                    if let Some(o) = out.get_mut(got) {
                        *o = start.wrapping_add((w * 64 + bit) * size);
                    }
                    got += 1;
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
                    *o = p;
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
    pub unsafe fn take_random(slab: *mut Slab, out: &mut [*mut u8], rng: fn() -> u64) -> usize {
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
                    *o = (*s).start.wrapping_add(c as usize * size);
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
                    *o = (*s).start.wrapping_add((w * 64 + bit as usize) * size);
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
            if index >= u64::from((*slab).capacity) {
                return Err(FreeError::NotBlockStart);
            }
            if index >= u64::from((*slab).carved.load(Ordering::Relaxed)) {
                return Err(FreeError::NeverAllocated);
            }
            Ok(index as u32)
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
        // SAFETY: the caller holds the class lock; field-wise access as in `take`.
        unsafe {
            let s = slab;
            if (*s).magic != SLAB_MAGIC
                || (*s).class as usize != class
                || index >= (*s).carved.load(Ordering::Relaxed)
            {
                return Err(FreeError::DoubleFree);
            }
            let (w, bit) = (index as usize / 64, 1u64 << (index % 64));
            let Some(word) = (*s).bitmap.get(w) else {
                return Err(FreeError::NotBlockStart);
            };
            let old = word.load(Ordering::Relaxed);
            if old & bit != 0 {
                return Err(FreeError::DoubleFree);
            }
            word.store(old | bit, Ordering::Relaxed);
            if (w as u32) < (*s).hint {
                (*s).hint = w as u32;
            }
            (*s).free += 1;
            // Not under Miri: the same tests check it natively, and Miri runs them ten times over.
            debug_assert!(cfg!(miri) || Slab::check(s));
            Ok(())
        }
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
        unsafe { Slab::handed_out_in(seg, p) }.map(crate::thread_cache::class_at_mag_offset)
    }

    /// [`Slab::handed_out_class`] once `p`'s segment is known to be a small or medium one, answering with
    /// where the class's magazine is in a thread cache (the slab's `mag_offset`) rather than the class.
    ///
    /// # Safety
    ///
    /// `seg` is `segment_of(p)` and a live small or medium segment.
    #[inline(always)]
    pub unsafe fn handed_out_in(seg: *mut SegmentHeader, p: *mut u8) -> Option<u32> {
        // SAFETY: per the caller, `slab_of` stays inside the segment's header area (`p` is inside the
        // 4 MiB segment). The slab fields read here are stable while a block of the slab is out (see
        // [`Slab`]); a racing reader of a slab that just left its class sees `carved == 0`, or a state the
        // full check would also have seen a moment earlier. No magic test is needed: a slab that does not
        // belong to a class (pooled, purging, never used, or a slot under the header area) has
        // `carved == 0`, so no index passes.
        unsafe {
            let s = slab_of(seg, p);
            let offset = p.addr().wrapping_sub((*s).start.addr()) as u64;
            // One test for "a block start" and "handed out" (see `size_class::CLASS_DIV_INV`).
            let index = size_class::exact_block_index(offset, (*s).div_inv, u32::from((*s).div_shift));
            // Read with the others, so that it is one load from the header too.
            let mag_offset = (*s).mag_offset;
            if index >= u64::from((*s).carved.load(Ordering::Relaxed)) {
                return None;
            }
            Some(mag_offset)
        }
    }

    /// Whether block `p` of this slab is free in its bitmap. Without the class lock the answer is a
    /// moment's: a block this thread holds (in use, or the subject of a free) cannot change state, so for
    /// the double-free check it is exact.
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
            match (*slab).bitmap.get(i / 64) {
                Some(w) => w.load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0,
                None => false,
            }
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

/// An intrusive doubly linked list of slab headers (through `prev`/`next`).
pub struct SlabList {
    pub head: *mut Slab,
    pub tail: *mut Slab,
    pub len: usize,
}

impl Default for SlabList {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the list is only touched under the lock of whatever owns it; the raw pointers point into segment
// headers that live as long as the heap.
unsafe impl Send for SlabList {}

impl SlabList {
    pub const fn new() -> Self {
        Self {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
            len: 0,
        }
    }

    /// # Safety
    ///
    /// `s` is a valid slab header on no list; the caller owns the list.
    pub unsafe fn push_front(&mut self, s: *mut Slab) {
        // SAFETY: per the caller, `s` and every node of the list are valid headers we own.
        unsafe {
            (*s).prev = ptr::null_mut();
            (*s).next = self.head;
            if self.head.is_null() {
                self.tail = s;
            } else {
                (*self.head).prev = s;
            }
        }
        self.head = s;
        self.len += 1;
    }

    /// # Safety
    ///
    /// `s` is on this list.
    pub unsafe fn remove(&mut self, s: *mut Slab) {
        // SAFETY: per the caller, `s` and its neighbours are valid nodes of this list.
        unsafe {
            let (p, n) = ((*s).prev, (*s).next);
            if p.is_null() {
                self.head = n;
            } else {
                (*p).next = n;
            }
            if n.is_null() {
                self.tail = p;
            } else {
                (*n).prev = p;
            }
            (*s).prev = ptr::null_mut();
            (*s).next = ptr::null_mut();
        }
        self.len -= 1;
    }

    /// # Safety
    ///
    /// The caller owns the list.
    pub unsafe fn pop_front(&mut self) -> *mut Slab {
        let s = self.head;
        if !s.is_null() {
            // SAFETY: `s` is this list's head.
            unsafe { self.remove(s) };
        }
        s
    }

    /// # Safety
    ///
    /// The caller owns the list.
    pub unsafe fn pop_back(&mut self) -> *mut Slab {
        let s = self.tail;
        if !s.is_null() {
            // SAFETY: `s` is this list's tail.
            unsafe { self.remove(s) };
        }
        s
    }
}
