//! The intset (`intset.c`), the packed form of a small set of integers (`RDB_TYPE_SET_INTSET`): read
//! with every check `intsetValidateIntegrity` makes in its deep mode.
//!
//! Layout: the width of every member in bytes (u32 LE: 2, 4 or 8), the member count (u32 LE), then the
//! members as little-endian signed integers of that width, strictly ascending.

use super::Corrupt;

/// An intset's members, after checking it as Redis's `intsetValidateIntegrity` does in its deep mode:
/// a known width, a size of exactly the header and the members, at least one member, and every member
/// greater than the one before.
pub fn members(is: &[u8]) -> Result<Vec<i64>, Corrupt> {
    if is.len() < 8 {
        return Err(Corrupt);
    }
    let width = u32::from_le_bytes([is[0], is[1], is[2], is[3]]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err(Corrupt);
    }
    let count = u32::from_le_bytes([is[4], is[5], is[6], is[7]]) as u64;
    if 8 + count * width as u64 != is.len() as u64 || count == 0 {
        return Err(Corrupt);
    }
    let mut out: Vec<i64> = Vec::with_capacity(count as usize);
    for m in is[8..].chunks_exact(width) {
        let mut b = [0u8; 8];
        b[8 - width..].copy_from_slice(m);
        // Sign-extends from the member's top byte.
        let v = i64::from_le_bytes(b) >> (8 * (8 - width));
        if out.last().is_some_and(|&prev| v <= prev) {
            return Err(Corrupt);
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_intsets() {
        // The bodies of `DUMP` (after the type byte 0x0B and the string's length) on redis-server
        // 7.0.15 of `SADD si 3 1 2 -7`, `SADD si32 100000 1 -100000`, `SADD si64 10000000000 1`.
        let si = b"\x02\x00\x00\x00\x04\x00\x00\x00\xf9\xff\x01\x00\x02\x00\x03\x00";
        assert_eq!(members(si), Ok(vec![-7, 1, 2, 3]));
        let si32 = b"\x04\x00\x00\x00\x03\x00\x00\x00`y\xfe\xff\x01\x00\x00\x00\xa0\x86\x01\x00";
        assert_eq!(members(si32), Ok(vec![-100000, 1, 100000]));
        let si64 =
            b"\x08\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xe4\x0bT\x02\x00\x00\x00";
        assert_eq!(members(si64), Ok(vec![1, 10_000_000_000]));
    }

    #[test]
    fn what_redis_refuses() {
        let ok = b"\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x02\x00";
        assert!(members(ok).is_ok());
        // Empty, unknown width, size off by one either way, duplicates, descending.
        assert_eq!(members(b"\x02\x00\x00\x00\x00\x00\x00\x00"), Err(Corrupt));
        assert_eq!(
            members(b"\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x02"),
            Err(Corrupt)
        );
        assert_eq!(members(&ok[..11]), Err(Corrupt));
        assert_eq!(members(&[&ok[..], b"\x00"].concat()), Err(Corrupt));
        assert_eq!(
            members(b"\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x01\x00"),
            Err(Corrupt)
        );
        assert_eq!(
            members(b"\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00"),
            Err(Corrupt)
        );
        // A count whose size overflows 32 bits.
        assert_eq!(members(b"\x08\x00\x00\x00\xff\xff\xff\xff\x01\x00"), Err(Corrupt));
        for n in 0..ok.len() {
            assert_eq!(members(&ok[..n]), Err(Corrupt));
        }
    }
}
