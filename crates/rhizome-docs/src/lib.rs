//! `rhizome-docs`: CouchDB's document semantics over the store.
//!
//! Owns: revision trees exactly as CouchDB keeps them ([`RevTree`]: `N-hash`
//! ids, branches and conflicts, deleted leaves, the deterministic winner,
//! merging replicated paths, stemming at `_revs_limit`); document storage in
//! the same store (and transaction) as the database's quads ([`Database`]):
//! writes with and without `new_edits`, reads with CouchDB's options,
//! `_all_docs`, `_changes` with `_doc_ids` and Mango `_selector` filters,
//! Mango queries (`_find`, `_explain`, JSON indexes kept in the store),
//! attachments stored by digest, `_local` documents, `_security` and
//! `_revs_limit`; the [`GraphProjector`] hook through which a write
//! updates the document's graph in its own transaction; and remote JSON-LD
//! contexts ([`ContextStore`]: shipped ones and a cache, no network of
//! its own). Does not own HTTP
//! (`rhizome-server`), replication (`rhizome-replication`) or the JSON-LD
//! projection itself (a `GraphProjector` implementation).
//!
//! Everything here is synchronous: a write returns when it is durable.
//!
//! Main types: [`Database`], [`RevTree`], [`Rev`], [`DocError`],
//! [`ReadOptions`], [`AllDocsOptions`], [`ChangesOptions`].

mod all_docs;
mod attachment_data;
mod changes;
mod compact;
pub mod contexts;
mod database;
mod doc_checks;
mod error;
mod graph_write;
pub mod keys;
mod jsonld;
mod json_ld_view;
mod jsonld_flat;
mod jsonld_limits;
mod local_docs;
pub mod mango;
mod projector;
mod purge;
mod read;
mod rev_id;
mod revtree;
mod rights;
pub mod collate;
pub mod secondary;
pub mod selector;
mod write;

pub use all_docs::{AllDocs, AllDocsOptions};
pub use contexts::{ContextFetcher, ContextSource, ContextStore};
pub use changes::{Changes, ChangesFilter, ChangesOptions, DocFilter};
pub use doc_checks::check_document_json;
pub use database::{valid_db_name, Compacted, Database, DbInfo, DEFAULT_REVS_LIMIT};
pub use error::{DocError, Result};
pub use graph_write::{EmptiedGraphs, DEFAULT_GRAPH_DOC};
pub use jsonld::{DocumentIris, JsonLdProjector, DEFAULT_CONTEXT_DOC, MAX_DOCUMENT_JSON_VALUES, MAX_DOCUMENT_TRIPLES};
pub use jsonld_limits::{check_json_ld, on_known_stack, on_known_stack_if, JSONLD_STACK_BYTES, MAX_CONTEXT_COPIES, MAX_CONTEXT_DEPTH, MAX_CONTEXT_TERMS, MAX_JSON_DEPTH};
pub use purge::{DEFAULT_PURGED_INFOS_LIMIT, MAX_PURGE_DOCS, MAX_PURGE_REVS};
pub use projector::{GraphChange, GraphProjector, NoGraphs, NoProjection, Prepared};
pub use rights::{Writer, NOT_ADMIN};
pub use read::{Attachment, AttachmentReader, OpenRev, OpenRevs, ReadOptions};
pub use revtree::{EditError, Leaf, Rev, RevTree};
pub use write::{attachment_digest, validate_attachment_name, validate_doc_id, PreparedDoc, WriteCheck, WriteOutcome};
