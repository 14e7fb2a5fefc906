//! The server's state: what every connection shares (the store, the settings CONFIG SET can change, the
//! client registry CLIENT LIST and KILL read, the counters INFO reports) and what each one keeps of its
//! own ([`ConnState`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use hopless_kv::Store;
use tokio::sync::{watch, Notify};

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
}

/// One command's counters (INFO commandstats).
#[derive(Default)]
pub struct CmdStat {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub failed: AtomicU64,
    pub rejected: AtomicU64,
}

#[derive(Default)]
pub struct Counters {
    pub connections_received: AtomicU64,
    pub commands_processed: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub unknown_commands: AtomicU64,
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
    pub killed: AtomicBool,
    pub kill: Notify,
}

impl ClientEntry {
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill.notify_one();
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
    pub qbuf_free: usize,
}

impl ConnState {
    pub fn id(&self) -> u64 {
        self.entry.id
    }
}

/// The server's shared state.
pub struct Shared {
    pub store: Store,
    pub settings: RwLock<Settings>,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientEntry>>>,
    pub next_client_id: AtomicU64,
    pub connected: AtomicUsize,
    pub counters: Counters,
    pub cmdstats: Box<[CmdStat]>,
    pub started: Instant,
    pub port: u16,
    pub bind: Vec<String>,
    pub threads: usize,
    /// Set to true to stop the server (SHUTDOWN, a signal, [`crate::Server::shutdown`]).
    pub shutdown: watch::Sender<bool>,
    pub peak_memory: AtomicU64,
    /// Every error reply sent (INFO errorstats); each connection's reply writer counts into it.
    pub errors: Arc<ErrorStats>,
}

impl Shared {
    /// `port`, `bind` and `threads` are what INFO and CONFIG GET report; `commands`: how many commands
    /// the table has (one [`CmdStat`] each).
    pub fn new(
        store: Store,
        settings: Settings,
        port: u16,
        bind: Vec<String>,
        threads: usize,
        commands: usize,
    ) -> Self {
        Shared {
            store,
            settings: RwLock::new(settings),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            counters: Counters::default(),
            cmdstats: (0..commands).map(|_| CmdStat::default()).collect(),
            started: Instant::now(),
            port,
            bind,
            threads,
            shutdown: watch::channel(false).0,
            errors: Arc::default(),
            peak_memory: AtomicU64::new(0),
        }
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn with_settings<R>(&self, f: impl FnOnce(&mut Settings) -> R) -> R {
        f(&mut self.settings.write().unwrap_or_else(|e| e.into_inner()))
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
