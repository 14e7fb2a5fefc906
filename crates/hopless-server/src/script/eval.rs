//! EVAL's scripts: compiled once and cached by the SHA1 of their body (EVAL caches what it compiles;
//! SCRIPT LOAD compiles without running), with what their shebang line declares, and run with KEYS
//! and ARGV as globals.

use hashbrown::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use mlua::{ffi, Function, Lua, MultiValue, RegistryKey, Table, Value};

use super::convert;
use super::host::{run_with_host, set_array, write_script_error, Host};
use super::running::Running;
use super::sandbox::{self, sha1_hex, RunState, HANDLER};
use crate::codec::Reply;

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
    parts: Parts,
    running: Arc<Running>,
    /// Compiled scripts by SHA1, with their shebang's flags.
    cache: HashMap<String, (RegistryKey, Flags)>,
}

impl Scripts {
    /// The scripts of a server whose running script others see through `running`.
    pub fn new(running: Arc<Running>) -> Self {
        let lua = sandbox::new_state(running.clone()).expect("the Lua sandbox builds");
        let parts = Parts::of(&lua).expect("the sandbox's parts are in its registry");
        Scripts {
            lua,
            parts,
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
        let outcome = run_function(lua, &self.parts, &f, keys, args, host);
        self.running.stop();
        match outcome {
            Ok(Ok(v)) => {
                let resp3 = lua.app_data_ref::<RunState>().is_some_and(|r| r.resp3);
                if let Err(e) = convert::lua_to_reply(out, &v, resp3, &self.parts.next) {
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
    parts: &Parts,
    f: &Function,
    keys: &[Bytes],
    args: &[Bytes],
    host: &mut dyn Host,
) -> mlua::Result<Result<Value, Value>> {
    run_with_host(lua, host, |lua| {
        let call = (&parts.globals, &parts.xpcall, f, &parts.handler);
        // SAFETY: `exec_raw` runs the closure under a protected call, with its four values on the
        // stack (the globals at index 1) and room for three more checked: each array's name, table
        // and one string at a time (`set_array`); then `xpcall(f, handler)` (which catches the
        // script's errors) leaves its two results and the globals go from under them. The closure
        // holds only borrows, so an error raised through it skips nothing.
        let r: MultiValue = sandbox::limited(lua, || unsafe {
            lua.exec_raw(call, |state| {
                set_array(state, 1, c"KEYS", keys);
                set_array(state, 1, c"ARGV", args);
                ffi::lua_call(state, 2, 2);
                ffi::lua_remove(state, 1);
            })
        })?;
        let mut r = r.into_iter();
        let ok = matches!(r.next(), Some(Value::Boolean(true)));
        let v = r.next().unwrap_or(Value::Nil);
        Ok(if ok { Ok(v) } else { Err(v) })
    })
}

/// What every run uses of the state, looked up once: the table behind the read-only globals (where
/// KEYS and ARGV go), the error handler and Lua's own xpcall.
struct Parts {
    globals: Table,
    handler: Function,
    xpcall: Function,
    /// Lua's `next`, for writing a returned map or set.
    next: Function,
}

impl Parts {
    fn of(lua: &Lua) -> mlua::Result<Parts> {
        let globals: Table = lua.named_registry_value(sandbox::REAL_GLOBALS)?;
        Ok(Parts {
            next: globals.raw_get("next")?,
            globals,
            handler: lua.named_registry_value(HANDLER)?,
            xpcall: lua.named_registry_value("hopless.xpcall")?,
        })
    }
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
