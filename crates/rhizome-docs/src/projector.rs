//! The hook through which a document write updates the document's graph.
//!
//! The design (../shared/design.md, "a document is a named graph") indexes
//! the winning revision of every document as RDF in the same transaction as
//! the write. The JSON-LD projection itself lives outside this crate's
//! storage code: the store calls a [`GraphProjector`] with the open
//! transaction whenever a document's winner changes, and commits only after
//! it returns.

use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};

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
}

/// Projects nothing: documents stay documents only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProjection;

impl GraphProjector for NoProjection {
    fn project(&self, _txn: &mut StoreTransaction<'_>, _doc_id: &str, _winner: Option<&Map<String, Value>>) -> Result<(), String> {
        Ok(())
    }
}
