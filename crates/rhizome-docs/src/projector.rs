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
}

/// Projects nothing: documents stay documents only.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProjection;

impl GraphProjector for NoProjection {
    fn project(&self, _txn: &mut StoreTransaction<'_>, _doc_id: &str, _winner: Option<&Map<String, Value>>) -> Result<(), String> {
        Ok(())
    }
}
