//! Segments: an immutable, memory-mapped file of one quad ordering's keys,
//! in blocks of [`BLOCK_ROWS`] rows whose id columns are encoded each on
//! its own ([`column`]), read in place (issue 46). Every store keeps its
//! nine orderings so (store format 3); how the store writes, reads, merges
//! and loads them is [`crate::segmented`].
//!
//! - **Layout** (`file.rs`, file format [`FORMAT_VERSION`]), little-endian
//!   u64 words: a header (magic `RHZSEGMT`, format version, columns), the
//!   blocks, an index (per block: its offset, length in words, rows, an
//!   xxh3-64 checksum of its bytes and its first key) and a footer (where
//!   the index is, blocks, rows, the index's checksum, the magic again). A
//!   block is 1 to 1,024 keys (the writer fills every block but the last,
//!   and the one before a block a merge copies whole): a word of
//!   rows and columns, then each id column encoded on its own
//!   (`column.rs`): `CONST` (one id for every row); `FOR` (a base and 1,024
//!   offsets of `width` bits in FastLanes' layout, patched with exceptions
//!   for the few ids far from the rest); `RUNS` (run values and run ends:
//!   the leading column of an ordering repeats); `CLUSTERED` (sorted bases,
//!   each row's base as a bit-stream index and its offset packed as in
//!   `FOR`: a block's few predicates, or an object column's kinds of ids,
//!   each kept narrow); since format 2, `DELTA` (each row's step from the
//!   row before, a full id at each row whose step falls or is too wide and
//!   at least every 32 rows: subjects rising within a predicate and object
//!   in POS, or an object in OSP). The writer picks the smallest encoding
//!   per column per block. Files of format 1 read as they are;
//!   `RHIZOME_SEGMENT_FORMAT=1` writes them.
//! - **Why these encodings**: measured on the 1M Faculty store (1,533,338
//!   triples), SPO, POS and OSP take 5.25, 3.34 and 3.48 MB (7.9 bytes per
//!   triple for the three) against 4.89, 3.91 and 4.44 MB in RocksDB's
//!   ZSTD-compressed files, while any row stays readable alone. SPO's
//!   object column was 7.6 bytes per triple with frames of reference only:
//!   one inlined literal widened a block's frame to 54 bits.
//!
//! - [`SegmentWriter`] takes keys in strictly increasing order and writes
//!   the file (the bulk loader and merges write them; nothing else does).
//! - [`Segment`] opens a file: the header, footer and block index are
//!   checked and the index (each block's first key, row count, place and
//!   checksum: the fences) is kept in memory. A block is checked the first
//!   time it is read (checksum, encodings, keys strictly increasing and
//!   between its fences), never again in that process.
//! - [`SegmentCursor`] finds the first key at or after a target with a
//!   binary search over the fences, then narrows the block's rows to those
//!   starting with the target column by column (`Column::equal_range`: a
//!   run-length column searches its runs, a `DELTA` one its checkpoints
//!   and then at most 32 rows). It decodes the rows it reads in windows:
//!   from the current row to the end of the rows the seek found (else of
//!   the leading id's run) and one row past it (a lookup's rows and the
//!   row that ends them), at most 32; once it has read 64 rows of a block
//!   that way, or stepped off the end of a block it read whole, it decodes
//!   the block whole, column by column.
//!
//! The checks of a block, made when it is first read in a process (a bit
//! per block remembers it): its checksum; every column's descriptor and
//! lengths; exception positions and run ends strictly increasing within
//! the block, run ends covering it; cluster indexes naming a base; keys
//! strictly increasing, the first equal to its fence and the last below
//! the next block's. Opening checks the index (its checksum, blocks placed
//! end to end, first keys strictly increasing, rows adding up). A file
//! that fails a check is an [`Error::Corrupt`] naming the file and the
//! block, and a file of another format version is refused with both
//! versions named; nothing is read from a block before its checks pass, so
//! no read of a corrupt file panics or gives a wrong key (unit tests flip
//! every 7th bit of a file and cut it short; the `segment` fuzz target
//! changes valid files at places it chooses and also feeds arbitrary
//! bytes).

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
