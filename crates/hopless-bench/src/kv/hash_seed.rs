//! The store's hash seed as `hopless bench kv --hash-seed` takes it: fixed or random per store.

use super::workload::DEFAULT_HASH_SEED;

/// The store's hash seed for a benchmark: fixed (the default, so that the hot Zipf keys land on the same
/// shards in every run) or random per store. Parses from a number (decimal or 0x hex) or "random".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashSeed(pub Option<u64>);

impl Default for HashSeed {
    fn default() -> Self {
        HashSeed(Some(DEFAULT_HASH_SEED))
    }
}

impl std::str::FromStr for HashSeed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "random" {
            return Ok(HashSeed(None));
        }
        let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        n.map(|n| HashSeed(Some(n)))
            .map_err(|_| format!("hash seed {s:?}: a number (decimal or 0x hex) or \"random\""))
    }
}

impl std::fmt::Display for HashSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n:#x}"),
            None => f.write_str("random"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_seed_parses_and_prints_back() {
        for s in ["0x5eed", "24301", "random"] {
            let h: HashSeed = s.parse().unwrap();
            assert_eq!(h.to_string().parse::<HashSeed>().unwrap(), h);
        }
        assert_eq!("24301".parse::<HashSeed>().unwrap(), HashSeed::default());
        assert_eq!("random".parse::<HashSeed>().unwrap(), HashSeed(None));
        assert!("x".parse::<HashSeed>().is_err());
    }
}
