//! A point and its sorted-set score: GEOADD's check and encoding, GEOPOS's decoding, GEOHASH's
//! 11-character string.
//!
//! A score is the point's step-26 cell, 52 interleaved bits, as an integer stored in an `f64`. Reading
//! it back truncates the `f64` to `u64` as x86-64 C does, so a score nobody wrote through GEOADD
//! (negative, fractional, infinite, past 2^52) decodes to the same position Redis gives it.

use super::error::GeoError;
use super::hash::{self, Range, LAT_MAX, LAT_MIN, LON_MAX, LON_MIN, STEP_MAX};

/// A position in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub lon: f64,
    pub lat: f64,
}

/// `extractLongLatOrReply`'s check, on numbers already parsed: NaN is [`GeoError::NotFloat`] (the
/// parser's refusal, either coordinate), then a longitude outside -180..=180 or a latitude outside
/// ±85.05112878 is [`GeoError::InvalidPair`].
pub fn check_lon_lat(lon: f64, lat: f64) -> Result<Point, GeoError> {
    if lon.is_nan() || lat.is_nan() {
        return Err(GeoError::NotFloat);
    }
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(GeoError::InvalidPair { lon, lat });
    }
    Ok(Point { lon, lat })
}

/// GEOADD's encoding (`geohashEncodeWGS84` at step 26, then `geohashAlign52Bits`), after
/// [`check_lon_lat`]: the 52-bit cell number. A point on the northern limit sets bit 52 and one on
/// the eastern limit sets bit 53, as in Redis. The sorted-set score is [`bits_to_score`] of it.
pub fn encode(lon: f64, lat: f64) -> Result<u64, GeoError> {
    let p = check_lon_lat(lon, lat)?;
    let h = hash::encode_wgs84(p.lon, p.lat, STEP_MAX).unwrap_or_default();
    Ok(h.align_52())
}

/// The score ZADD stores for GEOADD's integer (Redis prints it and parses it back): the nearest
/// `f64`, ties to even (exact below 2^53).
pub fn bits_to_score(bits: u64) -> f64 {
    bits as f64
}

/// `(uint64_t)score` as x86-64 C (gcc) computes it: below 2^63 a signed truncation, so a negative
/// score wraps (-1.0 is `u64::MAX`) and anything at or below -2^63 (or -inf) is 2^63; from 2^63 on,
/// the value minus 2^63 truncated with bit 63 flipped, so 2^64 and above (and +inf) are 0.
pub fn score_to_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // `cvttsd2si`: truncation toward zero, the "integer indefinite" i64::MIN where it does not fit.
    fn cvttsd2si(v: f64) -> i64 {
        if !(-TWO_63..TWO_63).contains(&v) {
            i64::MIN
        } else {
            v as i64
        }
    }
    if score >= TWO_63 {
        (cvttsd2si(score - TWO_63) as u64) ^ (1 << 63)
    } else {
        cvttsd2si(score) as u64
    }
}

/// `decodeGeohash`: the position GEOPOS replies for a score (its step-26 cell's centre, clamped to
/// the WGS84 limits). Every score decodes.
pub fn decode(score: f64) -> Point {
    let h = hash::HashBits {
        bits: score_to_bits(score),
        step: STEP_MAX,
    };
    // A step-26 hash is never the zero hash, so the decoding always succeeds.
    let (lon, lat) = hash::decode_wgs84(h)
        .map(|a| hash::area_center(&a))
        .unwrap_or((0.0, 0.0));
    Point { lon, lat }
}

/// GEOHASH's reply for a score: the position decoded, re-encoded at step 26 over the standard
/// latitude range ±90, written 5 bits a character in the geohash alphabet; the eleventh character is
/// always `0` (52 bits fill ten and two bits).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let p = decode(score);
    let lon_range = Range {
        min: -180.0,
        max: 180.0,
    };
    let lat_range = Range {
        min: -90.0,
        max: 90.0,
    };
    // The decoded position lies inside the WGS84 limits, so the encoding succeeds.
    let bits = hash::encode(lon_range, lat_range, p.lon, p.lat, STEP_MAX)
        .unwrap_or_default()
        .bits;
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_nan_then_the_range() {
        assert_eq!(check_lon_lat(f64::NAN, 0.0), Err(GeoError::NotFloat));
        assert_eq!(check_lon_lat(200.0, f64::NAN), Err(GeoError::NotFloat));
        assert_eq!(
            check_lon_lat(200.0, 100.0).unwrap_err().text(),
            "ERR invalid longitude,latitude pair 200.000000,100.000000"
        );
        assert!(check_lon_lat(180.0, LAT_MAX).is_ok());
        assert!(check_lon_lat(-180.0, LAT_MIN).is_ok());
        assert!(check_lon_lat(f64::INFINITY, 0.0).is_err());
        assert!(check_lon_lat(-0.0, -0.0).is_ok());
    }

    #[test]
    fn score_to_bits_is_x86_64_truncation() {
        assert_eq!(score_to_bits(0.0), 0);
        assert_eq!(score_to_bits(1.5), 1);
        assert_eq!(score_to_bits(-0.5), 0);
        assert_eq!(score_to_bits(-1.0), u64::MAX);
        assert_eq!(score_to_bits(-1.5), u64::MAX);
        assert_eq!(score_to_bits(f64::INFINITY), 0);
        assert_eq!(score_to_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_to_bits(f64::NAN), 1 << 63);
        assert_eq!(score_to_bits(1e19), 10_000_000_000_000_000_000);
        assert_eq!(score_to_bits(18_446_744_073_709_551_616.0), 0);
        assert_eq!(score_to_bits(-9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(score_to_bits(-1e30), 1 << 63);
    }

    #[test]
    fn any_score_decodes_inside_the_limits() {
        for s in [
            f64::NAN,
            f64::INFINITY,
            -1.0,
            1e300,
            -1e300,
            4.5e15,
            2f64.powi(53),
            f64::MIN_POSITIVE,
        ] {
            let p = decode(s);
            assert!((LON_MIN..=LON_MAX).contains(&p.lon) && (LAT_MIN..=LAT_MAX).contains(&p.lat));
            let g = geohash_string(s);
            assert_eq!(g[10], b'0');
        }
    }
}
