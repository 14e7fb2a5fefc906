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
use super::convert::fmt_g;

const MAX_DEPTH: usize = 1000;
const PRECISION: usize = 14;
/// lua-cjson's sparse-array test: refused when `max > items * RATIO && max > SAFE`.
const SPARSE_RATIO: u64 = 2;
const SPARSE_SAFE: u64 = 10;

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Lua's name of a value's type (`lua_typename`).
fn type_name(v: &Value) -> &'static str {
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
        Ok(match encode_value(&v, &mut out, 0) {
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
        let mut p = Decoder {
            lua,
            s: &text,
            at: 0,
            depth: 0,
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
    // The settings, answered as lua-cjson's defaults (Redis's scripts never change them).
    for (name, values) in [
        (
            "encode_sparse_array",
            &[Value::Boolean(false), Value::Integer(2), Value::Integer(10)][..],
        ),
        ("encode_max_depth", &[Value::Integer(1000)][..]),
        ("decode_max_depth", &[Value::Integer(1000)][..]),
        ("encode_number_precision", &[Value::Integer(14)][..]),
        ("encode_keep_buffer", &[Value::Boolean(true)][..]),
        ("encode_invalid_numbers", &[Value::Boolean(false)][..]),
        ("decode_invalid_numbers", &[Value::Boolean(true)][..]),
    ] {
        let values: Vec<Value> = values.to_vec();
        t.raw_set(
            name,
            lua.create_function(move |_, _: MultiValue| Ok(MultiValue::from_vec(values.clone())))?,
        )?;
    }
    Ok(t)
}

fn encode_value(v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // Lua 5.1's numbers are doubles; mlua hands whole ones over as integers.
        Value::Integer(i) => encode_number(*i as f64, out)?,
        Value::Number(n) => encode_number(*n, out)?,
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => encode_table(t, out, depth + 1)?,
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ))
        }
    }
    Ok(())
}

fn encode_number(n: f64, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() {
        return Err("Cannot serialise number: must not be NaN or Inf".into());
    }
    out.extend_from_slice(fmt_g(n, PRECISION).as_bytes());
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
/// otherwise; an error for an excessively sparse array.
fn array_length(t: &Table) -> Result<Option<u64>, String> {
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
    if max > items * SPARSE_RATIO && max > SPARSE_SAFE {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok(Some(max))
}

fn encode_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
    match array_length(t)? {
        Some(len) if len > 0 => {
            out.push(b'[');
            for i in 1..=len {
                if i > 1 {
                    out.push(b',');
                }
                let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                encode_value(&v, out, depth)?;
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
                        encode_number(*n, out)?;
                        out.push(b'"');
                    }
                    Value::Integer(i) => {
                        out.push(b'"');
                        encode_number(*i as f64, out)?;
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
                encode_value(&v, out, depth)?;
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
    depth: usize,
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

    fn descend(&mut self, at: usize) -> Result<(), DecodeError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep(self.depth, at));
        }
        Ok(())
    }

    fn object(&mut self, at: usize) -> Result<Value, DecodeError> {
        self.descend(at)?;
        let t = self.lua.create_table()?;
        let (mut tok, mut tok_at) = self.next();
        if tok == Token::ObjEnd {
            self.depth -= 1;
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
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn array(&mut self, at: usize) -> Result<Value, DecodeError> {
        self.descend(at)?;
        let t = self.lua.create_table()?;
        let (mut tok, mut tok_at) = self.next();
        if tok == Token::ArrEnd {
            self.depth -= 1;
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
        self.depth -= 1;
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
            b'-' | b'0'..=b'9' => (self.number(), at),
            b't' => (self.word(b"true", Token::Bool(true)), at),
            b'f' => (self.word(b"false", Token::Bool(false)), at),
            b'n' => (self.word(b"null", Token::Null), at),
            _ => (Token::Error("invalid token"), at),
        }
    }

    fn word(&mut self, w: &[u8], t: Token) -> Token {
        if self.s[self.at..].starts_with(w) {
            self.at += w.len();
            t
        } else {
            Token::Error("invalid token")
        }
    }

    fn number(&mut self) -> Token {
        let start = self.at;
        let mut end = start;
        let s = self.s;
        let digits = |mut i: usize| {
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        if s.get(end) == Some(&b'-') {
            end += 1;
        }
        let int_end = digits(end);
        let mut any = int_end > end;
        end = int_end;
        if s.get(end) == Some(&b'.') {
            let frac_end = digits(end + 1);
            any |= frac_end > end + 1;
            end = frac_end;
        }
        if any && matches!(s.get(end), Some(b'e' | b'E')) {
            let mut e = end + 1;
            if matches!(s.get(e), Some(b'+' | b'-')) {
                e += 1;
            }
            let exp_end = digits(e);
            if exp_end > e {
                end = exp_end;
            }
        }
        let parsed = std::str::from_utf8(&s[start..end])
            .ok()
            .filter(|_| any)
            .and_then(|t| t.parse::<f64>().ok());
        match parsed {
            Some(n) => {
                self.at = end;
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
