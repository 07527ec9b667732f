//! Document endpoints: `GET/HEAD/PUT/DELETE /{db}/{docid}`, `POST /{db}`
//! and `/{db}/_local/{id}`
//! (https://docs.couchdb.org/en/stable/api/document/common.html).

use super::{multipart, open_revs, outcome_json, parse_rev, read_options, write_docs};
use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use rhizome_docs::{validate_doc_id, OpenRev};
use serde_json::{json, Map, Value};

pub fn document(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle, id: &str) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => match document_format(req.header("accept")) {
            // A document's graph in an RDF syntax, for linked-data clients.
            DocumentFormat::Graph(format) if req.param("open_revs").is_none() => {
                db.db.get_doc_json(id)?;
                let iri = rhizome_docs::DocumentIris::new(&server.base_iri, &db.name).graph_iri(id);
                let mut r = crate::rdf::graph_store::document_graph(req, db, &iri, format)?;
                if req.method == Method::HEAD {
                    *r.body_mut() = Body::Full(None);
                }
                Ok(r)
            }
            _ => get(req, db, id),
        },
        Method::PUT => {
            let mut doc = request_document(req)?;
            doc.insert("_id".into(), Value::String(id.to_owned()));
            if let (false, Some(rev)) = (doc.contains_key("_rev"), req.param("rev")) {
                doc.insert("_rev".into(), Value::String(rev.to_owned()));
            }
            let new_edits = req.flag("new_edits", true)?;
            let status = if req.param("batch") == Some("ok") { 202 } else { 201 };
            write_one(ctx, db, doc, new_edits, status)
        }
        Method::DELETE => {
            let rev = req.param("rev").or_else(|| req.header("if-match").map(|r| r.trim_matches('"'))).ok_or(HttpError::new(409, "conflict", "Document update conflict."))?;
            parse_rev(rev)?;
            let doc: Map<String, Value> = json!({ "_id": id, "_rev": rev, "_deleted": true }).as_object().cloned().unwrap_or_default();
            write_one(ctx, db, doc, true, 200)
        }
        _ if req.method.as_str() == "COPY" => copy(req, ctx, db, id),
        _ => Err(HttpError::method_not_allowed("COPY,DELETE,GET,HEAD,PUT")),
    }
}

/// `COPY /{db}/{docid}` with `Destination: {newid}` (or `{newid}?rev={rev}`
/// to overwrite an existing document): a new revision of the destination
/// with the source's body and attachments
/// (https://docs.couchdb.org/en/stable/api/document/common.html#copy--db-docid).
fn copy(req: &Request, ctx: &UserCtx, db: &DbHandle, id: &str) -> Result<Response<Body>, HttpError> {
    let destination = req.header("destination").ok_or_else(|| HttpError::bad_request("Destination header is mandatory for COPY."))?;
    let (dest_id, dest_rev) = match destination.split_once('?') {
        Some((dest, query)) => (dest, http::parse_query(query)?.into_iter().find(|(k, _)| k == "rev").map(|(_, v)| v)),
        None => (destination, None),
    };
    let dest_id = http::percent_decode(dest_id.trim(), false)?;
    validate_doc_id(&dest_id)?;
    let source_rev = req.param("rev").map(parse_rev).transpose()?;
    let source = db.db.get_doc(id, &rhizome_docs::ReadOptions { rev: source_rev, attachments: true, ..Default::default() })?;
    let mut doc: Map<String, Value> = source.into_iter().filter(|(k, _)| !k.starts_with('_') || k == "_attachments").collect();
    doc.insert("_id".into(), Value::String(dest_id));
    if let Some(rev) = dest_rev {
        parse_rev(&rev)?;
        doc.insert("_rev".into(), Value::String(rev));
    }
    write_one(ctx, db, doc, true, 201)
}

fn write_one(ctx: &UserCtx, db: &DbHandle, doc: Map<String, Value>, new_edits: bool, status: u16) -> Result<Response<Body>, HttpError> {
    rhizome_docs::check_document_json(&doc, new_edits)?;
    let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    validate_doc_id(&id)?;
    super::partitions::check_id_for(db, &doc)?;
    let mut out = write_docs(ctx, db, vec![doc], new_edits)?;
    let (id, outcome) = out.pop().ok_or_else(|| HttpError::internal("a write returned no outcome"))?;
    let rev = outcome.map_err(HttpError::from)?;
    let mut r = json(status, &json!({ "ok": true, "id": id, "rev": rev.to_string() }));
    http::set_header(&mut r, "etag", &format!("\"{rev}\""));
    http::set_header(&mut r, "location", &format!("/{}/{}", db.name, id));
    Ok(r)
}

fn get(req: &Request, db: &DbHandle, id: &str) -> Result<Response<Body>, HttpError> {
    let opts = read_options(req)?;
    let accept = req.header("accept");
    if let Some(which) = open_revs(req)? {
        // CouchDB's replicator asks for multipart/mixed; PouchDB and
        // others ask for JSON.
        if multipart::accepts(accept, "multipart/mixed") {
            let parts = db
                .db
                .open_revs(id, &which, &opts)?
                .into_iter()
                .map(|r| match r {
                    OpenRev::Ok(doc) => multipart::document_part(doc),
                    OpenRev::Missing(rev) => Ok(("application/json; error=\"true\"".to_owned(), json!({ "missing": rev.to_string() }).to_string().into_bytes())),
                })
                .collect::<Result<Vec<_>, HttpError>>()?;
            let (content_type, body) = multipart::mixed(parts);
            return Ok(http::response(200, &content_type, body.into()));
        }
        // Each document's JSON body copied as stored (`open_revs_bytes`).
        let mut out = b"[".to_vec();
        for (i, r) in db.db.open_revs_bytes(id, &which, &opts)?.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match r {
                OpenRev::Ok(doc) => {
                    out.extend_from_slice(b"{\"ok\":");
                    out.extend_from_slice(&doc);
                    out.push(b'}');
                }
                OpenRev::Missing(rev) => out.extend_from_slice(json!({ "missing": rev.to_string() }).to_string().as_bytes()),
            }
        }
        out.extend_from_slice(b"]\n");
        return Ok(http::response(200, "application/json", out.into()));
    }
    // JSON wanted: its bytes are written straight from the store (the
    // common read, no option, without even decoding the revision tree).
    let plain_json = !multipart::accepts(accept, "multipart/related") && !prefers_json_ld(accept);
    let (doc, rev, bytes) = if plain_json {
        let (rev, mut bytes) = if opts.is_plain() { db.db.get_doc_json(id)? } else { db.db.get_doc_bytes(id, &opts)? };
        bytes.push(b'\n');
        (Map::new(), rev.to_string(), Some(bytes))
    } else {
        let doc = db.db.get_doc(id, &opts)?;
        let rev = doc.get("_rev").and_then(Value::as_str).unwrap_or_default().to_owned();
        (doc, rev, None)
    };
    let etag = format!("\"{rev}\"");
    if req.header("if-none-match").is_some_and(|v| v.trim() == etag) {
        let mut r = http::response(304, "application/json", Default::default());
        http::set_header(&mut r, "etag", &etag);
        return Ok(r);
    }
    let mut r = if let Some(bytes) = bytes {
        http::response(200, "application/json", bytes.into())
    } else if multipart::accepts(accept, "multipart/related") {
        let (content_type, body) = multipart::document_part(doc)?;
        http::response(200, &content_type, body.into())
    } else if prefers_json_ld(accept) {
        // For JSON-LD processors: the document's graph, nothing else
        // (rhizome_docs::Database::json_ld_view).
        let body = serde_json::to_vec(&Value::Object(db.db.json_ld_view(doc)?)).map_err(|e| HttpError::internal(e.to_string()))?;
        http::response(200, "application/ld+json", body.into())
    } else {
        json(200, &Value::Object(doc))
    };
    http::set_header(&mut r, "etag", &etag);
    http::set_header(&mut r, "vary", "Accept");
    Ok(r)
}

/// Whether a request for a document asks for RDF (JSON-LD or an RDF
/// syntax): a linked-data client, which sends its credentials only when
/// challenged (`router::handle`).
pub fn wants_rdf(req: &Request) -> bool {
    document_format(req.header("accept")) != DocumentFormat::Json
}

/// What a document read answers with, by `Accept`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum DocumentFormat {
    /// CouchDB's answer, and the answer to any `Accept` that names nothing
    /// better (CouchDB ignores `Accept` here).
    Json,
    /// The document as JSON-LD (`rhizome_docs::Database::json_ld_view`).
    JsonLd,
    /// The document's graph in an RDF syntax.
    Graph(crate::rdf::negotiate::GraphFormat),
}

/// The format `accept` ranks highest: by q-value, then by how specific
/// the range that accepts it is; among types the client names itself at
/// the same q, JSON-LD and the RDF syntaxes before plain JSON (a client
/// that names `application/ld+json` at all reads RDF; a plain JSON client
/// never names it). Wildcards alone give JSON.
fn document_format(accept: Option<&str>) -> DocumentFormat {
    use crate::rdf::negotiate::{ranking, GraphFormat};
    use oxrdfio::RdfFormat;
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else { return DocumentFormat::Json };
    let offers = [
        ("application/json", DocumentFormat::Json),
        ("application/ld+json", DocumentFormat::JsonLd),
        ("text/turtle", DocumentFormat::Graph(GraphFormat(RdfFormat::Turtle))),
        ("application/n-triples", DocumentFormat::Graph(GraphFormat(RdfFormat::NTriples))),
        ("application/rdf+xml", DocumentFormat::Graph(GraphFormat(RdfFormat::RdfXml))),
        ("application/n-quads", DocumentFormat::Graph(GraphFormat(RdfFormat::NQuads))),
        ("application/trig", DocumentFormat::Graph(GraphFormat(RdfFormat::TriG))),
    ];
    let mut best = (DocumentFormat::Json, (0.0f32, 0u8, 0u8));
    for (media_type, format) in offers {
        let (q, specificity) = ranking(accept, media_type);
        let named_rdf = u8::from(specificity == 3 && format != DocumentFormat::Json);
        let score = (q, specificity, named_rdf);
        if q > 0.0 && score > best.1 {
            best = (format, score);
        }
    }
    best.0
}

/// Whether the client ranks `application/ld+json` above `application/json`
/// (ties, `*/*` and no `Accept` keep CouchDB's JSON).
fn prefers_json_ld(accept: Option<&str>) -> bool {
    document_format(accept) == DocumentFormat::JsonLd
}

/// `POST /{db}`: a new document, with a fresh id unless it has one.
pub fn post(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let _ = server;
    let mut doc = req.json_object()?;
    // Only a document without `_id` gets a fresh one (`_id: 123` is an
    // illegal id, as in CouchDB).
    if !doc.contains_key("_id") {
        doc.insert("_id".into(), Value::String(http::uuid()));
    }
    let status = if req.param("batch") == Some("ok") { 202 } else { 201 };
    write_one(ctx, db, doc, true, status)
}

/// `/{db}/_local/{id}`: checkpoints and other per-replica documents (the
/// database's default context, `_local/rhizome-context`, is its admins':
/// `rhizome_docs::Writer`).
pub fn local(req: &Request, ctx: &UserCtx, db: &DbHandle, id: &str) -> Result<Response<Body>, HttpError> {
    let writer = || crate::auth::access::writer(ctx, db);
    match req.method {
        Method::GET | Method::HEAD => Ok(json(200, &Value::Object(db.db.get_local(id)?))),
        Method::PUT => {
            let mut doc = request_document(req)?;
            if let (false, Some(rev)) = (doc.contains_key("_rev"), req.param("rev")) {
                doc.insert("_rev".into(), Value::String(rev.to_owned()));
            }
            let rev = db.db.put_local_as(id, doc, writer()?)?;
            Ok(json(201, &json!({ "ok": true, "id": id, "rev": rev })))
        }
        Method::DELETE => {
            let mut doc = Map::new();
            doc.insert("_deleted".into(), Value::Bool(true));
            if let Some(rev) = req.param("rev") {
                doc.insert("_rev".into(), Value::String(rev.to_owned()));
            }
            let rev = db.db.put_local_as(id, doc, writer()?)?;
            Ok(json(200, &json!({ "ok": true, "id": id, "rev": rev })))
        }
        _ => Err(HttpError::method_not_allowed("DELETE,GET,HEAD,PUT")),
    }
}

/// For `_bulk_docs` results.
pub fn outcomes(results: &[(String, rhizome_docs::WriteOutcome)], only_errors: bool) -> Value {
    Value::Array(results.iter().filter(|(_, o)| !only_errors || o.is_err()).map(|(id, o)| outcome_json(id, o)).collect())
}

/// A PUT's document: JSON, or the `multipart/related` form CouchDB's
/// replicator sends (the document part plus its attachments).
fn request_document(req: &Request) -> Result<Map<String, Value>, HttpError> {
    let content_type = req.header("content-type");
    if super::multipart::is_multipart(content_type) {
        super::multipart::parse(content_type.unwrap_or_default(), &req.body)
    } else {
        req.json_object()
    }
}
