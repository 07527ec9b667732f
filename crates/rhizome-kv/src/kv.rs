//! `Kv`: a backend plus the single-writer lock.
//!
//! Readers never wait: each works on its own snapshot. Writers take turns
//! (as in SQLite and LMDB): a transaction or a bulk ingestion holds the
//! writer lock from its first read to its commit, so read-modify-write
//! sequences (counters, dictionary ids, revision trees) need no retry logic.

use crate::backend::{Backend, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteLease};
use crate::{Keyspace, MemoryBackend, Result, Transaction};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

pub struct Kv {
    backend: Arc<dyn Backend>,
    writer: Mutex<()>,
}

impl Kv {
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Kv { backend, writer: Mutex::new(()) }
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
        Transaction::new(guard, self.backend.as_ref())
    }

    /// Takes the writer lock for a bulk job that writes through ingestion.
    pub fn bulk_writer(&self) -> Result<BulkWriter<'_>> {
        let guard = self.lock_writer();
        let lease = self.backend.begin_write()?;
        let snapshot = match &lease {
            Some(lease) => lease.snapshot()?,
            None => self.backend.snapshot()?,
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
