//! The hook through which a document write updates the document's graph.
//!
//! The design (../shared/design.md, "a document is a named graph") indexes
//! the winning revision of every document as RDF in the same transaction as
//! the write. The JSON-LD projection itself lives outside this crate's
//! storage code: the store calls a [`GraphProjector`] with the open
//! transaction whenever a document's winner changes, and commits only after
//! it returns.

use crate::{DocError, Writer};
use rhizome_kv::KvRead;
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};

/// Work a projector did ahead of a write (see [`GraphProjector::prepare`]).
pub type Prepared = Box<dyn std::any::Any + Send>;

/// What a write is about to do to a document's graph, for
/// [`GraphProjector::check_change`].
#[derive(Clone, Copy)]
pub enum GraphChange<'a> {
    /// The document's winner becomes a deletion: its graph goes.
    Deleted,
    /// A revision with this JSON body is written (the graph is what the
    /// projection will read from it; nothing of it is in the store yet).
    Body(&'a Map<String, Value>),
    /// A graph write has put the new graph in the transaction already;
    /// `before` is the store as it was before the write.
    Written { before: &'a dyn KvRead },
}

/// Called inside every document write, before the commit.
pub trait GraphProjector: Send + Sync {
    /// `winner` is the new winning revision's body (with `_id` and `_rev`),
    /// or `None` when the document's winner is now deleted. An error aborts
    /// the whole write (nothing is committed).
    fn project(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>) -> Result<(), String>;

    /// The IRI of a document's graph, if documents have graphs.
    fn graph_iri(&self, _doc_id: &str) -> Option<String> {
        None
    }

    /// The id of the document whose graph this is, if documents have graphs.
    fn doc_id(&self, _graph_iri: &str) -> Option<String> {
        None
    }

    /// Why a document written from its JSON (not a deletion) may not have
    /// this id: its graph would be another document's. Called before the
    /// write changes anything; the reason becomes a 409.
    fn id_conflict(&self, _txn: &StoreTransaction<'_>, _doc_id: &str) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Checks a `_local` document before it is stored, for the local
    /// documents the projection reads (a default context); the reason
    /// becomes a 400.
    fn check_local(&self, _id: &str, _doc: &Map<String, Value>) -> Result<(), String> {
        Ok(())
    }

    /// Called for each document of a write before the write's transaction
    /// (and lock) is taken, on the writer's own thread: gets what the
    /// projection needs from outside (remote JSON-LD contexts; the reason
    /// becomes that document's 400), and may do the projection's work
    /// ahead, reading `reader` (a snapshot): what it returns is handed to
    /// [`GraphProjector::project_prepared`] if the document's body is the
    /// winner, which checks it still holds. Group commit runs this on each
    /// request's thread, so the one thread applying a batch does not parse.
    fn prepare(&self, _reader: &dyn rhizome_kv::KvRead, _doc: &Map<String, Value>) -> Result<Option<Prepared>, String> {
        Ok(None)
    }

    /// [`GraphProjector::project`] of a winner whose body is the document
    /// `prepare` saw, with what it returned.
    fn project_prepared(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: &Map<String, Value>, _prepared: Prepared) -> Result<(), String> {
        self.project(txn, doc_id, Some(winner))
    }

    /// [`GraphProjector::project`] (or, with `prepared`, its
    /// [`GraphProjector::project_prepared`]) for a caller that knows
    /// whether the document's graph holds no quad before the write
    /// (`graph_empty`, [`crate::keys::DocInfo::graph_empty`]): then there
    /// is no graph to look for and drop. Returns whether the graph holds
    /// no quad after it; `false` means "not known", which is always
    /// correct (the default: a projector that writes into other graphs as
    /// well, or whose graph another write may fill, answers so).
    fn project_known(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>, prepared: Option<Prepared>, _graph_empty: bool) -> Result<bool, String> {
        match (prepared, winner) {
            (Some(prepared), Some(w)) => self.project_prepared(txn, doc_id, w, prepared)?,
            _ => self.project(txn, doc_id, winner)?,
        }
        Ok(false)
    }

    /// Whether [`GraphProjector::project`] does anything for a document
    /// whose body is its graph (`{"_graph": IRI}`, such as one made from
    /// a loaded graph). When it does not, a first load's documents are
    /// written as sorted runs, outside transactions (see
    /// `Database::adopt_graphs`).
    fn projects_graph_bodies(&self, _doc_id: &str) -> bool {
        false
    }

    /// The remote contexts the projection reads, if any (for RDF writes
    /// that give a JSON document back its shape).
    fn contexts(&self) -> Option<&crate::contexts::ContextStore> {
        None
    }

    /// Why this database takes no graph writes at all, if it takes none
    /// (a system database: [`NoGraphs`]). The reason becomes a 403.
    fn refuses_graph_writes(&self) -> Option<&'static str> {
        None
    }

    /// Why no document of this database may have graph `iri`, if none may:
    /// it names another database's document (`<base>/<other>/...`). The
    /// reason becomes a 403 (`crate::rights`).
    fn foreign_graph(&self, _iri: &str) -> Option<String> {
        None
    }

    /// The rules the projection keeps for the documents it knows better
    /// than the store (LDP resources: `rhizome-ldp`), checked before a
    /// revision of `doc_id` is stored: `writer` is who writes it,
    /// `replicated` whether it is a replicated revision (`new_edits=false`).
    /// An error refuses the document (a graph write: the whole write).
    fn check_change(&self, _txn: &StoreTransaction<'_>, _doc_id: &str, _change: GraphChange<'_>, _writer: Writer, _replicated: bool) -> Result<(), DocError> {
        Ok(())
    }

    /// The quads the projection reads from a JSON body of `doc_id` (none
    /// for plain JSON), without writing them: what
    /// [`GraphProjector::check_change`] of a wrapping projector inspects.
    fn graph_of(&self, _reader: &dyn KvRead, _doc_id: &str, _body: &Map<String, Value>) -> Result<Vec<oxrdf::Quad>, String> {
        Ok(Vec::new())
    }
}

/// Projects nothing: documents stay documents only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProjection;

impl GraphProjector for NoProjection {
    fn project(&self, _txn: &mut StoreTransaction<'_>, _doc_id: &str, _winner: Option<&Map<String, Value>>) -> Result<(), String> {
        Ok(())
    }
}

/// The projector of a system database (`_users`, `_replicator`): its
/// documents are the server's own records, with no graphs, and no graph
/// write reaches them (a SPARQL `INSERT` there would make documents that
/// skip the checks their own writes pass, such as `_users`' on names,
/// roles and passwords).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoGraphs;

impl GraphProjector for NoGraphs {
    fn project(&self, _txn: &mut StoreTransaction<'_>, _doc_id: &str, _winner: Option<&Map<String, Value>>) -> Result<(), String> {
        Ok(())
    }

    fn refuses_graph_writes(&self) -> Option<&'static str> {
        Some("this is a system database: its documents have no graphs, and it takes no graph writes")
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, DocError, DocumentIris, JsonLdProjector};
    use serde_json::{json, Map, Value};
    use std::sync::Arc;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().expect("an object").clone()
    }

    fn projector(db: &str) -> Arc<JsonLdProjector> {
        Arc::new(JsonLdProjector::new(DocumentIris::new("http://localhost:5984", db)))
    }

    #[test]
    fn a_document_never_shares_its_graph_with_another() {
        // A document whose id is doc1's graph IRI, stored as if before the
        // rule (the database was named otherwise then).
        let mut db = Database::memory_with(projector("other"));
        let legacy = "http://localhost:5984/db/doc1";
        // (Written unchecked, as data from before the rules: today another
        // database's graph IRI is refused as an id.)
        let written = db.update_docs_as(vec![doc(json!({ "_id": legacy, "@id": "http://e/s", "http://e/p": 1 }))], true, crate::Writer::Loader).unwrap();
        let legacy_rev = written[0].1.as_ref().expect("written").to_string();
        db.projector = projector("db");
        // Now doc1 would share that graph: refused, naming the other id.
        for new_edits in [true, false] {
            let d = doc(json!({ "_id": "doc1", "_rev": "1-abc" }));
            let out = db.update_docs(vec![d], new_edits).unwrap();
            assert!(matches!(&out[0].1, Err(DocError::IdConflict(r)) if r.contains(legacy)), "{:?}", out[0].1);
        }
        // New ids under the prefix are refused in both modes, with the
        // document they would shadow named.
        for new_edits in [true, false] {
            let out = db.update_docs(vec![doc(json!({ "_id": "http://localhost:5984/db/x%20y", "_rev": "1-abc" }))], new_edits).unwrap();
            assert!(matches!(&out[0].1, Err(DocError::IdConflict(r)) if r.contains("\"x y\"")), "{:?}", out[0].1);
        }
        // The old document can still be deleted; then doc1 is free.
        let out = db.update_docs(vec![doc(json!({ "_id": legacy, "_rev": legacy_rev, "_deleted": true }))], true).unwrap();
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
        let out = db.update_docs(vec![doc(json!({ "_id": "doc1" }))], true).unwrap();
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
        // Absolute IRIs elsewhere are their own graphs, as before.
        let out = db.update_docs(vec![doc(json!({ "_id": "http://example.org/doc1" }))], true).unwrap();
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    }

    #[test]
    fn a_bad_default_context_stored_unchecked_fails_writes_with_a_reason_and_can_be_removed() {
        let db = Database::memory_with(projector("db"));
        let mut context = Map::new();
        context.insert("t0".into(), json!("http://e/"));
        for i in 1..=2_000 {
            context.insert(format!("t{i}"), json!(format!("t{}:a", i - 1)));
        }
        let stored = json!({ "@context": context });
        // Written behind put_local's back, as an older version could have.
        let mut txn = db.store.transaction().unwrap();
        txn.kv_mut().put(crate::keys::LOCAL, crate::DEFAULT_CONTEXT_DOC.as_bytes(), stored.to_string().as_bytes());
        txn.commit().unwrap();
        // Refused before the write, that document alone (a batch's other
        // documents are written).
        let out = db.update_docs(vec![doc(json!({ "_id": "a", "t1": 1 }))], true).unwrap();
        assert!(matches!(&out[0].1, Err(DocError::Validation(reason)) if reason.contains(crate::DEFAULT_CONTEXT_DOC) && reason.contains("256")), "{out:?}");
        assert!(matches!(db.put_local(crate::DEFAULT_CONTEXT_DOC, doc(stored)), Err(DocError::Validation(_))));
        db.put_local(crate::DEFAULT_CONTEXT_DOC, doc(json!({ "_deleted": true }))).unwrap();
        let out = db.update_docs(vec![doc(json!({ "_id": "a", "t1": 1 }))], true).unwrap();
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    }
}
