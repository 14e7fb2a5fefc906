//! The server's state: what every connection shares (the store, the settings CONFIG SET can change, the
//! client registry CLIENT LIST and KILL read, the counters INFO reports) and what each one keeps of its
//! own ([`ConnState`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use hopless_kv::Store;
use tokio::sync::{oneshot, watch, Notify};

use crate::blocked::Blocked;
use crate::exec_gate::ExecGate;
use crate::watch::Watches;

use crate::error_stats::ErrorStats;

/// Settings a client may change at run time (maxmemory and its policy live in the store).
#[derive(Debug, Clone)]
pub struct Settings {
    pub requirepass: Option<Vec<u8>>,
    pub maxclients: usize,
    /// Idle seconds before a client is closed; 0: never.
    pub timeout: u64,
    pub proto_max_bulk_len: usize,
    pub client_query_buffer_limit: usize,
    pub protected_mode: bool,
    /// `list-compress-depth`: kept for CONFIG GET, and not applied (hopless does not compress list
    /// nodes; compression changes no reply, only memory).
    pub list_compress_depth: i64,
}

/// `min-replicas-to-write` and `min-replicas-max-lag`. hopless has no replicas, so asking for any
/// refuses every write with NOREPLICAS, as Redis refuses them while fewer replicas are connected.
pub struct MinReplicas {
    to_write: AtomicU64,
    max_lag: AtomicU64,
}

impl Default for MinReplicas {
    fn default() -> Self {
        MinReplicas {
            to_write: AtomicU64::new(0),
            max_lag: AtomicU64::new(10),
        }
    }
}

impl MinReplicas {
    /// Whether writes are refused now.
    pub fn refuse_writes(&self) -> bool {
        self.to_write.load(Ordering::Relaxed) > 0
    }

    pub fn to_write(&self) -> u64 {
        self.to_write.load(Ordering::Relaxed)
    }

    pub fn set_to_write(&self, n: u64) {
        self.to_write.store(n, Ordering::Relaxed);
    }

    pub fn max_lag(&self) -> u64 {
        self.max_lag.load(Ordering::Relaxed)
    }

    pub fn set_max_lag(&self, n: u64) {
        self.max_lag.store(n, Ordering::Relaxed);
    }
}

#[derive(Default)]
pub struct Counters {
    pub connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub unknown_commands: AtomicU64,
}

/// The two settings a connection looks at before every read (`client-query-buffer-limit`, `timeout`),
/// as plain loads: a copy of the settings under their lock on every read cost a locked instruction or
/// two, and an allocation where a password is set.
pub struct ReadLimits {
    query_buffer: AtomicUsize,
    timeout: AtomicU64,
}

impl ReadLimits {
    fn new(s: &Settings) -> Self {
        ReadLimits {
            query_buffer: AtomicUsize::new(s.client_query_buffer_limit),
            timeout: AtomicU64::new(s.timeout),
        }
    }

    fn set(&self, s: &Settings) {
        self.query_buffer
            .store(s.client_query_buffer_limit, Ordering::Relaxed);
        self.timeout.store(s.timeout, Ordering::Relaxed);
    }

    /// `client-query-buffer-limit`.
    pub fn query_buffer(&self) -> usize {
        self.query_buffer.load(Ordering::Relaxed)
    }

    /// `timeout`: idle seconds before a client is closed; 0: never.
    pub fn timeout(&self) -> u64 {
        self.timeout.load(Ordering::Relaxed)
    }
}

/// A connected client, as CLIENT LIST and KILL see it.
pub struct ClientEntry {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    /// The socket's file descriptor (CLIENT LIST's `fd`; -1 where there is none).
    pub fd: i64,
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    /// Milliseconds since `created` at the last command.
    pub last_ms: AtomicU64,
    /// The last command: its index into the command table plus one, and its subcommand's above bit 16
    /// (`Command::last_cmd_code`; 0: none yet).
    pub last_cmd: AtomicUsize,
    pub resp: AtomicU64,
    /// Commands queued since MULTI, -1 outside one (CLIENT LIST's `multi=`).
    pub multi: AtomicI64,
    /// Waiting in a blocking command (CLIENT LIST's flag `b`).
    pub blocked: AtomicBool,
    pub killed: AtomicBool,
    pub kill: Notify,
    /// Client-side caching's pushes for this connection (its own invalidations, or those redirected
    /// to it), written by its own event loop.
    pub pushes: Arc<crate::pubsub::Outbox>,
}

impl ClientEntry {
    /// A client's entry: `fd` -1 where it has no socket (the append-only file's loader).
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, fd: i64) -> ClientEntry {
        ClientEntry {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            name: Mutex::new(Vec::new()),
            last_ms: AtomicU64::new(0),
            last_cmd: AtomicUsize::new(0),
            resp: AtomicU64::new(2),
            multi: AtomicI64::new(-1),
            blocked: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            pushes: Arc::default(),
        }
    }

    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill.notify_one();
    }
}

/// A transaction being queued (MULTI until EXEC or DISCARD).
#[derive(Default)]
pub struct Multi {
    /// Table index and arguments of each queued command.
    pub queued: Vec<(usize, Vec<Bytes>)>,
    /// A command was refused while queuing: EXEC answers EXECABORT.
    pub failed: bool,
    /// A queued command may grow memory: EXEC is refused (EXECABORT ... OOM) while the store is over
    /// `maxmemory` under `noeviction`.
    pub denyoom: bool,
}

/// A key this connection WATCHes, and whether it existed then (EXEC aborts if it no longer does:
/// expired, evicted or flushed).
pub struct Watched {
    pub key: Bytes,
    pub existed: bool,
}

/// A blocking command waiting for its reply.
pub struct BlockWait {
    pub reply: oneshot::Receiver<BytesMut>,
    /// None: forever.
    pub deadline: Option<tokio::time::Instant>,
    /// The blocked command's reply is not sent (CLIENT REPLY OFF or SKIP was in force when it ran).
    pub silenced: bool,
    /// The command and how long its first try ran (µs), for the slow log once it is served or times out
    /// (filled in by the dispatcher).
    pub slow: Option<(Vec<Bytes>, u64)>,
}

/// CLIENT REPLY's state for a connection, as Redis keeps it in three flags: OFF silences every reply
/// until ON; SKIP silences the next command's. Pub/sub frames are never silenced.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplyMode {
    pub off: bool,
    /// The running command's reply is silenced (set by the SKIP before it).
    pub skip_current: bool,
    /// Set by CLIENT REPLY SKIP: the command after it is silenced.
    pub skip_next: bool,
}

impl ReplyMode {
    /// Whether a reply written now is dropped.
    pub fn silenced(self) -> bool {
        self.off || self.skip_current
    }

    /// After each command: a SKIP reaches the next one.
    pub fn next_command(&mut self) {
        self.skip_current = std::mem::take(&mut self.skip_next);
    }
}

/// Per-connection state the commands see.
pub struct ConnState {
    pub entry: Arc<ClientEntry>,
    pub authenticated: bool,
    /// Set by QUIT (after its reply) and SHUTDOWN.
    pub close: bool,
    /// The query buffer while a command runs, as Redis counts it for CLIENT LIST: its bytes (the running
    /// command's included) and its free capacity.
    pub qbuf: usize,
    /// The event loop this connection lives on (which gate its commands hold).
    pub loop_index: usize,
    pub multi: Option<Multi>,
    pub watched: Vec<Watched>,
    /// Set by a write to a watched key.
    pub watch_dirty: Arc<AtomicBool>,
    /// Set by a blocking command that blocked: the connection waits for it before its next command.
    pub block: Option<BlockWait>,
    /// Pub/sub: its subscriptions; `Some` while it has any (subscribed mode).
    pub pubsub: Option<Box<crate::pubsub::ClientSubs>>,
    pub qbuf_free: usize,
    /// CLIENT REPLY ON/OFF/SKIP.
    pub replies: ReplyMode,
    /// Set by MONITOR: where the lines for it are queued (cleared by RESET).
    pub monitor: Option<Arc<crate::pubsub::Outbox>>,
    /// While a script of this connection runs a command: MONITOR and SLOWLOG show it as the script's.
    pub in_script: bool,
    /// Its last script, once busy, let the event loop go to another thread: the connection yields to
    /// the loop before its next request, so that the thread it ran on leaves the loop.
    pub yield_loop: bool,
    /// When this connection's last command ended, or its current batch of requests began: the next
    /// command's start. One clock read per command then times each command of a pipeline (its
    /// decoding, tens of nanoseconds, counted in).
    pub clock: Instant,
    /// The last command looked up.
    pub lookup: LookupCache,
    /// CLIENT TRACKING: `Some` while it tracks.
    pub tracking: Option<TrackingConn>,
}

/// A tracking connection's own side of client-side caching.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrackingConn {
    pub options: crate::tracking::Options,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT), for the next command or transaction.
    pub caching: bool,
    /// A script of this connection ran a read command: its declared keys are remembered after it.
    pub script_read: bool,
}

impl TrackingConn {
    /// Whether the keys it reads now are remembered: not in BCAST mode, nor OPTIN without CACHING YES,
    /// nor OPTOUT after CACHING NO.
    pub fn remembers(&self) -> bool {
        let o = self.options;
        !o.bcast && (!o.optin || self.caching) && (!o.optout || !self.caching)
    }
}

/// The last command name a connection sent, as sent, and its index in the command table (`len` 0: none
/// yet); the table's `lookup_cached` reads and fills it.
#[derive(Default)]
pub struct LookupCache {
    pub(crate) name: [u8; 24],
    pub(crate) len: u8,
    pub(crate) index: usize,
}

impl ConnState {
    /// A new connection's state, on event loop `loop_index`.
    pub fn new(entry: Arc<ClientEntry>, loop_index: usize, authenticated: bool) -> ConnState {
        ConnState {
            entry,
            authenticated,
            close: false,
            qbuf: 0,
            loop_index,
            multi: None,
            watched: Vec::new(),
            watch_dirty: Arc::new(AtomicBool::new(false)),
            block: None,
            replies: Default::default(),
            monitor: None,
            in_script: false,
            yield_loop: false,
            pubsub: None,
            qbuf_free: 0,
            clock: Instant::now(),
            lookup: Default::default(),
            tracking: None,
        }
    }

    pub fn id(&self) -> u64 {
        self.entry.id
    }
}

/// The server's shared state.
pub struct Shared {
    pub store: Store,
    pub settings: RwLock<Settings>,
    /// The settings a connection reads before each read, kept beside `settings` by `with_settings`.
    pub read_limits: ReadLimits,
    pub clients: Arc<Mutex<BTreeMap<u64, Arc<ClientEntry>>>>,
    pub next_client_id: AtomicU64,
    pub connected: AtomicUsize,
    pub counters: Counters,
    /// Each loop's counts of its commands and bytes.
    pub stats: crate::loop_stats::Stats,
    pub started: Instant,
    /// INFO's `run_id` and the replication id (`master_replid`): 40 hex digits, new each start.
    pub run_id: String,
    pub port: u16,
    pub bind: Vec<String>,
    pub threads: usize,
    /// Set to true to stop the server (SHUTDOWN, a signal, [`crate::Server::shutdown`]).
    pub shutdown: watch::Sender<bool>,
    pub peak_memory: AtomicU64,
    /// Lets EXEC run alone.
    pub gate: ExecGate,
    pub watches: Watches,
    pub blocked: Blocked,
    /// Pub/sub: channels, patterns and their subscribers' outboxes.
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// `notify-keyspace-events`: which keyspace events go out, through `pubsub` (the store holds it too,
    /// for the keys that expire or are evicted).
    pub events: Arc<crate::keyspace_events::KeyspaceEvents>,
    /// MONITOR's connections.
    pub monitors: crate::monitor::Monitors,
    /// Client-side caching: who may cache which key.
    pub tracking: Arc<crate::tracking::Tracking>,
    /// Every error reply sent (INFO errorstats); each connection's reply writer counts into it.
    pub errors: Arc<ErrorStats>,
    /// SLOWLOG's entries and settings.
    pub slowlog: crate::slowlog::SlowLog,
    /// The Lua scripts (EVAL, SCRIPT); used with every loop's gate held.
    pub scripts: Mutex<crate::script::Scripts>,
    /// The function libraries (FUNCTION, FCALL); used with every loop's gate held.
    pub functions: Mutex<crate::script::Functions>,
    /// The script running now, as the other loops see it (BUSY, SCRIPT KILL).
    pub running: Arc<crate::script::Running>,
    /// `min-replicas-to-write`: writes refused while it asks for replicas.
    pub min_replicas: MinReplicas,
    /// The snapshot's settings and state (SAVE, BGSAVE, INFO persistence).
    pub persistence: crate::snapshot::state::Persistence,
    /// The append-only file.
    pub aof: Arc<crate::aof::Aof>,
}

impl Shared {
    /// `port`, `bind` and `threads` are what INFO and CONFIG GET report; `commands`: how many commands
    /// the table has (one [`crate::loop_stats::CmdStat`] each, on each loop).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Store,
        events: Arc<crate::keyspace_events::KeyspaceEvents>,
        tracking: Arc<crate::tracking::Tracking>,
        settings: Settings,
        port: u16,
        bind: Vec<String>,
        threads: usize,
        commands: usize,
        snapshot: crate::snapshot::state::SnapshotSettings,
        aof: Arc<crate::aof::Aof>,
    ) -> Self {
        let running = Arc::new(crate::script::Running::default());
        let clients: Arc<Mutex<BTreeMap<u64, Arc<ClientEntry>>>> = Arc::default();
        let registry = clients.clone();
        tracking.set_lookup(Box::new(move |id| {
            let clients = registry.lock().unwrap_or_else(|e| e.into_inner());
            clients.get(&id).map(|e| crate::tracking::Target {
                pushes: e.pushes.clone(),
                resp3: e.resp.load(Ordering::Relaxed) == 3,
            })
        }));
        Shared {
            store,
            read_limits: ReadLimits::new(&settings),
            settings: RwLock::new(settings),
            clients,
            next_client_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            counters: Counters::default(),
            stats: crate::loop_stats::Stats::new(threads, commands),
            started: Instant::now(),
            run_id: new_run_id(),
            port,
            bind,
            threads,
            shutdown: watch::channel(false).0,
            errors: Arc::default(),
            peak_memory: AtomicU64::new(0),
            gate: ExecGate::with_side(threads, aof.side.clone()),
            watches: Watches::default(),
            blocked: Blocked::default(),
            pubsub: events.pubsub().clone(),
            events,
            monitors: Default::default(),
            tracking,
            slowlog: Default::default(),
            scripts: Mutex::new(crate::script::Scripts::new(running.clone())),
            functions: Mutex::new(crate::script::Functions::new(running.clone())),
            running,
            min_replicas: MinReplicas::default(),
            persistence: crate::snapshot::state::Persistence::new(snapshot),
            aof,
        }
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn with_settings<R>(&self, f: impl FnOnce(&mut Settings) -> R) -> R {
        let mut s = self.settings.write().unwrap_or_else(|e| e.into_inner());
        let r = f(&mut s);
        self.read_limits.set(&s);
        r
    }

    pub fn clients(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<ClientEntry>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }
}

/// Resolves once the server is asked to stop.
pub async fn stopped(rx: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, not held across the caller's awaits.
    let _ = rx.wait_for(|s| *s).await;
}

/// 40 hex digits that differ from one start to the next, as Redis's run id (not a secret: std's
/// randomly keyed hasher over the time and the process id).
fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut id = String::with_capacity(40);
    for part in 0..3u8 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now);
        h.write_u32(std::process::id());
        h.write_u8(part);
        id.push_str(&format!("{:016x}", h.finish()));
    }
    id.truncate(40);
    id
}
