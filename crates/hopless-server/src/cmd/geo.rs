//! The geo commands, over sorted sets whose scores are positions (`hopless_kv::geo`): GEOADD, GEODIST,
//! GEOHASH and GEOPOS here; the searches (GEORADIUS, GEORADIUSBYMEMBER, their `_RO` forms, GEOSEARCH,
//! GEOSEARCHSTORE) in `geo_search.rs`. Arguments are checked in Redis 7.0's order, with its texts;
//! replies are Redis's in RESP2 and RESP3 (distances as bulk strings in both, coordinates as doubles in
//! RESP3).

use bytes::Bytes;
use hopless_kv::geo::{self, Unit};
use hopless_kv::types::zset::AddFlags;

use super::command::{Command, Ctx};
use super::geo_search::{coordinate, geo_err, lon_lat, search, unit_arg, Variant};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::c_eq;

/// This family's rows of the command table, in COMMAND's order, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("geoadd", -5, "write denyoom", geoadd).keys(1, 1, 1),
    Command::new("geodist", -4, "readonly", geodist).keys(1, 1, 1),
    Command::new("geohash", -2, "readonly", geohash).keys(1, 1, 1),
    Command::new("geopos", -2, "readonly", geopos).keys(1, 1, 1),
    Command::new("georadius", -6, "write denyoom movablekeys", georadius).keys(1, 1, 1),
    Command::new("georadius_ro", -6, "readonly", georadius_ro).keys(1, 1, 1),
    Command::new("georadiusbymember", -5, "write denyoom movablekeys", georadiusbymember).keys(1, 1, 1),
    Command::new("georadiusbymember_ro", -5, "readonly", georadiusbymember_ro).keys(1, 1, 1),
    Command::new("geosearch", -7, "readonly", geosearch).keys(1, 1, 1),
    Command::new("geosearchstore", -8, "write denyoom", geosearchstore).keys(1, 2, 1),
];

/// GEOADD key [NX|XX] [CH] lon lat member ...: the options (any order, repeats allowed), then the
/// count of the rest (a multiple of three) and NX with XX, then every triple's coordinates in order,
/// then ZADD of the encoded positions, with ZADD's reply.
fn geoadd(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut i = 2;
    while i < a.len() {
        if c_eq(&a[i], "nx") {
            flags.nx = true;
        } else if c_eq(&a[i], "xx") {
            flags.xx = true;
        } else if c_eq(&a[i], "ch") {
            ch = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.len() % 3 != 0 || (flags.nx && flags.xx) {
        return Err(SYNTAX);
    }
    let pairs = rest
        .chunks(3)
        .map(|t| {
            let p = lon_lat(&t[0], &t[1])?;
            let bits = geo::encode(p.lon, p.lat).map_err(geo_err)?;
            Ok((geo::bits_to_score(bits), &t[2][..]))
        })
        .collect::<Result<Vec<(f64, &[u8])>, CmdError>>()?;
    // ZADD's own check: options but no element.
    if pairs.is_empty() {
        return Err(SYNTAX);
    }
    let r = c.shared.store.zadd(&a[1], flags, &pairs)?;
    c.out.int((if ch { r.added + r.updated } else { r.added }) as i64);
    Ok(())
}

/// GEODIST key member1 member2 [unit]: the unit (or the argument count) is checked before the key; a
/// missing key or member is a null.
fn geodist(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let unit = match a.len() {
        4 => Unit::Meters,
        5 => unit_arg(&a[4])?,
        _ => return Err(SYNTAX),
    };
    let scores = c.shared.store.zmscore(&a[1], &[&a[2], &a[3]])?;
    match scores[..] {
        [Some(s1), Some(s2)] => {
            let (p1, p2) = (geo::decode(s1), geo::decode(s2));
            let d = geo::distance(p1.lon, p1.lat, p2.lon, p2.lat);
            c.out.bulk(geo::format_distance(unit.from_meters(d)).as_bytes());
        }
        _ => c.out.null(),
    }
    Ok(())
}

/// GEOHASH key member ...: each member's 11-character geohash, or a null.
fn geohash(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    let scores = c.shared.store.zmscore(&a[1], &members)?;
    c.out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => c.out.bulk(&geo::geohash_string(s)),
            None => c.out.null(),
        }
    }
    Ok(())
}

/// GEOPOS key member ...: each member's longitude and latitude, or a null array.
fn geopos(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    let scores = c.shared.store.zmscore(&a[1], &members)?;
    c.out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => {
                let p = geo::decode(s);
                c.out.array(2);
                coordinate(c.out, p.lon);
                coordinate(c.out, p.lat);
            }
            None => c.out.null_array(),
        }
    }
    Ok(())
}

fn georadius(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::Radius)
}

fn georadius_ro(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::RadiusRo)
}

fn georadiusbymember(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::ByMember)
}

fn georadiusbymember_ro(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::ByMemberRo)
}

fn geosearch(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::Search)
}

fn geosearchstore(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    search(c, a, Variant::SearchStore)
}
