//! The streams mix of `hopless bench server`: an event log with producers and consumer groups.
//!
//! Preload (untimed): the stream `events` with `entries` entries of two small fields (`type`, a
//! 16-byte `payload`), ids `1-0`, `2-0`..., and a consumer group per consumer connection (`g0`..),
//! each reading from the start. The VmRSS growth over the preload, divided by the entries, is the
//! memory an entry costs.
//!
//! Measured requests, by connection:
//! - consumers (the first [`consumers`] connections, at most 4): XREADGROUP of the next 10 entries of
//!   their group, then XACK of those 10 ids, and again: the group's reads are the connection's alone, so
//!   the ids each read returns are known before the clock starts and every XACK acknowledges entries
//!   that are pending;
//! - producers (the others): XADD of a new entry (`*` id) with `MAXLEN ~` twice the preload, the check
//!   a capped log pays on every add.

/// Entries a consumer's XREADGROUP asks for.
pub const READ_COUNT: usize = 10;
/// The consumer groups (and consumer connections) at most.
pub const MAX_CONSUMERS: usize = 4;

/// How many of `connections` consume: half of them, at least one and at most [`MAX_CONSUMERS`] (none
/// with a single connection, which produces).
pub fn consumers(connections: usize) -> usize {
    (connections / 2).clamp(usize::from(connections > 1), MAX_CONSUMERS)
}

/// A request: its arguments.
pub type Request = Vec<Vec<u8>>;

fn payload(i: usize) -> Vec<u8> {
    format!("p{i:015}").into_bytes()
}

/// The preload: `entries` XADDs with ids `1-0`.., then one group per consumer of `connections`.
pub fn preload(entries: usize, connections: usize) -> (Vec<Request>, Vec<Request>) {
    let adds = (1..=entries)
        .map(|i| {
            vec![
                b"XADD".to_vec(),
                b"events".to_vec(),
                format!("{i}-0").into_bytes(),
                b"type".to_vec(),
                b"click".to_vec(),
                b"payload".to_vec(),
                payload(i),
            ]
        })
        .collect();
    let groups = (0..consumers(connections))
        .map(|g| {
            vec![
                b"XGROUP".to_vec(),
                b"CREATE".to_vec(),
                b"events".to_vec(),
                format!("g{g}").into_bytes(),
                b"0".to_vec(),
            ]
        })
        .collect();
    (adds, groups)
}

/// Connection `conn`'s `n` requests (of `connections`, after a preload of `entries`): a consumer's
/// reads and acknowledgements, or a producer's adds.
pub fn requests(conn: usize, connections: usize, entries: usize, n: usize) -> Vec<Request> {
    if conn >= consumers(connections) {
        let cap = (2 * entries).to_string().into_bytes();
        return (0..n)
            .map(|i| {
                vec![
                    b"XADD".to_vec(),
                    b"events".to_vec(),
                    b"MAXLEN".to_vec(),
                    b"~".to_vec(),
                    cap.clone(),
                    b"*".to_vec(),
                    b"type".to_vec(),
                    b"click".to_vec(),
                    b"payload".to_vec(),
                    payload(i),
                ]
            })
            .collect();
    }
    let group = format!("g{conn}").into_bytes();
    let consumer = format!("c{conn}").into_bytes();
    (0..n)
        .map(|i| {
            let read = i / 2;
            if i % 2 == 0 {
                vec![
                    b"XREADGROUP".to_vec(),
                    b"GROUP".to_vec(),
                    group.clone(),
                    consumer.clone(),
                    b"COUNT".to_vec(),
                    READ_COUNT.to_string().into_bytes(),
                    b"STREAMS".to_vec(),
                    b"events".to_vec(),
                    b">".to_vec(),
                ]
            } else {
                let mut ack = vec![b"XACK".to_vec(), b"events".to_vec(), group.clone()];
                let first = read * READ_COUNT + 1;
                ack.extend((first..first + READ_COUNT).map(|id| format!("{id}-0").into_bytes()));
                ack
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_ack_exactly_what_they_read() {
        assert_eq!(consumers(1), 0);
        assert_eq!(consumers(2), 1);
        assert_eq!(consumers(8), 4);
        assert_eq!(consumers(50), 4);
        let r = requests(1, 8, 1000, 4);
        assert_eq!(r[0][0], b"XREADGROUP");
        assert_eq!(
            r[1][3..],
            [
                b"1-0".to_vec(),
                b"2-0".to_vec(),
                b"3-0".to_vec(),
                b"4-0".to_vec(),
                b"5-0".to_vec(),
                b"6-0".to_vec(),
                b"7-0".to_vec(),
                b"8-0".to_vec(),
                b"9-0".to_vec(),
                b"10-0".to_vec()
            ]
        );
        assert_eq!(r[3][3], b"11-0");
        let w = requests(5, 8, 1000, 2);
        assert_eq!(w[0][0], b"XADD");
        assert_eq!(w[0][4], b"2000");
        let (adds, groups) = preload(3, 8);
        assert_eq!(adds.len(), 3);
        assert_eq!(groups.len(), 4);
    }
}
