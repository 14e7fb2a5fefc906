//! The command line of `hopless serve` (and of the `hopless-server` binary), as a clap [`Args`] struct
//! another CLI can `#[command(flatten)]`.
//!
//! [`Args`]: clap::Args

use hopless_kv::Policy;

use crate::aof::{AofSettings, Fsync};
use crate::server::ServeOptions;
use crate::snapshot::state::{parse_save, SavePoint, SnapshotSettings, DEFAULT_SAVE};
use crate::words::{parse_memory, parse_policy, parse_yes_no};

/// `hopless serve [--port 6379] [--bind 127.0.0.1] [--threads N] [--maxmemory B]
/// [--maxmemory-policy noeviction|allkeys-lru] [--requirepass P] [--protected-mode yes|no] ...`
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// TCP port (0: any free port).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,
    /// Addresses to listen on (several allowed: `--bind 127.0.0.1 ::1`).
    #[arg(long, num_args = 1.., default_value = "127.0.0.1")]
    pub bind: Vec<String>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Memory limit of the store, in bytes or with a unit (`100mb`, `1gb`); 0: none.
    #[arg(long, default_value = "0", value_parser = memory)]
    pub maxmemory: u64,
    /// What a write does at the limit: `noeviction` (refuse it) or `allkeys-lru` (evict).
    #[arg(long, default_value = "noeviction", value_parser = policy)]
    pub maxmemory_policy: Policy,
    /// Password clients must give with AUTH (or HELLO ... AUTH).
    #[arg(long)]
    pub requirepass: Option<String>,
    /// `yes`: refuse to listen on a non-loopback address without `--requirepass`.
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub protected_mode: bool,
    /// Most clients connected at once.
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,
    /// Close clients idle this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
    /// Longest bulk string a client may send.
    #[arg(long, default_value = "512mb", value_parser = memory)]
    pub proto_max_bulk_len: u64,
    /// A client whose unprocessed input grows past this is closed.
    #[arg(long, default_value = "1gb", value_parser = memory)]
    pub client_query_buffer_limit: u64,
    /// Where the snapshot file goes (and is loaded from at start).
    #[arg(long, default_value = ".")]
    pub dir: std::path::PathBuf,
    /// The snapshot file's name in `--dir`.
    #[arg(long, default_value = "dump.rdb")]
    pub dbfilename: String,
    /// Save points, pairs of seconds and changes (a background save once that many changes are that
    /// old); `""`: none. Redis's defaults.
    #[arg(long, default_value = DEFAULT_SAVE, value_parser = save_points)]
    pub save: SavePoints,
    /// LZF-compress long strings in snapshots and DUMP payloads.
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub rdbcompression: bool,
    /// End snapshots with their CRC64 (`no`: 0, not checked when loaded).
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub rdbchecksum: bool,
    /// Refuse writes after a failed background save (until one succeeds), when save points are set.
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub stop_writes_on_bgsave_error: bool,
    /// Keep an append-only file of every change (loaded at start instead of the snapshot).
    #[arg(long, default_value = "no", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub appendonly: bool,
    /// When the append-only file reaches the disk: `always` (before each reply), `everysec`, `no`.
    #[arg(long, default_value = "everysec", value_parser = fsync)]
    pub appendfsync: Fsync,
    /// The append-only file's directory, under `--dir`.
    #[arg(long, default_value = "appendonlydir", value_parser = base_name)]
    pub appenddirname: String,
    /// The prefix of the append-only file's names.
    #[arg(long, default_value = "appendonly.aof", value_parser = base_name)]
    pub appendfilename: String,
    /// Rewrites write the append-only file's base as a snapshot (`no`: as commands).
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub aof_use_rdb_preamble: bool,
    /// Load an append-only file whose last command was cut short (a crash mid-write), without it.
    #[arg(long, default_value = "yes", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub aof_load_truncated: bool,
    /// Rewrite the append-only file once it grows by this percentage of its size after the last
    /// rewrite (0: never on its own).
    #[arg(long, default_value_t = 100)]
    pub auto_aof_rewrite_percentage: u64,
    /// ... and is at least this big.
    #[arg(long, default_value = "64mb", value_parser = memory)]
    pub auto_aof_rewrite_min_size: u64,
    /// No fsync of the append-only file while a rewrite or save runs in the background.
    #[arg(long, default_value = "no", value_parser = yes_no, action = clap::ArgAction::Set)]
    pub no_appendfsync_on_rewrite: bool,
}

fn fsync(s: &str) -> Result<Fsync, String> {
    Fsync::parse(s).ok_or_else(|| format!("{s:?}: expected always, everysec or no"))
}

/// A file or directory name without a path, as Redis requires of `appendfilename` and `appenddirname`.
fn base_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains('/') || s == "." || s == ".." {
        return Err(format!("{s:?}: must be a name, not a path"));
    }
    Ok(s.to_string())
}

/// `--save`'s value, read.
#[derive(Debug, Clone)]
pub struct SavePoints(pub Vec<SavePoint>);

fn save_points(s: &str) -> Result<SavePoints, String> {
    parse_save(s).map(SavePoints)
}

fn memory(s: &str) -> Result<u64, String> {
    parse_memory(s).ok_or_else(|| format!("not a byte count: {s:?} (e.g. 1048576, 100mb, 1gb)"))
}

fn policy(s: &str) -> Result<Policy, String> {
    parse_policy(s).ok_or_else(|| format!("{s:?}: expected noeviction or allkeys-lru"))
}

fn yes_no(s: &str) -> Result<bool, String> {
    parse_yes_no(s).ok_or_else(|| format!("{s:?}: expected yes or no"))
}

impl From<ServeArgs> for ServeOptions {
    fn from(a: ServeArgs) -> Self {
        ServeOptions {
            bind: a.bind,
            port: a.port,
            threads: a.threads.unwrap_or_else(|| ServeOptions::default().threads),
            maxmemory: a.maxmemory,
            maxmemory_policy: a.maxmemory_policy,
            requirepass: a.requirepass,
            protected_mode: a.protected_mode,
            maxclients: a.maxclients,
            timeout: a.timeout,
            proto_max_bulk_len: a.proto_max_bulk_len.min(usize::MAX as u64) as usize,
            client_query_buffer_limit: a.client_query_buffer_limit.min(usize::MAX as u64) as usize,
            snapshot: SnapshotSettings {
                dir: a.dir,
                dbfilename: a.dbfilename,
                save: a.save.0,
                compression: a.rdbcompression,
                checksum: a.rdbchecksum,
                stop_writes_on_error: a.stop_writes_on_bgsave_error,
            },
            load_snapshot: true,
            aof: AofSettings {
                enabled: a.appendonly,
                fsync: a.appendfsync,
                dirname: a.appenddirname,
                filename: a.appendfilename,
                rdb_preamble: a.aof_use_rdb_preamble,
                load_truncated: a.aof_load_truncated,
                rewrite_percentage: a.auto_aof_rewrite_percentage,
                rewrite_min_size: a.auto_aof_rewrite_min_size,
                no_fsync_on_rewrite: a.no_appendfsync_on_rewrite,
            },
            ..ServeOptions::default()
        }
    }
}
