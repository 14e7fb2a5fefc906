//! fork() from a threaded process: own binary. Worker threads move batches of one size class through the
//! central heap all the time, so at most forks some worker holds that class's lock; the child then
//! allocates far past its cache in the same class. Without the fork handlers the child deadlocks (seen:
//! the test fails by timeout when they are disabled); with them it finishes.

use std::alloc::Layout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hopless::Hopless;

#[global_allocator]
static GLOBAL: Hopless = Hopless;

#[test]
fn fork_from_a_threaded_process_leaves_the_child_able_to_allocate() {
    static STOP: AtomicBool = AtomicBool::new(false);
    let layout = Layout::from_size_align(64, 8).unwrap();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let mut blocks = vec![std::ptr::null_mut(); 512];
                while !STOP.load(Ordering::Relaxed) {
                    let n = Hopless.alloc_batch(layout, &mut blocks);
                    // SAFETY: the blocks just allocated with `layout`, freed once.
                    unsafe { Hopless.free_batch(layout, &blocks[..n]) };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    for round in 0..50 {
        // SAFETY: the child only allocates, frees and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut ok = true;
            let v: Vec<Box<[u8; 64]>> = (0..20_000).map(|_| Box::new([7u8; 64])).collect();
            ok &= v.iter().all(|b| b[63] == 7);
            let big = vec![1u8; 2 << 20];
            ok &= big[123] == 1;
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut status = 0;
        loop {
            // SAFETY: polls our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if Instant::now() > deadline {
                // SAFETY: our own child, stuck.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                STOP.store(true, Ordering::Relaxed);
                panic!("fork {round}: the child could not allocate (deadlocked on an allocator lock)");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status}"
        );
    }
    STOP.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
}
