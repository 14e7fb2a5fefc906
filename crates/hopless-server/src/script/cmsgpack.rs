//! The `cmsgpack` library Redis loads (lua-cmsgpack 0.4.0): `pack`, `unpack`, `unpack_one` and
//! `unpack_limit`, byte for byte. A number that is a whole 64-bit value packs as the smallest integer
//! form, any other as a float32 when that is exact, else a float64; a table whose keys are exactly
//! 1..n packs as an array, any other as a map; tables nested past 16 levels pack as nil.

use mlua::{Lua, MultiValue, Table, Value};

use super::cfunc;

const MAX_NESTING: usize = 16;
/// Values one call returns at most.
pub(super) const MAX_RESULTS: usize = 7000;

/// The `cmsgpack` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let pack = lua.create_function(|lua, args: MultiValue| {
        if args.is_empty() {
            let msg = "bad argument #0 to 'pack' (MessagePack pack needs input.)";
            return Ok(MultiValue::from_vec(vec![
                Value::Boolean(false),
                Value::String(lua.create_string(msg)?),
            ]));
        }
        let mut out = Vec::new();
        for v in &args {
            encode(v, &mut out, 0)?;
        }
        Ok(MultiValue::from_vec(vec![
            Value::Boolean(true),
            Value::String(lua.create_string(&out)?),
        ]))
    })?;
    t.raw_set("pack", cfunc::library_function(lua, "cmsgpack", "pack", pack)?)?;
    for (name, limited) in [
        ("unpack", None),
        ("unpack_one", Some(false)),
        ("unpack_limit", Some(true)),
    ] {
        let f = lua.create_function(move |lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            unpack(lua, &args, limited)
        })?;
        t.raw_set(name, cfunc::library_function(lua, "cmsgpack", name, f)?)?;
    }
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

fn encode(v: &Value, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    match v {
        Value::String(s) => encode_bytes(&s.as_bytes(), out),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_int(*i, out),
        Value::Number(n) => {
            // lua-cmsgpack's IS_INT64_EQUIVALENT, with C's cast of an out-of-range double (the
            // smallest integer on x86-64) never equal to it.
            let as_int = if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(n) {
                *n as i64
            } else {
                i64::MIN
            };
            if n.is_finite() && as_int as f64 == *n {
                encode_int(as_int, out);
            } else {
                let f = *n as f32;
                if f64::from(f) == *n {
                    out.push(0xca);
                    out.extend_from_slice(&f.to_be_bytes());
                } else {
                    out.push(0xcb);
                    out.extend_from_slice(&n.to_be_bytes());
                }
            }
        }
        Value::Table(t) if level < MAX_NESTING => encode_table(t, out, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_bytes(s: &[u8], out: &mut Vec<u8>) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

fn encode_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// lua-cmsgpack's `table_is_an_array`: every key a whole number from 1, as many as the largest.
fn is_array(t: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0i64, 0i64);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        let n = match k {
            Value::Number(n) if n > 0.0 && n.floor() == n && n < 2_147_483_648.0 => n as i64,
            Value::Integer(i) if i > 0 => i,
            _ => return Ok(false),
        };
        max = max.max(n);
        count += 1;
    }
    Ok(max == count)
}

fn header(out: &mut Vec<u8>, len: usize, fix: u8, sixteen: u8, thirty_two: u8) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(sixteen);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(thirty_two);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn encode_table(t: &Table, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    if is_array(t)? {
        let len = t.raw_len();
        header(out, len, 0x90, 0xdc, 0xdd);
        for i in 1..=len {
            encode(&t.raw_get::<Value>(i)?, out, level + 1)?;
        }
    } else {
        // Counted, then written a pair at a time: mlua holds a reference slot for every live value
        // (about 8 000 of them), so a map of 100 000 strings must not be collected first.
        let mut len = 0;
        for pair in t.clone().pairs::<Value, Value>() {
            pair?;
            len += 1;
        }
        header(out, len, 0x80, 0xde, 0xdf);
        for pair in t.clone().pairs::<Value, Value>() {
            let (k, v) = pair?;
            encode(&k, out, level + 1)?;
            encode(&v, out, level + 1)?;
        }
    }
    Ok(())
}

/// Why decoding stopped.
enum Stop {
    Eof,
    BadFormat,
    Lua(mlua::Error),
}

impl From<mlua::Error> for Stop {
    fn from(e: mlua::Error) -> Self {
        Stop::Lua(e)
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
    /// Arrays and maps open around the value being read.
    depth: usize,
}

/// Nesting deeper than this in an input is refused (a hostile `\x91\x91...` must not overflow the
/// event loop's stack).
const MAX_DECODE_DEPTH: usize = 1000;

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Stop> {
        let b = self.s.get(self.at..self.at + n).ok_or(Stop::Eof)?;
        self.at += n;
        Ok(b)
    }

    fn be(&mut self, n: usize) -> Result<u64, Stop> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn decode(&mut self, lua: &Lua) -> Result<Value, Stop> {
        let tag = self.take(1)?[0];
        let num = |n: f64| Ok(Value::Number(n));
        match tag {
            0x00..=0x7f => num(f64::from(tag)),
            0xe0..=0xff => num(f64::from(tag as i8)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xcc => num(self.be(1)? as f64),
            0xcd => num(self.be(2)? as f64),
            0xce => num(self.be(4)? as f64),
            0xcf => num(self.be(8)? as f64),
            0xd0 => num(f64::from(self.be(1)? as u8 as i8)),
            0xd1 => num(f64::from(self.be(2)? as u16 as i16)),
            0xd2 => num(f64::from(self.be(4)? as u32 as i32)),
            0xd3 => num(self.be(8)? as i64 as f64),
            0xca => num(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => num(f64::from_bits(self.be(8)?)),
            0xa0..=0xbf => self.string(lua, usize::from(tag & 0x1f)),
            0xd9 | 0xc4 => {
                let n = self.be(1)? as usize;
                self.string(lua, n)
            }
            0xda | 0xc5 => {
                let n = self.be(2)? as usize;
                self.string(lua, n)
            }
            0xdb | 0xc6 => {
                let n = self.be(4)? as usize;
                self.string(lua, n)
            }
            0x90..=0x9f => self.array(lua, usize::from(tag & 0x0f)),
            0xdc => {
                let n = self.be(2)? as usize;
                self.array(lua, n)
            }
            0xdd => {
                let n = self.be(4)? as usize;
                self.array(lua, n)
            }
            0x80..=0x8f => self.map(lua, usize::from(tag & 0x0f)),
            0xde => {
                let n = self.be(2)? as usize;
                self.map(lua, n)
            }
            0xdf => {
                let n = self.be(4)? as usize;
                self.map(lua, n)
            }
            _ => Err(Stop::BadFormat),
        }
    }

    fn string(&mut self, lua: &Lua, n: usize) -> Result<Value, Stop> {
        let b = self.take(n)?;
        Ok(Value::String(lua.create_string(b)?))
    }

    fn array(&mut self, lua: &Lua, n: usize) -> Result<Value, Stop> {
        self.depth += 1;
        if self.depth > MAX_DECODE_DEPTH {
            return Err(Stop::BadFormat);
        }
        // Never more slots up front than bytes left: a hostile length must not reserve gigabytes.
        let t = lua.create_table_with_capacity(n.min(self.s.len() - self.at), 0)?;
        for i in 1..=n {
            let v = self.decode(lua)?;
            t.raw_set(i, v)?;
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn map(&mut self, lua: &Lua, n: usize) -> Result<Value, Stop> {
        self.depth += 1;
        if self.depth > MAX_DECODE_DEPTH {
            return Err(Stop::BadFormat);
        }
        let t = lua.create_table()?;
        for _ in 0..n {
            let k = self.decode(lua)?;
            let v = self.decode(lua)?;
            if matches!(k, Value::Nil) {
                return Err(Stop::Lua(mlua::Error::runtime("table index is nil")));
            }
            t.raw_set(k, v)?;
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }
}

/// `unpack` (every value), `unpack_one` (`limited` false: one, after the offset) and `unpack_limit`
/// (`limited` true: at most the limit): the values, after the offset to go on from (-1 at the end) for
/// the last two.
fn unpack(lua: &Lua, args: &[Value], limited: Option<bool>) -> mlua::Result<MultiValue> {
    let fail = |msg: String| -> mlua::Result<MultiValue> {
        Ok(MultiValue::from_vec(vec![
            Value::Boolean(false),
            Value::String(lua.create_string(&msg)?),
        ]))
    };
    let name = match limited {
        None => "unpack",
        Some(false) => "unpack_one",
        Some(true) => "unpack_limit",
    };
    let s = match args.first() {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Number(n)) => super::convert::fmt_g(*n, 14).into_bytes(),
        other => {
            let got = other.map_or("no value", |v| v.type_name());
            return fail(format!(
                "bad argument #1 to '{name}' (string expected, got {got})"
            ));
        }
    };
    let int_arg = |i: usize| -> i64 {
        match args.get(i) {
            Some(Value::Number(n)) => *n as i64,
            Some(Value::Integer(n)) => *n,
            _ => 0,
        }
    };
    let (limit, offset) = match limited {
        None => (0, 0),
        Some(false) => (1, int_arg(1)),
        Some(true) => (int_arg(1), int_arg(2)),
    };
    if offset < 0 || limit < 0 {
        return fail(format!(
            "Invalid request to unpack with offset of {offset} and limit of {limit}."
        ));
    }
    let offset = offset as usize;
    if offset > s.len() {
        return fail(format!(
            "Start offset {offset} greater than input length {}.",
            s.len()
        ));
    }
    let mut c = Cursor {
        s: &s,
        at: offset,
        depth: 0,
    };
    let mut values = vec![Value::Boolean(true)];
    if limited.is_some() {
        values.push(Value::Nil);
    }
    let mut count = 0;
    while c.at < s.len() && (limit == 0 || count < limit) {
        // Lua's C stack holds the results: past its room Lua's own unpack refuses too (and mlua has a
        // reference slot for each live value, about 8 000 of them).
        if count >= MAX_RESULTS as i64 {
            return fail("too many results to unpack".into());
        }
        match c.decode(lua) {
            Ok(v) => values.push(v),
            Err(Stop::Eof) => return fail("Missing bytes in input.".into()),
            Err(Stop::BadFormat) => return fail("Bad data format in input.".into()),
            Err(Stop::Lua(e)) => return Err(e),
        }
        count += 1;
    }
    if limited.is_some() {
        values[1] = Value::Number(if c.at < s.len() { c.at as f64 } else { -1.0 });
    }
    Ok(MultiValue::from_vec(values))
}
