//! Redis 7.0's geo arithmetic, pure: the scores GEOADD stores, the positions GEOPOS and the strings
//! GEOHASH reply, the distances GEODIST measures, and the score ranges, membership tests and order a
//! GEOSEARCH or GEORADIUS runs through. Every result is bit for bit Redis's on x86-64: the same
//! formulas, constants and floating-point operations in the same order (`sin`, `cos`, `asin` and
//! `sqrt` come from the same C library).
//!
//! # The representation
//!
//! A geo set is a sorted set whose scores are positions. The world is the rectangle of longitudes
//! -180..180 and latitudes -85.05112878..85.05112878 (Web Mercator's limits: the poles cannot be
//! stored). Each axis is cut into 2^26 equal slices; a point's slice numbers, 26 bits each, are
//! interleaved (latitude in the even bits, longitude in the odd ones) into a 52-bit integer, and that
//! integer is the score. A score thus names a cell about 0.6 m across, and the top `2 × s` bits of a
//! score name the coarser cell of step `s` holding it, so every point in a cell lies in one score
//! range: a search becomes a few sorted-set range scans.
//!
//! A point on the northern or eastern limit falls one slice past the last (bit 52 or 53 set; past
//! 2^53 the score is the integer rounded to an `f64`), as in Redis. The cells a search scans lie
//! inside the limits unless its own centre is on such a limit, so only such a search finds those
//! points, as in Redis.
//!
//! Reading a score back truncates it to an integer as x86-64 C does, so any score, even one set by
//! ZADD, decodes to the position Redis reports for it: the centre of the score's cell, clamped to
//! the limits.
//!
//! # What a command does with this module
//!
//! - GEOADD: [`encode`] (which checks the pair first) gives the integer; the score is
//!   [`bits_to_score`] of it.
//! - GEOPOS: [`decode`] the score; print each coordinate with [`format_coordinate`].
//! - GEOHASH: [`geohash_string`] of the score.
//! - GEODIST: [`distance`] between the two decoded points, then [`Unit::from_meters`], printed with
//!   [`format_distance`]. The unit argument is read with [`Unit::parse`].
//! - GEOSEARCH / GEORADIUS: build a [`Search`] ([`Search::by_radius`] or [`Search::by_box`], around
//!   a position given or a member's decoded score). For each [`ScoreRange`] of
//!   [`Search::ranges`], in order, walk the sorted set from the first element with `score >= min`
//!   while `score < max` (score order, then member order, as the sorted set holds them) and keep the
//!   elements [`Search::hit`] accepts. With COUNT and ANY, stop as soon as `count` hits are kept
//!   (inside a range or before the next). Then [`rank`] orders the hits and says how many to reply.
//!   A hit's WITHDIST is `format_distance(search.unit().from_meters(hit.distance))`, its WITHHASH
//!   the score as an `i64` (truncated), its WITHCOORD the two coordinates of `hit.point` through
//!   [`format_coordinate`]; STOREDIST stores `search.unit().from_meters(hit.distance)`, STORE the
//!   score.
//!
//! # Layout
//!
//! | file | what it holds |
//! |---|---|
//! | `hash` | cells: interleaving, encoding and decoding at any step, neighbours, 52-bit alignment |
//! | `point` | a point and its score: the pair check, GEOADD's encoding, decoding, GEOHASH's string |
//! | `distance` | haversine distance, the in-radius and in-box tests, units |
//! | `shape` | a search's centre and shape, its bounding box, the hit test |
//! | `area` | the search's step, its nine cells and the score ranges scanned |
//! | `rank` | the order hits are replied in (Redis's merge sort and partial quicksort) |
//! | `format` | distances and coordinates printed as Redis prints them |
//! | `error` | the errors, worded as Redis words them |

mod area;
mod distance;
mod error;
mod format;
mod hash;
mod point;
mod rank;
mod shape;

pub use area::{estimate_steps, Areas, ScanRanges, ScoreRange, MERCATOR_MAX};
pub use distance::{
    distance, distance_if_in_radius, distance_if_in_rectangle, lat_distance, Unit, D_R, EARTH_RADIUS_M,
};
pub use error::GeoError;
pub use format::{format_coordinate, format_distance};
pub use hash::{
    decode_wgs84, encode_wgs84, neighbors, Area, HashBits, Neighbors, Range, LAT_MAX, LAT_MIN, LON_MAX,
    LON_MIN, STEP_MAX,
};
pub use point::{bits_to_score, check_lon_lat, decode, encode, geohash_string, score_to_bits, Point};
pub use rank::{rank, Sort};
pub use shape::{Bounds, Hit, Search, Shape};

#[cfg(test)]
mod tests;
