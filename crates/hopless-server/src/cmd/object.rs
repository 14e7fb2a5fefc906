//! OBJECT: how a key's value is stored, in Redis's terms (ENCODING, REFCOUNT, IDLETIME, FREQ).

use bytes::Bytes;

use super::command::{subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("object", -2, "", object).acl("@slow")
        .doc("generic", "2.2.3", "A container for object introspection commands"),
];

/// OBJECT ENCODING: a collection names the form it is really in (`listpack`, `quicklist`, `intset`,
/// `hashtable`, `skiplist`: Redis's names for the same shapes). Every string is stored the same way (one
/// block: header, key, value), but clients and tools expect Redis's names, so the answer is what Redis
/// would store the value as: `int` for an integer of up to 20 characters, `embstr` up to 44 bytes, `raw`
/// beyond.
fn object(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match sub.as_str() {
        "encoding" | "refcount" | "idletime" | "freq" if a.len() == 3 => {
            if c.shared.store.key_type(&a[2]).is_none() {
                c.out.null();
                return Ok(());
            }
            match sub.as_str() {
                "encoding" => {
                    if let Some(e) = c.shared.store.coll_encoding(&a[2]) {
                        c.out.bulk(e.as_bytes());
                        return Ok(());
                    }
                    let Some(v) = c.shared.store.get(&a[2]).ok().flatten() else {
                        c.out.null();
                        return Ok(());
                    };
                    let e = if v.len() <= 20 && hopless_kv::store::parse_i64(&v).is_some() {
                        "int"
                    } else if v.len() <= 44 {
                        "embstr"
                    } else {
                        "raw"
                    };
                    c.out.bulk(e.as_bytes());
                }
                "refcount" => c.out.int(1),
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
        "help" if a.len() == 2 => c.out.bulks(
            [
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "encoding" | "refcount" | "idletime" | "freq" | "help" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}
