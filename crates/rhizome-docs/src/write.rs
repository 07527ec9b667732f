//! The document write path: `PUT`, `DELETE`, `POST` and `_bulk_docs`, with
//! or without `new_edits`.
//!
//! One call is one store transaction: every document of a `_bulk_docs`
//! request, its revision tree, body, attachments, changes entry, the
//! database counters and the graph projection are committed together, and
//! durably, before the call returns. A document that fails (conflict, bad
//! member) gets its own error and the others are still written, as CouchDB
//! does (https://docs.couchdb.org/en/stable/api/database/bulk-api.html#db-bulk-docs).

use crate::member::member;
use crate::keys::{self, body_key, meta, DocInfo, BODIES, DB_META, DOCS, SEQS};
use crate::graph_write::{EmptiedGraphs, GraphRevision};
use crate::projector::GraphChange;
use crate::{Database, DocError, Result, Rev, RevTree, Writer};
use base64::Engine;
use md5::{Digest, Md5};
use rhizome_rdf::StoreTransaction;
use serde_json::{json, Map, Value};

/// Shown each document revision a graph write makes, before it is made
/// ([`Database::rdf_write_checked`]): the new document as a read will give
/// it, and the one it replaces; an error refuses the write.
pub type WriteCheck<'c> = &'c mut dyn FnMut(&Map<String, Value>, Option<&Map<String, Value>>) -> Result<()>;

/// The special members CouchDB keeps in a document's body (the
/// replicator's state in `_replicator` documents); the others are
/// metadata, dropped from the stored body.
fn kept_in_body(member: &str) -> bool {
    !member.starts_with('_') || member.starts_with("_replication_")
}

/// The outcome of one document of a write.
pub type WriteOutcome = std::result::Result<Rev, DocError>;

/// Rejects ids CouchDB rejects: empty, or starting with `_` other than
/// `_design/` (`_local/` documents take their own path).
pub fn validate_doc_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(DocError::BadRequest("Document id must not be empty".into()));
    }
    if id.starts_with('_') && !id.starts_with("_design/") {
        return Err(DocError::BadRequest("Only reserved document ids may start with underscore.".into()));
    }
    Ok(())
}

pub(crate) struct Counters {
    pub(crate) update_seq: u64,
    pub(crate) doc_count: u64,
    pub(crate) doc_del_count: u64,
    revs_limit: u64,
}

impl Counters {
    pub(crate) fn read(txn: &StoreTransaction<'_>) -> Result<Counters> {
        let read = |k: &[u8]| -> Result<u64> { keys::u64_value(txn.kv().get(DB_META, k)?, "counter") };
        Ok(Counters {
            update_seq: read(meta::UPDATE_SEQ)?,
            doc_count: read(meta::DOC_COUNT)?,
            doc_del_count: read(meta::DOC_DEL_COUNT)?,
            revs_limit: read(meta::REVS_LIMIT)?.max(1),
        })
    }

    pub(crate) fn write(&self, txn: &mut StoreTransaction<'_>) {
        let kv = txn.kv_mut();
        kv.put(DB_META, meta::UPDATE_SEQ, &self.update_seq.to_be_bytes());
        kv.put(DB_META, meta::DOC_COUNT, &self.doc_count.to_be_bytes());
        kv.put(DB_META, meta::DOC_DEL_COUNT, &self.doc_del_count.to_be_bytes());
    }
}

impl Database {
    /// Writes `docs` (each with its `_id`) in one transaction, as a
    /// database admin (in-process callers that own the data folder). The
    /// outer error is a store failure (nothing written); the inner ones are
    /// per document.
    pub fn update_docs(&self, docs: Vec<Map<String, Value>>, new_edits: bool) -> Result<Vec<(String, WriteOutcome)>> {
        self.update_docs_as(docs, new_edits, Writer::Admin)
    }

    /// [`Database::update_docs`] by `writer`, under the rules of
    /// `crate::rights`.
    pub fn update_docs_as(&self, docs: Vec<Map<String, Value>>, new_edits: bool, writer: Writer) -> Result<Vec<(String, WriteOutcome)>> {
        let prepared = self.prepare_docs(&docs, new_edits, writer)?;
        self.update_prepared(docs, prepared, new_edits)
    }

    /// What a write of `docs` can do before its transaction (and lock),
    /// on the caller's thread: the projection's remote JSON-LD contexts are
    /// fetched (a document that cannot have them is refused on its own),
    /// its parse is done ahead (see `GraphProjector::prepare`), and so is
    /// the new revision's body and hash where they cannot depend on the
    /// store. For [`Database::update_prepared`] with the same `new_edits`;
    /// group commit calls it on each request's thread. Each preparation
    /// carries `writer`, whose rights its document is written with.
    pub fn prepare_docs(&self, docs: &[Map<String, Value>], new_edits: bool, writer: Writer) -> Result<Vec<PreparedDoc>> {
        let snapshot = self.store.snapshot()?;
        // Every document reads the default JSON-LD context: once will do.
        Ok(self.prepare_docs_reading(&rhizome_kv::CachedRead::new(snapshot.kv()), docs, new_edits, writer))
    }

    /// [`Database::prepare_docs`] reading `reader`: a transaction's own
    /// (`StoreTransaction::reader`) when it prepares inside it, which then
    /// reads the default context once for the preparation and the
    /// projection both (and once for a whole group commit).
    pub(crate) fn prepare_docs_reading(&self, reader: &dyn rhizome_kv::KvRead, docs: &[Map<String, Value>], new_edits: bool, writer: Writer) -> Vec<PreparedDoc> {
        docs.iter()
            .map(|doc| {
                let revision = if new_edits { RevisionAhead::of(doc) } else { None };
                if member(&doc, "_deleted") == Some(&Value::Bool(true)) {
                    return PreparedDoc { revision, writer, ..PreparedDoc::default() };
                }
                match self.projector.prepare(reader, doc) {
                    Ok(ahead) => PreparedDoc { refused: None, ahead, revision, writer },
                    Err(reason) => PreparedDoc { refused: Some(reason), ahead: None, revision: None, writer },
                }
            })
            .collect()
    }

    /// [`Database::update_docs`] with each document's preparation (from
    /// [`Database::prepare_docs`] on the same documents, in order).
    pub fn update_prepared(&self, docs: Vec<Map<String, Value>>, prepared: Vec<PreparedDoc>, new_edits: bool) -> Result<Vec<(String, WriteOutcome)>> {
        if prepared.len() != docs.len() {
            return Err(DocError::BadRequest(format!("{} documents, {} preparations", docs.len(), prepared.len())));
        }
        let fetched_contexts = self.fetched_contexts(&docs);
        let mut txn = self.store.transaction()?;
        let out = self.write_prepared_in(&mut txn, docs, prepared, new_edits)?;
        txn.commit()?;
        self.confirm_contexts(fetched_contexts, out.iter().map(|(_, outcome)| outcome.is_ok()));
        Ok(out)
    }

    /// The remote contexts each of `docs` names, to be kept on disk once
    /// their write commits ([`Database::confirm_contexts`],
    /// `ContextStore::confirm`); empty unless contexts are fetched.
    pub fn fetched_contexts(&self, docs: &[Map<String, Value>]) -> Vec<Vec<String>> {
        match self.projector.contexts().filter(|c| c.fetches()) {
            Some(_) => docs.iter().map(|d| crate::contexts::context_urls(&Value::Object(d.clone()), None)).collect(),
            None => Vec::new(),
        }
    }

    /// After the commit of a write of documents whose remote contexts
    /// were `fetched` ([`Database::fetched_contexts`]): keeps those of the
    /// documents written (`written`, in the same order).
    pub fn confirm_contexts(&self, fetched: Vec<Vec<String>>, written: impl IntoIterator<Item = bool>) {
        if let Some(contexts) = self.projector.contexts() {
            for (urls, ok) in fetched.into_iter().zip(written) {
                if ok && !urls.is_empty() {
                    contexts.confirm(&serde_json::json!({ "@context": urls }));
                }
            }
        }
    }

    /// [`Database::update_prepared`] inside a transaction the caller
    /// commits (group commit runs several requests in one). The graphs the
    /// documents' projections changed are accounted for (not left for
    /// [`Database::record_graph_writes_in`]).
    pub fn write_prepared_in(&self, txn: &mut StoreTransaction<'_>, docs: Vec<Map<String, Value>>, prepared: Vec<PreparedDoc>, new_edits: bool) -> Result<Vec<(String, WriteOutcome)>> {
        if prepared.len() != docs.len() {
            return Err(DocError::BadRequest(format!("{} documents, {} preparations", docs.len(), prepared.len())));
        }
        let txn = &mut *txn;
        self.find_new_keys(txn, &docs)?;
        let mut counters = Counters::read(txn)?;
        let mut out = Vec::with_capacity(docs.len());
        for (doc, prepared) in docs.into_iter().zip(prepared) {
            let id = member(&doc, "_id").and_then(Value::as_str).unwrap_or_default().to_owned();
            // A document whose graph cannot be read (malformed JSON-LD,
            // contexts past the limits or not to be had) is refused on its
            // own: 400 `doc_validation`. A replicated one (`new_edits`
            // false) is refused as a validate_doc_update function refuses,
            // 403 `forbidden`, the one per-document error replicators
            // (PouchDB's, CouchDB's) count as a failed document and go on
            // past; any other stops the whole replication.
            if let Some(reason) = prepared.refused {
                let reason = format!("{id}: {reason}");
                let refusal = if new_edits { DocError::Validation(reason) } else { DocError::Coded { status: 403, error: "forbidden", reason } };
                out.push((id.clone(), Err(refusal)));
                continue;
            }
            let writer = prepared.writer;
            let outcome = match self.write_one(txn, &mut counters, &id, doc, new_edits, None, writer, prepared) {
                Err(e @ (DocError::Store(_) | DocError::Kv(_) | DocError::Corrupt(_) | DocError::Projection { .. })) => return Err(e),
                other => other,
            };
            out.push((id, outcome));
        }
        counters.write(txn);
        txn.clear_touched_graphs();
        Ok(out)
    }

    /// Runs an RDF write (SPARQL Update, the Graph Store Protocol) in one
    /// transaction and makes it a document write, as a database admin
    /// (in-process callers): every graph it changed gets a new revision of
    /// its document, whose body is the graph (or a deletion, when the graph
    /// is now empty), and so appears in `_changes`; all committed together.
    pub fn rdf_write<T, E: From<DocError>>(&self, f: impl FnOnce(&mut StoreTransaction<'_>) -> std::result::Result<T, E>) -> std::result::Result<T, E> {
        self.rdf_write_with(EmptiedGraphs::KeepDocumentData, f)
    }

    /// [`Database::rdf_write`], saying what becomes of a document whose
    /// graph the write removed (see [`EmptiedGraphs`]).
    pub fn rdf_write_with<T, E: From<DocError>>(
        &self,
        emptied: EmptiedGraphs,
        f: impl FnOnce(&mut StoreTransaction<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.rdf_write_checked(emptied, None, Writer::Admin, f)
    }

    /// [`Database::rdf_write_with`] by `writer`, with every document
    /// revision the write makes shown to `check` first (the database's
    /// validation functions, which `rhizome-views` runs): the document as it
    /// will read, and the one it replaces (`None` when there is none). An
    /// error from `check`, or a revision `writer` may not make
    /// (`crate::rights`), refuses the whole write; nothing is committed.
    pub fn rdf_write_checked<T, E: From<DocError>>(
        &self,
        emptied: EmptiedGraphs,
        check: Option<WriteCheck<'_>>,
        writer: Writer,
        f: impl FnOnce(&mut StoreTransaction<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut txn = self.store.transaction().map_err(DocError::from)?;
        let out = f(&mut txn)?;
        self.record_graph_writes_in(&mut txn, emptied, check, writer)?;
        txn.commit().map_err(DocError::from)?;
        Ok(out)
    }

    /// Makes the graphs `txn` changed so far new revisions of their
    /// documents (what [`Database::rdf_write_checked`] does before its
    /// commit), written by `writer` under `crate::rights`, for writes that
    /// share a transaction with others.
    pub fn record_graph_writes_in(&self, txn: &mut StoreTransaction<'_>, emptied: EmptiedGraphs, mut check: Option<WriteCheck<'_>>, writer: Writer) -> Result<()> {
        let touched = txn.touched_graphs().to_vec();
        if touched.is_empty() {
            return Ok(());
        }
        if let Some(reason) = self.projector.refuses_graph_writes() {
            return Err(DocError::forbidden(reason));
        }
        let mut counters = Counters::read(txn)?;
        let mut named = Vec::with_capacity(touched.len());
        for graph in touched {
            match rhizome_rdf::term::Dictionary::decode(txn.reader(), graph)? {
                Some(oxrdf::Term::NamedNode(iri)) => named.push((!txn.graph_exists(graph)?, iri, graph)),
                _ => {} // the default graph of a plain dataset, or a blank graph name
            }
        }
        // The graphs written in IRI order, a container's before its
        // children's, so an LDP tree made in one update finds each parent
        // in place; then the graphs emptied in reverse, children before
        // their containers (as LDP's DELETE), so `DROP ALL` takes a tree.
        named.sort_unstable_by(|(a_empty, a, _), (b_empty, b, _)| a_empty.cmp(b_empty).then_with(|| if *a_empty { b.cmp(a) } else { a.cmp(b) }));
        for (empty, iri, graph) in named {
            let id = self.projector.doc_id(iri.as_str()).unwrap_or_else(|| iri.as_str().to_owned());
            if let Some(refusal) = crate::rights::graph_refusal(iri.as_str(), &id, self.projector.foreign_graph(iri.as_str())) {
                // A graph that is no document's of this database may only
                // be emptied (a `DROP ALL` sweeping a graph a bulk load put
                // there): nothing is recorded for it.
                if empty {
                    continue;
                }
                return Err(refusal);
            }
            let mut info = match txn.kv().get(DOCS, id.as_bytes())? {
                Some(bytes) => Some(DocInfo::from_bytes(&id, &bytes)?),
                None => None,
            };
            forget_empty_graph(txn, &id, info.as_mut());
            let live = info.as_ref().filter(|i| !i.deleted);
            if empty && live.is_none() {
                continue;
            }
            let old_body = match live {
                Some(i) => read_body(txn, &id, &i.winner)?,
                None => None,
            };
            let revision = match (empty, emptied) {
                (true, EmptiedGraphs::DeleteDocuments) => GraphRevision::Delete,
                _ => crate::graph_write::revision_after_graph_write(txn, &id, graph, iri.as_str(), old_body.as_ref(), empty, self.projector.contexts())?,
            };
            let (mut doc, marker) = match revision {
                GraphRevision::Json(body) => (body, None),
                GraphRevision::Graph(stubs) => (Map::from_iter(stubs.map(|s| ("_attachments".to_owned(), s))), Some(iri.as_str())),
                GraphRevision::Delete => (Map::from_iter([("_deleted".to_owned(), Value::Bool(true))]), Some(iri.as_str())),
            };
            doc.insert("_id".into(), Value::String(id.clone()));
            if let Some(i) = live {
                doc.insert("_rev".into(), Value::String(i.winner.text()));
            }
            if let Some(check) = check.as_mut() {
                // As a read will give it: a graph-bodied revision is its graph.
                let mut new_doc = doc.clone();
                if marker.is_some() && member(&new_doc, "_deleted").is_none() {
                    new_doc.extend(crate::jsonld::render_graph(txn.reader(), iri.as_str(), None)?);
                }
                let old_doc = match live {
                    Some(_) => Some(self.get_doc(&id, &crate::ReadOptions::default())?),
                    None => None,
                };
                check(&new_doc, old_doc.as_ref())?;
            }
            match self.write_one(txn, &mut counters, &id, doc, true, marker, writer, PreparedDoc::default()) {
                Ok(_) | Err(DocError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        counters.write(txn);
        txn.clear_touched_graphs();
        Ok(())
    }

    /// Makes every graph of the store that has no document (RDF loaded in
    /// bulk: a subject's triples, an N-Quads graph) a document whose body
    /// is its graph. After a database's first load (no document yet), the
    /// new documents' records are written as sorted runs and ingested, a
    /// chunk at a time (see `adopt_as_runs`); otherwise, and for documents
    /// whose projection has work to do (LDP resources), through
    /// transactions of `batch` documents. `progress` gets the count so
    /// far. Returns how many documents were created.
    pub fn adopt_graphs(&self, batch: usize, progress: impl FnMut(u64)) -> Result<u64> {
        // Up to some hundreds of MB of ids and records in memory at once.
        self.adopt_graphs_with(batch, progress, Some(2_000_000))
    }

    /// [`Database::adopt_graphs`] with sorted runs of `runs` documents, or
    /// (`None`) through transactions only (the tests compare the two).
    fn adopt_graphs_with(&self, batch: usize, mut progress: impl FnMut(u64), runs: Option<usize>) -> Result<u64> {
        let (graphs, had_documents) = {
            let snapshot = self.store.snapshot()?;
            let graphs = rhizome_rdf::index::graph_names(snapshot.kv())?;
            // A database with no documents yet (a first load) has none of
            // the ids below, each its own graph's: nothing to look for.
            let mut cursor = snapshot.kv().cursor(DOCS, &[], None);
            cursor.seek_first();
            (graphs, cursor.valid())
        };
        let (mut adopted, mut chunks, mut graphs) = (0, 0, graphs);
        if let Some(chunk) = runs.filter(|_| !had_documents) {
            (adopted, chunks, graphs) = self.adopt_as_runs(graphs, chunk, &mut progress)?;
        }
        let before = adopted;
        let adopted = self.adopt_in_transactions(&graphs, batch, adopted, had_documents || adopted > 0, &mut progress)?;
        if !had_documents && (adopted > before || chunks > 1) {
            // Records written through transactions sit in the levels above
            // the loaded quads, and a second chunk of runs above the first:
            // every read of a document would search two levels. Moved down,
            // one (measured on full Pokec right after a load: 58-62k ->
            // 65-68k reads/s). Only after a first load: in a database that
            // had documents, this would rewrite all their records, whatever
            // the load's size. (One chunk of runs lands at the bottom.)
            self.store.settle(DOCS, DB_META)?;
        }
        Ok(adopted)
    }

    /// Adopts `graphs` through transactions of `batch` documents, skipping
    /// ids that have a document when `check`.
    fn adopt_in_transactions(&self, graphs: &[rhizome_rdf::TermId], batch: usize, mut adopted: u64, check: bool, progress: &mut dyn FnMut(u64)) -> Result<u64> {
        if graphs.is_empty() {
            return Ok(adopted);
        }
        let snapshot = self.store.snapshot()?;
        for chunk in graphs.chunks(batch.max(1)) {
            // The chunk's IRIs in one walk of the dictionary (graph ids are
            // sorted), not a point read each.
            let mut iris = Vec::with_capacity(chunk.len());
            let mut ids = chunk.to_vec();
            snapshot.decode_many(&mut ids, |_, term| {
                if let oxrdf::Term::NamedNode(iri) = term {
                    iris.push(iri);
                }
            })?;
            let mut txn = self.store.transaction()?;
            let mut counters = Counters::read(&txn)?;
            for iri in iris {
                let id = self.projector.doc_id(iri.as_str()).unwrap_or_else(|| iri.as_str().to_owned());
                if validate_doc_id(&id).is_err() {
                    continue;
                }
                if check {
                    if let Some(bytes) = txn.kv().get(DOCS, id.as_bytes())? {
                        // A document already: the load put quads in its graph.
                        forget_empty_graph(&mut txn, &id, Some(&mut DocInfo::from_bytes(&id, &bytes)?));
                        continue;
                    }
                }
                let mut doc = Map::new();
                doc.insert("_id".into(), Value::String(id.clone()));
                match self.write_one(&mut txn, &mut counters, &id, doc, true, Some(iri.as_str()), Writer::Loader, PreparedDoc::default()) {
                    Ok(_) => adopted += 1,
                    // Two graphs with one document id (`<base>/<db>/` and
                    // an IRI percent-encoded after it): the first has it.
                    Err(DocError::Conflict) => {}
                    Err(e) => return Err(e),
                }
            }
            counters.write(&mut txn);
            txn.clear_touched_graphs();
            txn.commit()?;
            progress(adopted);
        }
        Ok(adopted)
    }

    /// The first load's documents as sorted runs: under the store's writer
    /// lock, each chunk of graphs becomes the `DOCS` (with their bodies)
    /// and `SEQS` records and counters that [`Database::write_one`] would write for
    /// it (a graph-bodied first revision each), ingested in one atomic
    /// step that lands them at the bottom of the store. Writing them
    /// through transactions (memtables, flushes, compactions, then a
    /// settle) took 36 s of a 137 s full Pokec load. Returns the documents
    /// adopted, the chunks ingested, and the graphs left for transactions
    /// (those whose projection has work to do: LDP resources).
    fn adopt_as_runs(&self, graphs: Vec<rhizome_rdf::TermId>, chunk_size: usize, progress: &mut dyn FnMut(u64)) -> Result<(u64, usize, Vec<rhizome_rdf::TermId>)> {
        let (mut adopted, mut chunks, mut left) = (0, 0, Vec::new());
        for chunk in graphs.chunks(chunk_size.max(1)) {
            let bulk = self.store.bulk_writer()?;
            let kv = bulk.snapshot().clone();
            let read = |k: &[u8]| -> Result<u64> { keys::u64_value(kv.get(DB_META, k)?, "counter") };
            let (mut update_seq, doc_count, doc_del_count, revs_limit) = (read(meta::UPDATE_SEQ)?, read(meta::DOC_COUNT)?, read(meta::DOC_DEL_COUNT)?, read(meta::REVS_LIMIT)?.max(1));
            // Later chunks (a large load, the writer lock given up between
            // chunks) look for documents written meanwhile.
            let check = chunks > 0;
            let mut iris = Vec::with_capacity(chunk.len());
            let mut terms = chunk.to_vec();
            rhizome_rdf::term::Dictionary::decode_many(kv.as_ref(), &mut terms, |id, term| {
                if let oxrdf::Term::NamedNode(iri) = term {
                    iris.push((id, iri));
                }
            })?;
            // Each document: its id, its graph's IRI where that differs,
            // and its revision's hash.
            let mut docs: Vec<(Box<str>, Option<Box<str>>, String)> = Vec::with_capacity(iris.len());
            for (term, iri) in iris {
                let iri = iri.into_string();
                let id = self.projector.doc_id(&iri).unwrap_or_else(|| iri.clone());
                if validate_doc_id(&id).is_err() || (check && kv.get(DOCS, id.as_bytes())?.is_some()) {
                    continue;
                }
                // Design documents (which writes keep a flag for) and
                // documents whose projection has work to do.
                if id.starts_with("_design/") || self.projector.projects_graph_bodies(&id) {
                    left.push(term);
                    continue;
                }
                let body = Map::from_iter([(crate::jsonld::GRAPH_MARKER.to_owned(), Value::String(iri.clone()))]);
                let hash = crate::rev_id::revision_id(false, None, &body, &[]);
                let iri = (iri != id).then(|| iri.into_boxed_str());
                docs.push((id.into_boxed_str(), iri, hash));
            }
            // Two graphs with one document id: the first in graph order has
            // it, as through transactions.
            let by_id = |docs: &[(Box<str>, Option<Box<str>>, String)]| {
                let mut order: Vec<u32> = (0..docs.len() as u32).collect();
                order.sort_unstable_by(|a, b| docs[*a as usize].0.cmp(&docs[*b as usize].0).then(a.cmp(b)));
                order
            };
            let mut order = by_id(&docs);
            let taken: Vec<u32> = order.windows(2).filter(|w| docs[w[0] as usize].0 == docs[w[1] as usize].0).map(|w| w[1]).collect();
            if !taken.is_empty() {
                let taken: std::collections::HashSet<u32> = taken.into_iter().collect();
                docs = docs.into_iter().enumerate().filter(|(i, _)| !taken.contains(&(*i as u32))).map(|(_, d)| d).collect();
                order = by_id(&docs);
            }
            if docs.is_empty() {
                continue;
            }
            // Sequence numbers in graph order, as transactions give them.
            let first_seq = update_seq + 1;
            update_seq += docs.len() as u64;
            let record = |i: usize| -> Vec<u8> {
                let (id, iri, hash) = &docs[i];
                let iri = iri.as_deref().unwrap_or(id);
                let mut tree = RevTree::new();
                let rev = tree.edit(None, hash, false).expect("a first revision of a new tree");
                tree.stem(revs_limit as usize);
                // The body kept in the record, as a write keeps it.
                let body = Map::from_iter([(crate::jsonld::GRAPH_MARKER.to_owned(), Value::String(iri.to_owned()))]);
                let body = serde_json::to_vec(&body).expect("JSON of a map of strings");
                DocInfo { seq: first_seq + i as u64, winner: rev, deleted: false, graph_body: Some(iri.to_owned()), graph_empty: false, body: Some(body), tree }.to_bytes(id)
            };
            let mut runs = Vec::new();
            // DOCS by id (each record with its body); SEQS in sequence
            // order.
            let mut run = bulk.sorted_run_writer(DOCS)?;
            for &i in &order {
                run.put(docs[i as usize].0.as_bytes(), &record(i as usize))?;
            }
            runs.push(run.finish()?);
            let mut run = bulk.sorted_run_writer(SEQS)?;
            for (i, (id, ..)) in docs.iter().enumerate() {
                run.put(&(first_seq + i as u64).to_be_bytes(), id.as_bytes())?;
            }
            runs.push(run.finish()?);
            // The counters, in key order.
            let mut run = bulk.sorted_run_writer(DB_META)?;
            run.put(meta::DOC_COUNT, &(doc_count + docs.len() as u64).to_be_bytes())?;
            run.put(meta::DOC_DEL_COUNT, &doc_del_count.to_be_bytes())?;
            run.put(meta::UPDATE_SEQ, &update_seq.to_be_bytes())?;
            runs.push(run.finish()?);
            drop(kv);
            trace("documents-written");
            bulk.ingest(runs)?;
            trace("documents-ingested");
            adopted += docs.len() as u64;
            chunks += 1;
            progress(adopted);
        }
        Ok((adopted, chunks, left))
    }

    /// `graph_marker`: the document's body is its graph, this IRI (an RDF
    /// write), not the JSON of `doc`. `writer`: whose rights the write has
    /// (`crate::rights`). `prepared`: what [`Database::prepare_docs`] did
    /// for `doc` (the default: nothing).
    #[allow(clippy::too_many_arguments)]
    fn write_one(
        &self,
        txn: &mut StoreTransaction<'_>,
        counters: &mut Counters,
        id: &str,
        mut doc: Map<String, Value>,
        new_edits: bool,
        graph_marker: Option<&str>,
        writer: Writer,
        prepared: PreparedDoc,
    ) -> WriteOutcome {
        self.writing(id);
        let PreparedDoc { ahead, revision, .. } = prepared;
        let revision = revision.filter(|_| new_edits && graph_marker.is_none());
        validate_doc_id(id)?;
        if self.is_partitioned() {
            crate::partition::check_partitioned_id(id)?;
        }
        if let Some(bad) = doc.keys().find(|k| k.starts_with('_') && !crate::doc_checks::is_special_member(k)) {
            return Err(DocError::Validation(format!("Bad special document member: {bad}")));
        }
        if let Some(Value::Object(atts)) = member(&doc, "_attachments") {
            atts.keys().try_for_each(|name| validate_attachment_name(name))?;
        }
        let deleted = match member(&doc, "_deleted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(DocError::Validation("_deleted must be a boolean".into())),
        };
        // Who may write this document, and what its graph may become:
        // checked before anything of the revision is stored, so a refusal
        // is this document's alone.
        let checked = writer != Writer::Loader;
        if checked {
            crate::rights::check_document(id, writer)?;
        }
        if graph_marker.is_none() && !deleted {
            // Only an id that is an absolute IRI (its own graph's) can name
            // another database's graph; others need no look.
            if let Some(reason) = id.contains(':').then(|| self.projector.foreign_graph(id)).flatten().filter(|_| checked) {
                return Err(DocError::forbidden(reason));
            }
            if let Some(reason) = self.projector.id_conflict(txn, id).map_err(|reason| DocError::Projection { id: id.to_owned(), reason })? {
                return Err(DocError::IdConflict(reason));
            }
        }
        if checked && !deleted {
            let before = txn.kv().base().clone();
            let change = match graph_marker {
                None => GraphChange::Body(&doc),
                Some(_) => GraphChange::Written { before: &*before },
            };
            self.projector.check_change(txn, id, change, writer, !new_edits)?;
        }
        // A hot document's tree as the write before left it, when its
        // record is still that write's (`hot_docs.rs`).
        let mut info = match txn.kv().get(DOCS, id.as_bytes())? {
            Some(bytes) => Some(match self.hot_docs.take_tree(id, &bytes) {
                Some(tree) => DocInfo::with_tree(id, &bytes, tree)?,
                None => DocInfo::from_bytes(id, &bytes)?,
            }),
            None => None,
        };
        // (Only its header's fields are read from `info` below.)
        let mut tree = info.as_mut().map(|i| std::mem::take(&mut i.tree)).unwrap_or_default();
        let old_leaves = tree.leaves();
        // The body, its JSON and its revision hash, if made ahead.
        // With a revision prepared ahead, the body is the document's own
        // members, taken out of it once the document has been read.
        let body_from_doc = graph_marker.is_none() && revision.is_some();
        let (mut body, mut ahead_json) = match (graph_marker, revision) {
            (Some(iri), _) => (Map::from_iter([(crate::jsonld::GRAPH_MARKER.to_owned(), Value::String(iri.to_owned()))]), None),
            (None, Some(r)) => (Map::new(), Some((r.json, r.deleted, r.base, r.hash))),
            (None, None) => (doc.iter().filter(|(k, _)| kept_in_body(k)).map(|(k, v)| (k.clone(), v.clone())).collect(), None),
        };

        let rev = if new_edits {
            // As CouchDB's `transfer_fields`: `_revisions`, when present,
            // names the revision edited, whatever `_rev` says.
            let base = match revisions_path(&doc)? {
                Some(path) => Some(path[0].clone()),
                None => match member(&doc, "_rev") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(Rev::parse(s).ok_or_else(|| DocError::BadRequest("Invalid rev format".into()))?),
                    Some(_) => return Err(DocError::BadRequest("Invalid rev format".into())),
                },
            };
            let pos = match (&base, tree.winner()) {
                (Some(b), _) => b.pos + 1,
                (None, Some(w)) if w.deleted => w.rev.pos + 1,
                _ => 1,
            };
            // Conflicts are checked before attachments are stored, so a
            // refused edit writes nothing.
            let is_leaf = base.as_ref().is_some_and(|b| tree.is_leaf(b));
            if (base.is_some() && !is_leaf) || (base.is_none() && tree.winner().is_some_and(|w| !w.deleted)) {
                return Err(DocError::Conflict);
            }
            // Without `_attachments`, the parent's are not kept: no need
            // to read them.
            let parent_atts = match (&base, member(&doc, "_attachments")) {
                (Some(b), Some(atts)) if !atts.is_null() => read_body(txn, id, b)?.and_then(|mut p| p.remove("_attachments")),
                _ => None,
            };
            if let Some(atts) = process_attachments(txn, id, member(&doc, "_attachments"), parent_atts.as_ref(), pos, true)? {
                body.insert("_attachments".into(), atts);
                ahead_json = None;
            }
            // As CouchDB (`couch_db_updater:merge_rev_tree`), a document
            // made again over a deleted one, without `_rev`, edits the
            // deleted winner: its id hashes that parent.
            let hash_parent = match (&base, tree.winner()) {
                (None, Some(w)) if w.deleted && !deleted => Some(w.rev.clone()),
                _ => base.clone(),
            };
            let hash = match &ahead_json {
                Some((_, d, p, hash)) if *d == deleted && *p == hash_parent => hash.clone(),
                // (The document hashes as its body: `revision_id` leaves
                // out what the body does not keep.)
                _ => crate::rev_id::revision_id(deleted, hash_parent.as_ref(), if body_from_doc { &doc } else { &body }, &crate::rev_id::attachment_digests(member(&body, "_attachments"))),
            };
            tree.edit(base.as_ref(), &hash, deleted).map_err(|_| DocError::Conflict)?
        } else {
            let path = replicated_path(&doc)?;
            let rev = path[0].clone();
            if tree.contains(&rev) {
                // Already here (a replicator retrying): nothing to do.
                return Ok(rev);
            }
            let known_atts = old_leaves.first().map(|l| l.rev.clone());
            let known_atts = match known_atts {
                Some(r) => read_body(txn, id, &r)?.and_then(|mut p| p.remove("_attachments")),
                None => None,
            };
            if let Some(atts) = process_attachments(txn, id, member(&doc, "_attachments"), known_atts.as_ref(), rev.pos, false)? {
                body.insert("_attachments".into(), atts);
            }
            tree.merge_path(&path, deleted);
            rev
        };
        if body_from_doc {
            debug_assert!(body.is_empty(), "a body prepared ahead is the document's, nothing added");
            doc.retain(|k, _| kept_in_body(k));
            body = doc;
        }
        if checked && deleted && info.as_ref().is_some_and(|i| !i.deleted) && tree.winner().is_some_and(|w| w.deleted) {
            self.projector.check_change(txn, id, GraphChange::Deleted, writer, !new_edits)?;
        }
        tree.stem(counters.revs_limit as usize);
        // The bytes `Value::Object(body).to_string()` gives, without a copy
        // of the body first.
        let json = match ahead_json {
            Some((json, ..)) => json,
            None => serde_json::to_vec(&body).map_err(|e| DocError::Corrupt(format!("{id}: {e}")))?,
        };
        let winner = tree.winner().expect("a tree just written to has a leaf");
        // The winner's body goes in its record ([`DocInfo::body`]); any
        // other revision's in `BODIES`.
        let old_kept = info.as_ref().and_then(|i| Some((&i.winner, i.body.as_deref()?)));
        let is_old_kept = |r: &Rev| old_kept.is_some_and(|(w, _)| w == r);
        if winner.rev != rev {
            txn.kv_mut().put(BODIES, &body_key(id, &rev), &json);
        }
        // As CouchDB: a revision that stops being a leaf keeps its body
        // until compaction ([`Database::compact`]), so `?rev=` reads it.
        // Revisions stemmed from the tree keep theirs there too, unread
        // (a read of a revision the tree lacks finds no body:
        // `read::stored_body_of`) until compaction drops them with the
        // other non-leaves: deleting each at once was a memtable insert
        // per write of a document at `_revs_limit` (2% of a TPC-B
        // transaction). Graph-bodied revisions go at once (their body is
        // the current graph, so an old one would read as the new content).
        let mut old_kept_goes = false;
        for old in old_leaves.iter().filter(|l| tree.contains(&l.rev) && !tree.is_leaf(&l.rev)) {
            if is_old_kept(&old.rev) {
                old_kept_goes = old_kept.is_some_and(|(_, b)| body_bytes_are_graph(id, &old.rev, b).unwrap_or(false));
            } else if body_is_graph(txn, id, &old.rev)? {
                txn.kv_mut().delete(BODIES, &body_key(id, &old.rev));
            }
        }
        // The previous winner's body, kept in its record, moves to
        // `BODIES` when another revision wins and it is kept at all.
        if let Some((old, body)) = old_kept.filter(|(w, _)| **w != winner.rev && tree.contains(w) && !old_kept_goes) {
            txn.kv_mut().put(BODIES, &body_key(id, old), body);
        }
        let kept_body = if winner.rev == rev {
            Some(json)
        } else if old_kept.is_some_and(|(w, _)| *w == winner.rev) {
            old_kept.map(|(_, b)| b.to_vec())
        } else {
            // Another leaf became the winner: its body stays in `BODIES`.
            None
        };
        let (was_live, existed) = match &info {
            Some(i) => (!i.deleted, true),
            None => (false, false),
        };
        match (existed, was_live, !winner.deleted) {
            (false, _, true) => counters.doc_count += 1,
            (false, _, false) => counters.doc_del_count += 1,
            (true, true, false) => {
                counters.doc_count = counters.doc_count.saturating_sub(1);
                counters.doc_del_count += 1;
            }
            (true, false, true) => {
                counters.doc_count += 1;
                counters.doc_del_count = counters.doc_del_count.saturating_sub(1);
            }
            _ => {}
        }
        counters.update_seq += 1;
        if let Some(i) = &info {
            txn.kv_mut().delete(SEQS, &i.seq.to_be_bytes());
        }
        txn.kv_mut().put(SEQS, &counters.update_seq.to_be_bytes(), id.as_bytes());
        let old_winner = info.as_ref().map(|i| i.winner.clone());
        // Whether the winner's body is its graph alone, for reads that then
        // need not read it: known for the revision just written, kept while
        // the winner stays, read when another leaf becomes the winner.
        let graph_body = if winner.deleted {
            None
        } else if winner.rev == rev {
            graph_alone(&body)
        } else if old_winner.as_ref() == Some(&winner.rev) {
            info.as_ref().and_then(|i| i.graph_body.clone())
        } else {
            read_body(txn, id, &winner.rev)?.as_ref().and_then(graph_alone)
        };
        // The graph stays as it was while the winner does.
        let graph_was_empty = info.as_ref().is_some_and(|i| i.graph_empty);
        let winner_changes = old_winner.as_ref() != Some(&winner.rev);
        // A document rewritten soon after its last write is likely to be
        // again: its decoded record is kept for the next write
        // (`hot_docs.rs`), with its body when that is plain JSON kept in
        // the record (exactly what parsing the JSON stored gives).
        let hot = info.as_ref().is_some_and(|i| i.seq + crate::hot_docs::HOT_WINDOW_SEQS >= counters.update_seq);
        let hot_body = (hot
            && winner.rev == rev
            && !winner.deleted
            && graph_body.is_none()
            && graph_marker.is_none()
            && kept_body.is_some()
            && member(&body, crate::jsonld::GRAPH_MARKER).is_none()
            && member(&body, "_attachments").is_none())
        .then(|| body.clone());
        let mut new_info = DocInfo { seq: counters.update_seq, winner: winner.rev.clone(), deleted: winner.deleted, graph_body, graph_empty: graph_was_empty && !winner_changes, body: kept_body, tree };
        if winner_changes {
            let new_body = if winner.rev == rev { Some(body) } else { None };
            // (The record is written after: the projections read the
            // graph, the LDP index and the default context, never the
            // document's own record.)
            new_info.graph_empty = self.project(txn, id, &winner.rev, winner.deleted, new_body, ahead, graph_was_empty)?;
        }
        let record = new_info.to_bytes(id);
        txn.kv_mut().put(DOCS, id.as_bytes(), &record);
        if hot {
            self.hot_docs.keep(id, record, new_info.seq, new_info.tree, hot_body);
        }
        Ok(rev)
    }

    /// Projects the winner; `ahead` is what `prepare` did for `body` (used
    /// only when the winner is that body). `graph_empty`: the document's
    /// graph is known to hold no quad now ([`DocInfo::graph_empty`]).
    /// Returns whether it is known to hold none after.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn project(&self, txn: &mut StoreTransaction<'_>, id: &str, rev: &Rev, deleted: bool, body: Option<Map<String, Value>>, ahead: Option<crate::Prepared>, graph_empty: bool) -> Result<bool> {
        let ahead = ahead.filter(|_| body.is_some() && !deleted);
        let winner = if deleted {
            None
        } else {
            let mut body = match body {
                Some(b) => b,
                None => read_body(txn, id, rev)?.unwrap_or_default(),
            };
            body.insert("_id".into(), Value::String(id.to_owned()));
            body.insert("_rev".into(), Value::String(rev.text()));
            Some(body)
        };
        self.projector.project_known(txn, id, winner.as_ref(), ahead, graph_empty).map_err(|reason| DocError::Projection { id: id.to_owned(), reason })
    }
}

/// Clears [`DocInfo::graph_empty`] in `info` (the record of `id`) and
/// the store, for a write that put quads in the document's graph other
/// than through its projection.
fn forget_empty_graph(txn: &mut StoreTransaction<'_>, id: &str, info: Option<&mut DocInfo>) {
    if let Some(info) = info.filter(|i| i.graph_empty) {
        info.graph_empty = false;
        txn.kv_mut().put(DOCS, id.as_bytes(), &info.to_bytes(id));
    }
}

/// Marks a phase of adoption on stderr when RHIZOME_LOAD_TRACE is set (as
/// the loader's own phases), so that crash tests can kill it there.
fn trace(phase: &str) {
    if std::env::var_os("RHIZOME_LOAD_TRACE").is_some() {
        eprintln!("rhizome-load-phase: {phase}");
    }
}

/// A document's preparation for a write ([`Database::prepare_docs`]).
#[derive(Default)]
pub struct PreparedDoc {
    /// Whose rights the document is written with (by default a member's:
    /// a preparation made without saying has no more).
    pub(crate) writer: Writer,
    /// Why the document cannot be written (its projection's remote
    /// contexts could not be had, or its JSON-LD cannot be read): that
    /// document's error alone.
    refused: Option<String>,
    ahead: Option<crate::Prepared>,
    revision: Option<RevisionAhead>,
}

impl PreparedDoc {
    /// Why the document cannot be written, when its preparation found out.
    pub fn refusal(&self) -> Option<&str> {
        self.refused.as_deref()
    }
}

/// A `new_edits` revision's body, its JSON and its hash, made before the
/// write's lock: all three follow from the document alone (its members,
/// `_deleted`, and the revision it edits, from `_revisions` or `_rev`)
/// unless it has attachments, whose stubs come from the stored parent.
/// Measured on Pokec writes, they were 6% of the work all writes wait on.
struct RevisionAhead {
    /// The JSON of the document's members kept in its body, as
    /// `serde_json::to_vec` of that body writes it.
    json: Vec<u8>,
    deleted: bool,
    base: Option<Rev>,
    hash: String,
}

impl RevisionAhead {
    /// `None` where the write must work it out itself: attachments, or a
    /// document the write refuses anyway.
    fn of(doc: &Map<String, Value>) -> Option<RevisionAhead> {
        if member(&doc, "_attachments").is_some_and(|a| !a.is_null()) {
            return None;
        }
        let deleted = match member(&doc, "_deleted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return None,
        };
        let base = match revisions_path(doc).ok()? {
            Some(path) => Some(path[0].clone()),
            None => match member(&doc, "_rev") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(Rev::parse(s)?),
                Some(_) => return None,
            },
        };
        // `_access` is hashed but not kept (and refused by the write):
        // such a document takes the write's own path.
        if member(&doc, "_access").is_some() {
            return None;
        }
        // The body's JSON and hash read from the document itself: the
        // write takes the body out of the document it owns, so no copy of
        // it is made (a copy of each body was a tenth of a `_bulk_docs`).
        let json = kept_members_json(doc).ok()?;
        let hash = crate::rev_id::revision_id(deleted, base.as_ref(), doc, &[]);
        Some(RevisionAhead { json, deleted, base, hash })
    }
}

/// `serde_json::to_vec` of the members of `doc` kept in a body
/// ([`kept_in_body`]), without making that body.
fn kept_members_json(doc: &Map<String, Value>) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    out.push(b'{');
    for (i, (k, v)) in doc.iter().filter(|(k, _)| kept_in_body(k)).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, k)?;
        out.push(b':');
        serde_json::to_writer(&mut out, v)?;
    }
    out.push(b'}');
    Ok(out)
}

/// Whether the stored body of `rev` is a graph's (`{"_graph": IRI, ..}`);
/// parsed only when its bytes name the marker at all.
fn body_is_graph(txn: &StoreTransaction<'_>, id: &str, rev: &Rev) -> Result<bool> {
    match txn.kv().get(BODIES, &body_key(id, rev))? {
        Some(bytes) => body_bytes_are_graph(id, rev, &bytes),
        None => Ok(false),
    }
}

/// Whether the stored body `bytes` of `rev` is a graph's.
fn body_bytes_are_graph(id: &str, rev: &Rev, bytes: &[u8]) -> Result<bool> {
    if !names_graph_marker(bytes) {
        return Ok(false);
    }
    let body: Map<String, Value> = serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("body of {id} {rev}: {e}")))?;
    Ok(member(&body, crate::jsonld::GRAPH_MARKER).is_some())
}

/// Whether a stored body's JSON may be a graph's: false when the marker's
/// key is nowhere in it (serde_json writes that key without escapes).
fn names_graph_marker(json: &[u8]) -> bool {
    const KEY: &[u8] = b"\"_graph\"";
    debug_assert_eq!(KEY, format!("{:?}", crate::jsonld::GRAPH_MARKER).as_bytes());
    json.windows(KEY.len()).any(|w| w == KEY)
}

/// The stored body of `rev` as `txn` sees it (from the document's record
/// or `BODIES`: [`crate::read::stored_body`]).
pub(crate) fn read_body(txn: &StoreTransaction<'_>, id: &str, rev: &Rev) -> Result<Option<Map<String, Value>>> {
    match crate::read::stored_body(txn.kv(), id, rev)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).map_err(|e| DocError::Corrupt(format!("body of {id} {rev}: {e}")))?)),
        None => Ok(None),
    }
}

/// `_revisions` as a path of revisions, newest first; `None` without one.
fn revisions_path(doc: &Map<String, Value>) -> Result<Option<Vec<Rev>>> {
    let Some(revisions) = member(&doc, "_revisions").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let start = revisions.get("start").and_then(Value::as_u64).ok_or_else(|| DocError::Validation("_revisions.start isn't an integer.".into()))?;
    let ids = revisions.get("ids").and_then(Value::as_array).ok_or_else(|| DocError::Validation("_revisions.ids isn't a array.".into()))?;
    if ids.is_empty() || start < ids.len() as u64 {
        return Err(DocError::Validation("_revisions.start isn't a valid value for _revisions.ids".into()));
    }
    let path = ids
        .iter()
        .enumerate()
        .map(|(i, h)| match h.as_str() {
            Some(h) if !h.is_empty() => Ok(Rev::new(start - i as u64, h)),
            _ => Err(DocError::Validation("RevId isn't a string".into())),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(path))
}

/// The revision path a replicator sends: `_revisions` (newest first) or
/// just `_rev`. When both are there and disagree, `_revisions` wins, as in
/// CouchDB's `couch_doc:transfer_fields` (PouchDB's replicator sends such
/// documents, and refusing them would stop a whole replication).
fn replicated_path(doc: &Map<String, Value>) -> Result<Vec<Rev>> {
    if let Some(path) = revisions_path(doc)? {
        return Ok(path);
    }
    match member(&doc, "_rev").and_then(Value::as_str).map(Rev::parse) {
        Some(Some(rev)) => Ok(vec![rev]),
        Some(None) => Err(DocError::BadRequest("Invalid rev format".into())),
        None => Err(DocError::BadRequest("new_edits=false needs _rev or _revisions on every document".into())),
    }
}

/// CouchDB refuses attachment names that start with `_`
/// (`couch_httpd_db:validate_attachment_name`).
pub fn validate_attachment_name(name: &str) -> Result<()> {
    if name.starts_with('_') {
        return Err(DocError::BadRequest(format!("Attachment name '{name}' starts with prohibited character '_'")));
    }
    if name.is_empty() {
        return Err(DocError::BadRequest("Attachment name must not be empty".into()));
    }
    Ok(())
}

/// CouchDB's attachment digest: `md5-` and the base64 of the MD5.
pub fn attachment_digest(data: &[u8]) -> String {
    format!("md5-{}", base64::engine::general_purpose::STANDARD.encode(Md5::digest(data)))
}

/// Turns the `_attachments` of an incoming document into stored metadata,
/// storing new data by digest. Stubs must name an attachment of the parent
/// revision, or (replication) a digest the store has.
fn process_attachments(
    txn: &mut StoreTransaction<'_>,
    id: &str,
    atts: Option<&Value>,
    parent: Option<&Value>,
    pos: u64,
    new_edits: bool,
) -> Result<Option<Value>> {
    let atts = match atts {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(a)) => a,
        Some(_) => return Err(DocError::Validation("_attachments must be an object".into())),
    };
    let mut out = Map::new();
    for (name, att) in atts {
        let Some(att) = att.as_object() else {
            return Err(DocError::Validation(format!("attachment {name} must be an object")));
        };
        let stored = if att.get("stub").and_then(Value::as_bool) == Some(true) {
            let from_parent = parent.and_then(|p| p.get(name)).filter(|p| att.get("digest").is_none_or(|d| p.get("digest") == Some(d)));
            match (from_parent, att.get("digest").and_then(Value::as_str)) {
                (Some(p), _) => p.clone(),
                (None, Some(digest)) if crate::attachment_data::exists(txn.kv(), digest)? => {
                    let mut meta: Map<String, Value> = att.clone();
                    meta.shift_remove("stub");
                    Value::Object(meta)
                }
                _ => return Err(DocError::MissingStub(format!("Invalid attachment stub in {id} for {name}"))),
            }
        } else if let Some(data) = att.get("data") {
            let bytes = match data {
                Value::String(s) => base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .map_err(|_| DocError::Validation(format!("Invalid attachment data for {name}")))?,
                _ => return Err(DocError::Validation(format!("Invalid attachment data for {name}"))),
            };
            let digest = attachment_digest(&bytes);
            crate::attachment_data::put(txn.kv_mut(), &digest, &bytes)?;
            let revpos = if new_edits { pos } else { att.get("revpos").and_then(Value::as_u64).unwrap_or(pos) };
            let content_type = att.get("content_type").and_then(Value::as_str).unwrap_or("application/octet-stream");
            json!({ "content_type": content_type, "digest": digest, "length": bytes.len(), "revpos": revpos })
        } else {
            return Err(DocError::Validation(format!("attachment {name} has neither data nor stub")));
        };
        out.insert(name.clone(), stored);
    }
    Ok(if out.is_empty() { None } else { Some(Value::Object(out)) })
}

/// The graph IRI of a body that is a graph marker alone (no attachments).
pub(crate) fn graph_alone(body: &Map<String, Value>) -> Option<String> {
    match member(&body, crate::jsonld::GRAPH_MARKER) {
        Some(Value::String(iri)) if body.len() == 1 => Some(iri.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies() -> Vec<Map<String, Value>> {
        let values = [
            json!({}),
            json!({"a": 1, "b": [true, null, 2.5, -0.0, 1e300], "c": {"d": "e"}}),
            json!({"text": "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é ☃ 𝄞", "": ""}),
            json!({"@context": {"@vocab": "http://e/v#"}, "@id": "http://e/p/1", "AGE": 29, "n": 18446744073709551615u64, "m": -9223372036854775808i64}),
            json!({"nested": [[[{"x": [1, {"y": []}]}]]], "_attachments": {"a.txt": {"stub": true}}}),
        ];
        values.into_iter().map(|v| v.as_object().unwrap().clone()).collect()
    }

    /// A batch large enough to have its keys looked up together
    /// (`batch_keys`) gets the outcomes of the same documents written one
    /// at a time: existing ids conflict or update, repeats in the batch
    /// conflict, a new id's graph holds its triples.
    #[test]
    fn a_batch_writes_what_single_writes_write() {
        let iris = crate::DocumentIris::new("http://localhost:5984", "db");
        let (one, batch) = (
            Database::memory_with(std::sync::Arc::new(crate::JsonLdProjector::new(iris.clone()))),
            Database::memory_with(std::sync::Arc::new(crate::JsonLdProjector::new(iris))),
        );
        let first: Vec<Map<String, Value>> = (0..50).map(|i| json!({"_id": format!("d-{i}"), "n": i}).as_object().unwrap().clone()).collect();
        let mut revs = Vec::new();
        for db in [&one, &batch] {
            revs = db.update_docs(first.clone(), true).unwrap().into_iter().map(|(_, r)| r.unwrap().to_string()).collect();
        }
        let mut docs = Vec::new();
        for i in 0..120 {
            let mut d = json!({"_id": format!("d-{i}"), "@context": {"@vocab": "http://e/v#"}, "n": i * 2}).as_object().unwrap().clone();
            if i < 50 && i % 2 == 0 {
                d.insert("_rev".into(), json!(revs[i]));
            }
            docs.push(d);
        }
        docs.push(docs[70].clone());
        let singly: Vec<_> = docs.iter().map(|d| one.update_docs(vec![d.clone()], true).unwrap().remove(0)).collect();
        let together = batch.update_docs(docs.clone(), true).unwrap();
        let shown = |out: &[(String, WriteOutcome)]| out.iter().map(|(id, r)| format!("{id} {r:?}")).collect::<Vec<_>>();
        assert_eq!(shown(&together), shown(&singly));
        assert!(together[51].1.is_ok() && together[1].1.is_err() && together[120].1.is_err(), "{:?}", shown(&together));
        for id in ["d-0", "d-1", "d-70", "d-119"] {
            let read = |db: &Database| db.get_doc(id, &crate::ReadOptions::default()).unwrap();
            assert_eq!(read(&batch), read(&one), "{id}");
        }
        let graph = |db: &Database| crate::jsonld::render_graph(db.store.snapshot().unwrap().kv(), "http://localhost:5984/db/d-119", None).unwrap();
        assert_eq!(graph(&batch), graph(&one));
        assert!(!graph(&batch).is_empty(), "the new document's graph has its triples");
    }

    /// Stored bodies are the bytes `Value::to_string` writes.
    #[test]
    fn bodies_are_stored_as_their_json_text() {
        for body in bodies() {
            assert_eq!(serde_json::to_vec(&body).unwrap(), Value::Object(body.clone()).to_string().into_bytes());
        }
    }

    /// A first load's documents made as sorted runs are, key for key, the
    /// records transactions make (in one chunk and in several): graphs
    /// outside the database's prefix and under it, an id two graphs name
    /// (the first has it), ids refused, a blank graph. With documents left
    /// to transactions (a design document, and those whose projection has
    /// work to do) the same documents, revisions and bodies, numbered in
    /// another order.
    #[test]
    fn a_first_loads_documents_as_runs_are_the_records_transactions_make() {
        struct Watching {
            inner: crate::JsonLdProjector,
            projected: std::sync::atomic::AtomicUsize,
            busy: bool,
        }
        impl crate::GraphProjector for Watching {
            fn project(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>) -> std::result::Result<(), String> {
                self.projected.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                self.inner.project(txn, doc_id, winner)
            }
            fn doc_id(&self, graph_iri: &str) -> Option<String> {
                self.inner.doc_id(graph_iri)
            }
            fn projects_graph_bodies(&self, doc_id: &str) -> bool {
                self.busy && doc_id.ends_with('7')
            }
        }
        type Records = Vec<(rhizome_kv::Keyspace, Vec<u8>, Vec<u8>)>;
        let adopt = |nq: &str, busy: bool, runs: Option<usize>| -> (u64, Records, usize, Database) {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("data.nq");
            std::fs::write(&file, nq).unwrap();
            let projector = std::sync::Arc::new(Watching { inner: crate::JsonLdProjector::new(crate::DocumentIris::new("http://localhost:5984", "db")), projected: Default::default(), busy });
            let db = Database::memory_with(projector.clone());
            db.store().load(&[rhizome_rdf::LoadInput { path: file }], &rhizome_rdf::LoadOptions::default()).unwrap();
            let adopted = db.adopt_graphs_with(3, |_| {}, runs).unwrap();
            let snapshot = db.store().snapshot().unwrap();
            let mut records = Vec::new();
            for ks in [DOCS, SEQS, BODIES, DB_META] {
                let mut c = snapshot.kv().cursor(ks, &[], None);
                c.seek_first();
                while c.valid() {
                    records.push((ks, c.key().to_vec(), c.value().to_vec()));
                    c.next();
                }
            }
            drop(snapshot);
            (adopted, records, projector.projected.load(std::sync::atomic::Ordering::SeqCst), db)
        };
        let first_difference = |a: &Records, b: &Records| a.iter().zip(b).position(|(x, y)| x != y).map(|i| (a[i].clone(), b[i].clone())).or((a.len() != b.len()).then(|| ((DOCS, vec![], a.len().to_be_bytes().to_vec()), (DOCS, vec![], b.len().to_be_bytes().to_vec()))));
        let mut nq = String::new();
        for i in 0..40 {
            nq.push_str(&format!("<http://example.org/s{i}> <http://example.org/p> \"{i}\" .\n"));
        }
        for g in ["people%20x", "http%3A%2F%2Fexample.org%2Fs3", "_foo", "caf%C3%A9"] {
            nq.push_str(&format!("<http://example.org/o> <http://example.org/p> \"in {g}\" <http://localhost:5984/db/{g}> .\n"));
        }
        nq.push_str("<http://example.org/o> <http://example.org/p> \"blank\" _:g .\n");
        let (adopted, records, projected, _) = adopt(&nq, false, None);
        // 40 subjects and three graphs under the prefix (not `_foo`, and
        // `s3` once); a blank graph none.
        assert_eq!((adopted, projected), (42, 42));
        for chunk in [1_000, 7] {
            let (runs_adopted, runs_records, runs_projected, db) = adopt(&nq, false, Some(chunk));
            assert_eq!((runs_adopted, runs_projected), (adopted, 0), "chunks of {chunk}");
            assert_eq!(first_difference(&runs_records, &records), None, "chunks of {chunk}");
            assert_eq!(db.adopt_graphs(3, |_| {}).unwrap(), 0, "adoption is idempotent");
            let doc = db.get_doc("http://example.org/s3", &crate::ReadOptions::default()).unwrap();
            assert_eq!(doc["@graph"][0]["@id"], json!("http://example.org/s3"));
        }
        // Left to transactions: the same documents, numbered after the others.
        nq.push_str("<http://example.org/o> <http://example.org/p> \"design\" <http://localhost:5984/db/_design%2Fv> .\n");
        let without_seqs = |records: &Records| -> Records {
            let mut out: Records = records
                .iter()
                .filter(|(ks, ..)| *ks != SEQS)
                .map(|(ks, k, v)| match *ks {
                    DOCS => {
                        let id = std::str::from_utf8(k).unwrap();
                        let mut info = DocInfo::from_bytes(id, v).unwrap();
                        info.seq = 0;
                        (*ks, k.clone(), info.to_bytes(id))
                    }
                    _ => (*ks, k.clone(), v.clone()),
                })
                .collect();
            out.extend(records.iter().filter(|(ks, ..)| *ks == SEQS).map(|(ks, _, v)| (*ks, vec![], v.clone())));
            out.sort();
            out
        };
        let (adopted, records, _, _) = adopt(&nq, true, None);
        assert_eq!(adopted, 43);
        for chunk in [1_000, 7] {
            let (runs_adopted, runs_records, runs_projected, db) = adopt(&nq, true, Some(chunk));
            assert_eq!(runs_adopted, adopted, "chunks of {chunk}");
            // s7, s17, s27, s37 and the design document, through transactions.
            assert_eq!(runs_projected, 5, "chunks of {chunk}");
            assert_eq!(first_difference(&without_seqs(&runs_records), &without_seqs(&records)), None, "chunks of {chunk}");
            assert!(db.may_have_design_docs(), "a design document is known as one");
        }
    }

    /// A revision made ahead of the write's lock is the one the write
    /// would work out: same body, same JSON, same hash, for every way a
    /// document names the revision it edits; none where the write must
    /// look at the store (attachments) or refuses the document.
    #[test]
    fn a_revision_made_ahead_is_the_one_the_write_works_out() {
        let parent = "3-0123456789abcdef0123456789abcdef";
        let parent_rev = Rev::parse(parent).unwrap();
        let edits: [(Value, bool, Option<&Rev>); 6] = [
            (json!({}), false, None),
            (json!({"_rev": parent}), false, Some(&parent_rev)),
            (json!({"_rev": parent, "_deleted": true}), true, Some(&parent_rev)),
            (json!({"_deleted": false, "_rev": null}), false, None),
            // `_revisions` names the revision edited, whatever `_rev` says.
            (json!({"_rev": "1-aa", "_revisions": {"start": 3, "ids": ["0123456789abcdef0123456789abcdef", "bb", "cc"]}}), false, Some(&parent_rev)),
            (json!({"_id": "x", "_replication_state": "done"}), false, None),
        ];
        for body in bodies() {
            for (members, deleted, base) in &edits {
                let mut doc = body.clone();
                doc.extend(members.as_object().unwrap().clone());
                let ahead = RevisionAhead::of(&doc);
                if body.contains_key("_attachments") {
                    assert!(ahead.is_none(), "attachments come from the stored parent: {doc:?}");
                    continue;
                }
                let ahead = ahead.unwrap_or_else(|| panic!("made ahead: {doc:?}"));
                let kept: Map<String, Value> = doc.iter().filter(|(k, _)| kept_in_body(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(ahead.json, serde_json::to_vec(&kept).unwrap());
                assert_eq!((ahead.deleted, ahead.base.as_ref()), (*deleted, *base));
                assert_eq!(ahead.hash, crate::rev_id::revision_id(*deleted, *base, &kept, &[]), "{doc:?}");
            }
        }
        for refused in [json!({"_rev": "nonsense"}), json!({"_rev": 3}), json!({"_deleted": "yes"}), json!({"_revisions": {"start": 0, "ids": ["a"]}})] {
            assert!(RevisionAhead::of(refused.as_object().unwrap()).is_none(), "{refused}");
        }
    }
}
