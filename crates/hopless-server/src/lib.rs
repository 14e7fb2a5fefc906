//! # hopless-server
//!
//! The store ([`hopless_kv::Store`]) as a Redis-protocol server: RESP2, RESP3 after `HELLO 3`, inline
//! commands, pipelining, Redis 7's replies and error strings for the string and keyspace commands and
//! the administration commands that `redis-cli`, `redis-benchmark`, client libraries and twemproxy use.
//! It is a cache: nothing is persisted.
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
//! | module | what it holds |
//! |---|---|
//! | [`codec`] | RESP without I/O: the request [`Decoder`](codec::Decoder), the [`Reply`](codec::Reply) writer, [`Frame`](codec::Frame) |
//! | `cmd` | the command table and dispatch (`mod.rs`), then one file per family: `string.rs`, `keys.rs`, `connection.rs`, `server.rs` (INFO, CONFIG, COMMAND, MEMORY, OBJECT, SHUTDOWN, DEBUG) |
//! | `conn` | one client connection: read, decode, execute, write; limits and timeouts |
//! | `server` | listeners, [`Server`] (start in-process, address, shutdown), [`run`] |
//! | `state` | what connections share: store, settings, client registry, counters |
//! | [`args`] | [`ServeArgs`], the command line (`#[command(flatten)]` it into another CLI) |
//! | `util` | memory sizes (`100mb`), case-insensitive compares |
//!
//! The connection loop runs on tokio: `--threads` single-threaded event loops, each on its own thread,
//! with every connection pinned to one (`server`). The store is synchronous and its operations take a
//! shard lock for microseconds, so each command runs inline on the loop that read it, and a pipeline's
//! replies go out in one write.

pub mod args;
mod cmd;
pub mod codec;
mod conn;
mod server;
mod state;
mod util;

pub use args::ServeArgs;
pub use server::{run, ServeOptions, Server};

/// The Redis version the replies follow (INFO's `redis_version`, HELLO's `version`): clients gate
/// features on it.
pub const REDIS_VERSION: &str = "7.0.0";
/// This server's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
