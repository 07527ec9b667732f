//! `rhizome-views`: CouchDB's query side over a Rhizome database
//! (../shared/design.md: design documents, map/reduce views with a
//! sandboxed embedded JavaScript engine, design-document filters and
//! validation).
//!
//! Owns: the sandbox ([`js`]: QuickJS through `rquickjs`, CouchDB's helpers
//! in `prelude.js`, memory, stack and per-call time limits), design
//! documents ([`design`]: parsing, signatures, the checks CouchDB makes on
//! write), the built-in and JavaScript reduce functions ([`reduce`]:
//! `_count`, `_sum`, `_stats`, `_approx_count_distinct`, JavaScript with
//! rereduce), view indexes in the database's store kept up to date from its
//! sequence ([`index`]: keyspaces 40-43, rows in `rhizome_docs::collate`
//! order, brought to the database's sequence in batches of 1000 documents
//! mapped outside the database's writer; an index built from nothing is
//! written as sorted runs ingested at once, `bulk_build.rs`), view queries with CouchDB's
//! options ([`query`]), `indexer` tasks ([`tasks`]), update functions
//! ([`update`]), design-document filters for `_changes` and replication
//! ([`filter`], through `rhizome_docs::DocFilter`), and `validate_doc_update`
//! with the checks every document write passes first, whatever its door
//! ([`validate`]: [`validate::write_unless_refused`] for document writes,
//! [`validate::rdf_write_validated`] for graph writes through
//! `rhizome_docs::Database::rdf_write_checked`, which shows each revision a
//! graph write makes to the check before it is written; used by the server
//! and by Python). Does not own HTTP (`rhizome-server`), documents
//! (`rhizome-docs`, whose collation the indexes use) or Mango
//! (`rhizome-docs`' `mango`, beside the selector engine it shares with
//! `_changes`).
//!
//! Invariants: an index is named by its design document's signature (which
//! includes the rows' order version), so a changed view is a new index and
//! stale ones are dropped by `_view_cleanup`; a view's rows and its rank
//! buckets (with their stored reductions, `bucket_summary`) change in the
//! same transaction (or, for a build from nothing, the same ingestion); JavaScript never runs inside the
//! database's writer for a view build.

mod bucket_summary;
mod bulk_build;
pub mod design;
mod design_fields;
pub mod filter;
pub mod index;
pub mod js;
pub mod query;
mod rank;
pub mod reduce;
pub mod tasks;
pub mod update;
pub mod validate;

pub use design::{check_design_doc, DesignDoc, DesignError, ViewDef};
pub use index::{refresh, ViewError};
/// The keyspaces of view indexes (rows, rows by document, states, ranks):
/// all derived, dropped to be rebuilt when what they index is renamed.
pub const VIEW_INDEX_KEYSPACES: [rhizome_kv::Keyspace; 4] = [index::VIEW_ROWS, index::VIEW_DOC_ROWS, index::VIEW_STATE, rank::VIEW_RANKS];
pub use js::{JsError, Limits, RequestBounds, Sandbox};
pub use query::{run_query, run_query_into, UpdateMode, ViewQuery};
