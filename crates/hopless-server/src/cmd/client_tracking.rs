//! CLIENT's client-side caching subcommands, as Redis 7.0's `clientCommand` parses and checks them:
//! TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP], CACHING YES|NO,
//! GETREDIR, TRACKINGINFO. The table they change is `crate::tracking`.

use bytes::Bytes;

use super::command::{int_arg, Ctx};
use crate::errors::{CmdError, CmdResult, SYNTAX};
use crate::state::TrackingConn;
use crate::tracking::Options;
use crate::words::eq;

/// CLIENT TRACKING (at least three arguments).
pub(super) fn tracking(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let mut redirect = 0u64;
    let mut o = Options::default();
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        let w = &a[j];
        if eq(w, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return Err(CmdError::Static(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = int_arg(&a[j])?;
            match u64::try_from(id) {
                Ok(id) if c.shared.clients().contains_key(&id) => redirect = id,
                _ => {
                    return Err(CmdError::Static(
                        "ERR The client ID you want redirect to does not exist",
                    ))
                }
            }
        } else if eq(w, "bcast") {
            o.bcast = true;
        } else if eq(w, "optin") {
            o.optin = true;
        } else if eq(w, "optout") {
            o.optout = true;
        } else if eq(w, "noloop") {
            o.noloop = true;
        } else if eq(w, "prefix") && more {
            j += 1;
            prefixes.push(a[j].clone());
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let id = c.conn.id();
    if eq(&a[2], "on") {
        if !o.bcast && !prefixes.is_empty() {
            return Err(CmdError::Static(
                "ERR PREFIX option requires BCAST mode to be enabled",
            ));
        }
        let old = c.conn.tracking.map(|t| t.options);
        if old.is_some_and(|old| old.bcast != o.bcast) {
            return Err(CmdError::Static(
                "ERR You can't switch BCAST mode on/off before disabling tracking for this client, \
                 and then re-enabling it with a different mode.",
            ));
        }
        if o.bcast && (o.optin || o.optout) {
            return Err(CmdError::Static(
                "ERR OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if o.optin && o.optout {
            return Err(CmdError::Static(
                "ERR You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if old.is_some_and(|old| (o.optin && old.optout) || (o.optout && old.optin)) {
            return Err(CmdError::Static(
                "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
                 and then re-enabling it with a different mode.",
            ));
        }
        if o.bcast {
            let have = c.shared.tracking.info(id).map(|i| i.prefixes).unwrap_or_default();
            check_prefixes(&have, &prefixes)?;
        }
        c.shared.tracking.enable(id, redirect, o, &prefixes);
        let caching = c.conn.tracking.is_some_and(|t| t.caching);
        c.conn.tracking = Some(TrackingConn {
            options: o,
            caching,
            script_read: false,
        });
    } else if eq(&a[2], "off") {
        if c.conn.tracking.take().is_some() {
            c.shared.tracking.disable(id);
        }
    } else {
        return Err(SYNTAX);
    }
    c.out.ok();
    Ok(())
}

/// Redis's `checkPrefixCollisionsOrReply`: no new prefix may be a prefix of, or start with, one the
/// client has or another new one (two such would both report a key).
fn check_prefixes(have: &[Bytes], new: &[Bytes]) -> CmdResult {
    let overlap = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in new.iter().enumerate() {
        if let Some(h) = have.iter().find(|h| overlap(h, p)) {
            return Err(CmdError::Msg(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client \
                 must not overlap.",
                text(p),
                text(h)
            )));
        }
        if let Some(q) = new[i + 1..].iter().find(|q| overlap(p, q)) {
            return Err(CmdError::Msg(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single \
                 client must not overlap.",
                text(p),
                text(q)
            )));
        }
    }
    Ok(())
}

/// CLIENT CACHING YES|NO.
pub(super) fn caching(c: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    let Some(t) = &mut c.conn.tracking else {
        return Err(CmdError::Static(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or \
             OPTOUT mode enabled",
        ));
    };
    if eq(&a[2], "yes") {
        if !t.options.optin {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if eq(&a[2], "no") {
        if !t.options.optout {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(SYNTAX);
    }
    t.caching = true;
    c.out.ok();
    Ok(())
}

/// CLIENT GETREDIR: the client its invalidations go to, 0 for itself, -1 when it does not track.
pub(super) fn getredir(c: &mut Ctx<'_>) {
    let info = c.shared.tracking.info(c.conn.id());
    c.out.int(info.map_or(-1, |i| i.redirect as i64));
}

/// CLIENT TRACKINGINFO: its flags, redirection and prefixes.
pub(super) fn trackinginfo(c: &mut Ctx<'_>) {
    let info = c.shared.tracking.info(c.conn.id());
    let caching = c.conn.tracking.is_some_and(|t| t.caching);
    let mut flags: Vec<&str> = vec![if info.is_some() { "on" } else { "off" }];
    if let Some(i) = &info {
        let o = i.options;
        let pairs = [
            (o.bcast, "bcast"),
            (o.optin, "optin"),
            (o.optin && caching, "caching-yes"),
            (o.optout, "optout"),
            (o.optout && caching, "caching-no"),
            (o.noloop, "noloop"),
            (i.broken, "broken_redirect"),
        ];
        flags.extend(pairs.iter().filter(|p| p.0).map(|p| p.1));
    }
    c.out.map(3);
    c.out.bulk(b"flags");
    c.out.set(flags.len());
    for f in flags {
        c.out.bulk(f.as_bytes());
    }
    c.out.bulk(b"redirect");
    c.out.int(info.as_ref().map_or(-1, |i| i.redirect as i64));
    c.out.bulk(b"prefixes");
    let prefixes = info.map(|i| i.prefixes).unwrap_or_default();
    c.out.array(prefixes.len());
    for p in &prefixes {
        c.out.bulk(p);
    }
}
