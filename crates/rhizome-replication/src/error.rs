//! The crate's error type: where a replication failed, and why.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint answered an error status; the message names the
    /// endpoint, the request and CouchDB's `error` and `reason`.
    #[error("{message}")]
    Http { status: u16, message: String },
    /// The endpoint could not be reached, or the connection failed.
    #[error("{endpoint}: {reason}")]
    Connection { endpoint: String, reason: String },
    /// An answer that does not follow the protocol.
    #[error("{endpoint}: {reason}")]
    Protocol { endpoint: String, reason: String },
    /// An answer past [`crate::MAX_ANSWER_BYTES`].
    #[error("{endpoint}: {reason}")]
    TooLarge { endpoint: String, reason: String },
    /// An endpoint address we cannot use.
    #[error("{0}")]
    Address(String),
    #[error(transparent)]
    Docs(#[from] rhizome_docs::DocError),
}

impl Error {
    /// A failure that may pass by itself: the endpoint unreachable, the
    /// connection lost, or a server error (5xx).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Connection { .. } | Error::Http { status: 500.., .. })
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
