//! Faults the allocator must catch and report before stopping: each runs in a child process (this very
//! test binary, re-run with `HOPLESS_FAULT` set), which must die by SIGABRT with the right report.

use std::alloc::{GlobalAlloc, Layout};
use std::os::unix::process::ExitStatusExt;

use hopless::Hopless;

mod common;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

/// Runs `test` of this binary in a child with the fault armed; returns its stderr.
fn run_child(test: &str, fault: &str) -> String {
    run_child_with(test, fault, &[])
}

/// [`run_child`] with more environment variables (the allocator's options).
fn run_child_with(test: &str, fault: &str, env: &[(&str, &str)]) -> String {
    let out = common::this_test_binary()
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("HOPLESS_FAULT", fault)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "child should abort; stderr:\n{stderr}"
    );
    stderr
}

/// The address the child printed as `victim 0x...` before its fault.
fn victim(err: &str) -> String {
    err.lines()
        .find_map(|l| l.strip_prefix("victim "))
        .expect("victim line")
        .to_string()
}

fn armed(fault: &str) -> bool {
    std::env::var("HOPLESS_FAULT").as_deref() == Ok(fault)
}

/// Pushes enough other blocks of the class through this thread's magazine that it flushes everything.
fn force_flush(layout: Layout) {
    let blocks: Vec<usize> = (0..200)
        .map(|_| {
            // SAFETY: non-zero size.
            unsafe { GLOBAL.alloc(layout) as usize }
        })
        .collect();
    for p in blocks {
        // SAFETY: allocated with `layout`.
        unsafe { GLOBAL.dealloc(p as *mut u8, layout) };
    }
    Hopless::flush_thread_cache();
}

#[test]
fn double_free_is_reported_with_pointer_class_and_slab() {
    let layout = Layout::from_size_align(200, 8).unwrap();
    if armed("double-free") {
        // SAFETY: deliberately freed twice: the fault under test.
        unsafe {
            let p = GLOBAL.alloc(layout);
            eprintln!("victim {:#x}", p as usize);
            GLOBAL.dealloc(p, layout);
            GLOBAL.dealloc(p, layout);
        }
        force_flush(layout);
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    let err = run_child(
        "double_free_is_reported_with_pointer_class_and_slab",
        "double-free",
    );
    let victim = victim(&err);
    assert!(err.contains("hopless: fatal: double free"), "{err}");
    assert!(err.contains(&format!("pointer: {victim}")), "{err}");
    let class = hopless::experiment::size_class::class_for(200, 8).unwrap();
    let size = hopless::experiment::size_class::class_size(class);
    assert!(err.contains(&format!("class: {class} ({size} bytes)")), "{err}");
    assert!(err.contains("slab: 0x"), "{err}");
}

#[test]
fn free_of_a_foreign_pointer_is_reported() {
    if armed("foreign") {
        let mut on_stack = [0u64; 4];
        // SAFETY: deliberately frees memory hopless never allocated: the fault under test.
        unsafe { Hopless::free(on_stack.as_mut_ptr().cast::<u8>().add(8)) };
        unreachable!("the foreign free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    let err = run_child("free_of_a_foreign_pointer_is_reported", "foreign");
    assert!(
        err.contains("hopless: fatal: free of a pointer hopless did not allocate"),
        "{err}"
    );
}

#[test]
fn free_with_the_wrong_size_is_reported() {
    if armed("wrong-size") {
        let small = Layout::from_size_align(32, 8).unwrap();
        let big = Layout::from_size_align(512, 8).unwrap();
        // SAFETY: deliberately frees a 32-byte block as a 512-byte one: the fault under test.
        unsafe {
            let p = GLOBAL.alloc(small);
            GLOBAL.dealloc(p, big);
        }
        force_flush(big);
        unreachable!("the wrong-size free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    let err = run_child("free_with_the_wrong_size_is_reported", "wrong-size");
    assert!(err.contains("wrong size"), "{err}");
}

/// A heap of its own and `n` blocks of `class` refilled from it (no magazine in between, so a flush
/// sees exactly the blocks it is given).
fn own_heap_blocks(
    class: usize,
    n: usize,
) -> (&'static hopless::experiment::Heap<hopless::OsPages>, Vec<*mut u8>) {
    let heap = Box::leak(Box::new(hopless::experiment::Heap::new(hopless::OsPages)));
    let mut blocks = vec![std::ptr::null_mut(); n];
    assert_eq!(heap.refill(class, &mut blocks), n);
    (heap, blocks)
}

/// A flush gathers its blocks by slab and bitmap word before it takes the class lock: a block named
/// twice in one word's run, twice in runs of one word that another slab's run separates, or once more
/// after its first flush must each be reported as a double free of that block, as per-block puts were;
/// an interior or never-allocated pointer after a block of its slab, as what it is.
#[test]
fn flush_time_double_frees_are_reported_with_the_block() {
    let class = hopless::experiment::size_class::class_for(64, 8).unwrap();
    let cases = [
        "same-run",
        "split-runs",
        "after-flush",
        "interior",
        "never-allocated",
    ];
    for case in cases {
        if !armed(case) {
            continue;
        }
        // Enough blocks that the last ones are in a second slab (64 KiB slabs of 64-byte blocks).
        let (heap, b) = own_heap_blocks(class, 1100);
        let p = b[3];
        let other_slab = *b
            .iter()
            .rev()
            .find(|&&q| (q as usize) >> 16 != (p as usize) >> 16)
            .unwrap();
        eprintln!("victim {:#x}", p as usize);
        // SAFETY: blocks of this heap's class, freed twice on purpose: the fault under test.
        unsafe {
            match case {
                "same-run" => heap.flush(class, &[b[1], p, b[2], p]),
                "split-runs" => heap.flush(class, &[b[1], p, other_slab, b[2], p]),
                // Not the first block of its slab in the flush: checked by the run's own loop.
                "interior" => heap.flush(class, &[b[1], p.add(8)]),
                "never-allocated" => {
                    // A slab of its own class carved only as far as 10 blocks.
                    let other = hopless::experiment::size_class::class_for(48, 8).unwrap();
                    let mut ten = [std::ptr::null_mut(); 10];
                    assert_eq!(heap.refill(other, &mut ten), 10);
                    heap.flush(other, &[ten[1], ten[0].add(48 * 20)])
                }
                _ => {
                    heap.flush(class, &[b[1], p]);
                    heap.flush(class, &[b[2], p]);
                }
            }
        }
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    for case in cases {
        let err = run_child("flush_time_double_frees_are_reported_with_the_block", case);
        let expected = match case {
            "interior" => "hopless: fatal: free of a pointer that is not the start of a block",
            "never-allocated" => "hopless: fatal: free of a block that was never allocated",
            _ => "hopless: fatal: double free",
        };
        assert!(err.contains(expected), "{case}: {err}");
        if !matches!(case, "interior" | "never-allocated") {
            let victim = victim(&err);
            assert!(err.contains(&format!("pointer: {victim}")), "{case}: {err}");
        }
    }
}

/// The end of a double-free child: what follows a double free that was not reported. The marker line
/// says the block could now be handed out twice; the allocations, writes and flush make that happen.
fn hand_out_again(layout: Layout) {
    eprintln!("not caught before reuse");
    let again: Vec<usize> = (0..300)
        .map(|_| {
            // SAFETY: non-zero size.
            unsafe { GLOBAL.alloc(layout) as usize }
        })
        .collect();
    for &q in &again {
        // SAFETY: a block of at least 8 bytes just allocated.
        unsafe { (q as *mut usize).write(q) };
    }
    for q in again {
        // SAFETY: allocated above with `layout`.
        unsafe { GLOBAL.dealloc(q as *mut u8, layout) };
    }
    force_flush(layout);
}

/// Runs each case of `test` in a child, with thread-owned slabs on and off: each must report a double
/// free of its victim before the child's [`hand_out_again`].
fn assert_caught_before_reuse(test: &str, cases: &[&str]) {
    for owned in ["1", "0"] {
        for &case in cases {
            let err = run_child_with(test, case, &[("HOPLESS_OWNED_SLABS", owned)]);
            assert!(
                err.contains("hopless: fatal: double free"),
                "owned {owned}, {case}: {err}"
            );
            assert!(
                !err.contains("not caught before reuse"),
                "owned {owned}, {case}: {err}"
            );
            let victim = victim(&err);
            assert!(
                err.contains(&format!("pointer: {victim}")),
                "owned {owned}, {case}: {err}"
            );
        }
    }
}

/// A block freed twice by one thread with a flush in between: the flush writes nothing into the block,
/// so the second free finds the key of the first, naming a slot that no longer holds the block. It
/// must be reported before any block is handed out again, whether the block waits in its slab
/// (`flushed`) or a refill has put it back in the thread's magazine (`refilled`: the lowest of the
/// blocks freed, which the refill puts at the bottom of the magazine, last to be handed out).
#[test]
fn double_frees_after_a_flush_are_reported_before_reuse() {
    let layout = Layout::from_size_align(48, 8).unwrap();
    let cases = ["flushed", "refilled"];
    for case in cases {
        if !armed(case) {
            continue;
        }
        // SAFETY: blocks of the global heap, one freed twice on purpose: the fault under test.
        unsafe {
            let blocks: Vec<usize> = (0..100).map(|_| GLOBAL.alloc(layout) as usize).collect();
            let p = *blocks.iter().min().unwrap();
            eprintln!("victim {p:#x}");
            for &q in &blocks {
                GLOBAL.dealloc(q as *mut u8, layout);
            }
            Hopless::flush_thread_cache();
            if case == "refilled" {
                let q = GLOBAL.alloc(layout) as usize;
                assert_ne!(q, p, "the victim must stay in the magazine");
            }
            GLOBAL.dealloc(p as *mut u8, layout);
            hand_out_again(layout);
        }
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    assert_caught_before_reuse("double_frees_after_a_flush_are_reported_before_reuse", &cases);
}

/// A block freed twice by one thread whose magazine grew (a working set of a thousand blocks of one
/// class, cycled until it stays in the magazine): freed again while it waits in a slot past the first
/// capacity (`grown`), or after the thread's flush took it back to its slab (`grown-flushed`). Its key
/// names that slot; either must be reported before any block is handed out again.
#[test]
fn double_frees_in_a_grown_magazine_are_reported_before_reuse() {
    let layout = Layout::from_size_align(48, 8).unwrap();
    let cases = ["grown", "grown-flushed"];
    for case in cases {
        if !armed(case) {
            continue;
        }
        // SAFETY: blocks of the global heap, one freed twice on purpose: the fault under test.
        unsafe {
            let mut blocks = Vec::with_capacity(1000);
            for _ in 0..4 {
                blocks.clear();
                blocks.extend((0..1000).map(|_| GLOBAL.alloc(layout) as usize));
                for &q in &blocks {
                    GLOBAL.dealloc(q as *mut u8, layout);
                }
            }
            let p = blocks[700];
            eprintln!("victim {p:#x}");
            if case == "grown-flushed" {
                Hopless::flush_thread_cache();
            }
            GLOBAL.dealloc(p as *mut u8, layout);
            hand_out_again(layout);
        }
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    assert_caught_before_reuse(
        "double_frees_in_a_grown_magazine_are_reported_before_reuse",
        &cases,
    );
}

/// A double free of a block whose slab went to another class: freed as a 64-byte block (its key names
/// a slot of the 64-byte magazine), its slab emptied, flushed and taken by the 2560-byte class, whose
/// refill put it in that magazine; then freed again as a 2560-byte block. Keys do not name the class,
/// so the key's epoch must not pass for the 2560-byte magazine's: each flush and each opening of any
/// magazine of a cache takes the cache's next epoch.
#[test]
fn a_double_free_into_a_slab_another_class_took_is_reported() {
    if armed("other-class") {
        let small = Layout::from_size_align(64, 8).unwrap();
        let big = Layout::from_size_align(2560, 8).unwrap();
        // SAFETY: blocks of the global heap; one freed twice on purpose: the fault under test.
        unsafe {
            // Eight slabs' worth of 64-byte blocks, all freed (keyed) and flushed: the emptied slabs
            // go to the pool. The blocks at a slab's first two 2560-byte places are freed first,
            // before the magazine's first flush, so their keys are of the epoch the 64-byte magazine
            // opened with (with epochs per magazine, all opening alike, this test failed).
            let slab_of = |q: usize| q & !((64 << 10) - 1);
            let blocks: Vec<usize> = (0..8 * 1024).map(|_| GLOBAL.alloc(small) as usize).collect();
            let early = |q: usize| q - slab_of(q) == 0 || q - slab_of(q) == 2560;
            for &q in blocks
                .iter()
                .filter(|&&q| early(q))
                .chain(blocks.iter().filter(|&&q| !early(q)))
            {
                GLOBAL.dealloc(q as *mut u8, small);
            }
            Hopless::flush_thread_cache();
            // The 2560-byte class takes a pooled slab: its refill puts the slab's 25 blocks in the
            // magazine and hands out one.
            let q = GLOBAL.alloc(big) as usize;
            let slab = slab_of(q);
            assert_eq!(
                blocks.iter().filter(|&&b| slab_of(b) == slab).count(),
                1024,
                "set-up: the 2560-byte block came from a slab the 64-byte blocks filled"
            );
            let v = if slab == q { slab + 2560 } else { slab };
            eprintln!("victim {v:#x}");
            GLOBAL.dealloc(v as *mut u8, big);
            hand_out_again(big);
        }
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    assert_caught_before_reuse(
        "a_double_free_into_a_slab_another_class_took_is_reported",
        &["other-class"],
    );
}

/// A block freed twice across threads, with thread-owned slabs (`HOPLESS_OWNED_SLABS=1`) and without:
/// the second free must be reported as a double free of that block before any block is handed out
/// again, whether the first went to the slab's remote bits (freed by another thread) or into its bitmap
/// (freed by the owner), and also when the program wrote over the free key in between (then the
/// second flush finds the block free in the other bitmap).
#[test]
fn cross_thread_double_frees_are_reported_with_the_block() {
    let layout = Layout::from_size_align(96, 8).unwrap();
    let cases = [
        "remote-twice",
        "remote-then-owner",
        "owner-then-remote",
        "remote-then-owner-scribbled",
        "owner-then-remote-scribbled",
    ];
    for case in cases {
        if !armed(case) {
            continue;
        }
        // SAFETY: blocks of the global heap, one freed twice on purpose: the fault under test.
        unsafe {
            let p = GLOBAL.alloc(layout) as usize;
            eprintln!("victim {p:#x}");
            let free_elsewhere = |scribble: bool| {
                std::thread::spawn(move || {
                    if scribble {
                        // A write after free over the key: this free cannot tell.
                        (p as *mut usize).write(0);
                    }
                    GLOBAL.dealloc(p as *mut u8, layout);
                    Hopless::flush_thread_cache();
                })
                .join()
                .unwrap();
            };
            let free_here = |scribble: bool| {
                if scribble {
                    (p as *mut usize).write(0);
                }
                GLOBAL.dealloc(p as *mut u8, layout);
                Hopless::flush_thread_cache();
            };
            match case {
                "remote-twice" => {
                    free_elsewhere(false);
                    free_elsewhere(false);
                }
                "remote-then-owner" => {
                    free_elsewhere(false);
                    free_here(false);
                }
                "owner-then-remote" => {
                    free_here(false);
                    free_elsewhere(false);
                }
                "remote-then-owner-scribbled" => {
                    free_elsewhere(false);
                    free_here(true);
                }
                _ => {
                    free_here(false);
                    free_elsewhere(true);
                }
            }
            hand_out_again(layout);
        }
        unreachable!("the double free was not caught");
    }
    if std::env::var_os("HOPLESS_FAULT").is_some() {
        return;
    }
    assert_caught_before_reuse("cross_thread_double_frees_are_reported_with_the_block", &cases);
}
