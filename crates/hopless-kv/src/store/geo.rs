//! The store's geo searches: GEOSEARCH, GEORADIUS and their kin over a sorted set, under one lock of
//! the source, and GEOSEARCHSTORE and GEORADIUS's STORE / STOREDIST, which write the result to a
//! destination under the same locks. The arithmetic (which score ranges to scan, which points are
//! hits, their order) is `crate::geo`; parsing the arguments, and their errors, is the server's.
//!
//! A search's arguments can depend on the source itself (FROMMEMBER's centre is a member's position,
//! and Redis checks the member where it meets the argument, between the other checks), so the caller
//! parses them inside the lock: it gets the source as a [`GeoSet`] (or None where the key is missing)
//! and returns the [`GeoQuery`] to run, or its own error.

use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::Result;
use crate::geo::{self, Hit, Point, Search, Sort};
use crate::types::zset::{ScoreRange, ZSet};
use crate::types::{Collection, Kind};

/// The source sorted set as a query's plan sees it, under the lock the search then runs under.
pub struct GeoSet<'a> {
    score: &'a dyn Fn(&[u8]) -> Option<f64>,
}

impl GeoSet<'_> {
    /// `member`'s score, None when it is not in the set.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        (self.score)(member)
    }

    /// `member`'s position (its score decoded, as GEOPOS replies it), None when it is not in the set.
    pub fn position(&self, member: &[u8]) -> Option<Point> {
        self.score(member).map(geo::decode)
    }
}

/// A search to run: its geometry, its order, COUNT (0: none) and COUNT's ANY.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeoQuery {
    pub search: Search,
    pub sort: Sort,
    pub count: usize,
    pub any: bool,
}

/// A point a search found: the member, its score, and where it is and how far from the centre.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoHit {
    pub member: Vec<u8>,
    pub score: f64,
    pub hit: Hit,
}

/// What GEOSEARCHSTORE and GEORADIUS's STORE give each stored member as its score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeoStored {
    /// STORE (and GEOSEARCHSTORE without STOREDIST): the member's score, its position.
    Score,
    /// STOREDIST: its distance from the centre, in the search's unit.
    Distance,
}

fn zset<A: KvAlloc>(c: &Collection<A>) -> &ZSet<A> {
    match c {
        Collection::ZSet(z) => z,
        _ => unreachable!("the caller checked the kind"),
    }
}

/// Runs `q` over `z`: each score range of the search in order, walked from its first member on while
/// the score stays below the range's end, keeping the hits (with ANY, stopping once COUNT of them are
/// kept), then the hits ranked and cut to what is replied.
fn run<A: KvAlloc>(z: &ZSet<A>, q: &GeoQuery) -> Vec<GeoHit> {
    let limit = if q.any { q.count } else { 0 };
    let mut hits = Vec::new();
    'ranges: for r in &q.search.ranges() {
        if limit != 0 && hits.len() >= limit {
            break;
        }
        let range = ScoreRange {
            min: r.min,
            max: r.max,
            min_ex: false,
            max_ex: true,
        };
        let (lo, hi) = z.score_ranks(&range);
        for (member, score) in z.walk(lo, false).take(hi - lo) {
            if let Some(hit) = q.search.hit(score) {
                hits.push(GeoHit {
                    member: member.to_vec(),
                    score,
                    hit,
                });
                if limit != 0 && hits.len() >= limit {
                    break 'ranges;
                }
            }
        }
    }
    let n = geo::rank(&mut hits, q.sort, q.count, q.any, |h| h.hit.distance);
    hits.truncate(n);
    hits
}

impl<A: KvAlloc> Store<A> {
    /// GEOSEARCH, GEORADIUS and their kin, under one read lock of `key`: `plan` sees the sorted set
    /// (None when the key is missing) and returns the query to run (None: none, an empty reply), or its
    /// own error, which comes back as the inner `Err`. The hits come in reply order, as many as are
    /// replied. WRONGTYPE, before `plan` runs, for a key of another kind.
    pub fn geo_search<E>(
        &self,
        key: &[u8],
        plan: impl FnOnce(Option<&GeoSet<'_>>) -> std::result::Result<Option<GeoQuery>, E>,
    ) -> Result<std::result::Result<Vec<GeoHit>, E>> {
        let mut plan = Some(plan);
        let found = self.read_coll(key, Kind::ZSet, |c| {
            let z = zset(c);
            let score = |m: &[u8]| z.score(m);
            match plan.take() {
                Some(plan) => Ok(plan(Some(&GeoSet { score: &score }))?
                    .map(|q| run(z, &q))
                    .unwrap_or_default()),
                None => Ok(Vec::new()),
            }
        })?;
        Ok(match found {
            Some(r) => r,
            // A missing key: the plan still checks its arguments; nothing is found.
            None => match plan.take() {
                Some(plan) => plan(None).map(|_| Vec::new()),
                None => Ok(Vec::new()),
            },
        })
    }

    /// GEOSEARCHSTORE and GEORADIUS's STORE / STOREDIST: as [`Store::geo_search`] over `src`, with
    /// `dst` locked too; `plan` also says what the stored scores are. The hits replace whatever `dst`
    /// held, and its TTL, as a sorted set (none deletes `dst`); returns how many there were. An error
    /// (WRONGTYPE of `src`, `plan`'s) changes nothing.
    pub fn geo_search_store<E>(
        &self,
        dst: &[u8],
        src: &[u8],
        plan: impl FnOnce(Option<&GeoSet<'_>>) -> std::result::Result<Option<(GeoQuery, GeoStored)>, E>,
    ) -> Result<std::result::Result<usize, E>> {
        self.deny_oom(dst)?;
        self.with_keys(&[dst, src], |v| {
            let pairs: Vec<(Vec<u8>, f64)> = {
                let z = v.coll(1, Kind::ZSet)?.map(zset);
                let planned = match z {
                    Some(z) => {
                        let score = |m: &[u8]| z.score(m);
                        plan(Some(&GeoSet { score: &score }))
                    }
                    None => plan(None),
                };
                let (q, how) = match planned {
                    Err(e) => return Ok(Err(e)),
                    Ok(None) => (None, GeoStored::Score),
                    Ok(Some((q, how))) => (Some(q), how),
                };
                let hits = match (z, &q) {
                    (Some(z), Some(q)) => run(z, q),
                    _ => Vec::new(),
                };
                hits.into_iter()
                    .map(|h| {
                        let s = match (how, &q) {
                            (GeoStored::Distance, Some(q)) => q.search.unit().from_meters(h.hit.distance),
                            _ => h.score,
                        };
                        // A sorted set holds no NaN (Redis would abort on one). No distance between
                        // points within the limits is NaN (the haversine's root stays at most 1), so
                        // this only keeps the set well formed whatever the arithmetic gives.
                        (h.member, if s.is_nan() { 0.0 } else { s })
                    })
                    .collect()
            };
            let n = pairs.len();
            let z = ZSet::from_pairs(v.alloc().clone(), &pairs, v.limits());
            v.put(0, Collection::ZSet(z))?;
            Ok(Ok(n))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use allocator_api2::alloc::Global;

    use super::*;
    use crate::clock::ManualClock;
    use crate::error::Error;
    use crate::geo::Unit;
    use crate::store::{Config, ExpireCond};
    use crate::types::zset::AddFlags;

    fn store() -> Store<Global> {
        let cfg = Config {
            shards: 4,
            active_expiry: false,
            clock: Arc::new(ManualClock::new(1_700_000_000_000)),
            ..Config::default()
        };
        Store::with_allocator(cfg, Global)
    }

    fn add(s: &Store<Global>, key: &[u8], points: &[(f64, f64, &str)]) {
        let pairs: Vec<(f64, &[u8])> = points
            .iter()
            .map(|&(lon, lat, m)| (geo::bits_to_score(geo::encode(lon, lat).unwrap()), m.as_bytes()))
            .collect();
        s.zadd(key, AddFlags::default(), &pairs).unwrap();
    }

    fn sicily(s: &Store<Global>) {
        add(
            s,
            b"Sicily",
            &[
                (13.361389, 38.115556, "Palermo"),
                (15.087269, 37.502669, "Catania"),
                (12.758489, 38.788135, "edge2"),
                (13.583333, 37.316667, "Agrigento"),
            ],
        );
    }

    fn query(lon: f64, lat: f64, km: f64, sort: Sort, count: usize, any: bool) -> GeoQuery {
        GeoQuery {
            search: Search::by_radius(Point { lon, lat }, km, Unit::Kilometers).unwrap(),
            sort,
            count,
            any,
        }
    }

    fn names(hits: &[GeoHit]) -> Vec<&str> {
        hits.iter()
            .map(|h| std::str::from_utf8(&h.member).unwrap())
            .collect()
    }

    #[test]
    fn a_search_finds_ranks_and_cuts() {
        let s = store();
        sicily(&s);
        let q = query(15.0, 37.0, 200.0, Sort::Asc, 0, false);
        let hits = s
            .geo_search(b"Sicily", |_| Ok::<_, ()>(Some(q)))
            .unwrap()
            .unwrap();
        // As Redis answers GEORADIUS Sicily 15 37 200 km WITHDIST ASC.
        assert_eq!(names(&hits), ["Catania", "Agrigento", "Palermo"]);
        let km: Vec<String> = hits
            .iter()
            .map(|h| geo::format_distance(Unit::Kilometers.from_meters(h.hit.distance)))
            .collect();
        assert_eq!(km, ["56.4413", "130.4235", "190.4424"]);
        assert_eq!(hits[0].score, 3479447370796909.0);
        let q = query(15.0, 37.0, 200.0, Sort::Desc, 2, false);
        let hits = s
            .geo_search(b"Sicily", |_| Ok::<_, ()>(Some(q)))
            .unwrap()
            .unwrap();
        assert_eq!(names(&hits), ["Palermo", "Agrigento"]);
        // ANY keeps the first hit found and stops.
        let q = query(15.0, 37.0, 200.0, Sort::None, 1, true);
        let hits = s
            .geo_search(b"Sicily", |_| Ok::<_, ()>(Some(q)))
            .unwrap()
            .unwrap();
        assert_eq!(hits.len(), 1);
    }

    #[test]
    fn the_plan_sees_the_set_or_its_absence_and_its_errors_come_back() {
        let s = store();
        sicily(&s);
        let r = s.geo_search(b"Sicily", |set| {
            let set = set.unwrap();
            assert!(set.score(b"nobody").is_none());
            let p = set.position(b"Palermo").unwrap();
            assert_eq!(geo::format_coordinate(p.lon), "13.36138933897018433");
            Err::<Option<GeoQuery>, _>("no")
        });
        assert_eq!(r, Ok(Err("no")));
        let r = s.geo_search(b"missing", |set| {
            assert!(set.is_none());
            Ok::<_, ()>(Some(query(0.0, 0.0, 1.0, Sort::None, 0, false)))
        });
        assert_eq!(r, Ok(Ok(Vec::new())));
        s.set_simple(b"str", b"v").unwrap();
        let r = s.geo_search(b"str", |_| -> std::result::Result<_, ()> {
            panic!("the type comes first")
        });
        assert_eq!(r, Err(Error::WrongType));
        let r = s.geo_search_store(b"d", b"str", |_| -> std::result::Result<_, ()> {
            panic!("the type comes first")
        });
        assert_eq!(r, Err(Error::WrongType));
    }

    #[test]
    fn a_store_replaces_the_destination_or_deletes_it() {
        let s = store();
        sicily(&s);
        s.set_simple(b"d", b"old").unwrap();
        assert!(s.expire(b"d", 100, ExpireCond::Always).unwrap());
        let q = query(15.0, 37.0, 200.0, Sort::Asc, 2, false);
        let n = s
            .geo_search_store(b"d", b"Sicily", |_| Ok::<_, ()>(Some((q, GeoStored::Distance))))
            .unwrap();
        assert_eq!(n, Ok(2));
        assert_eq!(s.ttl(b"d"), -1);
        let got = s
            .zrange(
                b"d",
                &crate::types::zset::RangeSpec::new(crate::types::zset::RangeBy::Rank(0, -1), false),
            )
            .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, b"Catania");
        assert_eq!(geo::format_distance(got[0].1), "56.4413");
        let n = s
            .geo_search_store(b"d", b"Sicily", |_| Ok::<_, ()>(Some((q, GeoStored::Score))))
            .unwrap();
        assert_eq!(n, Ok(2));
        assert_eq!(s.zscore(b"d", b"Catania").unwrap(), Some(3479447370796909.0));
        // An error leaves the destination alone; nothing found, or no source, deletes it.
        let r = s.geo_search_store(b"d", b"Sicily", |_| Err::<Option<(GeoQuery, GeoStored)>, _>(7));
        assert_eq!(r, Ok(Err(7)));
        assert_eq!(s.zcard(b"d").unwrap(), 2);
        let far = query(-100.0, 40.0, 1.0, Sort::None, 0, false);
        let r = s.geo_search_store(b"d", b"Sicily", |_| Ok::<_, ()>(Some((far, GeoStored::Score))));
        assert_eq!(r, Ok(Ok(0)));
        assert_eq!(s.exists(&[b"d"]), 0);
        s.set_simple(b"d", b"old").unwrap();
        let r = s.geo_search_store(b"d", b"missing", |set| {
            assert!(set.is_none());
            Ok::<_, ()>(None)
        });
        assert_eq!(r, Ok(Ok(0)));
        assert_eq!(s.exists(&[b"d"]), 0);
        // The source as its own destination.
        let r = s.geo_search_store(b"Sicily", b"Sicily", |_| Ok::<_, ()>(Some((q, GeoStored::Score))));
        assert_eq!(r, Ok(Ok(2)));
        assert_eq!(s.zcard(b"Sicily").unwrap(), 2);
    }

    #[test]
    fn huge_and_antipodal_searches_stay_finite() {
        let s = store();
        let mut pts = Vec::new();
        let names: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            let lon = -180.0 + (i as f64) * 1.8;
            let lat = -85.05112878 + (i as f64 % 50.0) * 3.4;
            pts.push((lon, lat, n.as_str()));
        }
        pts.push((180.0, 85.05112878, "corner"));
        pts.push((-180.0, -85.05112878, "other"));
        add(&s, b"w", &pts);
        for &(lon, lat) in &[
            (0.0, 0.0),
            (180.0, 85.05112878),
            (-180.0, -85.05112878),
            (0.0, -85.0),
        ] {
            for r in [f64::INFINITY, 1e300, 20_000.0, 0.0] {
                let q = query(lon, lat, r, Sort::Asc, 0, false);
                let hits = s.geo_search(b"w", |_| Ok::<_, ()>(Some(q))).unwrap().unwrap();
                for h in &hits {
                    assert!(!h.hit.distance.is_nan(), "{lon} {lat} {r}");
                }
            }
        }
    }
}
