//! Keys carried in the quad log: the writes a commit makes to the
//! statistics keyspaces (per-predicate counts, class counts, value
//! counts) and to the dictionary (`ID2TERM`, `TERM2ID`: the terms it
//! adds) travel in its log record with its quad changes instead of going
//! to the engine as keys of their own, and are kept here, versioned by
//! the commit's sequence number like the orderings' deltas. A reader at
//! sequence number `at` sees each key's newest version numbered `at` or
//! less, else the engine's value (which holds the key as of the view's
//! cut): exactly the committed state of its snapshot. A merge writes the
//! values at its cut to the engine in the commit of the new segment set,
//! and the new view keeps the versions after it.
//!
//! Why: a 200-triple LDP PUT touches about 150 predicates, and wrote some
//! 350 statistics keys into RocksDB's memtable at about 4,400 instructions
//! each (issue 46), then 202 dictionary keys (its 101 new terms); here a
//! key costs a map insert, and the log record one more copy of its bytes.
//!
//! Cursors over a carried keyspace ([`CarriedCursor`]) take the entries
//! they pass a few at a time (more as they go on), under the map's read
//! lock for each batch: a cursor that seeks one id after another through
//! the dictionary copies little, and none holds the lock between calls.

use rhizome_kv::{Cursor, Keyspace};
use rustc_hash::FxHashMap;
use std::collections::btree_map::Entry;
use std::collections::hash_map::Entry as HashEntry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock};

use crate::index::layout::{CLASS_STATS, ID2TERM, PREDICATE_STATS, TERM2ID, VALUE_COUNTS};

/// The keyspaces whose writes are carried in the log.
pub(crate) const CARRIED: [Keyspace; 5] = [PREDICATE_STATS, CLASS_STATS, VALUE_COUNTS, ID2TERM, TERM2ID];

pub(crate) fn is_carried(ks: Keyspace) -> bool {
    CARRIED.contains(&ks)
}

/// The longest key carried in the statistics' map: their keys are one or
/// two ids. A longer key in those keyspaces (none is written) stays an
/// engine key, so a key is always kept one way. The dictionary's keys
/// have maps of their own: `ID2TERM`'s an id (8 bytes, else an engine
/// key), `TERM2ID`'s a term's bytes, any length.
const MAX_KEY: usize = 16;

/// Whether a write of `key` to `ks` is carried in the log.
pub(crate) fn carries(ks: Keyspace, key: &[u8]) -> bool {
    match ks {
        TERM2ID => true,
        ID2TERM => key.len() == 8,
        _ => key.len() <= MAX_KEY && is_carried(ks),
    }
}

fn id_of(key: &[u8]) -> u64 {
    u64::from_be_bytes(key.try_into().expect("an ID2TERM key is an id"))
}

/// A write to a carried keyspace: the key and its value after the commit
/// (`None`: deleted).
pub(crate) type CarriedWrite = (Keyspace, Vec<u8>, Option<Vec<u8>>);

/// A carried entry as a cursor takes it: its key (without the keyspace)
/// and value (`None`: deleted).
type CursorEntry = (Vec<u8>, Option<Vec<u8>>);

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

    /// Adds the version numbered `seq` (replacing one of the same number).
    fn push(&mut self, seq: u64, value: Value) {
        debug_assert!(self.newest.0 <= seq, "versions are added in commit order");
        if self.newest.0 == seq {
            self.newest.1 = value;
        } else {
            let old = std::mem::replace(&mut self.newest, (seq, value));
            self.older.push(old);
        }
    }

    /// Takes out the version numbered `seq` (a failed commit's); `true`
    /// when none is left.
    fn undo(&mut self, seq: u64) -> bool {
        if self.newest.0 != seq {
            return false;
        }
        match self.older.pop() {
            Some(old) => {
                self.newest = old;
                false
            }
            None => true,
        }
    }

    /// The versions numbered after `cut`.
    fn after(&self, cut: u64) -> Option<Versions> {
        let mut versions = self.older.iter().chain(std::iter::once(&self.newest)).filter(|x| x.0 > cut).cloned();
        let first = versions.next()?;
        let mut all: Vec<(u64, Value)> = std::iter::once(first).chain(versions).collect();
        let newest = all.pop().expect("one at least");
        Some(Versions { newest, older: all })
    }

    fn count(&self) -> usize {
        1 + self.older.len()
    }

    fn bytes(&self) -> usize {
        self.older.iter().chain(std::iter::once(&self.newest)).map(|(_, v)| v.get().map_or(0, <[u8]>::len)).sum()
    }
}

/// The map key: the keyspace's byte, the key's bytes padded with zeros,
/// its length; ordered as the bytes are (a key sorts before its
/// extensions, padded or not, by the length last).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
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

    /// The first key of the keyspace after `ks` (a bound).
    fn after_keyspace(ks: Keyspace) -> MapKey {
        MapKey { ks: ks.0.saturating_add(1), bytes: [0; MAX_KEY], len: 0 }
    }

    fn key(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// The carried entries: the statistics' short keys in one map, the
/// dictionary's ids (`ID2TERM`, numbered in order: new ones go at the
/// end) and terms (`TERM2ID`) in one each.
///
/// The statistics' and the terms' versions are in hash maps: a commit
/// mostly updates keys already there (a PUT's 150 predicates' counts) or
/// adds terms no reader walks in order, and a search of an ordered map
/// cost about 800 instructions a key (issue 46). The statistics' keys
/// are kept in order too, each added once, when new (cursors read them
/// by prefix); the terms' are sorted only when a cursor asks for them
/// (`Store::check` walks `TERM2ID`, nothing else does), again after each
/// change.
#[derive(Default)]
struct Maps {
    short: FxHashMap<MapKey, Versions>,
    short_order: BTreeSet<MapKey>,
    ids: BTreeMap<u64, Versions>,
    terms: FxHashMap<Box<[u8]>, Versions>,
    terms_order: OnceLock<Vec<Box<[u8]>>>,
}

impl Maps {
    fn len(&self) -> usize {
        self.short.len() + self.ids.len() + self.terms.len()
    }

    fn get(&self, ks: Keyspace, key: &[u8]) -> Option<&Versions> {
        match ks {
            TERM2ID => self.terms.get(key),
            ID2TERM => self.ids.get(&id_of(key)),
            _ => self.short.get(&MapKey::new(ks, key)),
        }
    }

    /// The terms' keys in order.
    fn terms_order(&self) -> &[Box<[u8]>] {
        self.terms_order.get_or_init(|| {
            let mut keys: Vec<Box<[u8]>> = self.terms.keys().cloned().collect();
            keys.sort_unstable();
            keys
        })
    }

    /// Calls `f` with every entry: keyspace, key, versions (the terms in
    /// no particular order).
    fn each(&self, mut f: impl FnMut(Keyspace, &[u8], &Versions)) {
        for k in &self.short_order {
            f(Keyspace(k.ks), k.key(), &self.short[k]);
        }
        for (id, v) in &self.ids {
            f(ID2TERM, &id.to_be_bytes(), v);
        }
        for (k, v) in &self.terms {
            f(TERM2ID, k, v);
        }
    }
}

/// Whether `key` is past `lo` (on its side of it).
fn past_lower(lo: Bound<&[u8]>, key: &[u8]) -> bool {
    match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => key >= b,
        Bound::Excluded(b) => key > b,
    }
}

fn before_upper(hi: Bound<&[u8]>, key: &[u8]) -> bool {
    match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => key <= b,
        Bound::Excluded(b) => key < b,
    }
}

/// Whether `(lo, hi)` holds no key at all.
fn empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

/// Takes from `entries` (in the order wanted) up to `max` that a reader at
/// `at` sees into `out`; `true` when none is left after them.
fn take<'m, K: AsRef<[u8]>>(entries: impl Iterator<Item = (K, &'m Versions)>, at: u64, out: &mut Vec<CursorEntry>, max: usize) -> bool {
    let mut taken = 0;
    for (key, versions) in entries {
        if let Some(value) = versions.at(at) {
            if taken == max {
                return false;
            }
            out.push((key.as_ref().to_vec(), value.get().map(<[u8]>::to_vec)));
            taken += 1;
        }
    }
    true
}

#[derive(Default)]
pub(crate) struct Carried {
    maps: RwLock<Maps>,
    /// Keys in the maps: a reader skips empty maps without their lock.
    keys: AtomicUsize,
    /// Versions added (a merge's trigger, as the deltas' changes).
    versions: AtomicUsize,
    /// Bytes of the values added (a merge's trigger: new terms' text).
    bytes: AtomicUsize,
}

impl Carried {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Maps> {
        // Changed only by whole inserts and removals: a panicked writer
        // left it consistent.
        self.maps.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_empty(&self) -> bool {
        self.keys.load(Ordering::Acquire) == 0
    }

    /// Adds the writes of one commit, numbered `seq`.
    pub fn apply(&self, writes: &[CarriedWrite], seq: u64) {
        if writes.is_empty() {
            return;
        }
        let mut maps = self.write();
        let mut bytes = 0;
        for (ks, key, value) in writes {
            debug_assert!(carries(*ks, key), "only carried writes come here");
            bytes += key.len() + value.as_ref().map_or(0, Vec::len);
            let value = Value::new(value.as_deref());
            let new = |value| Versions { newest: (seq, value), older: Vec::new() };
            // One search per key, not a get and then an insert.
            match *ks {
                TERM2ID => {
                    match maps.terms.get_mut(key.as_slice()) {
                        Some(versions) => versions.push(seq, value),
                        None => {
                            maps.terms.insert(key.as_slice().into(), new(value));
                            maps.terms_order = OnceLock::new();
                        }
                    }
                    continue;
                }
                ID2TERM => {
                    match maps.ids.entry(id_of(key)) {
                        Entry::Occupied(mut e) => e.get_mut().push(seq, value),
                        Entry::Vacant(e) => {
                            e.insert(new(value));
                        }
                    }
                    continue;
                }
                _ => {}
            }
            let k = MapKey::new(*ks, key);
            match maps.short.entry(k) {
                HashEntry::Occupied(mut e) => e.get_mut().push(seq, value),
                HashEntry::Vacant(e) => {
                    e.insert(new(value));
                    maps.short_order.insert(k);
                }
            }
        }
        self.keys.store(maps.len(), Ordering::Release);
        self.versions.fetch_add(writes.len(), Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Versions added since the view's cut.
    pub fn versions(&self) -> usize {
        self.versions.load(Ordering::Relaxed)
    }

    /// Bytes of keys and values added since the view's cut.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Takes out the versions numbered `seq` of these writes' keys (a
    /// commit that failed).
    pub fn undo(&self, writes: &[CarriedWrite], seq: u64) {
        if writes.is_empty() {
            return;
        }
        let mut maps = self.write();
        for (ks, key, _) in writes {
            if *ks == TERM2ID {
                if maps.terms.get_mut(key.as_slice()).is_some_and(|v| v.undo(seq)) {
                    maps.terms.remove(key.as_slice());
                    maps.terms_order = OnceLock::new();
                }
                continue;
            }
            if *ks == ID2TERM {
                let id = id_of(key);
                if maps.ids.get_mut(&id).is_some_and(|v| v.undo(seq)) {
                    maps.ids.remove(&id);
                }
                continue;
            }
            let k = MapKey::new(*ks, key);
            if maps.short.get_mut(&k).is_some_and(|v| v.undo(seq)) {
                maps.short.remove(&k);
                maps.short_order.remove(&k);
            }
        }
        self.keys.store(maps.len(), Ordering::Release);
    }

    /// The key's value for a reader at `at`, if a version says
    /// (`Some(None)`: deleted).
    pub fn get(&self, ks: Keyspace, key: &[u8], at: u64) -> Option<Option<Vec<u8>>> {
        if self.is_empty() || !carries(ks, key) {
            return None;
        }
        let maps = self.read();
        maps.get(ks, key).and_then(|v| v.at(at)).map(|v| v.get().map(<[u8]>::to_vec))
    }

    /// Whether any version of a key of `ks` is kept (a cursor over `ks`
    /// has entries to lay over the engine's).
    pub fn holds(&self, ks: Keyspace) -> bool {
        if self.is_empty() {
            return false;
        }
        let maps = self.read();
        match ks {
            TERM2ID => return !maps.terms.is_empty(),
            ID2TERM => return !maps.ids.is_empty(),
            _ => {}
        }
        maps.short_order.range(MapKey::new(ks, &[])..).next().is_some_and(|k| k.ks == ks.0)
    }

    /// Appends to `out` up to `max` entries of `ks` within `(lo, hi)` that
    /// a reader at `at` sees, in key order (`forward`) or backwards;
    /// `true` when none is left after them.
    fn fill(&self, ks: Keyspace, lo: Bound<&[u8]>, hi: Bound<&[u8]>, forward: bool, at: u64, out: &mut Vec<CursorEntry>, max: usize) -> bool {
        if self.is_empty() || empty_range(lo, hi) {
            return true;
        }
        let maps = self.read();
        if ks == TERM2ID {
            let order = maps.terms_order();
            let start = order.partition_point(|k| !past_lower(lo, k));
            let end = order.partition_point(|k| before_upper(hi, k)).max(start);
            let entries = order[start..end].iter().map(|k| (&**k, &maps.terms[k]));
            return if forward { take(entries, at, out, max) } else { take(entries.rev(), at, out, max) };
        }
        if ks == ID2TERM {
            // A bound as an id: its first 8 bytes, padded with zeros,
            // which sorts at or before every id past a lower bound and at
            // or after every id before an upper one; the bytes' check
            // leaves out the rest.
            let id = |b: &[u8]| {
                let mut bytes = [0u8; 8];
                let n = b.len().min(8);
                bytes[..n].copy_from_slice(&b[..n]);
                u64::from_be_bytes(bytes)
            };
            let from = match lo {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(b) | Bound::Excluded(b) => Bound::Included(id(b)),
            };
            let until = match hi {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(b) | Bound::Excluded(b) => Bound::Included(id(b)),
            };
            if let (Bound::Included(a), Bound::Included(b)) = (from, until) {
                if a > b {
                    return true;
                }
            }
            let entries = maps.ids.range((from, until)).map(|(id, v)| (id.to_be_bytes(), v)).filter(|(key, _)| past_lower(lo, key) && before_upper(hi, key));
            return if forward { take(entries, at, out, max) } else { take(entries.rev(), at, out, max) };
        }
        // Bounds longer than a short key are cut to one (which sorts at
        // or before them), a lower bound taken inclusive: the map's range
        // holds the wanted keys and maybe a few more, which the bytes'
        // check leaves out.
        let from = match lo {
            Bound::Unbounded => MapKey::new(ks, &[]),
            Bound::Included(b) | Bound::Excluded(b) => MapKey::new(ks, b),
        };
        let until = match hi {
            Bound::Unbounded => Bound::Excluded(MapKey::after_keyspace(ks)),
            Bound::Included(b) if b.len() <= MAX_KEY => Bound::Included(MapKey::new(ks, b)),
            Bound::Excluded(b) if b.len() <= MAX_KEY => Bound::Excluded(MapKey::new(ks, b)),
            Bound::Included(b) | Bound::Excluded(b) => Bound::Included(MapKey::new(ks, b)),
        };
        let inside = move |k: &MapKey| k.ks == ks.0 && past_lower(lo, k.key()) && before_upper(hi, k.key());
        let entries = maps.short_order.range((Bound::Included(from), until)).filter(move |k| inside(k)).map(|k| (k.key(), &maps.short[k]));
        if forward {
            take(entries, at, out, max)
        } else {
            take(entries.rev(), at, out, max)
        }
    }

    /// Every key's value at `cut`, for the engine (what a merge up to
    /// `cut` writes).
    pub fn at(&self, cut: u64) -> Vec<CarriedWrite> {
        let maps = self.read();
        let mut out = Vec::with_capacity(maps.len());
        maps.each(|ks, key, v| {
            if let Some(value) = v.at(cut) {
                out.push((ks, key.to_vec(), value.get().map(<[u8]>::to_vec)));
            }
        });
        out
    }

    /// Whether a reader at `cut` sees any version (a merge to `cut` has
    /// values to write).
    pub fn any_at(&self, cut: u64) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut any = false;
        self.read().each(|_, _, v| any |= v.at(cut).is_some());
        any
    }

    /// The versions numbered after `cut` (what a merge up to `cut` leaves).
    pub fn after(&self, cut: u64) -> Carried {
        let maps = self.read();
        let short: FxHashMap<MapKey, Versions> = maps.short.iter().filter_map(|(k, v)| Some((*k, v.after(cut)?))).collect();
        let short_order: BTreeSet<MapKey> = maps.short_order.iter().filter(|k| short.contains_key(k)).copied().collect();
        let ids: BTreeMap<u64, Versions> = maps.ids.iter().filter_map(|(k, v)| Some((*k, v.after(cut)?))).collect();
        let terms: FxHashMap<Box<[u8]>, Versions> = maps.terms.iter().filter_map(|(k, v)| Some((k.clone(), v.after(cut)?))).collect();
        let kept = Maps { short, short_order, ids, terms, terms_order: OnceLock::new() };
        let (mut versions, mut bytes) = (0, 0);
        kept.each(|_, k, v| {
            versions += v.count();
            bytes += k.len() + v.bytes();
        });
        Carried { keys: AtomicUsize::new(kept.len()), versions: AtomicUsize::new(versions), bytes: AtomicUsize::new(bytes), maps: RwLock::new(kept) }
    }
}

/// Entries a cursor takes at a seek, and at most at once as it goes on.
const FIRST_BATCH: usize = 4;
const MAX_BATCH: usize = 256;

/// The carried entries a cursor has taken, in its direction.
struct Window {
    entries: Vec<CursorEntry>,
    pos: usize,
    /// No entry is left past `entries` in the cursor's direction.
    done: bool,
    batch: usize,
}

/// The engine's cursor with the carried entries a reader sees laid over
/// it: an entry replaces the engine's value of its key, or hides the key
/// (a deletion). The entries are taken from the map a batch at a time.
pub(crate) struct CarriedCursor<'a> {
    base: Box<dyn Cursor + 'a>,
    carried: &'a Carried,
    ks: Keyspace,
    at: u64,
    lower: Vec<u8>,
    upper: Option<Vec<u8>>,
    window: Window,
    forward: bool,
    on_entry: bool,
}

impl<'a> CarriedCursor<'a> {
    pub fn new(base: Box<dyn Cursor + 'a>, carried: &'a Carried, ks: Keyspace, at: u64, lower: &[u8], upper: Option<&[u8]>) -> CarriedCursor<'a> {
        CarriedCursor {
            base,
            carried,
            ks,
            at,
            lower: lower.to_vec(),
            upper: upper.map(<[u8]>::to_vec),
            window: Window { entries: Vec::new(), pos: 0, done: true, batch: FIRST_BATCH },
            forward: true,
            on_entry: false,
        }
    }

    /// Takes a first batch of entries from `from` on in the cursor's
    /// direction (`from`: the lower end going forward, the upper end
    /// going back), within the cursor's bounds.
    fn load(&mut self, from: Bound<&[u8]>, batch: usize) {
        let w = &mut self.window;
        w.entries.clear();
        w.pos = 0;
        w.batch = batch;
        let (lo, hi) = if self.forward {
            (from, self.upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded))
        } else {
            (Bound::Included(self.lower.as_slice()), from)
        };
        w.done = self.carried.fill(self.ks, lo, hi, self.forward, self.at, &mut w.entries, batch);
    }

    /// Steps to the next entry in the cursor's direction, taking the next
    /// batch when this one is spent.
    fn step_pos(&mut self) {
        self.window.pos += 1;
        if self.window.pos >= self.window.entries.len() && !self.window.done {
            let last = self.window.entries.last().expect("a batch with entries after it is not empty").0.clone();
            let batch = (self.window.batch * 2).min(MAX_BATCH);
            self.load(Bound::Excluded(&last), batch);
        }
    }

    /// Picks the current key: the smaller (forward) or larger (backward)
    /// of the base's and the entries', skipping deletions and the keys
    /// they hide.
    fn settle(&mut self) {
        loop {
            let Some((ek, ev)) = self.window.entries.get(self.window.pos) else {
                self.on_entry = false;
                return;
            };
            let base = self.base.valid().then(|| self.base.key());
            let take_entry = base.is_none_or(|b| if self.forward { ek.as_slice() <= b } else { ek.as_slice() >= b });
            if !take_entry {
                self.on_entry = false;
                return;
            }
            let replaces = base == Some(ek.as_slice());
            let is_put = ev.is_some();
            if replaces {
                // The entry replaces the engine's key: step the base past it.
                self.step_base();
            }
            if is_put {
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

    fn current_key(&self) -> Option<Vec<u8>> {
        self.valid().then(|| self.key().to_vec())
    }

    fn entry(&self) -> &CursorEntry {
        &self.window.entries[self.window.pos]
    }
}

impl Cursor for CarriedCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        self.forward = true;
        self.base.seek(key);
        let lower = std::mem::take(&mut self.lower);
        self.load(Bound::Included(key.max(lower.as_slice())), FIRST_BATCH);
        self.lower = lower;
        self.settle();
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        self.forward = false;
        self.base.seek_for_prev(key);
        let upper = self.upper.take();
        let from = match upper.as_deref() {
            Some(u) if key >= u => Bound::Excluded(u),
            _ => Bound::Included(key),
        };
        self.load(from, FIRST_BATCH);
        self.upper = upper;
        self.settle();
    }

    fn seek_first(&mut self) {
        let lower = self.lower.clone();
        self.seek(&lower);
    }

    fn seek_last(&mut self) {
        self.forward = false;
        self.base.seek_last();
        let upper = self.upper.take();
        self.load(upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded), FIRST_BATCH);
        self.upper = upper;
        self.settle();
    }

    fn valid(&self) -> bool {
        self.on_entry || self.base.valid()
    }

    fn key(&self) -> &[u8] {
        if self.on_entry {
            &self.entry().0
        } else {
            self.base.key()
        }
    }

    fn value(&self) -> &[u8] {
        if self.on_entry {
            self.entry().1.as_deref().expect("settled on a put")
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

    /// The entries of `ks` in `[lower, upper)` a reader at `at` sees.
    fn range(c: &Carried, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>, at: u64) -> Vec<CursorEntry> {
        let mut out = Vec::new();
        assert!(c.fill(ks, Bound::Included(lower), upper.map_or(Bound::Unbounded, Bound::Excluded), true, at, &mut out, usize::MAX));
        out
    }

    /// The terms' order is made when a cursor first asks for it: a term
    /// added or taken out after that is in the next range, or gone.
    #[test]
    fn a_range_of_terms_sees_the_terms_added_and_undone_since_the_last() {
        let term = |k: &[u8], id: u8| (TERM2ID, k.to_vec(), Some(vec![id]));
        let keys = |entries: Vec<CursorEntry>| entries.into_iter().map(|e| e.0).collect::<Vec<_>>();
        let c = Carried::default();
        c.apply(&[term(b"\x02m", 1), term(b"\x02c", 2)], 1);
        assert_eq!(keys(range(&c, TERM2ID, b"", None, 9)), vec![b"\x02c".to_vec(), b"\x02m".to_vec()]);
        c.apply(&[term(b"\x02a", 3), term(b"\x02z", 4)], 2);
        assert_eq!(keys(range(&c, TERM2ID, b"\x02b", Some(b"\x02y"), 9)), vec![b"\x02c".to_vec(), b"\x02m".to_vec()]);
        assert_eq!(keys(range(&c, TERM2ID, b"", None, 9)).len(), 4);
        assert_eq!(keys(range(&c, TERM2ID, b"", None, 1)).len(), 2, "a reader before the second commit");
        c.undo(&[term(b"\x02a", 3), term(b"\x02z", 4)], 2);
        assert_eq!(keys(range(&c, TERM2ID, b"", None, 9)), vec![b"\x02c".to_vec(), b"\x02m".to_vec()]);
        let mut back = Vec::new();
        assert!(c.fill(TERM2ID, Bound::Unbounded, Bound::Unbounded, false, 9, &mut back, 9));
        assert_eq!(keys(back), vec![b"\x02m".to_vec(), b"\x02c".to_vec()]);
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
        assert_eq!(range(&c, KS, &[], None, 6), vec![(vec![1], Some(vec![10])), (vec![2], Some(vec![20]))]);
        assert_eq!(range(&c, KS, &[2], Some(&[3]), 9), vec![(vec![2], Some(vec![20]))]);
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
        let got = |lower: &[u8], upper: Option<&[u8]>| range(&c, KS, lower, upper, 1).into_iter().map(|e| e.0).collect::<Vec<_>>();
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
        let carried = Carried::default();
        carried.apply(&[w(0, Some(100)), w(2, None), w(3, Some(33)), w(6, None), w(9, Some(99))], 1);
        let mut c = CarriedCursor::new(snapshot.cursor(KS, &[], None), &carried, KS, 1, &[], None);
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
        // Bounded.
        let mut c = CarriedCursor::new(snapshot.cursor(KS, &[2], Some(&[5])), &carried, KS, 1, &[2], Some(&[5]));
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

    /// A small xorshift generator: the test's cases from a seed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        /// A key of 0 to 20 bytes over a small alphabet (so keys share
        /// prefixes and some pass the short map's 16 bytes).
        fn key(&mut self, short: bool) -> Vec<u8> {
            let n = self.below(if short { 4 } else { 21 });
            self.bytes(n as usize)
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.below(3) as u8 * 0x7f).collect()
        }
    }

    /// Every cursor move over carried entries laid on an engine's keys,
    /// against a model (a sorted map of what the reader sees), in each
    /// map (`TERM2ID` with keys of any length, `ID2TERM`'s ids with
    /// bounds of any length), with bounds, seeks both ways and changes of
    /// direction, over batches of every size.
    #[test]
    fn a_cursor_taking_entries_in_batches_agrees_with_a_model() {
        use std::collections::BTreeMap as Model;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..450 {
            let ks = [TERM2ID, VALUE_COUNTS, ID2TERM][round % 3];
            let short = ks == VALUE_COUNTS && round % 2 == 1;
            // A key written: an id in `ID2TERM`.
            let written = |rng: &mut Rng| if ks == ID2TERM { rng.bytes(8) } else { rng.key(short) };
            let kv = rhizome_kv::Kv::memory();
            let mut engine = Model::new();
            let mut t = kv.transaction().unwrap();
            for _ in 0..rng.below(30) {
                let k = written(&mut rng);
                if ks != TERM2ID && k.len() > MAX_KEY {
                    continue;
                }
                t.put(ks, &k, b"e");
                engine.insert(k, b"e".to_vec());
            }
            t.commit().unwrap();
            let carried = Carried::default();
            let mut seen = engine.clone();
            let at = 1 + rng.below(4);
            for seq in 1..=4 {
                let mut writes: Vec<CarriedWrite> = Vec::new();
                for _ in 0..rng.below(40) {
                    let k = written(&mut rng);
                    if !carries(ks, &k) || writes.iter().any(|w| w.1 == k) {
                        continue;
                    }
                    let value = (rng.below(3) != 0).then(|| vec![seq as u8, rng.below(250) as u8]);
                    if seq <= at {
                        match &value {
                            Some(v) => seen.insert(k.clone(), v.clone()),
                            None => seen.remove(&k),
                        };
                    }
                    writes.push((ks, k, value));
                }
                carried.apply(&writes, seq);
            }
            let (lower, upper) = (rng.key(short), (rng.below(2) == 0).then(|| rng.key(short)));
            let inside: Vec<(Vec<u8>, Vec<u8>)> =
                seen.iter().filter(|(k, _)| k.as_slice() >= lower.as_slice() && upper.as_ref().is_none_or(|u| k < &u)).map(|(k, v)| (k.clone(), v.clone())).collect();
            let snapshot = kv.snapshot().unwrap();
            let mut c = CarriedCursor::new(snapshot.cursor(ks, &lower, upper.as_deref()), &carried, ks, at, &lower, upper.as_deref());
            // The model's position: an index into `inside` (None: invalid).
            let mut pos: Option<usize> = None;
            for step in 0..60 {
                match rng.below(6) {
                    0 => {
                        let k = rng.key(short);
                        c.seek(&k);
                        pos = inside.iter().position(|(x, _)| x.as_slice() >= k.as_slice());
                    }
                    1 => {
                        let k = rng.key(short);
                        c.seek_for_prev(&k);
                        pos = inside.iter().rposition(|(x, _)| x.as_slice() <= k.as_slice());
                    }
                    2 => {
                        c.seek_first();
                        pos = (!inside.is_empty()).then_some(0);
                    }
                    3 => {
                        c.seek_last();
                        pos = inside.len().checked_sub(1);
                    }
                    4 if pos.is_some() => {
                        c.next();
                        pos = pos.map(|p| p + 1).filter(|p| *p < inside.len());
                    }
                    5 if pos.is_some() => {
                        c.prev();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                    _ => continue,
                }
                let got = c.valid().then(|| (c.key().to_vec(), c.value().to_vec()));
                assert_eq!(got, pos.map(|p| inside[p].clone()), "round {round}, step {step}");
            }
        }
    }

    #[test]
    fn terms_are_carried_whatever_their_length_and_a_merge_writes_them_to_the_engine() {
        use super::super::{Location, MergeSettings, SegmentedBackend};
        use rhizome_kv::{Backend, WriteBatch};
        use std::sync::Arc;
        let inner: Arc<dyn Backend> = Arc::new(rhizome_kv::MemoryBackend::new());
        let settings = MergeSettings { background: false, ..MergeSettings::default() };
        let backend = SegmentedBackend::open(inner.clone(), Location::Memory, true, settings.clone()).unwrap();
        let long = vec![b'l'; 300];
        let mut batch = WriteBatch::default();
        batch.put(TERM2ID, b"\x02http://e/a-term-longer-than-sixteen-bytes", &7u64.to_be_bytes());
        batch.put(TERM2ID, b"\x01s", &8u64.to_be_bytes());
        batch.put(ID2TERM, &7u64.to_be_bytes(), b"http://e/a-term-longer-than-sixteen-bytes");
        batch.put(ID2TERM, &9u64.to_be_bytes(), &long);
        backend.commit(batch).unwrap();
        let engine = inner.snapshot().unwrap();
        assert_eq!(engine.get(TERM2ID, b"\x01s").unwrap(), None, "carried, not an engine key");
        let now = backend.snapshot().unwrap();
        assert_eq!(now.get(TERM2ID, b"\x02http://e/a-term-longer-than-sixteen-bytes").unwrap(), Some(7u64.to_be_bytes().to_vec()));
        assert_eq!(now.get(ID2TERM, &9u64.to_be_bytes()).unwrap(), Some(long.clone()));
        let mut c = now.cursor(TERM2ID, &[], None);
        c.seek_first();
        assert_eq!(c.key(), b"\x01s");
        c.next();
        assert_eq!(c.value(), 7u64.to_be_bytes());
        // Reopened from the log, then merged into the engine.
        let reopened = SegmentedBackend::open(inner.clone(), Location::Memory, true, settings).unwrap();
        assert_eq!(reopened.snapshot().unwrap().get(ID2TERM, &7u64.to_be_bytes()).unwrap(), Some(b"http://e/a-term-longer-than-sixteen-bytes".to_vec()));
        assert!(reopened.merge().unwrap());
        let engine = inner.snapshot().unwrap();
        assert_eq!(engine.get(TERM2ID, b"\x01s").unwrap(), Some(8u64.to_be_bytes().to_vec()));
        assert_eq!(engine.get(ID2TERM, &9u64.to_be_bytes()).unwrap(), Some(long));
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
