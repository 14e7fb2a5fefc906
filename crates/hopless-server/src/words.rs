//! How Redis spells values in arguments, settings and replies: keywords compared without regard to case,
//! byte counts (`100mb` in, `1.50M` out), eviction policy names, yes and no.

use hopless_kv::Policy;

/// Case-insensitive ASCII compare of an argument with a lower-case word.
pub fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Case-insensitive compare of an argument with a lower-case word as C's `strcasecmp` makes it over
/// the argument's bytes: the argument ends at its first NUL (`"withdist\0x"` is `withdist`).
pub fn c_eq(arg: &[u8], word: &str) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(word.as_bytes())
}

/// Redis's `memtoull`: a byte count with an optional unit (`b`, `k`, `kb`, `m`, `mb`, `g`, `gb`; `k` is
/// 1000, `kb` 1024), case-insensitive.
pub fn parse_memory(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// A byte count for people, as Redis's `bytesToHuman` writes it (`1.50M`).
pub fn human(n: u64) -> String {
    let f = n as f64;
    match n {
        n if n < 1024 => format!("{n}B"),
        n if n < 1 << 20 => format!("{:.2}K", f / 1024.0),
        n if n < 1 << 30 => format!("{:.2}M", f / (1u64 << 20) as f64),
        n if n < 1 << 40 => format!("{:.2}G", f / (1u64 << 30) as f64),
        _ => format!("{:.2}T", f / (1u64 << 40) as f64),
    }
}

/// The policy names `maxmemory-policy` takes.
pub fn parse_policy(s: &str) -> Option<Policy> {
    match s.to_ascii_lowercase().as_str() {
        "noeviction" => Some(Policy::NoEviction),
        "allkeys-lru" => Some(Policy::SampledLru),
        _ => None,
    }
}

pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::NoEviction => "noeviction",
        Policy::SampledLru => "allkeys-lru",
    }
}

/// `yes` or `no`, any case.
pub fn parse_yes_no(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

pub fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units_follow_redis() {
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("2mb"), Some(2 << 20));
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("1x"), None);
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(human(1536), "1.50K");
    }
}
