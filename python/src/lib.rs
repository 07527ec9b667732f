//! `rhizome-py`: the in-process Python API (`import rhizome`).
//!
//! Owns: the native module `rhizome._rhizome` — term classes shaped like
//! pyoxigraph's (`terms`), the RDF [`store::Store`] (load, pattern scans,
//! SPARQL, dumps), CouchDB-style databases of a data folder (`docs`), the
//! mapping of Rust errors to Python exceptions (`errors`) and of JSON
//! values to Python objects (`json`). The Python side (`rhizome/`) adds
//! rdflib conversions and the rdflib store plugin.
//! Does not own: any storage, query or document semantics (the crates
//! below; this is a thin shell, as the CLI is).

use pyo3::prelude::*;

#[pymodule]
fn _rhizome(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
