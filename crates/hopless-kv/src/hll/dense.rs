//! The dense representation: 16384 registers of 6 bits packed into 12288 bytes after the header,
//! register 0 in the low 6 bits of byte 0, each register continuing into the next byte's low bits
//! (`|11000000|22221111|33333322|`, most significant bit on the left).
//!
//! The functions here take the register bytes (the value from [`HLL_HDR_SIZE`](super::HLL_HDR_SIZE)
//! on). Redis reads one byte past the last register (the terminator its strings carry, always 0 here)
//! and writes it back unchanged; a byte missing there reads as 0 and is not written.

use super::header::{HLL_BITS, HLL_REGISTERS, HLL_REGISTER_MAX};

/// The value of register `index` (`HLL_DENSE_GET_REGISTER`).
pub(super) fn get(regs: &[u8], index: usize) -> u8 {
    let byte = index * HLL_BITS / 8;
    let fb = (index * HLL_BITS) & 7;
    let b0 = u32::from(regs[byte]);
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u32::from(HLL_REGISTER_MAX)) as u8
}

/// Sets register `index` to `val` (at most [`HLL_REGISTER_MAX`]) (`HLL_DENSE_SET_REGISTER`).
pub(super) fn set(regs: &mut [u8], index: usize, val: u8) {
    let byte = index * HLL_BITS / 8;
    let fb = (index * HLL_BITS) & 7;
    let fb8 = 8 - fb;
    let v = u32::from(val);
    let max = u32::from(HLL_REGISTER_MAX);
    regs[byte] &= !(max << fb) as u8;
    regs[byte] |= (v << fb) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next &= !(max >> fb8) as u8;
        *next |= (v >> fb8) as u8;
    }
}

/// Raises register `index` to `count` if it is lower (`hllDenseSet`); true when it changed.
pub(super) fn raise(regs: &mut [u8], index: usize, count: u8) -> bool {
    if count > get(regs, index) {
        set(regs, index, count);
        true
    } else {
        false
    }
}

/// Adds each register's value to `histo` (`hllDenseRegHisto`).
pub(super) fn histogram(regs: &[u8], histo: &mut [u64; 64]) {
    // Four registers in every three bytes.
    for c in regs[..HLL_REGISTERS * HLL_BITS / 8].chunks_exact(3) {
        let (b0, b1, b2) = (c[0], c[1], c[2]);
        histo[usize::from(b0 & 63)] += 1;
        histo[usize::from((b0 >> 6 | b1 << 2) & 63)] += 1;
        histo[usize::from((b1 >> 4 | b2 << 4) & 63)] += 1;
        histo[usize::from(b2 >> 2)] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hll::HLL_DENSE_SIZE;
    use crate::hll::HLL_HDR_SIZE;

    fn regs() -> Vec<u8> {
        vec![0u8; HLL_DENSE_SIZE - HLL_HDR_SIZE]
    }

    #[test]
    fn set_and_get_every_register_without_touching_neighbours() {
        let mut r = regs();
        let mut model = vec![0u8; HLL_REGISTERS];
        let mut x: u64 = 0x1234_5678_9abc_def1;
        for _ in 0..3 {
            for (i, m) in model.iter_mut().enumerate() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = (x & 63) as u8;
                set(&mut r, i, v);
                *m = v;
            }
            for (i, &m) in model.iter().enumerate() {
                assert_eq!(get(&r, i), m, "register {i}");
            }
            let mut h = [0u64; 64];
            histogram(&r, &mut h);
            let mut want = [0u64; 64];
            for &m in &model {
                want[usize::from(m)] += 1;
            }
            assert_eq!(h, want);
        }
    }

    #[test]
    fn layout_is_low_bits_first() {
        let mut r = regs();
        set(&mut r, 0, 0b111111);
        assert_eq!(&r[..2], &[0b0011_1111, 0]);
        set(&mut r, 1, 0b111111);
        assert_eq!(&r[..2], &[0xff, 0b0000_1111]);
        set(&mut r, HLL_REGISTERS - 1, 63);
        assert_eq!(r[r.len() - 1], 0b1111_1100);
        assert_eq!(get(&r, HLL_REGISTERS - 1), 63);
        // With the terminator byte present it stays 0.
        let mut t = regs();
        t.push(0);
        set(&mut t, HLL_REGISTERS - 1, 63);
        assert_eq!(t[t.len() - 1], 0);
    }

    #[test]
    fn raise_only_raises() {
        let mut r = regs();
        assert!(raise(&mut r, 7, 3));
        assert!(!raise(&mut r, 7, 3));
        assert!(!raise(&mut r, 7, 2));
        assert!(raise(&mut r, 7, 9));
        assert_eq!(get(&r, 7), 9);
    }
}
