//! The quad indexes kept in segments plus a delta, behind the key-value
//! layer's interface.
//!
//! [`SegmentedBackend`] wraps the store's engine (RocksDB, or memory in
//! tests) and is itself a `rhizome_kv::Backend`: every keyspace but the
//! nine quad orderings goes to the engine unchanged; the orderings' keys
//! live in one immutable segment file per ordering (`crate::segment`)
//! and, for what was written since, in an in-memory delta per ordering
//! ([`delta`]). So every reader of the indexes (pattern scans, the write
//! path's checks, statistics, dumps, documents) reads segments through
//! the same `KvRead` calls as before, and a store over a key-value
//! backend without local files (the Cassandra backend to come) keeps its
//! indexes as keys with no change above (`Store::over_kv`).
//!
//! - **Writes** (`commit`): a batch's index keys (every ordering of each
//!   quad a transaction changed) become one record of quad changes in the
//!   log keyspace ([`QUAD_LOG`], keyed by the commit's sequence number),
//!   committed in the same engine batch as the documents and new terms,
//!   and versions in each ordering's delta numbered by that sequence
//!   number (added before the engine's commit, taken out if it fails).
//! - **Reads** (`snapshot`): an engine snapshot, its sequence number and
//!   the current [`View`] (segments and deltas): a reader sees a delta
//!   version only if its number is at or below the snapshot's.
//! - **Merges** (`merge`, in the background past a size or an age): each
//!   ordering with changes is written anew from its segment and delta as
//!   a snapshot at a cut sees them; one engine commit then records the
//!   new segment set ([`SEGMENT_SET`]) and deletes the log records up to
//!   the cut, and a new view (new segments, the versions after the cut)
//!   replaces the old for new readers. Files are removed when no reader
//!   holds them, and at open any file the set does not name.
//! - **Loads** (`ingest`): the loader's sorted runs of an ordering are
//!   segment files ([`SegmentRunWriter`]); each is merged with the
//!   ordering's segment and delta (or becomes the segment of an empty
//!   ordering), and the new set is ingested with the dictionary and
//!   statistics in the engine's one atomic ingestion. Small loads go
//!   through the log and the delta like a commit.
//! - **Crashes**: new files are synced before the commit that names them;
//!   until then the old set stands, and after it the new one: never a
//!   mix. At open, the log records after the set's cut are replayed into
//!   the deltas.

mod backend;
mod cursor;
mod delta;
mod log;
mod manifest;
mod merger;
pub(crate) mod migrate;
mod snapshot;
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
/// sequence number the files hold the log (one key, [`manifest`]).
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

