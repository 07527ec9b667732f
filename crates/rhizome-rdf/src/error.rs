use std::path::PathBuf;

/// A syntax error in loaded data, with where it is.
#[derive(Debug, Clone)]
pub struct SyntaxIssue {
    pub file: String,
    /// 1-based line and column (0 when the parser gives no position).
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl std::fmt::Display for SyntaxIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

/// Errors of the RDF layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Storage(#[from] rhizome_kv::Error),
    #[error("syntax error at {0} (nothing was loaded; --lenient skips bad statements)")]
    Syntax(SyntaxIssue),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing RDF out failed: the output itself, or a triple the chosen
    /// syntax cannot hold (JSON-LD and RDF 1.2 triple terms).
    #[error("cannot write {format}: {source}")]
    Output {
        format: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no Rhizome store at {0} (create one with `rhizome init` or `rhizome load`)")]
    NoStore(PathBuf),
    #[error("the store was written by a newer or older Rhizome (format {found}, this build reads {expected}): move its data with the Rhizome that wrote it (`dump` then `load` for RDF; replicate a server's databases to a new server)")]
    FormatVersion { found: u64, expected: u64 },
    #[error("{0}")]
    Invalid(String),
    #[error("the store is corrupt: {0}")]
    Corrupt(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
