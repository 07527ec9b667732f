//! `rhizome-docs`: CouchDB's document semantics over the store.
//!
//! Owns (so far): revision trees exactly as CouchDB keeps them: revision
//! ids `N-hash`, branches and conflicts, deleted leaves, the deterministic
//! winner, merging the revision paths replication sends (`new_edits=false`)
//! and stemming at `_revs_limit`. To come (see the server issue): document
//! storage in the same transaction as the document's RDF graph, `_changes`,
//! `_all_docs`, `_bulk_docs`, `_local` documents, attachments, JSON-LD
//! projection. Does not own HTTP (`rhizome-server`) or replication
//! (`rhizome-replication`).
//!
//! Main types: [`RevTree`], [`Rev`], [`EditError`].

mod revtree;

pub use revtree::{EditError, Leaf, Rev, RevTree};
