//! CLUSTER, as Redis 7.0 answers it with `cluster-enabled no`: each subcommand checks its arguments,
//! then says cluster support is disabled. A script calling it meets Redis's subcommand rules too:
//! CLUSTER RESET is refused (`noscript`), an unknown subcommand is an unknown command.

use bytes::Bytes;

use super::command::{subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("cluster", -2, "", cluster)
        .subs(&["addslots", "addslotsrange", "bumpepoch", "count-failure-reports", "countkeysinslot",
            "delslots", "delslotsrange", "failover", "flushslots", "forget", "getkeysinslot", "help", "info",
            "keyslot", "links", "meet", "myid", "nodes", "replicas", "replicate", "reset", "saveconfig",
            "set-config-epoch", "setslot", "shards", "slaves", "slots"])
        .script_refusal(script_refusal),
];

/// Each subcommand's arity (Redis's: negative for "at least") and whether a script may call it.
const SUBS: &[(&str, i32, bool)] = &[
    ("addslots", -3, true),
    ("addslotsrange", -4, true),
    ("bumpepoch", 2, true),
    ("count-failure-reports", 3, true),
    ("countkeysinslot", 3, true),
    ("delslots", -3, true),
    ("delslotsrange", -4, true),
    ("failover", -2, true),
    ("flushslots", 2, true),
    ("forget", 3, true),
    ("getkeysinslot", 4, true),
    ("help", 2, true),
    ("info", 2, true),
    ("keyslot", 3, true),
    ("links", 2, true),
    ("meet", -4, true),
    ("myid", 2, true),
    ("nodes", 2, true),
    ("replicas", 3, true),
    ("replicate", 3, true),
    ("reset", -2, false),
    ("saveconfig", 2, true),
    ("set-config-epoch", 3, true),
    ("setslot", -4, true),
    ("shards", 2, true),
    ("slaves", 3, true),
    ("slots", 2, true),
];

const DISABLED: CmdError = CmdError::Static("ERR This instance has cluster support disabled");

/// A subcommand's arity and script permission, by its name in any case.
fn find(sub: &str) -> Option<(i32, bool)> {
    SUBS.iter()
        .find(|(name, ..)| *name == sub)
        .map(|&(_, arity, script)| (arity, script))
}

fn arity_allows(arity: i32, n: usize) -> bool {
    let n = n as i32;
    if arity < 0 {
        n >= -arity
    } else {
        n == arity
    }
}

fn cluster(_c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match find(&sub) {
        None => Err(unknown_sub("cluster", &a[1])),
        Some((arity, _)) if !arity_allows(arity, a.len()) => Err(wrong_sub_args("cluster", &a[1])),
        Some(_) => Err(DISABLED),
    }
}

/// Why a script may not call CLUSTER with `args`, in the words Redis's script call uses: an unknown
/// subcommand, the wrong number of arguments, or a subcommand scripts may not run.
fn script_refusal(args: &[Bytes]) -> Option<&'static str> {
    match find(&subcommand(args)) {
        None => Some("Unknown Redis command called from script"),
        Some((arity, _)) if !arity_allows(arity, args.len()) => {
            Some("Wrong number of args calling Redis command from script")
        }
        Some((_, false)) => Some("This Redis command is not allowed from script"),
        Some(_) => None,
    }
}
