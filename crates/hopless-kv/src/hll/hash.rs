//! The element hash: MurmurHash64A as Redis writes it, and the register and zero-run length an element
//! maps to.

use super::header::{HLL_P, HLL_P_MASK, HLL_Q};

/// The seed Redis hashes elements with.
pub const HASH_SEED: u32 = 0xadc8_3b19;

/// MurmurHash64A (64-bit MurmurHash2) as Redis computes it on x86-64: the body is read 8 bytes at a time,
/// little-endian; the 1 to 7 tail bytes are mixed in little-endian order too.
pub fn murmur_hash64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // Redis passes the length as a C `int`, then widens it to 64 bits (sign-extending) to multiply.
    let len = key.len() as i32 as i64 as u64;
    let mut h = u64::from(seed) ^ len.wrapping_mul(M);

    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        let mut k = u64::from_le_bytes(b);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }

    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Redis's `hllPatLen`: the register an element lands in (the hash's low [`HLL_P`] bits) and the length
/// of the `000..1` pattern in the hash's remaining bits, the final 1 counted (1 to `HLL_Q + 1`).
pub fn pattern_len(element: &[u8]) -> (usize, u8) {
    let hash = murmur_hash64a(element, HASH_SEED);
    let index = (hash & HLL_P_MASK as u64) as usize;
    // A bit past the last one used makes the run end by Q + 1 at the latest.
    let rest = (hash >> HLL_P) | (1u64 << HLL_Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hll::tests::element_for;

    #[test]
    fn murmur_matches_redis() {
        // Registers and runs read back from redis-server 7.0.15 with PFDEBUG GETREG after PFADD.
        assert_eq!(pattern_len(b"a"), (12711, 2));
        assert_eq!(pattern_len(b"b"), (15780, 1));
        assert_eq!(pattern_len(b"c"), (8436, 1));
    }

    #[test]
    fn crafted_elements_land_where_asked() {
        for (i, c) in [(0, 1), (5, 40), (16383, 51), (1234, 33), (77, 32)] {
            assert_eq!(pattern_len(&element_for(i, c)), (i, c));
        }
    }
}
