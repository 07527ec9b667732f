//! View indexes in the database's own store, kept up to date from its
//! sequence.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `VIEW_ROWS` 40 | signature (8), view number (1), collated key, collated doc id, emit number (u32 BE) | `[key, doc id, value]` as JSON |
//! | `VIEW_DOC_ROWS` 41 | signature (8), doc id | the document's row keys, each length-prefixed (u32 BE) |
//! | `VIEW_STATE` 42 | signature (8) | `{"seq", "ddoc", "rows": [per view], "ranked"}` as JSON |
//! | `VIEW_RANKS` 43 | signature (8), view number (1), fence | rows from the fence to the next (`rank.rs`), their first and last keys and reduction (`bucket_summary.rs`) |
//!
//! Rows sort as CouchDB's: by key in CouchDB's collation
//! (`rhizome_docs::collate`), then by document id. An index is named by its
//! design document's signature, so editing a design document without
//! changing its views keeps the index, and two design documents with the
//! same views share one. [`refresh`] brings an index to the database's
//! sequence from the documents changed since, in batches of at most
//! [`BATCH`] documents (and 16 MiB of rows): each is mapped from a
//! snapshot, on two cores, without the database's writer, and written in one short
//! transaction, so memory stays bounded, no write waits for JavaScript, and
//! a restart resumes from the last batch written. An index with none
//! built yet is written otherwise, as sorted runs ingested at once
//! (`bulk_build.rs`): a kill before the ingestion leaves no index.

use crate::design::{compilation, DesignDoc, DesignError};
use crate::js::native_map::NativeMap;
use crate::js::{FnId, JsError, Limits, Sandbox};
use crate::rank::{self, RankUpdate, VIEW_RANKS};
use crate::tasks::IndexerTask;
use rhizome_docs::keys::{self, DB_META};
use rhizome_docs::secondary::IndexSpaces;
use rhizome_docs::selector::raw_compare;
use rhizome_docs::{collate, Database, DocError, ReadOptions};
use rhizome_kv::{Keyspace, KvRead};
use serde_json::{json, Value};

pub const VIEW_ROWS: Keyspace = Keyspace(40);
pub const VIEW_DOC_ROWS: Keyspace = Keyspace(41);
pub const VIEW_STATE: Keyspace = Keyspace(42);

/// Documents per transaction while an index catches up.
pub const BATCH: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Doc(#[from] DocError),
    #[error(transparent)]
    Design(#[from] DesignError),
    /// A function ran past its limits: CouchDB's `os_process_error`.
    #[error("{0}")]
    Process(String),
    /// CouchDB's `query_parse_error` (400).
    #[error("{0}")]
    Query(String),
    /// CouchDB's `invalid_value` from a built-in reduce.
    #[error("{0}")]
    InvalidValue(String),
    #[error("{0}")]
    NotFound(String),
}

impl From<rhizome_kv::Error> for ViewError {
    fn from(e: rhizome_kv::Error) -> Self {
        ViewError::Doc(DocError::from(e))
    }
}

impl From<rhizome_rdf::Error> for ViewError {
    fn from(e: rhizome_rdf::Error) -> Self {
        ViewError::Doc(DocError::from(e))
    }
}

pub(crate) fn process_error(e: JsError) -> ViewError {
    ViewError::Process(e.to_string())
}

/// An index's short name in its keys: the first 8 bytes of the signature.
pub fn index_id(ddoc: &DesignDoc) -> [u8; 8] {
    ddoc.signature()[..8].try_into().expect("8 of 16 bytes")
}

/// What `VIEW_STATE` keeps of an index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexState {
    pub seq: u64,
    pub ddoc: String,
    /// Rows per view, in the design document's view order.
    pub rows: Vec<u64>,
    /// Whether the index has its row counts by key range (`rank.rs`);
    /// indexes built before them get them at their next update.
    pub ranked: bool,
    /// Drawn when the index is created (0: an index written before
    /// nonces, given one at its next update): with `seq`, it names one
    /// state of this index among every database's, for caches of it.
    pub nonce: u64,
}

impl IndexState {
    pub fn read(kv: &dyn KvRead, id: &[u8; 8]) -> Result<Option<IndexState>, ViewError> {
        let Some(bytes) = kv.get(VIEW_STATE, id)? else { return Ok(None) };
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| DocError::Corrupt(format!("view index state: {e}")))?;
        Ok(Some(IndexState {
            seq: v["seq"].as_u64().unwrap_or(0),
            ddoc: v["ddoc"].as_str().unwrap_or_default().to_owned(),
            rows: v["rows"].as_array().map(|a| a.iter().map(|n| n.as_u64().unwrap_or(0)).collect()).unwrap_or_default(),
            ranked: v["ranked"].as_bool().unwrap_or(false),
            nonce: v["nonce"].as_u64().unwrap_or(0),
        }))
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        json!({ "seq": self.seq, "ddoc": self.ddoc, "rows": self.rows, "ranked": self.ranked, "nonce": self.nonce }).to_string().into_bytes()
    }
}

/// A nonce for a new index: the clock and a process-wide counter, mixed
/// by std's randomly keyed hasher (never 0).
pub(crate) fn fresh_nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.finish().max(1)
}

pub(crate) fn update_seq(kv: &dyn KvRead) -> Result<u64, ViewError> {
    Ok(keys::u64_value(kv.get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?)
}

/// The first key of a view's rows: signature, view number.
pub fn view_prefix(id: &[u8; 8], view: usize) -> Vec<u8> {
    let mut p = id.to_vec();
    p.push(view as u8);
    p
}

/// The compiled map functions of a design document: each distinct map
/// source once, as CouchDB's `couch_mrview` groups views by their map
/// function (views that differ only in their reduce share one map run,
/// and so one set of rows per document).
pub(crate) struct Mapper {
    pub sandbox: Sandbox,
    fns: Vec<FnId>,
    /// For each view, in the design document's order, its entry of `fns`.
    slots: Vec<usize>,
    /// `fns` evaluated without JavaScript, when every one of them has a
    /// shape that allows it (`js::native_map`): the sandbox then maps
    /// only the documents these leave to it.
    native: Option<Vec<NativeMap>>,
}

impl Mapper {
    pub fn new(ddoc: &DesignDoc, limits: Limits) -> Result<Mapper, ViewError> {
        let mut sandbox = Sandbox::new(limits).map_err(process_error)?;
        let mut fns = Vec::with_capacity(ddoc.views.len());
        let mut slots = Vec::with_capacity(ddoc.views.len());
        let mut native = Some(Vec::new());
        for (n, v) in ddoc.views.iter().enumerate() {
            if let Some(same) = ddoc.views[..n].iter().position(|w| w.map == v.map) {
                slots.push(slots[same]);
                continue;
            }
            fns.push(sandbox.compile(&v.map, &ddoc.map_modules).map_err(|e| compilation("map", &v.name, e))?);
            slots.push(fns.len() - 1);
            native = native.and_then(|mut all: Vec<NativeMap>| {
                all.push(NativeMap::parse(&v.map)?);
                Some(all)
            });
        }
        Ok(Mapper { sandbox, fns, slots, native })
    }

    /// What each map function emits for the document `text`, and whether
    /// the sandbox ran (its logs are then to be taken): natively when
    /// every function is native and the document is one they can map
    /// exactly, else in the sandbox.
    #[allow(clippy::type_complexity)]
    fn map(&mut self, text: &str) -> Result<(Vec<Result<Vec<(Value, Value)>, String>>, bool), ViewError> {
        if let Some(native) = &self.native {
            if let Ok(doc) = serde_json::from_str::<Value>(text) {
                if let Some(rows) = native.iter().map(|f| f.map(&doc).map(Ok)).collect::<Option<Vec<_>>>() {
                    return Ok((rows, false));
                }
            }
        }
        Ok((self.sandbox.map(&self.fns, text).map_err(process_error)?, true))
    }
}

/// Brings the index of `ddoc` to the database's current sequence.
/// `limits` bound each map call; a function that throws for a document
/// leaves that document out of that view (logged, as CouchDB does); one
/// that runs past its limits fails the update (`os_process_error`).
pub fn refresh(db: &Database, db_name: &str, ddoc: &DesignDoc, limits: Limits) -> Result<IndexState, ViewError> {
    refresh_with(db, db_name, ddoc, limits, BuildPath::Bulk)
}

/// How [`refresh_with`] builds an index that has none yet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BuildPath {
    /// As sorted runs ingested at once (`bulk_build.rs`), from
    /// [`crate::bulk_build::BULK_MIN_CHANGES`] changes on a store that
    /// adopts files.
    Bulk,
    /// Batch by batch through transactions, as every later update is
    /// (tests compare the two).
    #[cfg_attr(not(test), allow(dead_code))]
    Transactions,
}

pub(crate) fn refresh_with(db: &Database, db_name: &str, ddoc: &DesignDoc, limits: Limits, path: BuildPath) -> Result<IndexState, ViewError> {
    // An index takes as long as it takes to build (each map call within
    // its own limit, each batch saved as it is written), but stops when
    // the client that asked for it goes away: the request's time budget
    // does not apply, its cancellation does.
    let _bounds = crate::js::RequestBounds { deadline: None, ..crate::js::RequestBounds::current() }.enter();
    let id = index_id(ddoc);
    {
        // Checked on a snapshot first: a query on an index that is up to
        // date neither waits for nor blocks writers.
        let s = db.store().snapshot()?;
        let state = IndexState::read(s.kv(), &id)?;
        if let Some(state) = state {
            if state.seq >= update_seq(s.kv())? {
                return Ok(state);
            }
        }
    }
    let mut mapper: Option<Mapper> = None;
    let mut task: Option<IndexerTask> = None;
    // Tried once: a race lost leaves an index there for transactions.
    let mut bulk = path == BuildPath::Bulk && !db.store().is_shared();
    loop {
        // Map a batch from a snapshot, without the writer: a slow map
        // function holds back no write (a plain write waited 4-39 s behind
        // a runaway one), then write its rows in a short transaction.
        let snapshot = db.store().snapshot()?;
        let target = update_seq(snapshot.kv())?;
        let stored = IndexState::read(snapshot.kv(), &id)?;
        let fresh = stored.is_none();
        let mut state = stored.unwrap_or_else(|| IndexState { seq: 0, ddoc: ddoc.id.clone(), rows: vec![0; ddoc.views.len()], ranked: false, nonce: 0 });
        state.rows.resize(ddoc.views.len(), 0);
        if state.seq >= target {
            return Ok(state);
        }
        let from = state.seq;
        let task = &*task.get_or_insert_with(|| IndexerTask::start(db_name, &ddoc.id, from, target));
        if std::mem::take(&mut bulk) && fresh && target >= crate::bulk_build::BULK_MIN_CHANGES {
            drop(snapshot);
            let mapper = match &mut mapper {
                Some(m) => m,
                None => mapper.insert(Mapper::new(ddoc, limits)?),
            };
            if let crate::bulk_build::Built::Ingested(state) = crate::bulk_build::build(db, db_name, ddoc, mapper, limits, task)? {
                task.progress(state.seq);
            }
            continue;
        }
        let (batch, reached) = rhizome_docs::secondary::changed_since(snapshot.kv(), from, target, BATCH)?;
        let mapper = match &mut mapper {
            Some(m) => m,
            None => mapper.insert(Mapper::new(ddoc, limits)?),
        };
        let mapped = map_on_cores(db, db_name, ddoc, &id, mapper, limits, &snapshot, &batch, reached)?;
        drop(snapshot);
        if mapped.reached >= target {
            // The last batch (most updates have one): written here.
            if let Written::Reached(seq) = write_batch(db, ddoc, &id, from, mapped)? {
                task.progress(seq);
            }
            continue;
        }
        // More batches: each is written on a thread of its own while the
        // next is mapped, in order, each in its own transaction as one
        // thread writing them would (a kill leaves the index at the last
        // batch written). A commit (a third of a batch's time) no longer
        // leaves a core idle.
        std::thread::scope(|scope| -> Result<(), ViewError> {
            // At most one batch waits for the writer (and one is written):
            // memory stays bounded.
            let (send, receive) = std::sync::mpsc::sync_channel::<(u64, MappedBatch)>(0);
            let writer = scope.spawn(move || -> Result<(), ViewError> {
                for (from, mapped) in receive {
                    match write_batch(db, ddoc, &id, from, mapped)? {
                        Written::Reached(seq) => task.progress(seq),
                        // Another refresh wrote it meanwhile: start again from where it got.
                        Written::Raced => return Ok(()),
                    }
                }
                Ok(())
            });
            let mut next = (from, mapped);
            let mapping = (|| -> Result<(), ViewError> {
                loop {
                    let from = next.1.reached;
                    if send.send(next).is_err() {
                        return Ok(()); // The writer stopped (raced or failed).
                    }
                    let snapshot = db.store().snapshot()?;
                    let target = update_seq(snapshot.kv())?;
                    if from >= target {
                        return Ok(());
                    }
                    let (batch, reached) = rhizome_docs::secondary::changed_since(snapshot.kv(), from, target, BATCH)?;
                    next = (from, map_on_cores(db, db_name, ddoc, &id, mapper, limits, &snapshot, &batch, reached)?);
                }
            })();
            drop(send);
            // The batches mapped before a failing one are written first, as
            // one thread would; the writer's error comes first.
            writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            mapping
        })?;
    }
}

/// What [`write_batch`] did.
enum Written {
    /// The batch is written: the index is at this sequence.
    Reached(u64),
    /// The index was not at the batch's first sequence (another refresh
    /// wrote it meanwhile): nothing written.
    Raced,
}

/// Writes the rows of `mapped`, mapped from sequence `from`, in one
/// transaction: the documents' old rows removed, the new ones put, the
/// rank buckets and the index's state updated.
fn write_batch(db: &Database, ddoc: &DesignDoc, id: &[u8; 8], from: u64, mapped: MappedBatch) -> Result<Written, ViewError> {
    let id = *id;
    let mut txn = db.store().transaction()?;
    let mut state = IndexState::read(txn.kv(), &id)?.unwrap_or_else(|| IndexState { seq: 0, ddoc: ddoc.id.clone(), rows: vec![0; ddoc.views.len()], ranked: false, nonce: 0 });
    if state.seq != from {
        return Ok(Written::Raced);
    }
    state.rows.resize(ddoc.views.len(), 0);
    if !state.ranked {
        let mut buckets = Vec::new();
        rank::build(txn.kv(), &id, |k, v| buckets.push((k.to_vec(), v.to_vec())))?;
        for (k, v) in buckets {
            txn.kv_mut().put(VIEW_RANKS, &k, &v);
        }
        state.ranked = true;
    }
    // Which documents have rows from before, for the whole batch in one
    // walk: a point read per document, mostly of a key that is not
    // there (a first build), was a tenth of a build's instructions.
    let doc_rows_keys: Vec<Vec<u8>> = mapped.docs.iter().map(|doc| doc_rows_key(&id, &doc.id)).collect();
    txn.kv_mut().find_absent(VIEW_DOC_ROWS, doc_rows_keys.clone())?;
    let mut ranks = RankUpdate::new(id, ddoc.views.iter().map(|v| v.reduce.as_deref().and_then(crate::reduce::builtin)).collect());
    for (doc, doc_rows_key) in mapped.docs.iter().zip(doc_rows_keys) {
        if let Some(old) = txn.kv().get(VIEW_DOC_ROWS, &doc_rows_key)? {
            for row in split_rows(&old) {
                if let Some(n) = row.get(8).and_then(|v| state.rows.get_mut(*v as usize)) {
                    *n = n.saturating_sub(1);
                }
                ranks.remove(txn.kv(), row)?;
                txn.kv_mut().delete(VIEW_ROWS, row);
            }
            txn.kv_mut().delete(VIEW_DOC_ROWS, &doc_rows_key);
        }
        let mut written: Vec<u8> = Vec::new();
        for (view, row, value) in &doc.rows {
            ranks.add(txn.kv(), row, value)?;
            txn.kv_mut().put(VIEW_ROWS, row, value);
            written.extend_from_slice(&(row.len() as u32).to_be_bytes());
            written.extend_from_slice(row);
            state.rows[*view] += 1;
        }
        if !written.is_empty() {
            txn.kv_mut().put(VIEW_DOC_ROWS, &doc_rows_key, &written);
        }
    }
    let (mut puts, mut deletes) = (Vec::new(), Vec::new());
    ranks.write(txn.kv(), |k, v| puts.push((k.to_vec(), v.to_vec())), |k| deletes.push(k.to_vec()))?;
    for k in deletes {
        txn.kv_mut().delete(VIEW_RANKS, &k);
    }
    for (k, v) in puts {
        txn.kv_mut().put(VIEW_RANKS, &k, &v);
    }
    state.seq = mapped.reached;
    state.ddoc = ddoc.id.clone();
    if state.nonce == 0 {
        state.nonce = fresh_nonce();
    }
    txn.kv_mut().put(VIEW_STATE, &id, &state.to_bytes());
    txn.commit()?;
    Ok(Written::Reached(mapped.reached))
}

/// A document's key in `VIEW_DOC_ROWS`.
pub(crate) fn doc_rows_key(id: &[u8; 8], doc_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + doc_id.len());
    key.extend_from_slice(id);
    key.extend_from_slice(doc_id.as_bytes());
    key
}

/// Bytes of rows a batch maps before it is written (with at most
/// [`BATCH`] documents): a map function that emits a lot does not make a
/// batch hold gigabytes.
const BATCH_ROW_BYTES: usize = 16 << 20;

/// One document's rows, mapped: (view, row key, row value).
pub(crate) struct MappedDoc {
    pub id: String,
    pub rows: Vec<(usize, Vec<u8>, Vec<u8>)>,
}

/// The rows of a batch, and the sequence the index reaches with them.
pub(crate) struct MappedBatch {
    pub docs: Vec<MappedDoc>,
    pub reached: u64,
}

/// Documents under which a batch is mapped on this thread alone (a
/// second sandbox costs its start and compilation).
const PARALLEL_MIN_DOCS: usize = 64;

/// [`map_batch`] on two cores: the batch's first half here, its second
/// in a sandbox of its own on a scoped thread (a runtime is not `Send`),
/// joined in sequence order, so that the rows, the sequence reached and
/// the first error are what one thread mapping the batch gets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn map_on_cores(
    db: &Database,
    db_name: &str,
    ddoc: &DesignDoc,
    id: &[u8; 8],
    mapper: &mut Mapper,
    limits: Limits,
    snapshot: &rhizome_rdf::StoreSnapshot,
    batch: &[(u64, String)],
    reached: u64,
) -> Result<MappedBatch, ViewError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 || batch.len() < PARALLEL_MIN_DOCS {
        return map_batch(db, db_name, ddoc, id, mapper, snapshot, batch, reached, BATCH_ROW_BYTES);
    }
    let (first, second) = batch.split_at(batch.len() / 2);
    let first_reached = first.last().map_or(reached, |d| d.0);
    // The worker keeps this request's cancellation (its thread has none).
    let bounds = crate::js::RequestBounds::current();
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let _bounds = bounds.enter();
            let mut mapper = Mapper::new(ddoc, limits)?;
            map_batch(db, db_name, ddoc, id, &mut mapper, snapshot, second, reached, BATCH_ROW_BYTES / 2)
        });
        let front = map_batch(db, db_name, ddoc, id, mapper, snapshot, first, first_reached, BATCH_ROW_BYTES / 2);
        let back = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let mut front = front?;
        if front.docs.len() < first.len() {
            // Cut by its rows' bytes: the second half waits for the next batch.
            return Ok(front);
        }
        let back = back?;
        front.docs.extend(back.docs);
        front.reached = back.reached;
        Ok(front)
    })
}

/// Maps the documents of `batch` as `snapshot` has them (a document
/// changed since has a later sequence: the next batch maps it again), up
/// to `row_bytes` of rows. Every document of the batch gets an
/// entry, with no rows when it is deleted or emits none, so that its old
/// rows go.
#[allow(clippy::too_many_arguments)]
fn map_batch(
    db: &Database,
    db_name: &str,
    ddoc: &DesignDoc,
    id: &[u8; 8],
    mapper: &mut Mapper,
    snapshot: &rhizome_rdf::StoreSnapshot,
    batch: &[(u64, String)],
    reached: u64,
    row_bytes: usize,
) -> Result<MappedBatch, ViewError> {
    let read = ReadOptions { conflicts: true, ..Default::default() };
    let partitioned = ddoc.is_partitioned(db.is_partitioned());
    let mut docs = Vec::with_capacity(batch.len());
    // The batch's documents are those of consecutive sequences, mostly
    // neighbours by id too: read by cursors stepping along.
    let mut reader = rhizome_docs::DocReader::new(snapshot);
    let mut bytes = 0;
    for (n, (seq, doc_id)) in batch.iter().enumerate() {
        if bytes >= row_bytes {
            // Written up to the previous document: its sequence is reached.
            return Ok(MappedBatch { docs, reached: batch[n - 1].0 });
        }
        let _ = seq;
        let mut mapped = MappedDoc { id: doc_id.clone(), rows: Vec::new() };
        if doc_id.starts_with("_design/") && !ddoc.include_design {
            docs.push(mapped);
            continue;
        }
        // The body as JSON text for the sandbox, copied as stored (a
        // parse into a map and its serialization again were a fifth of a
        // build); a deleted or missing document has no rows.
        let doc = match reader.winner_bytes(doc_id, &read) {
            Ok((_, bytes)) => String::from_utf8(bytes).map_err(|e| DocError::Corrupt(format!("document {doc_id}: {e}")))?,
            Err(DocError::NotFound(_)) => {
                docs.push(mapped);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let (results, in_sandbox) = mapper.map(&doc)?;
        let id_key = collate::encode(&Value::String(doc_id.clone()));
        for (view, &slot) in mapper.slots.iter().enumerate() {
            let rows = match &results[slot] {
                Ok(rows) => rows,
                Err(message) => {
                    eprintln!("{}", json!({ "log": "map function threw", "db": db_name, "ddoc": ddoc.id, "view": ddoc.views[view].name, "doc": doc_id, "error": message }));
                    continue;
                }
            };
            // A document's rows in Erlang's order of (key, value), as
            // couch_mrview_updater sorts them (`lists:sort`) before
            // grouping a key's values: one key's values come out sorted.
            let mut rows: Vec<&(Value, Value)> = rows.iter().collect();
            rows.sort_by(|a, b| raw_compare(&a.0, &b.0).then_with(|| raw_compare(&a.1, &b.1)));
            for (k, (key, value)) in rows.into_iter().enumerate() {
                let mut row = view_prefix(id, view);
                // A partitioned view's rows: the partition first, so that a
                // partition's query is one range of them.
                if partitioned {
                    let Some(partition) = rhizome_docs::partition_of(doc_id) else { continue };
                    collate::encode_into(&Value::String(partition.to_owned()), &mut row);
                }
                collate::encode_into(key, &mut row);
                row.extend_from_slice(&id_key);
                row.extend_from_slice(&(k as u32).to_be_bytes());
                // `[key, doc id, value]`, written straight from the
                // emitted values (a tuple is a JSON array).
                let value = serde_json::to_vec(&(key, doc_id, value)).map_err(|e| ViewError::Process(format!("emitted value: {e}")))?;
                bytes += row.len() + value.len();
                mapped.rows.push((view, row, value));
            }
        }
        for line in if in_sandbox { mapper.sandbox.take_logs() } else { Vec::new() } {
            eprintln!("{}", json!({ "log": "view", "db": db_name, "ddoc": ddoc.id, "doc": doc_id, "message": line }));
        }
        docs.push(mapped);
    }
    Ok(MappedBatch { docs, reached })
}

fn split_rows(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        let row = bytes.get(4..4 + len)?;
        bytes = &bytes[4 + len..];
        Some(row)
    })
}

/// Where views keep their state and rows.
const VIEW_SPACES: IndexSpaces = IndexSpaces { state: VIEW_STATE, rows: &[VIEW_ROWS, VIEW_DOC_ROWS, VIEW_RANKS] };

/// Removes the indexes of signatures no design document uses now
/// (`POST /{db}/_view_cleanup`); returns how many.
pub fn cleanup(db: &Database, live: &[DesignDoc]) -> Result<usize, ViewError> {
    let ids: Vec<[u8; 8]> = live.iter().map(index_id).collect();
    let live: Vec<&[u8]> = ids.iter().map(|i| &i[..]).collect();
    let stale = {
        let s = db.store().snapshot()?;
        VIEW_SPACES.stale(s.kv(), &live)?
    };
    db.drop_indexes(&VIEW_SPACES, &stale)?;
    Ok(stale.len())
}

/// Bytes of an index's rows as stored (for `_info`'s `sizes`).
pub fn index_bytes(db: &Database, id: &[u8; 8]) -> Result<u64, ViewError> {
    let s = db.store().snapshot()?;
    let upper = rhizome_kv::prefix_upper_bound(id);
    let mut total = 0u64;
    for ks in [VIEW_ROWS, VIEW_DOC_ROWS] {
        let mut cursor = s.kv().cursor(ks, id, upper.as_deref());
        cursor.seek_first();
        while cursor.valid() {
            total += (cursor.key().len() + cursor.value().len()) as u64;
            cursor.next();
        }
        cursor.status()?;
    }
    Ok(total)
}
