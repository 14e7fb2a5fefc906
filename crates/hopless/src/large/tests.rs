//! Core tests over a private heap on `SystemPages`, natively and under Miri. Large blocks: alignment, the mapping cache, arena spans, the retention budget.

use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::size_class::class_for;
use crate::test_util::{check, check_sampled, fill, scaled};

#[test]
fn large_blocks_are_aligned_cached_and_zeroed() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // SAFETY: `tc` is this test's cache; blocks freed once.
    unsafe {
        // Under Miri, the first and last pages stand for the whole block (byte loops are slow there).
        let (size, span) = (300_000, scaled(300_000, 4096));
        let tail = |p: *mut u8| p.wrapping_add(size - span);
        let p = heap.alloc(tc, size, 8, true);
        assert!(!p.is_null());
        check(p, span, 0);
        check(tail(p), span, 0);
        fill(p, span, 0xab);
        fill(tail(p), span, 0xab);
        assert!(heap.usable_size(p) >= size);
        heap.free_ptr(tc, p);
        let q = heap.alloc(tc, size, 8, true);
        assert_eq!(q, p, "the cached mapping is reused");
        check(q, span, 0);
        check(tail(q), span, 0);
        heap.free_ptr(tc, q);
        assert_eq!(heap.stats().large_cache_hits, 1);
        for align in [8192usize, 65536, 1 << 20] {
            let p = heap.alloc(tc, 100, align, false);
            assert_eq!(p.addr() % align, 0);
            fill(p, 100, 1);
            heap.free_ptr(tc, p);
        }
        assert!(
            heap.alloc(tc, 100, 8 << 20, false).is_null(),
            "alignment above 2 MiB is refused"
        );
        assert!(heap.alloc(tc, usize::MAX - 4096, 8, false).is_null());
        heap.retire_thread_cache(tc);
    }
}

#[test]
fn large_requests_take_the_closest_cached_mapping() {
    // SystemPages cannot resize: a mapping up to twice the request is reused whole, and one that would
    // have to grow (it is at least three quarters of the request) is given back. Aligned to 64 KiB, the
    // blocks get mappings of their own (arenas take alignments up to 8 KiB).
    const A: usize = 64 << 10;
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // SAFETY: `tc` is this test's cache; blocks freed once.
    unsafe {
        let blocks = [400_000, 800_000, 1_200_000].map(|size| {
            let p = heap.alloc(tc, size, A, false);
            fill(p, 4096, 0xcd);
            p
        });
        for p in blocks {
            heap.free_ptr(tc, p);
        }
        let cached = heap.stats().large_cached_bytes as usize;
        assert!(cached >= 2_400_000, "all three kept: {cached}");
        let a = heap.alloc(tc, 600_000, A, true);
        assert_eq!(a, blocks[1], "the smallest mapping at least as big");
        check(a, 4096, 0);
        let b = heap.alloc(tc, 1_000_000, A, false);
        assert_eq!(b, blocks[2]);
        assert_eq!(heap.stats().large_cache_hits, 2);
        // Only the 400 000-byte mapping is left, and it would have to grow.
        let c = heap.alloc(tc, 500_000, A, true);
        assert!(!c.is_null());
        check(c, 4096, 0);
        assert_eq!(heap.stats().large_cached_bytes, 0);
        for p in [a, b, c] {
            heap.free_ptr(tc, p);
        }
        heap.retire_thread_cache(tc);
    }
}

#[test]
fn a_new_small_segment_makes_the_large_cache_give_pages_back() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // SAFETY: `tc` is this test's cache; blocks freed once.
    unsafe {
        let blocks = [300_000usize, 400_000, 500_000].map(|size| heap.alloc(tc, size, 8, false));
        for p in blocks {
            heap.free_ptr(tc, p);
        }
        assert!(heap.stats().large_cached_bytes > 1 << 20);
        // The heap's first small block reserves its first segment.
        let class = class_for(64, 8).unwrap();
        let mut out = [core::ptr::null_mut(); 4];
        assert_eq!(heap.refill(class, &mut out), 4);
        assert_eq!(
            heap.stats().large_cached_bytes,
            0,
            "4 MiB of the oldest mappings went back"
        );
        heap.flush(class, &out);
        // No new segment: the cache keeps what it gets.
        let p = heap.alloc(tc, 300_000, 8, false);
        heap.free_ptr(tc, p);
        assert_eq!(heap.refill(class, &mut out), 4);
        assert!(heap.stats().large_cached_bytes > 0);
        heap.flush(class, &out);
        heap.retire_thread_cache(tc);
    }
}

/// The OS page source: cached mappings are trimmed and grown by moving pages, and the cache's size
/// follows the large bytes in use.
#[cfg(not(miri))]
#[test]
fn cached_large_mappings_are_trimmed_grown_and_bounded_by_what_is_in_use() {
    use crate::large::{CACHE_MAX_ENTRY, CACHE_MIN_BYTES};
    use crate::platform::OsPages;
    let heap = Heap::new(OsPages);
    let tc = heap.new_thread_cache(1);
    const MIB: usize = 1 << 20;
    // Mappings of their own: aligned past what arenas take.
    const A: usize = 64 << 10;
    // SAFETY: `tc` is this test's cache; blocks freed once, used within their usable size.
    unsafe {
        let p = heap.alloc(tc, 8 * MIB, A, false);
        fill(p, 8 * MIB, 0xaa);
        heap.free_ptr(tc, p);
        // Grown from 8 to 10 MiB: the old pages are zeroed by hand, the new ones are fresh.
        let g = heap.alloc(tc, 10 * MIB, A, true);
        assert_eq!(heap.stats().large_cache_hits, 1, "the 8 MiB mapping grew");
        assert!(heap.usable_size(g) >= 10 * MIB);
        check(g, 10 * MIB, 0);
        fill(g, 10 * MIB, 0x11);
        heap.free_ptr(tc, g);
        // Trimmed from 10 to 5.5 MiB.
        let t = heap.alloc(tc, 5 * MIB + MIB / 2, A, true);
        assert_eq!(heap.stats().large_cache_hits, 2);
        assert!(heap.usable_size(t) < 6 * MIB, "the tail was trimmed");
        check(t, 5 * MIB + MIB / 2, 0);
        fill(t, 5 * MIB + MIB / 2, 0x22);
        heap.free_ptr(tc, t);
        // A lone 40 MiB block is cached (a loop of big alloc/free faults nothing in), ...
        let big = heap.alloc(tc, 40 * MIB, 8, false);
        fill(big, 40 * MIB, 0x33);
        heap.free_ptr(tc, big);
        assert!(heap.stats().large_cached_bytes as usize >= 40 * MIB);
        let again = heap.alloc(tc, 40 * MIB, 8, false);
        assert_eq!(again, big);
        // ... but once the program has held little for a while, the cache holds little.
        let small: Vec<_> = (0..16).map(|_| heap.alloc(tc, MIB, A, false)).collect();
        heap.free_ptr(tc, again);
        for p in small {
            fill(p, MIB, 0x44);
            heap.free_ptr(tc, p);
        }
        assert!(
            heap.stats().large_cached_bytes as usize >= 40 * MIB,
            "just freed: the recent peak is kept"
        );
        std::thread::sleep(std::time::Duration::from_millis(2 * crate::large::RETAIN_MS + 50));
        let p = heap.alloc(tc, MIB, A, false);
        heap.free_ptr(tc, p);
        let cached = heap.stats().large_cached_bytes as usize;
        assert!(
            cached <= CACHE_MIN_BYTES.max(2 * MIB),
            "{cached} B cached with nothing in use"
        );
        // Past the biggest cacheable mapping, a block goes straight back.
        let huge = heap.alloc(tc, CACHE_MAX_ENTRY + MIB, 8, false);
        heap.free_ptr(tc, huge);
        assert_eq!(heap.stats().large_cached_bytes as usize, cached);
        heap.retire_thread_cache(tc);
    }
}

/// Arena blocks: a freed span's slices serve the next block of any size (neighbours coalesce), a zeroed
/// block on reused slices reads zero, and `locate` tells a block, its interior, free slices and the
/// arena header apart.
#[test]
fn arena_blocks_reuse_coalesced_slices_and_are_located_exactly() {
    use crate::address::{locate, Located};
    use crate::large::arena::{arena_of, ARENA_MAP, SLICE};
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let size = 20 * SLICE; // 21 slices with the header page
                           // SAFETY: `tc` is this test's cache; blocks freed once, used within their size.
    unsafe {
        let [a, b, c] = [1u8, 2, 3].map(|t| {
            let p = heap.alloc(tc, size, 8, false);
            fill(p, size, t);
            p
        });
        assert!(ARENA_MAP.contains(a) && arena_of(a) == arena_of(c));
        assert_eq!(
            b.addr() - a.addr(),
            21 * SLICE,
            "spans are carved in address order"
        );
        assert_eq!(c.addr() - b.addr(), 21 * SLICE);
        assert!(heap.usable_size(a) >= size);
        assert!(
            matches!(locate(a.add(size - 1)), Located::Large(_)),
            "interior of a block"
        );
        assert_eq!(
            locate(arena_of(a).cast::<u8>().add(64)),
            Located::Foreign,
            "arena header"
        );
        heap.free_ptr(tc, a);
        heap.free_ptr(tc, b);
        assert_eq!(heap.usable_size(a.add(SLICE)), 0, "free slices");
        assert!(heap.stats().large_cached_bytes as usize >= 42 * SLICE);
        // The two freed spans coalesced: a block of both fits where they were, its bytes zeroed.
        let d = heap.alloc(tc, 41 * SLICE, 8, true);
        assert_eq!(d, a);
        check_sampled(d, 41 * SLICE, 0);
        check_sampled(c, size, 3);
        assert_eq!(heap.stats().large_cache_hits, 1);
        heap.free_ptr(tc, d);
        heap.free_ptr(tc, c);
        // Nothing in use: what stays resident is within the budget's floor; trim unmaps the arena.
        assert!(heap.stats().large_cached_bytes as usize <= crate::large::CACHE_MIN_BYTES);
        heap.trim();
        assert_eq!(heap.stats().large_cached_bytes, 0);
        heap.retire_thread_cache(tc);
    }
}

/// An arena block grows in place into the free slices after it, moves (contents kept) when a neighbour
/// is in the way, and shrinks in place, its tail free for the next block.
#[test]
fn arena_blocks_grow_in_place_move_when_blocked_and_shrink() {
    use crate::large::arena::SLICE;
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let size = 20 * SLICE;
    // SAFETY: `tc` is this test's cache; each block is live when used.
    unsafe {
        let p = heap.alloc(tc, size, 8, false);
        fill(p, size, 7);
        let q = heap.realloc(tc, p, size, 8, 36 * SLICE);
        assert_eq!(q, p, "grown into the free slices after it");
        check_sampled(q, size, 7);
        fill(q, 36 * SLICE, 8);
        let wall = heap.alloc(tc, size, 8, false);
        fill(wall, size, 9);
        let r = heap.realloc(tc, q, 36 * SLICE, 8, 120 * SLICE);
        assert_ne!(r, q, "the next block is in the way: moved");
        check_sampled(r, 36 * SLICE, 8);
        check_sampled(wall, size, 9);
        let s = heap.realloc(tc, r, 120 * SLICE, 8, 32 * SLICE);
        assert_eq!(s, r, "shrunk in place");
        check_sampled(s, 32 * SLICE, 8);
        assert!(heap.usable_size(s) < 34 * SLICE);
        let t = heap.alloc(tc, 40 * SLICE, 8, false);
        assert_eq!(
            t.addr() - s.addr(),
            33 * SLICE,
            "the freed tail serves the next block"
        );
        for x in [s, t, wall] {
            heap.free_ptr(tc, x);
        }
        heap.retire_thread_cache(tc);
    }
}

/// The budget follows the peak of large bytes in use over the last one to two retention windows.
#[test]
fn the_large_budget_remembers_a_recent_peak_for_one_to_two_windows() {
    use crate::large::RETAIN_MS;
    let heap = Heap::new(SystemPages);
    heap.large_counters_for_test(|g| {
        g.bytes_in_use = 100;
        assert_eq!(
            g.recent_in_use(1000),
            100,
            "a new window starts at the current use"
        );
        g.bytes_in_use = 10;
        assert_eq!(g.recent_in_use(1000 + RETAIN_MS / 2), 100, "same window");
        assert_eq!(g.recent_in_use(1000 + RETAIN_MS + 1), 100, "the window before");
        assert_eq!(
            g.recent_in_use(1000 + 2 * RETAIN_MS + 2),
            10,
            "two windows on: forgotten"
        );
        g.bytes_in_use = 5;
        assert_eq!(
            g.recent_in_use(1000 + 10 * RETAIN_MS),
            5,
            "after a long pause: only what is in use"
        );
        g.bytes_in_use = 0;
    });
}

/// Freeing every large block keeps the holes between them resident too, up to the footprint of the
/// recent peak: the next phase of a batch job, or `large-churn`'s next run, finds all of them (the budget
/// once bounded the free memory alone by a quarter over the peak in use, and purged the holes). After a
/// pause, the next large free gives the memory back.
#[cfg(not(miri))]
#[test]
fn freeing_every_large_block_keeps_the_footprint_of_the_recent_peak() {
    use crate::large::arena::SLICE;
    use crate::large::{CACHE_MIN_BYTES, RETAIN_MS};
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // 41 and 51 slices with the header page.
    let (small, big) = (40 * SLICE, 50 * SLICE);
    // SAFETY: `tc` is this test's cache; blocks freed once and never written (the budget counts the
    // slices taken, written or not).
    unsafe {
        let mut live: Vec<*mut u8> = (0..8).map(|_| heap.alloc(tc, small, 8, false)).collect();
        // Every other block freed: holes of 41 slices, which the bigger blocks do not fit.
        for i in [0, 2, 4, 6] {
            heap.free_ptr(tc, live[i]);
        }
        let kept: Vec<*mut u8> = [1, 3, 5, 7].map(|i| live[i]).into();
        live = kept;
        live.extend((0..4).map(|_| heap.alloc(tc, big, 8, false)));
        // In use: 4 x 41 + 4 x 51 = 368 slices; taken since the arena was mapped: 8 x 41 + 4 x 51 = 532,
        // more than a quarter over what is in use (460).
        for p in live {
            heap.free_ptr(tc, p);
        }
        let cached = heap.stats().large_cached_bytes as usize;
        assert!(
            cached >= 532 * SLICE,
            "{} slices kept of the 532 the peak's footprint took",
            cached / SLICE
        );
        std::thread::sleep(std::time::Duration::from_millis(2 * RETAIN_MS + 50));
        let p = heap.alloc(tc, small, 8, false);
        heap.free_ptr(tc, p);
        let cached = heap.stats().large_cached_bytes as usize;
        assert!(
            cached <= CACHE_MIN_BYTES,
            "{cached} B kept after a pause with nothing in use"
        );
        heap.trim();
        heap.retire_thread_cache(tc);
    }
}
