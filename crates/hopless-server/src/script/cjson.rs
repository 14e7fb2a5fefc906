//! The `cjson` library Redis loads (lua-cjson 2.1.0, with its defaults): `encode` and `decode` with its
//! output and its error messages, `null`, and the settings functions answering the defaults.
//!
//! Encoding: numbers as `%.14g` (NaN and infinities refused), strings escaped as lua-cjson escapes them
//! (`/` too), a table as an array when every key is a whole number from 1 (holes become `null`;
//! refused when more than half are holes past index 10), else as an object (number keys written as
//! strings); an empty table is `{}`. Decoding: `null` is `cjson.null`; errors name the token found and
//! its position, as lua-cjson's do.

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::cfunc;
use super::cjson_config::{self, Config, InvalidNumbers};
use super::convert::{fmt_g, type_name};
use super::strtod::strtod;

/// How `decode` writes a number argument before reading it (Lua's `%.14g`).
const PRECISION: usize = 14;

/// The stack slots a C function may use (Lua 5.1's `LUAI_MAXCSTACK`): lua-cjson checks for room
/// before each nested table, so past the depth settings this is what limits nesting.
const LUA_MAX_C_STACK: usize = 8000;

/// The Lua references the tables around a nested one may hold here (each Lua value Rust holds takes one
/// of mlua's, which has about 8 000 and cannot run out safely): a little under lua-cjson's own limit,
/// so that only a document nested some 3 900 objects or 7 800 arrays deep, past the default depth
/// limit of 1 000, is refused earlier than Redis refuses it.
const REF_BUDGET: usize = 7800;

/// How deep a nested table is, the stack slots lua-cjson would hold for the tables around it (one per
/// array, two per object: the table and the key) and the references this code holds for them.
#[derive(Clone, Copy)]
struct Nesting {
    depth: usize,
    slots: usize,
    refs: usize,
}

impl Nesting {
    /// Outside any table: the argument takes one slot.
    const TOP: Nesting = Nesting {
        depth: 0,
        slots: 1,
        refs: 0,
    };

    /// One table deeper.
    fn deeper(self) -> Nesting {
        Nesting {
            depth: self.depth + 1,
            ..self
        }
    }

    /// Inside the table entered here, which holds `slots` of stack and `refs` references while its
    /// values are read.
    fn holding(self, slots: usize, refs: usize) -> Nesting {
        Nesting {
            slots: self.slots + slots,
            refs: self.refs + refs,
            ..self
        }
    }

    /// Whether a table entered here fits: within `max` deep, with `room` slots left, and references
    /// to spare.
    fn fits(self, max: usize, room: usize) -> bool {
        self.depth <= max && self.slots + room <= LUA_MAX_C_STACK && self.refs <= REF_BUDGET
    }
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The `cjson` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let encode = lua.create_function(|lua, args: MultiValue| {
        if args.len() != 1 {
            let msg = "bad argument #1 to 'encode' (expected 1 argument)";
            return Ok((false, Value::String(lua.create_string(msg)?)));
        }
        let v = args.into_iter().next().unwrap_or(Value::Nil);
        let mut out = Vec::new();
        let cfg = cjson_config::current(lua);
        Ok(match encode_value(&cfg, &v, &mut out, Nesting::TOP) {
            Ok(()) => (true, Value::String(lua.create_string(&out)?)),
            Err(msg) => (false, Value::String(lua.create_string(&msg)?)),
        })
    })?;
    t.raw_set("encode", cfunc::library_function(lua, "cjson", "encode", encode)?)?;
    let decode = lua.create_function(|lua, args: MultiValue| {
        if args.len() != 1 {
            let msg = "bad argument #1 to 'decode' (expected 1 argument)";
            return Ok((false, Value::String(lua.create_string(msg)?)));
        }
        let text = match args.into_iter().next() {
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            Some(Value::Number(n)) => super::convert::fmt_g(n, PRECISION).into_bytes(),
            other => {
                let name = type_name(&other.unwrap_or(Value::Nil));
                let msg = format!("bad argument #1 to 'decode' (string expected, got {name})");
                return Ok((false, Value::String(lua.create_string(&msg)?)));
            }
        };
        // lua-cjson reads its input as a C string: a NUL byte ends it.
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let cfg = cjson_config::current(lua);
        let mut p = Decoder {
            lua,
            s: &text[..end],
            at: 0,
            nesting: Nesting::TOP,
            max_depth: cfg.decode_max_depth as usize,
            invalid_numbers: cfg.decode_invalid,
        };
        Ok(match p.document() {
            Ok(v) => (true, v),
            Err(e) => (false, Value::String(lua.create_string(e.message())?)),
        })
    })?;
    t.raw_set("decode", cfunc::library_function(lua, "cjson", "decode", decode)?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    cjson_config::install(lua, &t)?;
    Ok(t)
}

fn encode_value(cfg: &Config, v: &Value, out: &mut Vec<u8>, at: Nesting) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // Lua 5.1's numbers are doubles; mlua hands whole ones over as integers.
        Value::Integer(i) => encode_number(cfg, *i as f64, out)?,
        Value::Number(n) => encode_number(cfg, *n, out)?,
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => encode_table(cfg, t, out, at.deeper())?,
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ))
        }
    }
    Ok(())
}

fn encode_number(cfg: &Config, n: f64, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() {
        match cfg.encode_invalid {
            InvalidNumbers::Refuse => return Err("Cannot serialise number: must not be NaN or Inf".into()),
            InvalidNumbers::Null => out.extend_from_slice(b"null"),
            InvalidNumbers::Write if n.is_nan() => out.extend_from_slice(b"nan"),
            InvalidNumbers::Write if n > 0.0 => out.extend_from_slice(b"inf"),
            InvalidNumbers::Write => out.extend_from_slice(b"-inf"),
        }
        return Ok(());
    }
    out.extend_from_slice(fmt_g(n, cfg.precision).as_bytes());
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// lua-cjson's `lua_array_length`: the largest key when every key is a whole number from 1, `None`
/// otherwise (an object), or an error for an excessively sparse array when sparse arrays are not
/// converted to objects.
fn array_length(cfg: &Config, t: &Table) -> Result<Option<u64>, String> {
    let (mut max, mut items) = (0u64, 0u64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        match k {
            Value::Number(n) if n >= 1.0 && n.floor() == n => {
                max = max.max(n as u64);
                items += 1;
            }
            Value::Integer(i) if i >= 1 => {
                max = max.max(i as u64);
                items += 1;
            }
            _ => return Ok(None),
        }
    }
    let (ratio, safe) = (cfg.sparse_ratio as u64, cfg.sparse_safe as u64);
    if ratio > 0 && max > items.saturating_mul(ratio) && max > safe {
        if !cfg.sparse_convert {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        return Ok(None);
    }
    Ok(Some(max))
}

/// A table at nesting `at` (its depth counted): an array or an object, as [`array_length`] decides.
fn encode_table(cfg: &Config, t: &Table, out: &mut Vec<u8>, at: Nesting) -> Result<(), String> {
    // lua-cjson asks for three slots: the key, the value and an error message.
    if !at.fits(cfg.encode_max_depth as usize, 3) {
        return Err(format!("Cannot serialise, excessive nesting ({})", at.depth));
    }
    match array_length(cfg, t)? {
        Some(len) if len > 0 => {
            out.push(b'[');
            for i in 1..=len {
                if i > 1 {
                    out.push(b',');
                }
                let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                encode_value(cfg, &v, out, at.holding(1, 1))?;
            }
            out.push(b']');
        }
        _ => {
            out.push(b'{');
            let mut first = true;
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                if !first {
                    out.push(b',');
                }
                first = false;
                match &k {
                    Value::String(s) => encode_string(&s.as_bytes(), out),
                    Value::Number(n) => {
                        out.push(b'"');
                        encode_number(cfg, *n, out)?;
                        out.push(b'"');
                    }
                    Value::Integer(i) => {
                        out.push(b'"');
                        encode_number(cfg, *i as f64, out)?;
                        out.push(b'"');
                    }
                    other => {
                        return Err(format!(
                            "Cannot serialise {}: table key must be a number or string",
                            type_name(other)
                        ))
                    }
                }
                out.push(b':');
                encode_value(cfg, &v, out, at.holding(2, 2))?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// A lexical token of lua-cjson's decoder.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// T_ERROR, with lua-cjson's word for what went wrong.
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(what) => what,
        }
    }
}

/// A decoding error: what was expected, the token found, and where it starts (0-based).
enum DecodeError {
    Expected(&'static str, Token, usize),
    TooDeep(usize, usize),
    Lua(String),
}

impl DecodeError {
    fn message(&self) -> String {
        match self {
            DecodeError::Expected(what, found, at) => {
                format!(
                    "Expected {what} but found {} at character {}",
                    found.name(),
                    at + 1
                )
            }
            DecodeError::TooDeep(depth, at) => {
                format!(
                    "Found too many nested data structures ({depth}) at character {}",
                    at + 1
                )
            }
            DecodeError::Lua(e) => e.clone(),
        }
    }
}

impl From<mlua::Error> for DecodeError {
    fn from(e: mlua::Error) -> Self {
        DecodeError::Lua(e.to_string())
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    at: usize,
    /// Where the value being read sits.
    nesting: Nesting,
    max_depth: usize,
    /// `decode_invalid_numbers`: `strtod`'s other forms (hexadecimal, `inf`, `nan`, a `+` or leading
    /// zeros) read as numbers.
    invalid_numbers: bool,
}

impl Decoder<'_> {
    fn document(&mut self) -> Result<Value, DecodeError> {
        let (t, at) = self.next();
        let v = self.value(t, at)?;
        match self.next() {
            (Token::End, _) => Ok(v),
            (t, at) => Err(DecodeError::Expected("the end", t, at)),
        }
    }

    fn value(&mut self, t: Token, at: usize) -> Result<Value, DecodeError> {
        Ok(match t {
            Token::Str(s) => Value::String(self.lua.create_string(&s)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => self.object(at)?,
            Token::ArrBegin => self.array(at)?,
            t => return Err(DecodeError::Expected("value", t, at)),
        })
    }

    /// Enters the table starting at `at`, whose values hold `slots` of lua-cjson's stack: the nesting
    /// to go back to after it, or the error when it is too deep (lua-cjson asks for two slots).
    fn descend(&mut self, at: usize, slots: usize) -> Result<Nesting, DecodeError> {
        let outer = self.nesting;
        let here = outer.deeper();
        if !here.fits(self.max_depth, 2) {
            return Err(DecodeError::TooDeep(here.depth, at));
        }
        self.nesting = here.holding(slots, 1);
        Ok(outer)
    }

    fn object(&mut self, at: usize) -> Result<Value, DecodeError> {
        let outer = self.descend(at, 2)?;
        let t = self.lua.create_table()?;
        let (mut tok, mut tok_at) = self.next();
        if tok == Token::ObjEnd {
            self.nesting = outer;
            return Ok(Value::Table(t));
        }
        loop {
            let Token::Str(key) = tok else {
                return Err(DecodeError::Expected("object key string", tok, tok_at));
            };
            match self.next() {
                (Token::Colon, _) => {}
                (other, at) => return Err(DecodeError::Expected("colon", other, at)),
            }
            let (vt, vat) = self.next();
            let v = self.value(vt, vat)?;
            t.raw_set(self.lua.create_string(&key)?, v)?;
            match self.next() {
                (Token::ObjEnd, _) => break,
                (Token::Comma, _) => {}
                (other, at) => return Err(DecodeError::Expected("comma or object end", other, at)),
            }
            (tok, tok_at) = self.next();
        }
        self.nesting = outer;
        Ok(Value::Table(t))
    }

    fn array(&mut self, at: usize) -> Result<Value, DecodeError> {
        let outer = self.descend(at, 1)?;
        let t = self.lua.create_table()?;
        let (mut tok, mut tok_at) = self.next();
        if tok == Token::ArrEnd {
            self.nesting = outer;
            return Ok(Value::Table(t));
        }
        let mut i = 1;
        loop {
            let v = self.value(tok, tok_at)?;
            t.raw_set(i, v)?;
            i += 1;
            match self.next() {
                (Token::ArrEnd, _) => break,
                (Token::Comma, _) => {}
                (other, at) => return Err(DecodeError::Expected("comma or array end", other, at)),
            }
            (tok, tok_at) = self.next();
        }
        self.nesting = outer;
        Ok(Value::Table(t))
    }

    /// The next token and where it starts.
    fn next(&mut self) -> (Token, usize) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
        let at = self.at;
        let Some(&c) = self.s.get(at) else {
            return (Token::End, at);
        };
        let single = |t: Token, d: &mut Self| {
            d.at += 1;
            (t, at)
        };
        match c {
            b'{' => single(Token::ObjBegin, self),
            b'}' => single(Token::ObjEnd, self),
            b'[' => single(Token::ArrBegin, self),
            b']' => single(Token::ArrEnd, self),
            b':' => single(Token::Colon, self),
            b',' => single(Token::Comma, self),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' if !self.invalid_numbers && self.invalid_number() => {
                (Token::Error("invalid number"), at)
            }
            b'-' | b'0'..=b'9' => (self.number(), at),
            b't' | b'f' | b'n' | b'N' | b'i' | b'I' | b'+' => (self.word(), at),
            _ => (Token::Error("invalid token"), at),
        }
    }

    /// A token starting with a letter or `+`: `true`, `false`, `null`, or (when invalid numbers are
    /// read) `inf` and `nan` as numbers.
    fn word(&mut self) -> Token {
        for (w, t) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if self.s[self.at..].starts_with(w) {
                self.at += w.len();
                return t;
            }
        }
        if self.invalid_numbers && self.invalid_number() {
            self.number()
        } else {
            Token::Error("invalid token")
        }
    }

    /// lua-cjson's `json_is_invalid_number`: a `+`, a leading zero, hexadecimal, `inf` or `nan` here.
    fn invalid_number(&self) -> bool {
        let s = &self.s[self.at..];
        if s.first() == Some(&b'+') {
            return true;
        }
        let p = &s[usize::from(s.first() == Some(&b'-'))..];
        match p.first() {
            Some(b'0') => p.get(1).is_some_and(|&c| c | 0x20 == b'x' || c.is_ascii_digit()),
            Some(&c) if c > b'9' => {
                let lower = |k: usize| p.get(..k).map(<[u8]>::to_ascii_lowercase);
                lower(3).is_some_and(|w| w == b"inf" || w == b"nan")
            }
            _ => false,
        }
    }

    /// A number, read as lua-cjson reads it (`strtod`).
    fn number(&mut self) -> Token {
        match strtod(&self.s[self.at..]) {
            Some((n, len)) => {
                self.at += len;
                Token::Num(n)
            }
            None => Token::Error("invalid number"),
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.s.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    }

    /// A string token; an error is placed where the scan stopped (the backslash of a bad escape, the end
    /// of an unterminated string), as lua-cjson places it.
    fn string(&mut self) -> (Token, usize) {
        let at = self.at;
        let mut out = Vec::new();
        let mut i = self.at + 1;
        loop {
            let Some(&c) = self.s.get(i) else {
                return (Token::Error("unexpected end of string"), i);
            };
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(i + 1) else {
                        return (Token::Error("invalid escape code"), i);
                    };
                    let plain = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        _ => None,
                    };
                    if let Some(b) = plain {
                        out.push(b);
                        i += 2;
                        continue;
                    }
                    if e != b'u' {
                        return (Token::Error("invalid escape code"), i);
                    }
                    let Some(mut cp) = self.hex4(i + 2) else {
                        return (Token::Error("invalid unicode escape code"), i);
                    };
                    let escape_at = i;
                    i += 6;
                    if (0xd800..0xdc00).contains(&cp) {
                        // A high surrogate: its low half must follow.
                        let low = (self.s.get(i) == Some(&b'\\') && self.s.get(i + 1) == Some(&b'u'))
                            .then(|| self.hex4(i + 2))
                            .flatten()
                            .filter(|l| (0xdc00..0xe000).contains(l));
                        let Some(low) = low else {
                            return (Token::Error("invalid unicode escape code"), escape_at);
                        };
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        i += 6;
                    } else if (0xdc00..0xe000).contains(&cp) {
                        return (Token::Error("invalid unicode escape code"), escape_at);
                    }
                    let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        self.at = i + 1;
        (Token::Str(out), at)
    }
}
