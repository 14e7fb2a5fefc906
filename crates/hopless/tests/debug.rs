//! Debug and hardened modes (feature `debug`): each fault is committed in a child process (this test
//! binary re-run with `HOPLESS_DEBUG=1` and the fault armed), which must abort with the right report, naming
//! the pointer and its operation history. Also: an ordinary workload runs clean in both modes.

#![cfg(feature = "debug")]

use std::alloc::{GlobalAlloc, Layout};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

fn child(test: &str, fault: &str, env: &[(&str, &str)]) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
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
            let seg = hopless::segment::segment_of(p);
            let slab = hopless::segment::slab_of(seg, p);
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
            if std::env::var_os("HOPLESS_DEBUG").is_some() {
                assert_eq!(
                    Hopless::usable_size(p),
                    300,
                    "debug mode reports the requested size"
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
            let usable = Hopless::usable_size(p);
            std::ptr::write_volatile(p.add(usable), 1);
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
