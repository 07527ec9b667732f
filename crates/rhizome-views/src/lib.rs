//! `rhizome-views`: CouchDB's query side over a Rhizome database
//! (../shared/design.md: design documents, map/reduce views with a
//! sandboxed embedded JavaScript engine, design-document filters and
//! validation).
//!
//! Owns: the sandbox ([`js`]), design documents ([`design`]), the built-in
//! and JavaScript reduce functions ([`reduce`]), view indexes in the
//! database's store kept up to date from its sequence ([`index`]), view
//! queries with CouchDB's options ([`query`]) and `indexer` tasks
//! ([`tasks`]). Does not own HTTP (`rhizome-server`) or documents
//! (`rhizome-docs`, whose collation the indexes use).

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
