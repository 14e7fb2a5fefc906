//! Library functions that raise errors as Redis's C functions do. Each is a C function over a Rust (or
//! prelude) function kept in the registry, which answers what to raise instead of raising it:
//!
//! - the `redis` functions ([`redis_functions`]) raise Redis's error *tables*: their registry function
//!   answers its value and whether it is an error; `redis.call` and `redis.pcall` run their command
//!   through the running script's [`Call`] instead, which pushes the reply onto the stack itself;
//! - `cjson` and `cmsgpack` ([`library`]) raise *strings* with the caller's position first
//!   (`user_script:1: ...`, as `luaL_error` writes them): their registry function answers `true` and
//!   its values, or `false` and the message.
//!
//! Being C functions matters twice: Lua 5.1 replaces the caller's frame only in a tail call of a Lua
//! function, so a script's `return redis.call(...)` keeps the script's frame on the stack for the error
//! handler to name its line; and `luaL_where` finds the calling script's position.

use std::ffi::{c_int, CStr};

use mlua::{ffi, Function, Lua, Table};

use super::convert::error_parts;
use super::reply_push::push_error_table;

/// What runs a command for the script being run: a function and the context it is given (the host,
/// behind a pointer whose type the function knows). The function takes `redis.call`'s arguments from
/// the Lua stack, runs the command and pushes its reply there, or Redis's error table for arguments it
/// refuses; it answers whether what it pushed is an error.
#[derive(Clone, Copy)]
pub(super) struct Call {
    /// # Safety
    ///
    /// `ctx` is the context this `Call` was made with, alive; `state` is the running thread inside
    /// `redis.call`'s C function, its arguments all there is on its stack.
    pub f: unsafe fn(ctx: *mut (), state: *mut ffi::lua_State) -> bool,
    pub ctx: *mut (),
}

/// `redis.call`'s way to the host: set by `host::run_with_host` for the length of one run, on the
/// thread running it, and cleared before it returns; `None` otherwise.
pub(super) struct CurrentCall(pub Option<Call>);

// SAFETY: a state is used by one thread at a time (the server keeps it behind a mutex), and the slot
// holds a pointer only while the thread that set it runs the script; no other thread reads it then.
unsafe impl Send for CurrentCall {}

macro_rules! c_functions {
    ($via:ident: $($name:ident => $key:literal),* $(,)?) => {
        $(
            /// # Safety
            ///
            /// Called by Lua only, as a C function.
            unsafe extern "C-unwind" fn $name(state: *mut ffi::lua_State) -> c_int {
                // SAFETY: per the caller.
                unsafe { $via(state, $key) }
            }
        )*
    };
}

/// `redis.call`: [`call_command`], raising an error.
///
/// # Safety
///
/// Called by Lua only, as a C function.
unsafe extern "C-unwind" fn redis_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: per the caller.
    unsafe { call_command(state, true) }
}

/// `redis.pcall`: [`call_command`], an error returned as Redis's error table, a value.
///
/// # Safety
///
/// Called by Lua only, as a C function.
unsafe extern "C-unwind" fn redis_pcall(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: per the caller.
    unsafe { call_command(state, false) }
}

c_functions! { table_or_value:
    redis_setresp => c"hopless.setresp",
    redis_sha1hex => c"hopless.sha1hex",
    redis_log => c"hopless.log",
    redis_set_repl => c"hopless.set_repl",
    redis_register_function => c"hopless.register_function",
}

c_functions! { message_or_values:
    cjson_encode => c"hopless.cjson.encode",
    cjson_decode => c"hopless.cjson.decode",
    cjson_encode_sparse_array => c"hopless.cjson.encode_sparse_array",
    cjson_encode_max_depth => c"hopless.cjson.encode_max_depth",
    cjson_decode_max_depth => c"hopless.cjson.decode_max_depth",
    cjson_encode_number_precision => c"hopless.cjson.encode_number_precision",
    cjson_encode_keep_buffer => c"hopless.cjson.encode_keep_buffer",
    cjson_encode_invalid_numbers => c"hopless.cjson.encode_invalid_numbers",
    cjson_decode_invalid_numbers => c"hopless.cjson.decode_invalid_numbers",
    cmsgpack_pack => c"hopless.cmsgpack.pack",
    cmsgpack_unpack => c"hopless.cmsgpack.unpack",
    cmsgpack_unpack_one => c"hopless.cmsgpack.unpack_one",
    cmsgpack_unpack_limit => c"hopless.cmsgpack.unpack_limit",
    struct_pack => c"hopless.struct.pack",
    struct_unpack => c"hopless.struct.unpack",
    struct_size => c"hopless.struct.size",
}

/// The `redis` table's C functions by name (`call`, `pcall`, `setresp`, `sha1hex`, `log`, `set_repl`, and
/// `register_function`, which only FUNCTION LOAD's API holds),
/// over the registry functions the prelude and the sandbox set.
pub(super) fn redis_functions(lua: &Lua) -> mlua::Result<Table> {
    functions(
        lua,
        &[
            ("call", redis_call),
            ("pcall", redis_pcall),
            ("setresp", redis_setresp),
            ("sha1hex", redis_sha1hex),
            ("log", redis_log),
            ("set_repl", redis_set_repl),
            ("register_function", redis_register_function),
        ],
    )
}

/// The C function named `name` of library `lib` (`cjson`, `cmsgpack` or `struct`), over `f`, which answers `true`
/// and its values or `false` and an error message.
pub(super) fn library_function(lua: &Lua, lib: &str, name: &str, f: Function) -> mlua::Result<Function> {
    let c: ffi::lua_CFunction = match (lib, name) {
        ("cjson", "encode") => cjson_encode,
        ("cjson", "decode") => cjson_decode,
        ("cjson", "encode_sparse_array") => cjson_encode_sparse_array,
        ("cjson", "encode_max_depth") => cjson_encode_max_depth,
        ("cjson", "decode_max_depth") => cjson_decode_max_depth,
        ("cjson", "encode_number_precision") => cjson_encode_number_precision,
        ("cjson", "encode_keep_buffer") => cjson_encode_keep_buffer,
        ("cjson", "encode_invalid_numbers") => cjson_encode_invalid_numbers,
        ("cjson", "decode_invalid_numbers") => cjson_decode_invalid_numbers,
        ("cmsgpack", "pack") => cmsgpack_pack,
        ("cmsgpack", "unpack") => cmsgpack_unpack,
        ("cmsgpack", "unpack_one") => cmsgpack_unpack_one,
        ("cmsgpack", "unpack_limit") => cmsgpack_unpack_limit,
        ("struct", "pack") => struct_pack,
        ("struct", "unpack") => struct_unpack,
        ("struct", "size") => struct_size,
        _ => return Err(mlua::Error::runtime(format!("no C function for {lib}.{name}"))),
    };
    lua.set_named_registry_value(&format!("hopless.{lib}.{name}"), f)?;
    // SAFETY: `c` keeps Lua's stack discipline (`message_or_values`).
    unsafe { lua.create_c_function(c) }
}

fn functions(lua: &Lua, list: &[(&str, ffi::lua_CFunction)]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for &(name, f) in list {
        // SAFETY: each keeps Lua's stack discipline (`table_or_value`).
        t.raw_set(name, unsafe { lua.create_c_function(f) }?)?;
    }
    Ok(t)
}

/// The running script's [`Call`] (outside a script, Redis's error for it): the reply returned, or
/// raised when it is an error and `raise` says so.
///
/// # Safety
///
/// `state` is the running thread, as Lua hands it to a C function.
unsafe fn call_command(state: *mut ffi::lua_State, raise: bool) -> c_int {
    // SAFETY:
    // 1. `state` is the running thread of a state mlua made (every state here is), so mlua finds its
    //    `Lua` from it; the slot's call is copied out and the borrow of the app data ends with the
    //    statement;
    // 2. the slot holds a call only while `host::run_with_host` runs the script on this thread with
    //    its context alive, and this C function's arguments are all that is on the stack, as
    //    `Call::f` requires; outside a script the error table takes four of the free slots Lua gives
    //    every C function (`LUA_MINSTACK`);
    // 3. `lua_error` raises the error table on top and does not return; no Rust value with a
    //    destructor lives in this frame or the caller's;
    // 4. otherwise the value on top is the one result.
    unsafe {
        let call = Lua::get_or_init_from_ptr(state)
            .app_data_ref::<CurrentCall>()
            .and_then(|c| c.0);
        let failed = match call {
            Some(call) => (call.f)(call.ctx, state),
            None => {
                let text = b"redis.call/pcall can only be called inside a script invocation";
                push_error_table(state, error_parts(text), false);
                true
            }
        };
        if failed && raise {
            ffi::lua_error(state);
        }
        1
    }
}

/// Calls the registry's function `key` with the arguments on the stack; raises the first of its two
/// results if the second is true, else returns the first.
///
/// # Safety
///
/// `state` is the running thread, as Lua hands it to a C function; the registry holds a function under
/// `key` (set before any script runs).
unsafe fn table_or_value(state: *mut ffi::lua_State, key: &CStr) -> c_int {
    // SAFETY:
    // 1. `state` is the running thread with the C function's arguments on its stack (per the caller);
    // 2. `lua_checkstack` makes room for the function below them and for its two results;
    // 3. `lua_call` runs the function with every argument and leaves its two results;
    // 4. `lua_error` raises the value below the flag and does not return; no Rust value with a
    //    destructor lives in this frame or the caller's, which Lua's error unwinding skips;
    // 5. otherwise one result, the value, is returned.
    unsafe {
        let n = ffi::lua_gettop(state);
        if ffi::lua_checkstack(state, 3) == 0 {
            return 0;
        }
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, key.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, n, 2);
        let failed = ffi::lua_toboolean(state, -1) != 0;
        ffi::lua_pop(state, 1);
        if failed {
            ffi::lua_error(state);
        }
        1
    }
}

/// Calls the registry's function `key` with the arguments on the stack: when its first result is
/// false, raises its second with the calling script's position before it (as `luaL_error` does), else
/// returns its other results.
///
/// # Safety
///
/// As for [`table_or_value`].
unsafe fn message_or_values(state: *mut ffi::lua_State, key: &CStr) -> c_int {
    // SAFETY:
    // 1. `state` is the running thread with the C function's arguments on its stack (per the caller);
    // 2. `lua_checkstack` makes room for the function below them and for `luaL_where`'s string;
    // 3. `lua_call` with `LUA_MULTRET` leaves every result, from index 1 up (the arguments and the
    //    function were all there was);
    // 4. on failure: the stack is cut to the flag and the message, the position is put below the
    //    message and the two joined, and `lua_error` raises that (it does not return; no Rust value
    //    with a destructor lives in this frame or the caller's);
    // 5. otherwise the flag is removed and the rest returned.
    unsafe {
        let n = ffi::lua_gettop(state);
        if ffi::lua_checkstack(state, 3) == 0 {
            return 0;
        }
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, key.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, n, ffi::LUA_MULTRET);
        let results = ffi::lua_gettop(state);
        if results >= 2 && ffi::lua_toboolean(state, 1) == 0 {
            ffi::lua_settop(state, 2);
            ffi::luaL_where(state, 1);
            ffi::lua_insert(state, 2);
            ffi::lua_concat(state, 2);
            ffi::lua_error(state);
        }
        ffi::lua_remove(state, 1);
        results - 1
    }
}
