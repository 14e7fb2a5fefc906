//! Fatal reports, written without allocating and without `core::fmt`: a fixed stack buffer, hand-rolled
//! number formatting, one raw `write(2)`, then `abort()` so a core dump keeps the faulting stack.
//!
//! Two kinds: [`report_bad_free`] (a free the heap refuses: every mode) and [`fault`] (what the checked
//! modes find: damaged redzones, poison, guard words), which in debug mode also lists the pointer's
//! history from the operation ring kept here, with the call stack of the operation being refused and
//! of the pointer's last free (`platform::stack`).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::platform;
use crate::platform::place;
use crate::platform::stack::{self, Stack, FRAMES};
use crate::segment::{segment_of, slab_of, FreeError, SegmentKind, Slab, SEGMENT_MAP};
use crate::size_class::{self, class_size, NUM_CLASSES};

/// A message being built on the stack. Text past the buffer's end is dropped.
pub struct Msg {
    buf: [u8; 4096],
    len: usize,
}

impl Default for Msg {
    fn default() -> Self {
        Self::new()
    }
}

impl Msg {
    pub const fn new() -> Self {
        Self {
            buf: [0; 4096],
            len: 0,
        }
    }

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        let free = self.buf.get_mut(self.len..).unwrap_or_default();
        let n = b.len().min(free.len());
        if let (Some(dst), Some(src)) = (free.get_mut(..n), b.get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
        self
    }

    /// `0x` and the value in hexadecimal.
    pub fn hex(&mut self, v: usize) -> &mut Self {
        let mut tmp = [0u8; 18];
        tmp[0] = b'0';
        tmp[1] = b'x';
        let digits = if v == 0 {
            1
        } else {
            (usize::BITS - v.leading_zeros()).div_ceil(4) as usize
        };
        for (i, t) in tmp.iter_mut().skip(2).take(digits).enumerate() {
            let nib = (v >> (4 * (digits - 1 - i))) & 0xf;
            *t = b"0123456789abcdef".get(nib).copied().unwrap_or(b'?');
        }
        self.bytes(tmp.get(..2 + digits).unwrap_or(&tmp))
    }

    /// The value in decimal.
    pub fn dec(&mut self, mut v: u64) -> &mut Self {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        // u64::MAX has 20 digits: the loop stops at i == 0 at the latest.
        for t in tmp.iter_mut().rev() {
            *t = b'0' + (v % 10) as u8;
            i -= 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.bytes(tmp.get(i..).unwrap_or(&tmp))
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }

    /// Writes the message to stderr.
    pub fn emit(&self) {
        platform::write_stderr(self.as_bytes());
    }

    /// Writes the message to stderr and aborts.
    #[cold]
    pub fn fatal(&self) -> ! {
        self.emit();
        platform::abort()
    }
}

#[cfg(test)]
mod tests {
    use super::Msg;

    #[test]
    fn formats_numbers_without_fmt() {
        let mut m = Msg::new();
        m.str("p=")
            .hex(0x7f00_dead_beef)
            .str(" n=")
            .dec(0)
            .str(" ")
            .dec(18446744073709551615)
            .hex(0);
        assert_eq!(m.as_bytes(), b"p=0x7f00deadbeef n=0 184467440737095516150x0");
    }
}

/// Reports a bad free with everything the heap knows, and aborts.
#[cold]
#[inline(never)]
pub(crate) fn report_bad_free(e: FreeError, p: *mut u8, class: usize, slab: *mut Slab) -> ! {
    if crate::mode::debug_on() {
        fault(e.describe(), p, class, None);
    }
    let mut m = Msg::new();
    m.str("hopless: fatal: ")
        .str(e.describe())
        .str("\n  pointer: ")
        .hex(p.addr());
    if class < NUM_CLASSES {
        m.str("\n  class: ")
            .dec(class as u64)
            .str(" (")
            .dec(class_size(class) as u64)
            .str(" bytes)");
    }
    m.str("\n  segment: ").hex(segment_of(p).addr());
    // A header that belongs to no slab (the header area's own slots) has nothing to say.
    let magic = if slab.is_null() {
        0
    } else {
        // SAFETY: `slab` was found from `p`'s segment header, which is mapped.
        unsafe { (*slab).magic }
    };
    if matches!(magic, crate::segment::SLAB_MAGIC | crate::segment::SLAB_POOLED) {
        // SAFETY: as above.
        let s = unsafe { &*slab };
        m.str("\n  slab: ")
            .hex(s.start.addr())
            .str(" (slab class ")
            .dec(s.class as u64)
            .str(", block ")
            .dec(s.index_of(p) as u64)
            .str(" of ")
            .dec(s.capacity as u64)
            .str(", ")
            .dec(s.free as u64)
            .str(" free)");
    }
    m.str("\n");
    m.fatal()
}

// ------------------------------------------------------------------------------------------------------
// The operation ring.

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OpKind {
    Alloc = 1,
    Free = 2,
}

struct RingEntry {
    ptr: AtomicUsize,
    /// seq << 16 | kind << 8 | class (class 0xff: large).
    info: AtomicU64,
    thread: AtomicU64,
    /// The operation's call stack: `depth` return addresses, innermost first.
    stack: [AtomicUsize; FRAMES],
    depth: AtomicUsize,
}

const RING: usize = 256;
static RING_NEXT: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_ENTRY: RingEntry = RingEntry {
    ptr: AtomicUsize::new(0),
    info: AtomicU64::new(0),
    thread: AtomicU64::new(0),
    stack: [const { AtomicUsize::new(0) }; FRAMES],
    depth: AtomicUsize::new(0),
};
static RING_ENTRIES: [RingEntry; RING] = [EMPTY_ENTRY; RING];

/// The calling thread's number in reports: 1, 2, 3... in the order threads first record an operation.
fn thread_id() -> u64 {
    use crate::tls::THREAD_NUMBER;
    static NEXT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(1);
    let mut id = crate::tls::read::<THREAD_NUMBER>();
    if id == 0 {
        id = NEXT.fetch_add(1, Ordering::Relaxed);
        crate::tls::write::<THREAD_NUMBER>(id);
    }
    id as u64
}

/// Records one operation; a free with the caller's call stack (for callers that hold no allocator
/// lock). Allocations keep none: a report names the stacks of frees, and a stack costs about as much as
/// the rest of a debug-mode operation several times over (the unwinder's walk, 1-2 µs).
#[inline(never)]
pub fn record(kind: OpKind, p: *mut u8, class: usize) {
    let from = if kind == OpKind::Free {
        stack::capture(1)
    } else {
        Stack::EMPTY
    };
    record_from(kind, p, class, &from);
}

/// Records one operation with a call stack taken before (lock-free: a slot is claimed with one
/// fetch_add).
pub fn record_from(kind: OpKind, p: *mut u8, class: usize, from: &Stack) {
    let seq = RING_NEXT.fetch_add(1, Ordering::Relaxed);
    let Some(e) = RING_ENTRIES.get((seq % RING as u64) as usize) else {
        return;
    };
    e.ptr.store(p.addr(), Ordering::Relaxed);
    e.thread.store(thread_id(), Ordering::Relaxed);
    for (d, &pc) in e.stack.iter().zip(from.frames()) {
        d.store(pc, Ordering::Relaxed);
    }
    e.depth.store(from.len, Ordering::Relaxed);
    e.info.store(
        (seq << 16) | ((kind as u64) << 8) | (class.min(0xff) as u64),
        Ordering::Release,
    );
}

/// Lists the ring's operations on `p`; returns the last free among them (its number, thread and stack).
fn write_history(m: &mut Msg, p: *mut u8) -> Option<(u64, u64, Stack)> {
    m.str("\n  history of this pointer (last 256 operations, oldest first):");
    let end = RING_NEXT.load(Ordering::Acquire);
    let start = end.saturating_sub(RING as u64);
    let mut any = false;
    let mut last_free = None;
    for seq in start..end {
        let Some(e) = RING_ENTRIES.get((seq % RING as u64) as usize) else {
            continue;
        };
        let info = e.info.load(Ordering::Acquire);
        if info >> 16 != seq || e.ptr.load(Ordering::Relaxed) != p.addr() {
            continue;
        }
        any = true;
        m.str("\n    #")
            .dec(seq)
            .str(if (info >> 8) & 0xff == OpKind::Alloc as u64 {
                " alloc"
            } else {
                " free "
            });
        let thread = e.thread.load(Ordering::Relaxed);
        m.str(" by thread ").dec(thread);
        if (info >> 8) & 0xff == OpKind::Free as u64 {
            let mut s = Stack::EMPTY;
            s.len = e.depth.load(Ordering::Relaxed).min(FRAMES);
            for (d, pc) in s.pcs.iter_mut().zip(e.stack.iter()) {
                *d = pc.load(Ordering::Relaxed);
            }
            last_free = Some((seq, thread, s));
        }
        let class = (info & 0xff) as usize;
        if class < size_class::NUM_CLASSES {
            m.str(" (class ").dec(class as u64).str(")");
        }
    }
    if !any {
        m.str("\n    (none recorded)");
    }
    m.str("\n  this thread: ").dec(thread_id());
    last_free
}

/// Writes a call stack, a frame a line: the address, its function and the offset in it (from the
/// module's symbol table, or the symbols it exports), and the module with the offset in it (for
/// `addr2line -e MODULE OFFSET`). hopless's own frames are left out when it is a library of its own.
fn write_stack(m: &mut Msg, s: &Stack) {
    let mut shown = 0;
    for &pc in s.frames() {
        if shown == 0 && place::in_own_library(pc) {
            continue;
        }
        // A return address is just past its call: named by the byte before it.
        write_frame(m, shown, pc, pc.wrapping_sub(1));
        shown += 1;
    }
    if shown == 0 {
        m.str("\n    (no call stack: taken only in debug mode, where the C runtime's unwinder is found)");
    }
}

/// One frame of a call stack on its own line: `#i`, the address, its function and the offset in it,
/// then its module and the offset in that (for `addr2line`); `named_by` is the address looked up (the
/// byte before a return address, or a call site itself).
pub(crate) fn write_frame(m: &mut Msg, i: u64, pc: usize, named_by: usize) {
    m.str("\n    #").dec(i).str(" ").hex(pc);
    match place::place_of(named_by) {
        Some(at) => {
            if let Some((name, addr)) = place::function_of(&at, named_by) {
                m.str(" ").bytes(name).str("+").hex(pc.wrapping_sub(addr));
            }
            m.str(" (")
                .bytes(at.module)
                .str("+")
                .hex(pc.wrapping_sub(at.base))
                .str(")");
        }
        None => {
            m.str(" (?)");
        }
    }
}

/// A debug-mode fault report, then abort.
#[cold]
#[inline(never)]
pub(crate) fn fault(what: &str, p: *mut u8, class: usize, offset: Option<usize>) -> ! {
    let mut m = Msg::new();
    m.str(if crate::mode::debug_on() {
        "hopless debug: fatal: "
    } else {
        "hopless hardened: fatal: "
    })
    .str(what)
    .str("\n  pointer: ")
    .hex(p.addr());
    if class < size_class::NUM_CLASSES {
        m.str("\n  class: ")
            .dec(class as u64)
            .str(" (")
            .dec(class_size(class) as u64)
            .str(" bytes)");
    }
    if let Some(o) = offset {
        m.str("\n  damaged byte at offset: ")
            .dec(o as u64)
            .str(" (address ")
            .hex(p.addr() + o)
            .str(")");
    }
    let seg = segment_of(p);
    if SEGMENT_MAP.contains(p) {
        m.str("\n  segment: ").hex(seg.addr());
        // SAFETY: the segment map says the header is mapped.
        let kind = unsafe { (*seg).kind };
        if kind != SegmentKind::Large {
            // SAFETY: a small/medium segment's slab headers are mapped.
            let s = unsafe { &*slab_of(seg, p) };
            m.str("\n  slab: ")
                .hex(s.start.addr())
                .str(" (magic ")
                .hex(s.magic as usize)
                .str(", ");
            m.dec(s.free as u64)
                .str(" of ")
                .dec(s.capacity as u64)
                .str(" free)");
        }
    }
    if crate::mode::debug_on() {
        let last_free = write_history(&mut m, p);
        m.str("\n  this operation, from:");
        write_stack(&mut m, &stack::capture(1));
        if let Some((seq, thread, s)) = last_free {
            m.str("\n  the last free of this pointer (#")
                .dec(seq)
                .str(" by thread ")
                .dec(thread)
                .str("), from:");
            write_stack(&mut m, &s);
        }
    }
    m.str("\n");
    m.fatal()
}
