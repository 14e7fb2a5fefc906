//! Scale-out with existing tools: three servers behind twemproxy (Debian's `nutcracker`, ketama hashing)
//! serve a client library and redis-benchmark through the proxy. Skipped when `nutcracker` is missing
//! (failed under `CI=true`).

mod common;

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use redis::Commands;

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The proxy's configuration, as the README shows it.
fn config(listen: u16, servers: &[SocketAddr]) -> String {
    let mut c = format!(
        "hopless:\n  listen: 127.0.0.1:{listen}\n  hash: murmur\n  distribution: ketama\n  redis: true\n  \
         auto_eject_hosts: false\n  timeout: 2000\n  servers:\n"
    );
    for (i, s) in servers.iter().enumerate() {
        c.push_str(&format!("   - {s}:1 hopless{i}\n"));
    }
    c
}

#[test]
fn three_servers_behind_twemproxy() {
    if !common::require_tool("nutcracker") {
        return;
    }
    let servers: Vec<_> = (0..3).map(|_| common::start()).collect();
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr()).collect();
    let dir = std::env::temp_dir().join(format!("hopless-twemproxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (port, stats) = (common::free_port(), common::free_port());
    let conf = dir.join("nutcracker.yml");
    std::fs::write(&conf, config(port, &addrs)).unwrap();
    let child = Command::new("nutcracker")
        .arg("-c")
        .arg(&conf)
        .args(["-s", &stats.to_string(), "-o"])
        .arg(dir.join("nutcracker.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nutcracker starts");
    let _proxy = Proxy(child);
    let proxy: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut up = false;
    for _ in 0..400 {
        if TcpStream::connect(proxy).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(up, "nutcracker listens");

    // A client library through the proxy.
    let mut c = common::client(proxy);
    for i in 0..300 {
        let _: () = c.set(format!("key:{i}"), i).unwrap();
    }
    for i in 0..300 {
        assert_eq!(c.get::<_, i64>(format!("key:{i}")).unwrap(), i);
    }
    let _: () = c.mset(&[("m1", "a"), ("m2", "b"), ("m3", "c")]).unwrap();
    assert_eq!(
        c.mget::<_, Vec<String>>(&["m1", "m2", "m3"]).unwrap(),
        vec!["a", "b", "c"]
    );
    assert_eq!(c.incr::<_, _, i64>("counter", 3).unwrap(), 3);
    // Every server holds a share of the keys; together, all of them.
    let counts: Vec<usize> = servers.iter().map(|s| s.store().dbsize()).collect();
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    assert_eq!(counts.iter().sum::<usize>(), 304);

    // redis-benchmark through the proxy.
    if common::require_tool("redis-benchmark") {
        let out = Command::new("redis-benchmark")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-t",
                "set,get,incr,mset",
                "-P",
                "16",
                "-q",
                "-n",
                "10000",
            ])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        for t in ["SET", "GET", "INCR", "MSET"] {
            let done = text
                .split(['\r', '\n'])
                .any(|l| l.trim().starts_with(t) && l.contains("requests per second"));
            assert!(done, "{t}: {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
