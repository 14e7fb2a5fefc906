//! Thread churn: 1 000 short-lived threads that allocate and exit must not grow the memory hopless holds.
//! Own binary, one test: it compares process-wide counters.

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
