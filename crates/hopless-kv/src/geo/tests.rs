//! The module against answers a real redis-server 7.0.15 gave on x86-64 (`redis_answers.txt`, its
//! header says which command gave each record): GEOADD's scores, GEOPOS, GEOHASH, GEODIST in every
//! unit (rounded as replied, and unrounded through STOREDIST), odd scores decoded, refused pairs, and
//! GEOSEARCH replies (members in scan order, sorted, cut by COUNT, with WITHDIST, WITHHASH and
//! WITHCOORD) on a set of 89 points, run here through the scan a caller does.

use super::*;

const ANSWERS: &str = include_str!("redis_answers.txt");

/// The records tagged `tag`, without the tag.
fn records(tag: &str) -> impl Iterator<Item = &'static str> + '_ {
    ANSWERS
        .lines()
        .filter_map(move |l| l.strip_prefix(tag)?.strip_prefix(' '))
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("{s} is no number"))
}

/// Every `point` record: (lon, lat as given, the score Redis stored).
fn points() -> Vec<(f64, f64, f64)> {
    records("point")
        .map(|r| {
            let f: Vec<&str> = r.split(' ').collect();
            (num(f[0]), num(f[1]), num(f[2]))
        })
        .collect()
}

#[test]
fn geoadd_geopos_and_geohash_match_redis() {
    let mut n = 0;
    for r in records("point") {
        let f: Vec<&str> = r.split(' ').collect();
        let (lon, lat) = (num(f[0]), num(f[1]));
        let bits = encode(lon, lat).unwrap();
        let score = bits_to_score(bits);
        assert_eq!(score.to_bits(), num(f[2]).to_bits(), "score of {r}");
        let p = decode(score);
        assert_eq!(
            [format_coordinate(p.lon), format_coordinate(p.lat)],
            [f[3], f[4]],
            "GEOPOS of {r}"
        );
        assert_eq!(&geohash_string(score)[..], f[5].as_bytes(), "GEOHASH of {r}");
        n += 1;
    }
    assert!(n >= 40);
}

#[test]
fn geodist_matches_redis_in_every_unit() {
    let pts = points();
    let units = [Unit::Meters, Unit::Kilometers, Unit::Feet, Unit::Miles];
    let mut exact = 0;
    for r in records("dist") {
        let f: Vec<&str> = r.split(' ').collect();
        let (a, b) = (
            decode(pts[f[0].parse::<usize>().unwrap()].2),
            decode(pts[f[1].parse::<usize>().unwrap()].2),
        );
        let d = distance(a.lon, a.lat, b.lon, b.lat);
        for (i, u) in units.iter().enumerate() {
            assert_eq!(
                format_distance(u.from_meters(d)),
                f[2 + i],
                "GEODIST {r} in {u:?}"
            );
            if f[6 + i] != "-" {
                assert_eq!(
                    u.from_meters(d).to_bits(),
                    num(f[6 + i]).to_bits(),
                    "STOREDIST {r} in {u:?}"
                );
                exact += 1;
            }
        }
    }
    assert!(exact >= 150);
}

#[test]
fn odd_scores_decode_as_redis_decodes_them() {
    for r in records("odd") {
        let f: Vec<&str> = r.split(' ').collect();
        let score = num(f[0]);
        let p = decode(score);
        assert_eq!(
            [format_coordinate(p.lon), format_coordinate(p.lat)],
            [f[1], f[2]],
            "GEOPOS of {r}"
        );
        assert_eq!(&geohash_string(score)[..], f[3].as_bytes(), "GEOHASH of {r}");
    }
}

#[test]
fn refused_pairs_carry_redis_text() {
    for r in records("bad") {
        let (args, text) = r.split_once(" | ").unwrap();
        let (lon, lat) = args.split_once(' ').unwrap();
        assert_eq!(encode(num(lon), num(lat)).unwrap_err().text(), text);
        assert_eq!(check_lon_lat(num(lon), num(lat)).unwrap_err().to_string(), text);
    }
}

/// GEOSEARCH's options, as far as the math goes.
struct Query {
    search: Search,
    sort: Sort,
    count: usize,
    any: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
}

/// Parses `FROMLONLAT lon lat | FROMMEMBER m`, `BYRADIUS r unit | BYBOX w h unit` and the flags.
fn query(args: &str, set: &[(f64, &str)]) -> Query {
    let a: Vec<&str> = args.split(' ').collect();
    let mut center = None;
    let mut search = None;
    let mut q = (Sort::None, 0, false, false, false, false);
    let mut i = 0;
    while i < a.len() {
        match a[i] {
            "FROMLONLAT" => {
                center = Some(Point {
                    lon: num(a[i + 1]),
                    lat: num(a[i + 2]),
                });
                i += 2;
            }
            "FROMMEMBER" => {
                let s = set.iter().find(|(_, m)| *m == a[i + 1]).unwrap().0;
                center = Some(decode(s));
                i += 1;
            }
            "BYRADIUS" => {
                let unit = Unit::parse(a[i + 2].as_bytes()).unwrap();
                search = Some(Search::by_radius(center.unwrap(), num(a[i + 1]), unit).unwrap());
                i += 2;
            }
            "BYBOX" => {
                let unit = Unit::parse(a[i + 3].as_bytes()).unwrap();
                search = Some(Search::by_box(center.unwrap(), num(a[i + 1]), num(a[i + 2]), unit).unwrap());
                i += 3;
            }
            "ASC" => q.0 = Sort::Asc,
            "DESC" => q.0 = Sort::Desc,
            "COUNT" => {
                q.1 = a[i + 1].parse().unwrap();
                i += 1;
            }
            "ANY" => q.2 = true,
            "WITHDIST" => q.3 = true,
            "WITHHASH" => q.4 = true,
            "WITHCOORD" => q.5 = true,
            other => panic!("{other}?"),
        }
        i += 1;
    }
    Query {
        search: search.unwrap(),
        sort: q.0,
        count: q.1,
        any: q.2,
        withdist: q.3,
        withhash: q.4,
        withcoord: q.5,
    }
}

/// What a caller does: scan each range of the sorted set (score order, then member order), keep the
/// hits (stopping at COUNT with ANY), rank them, print each as GEOSEARCH replies it.
fn run(q: &Query, set: &[(f64, &str)]) -> Vec<String> {
    let limit = if q.any { q.count } else { 0 };
    let mut hits: Vec<(&str, f64, Hit)> = Vec::new();
    'ranges: for range in &q.search.ranges() {
        if !hits.is_empty() && limit != 0 && hits.len() >= limit {
            break;
        }
        let start = set.partition_point(|(s, _)| *s < range.min);
        for &(score, member) in set[start..].iter().take_while(|(s, _)| *s < range.max) {
            if let Some(hit) = q.search.hit(score) {
                hits.push((member, score, hit));
            }
            if !hits.is_empty() && limit != 0 && hits.len() >= limit {
                break 'ranges;
            }
        }
    }
    let n = rank(&mut hits, q.sort, q.count, q.any, |h| h.2.distance);
    let unit = q.search.unit();
    hits[..n]
        .iter()
        .map(|(member, score, hit)| {
            let mut s = member.to_string();
            if q.withdist {
                s += &format!(" {}", format_distance(unit.from_meters(hit.distance)));
            }
            if q.withhash {
                s += &format!(" {}", *score as i64);
            }
            if q.withcoord {
                s += &format!(
                    " {} {}",
                    format_coordinate(hit.point.lon),
                    format_coordinate(hit.point.lat)
                );
            }
            s
        })
        .collect()
}

#[test]
fn geosearch_finds_and_orders_what_redis_does() {
    let mut set: Vec<(f64, &str)> = records("member")
        .map(|r| {
            let f: Vec<&str> = r.split(' ').collect();
            (bits_to_score(encode(num(f[1]), num(f[2])).unwrap()), f[0])
        })
        .collect();
    set.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    let mut n = 0;
    for r in records("search") {
        let mut parts = r.split(" | ");
        let args = parts.next().unwrap();
        let want: Vec<&str> = parts.collect();
        assert_eq!(run(&query(args, &set), &set), want, "GEOSEARCH s {args}");
        n += 1;
    }
    assert!(n >= 25);
}

#[test]
fn no_input_panics() {
    let odd = [
        0.0,
        -0.0,
        5e-324,
        1e-300,
        0.5,
        1.0,
        -1.0,
        85.05112878,
        -85.05112878,
        180.0,
        -180.0,
        1e7,
        4.5e15,
        2f64.powi(53),
        1e300,
        f64::MAX,
        -f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let units = [Unit::Meters, Unit::Kilometers, Unit::Feet, Unit::Miles];
    for &a in &odd {
        let _ = decode(a);
        let _ = geohash_string(a);
        let _ = format_distance(a);
        let _ = format_coordinate(a);
        for &b in &odd {
            let _ = encode(a, b);
            let _ = distance(a, b, b, a);
            let centre = Point { lon: a, lat: b };
            for &x in &odd {
                for u in units {
                    let radius = Search::by_radius(centre, x, u);
                    let boxes = [Search::by_box(centre, x, a, u), Search::by_box(centre, b, x, u)];
                    for s in std::iter::once(radius).chain(boxes).flatten() {
                        for r in &s.ranges() {
                            let _ = s.hit(r.min);
                            let _ = s.hit(r.max);
                        }
                        let _ = s.hit(x);
                    }
                }
            }
        }
    }
    // Distances with NaN among them through both sorts, every count.
    let mut seed = 1u64;
    for n in 0..120usize {
        let v: Vec<f64> = (0..n)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                odd[(seed >> 40) as usize % odd.len()]
            })
            .collect();
        for count in [0, 1, 2, 7, n / 2, n, n + 1] {
            for sort in [Sort::None, Sort::Asc, Sort::Desc] {
                let mut w = v.clone();
                let k = rank(&mut w, sort, count, false, |d| *d);
                assert!(k <= n);
            }
        }
    }
    for arg in [&b""[..], b"\0", b"\xff\xfe", b"KM\0\0", b"kilometers"] {
        let _ = Unit::parse(arg);
    }
}
