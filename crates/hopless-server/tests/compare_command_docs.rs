//! Differential test of COMMAND against a real `redis-server` (skipped without one, failed under
//! `CI=true`): COMMAND INFO and COMMAND DOCS of every command and subcommand hopless lists, in RESP2
//! and RESP3; COMMAND, COUNT, LIST (and its filters) over the commands both serve; GETKEYS and
//! GETKEYSANDFLAGS over requests of every key-spec kind and key-finding procedure, and their errors.
//!
//! Replies are compared byte for byte, but for one thing: Redis lists a container's subcommands (and
//! COMMAND, COMMAND INFO, COMMAND DOCS and COMMAND LIST all commands) in its hash tables' order, which
//! a random seed picks at each start. Those lists are compared sorted, their elements still byte for
//! byte.

mod common;

use std::collections::BTreeMap;

use common::differ::{split, Differ};
use common::Raw;
use hopless_server::codec::Frame;

/// Redis 7.0.15's commands that hopless does not serve: replication and failover (REPLICAOF, WAIT...),
/// cluster redirection (ASKING, READONLY, READWRITE), ACL, modules, several databases (MOVE, SWAPDB),
/// LATENCY and LOLWUT. COMMAND COUNT and LIST
/// differ from Redis's by exactly these (and their subcommands).
const NOT_SERVED: &[&str] = &[
    "acl",
    "asking",
    "failover",
    "latency",
    "lolwut",
    "module",
    "move",
    "readonly",
    "readwrite",
    "replicaof",
    "restore-asking",
    "role",
    "slaveof",
    "swapdb",
    "wait",
];

/// A reply as its exact bytes, in a tree: a header line (`*3`, `$5`, `+RO`...), a bulk's bytes, and
/// an aggregate's elements (a map's keys and values one after another). Two trees are equal only where
/// their bytes are (a RESP2 null bulk is not a null array, as it would be as a `Frame`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Node {
    head: Vec<u8>,
    bulk: Option<Vec<u8>>,
    kids: Vec<Node>,
}

impl Node {
    fn parse(b: &[u8]) -> Node {
        let (n, used) = Node::parse_at(b, 0);
        assert_eq!(used, b.len(), "one reply");
        n
    }

    fn parse_at(b: &[u8], at: usize) -> (Node, usize) {
        let end = at + b[at..].windows(2).position(|w| w == b"\r\n").expect("a line");
        let head = b[at..end].to_vec();
        let len: i64 = std::str::from_utf8(&head[1..])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(-1);
        let mut next = end + 2;
        let mut node = Node {
            head,
            bulk: None,
            kids: Vec::new(),
        };
        match node.head[0] {
            b'$' | b'=' if len >= 0 => {
                node.bulk = Some(b[next..next + len as usize].to_vec());
                next += len as usize + 2;
            }
            b'*' | b'~' | b'>' | b'%' if len >= 0 => {
                let n = if node.head[0] == b'%' { 2 * len } else { len };
                for _ in 0..n {
                    let (kid, after) = Node::parse_at(b, next);
                    node.kids.push(kid);
                    next = after;
                }
            }
            _ => {}
        }
        (node, next)
    }

    fn is_bulk(&self, s: &str) -> bool {
        self.bulk.as_deref() == Some(s.as_bytes())
    }

    /// The bulk string's text (a command's name).
    fn text(&self) -> String {
        String::from_utf8_lossy(self.bulk.as_deref().unwrap_or_default()).into_owned()
    }

    /// Sorts what Redis lists in hash-table order: a COMMAND INFO entry's subcommands, and a COMMAND
    /// DOCS map's `subcommands` (a map in RESP3, a flat array of pairs in RESP2).
    fn normalise(mut self) -> Node {
        self.kids = self.kids.into_iter().map(Node::normalise).collect();
        let entry = self.head == b"*10" && self.kids[0].bulk.is_some() && self.kids[3].head[0] == b':';
        if entry && self.kids[9].head[0] == b'*' {
            self.kids[9].kids.sort();
        }
        if matches!(self.head[0], b'%' | b'*') && self.kids.len() % 2 == 0 {
            for i in (0..self.kids.len()).step_by(2) {
                if self.kids[i].is_bulk("subcommands") {
                    let subs = &mut self.kids[i + 1];
                    let mut pairs: Vec<Vec<Node>> = subs.kids.chunks(2).map(|p| p.to_vec()).collect();
                    pairs.sort();
                    subs.kids = pairs.into_iter().flatten().collect();
                }
            }
        }
        self
    }
}

/// The same request to both; a difference recorded unless the replies are the same bytes once what
/// Redis lists in hash-table order is sorted.
fn compare(d: &mut Differ, args: &[&[u8]]) {
    let t = d.redis.cmd(args).read_bytes();
    let o = d.ours.cmd(args).read_bytes();
    if t == o || Node::parse(&t).normalise() == Node::parse(&o).normalise() {
        return;
    }
    let show: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let cut = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(2000)]).into_owned();
    d.diffs.push(format!(
        "{}\n  redis:   {:?}\n  hopless: {:?}",
        show.join(" "),
        cut(&t),
        cut(&o)
    ));
}

fn compare_line(d: &mut Differ, line: &str) {
    let a = split(line);
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    compare(d, &a);
}

/// Both connections in RESP3 (the HELLO replies themselves differ: server name, version, id).
fn resp3(d: &mut Differ) {
    d.redis.cmd(&[b"HELLO", b"3"]).read();
    d.ours.cmd(&[b"HELLO", b"3"]).read();
}

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// A server's COMMAND LIST (full names, subcommands included).
fn list(r: &mut Raw, filter: &[&[u8]]) -> Vec<String> {
    let mut args: Vec<&[u8]> = vec![b"COMMAND", b"LIST"];
    args.extend_from_slice(filter);
    match r.cmd(&args).read() {
        Frame::Array(v) => v.iter().map(text).collect(),
        other => panic!("COMMAND LIST gave {other:?}"),
    }
}

/// A name-keyed reply (COMMAND's entries, or COMMAND DOCS's map) as name to normalised entry.
fn by_name(reply: &[u8]) -> BTreeMap<String, Node> {
    let top = Node::parse(reply).normalise();
    if top.head[0] == b'*' && top.kids.iter().all(|e| e.head == b"*10") {
        return top.kids.into_iter().map(|e| (e.kids[0].text(), e)).collect();
    }
    // COMMAND DOCS: name, docs, name, docs... (a map in RESP3).
    top.kids.chunks(2).map(|p| (p[0].text(), p[1].clone())).collect()
}

#[test]
fn info_and_docs_of_every_command_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let names = list(&mut d.ours, &[]);
    assert!(names.len() > 300, "COMMAND LIST gave {} names", names.len());
    for proto in [2, 3] {
        if proto == 3 {
            resp3(&mut d);
        }
        for name in &names {
            for sub in [&b"INFO"[..], b"DOCS"] {
                compare(&mut d, &[b"COMMAND", sub, name.as_bytes()]);
            }
        }
        // Several at once, unknown ones, names with a `|` that name nothing, any case.
        for line in [
            "COMMAND INFO get set nosuch config|get",
            "COMMAND INFO nosuch",
            "COMMAND INFO get|x config|nosuch config|get|x | config| ''",
            "COMMAND INFO CONFIG|GET Client|List XINFO",
            "COMMAND DOCS get nosuch config|get set",
            "COMMAND DOCS nosuch get|x config|get|x",
            "COMMAND DOCS CONFIG|GET",
        ] {
            compare_line(&mut d, line);
        }
    }
    d.assert_none();
}

#[test]
fn command_count_and_list_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let ours = list(&mut d.ours, &[]);
    let theirs = list(&mut d.redis, &[]);
    let not_served = |name: &str| NOT_SERVED.contains(&name.split('|').next().unwrap_or(name));
    let mut expected: Vec<&String> = theirs.iter().filter(|n| !not_served(n)).collect();
    let mut listed: Vec<&String> = ours.iter().collect();
    expected.sort();
    listed.sort();
    assert_eq!(listed, expected, "COMMAND LIST: Redis's but for NOT_SERVED");

    let count = |r: &mut Raw| match r.cmd(&[b"COMMAND", b"COUNT"]).read() {
        Frame::Integer(n) => n as usize,
        other => panic!("COMMAND COUNT gave {other:?}"),
    };
    let (ours_n, theirs_n) = (count(&mut d.ours), count(&mut d.redis));
    assert_eq!(ours_n, ours.iter().filter(|n| !n.contains('|')).count());
    assert_eq!(
        ours_n + NOT_SERVED.len(),
        theirs_n,
        "COMMAND COUNT: Redis's less NOT_SERVED"
    );

    // The filters, over the commands both serve.
    for filter in [
        "aclcat read",
        "aclcat HyperLogLog",
        "aclcat dangerous",
        "aclcat nosuch",
        "pattern x*",
        "pattern *|*",
        "pattern CONFIG*",
        "pattern *[gs]et",
        "module nosuch",
    ] {
        let args = split(&format!("FILTERBY {filter}"));
        let args: Vec<&[u8]> = args.iter().map(|x| &x[..]).collect();
        let mut t: Vec<String> = list(&mut d.redis, &args)
            .into_iter()
            .filter(|n| !not_served(n))
            .collect();
        let mut o = list(&mut d.ours, &args);
        t.sort();
        o.sort();
        assert_eq!(o, t, "COMMAND LIST FILTERBY {filter}");
    }
    for line in [
        "COMMAND LIST x",
        "COMMAND LIST FILTERBY",
        "COMMAND LIST FILTERBY aclcat",
        "COMMAND LIST FILTERBY nosuch x",
        "COMMAND LIST FILTERBY aclcat read extra",
        "COMMAND COUNT x",
        "COMMAND HELP",
        "COMMAND HELP x",
        "COMMAND help",
        "COMMAND nosuch",
        "COMMAND GETKEYS",
        "COMMAND GETKEYS get",
        "COMMAND GETKEYSANDFLAGS get",
        "COMMAND GETKEYSANDFLAGS restore k 0 x REPLACE",
        "COMMAND GETKEYSANDFLAGS dump k",
        "COMMAND GETKEYS save",
        "COMMAND GETKEYSANDFLAGS migrate h p k 0 0",
        "COMMAND GETKEYSANDFLAGS migrate h p '' 0 0 COPY AUTH pw KEYS a b c",
        "COMMAND GETKEYSANDFLAGS migrate h p '' 0 0 AUTH2 u KEYS KEYS a",
        "COMMAND GETKEYSANDFLAGS migrate h p k 0 0 KEYS a",
        // CLIENT SETINFO and NO-TOUCH are Redis 7.2's: hopless answers them, but, as Redis 7.0.15,
        // COMMAND does not know them.
        "COMMAND INFO client|setinfo client|no-touch",
    ] {
        compare_line(&mut d, line);
    }
    d.assert_none();

    // What hopless does not serve, COMMAND does not know (where Redis describes it).
    for (line, reply) in [
        ("COMMAND INFO restore-asking", "*1\r\n$-1\r\n"),
        ("COMMAND DOCS restore-asking", "*0\r\n"),
        (
            "COMMAND GETKEYS restore-asking k 0 x",
            "-ERR Invalid command specified\r\n",
        ),
    ] {
        let a = split(line);
        let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
        let got = d.ours.cmd(&a).read_bytes();
        assert_eq!(String::from_utf8_lossy(&got), reply, "{line}");
    }
}

/// COMMAND, COMMAND INFO and COMMAND DOCS with no names: every command hopless serves is there, as
/// Redis has it.
#[test]
fn every_command_at_once_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for proto in [2, 3] {
        if proto == 3 {
            resp3(&mut d);
        }
        for args in [
            &[&b"COMMAND"[..]][..],
            &[b"COMMAND", b"INFO"],
            &[b"COMMAND", b"DOCS"],
        ] {
            let theirs = by_name(&d.redis.cmd(args).read_bytes());
            let ours = by_name(&d.ours.cmd(args).read_bytes());
            let expected: Vec<&String> = theirs
                .keys()
                .filter(|n| !NOT_SERVED.contains(&n.as_str()))
                .collect();
            assert_eq!(
                ours.keys().collect::<Vec<_>>(),
                expected,
                "{args:?} (RESP{proto}): names"
            );
            for (name, entry) in &ours {
                if theirs[name] != *entry {
                    d.diffs.push(format!(
                        "{args:?} (RESP{proto}): {name}\n  redis:   {:?}\n  hopless: {entry:?}",
                        theirs[name]
                    ));
                }
            }
        }
    }
    d.assert_none();
}

/// Requests of every key-spec kind (range, keyword, keynum; `not_key` ones), of every key-finding
/// procedure Redis falls back on (SORT's STORE, SET's GET, BITFIELD's subcommands, numkeys read by
/// `atoi`, XREAD's STREAMS, GEORADIUS's STORE), of containers' subcommands, and the errors.
const GETKEYS: &[&str] = &[
    // Range specs.
    "get a",
    "get",
    "get a b",
    "mset a 1 b 2 c 3",
    "mset a 1 b",
    "del a b c",
    "exists a b",
    "lmove a b left right",
    "brpoplpush a b 0",
    "blpop a b c 0",
    "rename a b",
    "copy a b",
    "smove a b m",
    "lcs a b",
    "pfmerge d a b",
    "pfcount a b",
    "pfdebug getreg k",
    "sinterstore d a b",
    "zrangestore d s 0 1",
    "geosearchstore dst src frommember m byradius 1 m",
    "getex k persist",
    "msetnx a 1 b 2",
    "watch a b",
    "xadd k * f v",
    "xclaim k g c 0 1-1",
    // Keynum specs, and their procedures when the count is not one string2ll reads.
    "eval \"return 1\" 0",
    "eval \"return 1\" 2 a b c",
    "eval \"return 1\" 3 a b",
    "eval \"return 1\" -1",
    "eval \"return 1\" x",
    "eval \"return 1\" 2abc a b",
    "eval \"return 1\" \" 2\" a b",
    "eval \"return 1\" 01 a b",
    "eval \"return 1\" 4294967297 a b",
    "evalsha abc 1 k",
    "eval_ro s 1 k v",
    "evalsha_ro s 2 k1 k2",
    "fcall f 1 x foo",
    "fcall_ro f 1 x foo",
    "fcall f 0",
    "zunionstore d 2 a b",
    "zunionstore d 0 a b",
    "zunionstore d 2abc a b",
    "zunionstore d 3 a b",
    "zunionstore d -1 a b",
    "zinterstore d 2 a b weights 1 2",
    "zdiffstore d 1 a",
    "zunion 2 a b",
    "zunion 0 a",
    "zinter 3 a b",
    "zdiff 2 a b withscores",
    "zintercard 2 a b limit 1",
    "lmpop 2 a b left",
    "lmpop 2abc a b left",
    "blmpop 0 2 a b left",
    "bzmpop 1 1 a min",
    "zmpop 1 a min",
    "sintercard 1 a",
    "sintercard 2 a b limit 3",
    "sintercard 3 a b",
    // Keyword specs.
    "xread streams a b 1 2",
    "xread streams a b 1",
    "xread count 2 block 0 streams a 0",
    "xread streams",
    "xread count 1 a",
    "xread block 0 count 2 streams a b 0 0",
    "xreadgroup group g c streams a 0",
    "xreadgroup group g c count 1 noack streams a b 0 0",
    "xreadgroup group streams c streams a 0",
    "xreadgroup group g c streams a",
    "georadius k 1 1 1 m store a",
    "georadius k 1 1 1 m storedist a store b",
    "georadius k 1 1 1 m store a store b",
    "georadius k 1 1 1 m store store x",
    "georadius k 1 1 1 m store",
    "georadius k 1 1 1 m \"store\\x00\" a",
    "georadius_ro k 1 1 1 m store a",
    "georadiusbymember k m 1 km storedist a",
    // SORT's, SET's and BITFIELD's procedures.
    "sort l",
    "sort l store d",
    "sort l by w_* store d1 limit 0 1 store d2",
    "sort l get store store",
    "sort l store",
    "sort l limit 0 1 store d",
    "sort_ro l",
    "sort_ro l store x",
    "set a b",
    "set a b get",
    "set a b GET",
    "set a b nx get",
    "set a b ex 10",
    "set a b \"get\\x00\"",
    "bitfield k get u8 0",
    "bitfield k get u8 0 set u8 0 1",
    "bitfield k incrby u8 0 1",
    "bitfield k overflow sat get u8 0",
    "bitfield k nosuch",
    "bitfield k",
    "bitfield_ro k get u8 0",
    // Containers' subcommands.
    "object encoding k",
    "object encoding",
    "object encoding k x",
    "object help",
    "object nosuch k",
    "object",
    "memory usage k",
    "memory usage k samples 5",
    "memory usage",
    "memory doctor",
    "xgroup create k g $",
    "xgroup setid k g 0",
    "xgroup createconsumer k g c",
    "xgroup delconsumer k g c",
    "xgroup destroy k g",
    "xgroup help",
    "xinfo stream k full",
    "xinfo groups k",
    "xinfo consumers k g",
    "xinfo help",
    "config get x",
    "client list",
    "command info",
    // Channels are `not_key` specs: no keys.
    "publish ch msg",
    "spublish ch msg",
    "ssubscribe a b",
    "sunsubscribe a",
    "pubsub channels",
    // No keys, no such command.
    "ping",
    "nosuch a",
    "debug object k",
    "function load x",
    "script exists a",
];

#[test]
fn getkeys_and_flags_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for proto in [2, 3] {
        if proto == 3 {
            resp3(&mut d);
        }
        for req in GETKEYS {
            for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
                compare_line(&mut d, &format!("COMMAND {sub} {req}"));
            }
        }
    }
    d.assert_none();
}
