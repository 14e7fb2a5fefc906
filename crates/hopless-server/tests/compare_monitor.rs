//! MONITOR against a real `redis-server` (skipped without one, failed under `CI=true`): while one
//! connection monitors, another runs a script of commands; the lines each server sends are compared
//! with their time and client address taken off (`<seconds>.<micros> [0 <addr>] "cmd" "arg"...`).
//! What runs is shown, failed or not, quoted as Redis quotes it; administrative commands, unknown
//! commands and commands with the wrong number of arguments are not; passwords read `(redacted)`;
//! a transaction's commands show as they run, between MULTI and EXEC; a script shows before the
//! commands it runs, which show `lua` as their client.

mod common;

use std::net::SocketAddr;

use common::differ::{split, start_redis};
use common::{simple, Raw};
use hopless_server::codec::Frame;

const SCRIPT: &[&str] = &[
    "SET k v",
    "GET k",
    "CONFIG GET maxmemory",
    "CLIENT SETNAME watcher",
    "CLIENT LIST",
    "NOSUCHCOMMAND a",
    "GET",
    "AUTH nosuchpassword",
    "HELLO 2 AUTH default secret",
    "MULTI",
    "INCR n",
    "GET k",
    "EXEC",
    "DEL k n",
    "LPUSH l a b",
    "DEBUG SLEEP 0",
    "EVAL \"redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])\" 1 s v",
    "EVALSHA 95f1c2c8ae2b3cd3e1bfb6e9d6b2b6d0c0e4c0a1 0",
    "EVAL \"return redis.pcall('incr', 's')\" 0",
];

/// The lines a monitor of `addr` gets while the script runs, without time and address.
fn lines(addr: SocketAddr) -> Vec<String> {
    let mut watcher = Raw::connect(addr);
    assert_eq!(watcher.cmd(&[b"MONITOR"]).read(), simple("OK"));
    let mut c = Raw::connect(addr);
    for cmd in SCRIPT {
        let a = split(cmd);
        c.cmd(&a.iter().map(|x| &x[..]).collect::<Vec<_>>()).read();
    }
    // Arguments that need quoting: a quote, a backslash, control bytes, bytes past ASCII.
    c.cmd(&[b"SET", b"q", b"a \"b\" \\ \n\r\t\x07\x08\x00\xff"])
        .read();
    c.cmd(&[b"ECHO", b"done"]).read();
    let mut got = Vec::new();
    loop {
        let Frame::Simple(line) = watcher.read() else {
            panic!("MONITOR sends simple strings");
        };
        let (client, cmd) = line.split_once("] ").expect("time and address, then the command");
        // A script's commands show `lua` as their client.
        if client.ends_with("[0 lua") {
            got.push(format!("lua {cmd}"));
        } else {
            got.push(cmd.to_string());
        }
        if cmd == r#""ECHO" "done""# {
            return got;
        }
    }
}

#[test]
fn monitor_lines_match_redis() {
    let Some((_guard, raddr)) = start_redis() else {
        return;
    };
    for threads in [1, 2] {
        let server = common::start_with(|o| o.threads = threads);
        let (theirs, ours) = (lines(raddr), lines(server.addr()));
        assert_eq!(theirs, ours, "Redis's lines first ({threads} event loops)");
        for want in [
            r#""SET" "k" "v""#,
            r#""AUTH" "(redacted)""#,
            r#""EXEC""#,
            r#"lua "set" "s" "v""#,
        ] {
            assert!(ours.iter().any(|l| l == want), "{want} in {ours:?}");
        }
    }
}
