pub mod bench_http;
pub mod bench_tpcb;
pub mod bench_index;
pub mod bench_lookups;
pub mod bench_queries;
pub mod check;
pub mod dump;
pub mod graph;
pub mod init;
pub mod load;
pub mod quads;
pub mod serve;
pub mod query;
pub mod replicate;
pub mod stats;
pub mod update;
pub mod write_probe;

use anyhow::{bail, Context, Result};
use oxrdf::Term;
use rhizome_rdf::{Store, StoreSnapshot, TermId};
use std::path::Path;
use std::str::FromStr;

pub fn compact(data: &Path) -> Result<()> {
    let store = Store::open(data)?;
    store.compact()?;
    let stats = store.stats()?;
    println!("compacted: {} quads, {} bytes on disk", stats.quads, stats.bytes_on_disk);
    Ok(())
}

/// A term in N-Triples syntax: `<iri>`, `"text"@en`, `"5"^^<...>`, `_:b1`.
pub fn parse_term(text: &str) -> Result<Term> {
    Term::from_str(text).with_context(|| format!("{text:?} is not a term in N-Triples syntax (<iri>, \"text\"@en, \"5\"^^<datatype>, _:b)"))
}

/// The id of a term given on the command line; `Ok(None)` when the store
/// does not have it (so nothing can match).
pub fn term_id(snapshot: &StoreSnapshot, text: &str) -> Result<Option<TermId>> {
    let term = parse_term(text)?;
    Ok(snapshot.lookup(term.as_ref())?)
}

/// A SPARQL request from the command line: the text itself, or a file.
pub fn request_text(inline: Option<String>, file: Option<&Path>) -> Result<String> {
    match (inline, file) {
        (Some(text), None) => Ok(text),
        (None, Some(path)) => std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display())),
        (Some(_), Some(_)) => bail!("give the request either inline or with --file, not both"),
        (None, None) => bail!("no request: give it inline or with --file"),
    }
}

pub fn parse_format(name: &str) -> Result<rhizome_rdf::RdfFormat> {
    match rhizome_rdf::format_from_name(name) {
        Some(f) => Ok(f),
        None => bail!("unknown format {name:?} (ntriples, nquads, turtle, trig, rdfxml, jsonld)"),
    }
}
