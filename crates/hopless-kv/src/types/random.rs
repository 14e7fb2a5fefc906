//! Random numbers for the random-member commands (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER).

/// A random number for SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER and the like: a per-thread xorshift
/// seeded from the standard library's random hash keys (not for anything an attacker must not guess).
pub fn random_u64() -> u64 {
    use std::cell::Cell;
    use std::hash::BuildHasher;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

/// A random index below `n` (which is not 0).
pub fn random_below(n: usize) -> usize {
    ((random_u64() as u128 * n as u128) >> 64) as usize
}
