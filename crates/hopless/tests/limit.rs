//! The memory limit (`Hopless::set_limit`): an allocation that would pass it fails, and nothing before
//! it does. Own binary, one test: the limit and its count are the process's.

use std::alloc::{alloc, dealloc, realloc, Layout};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

fn held() -> u64 {
    Hopless::stats().limit_held_bytes
}

/// Fails the test at the limit, where a panic's message could not be formatted (it allocates): the
/// message goes to stderr unformatted into the heap, then the process aborts.
macro_rules! fail_at_limit {
    ($($arg:tt)*) => {{
        eprintln!($($arg)*);
        std::process::abort();
    }};
}

/// Allocates blocks of `layout` until one is refused; checks each success kept the count within the
/// limit and the refusal was one the limit had to make (`need`: what the block would have counted).
fn fill(layout: Layout, limit: u64, need: u64) -> Vec<*mut u8> {
    fill_into(Vec::with_capacity(100_000), layout, limit, need)
}

/// `fill` into a list allocated before the limit is near (pushes must not reallocate it).
fn fill_into(mut got: Vec<*mut u8>, layout: Layout, limit: u64, need: u64) -> Vec<*mut u8> {
    loop {
        // Read before: a refusal may follow a trim (the allocating thread's, or the background
        // thread's after it), which only lowers the count, so a refusal must be one even this count
        // needed.
        let before = held();
        // SAFETY: a non-zero-size layout.
        let p = unsafe { alloc(layout) };
        let now = held();
        if p.is_null() {
            if before + need <= limit {
                fail_at_limit!("refused with {before} B held, {need} B more would fit under {limit}");
            }
            return got;
        }
        if got.len() == got.capacity() {
            fail_at_limit!("{} blocks: the list would reallocate near the limit", got.len());
        }
        if now > limit {
            fail_at_limit!("{now} B held past the limit {limit} after {} blocks", got.len());
        }
        // SAFETY: the block has at least `layout.size()` bytes.
        unsafe { p.write_bytes(0xa5, layout.size()) };
        got.push(p);
    }
}

fn free_all(blocks: Vec<*mut u8>, layout: Layout) {
    for p in blocks {
        // SAFETY: each came from `alloc(layout)` above.
        unsafe { dealloc(p, layout) };
    }
}

#[test]
fn allocations_past_the_limit_fail_and_nothing_before_them() {
    assert_eq!(Hopless::limit(), None);
    Hopless::trim();
    let start = held();
    let limit = start + (64 << 20);
    Hopless::set_limit(Some(limit as usize));
    assert_eq!(Hopless::limit(), Some(limit as usize));

    // Large blocks: each counts its usable bytes.
    let big = Layout::from_size_align(1 << 20, 16).unwrap();
    // SAFETY: a non-zero-size layout; freed at once.
    let need = unsafe {
        let p = alloc(big);
        let n = Hopless::usable_size(p) as u64;
        dealloc(p, big);
        n
    };
    let blocks = fill(big, limit, need);
    let expected = ((limit - start) / need) as usize;
    assert!(
        blocks.len() + 1 >= expected && blocks.len() <= expected,
        "{} blocks of 1 MiB under a 64 MiB limit",
        blocks.len()
    );
    let refused = Hopless::stats().limit_refusals;
    assert!(refused >= 1);
    free_all(blocks, big);

    // Small blocks: each slab a class takes counts whole (64 KiB); what magazines cache is given back by
    // the trim before the refusal.
    let small = Layout::from_size_align(1000, 8).unwrap();
    let blocks = fill(small, limit, 64 << 10);
    assert!(
        blocks.len() as u64 * 1000 > (limit - start) * 7 / 10,
        "{} blocks of 1000 B under a 64 MiB limit: most of it is usable",
        blocks.len()
    );
    assert!(Hopless::stats().limit_refusals > refused);
    free_all(blocks, small);
    Hopless::trim();
    assert!(
        held() <= start + (1 << 20),
        "{} B still held after the frees",
        held()
    );

    // A growing buffer: realloc is refused past the limit and leaves the block as it was.
    let mut layout = Layout::from_size_align(4 << 20, 16).unwrap();
    // SAFETY: a non-zero-size layout.
    let mut p = unsafe { alloc(layout) };
    assert!(!p.is_null());
    // SAFETY: 4 MiB writable.
    unsafe { p.write_bytes(7, layout.size()) };
    loop {
        let grown = layout.size() * 2;
        // SAFETY: `p` is live with `layout`; the new size is non-zero.
        let q = unsafe { realloc(p, layout, grown) };
        if q.is_null() {
            assert!(grown as u64 > limit - start - (1 << 20), "refused at {grown} B");
            // SAFETY: the old block is untouched and still `layout.size()` bytes.
            assert!(unsafe { std::slice::from_raw_parts(p, layout.size()) }
                .iter()
                .all(|&b| b == 7));
            break;
        }
        p = q;
        layout = Layout::from_size_align(grown, 16).unwrap();
        // SAFETY: the new half is writable.
        unsafe { p.add(grown / 2).write_bytes(7, grown / 2) };
    }
    // SAFETY: live with `layout`.
    unsafe { dealloc(p, layout) };

    // Threads racing for the last bytes: the count never passes the limit. Each thread allocates its
    // list and every thread is spawned before any of them fills: a spawn or a list allocated after
    // another thread took the last bytes would be refused too.
    let start_line = std::sync::Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let start_line = start_line.clone();
            std::thread::spawn(move || {
                let got = Vec::with_capacity(100_000);
                start_line.wait();
                let blocks = fill_into(got, big, limit, need);
                let n = blocks.len();
                free_all(blocks, big);
                n
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(total >= 1, "the threads got nothing");

    // Lifted: the same request goes through again.
    Hopless::set_limit(None);
    assert_eq!(Hopless::limit(), None);
    let blocks = (0..100)
        // SAFETY: a non-zero-size layout.
        .map(|_| unsafe { alloc(big) })
        .collect::<Vec<_>>();
    assert!(blocks.iter().all(|p| !p.is_null()));
    free_all(blocks, big);
}
