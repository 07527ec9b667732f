//! Linked Data Platform 1.0 (https://www.w3.org/TR/ldp/) under
//! `/{db}/_ldp/`: the HTTP side of `rhizome-ldp`.
//!
//! `/{db}/_ldp/` is the database's root basic container. A resource's IRI
//! is `<base>/<db>/_ldp/<path>` (the data folder's base IRI, as every
//! document graph; no trailing slash except the root's), which is also
//! its document id and its graph's IRI: every LDP resource is a document
//! (revisions, `_changes`, replication) and a named graph (SPARQL).
//!
//! - GET/HEAD ([`read`]): the resource's graph, the server-managed types,
//!   and for containers `ldp:contains` and membership triples derived from
//!   the children index, streamed; Turtle (exactly `text/turtle`),
//!   JSON-LD, N-Triples, RDF/XML by `Accept`; `Prefer` include/omit of
//!   containment and membership; non-RDF sources answer their bytes, and
//!   `<path>/_description` their RDF description (`describedby`).
//! - PUT (create or replace), POST to a container (`Slug`, `Link` type),
//!   PATCH (`application/sparql-update`), DELETE (a container with its
//!   descendants, up to [`rhizome_ldp::storage::MAX_DELETE_RESOURCES`]; 409 past it)
//!   ([`write`]). Strong ETags (the revision, and a container's children
//!   generation), `If-Match` / `If-None-Match` (412).
//! - Server-managed triples (`ldp:contains`, another interaction model's
//!   type) are refused with 409 and `Link: <.../_ldp/_constraints>;
//!   rel="ldp:constrainedBy"`; every 4xx carries that link.
//!
//! Access is the router's guard (members of the database read and
//! write, as documents); setting a container's membership settings
//! (`ldp:membershipResource`, `hasMemberRelation`, `isMemberOfRelation`,
//! `insertedContentRelation`) is for the database's admins.

mod read;
mod write;

use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::header::HeaderValue;
use hyper::{Method, Response};
use rhizome_docs::DocumentIris;
use rhizome_kv::KvRead;
use rhizome_ldp::vocab;
use rhizome_ldp::{InteractionModel, LdpError, LdpPath};
use std::sync::Arc;

/// The reserved last segment naming a non-RDF source's description.
const DESCRIPTION: &str = "_description";
/// The reserved root segment of the page describing the constraints.
const CONSTRAINTS: &str = "_constraints";

/// What a request is about.
pub(crate) struct Target {
    pub path: LdpPath,
    /// The root container's IRI (`<base>/<db>/_ldp/`).
    pub root: String,
    /// The resource's IRI (its document id and graph IRI).
    pub iri: String,
    /// The request names a non-RDF source's description.
    pub description: bool,
}

/// `/{db}/_ldp/...`; `segments` are the decoded path segments after
/// `_ldp`. The guard has checked membership already.
pub fn handle(server: &Server, req: &Request, ctx: &UserCtx, db: Arc<DbHandle>, segments: &[String]) -> Result<Response<Body>, HttpError> {
    let root = DocumentIris::new(&server.base_iri, &db.name).ldp_root();
    let outcome = route(server, req, ctx, &db, &root, segments);
    Ok(match outcome {
        Ok(r) => r,
        Err(e) => {
            let mut r = http::error(&e);
            if (400..500).contains(&e.status) {
                append(&mut r, "link", &format!("<{root}{CONSTRAINTS}>; rel=\"{}\"", vocab::CONSTRAINED_BY));
            }
            r
        }
    })
}

fn route(server: &Server, req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, root: &str, segments: &[String]) -> Result<Response<Body>, HttpError> {
    if db.name.starts_with('_') {
        // `_users` and `_replicator` hold the server's own documents.
        return Err(HttpError::not_found(format!("the system database {} has no LDP resources", db.name)));
    }
    let segments: Vec<&str> = segments.iter().map(String::as_str).filter(|s| !s.is_empty()).collect();
    if segments == [CONSTRAINTS] {
        return constraints_page(req);
    }
    let (segments, description) = match segments.split_last() {
        Some((&DESCRIPTION, rest)) => (rest.to_vec(), true),
        _ => (segments, false),
    };
    if let Some(s) = segments.iter().find(|s| s.starts_with('_')) {
        return Err(HttpError::new(404, "not_found", format!("no LDP resource here: path segments starting with _ ({s}) are reserved")));
    }
    let path = LdpPath::from_segments(&segments).map_err(HttpError::bad_request)?;
    let target = Target { iri: path.iri(root), path, root: root.to_owned(), description };
    match req.method {
        Method::GET | Method::HEAD => read::get(req, db, &target),
        Method::OPTIONS => read::options(db, &target),
        Method::PUT => write::put(server, req, ctx, db, &target),
        Method::POST if !description => write::post(server, req, ctx, db, &target),
        Method::PATCH => write::patch(server, req, ctx, db, &target),
        Method::DELETE if !description => write::delete(req, ctx, db, &target),
        _ => Err(HttpError::method_not_allowed("GET, HEAD, OPTIONS, PUT, POST, PATCH, DELETE")),
    }
}

/// The page `constrainedBy` links to.
fn constraints_page(req: &Request) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET, HEAD"));
    }
    let text = "Rhizome LDP constraints\n\
        - ldp:contains is managed by the server; a body may not state it.\n\
        - A resource's interaction model is fixed when it is created (Link rel=\"type\" on PUT or POST; an RDF source by default, a non-RDF source for a body that is not RDF); a body may not give it another LDP type.\n\
        - Only the database's admins set a container's ldp:membershipResource, ldp:hasMemberRelation, ldp:isMemberOfRelation and ldp:insertedContentRelation.\n\
        - Path segments starting with _ are reserved; <path>/_description is a non-RDF source's description.\n\
        - PUT and PATCH with If-Match must name the current ETag (412 otherwise).\n\
        - DELETE of a container deletes its descendants too (409 past 10000 resources).\n";
    let mut r = http::response(200, "text/plain", bytes::Bytes::from_static(text.as_bytes()));
    if req.method == Method::HEAD {
        *r.body_mut() = Body::Full(None);
    }
    Ok(r)
}

pub(crate) fn append(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().append(name, v);
    }
}

/// The headers of every answer about a resource: its types, what may be
/// done to it, and (for non-RDF sources) the link to its description.
pub(crate) fn resource_headers(r: &mut Response<Body>, target: &Target, model: InteractionModel) {
    let model = if target.description { InteractionModel::RdfSource } else { model };
    append(r, "link", &format!("<{}>; rel=\"type\"", vocab::RESOURCE));
    if model != InteractionModel::RdfSource {
        append(r, "link", &format!("<{}>; rel=\"type\"", model.iri()));
    } else {
        append(r, "link", &format!("<{}>; rel=\"type\"", vocab::RDF_SOURCE));
    }
    if model == InteractionModel::NonRdfSource {
        append(r, "link", &format!("<{}/{DESCRIPTION}>; rel=\"describedby\"", target.iri));
    }
    if target.description {
        append(r, "link", &format!("<{}>; rel=\"describes\"", target.iri));
    }
    append(r, "link", &format!("<{}{CONSTRAINTS}>; rel=\"{}\"", target.root, vocab::CONSTRAINED_BY));
    let allow = if model.is_container() { "GET, HEAD, OPTIONS, PUT, POST, PATCH, DELETE" } else if target.description { "GET, HEAD, OPTIONS, PUT, PATCH" } else { "GET, HEAD, OPTIONS, PUT, PATCH, DELETE" };
    http::set_header(r, "allow", allow);
    if model.is_container() {
        http::set_header(r, "accept-post", "text/turtle, application/ld+json, application/n-triples, application/rdf+xml, */*");
    }
    if model != InteractionModel::NonRdfSource {
        http::set_header(r, "accept-patch", "application/sparql-update");
    }
    http::set_header(r, "vary", "Accept, Prefer");
}

/// A resource's ETag as stored in `kv`; `None` when it does not exist.
pub(crate) fn current_etag(kv: &dyn KvRead, target: &Target) -> Result<Option<(String, InteractionModel)>, HttpError> {
    rhizome_ldp::storage::current_etag(kv, &target.path, &target.iri, target.description).map_err(ldp_error)
}

/// `If-Match` (RFC 9110 §13.1.1) against the current ETag (`None`: the
/// resource does not exist): 412 on mismatch.
pub(crate) fn check_if_match(req: &Request, current: Option<&str>) -> Result<(), HttpError> {
    let Some(wanted) = req.header("if-match") else { return Ok(()) };
    let matches = match current {
        None => false,
        Some(etag) => wanted.split(',').map(str::trim).any(|w| w == "*" || w == etag),
    };
    if matches {
        Ok(())
    } else {
        Err(HttpError::new(412, "precondition_failed", format!("If-Match {wanted} does not match the resource's ETag {}", current.unwrap_or("(none: it does not exist)"))))
    }
}

pub(crate) fn ldp_error(e: LdpError) -> HttpError {
    match e {
        LdpError::Constraint(reason) => HttpError::new(409, "conflict", reason),
        other => HttpError::internal(other.to_string()),
    }
}

pub(crate) fn store_error(e: rhizome_rdf::Error) -> HttpError {
    HttpError::internal(e.to_string())
}
