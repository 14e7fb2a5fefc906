//! How much one node of a list may hold (`list-max-listpack-size`), as Redis's quicklist decides it.

use crate::alloc::KvAlloc;
use crate::types::limits::Limits;
use crate::types::packed::{entry_size, Packed};

/// What one node may hold, from `list-max-listpack-size`: Redis's `_quicklistNodeAllowInsert` (a
/// positive fill counts entries, capped at 32768 and at 8 KiB of bytes; a negative one counts bytes, -5
/// at the lowest).
#[derive(Clone, Copy)]
pub(super) struct Fill {
    pub(super) entries: usize,
    pub(super) bytes: usize,
}

/// The byte cap of a node under a positive fill (Redis's `SIZE_SAFETY_LIMIT`).
const SIZE_SAFETY_LIMIT: usize = 8192;

impl Fill {
    pub(super) fn of(limits: &Limits) -> Fill {
        let f = limits.list_node;
        if f < 0 {
            let level = (-f.max(-5) - 1) as u32;
            Fill {
                entries: usize::MAX,
                bytes: 4096 << level,
            }
        } else {
            Fill {
                entries: f.clamp(1, 1 << 15) as usize,
                bytes: SIZE_SAFETY_LIMIT,
            }
        }
    }

    /// Whether `node` may take one more entry of `len` bytes.
    pub(super) fn allows<A: KvAlloc>(&self, node: &Packed<A>, len: usize) -> bool {
        node.len() < self.entries && node.used() + entry_size(len) <= self.bytes
    }

    /// Whether two nodes fit in one.
    pub(super) fn joins<A: KvAlloc>(&self, a: &Packed<A>, b: &Packed<A>) -> bool {
        a.len() + b.len() <= self.entries && a.used() + b.used() <= self.bytes
    }
}
