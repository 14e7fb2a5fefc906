//! Two string helpers with Redis's exact rules: [`parse_i64`] (Redis's `string2ll`, for INCR and
//! friends) and [`glob_match`] (Redis's `stringmatchlen`, for SCAN's MATCH), the latter without its
//! exponential worst case.

/// Redis's `string2ll`: an optional '-', then digits with no leading zero (except "0"), within i64.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = (d - b'0') as i64;
        v = v.checked_mul(10)?;
        v = if neg { v.checked_sub(d)? } else { v.checked_add(d)? };
    }
    Some(v)
}

/// Whether `s` matches the Redis glob `p`, read as Redis's `stringmatchlen` reads it (case-sensitive):
///
/// - `*` matches any run of bytes (also none), `?` any one byte;
/// - `[abc]` one of the listed bytes, `[^abc]` any other byte, `[a-z]` a range (either order: `[z-a]` is
///   `[a-z]`), `\x` inside a class the byte `x`; a class runs to the first unescaped `]` after its
///   first member, or to the end of the pattern if there is none; `[]` matches nothing and `[^]` anything;
///   as in Redis, `x-]` is a range ending at `]` (so `[a-]` is `[]-a]`);
/// - `\x` outside a class matches `x`; a `\` that ends the pattern matches a `\`.
///
/// Where this differs from `stringmatchlen`, on purpose: a pattern of only `*`s matches the empty
/// string (Redis's loop never starts on an empty string, though its SCAN and KEYS treat a lone `*` as
/// "everything", empty key included); bytes compare unsigned (x86 Redis compares range bounds as signed
/// `char`s, so a range with one bound below 0x80 and one above differs there); and there is no limit on
/// the number of `*`s (Redis gives up past 1000 nested ones).
///
/// Cost: O(|p| · |s|) at worst. Every token but `*` matches exactly one byte, so only the last `*` seen
/// needs to be retried on a mismatch (with one more byte), never the earlier ones: each retry starts
/// one byte further into `s` and walks at most the pattern once. Redis's recursive matcher prunes most
/// of its backtracking the same way, but stays exponential in the number of `*`s on some patterns.
pub fn glob_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    // The last `*` seen: where the pattern resumes after it, and where in `s` its match now ends.
    let mut star: Option<(usize, usize)> = None;
    loop {
        count_step();
        if pi == p.len() {
            if si == s.len() {
                return true;
            }
        } else if p[pi] == b'*' {
            while pi < p.len() && p[pi] == b'*' {
                pi += 1;
            }
            if pi == p.len() {
                // A trailing `*` takes the rest.
                return true;
            }
            star = Some((pi, si));
            continue;
        } else {
            // Out of input with a byte still to match: a later start for the last `*` has less input.
            let Some(&c) = s.get(si) else {
                return false;
            };
            let (ok, next) = one(p, pi, c);
            if ok {
                pi = next;
                si += 1;
                continue;
            }
        }
        // Mismatch: the last `*` takes one more byte, and the pattern after it starts again there.
        match star {
            Some((resume, taken)) if taken < s.len() => {
                star = Some((resume, taken + 1));
                pi = resume;
                si = taken + 1;
            }
            _ => return false,
        }
    }
}

/// The one-byte token (not `*`) at `p[i..]` against `c`: whether it matches, and where the next token
/// starts.
fn one(p: &[u8], i: usize, c: u8) -> (bool, usize) {
    match p[i] {
        b'?' => (true, i + 1),
        b'[' => class(p, i + 1, c),
        b'\\' if i + 1 < p.len() => (p[i + 1] == c, i + 2),
        b => (b == c, i + 1),
    }
}

/// A `[...]` class whose body starts at `p[i..]` against `c`, members read in `stringmatchlen`'s order:
/// an escape, the closing `]`, a range, a single byte.
fn class(p: &[u8], mut i: usize, c: u8) -> (bool, usize) {
    let negate = p.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match p[i..] {
            // Unclosed: the class runs to the end of the pattern.
            [] => break,
            [b'\\', e, ..] => {
                matched |= e == c;
                i += 2;
            }
            [b']', ..] => {
                i += 1;
                break;
            }
            [a, b'-', b, ..] => {
                matched |= a.min(b) <= c && c <= a.max(b);
                i += 3;
            }
            [b, ..] => {
                matched |= b == c;
                i += 1;
            }
        }
    }
    (matched != negate, i)
}

#[cfg(test)]
std::thread_local! {
    /// Main-loop iterations of [`glob_match`] on this thread (tests bound its work with it).
    static STEPS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

#[inline(always)]
fn count_step() {
    #[cfg(test)]
    STEPS.with(|n| n.set(n.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::{glob_match, parse_i64, STEPS};

    /// Redis's `stringmatchlen_impl` (src/util.c, case-sensitive), transcribed with indices; a read past
    /// the pattern's end sees C's terminating NUL. The reference the matcher is compared with.
    fn redis(p: &[u8], s: &[u8]) -> bool {
        fn go(p: &[u8], mut pi: usize, s: &[u8], mut si: usize, skip: &mut bool, nesting: u32) -> bool {
            if nesting > 1000 {
                return false;
            }
            let at = |k: usize| p.get(k).copied().unwrap_or(0);
            while pi < p.len() && si < s.len() {
                match p[pi] {
                    b'*' => {
                        while pi < p.len() && at(pi + 1) == b'*' {
                            pi += 1;
                        }
                        if p.len() - pi == 1 {
                            return true;
                        }
                        while si < s.len() {
                            if go(p, pi + 1, s, si, skip, nesting + 1) {
                                return true;
                            }
                            if *skip {
                                return false;
                            }
                            si += 1;
                        }
                        *skip = true;
                        return false;
                    }
                    b'?' => si += 1,
                    b'[' => {
                        pi += 1;
                        let not = at(pi) == b'^';
                        if not {
                            pi += 1;
                        }
                        let mut m = false;
                        loop {
                            let left = p.len() - pi;
                            if at(pi) == b'\\' && left >= 2 {
                                pi += 1;
                                m |= p[pi] == s[si];
                            } else if at(pi) == b']' {
                                break;
                            } else if left == 0 {
                                pi -= 1;
                                break;
                            } else if left >= 3 && p[pi + 1] == b'-' {
                                let (a, b) = (p[pi].min(p[pi + 2]), p[pi].max(p[pi + 2]));
                                pi += 2;
                                m |= a <= s[si] && s[si] <= b;
                            } else {
                                m |= p[pi] == s[si];
                            }
                            pi += 1;
                        }
                        if not {
                            m = !m;
                        }
                        if !m {
                            return false;
                        }
                        si += 1;
                    }
                    b'\\' => {
                        if p.len() - pi >= 2 {
                            pi += 1;
                        }
                        if p[pi] != s[si] {
                            return false;
                        }
                        si += 1;
                    }
                    b => {
                        if b != s[si] {
                            return false;
                        }
                        si += 1;
                    }
                }
                pi += 1;
                if si == s.len() {
                    while at(pi) == b'*' {
                        pi += 1;
                    }
                    break;
                }
            }
            pi == p.len() && si == s.len()
        }
        go(p, 0, s, 0, &mut false, 0)
    }

    #[test]
    fn glob_syntax_follows_redis() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, bool)] = &[
            ("", "", true),
            ("", "a", false),
            ("*", "anything", true),
            ("*", "", true), // Redis's SCAN/KEYS special-case a lone `*`; see `glob_match`.
            ("**a", "a", true),
            ("h*llo", "hllo", true),
            ("h*llo", "heeeello", true),
            ("h*llo", "hello!", false),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("?", "", false),
            ("h[ae]llo", "hello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h[b-a]llo", "hallo", true), // reversed bounds are swapped
            ("[a-cx-z]", "y", true),
            ("[a-cx-z]", "d", false),
            ("[*]", "*", true),
            ("[*]", "a", false),
            ("[?]", "a", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("\\?", "?", true),
            ("\\?", "a", false),
            ("\\\\", "\\", true),
            ("\\", "\\", true), // a trailing backslash is a literal one
            ("a\\", "a\\", true),
            ("[\\]]", "]", true),
            ("[\\-a]", "-", true),
            ("[\\-a]", "b", false),
            ("[a\\-z]", "-", true),
            ("[a\\-z]", "m", false),
            ("[a-]", "^", true), // `a-]` is a range: ']' (0x5d) ..= 'a'
            ("[a-]", "-", false),
            ("[a-]b]", "bx", false),
            ("[a-]b]", "b", true),
            ("[abc", "b", true), // unclosed: the class runs to the end
            ("[abc", "bc", false),
            ("[", "[", false),
            ("[^", "x", true),
            ("[]", "]", false),
            ("[]]", "]", false),
            ("[^]]", "x]", true),
            ("[^]", "x", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("*.txt", "notes.txt", true),
            ("*.txt", "notes.txt.bak", false),
            ("user:*:name", "user:42:name", true),
        ];
        for &(p, s, want) in cases {
            assert_eq!(
                glob_match(p.as_bytes(), s.as_bytes()),
                want,
                "{p:?} against {s:?}"
            );
            if !s.is_empty() {
                assert_eq!(
                    redis(p.as_bytes(), s.as_bytes()),
                    want,
                    "Redis: {p:?} against {s:?}"
                );
            }
        }
    }

    #[test]
    fn glob_agrees_with_redis_on_random_patterns() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (pat, txt) = (b"ab*?[]^-\\", b"ab-]^\\*");
        for _ in 0..if cfg!(miri) { 300 } else { 300_000 } {
            let p: Vec<u8> = (0..next(9))
                .map(|_| pat[next(pat.len() as u64) as usize])
                .collect();
            let s: Vec<u8> = (0..next(8))
                .map(|_| txt[next(txt.len() as u64) as usize])
                .collect();
            let want = if s.is_empty() && !p.is_empty() && p.iter().all(|&b| b == b'*') {
                true // the one intended difference
            } else {
                redis(&p, &s)
            };
            let (ps, ss) = (String::from_utf8_lossy(&p), String::from_utf8_lossy(&s));
            assert_eq!(glob_match(&p, &s), want, "{ps:?} against {ss:?}");
        }
    }

    #[test]
    fn glob_takes_polynomial_time_on_many_stars() {
        let n = if cfg!(miri) { 500 } else { 10_000 };
        let s = vec![b'a'; n];
        for p in [
            &b"*a*a*a*a*a*a*a*a*a*a*b"[..],
            &b"*a*a*a*a*a*a*a*a*a*a*a"[..],
            &b"*?*?*?*?*?*?*?*?*?*?b"[..],
        ] {
            STEPS.with(|c| c.set(0));
            let want = p.ends_with(b"a");
            assert_eq!(glob_match(p, &s), want);
            let steps = STEPS.with(|c| c.get());
            let bound = ((n + 1) * (p.len() + 2)) as u64;
            assert!(
                steps <= bound,
                "{steps} steps for {} pattern bytes, {n} input bytes",
                p.len()
            );
        }
    }

    #[test]
    fn integers_parse_as_redis_string2ll_does() {
        for (s, want) in [
            ("0", Some(0)),
            ("1", Some(1)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("", None),
            ("-", None),
            ("-0", None),
            ("01", None),
            ("+1", None),
            (" 1", None),
            ("1 ", None),
            ("1.0", None),
            ("00000000000000000001", None),
            ("123456789012345678901", None),
        ] {
            assert_eq!(parse_i64(s.as_bytes()), want, "{s:?}");
        }
    }
}
