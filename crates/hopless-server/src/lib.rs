//! # hopless-server
//!
//! The store ([`hopless_kv::Store`]) as a Redis-protocol server: RESP2, RESP3 after `HELLO 3`, inline
//! commands, pipelining, Redis 7's replies and error strings for the string and keyspace commands and
//! the administration commands that `redis-cli`, `redis-benchmark`, client libraries and twemproxy use.
//! The dataset is saved and loaded as Redis's RDB snapshots (SAVE, BGSAVE, save points, DUMP and
//! RESTORE). Lua scripts and functions run as in Redis 7.0.
//!
//! ```no_run
//! let server = hopless_server::Server::start(hopless_server::ServeOptions {
//!     port: 0, // a free port
//!     ..Default::default()
//! })
//! .unwrap();
//! println!("listening on {}", server.addr());
//! server.shutdown().unwrap();
//! ```
//!
//! [`run`] is `hopless serve`: the same plus a start-up banner, logs, and SIGINT/SIGTERM handling.
//!
//! # Layout
//!
//! Layers, top to bottom: a module imports only modules listed below it (`scripts/check/layers.py`
//! checks this).
//!
//! | module | what it holds |
//! |---|---|
//! | `args` | [`ServeArgs`], the command line (`#[command(flatten)]` it into another CLI) |
//! | `server` | listeners, [`Server`] (start in-process, address, shutdown), [`run`] |
//! | `conn` | one client connection: read, decode, execute, write; limits and timeouts |
//! | `cmd` | the command table put together from the families' tables, and dispatch (`cmd/mod.rs`) |
//! | `cmd::connection` | PING ECHO SELECT QUIT RESET HELLO AUTH |
//! | `cmd::transaction` | MULTI EXEC DISCARD WATCH UNWATCH |
//! | `cmd::client` | CLIENT, and the CLIENT LIST line |
//! | `cmd::client_tracking` | CLIENT TRACKING CACHING GETREDIR TRACKINGINFO |
//! | `cmd::blocking` | BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP |
//! | `cmd::string` | the string commands (GET, SET, INCR, MSET, LCS...) |
//! | `cmd::keys` | the keyspace commands (DEL, EXPIRE, TTL, TOUCH, SCAN, RENAME, COPY, FLUSHDB...) |
//! | `cmd::hash` | the hash commands (HSET, HGET, HINCRBY, HRANDFIELD, HSCAN...) |
//! | `cmd::list` | the list commands (LPUSH, RPOP, LRANGE, LINSERT, LMOVE, LMPOP...) |
//! | `cmd::set` | the set commands (SADD, SPOP, SINTER, SUNIONSTORE, SSCAN...) |
//! | `cmd::zset` | the sorted-set commands (ZADD, ZRANGE, ZRANK, ZUNIONSTORE, ZSCAN...) |
//! | `cmd::sort` | SORT SORT_RO |
//! | `cmd::notify` | a command's keyspace events, from its arguments, its reply and its keys before and after |
//! | `cmd::track` | client-side caching's part in a command: reads remembered, writes and flushes invalidated |
//! | `cmd::geo` | the geo commands (GEOADD, GEODIST, GEOHASH, GEOPOS; the searches' table rows) |
//! | `cmd::geo_search` | the geo searches (GEORADIUS and kin, GEOSEARCH, GEOSEARCHSTORE): their arguments, run and reply |
//! | `cmd::bit` | the bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) |
//! | `cmd::hll` | the HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST) |
//! | `cmd::function` | FUNCTION FCALL FCALL_RO |
//! | `cmd::scripting` | EVAL EVALSHA EVAL_RO EVALSHA_RO and SCRIPT, and what a script's commands are checked and run by |
//! | `cmd::scan_args` | what SCAN, HSCAN, SSCAN and ZSCAN share: cursor, MATCH, COUNT (and TYPE), the reply |
//! | `cmd::info` | INFO |
//! | `cmd::config` | CONFIG |
//! | `cmd::introspection` | COMMAND (COUNT, LIST, INFO, DOCS, GETKEYS, GETKEYSANDFLAGS) |
//! | `cmd::key_args` | which arguments of a request are keys and how each is used, as Redis's key specs say (COMMAND GETKEYS) |
//! | `cmd::memory` | MEMORY |
//! | `cmd::monitor` | MONITOR |
//! | `cmd::slowlog` | SLOWLOG (GET, LEN, RESET, HELP) |
//! | `cmd::admin` | DEBUG (OBJECT through `cmd::object`, RELOAD through `cmd::persist`), TIME |
//! | `cmd::migrate` | MIGRATE: keys moved to another server as RESTOREs |
//! | `cmd::persist` | SAVE BGSAVE LASTSAVE SHUTDOWN, SYNC PSYNC REPLCONF, DUMP RESTORE |
//! | `cmd::object` | OBJECT, and a value's encoding and refcount as DEBUG OBJECT reads them |
//! | `cmd::pubsub` | SUBSCRIBE, PSUBSCRIBE, PUBLISH, PUBSUB...; what RESP2's subscribed mode allows |
//! | `cmd::command` | what a command is: a table row (`Command`), the table, a handler's context |
//! | `cmd::specs` | what Redis 7.0.15 says of each command served, generated from its `src/commands/*.json` (`scripts/gen/command_specs.py`) |
//! | `cmd::spec` | the types of those specs: flags, ACL categories, key specs, key-finding procedures, docs, arguments |
//! | `aof::load` | the append-only set loaded at start and by DEBUG LOADAOF: manifest, base, increments, a cut tail |
//! | `aof::rewrite` | the append-only file's life: opened at start, turned on and off, BGREWRITEAOF's child and its end |
//! | `aof::base` | a base of commands (`aof-use-rdb-preamble no`): FUNCTION LOAD, then a RESTORE a key |
//! | `aof::propagate` | what a command that changed the dataset records: relative times made absolute, results recorded |
//! | `snapshot` | the snapshot's parts: declares them |
//! | `snapshot::save` | SAVE, BGSAVE's forked child, the save timer, the load at start, DEBUG RELOAD |
//! | `footprint` | the memory INFO and MEMORY report: bytes in use, peak, RSS |
//! | `state` | what connections share (store, settings, client registry, counters) and each one's own |
//! | `snapshot::state` | the snapshot's settings (dir, dbfilename, save points...) and what INFO persistence reports |
//! | `snapshot::write` | a snapshot file as Redis 7.0 writes `dump.rdb`, through a temporary file renamed over the target |
//! | `snapshot::load` | a snapshot file loaded as Redis 7.0 loads one: every RDB version, checksum first |
//! | `blocked` | clients blocked on keys: first come first served, served by the write that makes a key ready |
//! | `watch` | WATCH: who watches which key, marked by writes |
//! | `monitor` | MONITOR: the connections that see every command, and the line each is sent |
//! | `slowlog` | the slow log: entries, its two settings, arguments cut as Redis cuts them |
//! | `loop_stats` | the request path's counters: a row per loop, written by its loop alone |
//! | `aof` | the append-only file: settings, the buffer, the open increment, fsync, the store's hooks |
//! | `aof::files` | the set on disk: increments opened, the manifest replaced safely, history removed |
//! | `aof::manifest` | the manifest's lines and the set's file names |
//! | `aof::stage` | a command's records, gathered on its thread until it commits them |
//! | `exec_gate` | the gate that lets EXEC run alone: each loop's, shared per batch of commands, all taken by EXEC |
//! | `tracking` | client-side caching: keys → the clients that may cache them, BCAST prefixes, invalidation pushes |
//! | `keyspace_events` | `notify-keyspace-events`: the classes on, publishing an event, keys the store expires or evicts |
//! | `pubsub` | pub/sub's registry: channels and patterns → subscribers; a connection's subscriptions |
//! | `pubsub::outbox` | a subscriber's queue of unwritten messages, counted against its output limit |
//! | `pubsub::limit` | `client-output-buffer-limit`: the classes' limits, CONFIG's text for them |
//! | `script` | Lua scripting: the sandboxed Lua 5.1 states, EVAL's cache, FUNCTION's libraries, Redis's conversions |
//! | `redact` | passwords in a command's arguments, hidden as Redis hides them from MONITOR and SLOWLOG |
//! | `errors` | Redis's error replies, each text built once |
//! | `words` | how Redis spells values: keywords, byte counts (`100mb`), policy names, yes/no |
//! | `codec` | RESP without I/O: the request [`Decoder`](codec::Decoder), the reply writer, [`Frame`](codec::Frame) |
//! | `error_stats` | INFO's error counts (errorstats, total_error_replies), counted where the reply writer writes an error |
//! | `version` | the server's constants: [`REDIS_VERSION`], the Redis version the replies follow, and [`VERSION`] |
//!
//! The connection loop runs on tokio: `--threads` single-threaded event loops, each on its own thread,
//! with every connection pinned to one (`server`). The store is synchronous and its operations take a
//! shard lock for microseconds, so each command runs inline on the loop that read it, and a pipeline's
//! replies go out in one write.

mod aof;
pub mod args;
mod blocked;
mod cmd;
pub mod codec;
mod conn;
mod error_stats;
mod errors;
mod exec_gate;
mod footprint;
mod keyspace_events;
mod loop_stats;
mod monitor;
mod pubsub;
mod redact;
mod script;
mod server;
mod slowlog;
mod snapshot;
mod state;
mod tracking;
mod version;
mod watch;
mod words;

pub use aof::{AofSettings, Fsync};
pub use args::ServeArgs;
pub use server::{run, ServeOptions, Server};
pub use snapshot::state::{parse_save, SavePoint, SnapshotSettings};
pub use version::{REDIS_VERSION, VERSION};
