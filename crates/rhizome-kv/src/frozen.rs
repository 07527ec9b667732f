//! A transaction frozen before its commit ([`crate::Transaction::freeze`]),
//! so that the next writer runs while its write (and fsync) does: a
//! pipelined group commit (`rhizome-server`'s `group_commit`, issue 45).
//!
//! Freezing turns the writes into a batch, which the caller writes on its
//! own thread ([`PendingCommit`]), and a read view ([`Layered`]) that the
//! next writer lays over the store's snapshot while that write runs (the
//! store's [`LandingSlot`]); the writer lock is released at once. The next
//! writer's commit (or freeze, or a bulk job) waits for the write to land,
//! and fails if it failed: every commit still lands in writer order, one
//! at a time. The engine shows a batch to readers only once its synced
//! write returns (RocksDB publishes a synced write once its log is synced),
//! so readers never see frozen writes early.

use crate::backend::{Backend, Cursor, CursorSeek, KvRead, Snapshot, TupleLayout, WriteBatch, WriteOp, MAX_TUPLE_SLOTS};
use crate::overlay_key::{KeyBytes, OverlayKey};
use crate::transaction::{MergedCursor, Overlay, OverlayLayer, TupleKeys, TupleLayer};
use crate::{Error, Keyspace, Result};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LandState {
    Writing,
    Landed,
    Failed,
}

/// A frozen transaction's write: its writes, read back, and whether the
/// write has landed.
pub(crate) struct Landing {
    writes: Arc<FrozenWrites>,
    state: Mutex<LandState>,
    landed: Condvar,
}

impl Landing {
    pub(crate) fn new(writes: Arc<FrozenWrites>) -> Arc<Self> {
        Arc::new(Landing { writes, state: Mutex::new(LandState::Writing), landed: Condvar::new() })
    }
    pub(crate) fn writes(&self) -> &Arc<FrozenWrites> {
        &self.writes
    }
    pub(crate) fn is_writing(&self) -> bool {
        *lock(&self.state) == LandState::Writing
    }
    fn set(&self, state: LandState) {
        *lock(&self.state) = state;
        self.landed.notify_all();
    }
    /// Waits for the write; an error if it failed.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut state = lock(&self.state);
        while *state == LandState::Writing {
            state = self.landed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        match *state {
            LandState::Failed => Err(Error::Engine("the write of the transaction this one read through failed".into())),
            _ => Ok(()),
        }
    }
}

/// The store's last frozen write, set and taken under the writer lock.
#[derive(Default)]
pub(crate) struct LandingSlot(Mutex<Option<Arc<Landing>>>);

impl LandingSlot {
    pub(crate) fn set(&self, landing: Arc<Landing>) {
        *lock(&self.0) = Some(landing);
    }
    /// For a writer about to begin: the last frozen write if it still
    /// runs, and whether it failed (once: the slot is emptied once landed).
    pub(crate) fn take_writing(&self) -> (Option<Arc<Landing>>, bool) {
        let mut slot = lock(&self.0);
        let state = match slot.as_ref() {
            Some(l) => *lock(&l.state),
            None => return (None, false),
        };
        match state {
            LandState::Writing => (slot.clone(), false),
            LandState::Landed => {
                *slot = None;
                (None, false)
            }
            LandState::Failed => {
                *slot = None;
                (None, true)
            }
        }
    }
    /// Waits for the last frozen write (a bulk job, which goes past
    /// transactions); an error if it failed.
    pub(crate) fn wait(&self) -> Result<()> {
        let last = lock(&self.0).take();
        match last {
            Some(l) => l.wait(),
            None => Ok(()),
        }
    }
}

/// A frozen transaction's batch, to write once (on any thread). Dropped
/// unwritten, it counts as failed (the writer reading through it fails).
pub struct PendingCommit<'a> {
    backend: &'a dyn Backend,
    batch: Option<WriteBatch>,
    landing: Arc<Landing>,
}

impl<'a> PendingCommit<'a> {
    pub(crate) fn new(backend: &'a dyn Backend, batch: WriteBatch, landing: Arc<Landing>) -> Self {
        PendingCommit { backend, batch: Some(batch), landing }
    }

    /// Writes the batch atomically and durably.
    pub fn write(mut self) -> Result<()> {
        let batch = self.batch.take().expect("written once");
        let out = self.backend.commit(batch);
        self.landing.set(if out.is_ok() { LandState::Landed } else { LandState::Failed });
        out
    }
}

impl Drop for PendingCommit<'_> {
    fn drop(&mut self) {
        if self.batch.is_some() {
            self.landing.set(LandState::Failed);
        }
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

    /// The next writer reads the frozen one's writes (puts, deletes,
    /// unread writes) as committed, while the store shows none of them
    /// until the pending write lands; its own commit comes after it, and
    /// fails if that write never landed.
    #[test]
    fn the_next_writer_reads_the_frozen_writes_and_the_store_does_not_until_written() {
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
            let pending = first.freeze().unwrap();
            let mut next = kv.transaction().unwrap();
            assert!(next.predecessor_writing());
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
            // The frozen write on another thread: the next commit waits.
            std::thread::scope(|scope| {
                let written = scope.spawn(move || pending.write());
                next.commit().unwrap();
                written.join().unwrap().unwrap();
            });
            let s = kv.snapshot().unwrap();
            assert_eq!(s.get(KS, b"a").unwrap(), None);
            assert_eq!(s.get(KS, b"n").unwrap().as_deref(), Some(&b"2"[..]));
            assert_eq!(s.get(KS, b"d").unwrap().as_deref(), Some(&b"next"[..]));
            assert_eq!(s.get(KS, b"c").unwrap().as_deref(), Some(&b"first"[..]));
            drop(s);
            // A frozen write that never lands: the writer that read
            // through it fails, and the one after it is told.
            let mut lost = kv.transaction().unwrap();
            lost.put(KS, b"lost", b"1");
            let pending = lost.freeze().unwrap();
            let mut after = kv.transaction().unwrap();
            assert_eq!(after.get(KS, b"lost").unwrap().as_deref(), Some(&b"1"[..]));
            after.put(KS, b"after", b"1");
            drop(pending);
            assert!(after.commit().is_err(), "a commit over a write that never landed fails");
            let t = kv.transaction().unwrap();
            assert!(t.follows_failed_write());
            assert_eq!(t.get(KS, b"lost").unwrap(), None);
            assert_eq!(t.get(KS, b"after").unwrap(), None);
            drop(t);
            assert!(!kv.transaction().unwrap().follows_failed_write(), "told once");
        }
    }
}
