//! Lua scripting as Redis 7.0 runs it: EVAL's scripts, cached by their SHA1 ([`Scripts`]), and
//! FUNCTION's libraries ([`Functions`]), each in a sandboxed Lua 5.1 state of its own; a script's
//! commands go through a [`Host`] the caller provides, and its reply or error is written as Redis
//! writes it.
//!
//! Layers, top to bottom (a file imports only files below it):
//!
//! | file | what it holds |
//! |---|---|
//! | `eval.rs` | EVAL's scripts: the cache by SHA1, shebang flags, a run with KEYS and ARGV |
//! | `functions.rs` | FUNCTION's libraries: loading with `redis.register_function`, FCALL, list, dump and restore |
//! | `host.rs` | running code against the server: [`Host`], `redis.call`'s Rust side, script errors |
//! | `sandbox.rs` | a Lua state: libraries, the `redis` table, `math.random`, read-only globals |
//! | `prelude.lua` | the sandbox's Lua side: the error handler, the `redis` functions' checks, read-only proxies |
//! | `cjson.rs` | the `cjson` library |
//! | `cjson_config.rs` | `cjson`'s settings (depth limits, sparse arrays, invalid numbers, precision) |
//! | `cmsgpack.rs` | the `cmsgpack` library |
//! | `lua_struct.rs` | the `struct` library |
//! | `bit.rs` | the `bit` library |
//! | `cfunc.rs` | library functions that raise as Redis's C functions do (error tables, or messages with the script's position) |
//! | `reply_push.rs` | a command's reply pushed onto Lua's stack for `redis.call`, and Redis's error table |
//! | `running.rs` | the script running now as other loops see it: busy, wrote, killed |
//! | `strtod.rs` | numbers as C's `strtod` reads them |
//! | `convert.rs` | replies into Lua values, Lua values into replies, Lua arguments into commands', `%g` |
//! | `dump.rs` | FUNCTION DUMP's payload: RDB strings, LZF, CRC64 |
//!
//! The server runs a script with every event loop's gate held (as EXEC runs a transaction), so no
//! other command runs while it does; the states sit behind mutexes only so they can live in the
//! shared state.

mod bit;
mod cfunc;
mod cjson;
mod cjson_config;
mod cmsgpack;
mod convert;
mod dump;
mod eval;
mod functions;
mod host;
mod lua_struct;
mod reply_push;
mod running;
mod sandbox;
mod strtod;

pub use eval::{Body, RunError, Scripts};
pub use functions::Functions;
pub use host::{Host, Refusal};
pub use running::{FunctionCall, Kill, Running};
