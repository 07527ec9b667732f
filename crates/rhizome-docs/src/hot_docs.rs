//! The decoded records of documents rewritten again and again (TPC-B's
//! branch and teller rows: every transaction edits one of each), kept by
//! the writer from one write to the next.
//!
//! A write reads a document's record, parses its winner's body (to apply
//! operations to it) and decodes its revision tree (to edit it); for a
//! hot document both are what the previous write of it had in hand. Each
//! entry is the decoding of one exact record: its bytes are kept, and an
//! entry is used only when the record the writer reads now has the same
//! bytes. Any write of a document through any door rewrites its record
//! (its sequence at least changes), and a purge deletes or rewrites it,
//! so a changed document is never served from here: the entry is a memo
//! of a pure function of the record's bytes, not a copy of state that
//! could go stale. Writers that never consult it (bulk loads, compaction,
//! replication, another process sharing the store) need not tell it.
//!
//! Only the write path fills it, and only with documents rewritten within
//! [`HOT_WINDOW_SEQS`] updates of their previous write, so that a run of
//! cold documents (accounts, new history rows) does not pay for a copy it
//! never reads back. Measured on TPC-B scale 10, 8 clients, in process
//! (`bench/tpcb/instructions`, with the revision tree's cheaper stemming):
//! 438.6k -> 400.2k instructions per transaction in the whole process.

use crate::RevTree;
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use std::sync::Mutex;

/// A document whose previous write is at most this many updates back is
/// kept (TPC-B scale 10 at 8 clients rewrites a teller every ~400).
pub(crate) const HOT_WINDOW_SEQS: u64 = 4096;

/// Entries past which the ones outside the window are dropped (and all,
/// if that is not enough): a hot set is small.
const MAX_ENTRIES: usize = 1024;

struct HotDoc {
    /// The record these are the decoding of (`keys::DocInfo::to_bytes`).
    record: Vec<u8>,
    /// Its sequence (for eviction).
    seq: u64,
    tree: Option<RevTree>,
    /// The winner's stored body, parsed: only for a live winner kept in
    /// its record whose body is plain JSON (no graph marker, no
    /// attachments), so that rendering it needs nothing else.
    body: Option<Map<String, Value>>,
}

/// See the module's doc. Used under the store's writer lock; the mutex
/// only makes the database `Sync`.
#[derive(Default)]
pub(crate) struct HotDocs {
    entries: Mutex<FxHashMap<String, HotDoc>>,
    #[cfg(test)]
    pub(crate) hits: std::sync::atomic::AtomicU64,
}

impl HotDocs {
    fn lock(&self) -> std::sync::MutexGuard<'_, FxHashMap<String, HotDoc>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn hit(&self) {
        #[cfg(test)]
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The parsed winner's body of `id` when `record` is the record it was
    /// kept with; taken (the write that follows keeps the next one).
    pub(crate) fn take_body(&self, id: &str, record: &[u8]) -> Option<Map<String, Value>> {
        let mut entries = self.lock();
        let e = entries.get_mut(id).filter(|e| e.record == record)?;
        let body = e.body.take();
        if body.is_some() {
            self.hit();
        }
        body
    }

    /// The decoded revision tree of `id` when `record` is the record it
    /// was kept with; the entry goes (the write replaces the record).
    pub(crate) fn take_tree(&self, id: &str, record: &[u8]) -> Option<RevTree> {
        let mut entries = self.lock();
        if entries.get(id).is_some_and(|e| e.record == record && e.tree.is_some()) {
            self.hit();
            return entries.remove(id).and_then(|e| e.tree);
        }
        None
    }

    /// Keeps the decoding of `record`, the record just written for `id`
    /// at `seq`: its `tree` and, when given, its winner's `body` exactly
    /// as parsing the body's stored JSON gives it.
    pub(crate) fn keep(&self, id: &str, record: Vec<u8>, seq: u64, tree: RevTree, body: Option<Map<String, Value>>) {
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(id) {
            entries.retain(|_, e| e.seq + HOT_WINDOW_SEQS >= seq);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(id.to_owned(), HotDoc { record, seq, tree: Some(tree), body });
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, DocumentIris, JsonLdProjector, OpKind, ReadOptions, Rev, TxnOp, Writer};
    use serde_json::{json, Map, Value};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    const BASE: &str = "http://localhost:5984";

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    fn database() -> Database {
        Database::memory_with(Arc::new(JsonLdProjector::new(DocumentIris::new(BASE, "db"))))
    }

    fn ops(db: &Database, ops: &[TxnOp]) -> Vec<crate::OpResult> {
        db.apply_ops(ops, None, Writer::Admin).unwrap().unwrap()
    }

    fn inc(db: &Database, id: &str, by: i64) -> Map<String, Value> {
        let op = TxnOp { id: id.into(), rev: None, kind: OpKind::Inc(obj(json!({ "balance": by }))) };
        ops(db, &[op]).remove(0).doc.expect("inc answers the document")
    }

    /// What a `_transaction`'s `get` reads of `id` is what a plain read
    /// gives of the committed document (revision included).
    fn reads_as_committed(db: &Database, id: &str) -> Map<String, Value> {
        let read = ops(db, &[TxnOp { id: id.into(), rev: None, kind: OpKind::Get }]).remove(0).doc.expect("a live document");
        assert_eq!(read, db.get_doc(id, &ReadOptions::default()).unwrap(), "{id} read in a transaction");
        read
    }

    fn hits(db: &Database) -> u64 {
        db.hot_docs.hits.load(Ordering::Relaxed)
    }

    fn hot(db: &Database) {
        db.update_docs(vec![obj(json!({"_id": "b:1", "balance": 0, "name": "branch"}))], true).unwrap()[0].1.as_ref().unwrap();
        for _ in 0..3 {
            inc(db, "b:1", 1);
        }
        assert_eq!(reads_as_committed(db, "b:1")["balance"], 3);
    }

    #[test]
    fn a_document_rewritten_again_and_again_is_written_from_its_decoded_record() {
        let db = database();
        db.set_revs_limit(4).unwrap();
        hot(&db);
        let before = hits(&db);
        for i in 1..=20 {
            assert_eq!(inc(&db, "b:1", 1)["balance"], 3 + i);
        }
        // Each transaction takes the body (read) and the tree (write);
        // the first finds no body (the `get` before took it).
        assert!(hits(&db) >= before + 39, "{} hits", hits(&db) - before);
        let doc = db.get_doc("b:1", &ReadOptions { revs: true, ..Default::default() }).unwrap();
        assert_eq!(doc["balance"], 23);
        assert_eq!(doc["name"], "branch");
        assert_eq!(doc["_rev"].as_str().unwrap().split('-').next(), Some("24"));
        // The stemmed history, exactly `_revs_limit` long.
        assert_eq!(doc["_revisions"]["ids"].as_array().unwrap().len(), 4);
        assert_eq!(reads_as_committed(&db, "b:1")["balance"], 23);
    }

    #[test]
    fn a_write_through_another_door_is_seen_by_the_next_transaction() {
        let db = database();
        hot(&db);
        // A PUT (or `_bulk_docs`) of a new body.
        let rev = db.get_doc("b:1", &ReadOptions::default()).unwrap()["_rev"].clone();
        db.update_docs(vec![obj(json!({"_id": "b:1", "_rev": rev, "balance": 100, "name": "put"}))], true).unwrap()[0].1.as_ref().unwrap();
        assert_eq!(reads_as_committed(&db, "b:1")["name"], "put");
        assert_eq!(inc(&db, "b:1", 1)["balance"], 101);
        inc(&db, "b:1", 1);
        let before = hits(&db);
        assert_eq!(reads_as_committed(&db, "b:1")["balance"], 102);
        assert!(hits(&db) > before, "hot again after the PUT");

        // Replication (`new_edits=false`): a longer branch wins.
        let replicated = obj(json!({"_id": "b:1", "_rev": "90-ffff", "_revisions": {"start": 90, "ids": ["ffff", "eeee"]}, "balance": 500, "name": "replicated"}));
        db.update_docs(vec![replicated], false).unwrap()[0].1.as_ref().unwrap();
        let read = reads_as_committed(&db, "b:1");
        assert_eq!((read["_rev"].as_str(), &read["balance"]), (Some("90-ffff"), &json!(500)));
        assert_eq!(inc(&db, "b:1", 1)["balance"], 501);
        inc(&db, "b:1", 1);
        assert_eq!(reads_as_committed(&db, "b:1")["balance"], 502);

        // A purge of the winning branch: the other one wins again.
        let winner = Rev::parse(db.get_doc("b:1", &ReadOptions::default()).unwrap()["_rev"].as_str().unwrap()).unwrap();
        db.purge(&[("b:1".into(), vec![winner])]).unwrap();
        let read = reads_as_committed(&db, "b:1");
        assert_eq!(read["balance"], 102, "the branch left: {read:?}");
        assert_eq!(inc(&db, "b:1", 1)["balance"], 103);
        inc(&db, "b:1", 1);

        // Compaction (the record stays; old bodies go).
        db.compact().unwrap();
        assert_eq!(reads_as_committed(&db, "b:1")["balance"], 104);
        assert_eq!(inc(&db, "b:1", 1)["balance"], 105);

        // An RDF write (SPARQL Update) to the document's graph.
        // (An id that is an absolute IRI is its own graph's name.)
        let rev = reads_as_committed(&db, "b:1")["_rev"].clone();
        let g = oxrdf::NamedNode::new("b:1").unwrap();
        let p = oxrdf::NamedNode::new("http://example.com/p").unwrap();
        db.rdf_write(|txn| -> crate::Result<()> {
            let q = oxrdf::QuadRef::new(g.as_ref(), p.as_ref(), oxrdf::LiteralRef::new_simple_literal("x"), oxrdf::GraphNameRef::NamedNode(g.as_ref()));
            let ids = txn.encode_quad(q)?;
            txn.insert(&ids)?;
            Ok(())
        })
        .unwrap();
        let read = reads_as_committed(&db, "b:1");
        assert_ne!(read["_rev"], rev, "the graph write made a revision");
        inc(&db, "b:1", 1);
        reads_as_committed(&db, "b:1");

        // A transaction dropped after its writes (a group commit that
        // aborted): the committed record stays what is read.
        let committed = reads_as_committed(&db, "b:1");
        let mut txn = db.store().transaction().unwrap();
        let op = TxnOp { id: "b:1".into(), rev: None, kind: OpKind::Set(obj(json!({ "name": "dropped" }))) };
        db.apply_ops_in(&mut txn, &[op], None, Writer::Admin).unwrap().unwrap();
        drop(txn);
        assert_eq!(reads_as_committed(&db, "b:1"), committed);
    }
}
