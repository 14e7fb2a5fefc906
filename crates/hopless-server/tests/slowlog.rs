//! SLOWLOG: what goes in (every command at least `slowlog-log-slower-than` µs, EXEC's commands but not
//! EXEC, a blocked command once served, passwords redacted), entries as Redis 7.0 makes them (ids never
//! reused, arguments cut at 32 and 128 bytes, the client's address and name), `slowlog-max-len`, and the
//! subcommands' replies and errors beside a real `redis-server`'s.

mod common;

use common::differ::{Differ, Order};
use common::{bulk, simple, Raw};
use hopless_server::codec::Frame;

fn int(f: &Frame) -> i64 {
    match f {
        Frame::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn items(f: Frame) -> Vec<Frame> {
    match f {
        Frame::Array(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

fn words(f: &Frame) -> Vec<String> {
    match f {
        Frame::Array(v) => v
            .iter()
            .map(|b| match b {
                Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("not a bulk: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

fn run(c: &mut Raw, line: &str) -> Frame {
    let a = common::differ::split(line);
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    c.cmd(&a).read()
}

/// The newest entry's arguments.
fn newest_args(c: &mut Raw) -> Vec<String> {
    let e = items(items(run(c, "SLOWLOG GET 1")).remove(0));
    words(&e[3])
}

#[test]
fn the_log_keeps_what_redis_keeps() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 0);

    // Only commands as slow as the threshold.
    run(&mut c, "CONFIG SET slowlog-log-slower-than 100000");
    run(&mut c, "PING");
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 0);
    run(&mut c, "DEBUG SLEEP 0.2");
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 1);

    // At most slowlog-max-len, newest first; the CONFIG SET that lowers the threshold is logged itself.
    run(&mut c, "CONFIG SET slowlog-log-slower-than 0");
    run(&mut c, "CONFIG SET slowlog-max-len 10");
    for _ in 0..100 {
        run(&mut c, "PING");
    }
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 10);
    assert_eq!(items(run(&mut c, "SLOWLOG GET 5")).len(), 5);
    assert_eq!(items(run(&mut c, "SLOWLOG GET -1")).len(), 10);
    assert_eq!(items(run(&mut c, "SLOWLOG GET")).len(), 10);
    run(&mut c, "CONFIG SET slowlog-log-slower-than 100000");
    assert_eq!(run(&mut c, "SLOWLOG RESET"), simple("OK"));
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 0);

    // An entry: id (never reused: 0 for the first DEBUG SLEEP, then 1 and 2 for the two CONFIG SETs,
    // 3..102 for the pings, 103 and 104 for LEN and GET 5, 105, 106 for GET -1 and GET), the time,
    // the duration, the arguments, the client's address, its name.
    run(&mut c, "CLIENT SETNAME foobar");
    run(&mut c, "DEBUG SLEEP 0.2");
    let e = items(items(run(&mut c, "SLOWLOG GET")).remove(0));
    assert_eq!(e.len(), 6);
    assert_eq!(int(&e[0]), 107);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - 5..=now).contains(&int(&e[1])), "{:?}", e[1]);
    assert!(int(&e[2]) > 100_000, "{:?}", e[2]);
    assert_eq!(words(&e[3]), ["DEBUG", "SLEEP", "0.2"]);
    let addr = match &e[4] {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("{other:?}"),
    };
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_eq!(e[5], bulk("foobar"));

    // Long calls and long arguments are cut as Redis cuts them.
    run(&mut c, "CONFIG SET slowlog-log-slower-than 0");
    let many: Vec<String> = (3..=33).map(|i| i.to_string()).collect();
    run(&mut c, &format!("SADD set {}", many.join(" ")));
    let got = newest_args(&mut c);
    assert_eq!(got.len(), 32);
    assert_eq!(got[31], "... (2 more arguments)");
    run(&mut c, &format!("SADD set foo {}", "A".repeat(129)));
    assert_eq!(
        newest_args(&mut c)[3],
        format!("{}... (1 more bytes)", "A".repeat(128))
    );

    // Passwords never reach the log.
    run(&mut c, "CONFIG SET requirepass sekrit");
    run(&mut c, "AUTH sekrit");
    assert_eq!(newest_args(&mut c), ["AUTH", "(redacted)"]);
    run(&mut c, "HELLO 2 AUTH default sekrit SETNAME n2");
    assert_eq!(
        newest_args(&mut c),
        ["HELLO", "2", "AUTH", "(redacted)", "(redacted)", "SETNAME", "n2"]
    );
    run(&mut c, "CONFIG SET requirepass ''");
    assert_eq!(
        newest_args(&mut c),
        ["CONFIG", "SET", "requirepass", "(redacted)"]
    );

    // EXEC is not logged, the commands it ran are.
    run(&mut c, "CONFIG SET slowlog-log-slower-than 100000");
    run(&mut c, "SLOWLOG RESET");
    run(&mut c, "MULTI");
    run(&mut c, "DEBUG SLEEP 0.2");
    run(&mut c, "EXEC");
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 1);
    assert_eq!(newest_args(&mut c), ["DEBUG", "SLEEP", "0.2"]);

    // A shorter max-len drops the oldest at the next entry.
    run(&mut c, "CLIENT SETNAME lastentry_client");
    run(&mut c, "CONFIG SET slowlog-max-len 1");
    run(&mut c, "DEBUG SLEEP 0.2");
    let all = items(run(&mut c, "SLOWLOG GET"));
    assert_eq!(all.len(), 1);
    assert_eq!(items(all[0].clone())[5], bulk("lastentry_client"));

    // -1 turns it off.
    run(&mut c, "CONFIG SET slowlog-log-slower-than -1");
    run(&mut c, "SLOWLOG RESET");
    run(&mut c, "DEBUG SLEEP 0.2");
    assert_eq!(int(&run(&mut c, "SLOWLOG LEN")), 0);
    assert_eq!(
        items(run(&mut c, "CONFIG GET slowlog*")),
        [
            bulk("slowlog-log-slower-than"),
            bulk("-1"),
            bulk("slowlog-max-len"),
            bulk("1")
        ]
    );
}

/// A blocked command goes in when it is served (after the push that served it), under its own name.
#[test]
fn a_blocked_command_is_logged_when_it_is_served() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    let mut blocked = Raw::connect(server.addr());
    run(&mut c, "CONFIG SET slowlog-log-slower-than 0");
    blocked.cmd(&[b"BLPOP", b"l", b"0"]);
    // Wait until it is blocked.
    for _ in 0..200 {
        let info = match run(&mut c, "INFO clients") {
            Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("{other:?}"),
        };
        if info.contains("blocked_clients:1") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    run(&mut c, "MULTI");
    run(&mut c, "LPUSH l foo");
    run(&mut c, "SLOWLOG RESET");
    run(&mut c, "EXEC");
    let served = blocked.read();
    assert_eq!(served, Frame::Array(vec![bulk("l"), bulk("foo")]));
    assert_eq!(newest_args(&mut c), ["BLPOP", "l", "0"]);
}

/// The subcommands' replies and errors, beside Redis's.
#[test]
fn slowlog_replies_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(
        &[
            "SLOWLOG HELP",
            "SLOWLOG help extra",
            "SLOWLOG FOO",
            "SLOWLOG",
            "SLOWLOG GET -2",
            "SLOWLOG GET x",
            "SLOWLOG GET 1 2",
            "SLOWLOG GET 9223372036854775808",
            "SLOWLOG LEN 1",
            "SLOWLOG RESET 1",
            "SLOWLOG RESET",
            "CONFIG SET slowlog-log-slower-than 1000000",
            "SLOWLOG RESET",
            "SLOWLOG LEN",
            "SLOWLOG GET",
            "SLOWLOG GET 0",
            "CONFIG GET slowlog-log-slower-than",
            "CONFIG SET slowlog-log-slower-than -2",
            "CONFIG SET slowlog-log-slower-than +5",
            "CONFIG SET slowlog-log-slower-than 5k",
            "CONFIG SET slowlog-max-len -1",
            "CONFIG SET slowlog-max-len 99999999999999999999",
            "CONFIG SET slowlog-max-len 7",
            "CONFIG GET slowlog-max-len",
            "CONFIG SET slowlog-max-len 128",
            "CONFIG SET slowlog-log-slower-than 10000",
        ],
        |_| Order::Exact,
    );
    d.assert_none();
}

/// A script's commands go in as its client's (`?:0`, no name), before the script itself, as in Redis.
#[test]
fn a_script_and_its_commands_are_logged() {
    let server = common::start();
    let mut c = Raw::connect(server.addr());
    run(&mut c, "CLIENT SETNAME caller");
    run(&mut c, "CONFIG SET slowlog-log-slower-than 0");
    run(&mut c, "SLOWLOG RESET");
    run(&mut c, "EVAL \"redis.call('set', 'a', '1'); return 1\" 0");
    let entries = items(run(&mut c, "SLOWLOG GET 2"));
    let (script, inner) = (items(entries[0].clone()), items(entries[1].clone()));
    assert_eq!(words(&script[3])[0], "EVAL");
    assert_eq!(script[5], bulk("caller"));
    assert_eq!(words(&inner[3]), ["set", "a", "1"]);
    assert_eq!((inner[4].clone(), inner[5].clone()), (bulk("?:0"), bulk("")));
}
