//! Redis 7.0's listpack (`listpack.c`), the packed form of small hashes, sets' neighbours, sorted sets,
//! list nodes and stream nodes in RDB: read with every check `lpValidateIntegrity` makes in its deep
//! mode, and written byte for byte as `lpAppend` and `lpAppendInteger` build it.
//!
//! Layout: total bytes (u32 LE), element count (u16 LE; 65535 means "count them"), the entries, then
//! the terminator `0xFF`. An entry is an encoding (the element), then a backlen: the encoding's size in
//! 1 to 5 bytes of 7 bits each, most significant first, every byte but the first with its top bit set,
//! so it reads backwards from the entry's end.
//!
//! | first byte | element | bytes after the first |
//! |---|---|---|
//! | `0xxxxxxx` | integer 0 to 127 | none |
//! | `10LLLLLL` | string of up to 63 bytes | the string |
//! | `110xxxxx` | 13-bit signed integer | low 8 bits |
//! | `1110LLLL` | string of up to 4095 bytes | low 8 bits of the length, the string |
//! | `0xF0` | string | length (u32 LE), the string |
//! | `0xF1` / `0xF2` / `0xF3` / `0xF4` | 16/24/32/64-bit signed integer | the integer, LE |

use super::Corrupt;
use crate::redis_util::parse_i64;

/// One element of a listpack or ziplist: an integer, or a string borrowed from the bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

const HDR_SIZE: usize = 6;
const EOF: u8 = 0xFF;
/// The header's count when the listpack holds this many entries or more.
const NUMELE_UNKNOWN: u16 = u16::MAX;

/// The size of the backlen that follows an encoding of `l` bytes (`lpEncodeBacklen`). The bounds are
/// Redis's, one of them off by one (16383 takes three bytes), and the reader expects exactly these.
fn backlen_size(l: u64) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Appends the backlen of an encoding of `l` bytes.
fn put_backlen(out: &mut Vec<u8>, l: usize) {
    let n = backlen_size(l as u64);
    for i in (0..n).rev() {
        let seven = ((l >> (7 * i)) & 127) as u8;
        // The first byte written (the most significant) has no continuation bit.
        out.push(if i == n - 1 {
            (l >> (7 * i)) as u8
        } else {
            seven | 128
        });
    }
}

/// `lpDecodeBacklen`: the backlen whose last byte is at `end`, read backwards; `None` past 5 bytes or
/// past the start of the listpack.
fn read_backlen(lp: &[u8], end: usize) -> Option<u64> {
    let mut val = 0u64;
    let mut shift = 0;
    let mut i = end;
    loop {
        let b = *lp.get(i)?;
        val |= ((b & 127) as u64) << shift;
        if b & 128 == 0 {
            return Some(val);
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
        i = i.checked_sub(1)?;
    }
}

/// How many bytes the encoding whose first byte is `b` takes before its data (`lpCurrentEncodedSizeBytes`);
/// 0 for a byte no encoding starts with.
fn header_size(b: u8) -> usize {
    match b {
        0x00..=0x7f | 0x80..=0xbf | 0xc0..=0xdf | 0xf1..=0xf4 | EOF => 1,
        0xe0..=0xef => 2,
        0xf0 => 5,
        _ => 0,
    }
}

/// The size of the encoding at `p` (`lpCurrentEncodedSizeUnsafe`), reading only its header, which
/// the caller has checked is in bounds.
fn encoded_size(lp: &[u8], p: usize) -> u64 {
    let byte = |i: usize| lp[p + i] as u64;
    match lp[p] {
        0x00..=0x7f => 1,
        b @ 0x80..=0xbf => 1 + (b & 0x3f) as u64,
        0xc0..=0xdf => 2,
        b @ 0xe0..=0xef => 2 + ((((b & 0x0f) as u64) << 8) | byte(1)),
        0xf0 => 5 + (byte(1) | byte(2) << 8 | byte(3) << 16 | byte(4) << 24),
        0xf1 => 3,
        0xf2 => 4,
        0xf3 => 5,
        _ => 9,
    }
}

/// The element of the encoding `enc` (one whose size [`encoded_size`] gave and the caller checked).
fn element(enc: &[u8]) -> Elem<'_> {
    let byte = |i: usize| enc[i] as u64;
    // The low `bits` bits of `v` as a two's complement integer.
    let sign = |v: u64, bits: u32| ((v << (64 - bits)) as i64) >> (64 - bits);
    match enc[0] {
        b @ 0x00..=0x7f => Elem::Int(b as i64),
        0x80..=0xbf => Elem::Str(&enc[1..]),
        b @ 0xc0..=0xdf => Elem::Int(sign((((b & 0x1f) as u64) << 8) | byte(1), 13)),
        0xe0..=0xef => Elem::Str(&enc[2..]),
        0xf0 => Elem::Str(&enc[5..]),
        0xf1 => Elem::Int(sign(byte(1) | byte(2) << 8, 16)),
        0xf2 => Elem::Int(sign(byte(1) | byte(2) << 8 | byte(3) << 16, 24)),
        0xf3 => Elem::Int(sign(byte(1) | byte(2) << 8 | byte(3) << 16 | byte(4) << 24, 32)),
        _ => {
            let mut v = [0u8; 8];
            v.copy_from_slice(&enc[1..9]);
            Elem::Int(i64::from_le_bytes(v))
        }
    }
}

/// A listpack's entries in order, each checked as it is reached (`lpValidateNext`): its encoding,
/// that it ends inside the listpack, and that its backlen matches. The last item is an `Err` when the
/// header is wrong (the first item then), when an entry is bad, when the terminator is not the
/// listpack's last byte, or when the header's count disagrees with the entries; a caller that must
/// not act on a corrupt listpack's entries collects them first ([`entries`]).
pub struct Iter<'a> {
    lp: &'a [u8],
    /// The next entry's offset; `None` once finished or failed.
    p: Option<usize>,
    count: u64,
    /// The header checks `lpValidateIntegrity` makes before walking: at least a header and a
    /// terminator, the byte count right, the last byte the terminator.
    header_ok: bool,
}

/// Iterates over a listpack's entries, validating as it goes (see [`Iter`]).
pub fn iter(lp: &[u8]) -> Iter<'_> {
    let header_ok = lp.len() > HDR_SIZE
        && u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize == lp.len()
        && lp[lp.len() - 1] == EOF;
    Iter {
        lp,
        p: Some(HDR_SIZE),
        count: 0,
        header_ok,
    }
}

impl<'a> Iter<'a> {
    fn step(&mut self, p: usize) -> Result<Option<Elem<'a>>, Corrupt> {
        let lp = self.lp;
        if !self.header_ok {
            return Err(Corrupt);
        }
        let last = lp.len() - 1;
        if lp[p] == EOF {
            // The walk stops at the first terminator byte: it must be the last byte.
            let numele = u16::from_le_bytes([lp[4], lp[5]]);
            if p != last || (numele != NUMELE_UNKNOWN && numele as u64 != self.count) {
                return Err(Corrupt);
            }
            return Ok(None);
        }
        let hdr = header_size(lp[p]);
        if hdr == 0 || p + hdr > last {
            return Err(Corrupt);
        }
        let size = encoded_size(lp, p);
        let end = p as u64 + size + backlen_size(size) as u64;
        if end > last as u64 {
            return Err(Corrupt);
        }
        let end = end as usize;
        if read_backlen(lp, end - 1) != Some(size) {
            return Err(Corrupt);
        }
        self.p = Some(end);
        self.count += 1;
        Ok(Some(element(&lp[p..p + size as usize])))
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Elem<'a>, Corrupt>;

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.p.take()?;
        match self.step(p) {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => None,
            Err(c) => Some(Err(c)),
        }
    }
}

/// A listpack's entries, after checking it all as Redis's `lpValidateIntegrity` does in its deep mode:
/// the header's byte count is the length, the last byte is the terminator and the only one reached,
/// every entry's encoding and backlen are right and in bounds, and the header's count (unless 65535)
/// is the number of entries.
pub fn entries(lp: &[u8]) -> Result<Vec<Elem<'_>>, Corrupt> {
    let mut out = Vec::with_capacity(lp.len() / 4);
    for e in iter(lp) {
        out.push(e?);
    }
    Ok(out)
}

/// Builds a listpack by appending, byte for byte as Redis's `lpAppend` (strings, stored as integers
/// when `lpStringToInt64` reads them as one) and `lpAppendInteger` build it.
///
/// The listpack's size goes in a u32: Redis keeps every listpack under 1 GiB, and so must the caller
/// ([`ListpackWriter::finish`] panics past 4 GiB).
#[derive(Debug, Clone)]
pub struct ListpackWriter {
    /// The header's six bytes (written by `finish`), then the entries.
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl ListpackWriter {
    pub fn new() -> Self {
        ListpackWriter {
            buf: vec![0; HDR_SIZE],
            count: 0,
        }
    }

    /// Appends a string: as an integer if it is one in Redis's canonical form (`-` and digits, no
    /// leading zero, within i64), else in the smallest string encoding.
    pub fn push_str(&mut self, s: &[u8]) {
        if let Some(v) = parse_i64(s) {
            return self.push_int(v);
        }
        let start = self.buf.len();
        let len = s.len();
        if len < 64 {
            self.buf.push(0x80 | len as u8);
        } else if len < 4096 {
            self.buf.extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        let size = self.buf.len() - start;
        put_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// Appends an integer in the smallest integer encoding (`lpEncodeIntegerGetType`).
    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        let b = v.to_le_bytes();
        match v {
            0..=127 => self.buf.push(v as u8),
            -4096..=4095 => {
                let u = (v as u64) & 0x1fff;
                self.buf.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
            }
            -32768..=32767 => self.buf.extend_from_slice(&[0xf1, b[0], b[1]]),
            -8_388_608..=8_388_607 => self.buf.extend_from_slice(&[0xf2, b[0], b[1], b[2]]),
            -2_147_483_648..=2_147_483_647 => self.buf.extend_from_slice(&[0xf3, b[0], b[1], b[2], b[3]]),
            _ => {
                self.buf.push(0xf4);
                self.buf.extend_from_slice(&b);
            }
        }
        let size = self.buf.len() - start;
        put_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// Appends an element as it was read.
    pub fn push(&mut self, e: Elem<'_>) {
        match e {
            Elem::Int(v) => self.push_int(v),
            Elem::Str(s) => self.push_str(s),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The listpack's size so far, header and terminator included.
    pub fn bytes_len(&self) -> usize {
        self.buf.len() + 1
    }

    /// The finished listpack: the header (total bytes, and the count or 65535 from 65535 entries on)
    /// and the terminator.
    ///
    /// # Panics
    ///
    /// When the listpack would exceed 4 GiB, which its u32 header cannot state.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = u32::try_from(self.buf.len()).expect("a listpack over 4 GiB");
        let count = u16::try_from(self.count).unwrap_or(NUMELE_UNKNOWN);
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The listpack of `DUMP h` after `HSET h f1 v1 f2 123 name redis` on redis-server 7.0.15.
    const HASH: &[u8] =
        b"\x22\x00\x00\x00\x06\x00\x82f1\x03\x82v1\x03\x82f2\x03{\x01\x84name\x05\x85redis\x06\xff";

    fn build(items: &[Elem<'_>]) -> Vec<u8> {
        let mut w = ListpackWriter::new();
        for &e in items {
            w.push(e);
        }
        assert_eq!(w.len(), items.len());
        w.finish()
    }

    #[test]
    fn reads_and_writes_redis_hash() {
        let want = [
            Elem::Str(b"f1"),
            Elem::Str(b"v1"),
            Elem::Str(b"f2"),
            Elem::Int(123),
            Elem::Str(b"name"),
            Elem::Str(b"redis"),
        ];
        assert_eq!(entries(HASH), Ok(want.to_vec()));
        assert_eq!(build(&want), HASH);
        let mut w = ListpackWriter::new();
        assert!(w.is_empty());
        assert_eq!(w.bytes_len(), 7);
        for s in [&b"f1"[..], b"v1", b"f2", b"123", b"name", b"redis"] {
            w.push_str(s);
        }
        assert_eq!(w.bytes_len(), HASH.len());
        assert_eq!(w.finish(), HASH);
    }

    #[test]
    fn every_encoding_round_trips() {
        let ints = [
            0,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            -32769,
            8_388_607,
            -8_388_608,
            8_388_608,
            i32::MAX as i64,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i64::MAX,
            i64::MIN,
        ];
        let sizes = [1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 9, 9, 9];
        for (&v, &size) in ints.iter().zip(&sizes) {
            let lp = build(&[Elem::Int(v)]);
            // Header, encoding, one backlen byte, terminator.
            assert_eq!(lp.len(), 6 + size + 1 + 1, "{v}");
            assert_eq!(entries(&lp), Ok(vec![Elem::Int(v)]));
            let mut w = ListpackWriter::new();
            w.push_str(v.to_string().as_bytes());
            assert_eq!(w.finish(), lp, "{v} as a string");
        }
        let long: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
        for len in [0, 1, 63, 64, 4095, 4096, 16378, 16379, 70_000] {
            let s = &long[..len];
            let lp = build(&[Elem::Str(s), Elem::Int(5), Elem::Str(s)]);
            assert_eq!(
                entries(&lp),
                Ok(vec![Elem::Str(s), Elem::Int(5), Elem::Str(s)]),
                "{len}"
            );
        }
        // Strings that are not canonical integers stay strings.
        for s in [
            &b"-0"[..],
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"-",
            b"",
        ] {
            assert_eq!(entries(&build(&[Elem::Str(s)])), Ok(vec![Elem::Str(s)]));
        }
    }

    #[test]
    fn backlen_sizes_follow_redis() {
        let mut out = Vec::new();
        for (l, bytes) in [
            (127usize, &[127u8][..]),
            (128, &[1, 128]),
            (16382, &[127, 254]),
            (16383, &[0, 255, 255]),
            (2_097_150, &[127, 255, 254]),
            (2_097_151, &[0, 255, 255, 255]),
            (268_435_455, &[0, 255, 255, 255, 255]),
        ] {
            out.clear();
            put_backlen(&mut out, l);
            assert_eq!(out, bytes, "{l}");
            assert_eq!(read_backlen(&out, out.len() - 1), Some(l as u64));
        }
        assert_eq!(read_backlen(&[255, 255, 255, 255, 255, 255], 5), None);
        assert_eq!(read_backlen(&[128, 128], 1), None);
    }

    #[test]
    fn count_saturates_at_65535() {
        let mut w = ListpackWriter::new();
        for i in 0..65_535 {
            w.push_int(i % 100);
        }
        let lp = w.clone().finish();
        assert_eq!(lp[4..6], [0xff, 0xff]);
        assert_eq!(entries(&lp).unwrap().len(), 65_535);
        let mut w2 = ListpackWriter::new();
        for i in 0..65_534 {
            w2.push_int(i % 100);
        }
        assert_eq!(w2.finish()[4..6], [0xfe, 0xff]);
        w.push_int(1);
        let lp = w.finish();
        assert_eq!(lp[4..6], [0xff, 0xff]);
        assert_eq!(entries(&lp).unwrap().len(), 65_536);
    }

    #[test]
    fn what_redis_refuses() {
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut lp = HASH.to_vec();
            f(&mut lp);
            entries(&lp).map(|e| e.len())
        };
        assert!(bad(&|_| ()).is_ok());
        // The header's byte count, the terminator, the count (65535 passes).
        assert_eq!(bad(&|lp| lp[0] += 1), Err(Corrupt));
        assert_eq!(bad(&|lp| *lp.last_mut().unwrap() = 0), Err(Corrupt));
        assert_eq!(bad(&|lp| lp[4] = 5), Err(Corrupt));
        assert!(bad(&|lp| lp[4..6].copy_from_slice(&[0xff, 0xff])).is_ok());
        // A backlen that does not match, an encoding no entry starts with, a terminator before the end.
        assert_eq!(bad(&|lp| lp[9] = 4), Err(Corrupt));
        assert_eq!(bad(&|lp| lp[6] = 0xf5), Err(Corrupt));
        assert_eq!(bad(&|lp| lp[10] = 0xff), Err(Corrupt));
        // An entry running past the terminator.
        assert_eq!(bad(&|lp| lp[26] = 0x86), Err(Corrupt));
        // The empty listpack is valid; shorter than a header and terminator is not.
        assert_eq!(entries(b"\x07\x00\x00\x00\x00\x00\xff"), Ok(vec![]));
        for n in 0..HASH.len() {
            assert_eq!(entries(&HASH[..n]), Err(Corrupt), "{n}");
        }
        // The iterator stops after its first error.
        let mut lp = HASH.to_vec();
        lp[4] = 5;
        let all: Vec<_> = iter(&lp).collect();
        assert_eq!(all.len(), 7);
        assert_eq!(all[6], Err(Corrupt));
        assert_eq!(iter(b"").collect::<Vec<_>>(), [Err(Corrupt)]);
    }
}
