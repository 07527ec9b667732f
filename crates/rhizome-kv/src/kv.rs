//! `Kv`: a backend plus the single-writer lock.
//!
//! Readers never wait: each works on its own snapshot. Writers take turns
//! (as in SQLite and LMDB): a transaction or a bulk ingestion holds the
//! writer lock from its first read to its commit, so read-modify-write
//! sequences (counters, dictionary ids, revision trees) need no retry logic.

use crate::backend::{Backend, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteLease};
use crate::{Keyspace, MemoryBackend, Result, Transaction};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub struct Kv {
    backend: Arc<dyn Backend>,
    writer: Mutex<()>,
    durability: Durability,
}

/// A commit written but maybe not synced yet ([`Transaction::commit_unsynced`]):
/// [`Kv::wait_synced`] returns once it is durable. Numbered in commit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[must_use = "a commit is durable only once waited for"]
pub struct PendingSync(u64);

/// The syncs of commits written without one: one sync at a time, by
/// whichever waiter finds none running, covering every commit written
/// before it starts (so the commits of several groups share it, as
/// RocksDB's own write groups share theirs).
#[derive(Default)]
pub(crate) struct Durability {
    state: Mutex<SyncState>,
    synced_now: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// The last commit written (a `PendingSync` number).
    written: u64,
    /// Commits up to this one are durable.
    synced: u64,
    syncing: bool,
    /// A sync failed: what it said. The commits after the last good sync
    /// may or may not be on disk (an fsync that failed says nothing of
    /// what reached it), so none of them is answered as durable, and no
    /// commit is taken after it: the store stays in error until reopened.
    failed: Option<String>,
}

impl Durability {
    fn state(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Refuses a commit after a failed sync.
    pub(crate) fn check(&self) -> Result<()> {
        match &self.state().failed {
            Some(e) => Err(crate::Error::Engine(format!("an earlier commit's sync failed ({e}); reopen the store"))),
            None => Ok(()),
        }
    }

    /// Numbers a commit just written without a sync (under the writer lock,
    /// so in commit order).
    pub(crate) fn written(&self) -> PendingSync {
        let mut state = self.state();
        state.written += 1;
        PendingSync(state.written)
    }

    /// After a synced commit: every commit before it is durable too.
    pub(crate) fn all_synced(&self) {
        let mut state = self.state();
        if state.failed.is_none() && state.synced < state.written {
            state.synced = state.written;
            self.synced_now.notify_all();
        }
    }

    fn wait(&self, backend: &dyn Backend, pending: PendingSync) -> Result<()> {
        let mut state = self.state();
        loop {
            if state.synced >= pending.0 {
                return Ok(());
            }
            if let Some(e) = &state.failed {
                return Err(crate::Error::Engine(format!("the commit's sync failed: {e}")));
            }
            if state.syncing {
                state = self.synced_now.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.syncing = true;
            let target = state.written;
            drop(state);
            let result = backend.sync_wal();
            state = self.state();
            state.syncing = false;
            match result {
                Ok(()) => state.synced = state.synced.max(target),
                Err(e) => state.failed = Some(e.to_string()),
            }
            self.synced_now.notify_all();
        }
    }
}

impl Kv {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Kv { backend, writer: Mutex::new(()), durability: Durability::default() }
    }

    /// Returns once the commit `pending` names, and every commit before
    /// it, is durable (syncing them if no other thread is); an error if
    /// a sync failed before covering it (the commit may or may not be on
    /// disk, and the store takes no more commits).
    pub fn wait_synced(&self, pending: PendingSync) -> Result<()> {
        self.durability.wait(self.backend.as_ref(), pending)
    }

    /// Opens (creating if missing) the embedded store at `path`, tuned by
    /// the environment (see [`crate::RocksOptions::from_env`]).
    /// When the process uses a shared store (`--store`, `RHIZOME_STORE`:
    /// see [`crate::remote`]), the store named by `path` there.
    #[cfg(feature = "rocksdb")]
    pub fn open(path: &Path) -> Result<Self> {
        use crate::{RocksBackend, RocksOptions};
        if let Some(backend) = crate::remote::open(path)? {
            return Ok(Self::new(backend));
        }
        Ok(Self::new(Arc::new(RocksBackend::open(path, &RocksOptions::from_env()?)?)))
    }

    /// Opens the embedded store at `path` for reading only (see
    /// [`crate::RocksBackend::open_read_only`]); a shared store is opened
    /// as by [`Kv::open`].
    #[cfg(feature = "rocksdb")]
    pub fn open_read_only(path: &Path) -> Result<Self> {
        use crate::{RocksBackend, RocksOptions};
        if let Some(backend) = crate::remote::open(path)? {
            return Ok(Self::new(backend));
        }
        Ok(Self::new(Arc::new(RocksBackend::open_read_only(path, &RocksOptions::from_env()?)?)))
    }

    /// The embedded engine at `path` (created if missing unless
    /// `read_only`), tuned by the environment, for a layer that wraps it
    /// in a backend of its own before making a `Kv` of it.
    #[cfg(feature = "rocksdb")]
    pub fn open_backend(path: &Path, read_only: bool) -> Result<Arc<dyn Backend>> {
        use crate::{RocksBackend, RocksOptions};
        let options = RocksOptions::from_env()?;
        Ok(if read_only { Arc::new(RocksBackend::open_read_only(path, &options)?) } else { Arc::new(RocksBackend::open(path, &options)?) })
    }

    #[cfg(not(feature = "rocksdb"))]
    pub fn open_backend(path: &Path, _read_only: bool) -> Result<Arc<dyn Backend>> {
        Err(crate::Error::Engine(format!("built without the embedded backend; cannot open {}", path.display())))
    }

    #[cfg(not(feature = "rocksdb"))]
    pub fn open_read_only(path: &Path) -> Result<Self> {
        Self::open(path)
    }

    /// Without the embedded backend there is nothing on disk to open.
    #[cfg(not(feature = "rocksdb"))]
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(backend) = crate::remote::open(path)? {
            return Ok(Self::new(backend));
        }
        Err(crate::Error::Engine(format!("built without the embedded backend; cannot open {}", path.display())))
    }

    pub fn memory() -> Self {
        Self::new(Arc::new(MemoryBackend::new()))
    }

    pub fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        self.backend.snapshot()
    }

    /// Starts a read-write transaction; waits for the writer lock.
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        let guard = self.lock_writer();
        Transaction::new(guard, self.backend.as_ref(), &self.durability)
    }

    /// Takes the writer lock for a bulk job that writes through ingestion.
    /// Commits written without their sync are synced first: an ingestion
    /// is durable at once, and must not outlive a crash that loses them.
    pub fn bulk_writer(&self) -> Result<BulkWriter<'_>> {
        let guard = self.lock_writer();
        self.durability.check()?;
        let written = PendingSync(self.durability.state().written);
        self.wait_synced(written)?;
        let lease = self.backend.begin_write()?;
        let snapshot = match &lease {
            Some(lease) => lease.snapshot()?,
            None => self.backend.writer_snapshot()?,
        };
        Ok(BulkWriter { _guard: guard, backend: self.backend.as_ref(), lease: std::sync::Mutex::new(lease), snapshot })
    }

    /// A sorted run of a derived index (see [`Backend::index_run_writer`])
    /// to be ingested later by a [`BulkWriter`], written without the
    /// writer lock: a run is invisible until ingested, so a job can write
    /// its runs while others commit and hold the lock only to ingest.
    pub fn index_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.backend.index_run_writer(ks)
    }

    /// Whether other processes write this store too (a shared store):
    /// what a layer above keeps of it in memory may then go stale.
    pub fn is_shared(&self) -> bool {
        self.backend.is_shared()
    }

    pub fn compact(&self) -> Result<()> {
        self.backend.compact()
    }

    /// See [`Backend::stop_background_work`].
    pub fn stop_background_work(&self) {
        self.backend.stop_background_work()
    }

    /// See [`Backend::settle`].
    pub fn settle(&self, from: Keyspace, to: Keyspace) -> Result<()> {
        self.backend.settle(from, to)
    }

    pub fn size_on_disk(&self) -> Result<u64> {
        self.backend.size_on_disk()
    }

    fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // A writer that panicked holds no partial state here (its batch was
        // never committed), so a poisoned lock is safe to take over.
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Exclusive write access for bulk jobs: sorted runs plus small batches.
pub struct BulkWriter<'a> {
    _guard: MutexGuard<'a, ()>,
    backend: &'a dyn Backend,
    /// Write access shared with other processes (see [`Backend::begin_write`]).
    lease: std::sync::Mutex<Option<Box<dyn WriteLease>>>,
    snapshot: Arc<dyn Snapshot>,
}

impl BulkWriter<'_> {
    /// The state as it was when the writer lock was taken.
    pub fn snapshot(&self) -> &Arc<dyn Snapshot> {
        &self.snapshot
    }
    pub fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.backend.sorted_run_writer(ks)
    }
    /// See [`Backend::unfiltered_run_writer`].
    pub fn unfiltered_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.backend.unfiltered_run_writer(ks)
    }
    /// Makes all runs visible at once, or none. Consumes the writer so its
    /// snapshot is released first: while any snapshot is alive, RocksDB
    /// gives ingested files a sequence number, and later rewrites every one
    /// of them in the background to zero it ("BottommostFiles"
    /// compactions), doubling the cost of a bulk load. Callers must drop
    /// their own clones of the snapshot before this too.
    pub fn ingest(self, runs: Vec<SortedRun>) -> Result<()> {
        let BulkWriter { _guard, backend, lease, snapshot } = self;
        drop(snapshot);
        let result = match lease.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(mut lease) => lease.ingest(runs),
            None => backend.ingest(runs),
        };
        drop(_guard);
        result
    }
    pub fn commit(&self, batch: WriteBatch) -> Result<()> {
        match self.lease.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(lease) => lease.commit(batch, false),
            None => self.backend.commit(batch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Keyspace};

    /// The memory backend whose syncs fail once `failing` is set.
    #[derive(Default)]
    struct FailingSync {
        inner: MemoryBackend,
        failing: std::sync::atomic::AtomicBool,
    }

    impl Backend for FailingSync {
        fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
            self.inner.snapshot()
        }
        fn commit(&self, batch: WriteBatch) -> Result<()> {
            self.inner.commit(batch)
        }
        fn sync_wal(&self) -> Result<()> {
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Engine("injected: fsync failed".into()));
            }
            Ok(())
        }
        fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
            self.inner.sorted_run_writer(ks)
        }
        fn ingest(&self, runs: Vec<SortedRun>) -> Result<()> {
            self.inner.ingest(runs)
        }
        fn compact(&self) -> Result<()> {
            Ok(())
        }
        fn size_on_disk(&self) -> Result<u64> {
            Ok(0)
        }
    }

    /// A failed sync fails the commit it was for and every commit written
    /// after it (the next group built on it), and the store takes no more
    /// commits; commits synced before it stay answered.
    #[test]
    fn a_failed_sync_fails_its_commit_every_later_one_and_the_next_commits() {
        const KS: Keyspace = Keyspace(1);
        let backend = Arc::new(FailingSync::default());
        let kv = Kv::new(backend.clone());
        let commit = |key: &[u8]| {
            let mut txn = kv.transaction().unwrap();
            txn.put(KS, key, b"v");
            txn.commit_unsynced()
        };
        let first = commit(b"a").unwrap();
        kv.wait_synced(first).unwrap();
        let second = commit(b"b").unwrap();
        let third = commit(b"c").unwrap();
        backend.failing.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(kv.wait_synced(second).is_err());
        assert!(kv.wait_synced(third).is_err(), "a commit after one whose sync failed is not answered as durable");
        kv.wait_synced(first).unwrap();
        backend.failing.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(commit(b"d").is_err(), "no commit after a failed sync");
        let mut txn = kv.transaction().unwrap();
        txn.put(KS, b"e", b"v");
        assert!(txn.commit().is_err());
        assert!(kv.bulk_writer().is_err());
    }

    /// Many threads waiting for their commits while others commit: each
    /// returns once its own commit is synced, the syncs shared.
    #[test]
    fn concurrent_waits_each_return_once_their_commit_is_synced() {
        const KS: Keyspace = Keyspace(1);
        let kv = Arc::new(Kv::new(Arc::new(FailingSync::default())));
        let threads: Vec<_> = (0..8u8)
            .map(|t| {
                let kv = kv.clone();
                std::thread::spawn(move || {
                    for i in 0..200u8 {
                        let mut txn = kv.transaction().unwrap();
                        txn.put(KS, &[t, i], b"v");
                        let pending = txn.commit_unsynced().unwrap();
                        kv.wait_synced(pending).unwrap();
                        assert!(kv.durability.state().synced >= pending.0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let state = kv.durability.state();
        assert_eq!((state.written, state.synced), (1600, 1600));
    }
}
