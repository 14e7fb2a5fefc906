//! The KV workload's operation mix (Zipf 0.99 keys, 60% SET / 40% GET, 32-512 B values), shared by the
//! store bench and the server bench's load generator.

/// `n` operations of the KV mix over `keys` keys: a Zipf(0.99) key index, scattered over the
/// keyspace so hot keys do not share a shard, and a value length (60% SETs of 32..=512 B; 0: a GET).
pub fn kv_ops(keys: usize, n: usize, seed: u64) -> Vec<(u32, u16)> {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Zipf};
    let zipf = Zipf::new(keys as u64, 0.99).expect("valid zipf");
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let rank = zipf.sample(&mut rng) as u64 - 1;
            let k = (rank.wrapping_mul(0x9E37_79B9) % keys as u64) as u32;
            let len = if rng.gen_ratio(6, 10) {
                rng.gen_range(32..=512u16)
            } else {
                0
            };
            (k, len)
        })
        .collect()
}
