//! The collection types a key can hold besides a string: lists, hashes, sets and sorted sets, each with
//! Redis's semantics and a compact form for small collections (one [`packed`] block, as Redis's
//! listpack) beside a large form with Redis's complexity.
//!
//! A collection lives behind its item (the item's value bytes hold the pointer, see `value.rs`); every
//! access happens under the key's shard lock, read for reads and write for writes, so the types need
//! no synchronisation of their own. They allocate through the store's allocator.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

use allocator_api2::boxed::Box;

use crate::alloc::KvAlloc;

pub mod hash;
pub mod list;
pub(crate) mod packed;
pub mod set;
pub mod zset;

pub use hash::Hash;
pub use list::List;
pub use set::Set;
pub use zset::ZSet;

/// What a key holds (TYPE's answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    String = 0,
    List = 1,
    Hash = 2,
    Set = 3,
    ZSet = 4,
}

impl Kind {
    /// The name TYPE replies with.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
        }
    }

    /// The kind TYPE names `name` (as SCAN's TYPE filter reads it, case-insensitively).
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        [Kind::String, Kind::List, Kind::Hash, Kind::Set, Kind::ZSet]
            .into_iter()
            .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    }

    pub(crate) fn from_bits(b: u32) -> Kind {
        match b {
            1 => Kind::List,
            2 => Kind::Hash,
            3 => Kind::Set,
            4 => Kind::ZSet,
            _ => Kind::String,
        }
    }
}

/// The size thresholds of the compact forms, as Redis's configuration names them (CONFIG SET changes
/// them at run time; a collection converts when an insert crosses one, and never converts back, as in
/// Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `hash-max-listpack-entries` (alias `hash-max-ziplist-entries`).
    pub hash_entries: i64,
    /// `hash-max-listpack-value`.
    pub hash_value: i64,
    /// `set-max-intset-entries`.
    pub set_intset_entries: i64,
    /// `set-max-listpack-entries`.
    pub set_entries: i64,
    /// `set-max-listpack-value`.
    pub set_value: i64,
    /// `zset-max-listpack-entries` (alias `zset-max-ziplist-entries`).
    pub zset_entries: i64,
    /// `zset-max-listpack-value`.
    pub zset_value: i64,
    /// `list-max-listpack-size` (alias `list-max-ziplist-size`): a node's entries when positive, its
    /// bytes (-1: 4 KiB, -2: 8 KiB, ..., -5: 64 KiB) when negative.
    pub list_node: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hash_entries: 128,
            hash_value: 64,
            set_intset_entries: 512,
            set_entries: 128,
            set_value: 64,
            zset_entries: 128,
            zset_value: 64,
            list_node: -2,
        }
    }
}

impl Limits {
    /// The names CONFIG knows, in CONFIG GET's order, with their aliases.
    pub const NAMES: &'static [(&'static str, &'static [&'static str])] = &[
        ("hash-max-listpack-entries", &["hash-max-ziplist-entries"]),
        ("hash-max-listpack-value", &["hash-max-ziplist-value"]),
        ("set-max-intset-entries", &[]),
        ("set-max-listpack-entries", &[]),
        ("set-max-listpack-value", &[]),
        ("zset-max-listpack-entries", &["zset-max-ziplist-entries"]),
        ("zset-max-listpack-value", &["zset-max-ziplist-value"]),
        ("list-max-listpack-size", &["list-max-ziplist-size"]),
    ];

    fn fields(&mut self) -> [&mut i64; 8] {
        [
            &mut self.hash_entries,
            &mut self.hash_value,
            &mut self.set_intset_entries,
            &mut self.set_entries,
            &mut self.set_value,
            &mut self.zset_entries,
            &mut self.zset_value,
            &mut self.list_node,
        ]
    }

    /// The index in [`Limits::NAMES`] of a name or alias (case-insensitive).
    pub fn index_of(name: &str) -> Option<usize> {
        Self::NAMES.iter().position(|(n, aliases)| {
            n.eq_ignore_ascii_case(name) || aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
        })
    }

    pub fn get(&self, i: usize) -> i64 {
        let mut c = *self;
        *c.fields()[i]
    }

    pub fn set(&mut self, i: usize, v: i64) {
        *self.fields()[i] = v;
    }
}

/// The store's current [`Limits`], changed at run time.
pub(crate) struct LimitsCell([AtomicI64; 8]);

impl LimitsCell {
    pub(crate) fn new(l: Limits) -> Self {
        LimitsCell(core::array::from_fn(|i| AtomicI64::new(l.get(i))))
    }

    pub(crate) fn get(&self) -> Limits {
        let mut l = Limits::default();
        for (i, a) in self.0.iter().enumerate() {
            l.set(i, a.load(Ordering::Relaxed));
        }
        l
    }

    pub(crate) fn set(&self, i: usize, v: i64) {
        self.0[i].store(v, Ordering::Relaxed);
    }
}

/// What a non-string key holds.
pub enum Collection<A: KvAlloc> {
    List(List<A>),
    Hash(Hash<A>),
    Set(Set<A>),
    ZSet(ZSet<A>),
}

impl<A: KvAlloc> Collection<A> {
    pub fn kind(&self) -> Kind {
        match self {
            Collection::List(_) => Kind::List,
            Collection::Hash(_) => Kind::Hash,
            Collection::Set(_) => Kind::Set,
            Collection::ZSet(_) => Kind::ZSet,
        }
    }

    /// An empty collection of `kind` (not a string).
    pub fn empty(kind: Kind, alloc: A) -> Self {
        match kind {
            Kind::List => Collection::List(List::new_in(alloc)),
            Kind::Hash => Collection::Hash(Hash::new_in(alloc)),
            Kind::Set => Collection::Set(Set::new_in(alloc)),
            Kind::ZSet | Kind::String => Collection::ZSet(ZSet::new_in(alloc)),
        }
    }

    /// Elements (fields, members, entries) held.
    pub fn len(&self) -> usize {
        match self {
            Collection::List(x) => x.len(),
            Collection::Hash(x) => x.len(),
            Collection::Set(x) => x.len(),
            Collection::ZSet(x) => x.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the collection's blocks take (what the store charges against `maxmemory`).
    pub fn bytes(&self) -> usize {
        core::mem::size_of::<Self>()
            + match self {
                Collection::List(x) => x.bytes(),
                Collection::Hash(x) => x.bytes(),
                Collection::Set(x) => x.bytes(),
                Collection::ZSet(x) => x.bytes(),
            }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match self {
            Collection::List(x) => x.encoding(),
            Collection::Hash(x) => x.encoding(),
            Collection::Set(x) => x.encoding(),
            Collection::ZSet(x) => x.encoding(),
        }
    }

    /// A copy (COPY), or None when the allocator has no memory for it.
    pub fn try_clone(&self) -> Option<Self> {
        Some(match self {
            Collection::List(x) => Collection::List(x.try_clone()?),
            Collection::Hash(x) => Collection::Hash(x.try_clone()?),
            Collection::Set(x) => Collection::Set(x.try_clone()?),
            Collection::ZSet(x) => Collection::ZSet(x.try_clone()?),
        })
    }
}

/// Collections with more elements than this are freed by the background thread (Redis's
/// `LAZYFREE_THRESHOLD`), so deleting, overwriting, evicting or expiring a big one never stalls the
/// shard's other clients.
pub const LAZYFREE_THRESHOLD: usize = 64;

static LAZYFREE_PENDING: AtomicUsize = AtomicUsize::new(0);

/// Collections handed to the background thread and not yet freed (INFO's `lazyfree_pending_objects`).
pub fn lazyfree_pending() -> usize {
    LAZYFREE_PENDING.load(Ordering::Relaxed)
}

type Job = std::boxed::Box<dyn FnOnce() + Send>;

fn lazyfree_sender() -> Option<Sender<Job>> {
    static TX: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("hopless-lazyfree".into())
            .spawn(move || {
                for job in rx {
                    job();
                    LAZYFREE_PENDING.fetch_sub(1, Ordering::Relaxed);
                }
            })
            .ok()?;
        Some(Mutex::new(tx))
    })
    .as_ref()
    .and_then(|m| m.lock().ok().map(|tx| tx.clone()))
}

/// Frees a collection: here when small, on the background thread when large.
pub(crate) fn free_collection<A: KvAlloc>(c: Box<Collection<A>, A>) {
    if c.len() <= LAZYFREE_THRESHOLD || cfg!(miri) {
        drop(c);
        return;
    }
    let Some(tx) = lazyfree_sender() else {
        drop(c);
        return;
    };
    LAZYFREE_PENDING.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = tx.send(std::boxed::Box::new(move || drop(c))) {
        LAZYFREE_PENDING.fetch_sub(1, Ordering::Relaxed);
        (e.0)();
    }
}

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
