//! What every W3C conformance runner of the workspace needs, whatever it
//! tests (RDF syntaxes, SPARQL, the HTTP protocols): the test data's folder,
//! the manifests (`mf:Manifest`, `mf:include`, `mf:entries`), and the lists
//! of known failures. A dev-dependency only; each runner reads its own kind
//! of entry.
//!
//! The data is the `rdf-tests` checkout described in
//! `shared/conformance/README.md`: `$RHIZOME_CONFORMANCE` (the folder holding
//! `rdf-tests/`, or `rdf-tests` itself), or else `conformance` in
//! `$RHIZOME_SHARED` or in `shared` beside the repository. Missing data fails
//! the test, never passes it.

use oxrdf::vocab::rdf;
use oxrdf::{Graph, NamedNode, NamedNodeRef, NamedOrBlankNode, Term, TermRef};
use oxrdfio::{RdfFormat, RdfParser};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every test file's IRI is this base plus its path under `rdf-tests/`.
pub const W3C_BASE: &str = "https://w3c.github.io/rdf-tests/";
/// The manifest vocabulary.
pub const MF: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#";

/// The `rdf-tests` folder, checked by `marker` (a file or folder under it
/// that the caller's suites need). Panics, naming what is missing, when the
/// data is not there.
pub fn conformance_root(marker: &str) -> PathBuf {
    let dir = match std::env::var_os("RHIZOME_CONFORMANCE") {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("RHIZOME_SHARED") {
            Some(shared) => PathBuf::from(shared).join("conformance"),
            // Every crate of the workspace sits two folders below its root.
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
        },
    };
    for candidate in [dir.join("rdf-tests"), dir.clone()] {
        if candidate.join(marker).exists() {
            return candidate;
        }
    }
    panic!(
        "the W3C conformance data is missing: no {marker} under {} (set RHIZOME_CONFORMANCE to the folder holding rdf-tests/, \
         RHIZOME_SHARED to the folder holding conformance/, or put shared/conformance beside the repository)",
        dir.display()
    );
}

/// A known-failure list: one test IRI per line, then ` # reason`; blank
/// lines and `#` comments are skipped. A missing file is an empty list.
pub fn read_known_failures(path: &Path) -> BTreeMap<String, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    };
    let mut known = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (iri, reason) = line.split_once(" #").map_or((line, ""), |(i, r)| (i.trim(), r.trim()));
        known.insert(iri.to_owned(), reason.to_owned());
    }
    known
}

/// The local file of a test IRI.
pub fn iri_to_path(root: &Path, iri: &str) -> Result<PathBuf, String> {
    let rel = iri.strip_prefix(W3C_BASE).ok_or_else(|| format!("{iri} is not under {W3C_BASE}"))?;
    Ok(root.join(rel))
}

/// The entries of the manifest at `rel` (under `rdf-tests/`) and of the
/// manifests it includes, in order, each read by `entry` from its
/// manifest's graph. A manifest included twice is read once.
pub fn read_manifest<T>(root: &Path, rel: &str, mut entry: impl FnMut(&Graph, &Term) -> Result<T, String>) -> Result<Vec<T>, String> {
    let mut tests = Vec::new();
    read_into(root, &format!("{W3C_BASE}{rel}"), &mut entry, &mut tests, &mut BTreeSet::new())?;
    Ok(tests)
}

fn read_into<T>(
    root: &Path,
    manifest: &str,
    entry: &mut impl FnMut(&Graph, &Term) -> Result<T, String>,
    tests: &mut Vec<T>,
    seen: &mut BTreeSet<String>,
) -> Result<(), String> {
    if !seen.insert(manifest.to_owned()) {
        return Ok(());
    }
    let path = iri_to_path(root, manifest)?;
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut graph = Graph::new();
    let parser = RdfParser::from_format(RdfFormat::Turtle).with_base_iri(manifest).map_err(|e| e.to_string())?;
    for q in parser.for_slice(&bytes) {
        graph.insert(&oxrdf::Triple::from(q.map_err(|e| format!("{}: {e}", path.display()))?));
    }
    let manifest_type = NamedNode::new_unchecked(format!("{MF}Manifest"));
    let manifests: Vec<NamedOrBlankNode> = graph.subjects_for_predicate_object(rdf::TYPE, &manifest_type).map(|s| s.into_owned()).collect();
    if manifests.is_empty() {
        return Err(format!("{}: no mf:Manifest", path.display()));
    }
    for m in &manifests {
        if let Some(list) = get(&graph, m, &format!("{MF}include")) {
            for inc in rdf_list(&graph, list)? {
                match inc {
                    Term::NamedNode(n) => read_into(root, n.as_str(), entry, tests, seen)?,
                    other => return Err(format!("mf:include of {other}")),
                }
            }
        }
        if let Some(list) = get(&graph, m, &format!("{MF}entries")) {
            for e in rdf_list(&graph, list)? {
                tests.push(entry(&graph, &e)?);
            }
        }
    }
    Ok(())
}

/// The items of an RDF list.
pub fn rdf_list(graph: &Graph, mut item: Term) -> Result<Vec<Term>, String> {
    let mut items = Vec::new();
    while item != Term::NamedNode(rdf::NIL.into_owned()) {
        let s = node(&item).ok_or_else(|| format!("bad RDF list node {item}"))?;
        items.push(get(graph, &s, rdf::FIRST.as_str()).ok_or("RDF list without rdf:first")?);
        item = get(graph, &s, rdf::REST.as_str()).ok_or("RDF list without rdf:rest")?;
        if items.len() > 100_000 {
            return Err("cyclic RDF list".into());
        }
    }
    Ok(items)
}

/// A term as a subject, if it can be one.
pub fn node(t: &Term) -> Option<NamedOrBlankNode> {
    match t {
        Term::NamedNode(n) => Some(n.clone().into()),
        Term::BlankNode(b) => Some(b.clone().into()),
        _ => None,
    }
}

/// The object of `s p`, if any (`p` a full IRI).
pub fn get(graph: &Graph, s: &NamedOrBlankNode, p: &str) -> Option<Term> {
    graph.object_for_subject_predicate(s, NamedNodeRef::new_unchecked(p)).map(TermRef::into_owned)
}

/// Every object of `s p`.
pub fn get_all(graph: &Graph, s: &NamedOrBlankNode, p: &str) -> Vec<Term> {
    graph.objects_for_subject_predicate(s, NamedNodeRef::new_unchecked(p)).map(TermRef::into_owned).collect()
}
