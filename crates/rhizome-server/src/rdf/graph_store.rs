//! `/{db}/_graph`: the SPARQL 1.1 Graph Store HTTP Protocol
//! (https://www.w3.org/TR/sparql11-http-rdf-update/).
//!
//! Graphs are named indirectly (`?graph=IRI`, `?default`) or directly (the
//! graph's IRI is the request URL, `/{db}/_graph/some/path`, §4.1). In a
//! union database (every database made by the server) the default graph is
//! the union of all graphs for reads (GET), and for writes the database's
//! stored default graph (`Database::stored_default_graph`, the document
//! `default-graph`): PUT, POST and DELETE of `?default` replace, add to and
//! clear that graph only, never the documents the union shows, as SPARQL's
//! `CLEAR DEFAULT` does (`DROP ALL` is what removes everything).
//!
//! - GET/HEAD: the graph in the negotiated format; 404 for a missing graph;
//! - PUT: replaces the graph; 201 if it was created, 204 otherwise (§5.3);
//! - POST: merges into the graph (201 if created, 204 otherwise); a POST to
//!   the store itself (no `graph`, no `default`) creates a new graph under
//!   the endpoint's URL and answers 201 with its IRI in `Location` (§5.5);
//!   `multipart/form-data` bodies merge every part (§5.5);
//! - DELETE: removes the graph; 204, or 404 if it does not exist (§5.4).
//!
//! Bodies in Turtle, N-Triples, N-Quads, TriG, RDF/XML or JSON-LD by
//! `Content-Type` (415 otherwise); malformed RDF is 400 with the parser's
//! position. Writes go through `Database::rdf_write`.
//!
//! Limits: a body nesting deeper than `MAX_RDF_NESTING` (256) levels
//! (Turtle collections and blank nodes, RDF/XML elements, JSON) is 400 at
//! the position of the first level past it, and a JSON-LD body is held to
//! the document bounds (`rhizome_docs::check_json_ld`). The body is parsed
//! in full before the database's write lock is taken. A write (parsing
//! included) stops with 503 after [`GRAPH_WRITE_TIMEOUT_MS`] or at
//! shutdown, rolled back.

use super::negotiate::{self, GraphFormat, GRAPH_OFFERS};
use super::{endpoint_iri, store_error};
use crate::auth::UserCtx;
use crate::error::HttpError;
use rhizome_docs::EmptiedGraphs;
use crate::http::{self, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use oxrdf::{NamedNode, Triple};
use oxrdfio::{RdfFormat, RdfParser, RdfSerializer};
use crate::state::Server;
use rhizome_rdf::nesting::{check_nesting, MAX_RDF_NESTING};
use rhizome_rdf::{DatasetMode, DecodeCache, QuadPattern, StoreTransaction, TermId};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How long a Graph Store write may take, parsing included.
pub const GRAPH_WRITE_TIMEOUT_MS: u64 = 60_000;

/// Triples parsed or written between two looks at the clock and the
/// shutdown flag.
const CHECK_EVERY: usize = 4096;

/// When a write must give up: its deadline, or the server shutting down
/// (so that SIGTERM stops a long write within a bounded time; the
/// transaction is dropped and nothing of it is kept).
struct WriteBudget<'a> {
    deadline: Instant,
    shutdown: &'a tokio::sync::watch::Receiver<bool>,
    cancelled: &'a std::sync::atomic::AtomicBool,
}

impl WriteBudget<'_> {
    fn new<'a>(server: &'a Server, req: &'a Request) -> WriteBudget<'a> {
        WriteBudget { deadline: Instant::now() + Duration::from_millis(GRAPH_WRITE_TIMEOUT_MS), shutdown: &server.shutdown, cancelled: &req.cancelled }
    }

    fn check(&self) -> Result<(), HttpError> {
        if *self.shutdown.borrow() {
            return Err(HttpError::new(503, "shutting_down", "the server is shutting down; the write was not made"));
        }
        if self.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
            // Nobody reads this answer: the client has gone.
            eprintln!("rhizome: stopped a Graph Store write whose client went away");
            return Err(HttpError::new(499, "client_closed_request", "the client went away; the write was not made"));
        }
        if Instant::now() > self.deadline {
            return Err(HttpError::new(503, "write_limit", format!("the Graph Store write took longer than {} s and was not made", GRAPH_WRITE_TIMEOUT_MS / 1000)));
        }
        Ok(())
    }
}

/// Which graph a request is about.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Default,
    Named(NamedNode),
    /// The graph store itself (only POST: create a graph).
    Store,
}

fn target(req: &Request, db: &DbHandle, direct: Option<&str>) -> Result<Target, HttpError> {
    let endpoint = endpoint_iri(req, db, "_graph");
    if let Some(path) = direct {
        if req.param("graph").is_some() || req.param("default").is_some() {
            return Err(HttpError::bad_request("a graph named by the request URL takes no graph or default parameter"));
        }
        let iri = format!("{endpoint}/{path}");
        return NamedNode::new(&iri).map(Target::Named).map_err(|e| HttpError::bad_request(format!("{iri:?} is not a valid graph IRI: {e}")));
    }
    match (req.param("graph"), req.param("default")) {
        (Some(_), Some(_)) => Err(HttpError::bad_request("give either graph=IRI or default, not both")),
        (Some(iri), None) => {
            if req.query.iter().filter(|(k, _)| k == "graph").count() > 1 {
                return Err(HttpError::bad_request("more than one graph parameter"));
            }
            Ok(Target::Named(resolve(&endpoint, iri)?))
        }
        (None, Some(_)) => Ok(Target::Default),
        (None, None) => Ok(Target::Store),
    }
}

/// A graph IRI, relative ones resolved against the endpoint (§4.2).
fn resolve(base: &str, iri: &str) -> Result<NamedNode, HttpError> {
    let base = oxiri::Iri::parse(base).map_err(|e| HttpError::internal(format!("endpoint IRI {base}: {e}")))?;
    let resolved = base.resolve(iri).map_err(|e| HttpError::bad_request(format!("{iri:?} is not a valid graph IRI: {e}")))?;
    Ok(NamedNode::new_unchecked(resolved.into_inner()))
}

pub fn handle(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle, direct: Option<&str>) -> Result<Response<Body>, HttpError> {
    let target = target(req, db, direct)?;
    let budget = WriteBudget::new(server, req);
    match (&req.method, &target) {
        (&Method::GET | &Method::HEAD, Target::Store) => Err(HttpError::bad_request("name a graph: ?graph=IRI or ?default (or query the store at _sparql)")),
        (&Method::GET | &Method::HEAD, _) => get(req, db, &target),
        (_, Target::Default) if db.db.stored_default_graph().is_some() => write_stored_default(req, ctx, db, &budget),
        (&Method::PUT, Target::Store) | (&Method::DELETE, Target::Store) => Err(HttpError::bad_request("name a graph: ?graph=IRI or ?default")),
        (&Method::PUT, _) => write(req, ctx, db, &target, true, &budget),
        (&Method::POST, Target::Store) => create(req, ctx, db, &budget),
        (&Method::POST, _) => write(req, ctx, db, &target, false, &budget),
        (&Method::DELETE, _) => delete(ctx, db, &target),
        _ => Err(HttpError::method_not_allowed("GET,HEAD,PUT,POST,DELETE")),
    }
}

/// A document's graph in an RDF syntax (`GET /{db}/{docid}` with
/// `Accept: text/turtle` and the like): empty when the document has none.
pub fn document_graph(req: &Request, db: &DbHandle, graph_iri: &str, format: GraphFormat) -> Result<Response<Body>, HttpError> {
    let iri = NamedNode::new(graph_iri).map_err(|e| HttpError::internal(format!("the graph IRI {graph_iri:?}: {e}")))?;
    match serialize(req, db, &Target::Named(iri), format) {
        Err(e) if e.status == 404 => {
            let mut r = http::response(200, &format.content_type(), Vec::new().into());
            http::set_header(&mut r, "vary", "Accept");
            Ok(r)
        }
        other => other,
    }
}

fn get(req: &Request, db: &DbHandle, target: &Target) -> Result<Response<Body>, HttpError> {
    let format = negotiate::choose(req.header("accept"), GRAPH_OFFERS)?;
    serialize(req, db, target, format)
}

fn serialize(req: &Request, db: &DbHandle, target: &Target, format: GraphFormat) -> Result<Response<Body>, HttpError> {
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let pattern_graph = match target {
        Target::Named(iri) => {
            let id = snapshot.lookup(iri.as_ref().into()).map_err(store_error)?;
            match id {
                Some(id) if snapshot.graph_exists(id).map_err(store_error)? => Some(id),
                _ => return Err(HttpError::not_found(format!("no graph {iri}"))),
            }
        }
        _ => snapshot.default_graph(),
    };
    let mut out = Vec::new();
    let mut w = RdfSerializer::from_format(format.0).for_writer(&mut out);
    let mut cache = DecodeCache::new(&snapshot);
    // The union default graph may hold a triple in several graphs; it is
    // one triple of the default graph.
    let mut seen: HashSet<[TermId; 3]> = HashSet::new();
    let io = |e: std::io::Error| HttpError::internal(format!("writing the graph: {e}"));
    for q in snapshot.scan(QuadPattern { g: pattern_graph, ..Default::default() }) {
        let q = q.map_err(store_error)?;
        if pattern_graph.is_none() && !seen.insert([q[0], q[1], q[2]]) {
            continue;
        }
        // A graph is written as triples, in the default graph of quad
        // formats: the client named the graph already.
        let quad = cache.quad(&q).map_err(store_error)?;
        w.serialize_triple(&Triple::new(quad.subject, quad.predicate, quad.object)).map_err(io)?;
    }
    w.finish().map_err(io)?;
    let mut r = http::response(200, &format.content_type(), out.into());
    http::set_header(&mut r, "vary", "Accept");
    if req.method == Method::HEAD {
        super::head_only(&mut r);
    }
    Ok(r)
}

/// The triples of a request body (every part of a `multipart/form-data`
/// one), blank nodes kept apart per part.
fn body_triples(req: &Request, base: &str, budget: &WriteBudget<'_>, contexts: Option<&rhizome_docs::ContextStore>) -> Result<Vec<Triple>, HttpError> {
    let content_type = req.header("content-type");
    if negotiate::essence(content_type).as_deref() == Some("multipart/form-data") {
        let ct = content_type.unwrap_or_default();
        let mut triples = Vec::new();
        for part in multipart_parts(ct, &req.body)? {
            triples.extend(parse_triples(negotiate::body_format(part.content_type.as_deref())?, &part.body, base, part.name.as_deref(), budget, contexts)?);
        }
        return Ok(triples);
    }
    parse_triples(negotiate::body_format(content_type)?, &req.body, base, None, budget, contexts)
}

/// Parses a body after checking its nesting (and, for JSON-LD, its
/// contexts), on a stack of known size (the JSON-LD parser recurses on
/// contexts).
fn parse_triples(
    format: RdfFormat,
    body: &[u8],
    base: &str,
    part: Option<&str>,
    budget: &WriteBudget<'_>,
    contexts: Option<&rhizome_docs::ContextStore>,
) -> Result<Vec<Triple>, HttpError> {
    let place = part.map(|p| format!(" (part {p})")).unwrap_or_default();
    let invalid = |e: String| HttpError::bad_request(format!("invalid {} in the request body{place}: {e}", format.name()));
    check_nesting(format, body, MAX_RDF_NESTING).map_err(|e| invalid(e.to_string()))?;
    let mut remote = rhizome_docs::contexts::Resolved::default();
    if matches!(format, RdfFormat::JsonLd { .. }) {
        let json: serde_json::Value = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
        // Remote contexts as documents have them: fetched now (before the
        // write's lock), then read from the cache only.
        let offline;
        let store = match contexts {
            Some(store) => store,
            None => {
                offline = rhizome_docs::ContextStore::offline();
                &offline
            }
        };
        store.prefetch(&json).map_err(invalid)?;
        remote = store.resolve(&json).map_err(invalid)?;
        remote.check_limits(&json).map_err(invalid)?;
    }
    let documents = remote.documents();
    let parser = RdfParser::from_format(format).with_base_iri(base).map_err(|e| HttpError::internal(e.to_string()))?.without_named_graphs().rename_blank_nodes();
    rhizome_docs::on_known_stack_if(matches!(format, RdfFormat::JsonLd { .. }), || {
        let mut triples = Vec::new();
        let quads = parser.for_slice(body).with_document_loader(move |url| {
            Ok(oxrdfio::LoadedDocument { url: url.to_owned(), content: documents(url)?, format: RdfFormat::JsonLd { profile: oxrdfio::JsonLdProfile::Context.into() } })
        });
        for q in quads {
            triples.push(Triple::from(q.map_err(|e| invalid(e.to_string()))?));
            if triples.len() % CHECK_EVERY == 0 {
                budget.check()?;
            }
            if triples.len() > super::MAX_GRAPH_WRITE_TRIPLES {
                return Err(super::too_many_triples());
            }
        }
        Ok(triples)
    })
    .map_err(HttpError::internal)?
}

pub(super) struct Part {
    name: Option<String>,
    content_type: Option<String>,
    pub(super) body: Vec<u8>,
}

/// The parts of a `multipart/form-data` body (RFC 7578).
pub(super) fn multipart_parts(content_type: &str, body: &[u8]) -> Result<Vec<Part>, HttpError> {
    let boundary = content_type
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        .ok_or_else(|| HttpError::bad_request("multipart/form-data without a boundary"))?;
    let delimiter = format!("--{boundary}").into_bytes();
    let find = |hay: &[u8], needle: &[u8], from: usize| hay.get(from..).and_then(|h| h.windows(needle.len()).position(|w| w == needle)).map(|i| i + from);
    let mut parts = Vec::new();
    let mut pos = find(body, &delimiter, 0).ok_or_else(|| HttpError::bad_request("multipart body without its boundary"))? + delimiter.len();
    loop {
        if body.get(pos..pos + 2) == Some(b"--") {
            break;
        }
        let start = find(body, b"\r\n", pos).ok_or_else(|| HttpError::bad_request("truncated multipart body"))? + 2;
        let end = find(body, &delimiter, start).ok_or_else(|| HttpError::bad_request("multipart body without its closing boundary"))?;
        // The CRLF before a delimiter belongs to the delimiter.
        let part = &body[start..end.saturating_sub(2).max(start)];
        let head_end = find(part, b"\r\n\r\n", 0).map(|i| (i, i + 4)).or_else(|| part.starts_with(b"\r\n").then_some((0, 2)));
        let (head, content) = match head_end {
            Some((h, c)) => (&part[..h], &part[c..]),
            None => (&part[..0], part),
        };
        let head = String::from_utf8_lossy(head);
        let mut p = Part { name: None, content_type: None, body: content.to_vec() };
        for line in head.split("\r\n") {
            let Some((k, v)) = line.split_once(':') else { continue };
            if k.trim().eq_ignore_ascii_case("content-type") {
                p.content_type = Some(v.trim().to_owned());
            } else if k.trim().eq_ignore_ascii_case("content-disposition") {
                p.name = v.split(';').filter_map(|x| x.split_once('=')).find(|(k, _)| k.trim() == "name").map(|(_, n)| n.trim().trim_matches('"').to_owned());
            }
        }
        parts.push(p);
        pos = end + delimiter.len();
    }
    Ok(parts)
}

/// Graph ids a write to `target` replaces: the named graph, or for the
/// default graph of a union store every graph.
fn graphs_of(txn: &StoreTransaction<'_>, mode: DatasetMode, target: &Target) -> Result<Vec<TermId>, HttpError> {
    Ok(match target {
        Target::Named(iri) => txn.lookup(iri.as_ref().into()).map_err(store_error)?.into_iter().collect(),
        _ => match mode {
            DatasetMode::Plain => vec![TermId::DEFAULT_GRAPH],
            DatasetMode::Union => rhizome_rdf::index::graph_names(txn.reader()).map_err(store_error)?,
        },
    })
}

/// Adds triples to the target graph (to their subjects' graphs for the
/// default graph of a union store).
fn insert(txn: &mut StoreTransaction<'_>, target: &Target, triples: &[Triple], budget: &WriteBudget<'_>) -> Result<(), HttpError> {
    let graph = match target {
        Target::Named(iri) => Some(txn.encode(iri.as_ref().into()).map_err(store_error)?),
        _ => None,
    };
    for (i, t) in triples.iter().enumerate() {
        if i % CHECK_EVERY == CHECK_EVERY - 1 {
            budget.check()?;
        }
        let s = txn.encode(t.subject.as_ref().into()).map_err(store_error)?;
        let p = txn.encode(t.predicate.as_ref().into()).map_err(store_error)?;
        let o = txn.encode(t.object.as_ref()).map_err(store_error)?;
        let g = graph.unwrap_or_else(|| txn.default_graph_of(s));
        txn.insert(&[s, p, o, g]).map_err(store_error)?;
    }
    if let Some(g) = graph {
        // PUT or POST of an empty graph still makes it exist.
        txn.create_graph(g).map_err(store_error)?;
    }
    Ok(())
}

fn exists(txn: &StoreTransaction<'_>, target: &Target) -> Result<bool, HttpError> {
    match target {
        Target::Named(iri) => match txn.lookup(iri.as_ref().into()).map_err(store_error)? {
            Some(id) => txn.graph_exists(id).map_err(store_error),
            None => Ok(false),
        },
        _ => Ok(true),
    }
}

fn write(req: &Request, ctx: &UserCtx, db: &DbHandle, target: &Target, replace: bool, budget: &WriteBudget<'_>) -> Result<Response<Body>, HttpError> {
    let base = match target {
        Target::Named(iri) => iri.as_str().to_owned(),
        _ => endpoint_iri(req, db, "_graph"),
    };
    // Parsed in full before `rdf_write` takes the database's write lock.
    let triples = body_triples(req, &base, budget, db.db.contexts())?;
    let mode = db.db.store().mode();
    let created = super::write_as(ctx, db, EmptiedGraphs::KeepDocumentData, |txn| {
        let existed = exists(txn, target)?;
        if replace {
            for g in graphs_of(txn, mode, target)? {
                txn.drop_graph(g).map_err(store_error)?;
            }
        }
        insert(txn, target, &triples, budget)?;
        budget.check()?;
        Ok::<_, HttpError>(!existed)
    })?;
    db.notify();
    Ok(empty(if created { 201 } else { 204 }))
}

/// PUT, POST or DELETE of `?default` in a union database: the stored
/// default graph, which always exists (204), as the default graph does.
fn write_stored_default(req: &Request, ctx: &UserCtx, db: &DbHandle, budget: &WriteBudget<'_>) -> Result<Response<Body>, HttpError> {
    let iri = db.db.stored_default_graph().unwrap_or_default();
    let stored = Target::Named(NamedNode::new(&iri).map_err(|e| HttpError::internal(format!("stored default graph IRI {iri}: {e}")))?);
    match req.method {
        Method::PUT | Method::POST => {
            // Parsed in full before `rdf_write` takes the database's write lock.
            let triples = body_triples(req, &endpoint_iri(req, db, "_graph"), budget, db.db.contexts())?;
            super::write_as(ctx, db, EmptiedGraphs::KeepDocumentData, |txn| {
                if req.method == Method::PUT {
                    for g in graphs_of(txn, DatasetMode::Union, &stored)? {
                        txn.drop_graph(g).map_err(store_error)?;
                    }
                }
                if !triples.is_empty() {
                    insert(txn, &stored, &triples, budget)?;
                }
                budget.check()?;
                Ok::<_, HttpError>(())
            })?;
        }
        Method::DELETE => {
            super::write_as(ctx, db, EmptiedGraphs::KeepDocumentData, |txn| {
                for g in graphs_of(txn, DatasetMode::Union, &stored)? {
                    txn.drop_graph(g).map_err(store_error)?;
                }
                Ok::<_, HttpError>(())
            })?;
        }
        _ => return Err(HttpError::method_not_allowed("GET,HEAD,PUT,POST,DELETE")),
    }
    db.notify();
    Ok(empty(204))
}

fn create(req: &Request, ctx: &UserCtx, db: &DbHandle, budget: &WriteBudget<'_>) -> Result<Response<Body>, HttpError> {
    let iri = format!("{}/{}", endpoint_iri(req, db, "_graph"), http::uuid());
    let graph = NamedNode::new(&iri).map_err(|e| HttpError::bad_request(format!("cannot name a graph {iri}: {e}")))?;
    let target = Target::Named(graph);
    let triples = body_triples(req, &iri, budget, db.db.contexts())?;
    super::write_as(ctx, db, EmptiedGraphs::KeepDocumentData, |txn| insert(txn, &target, &triples, budget))?;
    db.notify();
    let mut r = empty(201);
    http::set_header(&mut r, "location", &iri);
    Ok(r)
}

fn delete(ctx: &UserCtx, db: &DbHandle, target: &Target) -> Result<Response<Body>, HttpError> {
    let mode = db.db.store().mode();
    super::write_as(ctx, db, EmptiedGraphs::KeepDocumentData, |txn| {
        if !exists(txn, target)? {
            return Err(HttpError::not_found(format!("no graph {}", describe(target))));
        }
        for g in graphs_of(txn, mode, target)? {
            txn.drop_graph(g).map_err(store_error)?;
        }
        Ok(())
    })?;
    db.notify();
    Ok(empty(204))
}

fn describe(target: &Target) -> String {
    match target {
        Target::Named(iri) => iri.to_string(),
        Target::Default => "default".into(),
        Target::Store => "store".into(),
    }
}

fn empty(status: u16) -> Response<Body> {
    let mut r = http::response(status, "text/plain", bytes::Bytes::new());
    r.headers_mut().remove("content-type");
    *r.body_mut() = Body::Full(None);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_split_into_parts() {
        let body = b"--b1\r\nContent-Disposition: form-data; name=\"a.ttl\"; filename=\"a.ttl\"\r\nContent-Type: text/turtle\r\n\r\n<urn:s> <urn:p> 1 .\r\n\r\n--b1\r\nContent-Type: application/n-triples\r\n\r\n<urn:s> <urn:p> 2 .\r\n--b1--\r\n";
        let parts = multipart_parts("multipart/form-data; boundary=b1", body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name.as_deref(), Some("a.ttl"));
        assert_eq!(parts[0].content_type.as_deref(), Some("text/turtle"));
        assert_eq!(parts[0].body, b"<urn:s> <urn:p> 1 .\r\n");
        assert_eq!(parts[1].body, b"<urn:s> <urn:p> 2 .");
    }
}
