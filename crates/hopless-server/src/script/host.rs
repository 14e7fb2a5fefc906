//! Running a script's code against the server: what runs its commands (a [`Host`], the server's
//! dispatcher behind it), `redis.call`'s Rust side, the run that makes the host reachable from Lua,
//! and how a script's error is replied.

use bytes::Bytes;
use mlua::{Lua, MultiValue, Table, Value};

use super::convert;
use super::sandbox::{self, Call, CurrentCall, RunState};
use crate::codec::{Frame, Reply};

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
    /// Runs `args` (a command and its arguments); its reply in RESP2 or, for `resp3`, RESP3 (in a
    /// buffer of the host's, kept for the next call).
    fn call(&mut self, args: &[Bytes], resp3: bool) -> Result<&[u8], Refusal>;
}

/// Runs `run` (a script or a function, under the error handler) with `host` reachable from
/// `redis.call` (through [`CurrentCall`]) and the run's settings (`redis.setresp`) fresh.
pub(super) fn run_with_host<R>(
    lua: &Lua,
    host: &mut dyn Host,
    run: impl FnOnce(&Lua) -> mlua::Result<R>,
) -> mlua::Result<R> {
    if let Some(mut state) = lua.app_data_mut::<RunState>() {
        *state = RunState::default();
    }
    let mut host: &mut dyn Host = host;
    let call = Call {
        f: call_through,
        ctx: (&raw mut host).cast::<()>(),
    };
    lua.set_app_data(CurrentCall(Some(call)));
    /// Clears the slot however `run` ends: the pointer it holds must not outlive `host`.
    struct Clear<'a>(&'a Lua);
    impl Drop for Clear<'_> {
        fn drop(&mut self) {
            self.0.set_app_data(CurrentCall(None));
        }
    }
    let _clear = Clear(lua);
    let r = run(lua);
    pace_collector(lua);
    r
}

/// Runs between two incremental collections (and the size of each step, in KiB): Redis's
/// `LUA_GC_CYCLE_PERIOD`. Small steps often keep a state that runs many short scripts near its live
/// size instead of letting it double before Lua's own collector starts a cycle.
const GC_PERIOD: u32 = 50;

/// Runs of one state since its last collection step.
struct RunsSinceStep(u32);

/// Counts a run and, every [`GC_PERIOD`] runs, takes one incremental step of Lua's collector, as
/// Redis does after each script call.
fn pace_collector(lua: &Lua) {
    let due = match lua.app_data_mut::<RunsSinceStep>() {
        Some(mut n) => {
            n.0 += 1;
            let due = n.0 >= GC_PERIOD;
            if due {
                n.0 = 0;
            }
            due
        }
        None => {
            lua.set_app_data(RunsSinceStep(1));
            false
        }
    };
    if due {
        // A step only frees memory; an error from a `__gc` metamethod is not the script's (the
        // sandbox sets none), so there is nothing to report.
        let _ = lua.gc_step_kbytes(GC_PERIOD as i32);
    }
}

/// [`Call::f`] for [`run_with_host`]'s host.
///
/// # Safety
///
/// `ctx` points at a live `&mut dyn Host` that nothing else uses during the call.
unsafe fn call_through(ctx: *mut (), lua: &Lua, argv: Table, n: usize) -> mlua::Result<MultiValue> {
    // SAFETY: per the caller; `run_with_host` made `ctx` from its `&mut dyn Host` local, which lives
    // until the slot is cleared, and the script's thread alone calls through it.
    let host: &mut &mut dyn Host = unsafe { &mut *ctx.cast::<&mut dyn Host>() };
    let (v, failed) = host_call(lua, *host, &argv, n)?;
    Ok(MultiValue::from_vec(vec![v, Value::Boolean(failed)]))
}

/// A Lua array of byte strings (KEYS, ARGV, a function's two tables).
pub(super) fn string_array(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, b) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(b)?)?;
    }
    Ok(t)
}

/// `redis.call`'s Rust side: the arguments checked, the command run through `host`, its reply as a Lua
/// value, and whether it is an error (the Lua side raises it for `redis.call`).
fn host_call(lua: &Lua, host: &mut dyn Host, argv: &Table, n: usize) -> mlua::Result<(Value, bool)> {
    sandbox::unlimited(lua, || call_command(lua, host, argv, n))
}

/// [`host_call`]'s work.
fn call_command(lua: &Lua, host: &mut dyn Host, argv: &Table, n: usize) -> mlua::Result<(Value, bool)> {
    let fail = |text: &str| -> mlua::Result<(Value, bool)> {
        Ok((Value::Table(convert::error_table(lua, text, false)?), true))
    };
    let args = match convert::lua_to_args((1..n + 1).map(|i| argv.raw_get::<Value>(i).unwrap_or(Value::Nil)))
    {
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
            let frame = match Frame::parse(reply) {
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
pub(super) fn write_script_error(out: &mut Reply, err: &Value, name: &str) {
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
