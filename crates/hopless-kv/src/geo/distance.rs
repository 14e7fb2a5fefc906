//! Distances on the sphere as Redis's `geohash_helper.c` computes them (haversine over a sphere of
//! radius 6372797.560856 m, the same operations in the same order, so the same bits), the shape
//! tests built on them, and the four units.

use super::error::GeoError;

/// Earth's quadratic mean radius for WGS-84, in metres: Redis's `EARTH_RADIUS_IN_METERS`.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Degrees to radians: Redis's `D_R` (`M_PI / 180.0`).
pub const D_R: f64 = std::f64::consts::PI / 180.0;

/// `deg_rad`.
pub fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

/// `rad_deg`.
pub fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// `geohashGetLatDistance`: the distance between two latitudes along a meridian, in metres.
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// `geohashGetDistance`: the great-circle distance in metres between two points (degrees). Where the
/// longitudes' half difference has a zero sine, the distance is [`lat_distance`]'s.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// `geohashGetDistanceIfInRadiusWGS84`: the distance from `(x1, y1)` to `(x2, y2)` where it is not
/// above `radius_m` (so a NaN distance counts as inside, as in Redis).
pub fn distance_if_in_radius(x1: f64, y1: f64, x2: f64, y2: f64, radius_m: f64) -> Option<f64> {
    let d = distance(x1, y1, x2, y2);
    if d > radius_m {
        None
    } else {
        Some(d)
    }
}

/// `geohashGetDistanceIfInRectangle`: whether `(x2, y2)` lies in the `width_m × height_m` box centred
/// on `(x1, y1)` (its latitude distance at most half the height, then its distance along its own
/// parallel at most half the width), and if so its distance from the centre.
pub fn distance_if_in_rectangle(
    width_m: f64,
    height_m: f64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
) -> Option<f64> {
    let lat_d = lat_distance(y2, y1);
    if lat_d > height_m / 2.0 {
        return None;
    }
    let lon_d = distance(x2, y2, x1, y2);
    if lon_d > width_m / 2.0 {
        return None;
    }
    Some(distance(x1, y1, x2, y2))
}

/// A distance unit the geo commands accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Meters,
    Kilometers,
    Feet,
    Miles,
}

impl Unit {
    /// `extractUnitOrReply`: `m`, `km`, `ft` or `mi`, any case. The argument compares as a C string,
    /// so it ends at its first NUL byte (`"km\0x"` is `km`).
    pub fn parse(arg: &[u8]) -> Result<Unit, GeoError> {
        let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
        let u = &arg[..end];
        if u.eq_ignore_ascii_case(b"m") {
            Ok(Unit::Meters)
        } else if u.eq_ignore_ascii_case(b"km") {
            Ok(Unit::Kilometers)
        } else if u.eq_ignore_ascii_case(b"ft") {
            Ok(Unit::Feet)
        } else if u.eq_ignore_ascii_case(b"mi") {
            Ok(Unit::Miles)
        } else {
            Err(GeoError::UnsupportedUnit)
        }
    }

    /// Metres in one unit: Redis's conversion factor (1, 1000, 0.3048, 1609.34).
    pub fn meters(self) -> f64 {
        match self {
            Unit::Meters => 1.0,
            Unit::Kilometers => 1000.0,
            Unit::Feet => 0.3048,
            Unit::Miles => 1609.34,
        }
    }

    /// A distance in metres expressed in this unit: divided by the factor, as Redis divides.
    pub fn from_meters(self, meters: f64) -> f64 {
        meters / self.meters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_as_redis_compares_them() {
        assert_eq!(Unit::parse(b"m"), Ok(Unit::Meters));
        assert_eq!(Unit::parse(b"KM"), Ok(Unit::Kilometers));
        assert_eq!(Unit::parse(b"Ft"), Ok(Unit::Feet));
        assert_eq!(Unit::parse(b"mI"), Ok(Unit::Miles));
        assert_eq!(Unit::parse(b"km\0junk"), Ok(Unit::Kilometers));
        assert_eq!(Unit::parse(b"\0"), Err(GeoError::UnsupportedUnit));
        assert_eq!(
            Unit::parse(b"parsec").unwrap_err().text(),
            "ERR unsupported unit provided. please use M, KM, FT, MI"
        );
        assert_eq!(Unit::parse(b"meters"), Err(GeoError::UnsupportedUnit));
    }

    #[test]
    fn same_longitude_takes_the_meridian_path() {
        assert_eq!(distance(10.0, 0.0, 10.0, 1.0), lat_distance(0.0, 1.0));
        assert_eq!(distance(0.0, 0.0, 0.0, 0.0), 0.0);
        assert!(distance(f64::NAN, 0.0, 0.0, 0.0).is_nan());
    }

    #[test]
    fn radius_and_box_tests_never_panic() {
        let vals = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1e308,
            -1e308,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for &a in &vals {
            for &b in &vals {
                let _ = distance_if_in_radius(a, b, b, a, a);
                let _ = distance_if_in_rectangle(a, b, a, b, b, a);
            }
        }
        assert_eq!(distance_if_in_radius(0.0, 0.0, 0.0, 0.0, 0.0), Some(0.0));
        assert_eq!(distance_if_in_rectangle(0.0, 0.0, 1.0, 2.0, 1.0, 2.0), Some(0.0));
    }
}
