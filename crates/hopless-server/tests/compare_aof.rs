//! The append-only file against a real `redis-server` (skipped without one, failed under `CI=true`):
//! the set one server writes (every type, small and large, TTLs, commands whose effect depends on when
//! or how they ran, transactions, scripts, blocking pops, stream groups, a rewrite in the middle) is
//! loaded by the other, and the loaded keyspace matches the writer's key by key, deadlines to the
//! millisecond; `redis-check-aof` accepts hopless's set; a set cut short or damaged is cut back or
//! refused as `aof-load-truncated` says, and a refused set is left as it was.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::differ::{keys, mask_times, start_redis_with, Differ, Order};
use common::Raw;
use hopless_server::codec::Frame;

/// Deterministic writes of every type, small and large, with TTLs.
fn deterministic() -> Vec<String> {
    let mut v: Vec<String> = [
        "SET s:plain hello",
        "SET s:int 12345",
        "RPUSH l:small a 1 -5 300 70000 abcdefghij 3.5",
        "HSET h:small f1 v1 f2 2 f3 -3",
        "SADD st:ints 1 5 -7 100000 3",
        "SADD st:words pear fig kiwi plum",
        "ZADD z:small 1 a 2.5 b -inf c inf d 1e20 e",
        "XADD x:plain 1-1 f v",
        "XADD x:plain 1-2 f w",
        "XDEL x:plain 1-2",
        "XADD x:groups 5-1 name alice",
        "XADD x:groups 5-2 name bob",
        "XADD x:groups 6-0 other field",
        "XGROUP CREATE x:groups g1 0",
        "XGROUP CREATE x:groups g2 $",
        "PFADD hll a b c d",
        "GEOADD geo 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "SETBIT bits 100 1",
        "LPUSH l:pop 1 2 3 4 5 6",
        "ZADD z:pop 1 a 2 b 3 c 4 d",
        "RPUSH l:src x y z",
        "DEL s:nothing",
        "APPEND s:plain !",
        "INCRBY s:int 10",
        "RENAME s:int s:renamed",
        "COPY h:small h:copy",
        "LREM l:small 1 a",
        "HDEL h:copy f1",
        "ZINCRBY z:small 5 a",
        "SMOVE st:words st:moved fig",
        "SET s:nxget old",
        "SET s:xxget old",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for i in 0..200 {
        v.push(format!("RPUSH l:big item{i}"));
        v.push(format!("HSET h:big field{i} value{i}"));
        v.push(format!("SADD st:table m{i}"));
        v.push(format!("ZADD z:big {} member{i}", i as f64 / 7.0));
    }
    v.push(format!("SET s:long {}", "y".repeat(5000)));
    v
}

/// Writes whose effect depends on when or how they ran (times, random picks, ids, blocking, groups),
/// sent to the writer alone: the loaded server must end as the writer did.
fn nondeterministic() -> Vec<String> {
    [
        "SET s:ex v EX 1000",
        "SET s:nxget new NX GET EX 100",
        "SET s:xxget new XX GET PX 5000000",
        "SET s:px v PX 2000000",
        "SETEX s:setex 3000 v",
        "PSETEX s:psetex 4000000 v",
        "EXPIRE l:small 5000",
        "PEXPIRE h:small 6000000",
        "EXPIREAT st:ints 4102444800",
        "GETEX s:plain EX 7000",
        "SET s:gone v",
        "EXPIRE s:gone -1",
        "SET s:persist v EX 100",
        "GETEX s:persist PERSIST",
        "INCRBYFLOAT s:float 1.1",
        "INCRBYFLOAT s:float 2.2e3",
        "HINCRBYFLOAT h:small f4 0.5",
        "SPOP st:table 7",
        "SPOP st:words",
        "XADD x:auto * field value",
        "XADD x:auto MAXLEN ~ 2 * field value2",
        "XADD x:trim 1-1 a 1",
        "XADD x:trim 1-2 a 2",
        "XADD x:trim 1-3 a 3",
        "XTRIM x:trim MAXLEN 1",
        "XREADGROUP GROUP g1 c1 COUNT 2 STREAMS x:groups >",
        "XREADGROUP GROUP g1 c2 COUNT 1 STREAMS x:groups >",
        "XCLAIM x:groups g1 c3 0 5-1",
        "XAUTOCLAIM x:groups g1 c4 0 0-0 COUNT 1",
        "XACK x:groups g1 5-2",
        "BLPOP l:pop 0",
        "BRPOP l:pop 0",
        "BLMOVE l:src l:dst LEFT RIGHT 0",
        "BRPOPLPUSH l:src l:dst 0",
        "BLMPOP 0 1 l:pop LEFT COUNT 2",
        "BZPOPMIN z:pop 0",
        "BZMPOP 0 1 z:pop MAX COUNT 2",
        "MULTI",
        "SET tx:a 1",
        "INCR tx:a",
        "SADD tx:set a b c",
        "SPOP tx:set",
        "EXEC",
        "EVAL \"redis.call('set', KEYS[1], 'from lua'); redis.call('incr', KEYS[2]); redis.call('expire', KEYS[1], 500); return 1\" 2 lua:a lua:b",
        "SORT l:big ALPHA LIMIT 0 10 STORE l:sorted",
        "SORT st:words BY nosort STORE l:nosort",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopless-aof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Sends each line to `r` alone and reads its reply.
fn send_all(r: &mut Raw, lines: &[String]) {
    for l in lines {
        let args = common::differ::split(l);
        let args: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let _ = r.cmd(&args).read();
    }
}

/// The writer (`d.redis`) against the loader (`d.ours`): the keyspace, each key's deadline to the
/// millisecond, and the stream groups' state (delivery times included: both come from the file).
fn compare_loaded(d: &mut Differ) {
    d.compare_keyspace();
    for k in keys(&mut d.redis) {
        d.run_args(&[b"PEXPIRETIME", &k], Order::Exact);
    }
    for cmd in [
        "XINFO GROUPS x:groups",
        "XPENDING x:groups g1 - + 10",
        "XINFO CONSUMERS x:groups g1",
        "XINFO STREAM x:auto",
        "FUNCTION LIST WITHCODE",
    ] {
        d.run_masked(cmd, mask_times);
    }
}

/// Writes the workload to `w`, with a rewrite in the middle (so the set is a base and an increment).
fn workload(w: &mut Raw) {
    send_all(w, &deterministic());
    let lib = "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)";
    w.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()]).read();
    assert_eq!(
        w.cmd(&[b"BGREWRITEAOF"]).read(),
        common::simple("Background append only file rewriting started")
    );
    wait_rewrite(w);
    send_all(w, &nondeterministic());
}

fn wait_rewrite(w: &mut Raw) {
    let start = std::time::Instant::now();
    loop {
        let Frame::Bulk(info) = w.cmd(&[b"INFO", b"persistence"]).read() else {
            panic!("INFO");
        };
        if String::from_utf8_lossy(&info).contains("aof_rewrite_in_progress:0") {
            return;
        }
        assert!(start.elapsed().as_secs() < 60, "the rewrite did not end");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn hopless_s_set_loads_in_redis_and_passes_redis_check_aof() {
    let dir = temp_dir("ours");
    let Some(mut d) = Differ::start_with(&["--save", ""], |o| {
        o.snapshot.dir = dir.clone();
        o.aof.enabled = true;
    }) else {
        return;
    };
    workload(&mut d.ours);
    check_in_redis(d, &dir);
}

/// `redis-check-aof` accepts the set hopless (`d.ours`) wrote in `dir`, and a Redis that loads it
/// matches hopless key by key (the writer stands for `redis`, that Redis for `ours`).
fn check_in_redis(mut d: Differ, dir: &Path) {
    if common::require_tool("redis-check-aof") {
        let out = Command::new("redis-check-aof")
            .arg(dir.join("appendonlydir/appendonly.aof.manifest"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("All AOF files and manifest are valid"),
            "redis-check-aof refused hopless's set:\n{text}"
        );
    }
    let d_str = dir.to_str().unwrap().to_string();
    let (guard, raddr) = start_redis_with(&["--save", "", "--appendonly", "yes", "--dir", &d_str]).unwrap();
    d.redis = std::mem::replace(&mut d.ours, Raw::connect(raddr));
    compare_loaded(&mut d);
    d.assert_none();
    drop(guard);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn redis_s_set_loads_in_hopless() {
    let dir = temp_dir("redis");
    let d_str = dir.to_str().unwrap().to_string();
    let Some(mut d) = Differ::start_with(&["--save", "", "--appendonly", "yes", "--dir", &d_str], |_| {})
    else {
        return;
    };
    workload(&mut d.redis);
    // Against a Redis that loads the same set (a copy of it): what Redis's own file carries is what a
    // load can find (its records of XREADGROUP leave a group's entries-read out, for one).
    let copy = temp_dir("redis-copy");
    copy_dir(&dir.join("appendonlydir"), &copy.join("appendonlydir"));
    let copy_str = copy.to_str().unwrap().to_string();
    let (guard, raddr) =
        start_redis_with(&["--save", "", "--appendonly", "yes", "--dir", &copy_str]).unwrap();
    d.redis = Raw::connect(raddr);
    let loaded = loading(&dir, |_| {}).expect("hopless loads Redis's set");
    d.ours = Raw::connect(loaded.addr());
    compare_loaded(&mut d);
    drop(guard);
    let _ = std::fs::remove_dir_all(&copy);
    // And it goes on appending to Redis's set: a write, a restart, the write is there.
    d.ours.cmd(&[b"SET", b"after", b"load"]).read();
    drop(loaded);
    let again = loading(&dir, |_| {}).expect("hopless loads the set it appended to");
    let mut c = Raw::connect(again.addr());
    assert_eq!(c.cmd(&[b"GET", b"after"]).read(), common::bulk("load"));
    d.assert_none();
    drop(again);
    let _ = std::fs::remove_dir_all(&dir);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// hopless started on `dir` with the log on (and `f`'s changes).
fn loading(
    dir: &Path,
    f: impl FnOnce(&mut hopless_server::ServeOptions),
) -> std::io::Result<hopless_server::Server> {
    let mut o = common::options();
    o.snapshot.dir = dir.to_path_buf();
    o.aof.enabled = true;
    f(&mut o);
    hopless_server::Server::start(o)
}

/// A set of `n` SETs written by hopless (a base and one increment): the increment's path.
fn written_set(dir: &Path, n: usize) -> PathBuf {
    let s = loading(dir, |_| {}).unwrap();
    let mut c = Raw::connect(s.addr());
    for i in 0..n {
        c.cmd(&[b"SET", format!("k{i}").as_bytes(), b"value"]).read();
    }
    c.cmd(&[b"MULTI"]).read();
    c.cmd(&[b"SET", b"tx1", b"a"]).read();
    c.cmd(&[b"SET", b"tx2", b"b"]).read();
    c.cmd(&[b"EXEC"]).read();
    drop(s);
    dir.join("appendonlydir/appendonly.aof.1.incr.aof")
}

fn dbsize(s: &hopless_server::Server) -> Frame {
    Raw::connect(s.addr()).cmd(&[b"DBSIZE"]).read()
}

#[test]
fn a_cut_tail_is_dropped_or_refused_as_configured() {
    let dir = temp_dir("cut");
    let incr = written_set(&dir, 50);
    let good = std::fs::read(&incr).unwrap();
    // Cut inside the last command (the EXEC): the transaction goes with it.
    let cut = good[..good.len() - 5].to_vec();
    std::fs::write(&incr, &cut).unwrap();
    let refused = loading(&dir, |o| o.aof.load_truncated = false);
    assert!(refused.is_err(), "aof-load-truncated no loaded a cut file");
    assert_eq!(std::fs::read(&incr).unwrap(), cut, "a refused file was changed");
    let s = loading(&dir, |_| {}).expect("aof-load-truncated yes loads the cut file");
    assert_eq!(
        dbsize(&s),
        Frame::Integer(50),
        "the cut transaction was applied in part"
    );
    drop(s);
    let now = std::fs::read(&incr).unwrap();
    let multi = b"*1\r\n$5\r\nMULTI\r\n";
    let at = good.windows(multi.len()).rposition(|w| w == multi).unwrap();
    assert_eq!(
        now,
        good[..at].to_vec(),
        "the file is not cut back to before the MULTI"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_sets_are_refused_and_left_alone() {
    let dir = temp_dir("damaged");
    let incr = written_set(&dir, 20);
    let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
    let good = std::fs::read(&incr).unwrap();
    let good_manifest = std::fs::read(&manifest).unwrap();
    let mid = good.len() / 2;
    let cases: Vec<(&str, PathBuf, Vec<u8>)> = vec![
        (
            "garbage in the middle",
            incr.clone(),
            [&good[..mid], b"GARBAGE\r\n", &good[mid..]].concat(),
        ),
        (
            "an unknown command",
            incr.clone(),
            [&good[..], b"*1\r\n$7\r\nNOSUCH!\r\n"].concat(),
        ),
        (
            "a manifest without its line end",
            manifest.clone(),
            good_manifest[..good_manifest.len() - 1].to_vec(),
        ),
        (
            "a manifest of two bases",
            manifest.clone(),
            [&good_manifest[..], b"file x seq 9 type b\n"].concat(),
        ),
        (
            "a manifest naming a missing base",
            manifest.clone(),
            b"file nosuch.rdb seq 1 type b\n".to_vec(),
        ),
    ];
    for (what, path, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        assert!(loading(&dir, |_| {}).is_err(), "{what}: loaded");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{what}: the file was changed"
        );
        std::fs::write(&incr, &good).unwrap();
        std::fs::write(&manifest, &good_manifest).unwrap();
    }
    let s = loading(&dir, |_| {}).expect("the repaired set loads");
    assert_eq!(dbsize(&s), Frame::Integer(22));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// CONFIG SET appendonly yes writes a base of what is there and records from then on; no stops it;
/// a restart with the log on finds everything.
#[test]
fn the_log_turns_on_and_off_at_run_time() {
    let dir = temp_dir("toggle");
    let s = common::start_with(|o| o.snapshot.dir = dir.clone());
    let mut c = Raw::connect(s.addr());
    c.cmd(&[b"SET", b"before", b"1"]).read();
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"yes"]).read(),
        common::simple("OK")
    );
    c.cmd(&[b"SET", b"during", b"2"]).read();
    wait_rewrite(&mut c);
    c.cmd(&[b"SET", b"after", b"3"]).read();
    assert_eq!(
        c.cmd(&[b"CONFIG", b"GET", b"appendonly"]).read(),
        Frame::Array(vec![common::bulk("appendonly"), common::bulk("yes")])
    );
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"appendonly", b"no"]).read(),
        common::simple("OK")
    );
    c.cmd(&[b"SET", b"off", b"4"]).read();
    drop(s);
    let back = loading(&dir, |_| {}).unwrap();
    let mut c = Raw::connect(back.addr());
    for k in ["before", "during", "after"] {
        assert_eq!(c.cmd(&[b"EXISTS", k.as_bytes()]).read(), Frame::Integer(1), "{k}");
    }
    assert_eq!(c.cmd(&[b"EXISTS", b"off"]).read(), Frame::Integer(0));
    drop(back);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `aof-use-rdb-preamble no`: the rewrite's base is commands (a RESTORE a key, FUNCTION LOAD), which
/// redis-check-aof accepts and Redis loads with every key and deadline.
#[test]
fn a_base_of_commands_loads_in_redis() {
    let dir = temp_dir("commands");
    let Some(mut d) = Differ::start_with(&["--save", ""], |o| {
        o.snapshot.dir = dir.clone();
        o.aof.enabled = true;
        o.aof.rdb_preamble = false;
    }) else {
        return;
    };
    workload(&mut d.ours);
    assert_eq!(
        d.ours.cmd(&[b"BGREWRITEAOF"]).read(),
        common::simple("Background append only file rewriting started")
    );
    wait_rewrite(&mut d.ours);
    let manifest = std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    assert!(manifest.contains(".base.aof seq"), "{manifest}");
    check_in_redis(d, &dir);
}

/// A set of increments alone (its manifest names no base) loads, and gets no base made over them at
/// start: the next load would apply them twice.
#[test]
fn a_set_without_a_base_keeps_its_increments_alone() {
    let dir = temp_dir("nobase");
    let s = loading(&dir, |_| {}).unwrap();
    let mut c = Raw::connect(s.addr());
    for _ in 0..5 {
        c.cmd(&[b"INCR", b"counter"]).read();
    }
    drop(s);
    let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let incrs: String = text
        .lines()
        .filter(|l| l.ends_with("type i"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&manifest, &incrs).unwrap();
    for round in 0..2 {
        let s = loading(&dir, |_| {}).unwrap();
        let got = Raw::connect(s.addr()).cmd(&[b"GET", b"counter"]).read();
        assert_eq!(got, common::bulk("5"), "start {round}");
        drop(s);
    }
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), incrs);
    let _ = std::fs::remove_dir_all(&dir);
}
