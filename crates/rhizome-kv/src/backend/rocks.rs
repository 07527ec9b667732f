//! The embedded backend on RocksDB.
//!
//! Every keyspace is a one-byte key prefix: a bulk load then ingests every
//! keyspace's sorted file in one `IngestExternalFile` call, which RocksDB
//! applies atomically (one MANIFEST edit), so a load is all or nothing
//! across keyspaces. They live in RocksDB's default column family, except
//! documents' ([`crate::DOCUMENT_KEYSPACES`], the same prefixed keys), in
//! the `documents` column family: its blocks are LZ4 on every level where
//! the default column family's bottom level is ZSTD. A transaction's cold
//! reads of documents decompress LZ4 blocks (12% fewer instructions a TPC-B
//! transaction than ZSTD, issue 45), and the dictionary, most of an RDF
//! store, keeps ZSTD's size (LZ4 there: 9.89 -> 11.32 bytes a triple at
//! 4.8M Faculty triples, issue 46).
//!
//! A store made before the `documents` column family holds its documents
//! in the default one. Opened for writing, it is moved (`move_documents`:
//! the documents written out as sorted files, ingested into their column
//! family, then deleted from the default one; rerun whole if killed, as
//! nothing is written meanwhile). Opened read-only, it is read where its
//! documents are.

use super::{Backend, Cursor, KvRead, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteOp};
use crate::{Error, Keyspace, Result};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, DBRawIteratorWithThreadMode,
    IngestExternalFileOptions, Options, ReadOptions, SnapshotWithThreadMode, SstFileWriter, WriteOptions, DB,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Tuning of the embedded engine.
#[derive(Clone, Debug)]
pub struct RocksOptions {
    /// Bytes of the shared block cache.
    pub block_cache_bytes: usize,
    /// Bytes of memtables all the process's stores hold together (a
    /// RocksDB write buffer manager shared by every store, as the block
    /// cache is): past it the store being written flushes its memtable.
    pub memtable_bytes: usize,
    /// Background compaction and flush threads.
    pub background_jobs: i32,
    /// Keys between full keys in a block: more is smaller, slower to seek.
    pub block_restart_interval: i32,
    /// Uncompressed bytes per block: larger compresses better, but a random
    /// read decompresses a whole block.
    pub block_bytes: usize,
    /// How blocks on the bottom level (nearly all data) are compressed;
    /// documents' blocks are LZ4 unless this is `None` (see the module doc).
    pub compression: Compression,
}

/// Block compression of the bottom level, where bulk loads land. Every
/// block records its own compression, so a store written with one setting
/// reads with any other; compactions rewrite blocks with the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// The default: the smallest store; a block read from disk costs a
    /// decompression.
    Zstd,
    /// About a third larger (18.5 bytes per quad at 4.8M against 13.5),
    /// cheaper to decompress.
    Lz4,
    /// About six times larger (77), nothing to decompress.
    None,
}

impl Default for RocksOptions {
    fn default() -> Self {
        RocksOptions {
            block_cache_bytes: 256 << 20,
            memtable_bytes: 256 << 20,
            background_jobs: 2,
            block_restart_interval: 16,
            block_bytes: 16 << 10,
            compression: Compression::Zstd,
        }
    }
}

impl RocksOptions {
    /// The defaults, with the size-for-speed trade a user may choose:
    /// `RHIZOME_COMPRESSION` (`zstd`, `lz4` or `none`, as CouchDB's
    /// `file_compression`), `RHIZOME_BLOCK_BYTES` (1 KiB to 1 MiB) and
    /// `RHIZOME_CACHE_BYTES`, the block cache, shared by every store the
    /// process opens (256 MiB by default; a store whose working set is
    /// larger decompresses a block for most random reads), and
    /// `RHIZOME_MEMTABLE_BYTES`, the memtables of every store together
    /// (256 MiB by default).
    pub fn from_env() -> Result<Self> {
        let mut options = RocksOptions::default();
        if let Ok(v) = std::env::var("RHIZOME_COMPRESSION") {
            options.compression = match v.as_str() {
                "zstd" => Compression::Zstd,
                "lz4" => Compression::Lz4,
                "none" => Compression::None,
                other => return Err(Error::Config(format!("RHIZOME_COMPRESSION={other:?}: expected zstd, lz4 or none"))),
            };
        }
        if let Ok(v) = std::env::var("RHIZOME_BLOCK_BYTES") {
            options.block_bytes = match v.parse::<usize>() {
                Ok(n) if (1 << 10..=1 << 20).contains(&n) => n,
                _ => return Err(Error::Config(format!("RHIZOME_BLOCK_BYTES={v:?}: expected a number of bytes from 1024 to 1048576"))),
            };
        }
        if let Ok(v) = std::env::var("RHIZOME_MEMTABLE_BYTES") {
            options.memtable_bytes = match v.parse::<usize>() {
                Ok(n) if (1 << 20..=1 << 40).contains(&n) => n,
                _ => return Err(Error::Config(format!("RHIZOME_MEMTABLE_BYTES={v:?}: expected a number of bytes from 1048576 (1 MiB) to 2^40"))),
            };
        }
        if let Ok(v) = std::env::var("RHIZOME_CACHE_BYTES") {
            options.block_cache_bytes = match v.parse::<usize>() {
                Ok(n) if (1 << 20..=1 << 40).contains(&n) => n,
                _ => return Err(Error::Config(format!("RHIZOME_CACHE_BYTES={v:?}: expected a number of bytes from 1048576 (1 MiB) to 2^40"))),
            };
        }
        Ok(options)
    }
}

pub struct RocksBackend {
    // Field order matters: `db` must outlive everything that borrows it.
    db: Arc<DB>,
    /// The column families of `db` (which creates or drops none while
    /// open, so the handles live as long as it; see [`Families`]).
    families: Families,
    /// Bytes committed since the store was opened, until its memtable
    /// filter is turned on ([`MEMTABLE_FILTER_AFTER_BYTES`]).
    committed_bytes: AtomicU64,
    memtable_filter_on: std::sync::atomic::AtomicBool,
    ingest_options: Arc<Options>,
    /// Those of the documents' column family's files (LZ4).
    documents_ingest_options: Arc<Options>,
    /// Those of [`Backend::index_run_writer`]'s files: uncompressed.
    index_run_options: Arc<Options>,
    /// Those of [`Backend::unfiltered_run_writer`]'s files: no filter.
    unfiltered_run_options: Arc<Options>,
    path: PathBuf,
    ingest_dir: PathBuf,
    next_run: AtomicU64,
    /// Read-only opens: the engine's lock file, held (an fcntl lock, as the
    /// engine takes it) so that no writer opens the store meanwhile.
    _lock: Option<std::fs::File>,
}

/// The documents' column family (see the module doc).
const DOCUMENTS_FAMILY: &str = "documents";

/// Files written for the documents' column family are named so (their
/// runs carry only their path to `ingest`).
const DOCUMENTS_RUN_PREFIX: &str = "documents-";

/// Where each keyspace lives: the handles of `db`'s column families.
/// They are borrowed from the `DB` as `'static`: every holder of a
/// `Families` also holds an `Arc` of that `DB`, and a `DB` shared by
/// `Arc` never creates or drops a column family (that takes `&mut`).
#[derive(Clone, Copy)]
struct Families {
    default: &'static ColumnFamily,
    /// The documents' column family, or the default one when a read-only
    /// open finds the documents there (a store made before it).
    documents: &'static ColumnFamily,
    /// Whether the documents have a column family of their own.
    separate: bool,
}

impl Families {
    /// The handles of `db`'s families; the documents read from the
    /// default family when they are there (or it is the only one).
    fn of(db: &DB) -> Result<Families> {
        let handle = |name: &str| -> Result<&'static ColumnFamily> {
            let cf = db.cf_handle(name).ok_or_else(|| Error::Engine(format!("no column family {name:?}")))?;
            // SAFETY: see the type's doc: the DB outlives every holder.
            Ok(unsafe { std::mem::transmute::<&ColumnFamily, &'static ColumnFamily>(cf) })
        };
        let default = handle("default")?;
        let documents = match db.cf_handle(DOCUMENTS_FAMILY) {
            Some(_) if !holds_documents(db, default)? => handle(DOCUMENTS_FAMILY)?,
            _ => default,
        };
        Ok(Families { default, documents, separate: !std::ptr::eq(default, documents) })
    }

    /// Each family once.
    fn all(&self) -> impl Iterator<Item = &'static ColumnFamily> {
        [Some(self.default), self.separate.then_some(self.documents)].into_iter().flatten()
    }

    fn of_keyspace(&self, ks: Keyspace) -> &'static ColumnFamily {
        if crate::DOCUMENT_KEYSPACES.contains(&ks.0) { self.documents } else { self.default }
    }

    /// Each family, and the part of `from..=to` it holds (`None` if none).
    fn spans(&self, from: Keyspace, to: Keyspace) -> impl Iterator<Item = (&'static ColumnFamily, Option<(u8, u8)>)> {
        let docs = &crate::DOCUMENT_KEYSPACES;
        let in_docs = (from.0.max(docs.start), to.0.min(docs.end - 1));
        let in_docs = (in_docs.0 <= in_docs.1).then_some(in_docs);
        let all = Some((from.0, to.0)).filter(|(a, b)| a <= b);
        if !self.separate {
            return vec![(self.default, all)].into_iter();
        }
        // The default family's part: the range, less the documents'.
        let outside = all.filter(|&(a, b)| a < docs.start || b >= docs.end);
        vec![(self.default, outside), (self.documents, in_docs)].into_iter()
    }
}

/// Whether `cf` holds a key of a document keyspace.
fn holds_documents(db: &DB, cf: &ColumnFamily) -> Result<bool> {
    let mut ro = ReadOptions::default();
    ro.set_total_order_seek(true);
    ro.set_iterate_upper_bound(vec![crate::DOCUMENT_KEYSPACES.end]);
    let mut iter = db.raw_iterator_cf_opt(cf, ro);
    iter.seek([crate::DOCUMENT_KEYSPACES.start]);
    iter.status()?;
    Ok(iter.valid())
}

/// Bytes of each sorted file [`move_documents`] writes.
const MOVED_FILE_BYTES: usize = 64 << 20;

/// Moves a store's documents from the default column family, where a
/// store made before the documents' own family holds them, into that
/// family: written out as sorted files (so they land on the bottom level,
/// LZ4) and ingested in one call, then deleted from the default family by
/// one range tombstone, whose files are then rewritten without them.
/// Nothing else writes meanwhile (the store is being opened), so a
/// process killed at any step leaves the documents whole in the default
/// family (the next open moves them again, first deleting any copy it
/// made) or moved (the tombstone written).
fn move_documents(db: &DB, default: &ColumnFamily, documents: &ColumnFamily, options: &Options, dir: &Path) -> Result<()> {
    if !holds_documents(db, default)? {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
    let (lower, upper) = ([crate::DOCUMENT_KEYSPACES.start], [crate::DOCUMENT_KEYSPACES.end]);
    let mut ro = ReadOptions::default();
    ro.set_total_order_seek(true);
    ro.set_iterate_upper_bound(upper.to_vec());
    let mut iter = db.raw_iterator_cf_opt(default, ro);
    iter.seek(lower);
    let mut files = Vec::new();
    while iter.valid() {
        let path = dir.join(format!("{DOCUMENTS_RUN_PREFIX}moved-{}-{}.sst", std::process::id(), files.len()));
        let mut writer = SstFileWriter::create(options);
        writer.open(&path)?;
        let mut bytes = 0;
        while bytes < MOVED_FILE_BYTES {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else { break };
            writer.put(key, value)?;
            bytes += key.len() + value.len();
            iter.next();
        }
        writer.finish()?;
        files.push(path);
    }
    iter.status()?;
    drop(iter);
    // Whatever an earlier, killed move left in the documents' family
    // goes first (the ingested files then lie above the tombstone).
    let mut wb = rocksdb::WriteBatch::default();
    wb.delete_range_cf(documents, lower, upper);
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(wb, &wo)?;
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    db.ingest_external_file_cf_opts(documents, &io, files)?;
    let mut wb = rocksdb::WriteBatch::default();
    wb.delete_range_cf(default, lower, upper);
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(wb, &wo)?;
    db.compact_range_cf(default, Some(&lower[..]), Some(&upper[..]));
    Ok(())
}

/// Options of the documents' column family: the engine's, with LZ4 on
/// every level (none if the store's setting is none).
fn documents_options(tuning: &RocksOptions) -> Options {
    let mut opts = engine_options(tuning);
    let lz4 = if tuning.compression == Compression::None { DBCompressionType::None } else { DBCompressionType::Lz4 };
    opts.set_compression_type(lz4);
    opts.set_bottommost_compression_type(lz4);
    // A second memtable per store: its arena grows by 1 MiB blocks by
    // default, and with a block each, 40 open databases of one document
    // held 11.7 MB more than with one family (server_databases' budget,
    // 1 MiB per open database). Smaller blocks cost an allocation per
    // 128 KiB written.
    opts.set_arena_block_size(DOCUMENTS_ARENA_BLOCK_BYTES);
    opts
}

/// The documents' memtable arena block (see `documents_options`).
const DOCUMENTS_ARENA_BLOCK_BYTES: usize = 128 << 10;

/// Takes the engine's own lock on `path/LOCK` for this process, as a
/// writer would: `Error::Locked` if another process holds it.
fn lock_store(path: &Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let lock_path = path.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| Error::Io { path: lock_path.clone(), source })?;
    // SAFETY: a zeroed flock is a valid value; the fields are set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as _;
    lock.l_whence = libc::SEEK_SET as _;
    // SAFETY: the fd is open for the call and `lock` lives across it.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) } != 0 {
        return Err(Error::Locked(path.to_owned()));
    }
    Ok(file)
}

/// The block cache of `bytes`, one per process and size, shared by every
/// store opened with that size: a server opens a store per database, and
/// a cache each would let N busy databases hold N times the memory the
/// setting names (as PostgreSQL's `shared_buffers`, the setting is the
/// whole server's). Blocks are keyed by their file, so stores never see
/// each other's; a closed store's blocks age out.
fn shared_block_cache(bytes: usize) -> Cache {
    static CACHES: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<usize, Cache>>> = std::sync::OnceLock::new();
    let mut caches = CACHES.get_or_init(Default::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    caches.entry(bytes).or_insert_with(|| Cache::new_hyper_clock_cache(bytes, 0)).clone()
}

/// The write buffer manager of `bytes`, one per process and size, for the
/// same reason as [`shared_block_cache`]: each store may hold up to two
/// 64 MiB memtables, and a server with a database per user would
/// otherwise hold that per written database.
fn shared_write_buffers(bytes: usize) -> rocksdb::WriteBufferManager {
    static MANAGERS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<usize, rocksdb::WriteBufferManager>>> = std::sync::OnceLock::new();
    let mut managers = MANAGERS.get_or_init(Default::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    managers.entry(bytes).or_insert_with(|| rocksdb::WriteBufferManager::new_write_buffer_manager(bytes, false)).clone()
}

/// The memtable filter's share of a memtable's size (see `engine_options`).
const MEMTABLE_FILTER_RATIO: &str = "0.05";

/// Bytes a store commits after it opens before its memtables get their
/// filter. The filter is allocated whole with each memtable (5% of 64 MiB,
/// 3.2 MiB), which was nearly all of an idle store's memory: a server with
/// a database per user paid it for every database it opened. Stores that
/// are written to get it after their first few MiB.
const MEMTABLE_FILTER_AFTER_BYTES: u64 = 4 << 20;

/// The most bytes a write-ahead log is extended by at a time. RocksDB
/// preallocates (fallocate) a log in steps of 1.1 times the memtable size,
/// 70 MiB, and a manifest 4 MiB: an empty database took 76 MB of disk,
/// 500 of them 38 GB. `db_write_buffer_size` caps that step (see
/// `engine_options_with`); logs still hold whole memtables.
const WAL_PREALLOCATION_BYTES: u64 = 1 << 20;

/// The write-ahead logs' bytes past which the column families holding
/// data in the oldest log are flushed (see `engine_options_with`).
const WAL_LIMIT_BYTES: u64 = 128 << 20;
const MANIFEST_PREALLOCATION_BYTES: usize = 64 << 10;

/// Options of [`Backend::index_run_writer`]'s files: those of ingestion,
/// uncompressed (an SST writer compresses with the bottom level's
/// settings, which made LZ4 the high-compression LZ4HC: 513 M
/// instructions of a 20,000-document view build, a third of it; ZSTD
/// 355 M). Compactions compress them as the level says.
fn index_run_options(tuning: &RocksOptions) -> Options {
    let mut opts = engine_options(tuning);
    opts.set_compression_type(DBCompressionType::None);
    opts.set_bottommost_compression_type(DBCompressionType::None);
    opts
}

/// Options of the engine, also those of the sorted files written for bulk
/// ingestion (which land on the bottom level).
fn engine_options(tuning: &RocksOptions) -> Options {
    engine_options_with(tuning, true)
}

/// Options of [`Backend::unfiltered_run_writer`]'s files: those of
/// ingestion without a filter (a compaction gives its output one again).
fn unfiltered_run_options(tuning: &RocksOptions) -> Options {
    engine_options_with(tuning, false)
}

fn engine_options_with(tuning: &RocksOptions, filters: bool) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_max_background_jobs(tuning.background_jobs);
    opts.set_keep_log_file_num(2);
    opts.set_level_compaction_dynamic_level_bytes(true);
    // Upper levels are rewritten often: cheap LZ4. The bottom level holds
    // nearly everything and ingested runs land there: ZSTD for size.
    let (upper, bottom) = match tuning.compression {
        Compression::Zstd => (DBCompressionType::Lz4, DBCompressionType::Zstd),
        Compression::Lz4 => (DBCompressionType::Lz4, DBCompressionType::Lz4),
        Compression::None => (DBCompressionType::None, DBCompressionType::None),
    };
    opts.set_compression_type(upper);
    opts.set_bottommost_compression_type(bottom);
    // window_bits, level, strategy, max_dict_bytes
    opts.set_bottommost_compression_options(-14, 3, 0, 0, true);
    let mut table = BlockBasedOptions::default();
    // HyperClockCache, not LRU: an LRU shard takes a mutex on every block
    // looked up and released, and reads from many threads spent 17% of
    // their time there (hash lookups, list moves, the lock). Measured on
    // Pokec at full scale with 25 threads: reads 57-59k/s -> 65-68k/s,
    // 2-hop a little faster, writes and LDP writes unchanged. Its table
    // grows with the cache's use (estimated entry charge 0).
    table.set_block_cache(&shared_block_cache(tuning.block_cache_bytes));
    // 16 KiB by default: measured at 4.8M triples (bench/lookup-layouts),
    // 4 KiB blocks take 16.3 bytes per quad, 8 KiB 14.6, 16 KiB 13.5; a
    // block read for the first time is decompressed whole, so smaller
    // blocks make cold lookups cheaper (4 KiB: a third) at that cost.
    table.set_block_size(tuning.block_bytes);
    // Every level has filters, the bottom one and files written for
    // ingestion (which land there) included. The bottom level had none
    // (`optimize_filters_for_hits`) when quad index keys were engine keys
    // and a filter's 1.25 bytes a key was a third of one; with the quads
    // in segment files the engine's keys are mostly the dictionary, and a
    // write looks up every term it brings, most of them new: without a
    // filter each miss searched a bottom-level index and data block, 10k
    // instructions, 1.7M of a 200-triple LDP PUT's 9.8M. With filters,
    // 8.5M (bench/ldp/instructions). Bloom for flushed files (built often,
    // short-lived), Ribbon for the rest: the same 1% false positives in
    // about 30% less space, 0.37 bytes a triple at 700k Faculty triples
    // (Bloom: 0.54), the same instructions per PUT.
    if filters {
        table.set_hybrid_ribbon_filter(10.0, 0);
    }
    table.set_cache_index_and_filter_blocks(true);
    // A large file's index and bloom filter are megabytes each. Cached
    // whole, they were evicted by data blocks and read back (and
    // checksummed) by a later lookup: past 150k LDP resources a write's
    // term lookups spent nearly all its time so, 300 ms per request.
    // Partitioned, a lookup reads one 4 KiB partition of each; the top
    // levels stay pinned, and index and filter blocks go to the cache's
    // high-priority pool.
    table.set_partition_filters(true);
    table.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_metadata_block_size(4096);
    table.set_pin_top_level_index_and_filter(true);
    table.set_cache_index_and_filter_blocks_with_high_priority(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    table.set_block_restart_interval(tuning.block_restart_interval);
    table.set_format_version(6);
    opts.set_block_based_table_factory(&table);
    // A bloom filter over the memtable's keys (5% of its size), holding
    // only the keyspaces whose point reads mostly miss while writing
    // ([`crate::MEMTABLE_FILTERED`]): a write looks up every term it
    // brings and its document's record, and most are new, a miss that
    // otherwise searches the whole skiplist (measured: a third of a
    // 200-triple write's encoding). The other keys, most of a write's
    // (its quads' index keys), are only added, and filtering them too
    // cost more than it saved: Pokec writes, 7 alternated rounds, 10.5k/s
    // against 9.5k/s with every key filtered (9.9k/s with none).
    //
    // It is set up as RocksDB's prefix filter, the prefix of a filtered
    // key being the whole key. Table files keep their whole-key filters,
    // which point reads use; scans set `total_order_seek`, so that no
    // prefix filter is ever asked about a seek's target (a key that need
    // not exist).
    fn filtered(key: &[u8]) -> bool {
        key.first().is_some_and(|ks| crate::MEMTABLE_FILTERED.iter().any(|f| f.0 == *ks))
    }
    fn whole_key(key: &[u8]) -> &[u8] {
        key
    }
    opts.set_prefix_extractor(rocksdb::SliceTransform::create("rhizome.filtered-keyspaces.1", whole_key, Some(filtered)));
    // Off until the store has been written to (`MEMTABLE_FILTER_AFTER_BYTES`).
    opts.set_memtable_prefix_bloom_ratio(0.0);
    opts.set_write_buffer_manager(&shared_write_buffers(tuning.memtable_bytes));
    // The preallocation step is capped by `db_write_buffer_size`, which
    // with a write buffer manager of our own is used for nothing else
    // (`DBImpl::GetWalPreallocateBlockSize`). Not by `max_total_wal_size`:
    // with two column families it forces a flush of every family holding
    // data in the oldest log whenever the logs pass it, which at 1 MiB
    // would flush the documents' memtable every 1 MiB of writes. It
    // bounds the logs a rarely written family keeps alive instead (two
    // memtables' worth).
    opts.set_db_write_buffer_size(WAL_PREALLOCATION_BYTES as usize);
    opts.set_max_total_wal_size(WAL_LIMIT_BYTES);
    opts.set_manifest_preallocation_size(MANIFEST_PREALLOCATION_BYTES);
    // A log whose memtable was flushed is kept and written over by the
    // next one, not deleted. Syncing blocks already written is only the
    // data: appending to a new file makes every fsync journal its new
    // size too (here 134-143 us against 197-233 us per 40 KB write and
    // fdatasync; Pokec writes 10.9-11.0k/s -> 11.5-11.7k/s). One spare
    // log, so the store keeps at most one extra memtable's worth of disk.
    // RocksDB recovers recycled logs in point-in-time mode since 9.1
    // (facebook/rocksdb#12403); tests/crash.rs kills writes into them.
    opts.set_recycle_log_file_num(1);
    opts
}

/// Level 0 files past which a load waits for compaction. A file ingested
/// over keys already stored (new terms among old ones in `term2id`, new
/// objects at the end of each predicate's range) lands on level 0, and
/// ingestion never stalls as writes do: 100 loads of 1,000 resources into
/// one store left 288 files there, each probed by every lookup and held
/// open. Measured on 40 such loads: no bound, 35 s and 126 files; 64, 40 s
/// and 61 files; RocksDB's write slowdown point (20), 63 s (compacting
/// fewer files at a time rewrites the level below more often).
const LEVEL0_LOAD_LIMIT: u64 = 64;

impl RocksBackend {
    /// A sorted run written with `options` (see [`Backend::sorted_run_writer`]).
    /// Documents' runs are written with their family's options and named
    /// for it ([`DOCUMENTS_RUN_PREFIX`]).
    fn run_writer(&self, ks: Keyspace, options: &Arc<Options>) -> Result<Box<dyn SortedRunWriter>> {
        std::fs::create_dir_all(&self.ingest_dir).map_err(|source| Error::Io { path: self.ingest_dir.clone(), source })?;
        let n = self.next_run.fetch_add(1, Ordering::Relaxed);
        let documents = self.families.separate && crate::DOCUMENT_KEYSPACES.contains(&ks.0);
        let prefix = if documents { DOCUMENTS_RUN_PREFIX } else { "" };
        let path = self.ingest_dir.join(format!("{prefix}run-{}-{n}.sst", std::process::id()));
        let options = if documents { self.documents_ingest_options.clone() } else { options.clone() };
        let writer = SstFileWriter::create(&options);
        // SAFETY: the writer borrows `options`, which `RocksRunWriter` owns
        // through an Arc and drops after the writer (field order).
        let writer: SstFileWriter<'static> = unsafe { std::mem::transmute(writer) };
        Ok(Box::new(RocksRunWriter { writer, _options: options, path, ks, opened: false, len: 0, key: Vec::new() }))
    }

    /// Waits, up to a minute, until compaction brings level 0 back to
    /// [`LEVEL0_LOAD_LIMIT`] files.
    fn stall_while_level0_is_deep(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.level0_files() > LEVEL0_LOAD_LIMIT && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Turns the memtable filter on once the store has taken
    /// [`MEMTABLE_FILTER_AFTER_BYTES`] of writes since it opened: new
    /// memtables get it, and the current one is flushed (without waiting)
    /// so that the next writes have it.
    fn note_committed(&self, bytes: u64) {
        if self.memtable_filter_on.load(Ordering::Relaxed) {
            return;
        }
        if self.committed_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes < MEMTABLE_FILTER_AFTER_BYTES {
            return;
        }
        if self.memtable_filter_on.swap(true, Ordering::AcqRel) {
            return;
        }
        // A failure leaves the store without the filter: slower, not wrong.
        for cf in self.families.all() {
            if self.db.set_options_cf(cf, &[("memtable_prefix_bloom_size_ratio", MEMTABLE_FILTER_RATIO)]).is_ok() {
                let mut flush = rocksdb::FlushOptions::default();
                flush.set_wait(false);
                let _ = self.db.flush_cf_opt(cf, &flush);
            }
        }
    }

    /// Whether new memtables get the filter (tests).
    pub fn memtable_filter_on(&self) -> bool {
        self.memtable_filter_on.load(Ordering::Relaxed)
    }

    /// Files on level 0 now.
    pub fn level0_files(&self) -> u64 {
        self.families.all().map(|cf| self.db.property_int_value_cf(cf, "rocksdb.num-files-at-level0").ok().flatten().unwrap_or(0)).sum()
    }

    pub fn open(path: &Path, tuning: &RocksOptions) -> Result<Self> {
        std::fs::create_dir_all(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let mut options = engine_options(tuning);
        options.create_missing_column_families(true);
        let families = [ColumnFamilyDescriptor::new("default", engine_options(tuning)), ColumnFamilyDescriptor::new(DOCUMENTS_FAMILY, documents_options(tuning))];
        let db = DB::open_cf_descriptors(&options, path, families).map_err(|e| {
            let msg = e.into_string();
            if msg.contains("lock") || msg.contains("Resource temporarily unavailable") {
                Error::Locked(path.to_owned())
            } else {
                Error::Engine(msg)
            }
        })?;
        let ingest_dir = path.join("ingest");
        // Runs left by a load that was killed before ingesting: never part of
        // the store, so they go.
        if ingest_dir.exists() {
            std::fs::remove_dir_all(&ingest_dir).map_err(|source| Error::Io { path: ingest_dir.clone(), source })?;
        }
        let default = db.cf_handle("default").ok_or_else(|| Error::Engine("no default column family".into()))?;
        let documents = db.cf_handle(DOCUMENTS_FAMILY).ok_or_else(|| Error::Engine("no documents column family".into()))?;
        move_documents(&db, default, documents, &documents_options(tuning), &ingest_dir)?;
        let families = Families::of(&db)?;
        Ok(RocksBackend {
            db: Arc::new(db),
            families,
            committed_bytes: AtomicU64::new(0),
            memtable_filter_on: Default::default(),
            ingest_options: Arc::new(engine_options(tuning)),
            documents_ingest_options: Arc::new(documents_options(tuning)),
            index_run_options: Arc::new(index_run_options(tuning)),
            unfiltered_run_options: Arc::new(unfiltered_run_options(tuning)),
            path: path.to_owned(),
            ingest_dir,
            next_run: AtomicU64::new(0),
            _lock: None,
        })
    }

    /// Opens an existing store for reading only: nothing is written (no
    /// new manifest, options file or log, no fsync), which is most of
    /// what opening costs a one-query process. The store stays locked
    /// against writers while open, as a read-write open locks it; writes
    /// fail.
    pub fn open_read_only(path: &Path, tuning: &RocksOptions) -> Result<Self> {
        let lock = lock_store(path)?;
        let mut options = engine_options(tuning);
        options.create_if_missing(false);
        // One thread opens the table files: starting the default 16 costs
        // a one-query process more than the files do.
        options.set_max_file_opening_threads(1);
        options.set_skip_stats_update_on_db_open(true);
        // A store made before the documents' family has only the default.
        let names = DB::list_cf(&options, path).map_err(|e| Error::Engine(e.into_string()))?;
        let families = names.iter().map(|name| {
            let cf_options = if name == DOCUMENTS_FAMILY { documents_options(tuning) } else { engine_options(tuning) };
            ColumnFamilyDescriptor::new(name, cf_options)
        });
        let db = DB::open_cf_descriptors_read_only(&options, path, families, false).map_err(|e| Error::Engine(e.into_string()))?;
        let families = Families::of(&db)?;
        Ok(RocksBackend {
            db: Arc::new(db),
            families,
            committed_bytes: AtomicU64::new(0),
            memtable_filter_on: Default::default(),
            ingest_options: Arc::new(engine_options(tuning)),
            documents_ingest_options: Arc::new(documents_options(tuning)),
            index_run_options: Arc::new(index_run_options(tuning)),
            unfiltered_run_options: Arc::new(unfiltered_run_options(tuning)),
            path: path.to_owned(),
            ingest_dir: path.join("ingest"),
            next_run: AtomicU64::new(0),
            _lock: Some(lock),
        })
    }
}

fn prefixed(ks: Keyspace, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(ks.0);
    k.extend_from_slice(key);
    k
}

impl Backend for RocksBackend {
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let snapshot = self.db.snapshot();
        // SAFETY: the snapshot borrows the DB; `RocksSnapshot` keeps an Arc of
        // the same DB and drops the snapshot first (field order), so the
        // borrow never outlives the DB.
        let snapshot: SnapshotWithThreadMode<'static, DB> = unsafe { std::mem::transmute(snapshot) };
        Ok(Arc::new(RocksSnapshot { snapshot, families: self.families, db: self.db.clone() }))
    }

    fn commit(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        // Sized once (a record is a tag, two varint lengths and the
        // prefixed key and value): growing it a key at a time copied it
        // over and over.
        let bytes: usize = batch.ops.iter().map(|op| match op {
            WriteOp::Put(_, k, v) => k.len() + v.len() + 12,
            WriteOp::Delete(_, k) => k.len() + 7,
        }).sum();
        let mut wb = rocksdb::WriteBatch::with_capacity_bytes(bytes + 12);
        let mut key = Vec::new();
        for op in &batch.ops {
            let (WriteOp::Put(ks, k, _) | WriteOp::Delete(ks, k)) = op;
            key.clear();
            key.push(ks.0);
            key.extend_from_slice(k);
            let cf = self.families.of_keyspace(*ks);
            match op {
                WriteOp::Put(_, _, v) => wb.put_cf(cf, &key, v),
                WriteOp::Delete(..) => wb.delete_cf(cf, &key),
            }
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(wb, &wo)?;
        self.note_committed(bytes as u64);
        Ok(())
    }

    fn sorted_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.run_writer(ks, &self.ingest_options)
    }

    fn index_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.run_writer(ks, &self.index_run_options)
    }

    fn unfiltered_run_writer(&self, ks: Keyspace) -> Result<Box<dyn SortedRunWriter>> {
        self.run_writer(ks, &self.unfiltered_run_options)
    }

    fn ingest(&self, runs: Vec<SortedRun>) -> Result<()> {
        let mut paths = Vec::new();
        let mut memory = Vec::new();
        for run in runs {
            match run {
                SortedRun::File { path } => paths.push(path),
                SortedRun::Empty => {}
                SortedRun::Memory { ks, entries } => memory.push((ks, entries)),
            }
        }
        if paths.is_empty() {
            // Small runs only: one write batch is just as atomic.
            let mut batch = WriteBatch::default();
            for (ks, entries) in memory {
                for (k, v) in entries {
                    batch.ops.push(WriteOp::Put(ks, k, v));
                }
            }
            return self.commit(batch);
        }
        // Mixed: the small runs become files too, so one ingestion covers all.
        for (ks, entries) in memory {
            let mut w = self.sorted_run_writer(ks)?;
            for (k, v) in &entries {
                w.put(k, v)?;
            }
            if let SortedRun::File { path } = w.finish()? {
                paths.push(path);
            }
        }
        // One call per family would not be atomic: none mixes them.
        let (documents, others): (Vec<PathBuf>, Vec<PathBuf>) =
            paths.into_iter().partition(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(DOCUMENTS_RUN_PREFIX)));
        let (cf, paths) = match (documents.is_empty(), others.is_empty()) {
            (true, _) => (self.families.default, others),
            (false, true) => (self.families.documents, documents),
            (false, false) => return Err(Error::Engine("an ingestion mixes documents' keyspaces with others: it would not be atomic".into())),
        };
        let mut io = IngestExternalFileOptions::default();
        io.set_move_files(true);
        self.db.ingest_external_file_cf_opts(cf, &io, paths)?;
        self.stall_while_level0_is_deep();
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        for cf in self.families.all() {
            self.db.flush_cf(cf)?;
            let mut opts = rocksdb::CompactOptions::default();
            opts.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
            self.db.compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &opts);
        }
        Ok(())
    }

    fn size_on_disk(&self) -> Result<u64> {
        dir_size(&self.path)
    }

    fn stop_background_work(&self) {
        // A running compaction sees the shutdown flag and stops early; no
        // flush is forced (every commit is in the write-ahead log).
        self.db.cancel_all_background_work(true);
    }

    fn latest_sequence(&self) -> Option<u64> {
        Some(self.db.latest_sequence_number())
    }

    fn clear_keyspace(&self, ks: Keyspace) -> Result<()> {
        // One range tombstone, then the files under it rewritten away.
        let cf = self.families.of_keyspace(ks);
        let mut wb = rocksdb::WriteBatch::default();
        wb.delete_range_cf(cf, [ks.0], [ks.0 + 1]);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(wb, &wo)?;
        self.db.compact_range_cf(cf, Some(&[ks.0][..]), Some(&[ks.0 + 1][..]));
        Ok(())
    }

    fn settle(&self, from: Keyspace, to: Keyspace) -> Result<()> {
        for (cf, span) in self.families.spans(from, to) {
            let Some((from, to)) = span else { continue };
            self.db.flush_cf(cf)?;
            // Without forcing the bottom level to be rewritten: keys with
            // none of theirs below are moved there whole (a trivial move).
            self.db.compact_range_cf(cf, Some(&[from][..]), Some(&[to][..]));
        }
        Ok(())
    }
}

/// Bytes of every file under `path`: SST, WAL, MANIFEST and logs alike.
fn dir_size(path: &Path) -> Result<u64> {
    let mut total = 0;
    let entries = std::fs::read_dir(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io { path: path.to_owned(), source })?;
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            // Removed while we walk (a file the engine or a layer above
            // replaced): it takes no room.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(Error::Io { path: entry.path(), source }),
        };
        if meta.is_dir() {
            total += dir_size(&entry.path())?;
        } else {
            total += meta.len();
        }
    }
    Ok(total)
}

/// RocksDB counts every step of every read into thread-local "perf
/// context" counters unless told not to, on each thread; nothing here reads
/// them (callgrind: 1.4% of a 3-pattern join's instructions).
fn no_perf_counters() {
    rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::Disable);
}

struct RocksSnapshot {
    snapshot: SnapshotWithThreadMode<'static, DB>,
    families: Families,
    db: Arc<DB>,
}

impl Snapshot for RocksSnapshot {
    fn sequence(&self) -> Option<u64> {
        Some(self.snapshot.sequence_number())
    }
}

impl KvRead for RocksSnapshot {
    fn get(&self, ks: Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        no_perf_counters();
        Ok(self.snapshot.get_cf(self.families.of_keyspace(ks), prefixed(ks, key))?)
    }

    /// One batched `MultiGet`: the keys are sorted and each file's index
    /// and data blocks are searched once for the keys that fall in them,
    /// where point reads one after another search each from the top (a
    /// cold dictionary read cost some 15,000 instructions so; see
    /// `rhizome_rdf::term::Dictionary::decode_many`).
    fn get_many(&self, ks: Keyspace, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        no_perf_counters();
        let cf = self.families.of_keyspace(ks);
        let keys = keys.iter().map(|key| (cf, prefixed(ks, key)));
        self.snapshot.multi_get_cf_opt(keys, ReadOptions::default()).into_iter().map(|value| Ok(value?)).collect()
    }

    fn cursor(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Box<dyn Cursor + '_> {
        no_perf_counters();
        let mut ro = ReadOptions::default();
        // Never a prefix filter on a seek's target (see `engine_options`).
        ro.set_total_order_seek(true);
        let lower = prefixed(ks, lower);
        let upper = match upper {
            Some(u) => prefixed(ks, u),
            None => vec![ks.0 + 1],
        };
        ro.set_iterate_lower_bound(lower);
        ro.set_iterate_upper_bound(upper);
        Box::new(RocksCursor { iter: self.snapshot.raw_iterator_cf_opt(self.families.of_keyspace(ks), ro), seek_key: Vec::new(), ks })
    }

    fn approximate_bytes(&self, ks: Keyspace, lower: &[u8], upper: Option<&[u8]>) -> Option<u64> {
        let lower = prefixed(ks, lower);
        let upper = match upper {
            Some(u) => prefixed(ks, u),
            None => vec![ks.0 + 1],
        };
        self.db.get_approximate_sizes_cf(self.families.of_keyspace(ks), &[rocksdb::Range::new(&lower, &upper)]).first().copied()
    }
}

struct RocksCursor<'a> {
    iter: DBRawIteratorWithThreadMode<'a, DB>,
    seek_key: Vec<u8>,
    ks: Keyspace,
}

impl RocksCursor<'_> {
    fn with_prefix(&mut self, key: &[u8]) -> &[u8] {
        self.seek_key.clear();
        self.seek_key.push(self.ks.0);
        self.seek_key.extend_from_slice(key);
        &self.seek_key
    }
}

impl Cursor for RocksCursor<'_> {
    fn seek(&mut self, key: &[u8]) {
        self.with_prefix(key);
        self.iter.seek(&self.seek_key);
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        self.with_prefix(key);
        self.iter.seek_for_prev(&self.seek_key);
    }
    fn seek_first(&mut self) {
        self.iter.seek_to_first();
    }
    fn seek_last(&mut self) {
        self.iter.seek_to_last();
    }
    fn valid(&self) -> bool {
        self.iter.valid()
    }
    fn key(&self) -> &[u8] {
        &self.iter.key().expect("cursor is valid")[1..]
    }
    fn value(&self) -> &[u8] {
        self.iter.value().expect("cursor is valid")
    }
    fn next(&mut self) {
        self.iter.next()
    }
    fn prev(&mut self) {
        self.iter.prev()
    }
    fn status(&self) -> Result<()> {
        Ok(self.iter.status()?)
    }
}

struct RocksRunWriter {
    writer: SstFileWriter<'static>,
    _options: Arc<Options>,
    path: PathBuf,
    ks: Keyspace,
    opened: bool,
    len: u64,
    key: Vec<u8>,
}

impl SortedRunWriter for RocksRunWriter {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if !self.opened {
            self.writer.open(&self.path)?;
            self.opened = true;
        }
        self.key.clear();
        self.key.push(self.ks.0);
        self.key.extend_from_slice(key);
        self.writer.put(&self.key, value)?;
        self.len += 1;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn finish(mut self: Box<Self>) -> Result<SortedRun> {
        if !self.opened {
            return Ok(SortedRun::Empty);
        }
        self.writer.finish()?;
        Ok(SortedRun::File { path: self.path.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n).map(|i| (i.to_be_bytes().to_vec(), format!("value {i} of a run that compresses well").into_bytes())).collect()
    }

    fn flush(backend: &RocksBackend) {
        for cf in backend.families.all() {
            backend.db.flush_cf(cf).unwrap();
        }
    }

    fn read_all(backend: &RocksBackend, ks: Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
        let snapshot = backend.snapshot().unwrap();
        let mut cursor = snapshot.cursor(ks, &[], None);
        cursor.seek_first();
        let mut out = Vec::new();
        while cursor.valid() {
            out.push((cursor.key().to_vec(), cursor.value().to_vec()));
            cursor.next();
        }
        cursor.status().unwrap();
        out
    }

    /// Each block records its compression: a store written under one
    /// setting (ingested runs and committed batches) reads back whole under
    /// every other, and after a compaction under another. The setting takes
    /// effect: uncompressed files are the largest.
    #[test]
    fn a_store_written_with_one_compression_reads_and_compacts_under_every_other() {
        let settings = [(Compression::None, 1 << 10), (Compression::Lz4, 4 << 10), (Compression::Zstd, 16 << 10)];
        let mut sizes = Vec::new();
        for (written, block_bytes) in settings {
            let dir = tempfile::tempdir().unwrap();
            let tuning = RocksOptions { compression: written, block_bytes, ..RocksOptions::default() };
            let mut expected = entries(20_000);
            {
                let backend = RocksBackend::open(dir.path(), &tuning).unwrap();
                let mut run = backend.sorted_run_writer(Keyspace(7)).unwrap();
                for (k, v) in &expected {
                    run.put(k, v).unwrap();
                }
                backend.ingest(vec![run.finish().unwrap()]).unwrap();
                let mut batch = WriteBatch::default();
                for i in 20_000u32..20_100 {
                    let (k, v) = (i.to_be_bytes().to_vec(), b"committed".to_vec());
                    batch.put(Keyspace(7), &k, &v);
                    expected.push((k, v));
                }
                backend.commit(batch).unwrap();
                sizes.push(backend.size_on_disk().unwrap());
            }
            for (read, _) in settings {
                let backend = RocksBackend::open(dir.path(), &RocksOptions { compression: read, ..RocksOptions::default() }).unwrap();
                assert_eq!(read_all(&backend, Keyspace(7)), expected, "written {written:?}, read {read:?}");
                backend.compact().unwrap();
                assert_eq!(read_all(&backend, Keyspace(7)), expected, "written {written:?}, compacted {read:?}");
            }
        }
        assert!(sizes[0] > 2 * sizes[2], "uncompressed {} bytes against ZSTD's {}", sizes[0], sizes[2]);
    }

    /// Keys committed by transactions over loaded ones are settled below
    /// level 0 (a read then searches one level), and every key is still
    /// there, committed or loaded.
    #[test]
    fn settled_keyspaces_leave_level0_and_keep_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let backend = RocksBackend::open(dir.path(), &RocksOptions::default()).unwrap();
        let loaded = entries(10_000);
        let mut run = backend.sorted_run_writer(Keyspace(7)).unwrap();
        for (k, v) in &loaded {
            run.put(k, v).unwrap();
        }
        backend.ingest(vec![run.finish().unwrap()]).unwrap();
        let mut batch = WriteBatch::default();
        for ks in [30, 31] {
            for (k, v) in &entries(1_000) {
                batch.put(Keyspace(ks), k, v);
            }
        }
        backend.commit(batch).unwrap();
        flush(&backend);
        let level0 = || backend.level0_files();
        assert_eq!(level0(), 1);
        backend.settle(Keyspace(30), Keyspace(35)).unwrap();
        assert_eq!(level0(), 0);
        assert_eq!(read_all(&backend, Keyspace(7)), loaded);
        for ks in [30, 31] {
            assert_eq!(read_all(&backend, Keyspace(ks)), entries(1_000));
        }
    }

    /// In the keyspaces the memtable filters, and in the others, every key
    /// is found by a point read and by a scan starting from a key that is
    /// not there, while the keys are in the memtable and after its flush;
    /// absent keys are absent. (A scan asking the filter about its
    /// starting key would find nothing after it.)
    #[test]
    fn memtable_filter_hides_no_key_from_reads_or_scans() {
        let dir = tempfile::tempdir().unwrap();
        let backend = RocksBackend::open(dir.path(), &RocksOptions::default()).unwrap();
        let keyspaces = [crate::MEMTABLE_FILTERED[0], crate::MEMTABLE_FILTERED[1], Keyspace(10)];
        // Enough writes first that new memtables get their filter.
        let filler = vec![7u8; 1 << 16];
        let mut batch = WriteBatch::default();
        for i in 0..=(MEMTABLE_FILTER_AFTER_BYTES >> 16) {
            batch.put(Keyspace(11), &i.to_be_bytes(), &filler);
        }
        backend.commit(batch).unwrap();
        assert!(backend.memtable_filter_on());
        // Even numbers only: the odd ones are the absent keys.
        let key = |i: u32| format!("key-{:06}", 2 * i).into_bytes();
        let mut batch = WriteBatch::default();
        for ks in keyspaces {
            for i in 0..2_000 {
                batch.put(ks, &key(i), &i.to_be_bytes());
            }
        }
        backend.commit(batch).unwrap();
        for flushed in [false, true] {
            if flushed {
                flush(&backend);
            }
            let snapshot = backend.snapshot().unwrap();
            for ks in keyspaces {
                for i in (0..2_000).step_by(7) {
                    assert_eq!(snapshot.get(ks, &key(i)).unwrap(), Some(i.to_be_bytes().to_vec()), "{ks:?} key {i}, flushed {flushed}");
                    let absent = format!("key-{:06}", 2 * i + 1).into_bytes();
                    assert_eq!(snapshot.get(ks, &absent).unwrap(), None, "{ks:?} absent key {i}, flushed {flushed}");
                    // A scan from the absent key finds the next one.
                    let mut cursor = snapshot.cursor(ks, &absent, None);
                    cursor.seek_first();
                    let next = (i + 1 < 2_000).then(|| key(i + 1));
                    assert_eq!(cursor.valid().then(|| cursor.key().to_vec()), next, "{ks:?} scan from absent key {i}, flushed {flushed}");
                    let mut cursor = snapshot.cursor(ks, b"", None);
                    cursor.seek(&absent);
                    assert_eq!(cursor.valid().then(|| cursor.key().to_vec()), next, "{ks:?} seek to absent key {i}, flushed {flushed}");
                }
            }
        }
    }

    /// Disk blocks (not the apparent size: RocksDB preallocates with
    /// `FALLOC_FL_KEEP_SIZE`) of every file under `path`.
    fn allocated_bytes(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .map(|e| {
                let meta = e.metadata().unwrap();
                if meta.is_dir() { allocated_bytes(&e.path()) } else { meta.blocks() * 512 }
            })
            .sum()
    }

    /// A store with a little data costs little: its write-ahead log and
    /// manifest are not preallocated tens of MiB ahead, and its memtable
    /// has no filter allocated until the store is written to. Before,
    /// every database took 76 MB of disk and 3.5 MB of memory.
    #[test]
    fn a_small_store_preallocates_little_disk_or_memory() {
        let dir = tempfile::tempdir().unwrap();
        let backend = RocksBackend::open(dir.path(), &RocksOptions::default()).unwrap();
        let mut batch = WriteBatch::default();
        for (k, v) in entries(100) {
            batch.put(Keyspace(7), &k, &v);
        }
        backend.commit(batch).unwrap();
        let disk = allocated_bytes(dir.path());
        assert!(disk < 2 << 20, "{disk} bytes of disk for 100 small keys");
        let memtables = backend.db.property_int_value("rocksdb.size-all-mem-tables").unwrap().unwrap();
        // One arena block (1 MiB, touched as it fills), no filter.
        assert!(memtables < 2 << 20, "{memtables} bytes of memtables for 100 small keys");
        assert!(!backend.memtable_filter_on());
    }

    /// Stores opened with one cache size share one block cache (the
    /// setting bounds the process, not each store), and each still reads
    /// its own blocks: the same keys, flushed in two stores with different
    /// values, read back as written in each.
    #[test]
    fn stores_share_one_block_cache_and_read_their_own_blocks() {
        // A size no other test uses: its cache is this test's alone.
        let options = RocksOptions { block_cache_bytes: (3 << 20) + 4096, ..RocksOptions::default() };
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = RocksBackend::open(dir_a.path(), &options).unwrap();
        let b = RocksBackend::open(dir_b.path(), &options).unwrap();
        let usage = |store: &RocksBackend| store.db.property_int_value("rocksdb.block-cache-usage").unwrap().unwrap();
        let write = |store: &RocksBackend, value: &[u8]| {
            let mut batch = WriteBatch::default();
            for (k, _) in entries(5_000) {
                batch.put(Keyspace(7), &k, value);
            }
            store.commit(batch).unwrap();
            flush(store);
        };
        let read = |store: &RocksBackend| read_all(store, Keyspace(7)).into_iter().map(|(_, v)| v).collect::<std::collections::BTreeSet<_>>();
        write(&a, b"in a");
        assert_eq!(read(&a), [b"in a".to_vec()].into());
        // Store b has no table file yet: what its cache holds is a's.
        assert!(usage(&a) > 0);
        assert_eq!(usage(&b), usage(&a), "one cache");
        write(&b, b"in b");
        assert_eq!(read(&b), [b"in b".to_vec()].into());
        assert_eq!(read(&a), [b"in a".to_vec()].into());
    }

    /// A store made as before the documents' column family (every
    /// keyspace in the default one, some keys flushed, some only in the
    /// log) is read in place when opened read-only, and moved when opened
    /// for writing: every key reads back as written, the default family
    /// keeps none of the documents', writes go on, and a move killed after
    /// copying (the copy there with a stale key of its own, the documents
    /// still in the default family) is redone whole at the next open.
    #[test]
    fn a_store_made_before_the_documents_family_is_read_in_place_and_moved_when_opened_for_writing() {
        let keyspaces = [Keyspace(2), Keyspace(30), Keyspace(31), Keyspace(39), Keyspace(40)];
        let tuning = RocksOptions::default();
        for killed_after_copying in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            {
                let mut options = engine_options(&tuning);
                options.create_missing_column_families(true);
                let mut families = vec![ColumnFamilyDescriptor::new("default", engine_options(&tuning))];
                if killed_after_copying {
                    families.push(ColumnFamilyDescriptor::new(DOCUMENTS_FAMILY, documents_options(&tuning)));
                }
                let db = DB::open_cf_descriptors(&options, dir.path(), families).unwrap();
                let default = db.cf_handle("default").unwrap();
                for (half, (start, end)) in [(0u32, 1_500u32), (1_500, 3_000)].into_iter().enumerate() {
                    for ks in keyspaces {
                        for (k, v) in &entries(end)[start as usize..] {
                            db.put_cf(default, prefixed(ks, k), v).unwrap();
                        }
                    }
                    if half == 0 {
                        db.flush_cf(default).unwrap();
                    }
                }
                if killed_after_copying {
                    let documents = db.cf_handle(DOCUMENTS_FAMILY).unwrap();
                    db.put_cf(documents, prefixed(Keyspace(30), b"stale"), b"left by a killed move").unwrap();
                    db.put_cf(documents, prefixed(Keyspace(31), &0u32.to_be_bytes()), b"stale").unwrap();
                }
            }
            {
                let backend = RocksBackend::open_read_only(dir.path(), &tuning).unwrap();
                assert!(!backend.families.separate, "read where the documents are");
                for ks in keyspaces {
                    assert_eq!(read_all(&backend, ks), entries(3_000), "{ks:?} read-only, before the move");
                }
            }
            {
                let backend = RocksBackend::open(dir.path(), &tuning).unwrap();
                assert!(backend.families.separate);
                assert!(!holds_documents(&backend.db, backend.families.default).unwrap());
                for ks in keyspaces {
                    assert_eq!(read_all(&backend, ks), entries(3_000), "{ks:?} after the move");
                }
                let mut batch = WriteBatch::default();
                batch.put(Keyspace(30), b"new", b"written after the move");
                backend.commit(batch).unwrap();
            }
            let backend = RocksBackend::open_read_only(dir.path(), &tuning).unwrap();
            assert!(backend.families.separate);
            let snapshot = backend.snapshot().unwrap();
            assert_eq!(snapshot.get(Keyspace(30), b"new").unwrap(), Some(b"written after the move".to_vec()));
            assert_eq!(snapshot.get(Keyspace(30), b"stale").unwrap(), None);
            assert_eq!(read_all(&backend, Keyspace(31)), entries(3_000));
        }
    }

    /// Documents' keyspaces land in their own family with LZ4 blocks,
    /// the others in the default family with ZSTD at the bottom.
    #[test]
    fn documents_are_lz4_and_the_rest_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let backend = RocksBackend::open(dir.path(), &RocksOptions::default()).unwrap();
        for ks in [Keyspace(2), Keyspace(30)] {
            let mut run = backend.sorted_run_writer(ks).unwrap();
            for (k, v) in &entries(20_000) {
                run.put(k, v).unwrap();
            }
            backend.ingest(vec![run.finish().unwrap()]).unwrap();
        }
        let mut batch = WriteBatch::default();
        for ks in [Keyspace(2), Keyspace(30)] {
            batch.put(ks, b"committed", b"too");
        }
        backend.commit(batch).unwrap();
        backend.compact().unwrap();
        // The same keys and values in each: ZSTD's file is the smaller.
        let bytes = |family: &str| backend.db.live_files().unwrap().iter().filter(|f| f.column_family_name == family).map(|f| f.size).sum::<usize>();
        let (zstd, lz4) = (bytes("default"), bytes(DOCUMENTS_FAMILY));
        assert!(zstd > 0 && lz4 > zstd, "default family {zstd} bytes, documents' {lz4}");
        for ks in [Keyspace(2), Keyspace(30)] {
            let mut expected = entries(20_000);
            expected.push((b"committed".to_vec(), b"too".to_vec()));
            expected.sort();
            assert_eq!(read_all(&backend, ks), expected);
        }
        let mut runs = Vec::new();
        for ks in [Keyspace(2), Keyspace(30)] {
            let mut run = backend.sorted_run_writer(ks).unwrap();
            run.put(b"mixed", b"").unwrap();
            runs.push(run.finish().unwrap());
        }
        assert!(backend.ingest(runs).is_err(), "an ingestion across families would not be atomic");
    }

    /// Loads whose keys fall among keys already stored land on level 0;
    /// a load waits for compaction rather than leave level 0 deeper than
    /// the limit (every lookup probes each of its files), and nothing
    /// loaded is lost on the way.
    #[test]
    fn repeated_overlapping_loads_keep_level0_shallow() {
        let dir = tempfile::tempdir().unwrap();
        // Compaction on one thread, as on a busy machine.
        let backend = RocksBackend::open(dir.path(), &RocksOptions { background_jobs: 1, ..RocksOptions::default() }).unwrap();
        let (runs, per_run) = (2 * LEVEL0_LOAD_LIMIT as u32, 5_000u32);
        let mut deepest = 0;
        for r in 0..runs {
            // Run r holds keys r, r + runs, r + 2 runs, ...: each spans the
            // whole key range so far.
            let mut run = backend.sorted_run_writer(Keyspace(3)).unwrap();
            for k in 0..per_run {
                run.put(&(k * runs + r).to_be_bytes(), b"").unwrap();
            }
            backend.ingest(vec![run.finish().unwrap()]).unwrap();
            deepest = deepest.max(backend.level0_files());
        }
        assert!(deepest <= LEVEL0_LOAD_LIMIT, "level 0 reached {deepest} files");
        let keys: Vec<u32> = read_all(&backend, Keyspace(3)).iter().map(|(k, _)| u32::from_be_bytes(k[..].try_into().unwrap())).collect();
        assert_eq!(keys, (0..runs * per_run).collect::<Vec<_>>());
    }
}
