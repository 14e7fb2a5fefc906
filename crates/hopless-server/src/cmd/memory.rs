//! MEMORY: a key's size (USAGE), the server's footprint (STATS), hopless's slab table (MALLOC-STATS), and
//! giving free memory back to the OS (PURGE).

use bytes::Bytes;

use super::command::{int_arg, subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdResult, SYNTAX};
use crate::footprint::Footprint;
use crate::words::eq;

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("memory", -2, "", memory)
        .subs(&["doctor", "help", "malloc-stats", "purge", "stats", "usage"]),
];

fn memory(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match sub.as_str() {
        "usage" if a.len() == 3 || (a.len() == 5 && eq(&a[3], "samples")) => {
            if a.len() == 5 {
                int_arg(&a[4])?;
            }
            match c.shared.store.memory_usage(&a[2]) {
                Some(n) => c.out.int(n as i64),
                None => c.out.null(),
            }
        }
        "usage" if a.len() > 3 => return Err(SYNTAX),
        "stats" if a.len() == 2 => {
            let mem = Footprint::measure(c.shared);
            let (used, rss, peak) = (mem.used, mem.rss, mem.peak);
            let st = c.shared.store.stats();
            let o = &mut *c.out;
            o.map(9);
            o.bulk(b"peak.allocated");
            o.int(peak as i64);
            o.bulk(b"total.allocated");
            o.int(used as i64);
            o.bulk(b"keys.count");
            o.int(st.keys as i64);
            o.bulk(b"keys.bytes-per-key");
            o.int(st.bytes_used.checked_div(st.keys).unwrap_or(0) as i64);
            o.bulk(b"dataset.bytes");
            o.int(st.bytes_used as i64);
            o.bulk(b"dataset.percentage");
            o.double(if used > 0 {
                st.bytes_used as f64 * 100.0 / used as f64
            } else {
                0.0
            });
            o.bulk(b"rss-bytes");
            o.int(rss as i64);
            o.bulk(b"fragmentation");
            o.double(mem.fragmentation());
            o.bulk(b"allocator");
            o.bulk(b"hopless");
        }
        "malloc-stats" if a.len() == 2 => {
            let text = hopless::stats().to_string();
            c.out.verbatim(text.as_bytes());
        }
        "doctor" if a.len() == 2 => c
            .out
            .verbatim(b"Hi Sam, I can't find any memory issue in your instance."),
        "purge" if a.len() == 2 => {
            hopless::Hopless::trim();
            c.out.ok();
        }
        "help" if a.len() == 2 => c.out.bulks(
            [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "MALLOC-STATS",
                "    Return hopless's per-class slab table.",
                "PURGE",
                "    Give free slabs back to the OS.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "usage" | "stats" | "malloc-stats" | "doctor" | "purge" | "help" => {
            return Err(wrong_sub_args(c.name, &a[1]))
        }
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}
