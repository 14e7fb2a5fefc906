//! Client-side caching (CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO, the invalidation pushes and
//! redirected messages) against a real `redis-server` (skipped without one, failed under `CI=true`):
//! four connections to each server, each step's bytes on every connection compared exactly. Client
//! ids differ between the servers: `$ID` in a step is connection 0's id there (`$ID3`: connection
//! 3's), and ids in GETREDIR, TRACKINGINFO and `tracking-redir-broken` read `ID`.

mod common;

use std::io::{ErrorKind, Read};
use std::net::SocketAddr;
use std::time::Duration;

use common::differ::{split, start_redis};
use common::Raw;
use hopless_server::codec::Frame;

/// Everything `r` has been sent until it is quiet for a moment (empty once it is closed).
fn bytes(r: &mut Raw) -> Vec<u8> {
    r.sock.set_read_timeout(Some(Duration::from_millis(60))).unwrap();
    let mut got = Vec::new();
    let mut tmp = [0u8; 65536];
    loop {
        match r.sock.read(&mut tmp) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    got
}

/// A pause of this many milliseconds instead of a command (connection index `SLEEP`).
const SLEEP: usize = 9;

const STEPS: &[(usize, &str)] = &[
    (0, "SUBSCRIBE __redis__:invalidate"),
    (1, "CLIENT TRACKING on REDIRECT $ID"),
    (2, "SET a 1"),
    (1, "GET a"),
    (2, "SET a 2"),
    (1, "MGET a b c"),
    (2, "MSET a 1 b 2"),
    (2, "DEL c"),
    (1, "GET a"),
    (2, "FLUSHALL"),
    (1, "CLIENT GETREDIR"),
    (1, "CLIENT TRACKINGINFO"),
    (1, "CLIENT TRACKING off"),
    (1, "CLIENT GETREDIR"),
    (1, "CLIENT TRACKINGINFO"),
    // Every error, in Redis's order of checks.
    (1, "CLIENT TRACKING on PREFIX x"),
    (1, "CLIENT TRACKING on BCAST OPTIN"),
    (1, "CLIENT TRACKING on OPTIN OPTOUT"),
    (1, "CLIENT TRACKING on REDIRECT 999999"),
    (1, "CLIENT TRACKING on REDIRECT abc"),
    (1, "CLIENT TRACKING on REDIRECT $ID REDIRECT $ID"),
    (1, "CLIENT TRACKING maybe"),
    (1, "CLIENT TRACKING on FOO"),
    (1, "CLIENT TRACKING on PREFIX"),
    (1, "CLIENT TRACKING"),
    (1, "CLIENT CACHING yes"),
    (1, "CLIENT CACHING yes no"),
    (1, "CLIENT GETREDIR x"),
    (1, "CLIENT TRACKINGINFO x"),
    (1, "CLIENT TRACKING on BCAST PREFIX FOOBAR PREFIX FOO"),
    (1, "CLIENT TRACKING on BCAST PREFIX FOO PREFIX BAR"),
    (1, "CLIENT TRACKING on BCAST PREFIX FO"),
    (1, "CLIENT TRACKING on BCAST PREFIX BARB"),
    (1, "CLIENT TRACKING on"),
    (1, "CLIENT TRACKINGINFO"),
    (1, "CLIENT CACHING yes"),
    (2, "MSET FOO1 x BAR2 y other z"),
    (1, "CLIENT TRACKING off"),
    // RESP3: pushes on the client's own connection.
    (1, "HELLO 3"),
    (1, "CLIENT TRACKING on BCAST PREFIX FOO PREFIX BAR NOLOOP"),
    (2, "MSET FOO1 x BAR2 y FOO2 z other w"),
    (1, "SET FOO3 x"),
    (1, "MSET FOO3 y FOO4 y"),
    (2, "SET FOO4 z"),
    (1, "CLIENT CACHING no"),
    (1, "CLIENT TRACKINGINFO"),
    (1, "CLIENT TRACKING off"),
    (1, "CLIENT TRACKING on OPTIN"),
    (1, "CLIENT CACHING maybe"),
    (1, "CLIENT CACHING no"),
    (1, "GET k1"),
    (2, "SET k1 v"),
    (1, "CLIENT CACHING yes"),
    (1, "CLIENT TRACKINGINFO"),
    (1, "GET k1"),
    (1, "CLIENT TRACKINGINFO"),
    (2, "SET k1 w"),
    (1, "CLIENT TRACKING on OPTOUT"),
    (1, "CLIENT TRACKING off"),
    (1, "CLIENT TRACKING on OPTOUT"),
    (1, "CLIENT CACHING no"),
    (1, "GET k2"),
    (1, "GET k3"),
    (2, "MSET k2 1 k3 1"),
    (1, "CLIENT TRACKING off"),
    (1, "CLIENT TRACKING on"),
    (1, "GET self"),
    (1, "SET self 1"),
    (1, "GET self"),
    (1, "HSET h f 1"),
    (1, "HGET h f"),
    (1, "HDEL h f"),
    (1, "MULTI"),
    (1, "INCR self"),
    (1, "GET other"),
    (1, "EXEC"),
    (1, "CLIENT TRACKING on NOLOOP"),
    (1, "GET self"),
    (1, "SET self 2"),
    (2, "SET self 3"),
    (1, "GET e"),
    (2, "SET e 1 PX 50"),
    (1, "GET e"),
    (SLEEP, "300"),
    (1, "EVAL \"return redis.call('get', KEYS[1])\" 1 sk"),
    (2, "SET sk 1"),
    (1, "EVAL \"return 1\" 1 sk2"),
    (2, "SET sk2 1"),
    (1, "GET f"),
    (2, "FLUSHDB"),
    (1, "PING"),
    // A RESP3 client redirected to a RESP2 subscriber.
    (1, "CLIENT TRACKING on REDIRECT $ID"),
    (1, "GET r"),
    (2, "SET r 1"),
    (2, "FLUSHALL"),
    (1, "CONFIG GET tracking-table-max-keys"),
    (1, "CONFIG SET tracking-table-max-keys -1"),
    (1, "CONFIG SET tracking-table-max-keys 5"),
    (1, "CONFIG GET tracking-table-max-keys"),
    (1, "CONFIG SET tracking-table-max-keys 1000000"),
    // Its redirect target gone.
    (1, "CLIENT TRACKING on REDIRECT $ID3"),
    (1, "GET q"),
    (3, "QUIT"),
    (2, "SET q 1"),
    (1, "CLIENT TRACKINGINFO"),
    (1, "RESET"),
    (1, "CLIENT TRACKINGINFO"),
];

fn client_id(r: &mut Raw) -> i64 {
    match r.cmd(&[b"CLIENT", b"ID"]).read() {
        Frame::Integer(i) => i,
        f => panic!("{f:?}"),
    }
}

struct Side {
    conns: Vec<Raw>,
    ids: [i64; 2],
}

fn side(addr: SocketAddr) -> Side {
    let mut conns: Vec<Raw> = (0..4).map(|_| Raw::connect(addr)).collect();
    let ids = [client_id(&mut conns[0]), client_id(&mut conns[3])];
    conns[0].cmd(&[b"FLUSHALL"]).read();
    Side { conns, ids }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn client_side_caching_matches_redis() {
    let Some((_guard, raddr)) = start_redis() else {
        return;
    };
    let server = common::start();
    let mut sides = [side(raddr), side(server.addr())];
    let mut diffs = Vec::new();
    for &(i, line) in STEPS {
        if i == SLEEP {
            std::thread::sleep(Duration::from_millis(line.parse().unwrap()));
        }
        let mut got = [Vec::new(), Vec::new()];
        for (s, side) in sides.iter_mut().enumerate() {
            if i != SLEEP {
                let line = line
                    .replace("$ID3", &side.ids[1].to_string())
                    .replace("$ID", &side.ids[0].to_string());
                let args = split(&line);
                let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
                side.conns[i].cmd(&args);
            }
            for j in 0..4 {
                let mut b = text(&bytes(&mut side.conns[j]));
                if line.contains("GETREDIR") || line.contains("TRACKINGINFO") || b.contains("redir-broken") {
                    for id in side.ids {
                        b = b.replace(&format!(":{id}\r\n"), ":ID\r\n");
                    }
                }
                got[s].push(b);
            }
        }
        for (j, (theirs, mine)) in got[0].iter().zip(&got[1]).enumerate() {
            // HELLO names the server and its version.
            if line.starts_with("HELLO") && i == j {
                continue;
            }
            if theirs != mine {
                diffs.push(format!(
                    "{line} (conn {j})\n  redis:   {theirs:?}\n  hopless: {mine:?}"
                ));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// CLIENT LIST's tracking flags (`t`, `B`, `R`) and `redir=`, and INFO's tracking counts.
#[test]
fn client_list_and_info_show_tracking() {
    let server = common::start();
    let mut target = Raw::connect(server.addr());
    let target_id = client_id(&mut target);
    let mut a = Raw::connect(server.addr());
    let mut b = Raw::connect(server.addr());
    let line = |r: &mut Raw| match r.cmd(&[b"CLIENT", b"INFO"]).read() {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => text(&b),
        f => panic!("{f:?}"),
    };
    let id = target_id.to_string();
    a.cmd(&[b"CLIENT", b"TRACKING", b"on", b"REDIRECT", id.as_bytes()])
        .read();
    b.cmd(&[b"CLIENT", b"TRACKING", b"on", b"BCAST", b"PREFIX", b"p:"])
        .read();
    let la = line(&mut a);
    assert!(
        la.contains(" flags=t ") && la.contains(&format!(" redir={target_id} ")),
        "{la}"
    );
    let lb = line(&mut b);
    assert!(lb.contains(" flags=tB ") && lb.contains(" redir=0 "), "{lb}");
    a.cmd(&[b"SET", b"k", b"v"]).read();
    a.cmd(&[b"GET", b"k"]).read();
    a.cmd(&[b"GET", b"j"]).read();
    let info = match a.cmd(&[b"INFO"]).read() {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => text(&b),
        f => panic!("{f:?}"),
    };
    for want in [
        "tracking_clients:2\r\n",
        "tracking_total_keys:2\r\n",
        "tracking_total_items:2\r\n",
        "tracking_total_prefixes:1\r\n",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
    drop(target);
    std::thread::sleep(Duration::from_millis(100));
    a.cmd(&[b"SET", b"k", b"w"]).read();
    let la = line(&mut a);
    assert!(la.contains(" flags=tR "), "{la}");
    drop(b);
    drop(a);
    std::thread::sleep(Duration::from_millis(100));
    let mut c = Raw::connect(server.addr());
    let info = match c.cmd(&[b"INFO"]).read() {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => text(&b),
        f => panic!("{f:?}"),
    };
    assert!(
        info.contains("tracking_clients:0\r\n") && info.contains("tracking_total_keys:0\r\n"),
        "{info}"
    );
}
