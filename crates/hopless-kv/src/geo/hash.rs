//! Geohash bits as Redis's `geohash.c` computes them: a cell of the longitude × latitude rectangle is
//! `step` bits of latitude and `step` bits of longitude, interleaved (latitude in the even positions,
//! longitude in the odd ones), so a cell's `2 × step` bits are a prefix of every cell inside it.
//!
//! Conversions follow x86-64 C: a `double` becomes a `uint32_t` through a signed 64-bit truncation
//! keeping the low 32 bits, and unsigned arithmetic wraps.

/// The finest step a sorted-set score holds: 26 bits a coordinate, 52 bits in all.
pub const STEP_MAX: u8 = 26;
/// The southernmost latitude a point may have (EPSG:900913's limit; the poles cannot be indexed).
pub const LAT_MIN: f64 = -85.05112878;
/// The northernmost latitude a point may have.
pub const LAT_MAX: f64 = 85.05112878;
/// The westernmost longitude.
pub const LON_MIN: f64 = -180.0;
/// The easternmost longitude.
pub const LON_MAX: f64 = 180.0;

/// An interval of one coordinate, in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    /// Redis's `RANGEISZERO`: both ends exactly zero.
    fn is_zero(self) -> bool {
        self.min == 0.0 && self.max == 0.0
    }
}

/// The longitudes a score covers: -180..180.
pub const WGS84_LON: Range = Range {
    min: LON_MIN,
    max: LON_MAX,
};
/// The latitudes a score covers: -85.05112878..85.05112878.
pub const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A cell: `2 × step` interleaved bits (Redis's `GeoHashBits`). `bits == 0 && step == 0` is the zero
/// hash, which marks a neighbour left out of a search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    /// The zero hash (Redis's `GZERO`).
    pub const ZERO: HashBits = HashBits { bits: 0, step: 0 };

    /// Redis's `HASHISZERO`.
    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// `geohashAlign52Bits`: the bits shifted up to a 52-bit score, so a cell's bits are the top of the
    /// scores of every point inside it. Bits shifted past bit 63 are lost, as in C.
    pub fn align_52(self) -> u64 {
        match 52u32.checked_sub(2 * u32::from(self.step)) {
            Some(shift) => self.bits << shift,
            // A step past 26 has no 52-bit form (C shifts by a negative count); never asked for.
            None => self.bits,
        }
    }
}

/// A cell with the coordinates it spans (Redis's `GeoHashArea`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub hash: HashBits,
    pub lon: Range,
    pub lat: Range,
}

/// The eight cells around one, at its step (Redis's `GeoHashNeighbors`). Moving past the edge of the
/// world wraps around: east of the easternmost column is the westernmost one, and so on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// `interleave64`: the low 32 bits of `x` in the even positions, those of `y` in the odd ones.
pub fn interleave(x: u32, y: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(x);
    let mut y = u64::from(y);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// `deinterleave64`: the even bits gathered into the low 32, the odd bits into the high 32.
pub fn deinterleave(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
        0x0000_0000_FFFF_FFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// A `double` to `uint32_t` as x86-64 C converts it (`cvttsd2si` into 64 bits, the low 32 kept).
fn to_u32(v: f64) -> u32 {
    // Rust's `as i64` saturates and sends NaN to 0 where the instruction gives i64::MIN; both keep 0
    // as their low 32 bits, and every value this module converts lies in 0..=2^32.
    v as i64 as u32
}

/// `geohashEncode`: the cell of `(lon, lat)` at `step` (1..=32) inside the given ranges. None where
/// Redis fails: a step out of range, a range that is all zero, or a point outside the WGS84 limits or
/// outside the ranges. A NaN coordinate passes those comparisons and lands in cell 0, as in C.
// The comparisons are Redis's: a NaN coordinate passes them (a range's `contains` would not).
#[allow(clippy::manual_range_contains)]
pub fn encode(lon_range: Range, lat_range: Range, lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_range.is_zero() || lon_range.is_zero() {
        return None;
    }
    if lon > LON_MAX || lon < LON_MIN || lat > LAT_MAX || lat < LAT_MIN {
        return None;
    }
    if lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max {
        return None;
    }
    let mut lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min);
    let mut lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min);
    let cells = (1u64 << step) as f64;
    lat_offset *= cells;
    lon_offset *= cells;
    Some(HashBits {
        bits: interleave(to_u32(lat_offset), to_u32(lon_offset)),
        step,
    })
}

/// `geohashEncodeWGS84`: `geohashEncode` over -180..180 × -85.05112878..85.05112878.
pub fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LON, WGS84_LAT, lon, lat, step)
}

/// `geohashDecode`: the coordinates a cell spans. None for the zero hash or an all-zero range.
pub fn decode(lon_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_range.is_zero() || lon_range.is_zero() {
        return None;
    }
    let sep = deinterleave(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let lon_scale = lon_range.max - lon_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    // `1ull << step` in C; a step past 63 never reaches here (encode refuses steps past 32).
    let cells = 1u64.checked_shl(u32::from(hash.step)).unwrap_or(0) as f64;
    // `(ilato + 1)` is 32-bit unsigned arithmetic in C: it wraps.
    let lat_min = lat_range.min + (f64::from(ilato) * 1.0 / cells) * lat_scale;
    let lat_max = lat_range.min + (f64::from(ilato.wrapping_add(1)) * 1.0 / cells) * lat_scale;
    let lon_min = lon_range.min + (f64::from(ilono) * 1.0 / cells) * lon_scale;
    let lon_max = lon_range.min + (f64::from(ilono.wrapping_add(1)) * 1.0 / cells) * lon_scale;
    Some(Area {
        hash,
        lon: Range {
            min: lon_min,
            max: lon_max,
        },
        lat: Range {
            min: lat_min,
            max: lat_max,
        },
    })
}

/// `geohashDecodeWGS84`.
pub fn decode_wgs84(hash: HashBits) -> Option<Area> {
    decode(WGS84_LON, WGS84_LAT, hash)
}

/// `geohashDecodeAreaToLongLat`: a cell's centre, clamped to the WGS84 limits: `(lon, lat)`.
pub fn area_center(area: &Area) -> (f64, f64) {
    // `clamp` is C's two comparisons (a NaN stays NaN either way).
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// `0x5555… >> (64 - 2 × step)` and its odd-bit twin: the mask of a step's bits of one coordinate.
fn step_mask(pattern: u64, step: u8) -> u64 {
    // C shifts by 64 for the zero hash (undefined there); this gives 0 instead.
    64u32
        .checked_sub(2 * u32::from(step))
        .and_then(|shift| pattern.checked_shr(shift))
        .unwrap_or(0)
}

/// `geohash_move_x`: one cell east (`d > 0`) or west (`d < 0`), wrapping around.
fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = hash.bits & 0x5555_5555_5555_5555;
    let zz = step_mask(0x5555_5555_5555_5555, hash.step);
    if d > 0 {
        x = x.wrapping_add(zz.wrapping_add(1));
    } else {
        x |= zz;
        x = x.wrapping_sub(zz.wrapping_add(1));
    }
    x &= step_mask(0xaaaa_aaaa_aaaa_aaaa, hash.step);
    hash.bits = x | y;
}

/// `geohash_move_y`: one cell north (`d > 0`) or south (`d < 0`), wrapping around.
fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = hash.bits & 0x5555_5555_5555_5555;
    let zz = step_mask(0xaaaa_aaaa_aaaa_aaaa, hash.step);
    if d > 0 {
        y = y.wrapping_add(zz.wrapping_add(1));
    } else {
        y |= zz;
        y = y.wrapping_sub(zz.wrapping_add(1));
    }
    y &= step_mask(0x5555_5555_5555_5555, hash.step);
    hash.bits = x | y;
}

fn moved(hash: HashBits, dx: i8, dy: i8) -> HashBits {
    let mut h = hash;
    move_x(&mut h, dx);
    move_y(&mut h, dy);
    h
}

/// `geohashNeighbors`: the eight cells around `hash`, at its step.
pub fn neighbors(hash: HashBits) -> Neighbors {
    Neighbors {
        east: moved(hash, 1, 0),
        west: moved(hash, -1, 0),
        south: moved(hash, 0, -1),
        north: moved(hash, 0, 1),
        north_west: moved(hash, -1, 1),
        north_east: moved(hash, 1, 1),
        south_east: moved(hash, 1, -1),
        south_west: moved(hash, -1, -1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_and_deinterleave_invert_each_other() {
        assert_eq!(interleave(0, 0), 0);
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
        assert_eq!(interleave(u32::MAX, 0), 0x5555_5555_5555_5555);
        assert_eq!(interleave(0, u32::MAX), 0xaaaa_aaaa_aaaa_aaaa);
        let mut v = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (x, y) = (v as u32, (v >> 32) as u32);
            let d = deinterleave(interleave(x, y));
            assert_eq!((d as u32, (d >> 32) as u32), (x, y));
        }
    }

    #[test]
    fn encode_refuses_what_redis_refuses() {
        assert!(encode_wgs84(0.0, 0.0, 0).is_none());
        assert!(encode_wgs84(0.0, 0.0, 33).is_none());
        assert!(encode_wgs84(180.1, 0.0, 26).is_none());
        assert!(encode_wgs84(0.0, 85.06, 26).is_none());
        assert!(encode(Range { min: 0.0, max: 0.0 }, WGS84_LAT, 0.0, 0.0, 26).is_none());
        // NaN slips through the comparisons and lands in cell 0, as in C.
        assert_eq!(
            encode_wgs84(f64::NAN, f64::NAN, 26),
            Some(HashBits { bits: 0, step: 26 })
        );
        // The top edges are one cell past the last: bit 52 (latitude) and bit 53 (longitude).
        assert_eq!(encode_wgs84(180.0, LAT_MAX, 26).map(|h| h.bits), Some(3 << 52));
        assert_eq!(encode_wgs84(-180.0, LAT_MIN, 26).map(|h| h.bits), Some(0));
        // Step 32 at the top edge: 2^32 keeps its low 32 bits, 0.
        assert_eq!(encode_wgs84(-180.0, LAT_MAX, 32).map(|h| h.bits), Some(0));
    }

    #[test]
    fn decode_spans_the_cell_encode_chose() {
        for &(lon, lat) in &[
            (13.361389, 38.115556),
            (-122.27652, 37.805186),
            (0.0, 0.0),
            (-180.0, -85.0),
        ] {
            for step in 1..=26 {
                let h = encode_wgs84(lon, lat, step).unwrap();
                let a = decode_wgs84(h).unwrap();
                assert!(a.lon.min <= lon && lon <= a.lon.max, "{lon} {step} {a:?}");
                assert!(a.lat.min <= lat && lat <= a.lat.max, "{lat} {step} {a:?}");
            }
        }
        assert!(decode_wgs84(HashBits::ZERO).is_none());
    }

    #[test]
    fn neighbors_wrap_around_the_world() {
        // Step 1: four cells; (lat bit, lon bit).
        let h = HashBits { bits: 0b00, step: 1 };
        let n = neighbors(h);
        assert_eq!(n.east, HashBits { bits: 0b10, step: 1 });
        assert_eq!(n.west, HashBits { bits: 0b10, step: 1 });
        assert_eq!(n.north, HashBits { bits: 0b01, step: 1 });
        assert_eq!(n.south, HashBits { bits: 0b01, step: 1 });
        assert_eq!(n.north_east, HashBits { bits: 0b11, step: 1 });
        // The middle of step 2's grid: east is one column over, north one row up.
        let c = encode_wgs84(10.0, 10.0, 2).unwrap();
        let n = neighbors(c);
        let ca = decode_wgs84(c).unwrap();
        let ea = decode_wgs84(n.east).unwrap();
        let na = decode_wgs84(n.north).unwrap();
        assert_eq!(ea.lon.min, ca.lon.max);
        assert_eq!(na.lat.min, ca.lat.max);
        // Neighbours of the zero hash do not panic.
        let _ = neighbors(HashBits::ZERO);
        let _ = neighbors(HashBits {
            bits: u64::MAX,
            step: 200,
        });
    }

    #[test]
    fn align_52_shifts_a_cell_to_score_width() {
        assert_eq!(
            HashBits {
                bits: 0b101010,
                step: 3
            }
            .align_52(),
            0b101010 << 46
        );
        assert_eq!(HashBits { bits: 7, step: 26 }.align_52(), 7);
        assert_eq!(HashBits { bits: 7, step: 27 }.align_52(), 7);
    }
}
