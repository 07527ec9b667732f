use std::path::PathBuf;

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("storage engine error: {0}")]
    Engine(String),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the store at {0} is in use by another process")]
    Locked(PathBuf),
    #[error("bad storage setting: {0}")]
    Config(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(feature = "rocksdb")]
impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        Error::Engine(e.into_string())
    }
}
