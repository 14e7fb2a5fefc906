//! PFCOUNT: the cardinality estimate from the register histogram (Ertl's improved estimator, as Redis's
//! `hllCount`), the cached cardinality of one value, and the union of several values in a raw register
//! array.

use super::error::HllError;
use super::header::{validate, Encoding, CARD_OFFSET, HLL_HDR_SIZE, HLL_Q, HLL_REGISTERS};
use super::{dense, sparse};

/// `0.5 / ln(2)`: the estimator's constant for an infinite number of registers.
const HLL_ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// Ertl's sigma function (`hllSigma`), for `x` in `[0, 1]`.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prev = z;
        z += x * y;
        y += y;
        if z_prev == z {
            return z;
        }
    }
}

/// Ertl's tau function (`hllTau`), for `x` in `[0, 1]`.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prev = z;
        y *= 0.5;
        // Redis writes `pow(1 - x, 2)`, which its compiler turns into this product.
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prev == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate of a register histogram (`hllCount` after the histogram), as the 64-bit
/// unsigned integer Redis gets on x86-64: values above `HLL_Q + 1` are not looked at, and registers all
/// past it (no finite estimate) give 2^63.
pub(super) fn estimate(histo: &[u64; 64]) -> u64 {
    let m = HLL_REGISTERS as f64;
    let q = HLL_Q as usize;
    let mut z = m * tau((m - histo[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    let e = llround(HLL_ALPHA_INF * m * m / z) as f64;
    // `(uint64_t)E` for a double E: x86-64 converts below 2^63 as signed, at or above it by offset.
    if e >= 9_223_372_036_854_775_808.0 {
        ((e - 9_223_372_036_854_775_808.0) as i64 as u64) ^ (1 << 63)
    } else {
        e as i64 as u64
    }
}

/// `llroundl` of a double on x86-64: halves away from zero, and the x87 "integer indefinite"
/// (`i64::MIN`) for what does not fit (infinities, NaN).
fn llround(x: f64) -> i64 {
    let r = x.round();
    if r.is_finite() && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        r as i64
    } else {
        i64::MIN
    }
}

/// PFCOUNT of one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// The reply: the cardinality as Redis sends it (a signed 64-bit integer).
    pub cardinality: i64,
    /// When the value's cached cardinality was invalid: the 8 bytes to write at
    /// [`CARD_OFFSET`](super::CARD_OFFSET) (Redis stores them in the key, as a write). `None` when the
    /// cache answered.
    pub cache: Option<[u8; 8]>,
}

impl Count {
    /// Writes [`Count::cache`], if any, into `value` (the value counted).
    pub fn store_cache(&self, value: &mut [u8]) {
        if let (Some(c), Some(dst)) = (self.cache, value.get_mut(CARD_OFFSET..HLL_HDR_SIZE)) {
            dst.copy_from_slice(&c);
        }
    }
}

/// PFCOUNT of one key's value: the cached cardinality when valid, else the estimate and the cache bytes
/// to store. [`HllError::Invalid`] for a value that is not an HLL, [`HllError::Corrupt`] for a sparse
/// value whose opcodes do not cover the registers exactly (nothing to store then).
pub fn count(value: &[u8]) -> Result<Count, HllError> {
    let encoding = validate(value)?;
    let mut card = [0u8; 8];
    card.copy_from_slice(&value[CARD_OFFSET..HLL_HDR_SIZE]);
    if card[7] & 0x80 == 0 {
        return Ok(Count {
            cardinality: u64::from_le_bytes(card) as i64,
            cache: None,
        });
    }
    let mut histo = [0u64; 64];
    match encoding {
        Encoding::Dense => dense::histogram(&value[HLL_HDR_SIZE..], &mut histo),
        Encoding::Sparse => sparse::histogram(value, &mut histo)?,
    }
    let card = estimate(&histo);
    Ok(Count {
        cardinality: card as i64,
        cache: Some(card.to_le_bytes()),
    })
}

/// One byte per register (Redis's internal `HLL_RAW` encoding): the union of several values, register
/// by register, for PFCOUNT of several keys and PFMERGE.
#[derive(Clone, PartialEq, Eq)]
pub struct RawRegisters(Box<[u8; HLL_REGISTERS]>);

impl Default for RawRegisters {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for RawRegisters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.0.iter().filter(|&&r| r != 0).count();
        write!(f, "RawRegisters({set} set)")
    }
}

impl RawRegisters {
    /// All registers 0.
    pub fn new() -> Self {
        RawRegisters(Box::new([0; HLL_REGISTERS]))
    }

    /// The registers, one byte each.
    pub fn registers(&self) -> &[u8; HLL_REGISTERS] {
        &self.0
    }

    /// Validates `value` and raises every register to its value there (`hllMerge`); returns its encoding.
    /// On an error some registers may have been raised already (Redis then replies with the error).
    pub fn merge(&mut self, value: &[u8]) -> Result<Encoding, HllError> {
        let encoding = validate(value)?;
        match encoding {
            Encoding::Dense => {
                let regs = &value[HLL_HDR_SIZE..];
                for (i, m) in self.0.iter_mut().enumerate() {
                    *m = (*m).max(dense::get(regs, i));
                }
            }
            Encoding::Sparse => sparse::merge_into(value, &mut self.0)?,
        }
        Ok(encoding)
    }

    /// The cardinality estimate of these registers (no cache), as Redis replies it.
    pub fn count(&self) -> i64 {
        let mut histo = [0u64; 64];
        for &r in self.0.iter() {
            histo[usize::from(r & 63)] += 1;
        }
        estimate(&histo) as i64
    }
}

/// PFCOUNT of several keys: the cardinality of the union of `values` (the keys that exist, in the
/// order given), without touching any cache. The first value that is not an HLL
/// ([`HllError::Invalid`]) or is corrupt ([`HllError::Corrupt`]) ends it with that error.
pub fn count_union<I>(values: I) -> Result<i64, HllError>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut max = RawRegisters::new();
    for v in values {
        max.merge(v.as_ref())?;
    }
    Ok(max.count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_histogram_counts_zero() {
        let mut h = [0u64; 64];
        h[0] = HLL_REGISTERS as u64;
        assert_eq!(estimate(&h), 0);
    }

    #[test]
    fn registers_past_the_estimator_give_two_to_the_63() {
        // Every register at 63 (a dense value anybody can write): z is 0, the estimate infinite.
        let mut h = [0u64; 64];
        h[63] = HLL_REGISTERS as u64;
        assert_eq!(estimate(&h), 1 << 63);
        h[63] = 0;
        h[51] = HLL_REGISTERS as u64;
        assert_eq!(estimate(&h), 1 << 63);
    }

    #[test]
    fn llround_rounds_halves_away() {
        assert_eq!(llround(2.5), 3);
        assert_eq!(llround(-2.5), -3);
        assert_eq!(llround(2.4999), 2);
        assert_eq!(llround(f64::INFINITY), i64::MIN);
        assert_eq!(llround(f64::NAN), i64::MIN);
        assert_eq!(llround(1e19), i64::MIN);
    }

    #[test]
    fn tau_and_sigma_edges() {
        assert_eq!(tau(0.0), 0.0);
        assert_eq!(tau(1.0), 0.0);
        assert_eq!(sigma(1.0), f64::INFINITY);
        assert_eq!(sigma(0.0), 0.0);
        assert!(tau(0.5) > 0.0 && sigma(0.5) > 0.5);
    }
}
