//! Differential test of the sorted-set commands: a hand-written script over every command, option and
//! error (both encodings, past and under the thresholds, RESP2 and RESP3), then a seeded random
//! sequence, against a real `redis-server` (skipped without one, failed under `CI=true`); replies
//! compared, then the keyspaces.

mod common;

use common::differ::{Differ, Order};
use hopless_server::codec::Frame;

/// Commands whose replies must match Redis 7's, in order on one connection each.
const SCRIPT: &[&str] = &[
    // ZADD and its options, errors in Redis's order.
    "ZADD z 1 a 2 b 3 c",
    "ZADD z",
    "ZADD z 1",
    "ZADD z 1 a 2",
    "ZADD z NX",
    "ZADD z NX XX 1 a",
    "ZADD z NX GT 1 a",
    "ZADD z LT GT 1 a",
    "ZADD z NX LT 1 a",
    "ZADD z INCR 1 a 2 b",
    "ZADD z NX XX 1 a 2",
    "ZADD z x a",
    "ZADD z 1 a x b",
    "ZADD z nan a",
    "ZADD z 1e400 a",
    "ZADD z ' 1' a",
    "ZADD z '' a",
    "ZADD z CH 5 a 2 b 7 d",
    "ZADD z XX 10 a 10 newx",
    "ZADD z XX CH 11 a 10 newx",
    "ZADD z NX 99 a 4 e",
    "ZADD z GT 1 a",
    "ZADD z GT CH 100 a",
    "ZADD z LT CH 50 a 0 f",
    "ZADD z GT XX CH 1 b 1000 b",
    "ZADD z INCR 5 a",
    "ZADD z INCR NX 5 a",
    "ZADD z INCR XX 5 nope",
    "ZADD z INCR GT -1 a",
    "ZADD z INCR LT -1 a",
    "ZADD z +inf inf1 -inf ninf 0x10 hex .5 half 5. five -0 negz 1e-5 tiny 0.1 tenth",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZADD z INCR -inf inf1",
    "ZINCRBY z -inf inf1",
    "ZINCRBY z 1.5 a",
    "ZINCRBY z 1 brandnew",
    "ZADD negzero INCR -0 b",
    "ZINCRBY negzero -0 c",
    "ZINCRBY negzero -0 b",
    "ZADD negzero INCR -0 c",
    "ZRANGE negzero 0 -1 WITHSCORES",
    "ZINCRBY z x a",
    "ZINCRBY z nan a",
    "ZINCRBY z 1",
    "ZADD xxmissing XX 1 a",
    "EXISTS xxmissing",
    "ZADD xxmissing XX INCR 1 a",
    "ZSCORE z a",
    "ZSCORE z nope",
    "ZSCORE nokey a",
    "ZSCORE z",
    "ZMSCORE z a nope b",
    "ZMSCORE nokey a b",
    "ZMSCORE z",
    "ZCARD z",
    "ZCARD nokey",
    "ZCARD",
    "ZRANK z a",
    "ZRANK z ninf",
    "ZRANK z nope",
    "ZRANK nokey a",
    "ZREVRANK z a",
    "ZREVRANK z inf1",
    "ZREVRANK z nope",
    "ZRANK z",
    // Ranges by rank.
    "ZRANGE z 0 -1",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGE z 2 4 WITHSCORES",
    "ZRANGE z -3 -1",
    "ZRANGE z -100 100",
    "ZRANGE z 5 2",
    "ZRANGE z 100 200",
    "ZRANGE z -1 -100",
    "ZRANGE z 0 0 REV",
    "ZRANGE z 0 2 REV WITHSCORES",
    "ZRANGE z a b",
    "ZRANGE z 0 1 LIMIT 0 1",
    "ZRANGE z 0 1 LIMIT 0 -1",
    "ZRANGE z 0 1 LIMIT 0",
    "ZRANGE z 0 1 FOO",
    "ZRANGE z 0 1 REV REV",
    "ZRANGE z 0 1 BYSCORE BYLEX",
    "ZRANGE nokey 0 -1",
    "ZRANGE z 0",
    "ZREVRANGE z 0 -1",
    "ZREVRANGE z 0 2 WITHSCORES",
    "ZREVRANGE z 1 1 REV",
    "ZREVRANGE z 0 1 LIMIT 0 1",
    "ZREVRANGE z 0 1 BYSCORE",
    // By score.
    "ZRANGE z -inf +inf BYSCORE",
    "ZRANGE z -inf +inf BYSCORE WITHSCORES",
    "ZRANGE z (1 5 BYSCORE WITHSCORES",
    "ZRANGE z 1 (5 BYSCORE",
    "ZRANGE z (1 (1 BYSCORE",
    "ZRANGE z 5 1 BYSCORE",
    "ZRANGE z +inf -inf BYSCORE REV",
    "ZRANGE z 5 (1 BYSCORE REV WITHSCORES",
    "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
    "ZRANGE z -inf +inf BYSCORE LIMIT 1 -1",
    "ZRANGE z -inf +inf BYSCORE LIMIT -1 2",
    "ZRANGE z -inf +inf BYSCORE LIMIT 0 0",
    "ZRANGE z -inf +inf BYSCORE LIMIT 100 5",
    "ZRANGE z +inf -inf BYSCORE REV LIMIT 2 3 WITHSCORES",
    "ZRANGE z x 1 BYSCORE",
    "ZRANGE z 1 nan BYSCORE",
    "ZRANGE z [1 2 BYSCORE",
    "ZRANGE z 1 2 BYSCORE LIMIT x 1",
    "ZRANGE z '' 2 BYSCORE",
    "ZRANGE z ( 2 BYSCORE",
    "ZRANGEBYSCORE z -inf +inf",
    "ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 0 3",
    "ZRANGEBYSCORE z 1 1e400",
    "ZRANGEBYSCORE z 0 10 REV",
    "ZRANGEBYSCORE z 0 10 BYSCORE",
    "ZRANGEBYSCORE z x y",
    "ZREVRANGEBYSCORE z +inf -inf",
    "ZREVRANGEBYSCORE z 10 (0 WITHSCORES",
    "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 1",
    "ZREVRANGEBYSCORE z -inf +inf",
    "ZCOUNT z -inf +inf",
    "ZCOUNT z (1 5",
    "ZCOUNT z 5 1",
    "ZCOUNT z x 1",
    "ZCOUNT nokey 0 1",
    // By member.
    "ZADD lex 0 a 0 b 0 c 0 d 0 e 0 f 0 g",
    "ZRANGE lex - + BYLEX",
    "ZRANGE lex [b (e BYLEX",
    "ZRANGE lex (b [e BYLEX",
    "ZRANGE lex + - BYLEX REV",
    "ZRANGE lex [e [b BYLEX REV",
    "ZRANGE lex - + BYLEX LIMIT 2 2",
    "ZRANGE lex + - BYLEX REV LIMIT 1 2",
    "ZRANGE lex - + BYLEX WITHSCORES",
    "ZRANGE lex b e BYLEX",
    "ZRANGE lex [a + BYLEX",
    "ZRANGE lex - - BYLEX",
    "ZRANGE lex + + BYLEX",
    "ZRANGE lex (a (a BYLEX",
    "ZRANGE lex [z [a BYLEX",
    "ZRANGEBYLEX lex - +",
    "ZRANGEBYLEX lex [c +",
    "ZRANGEBYLEX lex - + LIMIT 1 3",
    "ZRANGEBYLEX lex - + WITHSCORES",
    "ZRANGEBYLEX lex a b",
    "ZREVRANGEBYLEX lex + -",
    "ZREVRANGEBYLEX lex (e - LIMIT 0 2",
    "ZREVRANGEBYLEX lex - +",
    "ZLEXCOUNT lex - +",
    "ZLEXCOUNT lex [b (d",
    "ZLEXCOUNT lex x y",
    "ZLEXCOUNT nokey - +",
    // ZRANGESTORE.
    "ZRANGESTORE dst z 0 2",
    "ZRANGE dst 0 -1 WITHSCORES",
    "OBJECT ENCODING dst",
    "ZRANGESTORE dst z -inf 5 BYSCORE LIMIT 1 2",
    "ZRANGE dst 0 -1 WITHSCORES",
    "ZRANGESTORE dst lex [b [d BYLEX REV",
    "ZRANGE dst 0 -1 WITHSCORES",
    "ZRANGESTORE dst z 0 2 WITHSCORES",
    "ZRANGESTORE dst nokey 0 -1",
    "EXISTS dst",
    "SET str v",
    "ZRANGESTORE str z 0 0",
    "TYPE str",
    "ZRANGESTORE dst str 0 -1",
    "ZRANGESTORE dst z 5 1",
    "EXISTS dst",
    "ZRANGESTORE dst z",
    "SET str v",
    // ZREM and removal by range.
    "ZREM z a nope b",
    "ZREM z nope",
    "ZREM nokey a",
    "ZREM z",
    "ZADD r 1 a 2 b 3 c 4 d 5 e 6 f",
    "ZREMRANGEBYRANK r 0 1",
    "ZREMRANGEBYRANK r -1 -1",
    "ZREMRANGEBYRANK r 5 1",
    "ZREMRANGEBYRANK r x 1",
    "ZRANGE r 0 -1 WITHSCORES",
    "ZREMRANGEBYSCORE r (3 4",
    "ZREMRANGEBYSCORE r x 4",
    "ZREMRANGEBYSCORE r 10 1",
    "ZRANGE r 0 -1 WITHSCORES",
    "ZREMRANGEBYSCORE r -inf +inf",
    "EXISTS r",
    "ZREMRANGEBYRANK nokey 0 -1",
    "ZADD rl 0 a 0 b 0 c 0 d",
    "ZREMRANGEBYLEX rl [b (d",
    "ZREMRANGEBYLEX rl x y",
    "ZRANGE rl 0 -1",
    "ZREMRANGEBYLEX rl - +",
    "EXISTS rl",
    // Pops.
    "ZADD p 1 a 2 b 3 c 4 d 5 e",
    "ZPOPMIN p",
    "ZPOPMAX p",
    "ZPOPMIN p 2",
    "ZPOPMAX p 0",
    "ZPOPMIN p -1",
    "ZPOPMIN p x",
    "ZPOPMIN p 1 2",
    "ZPOPMAX p 10",
    "EXISTS p",
    "ZPOPMIN p",
    "ZPOPMIN p 3",
    "ZPOPMIN str",
    "ZPOPMIN str 0",
    "ZPOPMIN nokey 0",
    "ZADD p 1 a 2 b 3 c",
    "ZMPOP 1 p MIN",
    "ZMPOP 2 nokey p MAX COUNT 5",
    "ZMPOP 2 nokey p MAX",
    "ZMPOP 0 p MIN",
    "ZMPOP -1 p MIN",
    "ZMPOP x p MIN",
    "ZMPOP 1 p FOO",
    "ZMPOP 1 p",
    "ZMPOP 3 p MIN",
    "ZMPOP 1 p MIN COUNT 0",
    "ZMPOP 1 p MIN COUNT x",
    "ZMPOP 1 p MIN COUNT 1 COUNT 2",
    "ZMPOP 1 p MIN COUNT",
    "ZMPOP 1 p MIN FOO",
    "ZMPOP 2 str p MIN",
    "ZADD p 1 a",
    "ZMPOP 2 p str MIN",
    "ZMPOP 1 nokey MAX",
    // Random members: deterministic cases only (the whole set, nothing, errors).
    "ZADD rm 1 a 2 b 3 c",
    "ZRANDMEMBER nokey",
    "ZRANDMEMBER nokey 5",
    "ZRANDMEMBER rm 0",
    "ZRANDMEMBER rm 0 WITHSCORES",
    "ZRANDMEMBER rm x",
    "ZRANDMEMBER rm 1 FOO",
    "ZRANDMEMBER rm 1 WITHSCORES x",
    "ZRANDMEMBER rm -9223372036854775808",
    "ZRANDMEMBER rm -9223372036854775807 WITHSCORES",
    "ZRANDMEMBER rm 9223372036854775807 WITHSCORES",
    "ZRANDMEMBER str",
    "ZRANDMEMBER str -100000000000",
    "ZRANDMEMBER nokey -100000000000",
    "ZRANDMEMBER str 1",
    "ZRANDMEMBER str 0",
    // ZSCAN.
    "ZSCAN rm 0",
    "ZSCAN rm 0 MATCH a*",
    "ZSCAN rm 0 COUNT 1",
    "ZSCAN rm 0 COUNT 0",
    "ZSCAN rm 0 MATCH",
    "ZSCAN rm 0 FOO bar",
    "ZSCAN rm x",
    "ZSCAN rm -1",
    "ZSCAN nokey 0",
    "ZSCAN nokey 0 FOO",
    "ZSCAN str 0",
    "ZSCAN str x",
    // Set operations.
    "ZADD s1 1 a 2 b 3 c",
    "ZADD s2 10 b 20 c 30 d",
    "ZADD s3 100 c 200 e",
    "ZUNION 2 s1 s2",
    "ZUNION 2 s1 s2 WITHSCORES",
    "ZUNION 3 s1 s2 s3 WEIGHTS 1 2 3 WITHSCORES",
    "ZUNION 2 s1 s2 AGGREGATE MIN WITHSCORES",
    "ZUNION 2 s1 s2 AGGREGATE MAX WITHSCORES",
    "ZUNION 2 s1 s2 AGGREGATE FOO",
    "ZUNION 2 s1 s2 WEIGHTS 1",
    "ZUNION 2 s1 s2 WEIGHTS 1 x",
    "ZUNION 2 s1 s2 WEIGHTS 1 nan",
    "ZUNION 2 s1 nokey WITHSCORES",
    "ZUNION 0 s1",
    "ZUNION -1 s1",
    "ZUNION x s1",
    "ZUNION 3 s1 s2",
    "ZUNION 2 s1 str",
    "ZUNION 2 s1 str FOO",
    "ZUNION 1 s1 WITHSCORES WITHSCORES",
    "ZUNION 1 s1 FOO",
    "ZUNION 2 s1 s2 WEIGHTS inf -inf WITHSCORES",
    "ZUNION 2 s1 s2 WEIGHTS 0 inf WITHSCORES",
    "ZUNION 1 s1 WEIGHTS -1 WITHSCORES",
    "ZINTER 2 s1 s2 WITHSCORES",
    "ZINTER 3 s1 s2 s3 WITHSCORES",
    "ZINTER 2 s1 s2 WEIGHTS 2 3 AGGREGATE MAX WITHSCORES",
    "ZINTER 2 s1 nokey",
    "ZINTER 2 s1 s1 WITHSCORES",
    "ZDIFF 2 s1 s2",
    "ZDIFF 2 s1 s2 WITHSCORES",
    "ZDIFF 2 s2 s1 WITHSCORES",
    "ZDIFF 1 s1 WITHSCORES",
    "ZDIFF 2 nokey s1",
    "ZDIFF 2 s1 s2 WEIGHTS 1 1",
    "ZDIFF 2 s1 s2 AGGREGATE SUM",
    "ZUNIONSTORE out 2 s1 s2",
    "ZRANGE out 0 -1 WITHSCORES",
    "ZUNIONSTORE out 2 s1 s2 WEIGHTS 1 -1 AGGREGATE MIN",
    "ZRANGE out 0 -1 WITHSCORES",
    "ZUNIONSTORE out 2 s1 s2 WITHSCORES",
    "ZINTERSTORE out 2 s1 s3",
    "ZRANGE out 0 -1 WITHSCORES",
    "ZINTERSTORE out 2 s1 nokey",
    "EXISTS out",
    "ZDIFFSTORE out 2 s1 s2",
    "ZRANGE out 0 -1 WITHSCORES",
    "ZDIFFSTORE out 2 s1 s1",
    "EXISTS out",
    "ZUNIONSTORE str 1 s1",
    "TYPE str",
    "ZRANGE str 0 -1",
    "SET str v",
    "EXPIRE s1 1000",
    "ZUNIONSTORE s1 2 s1 s2",
    "TTL s1",
    "ZRANGE s1 0 -1 WITHSCORES",
    "ZUNIONSTORE out 0 s1",
    "ZUNIONSTORE out",
    "ZINTERSTORE out 1",
    "ZDIFFSTORE out 1 s1 WEIGHTS 2",
    "ZINTERCARD 2 s1 s2",
    "ZINTERCARD 3 s1 s2 s3",
    "ZINTERCARD 2 s1 s2 LIMIT 1",
    "ZINTERCARD 2 s1 s2 LIMIT 0",
    "ZINTERCARD 2 s1 s2 LIMIT -1",
    "ZINTERCARD 2 s1 s2 LIMIT x",
    "ZINTERCARD 2 s1 s2 WITHSCORES",
    "ZINTERCARD 0 s1",
    "ZINTERCARD 2 s1 nokey",
    "ZINTERCARD 2 s1 str",
    // Plain sets join in, every member scored 1.
    "SADD plain a b x",
    "ZUNION 2 s1 plain WITHSCORES",
    "ZUNION 2 plain s1 WEIGHTS 3 1 AGGREGATE MAX WITHSCORES",
    "ZINTER 2 plain s1 WITHSCORES",
    "ZDIFF 2 plain s1 WITHSCORES",
    "ZINTERCARD 2 plain s1",
    "ZINTERSTORE pout 2 plain s1",
    "ZRANGE pout 0 -1 WITHSCORES",
    "ZDIFFSTORE pout 1 plain",
    "TYPE pout",
    "ZRANGE pout 0 -1 WITHSCORES",
    "ZRANGESTORE pout plain 0 -1",
    "ZPOPMIN plain",
    "ZCARD plain",
    // A key's TTL survives changes, and goes with the key when it empties.
    "ZADD ttlz 1 a 2 b 3 c",
    "EXPIRE ttlz 100",
    "ZADD ttlz 4 d",
    "ZINCRBY ttlz 1 a",
    "ZPOPMIN ttlz",
    "ZREMRANGEBYSCORE ttlz 100 200",
    "TTL ttlz",
    "ZREM ttlz a b c d",
    "TTL ttlz",
    "ZADD ttlz 1 a",
    "TTL ttlz",
    "ZRANGESTORE ttlz s2 0 -1",
    "TTL ttlz",
    // WRONGTYPE everywhere.
    "ZADD str 1 a",
    "ZINCRBY str 1 a",
    "ZREM str a",
    "ZCARD str",
    "ZSCORE str a",
    "ZMSCORE str a",
    "ZRANK str a",
    "ZREVRANK str a",
    "ZCOUNT str 0 1",
    "ZLEXCOUNT str - +",
    "ZRANGE str 0 -1",
    "ZRANGEBYSCORE str 0 1",
    "ZRANGEBYLEX str - +",
    "ZREMRANGEBYRANK str 0 1",
    "ZREMRANGEBYSCORE str 0 1",
    "ZREMRANGEBYLEX str - +",
    "ZADD str x a",
    "ZCOUNT str x 1",
    "ZADD z 1 a",
    "GET z",
    "TYPE z",
    "OBJECT ENCODING z",
];

/// Extremes: huge and negative indexes and counts, odd score spellings, option case, arity.
const EDGES: &[&str] = &[
    "zadd e nx 1 a 2 b 3 c",
    "ZADD e 1 a CH",
    "ZADD e 1.5e300 big 5e-324 denorm -1e-320 negdenorm 123456789012345678 huge 0.30000000000000004 pt3",
    "ZRANGE e 0 -1 withscores",
    "ZADD e 1e308 x",
    "ZINCRBY e 1e308 x",
    "ZINCRBY e 1e308 x",
    "ZINCRBY e -inf x",
    "ZSCORE e x",
    "ZADD e GT INCR -1 a",
    "ZADD e LT INCR -1 a",
    "ZRANGE e -9223372036854775808 9223372036854775807",
    "ZRANGE e 0 9223372036854775807 REV",
    "ZRANGE e 9223372036854775807 -9223372036854775808",
    "ZRANGE e 0 -1 BYSCORE LIMIT 0 9223372036854775807",
    "ZRANGE e -inf +inf BYSCORE LIMIT 9223372036854775807 1",
    "ZRANGE e -inf +inf BYSCORE LIMIT 1 9223372036854775807",
    "ZRANGE e -inf +inf BYSCORE LIMIT -9223372036854775808 1",
    "ZRANGE e -inf +inf BYSCORE LIMIT 0 -9223372036854775808 WITHSCORES",
    "ZRANGE e 9223372036854775808 1",
    "ZREMRANGEBYRANK e 9223372036854775807 -9223372036854775808",
    "ZPOPMIN e 9223372036854775807",
    "EXISTS e",
    "ZADD e 1 a 2 b 3 c",
    "ZPOPMAX e 9223372036854775808",
    "ZMPOP 1 e MIN COUNT 9223372036854775807",
    "ZMPOP 9223372036854775807 e MIN",
    "ZADD e 1 a 2 b 3 c",
    "ZRANGESTORE e e 1 -1",
    "ZRANGE e 0 -1 WITHSCORES",
    "ZUNION 9223372036854775807 e",
    "ZUNION 1 e WEIGHTS",
    "ZUNION 1 e AGGREGATE",
    "ZUNION 1 e weights 2 aggregate max withscores",
    "ZINTER 2 e e WEIGHTS inf 0 WITHSCORES",
    "ZINTER 2 e e WEIGHTS inf -inf WITHSCORES",
    "ZINTER 2 e e WEIGHTS inf -inf AGGREGATE MIN WITHSCORES",
    "ZINTERCARD 9223372036854775807 e",
    "ZINTERCARD -1 e",
    "ZINTERCARD 1 e LIMIT",
    "ZINTERCARD 1 e LIMIT 9223372036854775807",
    "ZDIFF 0 e",
    "ZDIFFSTORE d 0 e",
    "ZCOUNT e (1 (1",
    "ZCOUNT e (-inf (+inf",
    "ZCOUNT e -INF +INF",
    "ZCOUNT e -infinity infinity",
    "ZLEXCOUNT e [ (",
    "ZLEXCOUNT e ( [",
    "ZLEXCOUNT e - -",
    "ZLEXCOUNT e + +",
    "ZLEXCOUNT e + -",
    "ZSCAN e 0 MATCH b COUNT 100",
    "ZSCAN e 18446744073709551615",
    "ZSCAN e 18446744073709551616",
    "ZSCAN e +0",
    "ZSCAN e ' 0'",
    "ZSCAN e ''",
    "ZSCAN e +-1",
    "ZADD",
    "ZADD e",
    "ZADD e 1",
    "ZINCRBY e 1",
    "ZREM e",
    "ZCARD e x",
    "ZSCORE e",
    "ZMSCORE e",
    "ZRANK e a b",
    "ZCOUNT e 1",
    "ZRANGE e 0",
    "ZRANGESTORE d e 0",
    "ZREVRANGE e 0",
    "ZRANGEBYSCORE e 0",
    "ZRANGEBYLEX e -",
    "ZPOPMIN",
    "ZMPOP 1 e",
    "ZRANDMEMBER",
    "ZREMRANGEBYRANK e 0",
    "ZUNION 1",
    "ZUNIONSTORE d 1",
    "ZINTERCARD 1",
    "ZSCAN e",
];

/// The same kinds of commands, past the compact form's limits: a set of 200 members, one with a long
/// member, and a set converted by CONFIG SET.
const LARGE: &[&str] = &[
    "CONFIG SET zset-max-listpack-entries 4",
    "CONFIG SET zset-max-listpack-value 8",
    "ZADD small 1 a 2 b 3 c 4 d",
    "OBJECT ENCODING small",
    "ZADD small 5 e",
    "OBJECT ENCODING small",
    "ZREM small a b c d",
    "OBJECT ENCODING small",
    "ZADD long 1 short",
    "OBJECT ENCODING long",
    "ZADD long 2 longer-than-eight",
    "OBJECT ENCODING long",
    "ZADD hinted 1 a 2 b 3 c 4 d 5 e",
    "OBJECT ENCODING hinted",
    "ZADD dup 1 a 1 a 1 a 1 a 1 a",
    "OBJECT ENCODING dup",
    "ZADD nxhint NX 1 a 1 a 1 a 1 a 1 a",
    "OBJECT ENCODING nxhint",
    "ZADD firstlong 1 longer-than-eight 2 a",
    "OBJECT ENCODING firstlong",
    "ZADD lastlong 1 a 2 longer-than-eight",
    "OBJECT ENCODING lastlong",
    "ZINCRBY inc 1 longer-than-eight",
    "OBJECT ENCODING inc",
    "ZUNIONSTORE u 2 small long",
    "OBJECT ENCODING u",
    "ZUNIONSTORE u2 1 long",
    "OBJECT ENCODING u2",
    "ZINTERSTORE u3 1 small",
    "OBJECT ENCODING u3",
    "ZRANGESTORE u4 hinted 0 2",
    "OBJECT ENCODING u4",
    "ZRANGESTORE u5 hinted 0 -1",
    "OBJECT ENCODING u5",
    "ZRANGE hinted 0 -1 WITHSCORES",
    "ZRANGE hinted (1 4 BYSCORE REV WITHSCORES",
    "ZRANK hinted c",
    "ZREVRANK hinted c",
    "ZPOPMIN hinted 2",
    "ZPOPMAX hinted",
    "ZRANGE hinted 0 -1 WITHSCORES",
    "ZREMRANGEBYRANK hinted 0 0",
    "ZCARD hinted",
    // The keyspace commands on sorted sets of both forms.
    "COPY hinted hcopy",
    "OBJECT ENCODING hcopy",
    "ZRANGE hcopy 0 -1 WITHSCORES",
    "COPY small scopy",
    "OBJECT ENCODING scopy",
    "ZADD scopy 9 z",
    "ZRANGE small 0 -1 WITHSCORES",
    "ZRANGE scopy 0 -1 WITHSCORES",
    "COPY small hcopy",
    "COPY small hcopy REPLACE",
    "ZRANGE hcopy 0 -1 WITHSCORES",
    "RENAME scopy renamed",
    "TYPE renamed",
    "ZSCORE renamed z",
    "EXISTS scopy renamed",
    "EXPIRE renamed 100",
    "ZADD renamed 10 y",
    "TTL renamed",
    "PERSIST renamed",
    "TTL renamed",
    "DEL renamed hcopy",
    "EXISTS renamed hcopy",
    "UNLINK hinted",
    "TYPE hinted",
    "CONFIG SET zset-max-listpack-entries 128",
    "CONFIG SET zset-max-listpack-value 64",
];

/// ZRANDMEMBER's picks come in no set order: with scores as flat pairs (RESP2).
fn order_of(cmd: &str) -> Order {
    let up = cmd.to_ascii_uppercase();
    if up.starts_with("ZRANDMEMBER") && up.contains("WITHSCORES") {
        Order::UnorderedPairs
    } else if up.starts_with("ZRANDMEMBER") {
        Order::Unordered
    } else {
        Order::Exact
    }
}

/// In RESP3 a pair is one element.
fn order_of_resp3(cmd: &str) -> Order {
    if cmd.to_ascii_uppercase().starts_with("ZRANDMEMBER") {
        Order::Unordered
    } else {
        Order::Exact
    }
}

#[test]
fn sorted_set_commands_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.script(SCRIPT, order_of);
    d.script(EDGES, order_of);
    d.script(LARGE, order_of);
    d.compare_keyspace();
    d.assert_none();
}

/// A big set (the large form) against Redis through every read, with scores of every shape.
#[test]
fn large_sets_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let n = 300;
    let mut add: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), b"big".to_vec()];
    for i in 0..n {
        let score = match i % 5 {
            0 => format!("{}", i / 3),
            1 => format!("{}.25", i),
            2 => format!("-{}e-3", i),
            3 => "7".to_string(),
            _ => format!("{}", i as f64 / 7.0),
        };
        add.push(score.into_bytes());
        add.push(format!("member:{i:04}").into_bytes());
    }
    let a: Vec<&[u8]> = add.iter().map(|x| &x[..]).collect();
    d.run_args(&a, Order::Exact);
    let mut lines: Vec<String> = vec![
        "OBJECT ENCODING big".into(),
        "ZCARD big".into(),
        // Negative zero: the large form keeps it, and an increment by it keeps it.
        "ZADD big -0 negz".into(),
        "ZSCORE big negz".into(),
        "ZINCRBY big -0 negz".into(),
        "ZADD big INCR -0 negz2".into(),
        "ZADD big 0 negz".into(),
        "ZSCORE big negz".into(),
        "ZRANGE big -0 0 BYSCORE WITHSCORES".into(),
        "ZREM big negz negz2".into(),
        "ZRANGE big 0 -1 WITHSCORES".into(),
        "ZRANGE big 0 -1 REV WITHSCORES".into(),
        "ZRANGE big 7 (30 BYSCORE WITHSCORES".into(),
        "ZRANGE big (30 7 BYSCORE REV LIMIT 3 10 WITHSCORES".into(),
        "ZCOUNT big 7 7".into(),
        "ZRANGE big [7 [7 BYSCORE".into(),
        "ZRANGEBYLEX big - + LIMIT 0 5".into(),
        "ZLEXCOUNT big - +".into(),
        "ZUNION 2 big big WITHSCORES".into(),
        "ZINTER 2 big big WEIGHTS 1 -1 AGGREGATE MAX WITHSCORES".into(),
        "ZUNIONSTORE bigcopy 1 big WEIGHTS 2".into(),
        "OBJECT ENCODING bigcopy".into(),
        "ZDIFFSTORE bigdiff 2 big bigcopy".into(),
        "ZINTERCARD 2 big bigcopy LIMIT 100".into(),
    ];
    for i in (0..n).step_by(17) {
        lines.push(format!("ZRANK big member:{i:04}"));
        lines.push(format!("ZREVRANK big member:{i:04}"));
        lines.push(format!("ZSCORE big member:{i:04}"));
        lines.push(format!("ZRANGE big {i} {} WITHSCORES", i + 3));
        lines.push(format!("ZRANGE big -{} -{} ", i + 5, i + 1));
    }
    lines.extend(
        [
            "ZREMRANGEBYSCORE big (7 30",
            "ZREMRANGEBYRANK big 10 20",
            "ZREMRANGEBYRANK big -5 -1",
            "ZPOPMIN big 3",
            "ZPOPMAX big 3",
            "ZMPOP 1 big MAX COUNT 2",
            "ZRANGE big 0 -1 WITHSCORES",
            "OBJECT ENCODING big",
            "ZRANDMEMBER big 1000 WITHSCORES",
        ]
        .map(String::from),
    );
    let lines: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    d.script(&lines, order_of);
    // A full ZSCAN returns the same members and scores, in whatever order and steps.
    let all = |r: &mut common::Raw| {
        let mut cursor = b"0".to_vec();
        let mut got = Vec::new();
        loop {
            match r
                .cmd(&[
                    b"ZSCAN",
                    b"big",
                    &cursor,
                    b"COUNT",
                    b"7",
                    b"MATCH",
                    b"member:0[0-1]*",
                ])
                .read()
            {
                Frame::Array(v) => {
                    let Frame::Bulk(c) = &v[0] else {
                        panic!("cursor {v:?}")
                    };
                    let Frame::Array(items) = &v[1] else {
                        panic!("items {v:?}")
                    };
                    for p in items.chunks(2) {
                        got.push(format!("{:?}", p));
                    }
                    cursor = c.to_vec();
                }
                other => panic!("ZSCAN gave {other:?}"),
            }
            if cursor == b"0" {
                break;
            }
        }
        got.sort();
        got
    };
    let (t, o) = (all(&mut d.redis), all(&mut d.ours));
    assert!(t.len() > 50, "the MATCH keeps some members: {}", t.len());
    assert_eq!(t, o, "a full ZSCAN");
    d.compare_keyspace();
    d.assert_none();
}

/// RESP3: scores are doubles, WITHSCORES replies are pairs, ZPOPMIN with a count nests.
#[test]
fn resp3_shapes_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    d.run("HELLO 3", Order::Exact);
    d.diffs.clear();
    d.script(
        &[
            "ZADD z 1 a 2.5 b +inf c",
            "ZSCORE z b",
            "ZSCORE z c",
            "ZSCORE z nope",
            "ZMSCORE z a nope c",
            "ZINCRBY z 1 a",
            "ZADD z INCR 1 a",
            "ZADD z INCR NX 1 a",
            "ZRANGE z 0 -1",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZRANGEBYSCORE z -inf +inf WITHSCORES",
            "ZREVRANGE z 0 1 WITHSCORES",
            "ZUNION 1 z WITHSCORES",
            "ZRANDMEMBER z 10 WITHSCORES",
            "ZRANDMEMBER nokey",
            "ZSCAN z 0",
            "ZPOPMIN z",
            "ZPOPMIN z 1",
            "ZPOPMAX z 0",
            "ZPOPMAX nokey 2",
            "ZADD z 1 a 2 b",
            "ZMPOP 1 z MIN",
            "ZMPOP 1 nokey MIN",
            "ZRANK z nope",
        ],
        order_of_resp3,
    );
    d.assert_none();
}

/// A small deterministic generator (the sequence is the same on every run).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len() as u64) as usize]
    }
}

/// A seeded random sequence of sorted-set commands over a few keys (some small, some past the
/// thresholds, one with equal scores for the lex commands), replies and keyspaces compared.
#[test]
fn random_sequences_match_redis() {
    random_sequence(false, 0x5eed_2a5e_7001);
}

/// The same under RESP3 (doubles, pairs), with another seed.
#[test]
fn random_sequences_match_redis_in_resp3() {
    random_sequence(true, 0x3e5b_0077_aa01);
}

fn random_sequence(resp3: bool, seed: u64) {
    let Some(mut d) = Differ::start() else {
        return;
    };
    if resp3 {
        d.run("HELLO 3", Order::Exact);
        d.diffs.clear();
    }
    d.run("CONFIG SET zset-max-listpack-entries 16", Order::Exact);
    let mut r = Rng(seed);
    let keys = ["k1", "k2", "k3", "lx"];
    let scores = [
        "0", "1", "-1", "2.5", "1e3", "(1", "inf", "-inf", "0.1", "3", "7", "x",
    ];
    let bounds = ["-inf", "+inf", "0", "(0", "1", "(2.5", "3", "(1e3", "x"];
    let lexb = ["-", "+", "[m1", "(m1", "[m5", "(m9", "[m", "bad"];
    let steps = 3000;
    let (mut errors, mut useful) = (0, 0);
    for _ in 0..steps {
        let k = r.pick(&keys);
        let lex = k == "lx";
        let m = format!("m{}", r.below(30));
        let s = if lex { "0" } else { r.pick(&scores) };
        let (n1, n2) = (r.below(40) as i64 - 20, r.below(40) as i64 - 20);
        let cmd = match r.below(24) {
            0..=3 => {
                let opts = r.pick(&["", "NX", "XX", "GT", "LT", "CH", "XX CH", "GT CH", "INCR"]);
                let m2 = format!("m{}", r.below(30));
                if opts == "INCR" {
                    format!("ZADD {k} INCR {s} {m}")
                } else {
                    let s2 = if lex { "0" } else { r.pick(&scores) };
                    format!("ZADD {k} {opts} {s} {m} {s2} {m2}")
                }
            }
            4 => format!("ZINCRBY {k} {s} {m}"),
            5 => format!("ZREM {k} {m} m{}", r.below(30)),
            6 => format!("ZSCORE {k} {m}"),
            7 => format!("ZMSCORE {k} {m} m{}", r.below(30)),
            8 => format!("ZRANK {k} {m}"),
            9 => format!("ZREVRANK {k} {m}"),
            10 => format!(
                "ZRANGE {k} {n1} {n2} {}",
                r.pick(&["", "WITHSCORES", "REV", "REV WITHSCORES"])
            ),
            11 => format!(
                "ZRANGE {k} {} {} BYSCORE {} {}",
                r.pick(&bounds),
                r.pick(&bounds),
                r.pick(&["", "REV"]),
                r.pick(&["", "WITHSCORES", "LIMIT 1 3", "LIMIT 0 -1 WITHSCORES"])
            ),
            12 => format!(
                "ZRANGE lx {} {} BYLEX {} {}",
                r.pick(&lexb),
                r.pick(&lexb),
                r.pick(&["", "REV"]),
                r.pick(&["", "LIMIT 2 4"])
            ),
            13 => format!("ZCOUNT {k} {} {}", r.pick(&bounds), r.pick(&bounds)),
            14 => format!("ZLEXCOUNT lx {} {}", r.pick(&lexb), r.pick(&lexb)),
            15 => format!("ZREMRANGEBYRANK {k} {n1} {n2}"),
            16 => format!("ZREMRANGEBYSCORE {k} {} {}", r.pick(&bounds), r.pick(&bounds)),
            17 => format!("ZREMRANGEBYLEX lx {} {}", r.pick(&lexb), r.pick(&lexb)),
            18 => format!(
                "{} {k} {}",
                r.pick(&["ZPOPMIN", "ZPOPMAX"]),
                r.pick(&["", "0", "1", "3", "100"])
            ),
            19 => format!(
                "{} {} {} {} {}",
                r.pick(&["ZUNION", "ZINTER", "ZDIFF"]),
                2,
                r.pick(&keys),
                r.pick(&keys),
                r.pick(&[
                    "",
                    "WITHSCORES",
                    "WEIGHTS 2 -1 WITHSCORES",
                    "AGGREGATE MIN WITHSCORES",
                    "AGGREGATE MAX"
                ])
            ),
            20 => format!(
                "{} {k} 2 {} {} {}",
                r.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]),
                r.pick(&keys),
                r.pick(&keys),
                r.pick(&["", "WEIGHTS 0.5 3", "AGGREGATE MIN"])
            ),
            21 => format!("ZRANGESTORE {} {k} {n1} {n2}", r.pick(&keys)),
            22 => format!(
                "ZMPOP 2 {k} {} {} COUNT {}",
                r.pick(&keys),
                r.pick(&["MIN", "MAX"]),
                1 + r.below(4)
            ),
            _ => format!("ZINTERCARD 2 {k} {} LIMIT {}", r.pick(&keys), r.below(3)),
        };
        let (theirs, _) = d.run(&cmd, Order::Exact);
        match theirs {
            Frame::Error(_) => errors += 1,
            Frame::Array(v) if v.is_empty() => {}
            Frame::Null | Frame::Integer(0) => {}
            _ => useful += 1,
        }
        if d.diffs.len() > 20 {
            break;
        }
    }
    // The sequence is worth something only if most commands did something.
    assert!(
        errors < steps / 4 && useful > steps / 4,
        "{errors} errors, {useful} useful replies"
    );
    for k in keys {
        d.run(&format!("ZCARD {k}"), Order::Exact);
    }
    d.compare_keyspace();
    d.assert_none();
}

/// ZRANDMEMBER's random picks: the same count and shape as Redis's, members drawn from the set (with
/// repeats only for a negative count).
#[test]
fn random_members_have_redis_counts() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    let mut big = String::from("ZADD rm");
    for i in 0..200 {
        big.push_str(&format!(" {i} m{i}"));
    }
    for setup in ["ZADD rm 1 a 2 b 3 c 4 d 5 e", big.as_str()] {
        d.run("DEL rm", Order::Exact);
        d.run(setup, Order::Exact);
        for count in ["1", "3", "-3", "-50", "100", "150", "199", "300"] {
            for with in ["", " WITHSCORES"] {
                let cmd = format!("ZRANDMEMBER rm {count}{with}");
                let a = common::differ::split(&cmd);
                let a: Vec<&[u8]> = a.iter().map(|x| &x[..]).collect();
                let shape = |f: Frame| -> (usize, usize) {
                    let Frame::Array(v) = f else {
                        panic!("{cmd}: {f:?}")
                    };
                    let mut members: Vec<String> = v
                        .iter()
                        .step_by(if with.is_empty() { 1 } else { 2 })
                        .map(|x| format!("{x:?}"))
                        .collect();
                    let n = members.len();
                    members.sort();
                    members.dedup();
                    (n, members.len())
                };
                let t = shape(d.redis.cmd(&a).read());
                let o = shape(d.ours.cmd(&a).read());
                if count.starts_with('-') {
                    assert_eq!(t.0, o.0, "{cmd}");
                } else {
                    assert_eq!(t, o, "{cmd}");
                }
            }
        }
    }
    // A count Redis would start streaming until it runs out of memory: refused here, on purpose.
    let r = d.ours.cmd(&[b"ZRANDMEMBER", b"rm", b"-100000000000"]).read();
    assert_eq!(r, Frame::Error("ERR value is out of range".into()));
    d.compare_keyspace();
    d.assert_none();
}

/// COMMAND INFO of every sorted-set command: name, arity, flags, first/last key and step, ACL
/// categories, as Redis 7.0 lists them.
#[test]
fn command_info_matches_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    for name in [
        "zadd",
        "zincrby",
        "zrem",
        "zcard",
        "zscore",
        "zmscore",
        "zrank",
        "zrevrank",
        "zcount",
        "zlexcount",
        "zrange",
        "zrangestore",
        "zrevrange",
        "zrangebyscore",
        "zrevrangebyscore",
        "zrangebylex",
        "zrevrangebylex",
        "zpopmin",
        "zpopmax",
        "zmpop",
        "zrandmember",
        "zremrangebyrank",
        "zremrangebyscore",
        "zremrangebylex",
        "zunion",
        "zinter",
        "zdiff",
        "zunionstore",
        "zinterstore",
        "zdiffstore",
        "zintercard",
        "zscan",
    ] {
        let head = |f: Frame| -> Vec<Frame> {
            let Frame::Array(mut v) = f else {
                panic!("{name}: {f:?}")
            };
            let Frame::Array(info) = v.remove(0) else {
                panic!("{name}")
            };
            info.into_iter().take(7).collect()
        };
        let t = head(d.redis.cmd(&[b"COMMAND", b"INFO", name.as_bytes()]).read());
        let o = head(d.ours.cmd(&[b"COMMAND", b"INFO", name.as_bytes()]).read());
        assert_eq!(t, o, "COMMAND INFO {name}");
    }
}

/// Every sorted-set command with random arguments drawn from a vocabulary of keys, members, numbers,
/// bounds and option words: the parsers' checks and their order of precedence against Redis's.
/// (ZRANDMEMBER is left out: its picks are random, and Redis streams a huge negative count forever.)
#[test]
fn random_arguments_match_redis() {
    let Some(mut d) = Differ::start() else {
        return;
    };
    // Each command with Redis's arity (negative: at least that many, the name included).
    #[rustfmt::skip]
    let commands: [(&str, i64); 31] = [
        ("ZADD", -4), ("ZINCRBY", 4), ("ZREM", -3), ("ZCARD", 2), ("ZSCORE", 3), ("ZMSCORE", -3),
        ("ZRANK", 3), ("ZREVRANK", 3), ("ZCOUNT", 4), ("ZLEXCOUNT", 4), ("ZRANGE", -4),
        ("ZRANGESTORE", -5), ("ZREVRANGE", -4), ("ZRANGEBYSCORE", -4), ("ZREVRANGEBYSCORE", -4),
        ("ZRANGEBYLEX", -4), ("ZREVRANGEBYLEX", -4), ("ZPOPMIN", -2), ("ZPOPMAX", -2), ("ZMPOP", -4),
        ("ZREMRANGEBYRANK", 4), ("ZREMRANGEBYSCORE", 4), ("ZREMRANGEBYLEX", 4), ("ZUNION", -3),
        ("ZINTER", -3), ("ZDIFF", -3), ("ZUNIONSTORE", -4), ("ZINTERSTORE", -4), ("ZDIFFSTORE", -4),
        ("ZINTERCARD", -3), ("ZSCAN", -3),
    ];
    let keys = ["a", "b", "str", "nokey"];
    let words = [
        "0",
        "1",
        "-1",
        "2",
        "3",
        "-5",
        "100",
        "x",
        "1.5",
        "inf",
        "-inf",
        "+inf",
        "(1",
        "(x",
        "[m1",
        "(m2",
        "-",
        "+",
        "nan",
        "9223372036854775807",
        "-9223372036854775808",
        "NX",
        "XX",
        "GT",
        "LT",
        "CH",
        "INCR",
        "WITHSCORES",
        "LIMIT",
        "REV",
        "BYSCORE",
        "BYLEX",
        "WEIGHTS",
        "AGGREGATE",
        "SUM",
        "MIN",
        "MAX",
        "COUNT",
        "MATCH",
        "*",
        "m1",
        "m2",
        "m3",
        "a",
        "b",
    ];
    d.run("SET str v", Order::Exact);
    let mut r = Rng(0xa4_9c3f_11d7);
    for _ in 0..4000 {
        let (name, arity) = commands[r.below(commands.len() as u64) as usize];
        let mut args: Vec<String> = vec![name.to_string()];
        // Usually a key (or numkeys) first, then anything.
        if r.below(8) != 0 {
            let first = if ["ZMPOP", "ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD"].contains(&name) {
                r.pick(&["1", "2", "0", "x"])
            } else {
                r.pick(&keys)
            };
            args.push(first.to_string());
        }
        // Mostly as many arguments as the arity asks (a few more when it allows), now and then any.
        let want = match (arity, r.below(8)) {
            (_, 0) => r.below(8) as usize,
            (n, _) if n > 0 => n as usize,
            (n, _) => (-n) as usize + r.below(5) as usize,
        };
        while args.len() < want {
            let w = if r.below(4) == 0 {
                r.pick(&keys)
            } else {
                r.pick(&words)
            };
            args.push(w.to_string());
        }
        // Refill now and then so the keys have members to work on.
        if r.below(10) == 0 {
            d.run("ZADD a 1 m1 2 m2 3 m3 1.5 m4", Order::Exact);
            d.run("ZADD b 0 m1 0 m3 0 x 0 y", Order::Exact);
        }
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        d.run_args(&a, Order::Exact);
        if d.diffs.len() > 20 {
            break;
        }
    }
    d.compare_keyspace();
    d.assert_none();
}
