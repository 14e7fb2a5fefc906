//! PFSELFTEST: the dense registers read back what was written, and the sparse and dense values count
//! the same, within six standard errors, from 1 to 10 million elements.

use super::add::add;
use super::count::count;
use super::dense;
use super::error::HllError;
use super::hash::pattern_len;
use super::header::{invalidate_cache, validate, Encoding, HLL_DENSE_SIZE, HLL_HDR_SIZE, HLL_REGISTERS};
use super::header::{HLL_REGISTER_MAX, MAGIC};
use super::sparse::new_sparse;

/// Rounds of Test 1 (every register set at random, then read back).
const TEST_CYCLES: u32 = 1000;
/// Elements added in Test 2.
const TEST_ELEMENTS: u64 = 10_000_000;

/// PFSELFTEST, with random numbers drawn from `seed` (Redis uses `rand()`): `Ok` for Redis's `+OK`, or
/// Redis's error reply (`ERR TESTFAILED ...`). `sparse_max_bytes` is `hll-sparse-max-bytes`, which the
/// sparse value under test grows by. Takes about a second: it adds 10 million elements twice.
pub fn self_test(seed: u64, sparse_max_bytes: usize) -> Result<(), String> {
    run(seed, sparse_max_bytes, TEST_CYCLES, TEST_ELEMENTS)
}

/// SplitMix64: Redis's `rand()` stand-in.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

pub(super) fn run(seed: u64, sparse_max_bytes: usize, cycles: u32, elements: u64) -> Result<(), String> {
    let mut rng = Rng(seed);
    let mut bitcounters = vec![0u8; HLL_DENSE_SIZE];
    let mut bytecounters = vec![0u8; HLL_REGISTERS];

    // Test 1: every register keeps its value and leaves its neighbours alone.
    for _ in 0..cycles {
        let regs = &mut bitcounters[HLL_HDR_SIZE..];
        for (i, b) in bytecounters.iter_mut().enumerate() {
            let r = (rng.next() as u8) & HLL_REGISTER_MAX;
            *b = r;
            dense::set(regs, i, r);
        }
        for (i, &b) in bytecounters.iter().enumerate() {
            let val = dense::get(regs, i);
            if val != b {
                return Err(format!("ERR TESTFAILED Register {i} should be {b} but is {val}"));
            }
        }
    }

    // Test 2: a dense and a sparse value fed the same elements agree, and err little.
    bitcounters = vec![0u8; HLL_DENSE_SIZE];
    bitcounters[..4].copy_from_slice(MAGIC);
    let mut o = new_sparse();
    let relerr = 1.04 / (HLL_REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = rng.next();
    for j in 1..=elements {
        let ele = (j ^ seed).to_le_bytes();
        let (index, count) = pattern_len(&ele);
        dense::raise(&mut bitcounters[HLL_HDR_SIZE..], index, count);
        // Redis ignores what its add returns here.
        let _ = add(&mut o, [ele], sparse_max_bytes);
        if j != checkpoint {
            continue;
        }
        // Small cardinalities stay sparse.
        if j < (sparse_max_bytes / 2) as u64 && validate(&o) != Ok(Encoding::Sparse) {
            return Err("ERR TESTFAILED sparse encoding not used".into());
        }
        let dense_card = card(&bitcounters);
        if dense_card != card(&o) {
            return Err("ERR TESTFAILED dense/sparse disagree".into());
        }
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        // Collisions make cardinality 10 err more than its share from time to time.
        if j == 10 {
            maxerr = 1;
        }
        let abserr = (checkpoint as i64).wrapping_sub(dense_card).unsigned_abs();
        if abserr > maxerr {
            return Err(format!(
                "ERR TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// The estimate of a value, its cache ignored (`hllCount`).
fn card(value: &[u8]) -> i64 {
    let mut v = value.to_vec();
    invalidate_cache(&mut v);
    match count(&v) {
        Ok(c) => c.cardinality,
        Err(HllError::Invalid | HllError::Corrupt | HllError::NotSparse) => -1,
    }
}
