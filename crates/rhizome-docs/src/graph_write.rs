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
use oxrdf::{NamedOrBlankNode, Term, Triple};
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
    contexts: Option<&crate::contexts::ContextStore>,
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
    let context_value = old.get("@context").or(default_context.as_ref()).unwrap_or(&Value::Null);
    // Remote contexts come from the cache (filled when the document was
    // written); one no longer there leaves the context opaque, and the
    // expanded form is written.
    let remote = contexts
        .and_then(|store| store.resolve(&serde_json::json!({ "@context": context_value })).ok())
        .unwrap_or_default();
    let ctx = Context::parse_with(context_value, &remote);
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
    let wanted = signature(triples.iter().cloned());
    for expanded in [false, true] {
        if ctx.is_opaque() && !expanded {
            continue;
        }
        let mut body = kept.clone();
        body.extend(compact_graph(&triples, &ctx, &shape, expanded));
        // A context this module does not follow (a remote one) cannot be
        // read here; the expanded form means the same without it.
        let check = if ctx.is_opaque() { body.iter().filter(|(k, _)| *k != "@context").map(|(k, v)| (k.clone(), v.clone())).collect() } else { body.clone() };
        if reads_back(&check, if ctx.is_opaque() { None } else { default_context.as_ref() }, graph_iri, &remote).as_ref() == Some(&wanted) {
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

/// A graph's fingerprint for comparing a body read back with the graph it
/// must give: its ground triples exactly, and its blank nodes by a few
/// rounds of colour refinement (each blank node hashed with the
/// predicates and neighbours around it), so two graphs that differ in any
/// triple differ here. Full canonicalization (oxrdf's) is exponential on
/// some graphs and recursive on long chains, which SPARQL can write.
fn signature(triples: impl IntoIterator<Item = Triple>) -> Vec<u64> {
    use std::hash::{Hash, Hasher};
    // A set first (a body may state a triple twice); then a multiset of
    // hashes, since blank nodes alike hash alike.
    let triples: Vec<Triple> = triples.into_iter().collect::<std::collections::HashSet<Triple>>().into_iter().collect();
    let hash = |parts: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        parts(&mut h);
        h.finish()
    };
    fn term_hash(t: &Term, colors: &HashMap<String, u64>) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match t {
            Term::BlankNode(b) => (1u8, colors.get(b.as_str()).copied().unwrap_or(0)).hash(&mut h),
            // A triple term's blank nodes by colour too, not by label.
            Term::Triple(t) => {
                let s: Term = match &t.subject {
                    NamedOrBlankNode::NamedNode(n) => n.clone().into(),
                    NamedOrBlankNode::BlankNode(b) => b.clone().into(),
                };
                (2u8, term_hash(&s, colors), t.predicate.as_str(), term_hash(&t.object, colors)).hash(&mut h)
            }
            other => (0u8, other.to_string()).hash(&mut h),
        }
        h.finish()
    }
    let subject_term = |t: &Triple| -> Term {
        match &t.subject {
            NamedOrBlankNode::NamedNode(n) => n.clone().into(),
            NamedOrBlankNode::BlankNode(b) => b.clone().into(),
        }
    };
    let mut colors: HashMap<String, u64> = HashMap::new();
    for _round in 0..4 {
        let mut around: HashMap<String, Vec<u64>> = HashMap::new();
        for t in &triples {
            let (s, o) = (subject_term(t), &t.object);
            let p = t.predicate.as_str();
            if let Term::BlankNode(b) = &s {
                let other = term_hash(o, &colors);
                around.entry(b.as_str().to_owned()).or_default().push(hash(&|h| (0u8, p, other).hash(h)));
            }
            if let Term::BlankNode(b) = o {
                let other = term_hash(&s, &colors);
                around.entry(b.as_str().to_owned()).or_default().push(hash(&|h| (1u8, p, other).hash(h)));
            }
        }
        colors = around
            .into_iter()
            .map(|(b, mut edges)| {
                edges.sort_unstable();
                let old = colors.get(&b).copied().unwrap_or(0);
                (b, hash(&|h| (old, &edges).hash(h)))
            })
            .collect();
    }
    let mut out: Vec<u64> = triples
        .iter()
        .map(|t| {
            let (s, o) = (term_hash(&subject_term(t), &colors), term_hash(&t.object, &colors));
            hash(&|h| (s, t.predicate.as_str(), o).hash(h))
        })
        .collect();
    out.sort_unstable();
    out
}

/// The graph a body projects to, as the projector reads it (CouchDB's
/// members left out, the database's context when it has none).
fn reads_back(body: &Map<String, Value>, default_context: Option<&Value>, graph_iri: &str, remote: &crate::contexts::Resolved) -> Option<Vec<u64>> {
    let mut json: Map<String, Value> = body.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
    if let (false, Some(ctx)) = (json.contains_key("@context"), default_context) {
        json.insert("@context".into(), ctx.clone());
    }
    let placeholders = crate::triple_terms::extract(&mut json);
    let text = Value::Object(json).to_string();
    let parser = JsonLdParser::new().with_base_iri(graph_iri).ok()?;
    let quads: Vec<oxrdf::Quad> = parser.for_slice(text.as_bytes()).with_load_document_callback(remote.loader()).collect::<std::result::Result<_, _>>().ok()?;
    let quads = match placeholders {
        Some(p) => p.resolve(quads).ok()?,
        None => quads,
    };
    Some(signature(quads.into_iter().map(Triple::from)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{BlankNode, Literal, NamedNode};

    fn t(s: &str, o: Term) -> Triple {
        let s: NamedOrBlankNode = match s.strip_prefix("_:") {
            Some(b) => BlankNode::new(b).unwrap().into(),
            None => NamedNode::new(s).unwrap().into(),
        };
        Triple::new(s, NamedNode::new("http://e/p").unwrap(), o)
    }

    #[test]
    fn signatures_tell_graphs_apart_up_to_blank_node_names() {
        let lit = |v: &str| Term::from(Literal::new_simple_literal(v));
        let blank = |b: &str| Term::from(BlankNode::new(b).unwrap());
        let a = vec![t("http://e/s", blank("x")), t("_:x", lit("1")), t("_:y", lit("1"))];
        let renamed = vec![t("http://e/s", blank("m")), t("_:m", lit("1")), t("_:n", lit("1"))];
        assert_eq!(signature(a.clone()), signature(renamed));
        // Two blank nodes alike are two, not one.
        assert_ne!(signature(a.clone()), signature(vec![t("http://e/s", blank("x")), t("_:x", lit("1"))]));
        // Which blank node the IRI points at matters.
        let moved = vec![t("http://e/s", blank("x")), t("_:x", lit("1")), t("_:y", lit("2"))];
        assert_ne!(signature(a.clone()), signature(moved));
        let doubled = a.iter().cloned().chain(a.iter().cloned());
        assert_eq!(signature(a.clone()), signature(doubled), "a triple stated twice is one");
    }
}
