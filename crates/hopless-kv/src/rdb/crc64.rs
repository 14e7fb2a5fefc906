//! Redis's CRC-64 (`crc64.c`): the Jones polynomial `0xad93d23594c935a9`, reflected, starting from the
//! caller's value with no final xor, so a stream can be summed in pieces. It closes every snapshot file
//! and DUMP payload, so it runs over whole snapshots: slicing-by-16, sixteen 256-entry tables built at
//! compile time, one table lookup per input byte and no branch per byte.

/// The polynomial with its bits reversed (the reflected form the tables shift right by).
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// `TABLES[0][b]` is the CRC of the byte `b`; `TABLES[k][b]` is that of `b` followed by `k` zero bytes,
/// so sixteen bytes fold into the CRC with sixteen lookups xored together.
static TABLES: [[u64; 256]; 16] = tables();

const fn tables() -> [[u64; 256]; 16] {
    let mut t = [[0u64; 256]; 16];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 16 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// The CRC-64 of `data` continued from `crc` (0 to start): `crc64(crc64(0, a), b) == crc64(0, a ++ b)`.
pub fn crc64(crc: u64, data: &[u8]) -> u64 {
    let t = &TABLES;
    let mut crc = crc;
    let mut chunks = data.chunks_exact(16);
    for c in &mut chunks {
        let (a, b) = c.split_at(8);
        let a = u64::from_le_bytes(a.try_into().unwrap_or([0; 8])) ^ crc;
        let b = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let byte = |v: u64, i: u32| ((v >> (8 * i)) & 0xff) as usize;
        crc = t[15][byte(a, 0)]
            ^ t[14][byte(a, 1)]
            ^ t[13][byte(a, 2)]
            ^ t[12][byte(a, 3)]
            ^ t[11][byte(a, 4)]
            ^ t[10][byte(a, 5)]
            ^ t[9][byte(a, 6)]
            ^ t[8][byte(a, 7)]
            ^ t[7][byte(b, 0)]
            ^ t[6][byte(b, 1)]
            ^ t[5][byte(b, 2)]
            ^ t[4][byte(b, 3)]
            ^ t[3][byte(b, 4)]
            ^ t[2][byte(b, 5)]
            ^ t[1][byte(b, 6)]
            ^ t[0][byte(b, 7)];
    }
    for &b in chunks.remainder() {
        crc = t[0][((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `crc64.c`'s bit-at-a-time `_crc64`, as Redis builds its tables from.
    fn reference(mut crc: u64, data: &[u8]) -> u64 {
        const POLY: u64 = 0xad93_d235_94c9_35a9;
        // `_crc64` works on the bit-reversed register and reflects it on the way out.
        crc = crc.reverse_bits();
        for &c in data {
            let mut i = 1u8;
            while i != 0 {
                let mut bit = crc & 0x8000_0000_0000_0000 != 0;
                if c & i != 0 {
                    bit = !bit;
                }
                crc <<= 1;
                if bit {
                    crc ^= POLY;
                }
                i = i.wrapping_shl(1);
            }
        }
        crc.reverse_bits()
    }

    #[test]
    fn known_vectors() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        // crc64.c's test string, its terminating NUL included (`sizeof(li)`).
        let li = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed \
do eiusmod tempor incididunt ut labore et dolore magna \
aliqua. Ut enim ad minim veniam, quis nostrud exercitation \
ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis \
aute irure dolor in reprehenderit in voluptate velit esse \
cillum dolore eu fugiat nulla pariatur. Excepteur sint \
occaecat cupidatat non proident, sunt in culpa qui officia \
deserunt mollit anim id est laborum.\0";
        assert_eq!(crc64(0, li), 0xc779_4709_e696_83b3);
        assert_eq!(reference(0, li), 0xc779_4709_e696_83b3);
        assert_eq!(crc64(0, b""), 0);
    }

    #[test]
    fn matches_bitwise_reference_and_is_incremental() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in [0, 1, 7, 15, 16, 17, 31, 32, 33, 100, 1000] {
            assert_eq!(crc64(0, &data[..len]), reference(0, &data[..len]), "len {len}");
            assert_eq!(
                crc64(12345, &data[..len]),
                reference(12345, &data[..len]),
                "len {len}"
            );
        }
        let whole = crc64(0, &data);
        for split in [0, 1, 5, 16, 17, 500, 999, 1000] {
            let (a, b) = data.split_at(split);
            assert_eq!(crc64(crc64(0, a), b), whole, "split {split}");
        }
    }

    #[test]
    fn closes_a_real_dump_payload() {
        // `DUMP s` after `SET s hello` on redis-server 7.0.15: the last 8 bytes are the CRC of the rest.
        let p = b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a";
        let (body, crc) = p.split_at(p.len() - 8);
        assert_eq!(crc64(0, body).to_le_bytes(), crc);
    }
}
