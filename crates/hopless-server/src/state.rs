//! What every connection shares: the store, the settings CONFIG SET can change, the client registry
//! (CLIENT LIST/KILL), and the counters INFO reports.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use hopless_kv::Store;
use tokio::sync::{watch, Notify};

use crate::cmd::COMMANDS;
use crate::ServeOptions;

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
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    /// Milliseconds since `created` at the last command.
    pub last_ms: AtomicU64,
    /// Index into [`COMMANDS`] of the last command, plus one (0: none yet).
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

    /// One line of CLIENT LIST / CLIENT INFO, in Redis 7's field order.
    pub fn describe(&self, qbuf: Option<usize>) -> String {
        let age = self.created.elapsed();
        let idle = age.as_millis() as u64 - self.last_ms.load(Ordering::Relaxed).min(age.as_millis() as u64);
        let cmd = match self.last_cmd.load(Ordering::Relaxed) {
            0 => "NULL",
            i => COMMANDS.get(i - 1).map_or("NULL", |c| c.name),
        };
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 \
             qbuf={} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r \
             cmd={} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.laddr,
            String::from_utf8_lossy(&self.name.lock().unwrap_or_else(|e| e.into_inner())),
            age.as_secs(),
            idle / 1000,
            qbuf.unwrap_or(0),
            cmd,
            self.resp.load(Ordering::Relaxed),
        )
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
}

impl Shared {
    pub fn new(opts: &ServeOptions, store: Store, port: u16) -> Self {
        Shared {
            store,
            settings: RwLock::new(Settings {
                requirepass: opts.requirepass.clone().map(String::into_bytes),
                maxclients: opts.maxclients,
                timeout: opts.timeout,
                proto_max_bulk_len: opts.proto_max_bulk_len,
                client_query_buffer_limit: opts.client_query_buffer_limit,
                protected_mode: opts.protected_mode,
            }),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            counters: Counters::default(),
            cmdstats: COMMANDS.iter().map(|_| CmdStat::default()).collect(),
            started: Instant::now(),
            port,
            bind: opts.bind.clone(),
            threads: opts.threads,
            shutdown: watch::channel(false).0,
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
