//! OBJECT: how a key's value is stored, in Redis's terms (ENCODING, REFCOUNT, IDLETIME, FREQ).

use bytes::Bytes;
use hopless_kv::store::{parse_i64, StringEncoding};
use hopless_kv::Policy;

use super::command::{help, subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("object", -2, "", object)
        .subs(&["encoding", "freq", "help", "idletime", "refcount"]),
];

/// OBJECT ENCODING: a collection names the form it is really in (`listpack`, `quicklist`, `intset`,
/// `hashtable`, `skiplist`: Redis 7.0's names for the same shapes; a packed set, which 7.0 does not
/// have, is `hashtable`, as 7.0 names every set that is not an intset). Every string is stored the same way (one
/// block: header, key, value), but clients and tools expect Redis's names, so the answer is what Redis
/// would have made of the value: `int` for an integer of up to 20 characters, `embstr` up to 44 bytes,
/// `raw` beyond, and `raw` after an edit in place (APPEND, SETRANGE, SETBIT...); the store remembers how
/// each string was made.
///
/// REFCOUNT is 1, except for the integers 0..9999 that Redis shares (2147483647, its `OBJ_SHARED_REFCOUNT`)
/// unless an LRU policy with a `maxmemory` forbids sharing. IDLETIME is 0: the store keeps a logical
/// access clock for its LRU, not a time. FREQ is refused as Redis refuses it without an LFU policy (the
/// store has none).
fn object(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match sub.as_str() {
        "encoding" | "refcount" | "idletime" | "freq" if a.len() == 3 => {
            let store = &c.shared.store;
            if store.key_type(&a[2]).is_none() {
                c.out.null();
                return Ok(());
            }
            match sub.as_str() {
                "encoding" => match encoding_of(store, &a[2]) {
                    Some(e) => c.out.bulk(e.as_bytes()),
                    None => c.out.null(),
                },
                "refcount" => c.out.int(refcount_of(store, &a[2])),
                "idletime" => c.out.int(0),
                _ => {
                    return Err(CmdError::Static(
                        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note \
                         that when switching between policies at runtime LRU and LFU data will take some time \
                         to adjust.",
                    ))
                }
            }
        }
        "help" if a.len() == 2 => help(c, OBJECT_HELP),
        "encoding" | "refcount" | "idletime" | "freq" | "help" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}

/// The name Redis would give the encoding of `key`'s value (see [`object`]); `None` when it is missing.
pub(super) fn encoding_of(store: &hopless_kv::Store, key: &[u8]) -> Option<&'static str> {
    store
        .coll_encoding(key)
        .or_else(|| store.string_encoding(key).map(|e| e.as_str()))
}

/// OBJECT REFCOUNT's answer for `key` (see [`object`]).
pub(super) fn refcount_of(store: &hopless_kv::Store, key: &[u8]) -> i64 {
    let shares = store.maxmemory() == 0 || store.policy() != Policy::SampledLru;
    let shared = shares
        && store.string_encoding(key) == Some(StringEncoding::Int)
        && store
            .get(key)
            .ok()
            .flatten()
            .and_then(|v| parse_i64(&v))
            .is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
    if shared {
        SHARED_REFCOUNT
    } else {
        1
    }
}

/// Redis's `OBJ_SHARED_INTEGERS` and the refcount it reports for them.
const SHARED_INTEGERS: i64 = 10_000;
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];
