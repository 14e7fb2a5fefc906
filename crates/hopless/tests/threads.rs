//! A thread's cached blocks go back to the heap when it exits, and the stats count what happens. Own
//! binary: it reads global stats (each test uses a size class nothing else here touches).

use std::alloc::{GlobalAlloc, Layout};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

#[test]
fn exiting_thread_returns_its_cached_blocks() {
    let layout = Layout::from_size_align(3500, 8).unwrap(); // class 3584: no other test here uses it
    let class = hopless::experiment::size_class::class_for(3500, 8).unwrap();
    let before = Hopless::stats().classes[class].outstanding_blocks;
    std::thread::spawn(move || {
        let blocks: Vec<_> = (0..40)
            .map(|_| {
                // SAFETY: non-zero size.
                unsafe { GLOBAL.alloc(layout) as usize }
            })
            .collect();
        for p in blocks {
            // SAFETY: allocated with `layout`; stays in this thread's magazine.
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
        let held = Hopless::stats().classes[class].outstanding_blocks;
        assert!(
            held >= before + 40,
            "the exiting thread's magazine holds its blocks: {held}"
        );
    })
    .join()
    .unwrap();
    let after = Hopless::stats().classes[class].outstanding_blocks;
    assert_eq!(
        after, before,
        "the exited thread's cached blocks went back to their slabs"
    );
}

#[cfg(feature = "stats")]
#[test]
fn stats_count_fast_and_slow_paths_and_print_a_slabinfo_table() {
    let layout = Layout::from_size_align(3700, 8).unwrap(); // class 3840: nothing else here uses it
    let class = hopless::experiment::size_class::class_for(3700, 8).unwrap();
    let first = Hopless::stats().classes[class];
    std::thread::spawn(move || {
        let before = Hopless::stats().classes[class];
        let blocks: Vec<usize> = (0..1000)
            .map(|_| {
                // SAFETY: non-zero size.
                unsafe { GLOBAL.alloc(layout) as usize }
            })
            .collect();
        let mid = Hopless::stats().classes[class];
        assert_eq!(
            mid.alloc_fast + mid.alloc_slow - before.alloc_fast - before.alloc_slow,
            1000
        );
        assert!(mid.alloc_slow > before.alloc_slow, "refills were counted");
        assert!(mid.bytes_in_use >= before.bytes_in_use + 1000 * 3840);
        assert!(mid.peak_bytes >= 1000 * 3840);
        for p in blocks {
            // SAFETY: allocated with `layout`.
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
        let after = Hopless::stats().classes[class];
        assert_eq!(
            after.free_fast + after.free_slow - before.free_fast - before.free_slow,
            1000
        );
        let table = Hopless::stats().to_string();
        assert!(table.lines().next().unwrap().contains("alloc_fast"), "{table}");
        assert!(
            table.lines().any(|l| l.trim_start().starts_with("3840 ")),
            "{table}"
        );
    })
    .join()
    .unwrap();
    // The frees grew the thread's magazine (its refills came first); its exit flushed them.
    assert!(Hopless::stats().classes[class].flushes > first.flushes);
}

/// What a snapshot says without the `stats` feature: blocks in use apart from blocks cached in
/// magazines, the slabs' bytes, and large blocks (mallinfo's numbers in `libhopless.so`).
#[test]
fn stats_tell_blocks_in_use_from_blocks_in_magazines() {
    let layout = Layout::from_size_align(3300, 8).unwrap(); // class 3328: no other test here uses it
    let class = hopless::experiment::size_class::class_for(3300, 8).unwrap();
    std::thread::spawn(move || {
        let before = Hopless::stats();
        let blocks: Vec<usize> = (0..100)
            .map(|_| {
                // SAFETY: non-zero size.
                unsafe { GLOBAL.alloc(layout) as usize }
            })
            .collect();
        let mid = Hopless::stats();
        let (b, m) = (before.classes[class], mid.classes[class]);
        assert_eq!(m.blocks_in_use(), b.blocks_in_use() + 100);
        assert!(m.slab_bytes >= 100 * 3328 && m.slab_bytes == m.slabs * 65536);
        assert!(m.capacity_blocks >= m.outstanding_blocks);
        assert_eq!(m.capacity_blocks, m.slabs * (65536 / 3328));
        // The totals take in what the other tests' threads do meanwhile: only their shape is checked.
        assert!(mid.bytes_held() >= mid.slab_bytes() + mid.large_bytes_in_use);
        for &p in &blocks {
            // SAFETY: allocated with `layout`; goes into this thread's magazine (or its slab).
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
        let after = Hopless::stats();
        let a = after.classes[class];
        assert_eq!(a.blocks_in_use(), b.blocks_in_use(), "{a:?}");
        assert!(
            a.cached_blocks > b.cached_blocks,
            "the frees went to the magazine: {a:?}"
        );

        let big = Layout::from_size_align(10 << 20, 16).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { GLOBAL.alloc(big) };
        let with = Hopless::stats();
        assert_eq!(with.large_blocks_in_use(), after.large_blocks_in_use() + 1);
        assert!(with.large_bytes_in_use >= after.large_bytes_in_use + (10 << 20));
        assert!(with.large_peak_blocks >= with.large_blocks_in_use());
        // SAFETY: allocated with `big`.
        unsafe { GLOBAL.dealloc(p, big) };
        assert_eq!(
            Hopless::stats().large_blocks_in_use(),
            after.large_blocks_in_use()
        );
        let table = Hopless::stats().to_string();
        assert!(table.lines().any(|l| l.starts_with("held: ")), "{table}");
    })
    .join()
    .unwrap();
}
