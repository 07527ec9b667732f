//! Keys carried in the quad log: the writes a commit makes to the
//! statistics keyspaces (per-predicate counts, class counts, value
//! counts) travel in its log record with its quad changes instead of
//! going to the engine as keys of their own, and are kept here, versioned
//! by the commit's sequence number like the orderings' deltas. A reader
//! at sequence number `at` sees each key's newest version numbered `at`
//! or less, else the engine's value (which holds the key as of the view's
//! cut): exactly the committed state of its snapshot. A merge writes the
//! values at its cut to the engine in the commit of the new segment set,
//! and the new view keeps the versions after it.
//!
//! Why: a 200-triple LDP PUT touches about 150 predicates, and wrote some
//! 350 statistics keys into RocksDB's memtable at about 4,400 instructions
//! each (issue 46); here a key costs a map insert, and the log record one
//! more copy of its bytes.

use rhizome_kv::{Cursor, Keyspace};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

use crate::index::layout::{CLASS_STATS, PREDICATE_STATS, VALUE_COUNTS};

/// The keyspaces whose writes are carried in the log.
pub(crate) const CARRIED: [Keyspace; 3] = [PREDICATE_STATS, CLASS_STATS, VALUE_COUNTS];

pub(crate) fn is_carried(ks: Keyspace) -> bool {
    CARRIED.contains(&ks)
}

/// The longest key carried: statistics keys are one or two ids. A longer
/// key in those keyspaces (none is written) stays an engine key, so a
/// key is always kept one way.
const MAX_KEY: usize = 16;

/// Whether a write of `key` to `ks` is carried in the log.
pub(crate) fn carries(ks: Keyspace, key: &[u8]) -> bool {
    key.len() <= MAX_KEY && is_carried(ks)
}

/// A write to a carried keyspace: the key and its value after the commit
/// (`None`: deleted).
pub(crate) type CarriedWrite = (Keyspace, Vec<u8>, Option<Vec<u8>>);

/// A value as kept: statistics values (at most 24 bytes) inline, with no
/// allocation; others on the heap.
#[derive(Clone)]
enum Value {
    Deleted,
    Inline(u8, [u8; 24]),
    Heap(Box<[u8]>),
}

impl Value {
    fn new(value: Option<&[u8]>) -> Value {
        match value {
            None => Value::Deleted,
            Some(v) if v.len() <= 24 => {
                let mut bytes = [0; 24];
                bytes[..v.len()].copy_from_slice(v);
                Value::Inline(v.len() as u8, bytes)
            }
            Some(v) => Value::Heap(v.into()),
        }
    }

    fn get(&self) -> Option<&[u8]> {
        match self {
            Value::Deleted => None,
            Value::Inline(n, bytes) => Some(&bytes[..*n as usize]),
            Value::Heap(b) => Some(b),
        }
    }
}

/// A key's versions: (sequence number, value), the newest inline.
#[derive(Clone)]
struct Versions {
    newest: (u64, Value),
    older: Vec<(u64, Value)>,
}

impl Versions {
    fn at(&self, at: u64) -> Option<&Value> {
        if self.newest.0 <= at {
            return Some(&self.newest.1);
        }
        self.older.iter().rev().find(|v| v.0 <= at).map(|v| &v.1)
    }
}

/// The map key: the keyspace's byte, the key's bytes padded with zeros,
/// its length; ordered as the bytes are (a key sorts before its
/// extensions, padded or not, by the length last).
#[derive(Clone, Copy, PartialEq, Eq)]
struct MapKey {
    ks: u8,
    bytes: [u8; MAX_KEY],
    len: u8,
}

impl Ord for MapKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The bytes as one big-endian number order as the bytes do: two
        // word compares instead of a call to memcmp (the derived order).
        (self.ks, u128::from_be_bytes(self.bytes), self.len).cmp(&(other.ks, u128::from_be_bytes(other.bytes), other.len))
    }
}

impl PartialOrd for MapKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl MapKey {
    /// The key of `key`, or of its first `MAX_KEY` bytes (a bound).
    fn new(ks: Keyspace, key: &[u8]) -> MapKey {
        let n = key.len().min(MAX_KEY);
        let mut bytes = [0; MAX_KEY];
        bytes[..n].copy_from_slice(&key[..n]);
        MapKey { ks: ks.0, bytes, len: n as u8 }
    }

    fn key(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

#[derive(Default)]
pub(crate) struct Carried {
    map: RwLock<BTreeMap<MapKey, Versions>>,
    /// Keys in `map`: a reader skips an empty map without its lock.
    keys: AtomicUsize,
    /// Versions added (a merge's trigger, as the deltas' changes).
    versions: AtomicUsize,
}

impl Carried {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<MapKey, Versions>> {
        // Changed only by whole inserts and removals: a panicked writer
        // left it consistent.
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<MapKey, Versions>> {
        self.map.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_empty(&self) -> bool {
        self.keys.load(Ordering::Acquire) == 0
    }

    /// Adds the writes of one commit, numbered `seq`.
    pub fn apply(&self, writes: &[CarriedWrite], seq: u64) {
        if writes.is_empty() {
            return;
        }
        let mut map = self.write();
        for (ks, key, value) in writes {
            debug_assert!(carries(*ks, key), "only carried writes come here");
            let value = Value::new(value.as_deref());
            let k = MapKey::new(*ks, key);
            // One search per key, not a get and then an insert.
            match map.entry(k) {
                Entry::Occupied(mut e) => {
                    let v = e.get_mut();
                    debug_assert!(v.newest.0 <= seq, "versions are added in commit order");
                    if v.newest.0 == seq {
                        v.newest.1 = value;
                    } else {
                        let old = std::mem::replace(&mut v.newest, (seq, value));
                        v.older.push(old);
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(Versions { newest: (seq, value), older: Vec::new() });
                }
            }
        }
        self.keys.store(map.len(), Ordering::Release);
        self.versions.fetch_add(writes.len(), Ordering::Relaxed);
    }

    /// Versions added since the view's cut.
    pub fn versions(&self) -> usize {
        self.versions.load(Ordering::Relaxed)
    }

    /// Takes out the versions numbered `seq` of these writes' keys (a
    /// commit that failed).
    pub fn undo(&self, writes: &[CarriedWrite], seq: u64) {
        if writes.is_empty() {
            return;
        }
        let mut map = self.write();
        for (ks, key, _) in writes {
            let k = MapKey::new(*ks, key);
            let Some(v) = map.get_mut(&k) else { continue };
            if v.newest.0 != seq {
                continue;
            }
            match v.older.pop() {
                Some(old) => v.newest = old,
                None => {
                    map.remove(&k);
                }
            }
        }
        self.keys.store(map.len(), Ordering::Release);
    }

    /// The key's value for a reader at `at`, if a version says
    /// (`Some(None)`: deleted).
    pub fn get(&self, ks: Keyspace, key: &[u8], at: u64) -> Option<Option<Vec<u8>>> {
        if self.is_empty() || !carries(ks, key) {
            return None;
        }
        let map = self.read();
        map.get(&MapKey::new(ks, key)).and_then(|v| v.at(at)).map(|v| v.get().map(<[u8]>::to_vec))
    }

    /// The entries of `ks` in `[lower, upper)` a reader at `at` sees, in
    /// key order (keys without the keyspace byte).
    pub fn range(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>, at: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        if self.is_empty() {
            return Vec::new();
        }
        // Bounds longer than a carried key are cut to one (which sorts at
        // or before them) and checked on the bytes.
        let from = MapKey::new(ks, lower);
        let until = match upper {
            Some(u) if u.len() <= MAX_KEY => Bound::Excluded(MapKey::new(ks, u)),
            Some(u) => Bound::Included(MapKey::new(ks, u)),
            None => Bound::Excluded(MapKey { ks: ks.0.saturating_add(1), bytes: [0; MAX_KEY], len: 0 }),
        };
        let inside = |k: &[u8]| k >= lower && upper.is_none_or(|u| k < u);
        let map = self.read();
        map.range((Bound::Included(from), until))
            .filter(|(k, _)| k.ks == ks.0 && inside(k.key()))
            .filter_map(|(k, v)| v.at(at).map(|value| (k.key().to_vec(), value.get().map(<[u8]>::to_vec))))
            .collect()
    }

    /// Every key's value at `cut`, for the engine (what a merge up to
    /// `cut` writes).
    pub fn at(&self, cut: u64) -> Vec<CarriedWrite> {
        let map = self.read();
        map.iter()
            .filter_map(|(k, v)| v.at(cut).map(|value| (Keyspace(k.ks), k.key().to_vec(), value.get().map(<[u8]>::to_vec))))
            .collect()
    }

    /// Whether a reader at `cut` sees any version (a merge to `cut` has
    /// values to write).
    pub fn any_at(&self, cut: u64) -> bool {
        !self.is_empty() && self.read().values().any(|v| v.at(cut).is_some())
    }

    /// The versions numbered after `cut` (what a merge up to `cut` leaves).
    pub fn after(&self, cut: u64) -> Carried {
        let map = self.read();
        let kept: BTreeMap<MapKey, Versions> = map
            .iter()
            .filter_map(|(k, v)| {
                let mut versions = v.older.iter().chain(std::iter::once(&v.newest)).filter(|x| x.0 > cut).cloned();
                let first = versions.next()?;
                let mut all: Vec<(u64, Value)> = std::iter::once(first).chain(versions).collect();
                let newest = all.pop().expect("one at least");
                Some((*k, Versions { newest, older: all }))
            })
            .collect();
        let versions = kept.values().map(|v| 1 + v.older.len()).sum();
        Carried { keys: AtomicUsize::new(kept.len()), versions: AtomicUsize::new(versions), map: RwLock::new(kept) }
    }
}

/// The engine's cursor with the carried entries a reader sees laid over
/// it: an entry replaces the engine's value of its key, or hides the key
/// (a deletion). The entries are taken once, for the cursor's bounds (the
/// statistics keyspaces are small: a predicate's value counts, at most a
/// few thousand predicates).
pub(crate) struct CarriedCursor<'a> {
    base: Box<dyn Cursor + 'a>,
    entries: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The entry at or after (forward) / at or before (backward) the base.
    pos: Option<usize>,
    forward: bool,
    on_entry: bool,
    lower: Vec<u8>,
}

impl<'a> CarriedCursor<'a> {
    pub fn new(base: Box<dyn Cursor + 'a>, entries: Vec<(Vec<u8>, Option<Vec<u8>>)>, lower: &[u8]) -> CarriedCursor<'a> {
        CarriedCursor { base, entries, pos: None, forward: true, on_entry: false, lower: lower.to_vec() }
    }

    /// Picks the current key: the smaller (forward) or larger (backward)
    /// of the base's and the entries', skipping deletions and the keys
    /// they hide.
    fn settle(&mut self) {
        loop {
            let Some(i) = self.pos.filter(|i| *i < self.entries.len()) else {
                self.on_entry = false;
                return;
            };
            let ek = self.entries[i].0.as_slice();
            let take_entry = !self.base.valid() || if self.forward { ek <= self.base.key() } else { ek >= self.base.key() };
            if !take_entry {
                self.on_entry = false;
                return;
            }
            if self.base.valid() && self.base.key() == ek {
                // The entry replaces the engine's key: step the base past it.
                self.step_base();
            }
            if self.entries[i].1.is_some() {
                self.on_entry = true;
                return;
            }
            self.step_pos();
        }
    }

    fn step_base(&mut self) {
        if self.forward {
            self.base.next()
        } else {
            self.base.prev()
        }
    }

    fn step_pos(&mut self) {
        self.pos = match (self.pos, self.forward) {
            (Some(i), true) => Some(i + 1),
            (Some(0), false) | (None, _) => None,
            (Some(i), false) => Some(i - 1),
        };
    }

    fn current_key(&self) -> Option<Vec<u8>> {
        self.valid().then(|| self.key().to_vec())
    }
}

impl Cursor for CarriedCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        self.forward = true;
        self.base.seek(key);
        let key = key.max(self.lower.as_slice());
        self.pos = Some(self.entries.partition_point(|(k, _)| k.as_slice() < key));
        self.settle();
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        self.forward = false;
        self.base.seek_for_prev(key);
        let n = self.entries.partition_point(|(k, _)| k.as_slice() <= key);
        self.pos = n.checked_sub(1);
        self.settle();
    }

    fn seek_first(&mut self) {
        let lower = self.lower.clone();
        self.seek(&lower);
    }

    fn seek_last(&mut self) {
        self.forward = false;
        self.base.seek_last();
        self.pos = self.entries.len().checked_sub(1);
        self.settle();
    }

    fn valid(&self) -> bool {
        self.on_entry || self.base.valid()
    }

    fn key(&self) -> &[u8] {
        if self.on_entry {
            &self.entries[self.pos.expect("on an entry")].0
        } else {
            self.base.key()
        }
    }

    fn value(&self) -> &[u8] {
        if self.on_entry {
            self.entries[self.pos.expect("on an entry")].1.as_deref().expect("settled on a put")
        } else {
            self.base.value()
        }
    }

    fn next(&mut self) {
        if !self.forward {
            // A change of direction: seek just past the current key.
            if let Some(k) = self.current_key() {
                self.seek(&k);
                if self.valid() && self.key() == k.as_slice() {
                    self.next();
                }
            }
            return;
        }
        if self.on_entry {
            self.step_pos();
        } else {
            self.base.next();
        }
        self.settle();
    }

    fn prev(&mut self) {
        if self.forward {
            if let Some(k) = self.current_key() {
                self.seek_for_prev(&k);
                if self.valid() && self.key() == k.as_slice() {
                    self.prev();
                }
            }
            return;
        }
        if self.on_entry {
            self.step_pos();
        } else {
            self.base.prev();
        }
        self.settle();
    }

    fn status(&self) -> rhizome_kv::Result<()> {
        self.base.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KS: Keyspace = PREDICATE_STATS;

    fn w(key: u8, value: Option<u8>) -> CarriedWrite {
        (KS, vec![key], value.map(|v| vec![v]))
    }

    #[test]
    fn each_reader_sees_the_values_numbered_at_or_before_its_sequence() {
        let c = Carried::default();
        c.apply(&[w(1, Some(10)), w(2, Some(20))], 5);
        c.apply(&[w(1, None), w(3, Some(30))], 7);
        assert_eq!(c.get(KS, &[1], 4), None);
        assert_eq!(c.get(KS, &[1], 5), Some(Some(vec![10])));
        assert_eq!(c.get(KS, &[1], 9), Some(None));
        assert_eq!(c.get(VALUE_COUNTS, &[1], 9), None);
        assert_eq!(c.range(KS, &[], None, 6), vec![(vec![1], Some(vec![10])), (vec![2], Some(vec![20]))]);
        assert_eq!(c.range(KS, &[2], Some(&[3]), 9), vec![(vec![2], Some(vec![20]))]);
        // A failed commit's versions go; older ones stay.
        c.undo(&[w(1, None), w(3, Some(30))], 7);
        assert_eq!(c.get(KS, &[1], 9), Some(Some(vec![10])));
        assert_eq!(c.get(KS, &[3], 9), None);
        c.apply(&[w(1, Some(11))], 8);
        assert_eq!(c.at(6), vec![w(1, Some(10)), w(2, Some(20))]);
        let after = c.after(6);
        assert_eq!(after.at(100), vec![w(1, Some(11))]);
        assert_eq!(after.get(KS, &[2], 100), None);
        assert!(!after.any_at(7) && after.any_at(8));
    }

    #[test]
    fn keys_of_any_length_keep_the_order_of_their_bytes() {
        let c = Carried::default();
        let mut sixteen = vec![1u8];
        sixteen.resize(16, 0);
        let keys: Vec<Vec<u8>> = vec![vec![2], sixteen.clone(), vec![1, 0], vec![1]];
        c.apply(&keys.iter().map(|k| (KS, k.clone(), Some(vec![k.len() as u8]))).collect::<Vec<_>>(), 1);
        let got = |lower: &[u8], upper: Option<&[u8]>| c.range(KS, lower, upper, 1).into_iter().map(|e| e.0).collect::<Vec<_>>();
        assert_eq!(got(&[], None), vec![vec![1], vec![1, 0], sixteen.clone(), vec![2]]);
        assert_eq!(got(&[1, 0], Some(&[2])), vec![vec![1, 0], sixteen.clone()]);
        // Bounds longer than any carried key.
        let mut past = sixteen.clone();
        past.push(5);
        assert_eq!(got(&past, None), vec![vec![2]]);
        assert_eq!(got(&[1], Some(&past)), vec![vec![1], vec![1, 0], sixteen.clone()]);
        // A longer key is not carried: the engine keeps it.
        assert!(!carries(KS, &past) && carries(KS, &sixteen));
        assert_eq!(c.get(KS, &past, 1), None);
    }

    /// The engine's keys 1..=6 (values = keys) as a memory store's cursor.
    fn engine() -> rhizome_kv::Kv {
        let kv = rhizome_kv::Kv::memory();
        let mut t = kv.transaction().unwrap();
        for k in 1..=6u8 {
            t.put(KS, &[k], &[k]);
        }
        t.commit().unwrap();
        kv
    }

    fn walk(c: &mut dyn Cursor, forward: bool) -> Vec<(u8, u8)> {
        let mut out = Vec::new();
        if forward {
            c.seek_first()
        } else {
            c.seek_last()
        }
        while c.valid() {
            out.push((c.key()[0], c.value()[0]));
            if forward {
                c.next()
            } else {
                c.prev()
            }
        }
        out
    }

    #[test]
    fn a_cursor_lays_the_entries_over_the_engine_both_ways() {
        let kv = engine();
        let snapshot = kv.snapshot().unwrap();
        let entries = vec![(vec![0], Some(vec![100])), (vec![2], None), (vec![3], Some(vec![33])), (vec![6], None), (vec![9], Some(vec![99]))];
        let mut c = CarriedCursor::new(snapshot.cursor(KS, &[], None), entries.clone(), &[]);
        let expected = vec![(0, 100), (1, 1), (3, 33), (4, 4), (5, 5), (9, 99)];
        assert_eq!(walk(&mut c, true), expected);
        assert_eq!(walk(&mut c, false), expected.iter().rev().copied().collect::<Vec<_>>());
        c.seek(&[2]);
        assert_eq!((c.key()[0], c.value()[0]), (3, 33));
        c.prev();
        assert_eq!(c.key()[0], 1);
        c.next();
        assert_eq!(c.key()[0], 3);
        c.seek_for_prev(&[6]);
        assert_eq!(c.key()[0], 5);
        // Bounded: the entries are the reader's for those bounds.
        let inside: Vec<_> = entries.into_iter().filter(|(k, _)| k[0] >= 2 && k[0] < 5).collect();
        let mut c = CarriedCursor::new(snapshot.cursor(KS, &[2], Some(&[5])), inside, &[2]);
        assert_eq!(walk(&mut c, true), vec![(3, 33), (4, 4)]);
        assert_eq!(walk(&mut c, false), vec![(4, 4), (3, 33)]);
    }

    #[test]
    fn a_commit_keeps_its_statistics_in_the_log_and_a_merge_writes_them_to_the_engine() {
        use super::super::{Location, MergeSettings, SegmentedBackend};
        use rhizome_kv::{Backend, WriteBatch};
        use std::sync::Arc;
        let inner: Arc<dyn Backend> = Arc::new(rhizome_kv::MemoryBackend::new());
        let settings = MergeSettings { background: false, ..MergeSettings::default() };
        let backend = SegmentedBackend::open(inner.clone(), Location::Memory, true, settings.clone()).unwrap();
        let mut batch = WriteBatch::default();
        batch.put(KS, b"p1", b"one");
        batch.put(VALUE_COUNTS, b"p1o1", b"1");
        backend.commit(batch).unwrap();
        let before = backend.snapshot().unwrap();
        let mut batch = WriteBatch::default();
        batch.put(KS, b"p1", b"two");
        batch.delete(VALUE_COUNTS, b"p1o1");
        batch.put(layout_meta(), b"other", b"x");
        backend.commit(batch).unwrap();
        // Not engine keys: the engine has the log record and the rest.
        let engine = inner.snapshot().unwrap();
        assert_eq!(engine.get(KS, b"p1").unwrap(), None);
        assert_eq!(engine.get(layout_meta(), b"other").unwrap(), Some(b"x".to_vec()));
        // Each reader sees its snapshot's values, by point reads and scans.
        assert_eq!(before.get(KS, b"p1").unwrap(), Some(b"one".to_vec()));
        assert_eq!(before.get(VALUE_COUNTS, b"p1o1").unwrap(), Some(b"1".to_vec()));
        let now = backend.snapshot().unwrap();
        assert_eq!(now.get(KS, b"p1").unwrap(), Some(b"two".to_vec()));
        assert_eq!(now.get(VALUE_COUNTS, b"p1o1").unwrap(), None);
        let mut c = now.cursor(VALUE_COUNTS, b"p", None);
        c.seek_first();
        assert!(!c.valid());
        let mut c = before.cursor(VALUE_COUNTS, b"p", None);
        c.seek_first();
        assert_eq!(c.key(), b"p1o1");
        // Reopened: the log gives them back.
        let reopened = SegmentedBackend::open(inner.clone(), Location::Memory, true, settings.clone()).unwrap();
        assert_eq!(reopened.snapshot().unwrap().get(KS, b"p1").unwrap(), Some(b"two".to_vec()));
        // A merge writes the values at its cut to the engine, and the log
        // records it folded go.
        assert!(reopened.merge().unwrap());
        let engine = inner.snapshot().unwrap();
        assert_eq!(engine.get(KS, b"p1").unwrap(), Some(b"two".to_vec()));
        assert_eq!(engine.get(VALUE_COUNTS, b"p1o1").unwrap(), None);
        let mut log = engine.cursor(super::super::QUAD_LOG, &[], None);
        log.seek_first();
        assert!(!log.valid(), "the merge deleted the log records it folded");
        assert_eq!(reopened.snapshot().unwrap().get(KS, b"p1").unwrap(), Some(b"two".to_vec()));
        assert!(!reopened.merge().unwrap(), "nothing left to merge");
    }

    #[test]
    fn a_store_written_before_carried_statistics_opens_with_its_engine_keys() {
        use super::super::{Location, MergeSettings, SegmentedBackend, QUAD_LOG};
        use rhizome_kv::{Backend, WriteBatch};
        use std::sync::Arc;
        // As the previous build left a store: statistics as engine keys,
        // kept by every commit, and a log record of format 1 (one triple).
        let inner: Arc<dyn Backend> = Arc::new(rhizome_kv::MemoryBackend::new());
        let mut record = vec![1, 3];
        for id in [5u64, 6, 7] {
            record.extend_from_slice(&id.to_le_bytes());
        }
        let mut batch = WriteBatch::default();
        batch.put(KS, b"p6", b"old");
        batch.put(QUAD_LOG, &1u64.to_be_bytes(), &record);
        inner.commit(batch).unwrap();
        let settings = MergeSettings { background: false, ..MergeSettings::default() };
        let backend = SegmentedBackend::open(inner.clone(), Location::Memory, true, settings).unwrap();
        let snapshot = backend.snapshot().unwrap();
        assert_eq!(snapshot.get(KS, b"p6").unwrap(), Some(b"old".to_vec()));
        let mut c = snapshot.cursor(KS, &[], None);
        c.seek_first();
        assert_eq!((c.key(), c.value()), (&b"p6"[..], &b"old"[..]));
        // New commits carry theirs; the engine's key is the base under them.
        let mut batch = WriteBatch::default();
        batch.put(KS, b"p6", b"new");
        batch.put(KS, b"p7", b"seven");
        backend.commit(batch).unwrap();
        assert_eq!(snapshot.get(KS, b"p6").unwrap(), Some(b"old".to_vec()));
        let now = backend.snapshot().unwrap();
        let mut c = now.cursor(KS, &[], None);
        let mut seen = Vec::new();
        c.seek_first();
        while c.valid() {
            seen.push((c.key().to_vec(), c.value().to_vec()));
            c.next();
        }
        assert_eq!(seen, vec![(b"p6".to_vec(), b"new".to_vec()), (b"p7".to_vec(), b"seven".to_vec())]);
        assert!(backend.merge().unwrap());
        assert_eq!(inner.snapshot().unwrap().get(KS, b"p6").unwrap(), Some(b"new".to_vec()));
    }

    fn layout_meta() -> Keyspace {
        crate::index::layout::META
    }

    /// The map's order must be the keys' byte order (by keyspace first):
    /// ranges and the merge's writes rely on it.
    #[test]
    fn map_keys_order_as_keyspace_then_bytes() {
        let mut keys = Vec::new();
        for ks in [PREDICATE_STATS, VALUE_COUNTS] {
            for len in [0usize, 1, 7, 8, 9, 15, 16] {
                for fill in [0u8, 1, 0x80, 0xff] {
                    let mut key = vec![fill; len];
                    if len > 3 {
                        key[3] ^= 0x41;
                    }
                    keys.push((ks, key));
                }
            }
        }
        for (ka, a) in &keys {
            for (kb, b) in &keys {
                let want = (ka.0, a.as_slice()).cmp(&(kb.0, b.as_slice()));
                assert_eq!(MapKey::new(*ka, a).cmp(&MapKey::new(*kb, b)), want, "{a:?} against {b:?}");
            }
        }
    }
}
