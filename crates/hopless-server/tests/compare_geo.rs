//! Differential test of the geo commands against a real `redis-server` (skipped without one, failed
//! under `CI=true`), replies compared byte for byte: every command, option and error by hand (in the
//! order Redis checks them), in RESP2 and RESP3, then a seeded random sequence of points and searches
//! with every option combination, stored results read back, and the keyspaces compared.

mod common;

use common::differ::Differ;
use hopless_server::codec::Frame;

const SETUP: &[&str] = &[
    "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD Sicily 12.758489 38.788135 edge2 13.583333 37.316667 Agrigento 14.015482 37.506033 Caltanissetta",
    "GEOADD world 180 85.05112878 ne -180 -85.05112878 sw 0 0 origin -0 -0 negzero 179.999999 -85 far",
    "ZADD odd 1.5 frac 0 zero -5 neg inf pinf -inf ninf 4503599627370496 p52 9007199254740992 p53",
    "ZADD odd 18014398509481984 p54 1e300 huge 3476504601741708.5 halfway",
    "SET str v",
    "HSET hash f v",
];

/// Every command and option by hand, and every error in the order Redis meets it.
const SCRIPT: &[&str] = &[
    // GEOADD: options in any order, then the count of the rest and NX with XX, then each triple.
    "GEOADD Sicily NX CH 13.361389 38.115556 Palermo 15.087269 37.502669 Catania2",
    "GEOADD Sicily XX CH 13.3 38.1 Palermo 15 37 nobody",
    "GEOADD Sicily CH 13.361389 38.115556 Palermo",
    "GEOADD Sicily ch nx ch 1 1 new1",
    "GEOADD Sicily XX NX 13.3 38.1 Palermo",
    "GEOADD Sicily CH NX CH",
    "GEOADD Sicily NX XX",
    "GEOADD Sicily 13.361389 38.115556",
    "GEOADD Sicily 200 38.115556 x",
    "GEOADD Sicily 10 85.05112879 x",
    "GEOADD Sicily -180.000001 -85.05112878 x",
    "GEOADD Sicily abc 86 x",
    "GEOADD Sicily 1 abc x",
    "GEOADD Sicily 10 nan x",
    "GEOADD Sicily 1e400 1 x",
    "GEOADD Sicily 1 2 ok 200 1 bad",
    "EXISTS Sicily ok",
    "GEOADD Sicily GT 10 10 x",
    "GEOADD Sicily INCR 10 10 x",
    "GEOADD Sicily \"nx\\x00junk\" 1 1 nul1",
    "GEOADD Sicily \" 1\" 1 x",
    "GEOADD Sicily 1 \"1 \" x",
    "GEOADD Sicily 1 1e-310 tiny",
    "GEOADD xxmissing XX 1 1 a",
    "EXISTS xxmissing",
    "GEOADD str 1 1 a",
    "GEOADD str 1 100 a",
    "GEOADD hash 1 1 a",
    "GEOADD",
    "GEOADD k 1 1",
    // GEOPOS and GEOHASH: a null (bulk or array) for a missing member or key.
    "GEOPOS Sicily Palermo Catania nobody tiny",
    "GEOPOS world ne sw origin negzero far",
    "GEOPOS odd frac zero neg pinf ninf p52 p53 p54 huge halfway",
    "GEOPOS nokey a b",
    "GEOPOS Sicily",
    "GEOPOS str a",
    "GEOHASH Sicily Palermo Catania nobody tiny",
    "GEOHASH world ne sw origin negzero far",
    "GEOHASH odd frac zero neg pinf ninf p52 p53 p54 huge halfway",
    "GEOHASH nokey a",
    "GEOHASH Sicily",
    "GEOHASH str a",
    // GEODIST: the unit and the argument count before the key.
    "GEODIST Sicily Palermo Catania",
    "GEODIST Sicily Palermo Catania km",
    "GEODIST Sicily Palermo Catania MI",
    "GEODIST Sicily Palermo Catania ft",
    "GEODIST Sicily Palermo Catania m",
    "GEODIST Sicily Palermo Catania \"km\\x00junk\"",
    "GEODIST Sicily Palermo Catania parsec",
    "GEODIST Sicily Palermo Catania km extra",
    "GEODIST Sicily Palermo Palermo",
    "GEODIST Sicily Palermo nobody",
    "GEODIST nokey a b",
    "GEODIST nokey a b parsec",
    "GEODIST str a b",
    "GEODIST str a b parsec",
    "GEODIST world ne sw km",
    "GEODIST world origin far",
    "GEODIST odd pinf ninf",
    "GEODIST odd neg huge km",
    "GEODIST Sicily a",
    // GEORADIUS: the centre, the radius, its unit, then the options in order.
    "GEORADIUS Sicily 15 37 200 km",
    "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC",
    "GEORADIUS Sicily 15 37 200 km withhash withcoord desc",
    "GEORADIUS Sicily 15 37 200 km WITHDIST DESC COUNT 2",
    "GEORADIUS Sicily 15 37 200 km COUNT 2",
    "GEORADIUS Sicily 15 37 200 km COUNT 2 ANY",
    "GEORADIUS Sicily 15 37 200 km ANY COUNT 1 DESC",
    "GEORADIUS Sicily 15 37 200 km COUNT 1 COUNT 3",
    "GEORADIUS Sicily 15 37 200 km ASC DESC",
    "GEORADIUS Sicily 15 37 200 km COUNT 9223372036854775807",
    "GEORADIUS Sicily 15 37 200000 m",
    "GEORADIUS Sicily 15 37 124.27 mi WITHDIST",
    "GEORADIUS Sicily 15 37 656168 ft WITHDIST",
    "GEORADIUS Sicily 15 37 0 km",
    "GEORADIUS Sicily 15 37 -0 km",
    "GEORADIUS Sicily 15 37 inf km WITHDIST",
    "GEORADIUS Sicily 15 37 1e300 km",
    "GEORADIUS Sicily 15 37 200 km \"withdist\\x00junk\"",
    "GEORADIUS Sicily 15 37 200 KM",
    "GEORADIUS Sicily 15 37 200 km ANY",
    "GEORADIUS Sicily 15 37 200 km COUNT 0",
    "GEORADIUS Sicily 15 37 200 km COUNT -1",
    "GEORADIUS Sicily 15 37 200 km COUNT x",
    "GEORADIUS Sicily 15 37 200 km COUNT 9223372036854775808",
    "GEORADIUS Sicily 15 37 200 km COUNT",
    "GEORADIUS Sicily 15 37 200 km COUNT 0 WITHFOO",
    "GEORADIUS Sicily 15 37 200 km WITHFOO COUNT 0",
    "GEORADIUS Sicily 15 37 -1 km",
    "GEORADIUS Sicily 15 37 -inf km",
    "GEORADIUS Sicily 15 37 nan km",
    "GEORADIUS Sicily 15 37 abc km",
    "GEORADIUS Sicily 15 37 1e400 km",
    "GEORADIUS Sicily 15 37 \" 1\" km",
    "GEORADIUS Sicily 15 37 -1 parsec",
    "GEORADIUS Sicily 15 37 1 parsec",
    "GEORADIUS Sicily 15 370 1 km",
    "GEORADIUS Sicily 15 370 x km",
    "GEORADIUS Sicily x 370 1 km",
    "GEORADIUS Sicily inf 0 1 km",
    "GEORADIUS Sicily 0 -inf 1 km",
    "GEORADIUS Sicily 15 37 200 km FROMMEMBER Palermo",
    "GEORADIUS Sicily 15 37 200 km BYRADIUS 1 km",
    "GEORADIUS nokey 15 37 200 km",
    "GEORADIUS nokey 15 37 200 km WITHDIST",
    "GEORADIUS nokey 15 370 200 km",
    "GEORADIUS nokey 15 37 200 km ANY",
    "GEORADIUS str 15 37 200 km",
    "GEORADIUS str 15 370 200 km",
    "GEORADIUS world 0 0 inf m WITHCOORD WITHDIST WITHHASH",
    "GEORADIUS world 180 85.05112878 inf m WITHCOORD WITHDIST",
    "GEORADIUS world 180 85.05112878 10 km WITHCOORD",
    "GEORADIUS world -180 -85.05112878 10 km WITHCOORD",
    "GEORADIUS world 179.9 -85 100 km WITHDIST",
    "GEORADIUS odd 0 0 inf m WITHHASH WITHCOORD WITHDIST",
    "GEORADIUS odd 0 0 1000 km WITHHASH",
    // STORE and STOREDIST: the last one named wins; WITH options refused; a missing source or no hit
    // deletes the destination.
    "SET dst old EX 100",
    "GEORADIUS Sicily 15 37 200 km STORE dst",
    "TTL dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STOREDIST dst2 COUNT 2 DESC",
    "ZRANGE dst2 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 mi STORE a STOREDIST b",
    "EXISTS a b",
    "ZRANGE b 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
    "GEORADIUS Sicily 15 37 200 km WITHHASH STOREDIST dst",
    "GEORADIUS Sicily 15 37 200 km WITHCOORD ANY STORE dst",
    "GEORADIUS Sicily 15 37 200 km STORE dst ANY",
    "GEORADIUS Sicily 15 37 200 km STORE",
    "GEORADIUS Sicily 15 37 200 km STOREDIST",
    "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY STORE dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 0 0 1 km STORE dst",
    "EXISTS dst",
    "SET dst old",
    "GEORADIUS nokey 15 37 200 km STORE dst",
    "EXISTS dst",
    "GEORADIUS str 15 37 200 km STORE dst",
    "GEORADIUS Sicily 15 37 200 km STORE str",
    "TYPE str",
    "SET str v",
    "GEORADIUS Sicily 15 37 200 km STORE Sicily2",
    "GEORADIUS Sicily2 15 37 200 km STORE Sicily2 COUNT 1",
    "ZRANGE Sicily2 0 -1 WITHSCORES",
    "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
    "GEORADIUS_RO Sicily 15 37 200 km STOREDIST dst",
    "GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC COUNT 3",
    // GEORADIUSBYMEMBER: the member before the radius; a missing key reads neither.
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST WITHCOORD",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT 2 DESC WITHHASH",
    "GEORADIUSBYMEMBER Sicily nobody 200 km WITHDIST",
    "GEORADIUSBYMEMBER Sicily nobody -1 parsec",
    "GEORADIUSBYMEMBER Sicily Palermo -1 parsec",
    "GEORADIUSBYMEMBER Sicily Palermo 1 parsec",
    "GEORADIUSBYMEMBER Sicily Palermo x km",
    "GEORADIUSBYMEMBER nokey nobody -200 zz WITHDIST",
    "GEORADIUSBYMEMBER nokey nobody -200 zz WITHDIST STORE dst",
    "GEORADIUSBYMEMBER nokey nobody -200 zz ANY",
    "GEORADIUSBYMEMBER nokey nobody -200 zz FOO",
    "GEORADIUSBYMEMBER str nobody 200 km",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km STORE dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km STOREDIST dst",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km WITHDIST",
    "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STORE dst",
    "GEORADIUSBYMEMBER_RO Sicily nobody 200 km",
    "GEORADIUSBYMEMBER world ne inf km WITHDIST",
    "GEORADIUSBYMEMBER odd halfway 10 km WITHCOORD WITHHASH",
    // GEOSEARCH: FROMMEMBER or FROMLONLAT, BYRADIUS or BYBOX, checked in argument order.
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km WITHDIST WITHCOORD",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 100 km DESC WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 0 0 km",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX inf inf km COUNT 2",
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km COUNT 1 ANY",
    "GEOSEARCH Sicily BYBOX 400 400 km FROMLONLAT 15 37 COUNT 3 ASC",
    "GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 1 km BYRADIUS 100 km WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 1 1 FROMLONLAT 15 37 BYBOX 1 1 km BYBOX 400 400 km WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYBOX 400 400 km",
    "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYBOX 400 400 km",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km BYBOX 1 1 km",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1 km BYRADIUS 1 km",
    "GEOSEARCH Sicily BYBOX 400 400 km",
    "GeoSearch Sicily BYBOX 400 400 km ASC",
    "GEOSEARCH Sicily FROMLONLAT 1 1 WITHDIST",
    "geosearch Sicily FROMMEMBER Palermo WITHDIST",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 m ANY",
    "GEOSEARCH Sicily FROMLONLAT 1 1 ANY WITHDIST",
    "GEOSEARCH Sicily FROMMEMBER nobody WITHDIST",
    "GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS -1 m",
    "GEOSEARCH Sicily BYRADIUS -1 m FROMMEMBER nobody",
    "GEOSEARCH Sicily FROMMEMBER nobody FOO",
    "GEOSEARCH Sicily FOO FROMMEMBER nobody",
    "GEOSEARCH nokey FROMMEMBER nobody WITHDIST",
    "GEOSEARCH nokey FROMMEMBER nobody BYRADIUS 1 m",
    "GEOSEARCH nokey FROMMEMBER nobody BYRADIUS -1 m",
    "GEOSEARCH nokey FROMLONLAT 1 100 BYRADIUS 1 m",
    "GEOSEARCH str FROMMEMBER nobody BYRADIUS 1 m",
    "GEOSEARCH str FROMLONLAT 1 100 BYRADIUSX 1 m",
    "GEOSEARCH Sicily FROMLONLAT 1 100 BYRADIUS 1 m",
    "GEOSEARCH Sicily FROMLONLAT x 1 BYRADIUS 1 m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 1 m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 -1 m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX nan 1 m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 nan m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX nan nan m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 nan m",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 -1 parsec",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1 parsec",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1",
    "GEOSEARCH Sicily FROMLONLAT 1 BYRADIUS 1 m",
    "GEOSEARCH Sicily FROMMEMBER",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 m STOREDIST",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 m STORE x",
    "GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 m COUNT 0",
    "GEOSEARCH Sicily \"FROMLONLAT\\x00\" 1 1 \"BYRADIUS\\x00x\" 1 \"m\\x00\"",
    "GEOSEARCH world FROMMEMBER ne BYBOX inf inf m WITHCOORD",
    "GEOSEARCH world FROMLONLAT 180 0 BYBOX 1000 1000 km WITHCOORD",
    "GEOSEARCH world FROMLONLAT -180 85.05112878 BYRADIUS 500 km WITHCOORD",
    "GEOSEARCH odd FROMMEMBER zero BYBOX 100 100 km WITHCOORD WITHHASH",
    // GEOSEARCHSTORE: the destination first; STOREDIST a flag; no WITH option.
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST STOREDIST DESC COUNT 2 ANY",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 WITHHASH",
    "GEOSEARCHSTORE dst Sicily WITHHASH BYRADIUS 1 m",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 1 1 BYRADIUS 1 m STORE x",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER nobody BYRADIUS 1 m",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYBOX 1 m m",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo",
    "GEOSEARCHSTORE dst Sicily ANY FROMMEMBER Palermo BYRADIUS 1 m",
    "EXISTS dst",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 1 m",
    "EXISTS dst",
    "SET dst old EX 100",
    "GEOSEARCHSTORE dst nokey FROMMEMBER nobody BYRADIUS 1 m",
    "EXISTS dst",
    "GEOSEARCHSTORE dst str FROMMEMBER Palermo BYRADIUS 1 m",
    "GEOSEARCHSTORE str Sicily FROMMEMBER Palermo BYRADIUS 100 km",
    "TYPE str",
    "SET str v",
    "SET s2 v EX 100",
    "GEOSEARCHSTORE s2 Sicily FROMMEMBER Palermo BYRADIUS 100 km",
    "TTL s2",
    "GEOSEARCHSTORE Sicily3 Sicily FROMMEMBER Palermo BYRADIUS 500 km",
    "GEOSEARCHSTORE Sicily3 Sicily3 FROMMEMBER Palermo BYRADIUS 100 km STOREDIST",
    "ZRANGE Sicily3 0 -1 WITHSCORES",
    "GEOSEARCHSTORE dst",
    // Arity, scripts, transactions, the keys COMMAND GETKEYS names.
    "GEORADIUS Sicily 15 37 200",
    "GEORADIUSBYMEMBER Sicily Palermo 200",
    "GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1",
    "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 1",
    "GEODIST Sicily Palermo",
    "GEOHASH",
    "GEOPOS",
    "EVAL \"return redis.call('geosearch', KEYS[1], 'FROMLONLAT', 15, 37, 'BYRADIUS', 200, 'km', 'WITHDIST', 'WITHCOORD', 'WITHHASH')\" 1 Sicily",
    "EVAL \"return redis.call('geopos', KEYS[1], 'Palermo', 'x')\" 1 Sicily",
    "EVAL \"return redis.call('geodist', KEYS[1], 'Palermo', 'x')\" 1 Sicily",
    "EVAL \"return redis.call('geohash', KEYS[1], 'Palermo', 'x')\" 1 Sicily",
    "EVAL \"return redis.call('georadius', KEYS[1], 15, 37, 200, 'km', 'STORE', KEYS[2])\" 2 Sicily dst",
    "EVAL_RO \"return redis.call('georadius', KEYS[1], 15, 37, 200, 'km')\" 1 Sicily",
    "EVAL_RO \"return redis.call('georadius_ro', KEYS[1], 15, 37, 200, 'km')\" 1 Sicily",
    "EVAL_RO \"return redis.call('geoadd', KEYS[1], 1, 1, 'x')\" 1 Sicily",
    "MULTI",
    "GEOADD Sicily 1 1 q",
    "GEOSEARCH Sicily FROMMEMBER q BYRADIUS 1 m WITHDIST",
    "GEORADIUS Sicily 1 1 1 m STORE dst",
    "GEOSEARCH Sicily FROMMEMBER q BYRADIUS -1 m",
    "EXEC",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m STORE a",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m STOREDIST a STORE b",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m STORE a STORE b",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m STORE STORE x",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m STORE",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 store a",
    "COMMAND GETKEYS GEORADIUS Sicily 1 1 1 m \"store\\x00\" a",
    "COMMAND GETKEYS GEORADIUSBYMEMBER Sicily m 1 km STOREDIST a",
    "COMMAND GETKEYS GEORADIUSBYMEMBER Sicily m 1 STORE a",
    "COMMAND GETKEYS GEORADIUS_RO Sicily 1 1 1 m STORE a",
    "COMMAND GETKEYS GEORADIUSBYMEMBER_RO Sicily m 1 km STORE a",
    "COMMAND GETKEYS GEOSEARCH Sicily FROMMEMBER q BYRADIUS 1 m",
    "COMMAND GETKEYS GEOSEARCHSTORE dst Sicily FROMMEMBER q BYRADIUS 1 m",
    "COMMAND GETKEYS GEOADD Sicily 1 1 a",
    "COMMAND GETKEYS GEODIST Sicily a b",
];

/// The same replies in RESP3: coordinates become doubles, nulls `_`; distances stay bulk strings.
const RESP3: &[&str] = &[
    "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH",
    "GEORADIUS world 0 0 inf m WITHCOORD WITHDIST WITHHASH",
    "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHCOORD",
    "GEOPOS Sicily Palermo nobody",
    "GEOPOS odd frac pinf huge",
    "GEOPOS nokey a",
    "GEOHASH Sicily Palermo nobody",
    "GEODIST Sicily Palermo Catania km",
    "GEODIST Sicily Palermo nobody",
    "GEODIST nokey Palermo Catania",
    "GEORADIUS nokey 15 37 200 km",
    "GEORADIUS Sicily 0 0 1 km",
    "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
    "ZRANGE dst 0 -1 WITHSCORES",
    "GEORADIUS Sicily 15 37 200 km COUNT 0",
];

#[test]
fn geo_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script_bytes(SETUP);
    d.script_bytes(SCRIPT);
    d.compare_keyspace();
    // HELLO's reply names the server: switch both without comparing it.
    d.redis.cmd(&[b"HELLO", b"3"]).read();
    d.ours.cmd(&[b"HELLO", b"3"]).read();
    d.script_bytes(RESP3);
    d.assert_none();
}

/// COMMAND INFO's first seven fields (name, arity, flags, key positions, ACL categories) of each geo
/// command, as Redis lists them (hopless lists no key specs after them).
#[test]
fn command_info_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for name in [
        "geoadd",
        "geodist",
        "geohash",
        "geopos",
        "georadius",
        "georadius_ro",
        "georadiusbymember",
        "georadiusbymember_ro",
        "geosearch",
        "geosearchstore",
    ] {
        let head = |f: Frame| -> Vec<Frame> {
            let Frame::Array(mut v) = f else {
                panic!("{name}: {f:?}")
            };
            let Frame::Array(info) = v.remove(0) else {
                panic!("{name}")
            };
            info.into_iter().take(7).collect()
        };
        let t = head(d.redis.cmd(&[b"COMMAND", b"INFO", name.as_bytes()]).read());
        let o = head(d.ours.cmd(&[b"COMMAND", b"INFO", name.as_bytes()]).read());
        assert_eq!(t, o, "COMMAND INFO {name}");
    }
}

/// A seeded xorshift: the same sequence every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }

    /// A number in `lo..hi` with six decimals.
    fn between(&mut self, lo: f64, hi: f64) -> String {
        let f = self.below(1 << 30) as f64 / (1u64 << 30) as f64;
        format!("{:.6}", lo + f * (hi - lo))
    }

    /// A point: mostly around Sicily, else anywhere, now and then on a limit.
    fn point(&mut self) -> (String, String) {
        match self.below(20) {
            0 => (
                self.pick(&["-180", "180", "0", "179.999999"]).to_string(),
                self.pick(&["-85.05112878", "85.05112878", "0", "-84.9"])
                    .to_string(),
            ),
            1..=8 => (self.between(12.0, 16.0), self.between(36.0, 39.0)),
            _ => (
                self.between(-180.0, 180.0),
                self.between(-85.05112878, 85.05112878),
            ),
        }
    }
}

/// Random points (some sharing a position, so distances tie) in a small and a large sorted set, then
/// random searches with every combination of options, each stored result read back, and the
/// keyspaces compared at the end.
#[test]
fn random_searches_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let mut r = Rng(0x6e0_5eed);
    for (key, n) in [("g", 100), ("big", 300)] {
        for i in 0..n {
            let (lon, lat) = r.point();
            d.script_bytes(&[&format!("GEOADD {key} {lon} {lat} m{i}")]);
        }
        for i in 0..25 {
            d.script_bytes(&[&format!("GEOADD {key} 14 37.5 t{i}")]);
        }
    }
    d.script_bytes(&["ZADD g 1.5 frac 0 zero -5 neg 9007199254740992 p53"]);
    let radii = [
        "0", "1", "10", "100", "1000", "50000", "500000", "5000000", "20000000", "1e30", "inf",
    ];
    let units = ["m", "km", "ft", "mi", "KM"];
    let members = ["m1", "m2", "t3", "frac", "zero", "p53", "neg", "nobody", "m250"];
    for _ in 0..700 {
        let key = r.pick(&["g", "big", "g", "big", "nokey"]);
        let cmd = r.pick(&[
            "GEORADIUS",
            "GEORADIUS_RO",
            "GEORADIUSBYMEMBER",
            "GEORADIUSBYMEMBER_RO",
            "GEOSEARCH",
            "GEOSEARCHSTORE",
        ]);
        let (lon, lat) = r.point();
        let radius = r.pick(&radii);
        let unit = r.pick(&units);
        let member = r.pick(&members);
        let mut args: Vec<String> = vec![cmd.to_string()];
        let mut opts: Vec<String> = Vec::new();
        match cmd {
            "GEORADIUS" | "GEORADIUS_RO" => args.extend([key, &lon, &lat, radius, unit].map(String::from)),
            "GEORADIUSBYMEMBER" | "GEORADIUSBYMEMBER_RO" => {
                args.extend([key, member, radius, unit].map(String::from))
            }
            _ => {
                if cmd == "GEOSEARCHSTORE" {
                    args.push("dst".into());
                }
                args.push(key.into());
                if r.below(2) == 0 {
                    opts.extend(["FROMMEMBER", member].map(String::from));
                } else {
                    opts.extend(["FROMLONLAT", &lon, &lat].map(String::from));
                }
                if r.below(2) == 0 {
                    opts.extend(["BYRADIUS", radius, unit].map(String::from));
                } else {
                    let height = r.pick(&radii);
                    opts.extend(["BYBOX", radius, height, unit].map(String::from));
                }
            }
        }
        if r.below(3) == 0 {
            opts.push(r.pick(&["ASC", "DESC"]).into());
        }
        if r.below(5) < 2 {
            opts.push("COUNT".into());
            opts.push(r.pick(&["1", "2", "3", "5", "10", "50", "1000"]).into());
            if r.below(3) == 0 {
                opts.push("ANY".into());
            }
        }
        let stored = match cmd {
            "GEOSEARCHSTORE" => {
                if r.below(2) == 0 {
                    opts.push("STOREDIST".into());
                }
                true
            }
            "GEORADIUS" | "GEORADIUSBYMEMBER" if r.below(3) == 0 => {
                opts.push(r.pick(&["STORE", "STOREDIST"]).into());
                opts.push(r.pick(&["dst", "dst2"]).into());
                true
            }
            _ => false,
        };
        if !stored {
            for w in ["WITHDIST", "WITHHASH", "WITHCOORD"] {
                if r.below(5) < 2 {
                    opts.push(w.into());
                }
            }
        }
        // The options in any order (COUNT keeps its number, ANY may come before it).
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut i = 0;
        while i < opts.len() {
            let take = match opts[i].as_str() {
                "FROMMEMBER" | "COUNT" | "STORE" | "STOREDIST"
                    if cmd != "GEOSEARCHSTORE" || opts[i] != "STOREDIST" =>
                {
                    2
                }
                "FROMLONLAT" | "BYRADIUS" => 3,
                "BYBOX" => 4,
                _ => 1,
            };
            groups.push(opts[i..i + take].to_vec());
            i += take;
        }
        for k in (1..groups.len()).rev() {
            let j = r.below(k as u64 + 1) as usize;
            groups.swap(k, j);
        }
        args.extend(groups.into_iter().flatten());
        let line: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        d.run_bytes(&line);
        if stored {
            d.script_bytes(&["ZRANGE dst 0 -1 WITHSCORES", "ZRANGE dst2 0 -1 WITHSCORES"]);
        }
        if d.diffs.len() > 5 {
            break;
        }
    }
    d.compare_keyspace();
    d.assert_none();
}

/// Seeded argument soup: each geo command with random words, numbers and key names after it, so
/// every check meets every other in every order; replies byte for byte, and COMMAND GETKEYS of the
/// same soup.
#[test]
fn argument_soup_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script_bytes(&[
        "GEOADD g 15 37 m1 14 37.5 m2 13 38 m3 -180 85.05112878 m4",
        "SET str v",
    ]);
    let names = [
        "GEOADD",
        "GEODIST",
        "GEOHASH",
        "GEOPOS",
        "GEORADIUS",
        "GEORADIUS_RO",
        "GEORADIUSBYMEMBER",
        "GEORADIUSBYMEMBER_RO",
        "GEOSEARCH",
        "GEOSEARCHSTORE",
    ];
    let words = [
        "FROMMEMBER",
        "FROMLONLAT",
        "BYRADIUS",
        "BYBOX",
        "WITHDIST",
        "WITHHASH",
        "WITHCOORD",
        "ANY",
        "ASC",
        "DESC",
        "COUNT",
        "STORE",
        "STOREDIST",
        "m",
        "km",
        "ft",
        "mi",
        "180",
        "85.05112878",
        "1e300",
        "-1",
        "0",
        "1",
        "nan",
        "inf",
        "-inf",
        "NX",
        "XX",
        "CH",
        "g",
        "str",
        "m1",
        "m4",
        "15",
        "37",
        "200",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "",
        "-0",
    ];
    let mut r = Rng(0x5009_e3a7);
    for i in 0..2000 {
        let mut args: Vec<&str> = Vec::new();
        if i % 4 == 3 {
            args.extend(["COMMAND", "GETKEYS"]);
        }
        args.push(r.pick(&names));
        args.push(r.pick(&["g", "str", "nokey", "dst"]));
        for _ in 0..r.below(11) {
            args.push(r.pick(&words));
        }
        let line: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        d.run_bytes(&line);
        if d.diffs.len() > 5 {
            break;
        }
    }
    d.compare_keyspace();
    d.assert_none();
}
