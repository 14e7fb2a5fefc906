//! The servers under test, each a child process on a free loopback port: `hopless serve` (this same
//! executable) and, when installed, `redis-server` with persistence off. Readiness, stop, and the child's
//! RSS from `/proc/<pid>/status`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::pin;

/// A server under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Hopless,
    Redis,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hopless => "hopless",
            Kind::Redis => "redis",
        }
    }
}

/// `redis-server --version`'s first line, if `redis-server` runs.
pub fn redis_version() -> Option<String> {
    let out = Command::new("redis-server").arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .trim()
            .to_string(),
    )
}

/// A server child process, stopped (SHUTDOWN NOSAVE, then kill) on drop.
pub struct Running {
    pub kind: Kind,
    pub addr: SocketAddr,
    child: Child,
}

/// A port nothing listens on now (the OS's pick; another process could take it before the server does).
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("finding a free port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

impl Running {
    /// Starts `kind` on a free loopback port and waits until it answers PING. hopless gets `threads`
    /// workers; Redis its defaults (no io-threads); both `--save ""` (Redis `--appendonly no` too). Pinned, the server
    /// runs on cores 0..threads-1, and Redis with `--io-threads threads` when that is more than one.
    pub fn start(kind: Kind, threads: usize, pinned: bool) -> Result<Running, String> {
        let port = free_port()?;
        let mut cmd = match kind {
            Kind::Hopless => {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let mut c = Command::new(exe);
                c.args([
                    "serve",
                    "--port",
                    &port.to_string(),
                    "--threads",
                    &threads.to_string(),
                    "--save",
                    "",
                ]);
                c
            }
            Kind::Redis => {
                let mut c = Command::new("redis-server");
                c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no"]);
                if pinned && threads > 1 {
                    c.args([
                        "--io-threads",
                        &threads.to_string(),
                        "--io-threads-do-reads",
                        "yes",
                    ]);
                }
                c
            }
        };
        if pinned {
            pin::pin_command(&mut cmd, &pin::server_cores(threads));
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", kind.name()))?;
        let mut r = Running {
            kind,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            child,
        };
        r.wait_ready()?;
        Ok(r)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{} exited at start: {status}", self.kind.name()));
            }
            if ping(self.addr) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} did not answer PING on {}",
                    self.kind.name(),
                    self.addr
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The child's resident and peak-resident bytes (VmRSS, VmHWM).
    pub fn rss(&self) -> (u64, u64) {
        proc_rss(self.pid())
    }

    /// SHUTDOWN NOSAVE; kill if it has not exited within 5 s.
    pub fn stop(mut self) -> Result<(), String> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<(), String> {
        if let Ok(Some(_)) = self.child.try_wait() {
            return Ok(());
        }
        if let Ok(mut s) = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)) {
            let _ = s.write_all(b"SHUTDOWN NOSAVE\r\n");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// Whether a server on `addr` answers PING with +PONG.
fn ping(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// VmRSS and VmHWM of process `pid`, bytes (0 if unreadable).
pub fn proc_rss(pid: u32) -> (u64, u64) {
    crate::rss::rss_of(Some(pid))
}
