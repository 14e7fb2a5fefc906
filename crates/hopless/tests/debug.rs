//! Debug and hardened modes (feature `debug`): each fault is committed in a child process (this test
//! binary re-run with `HOPLESS_DEBUG=1` and the fault armed), which must abort with the right report, naming
//! the pointer and its operation history. Also: an ordinary workload runs clean in both modes.

#![cfg(feature = "debug")]

use std::alloc::{GlobalAlloc, Layout};
use std::os::unix::process::ExitStatusExt;

use hopless::Hopless;

mod common;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

fn child(test: &str, fault: &str, env: &[(&str, &str)]) -> std::process::Output {
    common::this_test_binary()
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("HOPLESS_FAULT", fault)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn aborts(test: &str, fault: &str) -> String {
    let out = child(test, fault, &[("HOPLESS_DEBUG", "1")]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "child should abort; stderr:\n{err}"
    );
    err
}

fn armed(f: &str) -> bool {
    std::env::var("HOPLESS_FAULT").as_deref() == Ok(f)
}

fn in_child() -> bool {
    std::env::var_os("HOPLESS_FAULT").is_some()
}

fn victim(err: &str) -> String {
    err.lines()
        .find_map(|l| l.strip_prefix("victim "))
        .expect("victim line")
        .to_string()
}

const L100: Layout = match Layout::from_size_align(100, 8) {
    Ok(l) => l,
    Err(_) => panic!(),
};

#[test]
fn double_free_is_caught_at_the_second_free_with_history() {
    if armed("double") {
        // SAFETY: the fault under test.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            GLOBAL.dealloc(p, L100);
            GLOBAL.dealloc(p, L100);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let err = aborts("double_free_is_caught_at_the_second_free_with_history", "double");
    assert!(err.contains("hopless debug: fatal: double free"), "{err}");
    assert!(err.contains(&format!("pointer: {}", victim(&err))), "{err}");
    assert!(
        err.contains(" alloc by thread") && err.contains(" free  by thread"),
        "history: {err}"
    );
}

#[test]
fn foreign_pointer_is_reported() {
    if armed("foreign") {
        let mut x = [0u64; 2];
        // SAFETY: the fault under test.
        unsafe { Hopless::free(x.as_mut_ptr().cast()) };
        unreachable!();
    }
    if in_child() {
        return;
    }
    let err = aborts("foreign_pointer_is_reported", "foreign");
    assert!(
        err.contains("free of a pointer hopless did not allocate"),
        "{err}"
    );
}

#[test]
fn damaged_slab_header_is_reported() {
    if armed("header") {
        // SAFETY: the fault under test: overwrite the slab header's magic, then free.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            let seg = hopless::experiment::segment::segment_of(p);
            let slab = hopless::experiment::segment::slab_of(seg, p);
            (*slab).magic = 0x0bad_f00d;
            GLOBAL.dealloc(p, L100);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let err = aborts("damaged_slab_header_is_reported", "header");
    assert!(err.contains("damaged slab header"), "{err}");
    assert!(err.contains(&format!("pointer: {}", victim(&err))), "{err}");
}

#[test]
fn write_after_free_is_reported_with_its_offset_when_the_block_comes_back() {
    if armed("uaf") {
        // SAFETY: the fault under test: write into a freed block, then allocate until it is reused.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            GLOBAL.dealloc(p, L100);
            *p.add(42) = 7;
            for _ in 0..10_000 {
                let _ = GLOBAL.alloc(L100);
            }
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let err = aborts(
        "write_after_free_is_reported_with_its_offset_when_the_block_comes_back",
        "uaf",
    );
    assert!(err.contains("write after free"), "{err}");
    assert!(err.contains(&format!("pointer: {}", victim(&err))), "{err}");
    assert!(err.contains("damaged byte at offset: 42"), "{err}");
    assert!(err.contains(" free  by thread"), "history: {err}");
}

#[test]
fn overflow_into_the_redzone_is_reported_at_free() {
    if armed("overflow") {
        // SAFETY: the fault under test: one byte past the end.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            *p.add(100) = 1;
            GLOBAL.dealloc(p, L100);
        }
        unreachable!();
    }
    if armed("overflow-large") {
        let l = Layout::from_size_align(1 << 20, 8).unwrap();
        // SAFETY: the fault under test: 3 bytes past the end of a large block.
        unsafe {
            let p = GLOBAL.alloc(l);
            eprintln!("victim {:#x}", p as usize);
            *p.add((1 << 20) + 3) = 1;
            GLOBAL.dealloc(p, l);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let err = aborts("overflow_into_the_redzone_is_reported_at_free", "overflow");
    assert!(err.contains("buffer overflow into the redzone"), "{err}");
    assert!(err.contains("damaged byte at offset: 100"), "{err}");
    let err = aborts("overflow_into_the_redzone_is_reported_at_free", "overflow-large");
    assert!(err.contains("buffer overflow into the redzone"), "{err}");
    assert!(
        err.contains(&format!("damaged byte at offset: {}", (1 << 20) + 3)),
        "{err}"
    );
}

/// A real workload (collections, strings, threads, realloc, zeroing, alignments) must run clean.
fn workload() {
    let mut m = std::collections::HashMap::new();
    for i in 0..20_000u64 {
        m.insert(i, format!("v{i}").repeat((i % 7) as usize));
    }
    let hs: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut v: Vec<Vec<u8>> = Vec::new();
                for i in 0..5000 {
                    let mut x = vec![t as u8; 1 + (i * 13) % 5000];
                    x.extend_from_slice(&[1, 2, 3]);
                    v.push(x);
                    if i % 3 == 0 {
                        v.swap_remove(0);
                    }
                }
                v.len()
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    for align in [8usize, 64, 4096, 65536] {
        let l = Layout::from_size_align(300, align).unwrap();
        // SAFETY: non-zero size; freed with the same layout.
        unsafe {
            let p = GLOBAL.alloc_zeroed(l);
            assert_eq!(p as usize % align, 0);
            assert!(std::slice::from_raw_parts(p, 300).iter().all(|&b| b == 0));
            if std::env::var_os("HOPLESS_DEBUG").is_some() || std::env::var_os("HOPLESS_HARDENED").is_some() {
                assert_eq!(
                    Hopless::usable_size(p),
                    300,
                    "the checked modes report the requested size"
                );
            } else {
                assert!(Hopless::usable_size(p) >= 300);
            }
            GLOBAL.dealloc(p, l);
        }
    }
    let big: Vec<u8> = vec![5; 3 << 20];
    assert_eq!(big.iter().map(|&b| b as usize).sum::<usize>(), 15 << 20);
    assert_eq!(m.len(), 20_000);
}

#[test]
fn an_ordinary_workload_runs_clean_in_debug_and_hardened_modes() {
    if armed("workload") {
        workload();
        // Hardened: blocks of a new slab come out in no fixed order.
        if std::env::var_os("HOPLESS_HARDENED").is_some() {
            let ps: Vec<usize> = (0..50)
                .map(|_| Box::into_raw(Box::new([0u8; 1000])) as usize)
                .collect();
            let ascending = ps.windows(2).filter(|w| w[1] > w[0]).count();
            assert!(
                ascending < 45,
                "hardened order looks sequential: {ascending}/49 ascending"
            );
        }
        println!("workload ok");
        return;
    }
    if in_child() {
        return;
    }
    for env in [
        &[("HOPLESS_DEBUG", "1")][..],
        &[("HOPLESS_HARDENED", "1")],
        &[("HOPLESS_DEBUG", "1"), ("HOPLESS_HARDENED", "1")],
    ] {
        let out = child(
            "an_ordinary_workload_runs_clean_in_debug_and_hardened_modes",
            "workload",
            env,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("workload ok"),
            "{env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn hardened_large_blocks_have_a_guard_page() {
    if armed("guard") {
        let l = Layout::from_size_align(1 << 20, 8).unwrap();
        // SAFETY: the fault under test: write just past the end of a large block (the guard page).
        unsafe {
            let p = GLOBAL.alloc(l);
            // Past the requested size come the redzone and the size word, then the page rounding, then
            // the guard page: within a page (the kernel's: 64 KiB on some aarch64) and a bit.
            let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
            for i in 0..page + (8 << 10) {
                std::ptr::write_volatile(p.add((1 << 20) + i), 1);
            }
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let out = child(
        "hardened_large_blocks_have_a_guard_page",
        "guard",
        &[("HOPLESS_HARDENED", "1")],
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ------------------------------------------------------------------------------------------------------
// Hardened mode: the thread caches stay, and every free and reuse is checked.

fn hardened_aborts(test: &str, fault: &str) -> String {
    let out = child(test, fault, &[("HOPLESS_HARDENED", "1")]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "{fault}: child should abort; stderr:\n{err}"
    );
    assert!(
        err.contains("hopless hardened: fatal: ") || err.contains("hopless: fatal: "),
        "{err}"
    );
    assert!(
        err.contains(&format!("pointer: {}", victim(&err))),
        "{fault}: {err}"
    );
    err
}

const L24: Layout = match Layout::from_size_align(24, 8) {
    Ok(l) => l,
    Err(_) => panic!(),
};

/// The first block of its slab among fresh blocks of `l` (hardened mode hands them out in random order).
fn first_block_of_a_slab(l: Layout) -> *mut u8 {
    for _ in 0..100_000 {
        // SAFETY: a live block; only its slab header is read (leaked on purpose).
        unsafe {
            let p = GLOBAL.alloc(l);
            let s = hopless::experiment::segment::slab_of(hopless::experiment::segment::segment_of(p), p);
            if (*s).start == p {
                return p;
            }
        }
    }
    panic!("no first block found");
}

#[test]
fn hardened_mode_catches_every_kind_of_double_free() {
    let fault = std::env::var("HOPLESS_FAULT").unwrap_or_default();
    if fault.starts_with("hdf-") {
        // SAFETY: the faults under test.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            GLOBAL.dealloc(p, L100);
            match fault.as_str() {
                "hdf-immediate" => {}
                "hdf-delayed" => {
                    let others: Vec<_> = (0..100).map(|_| GLOBAL.alloc(L100)).collect();
                    for q in others {
                        GLOBAL.dealloc(q, L100);
                    }
                }
                // Enough frees after it that its magazine flushes it back to its slab; then another
                // thread refills from that slab (and keeps its magazine) without being handed `p`.
                "hdf-flushed" => {
                    let others: Vec<_> = (0..5000).map(|_| GLOBAL.alloc(L100) as usize).collect();
                    for q in others {
                        GLOBAL.dealloc(q as *mut u8, L100);
                    }
                    let (tx, rx) = std::sync::mpsc::channel();
                    let a = p as usize;
                    std::thread::spawn(move || {
                        let r = GLOBAL.alloc(L100);
                        if r as usize == a {
                            let _keep = GLOBAL.alloc(L100);
                            GLOBAL.dealloc(r, L100);
                        }
                        tx.send(()).unwrap();
                        std::thread::park();
                    });
                    rx.recv().unwrap();
                }
                "hdf-other-thread" => {
                    let a = p as usize;
                    std::thread::spawn(move || GLOBAL.dealloc(a as *mut u8, L100))
                        .join()
                        .unwrap();
                }
                "hdf-c-free" => Hopless::free(p),
                _ => unreachable!(),
            }
            GLOBAL.dealloc(p, L100);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    for f in [
        "hdf-immediate",
        "hdf-delayed",
        "hdf-flushed",
        "hdf-other-thread",
        "hdf-c-free",
    ] {
        let err = hardened_aborts("hardened_mode_catches_every_kind_of_double_free", f);
        assert!(err.contains("double free"), "{f}: {err}");
    }
}

#[test]
fn hardened_mode_catches_overflow_and_underflow_at_free() {
    let fault = std::env::var("HOPLESS_FAULT").unwrap_or_default();
    if fault.starts_with("hof-") {
        // SAFETY: the faults under test.
        unsafe {
            let (p, l, at) = match fault.as_str() {
                "hof-overflow" => (GLOBAL.alloc(L100), L100, 100),
                "hof-overflow-small" => (GLOBAL.alloc(L24), L24, 26),
                "hof-underflow" => (GLOBAL.alloc(L100), L100, -1),
                "hof-underflow-4" => (GLOBAL.alloc(L24), L24, -4),
                "hof-underflow-first" => (first_block_of_a_slab(L100), L100, -2),
                "hof-large" => {
                    let l = Layout::from_size_align(1 << 20, 8).unwrap();
                    (GLOBAL.alloc(l), l, (1 << 20) + 3)
                }
                _ => unreachable!(),
            };
            eprintln!("victim {:#x}", p as usize);
            // Every bit of the byte flipped: a fixed value (0x41) was already there about one run in
            // 256 (a guard word's bytes follow the per-process salt), which left nothing to catch.
            *p.offset(at) = !*p.offset(at);
            GLOBAL.dealloc(p, l);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let t = "hardened_mode_catches_overflow_and_underflow_at_free";
    for (f, want) in [
        ("hof-overflow", "damaged byte at offset: 100"),
        ("hof-overflow-small", "damaged byte at offset: 26"),
        ("hof-large", "damaged byte at offset: 1048579"),
    ] {
        let err = hardened_aborts(t, f);
        assert!(err.contains("buffer overflow into the redzone"), "{f}: {err}");
        assert!(err.contains(want), "{f}: {err}");
    }
    for f in ["hof-underflow", "hof-underflow-4", "hof-underflow-first"] {
        let err = hardened_aborts(t, f);
        assert!(err.contains("buffer underflow"), "{f}: {err}");
    }
}

#[test]
fn hardened_mode_catches_a_write_after_free_when_the_block_comes_back() {
    let fault = std::env::var("HOPLESS_FAULT").unwrap_or_default();
    if fault.starts_with("huaf-") {
        // SAFETY: the faults under test.
        unsafe {
            let p = GLOBAL.alloc(L100);
            eprintln!("victim {:#x}", p as usize);
            GLOBAL.dealloc(p, L100);
            let at = match fault.as_str() {
                "huaf-0" => 0,
                "huaf-42" => 42,
                "huaf-end" => 99,
                _ => unreachable!(),
            };
            *p.add(at) = 7;
            for _ in 0..10_000 {
                let _ = GLOBAL.alloc(L100);
            }
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let t = "hardened_mode_catches_a_write_after_free_when_the_block_comes_back";
    for (f, off) in [("huaf-0", 0), ("huaf-42", 42), ("huaf-end", 99)] {
        let err = hardened_aborts(t, f);
        assert!(err.contains("write after free"), "{f}: {err}");
        assert!(
            err.contains(&format!("damaged byte at offset: {off}")),
            "{f}: {err}"
        );
    }
}

#[test]
fn hardened_mode_reports_interior_and_foreign_pointers() {
    let fault = std::env::var("HOPLESS_FAULT").unwrap_or_default();
    if fault.starts_with("hbad-") {
        // SAFETY: the faults under test.
        unsafe {
            let p = GLOBAL.alloc(L100);
            let mut local = [0u64; 4];
            let bad = match fault.as_str() {
                "hbad-interior" => p.add(16),
                "hbad-stack" => local.as_mut_ptr().cast::<u8>(),
                _ => unreachable!(),
            };
            eprintln!("victim {:#x}", bad as usize);
            Hopless::free(bad);
        }
        unreachable!();
    }
    if in_child() {
        return;
    }
    let t = "hardened_mode_reports_interior_and_foreign_pointers";
    let err = hardened_aborts(t, "hbad-interior");
    assert!(err.contains("not the start of a block"), "{err}");
    let err = hardened_aborts(t, "hbad-stack");
    assert!(err.contains("did not allocate"), "{err}");
}

/// Many threads trading blocks of every size while resizing them: no false report in hardened mode, and
/// every block keeps its contents.
#[test]
fn hardened_mode_runs_a_cross_thread_churn_clean() {
    if armed("hchurn") {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let slots: Arc<Vec<AtomicUsize>> = Arc::new((0..256).map(|_| AtomicUsize::new(0)).collect());
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let slots = slots.clone();
                std::thread::spawn(move || {
                    let mut x = 0x9e37_79b9u64 ^ t;
                    for _ in 0..40_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let size = match x % 8 {
                            0 => 1 + (x >> 8) as usize % (300 << 10),
                            1..=3 => 1 + (x >> 8) as usize % 4096,
                            _ => 1 + (x >> 8) as usize % 256,
                        };
                        let p = Hopless::alloc_bytes(size, 8, false);
                        assert!(!p.is_null());
                        // SAFETY: a fresh block of `size` bytes; the cookie is its first and last byte.
                        unsafe {
                            p.write_bytes(0xAB, size);
                            *p = size as u8;
                            *p.add(size - 1) = size as u8;
                        }
                        let slot = &slots[(x >> 40) as usize % 256];
                        let old = slot.swap(p as usize, Ordering::AcqRel);
                        if old != 0 {
                            let q = old as *mut u8;
                            // SAFETY: a block another thread published; now ours.
                            unsafe {
                                let n = Hopless::usable_size(q);
                                assert_eq!(*q, n as u8);
                                assert_eq!(*q.add(n - 1), n as u8);
                                let r = if x & 1 == 0 {
                                    Hopless::realloc_unsized(q, n + 1 + (x >> 50) as usize % 9000, 8)
                                } else {
                                    q
                                };
                                assert_eq!(*r, n as u8);
                                Hopless::free(r);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        println!("churn ok");
        return;
    }
    if in_child() {
        return;
    }
    let out = child(
        "hardened_mode_runs_a_cross_thread_churn_clean",
        "hchurn",
        &[("HOPLESS_HARDENED", "1")],
    );
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("churn ok"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
