//! `rhizome-py`: the in-process Python API (`import rhizome`).
//!
//! Owns: the native module `rhizome._rhizome` — term classes shaped like
//! pyoxigraph's (`terms`), the RDF store (`store`: loads, pattern scans,
//! SPARQL, dumps), CouchDB-style databases of a server's data folder
//! (`docs`) and their LDP resources (`ldp`), the mapping of Rust errors to Python exceptions (`errors`) and
//! of JSON values to Python objects (`json`). The Python side
//! (`rhizome/`) adds rdflib conversions and the rdflib store plugin.
//! Does not own: any storage, query or document semantics (the crates
//! below; this is a thin shell over them, as the CLI is).

mod docs;
mod errors;
mod json;
mod ldp;
mod query_threads;
mod store;
mod terms;
mod transaction;

use pyo3::prelude::*;

#[pymodule]
fn _rhizome(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    terms::register(m)?;
    errors::register(m)?;
    store::register(m)?;
    docs::register(m)?;
    ldp::register(m)?;
    Ok(())
}
