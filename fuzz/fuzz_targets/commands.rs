//! Fuzzes the command tables of hopless-server: each input decodes to up to 128 commands (names from the
//! collection families and the keyspace commands, arguments from a small alphabet of keys, members,
//! numbers, score bounds and option words, or raw bytes), sent to one in-process server over one
//! connection. Every reply must be one well-formed RESP frame, and the connection must still answer PING
//! afterwards: a handler that panics closes its connection, which this reports as a crash. Keys are few,
//! so commands meet keys of every type (WRONGTYPE), and collections grow past their compact forms'
//! thresholds (set low at the start of each input), convert, empty and vanish. Some steps are EVAL of a
//! short script put together from Lua fragments (calls of the same commands, conversions both ways,
//! errors, pcall, cjson and cmsgpack of what comes back, and raw bytes), so that the scripting path
//! meets every type and error too.

#![no_main]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock};

use arbitrary::Arbitrary;
use hopless_server::codec::{Frame, FrameError};
use hopless_server::{ServeOptions, Server};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "HSET",
    "HSETNX",
    "HGET",
    "HMGET",
    "HMSET",
    "HDEL",
    "HLEN",
    "HSTRLEN",
    "HEXISTS",
    "HKEYS",
    "HVALS",
    "HGETALL",
    "HINCRBY",
    "HINCRBYFLOAT",
    "HRANDFIELD",
    "HSCAN",
    "LPUSH",
    "RPUSH",
    "LPUSHX",
    "RPUSHX",
    "LPOP",
    "RPOP",
    "LLEN",
    "LRANGE",
    "LINDEX",
    "LSET",
    "LINSERT",
    "LREM",
    "LTRIM",
    "LPOS",
    "LMOVE",
    "RPOPLPUSH",
    "LMPOP",
    "SADD",
    "SREM",
    "SMEMBERS",
    "SISMEMBER",
    "SMISMEMBER",
    "SCARD",
    "SPOP",
    "SRANDMEMBER",
    "SMOVE",
    "SINTER",
    "SINTERCARD",
    "SINTERSTORE",
    "SUNION",
    "SUNIONSTORE",
    "SDIFF",
    "SDIFFSTORE",
    "SSCAN",
    "ZADD",
    "ZINCRBY",
    "ZREM",
    "ZCARD",
    "ZSCORE",
    "ZMSCORE",
    "ZRANK",
    "ZREVRANK",
    "ZCOUNT",
    "ZLEXCOUNT",
    "ZRANGE",
    "ZRANGESTORE",
    "ZREVRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGEBYSCORE",
    "ZRANGEBYLEX",
    "ZREVRANGEBYLEX",
    "ZPOPMIN",
    "ZPOPMAX",
    "ZMPOP",
    "ZRANDMEMBER",
    "ZREMRANGEBYRANK",
    "ZREMRANGEBYSCORE",
    "ZREMRANGEBYLEX",
    "ZUNION",
    "ZINTER",
    "ZDIFF",
    "ZUNIONSTORE",
    "ZINTERSTORE",
    "ZDIFFSTORE",
    "ZINTERCARD",
    "ZSCAN",
    "SET",
    "GET",
    "INCR",
    "INCRBYFLOAT",
    "APPEND",
    "DEL",
    "UNLINK",
    "EXISTS",
    "TYPE",
    "RENAME",
    "RENAMENX",
    "COPY",
    "EXPIRE",
    "PERSIST",
    "TTL",
    "OBJECT",
    "MEMORY",
    "SCAN",
    "DBSIZE",
    "SORT",
    "SORT_RO",
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
    "PFADD",
    "PFCOUNT",
    "PFMERGE",
    "PFDEBUG",
];

const WORDS: &[&str] = &[
    "ENCODING",
    "USAGE",
    "WITHSCORES",
    "WITHVALUES",
    "LIMIT",
    "COUNT",
    "MATCH",
    "TYPE",
    "RANK",
    "MAXLEN",
    "BEFORE",
    "AFTER",
    "LEFT",
    "RIGHT",
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "BYSCORE",
    "BYLEX",
    "REV",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "REPLACE",
    "hash",
    "list",
    "set",
    "zset",
    "string",
    "inf",
    "-inf",
    "+inf",
    "(1",
    "(-1",
    "[a",
    "(b",
    "-",
    "+",
    "nan",
    "1.5",
    "-0",
    "01",
    "*",
    "a*",
    "BY",
    "GET",
    "STORE",
    "ALPHA",
    "DESC",
    "#",
    "k*->m",
    "nosort",
    "FROMMEMBER",
    "FROMLONLAT",
    "BYRADIUS",
    "BYBOX",
    "WITHDIST",
    "WITHHASH",
    "WITHCOORD",
    "ANY",
    "ASC",
    "STOREDIST",
    "m",
    "km",
    "ft",
    "mi",
    "180",
    "85.05112878",
    "1e300",
    "GETREG",
    "DECODE",
    "TODENSE",
    "",
];

#[derive(Arbitrary, Debug)]
enum Arg {
    Key(u8),
    Member(u8),
    Word(u8),
    Int(i16),
    Extreme(u8),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Cmd {
    name: u8,
    args: Vec<Arg>,
}

/// A step of an input: a command, or a script of fragments (indices into `FRAGMENTS`, or raw bytes).
#[derive(Arbitrary, Debug)]
enum Step {
    Command(Cmd),
    Script(Vec<Fragment>),
}

#[derive(Arbitrary, Debug)]
enum Fragment {
    Known(u8),
    Raw(Vec<u8>),
}

/// Pieces of Lua that join into scripts, mostly well-formed; no unbounded loop among them, and no table
/// that holds itself (its reply nests 7 995 deep, as Redis's does, past what the frame parser takes:
/// `tests/compare_scripting.rs` checks it against Redis byte for byte).
const FRAGMENTS: &[&str] = &[
    "return redis.call('get', KEYS[1]) ",
    "return redis.pcall('incr', KEYS[1]) ",
    "redis.call('rpush', KEYS[1], ARGV[1]) ",
    "redis.call('hset', 'k1', 'f', ARGV[1]) ",
    "redis.call('zadd', 'k2', 1, ARGV[1]) ",
    "redis.call('sadd', 'k3', ARGV[1]) ",
    "local r = redis.pcall('lrange', KEYS[1], 0, -1) ",
    "return r ",
    "return {1, 'a', {2, false}, nil, 3} ",
    "return {ok = 'fine'} ",
    "return {err = 'ERR mine'} ",
    "return redis.error_reply('x') ",
    "return {double = 1.5} ",
    "return {map = {a = 1}} ",
    "return {set = {a = true}} ",
    "redis.setresp(3) ",
    "return redis.call('hgetall', 'k1') ",
    "return cjson.encode(redis.call('zrange', 'k2', 0, -1, 'withscores')) ",
    "return cjson.decode(ARGV[1]) ",
    "return cmsgpack.unpack(ARGV[1]) ",
    "return cmsgpack.pack(redis.pcall('smembers', 'k3')) ",
    "return struct.unpack('>i2', ARGV[1]) ",
    "local t = {} for i = 1, 20 do t[i] = i * 1.5 end return t ",
    "error('boom') ",
    "error({err = 'x'}) ",
    "return pcall(redis.call, 'nosuch') ",
    "x = 1 ",
    "return y ",
    "return redis.call() ",
    "return redis.call({}) ",
    "return redis.call('eval', 'return 1', 0) ",
    "return 1e300 * 1e300 ",
    "return bit.tohex(ARGV[1]) ",
    "return math.random(10) ",
    "end ",
    "if true then ",
    "local s = string.rep('x', 1000) return #s ",
];

fn arg_bytes(a: &Arg) -> Vec<u8> {
    match a {
        Arg::Key(k) => format!("k{}", k % 5).into_bytes(),
        Arg::Member(m) => match m % 4 {
            0 => format!("{}", m % 40),
            1 => format!("m{}", m % 30),
            2 => format!("x{}", "y".repeat(*m as usize % 90)),
            _ => format!("{}", *m as i64 - 128),
        }
        .into_bytes(),
        Arg::Word(w) => WORDS[*w as usize % WORDS.len()].as_bytes().to_vec(),
        Arg::Int(i) => i.to_string().into_bytes(),
        Arg::Extreme(e) => [
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551616",
            "1e308",
            "-1e4000",
            "4294967296",
            "-16777217",
            "0",
        ][*e as usize % 8]
            .as_bytes()
            .to_vec(),
        Arg::Bytes(b) => b.iter().take(64).copied().collect(),
    }
}

struct Conn {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn send(&mut self, args: &[Vec<u8>]) {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a);
            b.extend_from_slice(b"\r\n");
        }
        self.sock.write_all(&b).expect("the server takes the request");
    }

    /// One reply; panics (a crash for libFuzzer) on a malformed one or a closed connection.
    fn read(&mut self, what: &[Vec<u8>]) -> Frame {
        loop {
            match Frame::check(&self.buf) {
                Ok(n) => {
                    let (f, m) = Frame::parse(&self.buf).expect("a reply that checks parses");
                    assert_eq!(n, m);
                    self.buf.drain(..n);
                    return f;
                }
                Err(FrameError::Incomplete) => {}
                Err(e) => panic!("malformed reply to {what:?}: {e}"),
            }
            let mut tmp = [0u8; 65536];
            match self.sock.read(&mut tmp) {
                // libFuzzer's -timeout alarm (SIGALRM every timeout/2 s) interrupts a blocked read: the
                // server has not closed anything, read again (a run failed so at its 31st second).
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => panic!("the server closed the connection after {what:?}"),
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
            }
        }
    }

    fn run(&mut self, args: &[Vec<u8>]) -> Frame {
        self.send(args);
        self.read(args)
    }
}

fn words(s: &str) -> Vec<Vec<u8>> {
    s.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

fn conn() -> &'static Mutex<Conn> {
    static SERVER: OnceLock<Server> = OnceLock::new();
    static CONN: OnceLock<Mutex<Conn>> = OnceLock::new();
    CONN.get_or_init(|| {
        let server = SERVER.get_or_init(|| {
            let mut o = ServeOptions {
                port: 0,
                threads: 1,
                ..ServeOptions::default()
            };
            o.store.shards = 4;
            Server::start(o).expect("server starts")
        });
        let sock = TcpStream::connect(server.addr()).expect("connect");
        Mutex::new(Conn {
            sock,
            buf: Vec::new(),
        })
    })
}

fn script(frags: &[Fragment]) -> Vec<u8> {
    let mut body = Vec::new();
    for f in frags.iter().take(8) {
        match f {
            Fragment::Known(i) => body.extend_from_slice(FRAGMENTS[*i as usize % FRAGMENTS.len()].as_bytes()),
            Fragment::Raw(b) => body.extend(b.iter().take(16)),
        }
    }
    body
}

fuzz_target!(|steps: Vec<Step>| {
    let mut c = conn().lock().unwrap_or_else(|e| e.into_inner());
    for line in [
        "FLUSHALL",
        "CONFIG SET hash-max-listpack-entries 4",
        "CONFIG SET hash-max-listpack-value 16",
        "CONFIG SET set-max-intset-entries 4",
        "CONFIG SET set-max-listpack-entries 4",
        "CONFIG SET zset-max-listpack-entries 4",
        "CONFIG SET zset-max-listpack-value 16",
        "CONFIG SET list-max-listpack-size 3",
    ] {
        c.run(&words(line));
    }
    for step in steps.iter().take(128) {
        let args = match step {
            Step::Command(cmd) => {
                let mut args = vec![NAMES[cmd.name as usize % NAMES.len()].as_bytes().to_vec()];
                args.extend(cmd.args.iter().take(12).map(arg_bytes));
                args
            }
            Step::Script(frags) => vec![
                b"EVAL".to_vec(),
                script(frags),
                b"1".to_vec(),
                b"k0".to_vec(),
                b"v".to_vec(),
            ],
        };
        c.run(&args);
    }
    let pong = c.run(&words("PING"));
    assert_eq!(pong, Frame::Simple("PONG".into()), "the connection still answers");
});
