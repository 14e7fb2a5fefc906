//! Stress suite in the spirit of mimalloc's `test-stress`: many threads allocate blocks of every size,
//! write a cookie derived from each block's address and size into it, hand blocks to other threads
//! through shared slots, and check every cookie before a block is freed. Plus random large-block churn
//! (the sequence that once overflowed the mapping cache's eviction array), an API matrix over every class
//! edge, alignment and realloc target, and huge alignments.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

/// xorshift64*: a small deterministic generator per thread.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn cookie(p: usize, size: usize) -> u64 {
    (p as u64 ^ size as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Fills a block with its cookie (every word of a small block; the first and last words of a big one).
fn stamp(p: *mut u8, size: usize) {
    let c = cookie(p.addr(), size);
    let words = size / 8;
    // SAFETY: `p` is a live block of at least `size` bytes, aligned to 8 or more.
    unsafe {
        if words <= 64 {
            for i in 0..words {
                p.cast::<u64>().add(i).write(c.wrapping_add(i as u64));
            }
        } else {
            p.cast::<u64>().write(c);
            p.cast::<u64>().add(words - 1).write(c.wrapping_add(1));
            p.add(size / 2).write(c as u8);
        }
        for i in words * 8..size {
            p.add(i).write(c as u8 ^ i as u8);
        }
    }
}

fn check(p: *mut u8, size: usize) {
    let c = cookie(p.addr(), size);
    let words = size / 8;
    // SAFETY: as for `stamp`.
    unsafe {
        if words <= 64 {
            for i in 0..words {
                assert_eq!(
                    p.cast::<u64>().add(i).read(),
                    c.wrapping_add(i as u64),
                    "block {p:p} size {size}"
                );
            }
        } else {
            assert_eq!(p.cast::<u64>().read(), c, "block {p:p} size {size}");
            assert_eq!(p.cast::<u64>().add(words - 1).read(), c.wrapping_add(1));
            assert_eq!(p.add(size / 2).read(), c as u8);
        }
        for i in words * 8..size {
            assert_eq!(p.add(i).read(), c as u8 ^ i as u8);
        }
    }
}

fn random_size(r: &mut Rng) -> usize {
    match r.below(100) {
        0..=79 => 8 + r.below(256) as usize,
        80..=94 => 8 + r.below(8192) as usize,
        95..=98 => 8 + r.below(300_000) as usize,
        _ => 8 + r.below(4 << 20) as usize,
    }
}

#[test]
fn threads_transfer_blocks_and_every_cookie_survives() {
    const SLOTS: usize = 2048;
    let threads = 8;
    let iters = if cfg!(debug_assertions) { 40_000 } else { 200_000 };
    // Shared slots: a block's address and size packed as two words; swapped atomically.
    let slots: Vec<(AtomicUsize, AtomicUsize)> = (0..SLOTS)
        .map(|_| (AtomicUsize::new(0), AtomicUsize::new(0)))
        .collect();
    let lock = std::sync::Mutex::new(());
    std::thread::scope(|s| {
        for t in 0..threads {
            let slots = &slots;
            let lock = &lock;
            s.spawn(move || {
                let mut r = Rng(0x1234_5678 + t as u64 * 7919);
                let mut own: Vec<(usize, usize)> = Vec::new();
                for _ in 0..iters {
                    match r.below(10) {
                        0..=4 => {
                            let size = random_size(&mut r);
                            let layout = Layout::from_size_align(size, 8).unwrap();
                            // SAFETY: non-zero size.
                            let p = unsafe { GLOBAL.alloc(layout) };
                            assert!(!p.is_null());
                            stamp(p, size);
                            own.push((p.addr(), size));
                        }
                        5..=7 if !own.is_empty() => {
                            let i = r.below(own.len() as u64) as usize;
                            let (p, size) = own.swap_remove(i);
                            let p = std::ptr::with_exposed_provenance_mut::<u8>(p);
                            check(p, size);
                            // SAFETY: live, allocated with this layout.
                            unsafe { GLOBAL.dealloc(p, Layout::from_size_align(size, 8).unwrap()) };
                        }
                        _ => {
                            // Swap one of ours with a shared slot (under a lock so the pair moves whole).
                            let i = r.below(SLOTS as u64) as usize;
                            let mine = own.pop().unwrap_or((0, 0));
                            let theirs = {
                                let _g = lock.lock().unwrap();
                                let old = (
                                    slots[i].0.load(Ordering::Relaxed),
                                    slots[i].1.load(Ordering::Relaxed),
                                );
                                slots[i].0.store(mine.0, Ordering::Relaxed);
                                slots[i].1.store(mine.1, Ordering::Relaxed);
                                old
                            };
                            if theirs.0 != 0 {
                                let p = std::ptr::with_exposed_provenance_mut::<u8>(theirs.0);
                                check(p, theirs.1);
                                own.push(theirs);
                            }
                        }
                    }
                }
                for (p, size) in own {
                    let p = std::ptr::with_exposed_provenance_mut::<u8>(p);
                    check(p, size);
                    // SAFETY: live, allocated with this layout.
                    unsafe { GLOBAL.dealloc(p, Layout::from_size_align(size, 8).unwrap()) };
                }
            });
        }
    });
    for (p, size) in slots
        .iter()
        .map(|(a, b)| (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)))
    {
        if p != 0 {
            let p = std::ptr::with_exposed_provenance_mut::<u8>(p);
            check(p, size);
            // SAFETY: live, allocated with this layout.
            unsafe { GLOBAL.dealloc(p, Layout::from_size_align(size, 8).unwrap()) };
        }
    }
}

#[test]
fn random_large_block_churn_runs_clean_for_many_seeds() {
    let steps = if cfg!(debug_assertions) { 300 } else { 2000 };
    for seed in 1..=12u64 {
        let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut live: [(usize, usize); 6] = [(0, 0); 6];
        for _ in 0..steps {
            let k = r.below(6) as usize;
            if live[k].0 != 0 {
                let (p, size) = live[k];
                let p = std::ptr::with_exposed_provenance_mut::<u8>(p);
                check(p, size);
                // SAFETY: live block of this size.
                unsafe { Hopless::free(p) };
            }
            let size = (256 << 10) + r.below(64 << 20) as usize;
            let p = Hopless::alloc_bytes(size, 16, false);
            assert!(!p.is_null(), "seed {seed} size {size}");
            stamp(p, size);
            live[k] = (p.expose_provenance(), size);
        }
        for (p, size) in live {
            if p != 0 {
                let p = std::ptr::with_exposed_provenance_mut::<u8>(p);
                check(p, size);
                // SAFETY: live block.
                unsafe { Hopless::free(p) };
            }
        }
    }
}

/// Every class edge (size - 1, size, size + 1) × every alignment up to 1 MiB × realloc to other edges:
/// alignment, usable size and contents checked at each step.
#[test]
fn api_matrix_of_class_edges_alignments_and_realloc_targets() {
    let mut sizes: Vec<usize> = hopless::experiment::size_class::CLASS_SIZE
        .iter()
        .flat_map(|&s| [s as usize - 1, s as usize, s as usize + 1])
        .chain([1, 2, 7, 300_000, 1 << 20, (4 << 20) + 3])
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let targets = [1usize, 24, 100, 4095, 4097, 70_000, 262_145, 1 << 20, 5 << 20];
    for &size in &sizes {
        for shift in 0..=20 {
            let align = 1usize << shift;
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero size.
            let p = unsafe { GLOBAL.alloc(layout) };
            assert!(!p.is_null() && p.addr() % align == 0, "size {size} align {align}");
            // SAFETY: live block.
            let usable = unsafe { Hopless::usable_size(p) };
            assert!(usable >= size, "usable {usable} < size {size} (align {align})");
            stamp(p, size);
            if shift % 5 == 0 {
                let new = targets[(size + shift) % targets.len()];
                // SAFETY: live, allocated with `layout`; non-zero new size.
                let q = unsafe { GLOBAL.realloc(p, layout, new) };
                assert!(
                    !q.is_null() && q.addr() % align == 0,
                    "realloc {size} -> {new} align {align}"
                );
                let keep = size.min(new);
                // SAFETY: `q` holds at least `keep` bytes of the old contents.
                unsafe {
                    let c = cookie(p.addr(), size);
                    if size / 8 <= 64 && keep >= 8 {
                        assert_eq!(q.cast::<u64>().read(), c, "realloc kept the contents");
                    }
                    assert!(Hopless::usable_size(q) >= new);
                    GLOBAL.dealloc(q, Layout::from_size_align(new, align).unwrap());
                }
            } else {
                check(p, size);
                // SAFETY: live, allocated with `layout`.
                unsafe { GLOBAL.dealloc(p, layout) };
            }
        }
    }
}

#[test]
fn large_blocks_grow_by_moving_pages_and_keep_their_contents() {
    let layout = Layout::from_size_align(300_000, 16).unwrap();
    // SAFETY: non-zero size.
    let mut p = unsafe { GLOBAL.alloc(layout) };
    let mut size = 300_000;
    // SAFETY: `p` is live with `size` bytes throughout; each realloc hands over to the new pointer.
    unsafe {
        for i in 0..size {
            p.add(i).write(i as u8);
        }
        while size < 48 << 20 {
            let new = size + 16_384;
            p = GLOBAL.realloc(p, Layout::from_size_align(size, 16).unwrap(), new);
            assert!(!p.is_null());
            for i in size..new {
                p.add(i).write(i as u8);
            }
            size = new;
        }
        for i in (0..size).step_by(4093) {
            assert_eq!(p.add(i).read(), i as u8, "byte {i}");
        }
        // And back down.
        while size > 400_000 {
            let new = size / 2;
            p = GLOBAL.realloc(p, Layout::from_size_align(size, 16).unwrap(), new);
            size = new;
            for i in (0..size).step_by(4093) {
                assert_eq!(p.add(i).read(), i as u8, "byte {i} after shrink");
            }
        }
        GLOBAL.dealloc(p, Layout::from_size_align(size, 16).unwrap());
    }
}
