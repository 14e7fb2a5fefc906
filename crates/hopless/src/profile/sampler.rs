//! The sampling arithmetic: how many bytes a thread allocates before its next sample, and what one
//! sample stands for.
//!
//! A thread counts down the bytes it allocates (`ThreadCache::sample_left`); the allocation that takes
//! the count past zero is sampled, and the next count is drawn from an exponential distribution whose
//! mean is the sampling interval. Every byte allocated then has the same chance, `1 / interval`, of
//! being the one that triggers a sample, whatever the pattern of sizes (tcmalloc's and jemalloc's
//! scheme): a block of `s` bytes is sampled with probability `p = 1 - exp(-s / interval)`, and stands
//! for `1 / p` blocks and `s / p` bytes, which makes every total an unbiased estimate.
//!
//! The core has no `std`, hence no `ln` or `exp`: both are computed here from the float's bits and a
//! short series, to about 1e-7 relative, far inside the sampling error.

/// Fixed-point scale of block counts: a sample stands for `weight / BLOCK_SCALE` blocks.
pub const BLOCK_SCALE: u64 = 1024;

/// The next state of a thread's generator and a 64-bit draw from it (SplitMix64: any seed works,
/// including zero, and a thread's cache starts zeroed).
pub fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes to the next sample: an exponential draw of mean `interval`, at least 1, at most 32 times
/// the mean (a bound met once in 8e13 draws).
pub fn next_interval(state: &mut u64, interval: usize) -> usize {
    if interval <= 1 {
        return 1;
    }
    // A uniform draw in (0, 1]: 53 random bits, plus one so that it is never 0.
    let u = ((next_random(state) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    let x = -ln(u) * interval as f64;
    let cap = interval.saturating_mul(32);
    if x >= cap as f64 {
        cap
    } else {
        (x as usize).max(1)
    }
}

/// What one sampled block of `size` bytes stands for under `interval`: (blocks × [`BLOCK_SCALE`],
/// bytes).
pub fn weight(size: usize, interval: usize) -> (u64, u64) {
    if interval <= 1 || size == 0 {
        return (BLOCK_SCALE, size as u64);
    }
    let x = size as f64 / interval as f64;
    // 1 - exp(-x): its series where x is small (no cancellation), else directly.
    let p = if x < 1e-3 {
        x * (1.0 - x / 2.0 + x * x / 6.0)
    } else {
        1.0 - exp_neg(x)
    };
    if p <= 0.0 {
        return (BLOCK_SCALE, size as u64);
    }
    let blocks = BLOCK_SCALE as f64 / p;
    let bytes = size as f64 / p;
    (round(blocks), round(bytes))
}

fn round(x: f64) -> u64 {
    if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        (x + 0.5) as u64
    }
}

/// The natural logarithm of `x > 0` (finite): `x = m · 2^e` with `m` in [1, 2), then
/// `ln m = 2 atanh((m - 1) / (m + 1))` by its series, whose argument is at most 1/3.
fn ln(x: f64) -> f64 {
    const LN2: f64 = core::f64::consts::LN_2;
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1u64 << 52) - 1);
    if e == 0 {
        // Subnormal: scale it up first.
        let y = x * (1u64 << 54) as f64;
        let b = y.to_bits();
        e = ((b >> 52) & 0x7ff) as i64 - 54;
        mant = b & ((1u64 << 52) - 1);
    }
    let m = f64::from_bits(mant | (1023u64 << 52));
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    while k < 24.0 {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + (e - 1023) as f64 * LN2
}

/// `exp(-x)` for `x >= 0`: `x = k ln 2 + r` with `r` in [0, ln 2), `exp(-r)` by its series, then
/// divided by `2^k` through the exponent bits.
fn exp_neg(x: f64) -> f64 {
    const LN2: f64 = core::f64::consts::LN_2;
    if x > 700.0 {
        return 0.0;
    }
    let k = (x / LN2) as u64;
    let r = x - k as f64 * LN2;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut i = 1.0;
    while i < 20.0 {
        term *= -r / i;
        sum += term;
        i += 1.0;
    }
    // 2^-k as a float (k <= 1010 here, inside the normal range).
    sum * f64::from_bits((1023 - k) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn ln_and_exp_agree_with_std() {
        for &x in &[
            1e-300, 1e-12, 0.001, 0.3, 0.5, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300,
        ] {
            assert!(
                close(ln(x), x.ln(), 1e-9) || (ln(x) - x.ln()).abs() < 1e-12,
                "ln {x}"
            );
        }
        for &x in &[0.0, 1e-6, 0.1, 0.69, 1.0, 5.0, 50.0, 600.0] {
            assert!(close(exp_neg(x), (-x).exp(), 1e-9), "exp(-{x})");
        }
    }

    #[test]
    fn intervals_average_the_mean() {
        let mut s = 7;
        let n = 200_000;
        let mean = 512 << 10;
        let total: f64 = (0..n).map(|_| next_interval(&mut s, mean) as f64).sum();
        let avg = total / n as f64;
        // The standard error of the mean of an exponential is mean / sqrt(n): 0.22% here.
        assert!(close(avg, mean as f64, 0.01), "average {avg}");
    }

    #[test]
    fn a_sample_stands_for_what_its_chance_says() {
        // Far above the interval: always sampled, itself alone.
        assert_eq!(weight(64 << 20, 512 << 10), (BLOCK_SCALE, 64 << 20));
        // Far below: p ≈ s / interval, so each sample stands for about interval bytes.
        let (blocks, bytes) = weight(64, 512 << 10);
        assert!(close(bytes as f64, (512 << 10) as f64, 1e-3), "{bytes}");
        assert!(
            close(blocks as f64 / BLOCK_SCALE as f64, 8192.0, 1e-3),
            "{blocks}"
        );
        // Every byte sampled at interval 1.
        assert_eq!(weight(100, 1), (BLOCK_SCALE, 100));
    }
}
