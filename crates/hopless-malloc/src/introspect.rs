//! glibc's introspection calls, answered from hopless's own counts: `mallinfo2`, `mallinfo`,
//! `malloc_stats`, `malloc_info` and `mallopt`. Without them, glibc's own would run and describe
//! glibc's empty arenas.
//!
//! Each call takes one [`Hopless::stats`] snapshot: every class lock, the thread-cache registry lock,
//! the large-block lock and the pool locks, each held only while its counters are read, and a read of
//! the magazine counts of every live thread for the classes in use. No lock is held across two of
//! them, nothing is allocated, and no thread is stopped, so a monitor may call these every second. A
//! snapshot taken while other threads allocate is a moment old and its parts are read one after
//! another: a total can be off by what moved meanwhile, never torn.
//!
//! What glibc's fields mean here (`struct mallinfo2`, all bytes unless said):
//!
//! | field | hopless |
//! |---|---|
//! | `arena` | held for blocks, but the large blocks in use: the classes' slabs, the free slabs the pools keep resident and the free large pages kept ([`Stats::bytes_held`] less `hblkhd`) |
//! | `ordblks` | free blocks in the classes' slabs (a count) |
//! | `smblks` | blocks cached in threads' magazines (a count; glibc's fastbins) |
//! | `hblks` | large blocks (above 256 KiB) in use (a count) |
//! | `hblkhd` | bytes of those large blocks |
//! | `usmblks` | 0, as in glibc since 2.24 |
//! | `fsmblks` | bytes of the blocks in magazines |
//! | `uordblks` | small and medium blocks handed to the program and not freed ([`Stats::bytes_handed_out`] less `hblkhd`): as in glibc, the large blocks are apart, so `uordblks + hblkhd` is everything in use |
//! | `fordblks` | `arena - uordblks`: free slab space, magazines, free slabs, cached large pages |
//! | `keepcost` | what `malloc_trim` gives back at least: the free slabs and the cached large pages |
//!
//! A block's bytes are its class's (or its large block's usable size): what `malloc_usable_size` says,
//! and in the checked modes (`HOPLESS_DEBUG`, `HOPLESS_HARDENED`) the redzones with it.
//!
//! `mallinfo` has `int` fields: a value above `INT_MAX` reads as `INT_MAX` (glibc's wraps to garbage,
//! often negative). `malloc_stats` prints full 64-bit values (glibc's truncate the first four to 32
//! bits).

use core::ffi::c_int;

use hl::{Hopless, Stats};

use crate::text::Text;

/// glibc's `struct mallinfo2` (`<malloc.h>`, glibc 2.33 and later).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mallinfo2 {
    pub arena: usize,
    pub ordblks: usize,
    pub smblks: usize,
    pub hblks: usize,
    pub hblkhd: usize,
    pub usmblks: usize,
    pub fsmblks: usize,
    pub uordblks: usize,
    pub fordblks: usize,
    pub keepcost: usize,
}

/// glibc's `struct mallinfo`: [`Mallinfo2`] in `int`s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mallinfo {
    pub arena: c_int,
    pub ordblks: c_int,
    pub smblks: c_int,
    pub hblks: c_int,
    pub hblkhd: c_int,
    pub usmblks: c_int,
    pub fsmblks: c_int,
    pub uordblks: c_int,
    pub fordblks: c_int,
    pub keepcost: c_int,
}

/// glibc's fields from one snapshot (see the table above).
fn info_of(st: &Stats) -> Mallinfo2 {
    Mallinfo2 {
        arena: st.bytes_held().saturating_sub(st.large_bytes_in_use) as usize,
        ordblks: st.classes.iter().map(|c| c.free_blocks()).sum::<u64>() as usize,
        smblks: st.classes.iter().map(|c| c.cached_blocks).sum::<u64>() as usize,
        hblks: st.large_blocks_in_use() as usize,
        hblkhd: st.large_bytes_in_use as usize,
        usmblks: 0,
        fsmblks: st.magazine_bytes() as usize,
        uordblks: st.bytes_handed_out().saturating_sub(st.large_bytes_in_use) as usize,
        fordblks: st.bytes_held_free() as usize,
        keepcost: (st.free_slab_bytes + st.large_cached_bytes) as usize,
    }
}

#[no_mangle]
pub extern "C" fn mallinfo2() -> Mallinfo2 {
    info_of(&Hopless::stats())
}

/// [`mallinfo2`] in `int`s, each saturating at `INT_MAX`.
#[no_mangle]
pub extern "C" fn mallinfo() -> Mallinfo {
    let m = mallinfo2();
    let int = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
    Mallinfo {
        arena: int(m.arena),
        ordblks: int(m.ordblks),
        smblks: int(m.smblks),
        hblks: int(m.hblks),
        hblkhd: int(m.hblkhd),
        usmblks: int(m.usmblks),
        fsmblks: int(m.fsmblks),
        uordblks: int(m.uordblks),
        fordblks: int(m.fordblks),
        keepcost: int(m.keepcost),
    }
}

/// glibc's `malloc_stats`: the same lines on stderr, written with `write(2)` (stdio is not used:
/// nothing is buffered or allocated). hopless has one heap, shown as arena 0 (`arena` and `uordblks`
/// of [`mallinfo2`]); the totals add the large blocks (`hblkhd`), as glibc's add its mapped chunks; the
/// last two lines are the most large blocks and large bytes ever in use at once.
#[no_mangle]
pub extern "C" fn malloc_stats() {
    let st = Hopless::stats();
    let m = info_of(&st);
    let mut t = Text::<512>::new();
    t.str("Arena 0:\nsystem bytes     = ").dec_in(m.arena as u64, 10);
    t.str("\nin use bytes     = ").dec_in(m.uordblks as u64, 10);
    t.str("\nTotal (incl. mmap):\nsystem bytes     = ")
        .dec_in((m.arena + m.hblkhd) as u64, 10);
    t.str("\nin use bytes     = ")
        .dec_in((m.uordblks + m.hblkhd) as u64, 10);
    t.str("\nmax mmap regions = ").dec_in(st.large_peak_blocks, 10);
    t.str("\nmax mmap bytes   = ").dec_in(st.large_peak_bytes, 10);
    t.str("\n");
    hl::experiment::platform::write_stderr(t.as_bytes());
}

/// glibc's `malloc_info`: an XML description of the heap on `fp`, in glibc's shape (`<malloc
/// version="1">`, one `<heap nr="0">` with a `<sizes>` list, then the totals). Each class with free
/// blocks (in its slabs or in magazines) is a `<size>` line: `from` and `to` the sizes it serves,
/// `count` its free blocks, `total` their bytes. `fast` counts the magazines, `rest` the free slab
/// space, `mmap` the large blocks in use; `system` is what [`mallinfo2`] calls `arena` (`max` too:
/// hopless keeps no peak of it) and `aspace` the address space reserved for slabs plus the large
/// blocks' bytes.
///
/// Returns 0. A nonzero `options` returns `EINVAL` (the error number itself, as glibc does; its
/// manual's `-1` and `errno` describe no glibc release), as does a null `fp`. The text is built on the
/// stack first and then handed to `fwrite` in one call, with no hopless lock held: stdio may allocate
/// the stream's buffer, which is an ordinary call into this library. A write that fails returns -1
/// with stdio's `errno`.
#[no_mangle]
pub unsafe extern "C" fn malloc_info(options: c_int, fp: *mut libc::FILE) -> c_int {
    if options != 0 || fp.is_null() {
        return libc::EINVAL;
    }
    let st = Hopless::stats();
    let m = info_of(&st);
    // 73 classes at about 60 bytes a line, and the rest: well inside.
    let mut t = Text::<{ 16 << 10 }>::new();
    t.str("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
    let mut from = 1;
    for c in &st.classes {
        let free = c.free_blocks() + c.cached_blocks;
        if free > 0 {
            t.str("  <size from=\"")
                .dec(from)
                .str("\" to=\"")
                .dec(c.size as u64)
                .str("\" total=\"")
                .dec(free * c.size as u64)
                .str("\" count=\"")
                .dec(free)
                .str("\"/>\n");
        }
        from = c.size as u64 + 1;
    }
    let rest_bytes = m.fordblks.saturating_sub(m.fsmblks) as u64;
    let aspace = st.segments * hl::experiment::segment::SEGMENT_SIZE as u64
        + st.large_bytes_in_use
        + st.large_cached_bytes;
    t.str("</sizes>\n");
    totals(&mut t, &m, rest_bytes);
    system(&mut t, m.arena as u64, aspace);
    t.str("</heap>\n");
    totals(&mut t, &m, rest_bytes);
    t.str("<total type=\"mmap\" count=\"")
        .dec(m.hblks as u64)
        .str("\" size=\"")
        .dec(m.hblkhd as u64)
        .str("\"/>\n");
    system(&mut t, m.arena as u64, aspace);
    t.str("</malloc>\n");
    let b = t.as_bytes();
    // SAFETY: `fp` is the program's open stream (the C contract); `b` is a live buffer.
    let wrote = unsafe { libc::fwrite(b.as_ptr().cast(), 1, b.len(), fp) };
    if wrote == b.len() && !t.is_full() {
        0
    } else {
        -1
    }
}

/// The `fast` and `rest` totals of [`malloc_info`].
fn totals<const N: usize>(t: &mut Text<N>, m: &Mallinfo2, rest_bytes: u64) {
    t.str("<total type=\"fast\" count=\"")
        .dec(m.smblks as u64)
        .str("\" size=\"")
        .dec(m.fsmblks as u64)
        .str("\"/>\n<total type=\"rest\" count=\"")
        .dec(m.ordblks as u64)
        .str("\" size=\"")
        .dec(rest_bytes)
        .str("\"/>\n");
}

/// The `system` and `aspace` lines of [`malloc_info`].
fn system<const N: usize>(t: &mut Text<N>, held: u64, aspace: u64) {
    t.str("<system type=\"current\" size=\"").dec(held).str("\"/>\n");
    t.str("<system type=\"max\" size=\"").dec(held).str("\"/>\n");
    t.str("<aspace type=\"total\" size=\"").dec(aspace).str("\"/>\n");
    t.str("<aspace type=\"mprotect\" size=\"")
        .dec(aspace)
        .str("\"/>\n");
}

/// glibc's `mallopt` parameters (`<malloc.h>`).
const M_MXFAST: c_int = 1;

/// glibc's largest `M_MXFAST` (`MAX_FAST_SIZE`: 80 * sizeof(size_t) / 4 bytes).
const MAX_FAST_SIZE: usize = 80 * core::mem::size_of::<usize>() / 4;

/// glibc's `mallopt`: takes every parameter and changes nothing, returning what glibc returns (1,
/// but 0 for an `M_MXFAST` outside 0..=160, which glibc refuses), so that a program that checks the
/// answer goes on as it would under glibc. None of glibc's knobs has a counterpart here:
///
/// - `M_MXFAST` (1): hopless has no fastbins; its magazines hold every class, sized per class.
/// - `M_TRIM_THRESHOLD` (-1), `M_TOP_PAD` (-2): there is no top of the heap to trim or pad; free
///   slabs go back to the OS once they have waited out the purge delay (100 ms), and `malloc_trim`
///   gives back everything free at once.
/// - `M_MMAP_THRESHOLD` (-3), `M_MMAP_MAX` (-4): blocks above 256 KiB are large blocks, from
///   arenas up to 16 MiB and a mapping each above that, with a cache of recent mappings; the bound
///   is fixed by the class table.
/// - `M_CHECK_ACTION` (-5): a bad free is always reported and stops the process.
/// - `M_PERTURB` (-6): debug mode (`HOPLESS_DEBUG=1`) poisons freed and new blocks.
/// - `M_ARENA_TEST` (-7), `M_ARENA_MAX` (-8): there are no arenas; each thread has its magazines
///   over one central heap with a lock per class.
/// - Anything else (glibc's `M_NLBLKS`, `M_GRAIN`, `M_KEEP`, unknown numbers): 1, as glibc answers.
#[no_mangle]
pub extern "C" fn mallopt(param: c_int, value: c_int) -> c_int {
    if param == M_MXFAST {
        // glibc reads the value as a `size_t`: a negative one is huge, and refused.
        return c_int::from(usize::try_from(value).is_ok_and(|v| v <= MAX_FAST_SIZE));
    }
    1
}
