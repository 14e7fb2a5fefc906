//! Redis's error replies: the error a command handler returns ([`CmdError`]), and every text that more
//! than one command sends, built here once (wrong number of arguments, unknown subcommand, invalid
//! expire time, unknown command...).

use std::borrow::Cow;

use bytes::Bytes;

/// A command's error reply.
#[derive(Debug)]
pub enum CmdError {
    Msg(String),
    Static(&'static str),
    Kv(hopless_kv::Error),
}

impl From<hopless_kv::Error> for CmdError {
    fn from(e: hopless_kv::Error) -> Self {
        CmdError::Kv(e)
    }
}

impl CmdError {
    /// The reply's text, for the command `name` (the store's errors do not know which command failed).
    pub fn into_text(self, name: &str) -> Cow<'static, str> {
        match self {
            CmdError::Msg(m) => m.into(),
            CmdError::Static(s) => s.into(),
            CmdError::Kv(hopless_kv::Error::InvalidExpire) => invalid_expire(name).into_text(name),
            CmdError::Kv(e) => e.to_string().into(),
        }
    }
}

pub type CmdResult = Result<(), CmdError>;

pub const NOT_INTEGER: CmdError = CmdError::Static("ERR value is not an integer or out of range");
pub const SYNTAX: CmdError = CmdError::Static("ERR syntax error");
pub const NOAUTH: &str = "NOAUTH Authentication required.";
/// A write refused while `min-replicas-to-write` asks for more replicas than are connected.
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to \
    persist to disk. Commands that may modify the data set are disabled, because this instance is \
    configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error \
    option). Please check the Redis logs for details about the RDB error.";
/// The answer to a command while a script has run past `busy-reply-threshold`.
pub const BUSY: CmdError = CmdError::Static(
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
);
/// [`BUSY`] while the busy script is a function (FCALL).
pub const BUSY_FUNCTION: CmdError = CmdError::Static(
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.",
);

/// Arity, checked before the command runs, or by a command whose arguments come in pairs or options.
pub fn wrong_args(name: &str) -> CmdError {
    CmdError::Msg(format!("ERR wrong number of arguments for '{name}' command"))
}

/// A container command's subcommand with the wrong arity: `'config|get'`.
pub fn wrong_sub_args(name: &str, sub: &[u8]) -> CmdError {
    wrong_args(&format!(
        "{name}|{}",
        String::from_utf8_lossy(sub).to_ascii_lowercase()
    ))
}

pub fn unknown_sub(name: &str, sub: &[u8]) -> CmdError {
    CmdError::Msg(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        name.to_ascii_uppercase()
    ))
}

/// A TTL that is not positive, or whose deadline overflows.
pub fn invalid_expire(name: &str) -> CmdError {
    CmdError::Msg(format!("ERR invalid expire time in '{name}' command"))
}

/// Redis's reply to an unknown command: the name (128 bytes at most), then the arguments quoted while
/// their text is under 128 bytes.
pub fn unknown_command(args: &[Bytes]) -> String {
    let show = |b: &[u8], max: usize| String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned();
    let mut rest = String::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push_str(&format!("'{}' ", show(a, room)));
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {rest}",
        show(&args[0], 128)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_reads_as_redis_prints_it() {
        let a: Vec<Bytes> = ["foo", "a", "b"]
            .iter()
            .map(|s| Bytes::from(s.to_string()))
            .collect();
        assert_eq!(
            unknown_command(&a),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let a = vec![Bytes::from("FOO")];
        assert_eq!(
            unknown_command(&a),
            "ERR unknown command 'FOO', with args beginning with: "
        );
        let mut a = vec![Bytes::from("foo")];
        a.extend((0..40).map(|_| Bytes::from("a")));
        assert_eq!(unknown_command(&a).matches("'a'").count(), 32);
    }
}
