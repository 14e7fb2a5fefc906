#!/usr/bin/env python3
"""Writes crates/hopless-server/src/cmd/specs/ from Redis 7.0.15's command JSON (src/commands/*.json):
for every command hopless serves, and every subcommand it serves of a container, what COMMAND INFO and
COMMAND DOCS report (flags, ACL categories, tips, key specs, the legacy key range, the key-finding
procedure, docs and arguments), derived as Redis derives them when it loads its table (server.c:
setImplicitACLCategories, populateCommandLegacyRangeSpec; utils/generate-command-code.py).

Which commands hopless serves is read from its command tables: each `Command::new("name", ...)` row in
crates/hopless-server/src/cmd/, and its `.subs(&[...])` list for a container's subcommands.

Usage: python3 scripts/gen/command_specs.py REDIS_SRC_COMMANDS_DIR
       (for example /tmp/redis-src/redis-7.0.15/src/commands), then `cargo fmt` leaves the output alone.
"""

import glob
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CMD_DIR = ROOT / "crates" / "hopless-server" / "src" / "cmd"
OUT_DIR = CMD_DIR / "specs"
WIDTH = 110

# COMMAND's order of command flags (server.c addReplyFlagsForCommand); the rest are hidden.
FLAG_ORDER = [
    "WRITE", "READONLY", "DENYOOM", "MODULE", "ADMIN", "PUBSUB", "NOSCRIPT", "BLOCKING", "LOADING",
    "STALE", "SKIP_MONITOR", "SKIP_SLOWLOG", "ASKING", "FAST", "NO_AUTH", "NO_MANDATORY_KEYS",
    "NO_ASYNC_LOADING", "NO_MULTI", "MOVABLE_KEYS", "ALLOW_BUSY",
]
FLAG_NAMES = {"MOVABLE_KEYS": "movablekeys"}
HIDDEN_FLAGS = {"MAY_REPLICATE", "SENTINEL", "ONLY_SENTINEL", "PROTECTED", "TOUCHES_ARBITRARY_KEYS"}

# acl.c ACLCommandCategories: COMMAND's order of ACL categories.
ACL_ORDER = [
    "KEYSPACE", "READ", "WRITE", "SET", "SORTEDSET", "LIST", "HASH", "STRING", "BITMAP", "HYPERLOGLOG",
    "GEO", "STREAM", "PUBSUB", "ADMIN", "FAST", "SLOW", "BLOCKING", "DANGEROUS", "CONNECTION",
    "TRANSACTION", "SCRIPTING",
]

KEY_FLAGS = ["RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY", "INCOMPLETE",
             "VARIABLE_FLAGS"]

ARG_TYPES = {
    "string": "String", "integer": "Integer", "double": "Double", "key": "Key", "pattern": "Pattern",
    "unix-time": "UnixTime", "pure-token": "PureToken", "oneof": "OneOf", "block": "Block",
}

# db.c's key-finding procedures that hopless's commands use (a new one is written in key_args.rs, then
# named here); genericGetKeys's (store, count, first, step) for the counted ones.
GETKEYS = {
    "sintercardGetKeys": "GetKeys::Counted { store: 0, count: 1, first: 2, step: 1 }",
    "zunionInterDiffGetKeys": "GetKeys::Counted { store: 0, count: 1, first: 2, step: 1 }",
    "lmpopGetKeys": "GetKeys::Counted { store: 0, count: 1, first: 2, step: 1 }",
    "zmpopGetKeys": "GetKeys::Counted { store: 0, count: 1, first: 2, step: 1 }",
    "zunionInterDiffStoreGetKeys": "GetKeys::Counted { store: 1, count: 2, first: 3, step: 1 }",
    "evalGetKeys": "GetKeys::Counted { store: 0, count: 2, first: 3, step: 1 }",
    "functionGetKeys": "GetKeys::Counted { store: 0, count: 2, first: 3, step: 1 }",
    "blmpopGetKeys": "GetKeys::Counted { store: 0, count: 2, first: 3, step: 1 }",
    "bzmpopGetKeys": "GetKeys::Counted { store: 0, count: 2, first: 3, step: 1 }",
    "sortGetKeys": "GetKeys::Sort",
    "sortROGetKeys": "GetKeys::SortRo",
    "georadiusGetKeys": "GetKeys::Georadius",
    "xreadGetKeys": "GetKeys::Xread",
    "setGetKeys": "GetKeys::Set",
    "bitfieldGetKeys": "GetKeys::Bitfield",
    "migrateGetKeys": "GetKeys::Migrate",
}


def rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def served() -> dict[str, list[str]]:
    """hopless's commands, each with the subcommands its row lists."""
    out = {}
    for f in sorted(CMD_DIR.rglob("*.rs")):
        if OUT_DIR in f.parents:
            continue
        text = f.read_text()
        rows = list(re.finditer(r'Command::new\("([^"]+)"', text))
        for i, m in enumerate(rows):
            end = rows[i + 1].start() if i + 1 < len(rows) else len(text)
            subs = re.search(r"\.subs\(&\[([^\]]*)\]\)", text[m.end():end])
            out[m.group(1)] = re.findall(r'"([^"]+)"', subs.group(1)) if subs else []
    return out


def legacy_range(specs: list[dict]) -> tuple[tuple[int, int, int], bool]:
    """populateCommandLegacyRangeSpec: COMMAND INFO's first, last, step, and whether keys move."""
    def is_range(s):
        return "index" in s["begin_search"] and "range" in s["find_keys"]

    if not specs:
        return (0, 0, 0), False
    if len(specs) == 1 and is_range(specs[0]):
        s = specs[0]
        pos, r = s["begin_search"]["index"]["pos"], s["find_keys"]["range"]
        last = r["lastkey"] + pos if r["lastkey"] >= 0 else r["lastkey"]
        return (pos, last, r["step"]), "INCOMPLETE" in s["flags"]
    movable = False
    first, last, prev_last = None, 0, 0
    for s in specs:
        if not is_range(s):
            movable = True
            continue
        pos, r = s["begin_search"]["index"]["pos"], s["find_keys"]["range"]
        if r["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        if "INCOMPLETE" in s["flags"]:
            movable = True
        first = pos if first is None else min(first, pos)
        abs_last = r["lastkey"] + pos if r["lastkey"] >= 0 else r["lastkey"]
        # Redis compares as unsigned: -1 (to the end) is the largest.
        last = max(last, abs_last, key=lambda v: v % (1 << 32))
        prev_last = last
    if first is None:
        return (0, 0, 0), True
    return (first, last, 1), movable


def acl_categories(desc: dict, flags: set[str]) -> list[str]:
    """setImplicitACLCategories."""
    cats = set(desc.get("acl_categories", []))
    if "WRITE" in flags:
        cats.add("WRITE")
    if "READONLY" in flags and "SCRIPTING" not in cats:
        cats.add("READ")
    if "ADMIN" in flags:
        cats |= {"ADMIN", "DANGEROUS"}
    if "PUBSUB" in flags:
        cats.add("PUBSUB")
    if "FAST" in flags:
        cats.add("FAST")
    if "BLOCKING" in flags:
        cats.add("BLOCKING")
    if "FAST" not in cats:
        cats.add("SLOW")
    return ["@" + c.lower() for c in ACL_ORDER if c in cats]


class Writer:
    """Rust source with lines packed up to WIDTH, and the names of spec.rs it uses."""

    def __init__(self):
        self.lines: list[str] = []
        self.used: set[str] = set()

    def pack(self, indent: int, parts: list[str]):
        line = ""
        for p in parts:
            if line and len(" " * indent + line + " " + p) > WIDTH:
                self.lines.append(" " * indent + line)
                line = ""
            line = p if not line else line + " " + p
        if line:
            self.lines.append(" " * indent + line)

    def key_spec(self, s: dict) -> str:
        flags = [f for f in KEY_FLAGS if f in s["flags"]]
        self.used.update(flags)
        bs, fk = s["begin_search"], s["find_keys"]
        if "index" in bs:
            begin = f"Index({bs['index']['pos']})"
        elif "keyword" in bs:
            begin = f"Keyword({rust_str(bs['keyword']['keyword'])}, {bs['keyword']['startfrom']})"
        else:
            begin = "BeginSearch::Unknown"
        if "range" in fk:
            r = fk["range"]
            find = f"Range({r['lastkey']}, {r['step']}, {r['limit']})"
        elif "keynum" in fk:
            k = fk["keynum"]
            find = f"Keynum({k['keynumidx']}, {k['firstkey']}, {k['step']})"
        else:
            find = "FindKeys::Unknown"
        for name in ("Index", "Keyword", "Range", "Keynum"):
            if begin.startswith(name) or find.startswith(name):
                self.used.add(name)
        if "Unknown" in begin:
            self.used.add("BeginSearch")
        if "Unknown" in find:
            self.used.add("FindKeys")
        self.used.add("KeySpec")
        out = f"KeySpec::new({' | '.join(flags) or '0'}, {begin}, {find})"
        if s.get("notes"):
            out += f".notes({rust_str(s['notes'])})"
        return out

    def arg_head(self, a: dict) -> str:
        self.used.update({"Arg", "T"})
        out = f"Arg::new({rust_str(a['name'].lower())}, T::{ARG_TYPES[a['type']]})"
        if "key_spec_index" in a:
            out += f".key_spec({a['key_spec_index']})"
        if a.get("token"):
            # Redis's generator writes the token into a C string literal unescaped, so its quotes end
            # and start literals that C joins: MIGRATE's `""` token is the empty string.
            out += f".token({rust_str(a['token'].upper().replace(chr(34), ''))})"
        for field in ("summary", "since", "deprecated_since"):
            if a.get(field):
                out += f".{field}({rust_str(a[field])})"
        flags = [f for f in ("optional", "multiple", "multiple_token") if a.get(f)]
        if flags:
            out += f".flags({rust_str(' '.join(flags))})"
        return out

    def arg_inline(self, a: dict) -> str:
        out = self.arg_head(a)
        if a["type"] in ("oneof", "block"):
            out += ".args(&[" + ", ".join(self.arg_inline(s) for s in a["arguments"]) + "])"
        return out

    def args(self, indent: int, args: list[dict], head: str, tail: str):
        """`head` then the arguments, one a line (nested ones indented), then `tail`."""
        inline = head + ", ".join(self.arg_inline(a) for a in args) + "]" + tail
        if len(" " * indent + inline) <= WIDTH:
            self.lines.append(" " * indent + inline)
            return
        self.lines.append(" " * indent + head)
        for a in args:
            one = self.arg_inline(a) + ","
            if len(" " * (indent + 4) + one) <= WIDTH or a["type"] not in ("oneof", "block"):
                self.lines.append(" " * (indent + 4) + one)
            else:
                self.args(indent + 4, a["arguments"], self.arg_head(a) + ".args(&[", "),")
        self.lines.append(" " * indent + "]" + tail)

    def spec(self, indent: int, full: str, desc: dict, subs: list[tuple[str, dict]]):
        flags = set(desc.get("command_flags", []))
        specs = desc.get("key_specs", [])
        rng, movable = legacy_range(specs)
        if movable:
            flags.add("MOVABLE_KEYS")
        unknown = flags - set(FLAG_ORDER) - HIDDEN_FLAGS
        assert not unknown, (full, unknown)
        shown = [FLAG_NAMES.get(f, f.lower()) for f in FLAG_ORDER if f in flags]
        self.used.add("Spec")
        self.lines.append(" " * indent + "Spec {")
        i = indent + 4
        parts = [
            f"name: {rust_str(full)},",
            f"arity: {desc['arity']},",
            f"flags: {rust_str(' '.join(shown))},",
            f"acl: {rust_str(' '.join(acl_categories(desc, flags)))},",
        ]
        if rng != (0, 0, 0):
            parts.append(f"range: ({rng[0]}, {rng[1]}, {rng[2]}),")
        if desc.get("command_tips"):
            parts.append("tips: &[" + ", ".join(rust_str(t.lower()) for t in desc["command_tips"]) + "],")
        if desc.get("get_keys_function"):
            self.used.add("GetKeys")
            proc_ = desc["get_keys_function"]
            assert proc_ in GETKEYS, f"{full}: {proc_} has no GetKeys variant (cmd/spec.rs, cmd/key_args.rs)"
            parts.append(f"getkeys: Some({GETKEYS[proc_]}),")
        self.pack(i, parts)
        if specs:
            ks = [self.key_spec(s) for s in specs]
            one = "key_specs: &[" + ", ".join(ks) + "],"
            if len(" " * i + one) <= WIDTH:
                self.lines.append(" " * i + one)
            else:
                self.lines.append(" " * i + "key_specs: &[")
                for k in ks:
                    self.lines.append(" " * (i + 4) + k + ",")
                self.lines.append(" " * i + "],")
        parts = []
        for field in ("summary", "since", "group", "complexity"):
            value = desc.get(field)
            if field == "group":
                value = value.replace("_", "-")
            if value:
                parts.append(f"{field}: {rust_str(value)},")
        if desc.get("doc_flags"):
            parts.append(f"doc_flags: {rust_str(' '.join(f.lower() for f in desc['doc_flags']))},")
        for field in ("deprecated_since", "replaced_by"):
            if desc.get(field):
                parts.append(f"{field}: {rust_str(desc[field])},")
        self.pack(i, parts)
        if desc.get("history"):
            hist = ", ".join(f"({rust_str(v)}, {rust_str(c)})" for v, c in desc["history"])
            one = f"history: &[{hist}],"
            if len(" " * i + one) <= WIDTH:
                self.lines.append(" " * i + one)
            else:
                self.lines.append(" " * i + "history: &[")
                for v, c in desc["history"]:
                    self.lines.append(" " * (i + 4) + f"({rust_str(v)}, {rust_str(c)}),")
                self.lines.append(" " * i + "],")
        if desc.get("arguments"):
            self.args(i, desc["arguments"], "args: &[", ",")
        if subs:
            self.lines.append(" " * i + "subs: &[")
            for name, sub in subs:
                self.spec(i + 4, f"{full}|{name}", sub, [])
            self.lines.append(" " * i + "],")
        self.lines.append(" " * i + "..Spec::NONE")
        self.lines.append(" " * indent + "},")


HEADER = """\
// Generated by scripts/gen/command_specs.py from Redis 7.0.15's src/commands/*.json: do not edit.
// Regenerate with `python3 scripts/gen/command_specs.py <redis>/src/commands`.
"""


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    commands, containers = {}, {}
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
        for name, desc in json.load(open(f)).items():
            if desc.get("container"):
                containers.setdefault(desc["container"].lower(), {})[name.lower()] = desc
            else:
                commands[name.lower()] = desc
    ours = served()
    missing = sorted(n for n in ours if n not in commands)
    groups: dict[str, list[str]] = {}
    for name in sorted(n for n in ours if n in commands):
        groups.setdefault(commands[name]["group"], []).append(name)

    OUT_DIR.mkdir(exist_ok=True)
    for old in OUT_DIR.glob("*.rs"):
        old.unlink()
    mods = []
    for group, names in sorted(groups.items()):
        w = Writer()
        for name in names:
            redis_subs = containers.get(name, {})
            subs = [(s, redis_subs[s]) for s in sorted(ours[name]) if s in redis_subs]
            w.spec(4, name, commands[name], subs)
        imports = []
        for mod, names_ in (("key", KEY_FLAGS), ("BeginSearch", ["Index", "Keyword"]),
                            ("FindKeys", ["Keynum", "Range"])):
            used = [n for n in names_ if n in w.used]
            if used:
                imports.append(f"{mod}::{{{', '.join(used)}}}" if len(used) > 1 else f"{mod}::{used[0]}")
        plain = [n for n in ("Arg", "BeginSearch", "FindKeys", "GetKeys", "KeySpec", "Spec") if n in w.used]
        if "T" in w.used:
            plain.insert(1, "ArgType as T")
        text = HEADER + f"\n//! The {group.replace('_', ' ')} commands hopless serves.\n\n"
        # Each item is kept from rustfmt itself, so that `rustfmt <file>` (CI runs it on every file by
        # path, past the `mod` declarations' own skip) leaves the one-line-per-field layout alone.
        text += "#[rustfmt::skip]\n"
        text += f"use super::super::spec::{{{', '.join(imports + plain)}}};\n\n"
        text += "#[rustfmt::skip]\n"
        text += "pub(super) static SPECS: &[Spec] = &[\n"
        text += "\n".join(w.lines) + "\n];\n"
        (OUT_DIR / f"{group}.rs").write_text(text)
        mods.append(group)
    text = HEADER + """
//! What Redis 7.0.15 says of each command hopless serves ([`Spec`]), group by group: the commands
//! hopless's tables name that Redis has, and of a container the subcommands its row lists.

use super::spec::Spec;

"""
    # rustfmt would spread every spec over dozens of lines.
    text += "".join(f"#[rustfmt::skip]\nmod {m};\n" for m in mods)
    text += "\n/// Every group's specs.\npub static GROUPS: &[&[Spec]] = &[\n"
    text += "".join(f"    {m}::SPECS,\n" for m in mods)
    text += "];\n"
    (OUT_DIR / "mod.rs").write_text(text)
    sizes = {m: len((OUT_DIR / f"{m}.rs").read_text().splitlines()) for m in mods}
    print(f"{sum(len(v) for v in groups.values())} commands in {len(mods)} files: {sizes}")
    if missing:
        print(f"not in Redis 7.0.15 (no spec written): {' '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
