//! The large form's ordered index: an order-statistic treap over (score, member), its nodes in an
//! arena (chunks in the store's allocator, addressed by `u32` slot, see `arena.rs`), each node owning its member's bytes
//! and counting its subtree. Insert, delete, rank and select are O(log n) expected (the priorities are
//! random, so the depth is about 2·ln n); a run of k ranks is walked in O(log n + k).
//!
//! Slots are stable: a node keeps its slot from [`Tree::new_node`] to [`Tree::free`] (the member→slot
//! hash beside the tree relies on it, and so does ZSCAN's cursor, which walks the slots in order). A
//! freed slot joins a free list threaded through `left` and is reused first.
//!
//! Invariants: for a linked node, `size == size(left) + size(right) + 1`; every key in `left` is below
//! the node's, every key in `right` above; a parent's `prio` is at least its children's.

use core::cmp::Ordering;

use allocator_api2::boxed::Box;
use allocator_api2::vec::Vec;

use super::arena::Arena;
use crate::alloc::KvAlloc;

/// No node.
pub(super) const NIL: u32 = u32::MAX;

struct Node<A: KvAlloc> {
    /// None: a free slot.
    member: Option<Box<[u8], A>>,
    score: f64,
    left: u32,
    right: u32,
    size: u32,
    prio: u32,
}

pub(super) struct Tree<A: KvAlloc> {
    nodes: Arena<Node<A>, A>,
    root: u32,
    /// The first free slot (the next in its `left`), NIL if none.
    free: u32,
    /// Bytes of the members' blocks.
    member_bytes: usize,
    alloc: A,
}

/// `(score, member)` against `(s2, m2)`: scores first, ties by member bytes. Scores are never NaN.
pub(super) fn cmp_key(score: f64, member: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    score
        .partial_cmp(&s2)
        .unwrap_or(Ordering::Equal)
        .then_with(|| member.cmp(m2))
}

impl<A: KvAlloc> Tree<A> {
    pub(super) fn new_in(alloc: A) -> Self {
        Tree {
            nodes: Arena::new_in(alloc.clone()),
            root: NIL,
            free: NIL,
            member_bytes: 0,
            alloc,
        }
    }

    /// Linked nodes.
    pub(super) fn len(&self) -> usize {
        self.size(self.root)
    }

    pub(super) fn bytes(&self) -> usize {
        self.nodes.bytes() + self.member_bytes
    }

    fn size(&self, t: u32) -> usize {
        if t == NIL {
            0
        } else {
            self.nodes[t].size as usize
        }
    }

    fn update(&mut self, t: u32) {
        let n = &self.nodes[t];
        let s = self.size(n.left) + self.size(n.right) + 1;
        self.nodes[t].size = s as u32;
    }

    /// The member at slot `i` (a live one).
    pub(super) fn member(&self, i: u32) -> &[u8] {
        self.nodes[i].member.as_deref().expect("a live slot")
    }

    pub(super) fn score(&self, i: u32) -> f64 {
        self.nodes[i].score
    }

    /// Changes an unlinked node's score.
    pub(super) fn set_score(&mut self, i: u32, score: f64) {
        self.nodes[i].score = score;
    }

    /// Slots in the arena, live or free (ZSCAN walks `0..slots()`).
    pub(super) fn slots(&self) -> usize {
        self.nodes.len()
    }

    /// The entry at slot `i`, None for a free slot.
    pub(super) fn slot(&self, i: usize) -> Option<(&[u8], f64)> {
        let n = self.nodes.get(i)?;
        n.member.as_deref().map(|m| (m, n.score))
    }

    /// A new unlinked node for `member` at `score`; its slot.
    pub(super) fn new_node(&mut self, member: &[u8], score: f64) -> u32 {
        let mut v = Vec::with_capacity_in(member.len(), self.alloc.clone());
        v.extend_from_slice(member);
        let b = v.into_boxed_slice();
        self.member_bytes += b.len();
        let node = Node {
            member: Some(b),
            score,
            left: NIL,
            right: NIL,
            size: 1,
            prio: crate::types::random::random_u64() as u32,
        };
        if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i].left;
            self.nodes[i] = node;
            i
        } else {
            self.nodes.push(node)
        }
    }

    /// Frees an unlinked node's slot; its member's bytes.
    pub(super) fn free(&mut self, i: u32) -> Box<[u8], A> {
        let n = &mut self.nodes[i];
        let m = n.member.take().expect("a live slot");
        n.left = self.free;
        self.free = i;
        self.member_bytes -= m.len();
        m
    }

    /// `i`'s key against `t`'s.
    fn cmp_nodes(&self, i: u32, t: u32) -> Ordering {
        let (a, b) = (&self.nodes[i], &self.nodes[t]);
        cmp_key(a.score, self.member(i), b.score, self.member(t))
    }

    /// Sets `parent`'s left (`left`) or right child, or the root when `parent` is NIL, to `new`.
    fn relink(&mut self, parent: u32, left: bool, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if left {
            self.nodes[parent].left = new;
        } else {
            self.nodes[parent].right = new;
        }
    }

    /// Links the unlinked node `i` in at its key's place (its key must not be in the tree).
    pub(super) fn link(&mut self, i: u32) {
        let prio = self.nodes[i].prio;
        let (mut parent, mut left, mut t) = (NIL, false, self.root);
        while t != NIL && self.nodes[t].prio >= prio {
            self.nodes[t].size += 1;
            parent = t;
            left = self.cmp_nodes(i, t) == Ordering::Less;
            t = if left {
                self.nodes[t].left
            } else {
                self.nodes[t].right
            };
        }
        let (l, r) = self.split_before(t, i);
        let n = &mut self.nodes[i];
        n.left = l;
        n.right = r;
        self.update(i);
        self.relink(parent, left, i);
    }

    /// Splits subtree `t` into the keys below `i`'s and the rest.
    fn split_before(&mut self, t: u32, i: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.cmp_nodes(t, i) == Ordering::Less {
            let (l, r) = self.split_before(self.nodes[t].right, i);
            self.nodes[t].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split_before(self.nodes[t].left, i);
            self.nodes[t].left = r;
            self.update(t);
            (l, t)
        }
    }

    /// Splits subtree `t` into its first `k` nodes and the rest.
    fn split_rank(&mut self, t: u32, k: usize) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let ls = self.size(self.nodes[t].left);
        if k <= ls {
            let (l, r) = self.split_rank(self.nodes[t].left, k);
            self.nodes[t].left = r;
            self.update(t);
            (l, t)
        } else {
            let (l, r) = self.split_rank(self.nodes[t].right, k - ls - 1);
            self.nodes[t].right = l;
            self.update(t);
            (t, r)
        }
    }

    /// Joins two subtrees, every key of `a` below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a].prio >= self.nodes[b].prio {
            let r = self.merge(self.nodes[a].right, b);
            self.nodes[a].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b].left);
            self.nodes[b].left = l;
            self.update(b);
            b
        }
    }

    /// Unlinks the linked node `i` (its slot stays live: [`Tree::link`] it again or [`Tree::free`] it).
    pub(super) fn unlink(&mut self, i: u32) {
        let (mut parent, mut left, mut t) = (NIL, false, self.root);
        while t != i {
            self.nodes[t].size -= 1;
            parent = t;
            left = self.cmp_nodes(i, t) == Ordering::Less;
            t = if left {
                self.nodes[t].left
            } else {
                self.nodes[t].right
            };
        }
        let (l, r) = (self.nodes[i].left, self.nodes[i].right);
        let m = self.merge(l, r);
        self.relink(parent, left, m);
        let n = &mut self.nodes[i];
        n.left = NIL;
        n.right = NIL;
        n.size = 1;
    }

    /// The 0-based rank of the linked node `i`.
    pub(super) fn rank(&self, i: u32) -> usize {
        let (mut t, mut below) = (self.root, 0);
        loop {
            let n = &self.nodes[t];
            match self.cmp_nodes(i, t) {
                Ordering::Less => t = n.left,
                Ordering::Greater => {
                    below += self.size(n.left) + 1;
                    t = n.right;
                }
                Ordering::Equal => return below + self.size(n.left),
            }
        }
    }

    /// How many nodes, from the first, satisfy `pred` (which holds on a prefix of the order).
    pub(super) fn count_prefix(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut t, mut count) = (self.root, 0);
        while t != NIL {
            let n = &self.nodes[t];
            if pred(n.score, self.member(t)) {
                count += self.size(n.left) + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        count
    }

    /// The node at rank `k` (< len).
    pub(super) fn select(&self, mut k: usize) -> u32 {
        let mut t = self.root;
        loop {
            let n = &self.nodes[t];
            let ls = self.size(n.left);
            match k.cmp(&ls) {
                Ordering::Less => t = n.left,
                Ordering::Equal => return t,
                Ordering::Greater => {
                    k -= ls + 1;
                    t = n.right;
                }
            }
        }
    }

    /// The nodes from rank `k` on, forwards (`rev`: from rank `k` back to the first).
    pub(super) fn walk(&self, mut k: usize, rev: bool) -> Walk<'_, A> {
        let mut stack = std::vec::Vec::new();
        let mut t = self.root;
        if k < self.len() {
            while t != NIL {
                let n = &self.nodes[t];
                let ls = self.size(n.left);
                match k.cmp(&ls) {
                    Ordering::Less => {
                        if !rev {
                            stack.push(t);
                        }
                        t = n.left;
                    }
                    Ordering::Equal => {
                        stack.push(t);
                        break;
                    }
                    Ordering::Greater => {
                        if rev {
                            stack.push(t);
                        }
                        k -= ls + 1;
                        t = n.right;
                    }
                }
            }
        }
        Walk {
            tree: self,
            stack,
            rev,
        }
    }

    /// Unlinks the nodes of ranks `start..end`, in order, giving each slot to `f` (still live: `f`
    /// frees it).
    pub(super) fn unlink_ranks(&mut self, start: usize, end: usize, mut f: impl FnMut(&mut Self, u32)) {
        let (l, rest) = self.split_rank(self.root, start);
        let (mid, r) = self.split_rank(rest, end - start);
        self.root = self.merge(l, r);
        let mut order = std::vec::Vec::with_capacity(end - start);
        let mut stack = std::vec::Vec::new();
        let mut t = mid;
        while t != NIL || !stack.is_empty() {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t].left;
            }
            let x = stack.pop().expect("not empty");
            order.push(x);
            t = self.nodes[x].right;
        }
        for x in order {
            let n = &mut self.nodes[x];
            n.left = NIL;
            n.right = NIL;
            n.size = 1;
            f(self, x);
        }
    }

    /// A deep copy; None when the allocator has no memory for it.
    pub(super) fn try_clone(&self) -> Option<Self> {
        let mut nodes = Arena::new_in(self.alloc.clone());
        for n in self.nodes.iter() {
            let member = match &n.member {
                Some(m) => {
                    let mut v = Vec::new_in(self.alloc.clone());
                    v.try_reserve_exact(m.len()).ok()?;
                    v.extend_from_slice(m);
                    Some(v.into_boxed_slice())
                }
                None => None,
            };
            nodes.push(Node {
                member,
                score: n.score,
                left: n.left,
                right: n.right,
                size: n.size,
                prio: n.prio,
            });
        }
        Some(Tree {
            nodes,
            root: self.root,
            free: self.free,
            member_bytes: self.member_bytes,
            alloc: self.alloc.clone(),
        })
    }

    /// Checks the invariants (tests).
    #[cfg(test)]
    pub(super) fn check(&self) {
        fn go<A: KvAlloc>(t: &Tree<A>, n: u32) -> usize {
            if n == NIL {
                return 0;
            }
            let node = &t.nodes[n];
            for c in [node.left, node.right] {
                if c != NIL {
                    assert!(t.nodes[c].prio <= node.prio);
                }
            }
            if node.left != NIL {
                assert_eq!(t.cmp_nodes(node.left, n), Ordering::Less);
            }
            if node.right != NIL {
                assert_eq!(t.cmp_nodes(node.right, n), Ordering::Greater);
            }
            let s = go(t, node.left) + go(t, node.right) + 1;
            assert_eq!(s, node.size as usize);
            s
        }
        go(self, self.root);
    }
}

/// Nodes in order from a rank, either way: see [`Tree::walk`].
pub(super) struct Walk<'a, A: KvAlloc> {
    tree: &'a Tree<A>,
    /// The nodes still to visit whose subtrees on the walk's side were not yet entered; the next on top.
    stack: std::vec::Vec<u32>,
    rev: bool,
}

impl<'a, A: KvAlloc> Iterator for Walk<'a, A> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let x = self.stack.pop()?;
        let n = &self.tree.nodes[x];
        let mut t = if self.rev { n.left } else { n.right };
        while t != NIL {
            self.stack.push(t);
            let c = &self.tree.nodes[t];
            t = if self.rev { c.right } else { c.left };
        }
        Some((self.tree.member(x), n.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Global;

    #[test]
    fn every_edit_keeps_the_invariants() {
        let mut t = Tree::new_in(Global);
        let mut live: std::vec::Vec<u32> = std::vec::Vec::new();
        let mut x = 88172645463325252u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for step in 0..if cfg!(miri) { 200 } else { 5000 } {
            match rnd(4) {
                0 | 1 => {
                    let m = format!("m{step}");
                    let i = t.new_node(m.as_bytes(), rnd(5) as f64);
                    t.link(i);
                    live.push(i);
                    t.check();
                }
                2 if !live.is_empty() => {
                    let k = rnd(live.len() as u64) as usize;
                    let i = live.swap_remove(k);
                    t.unlink(i);
                    t.check();
                    t.free(i);
                }
                3 if !live.is_empty() => {
                    let k = rnd(live.len() as u64) as usize;
                    let i = live[k];
                    t.unlink(i);
                    t.check();
                    t.set_score(i, rnd(5) as f64);
                    t.link(i);
                    t.check();
                }
                _ => {}
            }
            assert_eq!(t.len(), live.len());
        }
    }
}
