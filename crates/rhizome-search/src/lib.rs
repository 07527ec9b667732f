//! `rhizome-search`: full-text indexes of a Rhizome database, on tantivy
//! (Lucene's family in Rust), embedded: no second service to run.
//!
//! Owns CouchDB's Nouveau indexes (https://docs.couchdb.org/en/stable/ddocs/nouveau.html):
//! their definitions in design documents ([`definition`]), the analyzers
//! CouchDB names ([`analyzers`]), the index files in the database's folder
//! kept up to the database's sequence in batches, crash safe ([`index`]),
//! and queries in Lucene's syntax with sort, paging by bookmark, counts and
//! ranges, answered in Nouveau's JSON shape ([`query`]); Mango indexes of
//! type `nouveau` and `_find`'s `$text` on them ([`mango`]); the literals
//! of the database's graphs for SPARQL's text search ([`rdf_text`]). Does not own HTTP
//! (`rhizome-server`), documents (`rhizome-docs`) or the JavaScript sandbox
//! (`rhizome-views`, whose `Sandbox` runs the index functions).

pub mod analyzers;
mod build;
pub mod definition;
pub mod index;
pub mod mango;
pub mod query;
pub mod rdf_text;

pub use definition::{NouveauDef, NouveauDefs};
pub use index::{cleanup, refresh, IndexInfo};
pub use query::{search, SearchRequest};

/// What can go wrong with a search index, as CouchDB names it over HTTP.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Doc(#[from] rhizome_docs::DocError),
    /// The index or its design document does not exist (404 `not_found`).
    #[error("{0}")]
    NotFound(String),
    /// A request CouchDB refuses with 400 `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// A design document whose `nouveau` member is malformed (400
    /// `invalid_design_doc`).
    #[error("{0}")]
    InvalidDesignDoc(String),
    /// A query CouchDB refuses with 400 `query_parse_error`.
    #[error("{0}")]
    QueryParse(String),
    /// An index function ran past its limits (`os_process_error`).
    #[error("{0}")]
    Process(String),
    /// The index files (tantivy) failed.
    #[error("search index: {0}")]
    Index(String),
}

impl From<tantivy::TantivyError> for SearchError {
    fn from(e: tantivy::TantivyError) -> Self {
        SearchError::Index(e.to_string())
    }
}

impl From<rhizome_kv::Error> for SearchError {
    fn from(e: rhizome_kv::Error) -> Self {
        SearchError::Doc(e.into())
    }
}

impl From<rhizome_rdf::Error> for SearchError {
    fn from(e: rhizome_rdf::Error) -> Self {
        SearchError::Doc(e.into())
    }
}

pub type Result<T> = std::result::Result<T, SearchError>;
