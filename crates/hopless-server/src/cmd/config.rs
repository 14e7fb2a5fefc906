//! CONFIG: the parameters a client may read (GET, by glob) and change at run time (SET), and RESETSTAT.

use bytes::Bytes;
use hopless_kv::store::glob_match;

use super::command::{subcommand, Command, Ctx};
use crate::errors::{unknown_sub, wrong_sub_args, CmdError, CmdResult};
use crate::words::{parse_memory, parse_policy, parse_yes_no, policy_name, yes_no};

/// This family's rows of the command table, in COMMAND's order: laid out by hand, one command a row
/// (rustfmt would spread each over a dozen lines).
#[rustfmt::skip]
pub(super) const COMMANDS: &[Command] = &[
    Command::new("config", -2, "noscript loading stale", config)
        .subs(&["get", "help", "resetstat", "rewrite", "set"]),
];

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
    "appenddirname",
    "appendfilename",
    "aof-use-rdb-preamble",
    "aof-load-truncated",
    "aof-rewrite-incremental-fsync",
    "aof-timestamp-enabled",
    "auto-aof-rewrite-percentage",
    "auto-aof-rewrite-min-size",
    "no-appendfsync-on-rewrite",
    "io-threads",
    "hz",
    "dir",
    "dbfilename",
    "rdbcompression",
    "rdbchecksum",
    "stop-writes-on-bgsave-error",
    "cluster-enabled",
    "client-output-buffer-limit",
    "list-compress-depth",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "busy-reply-threshold",
    "lua-time-limit",
    "min-replicas-to-write",
    "min-replicas-max-lag",
    "notify-keyspace-events",
    "tracking-table-max-keys",
];

/// Every parameter CONFIG GET matches: the server's, then the collections' thresholds with their
/// `ziplist` aliases (Redis lists both names).
fn all_params() -> impl Iterator<Item = &'static str> {
    PARAMS.iter().copied().chain(
        hopless_kv::Limits::NAMES
            .iter()
            .flat_map(|(n, aliases)| std::iter::once(*n).chain(aliases.iter().copied())),
    )
}

fn param_value(c: &Ctx<'_>, p: &str) -> String {
    if let Some(i) = hopless_kv::Limits::index_of(p) {
        return c.shared.store.limits().get(i).to_string();
    }
    let s = c.shared.settings();
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
        "protected-mode" => yes_no(s.protected_mode).into(),
        "port" => c.shared.port.to_string(),
        "bind" => c.shared.bind.join(" "),
        "databases" => "1".into(),
        "save" => crate::snapshot::state::format_save(&c.shared.persistence.settings().save),
        "appendonly" => yes_no(c.shared.aof.settings().enabled).into(),
        "appendfsync" => c.shared.aof.settings().fsync.name().into(),
        "appenddirname" => c.shared.aof.settings().dirname,
        "appendfilename" => c.shared.aof.settings().filename,
        "aof-use-rdb-preamble" => yes_no(c.shared.aof.settings().rdb_preamble).into(),
        "aof-load-truncated" => yes_no(c.shared.aof.settings().load_truncated).into(),
        "aof-rewrite-incremental-fsync" => "yes".into(),
        "aof-timestamp-enabled" => "no".into(),
        "auto-aof-rewrite-percentage" => c.shared.aof.settings().rewrite_percentage.to_string(),
        "auto-aof-rewrite-min-size" => c.shared.aof.settings().rewrite_min_size.to_string(),
        "no-appendfsync-on-rewrite" => yes_no(c.shared.aof.settings().no_fsync_on_rewrite).into(),
        "io-threads" => c.shared.threads.to_string(),
        "hz" => "10".into(),
        "dir" => {
            let d = c.shared.persistence.settings().dir;
            std::fs::canonicalize(&d).unwrap_or(d).display().to_string()
        }
        "dbfilename" => c.shared.persistence.settings().dbfilename,
        "rdbcompression" => yes_no(c.shared.persistence.settings().compression).into(),
        "rdbchecksum" => yes_no(c.shared.persistence.settings().checksum).into(),
        "stop-writes-on-bgsave-error" => yes_no(c.shared.persistence.settings().stop_writes_on_error).into(),
        "cluster-enabled" => "no".into(),
        "client-output-buffer-limit" => c.shared.pubsub.limits().to_string(),
        "list-compress-depth" => s.list_compress_depth.to_string(),
        "slowlog-log-slower-than" => c.shared.slowlog.slower_than().to_string(),
        "slowlog-max-len" => c.shared.slowlog.max_len().to_string(),
        "busy-reply-threshold" | "lua-time-limit" => c.shared.running.busy_ms().to_string(),
        "min-replicas-to-write" => c.shared.min_replicas.to_write().to_string(),
        "min-replicas-max-lag" => c.shared.min_replicas.max_lag().to_string(),
        "notify-keyspace-events" => c.shared.events.text(),
        "tracking-table-max-keys" => c.shared.tracking.max_keys().to_string(),
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
    if let Some(i) = hopless_kv::Limits::index_of(p) {
        if hopless_kv::Limits::NAMES[i].0 == "hll-sparse-max-bytes" {
            // A memory value (Redis's `memtoull`, its product wrapping as in C) in 0..=LONG_MAX.
            let n = memtoull(v.as_bytes()).ok_or("argument must be a memory value")?;
            if n > i64::MAX as u64 {
                return Err(format!("argument must be between 0 and {} inclusive", i64::MAX));
            }
            sh.store.set_limit(i, n as i64);
            return Ok(());
        }
        // `list-max-listpack-size` is a signed int (negative: node bytes); the others a size (>= 0).
        let n = v
            .parse::<i64>()
            .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
        let signed = hopless_kv::Limits::NAMES[i].0 == "list-max-listpack-size";
        if signed && !(i32::MIN as i64..=i32::MAX as i64).contains(&n) {
            return Err(format!(
                "argument must be between {} and {} inclusive",
                i32::MIN,
                i32::MAX
            ));
        }
        if !signed && n < 0 {
            return Err("argument must be between 0 and 9223372036854775807 inclusive".into());
        }
        sh.store.set_limit(i, n);
        return Ok(());
    }
    // A signed integer in `min..=i64::MAX`, as Redis's numeric parameters are checked.
    let ranged = |min: i64| {
        let n = hopless_kv::store::parse_i64(v.as_bytes())
            .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
        if n < min {
            return Err(format!(
                "argument must be between {min} and {} inclusive",
                i64::MAX
            ));
        }
        Ok(n)
    };
    // A C int from 0, as Redis checks `min-replicas-to-write` and `min-replicas-max-lag`.
    let c_int_ranged = || {
        let n = hopless_kv::store::parse_i64(v.as_bytes())
            .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
        if !(0..=i64::from(i32::MAX)).contains(&n) {
            return Err(format!("argument must be between 0 and {} inclusive", i32::MAX));
        }
        Ok(n as u64)
    };
    match p {
        "slowlog-log-slower-than" => sh.slowlog.set_slower_than(ranged(-1)?),
        "slowlog-max-len" => sh.slowlog.set_max_len(ranged(0)? as u64),
        "busy-reply-threshold" | "lua-time-limit" => sh.running.set_busy_ms(ranged(0)? as u64),
        "min-replicas-to-write" => sh.min_replicas.set_to_write(c_int_ranged()?),
        "min-replicas-max-lag" => sh.min_replicas.set_max_lag(c_int_ranged()?),
        "tracking-table-max-keys" => sh.tracking.set_max_keys(ranged(0)? as u64),
        "notify-keyspace-events" => {
            if !sh.events.set(v.as_bytes()) {
                return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into());
            }
        }
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
            let b = parse_yes_no(&v).ok_or("argument must be 'yes' or 'no'")?;
            sh.with_settings(|s| s.protected_mode = b);
        }
        "client-output-buffer-limit" => sh.pubsub.set_limits(&v)?,
        // Accepted as Redis accepts it (0 to INT_MAX), and not applied: list nodes are not compressed.
        "list-compress-depth" => {
            let n = v
                .parse::<i64>()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                return Err(format!("argument must be between 0 and {} inclusive", i32::MAX));
            }
            sh.with_settings(|s| s.list_compress_depth = n);
        }
        "save" => {
            let points = crate::snapshot::state::parse_save(&v)?;
            sh.persistence.change(|s| s.save = points);
        }
        // Redis's protected configs (`enable-protected-configs no`, its default).
        "dir" | "dbfilename" => return Err("can't set protected config".into()),
        "rdbcompression" | "rdbchecksum" | "stop-writes-on-bgsave-error" => {
            let on = parse_yes_no(&v).ok_or("argument must be 'yes' or 'no'")?;
            sh.persistence.change(|s| match p {
                "rdbcompression" => s.compression = on,
                "rdbchecksum" => s.checksum = on,
                _ => s.stop_writes_on_error = on,
            });
        }
        "appendonly" => {
            let on = parse_yes_no(&v).ok_or("argument must be 'yes' or 'no'")?;
            set_appendonly(c, on)?;
        }
        "appendfsync" => {
            let f = crate::aof::Fsync::parse(&v)
                .ok_or("argument(s) must be one of the following: always, everysec, no")?;
            sh.aof.with_settings(|s| s.fsync = f);
        }
        "aof-use-rdb-preamble" | "aof-load-truncated" | "no-appendfsync-on-rewrite" => {
            let on = parse_yes_no(&v).ok_or("argument must be 'yes' or 'no'")?;
            sh.aof.with_settings(|s| match p {
                "aof-use-rdb-preamble" => s.rdb_preamble = on,
                "aof-load-truncated" => s.load_truncated = on,
                _ => s.no_fsync_on_rewrite = on,
            });
        }
        // Rewrites write their base in one go and fsync it once; accepted as Redis accepts it.
        "aof-rewrite-incremental-fsync" => {
            parse_yes_no(&v).ok_or("argument must be 'yes' or 'no'")?;
        }
        "aof-timestamp-enabled" => match parse_yes_no(&v) {
            Some(false) => {}
            Some(true) => return Err("hopless does not write timestamp annotations".into()),
            None => return Err("argument must be 'yes' or 'no'".into()),
        },
        "auto-aof-rewrite-percentage" => {
            let n = c_int_ranged()?;
            sh.aof.with_settings(|s| s.rewrite_percentage = n);
        }
        "auto-aof-rewrite-min-size" => {
            let n = mem()?;
            sh.aof.with_settings(|s| s.rewrite_min_size = n);
        }
        "maxmemory-samples" | "hz" => {}
        _ => return Err("can't set immutable config".into()),
    }
    Ok(())
}

/// CONFIG SET appendonly: off stops recording (a rewrite in flight stopped, what is pending synced);
/// on starts a rewrite whose base the new increment follows, at once (every gate held here) or, while a
/// background save runs, once it ends (the base made then covers every write until then, as Redis's).
fn set_appendonly(c: &Ctx<'_>, on: bool) -> Result<(), String> {
    let sh = c.shared;
    let was = sh.aof.settings().enabled;
    sh.aof.with_settings(|s| s.enabled = on);
    if on == was {
        return Ok(());
    }
    let _all = if c.in_exec {
        None
    } else {
        Some(
            sh.gate
                .exclusive_unless(|| sh.running.busy())
                .ok_or("BUSY Redis is busy running a script.")?,
        )
    };
    if !on {
        crate::aof::rewrite::turn_off(sh);
        return Ok(());
    }
    // A rewrite of a log that was off (BGREWRITEAOF) is replaced by the one that turns it on.
    crate::aof::rewrite::kill_child(sh);
    if sh.persistence.child().is_some() {
        return Ok(());
    }
    crate::aof::rewrite::start(sh, true).map_err(|e| {
        tracing::warn!("can't turn the append only file on: {e}");
        sh.aof.with_settings(|s| s.enabled = false);
        "Unable to turn on AOF. Check server logs.".to_string()
    })
}

/// Redis's `memtoull`: digits, then an optional unit (`b`, `k`, `kb`, `m`, `mb`, `g`, `gb`, any case).
/// No digits read as 0; digits past `u64::MAX` saturate (`strtoull`) and the product wraps, as in C.
fn memtoull(s: &[u8]) -> Option<u64> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let (num, unit) = s.split_at(digits);
    let mul: u64 = match unit.to_ascii_lowercase().as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits >= 128 {
        return None;
    }
    let n = num.iter().fold(0u64, |n, &d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    });
    Some(n.wrapping_mul(mul))
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

fn config(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let sub = subcommand(a);
    match sub.as_str() {
        "get" if a.len() >= 3 => {
            let mut found: Vec<&str> = Vec::new();
            for pat in &a[2..] {
                let pat = pat.to_ascii_lowercase();
                for p in all_params() {
                    if glob_match(&pat, p.as_bytes()) && !found.contains(&p) {
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
                if !all_params().any(|x| x == p) {
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
            c.shared.stats.reset_commands();
            c.shared.errors.reset();
            c.out.ok();
        }
        "rewrite" if a.len() == 2 => {
            return Err(CmdError::Static(
                "ERR The server is running without a config file",
            ))
        }
        "help" if a.len() == 2 => c.out.bulks(CONFIG_HELP.iter().map(|s| s.as_bytes())),
        "get" | "set" | "resetstat" | "rewrite" | "help" => return Err(wrong_sub_args(c.name, &a[1])),
        _ => return Err(unknown_sub(c.name, &a[1])),
    }
    Ok(())
}
