//! The servers under test, each a child process on a free loopback port: `hopless serve` (this same
//! executable) and, when installed, `redis-server`, with persistence off or, for the persistence
//! workload, in a fresh directory of their own ([`Files`], [`DataDir`]). Readiness, stop, and the
//! child's RSS from `/proc/<pid>/status`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Where a server keeps its files and whether it logs every write: the default (no directory, no
/// append-only file) is every mix's server, snapshots off in the current directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct Files<'a> {
    /// `--dir`: the snapshot and the append-only file go here, and the server's stderr to
    /// [`STDERR_LOG`] beside them. The wait for PING then allows 10 minutes: a file may be loading.
    pub dir: Option<&'a Path>,
    /// `--appendonly yes --appendfsync POLICY`; without it Redis gets `--appendonly no` and hopless no
    /// such flag.
    pub appendfsync: Option<&'a str>,
}

/// The file in [`Files::dir`] that takes the server's stderr.
pub const STDERR_LOG: &str = "server.stderr";

/// A fresh, empty directory under the system's temporary one, removed with everything in it on drop.
pub struct DataDir(PathBuf);

impl DataDir {
    /// A new directory named after `what`, this process and a count.
    pub fn new(what: &str) -> Result<DataDir, String> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("hopless-bench-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Ok(DataDir(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Bytes of every file in it and in its subdirectories, the server's stderr log left out.
    pub fn data_bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    Ok(_) if e.file_name() == STDERR_LOG => 0,
                    Ok(_) => e.metadata().map_or(0, |m| m.len()),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.0)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server child process, stopped (SHUTDOWN NOSAVE, then kill) on drop.
pub struct Running {
    pub kind: Kind,
    pub addr: SocketAddr,
    /// From the spawn to the first PONG: with a file in [`Files::dir`], the load at start.
    pub ready_in: Duration,
    child: Child,
    /// Where its stderr goes, when it has a directory.
    log: Option<PathBuf>,
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
        Running::start_with(kind, threads, pinned, Files::default())
    }

    /// [`Running::start`] with `files`' directory and append-only file: the same flags for both
    /// servers (`--dir D`, `--appendonly yes --appendfsync P`).
    pub fn start_with(kind: Kind, threads: usize, pinned: bool, files: Files) -> Result<Running, String> {
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
                if let Some(policy) = files.appendfsync {
                    c.args(["--appendonly", "yes", "--appendfsync", policy]);
                }
                c
            }
            Kind::Redis => {
                let mut c = Command::new("redis-server");
                c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--save", ""]);
                match files.appendfsync {
                    Some(policy) => c.args(["--appendonly", "yes", "--appendfsync", policy]),
                    None => c.args(["--appendonly", "no"]),
                };
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
        if let Some(dir) = files.dir {
            cmd.arg("--dir").arg(dir);
        }
        if pinned {
            pin::pin_command(&mut cmd, &pin::server_cores(threads));
        }
        let log = files.dir.map(|d| d.join(STDERR_LOG));
        let stderr = match &log {
            Some(path) => std::fs::File::create(path)
                .map_err(|e| format!("creating {}: {e}", path.display()))?
                .into(),
            None => Stdio::null(),
        };
        let t0 = Instant::now();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", kind.name()))?;
        let mut r = Running {
            kind,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            ready_in: Duration::ZERO,
            child,
            log,
        };
        let patience = if files.dir.is_some() { 600 } else { 15 };
        r.wait_ready(Duration::from_secs(patience))?;
        r.ready_in = t0.elapsed();
        Ok(r)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn wait_ready(&mut self, patience: Duration) -> Result<(), String> {
        let deadline = Instant::now() + patience;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited at start ({status}){}",
                    self.kind.name(),
                    self.said()
                ));
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

    /// What the server wrote to its stderr log about an error, as `: LINE | LINE...`, or nothing.
    fn said(&self) -> String {
        let text = self
            .log
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        let said = error_lines(&text);
        if said.is_empty() {
            said
        } else {
            format!(": {said}")
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

/// From the first line of `log` that names an error, up to four non-empty lines joined by ` | `,
/// before any usage text (clap's refusal, Redis's fatal config error); else its last non-empty line.
fn error_lines(log: &str) -> String {
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines
        .iter()
        .position(|l| l.to_ascii_lowercase().contains("error"))
    {
        Some(i) => lines[i..]
            .iter()
            .take_while(|l| !l.starts_with("Usage:"))
            .take(4)
            .copied()
            .collect::<Vec<_>>()
            .join(" | "),
        None => lines.last().map_or(String::new(), |l| l.to_string()),
    }
}

/// VmRSS and VmHWM of process `pid`, bytes (0 if unreadable).
pub fn proc_rss(pid: u32) -> (u64, u64) {
    crate::rss::rss_of(Some(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_by_its_error_lines() {
        let clap = "error: unexpected argument '--appendonly' found\n\n  tip: to pass it as a value, use \
                    '-- --appendonly'\n\nUsage: hopless serve [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            error_lines(clap),
            "error: unexpected argument '--appendonly' found | tip: to pass it as a value, use '-- --appendonly'"
        );
        assert_eq!(error_lines("starting\nbye\n\n"), "bye");
        assert_eq!(error_lines(""), "");
    }

    #[test]
    fn a_data_dir_counts_its_files_but_the_log_and_goes_on_drop() {
        let d = DataDir::new("test").unwrap();
        let path = d.path().to_path_buf();
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub").join("f"), [0u8; 10]).unwrap();
        std::fs::write(path.join(STDERR_LOG), [0u8; 5]).unwrap();
        assert_eq!(d.data_bytes(), 10);
        drop(d);
        assert!(!path.exists());
    }
}
