//! SORT and SORT_RO: options read as Redis 7.0 reads them (in order, the last of each kind winning, a bad
//! LIMIT or an unknown word stopping the parse before the key is looked at), then the store's sort
//! (`hopless_kv::store::Store::sort`).

use bytes::Bytes;
use hopless_kv::store::SortSpec;

use super::command::{int_arg, key_at, Command, Ctx};
use crate::errors::{CmdResult, SYNTAX};
use crate::words::eq;

/// This family's rows of the command table, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("sort", -2, "write denyoom movablekeys", sort).keys(1, 1, 1),
    Command::new("sort_ro", -2, "readonly movablekeys", sort_ro).keys(1, 1, 1),
];

fn sort(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    sort_generic(c, a, false)
}

fn sort_ro(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    sort_generic(c, a, true)
}

fn sort_generic(c: &mut Ctx<'_>, a: &[Bytes], readonly: bool) -> CmdResult {
    let mut spec = SortSpec {
        stable_set: c.conn.in_script,
        ..SortSpec::default()
    };
    let mut store_at = None;
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let w = &a[j][..];
        if eq(w, "asc") {
            spec.desc = false;
        } else if eq(w, "desc") {
            spec.desc = true;
        } else if eq(w, "alpha") {
            spec.alpha = true;
        } else if eq(w, "limit") && left >= 2 {
            spec.limit = Some((int_arg(&a[j + 1])?, int_arg(&a[j + 2])?));
            j += 2;
        } else if !readonly && eq(w, "store") && left >= 1 {
            store_at = Some(j + 1);
            j += 1;
        } else if eq(w, "by") && left >= 1 {
            spec.by = Some(&a[j + 1]);
            j += 1;
        } else if eq(w, "get") && left >= 1 {
            spec.get.push(&a[j + 1]);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let store = &c.shared.store;
    match store_at {
        None => {
            let out = store.sort(&a[1], &spec)?;
            c.changed_keys = Some(&[]);
            c.out.array(out.len());
            for v in &out {
                match v {
                    Some(v) => c.out.bulk(v),
                    None => c.out.null(),
                }
            }
        }
        Some(at) => {
            spec.stable_set = true;
            let n = store.sort_store(&a[1], &spec, &a[at])?;
            c.changed_keys = key_at(at);
            c.out.int(n as i64);
        }
    }
    Ok(())
}
