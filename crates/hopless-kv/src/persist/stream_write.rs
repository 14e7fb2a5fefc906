//! A stream in Redis 7.0's RDB form (`STREAM_LISTPACKS_2`): its nodes (each a master id and a listpack),
//! its length and ids (last, first, greatest deleted) and entries ever added, then its consumer groups,
//! each with its last id, entries read, pending entries (id, delivery time, count) and consumers (name,
//! seen time, the ids they hold).

use crate::alloc::KvAlloc;
use crate::rdb::encode::Encoder;
use crate::types::stream::StreamId;
use crate::types::{Limits, Stream};

/// An id as Redis writes it raw in a stream's RDB form: 128 bits, big-endian.
pub(super) fn raw_id(id: StreamId) -> [u8; 16] {
    let mut b = [0; 16];
    b[..8].copy_from_slice(&id.ms.to_be_bytes());
    b[8..].copy_from_slice(&id.seq.to_be_bytes());
    b
}

fn id_pair(e: &mut Encoder, id: StreamId) {
    e.len(id.ms);
    e.len(id.seq);
}

pub(super) fn write_stream<A: KvAlloc>(e: &mut Encoder, s: &Stream<A>, _limits: &Limits) {
    e.len(s.nodes() as u64);
    for (master, lp) in s.node_listpacks() {
        e.string(&raw_id(master));
        e.string(&lp);
    }
    e.len(s.len() as u64);
    id_pair(e, s.last_id());
    id_pair(e, s.first_id());
    id_pair(e, s.max_deleted_id());
    e.len(s.entries_added());
    e.len(s.groups().len() as u64);
    for g in s.groups() {
        e.string(g.name());
        id_pair(e, g.last_id);
        // Redis writes the count as an unsigned length: -1 (not known) comes out as 2^64 - 1.
        e.len(g.entries_read as u64);
        e.len(g.pel().len() as u64);
        for (id, nack) in g.pel() {
            e.bytes(&raw_id(*id));
            e.millis(nack.delivered_ms as i64);
            e.len(nack.deliveries);
        }
        e.len(g.consumers().len() as u64);
        for c in g.consumers() {
            e.string(c.name());
            e.millis(c.seen_ms as i64);
            let ids = c.pel_from(StreamId::MIN);
            e.len(ids.len() as u64);
            for id in ids {
                e.bytes(&raw_id(*id));
            }
        }
    }
}
