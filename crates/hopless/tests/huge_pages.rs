//! `Hopless::set_huge_pages`: segments and large blocks reserved while it is on ask the kernel for
//! transparent huge pages, those reserved before do not, and memory given back to the OS leaves them for
//! good; and the default (`HugePages::Auto`), in a child process of its own, from a peak RSS of 64 MiB. Read from the kernel's own account of the mappings (`VmFlags` in `/proc/self/smaps`: `hg` for
//! `MADV_HUGEPAGE`, `nh` for `MADV_NOHUGEPAGE`). Own binary: the setting is process-wide.

use std::alloc::{GlobalAlloc, Layout};

use hopless::Hopless;

mod common;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

/// The `VmFlags` of the mapping that holds `p`.
fn vm_flags(p: *mut u8) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let a = p.addr();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                inside = lo <= a && a < hi;
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().map(str::to_owned).collect();
            }
        }
    }
    panic!("no mapping holds {p:p}");
}

/// Allocates `count` blocks of `size` bytes, each written.
fn fill(size: usize, count: usize) -> Vec<(*mut u8, Layout)> {
    let layout = Layout::from_size_align(size, 8).unwrap();
    (0..count)
        .map(|_| {
            // SAFETY: non-zero size.
            let p = unsafe { GLOBAL.alloc(layout) };
            assert!(!p.is_null());
            // SAFETY: a live block of `size` bytes.
            unsafe { p.write_bytes(0x5a, size) };
            (p, layout)
        })
        .collect()
}

fn free_all(blocks: Vec<(*mut u8, Layout)>) {
    for (p, layout) in blocks {
        // SAFETY: allocated by `fill` with this layout, freed once.
        unsafe { GLOBAL.dealloc(p, layout) };
    }
}

/// The huge page's size, or `None` (said on stderr) where this test cannot look: no transparent huge
/// pages in the kernel (a failure under `CI=true`), huge pages larger than a segment, or an emulator whose
/// mappings do not show the advice.
fn huge_page_size_if_visible() -> Option<usize> {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "this kernel has no transparent huge pages: the test cannot look"
        );
        eprintln!("skipped: this kernel has no transparent huge pages");
        return None;
    }
    // With 64 KiB kernel pages a huge page is 512 MiB: no segment or arena is that large, and none asks.
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let huge = page * (page / 8);
    if huge > 4 << 20 {
        eprintln!("skipped: a huge page here ({huge} B) is larger than a segment, which never asks");
        return None;
    }

    // Under qemu-user the mappings read here are the emulator's view, without advice flags: look once
    // at a mapping of the test's own.
    // SAFETY: a fresh anonymous mapping of the test's own, advised, read and unmapped here.
    let seen = unsafe {
        let probe = libc::mmap(
            std::ptr::null_mut(),
            4 << 20,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(probe, libc::MAP_FAILED);
        libc::madvise(probe, 4 << 20, libc::MADV_HUGEPAGE);
        let seen = vm_flags(probe.cast()).iter().any(|x| x == "hg");
        libc::munmap(probe, 4 << 20);
        seen
    };
    if !seen {
        eprintln!("skipped: advice does not show in this process's smaps (an emulator's view)");
        return None;
    }
    Some(huge)
}

#[test]
fn huge_pages_are_asked_for_while_on_and_left_where_memory_goes_back() {
    let Some(huge) = huge_page_size_if_visible() else {
        return;
    };
    // Off (the setting here, whatever the environment says): 12 MiB of 1 KiB blocks takes new segments, and
    // a 3 MiB block goes to an arena, beside a 300 KiB one that stays (so the arena is not unmapped at
    // the trim below, only the 3 MiB span decommitted).
    Hopless::set_huge_pages(false);
    let before = fill(1024, 12 << 10);
    let keep = fill(300 << 10, 1);
    let big_before = fill(3 << 20, 1);
    let big_span = big_before[0].0;
    for p in [before[before.len() - 1].0, big_before[0].0] {
        let f = vm_flags(p);
        assert!(
            !f.iter().any(|x| x == "hg"),
            "huge pages asked for while off: {f:?}"
        );
    }

    Hopless::set_huge_pages(true);
    let after = fill(1024, 12 << 10);
    let big_after = fill(40 << 20, 1); // a mapping of its own (above the arenas' 16 MiB spans)
    for p in [after[after.len() - 1].0, big_after[0].0] {
        let f = vm_flags(p);
        assert!(
            f.iter().any(|x| x == "hg"),
            "no huge pages asked for while on: {f:?}"
        );
    }
    // Everything back, then trimmed: the slabs in the middle of the second batch are purged, and the
    // huge pages around them, whole, are left for small ones (a collapse would make them resident
    // again); so is the arena span the 3 MiB block had.
    let middle = after[after.len() / 2].0;
    let middle_huge_page = middle.map_addr(|a| a & !(huge - 1));
    free_all(after);
    free_all(before);
    free_all(big_before);
    free_all(big_after);
    Hopless::trim();
    for p in [middle, middle_huge_page, big_span] {
        let f = vm_flags(p);
        assert!(
            f.iter().any(|x| x == "nh"),
            "purged memory still eligible for huge pages at {p:p}: {f:?}"
        );
    }
    free_all(keep);
    Hopless::set_huge_pages(false);
}

fn has(p: *mut u8, flag: &str) -> bool {
    vm_flags(p).iter().any(|x| x == flag)
}

/// The default in a fresh process (`auto_child`): until the heap holds 64 MiB of segments of 64 B..4 KiB
/// blocks nothing asks for huge pages; from then on, segments of slabs their blocks fill and arenas ask
/// (new ones at once, earlier ones at the next refill or large block), while the smallest classes'
/// segments (whose slabs those blocks fill in part) and large mappings (which may be touched sparsely)
/// keep small pages.
#[test]
fn by_default_dense_reservations_ask_for_huge_pages_once_the_heap_is_large() {
    if huge_page_size_if_visible().is_none() {
        return;
    }
    let out = common::this_test_binary()
        .args([
            "auto_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--ignored",
        ])
        .env_remove("HOPLESS_HUGE_PAGES")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "auto_child failed:\n{stdout}\n{err}");
    assert!(stdout.contains("1 passed"), "auto_child did not run:\n{stdout}");
}

/// Run by the test above in a child of its own: the setting and the heap are process-wide.
#[test]
#[ignore = "run by by_default_dense_reservations_ask_for_huge_pages_once_the_heap_is_large"]
fn auto_child() {
    // Below the mark: 12 MiB of 1 KiB blocks takes new segments, and a 3 MiB block the first arena,
    // which keep small pages.
    let small_before = fill(1024, 12 << 10);
    let large_before = fill(3 << 20, 1);
    assert!(
        !has(small_before[small_before.len() - 1].0, "hg"),
        "huge pages below the mark"
    );
    assert!(
        !has(large_before[0].0, "hg"),
        "huge pages for an arena below the mark"
    );

    // 56 MiB more of them take the heap's segments of such blocks past 64 MiB.
    let small_more = fill(1024, 56 << 10);

    // Past it: new segments of 1 KiB blocks ask ...
    let small_after = fill(1024, 12 << 10);
    assert!(
        has(small_after[small_after.len() - 1].0, "hg"),
        "no huge pages for slabs past the mark"
    );
    // ... and so, from then on, do the segments reserved before it (where they are first touched from
    // now on) ...
    assert!(
        has(small_before[small_before.len() - 1].0, "hg"),
        "segments from below the mark not advised"
    );
    // ... those of 16-byte blocks (1 024 to a 64 KiB slab: 16 KiB used) do not: 300 000 of them take
    // several segments, the last reserved past the mark ...
    let tiny_after = fill(16, 300_000);
    assert!(
        !has(tiny_after[tiny_after.len() - 1].0, "hg"),
        "huge pages for the smallest classes' slabs"
    );
    // ... nor does an 80 MiB block, a mapping of its own (which a program may touch sparsely) ...
    let ballast = fill(80 << 20, 1);
    assert!(!has(ballast[0].0, "hg"), "a large mapping asked by default");
    // ... and arenas do, the one from below the mark at the next large block, and a new one: 22 blocks
    // of 3 MiB pass one 64 MiB arena.
    let large_after = fill(3 << 20, 22);
    assert!(
        has(large_before[0].0, "hg"),
        "the arena from below the mark not advised"
    );
    assert!(
        has(large_after[large_after.len() - 1].0, "hg"),
        "no huge pages for a new arena past the mark"
    );

    for b in [
        small_before,
        small_more,
        large_before,
        ballast,
        small_after,
        tiny_after,
        large_after,
    ] {
        free_all(b);
    }
}
