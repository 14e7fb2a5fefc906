//! The sorted sets family: no command yet.

use super::command::Command;

/// This family's rows of the command table, in COMMAND's order, one command a row.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
];
