//! TTL commands (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with their conditions; PERSIST; PTTL and TTL;
//! GETEX). A key's deadline itself (expiry map, deadline heap, header flag) is `Shard`'s (`shard.rs`).

use super::counters::Op;
use super::options::{ExpireCond, Ttl};
use super::shard::Store;
use crate::alloc::KvAlloc;
use crate::error::{Error, Result};
use crate::types::Kind;
use crate::value::{self, Value};

impl<A: KvAlloc> Store<A> {
    /// PEXPIREAT with a condition: the core of EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT. Returns whether
    /// the TTL was set (false: no such key, or the condition failed). A deadline not in the future deletes
    /// the key (and returns true), as Redis does.
    pub fn pexpire_at(&self, key: &[u8], deadline_ms: i64, cond: ExpireCond) -> Result<bool> {
        let l = self.loc(key);
        self.count(Op::Expire);
        let mut g = self.slot(l).lock.write();
        let Some(i) = self.live_slot(&mut g, l, key) else {
            return Ok(false);
        };
        let item = g.table.item(i);
        let current = g.deadline_of(item);
        let d = deadline_ms.max(0) as u64;
        let ok = match cond {
            ExpireCond::Always => true,
            ExpireCond::Nx => current.is_none(),
            ExpireCond::Xx => current.is_some(),
            // No TTL counts as an infinite one.
            ExpireCond::Gt => current.is_some_and(|c| d > c),
            ExpireCond::Lt => current.is_none_or(|c| d < c),
        };
        if !ok {
            return Ok(false);
        }
        if deadline_ms <= self.now() as i64 {
            let old = g.remove_slot(i, &self.slot(l).c.used);
            drop(g);
            self.release(old);
            return Ok(true);
        }
        g.set_deadline(item, d);
        Ok(true)
    }

    fn relative(&self, amount: i64, unit_ms: i64) -> Result<i64> {
        amount
            .checked_mul(unit_ms)
            .and_then(|ms| ms.checked_add(self.now() as i64))
            .ok_or(Error::InvalidExpire)
    }

    pub fn expire(&self, key: &[u8], secs: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(key, self.relative(secs, 1000)?, cond)
    }

    pub fn pexpire(&self, key: &[u8], ms: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(key, self.relative(ms, 1)?, cond)
    }

    pub fn expire_at(&self, key: &[u8], unix_secs: i64, cond: ExpireCond) -> Result<bool> {
        self.pexpire_at(
            key,
            unix_secs.checked_mul(1000).ok_or(Error::InvalidExpire)?,
            cond,
        )
    }

    /// PERSIST: whether a TTL was removed.
    pub fn persist(&self, key: &[u8]) -> bool {
        let l = self.loc(key);
        self.count(Op::Persist);
        let mut g = self.slot(l).lock.write();
        let Some(i) = self.live_slot(&mut g, l, key) else {
            return false;
        };
        let item = g.table.item(i);
        g.clear_deadline(item)
    }

    /// PTTL: -2 if the key does not exist, -1 if it has no TTL, else milliseconds left.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        let l = self.loc(key);
        self.count(Op::Ttl);
        let now = self.now();
        let Some(item) = self.lookup(key, l, false) else {
            return -2;
        };
        let r = {
            let g = self.slot(l).lock.read();
            match g.expires.get(&(item.as_ptr() as usize)) {
                Some(&d) => d.saturating_sub(now) as i64,
                None => -1,
            }
        };
        self.release(item);
        r
    }

    /// PEXPIRETIME: -2 if the key does not exist, -1 if it has no TTL, else its deadline (ms since the
    /// Unix epoch).
    pub fn pexpiretime(&self, key: &[u8]) -> i64 {
        let l = self.loc(key);
        self.count(Op::Ttl);
        let Some(item) = self.lookup(key, l, false) else {
            return -2;
        };
        let r = {
            let g = self.slot(l).lock.read();
            g.expires.get(&(item.as_ptr() as usize)).map_or(-1, |&d| d as i64)
        };
        self.release(item);
        r
    }

    /// EXPIRETIME: like PEXPIRETIME, in seconds (rounded down, as Redis does).
    pub fn expiretime(&self, key: &[u8]) -> i64 {
        match self.pexpiretime(key) {
            ms if ms < 0 => ms,
            ms => ms / 1000,
        }
    }

    /// TTL: like PTTL, in seconds (rounded as Redis rounds).
    pub fn ttl(&self, key: &[u8]) -> i64 {
        match self.pttl(key) {
            ms if ms < 0 => ms,
            ms => (ms + 500) / 1000,
        }
    }

    /// GETEX: GET, and set (EX/PX/EXAT/PXAT) or remove (PERSIST) the TTL; `Ttl::None` leaves it alone. An
    /// EXAT/PXAT time already past deletes the key (its value is still returned). Errors in Redis's order:
    /// WRONGTYPE, then a time out of range.
    pub fn getex(&self, key: &[u8], ttl: Ttl) -> Result<Option<Value<A>>> {
        let l = self.loc(key);
        self.count(Op::GetEx);
        let mut g = self.slot(l).lock.write();
        let Some(i) = self.live_slot(&mut g, l, key) else {
            drop(g);
            self.hit_or_miss(false);
            return Ok(None);
        };
        let item = g.table.item(i);
        // SAFETY: the table's item, under the write lock.
        if unsafe { value::kind(item) } != Kind::String {
            return Err(Error::WrongType);
        }
        // The time is checked after the key and its kind, as Redis checks it.
        let d = self.deadline(ttl)?;
        // SAFETY: the table's item; the new reference is the caller's.
        unsafe { value::retain(item) };
        let mut gone = None;
        match (ttl, d) {
            (Ttl::Persist, _) => {
                g.clear_deadline(item);
            }
            // An absolute time already past deletes the key, once its value is read (as Redis does).
            (Ttl::ExAt(_) | Ttl::PxAt(_), Some(d)) if d <= self.now() => {
                gone = Some(g.remove_slot(i, &self.slot(l).c.used));
            }
            (_, Some(d)) => g.set_deadline(item, d),
            _ => {}
        }
        drop(g);
        if let Some(old) = gone {
            self.release(old);
        }
        self.hit_or_miss(true);
        Ok(Some(self.value(item)))
    }
}
