//! The segment file: writing, opening and checking, and the cursor.
//!
//! Layout (little-endian u64 words):
//!
//! ```text
//! header   magic "RHZSEGMT", version (32 bits) | columns (8 bits) << 32
//! blocks   each: rows (16 bits) | columns (8 bits) << 16, then each column
//! index    per block: offset (words from the file's start),
//!          length in words | rows << 32, checksum (xxh3-64 of the
//!          block's bytes), first key (one word per column)
//! footer   index offset, blocks, rows, checksum of the index, "RHZSEGMT"
//! ```

use super::column::{self, Column};
use super::{corrupt, BLOCK_ROWS, MAX_COLUMNS};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Version of the segment file format, in every file's header; bumped on
/// any change a reader of the previous version could not read. 2: the
/// `DELTA` column kind. Files of format 1 (without it) read as they are,
/// and their blocks may be copied into files of format 2.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format this build reads.
const OLDEST_FORMAT_VERSION: u32 = 1;

/// The format new files are written in: [`FORMAT_VERSION`], or 1 when
/// `RHIZOME_SEGMENT_FORMAT=1` (a store an earlier build can read, and
/// the A/B of the `DELTA` kind with one binary).
fn written_format() -> u32 {
    static FORMAT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *FORMAT.get_or_init(|| match std::env::var("RHIZOME_SEGMENT_FORMAT").ok().and_then(|v| v.parse().ok()) {
        Some(v) if (OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&v) => v,
        _ => FORMAT_VERSION,
    })
}

const MAGIC: u64 = u64::from_le_bytes(*b"RHZSEGMT");
const HEADER_WORDS: usize = 2;
const FOOTER_WORDS: usize = 5;

fn checksum(words: &[u64]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(zerocopy::IntoBytes::as_bytes(words))
}

/// Where a writer puts its bytes.
enum Sink {
    File(std::io::BufWriter<std::fs::File>),
    Memory(Vec<u8>),
}

/// Writes one segment file from keys in strictly increasing order.
pub struct SegmentWriter {
    out: Sink,
    path: PathBuf,
    columns: usize,
    /// The format written: the column kinds its blocks may use.
    version: u32,
    /// The block being filled, column by column.
    pending: Vec<Vec<u64>>,
    last: Option<[u64; MAX_COLUMNS]>,
    /// Words written so far (the next block's offset).
    offset: u64,
    index: Vec<u64>,
    blocks: u64,
    rows: u64,
    block: Vec<u64>,
}

impl SegmentWriter {
    /// Creates (truncating) the file at `path` for keys of `columns` ids.
    pub fn create(path: &Path, columns: usize) -> Result<SegmentWriter> {
        assert!((1..=MAX_COLUMNS).contains(&columns), "a segment's keys have 1 to 4 ids");
        let file = std::fs::File::create(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Self::new(Sink::File(std::io::BufWriter::with_capacity(1 << 20, file)), path, columns, written_format())
    }

    /// A segment written into memory ([`Self::finish_in_memory`]), for
    /// checks of the format (fuzzing, tests): no file, no sync.
    pub fn in_memory(columns: usize) -> SegmentWriter {
        Self::in_memory_of_format(columns, FORMAT_VERSION)
    }

    /// As [`Self::in_memory`], in an older format `version` (its column
    /// kinds only): the files earlier builds wrote, for the tests that
    /// read them.
    #[doc(hidden)]
    pub fn in_memory_of_format(columns: usize, version: u32) -> SegmentWriter {
        assert!((1..=MAX_COLUMNS).contains(&columns), "a segment's keys have 1 to 4 ids");
        assert!((OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version), "a segment format this build writes");
        Self::new(Sink::Memory(Vec::new()), Path::new("(memory)"), columns, version).expect("writing to memory does not fail")
    }

    fn new(out: Sink, path: &Path, columns: usize, version: u32) -> Result<SegmentWriter> {
        let mut w = SegmentWriter {
            out,
            path: path.to_owned(),
            columns,
            version,
            pending: vec![Vec::with_capacity(BLOCK_ROWS); columns],
            last: None,
            offset: 0,
            index: Vec::new(),
            blocks: 0,
            rows: 0,
            block: Vec::new(),
        };
        w.write(&[MAGIC, version as u64 | (columns as u64) << 32])?;
        Ok(w)
    }

    fn write(&mut self, words: &[u64]) -> Result<()> {
        let bytes = zerocopy::IntoBytes::as_bytes(words);
        match &mut self.out {
            Sink::File(out) => out.write_all(bytes).map_err(|source| Error::Io { path: self.path.clone(), source })?,
            Sink::Memory(out) => out.extend_from_slice(bytes),
        }
        self.offset += words.len() as u64;
        Ok(())
    }

    /// Adds the next key (`columns` ids), greater than every key before it.
    pub fn push(&mut self, key: &[u64]) -> Result<()> {
        assert_eq!(key.len(), self.columns, "a key of {} ids in a segment of {}", key.len(), self.columns);
        let mut full = [0u64; MAX_COLUMNS];
        full[..key.len()].copy_from_slice(key);
        // A key out of order would make every later lookup wrong.
        assert!(self.last.is_none_or(|l| l < full), "segment keys must be strictly increasing");
        self.last = Some(full);
        for (c, v) in key.iter().enumerate() {
            self.pending[c].push(*v);
        }
        if self.pending[0].len() == BLOCK_ROWS {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        let rows = self.pending[0].len();
        if rows == 0 {
            return Ok(());
        }
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        block.push(rows as u64 | (self.columns as u64) << 16);
        for c in 0..self.columns {
            // Not the leading column: a seek searches it row by row
            // (`equal_range`), where a `DELTA` row costs up to 31 steps;
            // a run-length column's runs are what a seek wants.
            column::encode(&self.pending[c], self.version >= 2 && c > 0, &mut block);
        }
        self.index.push(self.offset);
        self.index.push(block.len() as u64 | (rows as u64) << 32);
        self.index.push(checksum(&block));
        for c in 0..self.columns {
            self.index.push(self.pending[c][0]);
            self.pending[c].clear();
        }
        self.write(&block)?;
        self.block = block;
        self.blocks += 1;
        self.rows += rows as u64;
        Ok(())
    }

    /// Appends block `b` of `from` as it is, without decoding and encoding
    /// it again (a merge's block that no change falls in): the keys pushed
    /// before it go out as a block of their own, however few. The block is
    /// checked first (as any first read), so a corrupt block is never
    /// carried into a new file.
    pub fn copy_block(&mut self, from: &Segment, b: usize) -> Result<()> {
        assert_eq!(from.columns, self.columns, "a block of {} ids copied into a segment of {}", from.columns, self.columns);
        if from.version > self.version {
            // Its column kinds may be unknown to this file's readers.
            return self.copy_block_by_keys(from, b);
        }
        let block = from.block(b)?;
        let fence = &from.fences[b];
        let mut last = [0u64; MAX_COLUMNS];
        for (c, id) in last.iter_mut().enumerate().take(self.columns) {
            *id = block.columns[c].get(block.rows - 1);
        }
        // A key out of order would make every later lookup wrong.
        assert!(self.last.is_none_or(|l| l < fence.first), "a copied block must start after every key before it");
        self.flush_block()?;
        let words = &from.words()[fence.offset..fence.offset + fence.words];
        self.index.push(self.offset);
        self.index.push(fence.words as u64 | (fence.rows as u64) << 32);
        self.index.push(fence.checksum);
        self.index.extend_from_slice(&fence.first[..self.columns]);
        self.write(words)?;
        self.blocks += 1;
        self.rows += fence.rows as u64;
        self.last = Some(last);
        Ok(())
    }

    /// Block `b`'s keys pushed one by one (encoded again, in this file's
    /// format).
    fn copy_block_by_keys(&mut self, from: &Segment, b: usize) -> Result<()> {
        let mut cursor = from.cursor();
        cursor.enter(b)?;
        for _ in 0..from.fences[b].rows {
            let key = cursor.key();
            self.push(&key[..self.columns])?;
            cursor.row += 1;
        }
        Ok(())
    }

    /// Keys written so far.
    pub fn rows(&self) -> u64 {
        self.rows + self.pending[0].len() as u64
    }

    fn write_tail(&mut self) -> Result<()> {
        self.flush_block()?;
        let index_offset = self.offset;
        let index = std::mem::take(&mut self.index);
        self.write(&index)?;
        let footer = [index_offset, self.blocks, self.rows, checksum(&index), MAGIC];
        self.write(&footer)
    }

    /// Writes the last block, the index and the footer, and syncs the file.
    /// Returns its size in bytes.
    pub fn finish(mut self) -> Result<u64> {
        self.write_tail()?;
        let io = |source| Error::Io { path: self.path.clone(), source };
        let Sink::File(out) = self.out else { return Ok(self.offset * 8) };
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        Ok(self.offset * 8)
    }

    /// The bytes of a segment written [`in_memory`](Self::in_memory).
    pub fn finish_in_memory(mut self) -> Vec<u8> {
        self.write_tail().expect("writing to memory does not fail");
        match self.out {
            Sink::Memory(bytes) => bytes,
            Sink::File(_) => panic!("finish_in_memory on a segment written to a file"),
        }
    }
}

/// What the index says of one block.
struct Fence {
    first: [u64; MAX_COLUMNS],
    /// Rows in the blocks before this one.
    before: u64,
    offset: usize,
    words: usize,
    rows: usize,
    checksum: u64,
}

/// Where a segment's bytes are: its file, mapped, or a copy in memory
/// (checks of untrusted bytes: fuzzing, tests).
enum Data {
    Map(memmap2::Mmap),
    Words(Vec<u64>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Map(map) => map,
            Data::Words(words) => zerocopy::IntoBytes::as_bytes(&words[..]),
        }
    }
}

/// An open segment file.
pub struct Segment {
    map: Data,
    path: PathBuf,
    columns: usize,
    /// The file's format: which column kinds its blocks may hold.
    version: u32,
    fences: Vec<Fence>,
    rows: u64,
    /// A bit per block, set once the block passed its checks.
    verified: Vec<AtomicU64>,
}

/// The first row of `rows` whose key (a row across `columns`) is not above
/// the row before it, compared a column at a time: a block's keys are
/// mostly equal in their first columns (clustered), told apart by a later one.
fn first_unordered_row(columns: &[[u64; BLOCK_ROWS]], rows: usize) -> Option<usize> {
    (1..rows).find(|&r| {
        for column in columns {
            let (before, this) = (column[r - 1], column[r]);
            if before != this {
                return before > this;
            }
        }
        true
    })
}

/// A block's columns, parsed.
#[derive(Clone, Copy)]
struct Block<'a> {
    rows: usize,
    columns: [Column<'a>; MAX_COLUMNS],
}

impl Segment {
    /// Opens and checks the file at `path` (its header, footer and index;
    /// blocks are checked when first read).
    pub fn open(path: &Path) -> Result<Segment> {
        let file = std::fs::File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        // SAFETY: segment files are never written after they are
        // finished, and the store's lock keeps other processes' writers
        // out; the map is only read.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Self::from_data(Data::Map(map), path)
    }

    /// A segment read from a copy of `bytes` (named `name` in errors).
    pub fn from_bytes(bytes: &[u8], name: &Path) -> Result<Segment> {
        if bytes.len() % 8 != 0 {
            return Err(Error::Corrupt(format!("segment {}: its size is not a whole number of words", name.display())));
        }
        let words = bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect();
        Self::from_data(Data::Words(words), name)
    }

    fn from_data(map: Data, path: &Path) -> Result<Segment> {
        let at = |what: &str| Error::Corrupt(format!("segment {}: {what}", path.display()));
        let words: &[u64] = <[u64] as zerocopy::FromBytes>::ref_from_bytes(map.bytes()).map_err(|_| at("its size is not a whole number of words"))?;
        if words.len() < HEADER_WORDS + FOOTER_WORDS || words[0] != MAGIC {
            return Err(at("not a segment file"));
        }
        let version = words[1] as u32;
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::Invalid(format!(
                "segment {} is of format {version}; this build reads formats {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}",
                path.display()
            )));
        }
        let columns = (words[1] >> 32) as usize;
        if !(1..=MAX_COLUMNS).contains(&columns) || words[1] >> 40 != 0 {
            return Err(at("bad header"));
        }
        let footer = &words[words.len() - FOOTER_WORDS..];
        let [index_offset, blocks, rows, index_checksum, magic] = footer.try_into().expect("five words");
        if magic != MAGIC {
            return Err(at("no footer"));
        }
        let entry = 3 + columns;
        let index_end = words.len() - FOOTER_WORDS;
        let index_words = (blocks as usize).checked_mul(entry).filter(|n| (index_offset as usize).checked_add(*n) == Some(index_end) && index_offset as usize >= HEADER_WORDS);
        let Some(index_words) = index_words else { return Err(at("the index does not fit the file")) };
        let index = &words[index_offset as usize..index_offset as usize + index_words];
        if checksum(index) != index_checksum {
            return Err(at("the index's checksum does not match"));
        }
        let mut fences = Vec::with_capacity(blocks as usize);
        let mut next_offset = HEADER_WORDS;
        let mut total = 0u64;
        for e in index.chunks_exact(entry) {
            let (offset, words_len, block_rows) = (e[0] as usize, e[1] as u32 as usize, (e[1] >> 32) as usize);
            let mut first = [0u64; MAX_COLUMNS];
            first[..columns].copy_from_slice(&e[3..]);
            if offset != next_offset || words_len == 0 || !(1..=BLOCK_ROWS).contains(&block_rows) {
                return Err(at(&format!("block {} is misplaced in the index", fences.len())));
            }
            if fences.last().is_some_and(|f: &Fence| f.first >= first) {
                return Err(at(&format!("block {} starts before the one before it", fences.len())));
            }
            next_offset = offset + words_len;
            fences.push(Fence { first, before: total, offset, words: words_len, rows: block_rows, checksum: e[2] });
            total += block_rows as u64;
        }
        if next_offset != index_offset as usize || total != rows {
            return Err(at("the blocks do not fill the file"));
        }
        let verified = (0..fences.len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        Ok(Segment { map, path: path.to_owned(), columns, version, fences, rows, verified })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's format version.
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Ids per key.
    pub fn columns(&self) -> usize {
        self.columns
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn blocks(&self) -> usize {
        self.fences.len()
    }

    /// Block `b`'s bytes as they are in the file (unchecked).
    pub fn block_bytes(&self, b: usize) -> &[u8] {
        let fence = &self.fences[b];
        &self.map.bytes()[fence.offset * 8..(fence.offset + fence.words) * 8]
    }

    /// Keys in block `b`.
    pub fn block_rows(&self, b: usize) -> u64 {
        self.fences[b].rows as u64
    }

    pub fn bytes(&self) -> u64 {
        self.map.bytes().len() as u64
    }

    fn words(&self) -> &[u64] {
        <[u64] as zerocopy::FromBytes>::ref_from_bytes(self.map.bytes()).expect("checked when opened")
    }

    fn corrupt_block(&self, b: usize, what: &str) -> Error {
        Error::Corrupt(format!("segment {}, block {b}: {what}", self.path.display()))
    }

    /// Block `b`'s columns, checked the first time.
    fn block(&self, b: usize) -> Result<Block<'_>> {
        let fence = &self.fences[b];
        let words = &self.words()[fence.offset..fence.offset + fence.words];
        let verified = self.verified[b / 64].load(Ordering::Relaxed) & (1 << (b % 64)) != 0;
        if !verified && checksum(words) != fence.checksum {
            return Err(self.corrupt_block(b, "its checksum does not match"));
        }
        let block = self.parse(b, words).map_err(|e| match e {
            Error::Corrupt(what) => self.corrupt_block(b, &what),
            other => other,
        })?;
        if !verified {
            self.check(b, &block)?;
            self.verified[b / 64].fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
        Ok(block)
    }

    fn parse<'a>(&self, b: usize, words: &'a [u64]) -> Result<Block<'a>> {
        let rows = words[0] as u16 as usize;
        if rows != self.fences[b].rows || (words[0] >> 16) as usize != self.columns {
            return Err(corrupt("its header disagrees with the index"));
        }
        let mut columns = [Column::Const(0); MAX_COLUMNS];
        let mut at = 1;
        for column in columns.iter_mut().take(self.columns) {
            let (c, used) = Column::parse(&words[at..], rows, self.version >= 2)?;
            *column = c;
            at += used;
        }
        if at != words.len() {
            return Err(corrupt("its columns do not fill it"));
        }
        Ok(Block { rows, columns })
    }

    /// The first read of a block: its keys rise strictly, start at its
    /// fence and stay below the next block's.
    fn check(&self, b: usize, block: &Block<'_>) -> Result<()> {
        for column in &block.columns[..self.columns] {
            column.validate(block.rows).map_err(|e| self.corrupt_block(b, &e.to_string()))?;
        }
        // A buffer per thread, not a zeroed 32 KiB allocation per block:
        // the first read of every block a query touches comes here (in a
        // fresh process, 1,210 blocks of q07 at 4.8M: the allocations were
        // 40M instructions and the row-by-row key copies 55M more, together
        // 60% of the checks' cost).
        thread_local! {
            static DECODED: std::cell::RefCell<Box<[[u64; BLOCK_ROWS]; MAX_COLUMNS]>> = std::cell::RefCell::new(Box::new([[0; BLOCK_ROWS]; MAX_COLUMNS]));
        }
        DECODED.with(|decoded| {
            let mut decoded = decoded.borrow_mut();
            let decoded = &mut **decoded;
            let (rows, columns) = (block.rows, self.columns);
            for c in 0..columns {
                block.columns[c].decode(rows, &mut decoded[c]);
            }
            let decoded = &decoded[..columns];
            let key = |r: usize| {
                let mut k = [0u64; MAX_COLUMNS];
                for (c, column) in decoded.iter().enumerate() {
                    k[c] = column[r];
                }
                k
            };
            if key(0) != self.fences[b].first {
                return Err(self.corrupt_block(b, "its first key is not its fence"));
            }
            if let Some(r) = first_unordered_row(decoded, rows) {
                return Err(self.corrupt_block(b, &format!("keys out of order at row {r}")));
            }
            if self.fences.get(b + 1).is_some_and(|next| key(rows - 1) >= next.first) {
                return Err(self.corrupt_block(b, "its last key is not below the next block's"));
            }
            Ok(())
        })
    }

    /// Checks every block (as `rhizome check` does); the first error.
    pub fn verify(&self) -> Result<()> {
        for b in 0..self.fences.len() {
            self.block(b)?;
        }
        Ok(())
    }

    /// Words per column and encoding over every block, for tuning:
    /// `(column, kind name, width, blocks, words)`.
    pub fn encoding_summary(&self) -> Result<Vec<(usize, &'static str, usize, usize, usize)>> {
        let mut totals: std::collections::BTreeMap<(usize, &'static str, usize), (usize, usize)> = Default::default();
        for b in 0..self.fences.len() {
            let fence = &self.fences[b];
            let words = &self.words()[fence.offset..fence.offset + fence.words];
            let mut at = 1;
            for c in 0..self.columns {
                let (column, used) = Column::parse(&words[at..], fence.rows, self.version >= 2)?;
                let e = totals.entry((c, column.kind_name(), (words[at] >> 8) as u8 as usize)).or_default();
                e.0 += 1;
                e.1 += used;
                at += used;
            }
        }
        Ok(totals.into_iter().map(|((c, k, w), (n, words))| (c, k, w, n, words)).collect())
    }

    pub fn cursor(&self) -> SegmentCursor<'_> {
        SegmentCursor { segment: self, block: self.fences.len(), row: 0, view: None, decoded: None, window_block: usize::MAX, window: 0..0, window_ids: Box::new([[0; WINDOW_ROWS]; MAX_COLUMNS]), random_reads: 0, sought: NOT_SOUGHT }
    }

    /// How many keys start with `target` (1 to `columns` leading ids),
    /// without decoding them: the rows are found as a seek finds them
    /// (the fences, then the block's columns one by one); when they run
    /// past the block, the first key after them is found the same way
    /// and the fences' row counts give the rows between.
    pub fn count_prefix(&self, target: &[u64]) -> Result<u64> {
        let (b, lo, hi) = self.locate(target)?;
        if b == self.fences.len() {
            return Ok(0);
        }
        if hi < self.fences[b].rows {
            return Ok((hi - lo) as u64);
        }
        let from = self.fences[b].before + lo as u64;
        // The prefix after `target` (its last id plus one, carried).
        let mut next = target.to_vec();
        while let Some(last) = next.pop() {
            if let Some(up) = last.checked_add(1) {
                next.push(up);
                break;
            }
        }
        if next.is_empty() {
            return Ok(self.rows - from);
        }
        let (b2, lo2, _) = self.locate(&next)?;
        let until = match self.fences.get(b2) {
            Some(f) => f.before + lo2 as u64,
            None => self.rows,
        };
        Ok(until - from)
    }

    /// The last block starting before `target`, the first of its rows at
    /// or after `target`, and the end of the rows starting with it (a
    /// block's row count when they may go on into the next); the block
    /// is `blocks()` when there are none.
    fn locate(&self, target: &[u64]) -> Result<(usize, usize, usize)> {
        if self.fences.is_empty() {
            return Ok((0, 0, 0));
        }
        let before = self.fences.partition_point(|f| compare_prefix(|c| f.first[c], target) == std::cmp::Ordering::Less);
        let b = before.saturating_sub(1);
        let block = self.block(b)?;
        let (mut lo, mut hi) = (0, block.rows);
        for (c, &t) in target.iter().enumerate() {
            (lo, hi) = block.columns[c].equal_range(lo, hi, t);
            if lo == hi {
                break;
            }
        }
        Ok((b, lo, hi))
    }

    /// Whether the segment holds `key` (all its ids).
    pub fn contains(&self, key: &[u64]) -> Result<bool> {
        let mut cursor = self.cursor();
        cursor.seek(key)?;
        Ok(cursor.valid() && cursor.key()[..self.columns] == *key)
    }
}

/// Compares a key's leading ids with `target` (a prefix): `Less` if the
/// key sorts before every key starting with `target`.
fn compare_prefix(key: impl Fn(usize) -> u64, target: &[u64]) -> std::cmp::Ordering {
    for (c, t) in target.iter().enumerate() {
        match key(c).cmp(t) {
            std::cmp::Ordering::Equal => {}
            other => return other,
        }
    }
    std::cmp::Ordering::Equal
}

/// Rows a cursor decodes in windows in a block before decoding it whole
/// (a window's row costs a few times a row of a whole decode).
const RANDOM_READS: usize = 64;

/// Rows of a window at most: a lookup's rows are the run of its leading
/// id, when the leading column is run-length encoded; else this many.
const WINDOW_ROWS: usize = 32;

/// A position in a segment: seeks and steps forward.
pub struct SegmentCursor<'a> {
    segment: &'a Segment,
    /// The current block; `blocks()` when past the end.
    block: usize,
    row: usize,
    view: Option<Block<'a>>,
    /// The current block decoded whole, once the cursor steps through
    /// it (the buffer is kept across blocks).
    decoded: Option<(usize, Box<[[u64; BLOCK_ROWS]; MAX_COLUMNS]>)>,
    /// Rows `window` of block `window_block` decoded, `window_ids[c][i]`
    /// the id of column `c` at row `window.start + i`: a lookup's rows
    /// without a block-sized buffer (a new cursor per lookup would zero
    /// one each time).
    window_block: usize,
    window: std::ops::Range<usize>,
    /// Boxed: inline, its 1 KiB made every move of a cursor (into an
    /// index cursor, a scan's stream, its vector) a memcpy, 13% of a
    /// lookup's instructions; one allocation costs less.
    window_ids: Box<[[u64; WINDOW_ROWS]; MAX_COLUMNS]>,
    /// Rows decoded in windows since the cursor came to the block.
    random_reads: usize,
    /// The last seek's block, row, and the end of the rows that start
    /// with its target (a lookup's rows): a window decoded at that row
    /// ends one row past them.
    sought: (usize, usize, usize),
}

/// No seek to size a window by.
const NOT_SOUGHT: (usize, usize, usize) = (usize::MAX, 0, 0);

impl<'a> SegmentCursor<'a> {
    /// The segment the cursor reads.
    pub fn segment(&self) -> &'a Segment {
        self.segment
    }

    pub fn valid(&self) -> bool {
        self.block < self.segment.fences.len()
    }

    fn enter(&mut self, block: usize) -> Result<()> {
        self.block = block;
        self.row = 0;
        self.random_reads = 0;
        self.sought = NOT_SOUGHT;
        self.view = if block < self.segment.fences.len() { Some(self.segment.block(block)?) } else { None };
        Ok(())
    }

    /// Positions at the first key at or after `target` (1 to `columns`
    /// leading ids; a shorter target is a prefix). The rows of the block
    /// that start with `target` are found column by column (each column
    /// is sorted over the rows whose earlier ids are the target's), and
    /// the window a read there decodes ends one row past them: a lookup
    /// of a course's attendees in POS decodes its few rows, not 32.
    pub fn seek(&mut self, target: &[u64]) -> Result<()> {
        let fences = &self.segment.fences;
        // The last block starting before the target: the key is there, or
        // it is the next block's first.
        let before = fences.partition_point(|f| compare_prefix(|c| f.first[c], target) == std::cmp::Ordering::Less);
        if before == 0 {
            return self.enter(0);
        }
        let b = before - 1;
        if self.block != b || self.view.is_none() {
            self.enter(b)?;
        }
        let view = self.view.as_ref().expect("entered");
        let decoded = self.decoded.as_ref().filter(|(d, _)| *d == b).map(|(_, d)| d);
        let (mut lo, mut hi) = (0, view.rows);
        for (c, &t) in target.iter().enumerate() {
            (lo, hi) = match decoded {
                Some(d) => {
                    let ids = &d[c][lo..hi];
                    let start = lo + ids.partition_point(|v| *v < t);
                    (start, lo + ids.partition_point(|v| *v <= t))
                }
                None => view.columns[c].equal_range(lo, hi, t),
            };
            if lo == hi {
                break;
            }
        }
        if lo == view.rows {
            self.enter(b + 1)
        } else {
            self.row = lo;
            self.random_reads = 0;
            self.sought = (b, lo, hi);
            Ok(())
        }
    }

    pub fn seek_first(&mut self) -> Result<()> {
        self.enter(0)
    }

    /// Positions at the last key (invalid when there is none).
    pub fn seek_last(&mut self) -> Result<()> {
        match self.segment.fences.len() {
            0 => self.enter(0),
            n => {
                self.enter(n - 1)?;
                self.row = self.segment.fences[n - 1].rows - 1;
                Ok(())
            }
        }
    }

    /// Steps back one key: from the first key the cursor becomes invalid
    /// (and stays so).
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        if self.row > 0 {
            self.row -= 1;
            return Ok(());
        }
        if self.block == 0 {
            self.block = self.segment.fences.len();
            self.view = None;
            return Ok(());
        }
        let b = self.block - 1;
        self.enter(b)?;
        self.row = self.segment.fences[b].rows - 1;
        Ok(())
    }

    /// The block the cursor is on, when it is on that block's first key.
    pub fn at_block_start(&self) -> Option<usize> {
        (self.valid() && self.row == 0).then_some(self.block)
    }

    /// The first key of the block after the current one (`None` on the
    /// last block or past the end): the bound of the current block's keys.
    pub fn next_fence(&self) -> Option<[u64; MAX_COLUMNS]> {
        self.segment.fences.get(self.block + 1).map(|f| f.first)
    }

    /// Moves to the first key of the next block.
    pub fn skip_block(&mut self) -> Result<()> {
        if self.valid() {
            self.enter(self.block + 1)?;
        }
        Ok(())
    }

    /// Keys before the current one (all of them past the end).
    pub fn rank(&self) -> u64 {
        match self.segment.fences.get(self.block) {
            Some(f) => f.before + self.row as u64,
            None => self.segment.rows,
        }
    }

    /// The current key (its first `columns()` ids; the rest are 0).
    /// Only while `valid()`.
    #[inline]
    pub fn key(&mut self) -> [u64; MAX_COLUMNS] {
        let columns = self.segment.columns;
        let mut key = [0u64; MAX_COLUMNS];
        if !self.whole_block_decoded() && !(self.window_block == self.block && self.window.contains(&self.row)) {
            self.decode_window();
        }
        match &self.decoded {
            Some((b, d)) if *b == self.block => {
                for c in 0..columns {
                    key[c] = d[c][self.row];
                }
            }
            _ => {
                let i = self.row - self.window.start;
                for c in 0..columns {
                    key[c] = self.window_ids[c][i];
                }
            }
        }
        key
    }

    /// Decodes the rows from the current one on: up to the end of the
    /// leading id's run (a lookup's rows) and the row after it (where a
    /// lookup finds its prefix ends), at most [`WINDOW_ROWS`]; or the
    /// whole block once the cursor steps through it.
    #[inline(never)]
    fn decode_window(&mut self) {
        let SegmentCursor { segment, block, row, view, decoded, window_block, window, window_ids, random_reads, sought } = self;
        let view = view.as_ref().expect("the cursor is valid");
        if *random_reads > RANDOM_READS {
            let (b, d) = decoded.get_or_insert_with(|| (usize::MAX, Box::new([[0; BLOCK_ROWS]; MAX_COLUMNS])));
            for c in 0..segment.columns {
                view.columns[c].decode(view.rows, &mut d[c]);
            }
            *b = *block;
            return;
        }
        let from = *row;
        // Rows a seek found to start with its target: the window ends
        // one past them (where the lookup finds its prefix ends).
        let limit = if (sought.0, sought.1) == (*block, from) { sought.2 + 1 } else { usize::MAX };
        let (id, _, run_end) = view.columns[0].get_span(from);
        let (to, first) = if run_end > from + 1 {
            // The leading ids up to the run's end are the run's id.
            let to = (run_end + 1).min(view.rows).min(from + WINDOW_ROWS).min(limit);
            let in_run = run_end.min(to);
            window_ids[0][..in_run - from].fill(id);
            if in_run < to {
                view.columns[0].decode_range(in_run, &mut window_ids[0][in_run - from..to - from]);
            }
            (to, 1)
        } else {
            ((from + WINDOW_ROWS).min(view.rows).min(limit), 0)
        };
        *random_reads += to - from;
        for c in first..segment.columns {
            view.columns[c].decode_range(from, &mut window_ids[c][..to - from]);
        }
        *window_block = *block;
        *window = from..to;
    }

    /// Whether [`Self::decoded_rows`] would give rows (without decoding
    /// anything): the cursor steps through its block, or stands in the
    /// window it decoded last (a lookup's rows).
    #[inline]
    pub fn may_step_through(&self) -> bool {
        self.stepping_through() || self.in_window()
    }

    /// The cursor reads its block whole (read past the windows' share).
    fn stepping_through(&self) -> bool {
        self.random_reads > RANDOM_READS || self.whole_block_decoded()
    }

    fn whole_block_decoded(&self) -> bool {
        matches!(&self.decoded, Some((b, _)) if *b == self.block)
    }

    fn in_window(&self) -> bool {
        self.window_block == self.block && self.window.contains(&self.row)
    }

    /// The ids decoded from the current row on, one slice per column (all
    /// of one length, at least 1): the rest of the block once the cursor
    /// steps through it (it read more than a few rows singly since it came
    /// to it, or decoded it already; decoded now if need be), else the
    /// rest of the window it stands in (a lookup's rows). Scans take them
    /// at once instead of a row at a time. `None` otherwise.
    pub fn decoded_rows(&mut self) -> Option<[&[u64]; MAX_COLUMNS]> {
        let rows = self.view.as_ref()?.rows;
        if !self.whole_block_decoded() {
            if self.random_reads > RANDOM_READS {
                self.decode_window();
            } else if self.in_window() {
                let (from, to) = (self.row - self.window.start, self.window.end - self.window.start);
                return Some(std::array::from_fn(|c| &self.window_ids[c][from..to]));
            } else {
                return None;
            }
        }
        let row = self.row;
        self.decoded.as_ref().map(|(_, d)| std::array::from_fn(|c| &d[c][row..rows]))
    }

    /// Moves forward `rows` rows within the current block (to its row
    /// count at most: the next block's first key).
    pub fn step(&mut self, rows: usize) -> Result<()> {
        self.row += rows;
        if let Some(v) = &self.view {
            debug_assert!(self.row <= v.rows, "a step stays within the block");
            if self.row >= v.rows {
                self.step_into_next_block()?;
            }
        }
        Ok(())
    }

    #[inline]
    pub fn next(&mut self) -> Result<()> {
        self.row += 1;
        if self.view.as_ref().is_some_and(|v| self.row == v.rows) {
            self.step_into_next_block()?;
        }
        Ok(())
    }

    /// Enters the next block from the end of the current one: a cursor
    /// that was stepping through a block steps through the next at once
    /// (decodes it on its first read) rather than reading rows singly
    /// again first.
    fn step_into_next_block(&mut self) -> Result<()> {
        let stepping = self.stepping_through();
        self.enter(self.block + 1)?;
        if stepping {
            self.random_reads = RANDOM_READS + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
