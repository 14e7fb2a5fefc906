//! Which scores a search reads: the cell holding the centre, at a step coarse enough for the search's
//! reach, and its eight neighbours, less those the search cannot touch
//! (`geohashCalculateAreasByShapeWGS84`), each turned into a half-open score range, in the order Redis
//! scans them and with the repeats it skips (`membersOfAllNeighbors`).

use super::hash::{self, Area, HashBits, Neighbors, STEP_MAX, WGS84_LAT, WGS84_LON};
use super::shape::Search;

/// Redis's `MERCATOR_MAX`: half the Mercator projection's width, in metres.
pub const MERCATOR_MAX: f64 = 20037726.37;

/// `geohashEstimateStepsByRadius`: the step whose cells are about as wide as a search reaching
/// `range_m` metres, one or two coarser past latitude 66 or 80, framed to 1..=26.
///
/// Redis doubles the range until it passes [`MERCATOR_MAX`]; this stops once the step can only frame
/// to 26, which gives the same answer for every range and ends for a negative one too.
pub fn estimate_steps(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    // Past step 30 the answer frames to 26 whatever the latitude: at most 2 + 2 are taken off below.
    while range < MERCATOR_MAX && step <= 30 {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Written as Redis writes it: a NaN latitude takes nothing off (a range test would).
    #[allow(clippy::manual_range_contains)]
    if lat > 66.0 || lat < -66.0 {
        step -= 1;
        if lat > 80.0 || lat < -80.0 {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The cells a search covers (Redis's `GeoHashRadius`): the centre's cell and its neighbours, a
/// neighbour the search cannot reach left as [`HashBits::ZERO`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Areas {
    pub hash: HashBits,
    pub area: Area,
    pub neighbors: Neighbors,
}

/// Scores `min <= score < max`: every point inside one cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
}

impl ScoreRange {
    /// `scoresOfGeoHashBox`: the cell's bits aligned to 52, and the next cell's; each integer
    /// becomes the nearest `f64`, as C passes it to the sorted-set range query.
    pub fn of_cell(hash: HashBits) -> ScoreRange {
        let min = hash.align_52();
        let next = HashBits {
            bits: hash.bits.wrapping_add(1),
            step: hash.step,
        };
        ScoreRange {
            min: min as f64,
            max: next.align_52() as f64,
        }
    }

    /// Whether a score lies in the range (min included, max excluded).
    pub fn contains(&self, score: f64) -> bool {
        self.min <= score && score < self.max
    }
}

/// The score ranges a search reads, at most nine, in order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanRanges {
    ranges: [ScoreRange; 9],
    len: usize,
}

impl ScanRanges {
    pub fn as_slice(&self) -> &[ScoreRange] {
        &self.ranges[..self.len]
    }
}

impl std::ops::Deref for ScanRanges {
    type Target = [ScoreRange];

    fn deref(&self) -> &[ScoreRange] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a ScanRanges {
    type Item = &'a ScoreRange;
    type IntoIter = std::slice::Iter<'a, ScoreRange>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// The centre's cell at `step`, its neighbours and its span (None only for a centre out of range,
/// which a [`Search`] never has).
fn cells_at(lon: f64, lat: f64, step: u8) -> Option<(HashBits, Neighbors, Area)> {
    let h = hash::encode(WGS84_LON, WGS84_LAT, lon, lat, step)?;
    let area = hash::decode(WGS84_LON, WGS84_LAT, h)?;
    Some((h, hash::neighbors(h), area))
}

impl Search {
    /// `geohashCalculateAreasByShapeWGS84`: estimates the step from [`Search::reach_meters`] and
    /// the centre's latitude; takes one step coarser if the north, south, east or west neighbour
    /// does not reach the bounding box's edge; then, from step 2 on, zeroes the row or column of
    /// neighbours beyond each side where the centre's cell already passes the bounding box.
    pub fn areas(&self) -> Areas {
        let b = self.bounds();
        let c = self.center();
        let mut steps = estimate_steps(self.reach_meters(), c.lat);
        let zero_area = Area {
            hash: HashBits::ZERO,
            lon: WGS84_LON,
            lat: WGS84_LAT,
        };
        let Some((mut h, mut n, mut area)) = cells_at(c.lon, c.lat, steps) else {
            return Areas {
                hash: HashBits::ZERO,
                area: zero_area,
                neighbors: Neighbors::default(),
            };
        };

        let span = |cell: HashBits| hash::decode(WGS84_LON, WGS84_LAT, cell).unwrap_or(zero_area);
        let (north, south, east, west) = (span(n.north), span(n.south), span(n.east), span(n.west));
        let decrease_step = north.lat.max < b.max_lat
            || south.lat.min > b.min_lat
            || east.lon.max < b.max_lon
            || west.lon.min > b.min_lon;
        if steps > 1 && decrease_step {
            steps -= 1;
            if let Some(cells) = cells_at(c.lon, c.lat, steps) {
                (h, n, area) = cells;
            }
        }

        if steps >= 2 {
            if area.lat.min < b.min_lat {
                n.south = HashBits::ZERO;
                n.south_west = HashBits::ZERO;
                n.south_east = HashBits::ZERO;
            }
            if area.lat.max > b.max_lat {
                n.north = HashBits::ZERO;
                n.north_east = HashBits::ZERO;
                n.north_west = HashBits::ZERO;
            }
            if area.lon.min < b.min_lon {
                n.west = HashBits::ZERO;
                n.south_west = HashBits::ZERO;
                n.north_west = HashBits::ZERO;
            }
            if area.lon.max > b.max_lon {
                n.east = HashBits::ZERO;
                n.south_east = HashBits::ZERO;
                n.north_east = HashBits::ZERO;
            }
        }
        Areas {
            hash: h,
            area,
            neighbors: n,
        }
    }

    /// The score ranges to scan, in Redis's order: centre, north, south, east, west, north-east,
    /// north-west, south-east, south-west. A zeroed neighbour is skipped, and so is a cell equal to
    /// the last one scanned other than the centre (huge searches make adjacent neighbours the same
    /// cell); a repeat further apart is scanned again, as Redis scans it.
    pub fn ranges(&self) -> ScanRanges {
        let a = self.areas();
        let n = a.neighbors;
        let cells = [
            a.hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ];
        let mut out = ScanRanges {
            ranges: [ScoreRange { min: 0.0, max: 0.0 }; 9],
            len: 0,
        };
        // Redis's `last_processed`: 0 means none, so a neighbour is never compared with the centre.
        let mut last = 0;
        for (i, &cell) in cells.iter().enumerate() {
            if cell.is_zero() {
                continue;
            }
            if last != 0 && cell == cells[last] {
                continue;
            }
            out.ranges[out.len] = ScoreRange::of_cell(cell);
            out.len += 1;
            last = i;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::distance::Unit;
    use super::super::point::Point;
    use super::*;

    #[test]
    fn steps_follow_the_range_and_latitude() {
        assert_eq!(estimate_steps(0.0, 0.0), 26);
        assert_eq!(estimate_steps(-0.0, 0.0), 26);
        assert_eq!(estimate_steps(5e-324, 0.0), 26);
        // 1 m doubles 25 times to pass 20037 km: 26 - 2, and 2 less near a pole.
        assert_eq!(estimate_steps(1.0, 0.0), 24);
        assert_eq!(estimate_steps(1.0, 89.0), 22);
        assert_eq!(estimate_steps(-1.0, 0.0), 26);
        assert_eq!(estimate_steps(f64::NAN, 0.0), 1);
        assert_eq!(estimate_steps(f64::INFINITY, 0.0), 1);
        assert_eq!(estimate_steps(MERCATOR_MAX, 0.0), 1);
        // 1000 km: doubled 5 times passes 20037 km; 6 - 2 = 4, less 1 past 66, less 2 past 80.
        assert_eq!(estimate_steps(1_000_000.0, 0.0), 4);
        assert_eq!(estimate_steps(1_000_000.0, 70.0), 3);
        assert_eq!(estimate_steps(1_000_000.0, -81.0), 2);
        assert_eq!(estimate_steps(1_000_000.0, f64::NAN), 4);
    }

    #[test]
    fn a_huge_search_scans_each_of_the_four_step_1_cells_once() {
        let s = Search::by_radius(Point { lon: 0.0, lat: 0.0 }, f64::INFINITY, Unit::Meters).unwrap();
        let r = s.ranges();
        assert_eq!(r.len(), 4);
        let mut mins: Vec<f64> = r.iter().map(|r| r.min).collect();
        mins.sort_by(f64::total_cmp);
        let q = (1u64 << 50) as f64;
        assert_eq!(mins, vec![0.0, q, 2.0 * q, 3.0 * q]);
    }

    #[test]
    fn a_small_search_keeps_the_neighbours_it_touches() {
        let s = Search::by_radius(Point { lon: 15.0, lat: 37.0 }, 200.0, Unit::Kilometers).unwrap();
        let r = s.ranges();
        assert!(!r.is_empty() && r.len() <= 9);
        for x in &r {
            assert!(x.min < x.max);
        }
        let centre = crate::geo::point::encode(15.0, 37.0).unwrap() as f64;
        assert!(r[0].contains(centre));
    }

    #[test]
    fn odd_sizes_give_ranges_without_panicking() {
        let sizes = [
            0.0,
            -0.0,
            5e-324,
            1e-300,
            1.0,
            1e7,
            1e300,
            f64::MAX,
            f64::INFINITY,
        ];
        let centres = [
            (0.0, 0.0),
            (180.0, 85.05112878),
            (-180.0, -85.05112878),
            (179.99, 0.0),
            (0.0, 84.0),
        ];
        for &(lon, lat) in &centres {
            let c = Point { lon, lat };
            for &x in &sizes {
                for unit in [Unit::Meters, Unit::Kilometers, Unit::Feet, Unit::Miles] {
                    let r = Search::by_radius(c, x, unit).unwrap().ranges();
                    assert!(!r.is_empty());
                    for &y in &sizes {
                        let r = Search::by_box(c, x, y, unit).unwrap().ranges();
                        assert!(!r.is_empty());
                    }
                }
            }
        }
    }
}
