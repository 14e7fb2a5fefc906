//! INFO: the server's sections (server, clients, memory with hopless's per-class slab table, stats,
//! commandstats, keyspace...), in Redis's order and `key:value` lines.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use hopless_kv::OP_NAMES;

use super::command::{Command, Ctx};
use crate::errors::CmdResult;
use crate::footprint::Footprint;
use crate::words::{human, policy_name};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("info", -1, "loading stale", info),
];

/// Every INFO section, in Redis's order; `default` is all of them but commandstats.
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "errorstats",
    "keyspace",
];

fn info(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut want: Vec<&str> = Vec::new();
    let defaults = ALL_SECTIONS.iter().filter(|s| **s != "commandstats");
    if a.len() == 1 {
        want.extend(defaults.clone());
    }
    for s in &a[1..] {
        let s = String::from_utf8_lossy(s).to_ascii_lowercase();
        match s.as_str() {
            "all" | "everything" => want.extend(ALL_SECTIONS),
            "default" => want.extend(defaults.clone()),
            other => {
                if let Some(x) = ALL_SECTIONS.iter().find(|x| **x == other) {
                    want.push(x);
                }
            }
        }
    }
    let mut text = String::new();
    for s in ALL_SECTIONS.iter().filter(|s| want.contains(s)) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        section(c, s, &mut text);
    }
    c.out.verbatim(text.as_bytes());
    Ok(())
}

fn section(c: &Ctx<'_>, name: &str, t: &mut String) {
    let sh = c.shared;
    let st = sh.store.stats();
    match name {
        "server" => {
            let up = sh.started.elapsed().as_secs();
            let _ =
                write!(
                t,
                "# Server\r\nredis_version:{}\r\nhopless_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\n\
                 arch_bits:64\r\nmultiplexing_api:epoll (tokio)\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\n\
                 server_time_usec:{}\r\nuptime_in_seconds:{up}\r\nuptime_in_days:{}\r\nhz:10\r\n\
                 executable:{}\r\nconfig_file:\r\nbind:{}\r\nthreads:{}\r\n",
                crate::version::REDIS_VERSION,
                crate::version::VERSION,
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                sh.run_id,
                sh.port,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros()),
                up / 86_400,
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
                sh.bind.join(" "),
                sh.threads,
            );
        }
        "clients" => {
            let _ = write!(
                t,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
                 blocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:0\r\n",
                sh.clients().len(),
                sh.settings().maxclients,
                sh.blocked.len(),
                sh.tracking.counts()[0]
            );
        }
        "memory" => {
            let mem = Footprint::measure(sh);
            let (used, rss, peak) = (mem.used, mem.rss, mem.peak);
            let max = sh.store.maxmemory();
            let frag = mem.fragmentation();
            let (lua, cached) = {
                let scripts = sh.scripts.lock().unwrap_or_else(|e| e.into_inner());
                (scripts.memory(), scripts.len())
            };
            let _ = write!(
                t,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\n\
                 used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
                 used_memory_dataset:{}\r\nused_memory_dataset_human:{}\r\nused_memory_lua:{lua}\r\n\
                 used_memory_vm_eval:{lua}\r\nused_memory_lua_human:{}\r\nnumber_of_cached_scripts:{cached}\r\n\
                 maxmemory:{max}\r\n\
                 maxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{frag:.2}\r\n\
                 mem_allocator:hopless\r\nlazyfree_pending_objects:{}\r\nhopless_stats:{}\r\n",
                human(used),
                human(rss),
                human(peak),
                st.bytes_used,
                human(st.bytes_used),
                human(lua as u64),
                human(max),
                policy_name(sh.store.policy()),
                hopless_kv::types::lazyfree_pending(),
                if cfg!(feature = "stats") {
                    "on"
                } else {
                    "off (build with the stats feature)"
                },
            );
            slab_table(t);
        }
        "persistence" => {
            let p = &sh.persistence;
            let child = p.child();
            let aof = &sh.aof;
            let aof_child = aof.child();
            let since = |t: Option<std::time::Instant>| t.map_or(-1, |t| t.elapsed().as_secs() as i64);
            let _ = write!(
                t,
                "# Persistence\r\nloading:{}\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\n\
                 current_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\n\
                 current_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n\
                 rdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\n\
                 rdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\n\
                 rdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\n\
                 rdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{}\r\n\
                 aof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\n\
                 aof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\n\
                 aof_rewrites_consecutive_failures:{}\r\naof_last_write_status:{}\r\n\
                 aof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                u8::from(p.loading.load(Ordering::Relaxed) || aof.loading.load(Ordering::Relaxed)),
                sh.stats.changes().saturating_sub(p.saved_changes()),
                u8::from(child.is_some()),
                p.last_save(),
                if p.last_ok() { "ok" } else { "err" },
                p.last_bgsave_secs(),
                since(child.map(|c| c.started)),
                p.saves(),
                p.loaded_expired.load(Ordering::Relaxed),
                p.loaded_keys.load(Ordering::Relaxed),
                u8::from(aof.is_on()),
                u8::from(aof_child.is_some()),
                u8::from(aof.rewrite_scheduled.load(Ordering::Relaxed)),
                aof.last_rewrite_secs.load(Ordering::Relaxed),
                since(aof_child.map(|c| c.started)),
                if aof.last_rewrite_ok.load(Ordering::Relaxed) {
                    "ok"
                } else {
                    "err"
                },
                aof.rewrites.load(Ordering::Relaxed),
                aof.rewrite_failures.load(Ordering::Relaxed),
                if aof.write_failed() { "err" } else { "ok" },
            );
            if aof.settings().enabled {
                let (size, base) = aof.sizes();
                let _ = write!(
                    t,
                    "aof_current_size:{size}\r\naof_base_size:{base}\r\naof_pending_rewrite:{}\r\n\
                     aof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:{}\r\n",
                    u8::from(aof.rewrite_scheduled.load(Ordering::Relaxed)),
                    aof.buffered(),
                    u8::from(aof.pending_fsync()),
                    aof.delayed_fsync.load(Ordering::Relaxed),
                );
            }
        }
        "stats" => {
            let k = &sh.counters;
            let _ = write!(
                t,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                 instantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
                 rejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\nkeyspace_hits:{}\r\n\
                 keyspace_misses:{}\r\nunknown_commands:{}\r\ntotal_error_replies:{}\r\n",
                k.connections_received.load(Ordering::Relaxed),
                sh.stats.processed(),
                sh.stats.net_input(),
                sh.stats.net_output(),
                k.rejected_connections.load(Ordering::Relaxed),
                st.expired,
                st.evicted,
                st.hits,
                st.misses,
                k.unknown_commands.load(Ordering::Relaxed),
                sh.errors.total(),
            );
            // Pub/sub.
            let _ = write!(
                t,
                "pubsub_channels:{}\r\npubsub_patterns:{}\r\nlatest_fork_usec:{}\r\ntotal_forks:{}\r\n\
                 migrate_cached_sockets:0\r\nclient_output_buffer_limit_disconnections:{}\r\n",
                sh.pubsub.names(crate::pubsub::Kind::Channel),
                sh.pubsub.names(crate::pubsub::Kind::Pattern),
                sh.persistence.last_fork_usec.load(Ordering::Relaxed),
                sh.persistence.forks.load(Ordering::Relaxed),
                sh.pubsub.overflow_disconnections.load(Ordering::Relaxed),
            );
            let [_, keys, items, prefixes] = sh.tracking.counts();
            let _ = write!(
                t,
                "tracking_total_keys:{keys}\r\ntracking_total_items:{items}\r\ntracking_total_prefixes:{prefixes}\r\n"
            );
            for (n, v) in OP_NAMES.iter().zip(st.ops) {
                let _ = write!(t, "store_ops_{n}:{v}\r\n");
            }
        }
        // A master with no replicas and no backlog, as Redis prints one (hopless does not replicate).
        "replication" => {
            let _ = write!(
                t,
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n\
                 master_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n\
                 master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n\
                 repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
                sh.run_id
            );
        }
        "cpu" => {
            t.push_str("# CPU\r\n");
            let rows = [
                ("", libc::RUSAGE_SELF),
                ("_children", libc::RUSAGE_CHILDREN),
                ("_main_thread", libc::RUSAGE_THREAD),
            ];
            for (suffix, who) in rows {
                let (sys, user) = cpu_times(who);
                let _ = write!(
                    t,
                    "used_cpu_sys{suffix}:{sys}\r\nused_cpu_user{suffix}:{user}\r\n"
                );
            }
        }
        "errorstats" => {
            t.push_str("# Errorstats\r\n");
            for (code, n) in sh.errors.by_code() {
                let _ = write!(t, "errorstat_{code}:count={n}\r\n");
            }
        }
        "commandstats" => {
            t.push_str("# Commandstats\r\n");
            for (i, cmd) in c.table.commands().iter().enumerate() {
                let s = sh.stats.command(i);
                let (calls, rej, failed, usec) = (s.calls, s.rejected, s.failed, s.nanos / 1000);
                if calls + rej == 0 {
                    continue;
                }
                let per = if calls > 0 {
                    s.nanos as f64 / 1000.0 / calls as f64
                } else {
                    0.0
                };
                let _ = write!(
                    t,
                    "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rej},\
                     failed_calls={failed}\r\n",
                    cmd.name
                );
            }
        }
        "keyspace" => {
            t.push_str("# Keyspace\r\n");
            if st.keys > 0 {
                let _ = write!(
                    t,
                    "db0:keys={},expires={},avg_ttl=0\r\n",
                    st.keys, st.keys_with_ttl
                );
            }
        }
        _ => {}
    }
}

/// getrusage's system and user CPU time for `who`, as Redis prints them (`seconds.micros`). The
/// `_main_thread` row is the thread that runs INFO: each event loop is a main thread of its own.
fn cpu_times(who: libc::c_int) -> (String, String) {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; `who` is one of the RUSAGE_* constants.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return ("0.000000".into(), "0.000000".into());
    }
    let fmt = |tv: libc::timeval| format!("{}.{:06}", tv.tv_sec, tv.tv_usec);
    (fmt(ru.ru_stime), fmt(ru.ru_utime))
}

/// hopless's per-class table, one `key:value` line per size class in use (parsable like INFO's other
/// lines): something Redis's allocators do not show.
fn slab_table(t: &mut String) {
    let s = hopless::stats();
    for cl in s
        .classes
        .iter()
        .filter(|cl| cl.alloc_fast + cl.alloc_slow + cl.slabs > 0)
    {
        let _ = write!(
            t,
            "hopless_class_{}:alloc_fast={},alloc_slow={},free_fast={},free_slow={},refills={},flushes={},\
             slabs={},in_use_bytes={},peak_bytes={}\r\n",
            cl.size,
            cl.alloc_fast,
            cl.alloc_slow,
            cl.free_fast,
            cl.free_slow,
            cl.refills,
            cl.flushes,
            cl.slabs,
            cl.bytes_in_use,
            cl.peak_bytes
        );
    }
    let _ = write!(
        t,
        "hopless_large:allocs={},frees={},cache_hits={},cached_bytes={},in_use_bytes={},peak_bytes={}\r\n\
         hopless_segments:{}\r\nhopless_thread_caches:{}\r\n",
        s.large_allocs,
        s.large_frees,
        s.large_cache_hits,
        s.large_cached_bytes,
        s.large_bytes_in_use,
        s.large_peak_bytes,
        s.segments,
        s.thread_caches
    );
}
