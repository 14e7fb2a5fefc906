//! MONITOR: the connection is sent a line for every command any client runs from now on (the lines
//! and who gets them: `crate::monitor`), until RESET or it goes.

use std::sync::Arc;

use bytes::Bytes;

use super::command::{Command, Ctx};
use crate::errors::{CmdError, CmdResult};

/// This family's rows of the command table.
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("monitor", 1, "admin noscript loading stale", monitor),
];

/// MONITOR: +OK, then the lines. Again from a monitor: nothing at all, as Redis ignores it. Inside a
/// transaction it cannot wait for lines, so EXEC gets Redis's error for it.
fn monitor(c: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    if c.in_exec {
        return Err(CmdError::Static(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if c.conn.monitor.is_some() {
        return Ok(());
    }
    let outbox = Arc::new(crate::pubsub::Outbox::default());
    c.shared.monitors.add(c.conn.id(), outbox.clone());
    c.conn.monitor = Some(outbox);
    c.out.ok();
    Ok(())
}
