//! The size thresholds of the compact forms ([`Limits`], as Redis's configuration names them) and the
//! store's current ones, changed at run time (`LimitsCell`).

use std::sync::atomic::{AtomicI64, Ordering};

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
    /// `stream-node-max-bytes`: a stream node's most bytes, as Redis counts its listpack (0: no limit).
    pub stream_node_bytes: i64,
    /// `stream-node-max-entries`: a stream node's most entries, live and deleted (0: no limit).
    pub stream_node_entries: i64,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog that would grow past this many bytes turns dense.
    pub hll_sparse_max_bytes: i64,
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
            stream_node_bytes: 4096,
            stream_node_entries: 100,
            hll_sparse_max_bytes: crate::hll::HLL_SPARSE_MAX_BYTES as i64,
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
        ("stream-node-max-bytes", &[]),
        ("stream-node-max-entries", &[]),
        ("hll-sparse-max-bytes", &[]),
    ];

    fn fields(&mut self) -> [&mut i64; 11] {
        [
            &mut self.hash_entries,
            &mut self.hash_value,
            &mut self.set_intset_entries,
            &mut self.set_entries,
            &mut self.set_value,
            &mut self.zset_entries,
            &mut self.zset_value,
            &mut self.list_node,
            &mut self.stream_node_bytes,
            &mut self.stream_node_entries,
            &mut self.hll_sparse_max_bytes,
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
pub(crate) struct LimitsCell([AtomicI64; 11]);

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
