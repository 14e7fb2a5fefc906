//! Load: a pipeline of 10 000 commands, 200 concurrent clients, and redis-benchmark, pipelined and in its
//! default run (when installed; required under `CI=true`).

mod common;

use std::process::Command;

use redis::Commands;

#[test]
fn a_pipeline_of_ten_thousand_commands() {
    let server = common::start();
    let mut c = common::client(server.addr());
    let mut p = redis::pipe();
    for i in 0..5_000 {
        p.set(format!("p{i}"), i).get(format!("p{i}"));
    }
    let replies: Vec<redis::Value> = p.query(&mut c).unwrap();
    assert_eq!(replies.len(), 10_000);
    for (i, pair) in replies.chunks(2).enumerate() {
        assert_eq!(pair[0], redis::Value::Okay);
        assert_eq!(pair[1], redis::Value::BulkString(i.to_string().into_bytes()));
    }
}

#[test]
fn two_hundred_concurrent_clients() {
    let server = common::start();
    let addr = server.addr();
    let threads: Vec<_> = (0..200)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = common::client(addr);
                for i in 0..50 {
                    let _: i64 = c.incr("shared", 1).unwrap();
                    let _: () = c.set(format!("c{t}:{i}"), i).unwrap();
                }
                for i in 0..50 {
                    assert_eq!(c.get::<_, i64>(format!("c{t}:{i}")).unwrap(), i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = common::client(addr);
    assert_eq!(c.get::<_, i64>("shared").unwrap(), 200 * 50);
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 200 * 50 + 1);
}

#[test]
fn redis_benchmark_completes_without_errors() {
    if !common::require_tool("redis-benchmark") {
        return;
    }
    let server = common::start();
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.addr().port().to_string()])
        .args(["-t", "set,get,incr,mset", "-P", "16", "-q", "-n", "20000"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    for t in ["SET", "GET", "INCR", "MSET"] {
        // Progress lines end in '\r'; the final one per test is "<TEST>: <n> requests per second, ...".
        let done = text
            .split(['\r', '\n'])
            .any(|l| l.trim().starts_with(t) && l.contains("requests per second"));
        assert!(done, "{t}: {text}");
    }
    assert!(
        !text.contains("ERR") && !text.to_lowercase().contains("error"),
        "{text}"
    );
    let mut c = common::client(server.addr());
    assert!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap() > 0);
}

/// Every test of redis-benchmark's default run (no `-t`), as a new user would first try it: the strings,
/// and the lists, sets, hashes and sorted sets behind LPUSH, RPOP, SADD, SPOP, HSET, ZADD, ZPOPMIN and
/// LRANGE_600.
#[test]
fn redis_benchmark_default_run_completes_every_test() {
    if !common::require_tool("redis-benchmark") {
        return;
    }
    let server = common::start();
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.addr().port().to_string()])
        .args(["-q", "-n", "2000"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let done: Vec<&str> = text
        .split(['\r', '\n'])
        .filter(|l| l.contains("requests per second"))
        .map(|l| l.split(':').next().unwrap_or("").trim())
        .collect();
    for t in [
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "RPUSH",
        "LPOP",
        "RPOP",
        "SADD",
        "HSET",
        "SPOP",
        "ZADD",
        "ZPOPMIN",
        "LPUSH (needed to benchmark LRANGE)",
        "LRANGE_100 (first 100 elements)",
        "LRANGE_300 (first 300 elements)",
        "LRANGE_500 (first 500 elements)",
        "LRANGE_600 (first 600 elements)",
        "MSET (10 keys)",
    ] {
        assert!(done.contains(&t), "{t} did not complete: {text}");
    }
    assert!(!text.contains("ERR"), "{text}");
    // LRANGE_600 read back the list the LPUSH test built.
    let mut c = common::client(server.addr());
    assert!(c.llen::<_, i64>("mylist").unwrap() >= 600);
}

#[test]
fn connections_on_different_event_loops_see_each_other_and_one_shutdown_stops_every_loop() {
    let server = common::start_with(|o| o.threads = 3);
    let addr = server.addr();
    // Six connections: two on each loop (handed out round-robin).
    let mut cs: Vec<redis::Connection> = (0..6).map(|_| common::client(addr)).collect();
    for (i, c) in cs.iter_mut().enumerate() {
        let _: () = c.set(format!("loop{i}"), i).unwrap();
    }
    for c in cs.iter_mut() {
        for i in 0..6 {
            assert_eq!(c.get::<_, usize>(format!("loop{i}")).unwrap(), i);
        }
    }
    // A client on one loop kills a client on another.
    let victim: i64 = redis::cmd("CLIENT").arg("ID").query(&mut cs[4]).unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(victim)
        .query(&mut cs[0])
        .unwrap();
    assert_eq!(killed, 1);
    assert!(
        cs[4].get::<_, usize>("loop0").is_err(),
        "the killed client is closed"
    );
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut cs[1]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(server.wait().is_ok()));
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(10)),
        Ok(true),
        "every event loop stopped"
    );
}
