//! What the integration tests share: a server started in-process on a free port, clients for it, and a
//! raw socket for bytes no client library would send.
#![allow(dead_code)]

pub mod differ;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use hopless_server::codec::{Frame, FrameError};
use hopless_server::{ServeOptions, Server};

pub fn options() -> ServeOptions {
    let mut o = ServeOptions {
        port: 0,
        threads: 2,
        ..ServeOptions::default()
    };
    o.store.shards = 16;
    o
}

pub fn start() -> Server {
    Server::start(options()).expect("server starts")
}

pub fn start_with(f: impl FnOnce(&mut ServeOptions)) -> Server {
    let mut o = options();
    f(&mut o);
    Server::start(o).expect("server starts")
}

pub fn client(addr: SocketAddr) -> redis::Connection {
    let c = redis::Client::open(format!("redis://{addr}/")).expect("client");
    c.get_connection().expect("connection")
}

/// A raw connection: write bytes, read replies as frames.
pub struct Raw {
    pub sock: TcpStream,
    buf: Vec<u8>,
    /// How the last read that gave no reply ended (for the failure message).
    ended: Option<String>,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let sock = TcpStream::connect(addr).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Raw {
            sock,
            buf: Vec::new(),
            ended: None,
        }
    }

    pub fn send(&mut self, b: &[u8]) -> &mut Self {
        self.sock.write_all(b).expect("write");
        self
    }

    /// Sends a command as a multibulk request.
    pub fn cmd(&mut self, args: &[&[u8]]) -> &mut Self {
        let mut b = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            b.extend_from_slice(a);
            b.extend_from_slice(b"\r\n");
        }
        self.send(&b)
    }

    /// The next reply; None when the server closed the connection first (or the read timed out).
    ///
    /// Past 1 MiB, a reply is parsed again only once the buffer has doubled since the last incomplete
    /// parse, or when the socket has been quiet for 50 ms: re-parsing a 100 MB reply at every read was
    /// quadratic, and took longer than the read timeout on a loaded machine.
    pub fn try_read(&mut self) -> Option<Frame> {
        let n = self.fill_frame()?;
        let (f, m) = Frame::parse(&self.buf).expect("parse after check");
        assert_eq!(n, m);
        self.buf.drain(..n);
        Some(f)
    }

    /// The next reply's bytes, exactly as the server sent them.
    pub fn read_bytes(&mut self) -> Vec<u8> {
        match self.fill_frame() {
            Some(n) => self.buf.drain(..n).collect(),
            None => panic!(
                "no reply from {:?}: {}",
                self.sock.peer_addr(),
                self.ended.as_deref().unwrap_or("?")
            ),
        }
    }

    /// Reads until the buffer starts with a whole reply; its length, None as [`Raw::try_read`] says.
    fn fill_frame(&mut self) -> Option<usize> {
        let normal = self.sock.read_timeout().ok().flatten();
        let mut checked_at = 0;
        let mut tmp = [0u8; 65536];
        loop {
            let small = self.buf.len() < 1 << 20;
            if !self.buf.is_empty() && (checked_at == 0 || small || self.buf.len() >= 2 * checked_at) {
                match Frame::check(&self.buf) {
                    Ok(n) => return Some(n),
                    Err(FrameError::Incomplete) => checked_at = self.buf.len(),
                    Err(e) => panic!("bad reply: {e}"),
                }
            }
            let unchecked = self.buf.len() > checked_at;
            if unchecked {
                self.sock
                    .set_read_timeout(Some(Duration::from_millis(50)))
                    .unwrap();
            }
            let r = self.sock.read(&mut tmp);
            if unchecked {
                self.sock.set_read_timeout(normal).unwrap();
            }
            match r {
                Ok(0) if unchecked => checked_at = 0,
                Ok(0) => {
                    self.ended = Some("closed by the server".into());
                    return None;
                }
                Ok(n) => self.buf.extend_from_slice(&tmp[..n]),
                // Cut short with nothing read: wait again. On Linux a socket read with a timeout
                // returns EINTR after the process was stopped and continued, even with no signal
                // handler installed (signal(7)); under load "Interrupted system call" ended
                // `argument_soup_matches_redis` about one run in seven.
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Quiet for a moment with bytes not yet parsed: parse them now.
                Err(e) if unchecked && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    checked_at = 0
                }
                Err(e) => {
                    self.ended = Some(format!("{e}"));
                    return None;
                }
            }
        }
    }

    pub fn read(&mut self) -> Frame {
        match self.try_read() {
            Some(f) => f,
            None => panic!(
                "no reply from {:?}: {} ({} bytes unparsed)",
                self.sock.peer_addr(),
                self.ended.as_deref().unwrap_or("?"),
                self.buf.len()
            ),
        }
    }

    /// Whether the server closed the connection (reading until EOF, skipping any replies).
    pub fn closed(&mut self) -> bool {
        while self.try_read().is_some() {}
        true
    }

    pub fn encoded(&mut self) -> Vec<u8> {
        let f = self.read();
        let mut out = Vec::new();
        f.encode(&mut out);
        out
    }
}

pub fn bulk(s: &str) -> Frame {
    Frame::Bulk(bytes::Bytes::copy_from_slice(s.as_bytes()))
}

pub fn err(s: &str) -> Frame {
    Frame::Error(s.to_string())
}

pub fn simple(s: &str) -> Frame {
    Frame::Simple(s.to_string())
}

/// Whether a program is on the PATH.
fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program} >/dev/null"))
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a program a test needs is on the PATH. Without it the test is skipped on a developer's
/// machine (false), but fails under CI (`CI=true`), where a skipped check would pass unseen.
pub fn require_tool(program: &str) -> bool {
    if have(program) {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{program} is not installed, and CI=true: install it (Debian: redis-server, redis-tools, nutcracker) \
         rather than skip the test"
    );
    eprintln!("{program} not installed: skipping");
    false
}

/// A free loopback port (bound and released: another process could take it, but rarely does).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Checks another client still works and the data is intact: `k{i}` = `v{i}` for i < n.
pub fn check_intact(addr: SocketAddr, n: usize) {
    let mut c = client(addr);
    let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
    let vals: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(&mut c).unwrap();
    for (i, v) in vals.into_iter().enumerate() {
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_str()), "k{i} lost");
    }
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}

pub fn fill(addr: SocketAddr, n: usize) {
    let mut c = client(addr);
    let mut p = redis::pipe();
    for i in 0..n {
        p.cmd("SET").arg(format!("k{i}")).arg(format!("v{i}")).ignore();
    }
    p.query::<()>(&mut c).unwrap();
}
