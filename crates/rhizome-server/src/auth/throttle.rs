//! Failed logins slow down further attempts of the same account from the
//! same source, and nothing else.
//!
//! After `attempts` failures of one (account, source) pair, each further
//! attempt from that pair must wait `delay * 2^(failures past the
//! threshold)`, up to 15 minutes. An attempt during the wait is not checked
//! at all and gets 401 with `Retry-After` (as CouchDB 3.4's lockout, which
//! answers 401 too, so clients need no new case); nothing sleeps, so no
//! thread is held. A success clears the pair. Counts are forgotten 15
//! minutes after the pair's last failure.
//!
//! What it does not do, on purpose (issue 44):
//! - lock an account from everywhere: failures from other sources never
//!   lock its owner out, and credentials the server has verified already
//!   (`auth::verify_cached`) are never refused, so a client that is signed
//!   in keeps working while someone guesses;
//! - lock a source out for every account: names that do not exist, and
//!   other accounts' failures, count only for their own pairs, so one
//!   client behind a proxy cannot lock out everyone behind it (an unknown
//!   name is throttled exactly as a known one, so the lockout tells nobody
//!   which names exist);
//! - grow without bound: at most [`MAX_PAIRS`] pairs are kept (names by a
//!   64-bit keyed hash, not their text); when full, pairs neither locked
//!   nor recent go first, then the pairs whose last failure is oldest.
//!   Every new pair costs its sender a full password verification, so
//!   filling the table to push a lock out costs about 60,000 PBKDF2 runs.
//!
//! A source is an IPv4 address, or an IPv6 address's /64 prefix (one
//! machine's, often one home's: a single host can use the whole /64).

use crate::error::HttpError;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// The pairs kept at most (about 64 bytes each: a few MiB).
pub const MAX_PAIRS: usize = 65_536;

/// An account (its name, hashed) and a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Pair {
    name: u64,
    source: Source,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Source {
    V4([u8; 4]),
    /// The /64 prefix.
    V6([u8; 8]),
    /// No address known (in-process callers).
    Unknown,
}

impl Source {
    fn of(peer: Option<IpAddr>) -> Source {
        match peer.map(|ip| ip.to_canonical()) {
            Some(IpAddr::V4(v4)) => Source::V4(v4.octets()),
            Some(IpAddr::V6(v6)) => {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&v6.octets()[..8]);
                Source::V6(prefix)
            }
            None => Source::Unknown,
        }
    }
}

struct Failures {
    count: u32,
    last: Instant,
    until: Instant,
}

pub struct LoginThrottle {
    attempts: u32,
    delay: Duration,
    /// Keys account names (per process, so their hashes cannot be chosen
    /// to collide with someone else's).
    names: RandomState,
    failures: Mutex<HashMap<Pair, Failures>>,
}

impl LoginThrottle {
    pub fn new(attempts: u32, delay: Duration) -> LoginThrottle {
        LoginThrottle { attempts: attempts.max(1), delay, names: RandomState::new(), failures: Mutex::default() }
    }

    fn pair(&self, name: &str, peer: Option<IpAddr>) -> Pair {
        Pair { name: self.names.hash_one(name), source: Source::of(peer) }
    }

    /// A 401 with `Retry-After` if `name` from `peer` must wait.
    pub fn check(&self, name: &str, peer: Option<IpAddr>) -> Result<(), HttpError> {
        let pair = self.pair(name, peer);
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let wait = failures.get(&pair).map(|f| f.until.saturating_duration_since(Instant::now())).unwrap_or_default();
        if wait.is_zero() {
            return Ok(());
        }
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let mut e = HttpError::unauthorized(format!("Account is temporarily locked due to multiple authentication failures; retry in {secs} s"));
        e.retry_after_secs = Some(secs);
        Err(e)
    }

    pub fn failed(&self, name: &str, peer: Option<IpAddr>) {
        let pair = self.pair(name, peer);
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if failures.len() >= MAX_PAIRS && !failures.contains_key(&pair) {
            make_room(&mut failures, now);
        }
        let f = failures.entry(pair).or_insert(Failures { count: 0, last: now, until: now });
        if now.duration_since(f.last) >= FORGET_AFTER {
            f.count = 0;
        }
        f.count = f.count.saturating_add(1);
        f.last = now;
        if f.count >= self.attempts {
            let doublings = (f.count - self.attempts).min(20);
            f.until = now + self.delay.saturating_mul(1 << doublings).min(MAX_DELAY);
        }
    }

    pub fn succeeded(&self, name: &str, peer: Option<IpAddr>) {
        let pair = self.pair(name, peer);
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).remove(&pair);
    }

    /// Pairs kept now.
    #[cfg(test)]
    fn pairs(&self) -> usize {
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Frees at least one slot in a full table: pairs forgotten already
/// (neither locked nor failed recently), else the eighth of the table whose
/// last failure is oldest (so the next 8,000 new pairs find room without
/// another scan).
fn make_room(failures: &mut HashMap<Pair, Failures>, now: Instant) {
    failures.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER || f.until > now);
    if failures.len() < MAX_PAIRS {
        return;
    }
    let mut ages: Vec<Instant> = failures.values().map(|f| f.last).collect();
    let cut = MAX_PAIRS / 8;
    ages.select_nth_unstable(cut);
    let oldest_kept = ages[cut];
    failures.retain(|_, f| f.last > oldest_kept);
    if failures.len() >= MAX_PAIRS {
        // All failed at the same instant: any eighth will do.
        let doomed: Vec<Pair> = failures.keys().take(cut.max(1)).copied().collect();
        for k in doomed {
            failures.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn the_threshold_locks_the_pair_and_nothing_else() {
        let t = LoginThrottle::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(t.check("bob", ip("10.0.0.1")).is_ok());
            t.failed("bob", ip("10.0.0.1"));
        }
        let e = t.check("bob", ip("10.0.0.1")).unwrap_err();
        assert_eq!((e.status, e.retry_after_secs), (401, Some(60)));
        assert!(t.check("carol", ip("10.0.0.1")).is_ok(), "another account from the same source");
        assert!(t.check("bob", ip("10.0.0.2")).is_ok(), "the same account from another source");
    }

    /// Issue 44: five failures from each of eleven addresses locked the
    /// account everywhere; fifty unknown names from one address locked
    /// everyone behind it.
    #[test]
    fn failures_from_many_sources_or_for_many_names_lock_out_nobody_else() {
        let t = LoginThrottle::new(5, Duration::from_secs(60));
        for a in 1..=11 {
            for _ in 0..5 {
                t.failed("admin", ip(&format!("127.0.0.{a}")));
            }
        }
        assert!(t.check("admin", ip("127.0.0.1")).is_err());
        assert!(t.check("admin", ip("127.0.0.12")).is_ok(), "the owner's own address is not locked");
        for n in 0..50 {
            t.failed(&format!("nobody{n}"), ip("10.0.0.9"));
        }
        assert!(t.check("alice", ip("10.0.0.9")).is_ok(), "a real account behind the same proxy");
    }

    #[test]
    fn an_ipv6_source_is_its_slash_64() {
        let t = LoginThrottle::new(1, Duration::from_secs(60));
        t.failed("bob", ip("2001:db8:1:2::1"));
        assert!(t.check("bob", ip("2001:db8:1:2:ffff::9")).is_err(), "the same /64");
        assert!(t.check("bob", ip("2001:db8:1:3::1")).is_ok(), "another /64");
        t.failed("carol", ip("::ffff:10.0.0.1"));
        assert!(t.check("carol", ip("10.0.0.1")).is_err(), "an IPv4-mapped address is its IPv4 address");
    }

    #[test]
    fn the_table_stays_bounded_and_keeps_the_newest_locks() {
        let t = LoginThrottle::new(1, Duration::from_secs(600));
        t.failed("bob", ip("10.0.0.1"));
        for n in 0..MAX_PAIRS + 10_000 {
            t.failed(&format!("u{n}"), ip("10.1.0.1"));
            assert!(t.pairs() <= MAX_PAIRS);
        }
        // The newest failures are all kept.
        assert!(t.check(&format!("u{}", MAX_PAIRS + 9_999), ip("10.1.0.1")).is_err());
        assert!(t.check(&format!("u{}", MAX_PAIRS), ip("10.1.0.1")).is_err());
    }
}
