//! A view index built from nothing as sorted runs ingested at once, the
//! way the bulk RDF loader writes, instead of batch after batch of
//! transactions: a transaction-path build spent about 40% of its
//! instructions writing (RocksDB's memtable inserts, the transaction's
//! buffered puts, rank buckets updated batch after batch), and the rows
//! of a first build need none of that: nothing is there to remove or to
//! merge with.
//!
//! The documents are mapped from one snapshot, batch by batch as
//! [`crate::index::refresh`] maps them (on two cores, without the
//! database's writer), their rows kept in memory up to [`BULK_ROW_BYTES`];
//! then sorted, cut into rank buckets with their summaries in one pass
//! (`rank.rs`, `bucket_summary.rs`), written as one run per keyspace with
//! the index's state, and ingested in one step, which is atomic across
//! keyspaces: a kill before it leaves no index (the next query builds it
//! again), after it the whole index at the run's sequence. The documents
//! past the budget, and every later update, go through transactions.
//! Only on a store that adopts files (a cluster's store ingests through
//! one batch commit, which a large build would exceed: it keeps the
//! transaction path).

use crate::bucket_summary::SummaryBuilder;
use crate::design::DesignDoc;
use crate::index::{doc_rows_key, fresh_nonce, map_on_cores, update_seq, IndexState, Mapper, ViewError, BATCH, VIEW_DOC_ROWS, VIEW_ROWS, VIEW_STATE};
use crate::js::Limits;
use crate::rank::{BUCKET_ROWS, MERGE_ROWS, VIEW_RANKS};
use crate::tasks::IndexerTask;
use rhizome_docs::Database;
use rhizome_kv::{KvRead, SortedRun};

/// Changes from which an index with none built yet is built this way
/// (below, a transaction or two cost less than the runs' files).
pub(crate) const BULK_MIN_CHANGES: u64 = BATCH as u64;

/// Bytes of rows (keys, values and their vectors) a bulk build keeps in
/// memory; the documents past them are indexed by transactions after the
/// ingestion. 50,000 documents of three views take about 30 MiB.
const BULK_ROW_BYTES: usize = 256 << 20;

/// What [`build`] did.
pub(crate) enum Built {
    /// Ingested: the index is at this state.
    Ingested(IndexState),
    /// Another build wrote the index meanwhile: nothing ingested.
    Raced,
}

/// Builds the index of `ddoc` (which has none yet) from one snapshot of
/// the database, as sorted runs ingested at once (module doc).
pub(crate) fn build(db: &Database, db_name: &str, ddoc: &DesignDoc, mapper: &mut Mapper, limits: Limits, task: &IndexerTask) -> Result<Built, ViewError> {
    let id = crate::index::index_id(ddoc);
    let snapshot = db.store().snapshot()?;
    let target = update_seq(snapshot.kv())?;
    // Each view's rows apart: mapped in sequence order, a view keyed by
    // something that grows with it (a number, a date) comes sorted, and
    // the sort below (a merge sort of runs) then only checks it.
    let mut rows: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); ddoc.views.len()];
    let mut doc_rows: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut counts = vec![0u64; ddoc.views.len()];
    let (mut reached, mut bytes) = (0u64, 0usize);
    while reached < target && bytes < BULK_ROW_BYTES {
        let (batch, batch_reached) = rhizome_docs::secondary::changed_since(snapshot.kv(), reached, target, BATCH)?;
        let mapped = map_on_cores(db, db_name, ddoc, &id, mapper, limits, &snapshot, &batch, batch_reached)?;
        for doc in mapped.docs {
            if doc.rows.is_empty() {
                continue;
            }
            let mut written: Vec<u8> = Vec::new();
            for (view, row, value) in doc.rows {
                written.extend_from_slice(&(row.len() as u32).to_be_bytes());
                written.extend_from_slice(&row);
                counts[view] += 1;
                bytes += row.len() + value.len() + 2 * std::mem::size_of::<Vec<u8>>();
                rows[view].push((row, value));
            }
            let key = doc_rows_key(&id, &doc.id);
            bytes += key.len() + written.len() + 2 * std::mem::size_of::<Vec<u8>>();
            doc_rows.push((key, written));
        }
        reached = mapped.reached;
        task.progress(reached);
    }
    drop(snapshot);
    let state = IndexState { seq: reached, ddoc: ddoc.id.clone(), rows: counts, ranked: true, nonce: fresh_nonce() };
    let reducers: Vec<_> = ddoc.views.iter().map(|v| v.reduce.as_deref().and_then(crate::reduce::builtin)).collect();
    // The rows (with their buckets) and the documents' row lists are
    // sorted and written on a core each.
    let store = db.store();
    let (rows_runs, doc_rows_run) = std::thread::scope(|scope| {
        let doc_rows_run = scope.spawn(move || -> Result<SortedRun, ViewError> {
            doc_rows.sort_by(|a, b| a.0.cmp(&b.0));
            let mut run = store.index_run_writer(VIEW_DOC_ROWS)?;
            for (k, v) in &doc_rows {
                run.put(k, v)?;
            }
            Ok(run.finish()?)
        });
        let rows_runs = (|| -> Result<[SortedRun; 2], ViewError> {
            let mut run = store.index_run_writer(VIEW_ROWS)?;
            let mut ranks = store.index_run_writer(VIEW_RANKS)?;
            for (view, view_rows) in rows.iter_mut().enumerate() {
                if view_rows.is_empty() {
                    continue;
                }
                view_rows.sort_by(|a, b| a.0.cmp(&b.0));
                let reducer = reducers.get(view).copied().flatten();
                // Buckets of BUCKET_ROWS; a last one under MERGE_ROWS joins
                // the one before, as a transaction's write joins it.
                let mut cuts: Vec<usize> = (0..view_rows.len()).step_by(BUCKET_ROWS as usize).collect();
                if cuts.len() > 1 && ((view_rows.len() - cuts[cuts.len() - 1]) as u64) < MERGE_ROWS {
                    cuts.pop();
                }
                for (n, &start) in cuts.iter().enumerate() {
                    let end = cuts.get(n + 1).copied().unwrap_or(view_rows.len());
                    let mut summary = SummaryBuilder::default();
                    for (k, v) in &view_rows[start..end] {
                        run.put(k, v)?;
                        summary.push(reducer, k, v)?;
                    }
                    // The first bucket's fence is the view's prefix.
                    let fence = if n == 0 { &view_rows[0].0[..9] } else { view_rows[start].0.as_slice() };
                    ranks.put(fence, &summary.finish(reducer).encode())?;
                }
            }
            Ok([run.finish()?, ranks.finish()?])
        })();
        (rows_runs, doc_rows_run.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let mut runs: Vec<SortedRun> = rows_runs?.into();
    runs.push(doc_rows_run?);
    let mut state_run = store.index_run_writer(VIEW_STATE)?;
    state_run.put(&id, &state.to_bytes())?;
    runs.push(state_run.finish()?);
    // Ingested under the writer lock, if the index is still not there:
    // another build (another request) may have written it meanwhile.
    let bulk = store.bulk_writer()?;
    if !is_empty(&**bulk.snapshot(), &id)? {
        drop(bulk);
        discard(runs);
        return Ok(Built::Raced);
    }
    bulk.ingest(runs)?;
    Ok(Built::Ingested(state))
}

/// Whether the index `id` has no state and no rows, buckets or row lists.
fn is_empty<K: KvRead + ?Sized>(kv: &K, id: &[u8; 8]) -> Result<bool, ViewError> {
    if kv.get(VIEW_STATE, id)?.is_some() {
        return Ok(false);
    }
    let upper = rhizome_kv::prefix_upper_bound(id);
    for ks in [VIEW_ROWS, VIEW_DOC_ROWS, VIEW_RANKS] {
        let mut cursor = kv.cursor(ks, id, upper.as_deref());
        cursor.seek_first();
        if cursor.valid() {
            return Ok(false);
        }
        cursor.status()?;
    }
    Ok(true)
}

/// Removes the files of runs that will not be ingested (the store's own
/// folder for them is emptied at its next open anyway).
fn discard(runs: Vec<SortedRun>) {
    for run in runs {
        if let SortedRun::File { path } = run {
            let _ = std::fs::remove_file(path);
        }
    }
}
