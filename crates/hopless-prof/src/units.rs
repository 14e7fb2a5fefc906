//! Values as a person reads them: bytes in KiB, MiB and GiB with one decimal, counts as integers.

/// `value` in `unit`: bytes human-readable, anything else as an integer.
pub fn value(value: i64, unit: &str) -> String {
    if unit != "bytes" {
        return value.to_string();
    }
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if value.abs() < 1024 {
        return format!("{value} B");
    }
    let mut v = value as f64 / 1024.0;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// `part` as a percentage of `whole`, one decimal; 0% of nothing.
pub fn percent(part: i64, whole: i64) -> String {
    if whole == 0 {
        return "0.0%".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_human_readable_and_counts_integers() {
        assert_eq!(value(512, "bytes"), "512 B");
        assert_eq!(value(1536, "bytes"), "1.5 KiB");
        assert_eq!(value(10 << 20, "bytes"), "10.0 MiB");
        assert_eq!(value(3 << 30, "bytes"), "3.0 GiB");
        assert_eq!(value(123_456, "count"), "123456");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(1, 0), "0.0%");
    }
}
