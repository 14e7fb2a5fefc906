//! Thread churn: 1 000 short-lived threads that allocate and exit must not grow the memory hopless holds,
//! and a thread's cached blocks go back to the heap when it exits. Own binary: it reads global stats.

use std::alloc::{GlobalAlloc, Layout};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

fn work(seed: usize) {
    let mut v: Vec<Box<[u8]>> = Vec::new();
    for i in 0..200 {
        let len = 1 + (seed * 31 + i * 17) % 3000;
        v.push(vec![(i % 251) as u8; len].into_boxed_slice());
    }
    for (i, b) in v.iter().enumerate() {
        assert!(b.iter().all(|&x| x == (i % 251) as u8));
    }
    // Leave them to be dropped, into this thread's cache.
}

#[test]
fn a_thousand_short_lived_threads_do_not_grow_held_memory() {
    // Warm up: let the heap reach its steady state.
    for round in 0..50 {
        std::thread::spawn(move || work(round)).join().unwrap();
    }
    Hopless::trim();
    let before = Hopless::stats();
    for round in 0..1000 {
        std::thread::spawn(move || work(round)).join().unwrap();
    }
    Hopless::trim();
    let after = Hopless::stats();
    assert!(
        after.thread_caches <= before.thread_caches + 2,
        "thread caches are reused: {} then {}",
        before.thread_caches,
        after.thread_caches
    );
    assert!(
        after.segments <= before.segments + 1,
        "segments {} then {}",
        before.segments,
        after.segments
    );
    let slabs = |s: &hopless::Stats| s.classes.iter().map(|c| c.slabs).sum::<u64>();
    assert!(
        slabs(&after) <= slabs(&before) + 4,
        "slabs {} then {}",
        slabs(&before),
        slabs(&after)
    );

    // Eight at a time, too.
    for round in 0..125 {
        let hs: Vec<_> = (0..8)
            .map(|k| std::thread::spawn(move || work(round * 8 + k)))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
    Hopless::trim();
    let end = Hopless::stats();
    assert!(
        end.thread_caches <= before.thread_caches + 10,
        "{} caches",
        end.thread_caches
    );
}

#[test]
fn exiting_thread_returns_its_cached_blocks() {
    let layout = Layout::from_size_align(3500, 8).unwrap(); // class 3584: no other test here uses it
    let class = hopless::size_class::class_for(3500, 8).unwrap();
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
    std::thread::spawn(|| {
        let layout = Layout::from_size_align(1500, 8).unwrap(); // class 1536: nothing else here uses it
        let class = hopless::size_class::class_for(1500, 8).unwrap();
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
        assert!(mid.bytes_in_use >= before.bytes_in_use + 1000 * 1536);
        assert!(mid.peak_bytes >= 1000 * 1536);
        for p in blocks {
            // SAFETY: allocated with `layout`.
            unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
        }
        let after = Hopless::stats().classes[class];
        assert_eq!(
            after.free_fast + after.free_slow - before.free_fast - before.free_slow,
            1000
        );
        assert!(after.flushes > before.flushes);
        let table = Hopless::stats().to_string();
        assert!(table.lines().next().unwrap().contains("alloc_fast"), "{table}");
        assert!(
            table.lines().any(|l| l.trim_start().starts_with("1536 ")),
            "{table}"
        );
    })
    .join()
    .unwrap();
}
