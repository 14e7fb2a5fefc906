//! The `bit` library Redis loads (Lua BitOp 1.0): 32-bit operations on Lua numbers, each argument
//! brought to a signed 32-bit integer as BitOp does (rounded to nearest, then taken modulo 2^32).

use mlua::{Lua, MultiValue, Table, Value};

/// BitOp's `tobit`: the number rounded to nearest (ties to even, as its floating-point trick does),
/// modulo 2^32, as a signed 32-bit integer.
fn tobit(x: f64) -> i32 {
    if !x.is_finite() {
        return 0;
    }
    let r = x.round_ties_even();
    (r.rem_euclid(4_294_967_296.0) as u64 as u32) as i32
}

fn arg(lua: &Lua, name: &str, args: &[Value], at: usize) -> mlua::Result<i32> {
    let v = args.get(at).cloned().unwrap_or(Value::Nil);
    let type_name = v.type_name();
    match lua.coerce_number(v)? {
        Some(n) => Ok(tobit(n)),
        None => Err(mlua::Error::runtime(format!(
            "bad argument #{} to '{name}' (number expected, got {type_name})",
            at + 1
        ))),
    }
}

/// A function of BitOp over the first `n` arguments (at least one), folding the rest for `band`,
/// `bor` and `bxor`.
fn fold(lua: &Lua, name: &'static str, op: fn(i32, i32) -> i32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        let mut acc = arg(lua, name, &args, 0)?;
        for i in 1..args.len() {
            acc = op(acc, arg(lua, name, &args, i)?);
        }
        Ok(f64::from(acc))
    })
}

fn shift(lua: &Lua, name: &'static str, op: fn(i32, u32) -> i32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        let x = arg(lua, name, &args, 0)?;
        let n = arg(lua, name, &args, 1)? as u32 & 31;
        Ok(f64::from(op(x, n)))
    })
}

/// The `bit` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "tobit",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            Ok(f64::from(arg(lua, "tobit", &args, 0)?))
        })?,
    )?;
    t.raw_set(
        "bnot",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            Ok(f64::from(!arg(lua, "bnot", &args, 0)?))
        })?,
    )?;
    t.raw_set(
        "bswap",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            Ok(f64::from(arg(lua, "bswap", &args, 0)?.swap_bytes()))
        })?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            let x = arg(lua, "tohex", &args, 0)? as u32;
            let n = if matches!(args.get(1), None | Some(Value::Nil)) {
                8
            } else {
                arg(lua, "tohex", &args, 1)?
            };
            let upper = n < 0;
            let n = n.unsigned_abs().min(8) as usize;
            let s = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(s[8 - n..].to_string())
        })?,
    )?;
    t.raw_set("band", fold(lua, "band", |a, b| a & b)?)?;
    t.raw_set("bor", fold(lua, "bor", |a, b| a | b)?)?;
    t.raw_set("bxor", fold(lua, "bxor", |a, b| a ^ b)?)?;
    t.raw_set("lshift", shift(lua, "lshift", |x, n| ((x as u32) << n) as i32)?)?;
    t.raw_set("rshift", shift(lua, "rshift", |x, n| ((x as u32) >> n) as i32)?)?;
    t.raw_set("arshift", shift(lua, "arshift", |x, n| x >> n)?)?;
    t.raw_set("rol", shift(lua, "rol", |x, n| (x as u32).rotate_left(n) as i32)?)?;
    t.raw_set(
        "ror",
        shift(lua, "ror", |x, n| (x as u32).rotate_right(n) as i32)?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::tobit;

    #[test]
    fn tobit_wraps_and_rounds_as_bitop() {
        assert_eq!(tobit(4_294_967_295.0), -1);
        assert_eq!(tobit(4_294_967_296.0), 0);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(2.5), 2);
        assert_eq!(tobit(3.5), 4);
        assert_eq!(tobit(2_147_483_648.0), i32::MIN);
    }
}
