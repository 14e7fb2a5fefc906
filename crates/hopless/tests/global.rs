//! hopless as the global allocator of this test binary: content-checked stress in 1, 2 and 4 threads,
//! cross-thread frees, alignments, huge blocks, zeroing, failure, and the `Allocator` API.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;

use hopless::Hopless;
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[global_allocator]
static GLOBAL: Hopless = Hopless;

/// A live block with the pattern written into it.
struct Live {
    p: *mut u8,
    layout: Layout,
    tag: u8,
}

// SAFETY: a live block may be freed by any thread.
unsafe impl Send for Live {}

fn pattern(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: `p` is a live block of at least `len` bytes.
    let s = unsafe { std::slice::from_raw_parts_mut(p, len) };
    for (i, b) in s.iter_mut().enumerate() {
        *b = tag ^ (i as u8).wrapping_mul(31);
    }
}

fn verify(p: *mut u8, len: usize, tag: u8) {
    // SAFETY: `p` is a live block of at least `len` bytes.
    let s = unsafe { std::slice::from_raw_parts(p, len) };
    for (i, &b) in s.iter().enumerate() {
        assert_eq!(
            b,
            tag ^ (i as u8).wrapping_mul(31),
            "byte {i} of {p:p} (len {len}) changed"
        );
    }
}

fn random_layout(rng: &mut SmallRng) -> Layout {
    let size = match rng.gen_range(0..100) {
        0..=79 => rng.gen_range(1..=512),
        80..=94 => rng.gen_range(513..=4096),
        95..=98 => rng.gen_range(4097..=300_000),
        _ => rng.gen_range(300_001..=2_000_000),
    };
    let align = if rng.gen_ratio(1, 10) {
        1 << rng.gen_range(0..=12)
    } else {
        8
    };
    Layout::from_size_align(size, align).unwrap()
}

/// Random alloc / free / realloc with every block's contents checked before it is freed or moved.
fn random_ops(seed: u64, ops: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut live: Vec<Live> = Vec::new();
    for _ in 0..ops {
        match rng.gen_range(0..10) {
            0..=4 => {
                let layout = random_layout(&mut rng);
                // SAFETY: non-zero size.
                let p = unsafe { GLOBAL.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % layout.align(), 0);
                let tag = rng.gen();
                pattern(p, layout.size(), tag);
                live.push(Live { p, layout, tag });
            }
            5..=7 if !live.is_empty() => {
                let b = live.swap_remove(rng.gen_range(0..live.len()));
                verify(b.p, b.layout.size(), b.tag);
                // SAFETY: allocated with this layout, freed once.
                unsafe { GLOBAL.dealloc(b.p, b.layout) };
            }
            _ if !live.is_empty() => {
                let i = rng.gen_range(0..live.len());
                let b = &mut live[i];
                verify(b.p, b.layout.size(), b.tag);
                let new_size = random_layout(&mut rng).size();
                // SAFETY: allocated with this layout; new size non-zero.
                let q = unsafe { GLOBAL.realloc(b.p, b.layout, new_size) };
                assert!(!q.is_null());
                assert_eq!(q as usize % b.layout.align(), 0);
                let keep = b.layout.size().min(new_size);
                verify(q, keep, b.tag);
                b.p = q;
                b.layout = Layout::from_size_align(new_size, b.layout.align()).unwrap();
                pattern(q, new_size, b.tag);
            }
            _ => {}
        }
    }
    for b in live {
        verify(b.p, b.layout.size(), b.tag);
        // SAFETY: allocated with this layout, freed once.
        unsafe { GLOBAL.dealloc(b.p, b.layout) };
    }
}

#[test]
fn random_sequences_keep_contents_one_thread() {
    random_ops(1, 60_000);
}

#[test]
fn random_sequences_keep_contents_two_threads() {
    std::thread::scope(|s| {
        for t in 0..2 {
            s.spawn(move || random_ops(100 + t, 40_000));
        }
    });
}

#[test]
fn random_sequences_keep_contents_four_threads() {
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || random_ops(200 + t, 25_000));
        }
    });
}

#[test]
fn producer_consumer_frees_ten_million_blocks_across_threads() {
    const TOTAL: usize = 10_000_000;
    const BATCH: usize = 1000;
    let (tx, rx) = mpsc::sync_channel::<Vec<usize>>(64);
    let producer = std::thread::spawn(move || {
        let mut sent = 0;
        while sent < TOTAL {
            let mut batch = Vec::with_capacity(BATCH);
            for i in 0..BATCH {
                let size = 8 << ((sent + i) % 6); // 8..=256
                let layout = Layout::from_size_align(size, 8).unwrap();
                // SAFETY: non-zero size.
                let p = unsafe { GLOBAL.alloc(layout) };
                assert!(!p.is_null());
                // First and last word carry the index: checked on the other side.
                // SAFETY: the block has `size >= 8` bytes.
                unsafe {
                    p.cast::<u64>().write_unaligned((sent + i) as u64);
                    if size >= 16 {
                        p.add(size - 8)
                            .cast::<u64>()
                            .write_unaligned(!((sent + i) as u64));
                    }
                }
                batch.push(p as usize);
            }
            sent += BATCH;
            tx.send(batch).unwrap();
        }
    });
    let mut got = 0;
    while let Ok(batch) = rx.recv() {
        for p in batch {
            let p = p as *mut u8;
            let size = 8 << (got % 6);
            // SAFETY: the producer wrote both words and gave the block up.
            unsafe {
                assert_eq!(p.cast::<u64>().read_unaligned(), got as u64);
                if size >= 16 {
                    assert_eq!(p.add(size - 8).cast::<u64>().read_unaligned(), !(got as u64));
                }
                GLOBAL.dealloc(p, Layout::from_size_align(size, 8).unwrap());
            }
            got += 1;
        }
    }
    producer.join().unwrap();
    assert_eq!(got, TOTAL);
}

#[test]
fn every_alignment_up_to_4096_and_beyond() {
    let sizes = [
        1usize, 7, 8, 9, 24, 48, 100, 255, 1000, 4095, 4096, 4097, 10_000, 70_000, 262_144, 300_000,
    ];
    let mut align = 1;
    while align <= 1 << 20 {
        for &size in &sizes {
            let layout = Layout::from_size_align(size, align).unwrap();
            let mut blocks = Vec::new();
            for k in 0..3 {
                // SAFETY: non-zero size.
                let p = unsafe { GLOBAL.alloc(layout) };
                assert!(!p.is_null(), "size {size} align {align}");
                assert_eq!(p as usize % align, 0, "size {size} align {align}");
                // SAFETY: live block.
                assert!(unsafe { Hopless::usable_size(p) } >= size);
                pattern(p, size, k);
                blocks.push(p);
            }
            for (k, p) in blocks.into_iter().enumerate() {
                verify(p, size, k as u8);
                // SAFETY: allocated with this layout.
                unsafe { GLOBAL.dealloc(p, layout) };
            }
        }
        align *= 2;
    }
}

#[test]
fn allocations_up_to_one_gib() {
    let mut size = 1usize << 20;
    while size <= 1 << 30 {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { GLOBAL.alloc(layout) };
        assert!(!p.is_null(), "{size} bytes");
        // SAFETY: touch one byte per page, and the last byte.
        unsafe {
            let mut o = 0;
            while o < size {
                *p.add(o) = o as u8;
                o += 4096 * 16;
            }
            *p.add(size - 1) = 0xee;
            assert!(Hopless::usable_size(p) >= size);
            GLOBAL.dealloc(p, layout);
        }
        size *= 4;
    }
}

#[test]
fn zeroed_memory_is_zero_even_when_reused() {
    for size in [8usize, 100, 4096, 5000, 100_000, 400_000, 3 << 20] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // Dirty a few blocks of this size and free them so the next ones are reused memory.
        let dirty: Vec<_> = (0..4)
            .map(|_| {
                // SAFETY: non-zero size.
                let p = unsafe { GLOBAL.alloc(layout) };
                // SAFETY: live block.
                unsafe { p.write_bytes(0xff, size) };
                p
            })
            .collect();
        for p in dirty {
            // SAFETY: allocated with this layout.
            unsafe { GLOBAL.dealloc(p, layout) };
        }
        for _ in 0..4 {
            // SAFETY: non-zero size.
            let p = unsafe { GLOBAL.alloc_zeroed(layout) };
            // SAFETY: live block of `size` bytes.
            let s = unsafe { std::slice::from_raw_parts(p, size) };
            assert!(s.iter().all(|&b| b == 0), "size {size}");
            // SAFETY: allocated with this layout.
            unsafe { GLOBAL.dealloc(p, layout) };
        }
    }
}

#[test]
fn allocation_failure_returns_null() {
    let layout = Layout::from_size_align(isize::MAX as usize - 8192, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { GLOBAL.alloc(layout) }.is_null());
    // A request no machine here can back fails (no MAP_NORESERVE: the kernel's overcommit check refuses).
    // (Not under vm.overcommit_memory = 1, where the kernel grants any mapping.)
    let overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    if overcommit.trim() != "1" {
        let too_big = Layout::from_size_align(1 << 44, 8).unwrap();
        // SAFETY: non-zero size.
        assert!(unsafe { GLOBAL.alloc(too_big) }.is_null());
    }
    // Alignments past the segment size are served, as glibc serves them.
    for shift in [22, 23, 24, 26] {
        let huge_align = Layout::from_size_align(64, 1 << shift).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { GLOBAL.alloc(huge_align) };
        assert!(!p.is_null() && p.addr() % (1 << shift) == 0, "align 2^{shift}");
        pattern(p, 64, 9);
        verify(p, 64, 9);
        // SAFETY: live, allocated with this layout.
        unsafe {
            assert!(Hopless::usable_size(p) >= 64);
            assert!(Hopless::owns(p));
            GLOBAL.dealloc(p, huge_align);
        }
    }
    use allocator_api2::alloc::Allocator;
    assert!(Hopless.allocate(layout).is_err());
}

#[test]
fn allocator_api_grows_and_shrinks_keeping_contents() {
    use allocator_api2::alloc::Allocator;
    let a = Hopless;
    let l1 = Layout::from_size_align(10, 8).unwrap();
    let p = a.allocate(l1).unwrap().cast::<u8>();
    pattern(p.as_ptr(), 10, 3);
    let l2 = Layout::from_size_align(5000, 8).unwrap();
    // SAFETY: `p` is live with layout l1.
    let q = unsafe { a.grow(p, l1, l2) }.unwrap().cast::<u8>();
    verify(q.as_ptr(), 10, 3);
    let l3 = Layout::from_size_align(4, 8).unwrap();
    // SAFETY: `q` is live with layout l2.
    let r = unsafe { a.shrink(q, l2, l3) }.unwrap().cast::<u8>();
    let l4 = Layout::from_size_align(4, 64).unwrap();
    // SAFETY: `r` is live with layout l3; alignment changes, so it moves.
    let s = unsafe { a.grow(r, l3, l4) }.unwrap().cast::<u8>();
    assert_eq!(s.as_ptr() as usize % 64, 0);
    // SAFETY: live with l4.
    unsafe { a.deallocate(s, l4) };
    let z = a.allocate(Layout::from_size_align(0, 32).unwrap()).unwrap();
    assert_eq!(z.len(), 0);
    let zeroed = a
        .allocate_zeroed(Layout::from_size_align(777, 8).unwrap())
        .unwrap();
    // SAFETY: the slice is the block just allocated.
    assert!(unsafe { zeroed.as_ref() }.iter().all(|&b| b == 0));
    // SAFETY: live with this layout.
    unsafe { a.deallocate(zeroed.cast(), Layout::from_size_align(777, 8).unwrap()) };
}

#[test]
fn batch_api_allocates_and_frees_many_blocks() {
    let layout = Layout::from_size_align(96, 8).unwrap();
    let mut out = vec![std::ptr::null_mut(); 5000];
    assert_eq!(Hopless.alloc_batch(layout, &mut out), 5000);
    for (i, &p) in out.iter().enumerate() {
        pattern(p, 96, i as u8);
    }
    for (i, &p) in out.iter().enumerate() {
        verify(p, 96, i as u8);
    }
    // SAFETY: each allocated with `layout`, freed once.
    unsafe { Hopless.free_batch(layout, &out) };
}

#[test]
fn std_collections_work_on_top() {
    let mut m = std::collections::HashMap::new();
    for i in 0..100_000u64 {
        m.insert(i, format!("value-{i}"));
    }
    for i in (0..100_000u64).step_by(3) {
        m.remove(&i);
    }
    assert_eq!(m.len(), 66_666);
    assert_eq!(m[&1], "value-1");
    let v: Vec<String> = (0..10_000).map(|i| i.to_string().repeat(i % 50)).collect();
    assert_eq!(v[49].len(), 2 * 49);
}

#[test]
fn unsized_free_finds_the_class_from_the_address() {
    for size in [8usize, 200, 4000, 100_000, 1 << 20] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: non-zero size; freed once through the size-less path.
        unsafe {
            let p = GLOBAL.alloc(layout);
            pattern(p, size, 1);
            Hopless::free(p);
        }
    }
}
