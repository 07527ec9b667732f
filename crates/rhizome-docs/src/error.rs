//! The crate's one error type. Each variant is one of CouchDB's error kinds,
//! so the server maps it to status and `{"error", "reason"}` without guessing
//! (https://docs.couchdb.org/en/stable/api/basics.html#http-status-codes).

#[derive(Debug, thiserror::Error)]
pub enum DocError {
    /// 409: the `_rev` given is not a current leaf (or is missing).
    #[error("Document update conflict.")]
    Conflict,
    /// 404 with CouchDB's reason: `missing` or `deleted`.
    #[error("{0}")]
    NotFound(&'static str),
    /// 400 `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// 400 `doc_validation` (bad special members, bad attachment data).
    #[error("{0}")]
    Validation(String),
    /// 409 `conflict` with its own reason: the document's id is the graph
    /// IRI of another document (`JsonLdProjector`'s naming rule).
    #[error("{0}")]
    IdConflict(String),
    /// 412 `missing_stub`: an attachment stub names data the store lacks.
    #[error("{0}")]
    MissingStub(String),
    /// 500: the graph projection hook refused the write.
    #[error("projection of {id}: {reason}")]
    Projection { id: String, reason: String },
    /// Refused with CouchDB's own status, error name and reason: Mango
    /// requests (`mango_error`), `validate_doc_update` (401/403), design
    /// documents that do not compile, JavaScript past its limits.
    #[error("{reason}")]
    Coded { status: u16, error: &'static str, reason: String },
    #[error("corrupt document store: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Store(#[from] rhizome_rdf::Error),
    #[error(transparent)]
    Kv(#[from] rhizome_kv::Error),
}

pub type Result<T, E = DocError> = std::result::Result<T, E>;
