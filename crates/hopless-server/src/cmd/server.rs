//! Server commands: INFO CONFIG COMMAND MEMORY OBJECT SHUTDOWN DEBUG.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use hopless_kv::store::glob_match;
use hopless_kv::OP_NAMES;

use super::{
    int_arg, lookup, parse_policy, policy_name, Action, CmdError, CmdResult, Command, Ctx, COMMANDS, SYNTAX,
};
use crate::util::{eq, human, parse_memory, rss_bytes};

fn unknown_sub(c: &Ctx<'_>, a: &[Bytes]) -> CmdError {
    CmdError::Msg(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(&a[1]),
        c.name.to_ascii_uppercase()
    ))
}

fn sub_args(c: &Ctx<'_>, a: &[Bytes]) -> CmdError {
    CmdError::Msg(format!(
        "ERR wrong number of arguments for '{}|{}' command",
        c.name,
        String::from_utf8_lossy(&a[1]).to_ascii_lowercase()
    ))
}

/// Bytes the allocator has handed out and not had back: hopless's counters with the `stats` feature,
/// else the store's own count.
fn used_memory(c: &Ctx<'_>) -> u64 {
    let s = hopless::stats().bytes_in_use();
    let used = if s > 0 {
        s
    } else {
        c.shared.store.stats().bytes_used
    };
    c.shared.peak_memory.fetch_max(used, Ordering::Relaxed);
    used
}

// ---- INFO ----

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
    "keyspace",
];

pub fn info(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
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
                 arch_bits:64\r\nmultiplexing_api:epoll (tokio)\r\nprocess_id:{}\r\ntcp_port:{}\r\n\
                 server_time_usec:{}\r\nuptime_in_seconds:{up}\r\nuptime_in_days:{}\r\nhz:10\r\n\
                 executable:{}\r\nconfig_file:\r\nbind:{}\r\nthreads:{}\r\nmem_allocator:hopless\r\n",
                crate::REDIS_VERSION,
                crate::VERSION,
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
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
                 blocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
                sh.clients().len(),
                sh.settings().maxclients
            );
        }
        "memory" => {
            let used = used_memory(c);
            let rss = rss_bytes();
            let peak = sh.peak_memory.load(Ordering::Relaxed).max(used);
            let max = sh.store.maxmemory();
            let frag = if used > 0 { rss as f64 / used as f64 } else { 0.0 };
            let _ = write!(
                t,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\n\
                 used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
                 used_memory_dataset:{}\r\nused_memory_dataset_human:{}\r\nmaxmemory:{max}\r\n\
                 maxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{frag:.2}\r\n\
                 mem_allocator:hopless\r\nhopless_stats:{}\r\n",
                human(used),
                human(rss),
                human(peak),
                st.bytes_used,
                human(st.bytes_used),
                human(max),
                policy_name(sh.store.policy()),
                if cfg!(feature = "stats") {
                    "on"
                } else {
                    "off (build with the stats feature)"
                },
            );
            slab_table(t);
        }
        "persistence" => {
            t.push_str(
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\n\
                 rdb_bgsave_in_progress:0\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\n\
                 aof_rewrite_in_progress:0\r\n",
            );
        }
        "stats" => {
            let k = &sh.counters;
            let _ = write!(
                t,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                 instantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
                 rejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\nkeyspace_hits:{}\r\n\
                 keyspace_misses:{}\r\nunknown_commands:{}\r\n",
                k.connections_received.load(Ordering::Relaxed),
                k.commands_processed.load(Ordering::Relaxed),
                k.net_input_bytes.load(Ordering::Relaxed),
                k.net_output_bytes.load(Ordering::Relaxed),
                k.rejected_connections.load(Ordering::Relaxed),
                st.expired,
                st.evicted,
                st.hits,
                st.misses,
                k.unknown_commands.load(Ordering::Relaxed),
            );
            for (n, v) in OP_NAMES.iter().zip(st.ops) {
                let _ = write!(t, "store_ops_{n}:{v}\r\n");
            }
        }
        "replication" => t.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"),
        "cpu" => t.push_str("# CPU\r\n"),
        "commandstats" => {
            t.push_str("# Commandstats\r\n");
            for (cmd, s) in COMMANDS.iter().zip(sh.cmdstats.iter()) {
                let calls = s.calls.load(Ordering::Relaxed);
                let (rej, failed) = (
                    s.rejected.load(Ordering::Relaxed),
                    s.failed.load(Ordering::Relaxed),
                );
                if calls + rej == 0 {
                    continue;
                }
                let usec = s.usec.load(Ordering::Relaxed);
                let per = if calls > 0 {
                    usec as f64 / calls as f64
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

// ---- CONFIG ----

/// The parameters CONFIG GET knows, in the order it lists them.
const PARAMS: &[&str] = &[
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "requirepass",
    "maxclients",
    "timeout",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "protected-mode",
    "port",
    "bind",
    "databases",
    "save",
    "appendonly",
    "appendfsync",
    "io-threads",
    "hz",
    "dir",
    "dbfilename",
    "cluster-enabled",
];

fn param_value(c: &Ctx<'_>, p: &str) -> String {
    let s = c.shared.settings();
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    match p {
        "maxmemory" => c.shared.store.maxmemory().to_string(),
        "maxmemory-policy" => policy_name(c.shared.store.policy()).into(),
        "maxmemory-samples" => hopless_kv::store::EVICTION_SAMPLES.to_string(),
        "requirepass" => s
            .requirepass
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .unwrap_or_default(),
        "maxclients" => s.maxclients.to_string(),
        "timeout" => s.timeout.to_string(),
        "proto-max-bulk-len" => s.proto_max_bulk_len.to_string(),
        "client-query-buffer-limit" => s.client_query_buffer_limit.to_string(),
        "protected-mode" => yes(s.protected_mode),
        "port" => c.shared.port.to_string(),
        "bind" => c.shared.bind.join(" "),
        "databases" => "1".into(),
        "save" => String::new(),
        "appendonly" => "no".into(),
        "appendfsync" => "no".into(),
        "io-threads" => c.shared.threads.to_string(),
        "hz" => "10".into(),
        "dir" => std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        "dbfilename" => String::new(),
        "cluster-enabled" => "no".into(),
        _ => String::new(),
    }
}

fn set_param(c: &Ctx<'_>, p: &str, v: &[u8]) -> Result<(), String> {
    let v = String::from_utf8_lossy(v).into_owned();
    let mem = || parse_memory(&v).ok_or_else(|| "argument must be a memory value".to_string());
    let int = || {
        v.parse::<u64>()
            .map_err(|_| "argument couldn't be parsed into an integer".to_string())
    };
    let sh = c.shared;
    match p {
        "maxmemory" => sh.store.set_maxmemory(mem()?),
        "maxmemory-policy" => sh.store.set_policy(
            parse_policy(&v).ok_or("argument(s) must be one of the following: noeviction, allkeys-lru")?,
        ),
        "requirepass" => {
            let pass = (!v.is_empty()).then(|| v.clone().into_bytes());
            sh.with_settings(|s| s.requirepass = pass);
        }
        "maxclients" => {
            let n = int()? as usize;
            sh.with_settings(|s| s.maxclients = n);
        }
        "timeout" => {
            let n = int()?;
            sh.with_settings(|s| s.timeout = n);
        }
        "proto-max-bulk-len" => {
            let n = mem()? as usize;
            sh.with_settings(|s| s.proto_max_bulk_len = n);
        }
        "client-query-buffer-limit" => {
            let n = mem()? as usize;
            sh.with_settings(|s| s.client_query_buffer_limit = n);
        }
        "protected-mode" => {
            let b = match v.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => return Err("argument must be 'yes' or 'no'".into()),
            };
            sh.with_settings(|s| s.protected_mode = b);
        }
        "save" if v.trim().is_empty() => {}
        "appendonly" if v.eq_ignore_ascii_case("no") => {}
        "save" | "appendonly" => return Err("hopless is a cache and has no persistence".into()),
        "maxmemory-samples" | "hz" | "appendfsync" => {}
        _ => return Err("can't set immutable config".into()),
    }
    Ok(())
}

const CONFIG_HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "HELP",
    "    Print this help.",
];

pub fn config(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if a.len() >= 3 => {
            let mut found: Vec<&str> = Vec::new();
            for pat in &a[2..] {
                let pat = pat.to_ascii_lowercase();
                for p in PARAMS {
                    if glob_match(&pat, p.as_bytes()) && !found.contains(p) {
                        found.push(p);
                    }
                }
            }
            c.out.map(found.len());
            for p in found {
                let v = param_value(c, p);
                c.out.bulk(p.as_bytes());
                c.out.bulk(v.as_bytes());
            }
        }
        "set" if a.len() >= 4 && a.len() % 2 == 0 => {
            for kv in a[2..].chunks_exact(2) {
                let p = String::from_utf8_lossy(&kv[0]).to_ascii_lowercase();
                if !PARAMS.contains(&p.as_str()) {
                    return Err(CmdError::Msg(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{p}'"
                    )));
                }
                set_param(c, &p, &kv[1]).map_err(|why| {
                    CmdError::Msg(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{p}') - {why}"
                    ))
                })?;
            }
            c.out.ok();
        }
        "resetstat" if a.len() == 2 => {
            for s in c.shared.cmdstats.iter() {
                s.calls.store(0, Ordering::Relaxed);
                s.usec.store(0, Ordering::Relaxed);
                s.failed.store(0, Ordering::Relaxed);
                s.rejected.store(0, Ordering::Relaxed);
            }
            c.out.ok();
        }
        "rewrite" if a.len() == 2 => {
            return Err(CmdError::Static(
                "ERR The server is running without a config file",
            ))
        }
        "help" if a.len() == 2 => c.out.bulks(CONFIG_HELP.iter().map(|s| s.as_bytes())),
        "get" | "set" | "resetstat" | "rewrite" | "help" => return Err(sub_args(c, a)),
        _ => return Err(unknown_sub(c, a)),
    }
    Ok(())
}

// ---- COMMAND ----

fn command_info(c: &mut Ctx<'_>, cmd: &Command) {
    let o = &mut *c.out;
    o.array(10);
    o.bulk(cmd.name.as_bytes());
    o.int(cmd.arity as i64);
    o.set(cmd.flags.len());
    for f in cmd.flags {
        o.simple(f);
    }
    o.int(cmd.first_key as i64);
    o.int(cmd.last_key as i64);
    o.int(cmd.step as i64);
    o.set(cmd.acl.len());
    for f in cmd.acl {
        o.simple(f);
    }
    o.array(0);
    o.array(0);
    o.array(0);
}

fn command_docs(c: &mut Ctx<'_>, cmd: &Command) {
    let o = &mut *c.out;
    o.bulk(cmd.name.as_bytes());
    o.map(3);
    o.bulk(b"summary");
    o.bulk(cmd.summary.as_bytes());
    o.bulk(b"since");
    o.bulk(cmd.since.as_bytes());
    o.bulk(b"group");
    o.bulk(cmd.group.as_bytes());
}

pub fn command(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if a.len() == 1 {
        c.out.array(COMMANDS.len());
        for cmd in COMMANDS {
            command_info(c, cmd);
        }
        return Ok(());
    }
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    match sub.as_str() {
        "count" if a.len() == 2 => c.out.int(COMMANDS.len() as i64),
        "list" => {
            c.out.array(COMMANDS.len());
            for cmd in COMMANDS {
                c.out.bulk(cmd.name.as_bytes());
            }
        }
        "info" => {
            if a.len() == 2 {
                c.out.array(COMMANDS.len());
                for cmd in COMMANDS {
                    command_info(c, cmd);
                }
            } else {
                c.out.array(a.len() - 2);
                for name in &a[2..] {
                    match lookup(name) {
                        Some(i) => command_info(c, &COMMANDS[i]),
                        None => c.out.null_array(),
                    }
                }
            }
        }
        "docs" => {
            let found: Vec<&Command> = if a.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                a[2..]
                    .iter()
                    .filter_map(|n| lookup(n))
                    .map(|i| &COMMANDS[i])
                    .collect()
            };
            c.out.map(found.len());
            for cmd in found {
                command_docs(c, cmd);
            }
        }
        "help" if a.len() == 2 => c.out.bulks(
            [
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all commands.",
                "COUNT",
                "    Return the total number of commands.",
                "DOCS [<command-name> ...]",
                "    Return documentary information about commands.",
                "INFO [<command-name> ...]",
                "    Return details about the given commands, or all of them.",
                "LIST",
                "    Return a list of all commands.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "count" | "help" => return Err(sub_args(c, a)),
        _ => return Err(unknown_sub(c, a)),
    }
    Ok(())
}

// ---- MEMORY, OBJECT ----

pub fn memory(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    match sub.as_str() {
        "usage" if a.len() == 3 || (a.len() == 5 && eq(&a[3], "samples")) => {
            if a.len() == 5 {
                int_arg(&a[4])?;
            }
            match c.shared.store.memory_usage(&a[2]) {
                Some(n) => c.out.int(n as i64),
                None => c.out.null(),
            }
        }
        "usage" if a.len() > 3 => return Err(SYNTAX),
        "stats" if a.len() == 2 => {
            let used = used_memory(c);
            let st = c.shared.store.stats();
            let rss = rss_bytes();
            let peak = c.shared.peak_memory.load(Ordering::Relaxed).max(used);
            let o = &mut *c.out;
            o.map(9);
            o.bulk(b"peak.allocated");
            o.int(peak as i64);
            o.bulk(b"total.allocated");
            o.int(used as i64);
            o.bulk(b"keys.count");
            o.int(st.keys as i64);
            o.bulk(b"keys.bytes-per-key");
            o.int(st.bytes_used.checked_div(st.keys).unwrap_or(0) as i64);
            o.bulk(b"dataset.bytes");
            o.int(st.bytes_used as i64);
            o.bulk(b"dataset.percentage");
            o.double(if used > 0 {
                st.bytes_used as f64 * 100.0 / used as f64
            } else {
                0.0
            });
            o.bulk(b"rss-bytes");
            o.int(rss as i64);
            o.bulk(b"fragmentation");
            o.double(if used > 0 { rss as f64 / used as f64 } else { 0.0 });
            o.bulk(b"allocator");
            o.bulk(b"hopless");
        }
        "malloc-stats" if a.len() == 2 => {
            let text = hopless::stats().to_string();
            c.out.verbatim(text.as_bytes());
        }
        "doctor" if a.len() == 2 => c
            .out
            .verbatim(b"Hi Sam, I can't find any memory issue in your instance."),
        "purge" if a.len() == 2 => {
            hopless::Hopless::trim();
            c.out.ok();
        }
        "help" if a.len() == 2 => c.out.bulks(
            [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "MALLOC-STATS",
                "    Return hopless's per-class slab table.",
                "PURGE",
                "    Give free slabs back to the OS.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "usage" | "stats" | "malloc-stats" | "doctor" | "purge" | "help" => return Err(sub_args(c, a)),
        _ => return Err(unknown_sub(c, a)),
    }
    Ok(())
}

/// OBJECT ENCODING: every value is stored the same way (one block: header, key, value), but clients and
/// tools expect Redis's names, so the answer is what Redis would store the value as: `int` for an
/// integer of up to 20 characters, `embstr` up to 44 bytes, `raw` beyond.
pub fn object(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&a[1]).to_ascii_lowercase();
    match sub.as_str() {
        "encoding" | "refcount" | "idletime" | "freq" if a.len() == 3 => {
            let Some(v) = c.shared.store.get(&a[2]) else {
                c.out.null();
                return Ok(());
            };
            match sub.as_str() {
                "encoding" => {
                    let e = if v.len() <= 20 && hopless_kv::store::parse_i64(&v).is_some() {
                        "int"
                    } else if v.len() <= 44 {
                        "embstr"
                    } else {
                        "raw"
                    };
                    c.out.bulk(e.as_bytes());
                }
                "refcount" => c.out.int(1),
                "idletime" => c.out.int(0),
                _ => {
                    return Err(CmdError::Static(
                        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note \
                         that when switching between policies at runtime LRU and LFU data will take some time \
                         to adjust.",
                    ))
                }
            }
        }
        "help" if a.len() == 2 => c.out.bulks(
            [
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
            ]
            .iter()
            .map(|s| s.as_bytes()),
        ),
        "encoding" | "refcount" | "idletime" | "freq" | "help" => return Err(sub_args(c, a)),
        _ => return Err(unknown_sub(c, a)),
    }
    Ok(())
}

// ---- SHUTDOWN, DEBUG ----

pub fn shutdown(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    for o in &a[1..] {
        if eq(o, "abort") {
            return Err(CmdError::Static("ERR No shutdown in progress."));
        }
        if !["nosave", "save", "now", "force"].iter().any(|w| eq(o, w)) {
            return Err(SYNTAX);
        }
    }
    tracing::info!(client = c.conn.id(), "SHUTDOWN: closing");
    c.shared.request_shutdown();
    c.action = Action::Close;
    Ok(())
}

pub fn debug(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if eq(&a[1], "sleep") && a.len() == 3 {
        let secs: f64 = String::from_utf8_lossy(&a[2]).parse().map_err(|_| SYNTAX)?;
        if secs > 0.0 && secs.is_finite() {
            // Blocks this worker, as DEBUG SLEEP blocks Redis.
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        c.out.ok();
        return Ok(());
    }
    Err(CmdError::Msg(format!(
        "ERR unknown subcommand '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(&a[1])
    )))
}
