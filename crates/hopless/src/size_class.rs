//! Size classes: one const table, and the mapping from a (size, alignment) request to the smallest class
//! that satisfies both.
//!
//! The 49 small classes (8..=4096 bytes, served from 64 KiB slabs) are the 29 quarter-step classes
//! (16-byte steps to 128, then four per doubling) with each step above 128 bytes split in two, so
//! classes are at most 12.5% apart there: 25% steps waste about 12% of a 300-byte object on average,
//! which in the KV store is some 30 bytes per key, half the per-key budget. Above them, 24 medium classes (four per doubling, 5 KiB..=256 KiB) come from
//! 512 KiB slabs, so an 8 KiB allocation is not a system call. Anything bigger, or aligned to more than
//! 256 KiB, is a large block (see `large`). Aligned requests up to 256 KiB use the power-of-two medium
//! classes, whose blocks are naturally aligned: 66 000 blocks aligned to 8 KiB share segments instead of
//! costing a mapping each.
//!
//! A block of class `c` sits at `slab_start + i * size(c)` and slabs are aligned to their own size, so a
//! block's alignment is the largest power of two dividing its class size ([`CLASS_ALIGN`]).

/// Number of small classes (64 KiB slabs).
pub const NUM_SMALL: usize = 49;
/// Number of classes in all.
pub const NUM_CLASSES: usize = NUM_SMALL + 24;
/// Largest small class.
pub const SMALL_MAX: usize = 4096;
/// Largest medium class; bigger requests are large blocks.
pub const MEDIUM_MAX: usize = 256 * 1024;
/// Largest alignment a class can give; bigger alignments are large blocks.
pub const MAX_CLASS_ALIGN: usize = MEDIUM_MAX;

/// Block size of every class, ascending.
pub const CLASS_SIZE: [u32; NUM_CLASSES] = [
    // Small: the 29 quarter-step classes, with a class between each two of them from 128 up.
    8, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448,
    480, 512, 576, 640, 704, 768, 832, 896, 960, 1024, 1152, 1280, 1408, 1536, 1664, 1792, 1920, 2048, 2304,
    2560, 2816, 3072, 3328, 3584, 3840, 4096, //
    // Medium: four per doubling.
    5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768, 40960, 49152, 57344,
    65536, 81920, 98304, 114688, 131072, 163840, 196608, 229376, 262144,
];

/// Alignment every block of a class has: the largest power of two dividing the class size.
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub const CLASS_ALIGN: [u32; NUM_CLASSES] = {
    let mut out = [0u32; NUM_CLASSES];
    let mut i = 0;
    while i < NUM_CLASSES {
        out[i] = 1 << CLASS_SIZE[i].trailing_zeros();
        i += 1;
    }
    out
};

/// The block-index test of the free path, exact and with one multiply: a class size is `d * 2^k` with
/// `d` odd; `CLASS_DIV_INV` holds `d`'s inverse modulo 2^64, and `k` is [`div_shift`]. For any
/// 64-bit offset `o`, `(o * inv).rotate_right(k)` is `o / size` when `size` divides `o`, and above
/// `u64::MAX / size` when it does not (Granlund and Montgomery's divisibility test): the map is a
/// bijection of the 64-bit integers that takes the multiples of `size`, in order, onto
/// `0..=u64::MAX / size`. So one comparison with a slab's carved count (at most `MAX_BLOCKS`, far below
/// `u64::MAX / size`) says both "a block start" and "handed out".
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub const CLASS_DIV_INV: [u64; NUM_CLASSES] = {
    let mut out = [0u64; NUM_CLASSES];
    let mut i = 0;
    while i < NUM_CLASSES {
        let d = (CLASS_SIZE[i] >> CLASS_SIZE[i].trailing_zeros()) as u64;
        // Newton's iteration for an inverse modulo 2^64: `d * d == 1 (mod 8)` for odd `d` (3 bits), and
        // each step doubles the correct bits: 6, 12, 24, 48, 96.
        let mut x = d;
        let mut n = 0;
        while n < 5 {
            x = x.wrapping_mul(2u64.wrapping_sub(d.wrapping_mul(x)));
            n += 1;
        }
        out[i] = x;
        i += 1;
    }
    out
};

/// The power of two in class `c`'s size: `k` of [`CLASS_DIV_INV`] (the exponent of [`CLASS_ALIGN`]).
#[inline]
pub fn div_shift(c: usize) -> u32 {
    CLASS_ALIGN.get(c).map_or(0, |a| a.trailing_zeros())
}

/// The index of the block starting `offset` bytes into a slab of class `c` (given its
/// [`CLASS_DIV_INV`] and [`div_shift`]), or a number above `u64::MAX / size` when no block starts
/// there.
#[inline(always)]
pub fn exact_block_index(offset: u64, inv: u64, shift: u32) -> u64 {
    offset.wrapping_mul(inv).rotate_right(shift)
}

/// Magazine capacity per class: 128 for every small class (a batch of 100 blocks stays in the thread
/// cache, and a working set larger than a magazine moves 64 blocks per refill and flush); medium classes
/// keep at most about 512 KiB per thread (at least 2 blocks). Magazines of 64 above 256 B would double
/// the refills and flushes of `fifo-lifo-400/1600` (a working set of 400 or 1 600 blocks of one size):
/// 43.7 M instructions under callgrind against 41.5 M with 128.
/// A thread may hold up to 64 more blocks of each 320 B..4 KiB class this way (256 KiB more at 4 KiB),
/// given back at its exit.
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub const MAG_CAPACITY: [u32; NUM_CLASSES] = {
    let mut out = [0u32; NUM_CLASSES];
    let mut i = 0;
    while i < NUM_CLASSES {
        let by_bytes = (512 * 1024) / CLASS_SIZE[i];
        let most = BATCH_MAX as u32;
        out[i] = if by_bytes > most {
            most
        } else if by_bytes < 2 {
            2
        } else {
            by_bytes
        };
        i += 1;
    }
    out
};

/// The most blocks one refill or flush step moves (the scratch buffers' length), and the most a
/// magazine holds before it grows.
pub const BATCH_MAX: usize = 128;

/// The most slots a magazine has once grown (see [`MAG_GROWN`]). A power of two: a free key holds a
/// slot in 14 bits.
pub const MAG_MAX: usize = 1 << 14;

/// The most bytes of blocks one grown magazine holds.
pub const GROWN_BYTES: usize = 16 << 20;

/// The most bytes of blocks a thread cache's magazines hold beyond their first capacities
/// ([`MAG_CAPACITY`]), all classes together.
pub const GROWN_BUDGET: usize = 32 << 20;

/// The most slots the magazine of each class grows to: for small classes as many as [`GROWN_BYTES`]
/// of blocks (at most [`MAG_MAX`]); medium classes do not grow (their blocks are 5 KiB to 256 KiB,
/// and their slabs 512 KiB: a magazine of them holding a working set would pin several slabs a
/// block).
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub const MAG_GROWN: [u32; NUM_CLASSES] = {
    let mut out = [0u32; NUM_CLASSES];
    let mut i = 0;
    while i < NUM_CLASSES {
        let by_bytes = GROWN_BYTES / CLASS_SIZE[i] as usize;
        out[i] = if i >= NUM_SMALL {
            MAG_CAPACITY[i]
        } else if by_bytes > MAG_MAX {
            MAG_MAX as u32
        } else if by_bytes < MAG_CAPACITY[i] as usize {
            MAG_CAPACITY[i]
        } else {
            by_bytes as u32
        };
        i += 1;
    }
    out
};

/// Whether a class is served from small (64 KiB) or medium (512 KiB) slabs.
#[inline]
pub const fn is_medium(class: usize) -> bool {
    class >= NUM_SMALL
}

/// `SMALL_CLASS_OF[(s + 7) / 8]` is the smallest class of at least `s` bytes, for `s` in `1..=4096` (and
/// for `s == 0`, the smallest class). For building tables; the paths read [`SMALL_LOOKUP`].
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
pub const SMALL_CLASS_OF: [u8; SMALL_MAX / 8 + 1] = {
    let mut out = [0u8; SMALL_MAX / 8 + 1];
    let mut i = 0;
    let mut c = 0;
    while i < out.len() {
        let size = if i == 0 { 1 } else { i * 8 };
        while (CLASS_SIZE[c] as usize) < size {
            c += 1;
        }
        out[i] = c as u8;
        i += 1;
    }
    out
};

/// The one copy of [`SMALL_CLASS_OF`] the paths read.
static SMALL_LOOKUP: [u8; SMALL_MAX / 8 + 1] = SMALL_CLASS_OF;

/// The class of a small request with alignment at most 16: the fast path's mapping.
///
/// Every class from 16 bytes up is a multiple of 16, so the smallest class of at least `max(size, align)`
/// bytes is also aligned enough; `size.max(align)` must be in `1..=4096`.
#[inline(always)]
pub fn small_class(size_or_align: usize) -> usize {
    debug_assert!((1..=SMALL_MAX).contains(&size_or_align));
    // Out of range only if the caller broke the contract: the largest class then (never a panic).
    match SMALL_LOOKUP.get((size_or_align + 7) >> 3) {
        Some(&c) => c as usize,
        None => NUM_SMALL - 1,
    }
}

/// The class C's `malloc(size)` uses (the tests' statement of what `cache::MALLOC_MAG_OFFSET` encodes): the smallest of at least `size` bytes, `None` above
/// [`SMALL_MAX`]. One table load, with no `max` with the alignment: every class from 16 bytes up is a
/// multiple of 16, so a block of more than 8 bytes has the 16-byte alignment C's `malloc` promises; a
/// request of at most 8 bytes (0 included) gets the 8-byte class, aligned enough for any object that
/// fits in it.
#[cfg(test)]
pub fn malloc_class(size: usize) -> Option<usize> {
    if size > SMALL_MAX {
        return None;
    }
    SMALL_LOOKUP.get((size + 7) >> 3).map(|&c| c as usize)
}

/// The smallest class of at least `size` bytes, ignoring alignment; `None` above [`MEDIUM_MAX`].
#[inline]
pub fn class_by_size(size: usize) -> Option<usize> {
    if size <= SMALL_MAX {
        return Some(small_class(size.max(1)));
    }
    if size > MEDIUM_MAX {
        return None;
    }
    // size in (2^k, 2^(k+1)] with k >= 12: classes are 2^k + j * 2^(k-2), j = 1..=4.
    let k = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize;
    let step = 1usize << (k - 2);
    let j = (size - (1 << k)).div_ceil(step);
    Some(NUM_SMALL + (k - 12) * 4 + (j - 1))
}

/// The smallest class whose blocks are at least `size` bytes and aligned to `align` (a power of two);
/// `None` when the request must be a large block.
#[inline]
pub fn class_for(size: usize, align: usize) -> Option<usize> {
    if align > MAX_CLASS_ALIGN {
        return None;
    }
    // A class smaller than `align` cannot be aligned to it, so start at max(size, align).
    let mut c = class_by_size(size.max(align))?;
    while (*CLASS_ALIGN.get(c)? as usize) < align {
        c += 1;
    }
    Some(c)
}

/// Block size of a class.
#[inline(always)]
pub fn class_size(class: usize) -> usize {
    // A class out of range (a damaged header) reads as the smallest size, never a panic.
    match CLASS_SIZE.get(class) {
        Some(&s) => s as usize,
        None => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the first class in the table that fits, by linear search.
    fn reference(size: usize, align: usize) -> Option<usize> {
        (0..NUM_CLASSES).find(|&c| class_size(c) >= size && class_size(c) % align == 0)
    }

    #[test]
    fn table_holds_the_quarter_step_classes_then_medium() {
        let quarter_steps = [
            8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
            1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
        ];
        for s in quarter_steps {
            assert!(CLASS_SIZE[..NUM_SMALL].contains(&s), "quarter-step class {s}");
        }
        assert_eq!(CLASS_SIZE[NUM_SMALL - 1] as usize, SMALL_MAX);
        // Above 128 bytes, neighbouring small classes are at most 12.5% apart.
        for w in CLASS_SIZE[..NUM_SMALL].windows(2).filter(|w| w[0] >= 128) {
            assert!(w[1] * 8 <= w[0] * 9, "{} -> {}", w[0], w[1]);
        }
        assert!(CLASS_SIZE.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*CLASS_SIZE.last().unwrap() as usize, MEDIUM_MAX);
        for c in 0..NUM_CLASSES {
            assert!(MAG_CAPACITY[c] >= 2 && MAG_CAPACITY[c] as usize <= BATCH_MAX);
            assert!(MAG_GROWN[c] >= MAG_CAPACITY[c] && MAG_GROWN[c] as usize <= MAG_MAX);
            assert_eq!(class_size(c) % CLASS_ALIGN[c] as usize, 0);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "no unsafe code here: the native run checks every size")]
    fn every_small_size_and_alignment_maps_to_the_smallest_fitting_class() {
        for size in 1..=SMALL_MAX {
            let mut align = 1;
            while align <= MAX_CLASS_ALIGN {
                let c = class_for(size, align);
                assert_eq!(c, reference(size, align), "size {size} align {align}");
                let c = c.unwrap();
                assert!(class_size(c) >= size && class_size(c) % align == 0);
                if align <= 16 {
                    assert_eq!(
                        small_class(size.max(align)),
                        c,
                        "fast path, size {size} align {align}"
                    );
                }
                align *= 2;
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "no unsafe code here: the native run checks every size")]
    fn malloc_class_is_the_class_of_size_and_c_alignment() {
        for size in 0..=SMALL_MAX + 1 {
            let want = if size > SMALL_MAX {
                None
            } else if size <= 8 {
                Some(0)
            } else {
                class_for(size, 16)
            };
            assert_eq!(malloc_class(size), want, "size {size}");
        }
        assert_eq!(malloc_class(usize::MAX), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "no unsafe code here: the native run checks every size")]
    fn the_exact_block_index_finds_block_starts_and_nothing_else() {
        let reach = 1100;
        for (c, &inv) in CLASS_DIV_INV.iter().enumerate() {
            let size = class_size(c) as u64;
            let shift = div_shift(c);
            assert_eq!((size >> shift).wrapping_mul(inv), 1, "class {c}: not an inverse");
            let limit = u64::MAX / size;
            let step = 1 + size / 64;
            let mut o = 0u64;
            while o < size * reach {
                let q = exact_block_index(o, inv, shift);
                if o % size == 0 {
                    assert_eq!(q, o / size, "class {c} offset {o}");
                } else {
                    assert!(q > limit, "class {c} offset {o}: {q}");
                }
                o += if o % size == 0 { 1 } else { step };
            }
            // Offsets below the slab's start wrap to huge numbers: never a handed-out block.
            for back in [1u64, 8, 16, size, 4096, 1 << 20] {
                assert!(
                    exact_block_index(back.wrapping_neg(), inv, shift) >= crate::segment::MAX_BLOCKS as u64
                );
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "no unsafe code here: the native run checks every size")]
    fn medium_sizes_map_to_the_smallest_fitting_class() {
        for size in (SMALL_MAX + 1..=MEDIUM_MAX)
            .step_by(7)
            .chain([SMALL_MAX + 1, MEDIUM_MAX])
        {
            let mut align = 1;
            while align <= MAX_CLASS_ALIGN {
                assert_eq!(
                    class_for(size, align),
                    reference(size, align),
                    "size {size} align {align}"
                );
                align *= 2;
            }
        }
        for c in 0..NUM_CLASSES {
            assert_eq!(class_by_size(class_size(c)), Some(c));
        }
        assert_eq!(class_for(MEDIUM_MAX + 1, 8), None);
        // Alignments up to 256 KiB come from the medium classes that are powers of two.
        assert_eq!(class_for(8, 8192).map(class_size), Some(8192));
        assert_eq!(class_for(100, 65536).map(class_size), Some(65536));
        assert_eq!(class_for(8, 2 * MEDIUM_MAX), None);
    }
}
