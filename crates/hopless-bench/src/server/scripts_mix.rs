//! The scripts mix of `hopless bench server`: what job queues and rate limiters send, EVALSHA of two
//! scripts loaded once (untimed, with SCRIPT LOAD), half the requests each:
//! - a fixed-window rate limiter: INCR of the client's counter, PEXPIRE on its first hit, the count
//!   compared with the limit (`rl:N`, `keys` counters);
//! - a queue move, as job queues promote a delayed job: ZPOPMIN of the delayed set, HSET of the job's
//!   state, LPUSH onto the ready list (the delayed set is preloaded with a job for every move).
//!
//! Each request runs three or four commands inside the server; the figure is scripts a second.

use rand::{rngs::SmallRng, Rng, SeedableRng};

/// The rate limiter: KEYS[1] the counter, ARGV the limit and the window in milliseconds.
pub const RATE_LIMITER: &str = "local n = redis.call('incr', KEYS[1]) \
    if n == 1 then redis.call('pexpire', KEYS[1], ARGV[2]) end \
    if n > tonumber(ARGV[1]) then return 0 end return 1";

/// The queue move: KEYS the delayed set, the ready list and the state hash.
pub const QUEUE_MOVE: &str = "local j = redis.call('zpopmin', KEYS[1]) \
    if #j == 0 then return false end \
    redis.call('hset', KEYS[3], j[1], 'ready') \
    redis.call('lpush', KEYS[2], j[1]) return j[1]";

/// Jobs per preload ZADD.
const BATCH: usize = 100;

fn sha(body: &str) -> Vec<u8> {
    sha1_smol::Sha1::from(body).digest().to_string().into_bytes()
}

/// The untimed preload: both scripts loaded, and `moves` delayed jobs.
pub fn preload(moves: usize) -> Vec<Vec<Vec<u8>>> {
    let mut cmds = vec![
        vec![
            b"SCRIPT".to_vec(),
            b"LOAD".to_vec(),
            RATE_LIMITER.as_bytes().to_vec(),
        ],
        vec![
            b"SCRIPT".to_vec(),
            b"LOAD".to_vec(),
            QUEUE_MOVE.as_bytes().to_vec(),
        ],
    ];
    for start in (0..moves).step_by(BATCH) {
        let mut zadd = vec![b"ZADD".to_vec(), b"jobs:delayed".to_vec()];
        for i in start..(start + BATCH).min(moves) {
            zadd.push(i.to_string().into_bytes());
            zadd.push(format!("job:{i}").into_bytes());
        }
        cmds.push(zadd);
    }
    cmds
}

/// `n` requests, half of each script in random order, the rate limiter's counter drawn from `keys`.
pub fn requests(n: usize, keys: usize, seed: u64) -> Vec<Vec<Vec<u8>>> {
    let (limiter, mover) = (sha(RATE_LIMITER), sha(QUEUE_MOVE));
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            if rng.gen_bool(0.5) {
                let k = rng.gen_range(0..keys.max(1));
                vec![
                    b"EVALSHA".to_vec(),
                    limiter.clone(),
                    b"1".to_vec(),
                    format!("rl:{k}").into_bytes(),
                    b"100".to_vec(),
                    b"60000".to_vec(),
                ]
            } else {
                vec![
                    b"EVALSHA".to_vec(),
                    mover.clone(),
                    b"3".to_vec(),
                    b"jobs:delayed".to_vec(),
                    b"jobs:ready".to_vec(),
                    b"jobs:state".to_vec(),
                ]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requests_name_the_scripts_the_preload_loads() {
        let pre = preload(250);
        assert_eq!(pre.len(), 2 + 3);
        let reqs = requests(100, 10, 1);
        assert!(reqs
            .iter()
            .all(|r| r[1] == sha(RATE_LIMITER) || r[1] == sha(QUEUE_MOVE)));
        assert!(
            reqs.iter().any(|r| r[1] == sha(RATE_LIMITER)) && reqs.iter().any(|r| r[1] == sha(QUEUE_MOVE))
        );
    }
}
