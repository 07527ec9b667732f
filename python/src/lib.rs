//! `rhizome-py`: the in-process Python API (`import rhizome`, built by
//! maturin, abi3).
//!
//! Owns: the native module `rhizome._rhizome`: term classes shaped like
//! pyoxigraph's (`terms`); the RDF store (`store`: loads, lazy pattern
//! scans over a snapshot, read ahead up to 1,024 quads at a time with their
//! new terms decoded in one walk of the dictionary
//! (`StoreSnapshot::decode_many`) and one Python object per term id shared
//! by every quad holding it, SPARQL, dumps); the databases of a server's
//! data folder (`docs`: `rhizome.open(dir).database(name)`: documents,
//! attachments, `_all_docs`, `_changes`, Mango, views, SPARQL updates as
//! document writes, each write through `rhizome-views`' validation, as a
//! database admin); their LDP resources as rdflib graphs (`ldp`:
//! `rhizome.Ldp(db)`: get, put with `if_match`, post with slug, delete, on
//! `rhizome-ldp`'s index and ETags); the mapping of Rust errors to Python
//! exceptions (`errors`) and of JSON values to Python objects (`json`).
//! Calls release the GIL. The Python side (`rhizome/`) adds rdflib
//! conversions and the rdflib store plugin (`rdflib.Graph(store="Rhizome")`).
//! Does not own: any storage, query or document semantics (the crates
//! below; this is a thin shell over them, as the CLI is; the data folder's
//! layout is `rhizome-server`'s). Its tests are pytest's, in
//! `python/tests`; it has no Rust tests.

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
