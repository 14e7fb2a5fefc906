//! Values between Redis and Lua, as Redis 7.0 converts them: a command's reply into Lua for
//! `redis.call` ([`frame_to_lua`]) and a script's return value into a reply ([`lua_to_reply`]).

use mlua::{Function, Lua, Table, Value};

use crate::codec::{Frame, Reply};

/// Redis's `luaPushErrorBuff`: the error table `{err = "CODE message"}` for an error text, either
/// `-CODE message` (the code is the first word) or a bare message (code `ERR`), with line ends trimmed.
/// `ignore_stats`: the error was counted already (a command's own reply), so the script's reply of it
/// is not counted again.
pub(super) fn error_table_bytes(lua: &Lua, text: &[u8], ignore_stats: bool) -> mlua::Result<Table> {
    let (code, msg) = error_parts(text);
    let mut full = Vec::with_capacity(code.len() + 1 + msg.len());
    full.extend_from_slice(code);
    full.push(b' ');
    full.extend_from_slice(msg);
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(&full)?)?;
    if ignore_stats {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// An error reply's code and message (`-CODE message`; without the `-`, or without a space, the code
/// is `ERR`), the message without the line breaks around it.
pub(super) fn error_parts(text: &[u8]) -> (&[u8], &[u8]) {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let trim = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !trim(b)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|b| !trim(b)).map_or(start, |e| e + 1);
    (code, msg.get(start..end).unwrap_or_default())
}

/// [`error_table_bytes`] of a text.
pub(super) fn error_table(lua: &Lua, text: &str, ignore_stats: bool) -> mlua::Result<Table> {
    error_table_bytes(lua, text.as_bytes(), ignore_stats)
}

/// A command's reply as `redis.call` gives it to Lua. `resp3`: the script asked for RESP3 replies
/// (`redis.setresp(3)`), whose null is nil; RESP2's nulls are false.
pub(super) fn frame_to_lua(lua: &Lua, f: Frame, resp3: bool) -> mlua::Result<Value> {
    let single = |key: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(key, v)?;
        Ok(Value::Table(t))
    };
    Ok(match f {
        Frame::Simple(s) => single("ok", Value::String(lua.create_string(&s)?))?,
        Frame::Error(e) => {
            let mut text = Vec::with_capacity(e.len() + 1);
            text.push(b'-');
            text.extend_from_slice(e.as_bytes());
            Value::Table(error_table_bytes(lua, &text, true)?)
        }
        Frame::Integer(i) => Value::Number(i as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(&b)?),
        Frame::Null if resp3 => Value::Nil,
        Frame::Null => Value::Boolean(false),
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, frame_to_lua(lua, item, resp3)?)?;
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let m = lua.create_table()?;
            for (k, v) in pairs {
                m.raw_set(frame_to_lua(lua, k, resp3)?, frame_to_lua(lua, v, resp3)?)?;
            }
            single("map", Value::Table(m))?
        }
        Frame::Set(items) => {
            let s = lua.create_table()?;
            for item in items {
                s.raw_set(frame_to_lua(lua, item, resp3)?, true)?;
            }
            single("set", Value::Table(s))?
        }
        Frame::Double(d) => single("double", Value::Number(d))?,
        Frame::Boolean(b) => Value::Boolean(b),
        Frame::BigNumber(n) => single("big_number", Value::String(lua.create_string(&n)?))?,
        Frame::Verbatim(format, text) => {
            let v = lua.create_table()?;
            v.raw_set("format", format)?;
            v.raw_set("string", lua.create_string(&text)?)?;
            single("verbatim_string", Value::Table(v))?
        }
    })
}

/// C's `printf("%.17g", x)`.
pub(super) fn fmt_g17(x: f64) -> String {
    fmt_g(x, 17)
}

/// C's `printf("%.<precision>g", x)` (`precision` from 1 to 17).
pub(super) fn fmt_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let p = precision.clamp(1, 17);
    // `p` significant digits in scientific form give the exponent %g decides with.
    let sci = format!("{x:.*e}", p - 1);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.unsigned_abs());
    }
    let decimals = (p as i32 - 1 - exp).max(0) as usize;
    strip_zeros(&format!("{x:.decimals$}")).to_string()
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// C's `(long long)` of a double as x86-64 computes it: out of range (and NaN) gives the smallest
/// integer.
fn to_long_long(n: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

/// A script's return value written as Redis's `luaReplyToRedisReply` writes it. `script_resp3`: the
/// script asked for RESP3 (`redis.setresp(3)`), which decides how a boolean is answered; `next` is Lua's
/// own `next`, for walking maps and sets.
///
/// The walk keeps its own stack rather than recursing, and reads a table's values one at a time as it
/// writes them: mlua holds a reference slot for every live value, and it has about 8 000 of them, so a
/// script returning tens of thousands of strings must not hold them all at once. Past [`MAX_DEPTH`]
/// nested tables (a table that holds itself) it writes `-ERR reached lua stack limit` in that value's
/// place, as Redis does at the depth where Lua's C stack runs out (7 995 levels there).
pub(super) fn lua_to_reply(
    out: &mut Reply,
    v: &Value,
    script_resp3: bool,
    next: &Function,
) -> mlua::Result<()> {
    let mut stack: Vec<Level> = Vec::new();
    let mut pending = Some(v.clone());
    loop {
        let v = match pending.take() {
            Some(v) => v,
            None => match stack.last_mut() {
                None => return Ok(()),
                Some(level) => match level.next(next)? {
                    Some(v) => v,
                    None => {
                        stack.pop();
                        continue;
                    }
                },
            },
        };
        if stack.len() >= MAX_DEPTH && matches!(v, Value::Table(_)) {
            out.error("ERR reached lua stack limit");
            continue;
        }
        if let Some(level) = write_value(out, &v, script_resp3)? {
            stack.push(level);
        }
    }
}

/// Nested tables written at most; each level holds at most three values.
const MAX_DEPTH: usize = 1000;

/// A table being written: an array by index, or a map's or set's pairs by `next`.
enum Level {
    Array {
        t: Table,
        next: usize,
        len: usize,
    },
    Pairs {
        t: Table,
        key: Value,
        left: usize,
        set: bool,
        value: Option<Value>,
    },
}

impl Level {
    /// The next value to write under this table, `None` when it is done.
    fn next(&mut self, lua_next: &Function) -> mlua::Result<Option<Value>> {
        match self {
            Level::Array { t, next, len } => {
                if *next > *len {
                    return Ok(None);
                }
                *next += 1;
                Ok(Some(field(t, *next - 1)))
            }
            Level::Pairs {
                t,
                key,
                left,
                set,
                value,
            } => {
                if let Some(v) = value.take() {
                    return Ok(Some(v));
                }
                if *left == 0 {
                    return Ok(None);
                }
                let (k, v): (Value, Value) = lua_next.call((t.clone(), key.clone()))?;
                if matches!(k, Value::Nil) {
                    return Ok(None);
                }
                *left -= 1;
                *key = k.clone();
                if !*set {
                    *value = Some(v);
                }
                Ok(Some(k))
            }
        }
    }
}

/// Writes `v`, or for a table that holds values (an array, map or set) its header and the level that
/// writes them.
fn write_value(out: &mut Reply, v: &Value, resp3: bool) -> mlua::Result<Option<Level>> {
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) if !resp3 => {
            if *b {
                out.int(1)
            } else {
                out.null()
            }
        }
        Value::Boolean(b) if out.resp3() => out.buf.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Value::Boolean(b) => out.int(i64::from(*b)),
        Value::Number(n) => out.int(to_long_long(*n)),
        Value::Integer(i) => out.int(*i),
        Value::Table(t) => return write_table(out, t),
        _ => out.null(),
    }
    Ok(None)
}

fn write_table(out: &mut Reply, t: &Table) -> mlua::Result<Option<Level>> {
    if let Value::String(e) = field(t, "err") {
        let ignore = matches!(field(t, "ignore_error_stats_update"), Value::Boolean(true));
        write_error(out, &e.as_bytes(), ignore);
        return Ok(None);
    }
    if let Value::String(s) = field(t, "ok") {
        out.buf.extend_from_slice(b"+");
        out.buf.extend(
            s.as_bytes()
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        out.buf.extend_from_slice(b"\r\n");
        return Ok(None);
    }
    if let Value::Number(d) = field(t, "double") {
        out.double(d);
        return Ok(None);
    }
    if let Value::Integer(d) = field(t, "double") {
        out.double(d as f64);
        return Ok(None);
    }
    if let Value::String(n) = field(t, "big_number") {
        let n: Vec<u8> = n
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        if out.resp3() {
            out.buf.extend_from_slice(b"(");
            out.buf.extend_from_slice(&n);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&n);
        }
        return Ok(None);
    }
    if let Value::Table(v) = field(t, "verbatim_string") {
        if let (Value::String(format), Value::String(text)) = (field(&v, "format"), field(&v, "string")) {
            out.verbatim_as(&format.as_bytes(), &text.as_bytes());
            return Ok(None);
        }
    }
    for (name, set) in [("map", false), ("set", true)] {
        if let Value::Table(m) = field(t, name) {
            // Counted first (each pair dropped as it is counted), then written one pair at a time.
            let mut left = 0;
            for pair in m.pairs::<Value, Value>() {
                pair?;
                left += 1;
            }
            if set {
                out.set(left);
            } else {
                out.map(left);
            }
            return Ok(Some(Level::Pairs {
                t: m,
                key: Value::Nil,
                left,
                set,
                value: None,
            }));
        }
    }
    // An array: up to its first nil, as Redis counts it.
    let mut len = 0;
    while !matches!(field(t, len + 1), Value::Nil) {
        len += 1;
    }
    out.array(len);
    Ok(Some(Level::Array {
        t: t.clone(),
        next: 1,
        len,
    }))
}

/// `t[k]` as Lua reads it (metamethods included), nil where reading it raises (the globals' proxy
/// refuses names it does not hold).
fn field(t: &Table, k: impl mlua::IntoLua) -> Value {
    t.get::<Value>(k).unwrap_or(Value::Nil)
}

/// An error reply of a script's `{err = ...}`: Redis writes `-%s` of it, so the text's first word is
/// the code. Counted in INFO errorstats unless it was already (`ignore`).
pub(super) fn write_error(out: &mut Reply, text: &[u8], ignore: bool) {
    let text = String::from_utf8_lossy(text);
    if ignore {
        let errors = out.errors.take();
        out.error(&text);
        out.errors = errors;
    } else {
        out.error(&text);
    }
}

/// Lua's name of a value's type (`lua_typename`).
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_printf_g17() {
        for (x, s) in [
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (123_456_789_012.0, "123456789012"),
            (3.0, "3"),
            (-2.5e-7, "-2.4999999999999999e-07"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(fmt_g17(x), s, "{x}");
        }
        assert_eq!(fmt_g(123_456_789_012_345.0, 14), "1.2345678901234e+14");
        assert_eq!(fmt_g(0.1, 14), "0.1");
        assert_eq!(fmt_g(1.25, 14), "1.25");
    }

    #[test]
    fn out_of_range_numbers_reply_the_smallest_integer() {
        assert_eq!(to_long_long(1e20), i64::MIN);
        assert_eq!(to_long_long(-3.7), -3);
        assert_eq!(to_long_long(f64::NAN), i64::MIN);
    }
}
