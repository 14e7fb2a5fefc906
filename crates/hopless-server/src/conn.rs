//! One client connection: read into a buffer, decode every complete request in it, run each on the
//! store, write all the replies at once (a pipeline of N commands costs one read and one write), repeat.
//!
//! Limits, as Redis: `maxclients` (the extra client gets `-ERR max number of clients reached` and is
//! closed), a protocol error is answered and the connection closed, a query buffer past
//! `client-query-buffer-limit` closes the client without a reply, an idle client is closed after
//! `timeout` seconds. None of them touches another client or the store.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::{debug, warn};

use crate::cmd::{self, Action};
use crate::codec::{Args, Decoder, Proto, Reply};
use crate::state::{BlockWait, ClientEntry, ConnState, Shared};

/// Replies are written out once this much has piled up, even mid-pipeline.
const FLUSH_AT: usize = 64 * 1024;

/// A connection's query and reply buffers start at this size.
const BUFFER: usize = 16 * 1024;

/// An empty buffer larger than this goes back to [`BUFFER`]: a client that sent one big request, or read
/// one big reply, does not keep that memory while it idles (Redis resizes idle query buffers too; the
/// bytes counted in INFO's `used_memory` fall back once a big request is done). Twice [`FLUSH_AT`]: a
/// pipeline's replies, written out at `FLUSH_AT`, never grow the reply buffer past it, so pipelined
/// small requests and replies never pay for the shrink.
const KEEP_BUFFER: usize = 2 * FLUSH_AT;

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

/// Serves one client on event loop `loop_index` until it leaves.
pub async fn serve(shared: Arc<Shared>, mut sock: TcpStream, peer: SocketAddr, loop_index: usize) {
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
    let entry = Arc::new(ClientEntry::new(id, peer, laddr, socket_fd(&sock)));
    shared.clients().insert(id, entry.clone());
    reg.id = Some(id);
    debug!(id, %peer, "client connected");
    let mut conn = ConnState::new(entry, loop_index, settings.requirepass.is_none());
    let r = run(&shared, &mut conn, &mut sock, settings.proto_max_bulk_len).await;
    // Nothing of a client outlives it: its watches, and its place in a blocked queue.
    cmd::forget(&shared, &mut conn);
    match r {
        Err(e) => debug!(id, %peer, error = %e, "client connection ended"),
        Ok(()) => debug!(id, %peer, "client disconnected"),
    }
}

async fn run(
    shared: &Shared,
    conn: &mut ConnState,
    sock: &mut TcpStream,
    max_bulk: usize,
) -> std::io::Result<()> {
    let mut buf = BytesMut::with_capacity(BUFFER);
    let mut out = Reply::new(Proto::Resp2);
    out.errors = Some(shared.errors.clone());
    let mut decoder = Decoder::new(max_bulk);
    let mut args: Vec<Bytes> = Vec::new();
    let mut stop = shared.shutdown.subscribe();
    loop {
        // A client killed from another event loop runs no further command, even one that arrived in
        // the same read as the wake-up: the flag is checked before each request, not only here.
        let more = process(shared, conn, &mut decoder, &mut buf, &mut out, &mut args);
        if !out.buf.is_empty() {
            // The reply waits until the loop has run every connection that is ready, as Redis writes
            // its replies in one burst before it sleeps: the client then finds several replies at one
            // wake-up, and the requests they trigger arrive together, so both sides sleep and wake less
            // often (a yielded task runs again after the loop's other ready tasks and a look at the
            // sockets).
            tokio::task::yield_now().await;
            // What the replies acknowledge reaches the append-only file first (and the disk, under
            // `appendfsync always`). One turn more first, so that the commands of every connection
            // the loop found ready are in the buffer: one write and one fsync covers them all, as
            // Redis writes its buffer once before it sleeps.
            if shared.aof.has_pending() {
                tokio::task::yield_now().await;
                shared.aof.flush();
            }
            shared
                .stats
                .of(conn.loop_index)
                .net_output
                .add(out.buf.len() as u64);
            // A client killed while its output is stuck (a subscriber that stopped reading, closed at
            // its pub/sub output limit) is closed now, not when it reads again.
            tokio::select! {
                biased;
                r = sock.write_all(&out.buf) => r?,
                _ = conn.entry.kill.notified() => return Ok(()),
            }
            out.buf.clear();
            if out.buf.capacity() > KEEP_BUFFER {
                out.buf = BytesMut::with_capacity(BUFFER);
            }
        }
        if conn.close || conn.entry.killed.load(Ordering::Acquire) || *stop.borrow() {
            return Ok(());
        }
        if std::mem::take(&mut conn.yield_loop) {
            tokio::task::yield_now().await;
        }
        if let Some(wait) = conn.block.take() {
            if !wait_unblocked(shared, conn, sock, &mut buf, &mut out, &mut stop, wait).await? {
                return Ok(());
            }
            continue;
        }
        if more {
            continue;
        }
        let limits = &shared.read_limits;
        if buf.len() > limits.query_buffer() {
            warn!(
                id = conn.id(),
                addr = %conn.entry.addr,
                qbuf = buf.len(),
                "closing client that reached max query buffer length"
            );
            return Ok(());
        }
        if buf.is_empty() && buf.capacity() > KEEP_BUFFER {
            buf = BytesMut::with_capacity(BUFFER);
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(BUFFER);
        }
        // Pub/sub: a subscriber is never idle-closed, as in Redis.
        let timeout = if conn.pubsub.is_some() {
            0
        } else {
            limits.timeout()
        };
        let idle = async {
            match timeout {
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
            // Pub/sub: messages published for this subscriber, written even while it sends
            // nothing.
            _ = crate::pubsub::delivery(conn.pubsub.as_deref().map(|s| s.outbox())) => {
                if let Some(s) = &conn.pubsub {
                    s.outbox().drain(&mut out, FLUSH_AT);
                }
                continue;
            }
            // Client-side caching: invalidations for this connection.
            _ = conn.entry.pushes.ready() => {
                conn.entry.pushes.drain(&mut out, FLUSH_AT);
                continue;
            }
            // MONITOR: the lines of every loop's commands.
            _ = crate::pubsub::delivery(conn.monitor.as_deref()) => {
                if let Some(m) = &conn.monitor {
                    m.drain(&mut out, FLUSH_AT);
                }
                continue;
            }
            _ = idle => {
                debug!(id = conn.id(), "closing idle client");
                return Ok(());
            }
        };
        if n == 0 {
            return Ok(());
        }
        shared.stats.of(conn.loop_index).net_input.add(n as u64);
    }
}

/// Waits for a blocked command's reply (a push serving it, its timeout, CLIENT UNBLOCK), still reading
/// what the client sends (kept for after) to notice it leave. False when the connection is to close.
async fn wait_unblocked(
    shared: &Shared,
    conn: &mut ConnState,
    sock: &mut TcpStream,
    buf: &mut BytesMut,
    out: &mut Reply,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    mut wait: BlockWait,
) -> std::io::Result<bool> {
    let id = conn.id();
    let at = out.buf.len();
    conn.entry.blocked.store(true, Ordering::Relaxed);
    let timeout = async {
        match wait.deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(timeout);
    let reply = loop {
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        tokio::select! {
            biased;
            _ = conn.entry.kill.notified() => break None,
            _ = crate::state::stopped(stop) => break None,
            r = &mut wait.reply => break r.ok(),
            _ = &mut timeout => {
                if shared.blocked.cancel(id) {
                    out.null_array();
                    break Some(BytesMut::new());
                }
                // Served at the same moment: the reply is already in the channel.
                break (&mut wait.reply).await.ok();
            }
            r = sock.read_buf(buf) => {
                let n = r?;
                if n == 0 || buf.len() > shared.read_limits.query_buffer() {
                    break None;
                }
                shared.stats.of(conn.loop_index).net_input.add(n as u64);
            }
        }
    };
    conn.entry.blocked.store(false, Ordering::Relaxed);
    match reply {
        Some(r) => {
            if shared.aof.is_on() {
                // The write that served it commits its records (the pop it made for this client) to
                // the append-only file before it lets every gate go: passing through this loop's gate
                // orders this reply after them, and the flush before the write covers them.
                drop(
                    shared
                        .gate
                        .enter_unless(conn.loop_index, || shared.running.busy()),
                );
            }
            // An error that unblocks it (a consumer group gone, CLIENT UNBLOCK ERROR) counts as the
            // command's failure and in the error stats, as Redis counts it.
            if let (Some(msg), Some((args, _))) = (r.strip_prefix(b"-"), wait.slow.as_ref()) {
                let msg = msg.strip_suffix(b"\r\n").unwrap_or(msg);
                if let Some(out) = out.errors.as_ref() {
                    out.count(msg);
                }
                if let Some(i) = args.first().and_then(|name| crate::cmd::table().lookup(name)) {
                    shared.stats.of(conn.loop_index).commands[i].failed.add(1);
                }
            }
            if let Some((args, micros)) = wait.slow.take() {
                crate::cmd::log_slow(shared, &conn.entry, micros, &args);
            }
            if wait.silenced {
                // CLIENT REPLY OFF or SKIP: the timeout's null, written above, goes too.
                out.buf.truncate(at);
            } else {
                out.buf.extend_from_slice(&r);
            }
            Ok(true)
        }
        None => {
            shared.blocked.cancel(id);
            Ok(false)
        }
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

/// Runs every complete request in `buf` (`args`: an empty list for each request's arguments, kept
/// between requests so that none allocates one). True when it stopped early with requests left (the replies
/// should be written first), false when it needs more input.
fn process(
    shared: &Shared,
    conn: &mut ConnState,
    decoder: &mut Decoder,
    buf: &mut BytesMut,
    out: &mut Reply,
    args: &mut Vec<Bytes>,
) -> bool {
    conn.clock = Instant::now();
    // This loop's gate, held from the first command that needs it to the end of the batch.
    let mut gate = crate::exec_gate::Held::default();
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
        match req.args {
            Args::Ranges(ranges) => {
                let mut frame = buf.split_to(req.consumed).freeze();
                if let Some((last, rest)) = ranges.split_last() {
                    args.extend(rest.iter().map(|r| frame.slice(r.clone())));
                    // The last argument is the frame itself, narrowed: one reference count less.
                    frame.truncate(last.end);
                    frame.advance(last.start);
                    args.push(frame);
                }
                decoder.recycle(ranges);
            }
            Args::Owned(owned) => {
                buf.advance(req.consumed);
                args.extend(owned.into_iter().map(Bytes::from));
            }
        }
        if args.is_empty() {
            continue;
        }
        let action = cmd::execute(shared, conn, out, args, &mut gate);
        args.clear();
        if args.capacity() > 1024 {
            // A request of many arguments does not leave its list behind.
            *args = Vec::new();
        }
        if action == Action::Close {
            conn.close = true;
        }
        if conn.block.is_some() {
            // The rest of the pipeline runs once the blocked command has its reply.
            return false;
        }
        if conn.yield_loop {
            // The rest runs once the connection is back on its loop's thread.
            return true;
        }
    }
}
