//! The script running now, as the other event loops see it: since when it runs (Redis's "busy" script
//! once that passes `busy-reply-threshold`), whether it wrote, and whether SCRIPT KILL asked it to
//! stop; and the function running, for FUNCTION STATS. Atomics, but for that record's mutex: the
//! script holds every gate and the script state's mutex while it runs.
//!
//! A busy script also lets its own event loop go ([`Running::check`]): Redis serves its other clients
//! from inside the script's hook, answering BUSY; here the loop's runtime moves to another thread
//! (tokio's `block_in_place`) while the script goes on on this one, so the connections that share the
//! script's loop get BUSY too, and SCRIPT KILL works from any connection.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::{Handle, RuntimeFlavor};

/// Redis's `busy-reply-threshold` (alias `lua-time-limit`) default, in milliseconds.
pub const DEFAULT_BUSY_MS: u64 = 5000;

/// How long a library's code may run while FUNCTION LOAD loads it (Redis's 500 ms).
pub const LOAD_TIMEOUT_MS: u64 = 500;

/// The error a script stops with when SCRIPT KILL (or FUNCTION KILL) asked it to.
pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

pub struct Running {
    epoch: Instant,
    /// Milliseconds since `epoch` plus one when the script started; 0 while none runs.
    started: AtomicU64,
    wrote: AtomicBool,
    /// The running script is a function (FCALL): FUNCTION KILL stops it, SCRIPT KILL does not.
    function: AtomicBool,
    kill: AtomicBool,
    busy_ms: AtomicU64,
    /// The running script let its event loop go ([`Running::check`]).
    let_go: AtomicBool,
    /// The function running now, as FUNCTION STATS reports it ([`Running::set_call`]).
    call: Mutex<Option<FunctionCall>>,
    /// While FUNCTION LOAD runs a library's code: milliseconds since `epoch` plus one when it must stop.
    load_until: AtomicU64,
}

/// A function called by FCALL, for FUNCTION STATS while it runs (its libraries' lock is held then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCall {
    pub name: Bytes,
    /// The FCALL request, whole.
    pub command: Vec<Bytes>,
    /// Libraries and functions loaded: they cannot change while the function runs.
    pub libraries: usize,
    pub functions: usize,
}

/// What SCRIPT KILL did.
#[derive(Debug, PartialEq, Eq)]
pub enum Kill {
    /// The script is asked to stop; it raises its error at its next check.
    Asked,
    /// No script runs.
    NotBusy,
    /// It wrote already: stopping it would leave half its writes (Redis refuses too).
    Unkillable,
    /// It is of the other kind (SCRIPT KILL of a function, FUNCTION KILL of EVAL's script).
    OtherKind,
}

impl Default for Running {
    fn default() -> Self {
        Running {
            epoch: Instant::now(),
            started: AtomicU64::new(0),
            wrote: AtomicBool::new(false),
            function: AtomicBool::new(false),
            kill: AtomicBool::new(false),
            busy_ms: AtomicU64::new(DEFAULT_BUSY_MS),
            let_go: AtomicBool::new(false),
            call: Mutex::new(None),
            load_until: AtomicU64::new(0),
        }
    }
}

impl Running {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// A script (or, `function`, a function) starts.
    pub fn start(&self, function: bool) {
        self.wrote.store(false, Ordering::Relaxed);
        self.function.store(function, Ordering::Relaxed);
        self.kill.store(false, Ordering::Relaxed);
        self.started.store(self.now_ms() + 1, Ordering::Release);
    }

    /// The script's periodic check (every so many Lua instructions): the error it must stop with, if
    /// SCRIPT KILL asked it to or a library's code ran out of FUNCTION LOAD's time; and once a script is
    /// busy, the first time, its event loop is let go (the module's docs).
    pub fn check(&self) -> Option<&'static str> {
        if self.killed() {
            return Some(KILLED);
        }
        let until = self.load_until.load(Ordering::Relaxed);
        if until != 0 && self.now_ms() + 1 >= until {
            return Some("FUNCTION LOAD timeout");
        }
        if self.busy() && !self.let_go.swap(true, Ordering::Relaxed) {
            let_the_loop_go();
        }
        None
    }

    /// FUNCTION LOAD starts running a library's code (`on`), or is done with it: past
    /// [`LOAD_TIMEOUT_MS`] the code stops with an error.
    pub fn loading(&self, on: bool) {
        let until = if on {
            self.now_ms() + 1 + LOAD_TIMEOUT_MS
        } else {
            0
        };
        self.load_until.store(until, Ordering::Relaxed);
    }

    /// Whether the script that ran last let its event loop go (and clears it): its connection then
    /// yields to that loop before anything else, so that one thread runs the loop again.
    pub fn take_let_go(&self) -> bool {
        self.let_go.load(Ordering::Relaxed) && self.let_go.swap(false, Ordering::Relaxed)
    }

    /// It is done.
    pub fn stop(&self) {
        self.started.store(0, Ordering::Release);
        self.kill.store(false, Ordering::Relaxed);
        if self.function.load(Ordering::Relaxed) {
            *self.call.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Records the function FCALL is about to run, for FUNCTION STATS while it runs.
    pub fn set_call(&self, call: FunctionCall) {
        *self.call.lock().unwrap_or_else(|e| e.into_inner()) = Some(call);
    }

    /// The function running now, and for how long it has run (ms); `None` while none runs.
    pub fn function_call(&self) -> Option<(FunctionCall, u64)> {
        let started = self.started.load(Ordering::Acquire);
        if started == 0 || !self.function.load(Ordering::Relaxed) {
            return None;
        }
        let call = self.call.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        Some((call, (self.now_ms() + 1).saturating_sub(started)))
    }

    /// Whether a script runs now, and it is a function.
    pub fn is_function(&self) -> bool {
        self.started.load(Ordering::Acquire) != 0 && self.function.load(Ordering::Relaxed)
    }

    /// Whether a script (EVAL's, not a function) runs now.
    pub fn eval_running(&self) -> bool {
        self.started.load(Ordering::Acquire) != 0 && !self.function.load(Ordering::Relaxed)
    }

    /// It calls a write command.
    pub fn wrote(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// Whether the running script has called a write command (a later write is not refused for the
    /// server's state then: the script must not stop half done).
    pub fn has_written(&self) -> bool {
        self.wrote.load(Ordering::Relaxed)
    }

    /// Whether a script has run for `busy-reply-threshold` or longer: other clients then get BUSY.
    pub fn busy(&self) -> bool {
        let started = self.started.load(Ordering::Acquire);
        started != 0 && self.now_ms() + 1 - started >= self.busy_ms.load(Ordering::Relaxed)
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL (true): each stops only its own kind.
    pub fn kill(&self, function: bool) -> Kill {
        if self.started.load(Ordering::Acquire) == 0 {
            Kill::NotBusy
        } else if self.wrote.load(Ordering::Relaxed) {
            Kill::Unkillable
        } else if self.function.load(Ordering::Relaxed) != function {
            Kill::OtherKind
        } else {
            self.kill.store(true, Ordering::Release);
            Kill::Asked
        }
    }

    /// SHUTDOWN NOSAVE during a busy script: the script stops at its next check, writes or not (nothing
    /// is kept past the shutdown).
    pub fn force_kill(&self) {
        self.kill.store(true, Ordering::Release);
    }

    /// Whether SCRIPT KILL asked the running script to stop.
    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Acquire)
    }

    pub fn busy_ms(&self) -> u64 {
        self.busy_ms.load(Ordering::Relaxed)
    }

    pub fn set_busy_ms(&self, ms: u64) {
        self.busy_ms.store(ms, Ordering::Relaxed);
    }
}

/// How long [`let_the_loop_go`] waits at most for another thread to take the loop.
const LET_GO_WAIT: Duration = Duration::from_secs(1);

/// Moves the runtime this thread drives (an event loop: a one-worker multi-thread runtime) to another
/// thread, and returns once a task spawned on it ran there: the caller, inside one of the loop's tasks,
/// goes on on this thread off the loop. Does nothing outside such a runtime (a test's runtime, or none).
fn let_the_loop_go() {
    let Ok(handle) = Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return;
    }
    let moved = Arc::new(AtomicBool::new(false));
    let flag = moved.clone();
    tokio::task::block_in_place(|| {
        handle.spawn(async move { flag.store(true, Ordering::Release) });
        let until = Instant::now() + LET_GO_WAIT;
        while !moved.load(Ordering::Acquire) && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(100));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_busy_past_the_threshold_and_killable_until_it_writes() {
        let r = Running::default();
        assert_eq!(r.kill(false), Kill::NotBusy);
        r.set_busy_ms(0);
        r.start(false);
        assert!(r.busy());
        assert_eq!(r.kill(true), Kill::OtherKind);
        assert_eq!(r.kill(false), Kill::Asked);
        assert!(r.killed());
        r.stop();
        assert!(!r.busy() && !r.killed());
        r.start(true);
        r.wrote();
        assert_eq!(r.kill(true), Kill::Unkillable);
        r.stop();
    }
}
