//! The one error type of the crate boundary.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SparqlError {
    /// The request does not parse; the message names line, column and what
    /// was expected (spargebra's parser).
    /// Not a `source`: the message already holds it, and error chains
    /// would print it twice.
    #[error("SPARQL syntax error: {0}")]
    Syntax(spargebra::SparqlSyntaxError),
    #[error(transparent)]
    Store(#[from] rhizome_rdf::Error),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("{0}")]
    Evaluation(String),
    #[error("cannot load {iri}: {reason}")]
    Load { iri: String, reason: String },
    #[error("graph {0} does not exist")]
    NoSuchGraph(String),
    #[error("graph {0} already exists")]
    GraphExists(String),
    #[error("the query ran past its time limit")]
    Timeout,
    #[error("the query was cancelled")]
    Cancelled,
    #[error("the query exceeded its memory limit of {limit_bytes} bytes (strings it builds, sorts, groups, joins and materialized patterns together)")]
    MemoryLimit { limit_bytes: usize },
    /// The query's own budget had room, but the memory shared by every
    /// request of the server ([`crate::MemoryPool`]) did not: another
    /// request's turn; retrying later may work.
    #[error("the server's memory for requests ({limit_bytes} bytes, all requests together) is in use; retry later")]
    ServerMemory { limit_bytes: usize },
    /// The request nests deeper, or chains more operators, than the
    /// engine evaluates (`nesting::MAX_NESTING`, `nesting::MAX_OPERATORS`):
    /// refused before anything recursive runs.
    #[error("{0}")]
    TooComplex(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl From<spargebra::SparqlSyntaxError> for SparqlError {
    fn from(e: spargebra::SparqlSyntaxError) -> Self {
        SparqlError::Syntax(e)
    }
}

pub type Result<T, E = SparqlError> = std::result::Result<T, E>;
