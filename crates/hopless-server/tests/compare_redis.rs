//! Differential test: the same commands against real Redis (`redis-server`, when installed) and against
//! hopless, replies compared byte for byte (errors included). Skipped without `redis-server` (failed under
//! `CI=true`).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{require_tool, Raw};

struct RedisServer(Child);

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Real Redis on a free port; None (the test skips) when it is not installed and CI is not set.
fn start_redis() -> Option<(RedisServer, std::net::SocketAddr)> {
    if !require_tool("redis-server") {
        return None;
    }
    let port = common::free_port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let guard = RedisServer(child);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Some((guard, addr));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("redis-server did not listen on {addr} within 5 s");
}

/// Commands whose replies must match Redis 7's exactly, run in order on one connection of each.
const SCRIPT: &[&str] = &[
    "SET a 1",
    "GET a",
    "GET nokey",
    "SET a 2 NX",
    "SET a 3 XX GET",
    "SET a 4 NX GET",
    "SET b 1 NX XX",
    "SET b 1 EX 0",
    "SET b 1 EX -5",
    "SET b 1 EX abc",
    "SET b 1 KEEPTTL EX 10",
    "SET b 1 PX",
    "SET b 1 FOO",
    "SET b 1 EX 9223372036854775807",
    "SET b v EX 100",
    "TTL b",
    "SET b w KEEPTTL",
    "TTL b",
    "SET b x",
    "TTL b",
    "SET b 1 EX 10 EX 20",
    "TTL b",
    "SETNX a x",
    "SETNX c x",
    "SETEX d 0 v",
    "SETEX d abc v",
    "SETEX d 10 v",
    "TTL d",
    "PSETEX e 0 v",
    "PSETEX e 100000 v",
    "TTL e",
    "GETSET a new",
    "GETSET nokey2 x",
    "GETDEL a",
    "GETDEL a",
    "GETEX c PERSIST",
    "GETEX c EX 10 PX 10",
    "GETEX c EX 0",
    "GETEX c FOO",
    "GETEX nokey",
    "GETEX c EX 100",
    "TTL c",
    "GETEX c PERSIST",
    "TTL c",
    "APPEND c yz",
    "APPEND newapp abc",
    "STRLEN c",
    "STRLEN nokey",
    "GETRANGE c 0 -1",
    "GETRANGE c -2 -1",
    "GETRANGE c 5 1",
    "GETRANGE c a b",
    "GETRANGE nokey 0 -1",
    "GETRANGE c -100 100",
    "SETRANGE s 5 hi",
    "GET s",
    "SETRANGE s -1 x",
    "SETRANGE s 536870911 xx",
    "SETRANGE s abc x",
    "SETRANGE s2 0 ''",
    "EXISTS s2",
    "SETRANGE s 1 ''",
    "INCR n",
    "INCRBY n 10",
    "DECR n",
    "DECRBY n 3",
    "INCRBY n abc",
    "INCR c",
    "SET big 9223372036854775807",
    "INCR big",
    "DECRBY n -9223372036854775808",
    "SET small -9223372036854775808",
    "DECR small",
    "SET sp ' 1'",
    "INCR sp",
    "SET lz 01",
    "INCR lz",
    "INCRBYFLOAT f 1.5",
    "INCRBYFLOAT f 0.1",
    "INCRBYFLOAT f abc",
    "INCRBYFLOAT c 1",
    "INCRBYFLOAT f ''",
    "INCRBYFLOAT f -1.6",
    "SET fl 5.0e3",
    "INCRBYFLOAT fl 2.0e2",
    "INCRBYFLOAT fl2 0.1",
    "INCRBYFLOAT fl2 0.2",
    "MGET c nokey s",
    "MSET x 1 y 2",
    "MSET x",
    "MSET x 1 y",
    "MSETNX x 1 z 2",
    "MSETNX z 1 w 2",
    "MGET x y z w",
    "DEL x y nokey",
    "UNLINK z",
    "EXISTS w w nokey",
    "EXPIRE w 100",
    "TTL w",
    "EXPIRE w 100 NX",
    "EXPIRE w 200 XX",
    "TTL w",
    "EXPIRE w 50 GT",
    "EXPIRE w 300 GT",
    "TTL w",
    "EXPIRE w 10 LT",
    "TTL w",
    "EXPIRE w 10 NX XX",
    "EXPIRE w 10 GT LT",
    "EXPIRE w 10 NX GT",
    "EXPIRE w 10 FOO",
    "EXPIRE w abc",
    "EXPIRE w abc FOO",
    "EXPIRE nokey 10",
    "PERSIST w",
    "PERSIST w",
    "PERSIST nokey",
    "TTL w",
    "EXPIRE w 10 XX",
    "EXPIRE w 10 XX GT",
    "EXPIRE w 10 XX LT",
    "EXPIRE w 10 GT",
    "EXPIRE w 10 LT",
    "TTL w",
    "EXPIRE w 9223372036854775807",
    "PEXPIRE w 9223372036854775807",
    "EXPIRE w -9223372036854775808",
    "PEXPIRE w 100000",
    "TTL w",
    "PEXPIREAT w 1",
    "EXISTS w",
    "SET w 1",
    "EXPIRE w -1",
    "EXISTS w",
    "EXPIREAT c 99999999999",
    "EXPIRETIME c",
    "PEXPIRETIME c",
    "EXPIRETIME nokey",
    "PEXPIRETIME s",
    "PEXPIREAT c 99999999999000",
    "PEXPIRETIME c",
    "TTL nokey",
    "PTTL nokey",
    "PTTL s",
    "TYPE c",
    "TYPE nokey",
    "RENAME nokey x",
    "RENAME c c2",
    "EXISTS c",
    "EXPIRETIME c2",
    "RENAMENX c2 s",
    "RENAMENX c2 c3",
    "RENAME c3 c3",
    "RENAMENX c3 c3",
    "RENAMENX nokey x",
    "GET c3",
    "SELECT 0",
    "SELECT 1",
    "SELECT 0",
    "SELECT x",
    "SELECT -1",
    "PING",
    "PING hi",
    "PING a b",
    "ECHO x",
    "ECHO",
    "ECHO a b",
    "FOO a b",
    "foo",
    "GET",
    "get a b",
    "SET x",
    "FLUSHDB FOO",
    "FLUSHALL ASYNC",
    "DBSIZE",
    "KEYS *",
    "SET i 123",
    "OBJECT ENCODING i",
    "SET e short",
    "OBJECT ENCODING e",
    "SET r aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "OBJECT ENCODING r",
    "OBJECT ENCODING nokey",
    "OBJECT FOO",
    "KEYS i",
    "KEYS nomatch*",
    "DBSIZE",
    "CONFIG GET maxmemory",
    "CONFIG SET maxmemory 100mb",
    "CONFIG GET maxmemory",
    "CONFIG SET maxmemory 0",
    "CONFIG SET foo bar",
    "CONFIG GET maxmemory-policy",
    "CONFIG SET maxmemory-policy allkeys-lru",
    "CONFIG GET maxmemory-policy",
    "CONFIG SET maxmemory-policy noeviction",
    "CONFIG GET save",
    "CONFIG GET appendonly",
    "CONFIG GET",
    "CONFIG FOO",
    "CONFIG SET maxmemory",
    "CLIENT SETNAME 'a b'",
    "CLIENT GETNAME",
    "CLIENT SETNAME myname",
    "CLIENT GETNAME",
    "CLIENT SETNAME ''",
    "CLIENT GETNAME",
    "CLIENT FOO",
    "CLIENT KILL 1.2.3.4:5",
    "CLIENT KILL ID 999999",
    "AUTH x",
    "AUTH a b",
    "AUTH default x",
    "HELLO 4",
    "HELLO x",
    "HELLO 2 FOO",
    "HELLO 2 AUTH a",
    "SCAN x",
    "SCAN 0 COUNT 0",
    "SCAN 0 COUNT x",
    "SCAN 0 FOO",
    "SCAN 0 MATCH",
    "DEBUG SLEEP 0",
    "MEMORY USAGE nokey",
    "MEMORY FOO",
    "COMMAND FOO",
    "INFO nosuchsection",
    // RESP3 from here.
    "HELLO 3 SETNAME x",
    "GET nokey",
    "MGET i nokey",
    "CONFIG GET maxmemory",
    "INCRBYFLOAT f3 1.5",
    "GET i",
    "HELLO 2 SETNAME y",
    "GET nokey",
];

/// Replies that differ on purpose (see the README's list of differences): skipped.
fn differs(cmd: &str) -> bool {
    // The HELLO map names the server ("hopless") and its id; CONFIG GET * lists different parameters;
    // one database (SELECT 1 is an error, as the issue asks); DEBUG SLEEP is allowed.
    cmd == "SELECT 1"
        || cmd.starts_with("DEBUG")
        || cmd.starts_with("HELLO 3")
        || cmd.starts_with("HELLO 2 SETNAME")
        || cmd == "CONFIG GET"
        || cmd.starts_with("INFO")
}

fn args(cmd: &str) -> Vec<Vec<u8>> {
    hopless_server::codec::split_args(cmd.as_bytes()).unwrap()
}

#[test]
fn replies_match_redis_byte_for_byte() {
    let Some((_redis, raddr)) = start_redis() else {
        return;
    };
    let server = common::start();
    let mut theirs = Raw::connect(raddr);
    let mut ours = Raw::connect(server.addr());
    theirs.cmd(&[b"FLUSHALL"]).read();
    let mut diffs = Vec::new();
    for cmd in SCRIPT {
        let a = args(cmd);
        let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
        let t = theirs.cmd(&a).encoded();
        let o = ours.cmd(&a).encoded();
        if t != o && !differs(cmd) {
            diffs.push(format!(
                "{cmd}\n  redis:   {:?}\n  hopless: {:?}",
                String::from_utf8_lossy(&t),
                String::from_utf8_lossy(&o)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
