//! Sharded pub/sub (SSUBSCRIBE SUNSUBSCRIBE SPUBLISH, PUBSUB SHARDCHANNELS and SHARDNUMSUB) against a
//! real `redis-server` (skipped without one, failed under `CI=true`): three connections to each
//! server, each step's frames on every connection compared, in RESP2 and RESP3; then CLIENT LIST's
//! `ssub` count.

mod common;

use std::time::Duration;

use common::differ::{split, start_redis};
use common::Raw;
use hopless_server::codec::Frame;

/// Every frame `r` has been sent, until it is quiet for a moment.
fn frames(r: &mut Raw) -> Vec<Frame> {
    r.sock.set_read_timeout(Some(Duration::from_millis(40))).unwrap();
    let mut got = Vec::new();
    while let Some(f) = r.try_read() {
        got.push(f);
    }
    got
}

const STEPS: &[(usize, &str)] = &[
    (0, "SSUBSCRIBE chan1"),
    (0, "SSUBSCRIBE chan2 chan1 chan3"),
    (1, "SPUBLISH chan1 hello"),
    (1, "SPUBLISH nobody hello"),
    (1, "PUBLISH chan1 not-a-shard-message"),
    (2, "PSUBSCRIBE chan*"),
    (1, "SPUBLISH chan2 patterns-do-not-see-it"),
    (1, "PUBSUB SHARDCHANNELS"),
    (1, "PUBSUB SHARDCHANNELS chan[12]"),
    (1, "PUBSUB SHARDNUMSUB chan1 nobody"),
    (1, "PUBSUB CHANNELS"),
    (1, "PUBSUB NUMSUB chan1"),
    (0, "GET k"),
    (0, "PING"),
    (0, "SUBSCRIBE plain"),
    (0, "SUNSUBSCRIBE chan1"),
    (0, "SUNSUBSCRIBE nothere"),
    // A bare SUNSUBSCRIBE goes through them in hash order: one left.
    (0, "SUNSUBSCRIBE chan2"),
    (0, "SUNSUBSCRIBE"),
    (0, "SUNSUBSCRIBE"),
    (0, "GET k"),
    (0, "UNSUBSCRIBE"),
    (0, "GET k"),
    (1, "SPUBLISH chan1 after"),
    (1, "SSUBSCRIBE"),
    (1, "SPUBLISH onlyone"),
    (1, "SUNSUBSCRIBE"),
    (1, "SSUBSCRIBE x"),
    (1, "SET k v"),
    (1, "RESET"),
    (2, "SPUBLISH x gone"),
    (1, "MULTI"),
    (1, "SPUBLISH x queued"),
    (1, "EXEC"),
    (
        1,
        "EVAL \"return redis.call('spublish', 'x', 'from a script')\" 0",
    ),
    (1, "EVAL \"return redis.call('ssubscribe', 'x')\" 0"),
    (1, "HELLO 3"),
    (1, "SSUBSCRIBE r3"),
    (2, "SPUBLISH r3 pushed"),
    (1, "GET k"),
    (1, "SUNSUBSCRIBE r3"),
];

#[test]
fn sharded_pubsub_matches_redis() {
    let Some((_guard, raddr)) = start_redis() else {
        return;
    };
    let server = common::start();
    let mut redis: Vec<Raw> = (0..3).map(|_| Raw::connect(raddr)).collect();
    let mut ours: Vec<Raw> = (0..3).map(|_| Raw::connect(server.addr())).collect();
    redis[0].cmd(&[b"FLUSHALL"]).read();
    let mut diffs = Vec::new();
    for &(i, line) in STEPS {
        let args = split(line);
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        redis[i].cmd(&args);
        ours[i].cmd(&args);
        for j in 0..3 {
            let (mut theirs, mut mine) = (frames(&mut redis[j]), frames(&mut ours[j]));
            // PUBSUB SHARDCHANNELS lists them in the server's hash order.
            if line.starts_with("PUBSUB SHARDCHANNELS") {
                for f in theirs.iter_mut().chain(mine.iter_mut()) {
                    if let Frame::Array(v) = f {
                        v.sort_by_key(|x| format!("{x:?}"));
                    }
                }
            }
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
    // CLIENT LIST counts shard channels apart.
    let mut c = Raw::connect(server.addr());
    c.cmd(&[b"SSUBSCRIBE", b"a", b"b"]).read();
    c.read();
    let mut other = Raw::connect(server.addr());
    let list = match other.cmd(&[b"CLIENT", b"LIST"]).read() {
        Frame::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
        f => panic!("{f:?}"),
    };
    assert!(list.contains("sub=0 psub=0 ssub=2"), "{list}");
}
