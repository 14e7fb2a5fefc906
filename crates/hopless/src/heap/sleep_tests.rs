//! Core tests of sleeping segments (`central::sleep`), over a private heap that records its page
//! source's calls, natively and under Miri: a segment whose every slab is clean decommits its slab
//! headers, one with a slab in use does not, and a sleeping segment wakes before a new one is
//! reserved, with its blocks as a new segment's.

use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::heap::Heap;
use crate::platform::{PageSource, SystemPages};
use crate::segment::{segment_of, Slab, SEGMENT_SIZE, SLABS_OFFSET};
use crate::size_class::class_for;
use crate::test_util::{check, fill};

/// `SystemPages`, counting reservations and recording each decommit's offset in its segment and length.
#[derive(Default)]
struct RecordingPages {
    reserves: AtomicUsize,
    decommits: Mutex<Vec<(usize, usize, usize)>>,
}

// SAFETY: every call goes to `SystemPages`, which keeps the contract; recording changes nothing.
unsafe impl PageSource for RecordingPages {
    fn reserve(&self, size: usize, align: usize) -> *mut u8 {
        self.reserves.fetch_add(1, Ordering::Relaxed);
        SystemPages.reserve(size, align)
    }

    unsafe fn release(&self, ptr: *mut u8, size: usize, align: usize) {
        // SAFETY: forwarded: the caller keeps `release`'s contract.
        unsafe { SystemPages.release(ptr, size, align) }
    }

    unsafe fn decommit(&self, ptr: *mut u8, size: usize) {
        let seg = ptr.addr() & !(SEGMENT_SIZE - 1);
        self.decommits.lock().unwrap().push((seg, ptr.addr() - seg, size));
        // SAFETY: forwarded: the caller keeps `decommit`'s contract.
        unsafe { SystemPages.decommit(ptr, size) }
    }
}

/// The 4096-byte class: 16 blocks a slab, 63 slabs a small segment.
const PER_SLAB: usize = 16;
const SLABS: usize = 63;

/// The decommits of `seg`'s slab headers (offsets below the first slab slot).
fn header_decommits(heap: &Heap<RecordingPages>, seg: usize) -> Vec<(usize, usize)> {
    heap.source
        .decommits
        .lock()
        .unwrap()
        .iter()
        .filter(|&&(s, off, _)| s == seg && off < 1 << 16)
        .map(|&(_, off, len)| (off, len))
        .collect()
}

fn take_segment(heap: &Heap<RecordingPages>) -> Vec<*mut u8> {
    let class = class_for(4096, 8).unwrap();
    let mut blocks = vec![core::ptr::null_mut(); PER_SLAB * SLABS];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    let seg = segment_of(blocks[0]);
    assert!(
        blocks.iter().all(|&p| segment_of(p) == seg),
        "one segment's slabs"
    );
    for (i, &p) in blocks.iter().enumerate() {
        fill(p, 64, i as u8 | 1);
    }
    blocks
}

#[test]
fn a_segment_whose_slabs_are_all_clean_gives_its_slab_headers_back() {
    let heap = Heap::new(RecordingPages::default());
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let blocks = take_segment(&heap);
    let seg = segment_of(blocks[0]).addr();
    assert_eq!(heap.source.reserves.load(Ordering::Relaxed), 1);
    // SAFETY: each freed once.
    unsafe { heap.flush(class, &blocks) };
    heap.trim();
    let page = crate::platform::os_page_size();
    let headers_end = SLABS_OFFSET + 64 * core::mem::size_of::<Slab>();
    let slept = header_decommits(&heap, seg);
    if page < headers_end {
        // From the page past the first slab's header (it stands for the segment on the sleeping
        // list) to the last header's page.
        let from = (SLABS_OFFSET + 2 * core::mem::size_of::<Slab>()).next_multiple_of(page);
        assert!(
            slept.contains(&(from, headers_end.next_multiple_of(page) - from)),
            "{slept:x?}"
        );
    }
    // A pointer into the sleeping segment is refused.
    // SAFETY: only probed: never read or written through.
    unsafe {
        assert!(Slab::check_free(segment_of(blocks[5]), blocks[5]).is_err());
        assert_eq!(Slab::handed_out_class(blocks[700]), None);
    }

    // The next refill wakes it: no new reservation, and blocks as a new segment's.
    let again = take_segment(&heap);
    assert_eq!(heap.source.reserves.load(Ordering::Relaxed), 1);
    assert_eq!(segment_of(again[0]).addr(), seg);
    for (i, &p) in again.iter().enumerate() {
        check(p, 64, i as u8 | 1);
        // SAFETY: live blocks, only probed.
        assert_eq!(unsafe { Slab::handed_out_class(p) }, Some(class));
    }
    // SAFETY: each freed once.
    unsafe { heap.flush(class, &again) };
}

#[test]
fn a_segment_with_a_slab_in_use_keeps_its_headers() {
    let heap = Heap::new(RecordingPages::default());
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let blocks = take_segment(&heap);
    let seg = segment_of(blocks[0]).addr();
    let (held, freed) = blocks.split_at(1);
    // SAFETY: each freed once.
    unsafe { heap.flush(class, freed) };
    heap.trim();
    assert_eq!(header_decommits(&heap, seg), vec![], "one block is still out");
    // The last block back: now the segment sleeps (when a sleep gives pages back at all).
    // SAFETY: freed once.
    unsafe { heap.flush(class, held) };
    heap.trim();
    let headers_end = SLABS_OFFSET + 64 * core::mem::size_of::<Slab>();
    assert_eq!(
        header_decommits(&heap, seg).is_empty(),
        crate::platform::os_page_size() >= headers_end
    );
}

#[test]
fn sleeping_segments_wake_before_new_ones_are_reserved() {
    let heap = Heap::new(RecordingPages::default());
    heap.set_purge_delay_ms(u32::MAX);
    let class = class_for(4096, 8).unwrap();
    let (a, b) = (take_segment(&heap), take_segment(&heap));
    assert_eq!(heap.source.reserves.load(Ordering::Relaxed), 2);
    // SAFETY: each freed once.
    unsafe {
        heap.flush(class, &a);
        heap.flush(class, &b);
    }
    heap.trim();
    // Both asleep; three segments' worth of blocks wake both and reserve one more.
    let mut c = vec![core::ptr::null_mut(); PER_SLAB * SLABS * 3];
    assert_eq!(heap.refill(class, &mut c), c.len());
    assert_eq!(heap.source.reserves.load(Ordering::Relaxed), 3);
    let mut segs: Vec<usize> = c.iter().map(|&p| segment_of(p).addr()).collect();
    segs.sort_unstable();
    segs.dedup();
    assert_eq!(segs.len(), 3);
    // SAFETY: each freed once.
    unsafe { heap.flush(class, &c) };
}

/// Threads that fill and empty whole segments while others trim, with no purge delay: segments go to
/// sleep and wake all the time, beside slabs taken, purged and filed clean by other threads. Every
/// block comes back whole, and afterwards every segment can be filled again.
#[test]
#[cfg_attr(miri, ignore)]
fn segments_sleep_and_wake_under_threads_that_trim() {
    let heap = Heap::new(SystemPages);
    heap.set_purge_delay_ms(0);
    let class = class_for(4096, 8).unwrap();
    let stop = core::sync::atomic::AtomicBool::new(false);
    let (slept, woken) = (
        crate::central::SLEPT.load(Ordering::Relaxed),
        crate::central::WOKEN.load(Ordering::Relaxed),
    );
    std::thread::scope(|sc| {
        for t in 0..3u8 {
            let (heap, stop) = (&heap, &stop);
            sc.spawn(move || {
                let mut round = 0u8;
                while !stop.load(Ordering::Relaxed) {
                    let n = PER_SLAB * SLABS / 2 + usize::from(round) % PER_SLAB;
                    let mut blocks = vec![core::ptr::null_mut(); n];
                    assert_eq!(heap.refill(class, &mut blocks), n);
                    for (i, &p) in blocks.iter().enumerate() {
                        fill(p, 64, (i as u8) ^ t ^ round | 1);
                    }
                    for (i, &p) in blocks.iter().enumerate() {
                        check(p, 64, (i as u8) ^ t ^ round | 1);
                    }
                    // SAFETY: each freed once.
                    unsafe { heap.flush(class, &blocks) };
                    round = round.wrapping_add(1);
                }
            });
        }
        let heap = &heap;
        sc.spawn(move || {
            for _ in 0..200 {
                heap.trim();
                std::thread::yield_now();
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
    });
    let slept = crate::central::SLEPT.load(Ordering::Relaxed) - slept;
    let woken = crate::central::WOKEN.load(Ordering::Relaxed) - woken;
    // Where a small segment's headers fit its first page (64 KiB pages) segments never sleep.
    let headers_end = SLABS_OFFSET + 64 * core::mem::size_of::<Slab>();
    if crate::platform::os_page_size() < headers_end {
        assert!(slept > 0 && woken > 0, "slept {slept} times, woken {woken}");
    } else {
        assert_eq!((slept, woken), (0, 0));
    }
    heap.trim();
    let mut all = vec![core::ptr::null_mut(); PER_SLAB * SLABS * 4];
    assert_eq!(heap.refill(class, &mut all), all.len());
    // SAFETY: each freed once.
    unsafe { heap.flush(class, &all) };
}
