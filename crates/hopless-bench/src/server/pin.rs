//! `--pin`: where the servers and the load generator run, and what CPU a server spends. A server gets
//! cores 0..T-1 (T its threads), the load generator the cores left, so a figure is per server core and
//! the client cannot take the server's CPU; a server's CPU time (user + system of every thread, from
//! `/proc/PID/stat`) read around the measured load gives its CPU per request, pinned or not.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The cores a pinned server of `threads` threads runs on: 0..threads-1.
pub fn server_cores(threads: usize) -> Vec<usize> {
    (0..threads).collect()
}

/// The cores left to the load generator beside a pinned server of `threads` threads, of `cores`.
pub fn client_cores(threads: usize, cores: usize) -> Vec<usize> {
    (threads..cores).collect()
}

/// A CPU set of `cores` (those past the set's size are left out).
fn cpu_set(cores: &[usize]) -> libc::cpu_set_t {
    // SAFETY: `cpu_set_t` is plain bits; all zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cores {
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is below the set's size, checked just above.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    set
}

/// Runs the calling thread, and the threads it starts from now on, on `cores` only.
pub fn pin_this_thread(cores: &[usize]) -> Result<(), String> {
    let set = cpu_set(cores);
    // SAFETY: `set` is a valid CPU set of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(format!(
            "sched_setaffinity {cores:?}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Makes `cmd`'s process run on `cores` only, from before it executes.
pub fn pin_command(cmd: &mut Command, cores: &[usize]) {
    let set = cpu_set(cores);
    // SAFETY: the closure runs in the child between fork and exec, where only async-signal-safe calls
    // are allowed: it makes one system call (`sched_setaffinity`, on a set built before the fork) and
    // reads `errno`; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// User + system CPU seconds of process `pid`, every thread (0.0 when it cannot be read).
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After the name: state is field 3, utime 14 and stime 15 (1-based), so 11 and 12 here.
    // SAFETY: `sysconf` reads a constant of the system; it has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_takes_the_first_cores_and_the_client_the_rest() {
        assert_eq!(server_cores(1), [0]);
        assert_eq!(client_cores(1, 2), [1]);
        assert_eq!(server_cores(2), [0, 1]);
        assert_eq!(client_cores(2, 8), [2, 3, 4, 5, 6, 7]);
        assert!(client_cores(2, 2).is_empty());
    }

    #[test]
    fn a_busy_process_counts_cpu_time_and_a_pinned_child_runs_where_it_was_put() {
        let me = std::process::id();
        let before = cpu_seconds(me);
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 80 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(cpu_seconds(me) > before, "no CPU time counted");
        assert_eq!(cpu_seconds(u32::MAX), 0.0);
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        pin_command(&mut cmd, &[0]);
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert_eq!(out.split_whitespace().last(), Some("0"), "{out}");
    }
}
