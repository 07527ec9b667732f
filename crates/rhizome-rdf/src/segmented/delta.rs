//! The delta of one ordering: the keys written since its segment, each
//! with its versions, a version being the sequence number of the commit
//! that made it and whether the key is there after it. A snapshot with
//! sequence number `at` sees, for each key, its newest version numbered
//! `at` or less (none: the segment decides), so a reader sees exactly the
//! commits before it, deletions included, however many writes follow.
//!
//! A writer adds its versions before its commit reaches the engine,
//! numbered as the commit will be (readers older than the commit skip
//! them), and takes them out again if the commit fails: no reader waits
//! for a commit's sync. Versions are never changed or removed while
//! readers may see them; a merge makes a new delta instead.

use super::Key;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

/// A version: the sequence number shifted left by one, the low bit set
/// when the key is there.
type Version = u64;

fn version(seq: u64, present: bool) -> Version {
    seq << 1 | present as u64
}

fn seq_of(v: Version) -> u64 {
    v >> 1
}

fn present(v: Version) -> bool {
    v & 1 == 1
}

/// A key's versions: the newest inline (most keys have one), older ones
/// in increasing order.
#[derive(Clone, Debug)]
struct Versions {
    newest: Version,
    older: Option<Box<Vec<Version>>>,
}

impl Versions {
    /// Whether the key is there for a reader at `at`, if a version says.
    fn at(&self, at: u64) -> Option<bool> {
        if seq_of(self.newest) <= at {
            return Some(present(self.newest));
        }
        self.older.as_ref()?.iter().rev().find(|v| seq_of(**v) <= at).map(|v| present(*v))
    }

    fn push(&mut self, v: Version) {
        debug_assert!(seq_of(v) >= seq_of(self.newest), "versions are added in commit order");
        if seq_of(v) == seq_of(self.newest) {
            self.newest = v;
            return;
        }
        let old = std::mem::replace(&mut self.newest, v);
        self.older.get_or_insert_with(Default::default).push(old);
    }

    /// Takes out the version numbered `seq` (a failed commit's); `true`
    /// when none is left.
    fn undo(&mut self, seq: u64) -> bool {
        if seq_of(self.newest) != seq {
            return false;
        }
        match self.older.as_mut().and_then(|o| o.pop()) {
            Some(v) => {
                self.newest = v;
                false
            }
            None => true,
        }
    }

    /// The versions numbered after `cut`.
    fn after(&self, cut: u64) -> Option<Versions> {
        let mut kept = self.older.iter().flat_map(|o| o.iter().copied()).filter(|v| seq_of(*v) > cut).collect::<Vec<_>>();
        if seq_of(self.newest) <= cut {
            return None;
        }
        let older = (!kept.is_empty()).then(|| Box::new(std::mem::take(&mut kept)));
        Some(Versions { newest: self.newest, older })
    }
}

#[derive(Default)]
pub(crate) struct Delta {
    map: RwLock<BTreeMap<Key, Versions>>,
    /// Keys in `map`: a reader skips an empty delta without its lock.
    keys: AtomicUsize,
    /// Changes made to it (every version counts), for the merge's trigger.
    changes: AtomicU64,
}

impl Delta {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Key, Versions>> {
        // The map is changed only by inserting or removing whole entries:
        // a writer that panicked left it consistent.
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<Key, Versions>> {
        self.map.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_empty(&self) -> bool {
        self.keys.load(Ordering::Acquire) == 0
    }

    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Adds the versions of one commit, numbered `seq`.
    pub fn apply(&self, entries: impl IntoIterator<Item = (Key, bool)>, seq: u64) {
        let mut map = self.write();
        let mut n = 0;
        for (key, there) in entries {
            let v = version(seq, there);
            // One search per key (a new key is most of a commit's: a get
            // then an insert searched twice, 0.4M instructions an LDP PUT).
            match map.entry(key) {
                Entry::Occupied(mut e) => e.get_mut().push(v),
                Entry::Vacant(e) => {
                    e.insert(Versions { newest: v, older: None });
                }
            }
            n += 1;
        }
        self.keys.store(map.len(), Ordering::Release);
        self.changes.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes out the versions numbered `seq` of these keys (a commit that
    /// failed).
    pub fn undo(&self, keys: impl IntoIterator<Item = Key>, seq: u64) {
        let mut map = self.write();
        for key in keys {
            if map.get_mut(&key).is_some_and(|v| v.undo(seq)) {
                map.remove(&key);
            }
        }
        self.keys.store(map.len(), Ordering::Release);
    }

    /// Whether `key` is there for a reader at `at`, if the delta says.
    pub fn get(&self, key: &Key, at: u64) -> Option<bool> {
        if self.is_empty() {
            return None;
        }
        self.read().get(key).and_then(|v| v.at(at))
    }

    /// Appends to `out` up to `max` entries a reader at `at` sees, from
    /// `from` on in key order (state `true`: there, `false`: deleted);
    /// `true` when none is left after them.
    pub fn fill(&self, from: Bound<Key>, at: u64, out: &mut Vec<(Key, bool)>, max: usize) -> bool {
        if self.is_empty() {
            return true;
        }
        let map = self.read();
        let mut taken = 0;
        for (key, versions) in map.range((from, Bound::Unbounded)) {
            if let Some(there) = versions.at(at) {
                if taken == max {
                    return false;
                }
                out.push((*key, there));
                taken += 1;
            }
        }
        true
    }

    /// The last entry a reader at `at` sees before `until` (inclusive or
    /// not), in key order.
    pub fn last_before(&self, until: Bound<Key>, at: u64) -> Option<(Key, bool)> {
        if self.is_empty() {
            return None;
        }
        let map = self.read();
        map.range((Bound::Unbounded, until)).rev().find_map(|(key, versions)| versions.at(at).map(|there| (*key, there)))
    }

    /// Whether a reader at `at` sees any entry.
    pub fn any_at(&self, at: u64) -> bool {
        !self.is_empty() && self.read().values().any(|v| v.at(at).is_some())
    }

    /// A delta of the versions numbered after `cut` (what a merge up to
    /// `cut` leaves).
    pub fn after(&self, cut: u64) -> Delta {
        let map = self.read();
        let kept: BTreeMap<Key, Versions> = map.iter().filter_map(|(k, v)| v.after(cut).map(|v| (*k, v))).collect();
        let changes = kept.values().map(|v| 1 + v.older.as_ref().map_or(0, |o| o.len()) as u64).sum();
        Delta { keys: AtomicUsize::new(kept.len()), map: RwLock::new(kept), changes: AtomicU64::new(changes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u64) -> Key {
        [n, 0, 0, 0]
    }

    fn seen(d: &Delta, at: u64) -> Vec<(u64, bool)> {
        let mut out = Vec::new();
        assert!(d.fill(Bound::Unbounded, at, &mut out, usize::MAX));
        out.into_iter().map(|(k, t)| (k[0], t)).collect()
    }

    #[test]
    fn each_reader_sees_the_versions_numbered_at_or_before_its_sequence() {
        let d = Delta::default();
        d.apply([(k(1), true), (k(2), true)], 10);
        d.apply([(k(1), false), (k(3), true)], 20);
        d.apply([(k(1), true)], 30);
        assert_eq!(seen(&d, 9), vec![]);
        assert_eq!(seen(&d, 10), vec![(1, true), (2, true)]);
        assert_eq!(seen(&d, 25), vec![(1, false), (2, true), (3, true)]);
        assert_eq!(seen(&d, 30), vec![(1, true), (2, true), (3, true)]);
        assert_eq!(d.get(&k(1), 29), Some(false));
        assert_eq!(d.get(&k(3), 19), None);
        assert_eq!(d.last_before(Bound::Excluded(k(3)), 15), Some((k(2), true)));
        assert_eq!(d.last_before(Bound::Excluded(k(2)), 25), Some((k(1), false)));
        // A failed commit's versions go; older ones stay.
        d.undo([k(1)], 30);
        assert_eq!(d.get(&k(1), 40), Some(false));
        d.undo([k(3)], 20);
        assert_eq!(seen(&d, 40), vec![(1, false), (2, true)]);
        // What a merge up to 15 leaves: the versions after it.
        let after = d.after(15);
        assert_eq!(seen(&after, 40), vec![(1, false)]);
        assert_eq!(after.get(&k(2), 40), None);
    }

    #[test]
    fn fill_stops_at_its_limit_and_says_whether_more_is_left() {
        let d = Delta::default();
        d.apply((0..10).map(|i| (k(i), i % 2 == 0)), 5);
        d.apply([(k(100), true)], 50);
        let mut out = Vec::new();
        assert!(!d.fill(Bound::Included(k(3)), 5, &mut out, 4));
        assert_eq!(out.iter().map(|e| e.0[0]).collect::<Vec<_>>(), vec![3, 4, 5, 6]);
        out.clear();
        // Entries numbered after the reader's sequence do not count.
        assert!(d.fill(Bound::Excluded(k(6)), 5, &mut out, 3));
        assert_eq!(out.iter().map(|e| e.0[0]).collect::<Vec<_>>(), vec![7, 8, 9]);
    }
}
