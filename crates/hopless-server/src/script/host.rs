//! Running a script's code against the server: what runs its commands (a [`Host`], the server's
//! dispatcher behind it), `redis.call`'s Rust side, the run that makes the host reachable from Lua,
//! and how a script's error is replied.

use std::ffi::c_int;

use bytes::Bytes;
use mlua::{ffi, Lua, Table, Value};

use super::cfunc::{Call, CurrentCall};
use super::sandbox::{RunState, REPLY_TO_LUA};
use super::{convert, reply_push};
use crate::codec::Reply;

/// Why a command did not run for a script: Redis's texts, each becoming an error for the script.
pub enum Refusal {
    /// Redis's text of the refusal (without a code: `ERR` is put before it).
    Text(&'static str),
    /// An error reply of the server's (`OOM ...`), code included.
    Reply(&'static str),
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
        f: call_command,
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

/// Runs between two steps of the collector, and the size of a step in KiB (Redis's
/// `LUA_GC_CYCLE_PERIOD`, 50, for both). A 50 KiB step pays off about a whole cycle of a state's size;
/// a state here is 65 KB live to Redis's 32 KB, and a short script leaves a few hundred bytes, so one
/// step every 100 runs keeps a state under 1.5 times its live size (92 KB at most over 10 000 EVALs)
/// for half the collection work of one every 50.
const GC_PERIOD: u32 = 100;
const GC_STEP_KB: i32 = 50;

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
        let _ = lua.gc_step_kbytes(GC_STEP_KB);
    }
}

/// [`Call::f`] for [`run_with_host`]'s host: `redis.call`'s arguments read off the stack, the
/// command run and its reply pushed, all without mlua's values; for no argument, or one neither a
/// string nor a number, Redis's error table instead. Whether what it pushed is an error.
///
/// # Safety
///
/// As [`Call::f`] requires: `ctx` points at a live `&mut dyn Host` that nothing else uses during the
/// call, `state` is the running thread inside `redis.call`'s C function with only its arguments on
/// the stack.
unsafe fn call_command(ctx: *mut (), state: *mut ffi::lua_State) -> bool {
    // SAFETY: per the caller; `run_with_host` made `ctx` from its `&mut dyn Host` local, which lives
    // until the slot is cleared, and the script's thread alone calls through it.
    let host: &mut &mut dyn Host = unsafe { &mut *ctx.cast::<&mut dyn Host>() };
    // SAFETY: the state is one mlua made (per the caller, the running thread of one).
    let lua = unsafe { Lua::get_or_init_from_ptr(state) };
    let resp3 = lua.app_data_ref::<RunState>().is_some_and(|r| r.resp3);
    // What to push: a reply, or an error's code, message and whether INFO counted it already (a
    // refusal, counted where it was made).
    // SAFETY: `state` is the running thread inside a C function (per the caller).
    let outcome: Result<&[u8], (&str, &str, bool)> = match unsafe { stack_args(state) } {
        Ok(args) => match host.call(&args, resp3) {
            Ok(reply) => Ok(reply),
            Err(Refusal::Text(t)) => Err(("ERR", t, true)),
            // The server's reply text: its first word is the code.
            Err(Refusal::Reply(r)) => Err(r.split_once(' ').map_or(("ERR", r, true), |(c, m)| (c, m, true))),
        },
        Err(text) => Err(("ERR", text, false)),
    };
    // The reply is made without the memory limit, as for the rest of the server's work in a script.
    let was = lua.set_memory_limit(0).unwrap_or(0);
    // SAFETY: no Rust value with a destructor lives in this frame from here on (`outcome` holds a
    // borrowed reply or static texts), so a memory error of Lua's may raise through it;
    // 1. the direct pushes leave one value on the stack, within a C function's free slots;
    // 2. a reply they leave to the converter goes through the registry's converter under
    //    `lua_pcall` (its function and two arguments, then two results, within those slots), so that
    //    the limit is back before an error of its goes on with `lua_error`.
    unsafe {
        let failed = match outcome {
            Ok(reply) => match reply_push::push_reply(state, reply, resp3) {
                Some(failed) => failed,
                None => {
                    ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, REPLY_TO_LUA.as_ptr());
                    ffi::lua_pushlstring(state, reply.as_ptr().cast(), reply.len());
                    ffi::lua_pushboolean(state, c_int::from(resp3));
                    let status = ffi::lua_pcall(state, 2, 2, 0);
                    let _ = lua.set_memory_limit(was);
                    if status != 0 {
                        ffi::lua_error(state);
                    }
                    let failed = ffi::lua_toboolean(state, -1) != 0;
                    ffi::lua_settop(state, -2);
                    return failed;
                }
            },
            Err((code, msg, counted)) => {
                reply_push::push_error_table(state, (code.as_bytes(), msg.as_bytes()), counted);
                true
            }
        };
        let _ = lua.set_memory_limit(was);
        failed
    }
}

/// `redis.call`'s arguments as a command's, read off the stack (strings as they are, numbers as
/// `%.17g` writes them), or Redis's error for none, or for one of another type.
///
/// # Safety
///
/// `state` is the running thread inside a C function; nothing here can raise (`lua_tolstring` of a
/// string does not allocate).
unsafe fn stack_args(state: *mut ffi::lua_State) -> Result<Vec<Bytes>, &'static str> {
    // SAFETY: per the caller; each index is within the C function's arguments, and a string's
    // pointer and length stay valid while it is on the stack (read and copied at once).
    unsafe {
        let n = ffi::lua_gettop(state);
        if n == 0 {
            return Err("Please specify at least one argument for this redis lib call");
        }
        let mut args = Vec::with_capacity(n as usize);
        for i in 1..=n {
            match ffi::lua_type(state, i) {
                ffi::LUA_TSTRING => {
                    let mut len = 0;
                    let p = ffi::lua_tolstring(state, i, &mut len);
                    args.push(Bytes::copy_from_slice(std::slice::from_raw_parts(p.cast(), len)));
                }
                ffi::LUA_TNUMBER => args.push(Bytes::from(convert::fmt_g17(ffi::lua_tonumber(state, i)))),
                _ => return Err("Lua redis lib command arguments must be strings or integers"),
            }
        }
        Ok(args)
    }
}

/// Pushes a new Lua array of `items`.
///
/// # Safety
///
/// `state` is a running thread with two free slots; a memory error raises (the caller is under a
/// protected call, with no Rust value that needs dropping).
unsafe fn push_array(state: *mut ffi::lua_State, items: &[Bytes]) {
    // SAFETY: per the caller: the array takes one slot, each string a second until `lua_rawseti`
    // moves it into the array.
    unsafe {
        ffi::lua_createtable(state, items.len().min(i32::MAX as usize) as c_int, 0);
        for (i, b) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, b.as_ptr().cast(), b.len());
            ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
        }
    }
}

/// Two Lua arrays of byte strings (a script's KEYS and ARGV, a function's two tables), made in one
/// protected call.
pub(super) fn string_arrays(lua: &Lua, keys: &[Bytes], args: &[Bytes]) -> mlua::Result<(Table, Table)> {
    // SAFETY: `exec_raw` runs the closure under a protected call with room for three values checked;
    // for each array it pushes a table and, one at a time, a string that `lua_rawseti` moves into it,
    // leaving the two tables, which `exec_raw` returns; the closure holds only borrows (a memory error
    // raised through it skips nothing).
    unsafe {
        lua.exec_raw((), |state| {
            push_array(state, keys);
            push_array(state, args);
        })
    }
}

/// Sets `name` in the table at stack index `table` (raw, no metamethod) to a new Lua array of `items`.
///
/// # Safety
///
/// `state` is a running thread with three free slots; `table` is an absolute index of a table; a
/// memory error raises (the caller is under a protected call, with no Rust value that needs dropping).
pub(super) unsafe fn set_array(
    state: *mut ffi::lua_State,
    table: c_int,
    name: &std::ffi::CStr,
    items: &[Bytes],
) {
    // SAFETY: per the caller: the name takes one slot, `push_array` two more; `lua_rawset` takes
    // the name and the array off again.
    unsafe {
        ffi::lua_pushstring(state, name.as_ptr());
        push_array(state, items);
        ffi::lua_rawset(state, table);
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
