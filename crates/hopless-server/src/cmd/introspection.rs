//! COMMAND: what the server tells a client about its commands (all of them, COUNT, LIST, INFO and DOCS
//! of some, and GETKEYS and GETKEYSANDFLAGS: the keys of a request), from each command's [`Spec`],
//! written as Redis 7.0.15's `addReplyCommandInfo` and `addReplyCommandDocs` write them.

use bytes::Bytes;
use hopless_kv::store::glob_match;

use super::command::{help, subcommand, Command, Ctx, Table};
use super::key_args::{request_keys, KeysError};
use super::spec::{key, Arg, ArgType, BeginSearch, FindKeys, KeySpec, Spec};
use crate::codec::Reply;
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult, SYNTAX};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("command", -1, "loading stale", command)
        .subs(&["count", "docs", "getkeys", "getkeysandflags", "help", "info", "list"]),
];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

fn command(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let table = c.table;
    if a.len() == 1 {
        c.out.array(table.len());
        for i in 0..table.len() {
            info(c.out, table.spec(i));
        }
        return Ok(());
    }
    // The subcommand's own arity, as Redis checks it before running it.
    match find(table, c.name.as_bytes()).and_then(|s| s.sub(&a[1])) {
        Some(sub) if !sub.arity_allows(a.len()) => return Err(wrong_sub_args(c.name, &a[1])),
        Some(_) => {}
        None => return Err(unknown_sub(c.name, &a[1])),
    }
    match subcommand(a).as_str() {
        "count" => c.out.int(table.len() as i64),
        "list" => list(c.out, table, &a[2..])?,
        "info" if a.len() == 2 => {
            c.out.array(table.len());
            for i in 0..table.len() {
                info(c.out, table.spec(i));
            }
        }
        "info" => {
            c.out.array(a.len() - 2);
            for name in &a[2..] {
                match find(table, name) {
                    Some(spec) => info(c.out, spec),
                    None => c.out.null(),
                }
            }
        }
        "docs" => {
            let found: Vec<&Spec> = if a.len() == 2 {
                (0..table.len()).map(|i| table.spec(i)).collect()
            } else {
                a[2..].iter().filter_map(|n| find(table, n)).collect()
            };
            c.out.map(found.len());
            for spec in found {
                c.out.bulk(spec.name.as_bytes());
                docs(c.out, spec);
            }
        }
        "help" => help(c, HELP),
        "getkeys" => getkeys(c, &a[2..], false)?,
        _ => getkeys(c, &a[2..], true)?,
    }
    Ok(())
}

/// A command by its full name (`get`, `config|get`, any case), as Redis's `lookupCommandBySds`.
fn find(table: &Table, name: &[u8]) -> Option<&'static Spec> {
    let parts: Vec<&[u8]> = name.split(|&b| b == b'|').collect();
    let base = table.spec(table.lookup(parts[0])?);
    match parts[..] {
        [_] => Some(base),
        [_, sub] => base.sub(sub),
        _ => None,
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: every command's full name,
/// each container followed by its subcommands'.
fn list(o: &mut Reply, table: &Table, opts: &[Bytes]) -> CmdResult {
    let mut filter: Option<(String, String)> = None;
    let mut rest = opts;
    while let Some(opt) = rest.first() {
        match rest {
            [_, kind, arg] if opt.eq_ignore_ascii_case(b"filterby") => {
                let kind = String::from_utf8_lossy(kind).to_ascii_lowercase();
                if !matches!(kind.as_str(), "module" | "aclcat" | "pattern") {
                    return Err(SYNTAX);
                }
                filter = Some((kind, String::from_utf8_lossy(arg).to_ascii_lowercase()));
                rest = &rest[3..];
            }
            _ => return Err(SYNTAX),
        }
    }
    let keep = |s: &Spec| match &filter {
        None => true,
        // No module is ever loaded.
        Some((kind, _)) if kind == "module" => false,
        Some((kind, cat)) if kind == "aclcat" => s.acl.split_ascii_whitespace().any(|c| c[1..] == **cat),
        Some((_, pattern)) => glob_match(pattern.as_bytes(), s.name.as_bytes()),
    };
    let names: Vec<&[u8]> = (0..table.len())
        .map(|i| table.spec(i))
        .flat_map(|s| std::iter::once(s).chain(s.subs))
        .filter(|s| keep(s))
        .map(|s| s.name.as_bytes())
        .collect();
    o.bulks(names.into_iter());
    Ok(())
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of the request `req` (a command and its arguments),
/// as Redis finds them (`getKeysSubcommandImpl`).
fn getkeys(c: &mut Ctx<'_>, req: &[Bytes], with_flags: bool) -> CmdResult {
    let keys = match request_keys(c.table, req) {
        Ok(keys) => keys,
        Err(KeysError::Unknown) => return Err(CmdError::Static("ERR Invalid command specified")),
        Err(KeysError::NoKeys) => return Err(CmdError::Static("ERR The command has no key arguments")),
        Err(KeysError::BadArity) => {
            return Err(CmdError::Static(
                "ERR Invalid number of arguments specified for command",
            ))
        }
        Err(KeysError::BadArgs) => {
            return Err(CmdError::Static("ERR Invalid arguments specified for command"))
        }
    };
    let o = &mut *c.out;
    o.array(keys.len());
    for k in keys {
        if with_flags {
            o.array(2);
            o.bulk(&req[k.pos]);
            key_flags(o, k.flags);
        } else {
            o.bulk(&req[k.pos]);
        }
    }
    Ok(())
}

/// One command's COMMAND INFO entry: name, arity, flags, first key, last key, step, ACL categories,
/// tips, key specs, subcommands (each an entry of its own).
fn info(o: &mut Reply, s: &Spec) {
    o.array(10);
    o.bulk(s.name.as_bytes());
    o.int(s.arity as i64);
    simple_set(o, s.flags);
    o.int(s.range.0 as i64);
    o.int(s.range.1 as i64);
    o.int(s.range.2 as i64);
    simple_set(o, s.acl);
    o.set(s.tips.len());
    for t in s.tips {
        o.bulk(t.as_bytes());
    }
    o.set(s.key_specs.len());
    for k in s.key_specs {
        key_spec(o, k);
    }
    if s.subs.is_empty() {
        o.set(0);
    } else {
        o.array(s.subs.len());
        for sub in s.subs {
            info(o, sub);
        }
    }
}

/// Space-separated words as a set of simple strings, in their order.
fn simple_set(o: &mut Reply, words: &str) {
    o.set(words.split_ascii_whitespace().count());
    for w in words.split_ascii_whitespace() {
        o.simple(w);
    }
}

fn key_flags(o: &mut Reply, flags: u16) {
    let names = key::NAMES.iter().filter(|(bit, _)| flags & bit != 0);
    o.set(names.clone().count());
    for (_, name) in names {
        o.simple(name);
    }
}

/// A map of one field (`name` to an integer), as key specs nest them.
fn int_map(o: &mut Reply, fields: &[(&str, i32)]) {
    o.map(fields.len());
    for (name, v) in fields {
        o.bulk(name.as_bytes());
        o.int(*v as i64);
    }
}

fn key_spec(o: &mut Reply, k: &KeySpec) {
    o.map(if k.notes.is_empty() { 3 } else { 4 });
    if !k.notes.is_empty() {
        o.bulk(b"notes");
        o.bulk(k.notes.as_bytes());
    }
    o.bulk(b"flags");
    key_flags(o, k.flags);
    o.bulk(b"begin_search");
    o.map(2);
    o.bulk(b"type");
    match k.begin {
        BeginSearch::Unknown => {
            o.bulk(b"unknown");
            o.bulk(b"spec");
            o.map(0);
        }
        BeginSearch::Index(pos) => {
            o.bulk(b"index");
            o.bulk(b"spec");
            int_map(o, &[("index", pos)]);
        }
        BeginSearch::Keyword(word, from) => {
            o.bulk(b"keyword");
            o.bulk(b"spec");
            o.map(2);
            o.bulk(b"keyword");
            o.bulk(word.as_bytes());
            o.bulk(b"startfrom");
            o.int(from as i64);
        }
    }
    o.bulk(b"find_keys");
    o.map(2);
    o.bulk(b"type");
    match k.find {
        FindKeys::Unknown => {
            o.bulk(b"unknown");
            o.bulk(b"spec");
            o.map(0);
        }
        FindKeys::Range(last, step, limit) => {
            o.bulk(b"range");
            o.bulk(b"spec");
            int_map(o, &[("lastkey", last), ("keystep", step), ("limit", limit)]);
        }
        FindKeys::Keynum(at, first, step) => {
            o.bulk(b"keynum");
            o.bulk(b"spec");
            int_map(o, &[("keynumidx", at), ("firstkey", first), ("keystep", step)]);
        }
    }
}

/// A field of a docs map that Redis leaves out when it has no value.
fn text_field(o: &mut Reply, name: &str, value: &str) {
    if !value.is_empty() {
        o.bulk(name.as_bytes());
        o.bulk(value.as_bytes());
    }
}

/// One command's COMMAND DOCS map.
fn docs(o: &mut Reply, s: &Spec) {
    let present = |v: bool| usize::from(v);
    let fields = 1
        + present(!s.summary.is_empty())
        + present(!s.since.is_empty())
        + present(!s.complexity.is_empty())
        + present(!s.doc_flags.is_empty())
        + present(!s.deprecated_since.is_empty())
        + present(!s.replaced_by.is_empty())
        + present(!s.history.is_empty())
        + present(!s.args.is_empty())
        + present(!s.subs.is_empty());
    o.map(fields);
    text_field(o, "summary", s.summary);
    text_field(o, "since", s.since);
    o.bulk(b"group");
    o.bulk(s.group.as_bytes());
    text_field(o, "complexity", s.complexity);
    if !s.doc_flags.is_empty() {
        o.bulk(b"doc_flags");
        simple_set(o, s.doc_flags);
    }
    text_field(o, "deprecated_since", s.deprecated_since);
    text_field(o, "replaced_by", s.replaced_by);
    if !s.history.is_empty() {
        o.bulk(b"history");
        o.set(s.history.len());
        for (version, change) in s.history {
            o.array(2);
            o.bulk(version.as_bytes());
            o.bulk(change.as_bytes());
        }
    }
    if !s.args.is_empty() {
        o.bulk(b"arguments");
        args(o, s.args);
    }
    if !s.subs.is_empty() {
        o.bulk(b"subcommands");
        o.map(s.subs.len());
        for sub in s.subs {
            o.bulk(sub.name.as_bytes());
            docs(o, sub);
        }
    }
}

fn args(o: &mut Reply, args: &[Arg]) {
    o.array(args.len());
    for a in args {
        let present = |v: bool| usize::from(v);
        let nested = matches!(a.kind, ArgType::OneOf | ArgType::Block);
        let fields = 2
            + present(a.key_spec >= 0)
            + present(a.token.is_some())
            + present(!a.summary.is_empty())
            + present(!a.since.is_empty())
            + present(!a.deprecated_since.is_empty())
            + present(!a.flags.is_empty())
            + present(nested);
        o.map(fields);
        text_field(o, "name", a.name);
        text_field(o, "type", a.kind.name());
        if a.key_spec >= 0 {
            o.bulk(b"key_spec_index");
            o.int(a.key_spec as i64);
        }
        if let Some(t) = a.token {
            o.bulk(b"token");
            o.bulk(t.as_bytes());
        }
        text_field(o, "summary", a.summary);
        text_field(o, "since", a.since);
        text_field(o, "deprecated_since", a.deprecated_since);
        if !a.flags.is_empty() {
            o.bulk(b"flags");
            simple_set(o, a.flags);
        }
        if nested {
            o.bulk(b"arguments");
            self::args(o, a.args);
        }
    }
}
