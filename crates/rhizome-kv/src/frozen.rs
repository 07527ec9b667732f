//! A transaction frozen before its commit ([`crate::Transaction::freeze`]),
//! so that the next one runs while its write (and fsync) does: a pipelined
//! group commit (`rhizome-server`'s `group_commit`, issue 45).
//!
//! The frozen writes become a batch, written by whoever holds the
//! [`PendingCommit`], and a read view laid over the store's snapshot
//! ([`Layered`]) for the next transaction, which takes over the writer
//! lock. The engine sees each batch only once its synced write returns
//! (RocksDB shows a synced write to readers only once its log is synced),
//! so readers never see the frozen writes early. The next transaction's
//! commit must wait for this write, and must not happen if it failed: the
//! caller orders them (the next one reads writes that may never land).

use crate::backend::{Backend, Cursor, CursorSeek, KvRead, Snapshot, TupleLayout, WriteBatch, WriteOp, MAX_TUPLE_SLOTS};
use crate::overlay_key::{KeyBytes, OverlayKey};
use crate::transaction::{MergedCursor, Overlay, OverlayLayer, TupleKeys, TupleLayer};
use crate::{Keyspace, Result};
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

/// A frozen transaction's batch, to write once (on any thread).
pub struct PendingCommit<'a> {
    pub(crate) backend: &'a dyn Backend,
    pub(crate) batch: WriteBatch,
}

impl PendingCommit<'_> {
    /// Writes the batch atomically and durably.
    pub fn write(self) -> Result<()> {
        self.backend.commit(self.batch)
    }
}

/// A frozen transaction's writes, read back: its overlay with its unread
/// writes (`put_unread`) merged in (the next transaction reads those: the
/// store's counters, its statistics), and its tuple writes.
pub(crate) struct FrozenWrites {
    overlay: FxHashMap<Keyspace, Overlay>,
    tuples: FxHashMap<[u64; 4], bool>,
    layout: Option<&'static dyn TupleLayout>,
    tuple_keys: [OnceLock<TupleKeys>; MAX_TUPLE_SLOTS],
}

impl FrozenWrites {
    pub(crate) fn new(mut overlay: FxHashMap<Keyspace, Overlay>, unread: Vec<WriteOp>, tuples: FxHashMap<[u64; 4], bool>, layout: Option<&'static dyn TupleLayout>) -> Self {
        for op in unread {
            match op {
                WriteOp::Put(ks, key, value) => overlay.entry(ks).or_default().insert(OverlayKey(key), Some(value)),
                WriteOp::Delete(ks, key) => overlay.entry(ks).or_default().insert(OverlayKey(key), None),
            };
        }
        FrozenWrites { overlay, tuples, layout, tuple_keys: Default::default() }
    }

    /// The writes as one batch (a key once, as the transaction left it).
    pub(crate) fn batch(&self) -> WriteBatch {
        let mut batch = WriteBatch::default();
        batch.ops.reserve_exact(self.overlay.values().map(|o| o.len()).sum());
        for (ks, overlay) in &self.overlay {
            for (OverlayKey(k), v) in overlay {
                batch.ops.push(match v {
                    Some(v) => WriteOp::Put(*ks, k.clone(), v.clone()),
                    None => WriteOp::Delete(*ks, k.clone()),
                });
            }
        }
        batch.tuples = self.tuples.iter().map(|(t, there)| (*t, *there)).collect();
        batch
    }

    fn slot(&self, ks: Keyspace) -> Option<(&'static dyn TupleLayout, usize)> {
        if self.tuples.is_empty() {
            return None;
        }
        let layout = self.layout?;
        Some((layout, layout.slot_of(ks)?))
    }

    fn touches(&self, ks: Keyspace) -> bool {
        self.overlay.get(&ks).is_some_and(|o| !o.is_empty()) || self.slot(ks).is_some()
    }

    /// What the writes did to `key`: `Some(Some(value))` put, `Some(None)`
    /// deleted, `None` untouched.
    fn lookup(&self, ks: Keyspace, key: &[u8]) -> Option<Option<Vec<u8>>> {
        if let Some(entry) = self.overlay.get(&ks).and_then(|o| o.get(KeyBytes::new(key))) {
            return Some(entry.clone());
        }
        let (layout, slot) = self.slot(ks)?;
        let words = layout.words(slot);
        if key.len() != words * 8 {
            return None;
        }
        let mut k = [0u64; 4];
        for (i, chunk) in key.chunks_exact(8).enumerate() {
            k[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        }
        let tuple = layout.tuple_of(slot, &k);
        if !layout.holds(slot, &tuple) {
            return None;
        }
        self.tuples.get(&tuple).map(|there| there.then(Vec::new))
    }
}

/// A snapshot with a frozen transaction's writes laid over it.
pub(crate) struct Layered {
    base: Arc<dyn Snapshot>,
    writes: Arc<FrozenWrites>,
}

impl Layered {
    pub(crate) fn new(base: Arc<dyn Snapshot>, writes: Arc<FrozenWrites>) -> Self {
        Layered { base, writes }
    }
}

impl KvRead for Layered {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.writes.lookup(ks, key) {
            Some(written) => Ok(written),
            None => self.base.get(ks, key),
        }
    }
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        let mut base = self.base.cursor(ks, lower, upper);
        let w = &*self.writes;
        if let Some((layout, slot)) = w.slot(ks) {
            let keys = w.tuple_keys[slot].get_or_init(|| w.tuples.iter().filter(|(t, _)| layout.holds(slot, t)).map(|(t, there)| (layout.key_of(slot, t), *there)).collect());
            if !keys.is_empty() {
                base = Box::new(MergedCursor::new(base, TupleLayer { keys, bytes: layout.words(slot) * 8 }, lower, upper));
            }
        }
        match w.overlay.get(&ks) {
            Some(overlay) if !overlay.is_empty() => Box::new(MergedCursor::new(base, OverlayLayer(overlay), lower, upper)),
            _ => base,
        }
    }
    fn approximate_bytes(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Option<u64> {
        self.base.approximate_bytes(ks, lower, upper)
    }
    fn reads_are_round_trips(&self) -> bool {
        self.base.reads_are_round_trips()
    }
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        if !self.writes.touches(ks) {
            return self.base.get_many(ks, keys);
        }
        keys.iter().map(|key| self.get(ks, key)).collect()
    }
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        if !self.writes.touches(ks) {
            return self.base.scan_ranges(ks, ranges);
        }
        crate::backend::scan_ranges_by_cursor(self, ks, ranges)
    }
    fn cursors_sought(&self, seeks: &[CursorSeek<'_>]) -> Vec<Box<dyn Cursor + '_>> {
        if seeks.iter().any(|s| self.writes.touches(s.ks)) {
            return crate::backend::cursors_sought_one_by_one(self, seeks);
        }
        self.base.cursors_sought(seeks)
    }
}

impl Snapshot for Layered {}

#[cfg(test)]
mod tests {
    use crate::{Keyspace, Kv};

    const KS: Keyspace = Keyspace(3);

    /// The next transaction reads the frozen one's writes (puts, deletes,
    /// unread writes) as committed, while the store shows none of them
    /// until the pending write; its own commit then lands after it.
    #[test]
    fn the_next_transaction_reads_the_frozen_writes_and_the_store_does_not_until_written() {
        let dir = tempfile::tempdir().unwrap();
        for kv in [Kv::memory(), Kv::open(dir.path()).unwrap()] {
            let mut t = kv.transaction().unwrap();
            t.put(KS, b"a", b"base");
            t.put(KS, b"b", b"base");
            t.commit().unwrap();
            let mut first = kv.transaction().unwrap();
            first.put(KS, b"c", b"first");
            first.delete(KS, b"a");
            first.put_unread(KS, b"n", b"1");
            let (pending, mut next) = first.freeze().unwrap();
            assert_eq!(next.get(KS, b"a").unwrap(), None);
            assert_eq!(next.get(KS, b"c").unwrap().as_deref(), Some(&b"first"[..]));
            assert_eq!(next.get(KS, b"n").unwrap().as_deref(), Some(&b"1"[..]), "an unread write is read by the next");
            let mut c = next.cursor(KS, b"", None);
            c.seek_first();
            let mut keys = Vec::new();
            while c.valid() {
                keys.push(c.key().to_vec());
                c.next();
            }
            drop(c);
            assert_eq!(keys, [&b"b"[..], b"c", b"n"]);
            next.put(KS, b"n", b"2");
            next.put(KS, b"d", b"next");
            let s = kv.snapshot().unwrap();
            assert_eq!(s.get(KS, b"a").unwrap().as_deref(), Some(&b"base"[..]), "not written yet");
            assert_eq!(s.get(KS, b"c").unwrap(), None);
            drop(s);
            pending.write().unwrap();
            let s = kv.snapshot().unwrap();
            assert_eq!(s.get(KS, b"a").unwrap(), None);
            assert_eq!(s.get(KS, b"n").unwrap().as_deref(), Some(&b"1"[..]));
            drop(s);
            next.commit().unwrap();
            let s = kv.snapshot().unwrap();
            assert_eq!(s.get(KS, b"n").unwrap().as_deref(), Some(&b"2"[..]));
            assert_eq!(s.get(KS, b"d").unwrap().as_deref(), Some(&b"next"[..]));
            assert_eq!(s.get(KS, b"c").unwrap().as_deref(), Some(&b"first"[..]));
        }
    }
}
