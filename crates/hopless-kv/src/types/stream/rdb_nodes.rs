//! A stream's nodes as Redis's listpacks of the same entries (what a snapshot and DUMP write): the
//! master entry (live and deleted counts, the master fields, a 0), then each entry, deleted ones too,
//! as its flags, its id's differences from the master id, the field count unless the master's fields,
//! the strings, and the count of its elements. The node's block holds exactly these elements, so the
//! listpack comes out as Redis's own would.

use super::node::{Node, DELETED, SAME_FIELDS};
use super::{Stream, StreamId};
use crate::alloc::KvAlloc;
use crate::rdb::listpack::ListpackWriter;

fn node_listpack<A: KvAlloc>(n: &Node<A>) -> Vec<u8> {
    let mut lp = ListpackWriter::new();
    lp.push_int(i64::from(n.live));
    lp.push_int(i64::from(n.deleted));
    let fields: Vec<&[u8]> = n.master_fields().collect();
    lp.push_int(fields.len() as i64);
    for f in &fields {
        lp.push_str(f);
    }
    lp.push_int(0);
    for s in n.slots() {
        let flags = (if s.deleted { DELETED } else { 0 }) | (if s.same { SAME_FIELDS } else { 0 });
        lp.push_int(i64::from(flags));
        lp.push_int(s.id.ms.wrapping_sub(n.master.ms) as i64);
        lp.push_int(s.id.seq.wrapping_sub(n.master.seq) as i64);
        if !s.same {
            lp.push_int(s.fields as i64);
        }
        for (f, v) in n.pairs(&s) {
            if !s.same {
                lp.push_str(f);
            }
            lp.push_str(v);
        }
        let elements = s.fields + 3 + if s.same { 0 } else { s.fields + 1 };
        lp.push_int(elements as i64);
    }
    lp.finish()
}

impl<A: KvAlloc> Stream<A> {
    /// Each node's master id and Redis's listpack of its entries, in id order.
    pub fn node_listpacks(&self) -> impl Iterator<Item = (StreamId, Vec<u8>)> + '_ {
        self.nodes.iter().map(|n| (n.master, node_listpack(n)))
    }
}
