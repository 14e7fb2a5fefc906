//! What the sorted-set commands share: scores sent as Redis sends them (a double in RESP3, a bulk
//! string in RESP2), WITHSCORES replies (flat or as pairs), and the range arguments with their error
//! texts.

use hopless_kv::types::zset::{format_score, LexRange, RangeBy, ScoreRange};

use crate::codec::Reply;
use crate::errors::CmdError;

pub(super) const NOT_FLOAT: CmdError = CmdError::Static("ERR value is not a valid float");
const BAD_SCORE_RANGE: CmdError = CmdError::Static("ERR min or max is not a float");
const BAD_LEX_RANGE: CmdError = CmdError::Static("ERR min or max not valid string range item");

/// A score as Redis sends it: a double in RESP3, a bulk string in RESP2.
pub(crate) fn score(out: &mut Reply, v: f64) {
    let s = format_score(v);
    if out.resp3() {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(s.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(s.as_bytes());
    }
}

/// Members, with their scores when asked: RESP2 flat (member, score, ...), RESP3 [member, score]
/// pairs.
pub(super) fn scored(out: &mut Reply, pairs: &[(Vec<u8>, f64)], with_scores: bool) {
    if with_scores {
        let nested = out.resp3();
        pairs_reply(out, pairs, nested);
    } else {
        out.array(pairs.len());
        for (m, _) in pairs {
            out.bulk(m);
        }
    }
}

/// Members with scores, as [member, score] pairs (`nested`) or flat.
pub(crate) fn pairs_reply(out: &mut Reply, pairs: &[(Vec<u8>, f64)], nested: bool) {
    if nested {
        out.array(pairs.len());
        for (m, s) in pairs {
            out.array(2);
            out.bulk(m);
            score(out, *s);
        }
    } else {
        out.array(2 * pairs.len());
        for (m, s) in pairs {
            out.bulk(m);
            score(out, *s);
        }
    }
}

pub(super) fn score_range(min: &[u8], max: &[u8]) -> Result<RangeBy, CmdError> {
    ScoreRange::parse(min, max)
        .map(RangeBy::Score)
        .ok_or(BAD_SCORE_RANGE)
}

pub(super) fn lex_range(min: &[u8], max: &[u8]) -> Result<RangeBy, CmdError> {
    LexRange::parse(min, max).map(RangeBy::Lex).ok_or(BAD_LEX_RANGE)
}
