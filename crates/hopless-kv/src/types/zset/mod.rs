//! Sorted sets: members with scores, ordered by (score, member bytes), in one of two forms as Redis
//! keeps them. While small (at most `zset-max-listpack-entries` members, none longer than
//! `zset-max-listpack-value` bytes) the pairs sit sorted in one packed block (`listpack.rs`, OBJECT
//! ENCODING `listpack`); an insert that crosses either limit converts the set once, for good, to a
//! member→slot hash beside an order-statistic tree (`large.rs`, `tree.rs`; OBJECT ENCODING `skiplist`),
//! which has Redis's complexity: O(1) ZSCORE, O(log n) ZADD, ZREM and ZRANK, O(log n + k) for a run of
//! k ranks.
//!
//! Every query the commands need reduces to ranks: a score or member range ([`range`]) is the run of
//! ranks between two prefix counts, so ZRANGEBYSCORE, ZCOUNT, ZREMRANGEBYLEX and their kin are rank
//! walks or rank removals ([`query`] turns a command's range into that run). Scores are read and
//! printed as Redis does ([`score`]); ZUNION, ZINTER and ZDIFF combine sets as Redis does ([`setops`]).
//!
//! | file | what it holds |
//! |---|---|
//! | `sorted_set.rs` | [`ZSet`]: the two forms behind one API, the conversion, ZADD's conditions |
//! | `listpack.rs` | the compact form: sorted (member, score) pairs in one packed block |
//! | `large.rs` | the large form: member→slot hash (grown incrementally) beside the tree |
//! | `tree.rs` | the order-statistic treap: insert, delete, rank, select, walks |
//! | `arena.rs` | the treap's nodes, in chunks, by stable `u32` slot |
//! | `score.rs` | score parsing (`strtod`'s rules) and printing (`%.17g`) |
//! | `range.rs` | score and member ranges, as predicates over the order |
//! | `query.rs` | range requests (rank, score, member; REV, LIMIT) as runs of ranks; ZRANDMEMBER picks |
//! | `setops.rs` | union, intersection, difference, with weights and aggregates |

mod arena;
mod large;
mod listpack;
pub mod query;
pub mod range;
pub mod score;
pub mod setops;
mod sorted_set;
mod tree;

pub use query::{RangeBy, RangeSpec, Run};
pub use range::{LexBound, LexRange, ScoreRange};
pub use score::{format_score, parse_bound, parse_score, parse_sort_weight};
pub use setops::{Aggregate, SetOp};
pub use sorted_set::{AddFlags, Added, NanScore, Walk, ZSet};

#[cfg(test)]
mod tests;
