//! Differential test of the stream consumer-group commands (XGROUP XREADGROUP XACK XPENDING XCLAIM
//! XAUTOCLAIM XINFO) against a real `redis-server` (skipped without one, failed under `CI=true`): a
//! hand-written script over every subcommand, option and error, in RESP2 and RESP3; idle and delivery
//! times, which follow the clock, are blanked before replies are compared. XREADGROUP BLOCK is tested
//! against hopless alone.

mod common;

use std::time::Duration;

use common::differ::{Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

const SCRIPT: &[&str] = &[
    "XADD s 1-0 a 1",
    "XADD s 2-0 b 2",
    "XADD s 3-0 c 3",
    "XADD s 4-0 d 4",
    // XGROUP.
    "XGROUP",
    "XGROUP HELP",
    "XGROUP HELP x",
    "XGROUP FOO",
    "XGROUP CREATE s",
    "XGROUP CREATE s g",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g2 $",
    "XGROUP CREATE s g3 2-0 ENTRIESREAD 2",
    "XGROUP CREATE s g4 x",
    "XGROUP CREATE s g4 +",
    "XGROUP CREATE s g4 0 FOO",
    "XGROUP CREATE s g4 0 ENTRIESREAD -2",
    "XGROUP CREATE s g4 0 ENTRIESREAD x",
    "XGROUP CREATE s g4 0 ENTRIESREAD",
    "XGROUP CREATE missing g 0",
    "XGROUP CREATE made g 0 MKSTREAM",
    "XGROUP CREATE made2 g $ MKSTREAM",
    "TYPE made",
    "XLEN made",
    "XRANGE made - +",
    "SET str x",
    "XGROUP CREATE str g 0",
    "XGROUP CREATE str g 0 MKSTREAM",
    "XGROUP SETID s g 1-0",
    "XGROUP SETID s g -",
    "XGROUP SETID s nogroup 0",
    "XGROUP SETID s g x",
    "XGROUP SETID s g 0 ENTRIESREAD 0",
    "XGROUP SETID s g 0 MKSTREAM",
    "XGROUP SETID s g 0 ENTRIESREAD",
    "XGROUP SETID missing g 0",
    "XGROUP CREATECONSUMER s g alice",
    "XGROUP CREATECONSUMER s g alice",
    "XGROUP CREATECONSUMER s nogroup alice",
    "XGROUP CREATECONSUMER s g",
    "XGROUP DELCONSUMER s g nobody",
    "XGROUP DELCONSUMER s nogroup alice",
    "XGROUP DESTROY s g4",
    "XGROUP DESTROY s nogroup",
    "XGROUP DESTROY missing g",
    "XGROUP DESTROY s",
    // XREADGROUP.
    "XREADGROUP GROUP g alice STREAMS s >",
    "XREADGROUP GROUP g bob COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g bob STREAMS s >",
    "XADD s 5-0 e 5",
    "XADD s 6-0 f 6",
    "XREADGROUP GROUP g bob COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g alice NOACK STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s 0",
    "XREADGROUP GROUP g alice STREAMS s 2-0",
    "XREADGROUP GROUP g alice COUNT 1 STREAMS s 0",
    "XREADGROUP GROUP g carol STREAMS s 0",
    "XREADGROUP GROUP g2 alice STREAMS s made >",
    "XREADGROUP GROUP g3 dave STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s $",
    "XREADGROUP GROUP g alice STREAMS s x",
    "XREADGROUP GROUP nogroup alice STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS missing >",
    "XREADGROUP GROUP g alice STREAMS str >",
    "XREADGROUP GROUP g alice STREAMS s",
    "XREADGROUP GROUP g alice COUNT x STREAMS s >",
    "XREADGROUP GROUP g alice BLOCK x STREAMS s >",
    "XREADGROUP GROUP g alice FOO STREAMS s >",
    "XREADGROUP STREAMS s > x y",
    "XREADGROUP GROUP g STREAMS s >",
    "XREADGROUP GROUP g alice BLOCK 10 STREAMS s >",
    "XREAD GROUP g alice STREAMS s >",
    "EVAL \"return redis.call('XREADGROUP','GROUP','g','a','BLOCK','0','STREAMS','s','>')\" 0",
    // XACK.
    "XACK s g 1-0 2-0 99-0",
    "XACK s g 1-0",
    "XACK s g x",
    "XACK s nogroup x",
    "XACK missing g 1-0",
    "XACK str g 1-0",
    // XPENDING, summary and extended (idle times blanked).
    "XPENDING s g",
    "XPENDING s g2",
    "XPENDING s nogroup",
    "XPENDING missing g",
    "XPENDING str g",
    "XPENDING s g - +",
    "XPENDING s g - + x",
    "XPENDING s g x + 10",
    "XPENDING s g (- + 10",
    "XPENDING s g - (+ 10",
    "XPENDING s g IDLE 0 - + 10",
    "XPENDING s g IDLE x - + 10",
    "XPENDING s g IDLE 0 - +",
    "XPENDING s g a b c d e f g",
    // XCLAIM.
    "XCLAIM s g carol 0 3-0",
    "XCLAIM s g carol 0 3-0 JUSTID",
    "XCLAIM s g carol 0 4-0 5-0 RETRYCOUNT 7",
    "XCLAIM s g carol 100000 4-0",
    "XCLAIM s g carol 0 1-0 FORCE JUSTID",
    "XCLAIM s g carol 0 99-0 FORCE",
    "XCLAIM s g carol x 1-0",
    "XCLAIM s g carol 0 1-0 IDLE x",
    "XCLAIM s g carol 0 1-0 TIME x",
    "XCLAIM s g carol 0 1-0 RETRYCOUNT x",
    "XCLAIM s g carol 0 1-0 LASTID x",
    "XCLAIM s g carol 0 1-0 BOGUS",
    "XCLAIM s g carol 0 x",
    "XCLAIM s nogroup carol 0 1-0",
    "XCLAIM missing g carol 0 1-0",
    "XCLAIM s g carol 0 1-0 LASTID 50-0 JUSTID",
    "XDEL s 2-0",
    "XCLAIM s g erin 0 2-0",
    // XAUTOCLAIM.
    "XAUTOCLAIM s g frank 0 0",
    "XAUTOCLAIM s g frank 0 0 COUNT 1",
    "XAUTOCLAIM s g frank 0 0 COUNT 1 JUSTID",
    "XAUTOCLAIM s g frank 0 (3-0 JUSTID",
    "XAUTOCLAIM s g frank 100000 0",
    "XAUTOCLAIM s g frank 0 0 COUNT 0",
    "XAUTOCLAIM s g frank 0 0 COUNT x",
    "XAUTOCLAIM s g frank 0 0 FOO",
    "XAUTOCLAIM s g frank x 0",
    "XAUTOCLAIM s g frank 0 x",
    "XAUTOCLAIM s nogroup frank 0 0",
    "XAUTOCLAIM missing g frank 0 0",
    "XREADGROUP GROUP g2 zed STREAMS s >",
    "XDEL s 5-0 6-0",
    "XAUTOCLAIM s g2 frank 0 0",
    "XPENDING s g2",
    // XGROUP DELCONSUMER with pending entries, DESTROY.
    "XGROUP DELCONSUMER s g frank",
    "XPENDING s g",
    "XGROUP DESTROY s g3",
    // XINFO.
    "XINFO",
    "XINFO HELP",
    "XINFO FOO s",
    "XINFO GROUPS",
    "XINFO GROUPS s",
    "XINFO GROUPS made",
    "XINFO GROUPS missing",
    "XINFO GROUPS str",
    "XINFO GROUPS s x",
    "XINFO CONSUMERS s nogroup",
    "XINFO CONSUMERS s",
    "XINFO STREAM s",
    "XINFO STREAM made",
    "XINFO STREAM s FULL",
    "XINFO STREAM s FULL COUNT 1",
    "XINFO STREAM s FULL COUNT 0",
    "XINFO STREAM s FULL COUNT -5",
    "XINFO STREAM s FULL COUNT x",
    "XINFO STREAM s FULL x 1",
    "XINFO STREAM s x",
    "XINFO STREAM s FULL COUNT",
    "XINFO STREAM missing",
    "XADD lagged 1-0 a 1",
    "XADD lagged 2-0 a 1",
    "XADD lagged 3-0 a 1",
    "XGROUP CREATE lagged g 0",
    "XGROUP CREATE lagged late $",
    "XGROUP CREATE lagged mid 2-0",
    "XINFO GROUPS lagged",
    "XREADGROUP GROUP g c COUNT 1 STREAMS lagged >",
    "XINFO GROUPS lagged",
    "XDEL lagged 3-0",
    "XINFO GROUPS lagged",
    "XREADGROUP GROUP g c STREAMS lagged >",
    "XINFO GROUPS lagged",
    "XADD lagged 4-0 a 1",
    "XINFO GROUPS lagged",
    "XSETID lagged 10-0 ENTRIESADDED 100 MAXDELETEDID 5-0",
    "XINFO GROUPS lagged",
    "XGROUP SETID lagged g 0 ENTRIESREAD 0",
    "XINFO GROUPS lagged",
    "COPY lagged lagged2",
    "XINFO GROUPS lagged2",
    "XTRIM lagged MAXLEN 0",
    "XINFO GROUPS lagged",
];

/// Zeroes what follows the clock: an XPENDING entry's idle time, XINFO CONSUMERS's idle, and the
/// times in XINFO STREAM FULL; and XINFO STREAM's `radix-tree-nodes` (Redis's radix tree's own node
/// count, which hopless's sorted nodes do not have).
fn mask(f: Frame) -> Frame {
    match f {
        Frame::Array(v)
            if v.len() == 3
                && matches!(&v[0], Frame::Bulk(b) if b.contains(&b'-'))
                && matches!(v[1], Frame::Integer(_)) =>
        {
            let mut v = v;
            v[1] = Frame::Integer(0);
            Frame::Array(v)
        }
        Frame::Array(v)
            if v.len() == 4 && matches!(v[0], Frame::Bulk(_)) && matches!(v[2], Frame::Integer(_)) =>
        {
            let mut v = v;
            if let Frame::Bulk(b) = &v[0] {
                if b.contains(&b'-') {
                    v[2] = Frame::Integer(0);
                }
            }
            Frame::Array(v.into_iter().map(mask).collect())
        }
        Frame::Array(v) => {
            let mut out = Vec::with_capacity(v.len());
            let mut blank_next = false;
            for x in v {
                if blank_next {
                    out.push(Frame::Integer(0));
                    blank_next = false;
                    continue;
                }
                if let Frame::Bulk(b) = &x {
                    blank_next = &b[..] == b"idle" || &b[..] == b"seen-time" || &b[..] == b"radix-tree-nodes";
                }
                out.push(mask(x));
            }
            Frame::Array(out)
        }
        Frame::Map(v) => Frame::Map(
            v.into_iter()
                .map(|(k, x)| match &k {
                    Frame::Bulk(b)
                        if &b[..] == b"idle" || &b[..] == b"seen-time" || &b[..] == b"radix-tree-nodes" =>
                    {
                        (k, Frame::Integer(0))
                    }
                    _ => (mask(k), mask(x)),
                })
                .collect(),
        ),
        other => other,
    }
}

fn run_all(d: &mut Differ, lines: &[&str]) {
    for l in lines {
        d.run_masked(l, mask);
    }
}

#[test]
fn consumer_group_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    run_all(&mut d, SCRIPT);
    d.compare_keyspace();
    d.assert_none();
}

#[test]
fn consumer_group_replies_match_redis_in_resp3() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("HELLO 3", Order::Exact);
    d.diffs.clear();
    run_all(
        &mut d,
        &[
            "XADD r 1-0 a 1",
            "XADD r 2-0 b 2",
            "XGROUP CREATE r g 0",
            "XREADGROUP GROUP g c STREAMS r >",
            "XREADGROUP GROUP g c STREAMS r 0",
            "XREADGROUP GROUP g c STREAMS r >",
            "XPENDING r g",
            "XPENDING r g - + 10",
            "XAUTOCLAIM r g d 0 0",
            "XINFO GROUPS r",
            "XINFO CONSUMERS r g",
            "XGROUP CREATE r empty $",
            "XINFO STREAM r",
            "XINFO STREAM r FULL",
            "XPENDING r empty",
        ],
    );
    d.assert_none();
}

/// XREADGROUP BLOCK: two consumers of one group and one of another wait; one XADD serves the first
/// consumer of each group, not the second of the first group; a destroyed group unblocks its waiter
/// with an error.
#[test]
fn blocked_group_readers_share_new_entries_by_group() {
    let server = common::start();
    let mut w = Raw::connect(server.addr());
    w.cmd(&[b"XGROUP", b"CREATE", b"q", b"g", b"$", b"MKSTREAM"])
        .read();
    w.cmd(&[b"XGROUP", b"CREATE", b"q", b"h", b"$"]).read();
    let mut a = Raw::connect(server.addr());
    let mut b = Raw::connect(server.addr());
    let mut h = Raw::connect(server.addr());
    let read = |r: &mut Raw, group: &[u8], name: &[u8]| {
        r.cmd(&[
            b"XREADGROUP",
            b"GROUP",
            group,
            name,
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"q",
            b">",
        ]);
    };
    read(&mut a, b"g", b"a");
    std::thread::sleep(Duration::from_millis(50));
    read(&mut b, b"g", b"b");
    read(&mut h, b"h", b"x");
    std::thread::sleep(Duration::from_millis(100));
    w.cmd(&[b"XADD", b"q", b"1-0", b"job", b"1"]).read();
    let one = |id: &str| {
        Frame::Array(vec![Frame::Array(vec![
            Frame::Bulk("q".into()),
            Frame::Array(vec![Frame::Array(vec![
                Frame::Bulk(id.to_string().into()),
                Frame::Array(vec![Frame::Bulk("job".into()), Frame::Bulk("1".into())]),
            ])]),
        ])])
    };
    assert_eq!(a.read(), one("1-0"));
    assert_eq!(h.read(), one("1-0"));
    assert_eq!(
        w.cmd(&[b"XPENDING", b"q", b"g"]).read(),
        Frame::Array(vec![
            Frame::Integer(1),
            Frame::Bulk("1-0".into()),
            Frame::Bulk("1-0".into()),
            Frame::Array(vec![Frame::Array(vec![
                Frame::Bulk("a".into()),
                Frame::Bulk("1".into())
            ])]),
        ])
    );
    w.cmd(&[b"XGROUP", b"DESTROY", b"q", b"g"]).read();
    w.cmd(&[b"XADD", b"q", b"2-0", b"job", b"2"]).read();
    assert_eq!(
        b.read(),
        Frame::Error("NOGROUP the consumer group this client was blocked on no longer exists".into())
    );
}
