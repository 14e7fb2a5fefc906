//! Core tests over a private heap on [`SystemPages`]: they run natively and under Miri (size classes,
//! bitmaps, slab carving and freeing, magazine refill and flush, trimming, large blocks, realloc, batches).

use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::segment::{segment_of, slab_of, FreeError, Slab, SlabState};
use crate::size_class::{class_for, class_size, MAG_CAPACITY, NUM_CLASSES};
use crate::thread_cache::ThreadCache;

/// Miri is ~1000x slower: scale loop counts down there.
fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}

fn fill(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: callers pass live blocks of at least `len` bytes.
    unsafe { core::ptr::write_bytes(p, tag, len) }
}

fn check(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: as for `fill`.
    let s = unsafe { core::slice::from_raw_parts(p, len) };
    assert!(s.iter().all(|&b| b == tag), "block {p:p} lost its contents");
}

/// Like [`check`] for big blocks: every 512th byte and the last, so that Miri gets through them.
fn check_sampled(p: *mut u8, len: usize, tag: u8) {
    for off in (0..len).step_by(512).chain(len.checked_sub(1)) {
        // SAFETY: as for `fill`.
        assert_eq!(unsafe { p.add(off).read() }, tag, "block {p:p} lost byte {off}");
    }
}

#[test]
fn slab_carves_then_reuses_freed_blocks_lowest_first() {
    let heap = Heap::new(SystemPages);
    let class = class_for(64, 8).unwrap();
    let mut out = [core::ptr::null_mut(); 10];
    assert_eq!(heap.refill(class, &mut out), 10);
    for w in out.windows(2) {
        assert_eq!(
            w[1].addr() - w[0].addr(),
            64,
            "fresh blocks are carved in address order"
        );
    }
    let seg = segment_of(out[0]);
    // SAFETY: out[0] is a block of this heap.
    let slab = unsafe { slab_of(seg, out[0]) };
    // SAFETY: test-only reads of the header while no other thread uses the heap.
    unsafe {
        assert_eq!((*slab).carved.load(core::sync::atomic::Ordering::Relaxed), 10);
        assert_eq!((*slab).free, (*slab).capacity - 10);
        heap.flush(class, &[out[7], out[3]]);
        assert_eq!((*slab).free, (*slab).capacity - 8);
        assert_eq!(
            (*slab).bitmap[0].load(core::sync::atomic::Ordering::Relaxed),
            (1 << 7) | (1 << 3)
        );
    }
    let mut again = [core::ptr::null_mut(); 3];
    assert_eq!(heap.refill(class, &mut again), 3);
    assert_eq!(again, [out[3], out[7], out[9].wrapping_add(64)]);
    // SAFETY: every block handed out goes back exactly once.
    unsafe {
        heap.flush(class, &out[..3]);
        heap.flush(class, &out[4..7]);
        heap.flush(class, &out[8..]);
        heap.flush(class, &again);
    }
}

#[test]
fn put_rejects_double_free_foreign_offsets_wrong_class_and_never_allocated() {
    let heap = Heap::new(SystemPages);
    let class = class_for(48, 8).unwrap();
    let mut out = [core::ptr::null_mut(); 4];
    assert_eq!(heap.refill(class, &mut out), 4);
    // SAFETY: direct bitmap checks on a slab of this heap, single-threaded.
    unsafe {
        let slab = slab_of(segment_of(out[0]), out[0]);
        let _g = ();
        assert_eq!(Slab::put(slab, class, out[1]), Ok(()));
        assert_eq!(Slab::put(slab, class, out[1]), Err(FreeError::DoubleFree));
        assert_eq!(
            Slab::put(slab, class, out[2].wrapping_add(8)),
            Err(FreeError::NotBlockStart)
        );
        assert_eq!(Slab::put(slab, class + 1, out[2]), Err(FreeError::WrongClass));
        assert_eq!(
            Slab::put(slab, class, out[3].wrapping_add(48 * 5)),
            Err(FreeError::NeverAllocated)
        );
        // Undo the direct put so the heap's accounting stays whole, then free the rest.
        heap.flush(class, &[out[0], out[2], out[3]]);
        // out[1] was put directly: the heap's outstanding count still includes it, which is fine here.
    }
}

#[test]
fn magazine_refills_half_and_flushes_the_older_half() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let class = class_for(32, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    let n = cap * 3;
    let mut live = Vec::new();
    // SAFETY: `tc` is this test's cache; every block is freed once.
    unsafe {
        for i in 0..n {
            let p = heap.alloc(tc, 32, 8, false);
            assert!(!p.is_null());
            fill(p, 32, i as u8);
            live.push(p);
        }
        let m = ThreadCache::mag(tc, class);
        assert!((*m).count as usize <= cap);
        for (i, &p) in live.iter().enumerate() {
            check(p, 32, i as u8);
            heap.free_checked(tc, class, p);
            assert!((*m).count as usize <= cap);
        }
        assert!((*m).count as usize > 0, "frees stay cached");
        let st = heap.stats();
        assert!(st.classes[class].refills >= (n / (cap / 2)) as u64);
        assert!(st.classes[class].flushes >= 1);
        heap.retire_thread_cache(tc);
        assert_eq!((*m).count, 0);
    }
    let st = heap.stats();
    assert_eq!(
        st.classes[class].slabs, 1,
        "one slab kept empty, nothing else held"
    );
    // A retired cache is reused by the next thread.
    assert_eq!(heap.new_thread_cache(1), tc);
}

#[test]
fn a_few_parked_caches_keep_their_magazine_pages_until_trim() {
    use crate::heap::MAX_WARM;
    use crate::platform::PAGE_SIZE;
    use crate::thread_cache::mag_offset;
    let heap = Heap::new(SystemPages);
    // A class whose magazine lies past the cache's first page (the page a parked cache always keeps).
    let class = (0..NUM_CLASSES)
        .find(|&c| mag_offset(c) as usize >= PAGE_SIZE && class_size(c) <= 1024)
        .unwrap();
    let size = class_size(class);
    // `SystemPages` zeroes what it decommits: a magazine whose capacity reads 0 again was given back.
    // SAFETY: each cache is used by this test alone, as one thread's; every block is freed once.
    let cap = |tc: *mut ThreadCache| unsafe { (*ThreadCache::mag(tc, class)).cap };
    let caches: Vec<_> = (0..MAX_WARM + 2)
        .map(|i| {
            let tc = heap.new_thread_cache(i as i32 + 1);
            // SAFETY: as above.
            unsafe {
                let p = heap.alloc(tc, size, 8, false);
                assert!(!p.is_null());
                heap.free_ptr(tc, p);
            }
            assert_ne!(cap(tc), 0, "the class's magazine is open");
            tc
        })
        .collect();
    for &tc in &caches {
        // SAFETY: as above; nothing uses the cache afterwards.
        unsafe { heap.retire_thread_cache(tc) };
    }
    let kept: Vec<bool> = caches.iter().map(|&tc| cap(tc) != 0).collect();
    let mut want = vec![true; MAX_WARM];
    want.extend([false, false]);
    assert_eq!(
        kept, want,
        "the first {MAX_WARM} retired keep their pages, later ones give them back"
    );
    // A new thread takes a parked cache (the newest, given back); the warm ones are still parked.
    let next = heap.new_thread_cache(100);
    assert!(caches.contains(&next));
    // Trim gives back the pages of every warm parked cache, and they stay parked for reuse.
    heap.trim();
    for &tc in &caches {
        if tc != next {
            assert_eq!(cap(tc), 0, "trim left a parked cache's magazines resident");
        }
    }
    let mut again: Vec<_> = (0..MAX_WARM + 1)
        .map(|i| heap.new_thread_cache(200 + i as i32))
        .collect();
    again.push(next);
    again.sort();
    let mut all = caches.clone();
    all.sort();
    assert_eq!(again, all, "every parked cache is reused");
    // Once retired again, the count of warm caches starts over: the first retired keep their pages.
    for &tc in &caches {
        // SAFETY: as above (each is now a cache this test made for a new "thread").
        unsafe {
            let p = heap.alloc(tc, size, 8, false);
            heap.free_ptr(tc, p);
        }
    }
    for &tc in &caches {
        // SAFETY: as above.
        unsafe { heap.retire_thread_cache(tc) };
    }
    assert_eq!(caches.iter().filter(|&&tc| cap(tc) != 0).count(), MAX_WARM);
}

#[test]
fn every_class_round_trips_with_contents_intact() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let per = scaled(200, 3);
    // SAFETY: `tc` is this test's cache; blocks are freed once.
    unsafe {
        for class in 0..NUM_CLASSES {
            let size = class_size(class);
            let blocks: Vec<_> = (0..per).map(|_| heap.alloc(tc, size, 8, false)).collect();
            for (i, &p) in blocks.iter().enumerate() {
                assert!(!p.is_null());
                assert_eq!(heap.usable_size(p), size);
                fill(p, size.min(256), (i + class) as u8);
            }
            for (i, &p) in blocks.iter().enumerate() {
                check(p, size.min(256), (i + class) as u8);
                heap.free_ptr(tc, p);
            }
        }
        heap.retire_thread_cache(tc);
    }
    let st = heap.stats();
    for (class, c) in st.classes.iter().enumerate() {
        assert!(
            c.slabs <= 1,
            "class {class} holds {} slabs after everything was freed",
            c.slabs
        );
    }
    heap.trim();
    let st = heap.stats();
    assert!(st.classes.iter().all(|c| c.slabs == 0));
    assert!(st.purged_slabs > 0);
}

#[test]
fn emptied_slabs_go_back_to_the_pool_and_are_purged_beyond_the_limit() {
    let heap = Heap::new(SystemPages);
    let class = class_for(4096, 8).unwrap();
    let per_slab = 16;
    let slabs = scaled(40, 19);
    // Under Miri, touch only the start of each block: per-byte checks are slow there.
    let touched = scaled(4096, 16);
    let mut blocks = vec![core::ptr::null_mut(); per_slab * slabs];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    assert_eq!(heap.stats().classes[class].slabs, slabs as u64);
    for (i, &p) in blocks.iter().enumerate() {
        fill(p, touched, i as u8 | 1);
    }
    // SAFETY: every block freed once.
    unsafe { heap.flush(class, &blocks) };
    let st = heap.stats();
    assert_eq!(st.classes[class].slabs, 1);
    assert!(
        st.purged_slabs as usize >= slabs - 1 - 16,
        "purged {}",
        st.purged_slabs
    );
    // Purged slabs come back zeroed.
    let mut again = vec![core::ptr::null_mut(); per_slab * slabs];
    assert_eq!(heap.refill(class, &mut again), again.len());
    let zero_blocks = again
        .iter()
        .filter(|&&p| {
            // SAFETY: live 4096-byte blocks.
            unsafe { core::slice::from_raw_parts(p, touched) }
                .iter()
                .all(|&b| b == 0)
        })
        .count();
    assert!(zero_blocks >= (slabs - 1 - 16) * per_slab);
    // SAFETY: freed once.
    unsafe { heap.flush(class, &again) };
}

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
    use crate::arena::{arena_of, ARENA_MAP, SLICE};
    use crate::segment::{locate, Located};
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
    use crate::arena::SLICE;
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

#[test]
fn realloc_stays_in_place_within_a_class_and_moves_across() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    // SAFETY: `tc` is this test's cache; each block is live when used.
    unsafe {
        let p = heap.alloc(tc, 100, 8, false);
        fill(p, 100, 7);
        assert_eq!(
            heap.realloc(tc, p, 100, 8, 110),
            p,
            "100 and 110 share the 112 class"
        );
        let q = heap.realloc(tc, p, 110, 8, 1000);
        assert_ne!(q, p);
        check(q, 100, 7);
        fill(q, 1000, 9);
        let r = heap.realloc(tc, q, 1000, 8, 600_000);
        check(r, 1000, 9);
        let s = heap.realloc(tc, r, 600_000, 8, 500_000);
        assert_eq!(
            s, r,
            "a large block shrinks in place while it uses half its mapping"
        );
        let t = heap.realloc(tc, s, 500_000, 8, 10);
        check(t, 10, 9);
        heap.free_ptr(tc, t);
        heap.retire_thread_cache(tc);
    }
}

#[test]
fn batches_move_many_blocks_per_call() {
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let n = scaled(1000, 150);
    let mut out = vec![core::ptr::null_mut(); n];
    // SAFETY: `tc` is this test's cache; blocks freed once.
    unsafe {
        assert_eq!(heap.alloc_batch(tc, 200, 8, &mut out), n);
        let mut sorted = out.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), n, "no block handed out twice");
        for (i, &p) in out.iter().enumerate() {
            fill(p, 200, i as u8);
        }
        for (i, &p) in out.iter().enumerate() {
            check(p, 200, i as u8);
        }
        heap.free_batch(tc, 200, 8, &out);
        let class = class_for(200, 8).unwrap();
        assert_eq!((*ThreadCache::mag(tc, class)).count, MAG_CAPACITY[class]);
        heap.retire_thread_cache(tc);
    }
}

#[test]
fn threads_free_each_others_blocks() {
    let heap = Heap::new(SystemPages);
    let n = scaled(20_000, 200);
    /// A block on its way to the other thread (a pointer, not an integer: Miri runs with strict provenance).
    struct Sent(*mut u8);
    // SAFETY: the sender gives the block up; only the receiver uses it afterwards.
    unsafe impl Send for Sent {}
    let (tx, rx) = std::sync::mpsc::sync_channel::<Sent>(1024);
    std::thread::scope(|s| {
        let heap = &heap;
        s.spawn(move || {
            let tc = heap.new_thread_cache(1);
            for i in 0..n {
                let size = 16 + (i % 7) * 40;
                // SAFETY: this thread's cache.
                let p = unsafe { heap.alloc(tc, size, 8, false) };
                fill(p, size, i as u8);
                tx.send(Sent(p)).unwrap();
            }
            // SAFETY: the thread is done with its cache.
            unsafe { heap.retire_thread_cache(tc) };
        });
        s.spawn(move || {
            let tc = heap.new_thread_cache(1);
            for i in 0..n {
                let p = rx.recv().unwrap().0;
                let size = 16 + (i % 7) * 40;
                check(p, size, i as u8);
                // SAFETY: the block came from the other thread, which gave it up.
                unsafe { heap.free_ptr(tc, p) };
            }
            // SAFETY: the thread is done with its cache.
            unsafe { heap.retire_thread_cache(tc) };
        });
    });
    heap.trim();
    assert!(heap.stats().classes.iter().all(|c| c.slabs == 0));
}

#[test]
fn slab_states_follow_fill_level() {
    let heap = Heap::new(SystemPages);
    let class = class_for(4096, 8).unwrap();
    let mut full = [core::ptr::null_mut(); 16];
    assert_eq!(heap.refill(class, &mut full), 16);
    // SAFETY: single-threaded test reads of headers of this heap; blocks freed once.
    unsafe {
        let slab = slab_of(segment_of(full[0]), full[0]);
        assert_eq!((*slab).state, SlabState::Full);
        heap.flush(class, &full[..1]);
        assert_eq!((*slab).state, SlabState::Partial);
        heap.flush(class, &full[1..]);
        assert_eq!(
            (*slab).state,
            SlabState::Partial,
            "the class keeps one empty slab"
        );
        assert_eq!((*slab).free, 16);
    }
}

/// The free key never takes a correct free for a double free: blocks handed out again without their first
/// word written, freed through this cache or another one, through flushes and refills.
#[test]
fn unwritten_blocks_freed_anywhere_are_not_double_frees() {
    let heap = Heap::new(SystemPages);
    let a = heap.new_thread_cache(1);
    let b = heap.new_thread_cache(2);
    let class = class_for(48, 8).unwrap();
    // Under Miri (where each round takes minutes): two rounds cover both parities of which cache frees
    // which block, and a few blocks past two magazines still overflow each cache once.
    let rounds = if cfg!(miri) { 2 } else { 50 };
    // SAFETY: `a` and `b` are this test's caches (one thread plays both owners); every block is live
    // when freed, and freed once per allocation.
    unsafe {
        for round in 0..rounds {
            // The same block again and again, never written.
            for _ in 0..10 {
                let p = heap.alloc(a, 48, 8, false);
                heap.free_checked(a, class, p);
            }
            // Many blocks: magazines overflow (flush, mark), then refill (slot keys) and hand out.
            let n = MAG_CAPACITY[class] as usize * scaled(3, 2) + scaled(0, 4);
            let blocks: Vec<_> = (0..n).map(|_| heap.alloc(a, 48, 8, false)).collect();
            for (i, &p) in blocks.iter().enumerate() {
                // Half freed by the other cache: a cross-thread free of an unwritten block.
                let tc = if (i + round) % 2 == 0 { a } else { b };
                heap.free_checked(tc, class, p);
            }
            let again: Vec<_> = (0..n).map(|_| heap.alloc(b, 48, 8, false)).collect();
            for &p in &again {
                heap.free_checked(a, class, p);
            }
            // And the batch and uncached paths.
            let mut out = vec![core::ptr::null_mut(); 100];
            let got = heap.alloc_batch(b, 48, 8, &mut out);
            heap.free_batch(a, 48, 8, &out[..got]);
            let p = heap.alloc(core::ptr::null_mut(), 48, 8, false);
            heap.free_checked(core::ptr::null_mut(), class, p);
        }
        heap.retire_thread_cache(a);
        heap.retire_thread_cache(b);
    }
}

/// The free path's short check (`Slab::handed_out_class`) takes only what the full one (`locate` and
/// `Slab::check_free`) takes: every byte offset around handed-out blocks of a small and a medium class,
/// the header area, the uncarved tail, a large block and a foreign address.
#[test]
fn the_fast_free_check_accepts_only_what_the_full_check_accepts() {
    use crate::segment::{locate, Located};
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let mut probes = Vec::new();
    // SAFETY: `tc` is this test's cache; every block handed out goes back once.
    unsafe {
        for size in [48usize, 3000, 20_000] {
            let class = class_for(size, 8).unwrap();
            let mut out = [core::ptr::null_mut(); 4];
            assert_eq!(heap.refill(class, &mut out), 4);
            let seg = segment_of(out[0]);
            let size = class_size(class);
            let offsets: Vec<usize> = if cfg!(miri) {
                vec![0, 1, 8, 16, size / 2, size - 8, size - 1]
            } else {
                (0..size).collect()
            };
            for &p in &out {
                for &off in &offsets {
                    probes.push((p.wrapping_add(off), Some(class), off == 0));
                }
            }
            // Past the carved blocks, and the header area.
            let last = out[3].wrapping_add(class_size(class));
            probes.push((last, None, false));
            probes.push((last.wrapping_add(class_size(class)), None, false));
            probes.push((seg.cast::<u8>(), None, false));
            probes.push((seg.cast::<u8>().wrapping_add(64), None, false));
            heap.flush(class, &out);
        }
        let big = heap.alloc(tc, 300_000, 8, false);
        probes.push((big, None, false));
        let mut local = 0u64;
        if !cfg!(miri) {
            // Under Miri a test page source's segment does not fill its 4 MiB slot, so a stack address can
            // share the slot: a case mmap'd segments never meet.
            probes.push(((&raw mut local).cast(), None, false));
        }
        probes.push((core::ptr::null_mut(), None, false));
        // Re-take the blocks so that they are handed out again while probing.
        for size in [48usize, 3000, 20_000] {
            let class = class_for(size, 8).unwrap();
            let mut out = [core::ptr::null_mut(); 4];
            assert_eq!(heap.refill(class, &mut out), 4);
        }
        for &(p, class, start) in &probes {
            let fast = Slab::handed_out_class(p);
            let full = match locate(p) {
                Located::Slab(seg) => Slab::check_free(seg, p).ok(),
                _ => None,
            };
            if fast.is_some() {
                assert_eq!(fast, full, "{p:p}: the fast check took what the full one refuses");
            }
            if start {
                assert_eq!(fast, class, "{p:p}: a handed-out block start must pass");
            }
        }
        heap.free_ptr(tc, big);
        heap.retire_thread_cache(tc);
    }
}

/// A slab that went back to its pool keeps its old class, division constants and start in its header; only
/// `carved == 0` (set by `SlabPool::put`) keeps the C free path's check, which reads no slab magic, from
/// taking its old blocks: a stale pointer into it is left to the full check, which reports it.
#[test]
fn blocks_of_a_slab_back_in_its_pool_fail_the_fast_check() {
    let heap = Heap::new(SystemPages);
    let class = class_for(4096, 8).unwrap();
    let per_slab = 16;
    let mut blocks = vec![core::ptr::null_mut(); per_slab * 3];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    // SAFETY: blocks handed out just above; each freed once, then only probed (never read or written).
    unsafe {
        for &p in &blocks {
            assert_eq!(Slab::handed_out_class(p), Some(class));
        }
        heap.flush(class, &blocks);
        heap.trim();
        let mut pooled = 0;
        for &p in &blocks {
            let slab = slab_of(segment_of(p), p);
            if (*slab).state == SlabState::Pooled {
                pooled += 1;
                assert_eq!(
                    Slab::handed_out_class(p),
                    None,
                    "{p:p}: a pooled slab's block passed"
                );
                assert!(Slab::check_free(segment_of(p), p).is_err());
            }
        }
        assert!(
            pooled >= per_slab,
            "trim pooled {pooled} of {} blocks' slabs",
            blocks.len()
        );
    }
}

/// `fork`'s handlers write only the lock pages while the transfer slots have never been on (the slots
/// span 56 pages, each copied on write in both processes after every fork); once on, they hold the
/// slots still like any lock, and give them back.
#[test]
fn fork_leaves_transfer_slots_alone_until_they_are_turned_on() {
    let heap = Heap::new(SystemPages);
    let frozen = |h: &Heap<SystemPages>| h.transfer.iter().map(|t| t.frozen()).sum::<usize>();
    heap.lock_all();
    assert_eq!(frozen(&heap), 0, "slots never on are not written");
    // SAFETY: this thread took every lock just above.
    unsafe { heap.unlock_all() };
    heap.set_transfer(true);
    heap.set_transfer(false);
    heap.lock_all();
    assert_eq!(
        frozen(&heap),
        heap.transfer.len() * crate::transfer::TRANSFER_SLOTS,
        "slots that were on once may hold batches: every one is held still"
    );
    // SAFETY: as above.
    unsafe { heap.unlock_all() };
    assert_eq!(frozen(&heap), 0);
}

/// With the transfer slots on, a consumer's full magazine goes to a slot with the transfer mark on every
/// block, the producer's next refill takes that batch back whole (no slab touched), and a block sitting
/// in a slot is seen there by the double-free check's look (`Transfer::holds`).
#[test]
fn transfer_slots_carry_a_consumers_flush_to_the_producers_refill() {
    use crate::thread_cache::{read_key, KeySays};
    let heap = Heap::new(SystemPages);
    heap.set_transfer(true);
    let (producer, consumer) = (heap.new_thread_cache(1), heap.new_thread_cache(2));
    let class = class_for(64, 8).unwrap();
    let cap = MAG_CAPACITY[class] as usize;
    let n = cap + 1;
    // SAFETY: two test caches used from this thread in turn, as two threads would; blocks freed once.
    unsafe {
        let blocks: Vec<*mut u8> = (0..n).map(|_| heap.take_block(producer, class)).collect();
        for (i, &p) in blocks.iter().enumerate() {
            fill(p, 64, i as u8);
        }
        for &p in &blocks {
            heap.free_checked(consumer, class, p);
        }
        assert_eq!(
            heap.transfer_counts(class),
            (1, 0),
            "the full magazine's newer half went to a slot"
        );
        let moved: Vec<*mut u8> = blocks
            .iter()
            .copied()
            .filter(|&p| read_key(p) == KeySays::Transfer)
            .collect();
        assert_eq!(moved.len(), cap.div_ceil(2));
        assert!(heap.transfer[class].holds(moved[0]));
        // The producer's magazine runs dry; its refill takes the batch.
        while ThreadCache::count(producer, class) > 0 {
            let p = heap.take_block(producer, class);
            heap.free_checked(consumer, class, p);
        }
        let p = heap.take_block(producer, class);
        assert_eq!(heap.transfer_counts(class).1, 1);
        assert!(moved.contains(&p), "the refill took the transferred batch");
        assert!(!heap.transfer[class].holds(p));
        assert!(
            ThreadCache::holds_refilled(producer, class, moved[0]) || moved[0] == p,
            "the double-free check finds a transferred block in the refill"
        );
        heap.free_checked(producer, class, p);
        heap.retire_thread_cache(producer);
        heap.retire_thread_cache(consumer);
        heap.trim();
        assert_eq!(heap.transfer_counts(class).0, heap.transfer_counts(class).1);
    }
}
