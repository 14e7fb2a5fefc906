//! The data-type mix of `hopless bench server`, beside the strings mix (the KV workload's): what a cache
//! holding more than strings serves.
//!
//! Preload (untimed, the server's VmRSS read after each shape, so each shape gets its own bytes per
//! element), `elements` in all, a quarter in each shape:
//! - small hashes of 10 fields (`h:N`, fields `f0`..`f9`, 16-byte values): sessions;
//! - one long list (`queue`, 16-byte elements): a queue;
//! - one big sorted set (`board`, members `player:N`, random integer scores): a leaderboard;
//! - small sets of 10 members (`s:N`, members `tag:N`): tags.
//!
//! Measured requests, a quarter for each shape, each drawn before the clock starts: HSET or HGET of a
//! random field of a random hash; LPUSH or RPOP of the queue; ZADD of a random player's new score or
//! ZRANGE of the top 10 with scores; SADD or SISMEMBER of a random member of a random set.

use rand::{rngs::SmallRng, Rng, SeedableRng};

/// The preloaded shapes, in preload order.
pub const SHAPES: [&str; 4] = [
    "hashes of 10 fields",
    "one long list",
    "one big sorted set",
    "sets of 10 members",
];

/// Fields per hash and members per set.
const SMALL: usize = 10;
/// Elements per preload command of the long list and the big sorted set.
const BATCH: usize = 100;

/// Sizes of the preloaded shapes for `elements` in all.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub hashes: usize,
    pub list: usize,
    pub zset: usize,
    pub sets: usize,
}

impl Sizes {
    pub fn of(elements: usize) -> Sizes {
        let quarter = (elements / 4).max(SMALL);
        Sizes {
            hashes: quarter / SMALL,
            list: quarter,
            zset: quarter,
            sets: quarter / SMALL,
        }
    }

    /// Elements each shape holds, in [`SHAPES`]' order.
    pub fn elements(&self) -> [usize; 4] {
        [self.hashes * SMALL, self.list, self.zset, self.sets * SMALL]
    }
}

fn value16(i: usize) -> Vec<u8> {
    format!("v{i:015}").into_bytes()
}

/// The preload of shape `shape` (an index into [`SHAPES`]): its commands, each an argument list.
pub fn preload(shape: usize, s: &Sizes) -> Vec<Vec<Vec<u8>>> {
    let mut rng = SmallRng::seed_from_u64(11 + shape as u64);
    match shape {
        0 => (0..s.hashes)
            .map(|h| {
                let mut a = vec![b"HSET".to_vec(), format!("h:{h}").into_bytes()];
                for f in 0..SMALL {
                    a.push(format!("f{f}").into_bytes());
                    a.push(value16(h * SMALL + f));
                }
                a
            })
            .collect(),
        1 => (0..s.list.div_ceil(BATCH))
            .map(|b| {
                let mut a = vec![b"RPUSH".to_vec(), b"queue".to_vec()];
                a.extend((b * BATCH..((b + 1) * BATCH).min(s.list)).map(value16));
                a
            })
            .collect(),
        2 => (0..s.zset.div_ceil(BATCH))
            .map(|b| {
                let mut a = vec![b"ZADD".to_vec(), b"board".to_vec()];
                for m in b * BATCH..((b + 1) * BATCH).min(s.zset) {
                    a.push(rng.gen_range(0..1_000_000u32).to_string().into_bytes());
                    a.push(format!("player:{m}").into_bytes());
                }
                a
            })
            .collect(),
        _ => (0..s.sets)
            .map(|k| {
                let mut a = vec![b"SADD".to_vec(), format!("s:{k}").into_bytes()];
                a.extend((0..SMALL).map(|m| format!("tag:{}", k * SMALL + m).into_bytes()));
                a
            })
            .collect(),
    }
}

/// `n` measured requests of the mix over the preloaded shapes, from `seed`.
pub fn requests(s: &Sizes, n: usize, seed: u64) -> Vec<Vec<Vec<u8>>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let write = rng.gen_bool(0.5);
            match rng.gen_range(0..4) {
                0 => {
                    let h = format!("h:{}", rng.gen_range(0..s.hashes.max(1))).into_bytes();
                    let f = format!("f{}", rng.gen_range(0..SMALL)).into_bytes();
                    if write {
                        vec![b"HSET".to_vec(), h, f, value16(i)]
                    } else {
                        vec![b"HGET".to_vec(), h, f]
                    }
                }
                1 if write => vec![b"LPUSH".to_vec(), b"queue".to_vec(), value16(i)],
                1 => vec![b"RPOP".to_vec(), b"queue".to_vec()],
                2 if write => vec![
                    b"ZADD".to_vec(),
                    b"board".to_vec(),
                    rng.gen_range(0..1_000_000u32).to_string().into_bytes(),
                    format!("player:{}", rng.gen_range(0..s.zset.max(1))).into_bytes(),
                ],
                2 => ["ZRANGE", "board", "0", "9", "REV", "WITHSCORES"]
                    .iter()
                    .map(|a| a.as_bytes().to_vec())
                    .collect(),
                _ => {
                    let k = rng.gen_range(0..s.sets.max(1));
                    let m = format!("tag:{}", k * SMALL + rng.gen_range(0..2 * SMALL)).into_bytes();
                    let cmd = if write { "SADD" } else { "SISMEMBER" };
                    vec![cmd.as_bytes().to_vec(), format!("s:{k}").into_bytes(), m]
                }
            }
        })
        .collect()
}

/// Appends a command as a RESP array of bulk strings.
pub fn encode(out: &mut Vec<u8>, args: &[Vec<u8>]) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preload_holds_the_elements_asked_for() {
        let s = Sizes::of(4000);
        assert_eq!(s.elements(), [1000, 1000, 1000, 1000]);
        let count = |shape: usize, per_pair: usize| -> usize {
            preload(shape, &s).iter().map(|a| (a.len() - 2) / per_pair).sum()
        };
        assert_eq!(count(0, 2), 1000);
        assert_eq!(count(1, 1), 1000);
        assert_eq!(count(2, 2), 1000);
        assert_eq!(count(3, 1), 1000);
    }

    #[test]
    fn requests_spread_over_the_four_shapes() {
        let r = requests(&Sizes::of(4000), 8000, 1);
        for cmd in [
            "HSET",
            "HGET",
            "LPUSH",
            "RPOP",
            "ZADD",
            "ZRANGE",
            "SADD",
            "SISMEMBER",
        ] {
            let n = r.iter().filter(|a| a[0] == cmd.as_bytes()).count();
            assert!((700..1300).contains(&n), "{cmd}: {n}");
        }
        let mut out = Vec::new();
        encode(&mut out, &r[0]);
        assert!(out.starts_with(b"*"));
    }
}
