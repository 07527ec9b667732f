//! Errors as CouchDB sends them: a status and `{"error", "reason"}`
//! (https://docs.couchdb.org/en/stable/api/basics.html#http-status-codes).

use rhizome_docs::DocError;

#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {error}: {reason}")]
pub struct HttpError {
    pub status: u16,
    pub error: String,
    pub reason: String,
    /// Sent as `Retry-After` (a login locked after failures).
    pub retry_after_secs: Option<u64>,
}

impl HttpError {
    pub fn new(status: u16, error: &str, reason: impl Into<String>) -> HttpError {
        HttpError { status, error: error.to_owned(), reason: reason.into(), retry_after_secs: None }
    }
    pub fn bad_request(reason: impl Into<String>) -> HttpError {
        Self::new(400, "bad_request", reason)
    }
    pub fn not_found(reason: impl Into<String>) -> HttpError {
        Self::new(404, "not_found", reason)
    }
    pub fn no_db() -> HttpError {
        Self::not_found("Database does not exist.")
    }
    pub fn unauthorized(reason: impl Into<String>) -> HttpError {
        Self::new(401, "unauthorized", reason)
    }
    pub fn forbidden(reason: impl Into<String>) -> HttpError {
        Self::new(403, "forbidden", reason)
    }
    pub fn method_not_allowed(allowed: &str) -> HttpError {
        Self::new(405, "method_not_allowed", format!("Only {allowed} allowed"))
    }
    /// A failure of the server itself. The detail (which may name files of
    /// the server's machine, or quote a storage engine's message) goes to
    /// stderr; the client gets a generic reason, so no error body ever shows
    /// an absolute path or other internals.
    pub fn internal(detail: impl Into<String>) -> HttpError {
        eprintln!("rhizome: internal error: {}", detail.into());
        Self::new(500, "internal_server_error", "The server failed to complete the request; its log has the details.")
    }
}

impl HttpError {
    /// The same error with `dir` (the data folder) removed from its reason:
    /// a last guard so that no error body shows where the server keeps its
    /// files, whatever a lower layer put in its message.
    pub fn without_path(mut self, dir: &std::path::Path) -> HttpError {
        let mut forms = vec![dir.display().to_string()];
        if let Ok(real) = dir.canonicalize() {
            forms.push(real.display().to_string());
        }
        for form in forms {
            if form.len() > 1 && self.reason.contains(&form) {
                self.reason = self.reason.replace(&form, "<data>");
            }
        }
        self
    }
}

impl From<DocError> for HttpError {
    fn from(e: DocError) -> HttpError {
        match e {
            DocError::Conflict => HttpError::new(409, "conflict", "Document update conflict."),
            DocError::IdConflict(r) => HttpError::new(409, "conflict", r),
            DocError::NotFound(reason) => HttpError::not_found(reason),
            DocError::BadRequest(r) => HttpError::bad_request(r),
            DocError::Validation(r) => HttpError::new(400, "doc_validation", r),
            // The document's JSON-LD could not be read (nothing was written).
            DocError::Projection { id, reason } => HttpError::new(400, "doc_validation", format!("{id}: {reason}")),
            DocError::MissingStub(r) => HttpError::new(412, "missing_stub", r),
            DocError::Coded { status, error, reason } => HttpError::new(status, error, reason),
            other => HttpError::internal(other.to_string()),
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(String),
    /// `DATA/lock` is held by a process this one cannot run beside.
    #[error("{0}")]
    FolderInUse(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error(transparent)]
    Docs(#[from] DocError),
}
