//! The RDF views of a database, on the same store as its documents:
//! `/{db}/_sparql` (SPARQL 1.1 Protocol, [`sparql_protocol`]) and
//! `/{db}/_graph` (SPARQL 1.1 Graph Store HTTP Protocol, [`graph_store`]),
//! with content negotiation in [`negotiate`].
//!
//! The router has checked access already: members of the database may
//! query and write, as they may read and write its documents. Every RDF
//! write goes through [`write_as`], the seam where graph writes become
//! document writes, checked by the database's validation functions.

pub(crate) mod graph_store;
pub(crate) mod negotiate;
mod sparql_protocol;
mod text_search;

use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{Body, Request};
use crate::state::{DbHandle, Server};
use hyper::Response;
use rhizome_docs::EmptiedGraphs;
use rhizome_rdf::StoreTransaction;
use rhizome_sparql::SparqlError;

pub use sparql_protocol::{SparqlSettings, QUERY_TIMEOUT_MS};

/// The most triples one graph write (a Graph Store PUT or POST, a SPARQL
/// update) may write: a transaction holds every write until its commit,
/// about 2 KB per triple with its terms and index keys, so an unbounded
/// one could take the server's memory. The same bound as a document's own
/// graph (`rhizome_docs::MAX_DOCUMENT_TRIPLES`). Loads of more go through
/// `rhizome load`, which sorts on disk.
pub const MAX_GRAPH_WRITE_TRIPLES: usize = rhizome_docs::MAX_DOCUMENT_TRIPLES;

/// 413 for a graph write past [`MAX_GRAPH_WRITE_TRIPLES`].
pub(crate) fn too_many_triples() -> HttpError {
    HttpError::new(
        413,
        "too_large",
        format!("the request writes more than {MAX_GRAPH_WRITE_TRIPLES} triples, the most one graph write may hold until its commit; split it into several requests (or load files with rhizome load)"),
    )
}

pub fn route(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle, what: &str) -> Result<Response<Body>, HttpError> {
    match what {
        "_sparql" => sparql_protocol::handle(req, &server.sparql, &server.request_memory, server.query_timeout, ctx, db),
        "_graph" => graph_store::handle(server, req, ctx, db, None),
        _ => match what.strip_prefix("_graph/") {
            Some(path) => graph_store::handle(server, req, ctx, db, Some(path)),
            None => Err(HttpError::not_found(format!("no endpoint {what}"))),
        },
    }
}

/// Runs an RDF write by `ctx`: every document revision it makes is shown
/// to the database's `validate_doc_update` functions first, and must be one
/// `ctx` may make (`rhizome_docs::Writer`); a refusal refuses the whole
/// write (`rhizome_views::validate::rdf_write_validated`).
pub(crate) fn write_as<T>(
    ctx: &UserCtx,
    db: &DbHandle,
    emptied: EmptiedGraphs,
    f: impl FnOnce(&mut StoreTransaction<'_>) -> Result<T, HttpError>,
) -> Result<T, HttpError> {
    let writer = crate::auth::access::writer(ctx, db)?;
    rhizome_views::validate::rdf_write_validated(&db.db, &ctx.for_validation(&db.name), writer, crate::couch::views::limits(), emptied, f)
}

/// Runs the parsers the RDF endpoints apply to untrusted headers and
/// bodies (`Accept`, `Content-Type`, `multipart/form-data`): the entry of
/// `fuzz/fuzz_targets/rdf_request.rs`, not an API.
#[doc(hidden)]
pub fn fuzz_parse_request(accept: &str, content_type: &str, body: &[u8]) {
    let _ = negotiate::choose(Some(accept), negotiate::GRAPH_OFFERS);
    let _ = negotiate::body_format(Some(content_type));
    if let Ok(parts) = graph_store::multipart_parts(content_type, body) {
        for p in parts {
            assert!(p.body.len() <= body.len(), "a part is a slice of the body");
        }
    }
}

/// `http://HOST/{db}/{endpoint}`: the base IRI of requests to an endpoint
/// (the SPARQL Protocol lets the service pick it; the Graph Store Protocol
/// names graphs by it).
fn endpoint_iri(req: &Request, db: &DbHandle, endpoint: &str) -> String {
    let host = req.header("host").filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic())).unwrap_or("localhost");
    let name: String = db
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$' | '(' | ')' | '+') { c.to_string() } else { format!("%{:02X}", c as u32) })
        .collect();
    format!("http://{host}/{name}/{endpoint}")
}

/// SPARQL errors as HTTP: the client's mistakes are 400 with the reason
/// (syntax errors name line and column, nesting and memory limits say
/// which), the time limit 503, the store's failures 500.
fn sparql_error(e: SparqlError) -> HttpError {
    match e {
        SparqlError::Syntax(_) => HttpError::new(400, "query_parse_error", e.to_string()),
        SparqlError::Unsupported(_) | SparqlError::Evaluation(_) | SparqlError::Load { .. } | SparqlError::NoSuchGraph(_) | SparqlError::GraphExists(_) => {
            HttpError::bad_request(e.to_string())
        }
        // A request the engine will never run (too deep, too much memory
        // for this server) is the client's to change: 400, not 503.
        SparqlError::TooComplex(_) | SparqlError::MemoryLimit { .. } => HttpError::new(400, "query_limit", e.to_string()),
        SparqlError::Timeout => HttpError::new(503, "query_limit", e.to_string()),
        // Other requests hold the server's shared memory: later may work.
        SparqlError::ServerMemory { .. } => {
            let mut busy = HttpError::new(503, "server_busy", e.to_string());
            busy.retry_after_secs = Some(1);
            busy
        }
        // Nobody reads this answer: the client has gone (nginx's 499).
        SparqlError::Cancelled => {
            eprintln!("rhizome: stopped a SPARQL request whose client went away");
            HttpError::new(499, "client_closed_request", e.to_string())
        }
        // A streamed answer whose client went away (`crate::stream`).
        SparqlError::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
            eprintln!("rhizome: stopped a SPARQL request whose client went away");
            HttpError::new(499, "client_closed_request", io.to_string())
        }
        SparqlError::Store(_) | SparqlError::Io(_) => HttpError::internal(e.to_string()),
    }
}

/// HEAD: the headers GET would send, its length included, and no body.
fn head_only(r: &mut Response<Body>) {
    if let Body::Full(Some(bytes)) = r.body() {
        let len = bytes.len().to_string();
        crate::http::set_header(r, "content-length", &len);
    }
    *r.body_mut() = Body::Full(None);
}

fn store_error(e: rhizome_rdf::Error) -> HttpError {
    HttpError::internal(e.to_string())
}
