//! Memory goes back to the OS: after a large free, resident memory returns close to where it started.
//! Own binary, one test: RSS is process-wide.

use std::alloc::{GlobalAlloc, Layout};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn rss_comes_back_after_freeing_everything() {
    let start = rss_bytes();
    let mut blocks = Vec::with_capacity(300_000);
    // 256 MiB of small, medium and large blocks, all touched.
    for (size, count) in [
        (64usize, 1_000_000usize / 4),
        (1024, 65_536),
        (40_000, 1_700),
        (1 << 20, 64),
    ] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        for _ in 0..count {
            // SAFETY: non-zero size.
            let p = unsafe { GLOBAL.alloc(layout) };
            assert!(!p.is_null());
            // SAFETY: live block.
            unsafe { p.write_bytes(0x5a, size) };
            blocks.push((p, layout));
        }
    }
    let peak = rss_bytes();
    assert!(
        peak > start + (180 << 20),
        "the blocks were resident: {start} -> {peak}"
    );
    for (p, layout) in blocks.drain(..) {
        // SAFETY: allocated with this layout, freed once.
        unsafe { GLOBAL.dealloc(p, layout) };
    }
    drop(blocks);
    // Freed large blocks stay resident while the program held them recently (for a program that
    // allocates them again at once); after a pause the next large free gives back what the budget no
    // longer covers.
    std::thread::sleep(std::time::Duration::from_millis(250));
    let layout = Layout::from_size_align(1 << 20, 8).unwrap();
    // SAFETY: non-zero size; freed at once.
    unsafe { GLOBAL.dealloc(GLOBAL.alloc(layout), layout) };
    let after_free = rss_bytes();
    eprintln!(
        "rss: start {} MiB, peak {} MiB, after free {} MiB",
        start >> 20,
        peak >> 20,
        after_free >> 20
    );
    // Without any trim call: what stays is the dirty-slab reserve, one empty slab per class, this thread's
    // magazines and the large blocks' budget (4 MiB with nothing in use).
    assert!(
        after_free < start + (96 << 20),
        "after free: {} MiB from {} MiB",
        after_free >> 20,
        start >> 20
    );
    Hopless::trim();
    let after_trim = rss_bytes();
    eprintln!("rss after trim {} MiB", after_trim >> 20);
    assert!(
        after_trim < start + (8 << 20),
        "after trim: {} MiB from {} MiB",
        after_trim >> 20,
        start >> 20
    );
}
