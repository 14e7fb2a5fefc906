//! Listeners and the server's life: [`Server::start`] (in-process, for tests and benchmarks),
//! [`Server::shutdown`], and [`run`] (`hopless serve`: banner, logs, signals).
//!
//! Threads: one event loop per worker, a tokio runtime with one worker thread of its own, plus one more
//! runtime that only accepts (so a long command on a worker never holds up new connections). Every
//! accepted connection is handed, round-robin, to one worker and stays there for its life. A
//! connection's requests are never moved between loops or stolen by an idle one, so a reply is never
//! waiting on a wake-up of another thread: at `--threads 1` this is Redis's one event loop, and with
//! more, one event loop per thread over the shared, sharded store. (A work-stealing runtime shared by
//! the loops doubled the p99 latency against Redis on two cores.) The loops' runtimes are of tokio's
//! multi-thread kind, with that one worker, for one reason: a busy script moves its loop to another
//! thread and goes on off it (`script::Running::check`), as Redis serves other clients from inside a
//! busy script.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hopless_kv::{Config, Policy, Store};
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::{Handle, Runtime};
use tracing::{info, warn};

use crate::aof::{Aof, AofSettings, LoadClock, LoggedGone};
use crate::codec::DEFAULT_MAX_BULK_LEN;
use crate::keyspace_events::KeyspaceEvents;
use crate::snapshot::state::SnapshotSettings;
use crate::state::{Settings, Shared};
use crate::words::{human, policy_name, yes_no};

/// An event loop thread's stack: the 8 MiB Redis's main thread has from the system. Scripts run on
/// their connection's loop, and `cjson` and `cmsgpack` recurse once per nested table, as deep as Lua's
/// 8 000 stack slots allow.
const LOOP_STACK: usize = 8 << 20;

/// What `hopless serve` is told.
#[derive(Clone)]
pub struct ServeOptions {
    /// Addresses to listen on (default `127.0.0.1`).
    pub bind: Vec<String>,
    /// Port; 0 picks a free one ([`Server::addr`] says which).
    pub port: u16,
    /// Worker threads.
    pub threads: usize,
    /// The store's memory limit in bytes (0: none) and what happens at it.
    pub maxmemory: u64,
    pub maxmemory_policy: Policy,
    pub requirepass: Option<String>,
    /// Refuse a non-loopback `bind` without `requirepass`.
    pub protected_mode: bool,
    pub maxclients: usize,
    /// Idle seconds before a client is closed (0: never).
    pub timeout: u64,
    pub proto_max_bulk_len: usize,
    /// A client whose unprocessed input grows past this is closed (Redis's `client-query-buffer-limit`).
    pub client_query_buffer_limit: usize,
    /// The store's configuration (shards, clock...); `maxmemory` and the policy above override its own.
    pub store: Config,
    /// Where the snapshot goes and when (`dir`, `dbfilename`, save points...): no save points by
    /// default, so an embedded server writes no file unless asked (`hopless serve` takes Redis's).
    pub snapshot: SnapshotSettings,
    /// Load the snapshot file at start, if there is one (`hopless serve` does, as Redis does).
    pub load_snapshot: bool,
    /// The append-only file (`appendonly`, `appendfsync`...); off by default. On, the set under
    /// `dir/appenddirname` is loaded at start instead of the snapshot, as Redis loads it.
    pub aof: AofSettings,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            bind: vec!["127.0.0.1".into()],
            port: 6379,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            maxmemory: 0,
            maxmemory_policy: Policy::NoEviction,
            requirepass: None,
            protected_mode: true,
            maxclients: 10_000,
            timeout: 0,
            proto_max_bulk_len: DEFAULT_MAX_BULK_LEN,
            client_query_buffer_limit: 1 << 30,
            store: Config::default(),
            snapshot: SnapshotSettings::default(),
            load_snapshot: false,
            aof: AofSettings::default(),
        }
    }
}

/// A running server: its listeners and worker threads live until [`Server::shutdown`] (or SHUTDOWN from a
/// client, after which [`Server::wait`] returns).
pub struct Server {
    addrs: Vec<SocketAddr>,
    shared: Arc<Shared>,
    /// The worker threads, the first running the accept loops.
    threads: Vec<JoinHandle<()>>,
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Server {
    /// Binds every address (errors, such as a port in use or protected mode, come back here) and starts
    /// serving on `opts.threads` single-threaded event loops and an accept thread.
    pub fn start(opts: ServeOptions) -> io::Result<Server> {
        if opts.protected_mode && opts.requirepass.is_none() {
            if let Some(h) = opts.bind.iter().find(|h| !is_loopback(h)) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "protected mode: refusing to listen on {h} without a password; set --requirepass, \
                         or --protected-mode no if this network is trusted"
                    ),
                ));
            }
        }
        // An event loop: one worker thread, no work stealing. Its runtime is the multi-thread kind so that
        // a busy script can move it to another thread and go on off it (`script::Running::check`).
        let new_loop = |i: usize| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_stack_size(LOOP_STACK)
                .thread_name(format!("hopless-loop-{i}"))
                .enable_all()
                .build()
        };
        let workers: Vec<Runtime> = (0..opts.threads.max(1))
            .map(new_loop)
            .collect::<io::Result<_>>()?;
        let acceptor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listeners = acceptor.block_on(async {
            let mut ls = Vec::new();
            for host in &opts.bind {
                let ip: IpAddr = if host == "localhost" {
                    IpAddr::from([127, 0, 0, 1])
                } else {
                    host.parse().map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidInput, format!("bad bind address {host:?}"))
                    })?
                };
                ls.push(listen(SocketAddr::new(ip, opts.port))?);
            }
            io::Result::Ok(ls)
        })?;
        let addrs: Vec<SocketAddr> = listeners
            .iter()
            .map(|l| l.local_addr())
            .collect::<io::Result<_>>()?;
        let events = Arc::new(KeyspaceEvents::new(Arc::default()));
        let mut cfg = opts.store.clone();
        let tracking = Arc::new(crate::tracking::Tracking::new(events.pubsub().clone()));
        let aof = Arc::new(Aof::new(opts.aof.clone(), opts.snapshot.dir.clone()));
        cfg.on_gone = Some(Arc::new(LoggedGone {
            inner: crate::tracking::GoneFanout {
                events: events.clone(),
                tracking: tracking.clone(),
            },
            aof: aof.clone(),
        }));
        cfg.clock = Arc::new(LoadClock {
            inner: cfg.clock.clone(),
            loading: aof.loading.clone(),
        });
        cfg.maxmemory = opts.maxmemory;
        cfg.policy = opts.maxmemory_policy;
        let port = addrs.first().map_or(opts.port, |a| a.port());
        let settings = Settings {
            requirepass: opts.requirepass.clone().map(String::into_bytes),
            maxclients: opts.maxclients,
            timeout: opts.timeout,
            proto_max_bulk_len: opts.proto_max_bulk_len,
            client_query_buffer_limit: opts.client_query_buffer_limit,
            protected_mode: opts.protected_mode,
            list_compress_depth: 0,
        };
        let shared = Arc::new(Shared::new(
            Store::new(cfg),
            events,
            tracking,
            settings,
            port,
            opts.bind.clone(),
            opts.threads,
            crate::cmd::table().len(),
            opts.snapshot.clone(),
            aof,
        ));
        if opts.aof.enabled {
            load_aof_at_start(&shared)?;
        } else if opts.load_snapshot {
            crate::snapshot::save::load_at_start(&shared)?;
        }
        let handles: Arc<[Handle]> = workers.iter().map(|r| r.handle().clone()).collect();
        // Built first, so that a failed spawn below drops it: its `Drop` stops and joins the threads
        // already started.
        let mut server = Server {
            addrs,
            shared: shared.clone(),
            threads: Vec::new(),
        };
        for (i, rt) in workers.into_iter().enumerate() {
            let sh = shared.clone();
            server.threads.push(
                std::thread::Builder::new()
                    .name(format!("hopless-server-{i}"))
                    .spawn(move || work(rt, sh))?,
            );
        }
        let sh = shared.clone();
        server.threads.push(
            std::thread::Builder::new()
                .name("hopless-server-save".into())
                .spawn(move || save_timer(sh))?,
        );
        server.threads.push(
            std::thread::Builder::new()
                .name("hopless-server-accept".into())
                .spawn(move || accept(acceptor, listeners, handles, shared))?,
        );
        Ok(server)
    }

    /// The first listener's address (with the port chosen, when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The store the server serves (to preload it, or read its stats).
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// Closes the listeners and every connection, and waits for the workers.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.shared.request_shutdown();
        self.join()
    }

    /// Waits until the server stops (SHUTDOWN from a client, or a [`Server::shutdown`] elsewhere).
    pub fn wait(mut self) -> io::Result<()> {
        self.join()
    }

    /// A handle that can stop the server from another thread.
    pub fn stopper(&self) -> impl Fn() + Send + Sync + 'static {
        let s = self.shared.clone();
        move || s.request_shutdown()
    }

    fn join(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                result = Err(io::Error::other("server thread panicked"));
            }
        }
        result
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.request_shutdown();
        let _ = self.join();
    }
}

fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    s.set_reuseaddr(true)?;
    s.bind(addr)?;
    // Redis's tcp-backlog.
    s.listen(511)
}

/// One worker thread: drives the connections handed to its loop until shutdown.
fn work(rt: Runtime, shared: Arc<Shared>) {
    rt.block_on(async {
        let mut stop = shared.shutdown.subscribe();
        crate::state::stopped(&mut stop).await;
    });
    // Each connection saw the shutdown too; dropping the runtime drops whatever is still open.
    drop(rt);
    info!("server thread stopped");
}

/// The accept thread: accepts on every listener until shutdown.
fn accept(rt: Runtime, listeners: Vec<TcpListener>, workers: Arc<[Handle]>, shared: Arc<Shared>) {
    rt.block_on(async {
        let mut tasks = Vec::new();
        for l in listeners {
            tasks.push(tokio::spawn(accept_loop(l, workers.clone(), shared.clone())));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

async fn accept_loop(listener: TcpListener, workers: Arc<[Handle]>, shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    let mut next = 0usize;
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((sock, peer)) => {
                    // Round-robin over the workers; the connection stays on the one it is given.
                    let loop_index = next % workers.len();
                    let w = &workers[loop_index];
                    next = next.wrapping_add(1);
                    match sock.into_std() {
                        Ok(std_sock) => {
                            let sh = shared.clone();
                            w.spawn(async move {
                                // Registers with this worker's reactor (the socket is non-blocking).
                                match tokio::net::TcpStream::from_std(std_sock) {
                                    Ok(sock) => crate::conn::serve(sh, sock, peer, loop_index).await,
                                    Err(e) => warn!(error = %e, "could not hand a connection to a worker"),
                                }
                            });
                        }
                        Err(e) => warn!(error = %e, "could not hand a connection to a worker"),
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off rather than spin.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            _ = crate::state::stopped(&mut stop) => break,
        }
    }
}

/// `hopless serve`: starts the server, prints the banner, logs through `tracing` (RUST_LOG, default
/// `info`), and runs until SIGINT, SIGTERM or SHUTDOWN.
/// With `appendonly yes`: loads the set under `dir/appenddirname` (not the snapshot, as Redis), then
/// opens it for appending (a base made if it has none) and starts recording.
fn load_aof_at_start(shared: &Shared) -> io::Result<()> {
    if crate::aof::load::find_set(shared)? {
        let started = std::time::Instant::now();
        let loaded = crate::aof::load::load_set(shared, &mut crate::cmd::replay)?;
        info!(
            keys = shared.store.dbsize(),
            commands = loaded.commands,
            secs = started.elapsed().as_secs_f64(),
            "DB loaded from append only file"
        );
    }
    crate::aof::rewrite::open_at_start(shared)
}

/// The snapshot's and the append-only file's timer: ten turns a second (Redis's `hz`), until the
/// server stops. A background save or rewrite still running then is stopped, and the log synced.
fn save_timer(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    while !*stop.borrow_and_update() {
        crate::snapshot::save::tick(&shared);
        crate::aof::rewrite::tick(&shared);
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::snapshot::save::kill_child(&shared);
    crate::aof::rewrite::kill_child(&shared);
    shared.aof.sync_all();
}

/// A signal's shutdown: the snapshot saved first when save points are set, as Redis saves on SIGTERM;
/// false (and the server goes on) when that save fails.
fn shutdown_on_signal(shared: &Shared) -> bool {
    crate::snapshot::save::kill_child(shared);
    crate::aof::rewrite::kill_child(shared);
    shared.aof.sync_all();
    if shared.persistence.settings().save.is_empty() {
        return true;
    }
    let Some(_all) = shared.gate.exclusive_unless(|| shared.running.busy()) else {
        warn!("a script is busy: shutting down without saving");
        return true;
    };
    match crate::snapshot::save::save_now(shared) {
        Ok(()) => true,
        Err(_) => {
            warn!("errors trying to shut down the server: the snapshot could not be saved");
            false
        }
    }
}

pub fn run(opts: ServeOptions) -> io::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let threads = opts.threads;
    let (maxmemory, policy) = (opts.maxmemory, opts.maxmemory_policy);
    let protected = opts.protected_mode;
    let server = Server::start(opts)?;
    let addrs: Vec<String> = server.addrs().iter().map(|a| a.to_string()).collect();
    println!(
        "hopless-server {} (Redis {} protocol, RESP2/RESP3), allocator: hopless{}",
        crate::version::VERSION,
        crate::version::REDIS_VERSION,
        if cfg!(feature = "stats") {
            " (with stats)"
        } else {
            ""
        }
    );
    println!(
        "listening on {} (port {}), {} threads, maxmemory {} ({}), protected mode {}, pid {}",
        addrs.join(" "),
        server.addr().port(),
        threads,
        if maxmemory == 0 {
            "none".to_string()
        } else {
            human(maxmemory)
        },
        policy_name(policy),
        yes_no(protected),
        std::process::id()
    );
    let snap = server.shared.persistence.settings();
    if snap.save.is_empty() {
        println!(
            "snapshots: no save points (SAVE and BGSAVE write {})",
            snap.path().display()
        );
    } else {
        println!(
            "snapshots: {} when {} (seconds changes)",
            snap.path().display(),
            crate::snapshot::state::format_save(&snap.save)
        );
    }
    info!(addr = %addrs.join(" "), threads, "ready to accept connections");
    let stop = server.stopper();
    let mut done = server.shared.shutdown.subscribe();
    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let shared = server.shared.clone();
    signals.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => info!("SIGINT: shutting down"),
                _ = term.recv() => info!("SIGTERM: shutting down"),
                _ = crate::state::stopped(&mut done) => {
                    info!("SHUTDOWN: shutting down");
                    break;
                }
            }
            if shutdown_on_signal(&shared) {
                break;
            }
        }
        io::Result::Ok(())
    })?;
    stop();
    server.wait()
}
