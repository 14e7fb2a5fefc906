//! Which arguments of a request are keys, exactly, as COMMAND GETKEYS reports them: the table's first,
//! last and step for most commands; for those whose keys move (`movablekeys`), the count of keys an
//! argument gives (EVAL, FCALL, ZUNION, LMPOP...). (`Table::keys` stays the quick over-estimate that
//! waking blocked clients needs.)

use bytes::Bytes;

use super::command::Table;
use crate::words::c_eq;
use hopless_kv::store::parse_i64;

/// Why a request has no key list.
#[derive(Debug, PartialEq, Eq)]
pub enum KeysError {
    /// The command takes no keys at all.
    NoKeys,
    /// Its arguments do not say where the keys are (a bad or too large key count).
    BadArgs,
    /// A container's subcommand given the wrong number of arguments.
    BadArity,
}

/// Where a movable command's keys are: the argument holding their count, and fixed keys before it.
struct Movable {
    /// The index of the argument that counts the keys that follow it.
    count_at: usize,
    /// A key before the count (the destination of ZUNIONSTORE and the like).
    dest: bool,
}

/// The movable commands' layouts, by name.
fn movable(name: &str) -> Option<Movable> {
    let (count_at, dest) = match name {
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => (2, false),
        "blmpop" | "bzmpop" => (2, false),
        "zunionstore" | "zinterstore" | "zdiffstore" => (2, true),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => (1, false),
        _ => return None,
    };
    Some(Movable { count_at, dest })
}

/// XREAD's and XREADGROUP's keys: the first half of the arguments after STREAMS, which comes after the
/// options (BLOCK and COUNT with a value, GROUP with two, NOACK), as Redis finds them.
fn stream_keys(args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
    let mut i = 1;
    while i < args.len() {
        let a = String::from_utf8_lossy(&args[i]).to_ascii_lowercase();
        match a.as_str() {
            "block" | "count" => i += 2,
            "group" => i += 3,
            "noack" => i += 1,
            "streams" => {
                let rest = args.len() - i - 1;
                if rest == 0 || rest % 2 != 0 {
                    return Err(KeysError::BadArgs);
                }
                return Ok((i + 1..i + 1 + rest / 2).collect());
            }
            _ => return Err(KeysError::BadArgs),
        }
    }
    Err(KeysError::BadArgs)
}

/// SORT's keys: the sorted key, and the last STORE's destination, found as Redis's `sortGetKeys` finds
/// it (LIMIT skips two arguments, GET and BY one, any other word none). SORT_RO's: the sorted key.
fn sort_keys(args: &[Bytes], readonly: bool) -> Vec<usize> {
    let mut keys = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < args.len() && !readonly {
        let a = &args[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store);
    keys
}

/// GEORADIUS's and GEORADIUSBYMEMBER's keys, as Redis 7.0's key specs find them: the source, then the
/// argument after the first STORE met from argument `from` on, then the one after the first
/// STOREDIST (the last argument is not looked at: no key follows it). So a repeated STORE names its
/// first destination, and STORE and STOREDIST together name both.
fn georadius_keys(args: &[Bytes], from: usize) -> Vec<usize> {
    let mut keys = vec![1];
    for word in ["store", "storedist"] {
        let end = args.len().saturating_sub(1);
        if let Some(i) = (from..end).find(|&i| c_eq(&args[i], word)) {
            keys.push(i + 1);
        }
    }
    keys
}

/// The key of a container's subcommand (OBJECT ENCODING and the like, MEMORY USAGE): its index, and
/// whether the subcommand takes exactly that many arguments (or more), as Redis's arity says.
fn container_key(name: &str, sub: &[u8]) -> Option<(usize, bool)> {
    let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
    match (name, sub.as_str()) {
        ("object", "encoding" | "freq" | "idletime" | "refcount") => Some((2, true)),
        ("memory", "usage") => Some((2, false)),
        _ => None,
    }
}

/// The indexes in `args` (a whole request, the command name first, its arity already checked) of the
/// keys command `i` of `table` reads or writes: empty for a script or function given no keys.
pub fn key_positions(table: &Table, i: usize, args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
    let cmd = &table.commands()[i];
    if cmd.name == "xread" || cmd.name == "xreadgroup" {
        return stream_keys(args);
    }
    if cmd.name == "sort" || cmd.name == "sort_ro" {
        return Ok(sort_keys(args, cmd.name == "sort_ro"));
    }
    if cmd.name == "georadius" || cmd.name == "georadiusbymember" {
        return Ok(georadius_keys(args, if cmd.name == "georadius" { 6 } else { 5 }));
    }
    if let Some(m) = movable(cmd.name) {
        let first = m.count_at + 1;
        let count = args
            .get(m.count_at)
            .and_then(|a| parse_i64(a))
            .filter(|&n| n > 0 && n as usize <= args.len() - first);
        return match count {
            Some(n) => {
                let mut keys: Vec<usize> = if m.dest { vec![1] } else { Vec::new() };
                keys.extend(first..first + n as usize);
                Ok(keys)
            }
            // A script or function may be given no keys (or a count it will refuse): none then.
            None if cmd.has_flag("no_mandatory_keys") => Ok(Vec::new()),
            None => Err(KeysError::BadArgs),
        };
    }
    if !cmd.subs.is_empty() {
        let (at, exact) = args
            .get(1)
            .and_then(|sub| container_key(cmd.name, sub))
            .ok_or(KeysError::NoKeys)?;
        let fits = if exact {
            args.len() == at + 1
        } else {
            args.len() > at
        };
        return if fits {
            Ok(vec![at])
        } else {
            Err(KeysError::BadArity)
        };
    }
    if cmd.first_key <= 0 {
        return Err(KeysError::NoKeys);
    }
    let n = args.len() as i32;
    let last = if cmd.last_key < 0 {
        n + cmd.last_key
    } else {
        cmd.last_key.min(n - 1)
    };
    let step = cmd.step.max(1) as usize;
    Ok((cmd.first_key..=last).step_by(step).map(|j| j as usize).collect())
}
