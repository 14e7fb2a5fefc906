//! A search: a centre and a circle or a box around it, in a unit (Redis's `GeoShape`); its bounding
//! box in degrees, and the test of whether a stored point falls inside (`geoWithinShape`).

use super::distance::{self, Unit, EARTH_RADIUS_M};
use super::error::GeoError;
use super::point::{self, Point};

/// How far a search reaches from its centre, in the search's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// BYRADIUS (and GEORADIUS): points at most this far from the centre.
    Radius(f64),
    /// BYBOX: points whose latitude is within `height / 2` of the centre's, and whose distance from
    /// the centre's meridian along their own parallel is within `width / 2`.
    Box { width: f64, height: f64 },
}

/// A GEOSEARCH / GEORADIUS query's geometry. Built through [`Search::by_radius`] or
/// [`Search::by_box`], which refuse what Redis refuses, so every search is one Redis could run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search {
    center: Point,
    shape: Shape,
    unit: Unit,
}

/// The box of degrees a search's shape fits in (`geohashBoundingBox`). The longitudes are measured
/// at the edge further from the equator, so the box is wide enough there; they may pass ±180, and
/// any of them may be NaN or infinite for an infinite size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min_lon: f64,
    pub min_lat: f64,
    pub max_lon: f64,
    pub max_lat: f64,
}

/// A stored point the search finds: where it is (decoded from its score, as GEOPOS replies it) and
/// its distance from the centre in metres. WITHDIST replies `search.unit().from_meters(distance)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    pub point: Point,
    pub distance: f64,
}

impl Search {
    /// BYRADIUS `radius` `unit` FROMLONLAT (or FROMMEMBER with the member's decoded position)
    /// `center`. Errors, in this order: the centre as [`point::check_lon_lat`] refuses it, a NaN
    /// radius ("need numeric radius"), a negative one. An infinite radius is allowed, as in Redis.
    pub fn by_radius(center: Point, radius: f64, unit: Unit) -> Result<Search, GeoError> {
        let center = point::check_lon_lat(center.lon, center.lat)?;
        if radius.is_nan() {
            return Err(GeoError::NeedNumericRadius);
        }
        if radius < 0.0 {
            return Err(GeoError::NegativeRadius);
        }
        Ok(Search {
            center,
            shape: Shape::Radius(radius),
            unit,
        })
    }

    /// BYBOX `width` `height` `unit` around `center`. Errors, in this order: the centre, a NaN width,
    /// a NaN height, either negative ("height or width cannot be negative").
    pub fn by_box(center: Point, width: f64, height: f64, unit: Unit) -> Result<Search, GeoError> {
        let center = point::check_lon_lat(center.lon, center.lat)?;
        if width.is_nan() {
            return Err(GeoError::NeedNumericWidth);
        }
        if height.is_nan() {
            return Err(GeoError::NeedNumericHeight);
        }
        if height < 0.0 || width < 0.0 {
            return Err(GeoError::NegativeBox);
        }
        Ok(Search {
            center,
            shape: Shape::Box { width, height },
            unit,
        })
    }

    pub fn center(&self) -> Point {
        self.center
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// Metres in the search's unit (`shape->conversion`).
    pub fn conversion(&self) -> f64 {
        self.unit.meters()
    }

    /// The distance from the centre, in metres, that the search areas must cover: the radius, or the
    /// half diagonal of the box (`sqrt((w/2)^2 + (h/2)^2)`), times the conversion.
    pub fn reach_meters(&self) -> f64 {
        let r = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion()
    }

    /// `geohashBoundingBox`.
    pub fn bounds(&self) -> Bounds {
        let Point {
            lon: longitude,
            lat: latitude,
        } = self.center;
        let conversion = self.conversion();
        let (height, width) = match self.shape {
            Shape::Radius(r) => (conversion * r, conversion * r),
            Shape::Box { width, height } => (conversion * (height / 2.0), conversion * (width / 2.0)),
        };
        let lat_delta = distance::rad_deg(height / EARTH_RADIUS_M);
        let lon_delta_top =
            distance::rad_deg(width / EARTH_RADIUS_M / distance::deg_rad(latitude + lat_delta).cos());
        let lon_delta_bottom =
            distance::rad_deg(width / EARTH_RADIUS_M / distance::deg_rad(latitude - lat_delta).cos());
        let southern = latitude < 0.0;
        let lon_delta = if southern { lon_delta_bottom } else { lon_delta_top };
        Bounds {
            min_lon: longitude - lon_delta,
            min_lat: latitude - lat_delta,
            max_lon: longitude + lon_delta,
            max_lat: latitude + lat_delta,
        }
    }

    /// `geoWithinShape`: the point stored under `score`, decoded, and its distance from the centre,
    /// where it lies inside the shape; None where it does not.
    pub fn hit(&self, score: f64) -> Option<Hit> {
        let p = point::decode(score);
        let c = self.center;
        let conversion = self.conversion();
        let d = match self.shape {
            Shape::Radius(r) => distance::distance_if_in_radius(c.lon, c.lat, p.lon, p.lat, r * conversion),
            Shape::Box { width, height } => distance::distance_if_in_rectangle(
                width * conversion,
                height * conversion,
                c.lon,
                c.lat,
                p.lon,
                p.lat,
            ),
        }?;
        Some(Hit {
            point: p,
            distance: d,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(lon: f64, lat: f64) -> Point {
        Point { lon, lat }
    }

    #[test]
    fn constructors_refuse_what_redis_refuses_in_its_order() {
        let m = Unit::Meters;
        assert_eq!(
            Search::by_radius(at(200.0, 0.0), -1.0, m),
            Err(GeoError::InvalidPair { lon: 200.0, lat: 0.0 })
        );
        assert_eq!(
            Search::by_radius(at(f64::NAN, 0.0), 1.0, m),
            Err(GeoError::NotFloat)
        );
        assert_eq!(
            Search::by_radius(at(0.0, 0.0), f64::NAN, m),
            Err(GeoError::NeedNumericRadius)
        );
        assert_eq!(
            Search::by_radius(at(0.0, 0.0), -1.0, m),
            Err(GeoError::NegativeRadius)
        );
        assert!(Search::by_radius(at(0.0, 0.0), f64::INFINITY, m).is_ok());
        assert!(Search::by_radius(at(0.0, 0.0), -0.0, m).is_ok());
        assert_eq!(
            Search::by_box(at(0.0, 0.0), f64::NAN, f64::NAN, m),
            Err(GeoError::NeedNumericWidth)
        );
        assert_eq!(
            Search::by_box(at(0.0, 0.0), -1.0, f64::NAN, m),
            Err(GeoError::NeedNumericHeight)
        );
        assert_eq!(
            Search::by_box(at(0.0, 0.0), 1.0, -1.0, m),
            Err(GeoError::NegativeBox)
        );
        assert!(Search::by_box(at(0.0, 0.0), f64::INFINITY, f64::INFINITY, m).is_ok());
        assert_eq!(
            GeoError::NegativeBox.text(),
            "ERR height or width cannot be negative"
        );
    }

    #[test]
    fn bounds_widen_towards_the_pole() {
        let s = Search::by_radius(at(10.0, 60.0), 100.0, Unit::Kilometers).unwrap();
        let b = s.bounds();
        assert!(b.min_lat < 60.0 && b.max_lat > 60.0);
        assert!((b.max_lat - 60.0) < (b.max_lon - 10.0));
        assert_eq!(b.max_lon - 10.0, 10.0 - b.min_lon);
        let s = Search::by_box(at(10.0, -60.0), 200.0, 100.0, Unit::Kilometers).unwrap();
        let b = s.bounds();
        assert!((b.max_lat + 60.0) < (b.max_lon - 10.0));
    }

    #[test]
    fn hits_carry_the_decoded_point_and_its_distance() {
        let s = Search::by_radius(at(15.0, 37.0), 200.0, Unit::Kilometers).unwrap();
        let score = point::bits_to_score(point::encode(13.361389, 38.115556).unwrap());
        let h = s.hit(score).unwrap();
        assert_eq!(h.point, point::decode(score));
        assert_eq!(
            h.distance,
            distance::distance(15.0, 37.0, h.point.lon, h.point.lat)
        );
        assert!(Search::by_radius(at(15.0, 37.0), 100.0, Unit::Kilometers)
            .unwrap()
            .hit(score)
            .is_none());
        let b = Search::by_box(at(15.0, 37.0), 400.0, 400.0, Unit::Kilometers).unwrap();
        assert_eq!(b.hit(score).map(|h| h.distance), Some(h.distance));
    }
}
