//! A Lua 5.1 state as Redis 7.0 sets one up for scripts: the base, table, string and math libraries
//! (no io, os, package, or file loading; `print` and `debug` removed), `bit`, `cjson`, `cmsgpack`
//! and `struct`, Redis's
//! `math.random` (the same sequence on every machine), the `redis` table, and globals and library tables
//! that scripts can read but not change (`prelude.lua`). Scripts run under the error handler the prelude
//! returns, which turns every error into Redis's `{err=..., source=..., line=...}` table.

use std::sync::Arc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};

use super::cfunc::{self, CurrentCall};
use super::running::Running;

use super::{bit, cjson, cmsgpack, lua_struct};
use crate::codec::Frame;
use crate::version::REDIS_VERSION;

/// The registry name of the function that registers a library's function (set while FUNCTION LOAD
/// runs the library's code: `functions.rs`).
pub(super) const REGISTER: &str = "hopless.register";
/// The registry name of the prelude's switch between the whole API and FUNCTION LOAD's.
pub(super) const SET_API: &str = "hopless.set_api";
/// The registry name of the prelude's runner of a library's function with its KEYS and ARGV.
pub(super) const RUN_WITH: &str = "hopless.run_with";
/// The registry name of the error handler.
pub(super) const HANDLER: &str = "hopless.handler";
/// The registry name of the converter of a command's reply (bytes, and whether RESP3) into the Lua
/// value `redis.call` gives and whether it is an error: what `redis.call`'s direct path leaves to it.
pub(super) const REPLY_TO_LUA: &std::ffi::CStr = c"hopless.reply_to_lua";
/// The registry name of the table behind the scripts' read-only globals.
pub(super) const REAL_GLOBALS: &str = "hopless.globals";

/// The lower-case hex SHA1 of `body`: the name Redis gives a script, and `redis.sha1hex`.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// What a running script has set: the protocol its `redis.call` replies are read in.
#[derive(Default)]
pub(super) struct RunState {
    pub resp3: bool,
}

/// `redisLrand48`'s generator (the POSIX `lrand48` recurrence), so that `math.random` gives Redis's
/// sequence.
pub(super) struct Rand48(u64);

impl Rand48 {
    const A: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    /// The state before any seed: `redisLrand48`'s initial `x`.
    const INITIAL: Rand48 = Rand48(0x1234_abcd_330e);

    fn seeded(seed: i32) -> Self {
        Rand48(((u64::from(seed as u32) << 16) | 0x330e) & Self::MASK)
    }

    /// The next value in `0..2^31`.
    fn next(&mut self) -> i64 {
        self.0 = (self.0.wrapping_mul(Self::A).wrapping_add(0xb)) & Self::MASK;
        (self.0 >> 17) as i64
    }
}

const RAND_MAX: i64 = i32::MAX as i64;

/// Lua's own memory at most, per state, while Lua code runs (a script that allocates without bound gets
/// an error). Only then: mlua runs every API call under a protected call (a C closure allocated each
/// time) while a limit is set, which would double the cost of a short script's setup and conversions.
const MEMORY_LIMIT: usize = 1 << 30;

/// Runs `f` (a script's or a library's Lua code) with Lua's memory limited to [`MEMORY_LIMIT`].
pub(super) fn limited<R>(lua: &Lua, f: impl FnOnce() -> mlua::Result<R>) -> mlua::Result<R> {
    lua.set_memory_limit(MEMORY_LIMIT)?;
    let r = f();
    lua.set_memory_limit(0)?;
    r
}

/// Instructions between two checks for SCRIPT KILL (a hook call costs about as much as a few
/// instructions: a fraction of a percent).
const KILL_CHECK_EVERY: u32 = 10_000;

/// Redis's `LL_DEBUG` .. `LL_WARNING`.
const LOG_LEVELS: [(&str, i64); 4] = [
    ("LOG_DEBUG", 0),
    ("LOG_VERBOSE", 1),
    ("LOG_NOTICE", 2),
    ("LOG_WARNING", 3),
];

/// A fresh state; SCRIPT KILL reaches its scripts through `running`.
pub(super) fn new_state(running: Arc<Running>) -> mlua::Result<Lua> {
    // SAFETY: the debug library is loaded only to build the error handler, which keeps a private
    // reference to `debug.getinfo`; the prelude removes it from the globals before any script runs.
    let lua = unsafe {
        Lua::unsafe_new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
            LuaOptions::new(),
        )
    };
    lua.set_app_data(RunState::default());
    lua.set_app_data(Rand48::INITIAL);
    let g = lua.globals();
    for name in ["dofile", "loadfile", "print", "module", "require"] {
        g.raw_set(name, Value::Nil)?;
    }
    g.raw_set("bit", bit::library(&lua)?)?;
    g.raw_set("cjson", cjson::library(&lua)?)?;
    g.raw_set("cmsgpack", cmsgpack::library(&lua)?)?;
    g.raw_set("struct", lua_struct::library(&lua)?)?;
    install_math_random(&lua, &g)?;
    g.raw_set("redis", redis_table(&lua)?)?;

    let debug: Table = g.raw_get("debug")?;
    g.raw_set("debug", Value::Nil)?;
    lua.set_app_data(CurrentCall(None));
    let reply_to_lua = lua.create_function(|lua, (reply, resp3): (mlua::String, bool)| {
        let frame = match Frame::parse(&reply.as_bytes()) {
            Ok((f, _)) => f,
            Err(_) => Frame::Null,
        };
        let failed = matches!(frame, Frame::Error(_));
        Ok((super::convert::frame_to_lua(lua, frame, resp3)?, failed))
    })?;
    lua.set_named_registry_value("hopless.reply_to_lua", reply_to_lua)?;
    let raising = cfunc::redis_functions(&lua)?;
    let set_resp = lua.create_function(|lua, resp: i64| {
        if let Some(mut run) = lua.app_data_mut::<RunState>() {
            run.resp3 = resp == 3;
        }
        Ok(())
    })?;
    let sha1hex = lua.create_function(|_, s: mlua::String| Ok(sha1_hex(&s.as_bytes())))?;
    let log = lua.create_function(|_, (level, msg): (i64, mlua::String)| {
        let msg = String::from_utf8_lossy(&msg.as_bytes()).into_owned();
        match level {
            3 => tracing::warn!(target: "script", "{msg}"),
            2 => tracing::info!(target: "script", "{msg}"),
            _ => tracing::debug!(target: "script", "{msg}"),
        }
        Ok(())
    })?;
    let set_repl = lua.create_function(|_, _flags: i64| Ok(()))?;
    let killed = {
        let running = running.clone();
        lua.create_function(move |_, ()| Ok(running.killed()))?
    };
    // Every so many instructions a script checks whether SCRIPT KILL asked it to stop, and lets its
    // event loop go once it is busy.
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(KILL_CHECK_EVERY),
        move |_, _| match running.check() {
            Some(error) => Err(mlua::Error::runtime(error)),
            None => Ok(VmState::Continue),
        },
    )?;
    let prelude = lua
        .load(include_str!("prelude.lua"))
        .set_name("=[hopless prelude]")
        .into_function()?;
    // `redis.register_function`'s Rust side: the registering function of the FUNCTION LOAD running.
    let register =
        lua.create_function(
            |lua, args: MultiValue| match lua.named_registry_value::<Value>(REGISTER)? {
                Value::Function(f) => f.call::<MultiValue>(args),
                _ => {
                    let msg = "redis.register_function can only be called on FUNCTION LOAD command";
                    let t = super::convert::error_table(lua, msg, false)?;
                    Ok(MultiValue::from_vec(vec![Value::Table(t), Value::Boolean(true)]))
                }
            },
        )?;
    lua.set_named_registry_value("hopless.register_function", register)?;
    let (handler, globals, set_api, run_with): (Function, Table, Function, Function) = prelude.call((
        g.clone(),
        debug,
        raising,
        set_resp,
        sha1hex,
        log,
        set_repl,
        killed,
    ))?;
    lua.set_named_registry_value(HANDLER, handler)?;
    lua.set_named_registry_value(SET_API, set_api)?;
    lua.set_named_registry_value(RUN_WITH, run_with)?;
    lua.set_named_registry_value(REAL_GLOBALS, g)?;
    lua.set_globals(globals)?;
    // What building the state left behind (the prelude's source and compile) goes now, so that a
    // fresh state reports its live size.
    lua.gc_collect()?;
    Ok(lua)
}

/// The `redis` table's constants and the functions that return values rather than raise
/// (`error_reply`, `status_reply`); the prelude adds the rest.
fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("REDIS_VERSION", REDIS_VERSION)?;
    t.raw_set("REDIS_VERSION_NUM", version_num(REDIS_VERSION))?;
    for (name, level) in LOG_LEVELS {
        t.raw_set(name, level)?;
    }
    for (name, flags) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        t.raw_set(name, flags)?;
    }
    t.raw_set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| {
            let table = match single_string(&args) {
                Some(s) if s.first() == Some(&b'-') => super::convert::error_table_bytes(lua, &s, false)?,
                Some(s) => {
                    let mut dashed = Vec::with_capacity(s.len() + 1);
                    dashed.push(b'-');
                    dashed.extend_from_slice(&s);
                    super::convert::error_table_bytes(lua, &dashed, false)?
                }
                None => super::convert::error_table(lua, "wrong number or type of arguments", false)?,
            };
            Ok(table)
        })?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| match single_string(&args) {
            Some(s) => {
                let t = lua.create_table()?;
                t.raw_set("ok", lua.create_string(&s)?)?;
                Ok(t)
            }
            None => super::convert::error_table(lua, "wrong number or type of arguments", false),
        })?,
    )?;
    Ok(t)
}

/// The one argument, when it is a string (not a number: Redis checks the Lua type).
fn single_string(args: &MultiValue) -> Option<Vec<u8>> {
    match args.iter().collect::<Vec<_>>().as_slice() {
        [Value::String(s)] => Some(s.as_bytes().to_vec()),
        _ => None,
    }
}

/// `7.0.15` as Redis's `REDIS_VERSION_NUM`: `0x00MMmmpp`.
fn version_num(v: &str) -> i64 {
    v.split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0))
        .chain(std::iter::repeat(0))
        .take(3)
        .fold(0, |acc, p| (acc << 8) | (p & 0xff))
}

/// `math.random` and `math.randomseed` over [`Rand48`], as Lua 5.1's own but for the generator.
fn install_math_random(lua: &Lua, g: &Table) -> mlua::Result<()> {
    let math: Table = g.raw_get("math")?;
    math.raw_set(
        "random",
        lua.create_function(|lua, args: MultiValue| {
            let r = {
                let mut rng = lua
                    .app_data_mut::<Rand48>()
                    .ok_or_else(|| mlua::Error::runtime("no generator"))?;
                (rng.next() % RAND_MAX) as f64 / RAND_MAX as f64
            };
            let int = |v: &Value, at: usize| -> mlua::Result<f64> {
                lua.coerce_number(v.clone())?
                    .map(f64::trunc)
                    .ok_or_else(|| bad_argument(at, "random", "number expected"))
            };
            let values: Vec<Value> = args.into_iter().collect();
            match values.as_slice() {
                [] => Ok(r),
                [u] => {
                    let u = int(u, 1)?;
                    if u < 1.0 {
                        return Err(bad_argument(1, "random", "interval is empty"));
                    }
                    Ok((r * u).floor() + 1.0)
                }
                [l, u] => {
                    let (l, u) = (int(l, 1)?, int(u, 2)?);
                    if l > u {
                        return Err(bad_argument(2, "random", "interval is empty"));
                    }
                    Ok((r * (u - l + 1.0)).floor() + l)
                }
                _ => Err(mlua::Error::runtime("wrong number of arguments")),
            }
        })?,
    )?;
    math.raw_set(
        "randomseed",
        lua.create_function(|lua, seed: f64| {
            if let Some(mut rng) = lua.app_data_mut::<Rand48>() {
                *rng = Rand48::seeded(seed as i64 as i32);
            }
            Ok(())
        })?,
    )?;
    Ok(())
}

fn bad_argument(at: usize, name: &str, msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{at} to '{name}' ({msg})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_gives_redis_first_number() {
        // Redis 7.0's first two `math.random()`s after start-up.
        let mut r = Rand48::INITIAL;
        let mut next = || format!("{:.14}", (r.next() % RAND_MAX) as f64 / RAND_MAX as f64);
        assert_eq!(next(), "0.39646477363839");
        assert_eq!(next(), "0.84048536971234");
    }

    #[test]
    fn the_version_number_packs_three_parts() {
        assert_eq!(version_num("7.0.15"), 458_767);
    }
}
