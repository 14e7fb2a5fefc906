//! Which arguments of a request are keys, and how the command uses each, exactly as Redis 7.0.15's
//! `getKeysFromCommandWithSpecs` finds them (COMMAND GETKEYS and GETKEYSANDFLAGS, client-side caching,
//! keyspace events): the command's key specs when they are complete and their flags fixed, else its
//! key-finding procedure (SORT's STORE, SET's GET, EVAL's numkeys...). (`Table::keys` stays the quick
//! over-estimate that waking blocked clients needs.)

use bytes::Bytes;
use hopless_kv::store::parse_i64;

use super::command::Table;
use super::spec::{key, BeginSearch, FindKeys, GetKeys, Spec};
use crate::words::c_eq;

/// Why a request has no key list (COMMAND GETKEYS's errors, in the order Redis checks them).
#[derive(Debug, PartialEq, Eq)]
pub enum KeysError {
    /// No such command, or no such subcommand of a container.
    Unknown,
    /// The command takes no keys at all.
    NoKeys,
    /// The wrong number of arguments for the command (or the subcommand).
    BadArity,
    /// Its arguments do not say where the keys are (a bad or too large key count).
    BadArgs,
}

/// A key: its index in the request, and its key-spec flags (`spec::key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: u16,
}

/// The keys of `req` (a whole request, the command name first), with the checks COMMAND GETKEYS makes
/// first: a known command, one with keys, the right number of arguments.
pub fn request_keys(table: &Table, req: &[Bytes]) -> Result<Vec<KeyRef>, KeysError> {
    let i = table.lookup(&req[0]).ok_or(KeysError::Unknown)?;
    keys_of(table.spec(i), req)
}

/// The indexes in `args` (a request of command `i` of `table`) of its keys: empty for a script or
/// function given no keys.
pub fn key_positions(table: &Table, i: usize, args: &[Bytes]) -> Result<Vec<usize>, KeysError> {
    Ok(keys_of(table.spec(i), args)?.into_iter().map(|k| k.pos).collect())
}

/// [`request_keys`] of a command's spec (its subcommand's, for a container given one).
fn keys_of(spec: &'static Spec, args: &[Bytes]) -> Result<Vec<KeyRef>, KeysError> {
    let spec = match args.get(1) {
        Some(sub) if !spec.subs.is_empty() => spec.sub(sub).ok_or(KeysError::Unknown)?,
        _ => spec,
    };
    if !spec.has_keys() {
        return Err(KeysError::NoKeys);
    }
    if !spec.arity_allows(args.len()) {
        return Err(KeysError::BadArity);
    }
    match find_keys(spec, args) {
        keys if !keys.is_empty() => Ok(keys),
        _ if spec.has_flag("no_mandatory_keys") => Ok(Vec::new()),
        _ => Err(KeysError::BadArgs),
    }
}

/// Redis's `getKeysFromCommandWithSpecs`: by the key specs if one names real keys and none has
/// variable flags, falling back on the key-finding procedure when they fail; empty when nothing finds
/// keys.
fn find_keys(spec: &Spec, args: &[Bytes]) -> Vec<KeyRef> {
    let real = spec.key_specs.iter().any(|k| k.flags & key::NOT_KEY == 0);
    let variable = spec.key_specs.iter().any(|k| k.flags & key::VARIABLE_FLAGS != 0);
    if real && !variable {
        if let Some(keys) = keys_by_specs(spec, args) {
            return keys;
        }
    }
    match spec.getkeys {
        Some(proc_) => keys_by_proc(proc_, args),
        None => Vec::new(),
    }
}

/// Redis's `getKeysUsingKeySpecs` (without partial results): None where a spec is unknown,
/// incomplete or does not fit the arguments.
fn keys_by_specs(spec: &Spec, args: &[Bytes]) -> Option<Vec<KeyRef>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for ks in spec.key_specs.iter().filter(|k| k.flags & key::NOT_KEY == 0) {
        let first = match ks.begin {
            BeginSearch::Index(pos) => pos as i64,
            BeginSearch::Keyword(word, from) => match keyword_search(args, word, from as i64) {
                Some(at) => at + 1,
                None => continue,
            },
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match ks.find {
            FindKeys::Range(lastkey, step, limit) => {
                let (lastkey, limit) = (lastkey as i64, limit as i64);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, step as i64)
            }
            FindKeys::Keynum(at, firstkey, step) => {
                if at as i64 >= argc {
                    return None;
                }
                let n = args
                    .get((first + at as i64) as usize)
                    .and_then(|a| parse_i64(a))
                    .filter(|&n| n >= 0)?;
                let first = first + firstkey as i64;
                // Redis adds the count as an `int`.
                (first, first + (n as i32 as i64) - 1, step as i64)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let step = step.max(1) as usize;
        keys.extend(
            (first as usize..=last as usize)
                .step_by(step)
                .map(|pos| KeyRef { pos, flags: ks.flags }),
        );
        if ks.flags & key::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// Where `word` is (any case), searched for as a keyword spec searches: from `from` towards the end
/// (the last argument left out), or from `argc + from` back towards the start (the name and the first
/// argument left out).
fn keyword_search(args: &[Bytes], word: &str, from: i64) -> Option<i64> {
    let argc = args.len() as i64;
    let (start, end) = if from > 0 {
        (from, argc - 1)
    } else {
        (argc + from, 1)
    };
    let mut i = start;
    while i != end {
        if i >= argc || i < 1 {
            return None;
        }
        if c_eq(&args[i as usize], word) {
            return Some(i);
        }
        i += if start <= end { 1 } else { -1 };
    }
    None
}

/// C's `atoi` as glibc has it: blanks, a sign, digits up to the first other byte; `strtol`'s clamp to
/// a `long`, cut to an `int`.
fn atoi(b: &[u8]) -> i64 {
    let mut rest = b;
    while let [c, tail @ ..] = rest {
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
            break;
        }
        rest = tail;
    }
    let neg = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut v: i64 = 0;
    for d in rest.iter().take_while(|d| d.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    let v = if neg { v.saturating_neg() } else { v };
    v as i32 as i64
}

/// Redis's key-finding procedures (db.c), with the flags each gives its keys.
fn keys_by_proc(proc_: GetKeys, args: &[Bytes]) -> Vec<KeyRef> {
    let argc = args.len();
    let at = |pos: usize, flags: u16| KeyRef { pos, flags };
    match proc_ {
        GetKeys::Counted {
            store,
            count,
            first,
            step,
        } => {
            let n = atoi(&args[count]);
            if n < 1 || n > (argc as i64 - first as i64) / step as i64 {
                return Vec::new();
            }
            let mut keys: Vec<KeyRef> = (0..n as usize).map(|j| at(first + j * step, 0)).collect();
            if store > 0 {
                keys.push(at(store, 0));
            }
            keys
        }
        GetKeys::SortRo => vec![at(1, key::RO | key::ACCESS)],
        GetKeys::Migrate => {
            // The key at 3, or those after KEYS (when the key argument is empty); AUTH's and AUTH2's
            // values are skipped on the way.
            let (mut first, mut n) = (3, 1);
            let mut i = 6;
            while i < argc {
                if c_eq(&args[i], "keys") {
                    if args[3].is_empty() {
                        first = i + 1;
                        n = argc - first;
                    } else {
                        n = 0;
                    }
                    break;
                }
                if c_eq(&args[i], "auth") {
                    i += 1;
                } else if c_eq(&args[i], "auth2") {
                    i += 2;
                }
                i += 1;
            }
            (0..n)
                .map(|j| at(first + j, key::RW | key::ACCESS | key::DELETE))
                .collect()
        }
        GetKeys::Sort => {
            let mut keys = vec![at(1, key::RO | key::ACCESS)];
            let mut store = None;
            let mut i = 2;
            while i < argc {
                let a = &args[i];
                if c_eq(a, "limit") {
                    i += 2;
                } else if c_eq(a, "get") || c_eq(a, "by") {
                    i += 1;
                } else if c_eq(a, "store") && i + 1 < argc {
                    // The last STORE counts, as SORT itself reads them.
                    store = Some(at(i + 1, key::OW | key::UPDATE));
                }
                i += 1;
            }
            keys.extend(store);
            keys
        }
        GetKeys::Georadius => {
            let mut stored = None;
            let mut i = 5;
            while i < argc {
                if (c_eq(&args[i], "store") || c_eq(&args[i], "storedist")) && i + 1 < argc {
                    stored = Some(at(i + 1, 0));
                    i += 1;
                }
                i += 1;
            }
            std::iter::once(at(1, 0)).chain(stored).collect()
        }
        GetKeys::Xread => {
            let mut streams = None;
            let mut i = 1;
            while i < argc {
                let a = &args[i];
                if c_eq(a, "block") || c_eq(a, "count") {
                    i += 1;
                } else if c_eq(a, "group") {
                    i += 2;
                } else if c_eq(a, "streams") {
                    streams = Some(i);
                    break;
                } else if !c_eq(a, "noack") {
                    break;
                }
                i += 1;
            }
            match streams.map(|s| (s, argc - s - 1)) {
                Some((s, n)) if n > 0 && n % 2 == 0 => (s + 1..s + 1 + n / 2).map(|pos| at(pos, 0)).collect(),
                _ => Vec::new(),
            }
        }
        GetKeys::Set => {
            let get = args.iter().skip(3).any(|a| c_eq(a, "get"));
            let flags = if get {
                key::RW | key::ACCESS | key::UPDATE
            } else {
                key::OW | key::UPDATE
            };
            vec![at(1, flags)]
        }
        GetKeys::Bitfield => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let (a, more) = (&args[i], argc - i - 1);
                if c_eq(a, "get") && more >= 2 {
                    i += 2;
                } else if (c_eq(a, "set") || c_eq(a, "incrby")) && more >= 3 {
                    readonly = false;
                    break;
                } else if c_eq(a, "overflow") && more >= 1 {
                    i += 1;
                } else {
                    // A syntax error: safer taken as a write.
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly {
                key::RO | key::ACCESS
            } else {
                key::RW | key::ACCESS | key::UPDATE
            };
            vec![at(1, flags)]
        }
    }
}
