//! The geo searches: GEORADIUS, GEORADIUSBYMEMBER, their `_RO` forms, GEOSEARCH and GEOSEARCHSTORE,
//! read as Redis 7.0's `georadiusGeneric` reads them (its checks in its order, its texts), run by the
//! store (`hopless_kv::store::Store::geo_search`, `geo_search_store`), replied as Redis replies; and the
//! argument readers and coordinate printing the other geo commands share.
//!
//! Where a search's centre is a member (GEORADIUSBYMEMBER, FROMMEMBER), Redis checks the member at the
//! point of the arguments where it meets it, and skips the check (and, for GEORADIUSBYMEMBER, the
//! radius's) when the key is missing; so the arguments are read under the store's lock, with the source
//! at hand. They are read once before, as if the key were missing (the most lenient reading), only to
//! learn whether the result is stored: the options that say so read the same whatever the key holds.

use std::borrow::Cow;

use bytes::Bytes;
use hopless_kv::geo::{self, GeoError, Point, Search, Sort, Unit};
use hopless_kv::store::{GeoHit, GeoQuery, GeoSet, GeoStored};
use hopless_kv::types::zset::parse_score;

use super::command::{int_arg, key_at, Ctx};
use crate::codec::Reply;
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::c_eq;

const NOT_FLOAT: CmdError = CmdError::Static("ERR value is not a valid float");
const NO_MEMBER: CmdError = CmdError::Static("ERR could not decode requested zset member");
const COUNT_POSITIVE: CmdError = CmdError::Static("ERR COUNT must be > 0");
const ANY_NEEDS_COUNT: CmdError = CmdError::Static("ERR the ANY argument requires COUNT argument");
const STORE_WITH: CmdError = CmdError::Static(
    "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
);
const SEARCHSTORE_WITH: CmdError =
    CmdError::Static("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options");

/// A geo argument's error as a reply.
pub(super) fn geo_err(e: GeoError) -> CmdError {
    match e.text() {
        Cow::Borrowed(s) => CmdError::Static(s),
        Cow::Owned(s) => CmdError::Msg(s),
    }
}

/// `getDoubleFromObjectOrReply`: a number (neither NaN nor out of range), else `err`.
fn number(b: &[u8], err: CmdError) -> Result<f64, CmdError> {
    parse_score(b).ok_or(err)
}

/// `extractLongLatOrReply`: the longitude, then the latitude, each a number, then both within range.
pub(super) fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<Point, CmdError> {
    let lon = number(lon, NOT_FLOAT)?;
    let lat = number(lat, NOT_FLOAT)?;
    geo::check_lon_lat(lon, lat).map_err(geo_err)
}

/// A unit argument (`extractUnitOrReply`).
pub(super) fn unit_arg(b: &[u8]) -> Result<Unit, CmdError> {
    Unit::parse(b).map_err(geo_err)
}

/// A coordinate as Redis replies it (`addReplyHumanLongDouble`): a bulk string in RESP2, a double in
/// RESP3, printed alike.
pub(super) fn coordinate(out: &mut Reply, x: f64) {
    let s = geo::format_coordinate(x);
    if out.resp3() {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(s.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(s.as_bytes());
    }
}

/// Which search command runs (Redis's flags to `georadiusGeneric`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Variant {
    /// GEORADIUS: around a longitude and latitude, STORE and STOREDIST allowed.
    Radius,
    RadiusRo,
    /// GEORADIUSBYMEMBER: around a member.
    ByMember,
    ByMemberRo,
    /// GEOSEARCH: FROMMEMBER or FROMLONLAT, BYRADIUS or BYBOX.
    Search,
    /// GEOSEARCHSTORE: GEOSEARCH's arguments after a destination, and STOREDIST.
    SearchStore,
}

impl Variant {
    fn no_store(self) -> bool {
        matches!(self, Variant::RadiusRo | Variant::ByMemberRo)
    }

    fn geosearch(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    /// The source key's argument index.
    fn source(self) -> usize {
        if self == Variant::SearchStore {
            2
        } else {
            1
        }
    }
}

/// A radius or a box, as given (the unit's conversion is applied by the search).
#[derive(Clone, Copy)]
enum Size {
    Radius(f64),
    Box(f64, f64),
}

/// What a search's arguments ask for.
struct Parsed {
    /// The destination's argument index and whether STOREDIST asked for distances, when the result is
    /// stored.
    store: Option<(usize, bool)>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    /// The search to run; None where the source is missing (nothing is searched).
    query: Option<GeoQuery>,
}

/// `extractDistanceOrReply`: a radius (a number, not negative), then its unit.
fn radius(r: &[u8], unit: &[u8]) -> Result<(Size, Unit), CmdError> {
    let r = number(r, geo_err(GeoError::NeedNumericRadius))?;
    if r < 0.0 {
        return Err(geo_err(GeoError::NegativeRadius));
    }
    Ok((Size::Radius(r), unit_arg(unit)?))
}

/// `extractBoxOrReply`: a width and a height (numbers, neither negative), then their unit.
fn box_size(w: &[u8], h: &[u8], unit: &[u8]) -> Result<(Size, Unit), CmdError> {
    let w = number(w, geo_err(GeoError::NeedNumericWidth))?;
    let h = number(h, geo_err(GeoError::NeedNumericHeight))?;
    if h < 0.0 || w < 0.0 {
        return Err(geo_err(GeoError::NegativeBox));
    }
    Ok((Size::Box(w, h), unit_arg(unit)?))
}

/// Reads a search's arguments as `georadiusGeneric` does, `set` being the source (None: missing).
fn parse(a: &[Bytes], v: Variant, set: Option<&GeoSet<'_>>) -> Result<Parsed, CmdError> {
    let mut center: Option<Point> = None;
    let mut size: Option<(Size, Unit)> = None;
    let mut store: Option<(usize, bool)> = None;
    let base = match v {
        Variant::Radius | Variant::RadiusRo => {
            center = Some(lon_lat(&a[2], &a[3])?);
            size = Some(radius(&a[4], &a[5])?);
            6
        }
        Variant::ByMember | Variant::ByMemberRo => {
            // A missing key: neither the member nor the radius is read.
            if let Some(set) = set {
                center = Some(set.position(&a[2]).ok_or(NO_MEMBER)?);
                size = Some(radius(&a[3], &a[4])?);
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => {
            store = Some((1, false));
            3
        }
    };
    let (mut with_dist, mut with_hash, mut with_coord, mut any) = (false, false, false, false);
    let (mut from_member, mut from_lon_lat, mut by_radius, mut by_box) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut count: i64 = 0;
    let mut j = base;
    while j < a.len() {
        let w = &a[j][..];
        // How many arguments follow this one.
        let left = a.len() - j - 1;
        if c_eq(w, "withdist") {
            with_dist = true;
        } else if c_eq(w, "withhash") {
            with_hash = true;
        } else if c_eq(w, "withcoord") {
            with_coord = true;
        } else if c_eq(w, "any") {
            any = true;
        } else if c_eq(w, "asc") {
            sort = Sort::Asc;
        } else if c_eq(w, "desc") {
            sort = Sort::Desc;
        } else if c_eq(w, "count") && left >= 1 {
            count = int_arg(&a[j + 1])?;
            if count <= 0 {
                return Err(COUNT_POSITIVE);
            }
            j += 1;
        } else if (c_eq(w, "store") || c_eq(w, "storedist")) && left >= 1 && !v.no_store() && !v.geosearch() {
            store = Some((j + 1, c_eq(w, "storedist")));
            j += 1;
        } else if c_eq(w, "storedist") && v == Variant::SearchStore {
            store = Some((1, true));
        } else if c_eq(w, "frommember") && left >= 1 && v.geosearch() && !from_lon_lat {
            // A missing key: the member is not looked for (the reply is empty whatever it is).
            if let Some(set) = set {
                center = Some(set.position(&a[j + 1]).ok_or(NO_MEMBER)?);
            }
            from_member = true;
            j += 1;
        } else if c_eq(w, "fromlonlat") && left >= 2 && v.geosearch() && !from_member {
            center = Some(lon_lat(&a[j + 1], &a[j + 2])?);
            from_lon_lat = true;
            j += 2;
        } else if c_eq(w, "byradius") && left >= 2 && v.geosearch() && !by_box {
            size = Some(radius(&a[j + 1], &a[j + 2])?);
            by_radius = true;
            j += 2;
        } else if c_eq(w, "bybox") && left >= 3 && v.geosearch() && !by_radius {
            size = Some(box_size(&a[j + 1], &a[j + 2], &a[j + 3])?);
            by_box = true;
            j += 3;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if store.is_some() && (with_dist || with_hash || with_coord) {
        return Err(if v == Variant::SearchStore {
            SEARCHSTORE_WITH
        } else {
            STORE_WITH
        });
    }
    // The command's name as it was sent.
    let name = || String::from_utf8_lossy(&a[0]).into_owned();
    if v.geosearch() && !(from_member || from_lon_lat) {
        return Err(CmdError::Msg(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        )));
    }
    if v.geosearch() && !(by_radius || by_box) {
        return Err(CmdError::Msg(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        )));
    }
    if any && count == 0 {
        return Err(ANY_NEEDS_COUNT);
    }
    let query = match (set, center, size) {
        (Some(_), Some(center), Some((size, unit))) => {
            let search = match size {
                Size::Radius(r) => Search::by_radius(center, r, unit),
                Size::Box(w, h) => Search::by_box(center, w, h, unit),
            }
            .map_err(geo_err)?;
            Some(GeoQuery {
                search,
                sort,
                count: usize::try_from(count).unwrap_or(usize::MAX),
                any,
            })
        }
        _ => None,
    };
    Ok(Parsed {
        store,
        with_dist,
        with_hash,
        with_coord,
        query,
    })
}

/// The hits as Redis replies them: each member alone, or, with any WITH option, an array of the
/// member, its distance (a bulk string, in the search's unit, four decimals), its score as an integer
/// and its coordinates, in that order.
fn reply(out: &mut Reply, p: &Parsed, hits: &[GeoHit]) {
    let extra = usize::from(p.with_dist) + usize::from(p.with_hash) + usize::from(p.with_coord);
    let unit = p.query.map_or(Unit::Meters, |q| q.search.unit());
    out.array(hits.len());
    for h in hits {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(&h.member);
        if p.with_dist {
            out.bulk(geo::format_distance(unit.from_meters(h.hit.distance)).as_bytes());
        }
        if p.with_hash {
            // C's conversion of the score to `long long`: it truncates (a hit's score is below 2^54).
            out.int(h.score as i64);
        }
        if p.with_coord {
            out.array(2);
            coordinate(out, h.hit.point.lon);
            coordinate(out, h.hit.point.lat);
        }
    }
}

/// Runs one of the search commands.
pub(super) fn search(c: &mut Ctx<'_>, a: &[Bytes], v: Variant) -> CmdResult {
    let store = &c.shared.store;
    let src = &a[v.source()];
    // Whether the result is stored, and where: read as if the key were missing, which refuses nothing
    // the real reading accepts; a reading that fails stores nothing.
    let dest = match v {
        Variant::Search | Variant::RadiusRo | Variant::ByMemberRo => None,
        _ => parse(a, v, None).ok().and_then(|p| p.store),
    };
    match dest {
        None => {
            let mut parsed = None;
            let hits = store.geo_search(src, |set| {
                let p = parse(a, v, set)?;
                let q = p.query;
                parsed = Some(p);
                Ok::<_, CmdError>(q)
            })??;
            if let Some(p) = parsed {
                reply(c.out, &p, &hits);
            }
            c.changed_keys = Some(&[]);
        }
        Some((at, _)) => {
            let n = store.geo_search_store(&a[at], src, |set| {
                let p = parse(a, v, set)?;
                let how = match p.store {
                    Some((_, true)) => GeoStored::Distance,
                    _ => GeoStored::Score,
                };
                Ok::<_, CmdError>(p.query.map(|q| (q, how)))
            })??;
            c.changed_keys = key_at(at);
            c.out.int(n as i64);
        }
    }
    Ok(())
}
