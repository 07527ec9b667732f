//! `rhizome-kv`: the storage layer under Rhizome.
//!
//! Owns: ordered keyspaces of byte keys, point reads, range scans in both
//! directions, atomic and durable write batches, read snapshots, ingestion of
//! sorted runs (bulk loads that never go through the write path), compaction
//! and size on disk. Does not own: what the keys mean (that is `rhizome-rdf`
//! and above).
//!
//! Main types: [`Kv`] (a store with its single-writer lock), [`Snapshot`]
//! (a consistent read view), [`Cursor`] (a positioned scan), [`Transaction`]
//! (a snapshot plus uncommitted writes it can read back), [`SortedRunWriter`]
//! and [`SortedRun`] (bulk ingestion). Backends: [`RocksBackend`] (embedded,
//! default) and [`MemoryBackend`] (tests).

mod backend;
mod error;
mod kv;
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
pub use backend::{Backend, Cursor, KvRead, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteLease, WriteOp};
pub use error::{Error, Result};
pub use kv::{BulkWriter, Kv};
pub use transaction::Transaction;

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
