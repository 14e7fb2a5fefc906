use allocator_api2::alloc::Global;

use super::{AddError, IdSpec, Stream, StreamId, Trim};
use crate::types::Limits;

fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

fn ids(s: &Stream<Global>, rev: bool) -> Vec<StreamId> {
    let mut v = Vec::new();
    s.range(StreamId::MIN, StreamId::MAX, rev, |e| {
        v.push(e.id);
        true
    });
    v
}

fn filled(n: u64) -> Stream<Global> {
    let mut s = Stream::new_in(Global);
    for i in 1..=n {
        s.add(IdSpec::Exact(id(i, 0)), &[b"f", b"v"], 0, &Limits::default())
            .unwrap();
    }
    s
}

#[test]
fn entries_keep_their_fields_whether_or_not_they_match_the_nodes_first() {
    let mut s = Stream::new_in(Global);
    let l = Limits::default();
    s.add(IdSpec::Exact(id(1, 0)), &[b"a", b"1", b"b", b"2"], 0, &l)
        .unwrap();
    s.add(IdSpec::Exact(id(1, 1)), &[b"a", b"3", b"b", b"4"], 0, &l)
        .unwrap();
    s.add(IdSpec::Exact(id(2, 0)), &[b"a", b"5"], 0, &l).unwrap();
    s.add(IdSpec::Exact(id(3, 0)), &[b"x", b"6", b"b", b"7"], 0, &l)
        .unwrap();
    let mut got = Vec::new();
    s.range(StreamId::MIN, StreamId::MAX, false, |e| {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = e.pairs().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(pairs.len(), e.fields());
        got.push((e.id, pairs));
        true
    });
    let p = |f: &str, v: &str| (f.as_bytes().to_vec(), v.as_bytes().to_vec());
    assert_eq!(got[0], (id(1, 0), vec![p("a", "1"), p("b", "2")]));
    assert_eq!(got[1], (id(1, 1), vec![p("a", "3"), p("b", "4")]));
    assert_eq!(got[2], (id(2, 0), vec![p("a", "5")]));
    assert_eq!(got[3], (id(3, 0), vec![p("x", "6"), p("b", "7")]));
}

#[test]
fn ids_rise_and_the_clock_never_goes_back() {
    let mut s = Stream::new_in(Global);
    let l = Limits::default();
    assert_eq!(s.add(IdSpec::Auto, &[b"f", b"v"], 100, &l), Ok(id(100, 0)));
    assert_eq!(s.add(IdSpec::Auto, &[b"f", b"v"], 90, &l), Ok(id(100, 1)));
    assert_eq!(s.add(IdSpec::Ms(100), &[b"f", b"v"], 0, &l), Ok(id(100, 2)));
    assert_eq!(s.add(IdSpec::Ms(200), &[b"f", b"v"], 0, &l), Ok(id(200, 0)));
    assert_eq!(
        s.add(IdSpec::Ms(150), &[b"f", b"v"], 0, &l),
        Err(AddError::IdTooSmall)
    );
    assert_eq!(
        s.add(IdSpec::Exact(id(200, 0)), &[b"f", b"v"], 0, &l),
        Err(AddError::IdTooSmall)
    );
    assert_eq!(s.len(), 4);
    assert_eq!(s.first_id(), id(100, 0));
    assert_eq!(s.last_id(), id(200, 0));
    assert_eq!(s.entries_added(), 4);
}

#[test]
fn ranges_cross_nodes_both_ways() {
    let s = filled(350);
    assert_eq!(s.nodes(), 4);
    let all: Vec<StreamId> = (1..=350).map(|i| id(i, 0)).collect();
    assert_eq!(ids(&s, false), all);
    let mut rev = all.clone();
    rev.reverse();
    assert_eq!(ids(&s, true), rev);
    let mut part = Vec::new();
    s.range(id(99, 1), id(201, 0), false, |e| {
        part.push(e.id.ms);
        true
    });
    assert_eq!(part, (100..=201).collect::<Vec<_>>());
    part.clear();
    s.range(id(99, 1), id(201, 0), true, |e| {
        part.push(e.id.ms);
        part.len() < 5
    });
    assert_eq!(part, vec![201, 200, 199, 198, 197]);
}

#[test]
fn deletes_flag_entries_and_drop_an_emptied_node() {
    let mut s = filled(200);
    assert!(s.delete(id(1, 0)));
    assert!(!s.delete(id(1, 0)));
    assert!(!s.delete(id(1, 5)));
    assert_eq!(s.first_id(), id(2, 0));
    for i in 2..=100 {
        assert!(s.delete(id(i, 0)));
    }
    assert_eq!(s.nodes(), 1);
    assert_eq!(s.first_id(), id(101, 0));
    assert_eq!(s.max_deleted_id(), id(100, 0));
    assert_eq!(s.len(), 100);
    assert_eq!(ids(&s, false).len(), 100);
}

#[test]
fn trims_by_whole_nodes_when_approximate_and_exactly_otherwise() {
    let mut s = filled(350);
    assert_eq!(s.trim(Trim::MaxLen(260), true, 0), 0);
    assert_eq!(s.trim(Trim::MaxLen(250), true, 0), 100);
    assert_eq!(s.len(), 250);
    assert_eq!(s.trim(Trim::MaxLen(245), false, 0), 5);
    assert_eq!(s.first_id(), id(106, 0));
    // The first node's last id, 200-0, is not below 200-0: it stays whole; below 201-0, it goes.
    assert_eq!(s.trim(Trim::MinId(id(200, 0)), true, 0), 0);
    assert_eq!(s.trim(Trim::MinId(id(201, 0)), true, 0), 95);
    assert_eq!(s.first_id(), id(201, 0));
    assert_eq!(s.trim(Trim::MinId(id(203, 0)), false, 0), 2);
    assert_eq!(s.first_id(), id(203, 0));
    assert_eq!(s.trim(Trim::MaxLen(0), true, 100), 98);
    assert_eq!(s.len(), 50);
    assert_eq!(s.trim(Trim::MaxLen(0), false, 0), 50);
    assert_eq!(s.first_id(), StreamId::MIN);
    assert!(s.is_empty());
    assert_eq!(s.last_id(), id(350, 0));
}

#[test]
fn a_node_ends_where_redis_would_start_a_listpack() {
    // 100 entries a node by default, fewer when their listpack reaches stream-node-max-bytes.
    let mut s = Stream::new_in(Global);
    let l = Limits::default();
    let big = vec![b'x'; 1000];
    for i in 1..=10 {
        s.add(IdSpec::Exact(id(i, 0)), &[b"f", &big], 0, &l).unwrap();
    }
    // The listpack: 17 bytes of header and master entry, then 1 012 bytes an entry; a fifth entry's
    // strings would take it past 4 096 bytes, so nodes of 4, 4 and 2 (Redis 7.0: 3 radix tree keys).
    assert_eq!(s.nodes(), 3);
    let l = Limits {
        stream_node_entries: 3,
        ..Limits::default()
    };
    let mut s = Stream::new_in(Global);
    for i in 1..=10 {
        s.add(IdSpec::Exact(id(i, 0)), &[b"f", b"v"], 0, &l).unwrap();
    }
    assert_eq!(s.nodes(), 4);
}

#[test]
fn a_copy_is_equal_and_apart() {
    let mut s = filled(150);
    s.delete(id(3, 0));
    let c = s.try_clone().unwrap();
    s.delete(id(4, 0));
    assert_eq!(ids(&c, false).len(), 149);
    assert_eq!(c.max_deleted_id(), id(3, 0));
}

#[test]
fn the_kept_byte_count_matches_the_nodes() {
    let mut s = filled(1000);
    let count = |s: &Stream<Global>| s.nodes.iter().map(super::node::Node::bytes).sum::<usize>();
    assert_eq!(s.node_bytes, count(&s));
    for i in (1..=1000).step_by(3) {
        s.delete(id(i, 0));
    }
    assert_eq!(s.node_bytes, count(&s));
    s.trim(Trim::MaxLen(300), true, 0);
    assert_eq!(s.node_bytes, count(&s));
    s.trim(Trim::MaxLen(250), false, 0);
    assert_eq!(s.node_bytes, count(&s));
    let c = s.try_clone().unwrap();
    assert_eq!(c.node_bytes, count(&c));
    s.trim(Trim::MaxLen(0), false, 0);
    assert_eq!(s.node_bytes, 0);
}
