//! What one command leaves for the append-only file, gathered on its own thread before it goes into the
//! log: the dispatcher arms the stage before a command (when the log is on), the command and what it
//! sets off (a served blocked pop, an expired or evicted key, a transaction's or a script's commands)
//! record into it, and the dispatcher hands it to the log at the end, while the command still holds its
//! gates. The stage is per thread because everything of one command runs on the thread that runs it.

use std::cell::RefCell;

/// The records of the command in flight on this thread, as RESP arrays.
#[derive(Default)]
pub struct Staged {
    pub bytes: Vec<u8>,
    pub records: usize,
}

struct Stage {
    armed: bool,
    staged: Staged,
}

thread_local! {
    static STAGE: RefCell<Stage> = const {
        RefCell::new(Stage {
            armed: false,
            staged: Staged {
                bytes: Vec::new(),
                records: 0,
            },
        })
    };
}

/// Starts recording on this thread (the log is on for the command about to run).
pub fn arm() {
    STAGE.with(|s| s.borrow_mut().armed = true);
}

/// Whether this thread records (a command of a server whose log is on is running on it).
pub fn armed() -> bool {
    STAGE.with(|s| s.borrow().armed)
}

/// Records one command, if this thread records.
pub fn record<A: AsRef<[u8]>>(args: &[A]) {
    STAGE.with(|s| {
        let mut s = s.borrow_mut();
        if s.armed {
            encode(&mut s.staged.bytes, args);
            s.staged.records += 1;
        }
    });
}

/// Stops recording and takes what was recorded.
pub fn take() -> Staged {
    STAGE.with(|s| {
        let mut s = s.borrow_mut();
        s.armed = false;
        std::mem::take(&mut s.staged)
    })
}

/// Appends `args` to `out` as a RESP array of bulk strings, as Redis writes a command in its log.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    use std::io::Write;
    // Writing into a Vec cannot fail.
    let _ = write!(out, "*{}\r\n", args.len());
    for a in args {
        let a = a.as_ref();
        let _ = write!(out, "${}\r\n", a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_while_armed() {
        record(&["SET", "k", "v"]);
        assert_eq!(take().records, 0);
        arm();
        record(&["SET", "k", "v"]);
        record(&[b"DEL".as_slice(), b"k"]);
        let s = take();
        assert_eq!(s.records, 2);
        assert_eq!(
            s.bytes,
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"
        );
        assert!(!armed());
        record(&["SET", "k", "v"]);
        assert_eq!(take().records, 0);
    }
}
