//! The quad indexes kept in segments plus a delta, behind the key-value
//! layer's interface.
//!
//! [`SegmentedBackend`] wraps the store's engine (RocksDB, or memory in
//! tests) and is itself a `rhizome_kv::Backend`: every keyspace but the
//! nine quad orderings (10-12, 20-25) goes to the engine unchanged; the
//! orderings' keys live in one immutable segment file per ordering
//! ([`crate::segment`]) and, for what was written since, in an in-memory
//! delta per ordering (`delta.rs`). So every reader of the indexes
//! (pattern scans, the write path's checks, statistics, dumps, documents)
//! reads segments through the same `KvRead` calls as before, transactions
//! keep reading their own writes through the `Transaction` overlay, and a
//! store over a key-value backend without local files keeps its indexes
//! as keys with no change above (`Store::over_kv`, format 2).
//!
//! - **Writes** (`commit`): a batch's index keys (every ordering of each
//!   quad a transaction changed) become one record of quad changes
//!   (`log.rs`: flags and three or four ids per quad) in the log keyspace
//!   ([`QUAD_LOG`], keyed by the commit's sequence number), committed in
//!   the same engine batch as the documents and new terms; a batch that
//!   changes a quad in some of its orderings only is refused. A
//!   transaction's quads come as tuples of ids, once each
//!   (`OrderingLayout`, the backend's `rhizome_kv::TupleLayout`: the
//!   transaction reads them back as the orderings' keys), and go into the
//!   record as they are. The changes
//!   become versions in each ordering's delta numbered by that sequence
//!   number (known, since every engine write holds the backend's commit
//!   lock), added before the engine's commit and taken out if it fails. A
//!   200-triple write is one log key instead of 600 index keys. The
//!   batch's writes to the statistics keyspaces and the dictionary (its
//!   new terms) ride in the same record and are kept versioned the same
//!   way (`carried.rs`); a reader sees them over the engine's keys, which
//!   a merge brings up to its cut.
//! - **Reads** (`snapshot`): an engine snapshot, its sequence number and
//!   the current view (`view.rs`: segments and deltas): a reader sees a
//!   delta version only if its number is at or below the snapshot's, so it
//!   sees exactly the commits before it, deletions included (a deleted key
//!   is a version that hides the segment's), while writers go on and no
//!   reader waits for a commit's sync. A key's versions live in
//!   sorted runs per ordering, one a commit, merged leveled (`delta.rs`);
//!   a cursor (`cursor.rs`) merges the segment's keys with the delta's
//!   visible entries, taken 64 at a time from the runs it holds. Scans of the quad indexes (`QuadScan`) take that
//!   cursor directly (`KvRead::as_any`) and read its ids without key bytes;
//!   once a scan steps through a block, it takes the rest of the block up
//!   to the next delta entry, its bound or the end of its prefix as id
//!   columns at once (`IndexCursor::take_run`) into a read-ahead buffer;
//!   a reader taking batches (`QuadScan::next_batch`) gets those columns
//!   copied into its `QuadBatch`, and a lookup's rows from the window the
//!   segment cursor decoded for them, with the delta merged between runs
//!   (nothing to merge when it has no entry in the range).
//! - **New terms** (`term_filter.rs`): a filter in memory of every
//!   dictionary term key the store holds (read from the engine at open,
//!   in the background on a store that merges there; every commit, load
//!   run and replayed log record adds its terms before they can be read)
//!   answers a lookup of a term the store lacks without the engine's
//!   miss; a false positive costs only that read.
//! - **Views and readers**: a view changes only by writers adding
//!   versions; merges and loads make new ones. A counter that is odd while
//!   a view and the engine change together (a load's ingestion) makes a
//!   reader taking a snapshot wait for it (milliseconds), and a reader
//!   whose snapshot straddles a view change takes it again, so a reader
//!   never pairs one view with another's engine state.
//! - **Merges** (`Store::merge`, and a thread per store past
//!   `RHIZOME_DELTA_QUADS` quad changes, default 262,144, or with any
//!   change past `RHIZOME_DELTA_SECONDS`, default 600): under the commit
//!   lock a merge takes a cut (the last sequence number) and writes each
//!   ordering whose delta has versions up to it anew, from its segment and
//!   delta as a reader at the cut sees them (writers go on meanwhile):
//!   a block of the old segment that no visible delta entry (and no run of
//!   a load) falls in is copied as it is, bytes and checksum
//!   (`SegmentWriter::copy_block`; the keys before it go out as a short
//!   block), the rest encoded anew; the files are synced, then one engine commit records the new segment set
//!   ([`SEGMENT_SET`]: per ordering its file number and rows, the cut, the
//!   next file number; `manifest.rs`) and deletes the log records up to the
//!   cut, and a new view (new segments, the versions after the cut)
//!   replaces the old for new readers. A replaced file is removed when the
//!   last view holding it goes, and at open any file the set does not name.
//! - **Loads** (`ingest`): the loader's sorted runs of an ordering are
//!   segment files (`sorted_run_writer` of an ordering keyspace); each is
//!   the new segment of an empty ordering (renamed), or is merged with the
//!   ordering's segment and delta, and the new set is ingested with the
//!   dictionary and statistics in the engine's one atomic ingestion. Loads
//!   small enough for one write batch (fewer than 300,000 index keys in
//!   memory) go through the log and the delta like a commit.
//! - **Crashes**: new files are synced before the commit that names them;
//!   until then the old set stands, and after it the new one: never a
//!   mix. At open, the log records after the set's cut are replayed into
//!   the deltas. `crates/rhizome-cli/tests/crash.rs` kills small writes
//!   with merges every few commits and in the background at 110 random
//!   points (`RHIZOME_CRASH_POINTS` for more) and checks each time that
//!   every reported commit is there, none in part, and every few rounds
//!   `rhizome check` (`crates/rhizome-cli/tests/check.rs`: a damaged block
//!   is named, and scans over it fail rather than answer).
//! - **Proof**: `tests/segments.rs` runs random writes, deletes, aborted
//!   transactions, loads (through the delta and as segment files), merges,
//!   graph drops, reopens and snapshots held across them against a plain
//!   model, comparing every pattern of every held snapshot with the model
//!   of its time, on segments in memory, on disk and on keys; readers
//!   taking snapshots while a writer commits and merges check that each
//!   sees whole commits and a quad counter that agrees with its quads.
//! - **Format 2 stores** (indexes as engine keys) are moved to segments by
//!   the first open for writing (`migrate.rs`: each ordering read in key
//!   order into a file, then one commit of the segment set and format 3,
//!   then the old keys deleted by range deletions, resumed at the next open
//!   if interrupted); a read-only open refuses them and says to run
//!   `rhizome compact` (or start the server) once.
mod backend;
mod carried;
mod cursor;
mod delta;
mod log;
mod manifest;
mod merger;
pub(crate) mod migrate;
mod snapshot;
mod term_filter;
mod view;
mod write;

pub use backend::{Location, MergeSettings, SegmentedBackend};
pub(crate) use cursor::IndexCursor;
pub(crate) use snapshot::SegmentedSnapshot;

use crate::index::layout::{self, Ordering};
use rhizome_kv::Keyspace;

/// An ordering's key as ids (words), the unused last word zero for
/// triples: the words' order is the key bytes' order.
pub(crate) type Key = [u64; 4];

/// The quad changes of each commit, under its sequence number
/// (big-endian): replayed into the deltas at open, deleted by merges.
pub const QUAD_LOG: Keyspace = Keyspace(13);
/// The segment set: which file holds each ordering and up to which
/// sequence number the files hold the log (one key, `manifest.rs`).
pub const SEGMENT_SET: Keyspace = Keyspace(14);

/// The orderings, in slot order: triples, then quads.
pub(crate) const ORDERINGS: [Ordering; 9] = [
    layout::TRIPLE_SPO,
    layout::TRIPLE_POS,
    layout::TRIPLE_OSP,
    layout::QUAD_GSPO,
    layout::QUAD_GPOS,
    layout::QUAD_GOSP,
    layout::QUAD_SPOG,
    layout::QUAD_POSG,
    layout::QUAD_OSPG,
];
pub(crate) const SLOTS: usize = ORDERINGS.len();
/// Slots of the subject-graph triples' orderings and of the others'.
pub(crate) const TRIPLE_SLOTS: std::ops::Range<usize> = 0..3;
pub(crate) const QUAD_SLOTS: std::ops::Range<usize> = 3..9;

/// The slot of an index keyspace.
pub(crate) fn slot_of(ks: Keyspace) -> Option<usize> {
    match ks.0 {
        10..=12 => Some(ks.0 as usize - 10),
        20..=25 => Some(ks.0 as usize - 17),
        _ => None,
    }
}

/// Whether a keyspace is one of the quad orderings.
pub(crate) fn is_index(ks: Keyspace) -> bool {
    slot_of(ks).is_some()
}

/// Ids per key of a slot's ordering.
pub(crate) fn columns(slot: usize) -> usize {
    ORDERINGS[slot].components.len()
}

/// A quad (`[s, p, o, g]`) as a slot's key.
pub(crate) fn key_of(slot: usize, quad: &[u64; 4]) -> Key {
    let mut key = [0u64; 4];
    for (i, c) in ORDERINGS[slot].components.iter().enumerate() {
        key[i] = quad[*c];
    }
    key
}

/// A slot's key back as a quad; a triple's graph is its subject.
pub(crate) fn quad_of(slot: usize, key: &Key) -> [u64; 4] {
    let mut quad = [0u64; 4];
    let components = ORDERINGS[slot].components;
    for (i, c) in components.iter().enumerate() {
        quad[*c] = key[i];
    }
    if components.len() == 3 {
        quad[3] = quad[0];
    }
    quad
}

/// The slots holding a quad: its family's orderings.
pub(crate) fn slots_of(quad: &[u64; 4]) -> std::ops::Range<usize> {
    if quad[0] == quad[3] {
        TRIPLE_SLOTS
    } else {
        QUAD_SLOTS
    }
}

/// The orderings as a key-value transaction sees them
/// (`rhizome_kv::TupleLayout`): it takes a quad's writes once, not one key
/// per ordering, and hands them to the commit as `WriteBatch::tuples`.
pub(crate) struct OrderingLayout;

impl rhizome_kv::TupleLayout for OrderingLayout {
    fn slot_of(&self, ks: Keyspace) -> Option<usize> {
        slot_of(ks)
    }
    fn holds(&self, slot: usize, tuple: &[u64; 4]) -> bool {
        slots_of(tuple).contains(&slot)
    }
    fn key_of(&self, slot: usize, tuple: &[u64; 4]) -> [u64; 4] {
        key_of(slot, tuple)
    }
    fn tuple_of(&self, slot: usize, key: &[u64; 4]) -> [u64; 4] {
        quad_of(slot, key)
    }
    fn words(&self, slot: usize) -> usize {
        columns(slot)
    }
}

