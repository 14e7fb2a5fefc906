//! Fuzzes hopless through its own API against a model of the live blocks.
//!
//! The harness keeps the system allocator as its `#[global_allocator]` (its own `Vec`s and maps must not
//! share a heap with what is under test) and calls hopless directly: `Hopless::alloc_bytes` for
//! malloc / calloc / memalign, `GlobalAlloc::realloc`, `Hopless::free` (no size) and
//! `Hopless::usable_size`. Sizes cover all three regimes: small slabs (1..=4096), medium slabs
//! (..=256 KiB), large mappings (up to 8 MiB), plus class boundaries and powers of two (each ±1);
//! alignments run from 2^0 to 2^22.
//!
//! Every block is filled with its own byte over its whole usable size when it is handed out, and the
//! model checks after each action: alignment, `usable_size >= size` (and that it does not change while
//! the block lives), contents intact, no two live blocks overlapping (a map by address, checking the
//! neighbour), calloc's zeroes, and realloc's preserved prefix. At the end of an input every block is
//! checked in full and freed. An input runs at most 256 actions with at most 64 MiB live.

#![no_main]

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::fmt;

use arbitrary::{Arbitrary, Unstructured};
use hopless::experiment::size_class::{CLASS_SIZE, MEDIUM_MAX, SMALL_MAX};
use hopless::Hopless;
use libfuzzer_sys::fuzz_target;

/// Actions per input (the rest of a longer input is ignored).
const MAX_ACTIONS: usize = 256;
/// Bytes live at once (requested sizes); an allocation that would pass it is skipped.
const MAX_LIVE_BYTES: usize = 64 << 20;
/// Largest request.
const LARGE_CAP: usize = 8 << 20;
/// Largest alignment is 2^22 (4 MiB).
const MAX_ALIGN_LOG2: u8 = 22;
/// Blocks up to this usable size are checked byte by byte after every action; bigger ones at their first
/// and last `EDGE` bytes and one byte per page (and every byte when freed or reallocated).
const FULL_CHECK: usize = 4096;
const EDGE: usize = 64;
const PAGE: usize = 4096;
/// What libhopless's malloc and calloc ask for (glibc's alignment; 8 for blocks of 8 bytes or less).
const MALLOC_ALIGN: usize = 16;

/// A request size, drawn so that every size regime and the edges between classes come up often.
#[derive(Clone, Copy)]
struct Size(usize);

impl fmt::Debug for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'a> Arbitrary<'a> for Size {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let kind: u8 = u.arbitrary()?;
        let raw = u.arbitrary::<u32>()? as usize;
        let pick3 = |x: usize| [x.saturating_sub(1), x, x + 1][(raw >> 16) % 3];
        let size = match kind % 16 {
            // Small slabs.
            0..=7 => 1 + raw % SMALL_MAX,
            // Tiny (the 8- and 16-byte classes, alignment-sized requests).
            8 => 1 + raw % 64,
            // Medium slabs.
            9..=11 => SMALL_MAX + 1 + raw % (MEDIUM_MAX - SMALL_MAX),
            // Large mappings.
            12 => MEDIUM_MAX + 1 + raw % (LARGE_CAP - MEDIUM_MAX),
            // A class size, one less or one more.
            13 | 14 => pick3(CLASS_SIZE[raw % CLASS_SIZE.len()] as usize),
            // A power of two, one less or one more.
            _ => pick3(1 << (raw % 24)),
        };
        Ok(Size(size.clamp(1, LARGE_CAP)))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (5, Some(5))
    }
}

/// An alignment, `2^(byte % 23)`: 1 to 4 MiB.
#[derive(Clone, Copy)]
struct Align(usize);

impl fmt::Debug for Align {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl<'a> Arbitrary<'a> for Align {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Align(1 << (u.arbitrary::<u8>()? % (MAX_ALIGN_LOG2 + 1))))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(1))
    }
}

#[derive(Arbitrary, Debug)]
enum Action {
    /// libhopless's malloc: alignment 8 up to 8 bytes, 16 above.
    Malloc {
        size: Size,
    },
    /// `n` (0..=15) elements of `size`, zeroed; a total over the cap falls back to one element.
    Calloc {
        n: u8,
        size: Size,
    },
    /// `GlobalAlloc::realloc` of live block `idx % live` with the layout it was allocated with.
    Realloc {
        idx: u16,
        size: Size,
    },
    /// The C `realloc` (no old size): `Hopless::realloc_unsized` with malloc's alignment.
    ReallocUnsized {
        idx: u16,
        size: Size,
    },
    /// Any alignment from 1 to 4 MiB.
    Memalign {
        align: Align,
        size: Size,
    },
    Free {
        idx: u16,
    },
    UsableSize {
        idx: u16,
    },
    /// Returns this thread's cached blocks to the central heap.
    FlushCache,
    /// Flush, then give free slabs and cached large mappings back to the OS.
    Trim,
}

struct Block {
    ptr: *mut u8,
    /// Size it was allocated with (at least 1).
    size: usize,
    align: usize,
    usable: usize,
    fill: u8,
}

#[derive(Default)]
struct Model {
    live: Vec<Block>,
    /// start → end (start + usable) of every live block.
    by_addr: BTreeMap<usize, usize>,
    live_bytes: usize,
    fill: u8,
}

/// Offset of the first byte of `s` that is not `v`.
fn first_mismatch(s: &[u8], v: u8) -> Option<usize> {
    let pat = [v; PAGE];
    for (k, c) in s.chunks(PAGE).enumerate() {
        if c != &pat[..c.len()] {
            return Some(k * PAGE + c.iter().position(|&x| x != v).unwrap());
        }
    }
    None
}

impl Model {
    fn next_fill(&mut self) -> u8 {
        // Never 0, so a zeroed block never passes for a filled one.
        self.fill = self.fill % 255 + 1;
        self.fill
    }

    fn room_for(&self, size: usize) -> bool {
        self.live_bytes + size <= MAX_LIVE_BYTES
    }

    /// Checks a fresh block and takes it into the model, filled with a new byte.
    fn admit(&mut self, what: &str, p: *mut u8, size: usize, align: usize, zeroed: bool) {
        assert!(!p.is_null(), "{what}({size}, align {align}) returned null");
        assert_eq!(
            p.addr() % align,
            0,
            "{what}({size}, align {align}) = {p:p} is misaligned"
        );
        // SAFETY: a live block of hopless.
        let usable = unsafe { Hopless::usable_size(p) };
        assert!(
            usable >= size,
            "{what}({size}, align {align}) = {p:p}: usable size {usable}"
        );
        if zeroed {
            // SAFETY: the block holds `size` bytes, which calloc initialised.
            let s = unsafe { std::slice::from_raw_parts(p, size) };
            if let Some(i) = first_mismatch(s, 0) {
                panic!(
                    "{what}({size}) = {p:p}: byte {i} of {size} is {:#x}, not zero",
                    s[i]
                );
            }
        }
        let (start, end) = (p.addr(), p.addr() + usable);
        if let Some((&s, &e)) = self.by_addr.range(..end).next_back() {
            assert!(
                e <= start,
                "{what}({size}, align {align}) = {start:#x}..{end:#x} overlaps live block {s:#x}..{e:#x}"
            );
        }
        self.by_addr.insert(start, end);
        let fill = self.next_fill();
        // SAFETY: the block's usable bytes are the caller's to write.
        unsafe { std::ptr::write_bytes(p, fill, usable) };
        self.live.push(Block {
            ptr: p,
            size,
            align,
            usable,
            fill,
        });
        self.live_bytes += size;
    }

    /// Takes block `i` out of the model (checked in full first).
    fn remove(&mut self, i: usize) -> Block {
        let b = self.live.swap_remove(i);
        check(&b, true);
        assert_eq!(self.by_addr.remove(&b.ptr.addr()), Some(b.ptr.addr() + b.usable));
        self.live_bytes -= b.size;
        b
    }

    /// Takes live block `idx % live` out of the model for a realloc to `new_size`, if the cap allows.
    fn take_for_realloc(&mut self, idx: u16, new_size: usize) -> Option<Block> {
        if self.live.is_empty() {
            return None;
        }
        let i = idx as usize % self.live.len();
        if !self.room_for(new_size.saturating_sub(self.live[i].size)) {
            return None;
        }
        Some(self.remove(i))
    }

    /// Checks a realloc's result kept the old contents, then admits it.
    fn admit_realloc(&mut self, what: &str, old: &Block, q: *mut u8, new_size: usize, align: usize) {
        assert!(
            !q.is_null(),
            "{what}({:p}, {} -> {new_size}) returned null",
            old.ptr,
            old.size
        );
        let kept = old.size.min(new_size);
        // SAFETY: the new block holds at least `kept` bytes, copied from the old one.
        let s = unsafe { std::slice::from_raw_parts(q, kept) };
        if let Some(k) = first_mismatch(s, old.fill) {
            panic!(
                "{what}({:p}, {} -> {new_size}) = {q:p}: byte {k} of the kept {kept} is {:#x}, not {:#x}",
                old.ptr, old.size, s[k], old.fill
            );
        }
        self.admit(what, q, new_size, align, false);
    }

    fn act(&mut self, a: &Action) {
        match *a {
            Action::Malloc { size: Size(size) } => {
                if self.room_for(size) {
                    let align = if size <= 8 { 8 } else { MALLOC_ALIGN };
                    self.admit(
                        "malloc",
                        Hopless::alloc_bytes(size, align, false),
                        size,
                        align,
                        false,
                    );
                }
            }
            Action::Calloc { n, size: Size(size) } => {
                let total = match (n as usize % 16) * size {
                    t if t > LARGE_CAP => size,
                    t => t.max(1),
                };
                if self.room_for(total) {
                    let align = if total <= 8 { 8 } else { MALLOC_ALIGN };
                    self.admit(
                        "calloc",
                        Hopless::alloc_bytes(total, align, true),
                        total,
                        align,
                        true,
                    );
                }
            }
            Action::Memalign {
                align: Align(align),
                size: Size(size),
            } => {
                if self.room_for(size) {
                    self.admit(
                        "memalign",
                        Hopless::alloc_bytes(size, align, false),
                        size,
                        align,
                        false,
                    );
                }
            }
            Action::Realloc {
                idx,
                size: Size(new_size),
            } => {
                let Some(old) = self.take_for_realloc(idx, new_size) else {
                    return;
                };
                let layout = Layout::from_size_align(old.size, old.align).unwrap();
                // SAFETY: `old` is a live block allocated with `layout`; new_size > 0.
                let q = unsafe { GlobalAlloc::realloc(&Hopless, old.ptr, layout, new_size) };
                self.admit_realloc("realloc", &old, q, new_size, old.align);
            }
            Action::ReallocUnsized {
                idx,
                size: Size(new_size),
            } => {
                let Some(old) = self.take_for_realloc(idx, new_size) else {
                    return;
                };
                let align = if new_size <= 8 { 8 } else { 16 };
                // SAFETY: `old` is a live hopless block; new_size > 0; align a power of two.
                let q = unsafe { Hopless::realloc_unsized(old.ptr, new_size, align) };
                self.admit_realloc("realloc_unsized", &old, q, new_size, old.align.min(align));
            }
            Action::Free { idx } => {
                if !self.live.is_empty() {
                    let b = self.remove(idx as usize % self.live.len());
                    // SAFETY: a live hopless block, dropped from the model.
                    unsafe { Hopless::free(b.ptr) };
                }
            }
            Action::UsableSize { idx } => {
                if !self.live.is_empty() {
                    let b = &self.live[idx as usize % self.live.len()];
                    // SAFETY: a live hopless block.
                    let u = unsafe { Hopless::usable_size(b.ptr) };
                    assert_eq!(
                        u, b.usable,
                        "usable size of {:p} (size {}) changed",
                        b.ptr, b.size
                    );
                    check(b, false);
                }
            }
            Action::FlushCache => Hopless::flush_thread_cache(),
            Action::Trim => Hopless::trim(),
        }
    }

    /// The cheap check after every action: each live block's first and last bytes, and small blocks whole.
    fn check_live(&self) {
        for b in &self.live {
            check(b, false);
        }
    }

    fn free_all(&mut self) {
        while !self.live.is_empty() {
            let b = self.remove(self.live.len() - 1);
            // SAFETY: a live hopless block, dropped from the model.
            unsafe { Hopless::free(b.ptr) };
        }
        assert!(self.by_addr.is_empty() && self.live_bytes == 0);
    }
}

/// Checks that the usable bytes of `b` still hold its fill byte: all of them when `full` or the block is
/// small, otherwise the edges and one byte per page.
fn check(b: &Block, full: bool) {
    let len = b.usable;
    // SAFETY: the block is live and its usable bytes were all written with `fill`.
    let s = unsafe { std::slice::from_raw_parts(b.ptr, len) };
    let bad = if full || len <= FULL_CHECK {
        first_mismatch(s, b.fill)
    } else {
        first_mismatch(&s[..EDGE], b.fill)
            .or_else(|| first_mismatch(&s[len - EDGE..], b.fill).map(|k| len - EDGE + k))
            .or_else(|| (0..len).step_by(PAGE).find(|&k| s[k] != b.fill))
    };
    if let Some(k) = bad {
        panic!(
            "block {:p} (size {}, align {}, usable {}): byte {k} is {:#x}, not its fill {:#x}",
            b.ptr, b.size, b.align, b.usable, s[k], b.fill
        );
    }
}

fuzz_target!(|actions: Vec<Action>| {
    let mut m = Model::default();
    for a in actions.iter().take(MAX_ACTIONS) {
        m.act(a);
        m.check_live();
    }
    m.free_all();
});
