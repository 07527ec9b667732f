//! Documents as RDF (../shared/design.md, "a document is a named graph").
//!
//! - A document's graph IRI is `<base>/<db>/<percent-encoded _id>`, or the
//!   `_id` itself when it is an absolute IRI ([`DocumentIris`]).
//! - [`JsonLdProjector`] projects the winning revision of a JSON document
//!   into its graph inside the write's transaction: the document is read as
//!   JSON-LD (`oxjsonld`) with its own `@context`, else the database's
//!   default context (the `@context` of the local document
//!   `_local/rhizome-context`), with the graph IRI as base; an update
//!   replaces the graph, a deletion empties it. A flat document (one node,
//!   a context that is only `@vocab`, scalar values) is read without the
//!   JSON-LD algorithms, to the same quads (`jsonld_flat`). Design
//!   documents have no graph. A document with no context
//!   and no JSON-LD keyword at its top level is plain JSON and has no graph.
//! - A document whose body is its graph (loaded as RDF, or first made by
//!   SPARQL Update or the Graph Store Protocol) stores only a marker,
//!   `{"_graph": IRI}`: the quads are the body, and reads render them as
//!   JSON-LD ([`render_graph`]), so nothing is stored twice. An RDF write to
//!   the graph of a JSON document keeps the JSON (`graph_write.rs`).

use crate::member::member;
use crate::contexts::ContextStore;
use crate::keys::LOCAL;
use crate::GraphProjector;
use oxjsonld::JsonLdParser;
use oxrdf::{NamedNode, Term, TermRef};
use rhizome_kv::KvRead;
use rhizome_rdf::term::{Dictionary, TermCache};
use rhizome_rdf::{QuadPattern, QuadScan, StoreSnapshot, StoreTransaction, TermId};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The member of a stored body that marks a document whose body is its graph.
pub const GRAPH_MARKER: &str = "_graph";
/// The local document holding a database's default JSON-LD context.
pub const DEFAULT_CONTEXT_DOC: &str = "_local/rhizome-context";

/// Maps document ids to graph IRIs and back, for one database.
#[derive(Clone, Debug)]
pub struct DocumentIris {
    /// `<base>/<db>/`, percent-encoded.
    prefix: String,
    /// `<base>/`: where every database of the server names its graphs.
    server: String,
}

impl DocumentIris {
    /// `base` is the server's base IRI (no trailing slash needed).
    pub fn new(base: &str, db: &str) -> DocumentIris {
        let server = format!("{}/", base.trim_end_matches('/'));
        DocumentIris { prefix: format!("{server}{}/", percent_encode(db)), server }
    }

    /// Why graph `iri` is no graph of this database's documents, if it is
    /// under the server's base but not under this database's prefix: there
    /// the server names the graphs of its other databases' documents
    /// (`<base>/<other>/<id>`), which a write to this one must not claim.
    pub fn foreign_graph(&self, iri: &str) -> Option<String> {
        let rest = iri.strip_prefix(&self.server)?;
        if iri.starts_with(&self.prefix) {
            return None;
        }
        let db = rest.split('/').next().map(percent_decode).unwrap_or_default().unwrap_or_default();
        Some(format!(
            "{iri} is under {}, where the server names the graphs of its databases' documents, and is no graph of this database's (it would be database {db:?}'s): a write reaches only its own database",
            self.server
        ))
    }

    pub fn graph_iri(&self, doc_id: &str) -> String {
        if is_absolute_iri(doc_id) {
            doc_id.to_owned()
        } else {
            format!("{}{}", self.prefix, percent_encode(doc_id))
        }
    }

    pub fn doc_id(&self, graph_iri: &str) -> String {
        match graph_iri.strip_prefix(&self.prefix) {
            Some(rest) if is_ldp_path(rest) => graph_iri.to_owned(),
            Some(rest) => percent_decode(rest).unwrap_or_else(|| graph_iri.to_owned()),
            None => graph_iri.to_owned(),
        }
    }

    /// `<base>/<db>/_ldp/`: the IRI of the database's root LDP container
    /// (rhizome-ldp). An LDP resource's document id is its absolute IRI
    /// under it, which is also its graph IRI: no document id can start
    /// with `_ldp/`, so no other document's graph is named there.
    pub fn ldp_root(&self) -> String {
        format!("{}{LDP_SEGMENT}/", self.prefix)
    }
}

/// The path segment under `<base>/<db>/` where LDP resources live.
const LDP_SEGMENT: &str = "_ldp";

fn is_ldp_path(rest: &str) -> bool {
    rest.strip_prefix(LDP_SEGMENT).is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

/// The naming rule that keeps one graph per document: an id that is an
/// absolute IRI is its own graph IRI, so such an id under this database's
/// own prefix `<base>/<db>/` would be the graph of the document that the
/// rest of it names (`http://localhost:5984/db/doc1` is `doc1`'s graph).
/// Those ids are refused, whether that document exists yet or not (409,
/// [`crate::DocError::IdConflict`]); and, for documents stored before the
/// rule, a document whose graph IRI is the id of a live document is
/// refused too. Absolute IRIs anywhere else stay their own graphs.
impl DocumentIris {
    /// Why `doc_id` may not be a document id here, if it is under the
    /// database's own prefix.
    pub fn reserved_id(&self, doc_id: &str) -> Option<String> {
        if !is_absolute_iri(doc_id) {
            return None;
        }
        let rest = doc_id.strip_prefix(&self.prefix)?;
        if is_ldp_path(rest) {
            return None;
        }
        let owner = percent_decode(rest).filter(|o| !o.is_empty());
        Some(match owner {
            Some(owner) => format!(
                "Document id {doc_id} is the graph IRI of document {owner:?}; ids under {} name the graphs of this database's documents",
                self.prefix
            ),
            None => format!("Document id {doc_id} is under {}, where the graphs of this database's documents are named", self.prefix),
        })
    }

    /// The id of another document that would share `doc_id`'s graph: a
    /// document whose id is `doc_id`'s graph IRI (only possible for data
    /// written before [`Self::reserved_id`] was checked).
    fn graph_iri_taken_by(&self, doc_id: &str) -> Option<String> {
        (!is_absolute_iri(doc_id)).then(|| self.graph_iri(doc_id))
    }
}

/// An `_id` that is an absolute IRI (a scheme, then `:`, and no spaces):
/// its graph is itself.
fn is_absolute_iri(id: &str) -> bool {
    let Some((scheme, rest)) = id.split_once(':') else { return false };
    let syntax = !rest.is_empty()
        && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !id.chars().any(|c| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`'));
    // The IRI parse of `NamedNode::new`, without its copy of the id.
    syntax && oxiri::Iri::parse(id).is_ok()
}

/// What stays as it is in an id's part of a graph IRI: RFC 3986's
/// unreserved characters. Everything else is `%XX` (uppercase), so graph
/// IRIs written before keep their spelling.
const ID_ESCAPES: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, ID_ESCAPES).to_string()
}

/// `None` when the decoded bytes are not UTF-8; a `%` not followed by two
/// hex digits stays as it is.
fn percent_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned())
}

/// Projects JSON-LD documents into their graphs (see the module comment).
#[derive(Clone, Debug)]
pub struct JsonLdProjector {
    iris: DocumentIris,
    /// Where remote contexts (`"@context": "https://schema.org/"`) are
    /// resolved ([`crate::contexts`]).
    contexts: Arc<ContextStore>,
}

impl JsonLdProjector {
    /// Remote contexts: the shipped ones only.
    pub fn new(iris: DocumentIris) -> JsonLdProjector {
        JsonLdProjector { iris, contexts: Arc::new(ContextStore::offline()) }
    }

    pub fn with_contexts(iris: DocumentIris, contexts: Arc<ContextStore>) -> JsonLdProjector {
        JsonLdProjector { iris, contexts }
    }
}

fn is_json_ld(body: &Map<String, Value>) -> bool {
    body.keys().any(|k| k.starts_with('@'))
}

/// Whether an `@context` member is anywhere in `v` (nested nodes may name
/// remote contexts of their own).
fn names_a_context(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, v)| k == "@context" || names_a_context(v)),
        Value::Array(a) => a.iter().any(names_a_context),
        _ => false,
    }
}

/// The database's default context. Checked on every read as well as when
/// it is written ([`check_default_context`]): a context stored before the
/// check existed, or by an older version, fails the write that would use
/// it, with the reason, instead of reaching oxjsonld.
fn default_context(reader: &dyn KvRead) -> Result<Option<Value>, String> {
    let Some(bytes) = reader.get(LOCAL, DEFAULT_CONTEXT_DOC.as_bytes()).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let doc: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| format!("{DEFAULT_CONTEXT_DOC}: {e}"))?;
    let Some(context) = member(&doc, "@context") else { return Ok(None) };
    crate::jsonld_limits::check_json_ld(&serde_json::json!({ "@context": context }))
        .map_err(|e| format!("the database's default context ({DEFAULT_CONTEXT_DOC}) cannot be used: {e}"))?;
    Ok(Some(context.clone()))
}

/// Checks a new `_local/rhizome-context` as the documents it governs are
/// checked: the bounds of [`crate::jsonld_limits`], then oxjsonld reading
/// a document made of the context alone (so a context it refuses, such as
/// a remote one or a malformed term definition, is refused here).
pub(crate) fn check_default_context(doc: &Map<String, Value>, contexts: &ContextStore) -> Result<(), String> {
    let Some(context) = member(&doc, "@context") else { return Ok(()) };
    let probe = serde_json::json!({ "@context": context, "@id": "urn:rhizome:context-check", "urn:rhizome:p": "v" });
    // Called before the local document's transaction: remote contexts it
    // names may be fetched here.
    contexts.prefetch(&probe)?;
    let remote = contexts.resolve(&probe)?;
    remote.check_limits(&probe)?;
    let text = probe.to_string();
    crate::jsonld_limits::on_known_stack(|| {
        JsonLdParser::new()
            .for_slice(text.as_bytes())
            .with_load_document_callback(remote.loader())
            .try_for_each(|q| q.map(drop).map_err(|e| format!("invalid JSON-LD context: {e}")))
    })?
}

impl JsonLdProjector {
    /// The graph a winner projects to: its IRI and quads; `None` when the
    /// body is the graph already (written as RDF). `prepared` is used if
    /// it still holds (see [`GraphProjector::project_prepared`]).
    fn graph_of_winner(&self, txn: &StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>, prepared: Option<crate::Prepared>) -> Result<Option<(String, Vec<oxrdf::Quad>)>, String> {
        if winner.is_some_and(|b| b.contains_key(GRAPH_MARKER)) {
            return Ok(None);
        }
        if let (Some(prepared), Some(_)) = (prepared, winner) {
            if let Ok(parsed) = prepared.downcast::<ParsedAhead>() {
                // Used if the default context it was read with is still the
                // stored one (a write of `_local/rhizome-context` since
                // changes it), or was not used, and the body is the one
                // parsed.
                let holds = parsed.iri == self.iris.graph_iri(doc_id)
                    && match &parsed.default_context {
                        DefaultContext::Unused => true,
                        DefaultContext::Read(stored) => &txn.kv().get(LOCAL, DEFAULT_CONTEXT_DOC.as_bytes()).map_err(|e| e.to_string())? == stored,
                    };
                if holds {
                    let ParsedAhead { iri, quads, .. } = *parsed;
                    return Ok(Some((iri, quads)));
                }
            }
        }
        let iri = self.iris.graph_iri(doc_id);
        // Parsed in full before the graph changes: a malformed document
        // fails the write with nothing of it applied.
        let quads = match winner {
            // Design documents are the database's code (views, Mango
            // indexes, validation), not its data: no graph, even under a
            // default context with `@vocab`.
            Some(_) if doc_id.starts_with("_design/") => Vec::new(),
            Some(body) => parse_document(txn.kv(), body, &iri, &self.contexts)?,
            None => Vec::new(),
        };
        Ok(Some((iri, quads)))
    }
}

impl GraphProjector for JsonLdProjector {
    fn project(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>) -> Result<(), String> {
        self.project_known(txn, doc_id, winner, None, false).map(drop)
    }

    fn project_prepared(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: &Map<String, Value>, prepared: crate::Prepared) -> Result<(), String> {
        self.project_known(txn, doc_id, Some(winner), Some(prepared), false).map(drop)
    }

    /// The graph is the document's projection alone, so it is known empty
    /// after a projection of no quads.
    fn project_known(&self, txn: &mut StoreTransaction<'_>, doc_id: &str, winner: Option<&Map<String, Value>>, prepared: Option<crate::Prepared>, graph_empty: bool) -> Result<bool, String> {
        let Some((iri, quads)) = self.graph_of_winner(txn, doc_id, winner, prepared)? else { return Ok(false) };
        let empty = quads.is_empty();
        replace_graph(txn, &iri, quads, graph_empty)?;
        Ok(empty)
    }

    fn graph_iri(&self, doc_id: &str) -> Option<String> {
        Some(self.iris.graph_iri(doc_id))
    }

    fn doc_id(&self, graph_iri: &str) -> Option<String> {
        Some(self.iris.doc_id(graph_iri))
    }

    fn id_conflict(&self, txn: &StoreTransaction<'_>, doc_id: &str) -> Result<Option<String>, String> {
        if let Some(reason) = self.iris.reserved_id(doc_id) {
            return Ok(Some(reason));
        }
        let Some(iri) = self.iris.graph_iri_taken_by(doc_id) else { return Ok(None) };
        let Some(bytes) = txn.kv().get(crate::keys::DOCS, iri.as_bytes()).map_err(|e| e.to_string())? else { return Ok(None) };
        let live = !crate::keys::DocInfo::from_bytes(&iri, &bytes).map_err(|e| e.to_string())?.deleted;
        Ok(live.then(|| format!("The graph IRI of document {doc_id:?} is {iri}, the id of another document; delete that document first")))
    }

    fn check_local(&self, id: &str, doc: &Map<String, Value>) -> Result<(), String> {
        if id == DEFAULT_CONTEXT_DOC {
            check_default_context(doc, &self.contexts)?;
        }
        Ok(())
    }

    fn prepare(&self, reader: &dyn KvRead, doc: &Map<String, Value>) -> Result<Option<crate::Prepared>, String> {
        if member(&doc, GRAPH_MARKER).is_some() {
            return Ok(None);
        }
        // A flat document with its own vocabulary names no remote context:
        // read at once (see `jsonld_flat`).
        if let (Some(id), Some(own)) = (member(&doc, "_id").and_then(Value::as_str).filter(|id| !id.starts_with("_design/")), member(&doc, "@context")) {
            let iri = self.iris.graph_iri(id);
            if let Some(quads) = crate::jsonld_flat::flat_quads(doc, own, &iri) {
                return Ok(Some(Box::new(ParsedAhead { iri, default_context: DefaultContext::Unused, quads })));
            }
        }
        // Contexts anywhere in the body (nested nodes have their own too);
        // a document without one at its top uses the database's, whose
        // remote contexts were fetched when it was written.
        // Copied for the walk only when a context is named somewhere: the
        // copy of every plain document was a tenth of a `_bulk_docs`.
        if doc.iter().any(|(k, v)| !k.starts_with('_') && (k == "@context" || names_a_context(v))) {
            let json: Map<String, Value> = doc.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
            self.contexts.prefetch(&Value::Object(json))?;
        }
        // The parse, ahead of the write's lock. A document the parse
        // refuses is refused here, on its own: in the write its projection
        // would fail the whole transaction, and with it every other
        // document of a `_bulk_docs` (CouchDB's rule is one error per
        // document). A body read with the default context is refused by
        // the default context of this snapshot; one that changes before
        // the write is a race the writer cannot see.
        let Some(id) = member(&doc, "_id").and_then(Value::as_str).filter(|id| !id.starts_with("_design/")) else { return Ok(None) };
        let iri = self.iris.graph_iri(id);
        // A body with a context of its own at its top is read with that
        // one alone (see `parse_document`).
        let default_context = if member(&doc, "@context").is_some() {
            DefaultContext::Unused
        } else {
            DefaultContext::Read(reader.get(LOCAL, DEFAULT_CONTEXT_DOC.as_bytes()).map_err(|e| e.to_string())?)
        };
        let quads = parse_document(reader, doc, &iri, &self.contexts)?;
        Ok(Some(Box::new(ParsedAhead { iri, default_context, quads })))
    }

    fn contexts(&self) -> Option<&ContextStore> {
        Some(&self.contexts)
    }

    fn foreign_graph(&self, iri: &str) -> Option<String> {
        self.iris.foreign_graph(iri)
    }

    fn graph_of(&self, reader: &dyn KvRead, doc_id: &str, body: &Map<String, Value>) -> Result<Vec<oxrdf::Quad>, String> {
        if doc_id.starts_with("_design/") || member(&body, GRAPH_MARKER).is_some() {
            return Ok(Vec::new());
        }
        parse_document(reader, body, &self.iris.graph_iri(doc_id), &self.contexts)
    }
}

/// A document's graph parsed by `prepare`: its graph IRI, the stored
/// default context it was read with, and its quads.
struct ParsedAhead {
    iri: String,
    default_context: DefaultContext,
    quads: Vec<oxrdf::Quad>,
}

/// The database's default context as a parse ahead of the write saw it.
enum DefaultContext {
    /// Not used: the body has its own context at its top.
    Unused,
    /// The stored `_local/rhizome-context` (bytes; `None`: none stored).
    Read(Option<Vec<u8>>),
}

/// Makes graph `iri` hold exactly `quads`; `empty`: the caller knows it
/// holds none now (nothing to look for and drop).
fn replace_graph(txn: &mut StoreTransaction<'_>, iri: &str, quads: Vec<oxrdf::Quad>, empty: bool) -> Result<(), String> {
    let graph_node = NamedNode::new_unchecked(iri);
    debug_assert!(
        !empty || !txn.lookup(TermRef::NamedNode(graph_node.as_ref())).ok().flatten().is_some_and(|g| txn.graph_exists(g).unwrap_or(true)),
        "graph {iri} said to be empty holds quads"
    );
    if !empty {
        if let Some(graph) = txn.lookup(TermRef::NamedNode(graph_node.as_ref())).map_err(|e| e.to_string())? {
            txn.drop_graph(graph).map_err(|e| e.to_string())?;
        }
    }
    // The graph's id, once: it is also the subject of most quads (a
    // document describes itself), and a new document's IRI is no
    // committed term, so each encoding of it would search the
    // transaction's writes again.
    let mut graph = None;
    for quad in quads {
        // Every triple of the document, whatever graph JSON-LD names,
        // belongs to the document's graph: one document, one graph.
        let g = match graph {
            Some(g) => g,
            None => *graph.insert(txn.encode(TermRef::NamedNode(graph_node.as_ref())).map_err(|e| e.to_string())?),
        };
        let s = match &quad.subject {
            oxrdf::NamedOrBlankNode::NamedNode(n) if n.as_str() == iri => g,
            subject => txn.encode(subject.as_ref().into()).map_err(|e| e.to_string())?,
        };
        let p = txn.encode(quad.predicate.as_ref().into()).map_err(|e| e.to_string())?;
        let o = txn.encode(quad.object.as_ref()).map_err(|e| e.to_string())?;
        txn.insert(&[s, p, o, g]).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The most triples one document's graph may hold: a write holds every
/// quad it makes until its commit (about 2 KB each, terms, index keys and
/// all), so a 1.2 MB document with a list of 600,000 items took gigabytes.
/// LDP resources, Graph Store and SPARQL Update writes have the same bound.
pub const MAX_DOCUMENT_TRIPLES: usize = 100_000;

/// The most JSON values (scalars, arrays and objects) a document read as
/// JSON-LD may have: JSON-LD is expanded whole before its first triple
/// (a list of 600,000 numbers took 780 MB), so a body is counted first.
/// Twice [`MAX_DOCUMENT_TRIPLES`]: a list item makes two triples.
pub const MAX_DOCUMENT_JSON_VALUES: usize = 2 * MAX_DOCUMENT_TRIPLES;

/// The values of a JSON object's members (scalars, arrays and objects, at
/// every depth), counted up to one past `stop`.
fn json_values(members: &Map<String, Value>, stop: usize) -> usize {
    let mut count = 0;
    let mut todo: Vec<&Value> = members.values().collect();
    while let Some(v) = todo.pop() {
        count += 1;
        if count > stop {
            break;
        }
        match v {
            Value::Array(items) => todo.extend(items),
            Value::Object(members) => todo.extend(members.values()),
            _ => {}
        }
    }
    count
}

fn too_many_triples() -> String {
    format!("the document's graph would hold more than {MAX_DOCUMENT_TRIPLES} triples, the most one document may have; split it into several documents")
}

/// Refuses a JSON-LD body past [`MAX_DOCUMENT_JSON_VALUES`].
fn check_values(body: &Map<String, Value>) -> Result<(), String> {
    if json_values(body, MAX_DOCUMENT_JSON_VALUES) > MAX_DOCUMENT_JSON_VALUES {
        return Err(format!(
            "the document has more than {MAX_DOCUMENT_JSON_VALUES} JSON values, the most a document read as JSON-LD may have (its graph may hold {MAX_DOCUMENT_TRIPLES} triples); split it into several documents"
        ));
    }
    Ok(())
}

/// The quads of a document read as JSON-LD; none for plain JSON.
fn parse_document(reader: &dyn KvRead, body: &Map<String, Value>, iri: &str, contexts: &ContextStore) -> Result<Vec<oxrdf::Quad>, String> {
    let within = |quads: Vec<oxrdf::Quad>| if quads.len() > MAX_DOCUMENT_TRIPLES { Err(too_many_triples()) } else { Ok(quads) };
    let default = match member(&body, "@context") {
        Some(own) => {
            check_values(body)?;
            if let Some(quads) = crate::jsonld_flat::flat_quads(body, own, iri) {
                return within(quads);
            }
            None
        }
        None => default_context(reader)?,
    };
    if default.is_some() {
        check_values(body)?;
    }
    if let Some(quads) = default.as_ref().and_then(|context| crate::jsonld_flat::flat_quads(body, context, iri)) {
        return within(quads);
    }
    if default.is_none() && !is_json_ld(body) {
        return Ok(Vec::new()); // plain JSON: no graph (and no copy of it)
    }
    let mut json: Map<String, Value> = body.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
    if !json.contains_key("@context") {
        match default {
            Some(context) => {
                json.insert("@context".into(), context);
            }
            None if !is_json_ld(&json) => return Ok(Vec::new()), // plain JSON: no graph
            None => {}
        }
    }
    // Counted before oxjsonld expands it whole (a body with a context of
    // its own, or the default one, was counted above).
    check_values(&json)?;
    // Triple terms (embedded nodes) become placeholders oxjsonld can read.
    let placeholders = crate::triple_terms::extract(&mut json);
    let json = Value::Object(json);
    // Remote contexts from the cache only (fetched before the write's
    // transaction, by `prepare`): no network inside the write.
    let remote = contexts.resolve(&json)?;
    // oxjsonld recurses on contexts: bounded first (with the remote
    // contexts it will process), then run on a stack of known size, or on
    // this thread's when the document is shallow (see jsonld_limits).
    let depths = remote.measure(&json)?;
    let text = json.to_string();
    let parser = JsonLdParser::new()
        .with_base_iri(iri)
        .map_err(|e| format!("document IRI {iri}: {e}"))?;
    let loader = remote.loader();
    let quads = crate::jsonld_limits::on_stack_for(depths, move || {
        // Stopped as soon as the graph passes its bound, not after.
        let mut quads = Vec::new();
        for q in parser.for_slice(text.as_bytes()).with_load_document_callback(loader) {
            quads.push(q.map_err(|e| format!("invalid JSON-LD: {e}"))?);
            if quads.len() > MAX_DOCUMENT_TRIPLES {
                return Err(too_many_triples());
            }
        }
        Ok(quads)
    })??;
    match placeholders {
        Some(p) => p.resolve(quads),
        None => Ok(quads),
    }
}

/// The graph `graph_iri` rendered as the members of a JSON-LD document:
/// `{"@graph": [...]}` in expanded form (full IRIs, so that the document
/// written back unchanged projects to the same graph): a node object per
/// run of one subject in the index's order, an array per predicate, as
/// `oxjsonld`'s serializer writes it, but built as JSON values directly
/// (serializing and parsing it back was half of a document read).
pub(crate) fn render_graph(kv: &dyn KvRead, graph_iri: &str, snapshot: Option<&StoreSnapshot>) -> crate::Result<Map<String, Value>> {
    let cache = snapshot.map(|s| s.term_cache().as_ref());
    // A snapshot knows which index families hold quads: a store whose
    // documents are all graphs of their own subjects reads one index, one
    // seek per document instead of two.
    let families = snapshot.map(|s| s.families()).unwrap_or_default();
    let mut members = Map::new();
    let node = NamedNode::new_unchecked(graph_iri);
    // Through the snapshot, the store's shared ids: a document read looks
    // its graph up again and again.
    let graph = match snapshot {
        Some(s) => s.lookup(TermRef::NamedNode(node.as_ref()))?,
        None => Dictionary::lookup(kv, TermRef::NamedNode(node.as_ref()))?,
    };
    let Some(graph) = graph else {
        members.insert("@graph".into(), Value::Array(Vec::new()));
        return Ok(members);
    };
    let quads = QuadScan::new_in(kv, QuadPattern { g: Some(graph), ..Default::default() }, families).collect::<rhizome_rdf::Result<Vec<_>>>()?;
    let terms = GraphTerms::read(kv, &quads, cache).map_err(|e| match e {
        crate::DocError::Corrupt(m) => crate::DocError::Corrupt(format!("{m} of graph {graph_iri}")),
        e => e,
    })?;
    let corrupt = |what: &str| crate::DocError::Corrupt(format!("{what} in graph {graph_iri}"));
    let mut nodes = Vec::new();
    let mut current: Option<(TermId, Map<String, Value>)> = None;
    for q in &quads {
        if current.as_ref().map(|(s, _)| *s) != Some(q[0]) {
            nodes.extend(current.take().map(|(_, n)| sorted_node(n)));
            let id = match terms.get(q[0])? {
                Term::NamedNode(n) => n.as_str().to_owned(),
                Term::BlankNode(b) => b.to_string(),
                _ => return Err(corrupt("literal subject")),
            };
            current = Some((q[0], Map::from_iter([("@id".to_owned(), Value::String(id))])));
        }
        let Term::NamedNode(predicate) = terms.get(q[1])? else {
            return Err(corrupt("predicate that is not an IRI"));
        };
        let object = object_value(terms.get(q[2])?).ok_or_else(|| corrupt("object that JSON-LD cannot hold"))?;
        let Some((_, node)) = current.as_mut() else { unreachable!("a node is open") };
        match node.get_mut(predicate.as_str()) {
            Some(Value::Array(objects)) => objects.push(object),
            _ => {
                node.insert(predicate.as_str().to_owned(), Value::Array(vec![object]));
            }
        }
    }
    nodes.extend(current.map(|(_, n)| sorted_node(n)));
    members.insert("@graph".into(), Value::Array(nodes));
    Ok(members)
}

/// A node of a rendered graph with its members in key order (`@id`, then
/// predicate IRIs), as [`write_graph_json`] writes them: JSON objects keep
/// the order members were inserted in, and quads come in predicate id order.
fn sorted_node(mut node: Map<String, Value>) -> Value {
    node.sort_keys();
    Value::Object(node)
}

/// [`render_graph`]'s `@graph` array written straight out as JSON bytes,
/// byte for byte what `serde_json` writes of it (members in key order),
/// without building the values: each distinct term is written once, from
/// the shared cache in place where it is there, and copied from there into
/// every node that names it. What a plain `GET` of a document costs most.
pub(crate) fn write_graph_json(kv: &dyn KvRead, graph_iri: &str, snapshot: &StoreSnapshot, out: &mut Vec<u8>) -> crate::Result<()> {
    let quads = graph_quads(kv, graph_iri, snapshot)?;
    if quads.is_empty() {
        out.extend_from_slice(b"[]");
        return Ok(());
    }
    let corrupt = |what: &str| crate::DocError::Corrupt(format!("{what} in graph {graph_iri}"));
    let mut ids: Vec<TermId> = quads.iter().flat_map(|q| [q[0], q[1], q[2]]).collect();
    ids.sort_unstable();
    ids.dedup();
    // Each term's JSON, in `written`: its name as a JSON string (IRIs and
    // blank nodes) and its form as an object.
    let mut written = Vec::new();
    let mut forms: Vec<Option<TermJson>> = vec![None; ids.len()];
    let mut missing = Vec::new();
    let cache = snapshot.term_cache();
    let dense = cache.dense_terms_of(&ids);
    for ((slot, &id), dense) in forms.iter_mut().zip(&ids).zip(dense) {
        if let Some(t) = dense {
            *slot = TermJson::write(t, &mut written);
        } else if !id.is_in_dictionary() {
            let term = Dictionary::decode(kv, id)?.ok_or_else(|| crate::DocError::Corrupt(format!("term {id:?}")))?;
            *slot = TermJson::write(&term, &mut written);
        } else if let Some(form) = cache.with(id, |t| TermJson::write(t, &mut written)) {
            *slot = form;
        } else {
            missing.push(id);
        }
    }
    cache.decode_missing(kv, &mut missing, |id, term| {
        if let Ok(i) = ids.binary_search(&id) {
            forms[i] = TermJson::write(term, &mut written);
        }
    })?;
    let form = |id: TermId| -> crate::Result<&TermJson> { ids.binary_search(&id).ok().and_then(|i| forms[i].as_ref()).ok_or_else(|| crate::DocError::Corrupt(format!("term {id:?} of graph {graph_iri}"))) };
    let name = |f: &TermJson| f.name.clone().map(|r| &written[r]);
    out.push(b'[');
    // Per node, its predicates (each a run of quads) in the order of their
    // IRIs, as a JSON object's members are written.
    let mut runs: Vec<(&[u8], std::ops::Range<usize>)> = Vec::new();
    let mut start = 0;
    while start < quads.len() {
        let subject = quads[start][0];
        let end = start + quads[start..].iter().take_while(|q| q[0] == subject).count();
        if start > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"@id\":");
        out.extend_from_slice(name(form(subject)?).ok_or_else(|| corrupt("literal subject"))?);
        runs.clear();
        let mut i = start;
        while i < end {
            let p = quads[i][1];
            let run_end = i + quads[i..end].iter().take_while(|q| q[1] == p).count();
            let f = form(p)?;
            let iri = name(f).filter(|_| f.iri).ok_or_else(|| corrupt("predicate that is not an IRI"))?;
            runs.push((iri, i..run_end));
            i = run_end;
        }
        // Compared without their quotes ("a!" sorts before "a" quoted).
        runs.sort_unstable_by(|a, b| a.0[1..a.0.len() - 1].cmp(&b.0[1..b.0.len() - 1]));
        for (iri, run) in &runs {
            out.push(b',');
            out.extend_from_slice(iri);
            out.extend_from_slice(b":[");
            for (k, q) in quads[run.clone()].iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                form(q[2])?.write_object(&written, out);
            }
            out.push(b']');
        }
        out.push(b'}');
        start = end;
    }
    out.push(b']');
    Ok(())
}

/// The quads of the graph named `graph_iri` (none if the store lacks the
/// name), in graph-subject-predicate-object order: a document read's
/// storage reads, before any term is named.
pub(crate) fn graph_quads(kv: &dyn KvRead, graph_iri: &str, snapshot: &StoreSnapshot) -> crate::Result<Vec<[TermId; 4]>> {
    let node = NamedNode::new_unchecked(graph_iri);
    let Some(graph) = snapshot.lookup(TermRef::NamedNode(node.as_ref()))? else { return Ok(Vec::new()) };
    Ok(QuadScan::new_in(kv, QuadPattern { g: Some(graph), ..Default::default() }, snapshot.families()).collect::<rhizome_rdf::Result<Vec<_>>>()?)
}

/// Where one term's JSON forms are in a buffer of [`write_graph_json`].
#[derive(Clone)]
struct TermJson {
    /// Its name as a JSON string: IRIs and blank nodes only.
    name: Option<std::ops::Range<usize>>,
    iri: bool,
    /// As an object in expanded JSON-LD ([`object_value`]'s JSON), for a
    /// literal; a node's is `{"@id":` and its name (not copied twice).
    object: Option<std::ops::Range<usize>>,
}

impl TermJson {
    /// Appends the term as an object in expanded JSON-LD.
    fn write_object(&self, written: &[u8], out: &mut Vec<u8>) {
        match (&self.object, &self.name) {
            (Some(object), _) => out.extend_from_slice(&written[object.clone()]),
            (None, Some(name)) => {
                out.extend_from_slice(b"{\"@id\":");
                out.extend_from_slice(&written[name.clone()]);
                out.push(b'}');
            }
            (None, None) => unreachable!("a term has a name or an object form"),
        }
    }
}

/// Whether a JSON string of these bytes needs escapes (a control
/// character, `"` or `\`): eight bytes at a time, as IRIs, which never do,
/// are most of what a document read writes.
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Non-zero exactly when some byte of `x` is zero.
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut chunks = s.chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // Some byte below 0x20 (exact for a bound up to 0x80), `"` or `\`.
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        if control | zero_byte(x ^ (ONES * b'"' as u64)) | zero_byte(x ^ (ONES * b'\\' as u64)) != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

impl TermJson {
    /// `None` for a term JSON-LD cannot hold (the reader reports it).
    fn write(term: &Term, buf: &mut Vec<u8>) -> Option<TermJson> {
        let string = |buf: &mut Vec<u8>, s: &str| {
            // Most terms (every IRI) have nothing to escape: copied whole.
            if needs_escape(s.as_bytes()) {
                serde_json::to_writer(&mut *buf, s).expect("writing to a Vec");
            } else {
                buf.push(b'"');
                buf.extend_from_slice(s.as_bytes());
                buf.push(b'"');
            }
        };
        let name_start = buf.len();
        let (name, iri) = match term {
            Term::NamedNode(n) => {
                string(buf, n.as_str());
                (Some(name_start..buf.len()), true)
            }
            Term::BlankNode(b) => {
                string(buf, &b.to_string());
                (Some(name_start..buf.len()), false)
            }
            Term::Literal(_) => (None, false),
            // RDF 1.2: an embedded node, written as `object_value` makes it.
            Term::Triple(_) => {
                let start = buf.len();
                serde_json::to_writer(&mut *buf, &object_value(term)?).expect("writing to a Vec");
                return Some(TermJson { name: None, iri: false, object: Some(start..buf.len()) });
            }
        };
        let object_start = buf.len();
        match (term, &name) {
            (Term::Literal(l), _) => {
                buf.push(b'{');
                if let Some(language) = l.language() {
                    buf.extend_from_slice(b"\"@language\":");
                    string(buf, language);
                    buf.push(b',');
                    if let Some(direction) = l.direction() {
                        buf.extend_from_slice(b"\"@direction\":");
                        string(buf, direction_name(direction));
                        buf.push(b',');
                    }
                } else if l.datatype() != oxrdf::vocab::xsd::STRING {
                    buf.extend_from_slice(b"\"@type\":");
                    string(buf, l.datatype().as_str());
                    buf.push(b',');
                }
                buf.extend_from_slice(b"\"@value\":");
                string(buf, l.value());
                buf.push(b'}');
            }
            (_, Some(_)) => return Some(TermJson { name, iri, object: None }),
            _ => return None,
        }
        Some(TermJson { name, iri, object: Some(object_start..buf.len()) })
    }
}

fn direction_name(d: oxrdf::BaseDirection) -> &'static str {
    match d {
        oxrdf::BaseDirection::Ltr => "ltr",
        oxrdf::BaseDirection::Rtl => "rtl",
    }
}

/// An object in expanded JSON-LD: `{"@id"}` for a node, `{"@value"}` with
/// `"@language"` or a `"@type"` other than `xsd:string` for a literal.
fn object_value(term: &Term) -> Option<Value> {
    let mut object = Map::new();
    match term {
        Term::NamedNode(n) => {
            object.insert("@id".into(), Value::String(n.as_str().to_owned()));
        }
        Term::BlankNode(b) => {
            object.insert("@id".into(), Value::String(b.to_string()));
        }
        Term::Literal(l) => {
            if let Some(language) = l.language() {
                object.insert("@language".into(), Value::String(language.to_owned()));
                if let Some(direction) = l.direction() {
                    object.insert("@direction".into(), Value::String(direction_name(direction).to_owned()));
                }
            } else if l.datatype() != oxrdf::vocab::xsd::STRING {
                object.insert("@type".into(), Value::String(l.datatype().as_str().to_owned()));
            }
            object.insert("@value".into(), Value::String(l.value().to_owned()));
        }
        // RDF 1.2: an embedded node (`crate::triple_terms`).
        Term::Triple(t) => return crate::triple_terms::embedded_node(t, object_value),
    }
    Some(Value::Object(object))
}

/// The distinct terms of a graph's quads, sorted by id: from the store's
/// shared cache (a snapshot reader's, which holds committed terms only),
/// else all the others in one walk of the dictionary in id order.
struct GraphTerms {
    ids: Vec<TermId>,
    terms: Vec<Option<Term>>,
}

impl GraphTerms {
    fn read(kv: &dyn KvRead, quads: &[[TermId; 4]], cache: Option<&TermCache>) -> crate::Result<GraphTerms> {
        let mut ids: Vec<TermId> = quads.iter().flat_map(|q| [q[0], q[1], q[2]]).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut terms = vec![None; ids.len()];
        let mut missing = Vec::new();
        for (slot, &id) in terms.iter_mut().zip(&ids) {
            if !id.is_in_dictionary() {
                *slot = Some(Dictionary::decode(kv, id)?.ok_or_else(|| crate::DocError::Corrupt(format!("term {id:?}")))?);
            } else if let Some(t) = cache.and_then(|c| c.get(id)) {
                *slot = Some(t);
            } else {
                missing.push(id);
            }
        }
        let mut found = |id: TermId, t: &Term| {
            if let Ok(i) = ids.binary_search(&id) {
                terms[i] = Some(t.clone());
            }
        };
        match cache {
            Some(c) => c.decode_missing(kv, &mut missing, found)?,
            None => Dictionary::decode_many(kv, &mut missing, |id, t| found(id, &t))?,
        }
        Ok(GraphTerms { ids, terms })
    }

    fn get(&self, id: TermId) -> crate::Result<&Term> {
        self.ids.binary_search(&id).ok().and_then(|i| self.terms[i].as_ref()).ok_or_else(|| crate::DocError::Corrupt(format!("term {id:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer kept for the last id is the answer for that id, asked
    /// in any order.
    #[test]
    fn absolute_iris_are_told_apart_whatever_was_asked_before() {
        let ids = ["a:1", "doc", "http://e/x", "a:1 b", "b:2", "1a:x", "urn:x:y", "a:", "mailto:me@e.org", "x:%zz", "http://e/x"];
        let expected = [true, false, true, false, true, false, true, false, true, false, true];
        for round in 0..3 {
            for (i, id) in ids.iter().enumerate() {
                let i = (i + round * 3) % ids.len();
                assert_eq!(is_absolute_iri(ids[i]), expected[i], "{} (after {id})", ids[i]);
                assert_eq!(is_absolute_iri(ids[i]), expected[i], "{} asked twice", ids[i]);
            }
        }
    }

    /// The eight-at-a-time check agrees with a byte-by-byte one for every
    /// byte value at every position of strings of 0 to 24 bytes, among
    /// plain ASCII and multi-byte UTF-8 (bytes above 0x7f never need one).
    #[test]
    fn escapes_are_found_wherever_they_are() {
        let naive = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        for len in 0..=24 {
            for fill in [b'a', 0xc3, b' ', b'~', 0x7f, 0x80] {
                let base = vec![fill; len];
                assert_eq!(needs_escape(&base), naive(&base), "{base:?}");
                for at in 0..len {
                    for byte in 0..=255u8 {
                        let mut s = base.clone();
                        s[at] = byte;
                        assert_eq!(needs_escape(&s), naive(&s), "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn ids_map_to_graph_iris_and_back() {
        let iris = DocumentIris::new("http://localhost:5984", "people");
        assert_eq!(iris.graph_iri("alice"), "http://localhost:5984/people/alice");
        assert_eq!(iris.graph_iri("a b/c"), "http://localhost:5984/people/a%20b%2Fc");
        assert_eq!(iris.doc_id("http://localhost:5984/people/a%20b%2Fc"), "a b/c");
        assert_eq!(iris.graph_iri("http://example.org/s"), "http://example.org/s");
        assert_eq!(iris.doc_id("http://example.org/s"), "http://example.org/s");
        assert_eq!(iris.graph_iri("urn:x:1"), "urn:x:1");
        assert_eq!(iris.graph_iri("12:30 meeting"), "http://localhost:5984/people/12%3A30%20meeting");
    }
}

#[cfg(test)]
mod ldp_iri_tests {
    use super::DocumentIris;

    #[test]
    fn ldp_resources_are_their_own_documents_under_the_database_prefix() {
        let iris = DocumentIris::new("http://h:1", "db");
        assert_eq!(iris.ldp_root(), "http://h:1/db/_ldp/");
        for iri in ["http://h:1/db/_ldp/", "http://h:1/db/_ldp/a/b%20c"] {
            assert_eq!(iris.doc_id(iri), iri, "the id is the IRI");
            assert_eq!(iris.graph_iri(iri), iri, "the graph is the IRI");
            assert_eq!(iris.reserved_id(iri), None, "no other document's graph is named there");
        }
        // The rest of the prefix keeps its rule.
        assert_eq!(iris.doc_id("http://h:1/db/_ldpx"), "_ldpx");
        assert!(iris.reserved_id("http://h:1/db/doc").is_some());
    }
}
