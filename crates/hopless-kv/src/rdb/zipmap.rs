//! The zipmap (`zipmap.c`), the packed form of small hashes in RDB 3 and older
//! (`RDB_TYPE_HASH_ZIPMAP`): read with every check `zipmapValidateIntegrity` makes in its deep mode.
//! Redis 7.0 converts what it reads and never writes one.
//!
//! Layout: the pair count (one byte; 254 or more means "count them"), then per pair the field's length,
//! the field, the value's length, a free-byte count, the value and that many unused bytes; then the
//! terminator `0xFF`. A length below 254 is one byte, else `0xFE` and a u32 in host order (little-endian
//! on every machine Redis's files come from).

use super::Corrupt;

/// A field and its value, borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

const BIGLEN: u8 = 254;
const END: u8 = 0xFF;

/// A zipmap's field/value pairs, after checking it as Redis's `zipmapValidateIntegrity` does in its
/// deep mode: the last byte is the terminator, every length and string lies inside, a length below
/// 254 is not written in five bytes, there is at least one pair, and the count byte (unless 254 or
/// more) is the number of pairs. The walk ends at the first terminator it reaches; as in Redis, what
/// lies between that and the last byte is not looked at.
///
/// Redis adds a value's length and its free count in 32 bits, so a length near 4 GiB can wrap there;
/// here it cannot, and such a zipmap is corrupt.
pub fn pairs(zm: &[u8]) -> Result<Vec<Pair<'_>>, Corrupt> {
    let size = zm.len();
    if size < 2 || zm[size - 1] != END {
        return Err(Corrupt);
    }
    let last = (size - 1) as u64;
    // Redis's `OUT_OF_RANGE`: before the first entry, or past the terminator.
    let check = |p: u64| {
        if p < 2 || p > last {
            Err(Corrupt)
        } else {
            Ok(p as usize)
        }
    };
    // A length at `p` (known in bounds with its four extra bytes when it has them): its value and size.
    let length = |p: usize| -> Result<(u64, u64), Corrupt> {
        let s = if zm[p] < BIGLEN { 1 } else { 5 };
        check(p as u64 + s)?;
        let l = if s == 1 {
            zm[p] as u64
        } else {
            u32::from_le_bytes([zm[p + 1], zm[p + 2], zm[p + 3], zm[p + 4]]) as u64
        };
        if l < BIGLEN as u64 && s != 1 {
            return Err(Corrupt);
        }
        Ok((l, s))
    };
    let mut out = Vec::new();
    let mut p = 1usize;
    while zm[p] != END {
        let (l, s) = length(p)?;
        let field = p + s as usize;
        p = check(field as u64 + l)?;
        let (vl, vs) = length(p)?;
        let free = zm[p + vs as usize] as u64;
        let value = p + vs as usize + 1;
        p = check(value as u64 + vl + free)?;
        out.push((&zm[field..field + l as usize], &zm[value..value + vl as usize]));
    }
    if out.is_empty() || (zm[0] < BIGLEN && zm[0] as usize != out.len()) {
        return Err(Corrupt);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zipmap in Redis's `tests/assets/hash-zipmap.rdb` (RDB 3): `hash` with `f1 v1`, `f2 v2`.
    const HASH_ZIPMAP: &[u8] = b"\x02\x02f1\x02\x00v1\x02f2\x02\x00v2\xff";

    #[test]
    fn redis_zipmap() {
        assert_eq!(
            pairs(HASH_ZIPMAP),
            Ok(vec![(&b"f1"[..], &b"v1"[..]), (&b"f2"[..], &b"v2"[..])])
        );
        // zipmap.c's own example, and free bytes after a value.
        let ex = b"\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff";
        assert_eq!(pairs(ex).unwrap()[1], (&b"hello"[..], &b"world"[..]));
        let free = b"\x01\x01a\x01\x02bxy\xff";
        assert_eq!(pairs(free), Ok(vec![(&b"a"[..], &b"b"[..])]));
        // Bytes after the terminator the walk reaches are not looked at, as in Redis.
        assert_eq!(
            pairs(b"\x01\x01a\x01\x00b\xff\x07\xff"),
            Ok(vec![(&b"a"[..], &b"b"[..])])
        );
        // A 254-byte value takes the five-byte length; a count byte of 254 means "count them".
        let v = vec![b'v'; 300];
        let mut big = vec![254, 1, b'k', 254];
        big.extend_from_slice(&300u32.to_le_bytes());
        big.push(0);
        big.extend_from_slice(&v);
        big.push(0xff);
        assert_eq!(pairs(&big), Ok(vec![(&b"k"[..], &v[..])]));
    }

    #[test]
    fn what_redis_refuses() {
        // Empty; wrong count; no terminator; a short length in five bytes; free bytes past the end.
        assert_eq!(pairs(b"\x00\xff"), Err(Corrupt));
        assert_eq!(pairs(b"\x03\x01a\x01\x00b\xff"), Err(Corrupt));
        assert_eq!(pairs(b"\x01\x01a\x01\x00b"), Err(Corrupt));
        assert_eq!(pairs(b"\x01\xfe\x01\x00\x00\x00a\x01\x00b\xff"), Err(Corrupt));
        assert_eq!(pairs(b"\x01\x01a\x01\x05b\xff"), Err(Corrupt));
        // A value length that wraps in 32 bits with its free count.
        assert_eq!(pairs(b"\x01\x01a\xfe\xff\xff\xff\xff\x01b\xff"), Err(Corrupt));
        for n in 0..HASH_ZIPMAP.len() {
            assert_eq!(pairs(&HASH_ZIPMAP[..n]), Err(Corrupt));
        }
    }
}
