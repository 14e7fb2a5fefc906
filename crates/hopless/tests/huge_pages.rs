//! `Hopless::set_huge_pages`: segments and large blocks reserved while it is on ask the kernel for
//! transparent huge pages, those reserved before do not, and memory given back to the OS leaves them for
//! good. Read from the kernel's own account of the mappings (`VmFlags` in `/proc/self/smaps`: `hg` for
//! `MADV_HUGEPAGE`, `nh` for `MADV_NOHUGEPAGE`). Own binary: the setting is process-wide.

use std::alloc::{GlobalAlloc, Layout};

use hopless::Hopless;

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

#[test]
fn huge_pages_are_asked_for_while_on_and_left_where_memory_goes_back() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "this kernel has no transparent huge pages: the test cannot look"
        );
        eprintln!("skipped: this kernel has no transparent huge pages");
        return;
    }
    // With 64 KiB kernel pages a huge page is 512 MiB: no segment or arena is that large, and none asks.
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let huge = page * (page / 8);
    if huge > 4 << 20 {
        eprintln!("skipped: a huge page here ({huge} B) is larger than a segment, which never asks");
        return;
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
        return;
    }
    // Off (the default, whatever the environment says): 12 MiB of 1 KiB blocks takes new segments, and
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
