//! `client-output-buffer-limit`: how much unsent output a client may have before it is disconnected, per
//! client class (normal, replica, pubsub), as CONFIG GET prints it and CONFIG SET parses it. Only the
//! pubsub class applies here (replies are written before the next request is read, and there are no
//! replicas); the other two are kept so that CONFIG reads back what was set, as Redis does.

use std::fmt;

use crate::words::parse_memory;

/// One class's limit: disconnect at `hard` bytes, or after `soft_secs` seconds over `soft` (0: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// Every class's limit, with Redis's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    pub normal: OutputLimit,
    pub replica: OutputLimit,
    pub pubsub: OutputLimit,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            normal: OutputLimit {
                hard: 0,
                soft: 0,
                soft_secs: 0,
            },
            replica: OutputLimit {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_secs: 60,
            },
            pubsub: OutputLimit {
                hard: 32 << 20,
                soft: 8 << 20,
                soft_secs: 60,
            },
        }
    }
}

/// CONFIG GET's text: `normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60`.
impl fmt::Display for OutputLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let classes = [
            ("normal", self.normal),
            ("slave", self.replica),
            ("pubsub", self.pubsub),
        ];
        for (i, (name, l)) in classes.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name} {} {} {}", l.hard, l.soft, l.soft_secs)?;
        }
        Ok(())
    }
}

impl OutputLimits {
    /// These limits with CONFIG SET's text applied: `<class> <hard> <soft> <soft seconds>`, repeated,
    /// words split on single spaces (Redis's `sdssplitlen`), all checked before any is applied. The error
    /// is Redis's reason, which CONFIG SET puts after its own prefix.
    pub fn with(mut self, text: &str) -> Result<OutputLimits, &'static str> {
        if text.is_empty() {
            return Ok(self);
        }
        let words: Vec<&str> = text.split(' ').collect();
        if words.len() % 4 != 0 {
            return Err("Wrong number of arguments in buffer limit configuration.");
        }
        for w in words.chunks_exact(4) {
            let class = match w[0].to_ascii_lowercase().as_str() {
                "normal" => &mut self.normal,
                "replica" | "slave" => &mut self.replica,
                "pubsub" => &mut self.pubsub,
                _ => return Err("Invalid client class specified in buffer limit configuration."),
            };
            let bad = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            let secs = w[3].parse::<i64>().ok().filter(|s| *s >= 0).ok_or(bad)?;
            *class = OutputLimit {
                hard: memory(w[1]).ok_or(bad)?,
                soft: memory(w[2]).ok_or(bad)?,
                soft_secs: secs as u64,
            };
        }
        Ok(self)
    }
}

/// A byte count as Redis's `memtoull` reads it: digits and a unit; a count past 2^64 saturates.
fn memory(s: &str) -> Option<u64> {
    let unit_at = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if unit_at == 0 {
        return None;
    }
    parse_memory(s).or_else(|| parse_memory(&format!("1{}", &s[unit_at..])).map(|_| u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_redis_and_reads_back() {
        let d = OutputLimits::default();
        assert_eq!(
            d.to_string(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let l = d.with("pubsub 1mb 512kb 10 REPLICA 1 2 3").unwrap();
        assert_eq!(l.to_string(), "normal 0 0 0 slave 1 2 3 pubsub 1048576 524288 10");
        assert_eq!(d.with("").unwrap(), d);
        assert_eq!(
            d.with("pubsub 99999999999999999999 1 1").unwrap().pubsub.hard,
            u64::MAX
        );
    }

    #[test]
    fn bad_text_changes_nothing() {
        let d = OutputLimits::default();
        for (text, why) in [
            ("pubsub 1 2", "Wrong number"),
            (" pubsub 7 8 9", "Wrong number"),
            ("foo 1 2 3", "Invalid client class"),
            ("pubsub 1 2 3 foo 1 2 3", "Invalid client class"),
            ("pubsub a 2 3", "Error in hard"),
            ("pubsub -1 2 3", "Error in hard"),
            ("pubsub 1 2 -1", "Error in hard"),
            ("pubsub 1.5 2 3", "Error in hard"),
        ] {
            assert!(d.with(text).unwrap_err().starts_with(why), "{text}");
        }
    }
}
