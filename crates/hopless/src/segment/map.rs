//! The address map: which aligned slots of the address space hold a region of hopless's, one bit per
//! slot, set while the region is mapped. Segments and arenas each have one; the slow paths consult it
//! before reading a header.

use core::sync::atomic::{AtomicU64, Ordering};

/// Which `1 << SHIFT`-aligned slots of the address space hold a region of hopless's: one bit per slot of
/// the user address space ([`USER_ADDRESS_BITS`]) (zero `.bss`, of which only the pages covering used addresses become
/// resident). The slow paths consult it before reading a header, so freeing a pointer hopless never handed
/// out is reported instead of faulting on an unmapped header.
pub struct SlotMap<const SHIFT: usize, const WORDS: usize> {
    words: [AtomicU64; WORDS],
}

/// The bits of a user-space address: 47 on x86-64 (4-level paging; 5-level only hands out more to a
/// program that asks with a hint above them, which hopless never does). 48 on aarch64, whose kernels
/// with 48-bit virtual addresses put mappings near the top, above 2^47 (52-bit ones, again, only for
/// hints above 48 bits). Under Miri, whose fake addresses are small, 40: a smaller map keeps the
/// interpreter from tracking megabytes of static memory.
pub const USER_ADDRESS_BITS: usize = if cfg!(miri) {
    40
} else if cfg!(target_arch = "aarch64") {
    48
} else {
    47
};

/// The bits a map of `1 << shift`-sized slots needs to cover [`USER_ADDRESS_BITS`].
pub const fn map_bits(shift: usize) -> usize {
    1 << (USER_ADDRESS_BITS - shift)
}

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
    pub fn insert(&self, seg: *mut u8) -> bool {
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

    pub fn remove(&self, seg: *mut u8) {
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
