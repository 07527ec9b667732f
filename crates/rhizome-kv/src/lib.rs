//! `rhizome-kv`: the storage layer under Rhizome.
//!
//! Owns: ordered keyspaces of byte keys, point reads, range scans in both
//! directions, atomic and durable write batches, read snapshots,
//! transactions that read their own writes, ingestion of sorted runs (bulk
//! loads that never go through the write path), compaction, size on disk,
//! the approximate bytes of a key range (for the query planner) and commit
//! sequence numbers (a snapshot's and the latest, for a layer that keeps
//! data beside the engine, as `rhizome-rdf`'s segments do). Does not own:
//! what the keys mean (that is `rhizome-rdf` and above).
//!
//! Main types: [`Kv`] (a store with its single-writer lock), [`Snapshot`]
//! (a consistent read view), [`Cursor`] (a positioned scan), [`Transaction`]
//! (a snapshot plus uncommitted writes it can read back; its point reads of
//! the snapshot are remembered, [`ReadCache`]), [`SortedRunWriter`]
//! and [`SortedRun`] (bulk ingestion). Backends: [`RocksBackend`] (embedded,
//! default) and [`MemoryBackend`] (tests).
//!
//! # Invariants and choices
//!
//! - **One engine, one writer.** Readers work on snapshots and never wait.
//!   Writers take turns on one lock (as SQLite and LMDB): a [`Transaction`]
//!   holds it from first read to commit and sees its own writes (an overlay
//!   merged into every get and cursor), so read-modify-write code
//!   (counters, dictionary ids, revision trees) needs no retries. A
//!   backend that keeps tuple indexes itself ([`TupleLayout`]:
//!   `rhizome-rdf`'s segments) takes a transaction's tuple writes once
//!   each ([`Transaction::put_tuple`], [`WriteBatch::tuples`]); the
//!   transaction reads them back as the keys they stand for. Commits
//!   are fsynced (`WriteOptions::sync`) before they return. RocksDB keeps
//!   one spare write-ahead log and writes the next log over it
//!   (`recycle_log_file_num`): a sync over blocks already written does not
//!   also journal a growing file's size.
//! - **Many stores per process.** A server opens a store per database, so
//!   nothing a store costs may scale with a fixed preallocation: logs are
//!   extended 1 MiB at a time (`max_total_wal_size`, which with one column
//!   family caps only RocksDB's preallocation step; it was 70 MiB) and
//!   manifests 64 KiB (4 MiB); the memtable filter (3.2 MiB per memtable)
//!   is turned on only after a store has taken 4 MiB of writes since it
//!   opened; the memtables of all stores share one budget
//!   (`RHIZOME_MEMTABLE_BYTES`, a write buffer manager, 256 MiB), as the
//!   block cache is shared. An empty store: about 1 MiB of disk, 50 KiB of
//!   memory, 6 file descriptors.
//! - **Keyspaces are a prefix byte** in RocksDB's default column family
//!   ([`Keyspace`]), except documents' ([`DOCUMENT_KEYSPACES`]), which
//!   have a column family of their own (`documents`, LZ4 blocks; stores
//!   made before it are moved into it when opened for writing). A bulk
//!   load writes one sorted SST file per keyspace and ingests them all in
//!   one `IngestExternalFile` call, one MANIFEST edit: atomic across
//!   keyspaces of one column family, which a call per column family would
//!   not give, so an ingestion may not mix documents' keyspaces with the
//!   others (none does: a load writes the RDF keyspaces, then documents
//!   adopt its graphs in a load of their own). A write batch is atomic
//!   across column families. Files of a killed load live in `DIR/ingest`
//!   and are removed by the next open for writing.
//! - **Read-only opens** ([`RocksBackend::open_read_only`], used by the
//!   CLI's `query`, `quads`, `dump`, `stats`, `graph` and `check`):
//!   RocksDB's read-only mode writes no manifest, options file or log and
//!   syncs nothing, which was half of a one-row query process; the process takes the engine's own
//!   fcntl lock on `LOCK` first, so a writer (server, load) and a reader
//!   never have the store at once, as with read-write opens.
//! - **Why RocksDB.** Measured on this machine with 20M quad-like keys (see
//!   `../shared/design.md`): RocksDB ingests sorted files in ~10 s into 9-10
//!   bytes/key (prefix-compressed blocks, ZSTD at the bottom level); LMDB
//!   loads faster but takes 43 bytes/key; fjall 20, redb 33. Size per quad
//!   is a headline target, and sorted-file ingestion is exactly what a bulk
//!   loader wants. The cost is a C++ build of ~12 minutes once per machine.
//! - **Options** (`backend/rocks.rs`, where each is measured): LZ4 on upper
//!   levels, ZSTD on the bottom level (where ingested files land), 16 KiB
//!   blocks, filters on every level (Bloom for flushed files, Ribbon
//!   below, bottom level and ingested files included: a write's term
//!   lookups mostly miss, and a miss without a filter read a data block;
//!   a load's id-to-term file alone has none, `unfiltered_run_writer`:
//!   its reads find their keys);
//!   those filters and the indexes partitioned (4 KiB partitions, top levels pinned in
//!   the cache): cached whole, a large file's filter was evicted by data
//!   blocks and read back by the next lookup, which made writes past 150k
//!   LDP resources 100 times slower. A memtable bloom filter serves a
//!   write's term and document-record lookups, which mostly miss; it holds
//!   only those two keyspaces ([`MEMTABLE_FILTERED`], set up as RocksDB's
//!   prefix filter whose prefix is the whole key; scans seek in total
//!   order), because adding every index key of a write to it cost more
//!   than it saved. `RHIZOME_CACHE_BYTES` sizes the block cache, a
//!   HyperClockCache (an LRU cache's shard mutex, taken at every block
//!   lookup and release, was 17% of a read with 25 reading threads), one
//!   per process shared by all the stores it opens, so that a server's
//!   databases together stay within the setting. The bottom level's
//!   compression and the block size are settings ([`RocksOptions`], from
//!   `RHIZOME_COMPRESSION` and `RHIZOME_BLOCK_BYTES`): ZSTD is the default
//!   for size; a block read for the first time costs its decompression,
//!   which `bench/lookup-layouts` weighs against LZ4 and no compression.
//! - **Loads wait for level 0**: files whose keys fall among stored keys
//!   (new terms in the dictionary, new objects inside each predicate's
//!   range) land on level 0, and ingestion never stalls as writes do, so a
//!   load waits for compaction while level 0 holds more than 64 files
//!   (`LEVEL0_LOAD_LIMIT`): without it, a hundred small loads left 288
//!   files there for every lookup to probe.
//! - Backends to come map a keyspace to what they have (a table, on a
//!   cluster); everything above talks only to [`KvRead`] and [`Kv`].

mod absent_keys;
mod backend;
mod error;
mod kv;
mod overlay_key;
mod read_cache;
pub mod remote;
mod transaction;

pub use backend::memory::{memory_run_writer, MemoryBackend};
/// The Cassandra backend (cargo feature `cassandra`), for tests and tools
/// that open a store in a cluster directly; servers reach it through
/// [`remote`].
#[cfg(feature = "cassandra")]
pub mod backend_cassandra {
    pub use crate::backend::cassandra::{CassandraBackend, Cluster};
}
#[cfg(feature = "rocksdb")]
pub use backend::rocks::{Compression, RocksBackend, RocksOptions};
pub use backend::{Backend, Cursor, CursorSeek, KvRead, Snapshot, SortedRun, SortedRunWriter, TupleLayout, WaitStats, WriteBatch, WriteLease, WriteOp};
pub use error::{Error, Result};
pub use kv::{BulkWriter, Kv};
pub use read_cache::{seeded as seeded_fx, CachedRead, ReadCache};
pub use transaction::{Transaction, WritingMisses};

/// A keyspace: an independent ordered map of keys. Backends map keyspaces to
/// whatever they have (a key prefix byte on RocksDB, a table on Cassandra).
/// Keyspaces are numbered by the layer above, which names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Keyspace(pub u8);

/// The keyspaces whose point reads mostly miss while writing, the only
/// ones the embedded engine's memtable filter holds: a term's id in the
/// dictionary (`rhizome-rdf`'s `TERM2ID`) and a document's record
/// (`rhizome-docs`' `DOCS`), read for every term and document a write
/// brings, most of them new. The layers that name these keyspaces check,
/// when they compile, that they keep these numbers. The set must never
/// change while a store is open (a key added unfiltered and then looked
/// up through the filter would be missed), so it is a constant.
pub const MEMTABLE_FILTERED: [Keyspace; 2] = [Keyspace(2), Keyspace(30)];

/// The keyspaces of documents (`rhizome-docs`: records, sequences,
/// bodies, counters, ...), which the embedded engine keeps in a column
/// family of their own with LZ4 blocks; the others (the dictionary, the
/// RDF keyspaces, views) keep ZSTD at the bottom level. Measured (issue
/// 45, TPC-B scale 10, 8 clients, callgrind): LZ4 for the whole store cut
/// a transaction's instructions 374.5k -> 327.4k (cold account blocks
/// decompressed), but grew the 4.8M-triple Faculty store, mostly the
/// dictionary, from 9.89 to 11.32 bytes a triple. `rhizome-docs` checks,
/// when it compiles, that its keyspaces fall in this range. Like
/// [`MEMTABLE_FILTERED`], it must never change while a store is open.
pub const DOCUMENT_KEYSPACES: std::ops::Range<u8> = 30..40;

/// The smallest key strictly greater than every key starting with `prefix`,
/// or `None` when no such key exists (prefix empty or all 0xFF).
pub fn prefix_upper_bound(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}
