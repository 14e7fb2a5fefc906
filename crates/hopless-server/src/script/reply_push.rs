//! A command's reply pushed straight onto Lua's stack, as `redis.call` gives it to a script: RESP read
//! from the reply's bytes and each value made with Lua's C API, without going through mlua's values.
//! It takes the replies commands mostly give (RESP2's five types; RESP3's null, boolean and arrays);
//! for the rest (RESP3 maps, sets, doubles, big numbers, verbatim strings) it declines, and
//! `convert::frame_to_lua` answers.

use std::ffi::c_int;

use mlua::ffi;

use super::convert::error_parts;

/// Redis's field that marks an error table whose error INFO has counted already.
const IGNORE_STATS: &std::ffi::CStr = c"ignore_error_stats_update";

/// Pushes `reply` (one RESP value) as Lua sees it in a script: `Some(failed)` (an error table when
/// `failed`), or `None` with the stack as it was when it holds a type left to the converter.
///
/// # Safety
///
/// `state` is the running thread inside a C function, with Lua's memory limit lifted; no Rust value
/// with a destructor lives in the caller's frames (a memory error of Lua's raises through them).
pub(super) unsafe fn push_reply(state: *mut ffi::lua_State, reply: &[u8], resp3: bool) -> Option<bool> {
    // SAFETY: per the caller; `push_value` leaves one value or, declining, whatever it pushed, which
    // `lua_settop` takes off again.
    unsafe {
        let base = ffi::lua_gettop(state);
        match push_value(state, reply, resp3, 0) {
            Some((_, failed)) => Some(failed),
            None => {
                ffi::lua_settop(state, base);
                None
            }
        }
    }
}

/// Pushes Redis's error table for an error's code and message (`convert::error_parts`):
/// `{err = "CODE message"}`, with `ignore_error_stats_update` when INFO counted it already.
///
/// # Safety
///
/// As for [`push_reply`].
pub(super) unsafe fn push_error_table(
    state: *mut ffi::lua_State,
    (code, msg): (&[u8], &[u8]),
    ignore_stats: bool,
) {
    // SAFETY: per the caller; a table, then the code, a space and the message joined into one string
    // (three slots, then one), set as its `err` field; one slot more for the flag. A C function has
    // 20 free slots (`LUA_MINSTACK`); `push_value` checks for nested arrays.
    unsafe {
        ffi::lua_createtable(state, 0, 2);
        ffi::lua_pushlstring(state, code.as_ptr().cast(), code.len());
        ffi::lua_pushlstring(state, c" ".as_ptr(), 1);
        ffi::lua_pushlstring(state, msg.as_ptr().cast(), msg.len());
        ffi::lua_concat(state, 3);
        ffi::lua_setfield(state, -2, c"err".as_ptr());
        if ignore_stats {
            ffi::lua_pushboolean(state, 1);
            ffi::lua_setfield(state, -2, IGNORE_STATS.as_ptr());
        }
    }
}

/// The line at the start of `r` (before its CRLF) and where the next one starts.
fn line(r: &[u8]) -> Option<(&[u8], usize)> {
    let end = r.windows(2).position(|w| w == b"\r\n")?;
    Some((&r[..end], end + 2))
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Pushes the value at the start of `r`: how many bytes it took and whether it is an error, or
/// `None` (having pushed what it had) for a type left to the converter.
///
/// # Safety
///
/// As for [`push_reply`].
unsafe fn push_value(
    state: *mut ffi::lua_State,
    r: &[u8],
    resp3: bool,
    depth: usize,
) -> Option<(usize, bool)> {
    let (&kind, _) = r.split_first()?;
    let (head, body) = line(&r[1..])?;
    let body = body + 1;
    // SAFETY: per the caller: each arm pushes exactly one value within the free slots a C function has
    // (a table and a string at most at once; an array checks for its own room first).
    unsafe {
        match kind {
            b'+' => {
                ffi::lua_createtable(state, 0, 1);
                ffi::lua_pushlstring(state, head.as_ptr().cast(), head.len());
                ffi::lua_setfield(state, -2, c"ok".as_ptr());
                Some((body, false))
            }
            b'-' => {
                push_error_table(state, error_parts(&r[..body - 2]), true);
                Some((body, true))
            }
            b':' => {
                ffi::lua_pushnumber(state, parse_i64(head)? as ffi::lua_Number);
                Some((body, false))
            }
            b'$' => {
                let len = parse_i64(head)?;
                if len < 0 {
                    push_null(state, resp3);
                    return Some((body, false));
                }
                let end = body.checked_add(usize::try_from(len).ok()?)?;
                let data = r.get(body..end)?;
                ffi::lua_pushlstring(state, data.as_ptr().cast(), data.len());
                Some((end + 2, false))
            }
            b'_' => {
                push_null(state, resp3);
                Some((body, false))
            }
            b'#' => {
                ffi::lua_pushboolean(state, c_int::from(head == b"t"));
                Some((body, false))
            }
            b'*' | b'>' => {
                let n = parse_i64(head)?;
                if n < 0 {
                    push_null(state, resp3);
                    return Some((body, false));
                }
                if n > i64::from(c_int::MAX) {
                    return None;
                }
                // Lua's C stack holds about 8 000 slots; each level here takes two.
                if depth > 1000 || ffi::lua_checkstack(state, 3) == 0 {
                    return None;
                }
                ffi::lua_createtable(state, n.min(1 << 20) as c_int, 0);
                let mut at = body;
                for i in 1..=n {
                    let (used, _) = push_value(state, &r[at..], resp3, depth + 1)?;
                    ffi::lua_rawseti_(state, -2, i as c_int);
                    at += used;
                }
                Some((at, false))
            }
            _ => None,
        }
    }
}

/// A null as a script sees it: `false` in RESP2, `nil` in RESP3.
///
/// # Safety
///
/// `state` is a running thread with a free slot.
unsafe fn push_null(state: *mut ffi::lua_State, resp3: bool) {
    // SAFETY: per the caller.
    unsafe {
        if resp3 {
            ffi::lua_pushnil(state);
        } else {
            ffi::lua_pushboolean(state, 0);
        }
    }
}
