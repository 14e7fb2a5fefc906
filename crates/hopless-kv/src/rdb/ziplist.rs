//! The ziplist (`ziplist.c`), the packed form of small lists, hashes and sorted sets in RDB 9 and older
//! (and of list nodes in RDB 7 to 9): read with every check `ziplistValidateIntegrity` makes in its deep
//! mode. Redis 7.0 converts what it reads to listpacks and never writes one.
//!
//! Layout: total bytes (u32 LE), the offset of the last entry (u32 LE), the entry count (u16 LE; 65535
//! means "count them"), the entries, then the terminator `0xFF`. An entry is the previous entry's size
//! (one byte below 254, else `0xFE` and a u32 LE), an encoding, and the data.
//!
//! | encoding | element | data |
//! |---|---|---|
//! | `00LLLLLL` | string of up to 63 bytes | the string |
//! | `01LLLLLL LLLLLLLL` | string of up to 16383 bytes (length big-endian) | the string |
//! | `10______` + u32 BE | string | the string |
//! | `0xC0` / `0xD0` / `0xE0` | 16/32/64-bit signed integer | LE |
//! | `0xF0` | 24-bit signed integer | LE |
//! | `0xFE` | 8-bit signed integer | one byte |
//! | `0xF1` to `0xFD` | the integer 0 to 12 (the low 4 bits less 1) | none |

use super::listpack::Elem;
use super::Corrupt;

const HEADER_SIZE: usize = 10;
const END: u8 = 0xFF;
/// A previous-entry size from this byte on takes five bytes.
const BIG_PREVLEN: u8 = 254;

/// One entry's decoded header (`zlentry`).
struct Entry {
    prevlen: u64,
    headersize: u64,
    /// The data's size.
    len: u64,
    encoding: u8,
}

/// The encoding of the entry whose encoding byte is `b` (`ZIP_ENTRY_ENCODING`): a string's is its
/// top two bits.
fn encoding(b: u8) -> u8 {
    if b < 0xc0 {
        b & 0xc0
    } else {
        b
    }
}

/// The size of the encoding field (`zipEncodingLenSize`), or 0 for no valid encoding.
fn encoding_size(enc: u8) -> usize {
    match enc {
        0xc0 | 0xd0 | 0xe0 | 0xf0 | 0xfe | 0xf1..=0xfd | 0x00 => 1,
        0x40 => 2,
        0x80 => 5,
        _ => 0,
    }
}

/// `zipEntrySafe` with its prevlen check: the entry at `p`, with its header and data inside the
/// entries' area (`zlfirst` to the terminator) and its previous-entry size not reaching before it.
fn entry_at(zl: &[u8], p: usize) -> Result<Entry, Corrupt> {
    let last = zl.len() - 1;
    if p < HEADER_SIZE || p > last {
        return Err(Corrupt);
    }
    let prevlensize = if zl[p] < BIG_PREVLEN { 1 } else { 5 };
    if p + prevlensize > last {
        return Err(Corrupt);
    }
    let enc = encoding(zl[p + prevlensize]);
    let lensize = encoding_size(enc);
    if lensize == 0 || p + prevlensize + lensize > last {
        return Err(Corrupt);
    }
    let prevlen = if prevlensize == 1 {
        zl[p] as u64
    } else {
        u32::from_le_bytes([zl[p + 1], zl[p + 2], zl[p + 3], zl[p + 4]]) as u64
    };
    let h = p + prevlensize;
    let len = match enc {
        0x00 => (zl[h] & 0x3f) as u64,
        0x40 => (((zl[h] & 0x3f) as u64) << 8) | zl[h + 1] as u64,
        0x80 => u32::from_be_bytes([zl[h + 1], zl[h + 2], zl[h + 3], zl[h + 4]]) as u64,
        0xfe => 1,
        0xc0 => 2,
        0xf0 => 3,
        0xd0 => 4,
        0xe0 => 8,
        _ => 0,
    };
    let headersize = (prevlensize + lensize) as u64;
    if p as u64 + headersize + len > last as u64 || prevlen > (p - HEADER_SIZE) as u64 {
        return Err(Corrupt);
    }
    Ok(Entry {
        prevlen,
        headersize,
        len,
        encoding: enc,
    })
}

/// The element of an entry whose data (`data`, `len` bytes) is in bounds (`zipLoadInteger` for
/// integers).
fn element(encoding: u8, data: &[u8]) -> Elem<'_> {
    let le = |n: usize| {
        let mut b = [0u8; 8];
        b[8 - n..].copy_from_slice(&data[..n]);
        // Sign-extends from the top byte of the `n` loaded.
        i64::from_le_bytes(b) >> (8 * (8 - n))
    };
    match encoding {
        0x00 | 0x40 | 0x80 => Elem::Str(data),
        0xfe => Elem::Int(le(1)),
        0xc0 => Elem::Int(le(2)),
        0xf0 => Elem::Int(le(3)),
        0xd0 => Elem::Int(le(4)),
        0xe0 => Elem::Int(le(8)),
        imm => Elem::Int(((imm & 0x0f) as i64) - 1),
    }
}

/// A ziplist's entries, after checking it all as Redis's `ziplistValidateIntegrity` does in its deep
/// mode: the header's byte count is the length, the last byte is the terminator and the first one an
/// entry walk reaches, every entry's encoding is valid and in bounds, each entry's previous-entry size
/// is the size of the entry before it (0 for the first), the tail offset points at the last entry (and
/// inside the ziplist when there is none), and the header's count (unless 65535) is the number of
/// entries.
pub fn entries(zl: &[u8]) -> Result<Vec<Elem<'_>>, Corrupt> {
    let size = zl.len();
    if size < HEADER_SIZE + 1 {
        return Err(Corrupt);
    }
    let u32_at = |i: usize| u32::from_le_bytes([zl[i], zl[i + 1], zl[i + 2], zl[i + 3]]) as usize;
    let tail = u32_at(4);
    if u32_at(0) != size || zl[size - 1] != END || tail > size - 1 {
        return Err(Corrupt);
    }
    let header_count = u16::from_le_bytes([zl[8], zl[9]]);
    let mut out = Vec::with_capacity(size / 4);
    let mut p = HEADER_SIZE;
    let mut prev = None;
    let mut prev_raw_size = 0u64;
    // `p` stays at or before the terminator: every entry ends at or before it.
    while zl[p] != END {
        let e = entry_at(zl, p)?;
        if e.prevlen != prev_raw_size {
            return Err(Corrupt);
        }
        let data_start = p + e.headersize as usize;
        let data_end = data_start + e.len as usize;
        out.push(element(e.encoding, &zl[data_start..data_end]));
        prev_raw_size = e.headersize + e.len;
        prev = Some(p);
        p = data_end;
    }
    if p != size - 1 || prev.is_some_and(|q| q != tail) {
        return Err(Corrupt);
    }
    if header_count != u16::MAX && out.len() != header_count as usize {
        return Err(Corrupt);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ziplist in Redis's `tests/assets/hash-ziplist.rdb` (RDB 9): `f1 v1 f2 v2`.
    const HASH: &[u8] =
        b"\x1b\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02f1\x04\x02v1\x04\x02f2\x04\x02v2\xff";
    /// The ziplist in `tests/assets/list-quicklist.rdb` (RDB 8): the one element 7, a 4-bit immediate.
    const SEVEN: &[u8] = b"\x0d\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\xf8\xff";

    /// Builds a ziplist as Redis's `__ziplistInsert` at the tail does (integers in the smallest
    /// encoding `zipTryEncoding` picks), with every prevlen in `big` bytes forced to five bytes.
    fn build(items: &[Elem<'_>], big: bool) -> Vec<u8> {
        let mut zl = vec![0u8; HEADER_SIZE];
        let mut prev_size = 0usize;
        let mut tail = HEADER_SIZE;
        for &e in items {
            let start = zl.len();
            tail = start;
            if prev_size < 254 && !big {
                zl.push(prev_size as u8);
            } else {
                zl.push(BIG_PREVLEN);
                zl.extend_from_slice(&(prev_size as u32).to_le_bytes());
            }
            match e {
                Elem::Int(v @ 0..=12) => zl.push(0xf1 + v as u8),
                Elem::Int(v) => {
                    let (enc, n) = match v {
                        -128..=127 => (0xfe, 1),
                        -32768..=32767 => (0xc0, 2),
                        -8_388_608..=8_388_607 => (0xf0, 3),
                        -2_147_483_648..=2_147_483_647 => (0xd0, 4),
                        _ => (0xe0, 8),
                    };
                    zl.push(enc);
                    zl.extend_from_slice(&v.to_le_bytes()[..n]);
                }
                Elem::Str(s) => {
                    let n = s.len();
                    if n <= 0x3f {
                        zl.push(n as u8);
                    } else if n <= 0x3fff {
                        zl.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
                    } else {
                        zl.push(0x80);
                        zl.extend_from_slice(&(n as u32).to_be_bytes());
                    }
                    zl.extend_from_slice(s);
                }
            }
            prev_size = zl.len() - start;
        }
        zl.push(END);
        let total = zl.len() as u32;
        zl[..4].copy_from_slice(&total.to_le_bytes());
        zl[4..8].copy_from_slice(&(tail as u32).to_le_bytes());
        zl[8..10].copy_from_slice(&(items.len().min(65535) as u16).to_le_bytes());
        zl
    }

    #[test]
    fn reads_redis_ziplists() {
        let want = [
            Elem::Str(b"f1"),
            Elem::Str(b"v1"),
            Elem::Str(b"f2"),
            Elem::Str(b"v2"),
        ];
        assert_eq!(entries(HASH), Ok(want.to_vec()));
        assert_eq!(build(&want, false), HASH);
        assert_eq!(entries(SEVEN), Ok(vec![Elem::Int(7)]));
        assert_eq!(build(&[Elem::Int(7)], false), SEVEN);
    }

    #[test]
    fn every_encoding_round_trips() {
        let long: Vec<u8> = (0..70_000u32).map(|i| (i * 7) as u8).collect();
        let mut items: Vec<Elem<'_>> = [
            0,
            12,
            13,
            -1,
            127,
            -128,
            128,
            32767,
            -32768,
            32768,
            8_388_607,
            -8_388_608,
            8_388_608,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i64::MIN,
            i64::MAX,
        ]
        .iter()
        .map(|&v| Elem::Int(v))
        .collect();
        for len in [0, 1, 63, 64, 300, 16383, 16384, 70_000] {
            items.push(Elem::Str(&long[..len]));
        }
        for big in [false, true] {
            assert_eq!(entries(&build(&items, big)), Ok(items.clone()));
        }
        assert_eq!(entries(&build(&[], false)), Ok(vec![]));
    }

    #[test]
    fn what_redis_refuses() {
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut zl = HASH.to_vec();
            f(&mut zl);
            entries(&zl).map(|e| e.len())
        };
        assert!(bad(&|_| ()).is_ok());
        // Byte count, terminator, tail offset (wrong, or past the end), count (65535 passes).
        assert_eq!(bad(&|zl| zl[0] = 0x1c), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[26] = 0), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[4] = 0x15), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[4] = 0x1b), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[8] = 3), Err(Corrupt));
        assert!(bad(&|zl| zl[8..10].copy_from_slice(&[0xff, 0xff])).is_ok());
        // A prevlen that disagrees, an invalid encoding, a string past the end, a terminator early.
        assert_eq!(bad(&|zl| zl[14] = 3), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[11] = 0xc1), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[11] = 0x3f), Err(Corrupt));
        assert_eq!(bad(&|zl| zl[14] = 0xff), Err(Corrupt));
        // The first entry's prevlen must be 0.
        assert_eq!(bad(&|zl| zl[10] = 1), Err(Corrupt));
        for n in 0..HASH.len() {
            assert_eq!(entries(&HASH[..n]), Err(Corrupt), "{n}");
        }
        // An empty ziplist's tail may point anywhere inside it.
        let mut empty = build(&[], false);
        assert_eq!(entries(&empty), Ok(vec![]));
        empty[4] = 10;
        assert_eq!(entries(&empty), Ok(vec![]));
        empty[4] = 11;
        assert_eq!(entries(&empty), Err(Corrupt));
    }

    #[test]
    fn adversarial_bytes_never_panic() {
        let long = [b'z'; 300];
        let items = [
            Elem::Int(-70000),
            Elem::Str(&long),
            Elem::Int(3),
            Elem::Str(b"ab"),
            Elem::Int(i64::MIN),
        ];
        let good = build(&items, true);
        let mut seed = 0xabcd_ef01_2345_6789u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in 0..good.len() {
            assert_eq!(entries(&good[..n]), Err(Corrupt));
        }
        for _ in 0..20_000 {
            let mut b = good.clone();
            for _ in 0..1 + rnd() % 3 {
                let i = rnd() as usize % b.len();
                b[i] = rnd() as u8;
            }
            let _ = entries(&b);
        }
    }
}
