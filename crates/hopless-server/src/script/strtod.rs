//! Numbers as C's `strtod` reads them (glibc's forms), for the Lua libraries that read numbers with it:
//! an optional sign, then a decimal number with an optional exponent, `0x` hexadecimal with an
//! optional fraction and binary exponent, `inf`/`infinity` or `nan`/`nan(chars)` in any case.

/// The number at the start of `s` and how many bytes it takes, or `None` where `strtod` converts
/// nothing. Like `strtod`, it takes the longest prefix that is a number (`1.5e` is `1.5`, `0xg` is `0`).
pub(super) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (neg, sign) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let rest = &s[sign..];
    let (v, len) = if starts_with_ci(rest, b"inf") {
        let len = if starts_with_ci(rest, b"infinity") { 8 } else { 3 };
        (f64::INFINITY, len)
    } else if starts_with_ci(rest, b"nan") {
        (f64::NAN, 3 + nan_payload(&rest[3..]))
    } else if rest.len() >= 2 && rest[0] == b'0' && rest[1] | 0x20 == b'x' {
        // Without a hexadecimal digit after it, `0x` is the number 0 followed by `x`.
        hexadecimal(&rest[2..]).map_or((0.0, 1), |(v, len)| (v, 2 + len))
    } else {
        decimal(rest)?
    };
    Some((if neg { -v } else { v }, sign + len))
}

fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

/// The length of `(chars)` after `nan`, where it is closed: 0 otherwise.
fn nan_payload(s: &[u8]) -> usize {
    if s.first() != Some(&b'(') {
        return 0;
    }
    let inner = s[1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    if s.get(1 + inner) == Some(&b')') {
        inner + 2
    } else {
        0
    }
}

fn digits_from(s: &[u8], mut i: usize, digit: impl Fn(&u8) -> bool) -> usize {
    while s.get(i).is_some_and(&digit) {
        i += 1;
    }
    i
}

/// An exponent (`e`/`p`, a sign, digits) at `at`: its value and where it ends, when digits follow.
fn exponent(s: &[u8], at: usize, mark: u8) -> Option<(i32, usize)> {
    if s.get(at).map(|c| c | 0x20) != Some(mark) {
        return None;
    }
    let mut i = at + 1;
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let end = digits_from(s, i, u8::is_ascii_digit);
    if end == i {
        return None;
    }
    // Past any double's range either way; saturating keeps the sign.
    let e = s[i..end].iter().fold(0i32, |e, d| {
        e.saturating_mul(10).saturating_add(i32::from(d - b'0'))
    });
    Some((if neg { -e } else { e }, end))
}

fn decimal(s: &[u8]) -> Option<(f64, usize)> {
    let int_end = digits_from(s, 0, u8::is_ascii_digit);
    let mut end = int_end;
    if s.get(end) == Some(&b'.') {
        let frac_end = digits_from(s, end + 1, u8::is_ascii_digit);
        if int_end > 0 || frac_end > end + 1 {
            end = frac_end;
        }
    }
    if end == 0 {
        return None;
    }
    if let Some((_, e_end)) = exponent(s, end, b'e') {
        end = e_end;
    }
    let v = std::str::from_utf8(&s[..end]).ok()?.parse().ok()?;
    Some((v, end))
}

/// Hexadecimal digits with an optional fraction and `p` exponent (after the `0x`).
fn hexadecimal(s: &[u8]) -> Option<(f64, usize)> {
    let hex = |c: &u8| c.is_ascii_hexdigit();
    let int_end = digits_from(s, 0, hex);
    let mut end = int_end;
    let mut frac_digits = 0;
    if s.get(end) == Some(&b'.') {
        let frac_end = digits_from(s, end + 1, hex);
        if int_end > 0 || frac_end > end + 1 {
            frac_digits = frac_end - end - 1;
            end = frac_end;
        }
    }
    if end == 0 {
        return None;
    }
    let mut mantissa = 0.0f64;
    for c in s[..end].iter().filter(|c| **c != b'.') {
        mantissa = mantissa * 16.0 + f64::from((*c as char).to_digit(16)?);
    }
    let mut exp = -4 * frac_digits as i32;
    if let Some((e, e_end)) = exponent(s, end, b'p') {
        exp = exp.saturating_add(e);
        end = e_end;
    }
    Some((mantissa * 2f64.powi(exp), end))
}

#[cfg(test)]
mod tests {
    use super::strtod;

    fn read(s: &str) -> Option<(f64, usize)> {
        strtod(s.as_bytes())
    }

    #[test]
    fn decimal_forms_take_the_longest_number() {
        assert_eq!(read("12]"), Some((12.0, 2)));
        assert_eq!(read("-0.5e2,"), Some((-50.0, 6)));
        assert_eq!(read("+5"), Some((5.0, 2)));
        assert_eq!(read("007"), Some((7.0, 3)));
        assert_eq!(read("1."), Some((1.0, 2)));
        assert_eq!(read("-.5"), Some((-0.5, 3)));
        assert_eq!(read("1.5e]"), Some((1.5, 3)));
        assert_eq!(read("1e+]"), Some((1.0, 1)));
        assert_eq!(read("1e400"), Some((f64::INFINITY, 5)));
    }

    #[test]
    fn hexadecimal_infinity_and_nan() {
        assert_eq!(read("0x10"), Some((16.0, 4)));
        assert_eq!(read("-0X1F"), Some((-31.0, 5)));
        assert_eq!(read("0x1.8"), Some((1.5, 5)));
        assert_eq!(read("0x1p4"), Some((16.0, 5)));
        assert_eq!(read("0xg"), Some((0.0, 1)));
        assert_eq!(read("0x10p"), Some((16.0, 4)));
        assert_eq!(read("Infinity"), Some((f64::INFINITY, 8)));
        assert_eq!(read("-inf"), Some((f64::NEG_INFINITY, 4)));
        assert_eq!(read("Infinit"), Some((f64::INFINITY, 3)));
        let (n, len) = read("nan(123)").unwrap();
        assert!(n.is_nan() && len == 8);
        let (n, len) = read("NAN(x").unwrap();
        assert!(n.is_nan() && len == 3);
    }

    #[test]
    fn nothing_to_convert() {
        for s in ["", "-", "+", ".", "-x", ".e5", "x1", " 1"] {
            assert_eq!(read(s), None, "{s:?}");
        }
    }
}
