//! Passwords in a command's arguments, as Redis redacts them (`redactClientCommandArgument`) before
//! MONITOR shows a command or SLOWLOG keeps it: every argument of AUTH, the user name and password after
//! HELLO's AUTH, MIGRATE's AUTH and AUTH2 values, the value of CONFIG SET `requirepass` (and
//! `masterauth`).

use bytes::Bytes;

/// What a hidden argument reads as.
const REDACTED: Bytes = Bytes::from_static(b"(redacted)");

/// `args` with the passwords in it (AUTH's arguments, HELLO's AUTH pair, CONFIG SET's `requirepass`
/// value) replaced by `(redacted)`; None when there is nothing to hide.
pub fn redacted(args: &[Bytes]) -> Option<Vec<Bytes>> {
    let is = |b: &Bytes, w: &str| b.eq_ignore_ascii_case(w.as_bytes());
    let name = args.first()?;
    let hide: Vec<usize> = if is(name, "auth") {
        (1..args.len()).collect()
    } else if is(name, "hello") {
        // HELLO [protover [AUTH username password] [SETNAME clientname]]
        let mut at = Vec::new();
        let mut j = 2;
        while j < args.len() {
            if is(&args[j], "auth") && j + 2 < args.len() {
                at.extend([j + 1, j + 2]);
                j += 3;
            } else {
                j += if is(&args[j], "setname") { 2 } else { 1 };
            }
        }
        at
    } else if is(name, "migrate") {
        // MIGRATE ... [AUTH password] [AUTH2 username password] [KEYS key ...]
        let mut at = Vec::new();
        let mut j = 6;
        while j < args.len() && !is(&args[j], "keys") {
            if is(&args[j], "auth") && j + 1 < args.len() {
                at.push(j + 1);
                j += 1;
            } else if is(&args[j], "auth2") && j + 2 < args.len() {
                at.extend([j + 1, j + 2]);
                j += 2;
            }
            j += 1;
        }
        at
    } else if is(name, "config") && args.get(1).is_some_and(|s| is(s, "set")) {
        (2..args.len())
            .step_by(2)
            .filter(|&j| is(&args[j], "requirepass") || is(&args[j], "masterauth"))
            .map(|j| j + 1)
            .filter(|&j| j < args.len())
            .collect()
    } else {
        Vec::new()
    };
    (!hide.is_empty()).then(|| {
        let mut out = args.to_vec();
        for j in hide {
            out[j] = REDACTED;
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn passwords_are_redacted() {
        let r = |w: &[&str]| {
            redacted(&args(w)).map(|v| {
                v.iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        };
        assert_eq!(r(&["AUTH", "pw"]).as_deref(), Some("AUTH (redacted)"));
        assert_eq!(
            r(&["auth", "user", "pw"]).as_deref(),
            Some("auth (redacted) (redacted)")
        );
        assert_eq!(
            r(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]).as_deref(),
            Some("HELLO 3 AUTH (redacted) (redacted) SETNAME n")
        );
        assert_eq!(
            r(&["config", "set", "maxmemory", "1mb", "requirepass", "x"]).as_deref(),
            Some("config set maxmemory 1mb requirepass (redacted)")
        );
        assert_eq!(r(&["HELLO", "3"]), None);
        assert_eq!(r(&["config", "get", "requirepass"]), None);
        assert_eq!(r(&["get", "auth"]), None);
    }
}
