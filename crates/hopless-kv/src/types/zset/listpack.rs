//! The compact form (OBJECT ENCODING `listpack`): member, score, member, score... in one [`Packed`]
//! block, sorted by (score, member). A score is an integer in the fewest bytes (0 to 7, zig-zag, for
//! integral scores below 2^53 in size, as Redis's listpack keeps integers) or the 8 bytes of its `f64`.
//! Everything here is a walk over the block, O(n) for n at most `zset-max-listpack-entries`.

use super::tree::cmp_key;
use crate::alloc::KvAlloc;
use crate::types::packed::Packed;

/// A score's bytes in the block: `(buffer, length)`.
fn encode(s: f64) -> ([u8; 8], usize) {
    if s == s.trunc() && s.abs() < 9_007_199_254_740_992.0 {
        let i = s as i64;
        let z = ((i << 1) ^ (i >> 63)) as u64;
        let len = (64 - z.leading_zeros() as usize).div_ceil(8);
        (z.to_le_bytes(), len)
    } else {
        (s.to_le_bytes(), 8)
    }
}

fn decode(b: &[u8]) -> f64 {
    if b.len() == 8 {
        return f64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    let mut z = [0u8; 8];
    z[..b.len()].copy_from_slice(b);
    let z = u64::from_le_bytes(z);
    (((z >> 1) as i64) ^ -((z & 1) as i64)) as f64
}

/// The pair at `pos`: member, score, and the offset of the next pair.
pub(super) fn pair<A: KvAlloc>(p: &Packed<A>, pos: usize) -> (&[u8], f64, usize) {
    let (m, next) = p.get(pos);
    let (s, next) = p.get(next);
    (m, decode(s), next)
}

/// `member`'s offset, rank and score.
pub(super) fn find<A: KvAlloc>(p: &Packed<A>, member: &[u8]) -> Option<(usize, usize, f64)> {
    let (mut pos, mut rank) = (0, 0);
    while pos < p.end() {
        let (m, s, next) = pair(p, pos);
        if m == member {
            return Some((pos, rank, s));
        }
        pos = next;
        rank += 1;
    }
    None
}

/// Inserts `member` (not present) at its place for `score`.
pub(super) fn insert<A: KvAlloc>(p: &mut Packed<A>, member: &[u8], score: f64) {
    let mut pos = 0;
    while pos < p.end() {
        let (m, s, next) = pair(p, pos);
        if cmp_key(score, member, s, m).is_lt() {
            break;
        }
        pos = next;
    }
    let (buf, len) = encode(score);
    let next = p.insert(pos, member) + crate::types::packed::entry_size(member.len());
    p.insert(next, &buf[..len]);
}

/// Removes the pair at `pos`.
pub(super) fn remove_at<A: KvAlloc>(p: &mut Packed<A>, pos: usize) {
    p.remove_n(pos, 2);
}

/// How many pairs, from the first, satisfy `pred` (which holds on a prefix).
pub(super) fn count_prefix<A: KvAlloc>(p: &Packed<A>, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
    let (mut pos, mut n) = (0, 0);
    while pos < p.end() {
        let (m, s, next) = pair(p, pos);
        if !pred(s, m) {
            break;
        }
        pos = next;
        n += 1;
    }
    n
}

/// The pairs from rank `k` on, forwards (`rev`: from rank `k` back to the first).
pub(super) fn walk<A: KvAlloc>(p: &Packed<A>, k: usize, rev: bool) -> Walk<'_, A> {
    let pos = if k < p.len() / 2 {
        p.offset_of(2 * k)
    } else {
        p.end()
    };
    Walk {
        p,
        pos: Some(pos).filter(|&x| x < p.end()),
        rev,
    }
}

/// See [`walk`].
pub(super) struct Walk<'a, A: KvAlloc> {
    p: &'a Packed<A>,
    /// The next pair's offset.
    pos: Option<usize>,
    rev: bool,
}

impl<'a, A: KvAlloc> Iterator for Walk<'a, A> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let pos = self.pos?;
        let (m, s, next) = pair(self.p, pos);
        self.pos = if self.rev {
            (pos > 0).then(|| self.p.prev(self.p.prev(pos)))
        } else {
            Some(next).filter(|&x| x < self.p.end())
        };
        Some((m, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_round_trip_in_few_bytes() {
        for s in [
            0.0,
            1.0,
            -1.0,
            127.0,
            1e15,
            -9e15,
            0.5,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let (b, len) = encode(s);
            assert_eq!(decode(&b[..len]), s);
        }
        assert_eq!(encode(0.0).1, 0);
        assert_eq!(encode(-64.0).1, 1);
        assert_eq!(encode(0.25).1, 8);
    }
}
