//! `cjson`'s settings (lua-cjson 2.1.0): `encode_sparse_array`, `encode_max_depth`,
//! `decode_max_depth`, `encode_number_precision`, `encode_keep_buffer`, `encode_invalid_numbers` and
//! `decode_invalid_numbers`. Each answers the setting and, given an argument, changes it first; the
//! settings belong to the Lua state (they last until SCRIPT FLUSH, as Redis's do), and a bad argument
//! gets lua-cjson's error.

use mlua::{Lua, MultiValue, Table, Value};

use super::cfunc;
use super::convert::type_name;

/// How `encode` writes NaN and the infinities.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum InvalidNumbers {
    /// Refused (`Cannot serialise number: must not be NaN or Inf`).
    Refuse,
    /// Written as `nan`, `inf` and `-inf`.
    Write,
    /// Written as `null`.
    Null,
}

/// One state's settings; [`Config::default`] is lua-cjson's.
#[derive(Clone, Copy)]
pub(super) struct Config {
    pub sparse_convert: bool,
    pub sparse_ratio: i64,
    pub sparse_safe: i64,
    pub encode_max_depth: i64,
    pub decode_max_depth: i64,
    pub precision: usize,
    /// Kept and answered only: the encoder's buffer is not reused between calls either way.
    pub keep_buffer: bool,
    pub encode_invalid: InvalidNumbers,
    pub decode_invalid: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: InvalidNumbers::Refuse,
            decode_invalid: true,
        }
    }
}

/// The state's settings now.
pub(super) fn current(lua: &Lua) -> Config {
    lua.app_data_ref::<Config>().map(|c| *c).unwrap_or_default()
}

/// Puts the settings functions into the `cjson` table `t`, over settings at their defaults.
pub(super) fn install(lua: &Lua, t: &Table) -> mlua::Result<()> {
    lua.set_app_data(Config::default());
    for (name, setting) in [
        ("encode_sparse_array", sparse_array as Setting),
        ("encode_max_depth", encode_max_depth),
        ("decode_max_depth", decode_max_depth),
        ("encode_number_precision", number_precision),
        ("encode_keep_buffer", keep_buffer),
        ("encode_invalid_numbers", encode_invalid_numbers),
        ("decode_invalid_numbers", decode_invalid_numbers),
    ] {
        let f = lua.create_function(move |lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            let mut cfg = current(lua);
            let answer = setting(name, &args, &mut cfg);
            // Kept even when an argument is refused: lua-cjson has changed the settings before it by
            // then (`encode_sparse_array(true, -1)` turns conversion on, then fails).
            lua.set_app_data(cfg);
            Ok(match answer {
                Ok(values) => {
                    let mut out = vec![Value::Boolean(true)];
                    for v in values {
                        out.push(v.into_lua(lua)?);
                    }
                    MultiValue::from_vec(out)
                }
                Err(msg) => MultiValue::from_vec(vec![
                    Value::Boolean(false),
                    Value::String(lua.create_string(&msg)?),
                ]),
            })
        })?;
        t.raw_set(name, cfunc::library_function(lua, "cjson", name, f)?)?;
    }
    Ok(())
}

/// A value a setting answers.
enum Answer {
    Bool(bool),
    Int(i64),
    Str(&'static str),
}

impl Answer {
    fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        Ok(match self {
            Answer::Bool(b) => Value::Boolean(b),
            Answer::Int(i) => Value::Number(i as f64),
            Answer::Str(s) => Value::String(lua.create_string(s)?),
        })
    }
}

/// A settings function: given its name and arguments, changes `cfg` and answers the setting, or
/// lua-cjson's error (`bad argument ...`).
type Setting = fn(&str, &[Value], &mut Config) -> Result<Vec<Answer>, String>;

fn sparse_array(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 3)?;
    bool_option(name, args, 1, &mut cfg.sparse_convert)?;
    integer_option(name, args, 2, &mut cfg.sparse_ratio, 0, i32::MAX.into())?;
    integer_option(name, args, 3, &mut cfg.sparse_safe, 0, i32::MAX.into())?;
    Ok(vec![
        Answer::Bool(cfg.sparse_convert),
        Answer::Int(cfg.sparse_ratio),
        Answer::Int(cfg.sparse_safe),
    ])
}

fn encode_max_depth(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    integer_option(name, args, 1, &mut cfg.encode_max_depth, 1, i32::MAX.into())?;
    Ok(vec![Answer::Int(cfg.encode_max_depth)])
}

fn decode_max_depth(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    integer_option(name, args, 1, &mut cfg.decode_max_depth, 1, i32::MAX.into())?;
    Ok(vec![Answer::Int(cfg.decode_max_depth)])
}

fn number_precision(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    let mut p = cfg.precision as i64;
    integer_option(name, args, 1, &mut p, 1, 14)?;
    cfg.precision = p as usize;
    Ok(vec![Answer::Int(p)])
}

fn keep_buffer(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    bool_option(name, args, 1, &mut cfg.keep_buffer)?;
    Ok(vec![Answer::Bool(cfg.keep_buffer)])
}

fn encode_invalid_numbers(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    let chosen = match args.first() {
        None | Some(Value::Nil) => None,
        Some(Value::Boolean(b)) => Some(usize::from(*b)),
        Some(v) => Some(option(name, 1, v, &["off", "on", "null"])?),
    };
    if let Some(i) = chosen {
        cfg.encode_invalid = [
            InvalidNumbers::Refuse,
            InvalidNumbers::Write,
            InvalidNumbers::Null,
        ][i];
    }
    Ok(vec![match cfg.encode_invalid {
        InvalidNumbers::Refuse => Answer::Bool(false),
        InvalidNumbers::Write => Answer::Bool(true),
        InvalidNumbers::Null => Answer::Str("null"),
    }])
}

fn decode_invalid_numbers(name: &str, args: &[Value], cfg: &mut Config) -> Result<Vec<Answer>, String> {
    at_most(name, args, 1)?;
    bool_option(name, args, 1, &mut cfg.decode_invalid)?;
    Ok(vec![Answer::Bool(cfg.decode_invalid)])
}

/// `json_arg_init`: more than `n` arguments is an error naming the first one too many.
fn at_most(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() > n {
        return Err(format!(
            "bad argument #{} to '{name}' (found too many arguments)",
            n + 1
        ));
    }
    Ok(())
}

/// `json_integer_option`: argument `index` (1-based; nil or absent keeps the setting) must be a number
/// (or a string Lua reads as one), truncated to a C int, between `min` and `max`; lua-cjson names
/// argument 1 in the range error whichever argument it is.
fn integer_option(
    name: &str,
    args: &[Value],
    index: usize,
    setting: &mut i64,
    min: i64,
    max: i64,
) -> Result<(), String> {
    let n = match args.get(index - 1) {
        None | Some(Value::Nil) => return Ok(()),
        Some(Value::Integer(i)) => *i as f64,
        Some(Value::Number(n)) => *n,
        Some(Value::String(s)) => {
            lua_number(&s.as_bytes()).ok_or_else(|| type_error(name, index, "number", "string"))?
        }
        Some(other) => return Err(type_error(name, index, "number", type_name(other))),
    };
    // `lua_tointeger` truncates to a `ptrdiff_t`; lua-cjson keeps it in an `int`.
    let value = i64::from(n as i64 as i32);
    if value < min || value > max {
        return Err(format!(
            "bad argument #1 to '{name}' (expected integer between {min} and {max})"
        ));
    }
    *setting = value;
    Ok(())
}

/// `json_enum_option` with `off`/`on`: a boolean, or one of those words.
fn bool_option(name: &str, args: &[Value], index: usize, setting: &mut bool) -> Result<(), String> {
    match args.get(index - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = *b,
        Some(v) => *setting = option(name, index, v, &["off", "on"])? == 1,
    }
    Ok(())
}

/// `luaL_checkoption`: which of `options` the string (or number, as Lua writes it) `v` is.
fn option(name: &str, index: usize, v: &Value, options: &[&str]) -> Result<usize, String> {
    let text = match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Integer(i) => i.to_string().into_bytes(),
        Value::Number(n) => super::convert::fmt_g(*n, 14).into_bytes(),
        other => return Err(type_error(name, index, "string", type_name(other))),
    };
    options
        .iter()
        .position(|o| o.as_bytes() == text.as_slice())
        .ok_or_else(|| {
            format!(
                "bad argument #{index} to '{name}' (invalid option '{}')",
                String::from_utf8_lossy(&text)
            )
        })
}

fn type_error(name: &str, index: usize, expected: &str, got: &str) -> String {
    format!("bad argument #{index} to '{name}' ({expected} expected, got {got})")
}

/// A string as Lua 5.1 reads it as a number (`luaO_str2d`, over `strtod`): decimal, `inf` or `nan`, or
/// `0x` hexadecimal, with spaces around it.
fn lua_number(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s)
        .ok()?
        .trim_matches(|c: char| c.is_ascii_whitespace());
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).ok()? as f64;
        return Some(if neg { -v } else { v });
    }
    t.parse().ok()
}
