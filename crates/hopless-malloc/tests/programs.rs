//! Real programs under `LD_PRELOAD=libhopless.so` produce the same output as without it: Python (an
//! allocation-heavy script and stdlib unit tests), git, sort of 100 MB, and redis-server answering
//! redis-benchmark (on 127.0.0.1 only, stopped at the end).

mod common;

#[global_allocator]
static GLOBAL: hl::Hopless = hl::Hopless;

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

/// Runs the same command without and with the preload; both must succeed with identical stdout.
fn same_output(name: &str, make: impl Fn() -> Command) -> Output {
    let plain = run(&mut make());
    common::assert_ok(&plain, &format!("{name} (glibc)"));
    let so = common::libhopless();
    let pre = run(make().env("LD_PRELOAD", &so));
    common::assert_ok(&pre, &format!("{name} (hopless)"));
    assert!(plain.stdout == pre.stdout, "{name}: output differs under hopless");
    pre
}

#[test]
fn python_allocation_heavy_script() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/alloc_heavy.py");
    let out = same_output("python script", || {
        let mut c = Command::new("python3");
        c.arg(script);
        c
    });
    assert!(!out.stdout.is_empty());
}

#[test]
fn python_stdlib_unit_tests() {
    let so = common::libhopless();
    let out = run(Command::new("python3")
        .args([
            "-m",
            "unittest",
            "-q",
            "test.test_json",
            "test.test_collections",
            "test.test_heapq",
            "test.test_bisect",
        ])
        .env("LD_PRELOAD", &so));
    common::assert_ok(&out, "python -m unittest under hopless");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("OK"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "hopless")
        .env("GIT_AUTHOR_EMAIL", "hopless@example.invalid")
        .env("GIT_COMMITTER_NAME", "hopless")
        .env("GIT_COMMITTER_EMAIL", "hopless@example.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    c
}

#[test]
fn git_init_add_commit_log_of_a_generated_repo() {
    let base = common::scratch("git");
    for (k, dir) in ["plain", "hopless"].iter().enumerate() {
        let d = base.join(dir);
        std::fs::create_dir_all(d.join("src")).unwrap();
        for i in 0..300 {
            let body: String = (0..i % 50).map(|j| format!("line {i} {j}\n")).collect();
            std::fs::write(d.join("src").join(format!("f{i}.txt")), body).unwrap();
        }
        let pre = |mut c: Command| {
            if k == 1 {
                c.env("LD_PRELOAD", common::libhopless());
            }
            c
        };
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "."],
            &["commit", "-q", "-m", "generated"],
        ] {
            common::assert_ok(&run(&mut pre(git(&d, args))), &format!("git {args:?} ({dir})"));
        }
        std::fs::write(d.join("src/f1.txt"), "changed\n").unwrap();
        common::assert_ok(
            &run(&mut pre(git(&d, &["commit", "-qam", "second"]))),
            "git commit -a",
        );
    }
    let log = |dir: &str, preload: bool| {
        let mut c = git(&base.join(dir), &["log", "--stat", "--format=%H %s"]);
        if preload {
            c.env("LD_PRELOAD", common::libhopless());
        }
        let out = run(&mut c);
        common::assert_ok(&out, "git log");
        out.stdout
    };
    let plain = log("plain", false);
    assert_eq!(plain, log("hopless", true), "same commits, same hashes, same log");
    assert_eq!(plain, log("plain", true));
    std::fs::remove_dir_all(base).unwrap();
}

#[test]
fn sort_of_a_100_mb_file() {
    let dir = common::scratch("sort");
    let input = dir.join("input.txt");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut written = 0usize;
        while written < 100 << 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = format!("{:016x} {}\n", x, "abcdefghij".repeat((x % 7) as usize));
            written += line.len();
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let out = same_output("sort", || {
        let mut c = Command::new("sort");
        c.arg(&input).env("LC_ALL", "C");
        c
    });
    assert!(out.stdout.len() >= 100 << 20);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Kills the server if the test fails half way.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn redis_server_answers_redis_benchmark() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let dir = common::scratch("redis");
    let server = Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .env("LD_PRELOAD", common::libhopless())
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (Debian package redis-server) is needed for this test");
    let mut server = Server(server);
    let mut up = false;
    for _ in 0..100 {
        if run(Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port, "ping"])).stdout == b"PONG\n" {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(up, "redis-server under hopless answers PING");
    let out = run(Command::new("redis-benchmark").args([
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-n",
        "20000",
        "-c",
        "20",
        "-q",
        "-t",
        "set,get,lpush,lpop,incr,mset",
        "-d",
        "200",
    ]));
    common::assert_ok(&out, "redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.matches("requests per second").count() >= 6, "{text}");
    let set = run(Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port, "set", "k", "v"]));
    assert_eq!(set.stdout, b"OK\n");
    let get = run(Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port, "get", "k"]));
    assert_eq!(get.stdout, b"v\n");
    let _ = run(Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port, "shutdown", "nosave"]));
    let status = server.0.wait().unwrap();
    assert!(
        status.success() || status.code().is_none(),
        "redis-server exited: {status:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
