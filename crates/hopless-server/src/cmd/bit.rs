//! Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO. Arguments are checked in
//! Redis 7.0's order (some before the key is looked up, some after), so a bad argument gets the error
//! Redis gives, and a missing key answers what Redis answers even when a later argument is bad.

use bytes::Bytes;
use hopless_kv::bitmap::{self, BitOp, BitUnit, BitfieldOp, FieldOp, FieldType, Overflow};
use hopless_kv::store::parse_i64;

use super::command::{int_arg, Command, Ctx};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("setbit", 4, "write denyoom", setbit).keys(1, 1, 1),
    Command::new("getbit", 3, "readonly fast", getbit).keys(1, 1, 1),
    Command::new("bitcount", -2, "readonly", bitcount).keys(1, 1, 1),
    Command::new("bitpos", -3, "readonly", bitpos).keys(1, 1, 1),
    Command::new("bitop", -4, "write denyoom", bitop).keys(2, -1, 1),
    Command::new("bitfield", -2, "write denyoom", bitfield).keys(1, 1, 1),
    Command::new("bitfield_ro", -2, "readonly fast", bitfield_ro).keys(1, 1, 1),
];

const BAD_OFFSET: CmdError = CmdError::Static("ERR bit offset is not an integer or out of range");
const BAD_BIT: CmdError = CmdError::Static("ERR bit is not an integer or out of range");
const BAD_TYPE: CmdError = CmdError::Static(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
);

/// Redis's `getBitOffsetFromArgument`: a bit offset within `proto-max-bulk-len` bytes; with `bits`
/// (BITFIELD), `#N` means the N-th field of that width.
fn bit_offset(c: &Ctx<'_>, arg: &[u8], bits: Option<u32>) -> Result<u64, CmdError> {
    let (hash, digits) = match (arg.first(), bits) {
        (Some(b'#'), Some(_)) => (true, &arg[1..]),
        _ => (false, arg),
    };
    let mut off = parse_i64(digits).ok_or(BAD_OFFSET)?;
    if hash {
        off = off.checked_mul(i64::from(bits.unwrap_or(1))).ok_or(BAD_OFFSET)?;
    }
    if off < 0 || (off >> 3) as u64 >= c.shared.settings().proto_max_bulk_len as u64 {
        return Err(BAD_OFFSET);
    }
    Ok(off as u64)
}

fn setbit(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let off = bit_offset(c, &a[2], None)?;
    let on = match parse_i64(&a[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(BAD_BIT),
    };
    let old = c.shared.store.setbit(&a[1], off, on)?;
    c.out.int(old as i64);
    Ok(())
}

fn getbit(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let off = bit_offset(c, &a[2], None)?;
    let v = c.shared.store.get(&a[1])?;
    c.out.int(v.is_some_and(|v| bitmap::get_bit(&v, off)) as i64);
    Ok(())
}

/// BIT or BYTE, the last argument of BITCOUNT's and BITPOS's range.
fn unit(arg: &[u8]) -> Result<BitUnit, CmdError> {
    if eq(arg, "bit") {
        Ok(BitUnit::Bit)
    } else if eq(arg, "byte") {
        Ok(BitUnit::Byte)
    } else {
        Err(SYNTAX)
    }
}

/// BITCOUNT: Redis 7.0 looks the key up before reading the range, so a missing key is 0 whatever
/// follows it.
fn bitcount(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(v) = c.shared.store.get(&a[1])? else {
        c.out.int(0);
        return Ok(());
    };
    let range = match a.len() {
        2 => None,
        4 | 5 => {
            let (start, end) = (int_arg(&a[2])?, int_arg(&a[3])?);
            // Both negative and backwards: 0, before the unit is read (as Redis orders it).
            if start < 0 && end < 0 && start > end {
                c.out.int(0);
                return Ok(());
            }
            let u = if a.len() == 5 { unit(&a[4])? } else { BitUnit::Byte };
            Some((start, end, u))
        }
        _ => return Err(SYNTAX),
    };
    c.out.int(bitmap::count(&v, range) as i64);
    Ok(())
}

/// BITPOS: the bit argument first, then the key (missing: an infinite string of zeros), then the range.
fn bitpos(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let bit = match int_arg(&a[2])? {
        0 => false,
        1 => true,
        _ => return Err(CmdError::Static("ERR The bit argument must be 1 or 0.")),
    };
    let Some(v) = c.shared.store.get(&a[1])? else {
        c.out.int(if bit { -1 } else { 0 });
        return Ok(());
    };
    let (start, end, u) = match a.len() {
        3 => (None, None, BitUnit::Byte),
        4..=6 => {
            let start = int_arg(&a[3])?;
            let u = if a.len() == 6 { unit(&a[5])? } else { BitUnit::Byte };
            let end = if a.len() >= 5 { Some(int_arg(&a[4])?) } else { None };
            (Some(start), end, u)
        }
        _ => return Err(SYNTAX),
    };
    c.out.int(bitmap::position(&v, bit, start, end, u));
    Ok(())
}

fn bitop(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let op = if eq(&a[1], "and") {
        BitOp::And
    } else if eq(&a[1], "or") {
        BitOp::Or
    } else if eq(&a[1], "xor") {
        BitOp::Xor
    } else if eq(&a[1], "not") {
        BitOp::Not
    } else {
        return Err(SYNTAX);
    };
    if op == BitOp::Not && a.len() != 4 {
        return Err(CmdError::Static(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let srcs: Vec<&[u8]> = a[3..].iter().map(|k| &k[..]).collect();
    let n = c.shared.store.bitop(op, &a[2], &srcs)?;
    c.out.int(n as i64);
    Ok(())
}

/// Redis's `getBitfieldTypeFromArgument`: `i1`..`i64`, `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<FieldType, CmdError> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(BAD_TYPE),
    };
    match parse_i64(&arg[1..]) {
        Some(bits) if bits >= 1 && bits <= if signed { 64 } else { 63 } => Ok(FieldType {
            signed,
            bits: bits as u32,
        }),
        _ => Err(BAD_TYPE),
    }
}

/// BITFIELD's operations, parsed whole before anything runs (a bad one fails the command).
fn bitfield_ops(c: &Ctx<'_>, a: &[Bytes]) -> Result<Vec<BitfieldOp>, CmdError> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let more = a.len() - j - 1;
        let sub = &a[j];
        let is_get = eq(sub, "get") && more >= 2;
        let is_set = eq(sub, "set") && more >= 3;
        let is_incr = eq(sub, "incrby") && more >= 3;
        if eq(sub, "overflow") && more >= 1 {
            let t = &a[j + 1];
            overflow = if eq(t, "wrap") {
                Overflow::Wrap
            } else if eq(t, "sat") {
                Overflow::Sat
            } else if eq(t, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::Static("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        }
        if !(is_get || is_set || is_incr) {
            return Err(SYNTAX);
        }
        let ty = field_type(&a[j + 1])?;
        let offset = bit_offset(c, &a[j + 2], Some(ty.bits))?;
        let op = if is_get {
            FieldOp::Get
        } else {
            let v = int_arg(&a[j + 3])?;
            if is_set {
                FieldOp::Set(v)
            } else {
                FieldOp::IncrBy(v)
            }
        };
        ops.push(BitfieldOp {
            offset,
            ty,
            op,
            overflow,
        });
        j += if is_get { 3 } else { 4 };
    }
    Ok(ops)
}

fn bitfield_reply(c: &mut Ctx<'_>, replies: impl ExactSizeIterator<Item = Option<i64>>) {
    c.out.array(replies.len());
    for r in replies {
        match r {
            Some(v) => c.out.int(v),
            None => c.out.null(),
        }
    }
}

fn bitfield_common(c: &mut Ctx<'_>, a: &[Bytes], read_only: bool) -> CmdResult {
    let ops = bitfield_ops(c, a)?;
    if ops.iter().all(|o| o.op == FieldOp::Get) {
        let v = c.shared.store.get(&a[1])?;
        let s: &[u8] = v.as_deref().unwrap_or(&[]);
        let replies: Vec<Option<i64>> = ops.iter().map(|o| Some(bitmap::read(s, o))).collect();
        bitfield_reply(c, replies.into_iter());
        return Ok(());
    }
    if read_only {
        return Err(CmdError::Static(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let replies = c.shared.store.bitfield(&a[1], &ops)?;
    bitfield_reply(c, replies.into_iter());
    Ok(())
}

fn bitfield(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bitfield_common(c, a, false)
}

fn bitfield_ro(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    bitfield_common(c, a, true)
}
