//! Segments: an immutable, memory-mapped file of one quad ordering's keys,
//! in blocks of [`BLOCK_ROWS`] rows whose id columns are encoded each on
//! its own ([`column`]). The layout and its invariants are in
//! ARCHITECTURE.md ("Segments").
//!
//! - [`SegmentWriter`] takes keys in strictly increasing order and writes
//!   the file (the bulk loader and merges write them; nothing else does).
//! - [`Segment`] opens a file: the header, footer and block index are
//!   checked and the index (each block's first key, row count, place and
//!   checksum: the fences) is kept in memory. A block is checked the first
//!   time it is read (checksum, encodings, keys strictly increasing and
//!   between its fences), never again in that process.
//! - [`SegmentCursor`] finds the first key at or after a target with a
//!   binary search over the fences and one over the block's rows, reading
//!   single rows; stepping through a block decodes it whole, column by
//!   column, once it has read a few rows.
//!
//! A file that fails a check is an [`Error::Corrupt`] naming the file and
//! the block; no read of a corrupt file panics or gives a wrong key.

mod column;
mod file;

pub use file::{Segment, SegmentCursor, SegmentWriter, FORMAT_VERSION};

use crate::Error;

/// Rows per block: FastLanes packs 1,024 values at a time.
pub const BLOCK_ROWS: usize = 1024;

/// The widest key: a quad, four ids.
pub const MAX_COLUMNS: usize = 4;

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("segment: {what}"))
}

#[cfg(target_endian = "big")]
compile_error!("segment files are read in place as little-endian words");
