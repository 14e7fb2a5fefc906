//! One client connection: read into a buffer, decode every complete request in it, run each on the
//! store, write all the replies at once (a pipeline of N commands costs one read and one write), repeat.
//!
//! Limits, as Redis: `maxclients` (the extra client gets `-ERR max number of clients reached` and is
//! closed), a protocol error is answered and the connection closed, a query buffer past
//! `client-query-buffer-limit` closes the client without a reply, an idle client is closed after
//! `timeout` seconds. None of them touches another client or the store.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tracing::{debug, warn};

use crate::cmd::{self, Action};
use crate::codec::{Args, Decoder, Proto, Reply};
use crate::state::{ClientEntry, ConnState, Shared};

/// Replies are written out once this much has piled up, even mid-pipeline.
const FLUSH_AT: usize = 64 * 1024;

struct Registration<'a> {
    shared: &'a Shared,
    id: Option<u64>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.shared.connected.fetch_sub(1, Ordering::Relaxed);
        if let Some(id) = self.id {
            self.shared.clients().remove(&id);
        }
    }
}

pub async fn serve(shared: Arc<Shared>, mut sock: TcpStream, peer: SocketAddr) {
    shared
        .counters
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    let settings = shared.settings();
    let n = shared.connected.fetch_add(1, Ordering::Relaxed) + 1;
    let mut reg = Registration {
        shared: &shared,
        id: None,
    };
    if n > settings.maxclients {
        shared
            .counters
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = sock.write_all(b"-ERR max number of clients reached\r\n").await;
        return;
    }
    let _ = sock.set_nodelay(true);
    let laddr = sock.local_addr().unwrap_or(peer);
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let entry = Arc::new(ClientEntry {
        id,
        addr: peer,
        laddr,
        fd: socket_fd(&sock),
        created: Instant::now(),
        name: Mutex::new(Vec::new()),
        last_ms: AtomicU64::new(0),
        last_cmd: AtomicUsize::new(0),
        resp: AtomicU64::new(2),
        killed: AtomicBool::new(false),
        kill: Notify::new(),
    });
    shared.clients().insert(id, entry.clone());
    reg.id = Some(id);
    debug!(id, %peer, "client connected");
    let mut conn = ConnState {
        entry,
        authenticated: settings.requirepass.is_none(),
        close: false,
        qbuf: 0,
        qbuf_free: 0,
    };
    if let Err(e) = run(&shared, &mut conn, &mut sock, settings.proto_max_bulk_len).await {
        debug!(id, %peer, error = %e, "client connection ended");
    } else {
        debug!(id, %peer, "client disconnected");
    }
}

async fn run(
    shared: &Shared,
    conn: &mut ConnState,
    sock: &mut TcpStream,
    max_bulk: usize,
) -> std::io::Result<()> {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out = Reply::new(Proto::Resp2);
    out.errors = Some(shared.errors.clone());
    let mut decoder = Decoder::new(max_bulk);
    let mut stop = shared.shutdown.subscribe();
    loop {
        // A client killed from another event loop runs no further command, even one that arrived in
        // the same read as the wake-up: the flag is checked before each request, not only here.
        let more = process(shared, conn, &mut decoder, &mut buf, &mut out);
        if !out.buf.is_empty() {
            shared
                .counters
                .net_output_bytes
                .fetch_add(out.buf.len() as u64, Ordering::Relaxed);
            sock.write_all(&out.buf).await?;
            out.buf.clear();
        }
        if conn.close || conn.entry.killed.load(Ordering::Acquire) || *stop.borrow() {
            return Ok(());
        }
        if more {
            continue;
        }
        let settings = shared.settings();
        if buf.len() > settings.client_query_buffer_limit {
            warn!(
                id = conn.id(),
                addr = %conn.entry.addr,
                qbuf = buf.len(),
                "closing client that reached max query buffer length"
            );
            return Ok(());
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        let idle = async {
            match settings.timeout {
                0 => std::future::pending::<()>().await,
                t => tokio::time::sleep(Duration::from_secs(t)).await,
            }
        };
        let n = tokio::select! {
            // Kill and shutdown win over input that is ready at the same moment.
            biased;
            _ = conn.entry.kill.notified() => return Ok(()),
            _ = crate::state::stopped(&mut stop) => return Ok(()),
            r = sock.read_buf(&mut buf) => r?,
            _ = idle => {
                debug!(id = conn.id(), "closing idle client");
                return Ok(());
            }
        };
        if n == 0 {
            return Ok(());
        }
        shared
            .counters
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The socket's descriptor, for CLIENT LIST.
fn socket_fd(sock: &TcpStream) -> i64 {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        i64::from(sock.as_raw_fd())
    }
    #[cfg(not(unix))]
    {
        let _ = sock;
        -1
    }
}

/// Runs every complete request in `buf`. True when it stopped early with requests left (the replies
/// should be written first), false when it needs more input.
fn process(
    shared: &Shared,
    conn: &mut ConnState,
    decoder: &mut Decoder,
    buf: &mut BytesMut,
    out: &mut Reply,
) -> bool {
    loop {
        if conn.close || conn.entry.killed.load(Ordering::Acquire) {
            return false;
        }
        if out.buf.len() >= FLUSH_AT {
            return true;
        }
        let req = match decoder.decode(buf, conn.authenticated) {
            Ok(Some(r)) => r,
            Ok(None) => {
                conn.qbuf = buf.len();
                return false;
            }
            Err(e) => {
                debug!(id = conn.id(), addr = %conn.entry.addr, error = %e, "protocol error");
                out.error(&format!("ERR {e}"));
                conn.close = true;
                return false;
            }
        };
        (conn.qbuf, conn.qbuf_free) = (buf.len(), buf.capacity() - buf.len());
        let args: Vec<Bytes> = match req.args {
            Args::Ranges(ranges) => {
                let frame = buf.split_to(req.consumed).freeze();
                ranges.into_iter().map(|r| frame.slice(r)).collect()
            }
            Args::Owned(owned) => {
                buf.advance(req.consumed);
                owned.into_iter().map(Bytes::from).collect()
            }
        };
        if args.is_empty() {
            continue;
        }
        match cmd::execute(shared, conn, out, &args) {
            Action::Continue => {}
            Action::Close => conn.close = true,
        }
    }
}
