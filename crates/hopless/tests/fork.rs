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

/// Threads that carve their own slabs and free each other's blocks (every free of a block another
/// thread allocated is a remote free) while the process forks. In the child those threads' slabs may
/// be half-changed: the child frees blocks of them, allocates past its cache, and starts threads that
/// take over the dead threads' caches. Nothing may hang, crash or report.
#[test]
fn fork_while_threads_own_slabs_leaves_the_child_able_to_free_their_blocks() {
    use std::sync::atomic::AtomicUsize;
    const SLOTS: usize = 512;
    type Block = [u8; 96];
    static STOP: AtomicBool = AtomicBool::new(false);
    static SHARED: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
    let workers: Vec<_> = (0..2)
        .map(|k| {
            std::thread::spawn(move || {
                let mut i = k;
                while !STOP.load(Ordering::Relaxed) {
                    i = (i * 7 + 13) % SLOTS;
                    let b = Box::into_raw(Box::new([i as u8; 96])) as usize;
                    let old = SHARED[i].swap(b, Ordering::AcqRel);
                    if old != 0 {
                        // SAFETY: every slot holds 0 or a `Box<Block>` given up by `into_raw`.
                        drop(unsafe { Box::from_raw(old as *mut Block) });
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    for round in 0..30 {
        // SAFETY: the child only allocates, frees, starts threads and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut ok = true;
            for slot in &SHARED {
                let b = slot.swap(0, Ordering::AcqRel);
                if b != 0 {
                    // SAFETY: as above; the child's only thread owns what it took out.
                    let b = unsafe { Box::from_raw(b as *mut Block) };
                    ok &= b.iter().all(|&x| x == b[0]);
                }
            }
            // The trim retires the dead threads' caches, whose owned slabs may be half-changed.
            Hopless::trim();
            let v: Vec<Box<Block>> = (0..20_000).map(|i| Box::new([i as u8; 96])).collect();
            ok &= v.iter().enumerate().all(|(i, b)| b[95] == i as u8);
            // qemu-user (CI's only aarch64) cannot start threads in the child of a threaded process
            // (its TCG asserts, then the child dies by SIGSEGV): there the child takes no thread.
            let children = if cfg!(target_arch = "x86_64") { 4 } else { 0 };
            let threads: Vec<_> = (0..children)
                .map(|t| {
                    std::thread::spawn(move || {
                        let v: Vec<Box<Block>> = (0..5_000).map(|_| Box::new([t as u8; 96])).collect();
                        v.iter().all(|b| b[0] == t as u8)
                    })
                })
                .collect();
            for t in threads {
                ok &= t.join().unwrap_or(false);
            }
            drop(v);
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
                panic!("fork {round}: the child hung");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "fork {round}: child status {status}"
        );
    }
    STOP.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
}

/// Slabs of the 3 KiB class held: only blocks in some thread's magazine keep any (nothing else in this
/// binary uses the class).
fn slabs_of_3k() -> u64 {
    let st = Hopless::stats();
    st.classes.iter().find(|c| c.size >= 3000).map_or(0, |c| c.slabs)
}

/// A fork child's trim gives back the blocks in its copies of the parent's other threads' caches (no
/// thread of the child will take them); the parent's trim leaves a live thread's cache alone.
#[test]
fn a_trim_in_a_fork_child_empties_the_caches_of_the_parents_threads() {
    let layout = Layout::from_size_align(3000, 8).unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        let mut blocks = vec![std::ptr::null_mut(); 300];
        assert_eq!(Hopless.alloc_batch(layout, &mut blocks), blocks.len());
        // SAFETY: the blocks just allocated with `layout`, freed once; some stay in this thread's
        // magazine.
        unsafe { Hopless.free_batch(layout, &blocks) };
        ready_tx.send(()).unwrap();
        done_rx.recv().unwrap();
    });
    ready_rx.recv().unwrap();
    Hopless::trim();
    let held = slabs_of_3k();
    assert!(held > 0, "the worker's magazine keeps its blocks' slabs");
    // SAFETY: the child only reads stats, trims and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let before = slabs_of_3k();
        Hopless::trim();
        let after = slabs_of_3k();
        let code = if before == 0 {
            2
        } else if after != 0 {
            3
        } else {
            0
        };
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child exit {} (2: no slabs held, 3: the trim left them)",
        libc::WEXITSTATUS(status)
    );
    Hopless::trim();
    assert_eq!(slabs_of_3k(), held, "the live worker's cache is left alone");
    done_tx.send(()).unwrap();
    worker.join().unwrap();
    Hopless::trim();
    assert_eq!(slabs_of_3k(), 0, "its exit gave the blocks back");
}
