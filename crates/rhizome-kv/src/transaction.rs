//! A transaction: a snapshot plus the writes made so far, which the
//! transaction reads back (gets and scans see them merged with the snapshot).

use crate::absent_keys::AbsentKeys;
use crate::backend::{Backend, Cursor, KvRead, Snapshot, TupleLayout, WriteBatch, WriteLease, WriteOp, MAX_TUPLE_SLOTS};
use crate::overlay_key::{KeyBytes, OverlayKey};
use crate::read_cache::ReadCache;
use crate::{Keyspace, Result};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, MutexGuard, OnceLock};

type Overlay = BTreeMap<OverlayKey, Option<Vec<u8>>>;
/// A slot's keys (words) of the transaction's tuple writes: `true` put,
/// `false` deleted.
type TupleKeys = BTreeMap<[u64; 4], bool>;

pub struct Transaction<'a> {
    _guard: MutexGuard<'a, ()>,
    backend: &'a dyn Backend,
    /// Write access shared with other processes (see
    /// [`Backend::begin_write`]); the snapshot and the commit go through it.
    lease: Option<Box<dyn WriteLease>>,
    snapshot: Arc<dyn Snapshot>,
    /// By keyspace: FxHash, since every put and get hashes the keyspace
    /// (SipHash was 120 instructions a put, 1,300 puts an LDP PUT).
    overlay: FxHashMap<Keyspace, Overlay>,
    empty: Overlay,
    /// The snapshot's point reads: a write reads some keys more than once.
    reads: ReadCache,
    /// Keys the snapshot is known to lack ([`Transaction::find_absent`]).
    absent: AbsentKeys,
    /// Writes the transaction does not read back ([`Transaction::put_unread`]),
    /// in order.
    unread: Vec<WriteOp>,
    /// The backend's tuple indexes, if it keeps them itself.
    layout: Option<&'static dyn TupleLayout>,
    /// Tuple writes ([`Transaction::put_tuple`]): one entry a tuple, where
    /// its keys in each index slot would be as many overlay entries (an
    /// LDP PUT's 200 triples were 600 overlay keys, read back into
    /// triples at commit: about 1.2M instructions, issue 46).
    tuples: FxHashMap<[u64; 4], bool>,
    /// Per slot, the tuple writes as that slot's keys in order, made when
    /// a cursor first reads the slot and kept up to date by later writes.
    tuple_keys: [OnceLock<TupleKeys>; MAX_TUPLE_SLOTS],
}

impl<'a> Transaction<'a> {
    pub(crate) fn new(guard: MutexGuard<'a, ()>, backend: &'a dyn Backend) -> Result<Self> {
        let lease = backend.begin_write()?;
        let snapshot = match &lease {
            Some(lease) => lease.snapshot()?,
            None => backend.snapshot()?,
        };
        let layout = backend.tuple_layout();
        Ok(Transaction {
            _guard: guard,
            backend,
            lease,
            snapshot,
            overlay: FxHashMap::default(),
            empty: Overlay::new(),
            reads: ReadCache::default(),
            absent: AbsentKeys::default(),
            unread: Vec::new(),
            layout,
            tuples: FxHashMap::default(),
            tuple_keys: Default::default(),
        })
    }

    /// Whether the backend takes tuple writes ([`Transaction::put_tuple`]).
    pub fn takes_tuples(&self) -> bool {
        self.layout.is_some()
    }

    /// Puts `tuple` in (`there`) or takes it out of every index slot of the
    /// backend's [`TupleLayout`] that holds it, as writing (or deleting) its
    /// key with an empty value in each of their keyspaces would; the
    /// transaction's reads see it so. Only for a backend that
    /// [takes tuples](Transaction::takes_tuples), and not mixed with
    /// `put`/`delete` of the same tuple's keys.
    pub fn put_tuple(&mut self, tuple: [u64; 4], there: bool) {
        let layout = self.layout.expect("put_tuple on a backend that takes tuples (checked with takes_tuples)");
        self.tuples.insert(tuple, there);
        for (slot, keys) in self.tuple_keys.iter_mut().enumerate() {
            if let Some(keys) = keys.get_mut() {
                if layout.holds(slot, &tuple) {
                    keys.insert(layout.key_of(slot, &tuple), there);
                }
            }
        }
    }

    /// What this transaction did to `tuple` through [`Transaction::put_tuple`].
    pub fn own_tuple(&self, tuple: &[u64; 4]) -> Option<bool> {
        self.tuples.get(tuple).copied()
    }

    /// The layout and slot of `ks` if it is an index keyspace this
    /// transaction wrote tuples of.
    fn tuple_slot(&self, ks: Keyspace) -> Option<(&'static dyn TupleLayout, usize)> {
        if self.tuples.is_empty() {
            return None;
        }
        let layout = self.layout?;
        Some((layout, layout.slot_of(ks)?))
    }

    /// The tuple write behind `key` of `ks`, if there is one.
    fn tuple_write(&self, ks: Keyspace, key: &[u8]) -> Option<bool> {
        let (layout, slot) = self.tuple_slot(ks)?;
        let words = layout.words(slot);
        if key.len() != words * 8 {
            return None;
        }
        let mut k = [0u64; 4];
        for (i, chunk) in key.chunks_exact(8).enumerate() {
            k[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        }
        let tuple = layout.tuple_of(slot, &k);
        // A key of a slot that does not hold its tuple (a quad slot's key
        // whose graph is its subject) is no tuple's.
        if !layout.holds(slot, &tuple) {
            return None;
        }
        self.tuples.get(&tuple).copied()
    }

    /// Whether reads of `ks` must merge writes of this transaction.
    fn has_own_writes(&self, ks: Keyspace) -> bool {
        self.overlay.get(&ks).is_some_and(|o| !o.is_empty()) || self.tuple_slot(ks).is_some()
    }

    /// Whether another process committed to the store since this process
    /// last wrote it (see [`WriteLease::changed_elsewhere`]); never for
    /// an embedded store, which one process owns.
    pub fn changed_elsewhere(&self) -> bool {
        self.lease.as_ref().is_some_and(|lease| lease.changed_elsewhere())
    }

    /// The committed state the transaction started from, without its writes.
    pub fn base(&self) -> &Arc<dyn Snapshot> {
        &self.snapshot
    }

    pub fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_keeping(ks, key, true)
    }

    fn get_keeping(&self, ks: Keyspace, key: &[u8], keep_miss: bool) -> Result<Option<Vec<u8>>> {
        if let Some(entry) = self.overlay.get(&ks).and_then(|o| o.get(KeyBytes::new(key))) {
            return Ok(entry.clone());
        }
        if let Some(there) = self.tuple_write(ks, key) {
            return Ok(there.then(Vec::new));
        }
        if self.absent.contains(ks, key) {
            return Ok(None);
        }
        self.reads.get_keeping(self.snapshot.as_ref(), ks, key, keep_miss)
    }

    /// A reader of this transaction whose point reads do not keep their
    /// misses in the read cache: for keys the caller writes when they are
    /// absent (a new dictionary term: about 100 a 200-triple LDP PUT, each
    /// a cache entry never read again, since the write answers later
    /// reads).
    pub fn writing_misses(&self) -> WritingMisses<'_, 'a> {
        WritingMisses(self)
    }

    /// Looks `keys` of `ks` up in the snapshot in one sorted walk, so that
    /// a later `get` of one it lacks answers without a point read: for a
    /// batch about to read many keys, most of them new (see
    /// `absent_keys`). The transaction's own writes still come first.
    pub fn find_absent(&mut self, ks: Keyspace, keys: Vec<Vec<u8>>) -> Result<()> {
        self.absent.find(self.snapshot.as_ref(), ks, keys)
    }

    /// What this transaction itself did to a key: `Some(true)` put,
    /// `Some(false)` deleted, `None` untouched (the snapshot decides).
    pub fn own_write(&self, ks: Keyspace, key: &[u8]) -> Option<bool> {
        self.overlay.get(&ks).and_then(|o| o.get(KeyBytes::new(key))).map(|v| v.is_some()).or_else(|| self.tuple_write(ks, key))
    }

    pub fn put(&mut self, ks: Keyspace, key: &[u8], value: &[u8]) {
        self.overlay.entry(ks).or_default().insert(OverlayKey(key.to_vec()), Some(value.to_vec()));
    }

    pub fn delete(&mut self, ks: Keyspace, key: &[u8]) {
        self.overlay.entry(ks).or_default().insert(OverlayKey(key.to_vec()), None);
    }

    /// A write that this transaction's reads (`get`, cursors, ...) do not
    /// see, kept in order and committed after the overlay's writes (it
    /// replaces the overlay's write of the same key): for the writes a
    /// transaction makes last, just before its commit. A store's statistics
    /// are some 400 keys of a 200-triple LDP PUT, each an insert into the
    /// overlay's ordered map otherwise (about 790 instructions, issue 46).
    /// A key is written here at most once, and not through `put` or
    /// `delete` afterwards.
    pub fn put_unread(&mut self, ks: Keyspace, key: &[u8], value: &[u8]) {
        self.unread.push(WriteOp::Put(ks, key.to_vec(), value.to_vec()));
    }

    /// A deletion as [`Transaction::put_unread`] writes.
    pub fn delete_unread(&mut self, ks: Keyspace, key: &[u8]) {
        self.unread.push(WriteOp::Delete(ks, key.to_vec()));
    }

    /// Number of keys written so far.
    pub fn write_count(&self) -> usize {
        self.overlay.values().map(|o| o.len()).sum::<usize>() + self.unread.len() + self.tuples.len()
    }

    /// A cursor over `[lower, upper)` that sees this transaction's writes.
    pub fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        let mut base = self.snapshot.cursor(ks, lower, upper);
        if let Some((layout, slot)) = self.tuple_slot(ks) {
            let keys = self.tuple_keys[slot].get_or_init(|| self.tuples.iter().filter(|(t, _)| layout.holds(slot, t)).map(|(t, there)| (layout.key_of(slot, t), *there)).collect());
            if !keys.is_empty() {
                base = Box::new(MergedCursor::new(base, TupleLayer { keys, bytes: layout.words(slot) * 8 }, lower, upper));
            }
        }
        let overlay = self.overlay.get(&ks).unwrap_or(&self.empty);
        if overlay.is_empty() {
            return base;
        }
        Box::new(MergedCursor::new(base, OverlayLayer(overlay), lower, upper))
    }

    /// Writes everything atomically and durably.
    pub fn commit(self) -> Result<()> {
        // The read snapshot goes first: the memory backend copies its whole
        // map on a commit while any snapshot of the old version is alive.
        // The writer's lock (`_guard`) is held to the end.
        let Transaction { _guard, backend, lease, snapshot, mut overlay, unread, tuples, layout, .. } = self;
        drop(snapshot);
        debug_assert!(tuples.is_empty() || layout.is_some());
        // A key written both ways is written once, as `unread` has it: a
        // batch never holds one key twice.
        for op in &unread {
            let (WriteOp::Put(ks, key, _) | WriteOp::Delete(ks, key)) = op;
            if let Some(o) = overlay.get_mut(ks).filter(|o| !o.is_empty()) {
                o.remove(KeyBytes::new(key));
            }
        }
        let mut batch = WriteBatch::default();
        // Sized once: a group commit's batch holds thousands of writes.
        batch.ops.reserve_exact(overlay.values().map(|o| o.len()).sum::<usize>() + unread.len());
        for (ks, overlay) in overlay {
            for (OverlayKey(k), v) in overlay {
                batch.ops.push(match v {
                    Some(v) => WriteOp::Put(ks, k, v),
                    None => WriteOp::Delete(ks, k),
                });
            }
        }
        batch.ops.extend(unread);
        batch.tuples = tuples.into_iter().collect();
        match lease {
            Some(mut lease) => lease.commit(batch, true),
            None => backend.commit(batch),
        }
    }
}

/// See [`Transaction::writing_misses`].
pub struct WritingMisses<'t, 'a>(&'t Transaction<'a>);

impl KvRead for WritingMisses<'_, '_> {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.get_keeping(ks, key, false)
    }
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        self.0.cursor(ks, lower, upper)
    }
}

impl KvRead for Transaction<'_> {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Transaction::get(self, ks, key)
    }
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        Transaction::cursor(self, ks, lower, upper)
    }
    fn approximate_bytes(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Option<u64> {
        self.snapshot.approximate_bytes(ks, lower, upper)
    }
    // On a cluster, reads sent together stay together inside a
    // transaction (a SPARQL Update's WHERE, a write's dictionary lookups):
    // what the transaction wrote is answered from its overlay, the rest
    // goes to the snapshot in one call.
    fn reads_are_round_trips(&self) -> bool {
        self.snapshot.reads_are_round_trips()
    }
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let overlay = self.overlay.get(&ks);
        let mut out: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let mut from_snapshot = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match overlay.and_then(|o| o.get(KeyBytes::new(key))) {
                Some(written) => out[i] = written.clone(),
                None => match self.tuple_write(ks, key) {
                    Some(there) => out[i] = there.then(Vec::new),
                    None if self.absent.contains(ks, key) => {}
                    None => from_snapshot.push(i),
                },
            }
        }
        if !from_snapshot.is_empty() {
            let asked: Vec<Vec<u8>> = from_snapshot.iter().map(|&i| keys[i].clone()).collect();
            for (i, value) in from_snapshot.into_iter().zip(self.reads.get_many(self.snapshot.as_ref(), ks, &asked)?) {
                out[i] = value;
            }
        }
        Ok(out)
    }
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        if self.has_own_writes(ks) {
            crate::backend::scan_ranges_by_cursor(self, ks, ranges)
        } else {
            self.snapshot.scan_ranges(ks, ranges)
        }
    }
    fn cursors_sought(&self, seeks: &[crate::CursorSeek<'_>]) -> Vec<Box<dyn Cursor + '_>> {
        if seeks.iter().any(|s| self.has_own_writes(s.ks)) {
            crate::backend::cursors_sought_one_by_one(self, seeks)
        } else {
            self.snapshot.cursors_sought(seeks)
        }
    }
}

/// Writes a [`MergedCursor`] lays over its base: entries in key order, a
/// `None` value a deletion.
trait Layer<'a> {
    type Entry: Copy;
    /// The first entry from `from` and below `upper`.
    fn first(&self, from: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<Self::Entry>;
    /// The last entry at or above `lower` and before `until`.
    fn last(&self, lower: &[u8], until: Bound<&[u8]>) -> Option<Self::Entry>;
    fn key(entry: &Self::Entry) -> &[u8];
    fn value(entry: &Self::Entry) -> Option<&[u8]>;
}

/// The overlay of a keyspace.
struct OverlayLayer<'a>(&'a Overlay);

impl<'a> Layer<'a> for OverlayLayer<'a> {
    type Entry = (&'a OverlayKey, &'a Option<Vec<u8>>);
    fn first(&self, from: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<Self::Entry> {
        let overlay: &'a Overlay = self.0;
        overlay.range::<KeyBytes, _>((from.map(KeyBytes::new), upper.map(KeyBytes::new))).next()
    }
    fn last(&self, lower: &[u8], until: Bound<&[u8]>) -> Option<Self::Entry> {
        let overlay: &'a Overlay = self.0;
        overlay.range::<KeyBytes, _>((Bound::Included(KeyBytes::new(lower)), until.map(KeyBytes::new))).next_back()
    }
    fn key(entry: &Self::Entry) -> &[u8] {
        entry.0.as_bytes()
    }
    fn value(entry: &Self::Entry) -> Option<&[u8]> {
        entry.1.as_deref()
    }
}

/// A slot's tuple writes as keys of `bytes` bytes with empty values.
struct TupleLayer<'a> {
    keys: &'a TupleKeys,
    bytes: usize,
}

/// A tuple key's bytes, the length and whether it is there.
type TupleEntry = ([u8; 32], u8, bool);

impl TupleLayer<'_> {
    /// The words of a bound's first `self.bytes` bytes, zero-padded (see
    /// `first` and `last`).
    fn words(&self, bound: &[u8]) -> [u64; 4] {
        let mut bytes = [0u8; 32];
        let n = bound.len().min(self.bytes);
        bytes[..n].copy_from_slice(&bound[..n]);
        std::array::from_fn(|i| u64::from_be_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes")))
    }
    fn entry(&self, key: &[u64; 4], there: bool) -> TupleEntry {
        let mut bytes = [0u8; 32];
        for (i, w) in key.iter().enumerate() {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_be_bytes());
        }
        (bytes, self.bytes as u8, there)
    }
}

fn below(key: &[u8], bound: Bound<&[u8]>) -> bool {
    match bound {
        Bound::Included(b) => key <= b,
        Bound::Excluded(b) => key < b,
        Bound::Unbounded => true,
    }
}

fn above(key: &[u8], bound: Bound<&[u8]>) -> bool {
    match bound {
        Bound::Included(b) => key >= b,
        Bound::Excluded(b) => key > b,
        Bound::Unbounded => true,
    }
}

impl<'a> Layer<'a> for TupleLayer<'a> {
    type Entry = TupleEntry;
    // A key of `self.bytes` bytes at or above a bound `b` is at or above
    // `b`'s first `self.bytes` bytes zero-padded (as words), so the range
    // from there holds every key from `b`; the keys in it before `b` (its
    // padded prefix itself, for a longer `b`) are skipped.
    fn first(&self, from: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<TupleEntry> {
        let start = match from {
            Bound::Included(b) | Bound::Excluded(b) => self.words(b),
            Bound::Unbounded => [0; 4],
        };
        for (key, there) in self.keys.range(start..) {
            let entry = self.entry(key, *there);
            let bytes = &entry.0[..self.bytes];
            if !above(bytes, from) {
                continue;
            }
            return below(bytes, upper).then_some(entry);
        }
        None
    }
    // Likewise a key at or below `b` is at or below `b`'s first bytes
    // zero-padded: a shorter `b` is a prefix, below every longer key that
    // starts with it, and the padded prefix is the least of them.
    fn last(&self, lower: &[u8], until: Bound<&[u8]>) -> Option<TupleEntry> {
        let end = match until {
            Bound::Included(b) | Bound::Excluded(b) => Bound::Included(self.words(b)),
            Bound::Unbounded => Bound::Unbounded,
        };
        for (key, there) in self.keys.range((Bound::Unbounded, end)).rev() {
            let entry = self.entry(key, *there);
            let bytes = &entry.0[..self.bytes];
            if !below(bytes, until) {
                continue;
            }
            return (bytes >= lower).then_some(entry);
        }
        None
    }
    fn key(entry: &TupleEntry) -> &[u8] {
        &entry.0[..entry.1 as usize]
    }
    fn value(entry: &TupleEntry) -> Option<&[u8]> {
        entry.2.then_some(&[][..])
    }
}

/// Merges the snapshot's cursor with a layer of writes (the overlay, or
/// the tuple writes); the layer wins on equal keys and its deletions hide
/// the base's keys.
struct MergedCursor<'a, L: Layer<'a>> {
    base: Box<dyn Cursor + 'a>,
    layer: L,
    lower: Vec<u8>,
    upper: Option<Vec<u8>>,
    ov: Option<L::Entry>,
    forward: bool,
    on_overlay: bool,
}

impl<'a, L: Layer<'a>> MergedCursor<'a, L> {
    fn new(base: Box<dyn Cursor + 'a>, layer: L, lower: &[u8], upper: Option<&[u8]>) -> Self {
        MergedCursor { base, layer, lower: lower.to_vec(), upper: upper.map(|u| u.to_vec()), ov: None, forward: true, on_overlay: false }
    }
    fn upper_bound(&self) -> Bound<&[u8]> {
        match &self.upper {
            Some(u) => Bound::Excluded(u.as_slice()),
            None => Bound::Unbounded,
        }
    }
    fn ov_from(&mut self, from: Bound<&[u8]>) {
        let from = match from {
            Bound::Included(k) | Bound::Excluded(k) if k < self.lower.as_slice() => Bound::Included(self.lower.as_slice()),
            b => b,
        };
        let upper = self.upper_bound();
        self.ov = self.layer.first(from, upper);
    }
    fn ov_until(&mut self, until: Bound<&[u8]>) {
        let until = match (until, &self.upper) {
            (Bound::Included(k) | Bound::Excluded(k), Some(u)) if k >= u.as_slice() => Bound::Excluded(u.as_slice()),
            (b, _) => b,
        };
        if let Bound::Included(k) | Bound::Excluded(k) = until {
            if k < self.lower.as_slice() {
                self.ov = None;
                return;
            }
        }
        self.ov = self.layer.last(&self.lower, until);
    }
    /// Picks the current entry, skipping deletions.
    fn settle(&mut self) {
        loop {
            let Some(ov) = self.ov else {
                self.on_overlay = false;
                return;
            };
            let take_overlay = if self.base.valid() {
                let bk = self.base.key();
                if self.forward {
                    L::key(&ov) <= bk
                } else {
                    L::key(&ov) >= bk
                }
            } else {
                true
            };
            if !take_overlay {
                self.on_overlay = false;
                return;
            }
            if L::value(&ov).is_some() {
                self.on_overlay = true;
                return;
            }
            // A deletion: skip it and the base key it hides.
            let key = L::key(&ov).to_vec();
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.step_base();
            }
            self.step_ov(&key);
        }
    }
    fn step_base(&mut self) {
        if self.forward {
            self.base.next()
        } else {
            self.base.prev()
        }
    }
    fn step_ov(&mut self, key: &[u8]) {
        if self.forward {
            self.ov_from(Bound::Excluded(key))
        } else {
            self.ov_until(Bound::Excluded(key))
        }
    }
    fn step(&mut self) {
        if self.on_overlay {
            let key = L::key(self.ov.as_ref().expect("on overlay")).to_vec();
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.step_base();
            }
            self.step_ov(&key);
        } else {
            self.step_base();
        }
        self.settle();
    }
    fn current_key(&self) -> Option<Vec<u8>> {
        self.valid().then(|| self.key().to_vec())
    }
}

impl<'a, L: Layer<'a>> Cursor for MergedCursor<'a, L> {
    fn seek(&mut self, key: &[u8]) {
        self.forward = true;
        self.base.seek(key);
        self.ov_from(Bound::Included(key));
        self.settle();
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        self.forward = false;
        self.base.seek_for_prev(key);
        self.ov_until(Bound::Included(key));
        self.settle();
    }
    fn seek_first(&mut self) {
        let lower = self.lower.clone();
        self.seek(&lower);
    }
    fn seek_last(&mut self) {
        self.forward = false;
        self.base.seek_last();
        self.ov_until(Bound::Unbounded);
        self.settle();
    }
    fn valid(&self) -> bool {
        self.on_overlay || self.base.valid()
    }
    fn key(&self) -> &[u8] {
        if self.on_overlay {
            L::key(self.ov.as_ref().expect("on overlay"))
        } else {
            self.base.key()
        }
    }
    fn value(&self) -> &[u8] {
        if self.on_overlay {
            L::value(self.ov.as_ref().expect("on overlay")).expect("settled on a put")
        } else {
            self.base.value()
        }
    }
    fn next(&mut self) {
        if !self.forward {
            // Change of direction: re-seek just after the current key.
            if let Some(k) = self.current_key() {
                self.seek(&k);
                if self.valid() && self.key() == k.as_slice() {
                    self.step();
                }
            }
            return;
        }
        self.step();
    }
    fn prev(&mut self) {
        if self.forward {
            if let Some(k) = self.current_key() {
                self.seek_for_prev(&k);
                if self.valid() && self.key() == k.as_slice() {
                    self.step();
                }
            }
            return;
        }
        self.step();
    }
    fn status(&self) -> Result<()> {
        self.base.status()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Kv, Keyspace};

    const KS: Keyspace = Keyspace(3);

    /// A store holding `a` and `b`, both `base`.
    fn a_and_b() -> Kv {
        let kv = Kv::memory();
        let mut t = kv.transaction().unwrap();
        t.put(KS, b"a", b"base");
        t.put(KS, b"b", b"base");
        t.commit().unwrap();
        kv
    }

    fn keys(c: &mut dyn crate::Cursor, forward: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while c.valid() {
            out.push(c.key().to_vec());
            if forward {
                c.next()
            } else {
                c.prev()
            }
        }
        out
    }

    /// Point reads of the snapshot are remembered (`ReadCache`); a key
    /// read, then written or deleted, reads as written.
    #[test]
    fn a_key_read_then_written_reads_as_written() {
        let kv = a_and_b();
        let mut t = kv.transaction().unwrap();
        for _ in 0..2 {
            assert_eq!(t.get(KS, b"a").unwrap().as_deref(), Some(&b"base"[..]));
            assert_eq!(t.get(KS, b"b").unwrap().as_deref(), Some(&b"base"[..]));
            assert_eq!(t.get(KS, b"c").unwrap(), None);
        }
        t.put(KS, b"a", b"new");
        t.delete(KS, b"b");
        t.put(KS, b"c", b"new");
        assert_eq!(t.get(KS, b"a").unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(t.get(KS, b"b").unwrap(), None);
        assert_eq!(t.get(KS, b"c").unwrap().as_deref(), Some(&b"new"[..]));
        t.commit().unwrap();
        let t = kv.transaction().unwrap();
        assert_eq!(t.get(KS, b"a").unwrap().as_deref(), Some(&b"new"[..]), "a new transaction reads the commit, not an old cache");
    }

    /// Writes past the overlay (`put_unread`) are committed with the
    /// rest, in place of the overlay's write of the same key, and the
    /// transaction's reads do not see them.
    #[test]
    fn unread_writes_are_committed_and_replace_the_overlays() {
        let kv = a_and_b();
        let mut t = kv.transaction().unwrap();
        t.put(KS, b"c", b"overlay");
        t.delete(KS, b"b");
        t.put_unread(KS, b"a", b"unread");
        t.put_unread(KS, b"b", b"unread");
        t.delete_unread(KS, b"c");
        t.put_unread(KS, b"d", b"unread");
        assert_eq!(t.get(KS, b"a").unwrap().as_deref(), Some(&b"base"[..]), "not read back");
        assert_eq!(t.get(KS, b"d").unwrap(), None, "not read back");
        assert_eq!(t.write_count(), 6);
        t.commit().unwrap();
        let t = kv.transaction().unwrap();
        let mut c = t.cursor(KS, b"", None);
        c.seek_first();
        assert_eq!(keys(&mut *c, true), [b"a", b"b", b"d"]);
        for key in [b"a", b"b", b"d"] {
            assert_eq!(t.get(KS, key).unwrap().as_deref(), Some(&b"unread"[..]));
        }
    }

    /// The reads a cluster sends together (`get_many`, `scan_ranges`,
    /// `cursors_sought`) answer inside a transaction exactly as its reads
    /// one by one do: its own puts and deletes first, then the snapshot.
    #[test]
    fn reads_sent_together_see_the_transactions_own_writes() {
        use crate::{CursorSeek, KvRead};
        const OTHER: Keyspace = Keyspace(4);
        let kv = Kv::memory();
        let mut t = kv.transaction().unwrap();
        for k in [&b"a"[..], b"c", b"e", b"g"] {
            t.put(KS, k, b"base");
            t.put(OTHER, k, b"other");
        }
        t.commit().unwrap();
        let mut t = kv.transaction().unwrap();
        let asked: Vec<Vec<u8>> = [&b"a"[..], b"b", b"c", b"e", b"z", b"a"].iter().map(|k| k.to_vec()).collect();
        let one_by_one = |t: &crate::Transaction<'_>, ks| asked.iter().map(|k| t.get(ks, k).unwrap()).collect::<Vec<_>>();
        assert_eq!(KvRead::get_many(&t, KS, &asked).unwrap(), one_by_one(&t, KS), "before any write");
        t.put(KS, b"b", b"new");
        t.delete(KS, b"c");
        t.put(KS, b"e", b"changed");
        let together = KvRead::get_many(&t, KS, &asked).unwrap();
        assert_eq!(together, one_by_one(&t, KS));
        assert_eq!(together[1].as_deref(), Some(&b"new"[..]));
        assert_eq!(together[2], None);
        assert_eq!(KvRead::get_many(&t, OTHER, &asked).unwrap(), one_by_one(&t, OTHER), "a keyspace the transaction did not write");
        let ranges = vec![(b"a".to_vec(), b"d".to_vec()), (b"d".to_vec(), b"zz".to_vec())];
        for ks in [KS, OTHER] {
            let walked = crate::backend::scan_ranges_by_cursor(&t, ks, &ranges).unwrap();
            assert_eq!(KvRead::scan_ranges(&t, ks, &ranges).unwrap(), walked);
        }
        let scanned: Vec<Vec<u8>> = KvRead::scan_ranges(&t, KS, &ranges).unwrap().concat().into_iter().map(|(k, _)| k).collect();
        assert_eq!(scanned, vec![b"a".to_vec(), b"b".to_vec(), b"e".to_vec(), b"g".to_vec()]);
        let seeks = [CursorSeek { ks: KS, lower: b"", upper: None, at: b"b" }, CursorSeek { ks: OTHER, lower: b"", upper: None, at: b"b" }];
        let mut cursors = KvRead::cursors_sought(&t, &seeks);
        assert_eq!(keys(cursors[0].as_mut(), true), vec![b"b".to_vec(), b"e".to_vec(), b"g".to_vec()]);
        assert_eq!(keys(cursors[1].as_mut(), true), vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]);
    }

    #[test]
    fn transaction_scans_see_own_puts_and_deletes_in_both_directions() {
        let kv = Kv::memory();
        let mut t = kv.transaction().unwrap();
        for k in [b"a", b"c", b"e", b"g"] {
            t.put(KS, k, b"base");
        }
        t.commit().unwrap();
        let mut t = kv.transaction().unwrap();
        t.put(KS, b"b", b"new");
        t.delete(KS, b"c");
        t.put(KS, b"e", b"changed");
        t.put(KS, b"h", b"new");
        t.put(Keyspace(4), b"d", b"other keyspace");
        let mut c = t.cursor(KS, b"", None);
        c.seek_first();
        assert_eq!(keys(c.as_mut(), true), vec![b"a".to_vec(), b"b".to_vec(), b"e".to_vec(), b"g".to_vec(), b"h".to_vec()]);
        c.seek_last();
        assert_eq!(keys(c.as_mut(), false), vec![b"h".to_vec(), b"g".to_vec(), b"e".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        c.seek(b"c");
        assert_eq!(c.key(), b"e");
        assert_eq!(c.value(), b"changed");
        let mut bounded = t.cursor(KS, b"b", Some(b"g"));
        bounded.seek_first();
        assert_eq!(keys(bounded.as_mut(), true), vec![b"b".to_vec(), b"e".to_vec()]);
        assert_eq!(t.get(KS, b"c").unwrap(), None);
        assert_eq!(t.get(KS, b"a").unwrap(), Some(b"base".to_vec()));
        drop(c);
        drop(bounded);
        t.commit().unwrap();
        let s = kv.snapshot().unwrap();
        assert_eq!(s.get(KS, b"c").unwrap(), None);
        assert_eq!(s.get(KS, b"h").unwrap(), Some(b"new".to_vec()));
    }

    #[test]
    fn dropped_transaction_writes_nothing() {
        let kv = Kv::memory();
        let mut t = kv.transaction().unwrap();
        t.put(KS, b"x", b"1");
        drop(t);
        assert_eq!(kv.snapshot().unwrap().get(KS, b"x").unwrap(), None);
    }

    /// Empty ranges (lower above upper, a seek past the upper bound, a
    /// reverse seek below the lower one) read as empty on every backend:
    /// the memory backend once panicked on them in `BTreeMap::range`.
    #[test]
    fn empty_and_inverted_ranges_read_as_empty_on_memory_and_disk() {
        let dir = tempfile::tempdir().unwrap();
        for kv in [Kv::memory(), Kv::open(dir.path()).unwrap()] {
            let mut t = kv.transaction().unwrap();
            for k in [&b"a"[..], b"b", b"c", b"d"] {
                t.put(KS, k, b"v");
            }
            t.commit().unwrap();
            let s = kv.snapshot().unwrap();
            let mut c = s.cursor(KS, b"c", Some(b"b"));
            c.seek_first();
            assert!(!c.valid(), "lower above upper, forward");
            c.seek_last();
            assert!(!c.valid(), "lower above upper, backward");
            c.seek(b"a");
            assert!(!c.valid(), "lower above upper, seek");
            let mut c = s.cursor(KS, b"b", Some(b"c"));
            c.seek(b"c");
            assert!(!c.valid(), "seek to the upper bound");
            c.seek(b"z");
            assert!(!c.valid(), "seek past the upper bound");
            c.seek_for_prev(b"a");
            assert!(!c.valid(), "reverse seek below the lower bound");
            c.seek(b"b");
            assert_eq!(keys(&mut *c, true), vec![b"b".to_vec()]);
            c.seek_for_prev(b"z");
            assert_eq!(keys(&mut *c, false), vec![b"b".to_vec()]);
        }
    }

    #[test]
    fn snapshot_is_isolated_from_later_commits() {
        let kv = Kv::memory();
        let before = kv.snapshot().unwrap();
        let mut t = kv.transaction().unwrap();
        t.put(KS, b"x", b"1");
        t.commit().unwrap();
        assert_eq!(before.get(KS, b"x").unwrap(), None);
        assert_eq!(kv.snapshot().unwrap().get(KS, b"x").unwrap(), Some(b"1".to_vec()));
    }
}
