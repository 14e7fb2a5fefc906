//! The list commands against real Redis (`redis-server`, when installed): a hand-written script over
//! every command, option and error (arity, WRONGTYPE, bad and huge numbers, empty results, keys that
//! vanish when emptied, small lists and long ones, node sizes changed by CONFIG SET, RESP3), then a
//! seeded random sequence of list commands; replies compared byte for byte, keyspaces at the end.
//! Skipped without `redis-server` (failed under `CI=true`).

mod common;

use common::differ::{split, Differ};

/// Sends `cmd` to both servers and records a difference in the replies' bytes (every list reply has
/// an order, and `$-1` against `*-1` matters).
fn exact(d: &mut Differ, cmd: &str) {
    let a = split(cmd);
    let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
    exact_args(d, &a);
}

/// [`exact`] of split arguments; Redis's reply.
fn exact_args(d: &mut Differ, a: &[&[u8]]) -> Vec<u8> {
    let t = d.redis.cmd(a).encoded();
    let o = d.ours.cmd(a).encoded();
    if t != o {
        let show: Vec<String> = a
            .iter()
            .map(|x| String::from_utf8_lossy(&x[..x.len().min(60)]).into_owned())
            .collect();
        d.diffs.push(format!(
            "{}\n  redis:   {:?}\n  hopless: {:?}",
            show.join(" "),
            String::from_utf8_lossy(&t[..t.len().min(400)]),
            String::from_utf8_lossy(&o[..o.len().min(400)])
        ));
    }
    t
}

const SCRIPT: &[&str] = &[
    // Arity.
    "LPUSH",
    "LPUSH l",
    "RPUSH l",
    "LPUSHX l",
    "RPUSHX l",
    "LPOP",
    "LPOP l 1 2",
    "RPOP l 1 2",
    "LLEN",
    "LLEN l x",
    "LRANGE l 0",
    "LINDEX l",
    "LSET l 0",
    "LINSERT l before a",
    "LREM l 0",
    "LTRIM l 0",
    "LPOS l",
    "LMOVE a b left",
    "RPOPLPUSH a",
    "LMPOP 1 l",
    // Pushes, pops and lengths.
    "LPUSHX l a",
    "RPUSHX l a",
    "EXISTS l",
    "LPUSH l a b c",
    "RPUSH l d e f",
    "LPUSHX l z",
    "RPUSHX l y x",
    "LLEN l",
    "LRANGE l 0 -1",
    "TYPE l",
    "OBJECT ENCODING l",
    "LPOP l",
    "RPOP l",
    "LPOP l 2",
    "RPOP l 2",
    "LPOP l 0",
    "RPOP l 0",
    "LPOP l -1",
    "LPOP l abc",
    "LPOP l 9223372036854775807",
    "EXISTS l",
    "LPOP l",
    "LPOP l 1",
    "RPOP l",
    "RPOP l 3",
    "LPOP nokey 0",
    "LPOP nokey abc",
    "LLEN nokey",
    // LRANGE and LINDEX.
    "RPUSH r 0 1 2 3 4 5 6 7 8 9",
    "LRANGE r 0 0",
    "LRANGE r 2 4",
    "LRANGE r -3 -1",
    "LRANGE r -100 100",
    "LRANGE r 5 2",
    "LRANGE r 10 20",
    "LRANGE r -1 -2",
    "LRANGE r 9223372036854775807 -9223372036854775808",
    "LRANGE r -9223372036854775808 9223372036854775807",
    "LRANGE r a 1",
    "LRANGE r 1 a",
    "LRANGE r 01 2",
    "LRANGE nokey 0 -1",
    "LRANGE nokey x y",
    "LINDEX r 0",
    "LINDEX r -1",
    "LINDEX r 9",
    "LINDEX r 10",
    "LINDEX r -11",
    "LINDEX r -9223372036854775808",
    "LINDEX r abc",
    "LINDEX nokey abc",
    "LINDEX nokey 0",
    // LSET.
    "LSET r 0 zero",
    "LSET r -1 nine",
    "LSET r 10 x",
    "LSET r -11 x",
    "LSET r abc x",
    "LSET nokey 0 x",
    "LSET nokey abc x",
    "LRANGE r 0 -1",
    // LINSERT.
    "LINSERT r BEFORE 5 before5",
    "LINSERT r after 5 after5",
    "LINSERT r before zero first",
    "LINSERT r after nine last",
    "LINSERT r before missing x",
    "LINSERT r middle 5 x",
    "LINSERT nokey before a b",
    "LINSERT nokey middle a b",
    "LRANGE r 0 -1",
    // LREM.
    "RPUSH m a b a c a b a",
    "LREM m 1 a",
    "LREM m -1 a",
    "LRANGE m 0 -1",
    "LREM m 0 a",
    "LREM m 5 zz",
    "LREM m x a",
    "LREM m -9223372036854775808 b",
    "LREM nokey 0 a",
    "LRANGE m 0 -1",
    "LREM m 0 c",
    "EXISTS m",
    // LTRIM.
    "RPUSH t 0 1 2 3 4 5 6 7 8 9",
    "LTRIM t 1 -2",
    "LRANGE t 0 -1",
    "LTRIM t -3 100",
    "LRANGE t 0 -1",
    "LTRIM t a 1",
    "LTRIM nokey 0 1",
    "LTRIM t 5 2",
    "EXISTS t",
    "RPUSH t a b c",
    "LTRIM t -9223372036854775808 9223372036854775807",
    "LRANGE t 0 -1",
    "LTRIM t 3 3",
    "EXISTS t",
    // LPOS.
    "RPUSH p a b c 1 2 3 c c",
    "LPOS p c",
    "LPOS p c RANK 2",
    "LPOS p c RANK -1",
    "LPOS p c RANK -3",
    "LPOS p c RANK 4",
    "LPOS p c COUNT 0",
    "LPOS p c COUNT 2",
    "LPOS p c COUNT 2 RANK -1",
    "LPOS p c COUNT 0 MAXLEN 3",
    "LPOS p c RANK -1 MAXLEN 2 COUNT 0",
    "LPOS p c MAXLEN 1",
    "LPOS p zz",
    "LPOS p zz COUNT 1",
    "LPOS p c RANK 0",
    "LPOS p c RANK abc",
    "LPOS p c RANK -9223372036854775808",
    "LPOS p c RANK -9223372036854775808 COUNT 1",
    "LPOS p c RANK -9223372036854775807",
    "LPOS p c RANK 9223372036854775807 COUNT 0",
    "LPOS p c COUNT -1",
    "LPOS p c COUNT abc",
    "LPOS p c MAXLEN -1",
    "LPOS p c MAXLEN abc",
    "LPOS p c RANK",
    "LPOS p c FOO 1",
    "LPOS p c rank 1 rank 2",
    "LPOS nokey c",
    "LPOS nokey c COUNT 1",
    "LPOS nokey c RANK 0",
    // LMOVE and RPOPLPUSH.
    "RPUSH src a b c",
    "LMOVE src dst LEFT RIGHT",
    "LMOVE src dst right left",
    "LMOVE src dst up left",
    "LMOVE src dst left down",
    "LRANGE src 0 -1",
    "LRANGE dst 0 -1",
    "LMOVE src src left right",
    "LMOVE src src right left",
    "RPOPLPUSH src dst",
    "EXISTS src",
    "LMOVE src dst left left",
    "RPOPLPUSH src dst",
    "RPOPLPUSH dst dst",
    "LRANGE dst 0 -1",
    "RPUSH one x",
    "RPOPLPUSH one one",
    "LRANGE one 0 -1",
    // LMPOP.
    "RPUSH q1 a b c d e",
    "RPUSH q2 x y",
    "LMPOP 2 nokey q1 LEFT",
    "LMPOP 2 q2 q1 RIGHT COUNT 10",
    "EXISTS q2",
    "LMPOP 2 q2 q1 left count 2",
    "LMPOP 1 q1 RIGHT COUNT 1",
    "LMPOP 1 nokey LEFT",
    "LMPOP 2 nokey nokey2 LEFT COUNT 3",
    "LMPOP 0 q1 LEFT",
    "LMPOP -1 q1 LEFT",
    "LMPOP abc q1 LEFT",
    "LMPOP 2 q1 LEFT",
    "LMPOP 9223372036854775807 q1 LEFT",
    "LMPOP 1 q1 MIDDLE",
    "LMPOP 1 q1 LEFT COUNT 0",
    "LMPOP 1 q1 LEFT COUNT -1",
    "LMPOP 1 q1 LEFT COUNT abc",
    "LMPOP 1 q1 LEFT COUNT",
    "LMPOP 1 q1 LEFT COUNT 1 COUNT 1",
    "LMPOP 1 q1 LEFT FOO",
    "LMPOP 1 q1 LEFT",
    "EXISTS q1",
    // WRONGTYPE against a string key, and error precedence.
    "SET s v",
    "LPUSH s a",
    "RPUSH s a",
    "LPUSHX s a",
    "RPUSHX s a",
    "LPOP s",
    "RPOP s 2",
    "LPOP s 0",
    "LPOP s abc",
    "LLEN s",
    "LRANGE s 0 -1",
    "LRANGE s a 1",
    "LINDEX s 0",
    "LINDEX s abc",
    "LSET s 0 x",
    "LSET s abc x",
    "LINSERT s before a b",
    "LINSERT s middle a b",
    "LREM s 0 a",
    "LREM s a a",
    "LTRIM s 0 1",
    "LTRIM s a 1",
    "LPOS s a",
    "LPOS s a RANK 0",
    "LPOS s a COUNT 1",
    "RPUSH w a",
    "LMOVE s w left left",
    "LMOVE w s left left",
    "LMOVE nokey s left left",
    "LMOVE s s left left",
    "RPOPLPUSH w s",
    "RPOPLPUSH s w",
    "LRANGE w 0 -1",
    "LMPOP 2 s w LEFT",
    "LMPOP 2 w s LEFT",
    "LMPOP 2 nokey s LEFT",
    "GET s",
    // Empty elements, binary-ish and numeric ones.
    "RPUSH e '' '' 0 -1 9223372036854775807 18446744073709551616 1.5",
    "LRANGE e 0 -1",
    "LPOS e ''",
    "LREM e 1 ''",
    "LINSERT e after 0 ''",
    "LRANGE e 0 -1",
    // Huge counts.
    "RPUSH hc a b c",
    "LMPOP 1 hc RIGHT COUNT 9223372036854775807",
    "RPUSH hc a b c",
    "LPOS hc b COUNT 9223372036854775807 MAXLEN 9223372036854775807",
    "LREM hc 9223372036854775807 a",
    "LRANGE hc 0 -1",
    // The keyspace commands on lists.
    "COPY hc hc2",
    "COPY hc hc2",
    "LRANGE hc2 0 -1",
    "RPUSH hc2 d",
    "LRANGE hc 0 -1",
    "RENAME hc2 hc3",
    "TYPE hc3",
    "OBJECT ENCODING hc3",
    "EXISTS hc2 hc3",
    "DEL hc3",
    "LLEN hc3",
    // Expiring lists.
    "RPUSH x a b",
    "EXPIRE x 100",
    "RPUSH x c",
    "TTL x",
    "LPOP x 3",
    "EXISTS x",
    // Over maxmemory (noeviction): the commands Redis flags denyoom are refused, whether or not their
    // key is there; the others run.
    "RPUSH oom a b",
    "CONFIG SET maxmemory 1",
    "LPUSH oom x",
    "RPUSH newkey x",
    "LPUSHX oom x",
    "RPUSHX nokey x",
    "LSET oom 0 x",
    "LSET nokey 0 x",
    "LINSERT oom before a x",
    "LINSERT nokey before a x",
    "LMOVE oom oom2 left left",
    "RPOPLPUSH nokey oom2",
    "LPOP oom",
    "LRANGE oom 0 -1",
    "LREM oom 0 b",
    "EXISTS oom",
    "CONFIG SET maxmemory 0",
];

/// RESP3: null replies become `_`, arrays stay arrays.
const RESP3: &[&str] = &[
    "RPUSH r3 a b c",
    "LPOP nokey",
    "LPOP nokey 1",
    "LPOP r3 0",
    "LPOP r3 1",
    "LINDEX r3 10",
    "LPOS r3 zz",
    "LPOS r3 zz COUNT 0",
    "LMPOP 1 nokey LEFT",
    "LMPOP 1 r3 RIGHT",
    "LMOVE nokey r3 left left",
    "LRANGE nokey 0 -1",
    "LRANGE r3 0 -1",
];

#[test]
fn list_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for cmd in SCRIPT {
        exact(&mut d, cmd);
    }
    // The HELLO reply names the server: not compared.
    d.redis.cmd(&[b"HELLO", b"3"]).read();
    d.ours.cmd(&[b"HELLO", b"3"]).read();
    for cmd in RESP3 {
        exact(&mut d, cmd);
    }
    d.compare_keyspace();
    d.assert_none();
}

/// Long lists across node sizes (CONFIG SET list-max-listpack-size, and its ziplist alias; out-of-range
/// ones too, which Redis clamps): every
/// shape of node gets filled, split by inserts in the middle, emptied and joined.
#[test]
fn long_lists_under_every_node_size_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for (round, size) in [
        "4",
        "-1",
        "1",
        "-5",
        "128",
        "0",
        "-10",
        "-2147483648",
        "2147483647",
        "-2",
    ]
    .iter()
    .enumerate()
    {
        let key = format!("big{round}");
        exact(&mut d, &format!("CONFIG SET list-max-listpack-size {size}"));
        exact(&mut d, "CONFIG GET list-max-ziplist-size");
        let mut push = vec![b"RPUSH".to_vec(), key.as_bytes().to_vec()];
        for i in 0..600 {
            push.push(format!("element-{i}-{}", "x".repeat(i % 50)).into_bytes());
        }
        let a: Vec<&[u8]> = push.iter().map(|x| &x[..]).collect();
        exact_args(&mut d, &a);
        for cmd in [
            format!("LPUSH {key} {}", "y".repeat(5000)),
            format!("RPUSH {key} {}", "z".repeat(70000)),
            format!("LRANGE {key} 0 -1"),
            format!("LINDEX {key} 300"),
            format!("LINDEX {key} -300"),
            format!("LSET {key} 250 {}", "s".repeat(9000)),
            format!("LSET {key} 251 short"),
            format!("LINSERT {key} before element-100- middle"),
            format!(
                "LINSERT {key} after element-400-{} {}",
                "x".repeat(0),
                "m".repeat(3000)
            ),
            format!("LREM {key} 0 short"),
            format!("LPOS {key} element-599-{} RANK -1", "x".repeat(49)),
            format!("LRANGE {key} 290 320"),
            format!("LTRIM {key} 50 -50"),
            format!("LLEN {key}"),
            format!("LPOP {key} 7"),
            format!("RPOP {key} 9"),
            format!("LMOVE {key} {key}-dst RIGHT LEFT"),
            format!("LMPOP 2 nokey {key} LEFT COUNT 100"),
            format!("OBJECT ENCODING {key}"),
            format!("LRANGE {key} 0 -1"),
        ] {
            exact(&mut d, &cmd);
        }
    }
    exact(&mut d, "CONFIG SET list-max-ziplist-size -2");
    d.compare_keyspace();
    d.assert_none();
}

/// A small xorshift, so that the sequence is the same on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// A seeded random sequence of list commands (with bad arguments now and then), over a few keys one of
/// which is a string, replies compared byte for byte.
#[test]
fn random_list_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    exact(&mut d, "SET str v");
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let long = "L".repeat(300);
    let keys = ["l0", "l1", "l2", "l3", "str", "nokey"];
    let elems = ["a", "b", "c", "", "1", "-7", long.as_str()];
    let ints = ["0", "1", "2", "-1", "-2", "3", "5", "-6", "100", "-100", "x"];
    let counts = ["0", "1", "2", "3", "10", "-1", "y"];
    let steps = 3000;
    // What Redis replied, by the reply's first byte, and how many arrays were long: the sequence must
    // reach lists of some length, errors and nulls alike, or it tests little.
    let mut seen = std::collections::HashMap::new();
    let mut long_arrays = 0;
    for step in 0..steps {
        let k = r.pick(&keys);
        let k2 = r.pick(&keys);
        let e = r.pick(&elems);
        let i = r.pick(&ints);
        let j = r.pick(&ints);
        let n = r.pick(&counts);
        let lr = r.pick(&["LEFT", "RIGHT", "left", "up"]);
        let lr2 = r.pick(&["LEFT", "RIGHT"]);
        let cmd: Vec<String> = match r.below(22) {
            0..=3 => {
                let mut c = vec![
                    r.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]).to_string(),
                    k.into(),
                ];
                for _ in 0..=r.below(4) {
                    c.push(r.pick(&elems).into());
                }
                c
            }
            4 => vec!["LPOP".into(), k.into()],
            5 => vec!["RPOP".into(), k.into(), n.into()],
            6 => vec!["LLEN".into(), k.into()],
            7 | 8 => vec!["LRANGE".into(), k.into(), i.into(), j.into()],
            9 => vec!["LINDEX".into(), k.into(), i.into()],
            10 => vec!["LSET".into(), k.into(), i.into(), e.into()],
            11 => {
                let w = r.pick(&["BEFORE", "after", "nowhere"]);
                vec![
                    "LINSERT".into(),
                    k.into(),
                    w.into(),
                    r.pick(&elems).into(),
                    e.into(),
                ]
            }
            12 => vec!["LREM".into(), k.into(), i.into(), e.into()],
            13 if r.below(4) == 0 => vec!["LTRIM".into(), k.into(), i.into(), j.into()],
            14 => {
                let mut c = vec!["LPOS".into(), k.into(), e.into()];
                for _ in 0..r.below(3) {
                    let opt = r.pick(&["RANK", "COUNT", "MAXLEN"]);
                    c.push(opt.into());
                    c.push(r.pick(&ints).into());
                }
                c
            }
            15 => vec!["LMOVE".into(), k.into(), k2.into(), lr.into(), lr2.into()],
            16 => vec!["RPOPLPUSH".into(), k.into(), k2.into()],
            17 => {
                let mut c = vec![
                    "LMPOP".into(),
                    r.pick(&["1", "2", "0", "3"]).into(),
                    k.into(),
                    k2.into(),
                ];
                c.push(lr.into());
                if r.below(2) == 0 {
                    c.push("COUNT".into());
                    c.push(n.into());
                }
                c
            }
            18 if step % 50 == 0 => {
                let size = r.pick(&["2", "3", "-1", "-2", "1", "5"]);
                vec![
                    "CONFIG".into(),
                    "SET".into(),
                    "list-max-listpack-size".into(),
                    size.into(),
                ]
            }
            19 => vec!["LPOP".into(), k.into(), n.into()],
            _ => vec!["RPUSH".into(), k.into(), e.into(), r.pick(&elems).into()],
        };
        let a: Vec<&[u8]> = cmd.iter().map(|x| x.as_bytes()).collect();
        let reply = exact_args(&mut d, &a);
        *seen.entry(reply.first().copied().unwrap_or(0)).or_insert(0) += 1;
        if reply.len() > 40 && reply[0] == b'*' {
            long_arrays += 1;
        }
        if d.diffs.len() > 20 {
            break;
        }
    }
    exact(&mut d, "CONFIG SET list-max-listpack-size -2");
    d.compare_keyspace();
    d.assert_none();
    for first in [b'*', b'$', b':', b'-', b'+'] {
        assert!(
            seen.get(&first).copied().unwrap_or(0) > 50,
            "replies by kind: {seen:?}"
        );
    }
    assert!(long_arrays > 50, "only {long_arrays} long arrays");
}
