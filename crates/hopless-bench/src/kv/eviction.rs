//! The eviction comparison of `hopless bench kv`: the store's sampled LRU against exact LRU, on one trace.

use std::collections::{BTreeMap, HashMap};

use hopless_kv::{Config, Policy, Store};
use rand::{rngs::SmallRng, SeedableRng};
use rand_distr::{Distribution, Zipf};

use super::workload::key_of;

/// Hit ratio of the store's sampled LRU against exact LRU on one Zipf trace (GET, and SET on a miss),
/// with the store limited to `maxmemory` and the exact LRU to as many keys as the store ended up holding.
pub fn eviction_hit_ratios(keys: usize, ops: usize, maxmemory: u64) -> (f64, f64, u64) {
    let zipf = Zipf::new(keys as u64, 0.99).expect("valid zipf");
    let mut rng = SmallRng::seed_from_u64(42);
    let trace: Vec<u32> = (0..ops)
        .map(|_| (zipf.sample(&mut rng) as u64 - 1) as u32)
        .collect();
    let store = Store::new(Config {
        maxmemory,
        policy: Policy::SampledLru,
        active_expiry: false,
        shards: 16,
        hash_seed: Some(super::workload::DEFAULT_HASH_SEED),
        ..Config::default()
    });
    let val = [b'v'; 100];
    let mut k = [0u8; 16];
    let mut hits = 0u64;
    for &i in &trace {
        key_of(i as usize, &mut k);
        if store.get(&k).ok().flatten().is_some() {
            hits += 1;
        } else {
            let _ = store.set_simple(&k, &val);
        }
    }
    let sampled = hits as f64 / ops as f64;
    let capacity = store.stats().keys as usize;
    // Exact LRU with the same number of keys.
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut order: BTreeMap<u64, u32> = BTreeMap::new();
    let mut hits = 0u64;
    for (t, &i) in trace.iter().enumerate() {
        let t = t as u64;
        if let Some(old) = last.insert(i, t) {
            hits += 1;
            order.remove(&old);
        } else if last.len() > capacity {
            let (_, victim) = order.pop_first().expect("non-empty");
            last.remove(&victim);
        }
        order.insert(t, i);
    }
    (sampled, hits as f64 / ops as f64, capacity as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_lru_is_compared_with_exact_lru() {
        let (sampled, exact, cap) = eviction_hit_ratios(5000, 50_000, 256 << 10);
        assert!(cap > 100 && cap < 5000, "{cap}");
        assert!(
            sampled > 0.3 && exact > 0.3 && (sampled - exact).abs() < 0.15,
            "{sampled} {exact}"
        );
    }
}
