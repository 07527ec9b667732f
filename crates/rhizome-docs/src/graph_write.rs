//! What an RDF write (SPARQL Update, the Graph Store Protocol) does to the
//! document whose graph it changed: the new revision keeps the document.
//!
//! - A JSON document keeps its `@context`, every member the context does
//!   not map (they are not RDF: `app_flag` beside a context that does not
//!   name it) and every attachment; its RDF members are replaced by the
//!   graph as it is now, compacted against the document's context
//!   ([`crate::compact`]): its terms, lists, language maps and native
//!   numbers come back as the document wrote them. The result is read back
//!   as JSON-LD before it is used: if it does not give exactly the graph,
//!   the expanded form (full IRIs, value objects, same context) is used,
//!   and failing that the write is refused (nothing is lost).
//! - A JSON document whose graph became empty keeps its other members and
//!   attachments; it is deleted only when nothing else is left.
//! - A graph-bodied document (`{"_graph": IRI}`, written as RDF) stays one,
//!   keeping its attachments.

use crate::compact::{compact_graph, Context, Shape};
use crate::jsonld::{DEFAULT_CONTEXT_DOC, GRAPH_MARKER};
use crate::keys::LOCAL;
use crate::{DocError, Result};
use oxjsonld::JsonLdParser;
use oxrdf::graph::CanonicalizationAlgorithm;
use oxrdf::{Graph, NamedOrBlankNode, Term, Triple};
use rhizome_rdf::term::Dictionary;
use rhizome_rdf::{QuadPattern, StoreTransaction, TermId};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// What an RDF write does to a document whose graph it removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmptiedGraphs {
    /// The write named the graph (`DROP GRAPH`, a Graph Store `DELETE`, a
    /// `DELETE` of its last triple): only RDF goes; the document stays with
    /// its other members and attachments, and is deleted only when nothing
    /// else is left.
    KeepDocumentData,
    /// The write was meant for everything (`DROP ALL`, `CLEAR NAMED`):
    /// every document whose graph it removed is deleted.
    DeleteDocuments,
}

/// The revision a graph write gives a document.
#[derive(Debug)]
pub(crate) enum GraphRevision {
    /// A JSON body (without `_id`/`_rev`; attachments as stubs).
    Json(Map<String, Value>),
    /// A graph-bodied revision, with these attachment stubs.
    Graph(Option<Value>),
    Delete,
}

/// The new revision of document `id`, whose winner's stored body is `old`
/// (`None`: no live document) after its graph `graph` (`graph_iri`)
/// changed; `empty`: the graph no longer exists.
pub(crate) fn revision_after_graph_write(
    txn: &StoreTransaction<'_>,
    id: &str,
    graph: TermId,
    graph_iri: &str,
    old: Option<&Map<String, Value>>,
    empty: bool,
) -> Result<GraphRevision> {
    let Some(old) = old else {
        return Ok(if empty { GraphRevision::Delete } else { GraphRevision::Graph(None) });
    };
    let stubs = attachment_stubs(old);
    if old.contains_key(GRAPH_MARKER) {
        return Ok(if empty && stubs.is_none() { GraphRevision::Delete } else { GraphRevision::Graph(stubs) });
    }
    let default_context = match old.get("@context") {
        Some(_) => None,
        None => default_context(txn)?,
    };
    let ctx = Context::parse(old.get("@context").or(default_context.as_ref()).unwrap_or(&Value::Null));
    let kept: Map<String, Value> = old.iter().filter(|(k, _)| !ctx.is_rdf_member(k) && !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
    let with_stubs = |mut body: Map<String, Value>| {
        if let Some(s) = &stubs {
            body.insert("_attachments".into(), s.clone());
        }
        body
    };
    if empty {
        if kept.keys().all(|k| k == "@context") && stubs.is_none() {
            return Ok(GraphRevision::Delete);
        }
        return Ok(GraphRevision::Json(with_stubs(kept)));
    }
    let triples = graph_triples(txn, graph, graph_iri)?;
    let shape = Shape::of(old, &ctx, graph_iri);
    let wanted = canonical(triples.iter().cloned());
    for expanded in [false, true] {
        if ctx.is_opaque() && !expanded {
            continue;
        }
        let mut body = kept.clone();
        body.extend(compact_graph(&triples, &ctx, &shape, expanded));
        // A context this module does not follow (a remote one) cannot be
        // read here; the expanded form means the same without it.
        let check = if ctx.is_opaque() { body.iter().filter(|(k, _)| *k != "@context").map(|(k, v)| (k.clone(), v.clone())).collect() } else { body.clone() };
        if reads_back(&check, if ctx.is_opaque() { None } else { default_context.as_ref() }, graph_iri).as_ref() == Some(&wanted) {
            return Ok(GraphRevision::Json(with_stubs(body)));
        }
    }
    // Never reached for a context this module follows; refusing keeps the
    // document rather than dropping what is not RDF.
    Err(DocError::Projection {
        id: id.to_owned(),
        reason: "the changed graph cannot be written back into this document under its @context; change the document through the CouchDB API".into(),
    })
}

/// Stubs of every attachment of a stored body, for the next revision.
fn attachment_stubs(body: &Map<String, Value>) -> Option<Value> {
    let atts = body.get("_attachments")?.as_object()?;
    let stubs: Map<String, Value> = atts
        .iter()
        .map(|(name, meta)| {
            let mut stub = Map::from_iter([("stub".to_owned(), Value::Bool(true))]);
            if let Some(d) = meta.get("digest") {
                stub.insert("digest".into(), d.clone());
            }
            (name.clone(), Value::Object(stub))
        })
        .collect();
    (!stubs.is_empty()).then_some(Value::Object(stubs))
}

fn default_context(txn: &StoreTransaction<'_>) -> Result<Option<Value>> {
    let Some(bytes) = txn.kv().get(LOCAL, DEFAULT_CONTEXT_DOC.as_bytes())? else {
        return Ok(None);
    };
    let doc: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| DocError::Corrupt(format!("{DEFAULT_CONTEXT_DOC}: {e}")))?;
    Ok(doc.get("@context").cloned())
}

/// The triples of graph `graph` (quads of the graph, its name dropped).
fn graph_triples(txn: &StoreTransaction<'_>, graph: TermId, graph_iri: &str) -> Result<Vec<Triple>> {
    let mut terms: HashMap<TermId, Term> = HashMap::new();
    let mut decode = |id: TermId| -> Result<Term> {
        if let Some(t) = terms.get(&id) {
            return Ok(t.clone());
        }
        let t = Dictionary::decode(txn.reader(), id)?.ok_or_else(|| DocError::Corrupt(format!("term {id:?} of graph {graph_iri}")))?;
        terms.insert(id, t.clone());
        Ok(t)
    };
    let mut out = Vec::new();
    for q in txn.scan(QuadPattern { g: Some(graph), ..Default::default() }) {
        let q = q?;
        let subject: NamedOrBlankNode = match decode(q[0])? {
            Term::NamedNode(n) => n.into(),
            Term::BlankNode(b) => b.into(),
            _ => return Err(DocError::Corrupt(format!("literal subject in graph {graph_iri}"))),
        };
        let Term::NamedNode(predicate) = decode(q[1])? else {
            return Err(DocError::Corrupt(format!("predicate that is not an IRI in graph {graph_iri}")));
        };
        out.push(Triple::new(subject, predicate, decode(q[2])?));
    }
    Ok(out)
}

fn canonical(triples: impl IntoIterator<Item = Triple>) -> Graph {
    let mut g: Graph = triples.into_iter().collect();
    g.canonicalize(CanonicalizationAlgorithm::Unstable);
    g
}

/// The graph a body projects to, as the projector reads it (CouchDB's
/// members left out, the database's context when it has none).
fn reads_back(body: &Map<String, Value>, default_context: Option<&Value>, graph_iri: &str) -> Option<Graph> {
    let mut json: Map<String, Value> = body.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
    if let (false, Some(ctx)) = (json.contains_key("@context"), default_context) {
        json.insert("@context".into(), ctx.clone());
    }
    let text = Value::Object(json).to_string();
    let parser = JsonLdParser::new().with_base_iri(graph_iri).ok()?;
    let quads: Vec<oxrdf::Quad> = parser.for_slice(text.as_bytes()).collect::<std::result::Result<_, _>>().ok()?;
    Some(canonical(quads.into_iter().map(Triple::from)))
}

/// The document holding a union database's stored default graph: where
/// SPARQL Update and the Graph Store Protocol write what they are told to
/// write to the default graph (reads of the default graph are still the
/// union of every graph, this one included). A plain document id, so that
/// it replicates to CouchDB and PouchDB like any other.
pub const DEFAULT_GRAPH_DOC: &str = "default-graph";

impl crate::Database {
    /// The IRI of the stored default graph ([`DEFAULT_GRAPH_DOC`]'s graph)
    /// in a union database whose documents have graphs; `None` otherwise
    /// (writes to the default graph then go to their subjects' graphs).
    pub fn stored_default_graph(&self) -> Option<String> {
        match self.store.mode() {
            rhizome_rdf::DatasetMode::Union => self.projector.graph_iri(DEFAULT_GRAPH_DOC),
            rhizome_rdf::DatasetMode::Plain => None,
        }
    }
}
