//! The store's configuration ([`Config`], with its eviction [`Policy`]) and the options of its commands
//! (SET's [`SetOptions`]: [`SetCond`] and [`Ttl`]; EXPIRE's [`ExpireCond`]).

use crate::types::Limits;
use std::sync::Arc;

use foldhash::fast::SeedableRandomState;
use foldhash::SharedSeed;

use crate::clock::{Clock, SystemClock};
use crate::table::KeyHasher;

/// What happens when `maxmemory` is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// Writes that need memory fail with [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    NoEviction,
    /// Evict the least recently used of [`EVICTION_SAMPLES`](super::EVICTION_SAMPLES) random keys of the
    /// shard, until under.
    SampledLru,
}

/// Why a key left the store on its own (not by a command that names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Its TTL passed (found by an access or by the active expiry).
    Expired,
    /// `maxmemory` made room.
    Evicted,
}

/// Told of each key the store removes on its own ([`Gone`]), while the key is still readable: under
/// its shard's lock (lazy expiry, eviction) or right after it (the active expiry), on whichever thread
/// removed it. It must not call back into the store.
pub trait KeyGone: Send + Sync {
    fn gone(&self, why: Gone, key: &[u8]);

    /// Runs one pass of the active expiry (`pass`, which calls [`KeyGone::gone`] for each key it
    /// removes): a hook that must order the pass's removals against other changes (an append-only
    /// log) holds its own lock around it. It must not call back into the store.
    fn around_pass(&self, pass: &mut dyn FnMut()) {
        pass()
    }
}

#[derive(Clone)]
pub struct Config {
    /// Number of shards (rounded up to a power of two).
    pub shards: usize,
    pub max_key_len: usize,
    pub max_value_len: usize,
    /// Bytes the store may allocate (items, tables, expiry structures); 0: unlimited.
    pub maxmemory: u64,
    pub policy: Policy,
    /// Run the active expiry in a background thread the store owns.
    pub active_expiry: bool,
    pub clock: Arc<dyn Clock>,
    /// The seed of the key hash, which decides a key's shard, its slot in the shard's table and the order
    /// SCAN returns keys in.
    ///
    /// `None` (the default): random, as a `HashMap`'s is: a per-process random seed mixed with one drawn
    /// for each store, so neither an outsider choosing keys nor two stores (or two runs) share a layout.
    /// `Some(seed)`: fixed, so that two stores given the same seed (and the same number of shards) place
    /// every key identically, in this process and in the next (with the same foldhash version on the
    /// same platform). For benchmarks and reproductions; a store holding keys an outsider chooses should
    /// keep the random seed, since a known seed lets them choose keys that collide.
    pub hash_seed: Option<u64>,
    /// The size thresholds of the collections' compact forms (Redis's `*-max-listpack-*` settings).
    pub limits: Limits,
    /// Who hears of keys that expire or are evicted (Redis's keyspace events): nobody by default.
    pub on_gone: Option<Arc<dyn KeyGone>>,
}

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
        Config {
            shards: (cores * 16).next_power_of_two().max(16),
            max_key_len: 512 << 20,
            max_value_len: 512 << 20,
            maxmemory: 0,
            policy: Policy::NoEviction,
            active_expiry: true,
            clock: Arc::new(SystemClock),
            hash_seed: None,
            limits: Limits::default(),
            on_gone: None,
        }
    }
}

impl Config {
    /// The key hasher [`Config::hash_seed`] asks for (the store and all its tables share it).
    pub(crate) fn key_hasher(&self) -> KeyHasher {
        match self.hash_seed {
            None => SeedableRandomState::random(),
            Some(seed) => SeedableRandomState::with_seed(seed, SharedSeed::global_fixed()),
        }
    }
}

/// SET's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetCond {
    #[default]
    Always,
    /// NX: only if the key does not exist.
    IfAbsent,
    /// XX: only if it exists.
    IfPresent,
}

/// A TTL option of SET or GETEX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ttl {
    /// No TTL (SET clears an existing one; GETEX leaves it alone).
    #[default]
    None,
    /// EX seconds / PX milliseconds from now.
    Ex(u64),
    Px(u64),
    /// EXAT / PXAT: an absolute Unix time.
    ExAt(u64),
    PxAt(u64),
    /// SET: keep the key's TTL. GETEX: PERSIST (remove it).
    Keep,
    Persist,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SetOptions {
    pub cond: SetCond,
    pub ttl: Ttl,
    /// GET: return the old value.
    pub get: bool,
}

/// EXPIRE's condition (Redis 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpireCond {
    #[default]
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}
