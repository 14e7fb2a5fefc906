//! Persistence under crashes, with the `hopless-server` binary in a process group of its own: SIGKILL
//! to the server and its saving child together, in the middle of a background save, leaves the previous
//! snapshot whole (or the new one whole, if the child got to its rename), and the server starts on it;
//! under `appendfsync always`, SIGKILL during a write load (and during a rewrite of the append-only
//! file) loses no write that was acknowledged; `redis-cli --rdb` takes a backup through SYNC that
//! redis-server loads.

mod common;

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::differ::start_redis_with;
use common::{require_tool, Raw};
use hopless_server::codec::Frame;

struct Serving {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Serving {
    fn drop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.wait();
    }
}

/// SIGKILL to the server's whole process group (the server and any child saving for it).
fn kill_group(child: &Child) {
    // SAFETY: signals a process group this test made; no memory is involved.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
}

fn serve(dir: &Path) -> Serving {
    serve_with(dir, &[])
}

fn serve_with(dir: &Path, extra: &[&str]) -> Serving {
    // A free port may be taken by another test's server before ours binds it: ours then exits, and
    // the port answers for the other one. Such a start is retried on another port.
    loop {
        let port = common::free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_hopless-server"))
            .args(["--port", &port.to_string(), "--threads", "2", "--save", ""])
            .arg("--dir")
            .arg(dir)
            .args(extra)
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("hopless-server starts");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let start = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() && child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the server did not come up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        if child.try_wait().unwrap().is_none() {
            return Serving { child, addr };
        }
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopless-crash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `n` keys `k<i>` of 100 bytes each, from `from` on, pipelined.
fn fill(addr: SocketAddr, from: usize, n: usize) {
    let mut c = Raw::connect(addr);
    let value = vec![b'v'; 100];
    for chunk in (from..from + n).collect::<Vec<_>>().chunks(1000) {
        for i in chunk {
            c.send(&encode(&[b"SET", format!("k{i}").as_bytes(), &value]));
        }
        for _ in chunk {
            assert_eq!(c.read(), common::simple("OK"));
        }
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn dbsize(addr: SocketAddr) -> i64 {
    match Raw::connect(addr).cmd(&[b"DBSIZE"]).read() {
        Frame::Integer(n) => n,
        other => panic!("DBSIZE gave {other:?}"),
    }
}

#[test]
fn a_kill_during_bgsave_leaves_a_whole_snapshot() {
    let dir = temp_dir("bgsave");
    let first = 100_000;
    let more = 200_000;
    {
        let s = serve(&dir);
        fill(s.addr, 0, first);
        assert_eq!(Raw::connect(s.addr).cmd(&[b"SAVE"]).read(), common::simple("OK"));
        fill(s.addr, first, more);
        let mut c = Raw::connect(s.addr);
        assert_eq!(
            c.cmd(&[b"BGSAVE"]).read(),
            common::simple("Background saving started")
        );
        // The child is writing 30 MB: kill it and the server together well before it is done.
        std::thread::sleep(Duration::from_millis(5));
        kill_group(&s.child);
    }
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let s = serve(&dir);
    let n = dbsize(s.addr);
    eprintln!("after the kill: {left:?}, {n} keys loaded");
    assert!(
        n == first as i64 || n == (first + more) as i64,
        "the snapshot after the kill holds {n} keys: neither the old one nor the new one"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_cli_rdb_takes_a_backup_redis_loads() {
    if !require_tool("redis-cli") {
        return;
    }
    let dir = temp_dir("sync");
    let s = serve(&dir);
    fill(s.addr, 0, 5000);
    let mut c = Raw::connect(s.addr);
    c.cmd(&[b"RPUSH", b"list", b"a", b"b", b"c"]).read();
    c.cmd(&[b"XADD", b"stream", b"1-1", b"f", b"v"]).read();
    let backup = dir.join("backup.rdb");
    let out = Command::new("redis-cli")
        .args(["-p", &s.addr.port().to_string(), "--rdb"])
        .arg(&backup)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "redis-cli --rdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let backup_dir = dir.to_str().unwrap().to_string();
    let Some((_redis, raddr)) =
        start_redis_with(&["--save", "", "--dir", &backup_dir, "--dbfilename", "backup.rdb"])
    else {
        return;
    };
    assert_eq!(dbsize(raddr), 5002);
    let mut r = Raw::connect(raddr);
    assert_eq!(
        r.cmd(&[b"LRANGE", b"list", b"0", b"-1"]).read(),
        c.cmd(&[b"LRANGE", b"list", b"0", b"-1"]).read()
    );
    assert_eq!(r.cmd(&[b"XLEN", b"stream"]).read(), Frame::Integer(1));
    // The server goes on serving other clients after the transfer.
    assert_eq!(
        Raw::connect(s.addr).cmd(&[b"DBSIZE"]).read(),
        Frame::Integer(5002)
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

const ALWAYS: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

/// Writers that each SET their own keys one at a time, and INCR a shared counter, until `stop`;
/// what each had acknowledged: (its last key's number + 1, its INCRs).
fn write_until(addr: SocketAddr, writers: usize, stop: &std::sync::atomic::AtomicBool) -> Vec<(usize, i64)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                s.spawn(move || {
                    let mut c = Raw::connect(addr);
                    let (mut acked, mut incrs) = (0, 0);
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        c.send(&encode(&[
                            b"SET",
                            format!("w{w}:{acked}").as_bytes(),
                            acked.to_string().as_bytes(),
                        ]));
                        match c.try_read() {
                            Some(f) if f == common::simple("OK") => acked += 1,
                            _ => break,
                        }
                        c.send(&encode(&[b"INCR", b"counter"]));
                        match c.try_read() {
                            Some(Frame::Integer(_)) => incrs += 1,
                            _ => break,
                        }
                    }
                    (acked, incrs)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Every acknowledged write of `acked` is in the server at `addr`.
fn check_acknowledged(addr: SocketAddr, acked: &[(usize, i64)]) {
    let mut c = Raw::connect(addr);
    for (w, &(n, _)) in acked.iter().enumerate() {
        for i in 0..n {
            let got = c.cmd(&[b"GET", format!("w{w}:{i}").as_bytes()]).read();
            assert_eq!(
                got,
                common::bulk(&i.to_string()),
                "writer {w}'s acknowledged key {i} is lost"
            );
        }
    }
    let incrs: i64 = acked.iter().map(|a| a.1).sum();
    match c.cmd(&[b"GET", b"counter"]).read() {
        Frame::Bulk(b) => {
            let n: i64 = String::from_utf8_lossy(&b).parse().unwrap();
            // Each writer may have had one INCR applied whose reply it never read.
            assert!(
                n >= incrs && n <= incrs + acked.len() as i64,
                "counter {n} after {incrs} acknowledged INCRs"
            );
        }
        other if incrs == 0 => assert!(matches!(other, Frame::Null), "{other:?}"),
        other => panic!("the counter is gone after {incrs} INCRs: {other:?}"),
    }
}

#[test]
fn a_kill_under_appendfsync_always_loses_nothing_acknowledged() {
    let dir = temp_dir("always");
    let acked = {
        let s = serve_with(&dir, ALWAYS);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let addr = s.addr;
        std::thread::scope(|sc| {
            let load = sc.spawn(|| write_until(addr, 3, &stop));
            std::thread::sleep(Duration::from_millis(300));
            let _ = Raw::connect(addr).cmd(&[b"BGREWRITEAOF"]).read();
            std::thread::sleep(Duration::from_millis(400));
            kill_group(&s.child);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            load.join().unwrap()
        })
    };
    assert!(
        acked.iter().all(|a| a.0 > 0),
        "no write was acknowledged: {acked:?}"
    );
    let s = serve_with(&dir, ALWAYS);
    check_acknowledged(s.addr, &acked);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kill_during_an_aof_rewrite_loses_nothing_acknowledged() {
    let dir = temp_dir("rewrite");
    let acked = {
        let s = serve_with(&dir, ALWAYS);
        fill(s.addr, 0, 150_000);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let addr = s.addr;
        std::thread::scope(|sc| {
            let load = sc.spawn(|| write_until(addr, 2, &stop));
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(
                Raw::connect(addr).cmd(&[b"BGREWRITEAOF"]).read(),
                common::simple("Background append only file rewriting started")
            );
            // The child is writing 20 MB: kill it and the server together before it is done.
            std::thread::sleep(Duration::from_millis(10));
            kill_group(&s.child);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            load.join().unwrap()
        })
    };
    let s = serve_with(&dir, ALWAYS);
    assert!(dbsize(s.addr) >= 150_000);
    check_acknowledged(s.addr, &acked);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
