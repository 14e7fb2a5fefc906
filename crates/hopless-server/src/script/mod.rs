//! Lua scripting as Redis 7.0 runs it: one Lua 5.1 state for the server (`sandbox`), the scripts it
//! has seen by their SHA1 (EVAL caches what it compiles; SCRIPT LOAD compiles without running), and
//! [`Scripts::run`], which runs one with its KEYS and ARGV, lets it call commands through a [`Host`]
//! the caller provides, and writes its reply.
//!
//! | file | what it holds |
//! |---|---|
//! | `sandbox.rs` | the Lua state: libraries, the `redis` table, `math.random`, read-only globals |
//! | `prelude.lua` | the sandbox's Lua side: the error handler, the `redis` functions' checks, read-only proxies |
//! | `functions.rs` | FUNCTION's libraries: loading with `redis.register_function`, FCALL, list, dump and restore |
//! | `dump.rs` | FUNCTION DUMP's payload: RDB strings, LZF, CRC64 |
//! | `cjson.rs` | the `cjson` library |
//! | `cmsgpack.rs` | the `cmsgpack` library |
//! | `bit.rs` | the `bit` library |
//! | `cfunc.rs` | library functions that raise as Redis's C functions do (error tables, or messages with the script's position) |
//! | `running.rs` | the script running now as other loops see it: busy, wrote, killed |
//! | `convert.rs` | replies into Lua values, Lua values into replies, Lua arguments into commands', `%g` |
//!
//! The server runs a script with every event loop's gate held (as EXEC runs a transaction), so no
//! other command runs while it does; the state sits behind a mutex only so it can live in the shared
//! state.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value};

use crate::codec::{Frame, Reply};

mod bit;
mod cfunc;
mod cjson;
mod cmsgpack;
mod convert;
mod dump;
mod functions;
mod running;
mod sandbox;

pub use functions::Functions;
pub use running::{Kill, Running};
pub use sandbox::sha1_hex;
use sandbox::{RunState, HANDLER, HOST};

/// Lua's own memory at most, per state (a script that allocates without bound gets an error).
const MEMORY_LIMIT: usize = 1 << 30;

/// Why a command did not run for a script: Redis's texts, each becoming an error for the script.
pub enum Refusal {
    /// Redis's text of the refusal (without a code: `ERR` is put before it).
    Text(&'static str),
    /// An error reply of the server's (`-OOM ...`), code included.
    Reply(String),
}

/// What runs commands for a script: the server's dispatcher, with the checks Redis makes of a command
/// called from a script.
pub trait Host {
    /// Runs `args` (a command and its arguments); its reply in RESP2 or, for `resp3`, RESP3.
    fn call(&mut self, args: &[Bytes], resp3: bool) -> Result<Vec<u8>, Refusal>;
}

/// How a script's body is given: its text (EVAL) or its SHA1 (EVALSHA).
pub enum Body<'a> {
    Text(&'a [u8]),
    Sha(&'a [u8]),
}

/// A script that did not run.
#[derive(Debug, PartialEq, Eq)]
pub enum RunError {
    /// EVALSHA of a SHA1 never loaded (or flushed since).
    NoScript,
    /// It does not compile: Redis's message.
    Compile(String),
    /// Its shebang line is wrong: Redis's whole error text.
    Shebang(String),
}

/// What a script's shebang line (`#!lua flags=no-writes,allow-oom`) declares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// It has a shebang line: Redis then checks memory before it starts rather than at its writes.
    pub declared: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
}

pub struct Scripts {
    lua: Lua,
    running: Arc<Running>,
    /// Compiled scripts by SHA1, with their shebang's flags.
    cache: HashMap<String, (RegistryKey, Flags)>,
}

impl Scripts {
    /// The scripts of a server whose running script others see through `running`.
    pub fn new(running: Arc<Running>) -> Self {
        Scripts {
            lua: sandbox::new_state(MEMORY_LIMIT, running.clone()).expect("the Lua sandbox builds"),
            running,
            cache: HashMap::new(),
        }
    }

    /// SCRIPT FLUSH: forgets every script, in a fresh state (as Redis resets its Lua VM).
    pub fn flush(&mut self) {
        *self = Scripts::new(self.running.clone());
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha).is_ok_and(|s| self.cache.contains_key(&s.to_ascii_lowercase()))
    }

    /// Scripts cached.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Lua's memory in bytes (INFO's `used_memory_lua`).
    pub fn memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Compiles `body` and caches it under its SHA1 (SCRIPT LOAD, and EVAL of a new script): the SHA1.
    pub fn load(&mut self, body: &[u8]) -> Result<String, RunError> {
        let sha = sha1_hex(body);
        if self.cache.contains_key(&sha) {
            return Ok(sha);
        }
        let flags = shebang_flags(body).map_err(RunError::Shebang)?;
        let f = self
            .lua
            .load(without_shebang(body))
            .set_name("@user_script")
            .into_function()
            .map_err(|e| RunError::Compile(compile_message(&e)))?;
        let key = self
            .lua
            .create_registry_value(f)
            .map_err(|e| RunError::Compile(e.to_string()))?;
        self.cache.insert(sha.clone(), (key, flags));
        Ok(sha)
    }

    /// The script `body` names (compiled and cached first when it is a text): its SHA1 and flags.
    pub fn prepare(&mut self, body: Body<'_>) -> Result<(String, Flags), RunError> {
        let sha = match body {
            Body::Text(text) => self.load(text)?,
            Body::Sha(sha) => std::str::from_utf8(sha)
                .map_err(|_| RunError::NoScript)?
                .to_ascii_lowercase(),
        };
        let flags = self.cache.get(&sha).ok_or(RunError::NoScript)?.1;
        Ok((sha, flags))
    }

    /// Runs the script `sha` ([`Scripts::prepare`]) with `keys` and `args`, its commands through `host`,
    /// and writes its reply (or its error, as Redis words it) to `out`.
    pub fn run(
        &mut self,
        sha: &str,
        keys: &[Bytes],
        args: &[Bytes],
        host: &mut dyn Host,
        out: &mut Reply,
    ) -> Result<(), RunError> {
        let lua = &self.lua;
        let f: Function = match self.cache.get(sha).map(|(k, _)| lua.registry_value(k)) {
            Some(Ok(f)) => f,
            _ => return Err(RunError::NoScript),
        };
        self.running.start(false);
        let outcome = run_function(lua, &f, keys, args, host);
        self.running.stop();
        match outcome {
            Ok(Ok(v)) => {
                let resp3 = lua.app_data_ref::<RunState>().is_some_and(|r| r.resp3);
                if let Err(e) = convert::lua_to_reply(out, &v, resp3) {
                    out.error(&format!("ERR {e}"));
                }
            }
            Ok(Err(err)) => write_script_error(out, &err, sha),
            Err(e) => out.error(&format!("ERR Error running script {sha}, {e}")),
        }
        if let Some(mut run) = lua.app_data_mut::<RunState>() {
            *run = RunState::default();
        }
        Ok(())
    }
}

/// Runs `f` under the error handler with KEYS and ARGV set and `host` reachable from `redis.call`:
/// the value it returned, or the error table (or value) it raised.
fn run_function(
    lua: &Lua,
    f: &Function,
    keys: &[Bytes],
    args: &[Bytes],
    host: &mut dyn Host,
) -> mlua::Result<Result<Value, Value>> {
    let globals = real_globals(lua)?;
    globals.raw_set("KEYS", string_array(lua, keys)?)?;
    globals.raw_set("ARGV", string_array(lua, args)?)?;
    let handler: Function = lua.named_registry_value(HANDLER)?;
    run_with_host(lua, host, |lua| {
        let xpcall: Function = lua.named_registry_value("hopless.xpcall")?;
        let r: MultiValue = xpcall.call((f.clone(), handler))?;
        let mut r = r.into_iter();
        let ok = matches!(r.next(), Some(Value::Boolean(true)));
        let v = r.next().unwrap_or(Value::Nil);
        Ok(if ok { Ok(v) } else { Err(v) })
    })
}

/// Runs `run` (a script or a function, under the error handler) with `host` reachable from
/// `redis.call` and the run's settings (`redis.setresp`) fresh.
fn run_with_host<R>(
    lua: &Lua,
    host: &mut dyn Host,
    run: impl FnOnce(&Lua) -> mlua::Result<R>,
) -> mlua::Result<R> {
    if let Some(mut state) = lua.app_data_mut::<RunState>() {
        *state = RunState::default();
    }
    let result = lua.scope(|scope| {
        let call = scope.create_function_mut(|lua, argv: MultiValue| host_call(lua, host, argv))?;
        lua.set_named_registry_value(HOST, call)?;
        run(lua)
    });
    lua.set_named_registry_value(HOST, Value::Nil)?;
    result
}

/// The table behind the scripts' read-only globals (where the libraries and KEYS/ARGV live).
fn real_globals(lua: &Lua) -> mlua::Result<Table> {
    lua.named_registry_value::<Table>(sandbox::REAL_GLOBALS)
}

/// A Lua array of byte strings (KEYS, ARGV, a function's two tables).
fn string_array(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, b) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(b)?)?;
    }
    Ok(t)
}

/// `redis.call`'s Rust side: the arguments checked, the command run through `host`, its reply as a Lua
/// value, and whether it is an error (the Lua side raises it for `redis.call`).
fn host_call(lua: &Lua, host: &mut dyn Host, argv: MultiValue) -> mlua::Result<(Value, bool)> {
    let argv: Vec<Value> = argv.into_iter().collect();
    let fail = |text: &str| -> mlua::Result<(Value, bool)> {
        Ok((Value::Table(convert::error_table(lua, text, false)?), true))
    };
    let args = match convert::lua_to_args(&argv) {
        Ok(a) => a,
        Err(convert::ArgsError::None) => {
            return fail("Please specify at least one argument for this redis lib call")
        }
        Err(convert::ArgsError::NotStrings) => {
            return fail("Lua redis lib command arguments must be strings or integers")
        }
    };
    let resp3 = lua.app_data_ref::<RunState>().is_some_and(|r| r.resp3);
    match host.call(&args, resp3) {
        Ok(reply) => {
            let frame = match Frame::parse(&reply) {
                Ok((f, _)) => f,
                Err(_) => Frame::Null,
            };
            let failed = matches!(frame, Frame::Error(_));
            Ok((convert::frame_to_lua(lua, frame, resp3)?, failed))
        }
        Err(Refusal::Text(t)) => {
            let t = convert::error_table(lua, t, true)?;
            Ok((Value::Table(t), true))
        }
        Err(Refusal::Reply(r)) => {
            let mut text = Vec::with_capacity(r.len() + 1);
            text.push(b'-');
            text.extend_from_slice(r.as_bytes());
            Ok((Value::Table(convert::error_table_bytes(lua, &text, true)?), true))
        }
    }
}

/// A script's error as Redis 7.0 replies it: the error table's message, then where it was raised
/// (`script: <sha>, on @user_script:<line>.`) when the handler found a Lua frame.
fn write_script_error(out: &mut Reply, err: &Value, name: &str) {
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "execution failure".to_string(),
        };
        let msg: String = msg.chars().take(100).collect();
        out.error(&format!("ERR Error running script {name}, {msg}"));
        return;
    };
    let text = |k: &str| -> Option<String> {
        match t.raw_get::<Value>(k).ok()? {
            Value::String(s) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
            Value::Number(n) => Some(format!("{}", n as i64)),
            Value::Integer(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let ignore = matches!(
        t.raw_get::<Value>("ignore_error_stats_update"),
        Ok(Value::Boolean(true))
    );
    let mut msg = text("err").unwrap_or_default();
    if let (Some(source), Some(line)) = (text("source"), text("line")) {
        msg.push_str(&format!(" script: {name}, on {source}:{line}."));
    }
    convert::write_error(out, msg.as_bytes(), ignore);
}

/// A script's body without its `#!` line (Redis 7.0's shebang: `#!lua flags=...`), its newline kept so
/// that line numbers stay.
fn without_shebang(body: &[u8]) -> &[u8] {
    if body.starts_with(b"#!") {
        let nl = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
        &body[nl..]
    } else {
        body
    }
}

/// The flags of a script's shebang line (`#!lua flags=no-writes,allow-oom`): none declared without
/// one; Redis's error for another engine, an unknown option or an unknown flag.
fn shebang_flags(body: &[u8]) -> Result<Flags, String> {
    if !body.starts_with(b"#!") {
        return Ok(Flags::default());
    }
    let Some(nl) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..nl]).into_owned();
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    let engine = words.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = Flags {
        declared: true,
        ..Flags::default()
    };
    for w in words {
        let Some(list) = w.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {w}"));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            match f {
                "no-writes" => flags.no_writes = true,
                "allow-oom" => flags.allow_oom = true,
                "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    Ok(flags)
}

/// The message of a compile error, as Redis words it.
fn compile_message(e: &mlua::Error) -> String {
    let msg = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    format!("Error compiling script (new function): {}", msg.trim_end())
}
