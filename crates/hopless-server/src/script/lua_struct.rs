//! The `struct` library Redis loads (Roberto Ierusalimschy's struct, as Redis ships it): `pack`,
//! `unpack` and `size` over a format of `<` `>` (endianness, native little by default), `!n` (largest
//! alignment, 1 by default), `x` (a zero byte), `b B h H l L T i[n] I[n]` (integers of 1, 2, 8, 8 and n
//! bytes, 4 by default), `f d` (floats), `c[n]` (n bytes; `c0`: all of it, or the previous number's
//! length when unpacking) and `s` (zero-terminated). Errors are the library's texts.

use mlua::{Lua, MultiValue, Table, Value};

use super::cfunc;

const MAX_INT_SIZE: usize = 32;
const MAX_ALIGN: usize = 8;

struct Header {
    little: bool,
    align: usize,
}

/// A format's cursor.
struct Format<'a> {
    s: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.s.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    /// The digits after an option, or `default`.
    fn num(&mut self, default: usize) -> Result<usize, String> {
        if !self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: usize = 0;
        while let Some(&d) = self.s.get(self.at).filter(|d| d.is_ascii_digit()) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(usize::from(d - b'0')))
                .filter(|&n| n <= i32::MAX as usize)
                .ok_or("integral size overflow")?;
            self.at += 1;
        }
        Ok(n)
    }

    /// The size of option `opt` (reading its number), 0 for the options that are not data.
    fn size(&mut self, opt: u8) -> Result<usize, String> {
        Ok(match opt {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let n = self.num(4)?;
                if n > MAX_INT_SIZE {
                    return Err(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    ));
                }
                n
            }
            _ => 0,
        })
    }

    /// `<`, `>`, `!` and ` `; an error for anything else (`name`: the function's, for it).
    fn control(&mut self, opt: u8, h: &mut Header, name: &str) -> Result<(), String> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.num(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(format!("alignment {a} is not a power of 2"));
                }
                h.align = a;
            }
            other => {
                return Err(bad_arg(
                    1,
                    name,
                    &format!("invalid format option '{}'", other as char),
                ))
            }
        }
        Ok(())
    }
}

/// Padding before a field of `size` bytes at offset `len`.
fn to_align(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn bad_arg(n: usize, name: &str, msg: &str) -> String {
    format!("bad argument #{n} to '{name}' ({msg})")
}

fn number(lua: &Lua, args: &[Value], i: usize, name: &str) -> Result<f64, String> {
    let v = args.get(i).cloned().unwrap_or(Value::Nil);
    let tn = v.type_name();
    match lua.coerce_number(v) {
        Ok(Some(n)) => Ok(n),
        _ => Err(bad_arg(i + 1, name, &format!("number expected, got {tn}"))),
    }
}

fn string(lua: &Lua, args: &[Value], i: usize, name: &str) -> Result<Vec<u8>, String> {
    let v = args.get(i).cloned().unwrap_or(Value::Nil);
    let tn = v.type_name();
    match lua.coerce_string(v) {
        Ok(Some(s)) => Ok(s.as_bytes().to_vec()),
        _ => Err(bad_arg(i + 1, name, &format!("string expected, got {tn}"))),
    }
}

fn put_int(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    // C's conversion, as the library does it: negative numbers through a signed 64-bit integer.
    let mut v: u64 = if n < 0.0 { n as i64 as u64 } else { n as u64 };
    let mut bytes = vec![0u8; size];
    for i in 0..size {
        let at = if little { i } else { size - 1 - i };
        bytes[at] = (v & 0xff) as u8;
        v = v.checked_shr(8).unwrap_or(0);
    }
    out.extend_from_slice(&bytes);
}

fn pack(lua: &Lua, args: &[Value]) -> Result<Vec<u8>, String> {
    let fmt = string(lua, args, 0, "pack")?;
    let mut f = Format { s: &fmt, at: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut out = Vec::new();
    let mut arg = 1;
    while let Some(opt) = f.next() {
        let mut size = f.size(opt)?;
        let pad = to_align(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                put_int(&mut out, number(lua, args, arg, "pack")?, h.little, size);
                arg += 1;
            }
            b'x' => out.push(0),
            b'f' => {
                let x = number(lua, args, arg, "pack")? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    x.to_le_bytes()
                } else {
                    x.to_be_bytes()
                });
            }
            b'd' => {
                let x = number(lua, args, arg, "pack")?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    x.to_le_bytes()
                } else {
                    x.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = string(lua, args, arg, "pack")?;
                arg += 1;
                if opt == b's' {
                    out.extend_from_slice(&s);
                    out.push(0);
                    size = 0;
                } else {
                    if size == 0 {
                        size = s.len();
                    }
                    if s.len() < size {
                        // The library names the argument after the string's.
                        return Err(bad_arg(arg + 1, "pack", "string too short"));
                    }
                    out.extend_from_slice(&s[..size]);
                }
                let _ = size;
            }
            other => f.control(other, &mut h, "pack")?,
        }
    }
    Ok(out)
}

fn get_int(b: &[u8], little: bool, signed: bool) -> f64 {
    let size = b.len();
    let mut v: u64 = 0;
    for i in 0..size {
        let byte = if little { b[size - 1 - i] } else { b[i] };
        v = v.checked_shl(8).unwrap_or(0) | u64::from(byte);
    }
    if signed && size < 8 {
        let shift = 64 - 8 * size as u32;
        ((v << shift) as i64 >> shift) as f64
    } else if signed {
        v as i64 as f64
    } else {
        v as f64
    }
}

fn unpack(lua: &Lua, args: &[Value]) -> Result<Vec<Value>, String> {
    let fmt = string(lua, args, 0, "unpack")?;
    let data = string(lua, args, 1, "unpack")?;
    let mut pos = match args.get(2) {
        None | Some(Value::Nil) => 0,
        Some(_) => {
            let p = number(lua, args, 2, "unpack")?;
            (p as i64 - 1).max(0) as usize
        }
    };
    if pos > data.len() {
        return Err(bad_arg(3, "unpack", "offset must be 1 or greater"));
    }
    let mut f = Format { s: &fmt, at: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut out: Vec<Value> = Vec::new();
    let str_value = |b: &[u8]| -> Result<Value, String> {
        lua.create_string(b).map(Value::String).map_err(|e| e.to_string())
    };
    while let Some(opt) = f.next() {
        if out.len() >= super::cmsgpack::MAX_RESULTS {
            return Err("too many results to unpack".into());
        }
        let mut size = f.size(opt)?;
        pos += to_align(pos, &h, opt, size);
        if pos + size > data.len() {
            return Err(bad_arg(2, "unpack", "data string too short"));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                out.push(Value::Number(get_int(&data[pos..pos + size], h.little, signed)));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4]
                    .try_into()
                    .map_err(|_| "data string too short")?;
                let x = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f64::from(x)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8]
                    .try_into()
                    .map_err(|_| "data string too short")?;
                let x = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(x));
            }
            b'c' => {
                if size == 0 {
                    size = match out.pop() {
                        Some(Value::Number(n)) => n as usize,
                        Some(Value::Integer(n)) => n as usize,
                        _ => return Err("format 'c0' needs a previous size".into()),
                    };
                }
                if pos + size > data.len() {
                    return Err(bad_arg(2, "unpack", "data string too short"));
                }
                out.push(str_value(&data[pos..pos + size])?);
            }
            b's' => {
                let end = data[pos..]
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or("unfinished string in data")?;
                out.push(str_value(&data[pos..pos + end])?);
                size = end + 1;
            }
            other => f.control(other, &mut h, "unpack")?,
        }
        pos += size;
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(out)
}

fn size(lua: &Lua, args: &[Value]) -> Result<f64, String> {
    let fmt = string(lua, args, 0, "size")?;
    let mut f = Format { s: &fmt, at: 0 };
    let mut h = Header {
        little: true,
        align: 1,
    };
    let mut total = 0usize;
    while let Some(opt) = f.next() {
        let size = f.size(opt)?;
        total += to_align(total, &h, opt, size);
        if opt == b's' {
            return Err(bad_arg(1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(bad_arg(1, "size", "option 'c0' has no fixed size"));
        }
        if size == 0 {
            f.control(opt, &mut h, "size")?;
        }
        total += size;
    }
    Ok(total as f64)
}

/// The `struct` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let answer = |lua: &Lua, r: Result<Vec<Value>, String>| -> mlua::Result<MultiValue> {
        Ok(MultiValue::from_vec(match r {
            Ok(mut values) => {
                values.insert(0, Value::Boolean(true));
                values
            }
            Err(msg) => vec![Value::Boolean(false), Value::String(lua.create_string(&msg)?)],
        }))
    };
    let f = lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        let r = pack(lua, &args).and_then(|b| {
            lua.create_string(&b)
                .map(|s| vec![Value::String(s)])
                .map_err(|e| e.to_string())
        });
        answer(lua, r)
    })?;
    t.raw_set("pack", cfunc::library_function(lua, "struct", "pack", f)?)?;
    let f = lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        answer(lua, unpack(lua, &args))
    })?;
    t.raw_set("unpack", cfunc::library_function(lua, "struct", "unpack", f)?)?;
    let f = lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        answer(lua, size(lua, &args).map(|n| vec![Value::Number(n)]))
    })?;
    t.raw_set("size", cfunc::library_function(lua, "struct", "size", f)?)?;
    Ok(t)
}
