//! Failed logins slow down further attempts: per user and client address,
//! per user from anywhere, and per address whatever the user.
//!
//! After `attempts` failures (the pair; ten times as many for a user or
//! an address alone, so that one client guessing cannot lock a user out
//! everywhere, nor one shared address lock out everyone behind it), each
//! further attempt must wait `delay * 2^(failures past the threshold)`,
//! up to 15 minutes. An attempt during the wait is not checked at all and
//! gets 401 with `Retry-After` (as CouchDB 3.4's lockout, which answers 401
//! too, so clients need no new case); nothing sleeps, so no thread is held.
//! A success clears the pair's and the user's count. Counts are kept in
//! memory and forgotten 15 minutes after the last failure.

use crate::error::HttpError;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// Entries kept before forgotten ones are swept.
const SWEEP_AT: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Pair(String, Option<IpAddr>),
    User(String),
    Address(IpAddr),
}

struct Failures {
    count: u32,
    last: Instant,
    until: Instant,
}

pub struct LoginThrottle {
    attempts: u32,
    delay: Duration,
    failures: Mutex<HashMap<Key, Failures>>,
}

impl LoginThrottle {
    pub fn new(attempts: u32, delay: Duration) -> LoginThrottle {
        LoginThrottle { attempts: attempts.max(1), delay, failures: Mutex::default() }
    }

    fn keys(name: &str, peer: Option<IpAddr>) -> Vec<(Key, u32)> {
        let mut keys = vec![(Key::Pair(name.to_owned(), peer), 1), (Key::User(name.to_owned()), 10)];
        if let Some(ip) = peer {
            keys.push((Key::Address(ip), 10));
        }
        keys
    }

    /// A 401 with `Retry-After` if `name` from `peer` must wait.
    pub fn check(&self, name: &str, peer: Option<IpAddr>) -> Result<(), HttpError> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let wait = Self::keys(name, peer).iter().filter_map(|(k, _)| failures.get(k)).map(|f| f.until.saturating_duration_since(now)).max().unwrap_or_default();
        if wait.is_zero() {
            return Ok(());
        }
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let mut e = HttpError::unauthorized(format!("Account is temporarily locked due to multiple authentication failures; retry in {secs} s"));
        e.retry_after_secs = Some(secs);
        Err(e)
    }

    pub fn failed(&self, name: &str, peer: Option<IpAddr>) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if failures.len() >= SWEEP_AT {
            failures.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER || f.until > now);
            // Still full (failures from very many addresses or names): keep
            // only what is locked now, so memory and sweeps stay bounded.
            if failures.len() >= SWEEP_AT / 2 {
                failures.retain(|_, f| f.until > now);
            }
            if failures.len() >= SWEEP_AT / 2 {
                failures.clear();
            }
        }
        for (key, scale) in Self::keys(name, peer) {
            let f = failures.entry(key).or_insert(Failures { count: 0, last: now, until: now });
            if now.duration_since(f.last) >= FORGET_AFTER {
                f.count = 0;
            }
            f.count += 1;
            f.last = now;
            let threshold = self.attempts.saturating_mul(scale);
            if f.count >= threshold {
                let doublings = (f.count - threshold).min(20);
                f.until = now + self.delay.saturating_mul(1 << doublings).min(MAX_DELAY);
            }
        }
    }

    pub fn succeeded(&self, name: &str, peer: Option<IpAddr>) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.remove(&Key::Pair(name.to_owned(), peer));
        failures.remove(&Key::User(name.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_locks_the_pair_and_not_another_user() {
        let t = LoginThrottle::new(3, Duration::from_secs(60));
        let ip = Some("10.0.0.1".parse().unwrap());
        for _ in 0..3 {
            assert!(t.check("bob", ip).is_ok());
            t.failed("bob", ip);
        }
        let e = t.check("bob", ip).unwrap_err();
        assert_eq!((e.status, e.retry_after_secs), (401, Some(60)));
        assert!(t.check("carol", ip).is_ok());
        assert!(t.check("bob", Some("10.0.0.2".parse().unwrap())).is_ok());
    }
}
