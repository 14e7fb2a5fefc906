//! The profile as pprof reads it: a gzip'd `Profile` protobuf (pprof's `profile.proto`), written
//! without allocating, so that a dump can run at exit, from a signal handler or in a forked child.
//!
//! Four values per sample, as Go's heap profiles have them: `alloc_objects`, `alloc_space` (everything
//! the stack allocated since the start), `inuse_objects`, `inuse_space` (what of it is still in use;
//! the default). Each sample's stack is its site's call sites, innermost first; each location is one
//! address (a return address minus one, so it names the call) with the mapping that holds it, read
//! from `/proc/self/maps`; nothing is symbolized here: `pprof`, `go tool pprof` and `hopless prof`
//! read each module's own symbols and line tables. `drop_frames` names the allocator's own entry points
//! for a program that links hopless in (a Rust `#[global_allocator]`), whose frames the walk cannot
//! tell from the program's.
//!
//! The gzip stream uses stored (uncompressed) deflate blocks: valid for every gzip reader, with
//! nothing to allocate for a compressor; a profile is a few hundred KiB at most.

use core::ffi::CStr;

use super::sampler::BLOCK_SCALE;
use super::table::{Site, Tables, MAX_DEPTH};
use crate::platform::{OsPages, PageSource, PAGE_SIZE};

/// A stored deflate block holds at most this many bytes.
const BLOCK: usize = 65535;
/// Executable mappings listed at most.
const MAX_MAPPINGS: usize = 4096;
/// `/proc/self/maps` read at most.
const MAPS_BYTES: usize = 4 << 20;

const STRINGS: [&[u8]; 10] = [
    b"",
    b"alloc_objects",
    b"count",
    b"alloc_space",
    b"bytes",
    b"inuse_objects",
    b"inuse_space",
    b"space",
    b"hopless heap profile",
    b"__rust_alloc|__rust_alloc_zeroed|__rust_realloc|__rg_alloc|__rg_alloc_zeroed|__rg_realloc|\
      __rdl_alloc|__rdl_alloc_zeroed|__rdl_realloc|hopless::.*",
];
const S_COUNT: u64 = 2;
const S_BYTES: u64 = 4;
const S_SPACE: u64 = 7;
const S_COMMENT: u64 = 8;
const S_DROP: u64 = 9;
const S_INUSE_SPACE: u64 = 6;

/// A CRC-32 (gzip's polynomial) table, made at compile time.
#[allow(clippy::indexing_slicing)] // evaluated at compile time: a bad index fails the build
static CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

fn crc32(mut crc: u32, bytes: &[u8]) -> u32 {
    crc = !crc;
    for &b in bytes {
        let i = ((crc ^ b as u32) & 0xff) as usize;
        crc = CRC_TABLE.get(i).copied().unwrap_or(0) ^ (crc >> 8);
    }
    !crc
}

/// Memory of the dump's own, from the OS, given back when dropped.
struct Scratch {
    base: *mut u8,
    len: usize,
}

impl Scratch {
    fn new(len: usize) -> Option<Scratch> {
        let len = len.next_multiple_of(PAGE_SIZE);
        let base = OsPages.reserve(len, PAGE_SIZE);
        (!base.is_null()).then_some(Scratch { base, len })
    }

    /// The memory as `n` values of `T` (zeroed: any `T` valid as zero bytes).
    fn slice<T: Copy>(&mut self, n: usize) -> &mut [T] {
        let n = n.min(self.len / core::mem::size_of::<T>().max(1));
        // SAFETY: the reservation is `len` zeroed bytes, page-aligned (so aligned for `T`), ours alone
        // while `self` lives; `n` values fit in it; callers use only zero-valid integer types.
        unsafe { core::slice::from_raw_parts_mut(self.base.cast::<T>(), n) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: the whole reservation made in `new`, no longer used.
        unsafe { OsPages.release(self.base, self.len, PAGE_SIZE) }
    }
}

/// The gzip stream into a file: stored blocks, the CRC and the length at the end.
struct Gzip<'a> {
    fd: libc::c_int,
    buf: &'a mut [u8],
    n: usize,
    crc: u32,
    total: u32,
    ok: bool,
}

fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is readable for its length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            // SAFETY: errno of this thread.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return false;
        }
        bytes = bytes.get(n as usize..).unwrap_or_default();
    }
    true
}

impl Gzip<'_> {
    fn put(&mut self, mut bytes: &[u8]) {
        self.crc = crc32(self.crc, bytes);
        self.total = self.total.wrapping_add(bytes.len() as u32);
        while !bytes.is_empty() {
            let room = BLOCK - self.n;
            let k = room.min(bytes.len());
            if let (Some(dst), Some(src)) = (self.buf.get_mut(self.n..self.n + k), bytes.get(..k)) {
                dst.copy_from_slice(src);
            }
            self.n += k;
            bytes = bytes.get(k..).unwrap_or_default();
            if self.n == BLOCK {
                self.block(false);
            }
        }
    }

    fn block(&mut self, last: bool) {
        let len = self.n as u16;
        let head = [
            last as u8,
            len as u8,
            (len >> 8) as u8,
            !len as u8,
            (!len >> 8) as u8,
        ];
        self.ok &=
            write_all(self.fd, &head) && write_all(self.fd, self.buf.get(..self.n).unwrap_or_default());
        self.n = 0;
    }

    fn finish(&mut self) -> bool {
        self.block(true);
        let mut tail = [0u8; 8];
        tail[..4].copy_from_slice(&self.crc.to_le_bytes());
        tail[4..].copy_from_slice(&self.total.to_le_bytes());
        self.ok && write_all(self.fd, &tail)
    }
}

/// A protobuf message built on the stack.
struct Pb {
    b: [u8; 1024],
    n: usize,
}

impl Pb {
    fn new() -> Pb {
        Pb { b: [0; 1024], n: 0 }
    }
    fn byte(&mut self, x: u8) {
        if let Some(d) = self.b.get_mut(self.n) {
            *d = x;
            self.n += 1;
        }
    }
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }
    fn uint(&mut self, field: u64, v: u64) {
        self.varint(field << 3);
        self.varint(v);
    }
    fn bytes(&mut self, field: u64, data: &[u8]) {
        self.varint((field << 3) | 2);
        self.varint(data.len() as u64);
        for &x in data {
            self.byte(x);
        }
    }
    fn as_bytes(&self) -> &[u8] {
        self.b.get(..self.n).unwrap_or_default()
    }
}

/// Writes field `field` of the top-level `Profile` (a length-delimited one) into the stream.
fn top(gz: &mut Gzip<'_>, field: u64, payload: &[u8]) {
    let mut head = Pb::new();
    head.varint((field << 3) | 2);
    head.varint(payload.len() as u64);
    gz.put(head.as_bytes());
    gz.put(payload);
}

/// Writes a top-level integer field.
fn top_int(gz: &mut Gzip<'_>, field: u64, v: u64) {
    let mut m = Pb::new();
    m.uint(field, v);
    gz.put(m.as_bytes());
}

#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Mapping {
    start: usize,
    end: usize,
    offset: usize,
    /// The path: `maps[path_at..path_at + path_len]`.
    path_at: usize,
    path_len: usize,
}

fn hex(s: &[u8]) -> usize {
    s.iter().fold(0usize, |v, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => 0,
        };
        (v << 4) | d as usize
    })
}

/// Reads `/proc/self/maps` into `text`; returns its length.
fn read_maps(text: &mut [u8]) -> usize {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return 0;
    }
    let mut n = 0;
    while let Some(rest) = text.get_mut(n..) {
        if rest.is_empty() {
            break;
        }
        // SAFETY: `rest` is writable for its length.
        let k = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        if k <= 0 {
            break;
        }
        n += k as usize;
    }
    // SAFETY: the descriptor opened above.
    unsafe { libc::close(fd) };
    n
}

/// The executable mappings with a name, from the text of `/proc/self/maps`.
fn parse_maps(text: &[u8], out: &mut [Mapping]) -> usize {
    let mut n = 0;
    let mut at = 0;
    for line in text.split(|&c| c == b'\n') {
        let line_at = at;
        at += line.len() + 1;
        let mut fields = line.split(|&c| c == b' ').filter(|f| !f.is_empty());
        let (Some(range), Some(perms), Some(offset), Some(_dev), Some(_inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        let Some(path) = fields.next() else { continue };
        if perms.get(2) != Some(&b'x') {
            continue;
        }
        let mut ends = range.split(|&c| c == b'-');
        let (Some(lo), Some(hi)) = (ends.next(), ends.next()) else {
            continue;
        };
        // The path runs to the end of the line (it may hold spaces).
        let path_at = line_at + (path.as_ptr().addr() - line.as_ptr().addr());
        let Some(slot) = out.get_mut(n) else { break };
        *slot = Mapping {
            start: hex(lo),
            end: hex(hi),
            offset: hex(offset),
            path_at,
            path_len: line_at + line.len() - path_at,
        };
        n += 1;
    }
    n
}

/// Writes the profile of `t` to the open file `fd`; false when a write failed or no scratch memory
/// could be had.
pub fn write(fd: libc::c_int, t: &Tables, interval: usize) -> bool {
    let frames: usize = t.sites().map(|s| s.depth.max(1)).sum();
    let cap = (frames * 2).next_power_of_two().max(64);
    let Some(mut out_mem) = Scratch::new(BLOCK) else {
        return false;
    };
    let Some(mut maps_mem) = Scratch::new(MAPS_BYTES) else {
        return false;
    };
    let Some(mut map_list) = Scratch::new(MAX_MAPPINGS * core::mem::size_of::<Mapping>()) else {
        return false;
    };
    let Some(mut keys_mem) = Scratch::new(cap * 8) else {
        return false;
    };
    let Some(mut ids_mem) = Scratch::new(cap * 4) else {
        return false;
    };
    let text = maps_mem.slice::<u8>(MAPS_BYTES);
    let text_len = read_maps(text);
    let text = text.get(..text_len).unwrap_or_default();
    let mappings = map_list.slice::<usize>(MAX_MAPPINGS * 5);
    let maps = {
        // SAFETY: `Mapping` is five `usize`s (`repr(C)`), so the zeroed words are valid
        // `Mapping`s; the slice covers MAX_MAPPINGS of them inside the scratch.
        unsafe { core::slice::from_raw_parts_mut(mappings.as_mut_ptr().cast::<Mapping>(), MAX_MAPPINGS) }
    };
    let n_maps = parse_maps(text, maps);
    let maps = maps.get(..n_maps).unwrap_or_default();
    let keys = keys_mem.slice::<usize>(cap);
    let ids = ids_mem.slice::<u32>(cap);

    let mut gz = Gzip {
        fd,
        buf: out_mem.slice::<u8>(BLOCK),
        n: 0,
        crc: 0,
        total: 0,
        ok: true,
    };
    // gzip's header: magic, deflate, no flags, no time, no extra flags, Unix.
    gz.ok &= write_all(fd, &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    for s in STRINGS {
        top(&mut gz, 6, s);
    }
    let mut strings = STRINGS.len() as u64;
    for (ty, unit) in [(1, S_COUNT), (3, S_BYTES), (5, S_COUNT), (S_INUSE_SPACE, S_BYTES)] {
        let mut m = Pb::new();
        m.uint(1, ty);
        m.uint(2, unit);
        top(&mut gz, 1, m.as_bytes());
    }
    let mut period_type = Pb::new();
    period_type.uint(1, S_SPACE);
    period_type.uint(2, S_BYTES);
    top(&mut gz, 11, period_type.as_bytes());
    top_int(&mut gz, 12, interval as u64);
    top_int(&mut gz, 9, now_ns());
    top_int(&mut gz, 7, S_DROP);
    top_int(&mut gz, 14, S_INUSE_SPACE);
    {
        // `comment` is a repeated int64: packed, as proto3 writes it.
        let mut c = Pb::new();
        c.varint(S_COMMENT);
        top(&mut gz, 13, c.as_bytes());
    }
    for (i, m) in maps.iter().enumerate() {
        top(
            &mut gz,
            6,
            text.get(m.path_at..m.path_at + m.path_len).unwrap_or_default(),
        );
        let mut pb = Pb::new();
        pb.uint(1, i as u64 + 1);
        pb.uint(2, m.start as u64);
        pb.uint(3, m.end as u64);
        pb.uint(4, m.offset as u64);
        pb.uint(5, strings);
        strings += 1;
        top(&mut gz, 3, pb.as_bytes());
    }
    let mut next_id = 1u32;
    for site in t.sites() {
        write_site(&mut gz, site, maps, keys, ids, &mut next_id);
    }
    gz.finish()
}

/// Writes one site's sample, and each of its locations not written yet.
fn write_site(
    gz: &mut Gzip<'_>,
    site: &Site,
    maps: &[Mapping],
    keys: &mut [usize],
    ids: &mut [u32],
    next_id: &mut u32,
) {
    let values = [
        (site.alloc_blocks + BLOCK_SCALE / 2) / BLOCK_SCALE,
        site.alloc_bytes,
        (site.live_blocks + BLOCK_SCALE / 2) / BLOCK_SCALE,
        site.live_bytes,
    ];
    if values.iter().all(|&v| v == 0) {
        return;
    }
    let mut locs = Pb::new();
    for &pc in site.frames.get(..site.depth.min(MAX_DEPTH)).unwrap_or_default() {
        let id = location_id(gz, pc, maps, keys, ids, next_id);
        locs.varint(id as u64);
    }
    let mut vals = Pb::new();
    for v in values {
        vals.varint(v);
    }
    let mut sample = Pb::new();
    sample.bytes(1, locs.as_bytes());
    sample.bytes(2, vals.as_bytes());
    top(gz, 2, sample.as_bytes());
}

/// The location id of `pc`, writing its `Location` the first time it is seen.
fn location_id(
    gz: &mut Gzip<'_>,
    pc: usize,
    maps: &[Mapping],
    keys: &mut [usize],
    ids: &mut [u32],
    next_id: &mut u32,
) -> u32 {
    let mask = keys.len() - 1;
    let mut i = (pc.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) & mask;
    // The table has room for twice the frames there are, so a free slot is always found.
    for _ in 0..keys.len() {
        match keys.get(i).copied() {
            Some(k) if k == pc => return ids.get(i).copied().unwrap_or(0),
            Some(0) => {
                let id = *next_id;
                *next_id += 1;
                if let (Some(k), Some(d)) = (keys.get_mut(i), ids.get_mut(i)) {
                    *k = pc;
                    *d = id;
                }
                let mut loc = Pb::new();
                loc.uint(1, id as u64);
                if let Some(m) = maps.iter().position(|m| m.start <= pc && pc < m.end) {
                    loc.uint(2, m as u64 + 1);
                }
                loc.uint(3, pc as u64);
                top(gz, 4, loc.as_bytes());
                return id;
            }
            _ => i = (i + 1) & mask,
        }
    }
    0
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Writes the profile to `path` (through `path` with `.tmp` added, renamed when complete, so a reader
/// never sees half a profile); the OS's error number on failure.
pub fn write_file(path: &CStr, t: &Tables, interval: usize) -> Result<(), i32> {
    let p = path.to_bytes();
    let mut tmp = [0u8; 4096];
    let suffix = b".tmp\0";
    if p.len() + suffix.len() > tmp.len() {
        return Err(libc::ENAMETOOLONG);
    }
    for (d, &c) in tmp.iter_mut().zip(p.iter().chain(suffix.iter())) {
        *d = c;
    }
    let errno = || {
        // SAFETY: errno of this thread.
        unsafe { *libc::__errno_location() }
    };
    // SAFETY: `tmp` is NUL-terminated; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            tmp.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    let ok = write(fd, t, interval);
    let e = errno();
    // SAFETY: the descriptor opened above; both paths NUL-terminated.
    unsafe {
        libc::close(fd);
        if !ok {
            libc::unlink(tmp.as_ptr().cast());
            return Err(if e == 0 { libc::EIO } else { e });
        }
        if libc::rename(tmp.as_ptr().cast(), path.as_ptr()) != 0 {
            let e = errno();
            libc::unlink(tmp.as_ptr().cast());
            return Err(e);
        }
    }
    Ok(())
}
