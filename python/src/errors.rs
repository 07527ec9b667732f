//! Rust errors as Python exceptions, with the Rust error's message:
//! `SyntaxError` (with file, line and column) for bad RDF or SPARQL,
//! `ValueError` for bad arguments, `rhizome.Conflict` for revision
//! conflicts, `rhizome.NotFound` (a `KeyError`) for missing documents,
//! `rhizome.StoreLocked` (an `OSError`) when another process or handle
//! holds the store, `rhizome.Forbidden` for refused writes, `OSError` for
//! I/O and `rhizome.RhizomeError` for the rest.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyOSError, PySyntaxError, PyValueError};
use pyo3::prelude::*;
use rhizome_docs::DocError;
use rhizome_sparql::SparqlError;

create_exception!(rhizome, RhizomeError, PyException, "An error of the store that is none of the more specific ones.");
create_exception!(rhizome, Conflict, RhizomeError, "A document write whose `_rev` is not the current revision (CouchDB's 409).");
create_exception!(rhizome, NotFound, PyKeyError, "A document, attachment or database that does not exist (CouchDB's 404).");
create_exception!(
    rhizome,
    StoreLocked,
    PyOSError,
    "The store is held by another process (`rhizome serve`, a load, another Python process) or another handle in this one: one process opens a store at a time."
);
create_exception!(rhizome, Forbidden, RhizomeError, "A write that a design document's validate_doc_update or the database refused.");

fn syntax(message: String, file: Option<String>, line: u64, column: u64) -> PyErr {
    // SyntaxError(msg, (filename, lineno, offset, text)): Python shows
    // the position and code can read `e.lineno` and `e.offset`.
    PySyntaxError::new_err((message, (file, line, column, Option::<String>::None)))
}

pub fn rdf_error(e: rhizome_rdf::Error) -> PyErr {
    use rhizome_rdf::Error;
    match e {
        Error::Syntax(issue) => {
            let msg = format!("syntax error at {issue} (nothing was loaded; lenient=True skips bad statements)");
            syntax(msg, Some(issue.file), issue.line, issue.column)
        }
        Error::Storage(e) => kv_error(e),
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        Error::NoStore(_) => PyOSError::new_err(e.to_string()),
        Error::Invalid(m) => PyValueError::new_err(m),
        other => RhizomeError::new_err(other.to_string()),
    }
}

pub fn kv_error(e: rhizome_kv::Error) -> PyErr {
    match e {
        rhizome_kv::Error::Locked(path) => StoreLocked::new_err(format!(
            "the store at {} is in use by another process (a running `rhizome serve` or load, another Python process) or is already open in this one; \
             one process opens a store at a time: stop the other, or go through the server's HTTP API",
            path.display()
        )),
        rhizome_kv::Error::Io { .. } => PyOSError::new_err(e.to_string()),
        other => RhizomeError::new_err(other.to_string()),
    }
}

pub fn sparql_error(e: SparqlError) -> PyErr {
    let message = e.to_string();
    match e {
        SparqlError::Syntax(_) => {
            let (line, column) = position(&message);
            syntax(message, None, line, column)
        }
        SparqlError::Store(e) => rdf_error(e),
        SparqlError::Io(e) => PyOSError::new_err(e.to_string()),
        SparqlError::NoSuchGraph(_) | SparqlError::GraphExists(_) | SparqlError::Unsupported(_) | SparqlError::TooComplex(_) => PyValueError::new_err(message),
        _ => RhizomeError::new_err(message),
    }
}

/// The first `line L column C` or `L:C` a parser put in its message
/// (0, 0 when there is none).
fn position(message: &str) -> (u64, u64) {
    let words: Vec<&str> = message.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    for w in words.windows(4) {
        if w[0] == "line" && w[2] == "column" {
            if let (Ok(l), Ok(c)) = (w[1].parse(), w[3].trim_end_matches([':', ')']).parse()) {
                return (l, c);
            }
        }
    }
    for w in &words {
        let mut parts = w.trim_end_matches([':', ')']).split(':');
        if let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) {
            if let (Ok(l), Ok(c)) = (a.parse(), b.parse()) {
                return (l, c);
            }
        }
    }
    (0, 0)
}

pub fn doc_error(e: DocError) -> PyErr {
    match e {
        DocError::Conflict => Conflict::new_err("Document update conflict."),
        DocError::IdConflict(m) => Conflict::new_err(m),
        DocError::NotFound(reason) => NotFound::new_err(reason),
        DocError::BadRequest(m) | DocError::Validation(m) | DocError::MissingStub(m) => PyValueError::new_err(m),
        DocError::Coded { status, error, reason } => match status {
            401 | 403 => Forbidden::new_err(reason),
            404 => NotFound::new_err(reason),
            409 => Conflict::new_err(reason),
            400 => PyValueError::new_err(format!("{error}: {reason}")),
            _ => RhizomeError::new_err(format!("{error}: {reason}")),
        },
        DocError::Store(e) => rdf_error(e),
        DocError::Kv(e) => kv_error(e),
        other => RhizomeError::new_err(other.to_string()),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RhizomeError", py.get_type::<RhizomeError>())?;
    m.add("Conflict", py.get_type::<Conflict>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("StoreLocked", py.get_type::<StoreLocked>())?;
    m.add("Forbidden", py.get_type::<Forbidden>())?;
    Ok(())
}
