//! The backend trait: what a storage engine must provide.

#[cfg(feature = "cassandra")]
pub mod cassandra;
pub mod memory;
#[cfg(feature = "rocksdb")]
pub mod rocks;

use crate::{Keyspace, Result};
use std::sync::Arc;

/// One write of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    Put(Keyspace, Vec<u8>, Vec<u8>),
    Delete(Keyspace, Vec<u8>),
}

/// What callers have waited on a cluster so far (the Cassandra backend's
/// `Cluster::wait_stats`), for benchmarks: where a lookup's time goes.
/// Two readings subtract to what happened between them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WaitStats {
    /// Waits (each one round trip or several statements sent together).
    pub waits: u64,
    /// Seconds spent in them.
    pub seconds: f64,
    /// Statements sent (counted whether or not a caller waited on them).
    pub statements: u64,
    /// Seconds of the waits from the runtime's first poll of their work to
    /// its end: the rest is the hand-offs between the caller's thread and
    /// the runtime's.
    pub driver_seconds: f64,
}

impl std::ops::Sub for WaitStats {
    type Output = WaitStats;
    fn sub(self, before: WaitStats) -> WaitStats {
        WaitStats { waits: self.waits - before.waits, seconds: self.seconds - before.seconds, statements: self.statements - before.statements, driver_seconds: self.driver_seconds - before.driver_seconds }
    }
}

impl std::ops::AddAssign for WaitStats {
    fn add_assign(&mut self, more: WaitStats) {
        self.waits += more.waits;
        self.seconds += more.seconds;
        self.statements += more.statements;
        self.driver_seconds += more.driver_seconds;
    }
}

/// Writes applied all together or not at all.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    pub ops: Vec<WriteOp>,
    /// Tuples put in (`true`) or taken out of (`false`) the backend's tuple
    /// indexes, once each, for a backend with a [`TupleLayout`] (every
    /// index keyspace of each tuple, as `ops` would write them as keys):
    /// empty for the others.
    pub tuples: Vec<([u64; 4], bool)>,
}

impl WriteBatch {
    pub fn put(&mut self, ks: Keyspace, key: &[u8], value: &[u8]) {
        self.ops.push(WriteOp::Put(ks, key.to_vec(), value.to_vec()));
    }
    pub fn delete(&mut self, ks: Keyspace, key: &[u8]) {
        self.ops.push(WriteOp::Delete(ks, key.to_vec()));
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.tuples.is_empty()
    }
    pub fn len(&self) -> usize {
        self.ops.len() + self.tuples.len()
    }
}

/// How a backend that keeps tuple indexes of its own (`rhizome-rdf`'s
/// segments: a quad's orderings) lays each tuple out as keys: a
/// transaction then takes tuple writes once each ([`crate::Transaction::put_tuple`])
/// rather than a key per index keyspace, answers its reads of those
/// keyspaces from them as if they were the keys, and hands them to the
/// backend as [`WriteBatch::tuples`]. Keys are fixed-length big-endian
/// words, so their byte order is the order of the words.
pub trait TupleLayout: Send + Sync {
    /// The index slot (below [`MAX_TUPLE_SLOTS`]) of keyspace `ks`,
    /// if it is one of the layout's.
    fn slot_of(&self, ks: Keyspace) -> Option<usize>;
    /// Whether slot `slot` holds `tuple` (its family's keyspaces).
    fn holds(&self, slot: usize, tuple: &[u64; 4]) -> bool;
    /// `tuple` as slot `slot`'s key, in words (unused words zero).
    fn key_of(&self, slot: usize, tuple: &[u64; 4]) -> [u64; 4];
    /// A key of slot `slot` back as its tuple.
    fn tuple_of(&self, slot: usize, key: &[u64; 4]) -> [u64; 4];
    /// Words per key of slot `slot`.
    fn words(&self, slot: usize) -> usize;
}

/// Slots a [`TupleLayout`] may have.
pub const MAX_TUPLE_SLOTS: usize = 16;

/// A storage engine. Implementations must make `commit` and `ingest` atomic
/// and durable when they return.
pub trait Backend: Send + Sync + 'static {
    /// A consistent read view of everything committed so far.
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;
    /// Applies the batch atomically; durable (fsynced) when it returns.
    fn commit(&self, batch: WriteBatch) -> Result<()>;
    /// Starts a sorted run for `ingest`. Keys must be added in strictly
    /// increasing order.
    fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>>;
    /// As [`Backend::sorted_run_writer`], its blocks not compressed
    /// (rather than with the bottom level's ZSTD): for a derived index
    /// written as runs (a view built from nothing), where ZSTD cost more
    /// than the memtable inserts the runs replace, and which compactions
    /// rewrite with the level's compression anyway.
    fn index_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.sorted_run_writer(ks)
    }
    /// As [`Backend::sorted_run_writer`], without the engine's filter: for
    /// a keyspace whose point reads find their key (a filter only makes a
    /// miss cheaper; a miss still answers "absent", at the price of an
    /// index and data block read).
    fn unfiltered_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.sorted_run_writer(ks)
    }
    /// Makes all the runs visible at once, or none of them. Runs of one call
    /// must not overlap each other within a keyspace. Keys already present
    /// are overwritten.
    fn ingest(&self, runs: Vec<SortedRun>) -> Result<()>;
    /// Rewrites the store to reclaim space and speed up reads.
    fn compact(&self) -> Result<()>;
    /// Moves the keys of keyspaces `from..to` written by transactions down
    /// to the levels below, so that reads of them search one level. Stores
    /// without levels have nothing to do.
    fn settle(&self, _from: Keyspace, _to: Keyspace) -> Result<()> {
        Ok(())
    }
    /// Bytes the store takes on disk (0 for memory).
    fn size_on_disk(&self) -> Result<u64>;
    /// The sequence number of the last commit or ingestion, where the
    /// engine numbers them: a layer that keeps data of its own beside the
    /// store (the quad indexes' delta in `rhizome-rdf`) tags it with the
    /// number its commit will get, and a snapshot's [`Snapshot::sequence`]
    /// says which of it the snapshot sees. Commits and ingestions made
    /// after this call get greater numbers; the next commit's first
    /// number is this plus one.
    fn latest_sequence(&self) -> Option<u64> {
        None
    }
    /// The layout of the tuple indexes the backend keeps itself, if it
    /// does (see [`TupleLayout`]); a transaction's tuple writes
    /// ([`WriteBatch::tuples`]) reach only a backend that has one.
    fn tuple_layout(&self) -> Option<&'static dyn TupleLayout> {
        None
    }
    /// Removes every key of `ks` (data moved elsewhere, such as quad
    /// indexes migrated to another format); not atomic with other writes.
    fn clear_keyspace(&self, ks: Keyspace) -> Result<()> {
        loop {
            let snapshot = self.snapshot()?;
            let mut batch = WriteBatch::default();
            {
                let mut cursor = snapshot.cursor(ks, &[], None);
                cursor.seek_first();
                while cursor.valid() && batch.len() < 100_000 {
                    batch.delete(ks, cursor.key());
                    cursor.next();
                }
                cursor.status()?;
            }
            drop(snapshot);
            if batch.is_empty() {
                return Ok(());
            }
            self.commit(batch)?;
        }
    }
    /// Write access shared with other processes, for engines that several
    /// processes write at once (Cassandra): `Kv` takes it after its own
    /// writer lock, for every transaction and bulk job, and reads and
    /// commits through it. `None` (embedded engines): the process's lock
    /// is the only one, and `snapshot`/`commit` serve the writer.
    fn begin_write(&self) -> Result<Option<Box<dyn WriteLease>>> {
        Ok(None)
    }
    /// Whether other processes may write the store at the same time.
    fn is_shared(&self) -> bool {
        false
    }
    /// Stops the engine's background work (compactions, flushes) and waits
    /// for what is running to stop; committed writes are already durable.
    /// Called when the process is about to exit: an engine thread still
    /// compacting while the process exits can die in the engine's static
    /// destructors (RocksDB: "pthread lock: Invalid argument", SIGABRT).
    fn stop_background_work(&self) {}
}

/// Exclusive write access to a store shared by several processes, from
/// [`Backend::begin_write`]; dropping it gives the access up.
pub trait WriteLease: Send {
    /// Everything committed before the lease was taken, by any process,
    /// and this lease's own commits.
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;
    /// Commits the batch atomically and durably (`release`: and gives the
    /// lease up in the same step; later calls fail).
    fn commit(&mut self, batch: WriteBatch, release: bool) -> Result<()>;
    /// As [`Backend::ingest`], under the lease.
    fn ingest(&mut self, runs: Vec<SortedRun>) -> Result<()>;
    /// Whether another process committed since this process last held
    /// write access to the store: caches of committed state kept beside
    /// the store (statistics, marks) must then be read again.
    fn changed_elsewhere(&self) -> bool;
}

/// Reads: what snapshots and transactions both offer.
pub trait KvRead {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// A cursor over the keys of `ks` in `[lower, upper)`; `upper = None`
    /// means to the end of the keyspace. The cursor starts unpositioned:
    /// call `seek` or `seek_for_prev` (or `seek_first`/`seek_last`).
    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_>;
    /// Whether each point read or cursor seek is a network round trip (a
    /// cluster's store): a caller with many keys to read then asks for them
    /// together ([`get_many`](Self::get_many), [`scan_ranges`](Self::scan_ranges))
    /// rather than walking a cursor over them.
    fn reads_are_round_trips(&self) -> bool {
        false
    }
    /// The values of `keys` of `ks`, in `keys`' order. A cluster's backend
    /// sends the reads together; the default reads one after another.
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|key| self.get(ks, key)).collect()
    }
    /// The entries of `ks` in each of the ranges `[lower, upper)`, one list
    /// per range, in key order. A cluster's backend reads every range's
    /// partitions at once; the default walks a cursor per range.
    fn scan_ranges(&self, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
        scan_ranges_by_cursor(self, ks, ranges)
    }
    /// Cursors each sought to its key (as [`cursor`](Self::cursor) then
    /// `seek`), in `seeks`' order. A cluster's backend sends their first
    /// reads together: a pattern's two index families cost one wait, not
    /// one each. The default seeks them one after another.
    fn cursors_sought(&self, seeks: &[CursorSeek<'_>]) -> Vec<Box<dyn Cursor + '_>> {
        cursors_sought_one_by_one(self, seeks)
    }
    /// About how many bytes the keys of `ks` in `[lower, upper)` take on
    /// disk (`upper = None`: to the end of the keyspace), for a query
    /// planner's estimates: written files only, not recent writes still in
    /// memory. `None` where the backend cannot tell.
    fn approximate_bytes(&self, _ks: Keyspace, _lower: &[u8], _upper: Option<&[u8]>) -> Option<u64> {
        None
    }
    /// The reader as itself, for a layer above that knows a backend of its
    /// own and reads it directly (`rhizome-rdf`'s segments: scans then
    /// skip the byte keys of `Cursor`). `None` for other readers.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// [`KvRead::scan_ranges`] as a cursor walk per range (the default, and
/// what a reader with writes of its own over the ranges does).
pub fn scan_ranges_by_cursor<R: KvRead + ?Sized>(kv: &R, ks: Keyspace, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<Vec<(Vec<u8>, Vec<u8>)>>> {
    let mut out = Vec::with_capacity(ranges.len());
    for (lower, upper) in ranges {
        let mut entries = Vec::new();
        let mut cursor = kv.cursor(ks, lower, Some(upper));
        cursor.seek_first();
        while cursor.valid() {
            entries.push((cursor.key().to_vec(), cursor.value().to_vec()));
            cursor.next();
        }
        cursor.status()?;
        out.push(entries);
    }
    Ok(out)
}

/// [`KvRead::cursors_sought`] one cursor after another (the default).
pub fn cursors_sought_one_by_one<'k, R: KvRead + ?Sized>(kv: &'k R, seeks: &[CursorSeek<'_>]) -> Vec<Box<dyn Cursor + 'k>> {
    seeks
        .iter()
        .map(|s| {
            let mut cursor = kv.cursor(s.ks, s.lower, s.upper);
            cursor.seek(s.at);
            cursor
        })
        .collect()
}

/// One cursor of [`KvRead::cursors_sought`]: its keyspace and bounds (as
/// [`KvRead::cursor`] takes them) and the key it is sought to.
#[derive(Clone, Copy, Debug)]
pub struct CursorSeek<'a> {
    pub ks: Keyspace,
    pub lower: &'a [u8],
    pub upper: Option<&'a [u8]>,
    pub at: &'a [u8],
}

/// A consistent read view of committed data.
pub trait Snapshot: KvRead + Send + Sync {
    /// The sequence number of the last commit this snapshot sees, where
    /// the engine numbers commits (see [`Backend::latest_sequence`]).
    fn sequence(&self) -> Option<u64> {
        None
    }
}

/// A positioned scan over one keyspace. Keys and values are borrowed until
/// the cursor moves, so scans allocate nothing per row.
pub trait Cursor {
    /// Positions at the first key `>= key` (within the cursor's bounds).
    fn seek(&mut self, key: &[u8]);
    /// Positions at the last key `<= key` (within the cursor's bounds).
    fn seek_for_prev(&mut self, key: &[u8]);
    fn seek_first(&mut self);
    fn seek_last(&mut self);
    fn valid(&self) -> bool;
    /// The current key, without any backend prefix. Only when `valid()`.
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    fn next(&mut self);
    fn prev(&mut self);
    /// The error that made the cursor invalid, if any.
    fn status(&self) -> Result<()>;
}

/// Writes one sorted run.
pub trait SortedRunWriter: Send {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Puts the key of `ids` (at most eight), each big-endian, with an
    /// empty value: a quad index's row. A writer that stores rows as ids
    /// (a segment) takes them without the round trip through bytes.
    fn put_ids(&mut self, ids: &[u64]) -> Result<()> {
        let mut key = [0u8; 64];
        for (j, id) in ids.iter().enumerate() {
            key[j * 8..j * 8 + 8].copy_from_slice(&id.to_be_bytes());
        }
        self.put(&key[..ids.len() * 8], &[])
    }
    /// Number of entries written so far.
    fn len(&self) -> u64;
    fn finish(self: Box<Self>) -> Result<SortedRun>;
}

/// A finished run, ready to ingest.
pub enum SortedRun {
    /// A file the engine can adopt (RocksDB SST).
    File { path: std::path::PathBuf },
    /// Entries kept in memory (the in-memory backend).
    Memory { ks: Keyspace, entries: Vec<(Vec<u8>, Vec<u8>)> },
    /// A run with no entries.
    Empty,
}
