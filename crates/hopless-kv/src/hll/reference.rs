//! What redis-server 7.0.15 did, recorded from a live server (`redis-py` against `redis-server
//! --port 7399`): the bytes of values after PFADD, PFCOUNT, PFMERGE and PFDEBUG, and the replies. A value
//! longer than 400 bytes is kept as its length and FNV-1a 64 hash. Elements written `(register, run)`
//! are the 8-byte elements that hash there (`tests::element_for`).

pub(super) use self::Bytes::{Fnv, Hex};

/// A value: its bytes in hex, or its length and FNV-1a 64 hash.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bytes {
    Hex(&'static str),
    Fnv(usize, u64),
}

/// A command on a scenario's value (under key `k`; `abc` holds PFADD a b c).
#[derive(Clone, Copy, Debug)]
pub(super) enum Cmd {
    /// PFCOUNT k.
    Count,
    /// PFDEBUG DECODE k.
    Decode,
    /// PFDEBUG ENCODING k.
    Encoding,
    /// PFDEBUG TODENSE k.
    ToDense,
    /// PFDEBUG GETREG k.
    GetReg,
    /// PFMERGE dst k (the value after is dst's).
    MergeNew,
    /// PFCOUNT k abc.
    Union,
    /// PFADD k with the elements landing at these (register, run).
    Add(&'static [(usize, u8)]),
}

/// A scenario: a value as a recipe (hex, repeated), and what Redis did with it: (command, reply, the
/// value after when it changed).
pub(super) type Scenario = (
    &'static str,
    &'static [(&'static str, usize)],
    &'static [(Cmd, R, Option<Bytes>)],
);
/// A random run: hll-sparse-max-bytes, batches of elements `t{run}-{i}` (how many, PFCOUNT after?), the
/// last PFCOUNT, the value's length and FNV-1a.
pub(super) type Run = (usize, &'static [(u32, bool)], i64, usize, u64);
/// A random PFMERGE over the runs' values: hll-sparse-max-bytes, the destination run, the source runs,
/// the value's length and FNV-1a.
pub(super) type RunMerge = (usize, Option<usize>, &'static [usize], usize, u64);

/// A reply (errors with their code; redis-py drops `ERR `, so those were read with redis-cli).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum R {
    Int(i64),
    Err(&'static str),
    Text(&'static str),
    /// A long bulk string: its length and FNV-1a 64 hash.
    TextFnv(usize, u64),
    /// GETREG's registers, one byte each: their FNV-1a 64 hash.
    Regs(u64),
}

pub(super) const EMPTY_AFTER_PFADD: &str = "48594c4c0100000000000000000000807fff";
pub(super) const ABC: &str = "48594c4c01000000000000000000008060f38050b1844bfb80425a";
pub(super) const ABC_DECODE: &str = "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603";
pub(super) const ABC_COUNT: i64 = 3;
pub(super) const ABC_AFTER_COUNT: &str = "48594c4c01000000030000000000000060f38050b1844bfb80425a";
/// (element, register, run) as PFDEBUG GETREG shows a one-element HLL.
#[rustfmt::skip]
pub(super) const PATTERNS: &[(&[u8], usize, u8)] = &[
    (&[], 5938, 2),
    (&[1], 9478, 2),
    (&[2, 39], 6421, 1),
    (&[3, 40, 77], 6687, 1),
    (&[4, 41, 78, 115], 13808, 3),
    (&[5, 42, 79, 116, 153], 6992, 1),
    (&[6, 43, 80, 117, 154, 191], 6268, 1),
    (&[7, 44, 81, 118, 155, 192, 229], 4689, 2),
    (&[8, 45, 82, 119, 156, 193, 230, 11], 12784, 4),
    (&[9, 46, 83, 120, 157, 194, 231, 12, 49], 1271, 1),
    (&[10, 47, 84, 121, 158, 195, 232, 13, 50, 87], 14443, 3),
    (&[11, 48, 85, 122, 159, 196, 233, 14, 51, 88, 125], 5107, 1),
    (&[12, 49, 86, 123, 160, 197, 234, 15, 52, 89, 126, 163], 14456, 1),
    (&[13, 50, 87, 124, 161, 198, 235, 16, 53, 90, 127, 164, 201], 12478, 1),
    (&[14, 51, 88, 125, 162, 199, 236, 17, 54, 91, 128, 165, 202, 239], 16023, 1),
    (&[15, 52, 89, 126, 163, 200, 237, 18, 55, 92, 129, 166, 203, 240, 21], 9114, 2),
    (&[16, 53, 90, 127, 164, 201, 238, 19, 56, 93, 130, 167, 204, 241, 22, 59], 13900, 4),
    (&[17, 54, 91, 128, 165, 202, 239, 20, 57, 94, 131, 168, 205, 242, 23, 60, 97], 4307, 2),
    (&[18, 55, 92, 129, 166, 203, 240, 21, 58, 95, 132, 169, 206, 243, 24, 61, 98, 135], 8118, 1),
    (&[19, 56, 93, 130, 167, 204, 241, 22, 59, 96, 133, 170, 207, 244, 25, 62, 99, 136, 173], 12131, 4),
    (&[20, 57, 94, 131, 168, 205, 242, 23, 60, 97, 134, 171, 208, 245, 26, 63, 100, 137, 174, 211], 1574, 1),
    (&[21, 58, 95, 132, 169, 206, 243, 24, 61, 98, 135, 172, 209, 246, 27, 64, 101, 138, 175, 212, 249], 5207, 2),
    (&[22, 59, 96, 133, 170, 207, 244, 25, 62, 99, 136, 173, 210, 247, 28, 65, 102, 139, 176, 213, 250, 31], 4179, 4),
    (&[23, 60, 97, 134, 171, 208, 245, 26, 63, 100, 137, 174, 211, 248, 29, 66, 103, 140, 177, 214, 251, 32, 69], 13183, 1),
    (&[24, 61, 98, 135, 172, 209, 246, 27, 64, 101, 138, 175, 212, 249, 30, 67, 104, 141, 178, 215, 252, 33, 70, 107], 11758, 1),
    (&[25, 62, 99, 136, 173, 210, 247, 28, 65, 102, 139, 176, 213, 250, 31, 68, 105, 142, 179, 216, 253, 34, 71, 108, 145], 7402, 1),
];
/// (elements `e0`.. added one PFADD each, PFCOUNT then, PFDEBUG ENCODING, the value after PFCOUNT).
#[rustfmt::skip]
pub(super) const SEQUENCE: &[(u64, i64, &str, Bytes)] = &[
    (1, 1, "sparse", Hex("48594c4c0100000001000000000000004525807ad8")),
    (2, 2, "sparse", Hex("48594c4c01000000020000000000000045258079258441b1")),
    (3, 3, "sparse", Hex("48594c4c010000000300000000000000452580782f8440f48441b1")),
    (4, 4, "sparse", Hex("48594c4c010000000400000000000000452580686f844fbe8440f48441b1")),
    (5, 5, "sparse", Hex("48594c4c010000000500000000000000452580656084430d844fbe8440f48441b1")),
    (8, 8, "sparse", Hex("48594c4c01000000080000000000000045258056f9804412844a5184430d844103844eb98440f48441b1")),
    (10, 10, "sparse", Hex("48594c4c010000000a00000000000000452580472e844fc9804412844a5184430d844103844eb984408880406a8441b1")),
    (16, 16, "sparse", Hex("48594c4c01000000100000000000000045258044528042da844bd08c43f78042ac8041648446f790435884430d8441038446d18047e684408880406a844048804167")),
    (20, 20, "sparse", Hex("48594c4c01000000140000000000000042358842ee8044528042da844bd08c406f8043868042ac8041648441b884453d90435884430d8441038446d18047e684408880406a8440488013804152")),
    (32, 32, "sparse", Hex("48594c4c01000000200000000000000042358842ee8044528042da84450e8442958440d38043548c406f8043868042ac80416484348041828440948844a7901184425f8c40e48440e180422a8441038446cc88038045d684407984419384408880406a840d80398013804152")),
    (50, 50, "sparse", Hex("48594c4c01000000320000000000000040748041b99c048840e280420a8044528042da8441868440e18442a38442958440d38042638040a280404b8c406f8043868041478041638041618c01842188118041828440948844a7901184425f8c40e48440e180422a8441038442968c41d880411c88413c8803804078803f80409b8041518842f6803384407984419384408880406a840d80398013804152")),
    (64, 64, "sparse", Hex("48594c4c01000000400000000000000040748041b99c048840e28041358840d380411d8840898042a88042da8441868440e184421c804085840780404e80423c8440d38042638040a280404b8c406f8043868041478041638041618c018421881180418284409488409d80420688420090118440c184419c8c40e48440e180422a84410384412f8441658c417d80405980411c88413c8803804078803f80409b8041518842f68033844079844193844058902e80406a840d8039801380409a882880408c")),
    (100, 100, "sparse", Hex("48594c4c01000000640000000000000036843c8040a9a40e88409084406c9c048840e28041358840d380411d8840898041168c419080098040e08040948041578440a280408384405d8440e1844199844081803c844047840780404e80408f840984405184268441258440d38042638040a280404b8c406f80420b8c41798041478041638040668440f98c0184218811804182844062803088407984228040de8440d3884045800a88420090118440c184018041138440848c1684228040a88440e180422a84410384168041178441658c414e802680058040598040ec882e88413c880380405b841b803f80409b802184412e88408f90407e80408480415f8033844079844193844058902e80406a840d8039801380409a882880408c")),
    (128, 129, "sparse", Hex("48594c4c01000000810000000000000036843c8040a9a40e88409084406c9c048840e2804135884055800080407a80411d884089800d8441078c404684414880098040e080409480407e9040d78440a280408384405d8440e18416804181844081803c844047840780404e80408f8409844043840c84268440e38040408440b88019802a844237802e88407280404b8c406f8040b08041598c41588c1a840380407e8040c780416380406684409f8040588c01842188118041828440628030884079840784198040de84404684408b8840418402800a88420090118440c184018041138440848c168422803c88406a8440e180414c80228040b8844103841680411180048441658c414e8026800580038040548040ec882e8840f680198429880380405b841b803f80409b800d881284412e88408f90407e80408480415f80338440798441938440589022840a80406a840d8039801380409a882880408c")),
    (200, 200, "sparse", Fnv(513, 0xcf220b3b377acfd5)),
    (256, 257, "sparse", Fnv(629, 0x6c942a41e82dae4a)),
    (300, 302, "sparse", Fnv(713, 0xc7b1bd47db913d5b)),
    (500, 506, "sparse", Fnv(1068, 0x4785b546f1b4a8cb)),
    (1000, 1008, "sparse", Fnv(1906, 0x4ded8ea0046b668d)),
    (1500, 1509, "sparse", Fnv(2719, 0xf02083a1232a1a76)),
    (2000, 2000, "dense", Fnv(12304, 0xdd4d26f186b57d33)),
    (3000, 2979, "dense", Fnv(12304, 0xb581fa7fa1f68d1c)),
    (5000, 4968, "dense", Fnv(12304, 0x9219c5a2921db657)),
    (10000, 9973, "dense", Fnv(12304, 0x91141a0852dc0034)),
    (20000, 19901, "dense", Fnv(12304, 0x5b776629ffcdd575)),
    (50000, 49978, "dense", Fnv(12304, 0xb4cdee4653d5efff)),
    (100000, 100853, "dense", Fnv(12304, 0xfd1fc23694773e63)),
];
/// The element count at which SEQUENCE turned dense.
pub(super) const SEQUENCE_FIRST_DENSE: u64 = 1684;
/// (hll-sparse-max-bytes, elements `e0`.. added one per PFADD before the value is dense, the last sparse value)
#[rustfmt::skip]
pub(super) const PROMOTIONS: &[(usize, u64, Bytes)] = &[
    (0, 1, Hex("48594c4c0100000000000000000000807fff")),
    (20, 1, Hex("48594c4c0100000000000000000000807fff")),
    (100, 29, Hex("48594c4c01000000000000000000008042358842ee8044528042da84450e8442958440d38043548c406f8043868042ac8041648441b884453d90118443458440e180422a8441038446cc88038045d684407984419384408880406a8440488013804152")),
    (300, 106, Hex("48594c4c01000000000000000000008036843c8040a9a40e88409084406c9c048840e280413588405780407a80411d8840898041168c419080098040e08040948041578440a280408384405d8440e1844199844081803c844047840780404e80408f840984405184268441258440d3802a8442378040a280404b8c406f8040b08041598c41798041478041638040668440f98c0184218811804182844062803088407984228040de84404684408b8840418402800a88420090118440c184018041138440848c1684228040a88440e180422a84410384168041178441658c414e802680058040598040ec882e88413c880380405b841b803f80409b802184412e88408f90407e80408480415f8033844079844193844058902e80406a840d8039801380409a882880408c")),
    (1000, 464, Fnv(1000, 0x282c4e8c932e8c49)),
    (3000, 1684, Fnv(3000, 0x3c1b2ef7aaad95df)),
    (5000, 3125, Fnv(5000, 0x704dfef179a97ab5)),
];
/// (elements `x0`.. in one PFADD, reply, value)
#[rustfmt::skip]
pub(super) const ONE_PFADD: &[(u64, i64, Bytes)] = &[
    (0, 1, Hex("48594c4c0100000000000000000000807fff")),
    (1, 1, Hex("48594c4c01000000000000000000008050dbb46f22")),
    (10, 1, Hex("48594c4c01000000000000000000008043729442a384482b844295b444128048f48c4e578c473e842d884bed884061")),
    (100, 1, Hex("48594c4c010000000000000000000080388040648040768042038040559440c9884186804050844047801480410d80406c8440978040fb9040888012880a8041a5804052801f801d80408f88406d8040d484118c40f680409d844053984096b4404390404c8840468812884081800484078440678042288040e380278011801f80404f8040e98040508840798040828c40fd80408480148041a080405c84405984258441088c409380338441199041078041f990408e8840cf882b803f80408a88405d80412484419d801a8041bd944093984151802c8c406c80404d80426184414d80398440648841c18440458024842d88407598049441d99c40b28441c68c4108842a840f84411f8441488441428440628c40c2a433844074804050884061")),
    (700, 1, Fnv(1369, 0xda3c41cedb73b79c)),
    (2000, 1, Fnv(12304, 0x2e889f10beb2c86c)),
    (20000, 1, Fnv(12304, 0xe9db86704a7e968a)),
];
pub(super) const ABOVE_32: (i64, Bytes, &str) = (
    1,
    Fnv(12304, 0xb5b6fe43cd9451fb),
    "48594c4c000000000300000000000080",
);
/// PFMERGE cases: (destination before, sources, result).
#[rustfmt::skip]
pub(super) const MERGES: &[(Option<&str>, &[&str], i64, Bytes)] = &[
    (None, &["s1", "s2", "s3"], 5, Hex("48594c4c0100000000000000000000805c7b8044768050b184498c80426d80425a")),
    (None, &[], 0, Hex("48594c4c0100000000000000000000807fff")),
    (Some("x"), &["s1", "big"], 4966, Fnv(12304, 0x02bdf7236b4cad9f)),
    (Some("x"), &["x", "s2"], 5, Hex("48594c4c0100000002000000000000805c7b80447680595e88434e8042508408")),
    (None, &["m1", "m2"], 2793, Fnv(12304, 0xe9278afdf81e9cb7)),
    (Some("s1"), &["m1"], 1400, Fnv(2579, 0xd50fbc283e3fd445)),
    (Some("x"), &["hi"], 3, Fnv(12304, 0x6af384d02b0b780e)),
    (None, &["big"], 4962, Fnv(12304, 0xbcf28b292de3b718)),
    (Some("big"), &["s1", "hi"], 4963, Fnv(12304, 0xf9384dabfa0d410e)),
];
/// The full values the merge cases name.
#[rustfmt::skip]
pub(super) const NAMED: &[(&str, Bytes)] = &[
    ("s1", Hex("48594c4c01000000000000000000008060f38050b1844bfb80425a")),
    ("s2", Hex("48594c4c0100000000000000000000805c7b804476805cae80425a")),
    ("s3", Hex("48594c4c0100000000000000000000805c7b804476805a3f8044c9")),
    ("big", Fnv(12304, 0xbcf28b292de3b718)),
    ("m1", Fnv(2574, 0x3452753d2213fd6a)),
    ("m2", Fnv(2562, 0x7d1c20f5920843fe)),
    ("hi", Fnv(12304, 0xc46c63231621d659)),
    ("x", Hex("48594c4c0100000002000000000000007a538845a08408")),
];
/// PFCOUNT of several keys: (names, reply).
#[rustfmt::skip]
pub(super) const UNIONS: &[(&[&str], i64)] = &[
    (&["s1", "s2", "s3"], 5),
    (&["s1", "big"], 4963),
    (&["m1", "m2"], 2793),
    (&["m1", "m2", "big", "hi"], 7791),
    (&["x"], 2),
];
/// Odd and corrupt values, and what Redis did with them (see [`Scenario`]).
#[rustfmt::skip]
pub(super) const SCENARIOS: &[Scenario] = &[
    ("tail_garbage", &[("48594c4c01000000000000000000008060f38050b1844bfb80425a", 1), ("68656c6c6f", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603 Z:10342 Z:11373 Z:12033"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(1, 1), (16383, 2)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080008060f18050b1844bfb8042598468656c6c6f"))),
    ]),
    ("short_cover", &[("48594c4c0100000000000000000000805f3f", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:8000"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(100, 3), (9000, 2), (200, 4)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), Some(Hex("48594c4c0100000000000000000000804063885eda"))),
        (Cmd::Add(&[(7999, 1)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000805f3e80"))),
    ]),
    ("xzero_cut", &[("48594c4c0100000000000000000000807f", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:16129"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(0, 1), (16000, 2)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080807e7e8440"))),
        (Cmd::Add(&[(16128, 1)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000807eff"))),
        (Cmd::Add(&[(5, 40)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(5, 1)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008004807e"))),
        (Cmd::Add(&[(16128, 1), (3, 3)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008002887efb"))),
    ]),
    ("xzero_cut_one", &[("48594c4c01000000000000000000008040", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:1"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(0, 2)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080"))),
        (Cmd::Add(&[(0, 2), (1, 1)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), Some(Hex("48594c4c010000000000000000000080"))),
    ]),
    ("zeros64", &[("48594c4c010000000000000000000080", 1), ("3f", 256)], &[
        (Cmd::Count, R::Int(0), Some(Hex("48594c4c0100000000000000000000003f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"))),
        (Cmd::Decode, R::TextFnv(1279, 0x7bf8da38d7862be7), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0xed2b8f67626cc41a))),
        (Cmd::GetReg, R::Regs(0x9c1bda7f8c872325), Some(Fnv(12304, 0xed2b8f67626cc41a))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c0100000000000000000000807fff"))),
        (Cmd::Union, R::Int(3), None),
        (Cmd::Add(&[(0, 1)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080803e3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"))),
        (Cmd::Add(&[(63, 2)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000803e843f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"))),
        (Cmd::Add(&[(64, 3), (65, 3), (66, 3), (67, 3), (68, 3)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000803f8b883a3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f"))),
        (Cmd::Add(&[(100, 33)]), R::Int(1), Some(Fnv(12304, 0xfce7b44121ffaf1d))),
    ]),
    ("val_run4", &[("48594c4c01000000000000000000008040638b7f97", 1)], &[
        (Cmd::Count, R::Int(4), Some(Hex("48594c4c01000000040000000000000040638b7f97"))),
        (Cmd::Decode, R::Text("Z:100 v:3,4 Z:16280"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0x0bc6e742c63dca93))),
        (Cmd::GetReg, R::Regs(0x706d4d5752b06e29), Some(Fnv(12304, 0x0bc6e742c63dca93))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c01000000000000000000008040638b7f97"))),
        (Cmd::Union, R::Int(7), None),
        (Cmd::Add(&[(101, 5)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008040638890897f97"))),
        (Cmd::Add(&[(100, 3)]), R::Int(0), None),
        (Cmd::Add(&[(103, 4)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008040638a8c7f97"))),
        (Cmd::Add(&[(99, 3), (104, 3)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000804062888b887f96"))),
    ]),
    ("val_run2", &[("48594c4c0100000000000000000000804063897f99", 1)], &[
        (Cmd::Count, R::Int(2), Some(Hex("48594c4c0100000002000000000000004063897f99"))),
        (Cmd::Decode, R::Text("Z:100 v:3,2 Z:16282"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0x407c079980eda7b7))),
        (Cmd::GetReg, R::Regs(0xcd83ebb76155074b), Some(Fnv(12304, 0x407c079980eda7b7))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c0100000000000000000000804063897f99"))),
        (Cmd::Union, R::Int(5), None),
        (Cmd::Add(&[(99, 3)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008040628a7f99"))),
        (Cmd::Add(&[(102, 3)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008040638a7f98"))),
        (Cmd::Add(&[(99, 3), (102, 3)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008040628b7f98"))),
    ]),
    ("odd_header", &[("48594c4c0101020301020304050607087fff", 1)], &[
        (Cmd::Count, R::Int(578437695752307201), None),
        (Cmd::Decode, R::Text("Z:16384"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0x94d56eb95dbc4d3a))),
        (Cmd::GetReg, R::Regs(0x9c1bda7f8c872325), Some(Fnv(12304, 0x94d56eb95dbc4d3a))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c0100000000000000000000807fff"))),
        (Cmd::Union, R::Int(3), None),
        (Cmd::Add(&[(7, 7)]), R::Int(1), Some(Hex("48594c4c01010203010203040506078806987ff7"))),
        (Cmd::Add(&[(7, 40)]), R::Int(1), Some(Fnv(12304, 0x4ffe54ee28f2e4da))),
    ]),
    ("dense_63", &[("48594c4c000000000000000000000080", 1), ("ff", 12288)], &[
        (Cmd::Count, R::Int(-9223372036854775808), None),
        (Cmd::Decode, R::Err("ERR HLL encoding is not sparse"), None),
        (Cmd::Encoding, R::Text("dense"), None),
        (Cmd::ToDense, R::Int(0), None),
        (Cmd::GetReg, R::Regs(0xd5c4c09511f96325), None),
        (Cmd::MergeNew, R::Text("OK"), Some(Fnv(12304, 0x8d95a60fca2b941a))),
        (Cmd::Union, R::Int(-9223372036854775808), None),
        (Cmd::Add(&[(0, 1)]), R::Int(0), None),
    ]),
    ("dense_51", &[("48594c4c000000000000000000000080", 1), ("cd3c33", 4096)], &[
        (Cmd::Count, R::Int(129090167), Some(Fnv(12304, 0x30a6dc6c5e2aadf7))),
        (Cmd::Decode, R::Err("ERR HLL encoding is not sparse"), None),
        (Cmd::Encoding, R::Text("dense"), None),
        (Cmd::ToDense, R::Int(0), None),
        (Cmd::GetReg, R::Regs(0xc362f6c38bff0325), None),
        (Cmd::MergeNew, R::Text("OK"), Some(Fnv(12304, 0x13860d27b29c641a))),
        (Cmd::Union, R::Int(129090167), None),
    ]),
    ("extra_zero", &[("48594c4c0100000000000000000000807fff00", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:16384 z:1"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(16383, 1)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000807ffe8000"))),
        (Cmd::Add(&[(0, 50)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
    ]),
    ("all_ones", &[("48594c4c010000000000000000000080", 1), ("83", 4096)], &[
        (Cmd::Count, R::Int(23637), Some(Fnv(4112, 0x8245689dc5ca8ea2))),
        (Cmd::Decode, R::TextFnv(24575, 0xc685eb72149c0be7), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0xc0aedd4c7afef41a))),
        (Cmd::GetReg, R::Regs(0x6908de04ffef6325), Some(Fnv(12304, 0xc0aedd4c7afef41a))),
        (Cmd::MergeNew, R::Text("OK"), Some(Fnv(12304, 0xc0aedd4c7afef41a))),
        (Cmd::Union, R::Int(23638), None),
        (Cmd::Add(&[(5, 2)]), R::Int(1), Some(Fnv(12304, 0x5b9e3a03b117f6da))),
        (Cmd::Add(&[(5, 1)]), R::Int(0), None),
    ]),
    ("val_overflow", &[("48594c4c0100000000000000000000807ffe83", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text("Z:16383 v:1,4"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(16383, 2)]), R::Int(1), Some(Hex("48594c4c0100000000000000000000807ffe8482"))),
        (Cmd::Add(&[(3, 2)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008002847ffa83"))),
        (Cmd::Add(&[(3, 35)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
    ]),
    ("header_only", &[("48594c4c010000000000000000000080", 1)], &[
        (Cmd::Count, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Decode, R::Text(""), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::GetReg, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::MergeNew, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Union, R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
        (Cmd::Add(&[(0, 1)]), R::Err("INVALIDOBJ Corrupted HLL object detected"), None),
    ]),
    ("too_short", &[("48594c4c01", 1)], &[
        (Cmd::Count, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Decode, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Encoding, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::ToDense, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::GetReg, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::MergeNew, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Union, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
    ]),
    ("dense_short", &[("48594c4c000000000000000000000080", 1), ("00", 12287)], &[
        (Cmd::Count, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Decode, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Encoding, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::ToDense, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::GetReg, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::MergeNew, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Union, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
    ]),
    ("bad_encoding", &[("48594c4c0200000000000000000000007fff", 1)], &[
        (Cmd::Count, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Decode, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Encoding, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::ToDense, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::GetReg, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::MergeNew, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Union, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
    ]),
    ("bad_magic", &[("48594c4d0100000000000000000000007fff", 1)], &[
        (Cmd::Count, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Decode, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Encoding, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::ToDense, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::GetReg, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::MergeNew, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
        (Cmd::Union, R::Err("WRONGTYPE Key is not a valid HyperLogLog string value."), None),
    ]),
    ("dense_cached", &[("48594c4c000000002a00000000000000", 1), ("00", 12288)], &[
        (Cmd::Count, R::Int(42), None),
        (Cmd::Decode, R::Err("ERR HLL encoding is not sparse"), None),
        (Cmd::Encoding, R::Text("dense"), None),
        (Cmd::ToDense, R::Int(0), None),
        (Cmd::GetReg, R::Regs(0x9c1bda7f8c872325), None),
        (Cmd::MergeNew, R::Text("OK"), Some(Fnv(12304, 0xed2b8f67626cc41a))),
        (Cmd::Union, R::Int(3), None),
        (Cmd::Add(&[(0, 1)]), R::Int(1), Some(Fnv(12304, 0x6bad92d9616e62f1))),
        (Cmd::Add(&[]), R::Int(0), None),
    ]),
    ("zero_then_val", &[("48594c4c01000000000000000000008000fc7ffd", 1)], &[
        (Cmd::Count, R::Int(1), Some(Hex("48594c4c01000000010000000000000000fc7ffd"))),
        (Cmd::Decode, R::Text("z:1 v:32,1 Z:16382"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0xd6f2f42a11561842))),
        (Cmd::GetReg, R::Regs(0xc8d5e96092b9d285), Some(Fnv(12304, 0xd6f2f42a11561842))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c01000000000000000000008000fc7ffd"))),
        (Cmd::Union, R::Int(4), None),
        (Cmd::Add(&[(0, 32)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080fd7ffd"))),
        (Cmd::Add(&[(0, 31)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080f8fc7ffd"))),
        (Cmd::Add(&[(2, 32)]), R::Int(1), Some(Hex("48594c4c01000000000000000000008000fd7ffc"))),
    ]),
    ("val_xzero_tail", &[("48594c4c010000000000000000000080847ffe", 1)], &[
        (Cmd::Count, R::Int(1), Some(Hex("48594c4c010000000100000000000000847ffe"))),
        (Cmd::Decode, R::Text("v:2,1 Z:16383"), None),
        (Cmd::Encoding, R::Text("sparse"), None),
        (Cmd::ToDense, R::Int(1), Some(Fnv(12304, 0x36f4a71b300b4418))),
        (Cmd::GetReg, R::Regs(0x5f49450565092327), Some(Fnv(12304, 0x36f4a71b300b4418))),
        (Cmd::MergeNew, R::Text("OK"), Some(Hex("48594c4c010000000000000000000080847ffe"))),
        (Cmd::Union, R::Int(4), None),
        (Cmd::Add(&[(1, 2)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080857ffd"))),
        (Cmd::Add(&[(16383, 2)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080847ffd84"))),
        (Cmd::Add(&[(0, 3)]), R::Int(1), Some(Hex("48594c4c010000000000000000000080887ffe"))),
    ]),
];
/// Random runs of PFADD and PFCOUNT (see [`Run`]).
#[rustfmt::skip]
pub(super) const RUNS: &[Run] = &[
    (3000, &[(5, false), (1, false), (1, false), (1, false), (1, true), (5, false), (1, true), (5, true), (20, true), (1, false), (20, false)], 40, 193, 0xc540622534ae9892),
    (3000, &[(1, true), (400, true)], 404, 893, 0xa6962742c5f2ca21),
    (3000, &[(20, true), (2, false), (100, true)], 122, 344, 0x59c77aeb547f4b2a),
    (500, &[(1, false), (1, false), (20, true), (100, false), (400, false)], 22, 12304, 0xbab19ae2f9371d6f),
    (6000, &[(2, true), (1, false), (1, true), (2, false), (2, false), (2, false), (1, true), (5, true), (2, true), (5, false), (100, true), (20, false), (400, false)], 122, 1125, 0x6b149e783fd39f90),
    (3000, &[(5, false), (5, true), (1, false), (5, false), (1, true), (100, false), (20, false), (400, false), (100, false), (100, false), (5, false), (20, true), (1, true), (2, true), (1, false), (400, false), (1, false), (20, true), (1, false), (400, false), (100, false), (2, false), (5, false), (1, true), (1, true), (1, true), (400, false), (2, true), (1, false), (2, false), (2, false), (100, false), (20, false), (100, true), (400, false)], 2322, 12304, 0xafa94c096bf579d4),
    (3000, &[(5, false), (5, false), (1, true), (1, false), (1, false), (1, true), (20, true), (1, false), (20, true), (400, true), (5, true), (2, false), (20, false), (1, true), (5, false), (5, false), (2, true), (1, false), (100, true), (400, false), (20, true)], 1012, 1913, 0x2372c007457e33ac),
    (3000, &[(100, false)], 0, 284, 0x3612803d4c9883a7),
    (30, &[(2, false), (400, true), (400, true), (2, false), (2, false), (20, false), (20, false), (1, false), (400, false), (400, true), (1, false), (100, false), (1, false), (2, false), (1, false), (5, true), (100, false), (2, false), (100, false), (2, true), (1, true), (1, false), (5, false), (20, false), (5, false), (2, false), (1, false), (1, false), (400, false), (1, false), (1, false), (100, false), (400, false)], 1936, 12304, 0x255676cd2253620b),
    (3000, &[(5, false), (1, false), (1, false), (1, true), (5, false), (1, false), (20, false), (100, false), (1, false), (1, true), (400, false), (100, true), (100, false), (5, false), (1, false), (1, true), (1, true), (1, false), (2, true), (5, false), (1, false), (2, false), (100, false), (20, false), (20, true), (1, false), (1, false), (400, true)], 1305, 2404, 0x8b87f1cfb4a1ebe5),
    (30, &[(1, true), (20, false), (20, true), (100, false)], 41, 12304, 0xf97d2c4816e296b8),
    (6000, &[(20, true)], 20, 77, 0x02493125fc4bf47c),
    (500, &[(1, false), (20, false), (1, false), (1, false), (20, false), (20, false), (100, true), (20, false), (5, false), (1, false), (2, false), (1, false), (1, false), (5, false), (1, false), (5, true), (100, false)], 201, 12304, 0xe9795f2f119e616f),
    (64, &[(100, false)], 0, 12304, 0x7f113a71c14ee11f),
    (3000, &[(2, false), (5, true), (1, false), (5, true), (100, false)], 13, 319, 0x8d2ef27aa75ff072),
    (200, &[(5, false), (5, false), (1, false), (1, false), (1, false), (5, false), (1, false), (20, false), (20, false), (1, false), (400, true), (1, true), (2, true), (400, true), (400, true), (5, false), (100, false), (2, false), (20, false), (20, false), (2, true), (1, false), (1, false), (1, true), (1, false), (400, true), (20, false), (1, true), (1, false), (2, false), (5, false), (2, false), (1, false), (1, false), (1, true), (1, true), (2, false), (20, false), (2, false), (100, true), (2, false), (2, true), (1, false), (20, false), (20, false), (5, true), (400, false), (100, false), (400, false), (20, false), (1, false), (2, true), (100, false), (1, false), (2, false), (400, true), (1, false), (2, false), (1, true), (400, false), (20, false), (2, false), (100, true), (5, true), (2, false), (2, false), (2, false), (20, false)], 3982, 12304, 0x969b533ac6a0103e),
    (30, &[(1, false), (1, false), (1, false), (20, false), (1, false), (1, true), (400, true)], 425, 12304, 0x27f03c760d5959b1),
    (3000, &[(1, false), (2, false), (1, true), (20, false), (1, false), (100, false), (20, false), (2, false), (5, true), (100, false), (1, true), (400, false), (20, false), (100, false), (20, true), (20, false), (20, false), (400, true), (100, false), (100, false), (100, false), (1, true), (1, false), (1, false), (5, false), (100, true), (20, false), (5, true), (5, false), (100, false), (20, true), (20, true), (100, false), (400, true), (2, true), (400, true)], 2729, 12304, 0xe1d05e26a0739fc0),
    (6000, &[(400, false), (5, false), (2, false), (20, false), (1, true), (1, false), (100, false), (2, false), (1, true), (1, false), (100, true), (1, false), (2, false), (2, false), (5, false), (20, true), (1, false), (1, true), (1, false), (5, false), (5, true), (1, true), (1, true), (20, true), (2, true), (400, false)], 696, 2053, 0x22a0f32192e9d31d),
    (1000, &[(100, false)], 0, 283, 0x50b89335a3774067),
    (6000, &[(5, true), (1, false), (100, false), (2, false), (5, false), (2, true), (2, true), (400, false), (5, true), (1, false), (100, true), (2, true), (5, false), (20, true), (5, false), (400, true)], 1051, 1991, 0x6b5e4dd701907850),
    (64, &[(400, false)], 0, 12304, 0xb0c774ca58dfe975),
    (200, &[(2, false), (2, true), (2, false), (5, false), (400, false)], 4, 12304, 0x235744538d8725e0),
    (3000, &[(20, true), (1, true), (100, false), (20, false), (100, false), (5, true), (20, true), (5, false), (2, true), (100, false), (100, true), (100, true), (5, false), (5, true), (100, true), (1, false), (400, false), (1, false), (2, false), (5, false), (20, true), (1, true), (20, true), (1, false), (400, false), (1, false), (5, false), (100, false), (5, true), (400, true), (2, false), (2, true), (20, false), (400, false), (1, true), (1, false), (100, false)], 2460, 12304, 0xf3551e11c6d687c2),
];
/// Random PFMERGEs over the runs' values (see [`RunMerge`]).
#[rustfmt::skip]
pub(super) const RUN_MERGES: &[RunMerge] = &[
    (1000, None, &[1], 893, 0x86c323c146b97e90),
    (3000, Some(21), &[18, 15], 12304, 0x846b751ef8cfe33f),
    (30, Some(1), &[16, 14], 12304, 0x7fe9c0777d932d2e),
    (3000, Some(6), &[], 1913, 0x328db2ec5994e52c),
    (200, Some(3), &[16], 12304, 0x57f30699e08a939b),
    (10000, Some(2), &[2, 17], 12304, 0xfd1abb819e3c7991),
    (30, None, &[7], 12304, 0xe7b6d83ee08789bb),
    (3000, Some(0), &[4], 1231, 0x14c44398090d9935),
    (10000, Some(7), &[20, 13, 22], 12304, 0xd129c17641807eb6),
    (30, Some(2), &[], 344, 0xbb17f771a81deeaa),
    (1000, Some(15), &[6, 12, 8], 12304, 0xcceb2d558fcf52fc),
    (200, Some(18), &[], 2053, 0x22a0f32192e9d31d),
    (30, Some(16), &[14], 12304, 0xdaaca2be341a010a),
    (1000, Some(9), &[15], 12304, 0x45ac49f9c319bf82),
    (3000, Some(6), &[7, 0, 13], 12304, 0xc671128e9002713a),
    (10000, Some(19), &[1], 1058, 0xedbda72c09b7a405),
    (30, Some(5), &[21, 20], 12304, 0x592e2e746d781258),
    (3000, Some(1), &[7], 1060, 0xb325688bc43e06e9),
    (10000, Some(12), &[7], 12304, 0x493b53b5c8d858bf),
    (3000, Some(0), &[22], 12304, 0x7def9f5385a7f80b),
    (3000, Some(10), &[6, 0], 12304, 0xa3ed74f00d85d030),
    (1000, Some(22), &[2, 6, 15], 12304, 0xbfeb79ba9fa94a8a),
    (200, Some(8), &[7], 12304, 0xda7affaa15f9596a),
    (3000, Some(6), &[9], 12304, 0xa69b428548a242fe),
    (30, Some(18), &[19, 5], 12304, 0x803011871ef7ad0d),
    (200, Some(14), &[21, 1], 12304, 0x96b7a713b1655a2c),
    (3000, Some(3), &[1, 6], 12304, 0x931664ea81d5c5ef),
    (30, Some(18), &[13], 12304, 0x7c47f1d2345f2ded),
    (30, Some(21), &[], 12304, 0xb0c774ca58dfe975),
    (200, Some(11), &[22, 10], 12304, 0xd71bb21803fd60ac),
];

/// The elements `e{i}` for every i below a million, a thousand per PFADD: (PFCOUNT, the value after it, length and FNV-1a).
pub(super) const MILLION: (i64, usize, u64) = (991657, 12304, 0x26781802e035ca9b);
