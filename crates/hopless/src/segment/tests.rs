//! Core tests over a private heap on `SystemPages`, natively and under Miri. Slabs and their bitmaps: carving, the free checks, states, the fast check against the full one.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::heap::Heap;
use crate::platform::SystemPages;
use crate::segment::{segment_of, slab_of, FreeError, Slab, SlabState};
use crate::size_class::{class_for, class_size};

#[test]
fn slab_carves_then_reuses_freed_blocks_lowest_first() {
    let heap = Heap::new(SystemPages);
    let class = class_for(64, 8).unwrap();
    let mut out = [core::ptr::null_mut(); 10];
    assert_eq!(heap.refill(class, &mut out), 10);
    for w in out.windows(2) {
        assert_eq!(
            w[1].addr() - w[0].addr(),
            64,
            "fresh blocks are carved in address order"
        );
    }
    let seg = segment_of(out[0]);
    // SAFETY: out[0] is a block of this heap.
    let slab = unsafe { slab_of(seg, out[0]) };
    // SAFETY: test-only reads of the header while no other thread uses the heap.
    unsafe {
        assert_eq!((*slab).carved.load(core::sync::atomic::Ordering::Relaxed), 10);
        assert_eq!((*slab).free, (*slab).capacity - 10);
        heap.flush(class, &[out[7], out[3]]);
        assert_eq!((*slab).free, (*slab).capacity - 8);
        assert_eq!(
            (*slab).bitmap[0].load(core::sync::atomic::Ordering::Relaxed),
            (1 << 7) | (1 << 3)
        );
    }
    let mut again = [core::ptr::null_mut(); 3];
    assert_eq!(heap.refill(class, &mut again), 3);
    assert_eq!(again, [out[3], out[7], out[9].wrapping_add(64)]);
    // SAFETY: every block handed out goes back exactly once.
    unsafe {
        heap.flush(class, &out[..3]);
        heap.flush(class, &out[4..7]);
        heap.flush(class, &out[8..]);
        heap.flush(class, &again);
    }
}

/// `Slab::take` hands out runs of free blocks a run at a time: against a model of the slab (a set of
/// free indices, taken lowest first), random frees and refills of random sizes must give the same
/// blocks in the same order, with runs that span whole bitmap words, end at a word's top bit, or are
/// cut by the refill's size.
#[test]
fn refills_take_runs_of_free_blocks_lowest_first() {
    let heap = Heap::new(SystemPages);
    let class = class_for(16, 8).unwrap();
    let n = crate::test_util::scaled(1000, 200);
    let mut blocks = vec![core::ptr::null_mut(); n];
    assert_eq!(heap.refill(class, &mut blocks), n);
    // All in one slab (64 KiB of 16-byte blocks), in address order.
    assert!(blocks.windows(2).all(|w| w[1].addr() - w[0].addr() == 16));
    let mut free = vec![false; n];
    let mut rng = SmallRng::seed_from_u64(0x2545_f491_4f6c_dd1d);
    for _ in 0..crate::test_util::scaled(300, 20) {
        // Free runs and single blocks: a random start and length, each block not free already.
        let mut back = Vec::new();
        for _ in 0..rng.gen_range(0..4) {
            let at = rng.gen_range(0..n);
            let len = [1, 3, 64, 130][rng.gen_range(0..4)].min(n - at);
            for i in at..at + len {
                if !free[i] {
                    free[i] = true;
                    back.push(blocks[i]);
                }
            }
        }
        // SAFETY: each block is handed out and given back once.
        unsafe { heap.flush(class, &back) };
        let want = rng.gen_range(1..=100);
        let expect: Vec<*mut u8> = (0..n)
            .filter(|&i| free[i])
            .take(want)
            .map(|i| blocks[i])
            .collect();
        if expect.len() < want {
            // The model covers these blocks only: keep the refill inside them.
            continue;
        }
        let mut got = vec![core::ptr::null_mut(); want];
        assert_eq!(heap.refill(class, &mut got), want);
        assert_eq!(got, expect);
        for p in got {
            free[(p.addr() - blocks[0].addr()) / 16] = false;
        }
    }
}

#[test]
fn put_rejects_double_free_foreign_offsets_wrong_class_and_never_allocated() {
    let heap = Heap::new(SystemPages);
    let class = class_for(48, 8).unwrap();
    let mut out = [core::ptr::null_mut(); 4];
    assert_eq!(heap.refill(class, &mut out), 4);
    // SAFETY: direct bitmap checks on a slab of this heap, single-threaded.
    unsafe {
        let slab = slab_of(segment_of(out[0]), out[0]);
        let _g = ();
        assert_eq!(Slab::put(slab, class, out[1]), Ok(()));
        assert_eq!(Slab::put(slab, class, out[1]), Err(FreeError::DoubleFree));
        assert_eq!(
            Slab::put(slab, class, out[2].wrapping_add(8)),
            Err(FreeError::NotBlockStart)
        );
        assert_eq!(Slab::put(slab, class + 1, out[2]), Err(FreeError::WrongClass));
        assert_eq!(
            Slab::put(slab, class, out[3].wrapping_add(48 * 5)),
            Err(FreeError::NeverAllocated)
        );
        // Undo the direct put so the heap's accounting stays whole, then free the rest.
        heap.flush(class, &[out[0], out[2], out[3]]);
        // out[1] was put directly: the heap's outstanding count still includes it, which is fine here.
    }
}

#[test]
fn slab_states_follow_fill_level() {
    let heap = Heap::new(SystemPages);
    let class = class_for(4096, 8).unwrap();
    let mut full = [core::ptr::null_mut(); 16];
    assert_eq!(heap.refill(class, &mut full), 16);
    // SAFETY: single-threaded test reads of headers of this heap; blocks freed once.
    unsafe {
        let slab = slab_of(segment_of(full[0]), full[0]);
        assert_eq!((*slab).state, SlabState::Full);
        heap.flush(class, &full[..1]);
        assert_eq!((*slab).state, SlabState::Partial);
        heap.flush(class, &full[1..]);
        assert_eq!(
            (*slab).state,
            SlabState::Partial,
            "the class keeps one empty slab"
        );
        assert_eq!((*slab).free, 16);
    }
}

/// The granule table names, for every 64 KiB of a slab in use, that slab's header and its class's
/// magazine (one granule for a small slab, eight for a medium one), and header 0 for the header area:
/// what the C free path reads instead of the segment's slab shift and the header's own fields.
#[test]
fn every_granule_of_a_slab_names_the_slab_and_its_magazine() {
    use crate::segment::{granule_of, slabs_of};
    use core::sync::atomic::Ordering::Relaxed;
    let heap = Heap::new(SystemPages);
    // SAFETY: the blocks come from `heap` and go back to it; the granule table and the slab headers are
    // read in the live segments they were handed out from (`granule_of` does not dereference the
    // addresses it is given, only the table).
    unsafe {
        for (size, granules) in [(48usize, 1), (20_000, 8)] {
            let class = class_for(size, 8).unwrap();
            let mut out = [core::ptr::null_mut(); 1];
            assert_eq!(heap.refill(class, &mut out), 1);
            let seg = segment_of(out[0]);
            let slab = slab_of(seg, out[0]);
            let slab_size = 1usize << (*seg).slab_shift;
            assert_eq!(slab_size / (64 << 10), granules);
            for at in (0..slab_size).step_by(64 << 10) {
                let granule = granule_of(seg, (*slab).start.wrapping_add(at));
                let named = slabs_of(seg).byte_add((*granule).slab.load(Relaxed) as usize);
                assert_eq!(named, slab, "{size} B, {at} bytes into the slab");
                assert_eq!(
                    (*granule).mag_offset.load(Relaxed),
                    crate::cache::mag_offset(class)
                );
            }
            assert_eq!((*granule_of(seg, seg.cast())).slab.load(Relaxed), 0);
            heap.flush(class, &out);
        }
    }
}

/// The free path's short check (`Slab::handed_out_class`) takes only what the full one (`locate` and
/// `Slab::check_free`) takes: every byte offset around handed-out blocks of a small and a medium class,
/// the header area, the uncarved tail, a large block and a foreign address.
#[test]
fn the_fast_free_check_accepts_only_what_the_full_check_accepts() {
    use crate::address::{locate, Located};
    let heap = Heap::new(SystemPages);
    let tc = heap.new_thread_cache(1);
    let mut probes = Vec::new();
    // SAFETY: `tc` is this test's cache; every block handed out goes back once.
    unsafe {
        for size in [48usize, 3000, 20_000] {
            let class = class_for(size, 8).unwrap();
            let mut out = [core::ptr::null_mut(); 4];
            assert_eq!(heap.refill(class, &mut out), 4);
            let seg = segment_of(out[0]);
            let size = class_size(class);
            let offsets: Vec<usize> = if cfg!(miri) {
                vec![0, 1, 8, 16, size / 2, size - 8, size - 1]
            } else {
                (0..size).collect()
            };
            for &p in &out {
                for &off in &offsets {
                    probes.push((p.wrapping_add(off), Some(class), off == 0));
                }
            }
            // Past the carved blocks, and the header area.
            let last = out[3].wrapping_add(class_size(class));
            probes.push((last, None, false));
            probes.push((last.wrapping_add(class_size(class)), None, false));
            probes.push((seg.cast::<u8>(), None, false));
            probes.push((seg.cast::<u8>().wrapping_add(64), None, false));
            heap.flush(class, &out);
        }
        let big = heap.alloc(tc, 300_000, 8, false);
        probes.push((big, None, false));
        let mut local = 0u64;
        if !cfg!(miri) {
            // Under Miri a test page source's segment does not fill its 4 MiB slot, so a stack address can
            // share the slot: a case mmap'd segments never meet.
            probes.push(((&raw mut local).cast(), None, false));
        }
        probes.push((core::ptr::null_mut(), None, false));
        // Re-take the blocks so that they are handed out again while probing.
        for size in [48usize, 3000, 20_000] {
            let class = class_for(size, 8).unwrap();
            let mut out = [core::ptr::null_mut(); 4];
            assert_eq!(heap.refill(class, &mut out), 4);
        }
        for &(p, class, start) in &probes {
            let fast = Slab::handed_out_class(p);
            let full = match locate(p) {
                Located::Slab(seg) => Slab::check_free(seg, p).ok(),
                _ => None,
            };
            if fast.is_some() {
                assert_eq!(fast, full, "{p:p}: the fast check took what the full one refuses");
            }
            if start {
                assert_eq!(fast, class, "{p:p}: a handed-out block start must pass");
            }
        }
        heap.free_ptr(tc, big);
        heap.retire_thread_cache(tc);
    }
}

/// A slab that went back to its pool keeps its old class, division constants and start in its header; only
/// `carved == 0` (set by `SlabPool::put`) keeps the C free path's check, which reads no slab magic, from
/// taking its old blocks: a stale pointer into it is left to the full check, which reports it.
#[test]
fn blocks_of_a_slab_back_in_its_pool_fail_the_fast_check() {
    let heap = Heap::new(SystemPages);
    let class = class_for(4096, 8).unwrap();
    let per_slab = 16;
    let mut blocks = vec![core::ptr::null_mut(); per_slab * 3];
    assert_eq!(heap.refill(class, &mut blocks), blocks.len());
    // SAFETY: blocks handed out just above; each freed once, then only probed (never read or written).
    unsafe {
        for &p in &blocks {
            assert_eq!(Slab::handed_out_class(p), Some(class));
        }
        heap.flush(class, &blocks);
        heap.trim();
        let mut pooled = 0;
        for &p in &blocks {
            let slab = slab_of(segment_of(p), p);
            if matches!(
                (*slab).state,
                SlabState::Pooled | SlabState::Clean | SlabState::Asleep
            ) {
                pooled += 1;
                assert_eq!(
                    Slab::handed_out_class(p),
                    None,
                    "{p:p}: a pooled slab's block passed"
                );
                assert!(Slab::check_free(segment_of(p), p).is_err());
            }
        }
        assert!(
            pooled >= per_slab,
            "trim pooled {pooled} of {} blocks' slabs",
            blocks.len()
        );
    }
}

/// A map reaches the top of the user address space: on aarch64 (48-bit addresses) the kernel puts
/// mappings above 2^47, where a 47-bit map would refuse every segment.
#[test]
fn address_maps_cover_the_whole_user_address_space() {
    use crate::segment::map::USER_ADDRESS_BITS;
    use crate::segment::{map_bits, SlotMap};
    static MAP: SlotMap<30, { map_bits(30) / 64 }> = SlotMap::new();
    let top = core::ptr::without_provenance_mut::<u8>((1usize << USER_ADDRESS_BITS) - (1 << 30));
    assert!(MAP.insert(top) && MAP.contains(top.wrapping_add(12345)));
    assert!(!MAP.insert(core::ptr::without_provenance_mut(1usize << USER_ADDRESS_BITS)));
    assert_eq!(
        USER_ADDRESS_BITS,
        if cfg!(miri) {
            40
        } else if cfg!(target_arch = "aarch64") {
            48
        } else {
            47
        }
    );
}
