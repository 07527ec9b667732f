//! PUT, POST, PATCH and DELETE of LDP resources. RDF bodies are parsed in
//! full before the database's write lock is taken; every write is one
//! document write (`crate::rdf::write_as` for RDF sources, the CouchDB
//! write path for non-RDF sources and deletions), so it gets a revision
//! and a `_changes` entry, and keeps what other doors wrote to the same
//! document (a JSON document's other members, its attachments).

use super::{check_if_match, current_etag, ldp_error, resource_headers, store_error, Target};
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::rdf::negotiate;
use crate::state::{DbHandle, Server};
use base64::Engine;
use hyper::{Method, Response};
use oxrdf::{NamedNode, NamedNodeRef, Term, Triple};
use oxrdfio::{RdfFormat, RdfParser};
use rhizome_ldp::constraints::{client_triples, membership_settings};
use rhizome_ldp::vocab;
use rhizome_ldp::{index, link_types, InteractionModel, LdpPath};
use rhizome_rdf::nesting::{check_nesting, MAX_RDF_NESTING};
use rhizome_rdf::{QuadPattern, StoreTransaction, TermId};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The attachment holding a non-RDF source's bytes.
pub const CONTENT: &str = "content";

fn created(target_iri: &str, etag: Option<String>, target: &Target, model: InteractionModel) -> Response<Body> {
    let mut r = empty(201);
    http::set_header(&mut r, "location", target_iri);
    if let Some(e) = etag {
        http::set_header(&mut r, "etag", &e);
    }
    resource_headers(&mut r, target, model);
    r
}

fn empty(status: u16) -> Response<Body> {
    let mut r = http::response(status, "text/plain", bytes::Bytes::new());
    r.headers_mut().remove("content-type");
    *r.body_mut() = Body::Full(None);
    r
}

/// The 204 of a replaced resource, with its new ETag and its headers
/// (waking `_changes` feeds first).
fn updated(db: &DbHandle, target: &Target, model: InteractionModel) -> Result<Response<Body>, HttpError> {
    db.notify();
    let mut r = empty(204);
    if let Some(e) = etag_now(db, target)? {
        http::set_header(&mut r, "etag", &e);
    }
    resource_headers(&mut r, target, model);
    Ok(r)
}

fn etag_now(db: &DbHandle, target: &Target) -> Result<Option<String>, HttpError> {
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    Ok(current_etag(snapshot.kv(), target)?.map(|(e, _)| e))
}

/// The interaction model a request asks for with `Link: <...>; rel="type"`.
fn requested_model(req: &Request) -> Option<InteractionModel> {
    let links: Vec<String> = req.headers.get_all("link").iter().filter_map(|v| v.to_str().ok()).flat_map(link_types).collect();
    InteractionModel::most_specific(links.iter().map(String::as_str))
}

/// Whether the body is RDF the server parses (else a non-RDF source), by
/// its media type whatever its charset. `text/plain` and
/// `application/json` are RDF only when the request asks for an RDF
/// interaction model (`Link`): otherwise they are files.
fn is_rdf(req: &Request) -> bool {
    let essence = negotiate::essence(req.header("content-type"));
    let ambiguous = matches!(essence.as_deref(), Some("text/plain" | "application/json"));
    let asked_rdf = requested_model(req).is_some_and(|m| m != InteractionModel::NonRdfSource);
    negotiate::body_format(essence.as_deref()).is_ok() && (!ambiguous || asked_rdf)
}

/// The body as UTF-8: as it is, or from ISO-8859-1 when the request says
/// so (Java clients such as REST Assured, which the W3C test suite uses,
/// label every body so); 415 for other charsets.
fn utf8_body(req: &Request) -> Result<bytes::Bytes, HttpError> {
    let ct = req.header("content-type").unwrap_or("");
    let charset = ct.split(';').skip(1).filter_map(|p| p.split_once('=')).find(|(k, _)| k.trim().eq_ignore_ascii_case("charset")).map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase());
    match charset.as_deref() {
        None | Some("utf-8" | "utf8" | "us-ascii" | "ascii") => Ok(req.body.clone()),
        Some("iso-8859-1" | "latin1" | "latin-1" | "iso8859-1") => Ok(req.body.iter().map(|&b| b as char).collect::<String>().into_bytes().into()),
        Some(other) => Err(HttpError::new(415, "unsupported_media_type", format!("charset {other} is not supported; send UTF-8"))),
    }
}

fn is_admin(ctx: &UserCtx, db: &DbHandle) -> Result<bool, HttpError> {
    Ok(access::is_db_admin(ctx, &db.db.security()?))
}

fn admin_only(what: &str) -> HttpError {
    HttpError::forbidden(format!("only the database's admins may {what} (a container's membership settings)"))
}

/// The triples of an RDF body, relative IRIs resolved against `base`; the
/// graph names of quads (a JSON-LD `@graph` under an `@id`, as Jena
/// writes) are dropped: the body is the resource's one graph.
fn parse_body(req: &Request, base: &str) -> Result<Vec<Triple>, HttpError> {
    let format = negotiate::body_format(negotiate::essence(req.header("content-type")).as_deref())?;
    let body = utf8_body(req)?;
    let invalid = |e: String| HttpError::bad_request(format!("invalid {} in the request body: {e}", format.name()));
    check_nesting(format, &body, MAX_RDF_NESTING).map_err(|e| invalid(e.to_string()))?;
    if matches!(format, RdfFormat::JsonLd { .. }) {
        let json: Value = serde_json::from_slice(&body).map_err(|e| invalid(e.to_string()))?;
        rhizome_docs::check_json_ld(&json).map_err(invalid)?;
    }
    let parser = RdfParser::from_format(format).with_base_iri(base).map_err(|e| HttpError::internal(e.to_string()))?.rename_blank_nodes();
    // An LDP resource is a document: its graph within a document's bound,
    // the parse stopped as soon as it passes it.
    let triples = rhizome_docs::on_known_stack_if(matches!(format, RdfFormat::JsonLd { .. }), move || {
        let mut triples = Vec::new();
        for q in parser.for_slice(&body) {
            triples.push(Triple::from(q.map_err(|e| e.to_string())?));
            if triples.len() > rhizome_docs::MAX_DOCUMENT_TRIPLES {
                return Ok(None);
            }
        }
        Ok(Some(triples))
    })
    .map_err(HttpError::internal)?
    .map_err(invalid)?;
    triples.ok_or_else(|| {
        HttpError::new(413, "too_large", format!("the resource's graph would hold more than {} triples, the most one resource may have", rhizome_docs::MAX_DOCUMENT_TRIPLES))
    })
}

/// A direct or indirect container's settings, with LDP's defaults for
/// what the body leaves out (itself as membership resource, `ldp:member`).
fn with_membership_defaults(iri: &str, model: InteractionModel, mut triples: Vec<Triple>) -> Vec<Triple> {
    if !model.has_membership() {
        return triples;
    }
    let me = NamedNode::new_unchecked(iri);
    let states = |p: &str, ts: &[Triple]| ts.iter().any(|t| t.predicate.as_str() == p && matches!(&t.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if *n == me));
    if !states(vocab::MEMBERSHIP_RESOURCE, &triples) {
        triples.push(Triple::new(me.clone(), NamedNode::new_unchecked(vocab::MEMBERSHIP_RESOURCE), me.clone()));
    }
    if !states(vocab::HAS_MEMBER_RELATION, &triples) && !states(vocab::IS_MEMBER_OF_RELATION, &triples) {
        triples.push(Triple::new(me.clone(), NamedNode::new_unchecked(vocab::HAS_MEMBER_RELATION), NamedNode::new_unchecked(vocab::MEMBER)));
    }
    triples
}

/// Replaces the resource's graph with `triples` and its model's types.
fn write_graph(txn: &mut StoreTransaction<'_>, iri: &str, model: InteractionModel, triples: &[Triple]) -> Result<(), HttpError> {
    rhizome_ldp::storage::write_graph(txn, iri, model, triples).map_err(ldp_error)
}

/// The membership settings stored in the resource's graph.
fn stored_settings(txn: &StoreTransaction<'_>, iri: &str) -> Result<Vec<(String, String)>, HttpError> {
    let mut out = Vec::new();
    for p in vocab::MEMBERSHIP_PREDICATES {
        for o in rhizome_ldp::objects(txn.reader(), iri, iri, p).map_err(ldp_error)? {
            out.push(((*p).to_owned(), o.to_string()));
        }
    }
    out.sort();
    Ok(out)
}

pub fn put(server: &Server, req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    let _ = server;
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let current = current_etag(snapshot.kv(), target)?;
    drop(snapshot);
    if req.header("if-none-match").is_some_and(|v| v.trim() == "*") && current.is_some() {
        return Err(HttpError::new(412, "precondition_failed", format!("{} exists (If-None-Match: *)", target.iri)));
    }
    check_if_match(req, current.as_ref().map(|(e, _)| e.as_str()))?;
    match current {
        None if target.description => Err(HttpError::not_found(format!("no LDP resource {}", target.iri))),
        None => {
            // LDP §5.2.3.7: URIs of deleted resources are not reused.
            let snapshot = db.db.store().snapshot().map_err(store_error)?;
            if doc_known(snapshot.kv(), &target.iri)? {
                return Err(HttpError::new(409, "conflict", format!("{} was deleted; the URI of a deleted resource is not reused (create it under another name)", target.iri)));
            }
            drop(snapshot);
            create(req, ctx, db, target, None)
        }
        Some((_, model)) => {
            if let Some(asked) = requested_model(req) {
                if !model.accepts_type(asked.iri()) && asked != InteractionModel::RdfSource {
                    return Err(HttpError::new(409, "conflict", format!("{} is an {}; its interaction model cannot become {}", target.iri, model.iri(), asked.iri())));
                }
            }
            if model == InteractionModel::NonRdfSource && !target.description {
                replace_binary(req, ctx, db, target)
            } else if target.description && model != InteractionModel::NonRdfSource {
                Err(HttpError::not_found(format!("{} is not a non-RDF source: it has no _description", target.iri)))
            } else {
                replace_rdf(req, ctx, db, target, model)
            }
        }
    }
}

fn replace_rdf(req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target, model: InteractionModel) -> Result<Response<Body>, HttpError> {
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let is_child = |c: &str| is_child_of(snapshot.kv(), target, c);
    let triples = client_triples(&target.iri, model, parse_body(req, &target.iri)?, &is_child).map_err(ldp_error)?;
    let triples = without_derived_membership(snapshot.kv(), target, triples)?;
    drop(snapshot);
    let triples = with_membership_defaults(&target.iri, model, triples);
    let admin = is_admin(ctx, db)?;
    crate::rdf::write_as(ctx, &**db, rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| {
        // Checked again under the write lock: the ETag seen before may
        // have changed since.
        let now = current_etag(txn.reader(), target)?;
        check_if_match(req, now.as_ref().map(|(e, _)| e.as_str()))?;
        if model.has_membership() && !admin && stored_settings(txn, &target.iri)? != membership_settings(&target.iri, &triples) {
            return Err(admin_only("change"));
        }
        write_graph(txn, &target.iri, model, &triples)
    })?;
    updated(db, target, model)
}

fn replace_binary(req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    let mut doc = db.db.get_doc(&target.iri, &rhizome_docs::ReadOptions::default())?;
    let mut atts = match doc.shift_remove("_attachments") {
        Some(Value::Object(a)) => a,
        _ => Map::new(),
    };
    for v in atts.values_mut() {
        if let Some(meta) = v.as_object_mut() {
            meta.retain(|k, _| k == "digest");
            meta.insert("stub".into(), Value::Bool(true));
        }
    }
    atts.insert(CONTENT.into(), attachment(req));
    doc.insert("_attachments".into(), Value::Object(atts));
    write_doc(ctx, db, doc)?;
    let mut r = empty(204);
    if let Some(e) = etag_now(db, target)? {
        http::set_header(&mut r, "etag", &e);
    }
    resource_headers(&mut r, target, InteractionModel::NonRdfSource);
    Ok(r)
}

fn attachment(req: &Request) -> Value {
    let content_type = req.header("content-type").unwrap_or("application/octet-stream");
    json!({ "content_type": content_type, "data": base64::engine::general_purpose::STANDARD.encode(&req.body) })
}

/// One document through the CouchDB write path (validation, group
/// commit); a conflict means the resource changed meanwhile (412).
fn write_doc(ctx: &UserCtx, db: &DbHandle, doc: Map<String, Value>) -> Result<(), HttpError> {
    let mut out = crate::couch::write_docs(ctx, db, vec![doc], true)?;
    let (_, outcome) = out.pop().ok_or_else(|| HttpError::internal("a write returned no outcome"))?;
    match outcome {
        Ok(_) => Ok(()),
        Err(rhizome_docs::DocError::Conflict) => Err(HttpError::new(412, "precondition_failed", "the resource changed during the request; GET it again")),
        Err(e) => Err(e.into()),
    }
}

/// Creates the resource at `target` (PUT to a new path, or POST's child):
/// its parent must be a container.
fn create(req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target, forced: Option<InteractionModel>) -> Result<Response<Body>, HttpError> {
    let parent = target.path.parent().ok_or_else(|| HttpError::new(409, "conflict", "the root container always exists"))?;
    let rdf = is_rdf(req);
    let model = forced.or_else(|| requested_model(req)).unwrap_or(if rdf { InteractionModel::RdfSource } else { InteractionModel::NonRdfSource });
    let model = if !rdf && model == InteractionModel::RdfSource && requested_model(req).is_none() { InteractionModel::NonRdfSource } else { model };
    if model.has_membership() && !is_admin(ctx, db)? {
        return Err(admin_only("create a direct or indirect container"));
    }
    let parent_is_container = |kv: &dyn rhizome_kv::KvRead| -> Result<(), HttpError> {
        match index::get_or_root(kv, &parent).map_err(ldp_error)? {
            Some(e) if e.model.is_container() => Ok(()),
            Some(_) => Err(HttpError::new(409, "conflict", format!("{} is not a container", parent.iri(&target.root)))),
            None => Err(HttpError::new(409, "conflict", format!("the parent container {} does not exist", parent.iri(&target.root)))),
        }
    };
    if model == InteractionModel::NonRdfSource {
        {
            let snapshot = db.db.store().snapshot().map_err(store_error)?;
            parent_is_container(snapshot.kv())?;
        }
        // A JSON-LD body, so the document's graph holds the types (and the
        // description written later).
        let doc = json!({
            "_id": target.iri,
            "@id": target.iri,
            "@type": model.type_iris(),
            "_attachments": { CONTENT: attachment(req) },
        });
        let Value::Object(doc) = doc else { unreachable!("a JSON object literal") };
        write_doc(ctx, db, doc).map_err(|e| if e.status == 412 { HttpError::new(409, "conflict", format!("{} exists", target.iri)) } else { e })?;
    } else {
        let triples = if req.body.is_empty() && req.header("content-type").is_none() { Vec::new() } else { parse_body(req, &target.iri)? };
        let triples = with_membership_defaults(&target.iri, model, client_triples(&target.iri, model, triples, &|_| false).map_err(ldp_error)?);
        crate::rdf::write_as(ctx, &**db, rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| {
            parent_is_container(txn.reader())?;
            if index::get(txn.reader(), &target.path).map_err(ldp_error)?.is_some() {
                return Err(HttpError::new(409, "conflict", format!("{} exists", target.iri)));
            }
            write_graph(txn, &target.iri, model, &triples)
        })?;
        db.notify();
    }
    Ok(created(&target.iri, etag_now(db, target)?, target, model))
}

/// A child's name from `Slug` (percent-decoded; see
/// `rhizome_ldp::storage::slug_name`).
fn slug_name(slug: Option<&str>) -> Option<String> {
    rhizome_ldp::storage::slug_name(&crate::http::percent_decode(slug?.trim(), false).ok()?)
}

pub fn post(server: &Server, req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    let _ = server;
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let Some(entry) = index::get_or_root(snapshot.kv(), &target.path).map_err(ldp_error)? else {
        return Err(HttpError::not_found(format!("no LDP resource {}", target.iri)));
    };
    if !entry.model.is_container() {
        return Err(HttpError::method_not_allowed("GET, HEAD, OPTIONS, PUT, PATCH, DELETE"));
    }
    let name = match slug_name(req.header("slug")) {
        // A name a resource had (even one deleted since) is not reused
        // (LDP §5.2.3.7): its document, deleted or not, keeps it.
        Some(n) if index::get(snapshot.kv(), &target.path.child(&n)).map_err(ldp_error)?.is_none() && !doc_known(snapshot.kv(), &target.path.child(&n).iri(&target.root))? => n,
        _ => http::uuid(),
    };
    drop(snapshot);
    let path: LdpPath = target.path.child(&name);
    let child = Target { iri: path.iri(&target.root), path, root: target.root.clone(), description: false };
    create(req, ctx, db, &child, None)
}

/// Whether a document with this id exists or existed (a deleted one).
fn doc_known(kv: &dyn rhizome_kv::KvRead, id: &str) -> Result<bool, HttpError> {
    rhizome_ldp::storage::doc_known(kv, id).map_err(ldp_error)
}

pub fn patch(server: &Server, req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    if negotiate::essence(req.header("content-type")).as_deref() != Some("application/sparql-update") {
        return Err(HttpError::new(415, "unsupported_media_type", "PATCH takes application/sparql-update"));
    }
    let text = std::str::from_utf8(&req.body).map_err(|_| HttpError::bad_request("the SPARQL Update is not UTF-8"))?;
    let update = rhizome_sparql::parse_update(text, Some(&target.iri)).map_err(|e| HttpError::new(400, "query_parse_error", e.to_string()))?;
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let Some((etag, model)) = current_etag(snapshot.kv(), target)? else { return Err(HttpError::not_found(format!("no LDP resource {}", target.iri))) };
    drop(snapshot);
    check_if_match(req, Some(&etag))?;
    if model == InteractionModel::NonRdfSource && !target.description {
        return Err(HttpError::new(415, "unsupported_media_type", format!("{} is a non-RDF source: PATCH its description, {}/_description", target.iri, target.iri)));
    }
    let admin = is_admin(ctx, db)?;
    let store = db.db.store();
    let stats = rhizome_sparql::Statistics::from_store(&store.planner_stats().map_err(store_error)?);
    let limits = rhizome_sparql::UpdateLimits {
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(30)),
        memory_bytes: Some(256 << 20),
        load: rhizome_sparql::LoadPolicy::Refused,
        load_max_bytes: None,
        cancelled: Some(req.cancelled.clone()),
        memory_pool: Some(server.request_memory.clone()),
        max_inserted_quads: Some(rhizome_docs::MAX_DOCUMENT_TRIPLES as u64),
    };
    let graph = NamedNode::new_unchecked(target.iri.clone());
    let mode = store.mode();
    crate::rdf::write_as(ctx, &**db, rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| {
        let now = current_etag(txn.reader(), target)?;
        check_if_match(req, now.as_ref().map(|(e, _)| e.as_str()))?;
        let before = stored_settings(txn, &target.iri)?;
        rhizome_sparql::execute_update_with_stored_default(txn, mode, &stats, &update, &limits, Some(&graph)).map_err(|e| HttpError::bad_request(e.to_string()))?;
        // A PATCH is about its resource: an update that names another
        // graph (`GRAPH <other> { ... }`) is refused whole.
        let own = txn.lookup(NamedNodeRef::new_unchecked(&target.iri).into()).map_err(store_error)?;
        if let Some(other) = txn.touched_graphs().iter().find(|g| Some(**g) != own) {
            let name = rhizome_rdf::term::Dictionary::decode(txn.reader(), *other).map_err(store_error)?.map_or_else(|| "the default graph".to_owned(), |t| t.to_string());
            return Err(HttpError::bad_request(format!("a PATCH changes its own resource's graph, {}; this update changes {name} too", target.iri)));
        }
        // What the update left must still be a valid representation.
        let triples = graph_triples(txn, &target.iri)?;
        let kept = client_triples(&target.iri, model, triples, &|c| is_child_of(txn.reader(), target, c)).map_err(ldp_error)?;
        if model.has_membership() && !admin && before != membership_settings(&target.iri, &kept) {
            return Err(admin_only("change"));
        }
        write_graph(txn, &target.iri, model, &kept)
    })?;
    updated(db, target, model)
}

/// A body without the membership triples the server derives for the
/// target (as a representation GET gave them, PUT back): `<target> p
/// <member>` for the containers whose membership resource it is (direct
/// ones, whose members are their children) and `<target> q <resource>`
/// when its parent has an `isMemberOfRelation`.
fn without_derived_membership(kv: &dyn rhizome_kv::KvRead, target: &Target, triples: Vec<Triple>) -> Result<Vec<Triple>, HttpError> {
    use rhizome_ldp::{MemberRelation, Membership};
    let mut has_member: Vec<(String, LdpPath)> = Vec::new();
    for c in index::membership_containers(kv, &target.iri).map_err(ldp_error)? {
        if let Some(m) = Membership::read(kv, &c.iri(&target.root)).map_err(ldp_error)? {
            if let (MemberRelation::HasMember(p), None) = (&m.relation, &m.inserted_content) {
                has_member.push((p.clone(), c));
            }
        }
    }
    let mut is_member_of: Option<(String, String)> = None;
    if let Some(parent) = target.path.parent() {
        if index::get(kv, &parent).map_err(ldp_error)?.is_some_and(|e| e.model.has_membership()) {
            if let Some(Membership { relation: MemberRelation::IsMemberOf(q), resource, inserted_content: None }) = Membership::read(kv, &parent.iri(&target.root)).map_err(ldp_error)? {
                is_member_of = Some((q, resource));
            }
        }
    }
    if has_member.is_empty() && is_member_of.is_none() {
        return Ok(triples);
    }
    Ok(triples
        .into_iter()
        .filter(|t| {
            let oxrdf::NamedOrBlankNode::NamedNode(s) = &t.subject else { return true };
            let Term::NamedNode(o) = &t.object else { return true };
            if s.as_str() != target.iri {
                return true;
            }
            if is_member_of.as_ref().is_some_and(|(q, m)| t.predicate.as_str() == q && o.as_str() == m) {
                return false;
            }
            !has_member.iter().any(|(p, c)| {
                t.predicate.as_str() == p
                    && LdpPath::from_iri(&target.root, o.as_str()).is_some_and(|m| m.iri(&target.root) == o.as_str() && m.parent().as_ref() == Some(c) && index::get(kv, &m).ok().flatten().is_some())
            })
        })
        .collect())
}

/// Whether `iri` names a current child of the target.
fn is_child_of(kv: &dyn rhizome_kv::KvRead, target: &Target, iri: &str) -> bool {
    LdpPath::from_iri(&target.root, iri).is_some_and(|p| p.iri(&target.root) == iri && p.parent().as_ref() == Some(&target.path) && index::get(kv, &p).ok().flatten().is_some())
}

fn graph_triples(txn: &StoreTransaction<'_>, iri: &str) -> Result<Vec<Triple>, HttpError> {
    let Some(g) = txn.lookup(NamedNodeRef::new_unchecked(iri).into()).map_err(store_error)? else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    let decode = |id: TermId| -> Result<Term, HttpError> {
        rhizome_rdf::term::Dictionary::decode(txn.reader(), id).map_err(store_error)?.ok_or_else(|| HttpError::internal(format!("term {id:?} of graph {iri}")))
    };
    for q in txn.scan(QuadPattern { g: Some(g), ..Default::default() }) {
        let q = q.map_err(store_error)?;
        let s = match decode(q[0])? {
            Term::NamedNode(n) => oxrdf::NamedOrBlankNode::from(n),
            Term::BlankNode(b) => b.into(),
            _ => continue,
        };
        let Term::NamedNode(p) = decode(q[1])? else { continue };
        out.push(Triple::new(s, p, decode(q[2])?));
    }
    Ok(out)
}

pub fn delete(req: &Request, ctx: &UserCtx, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    if target.path.is_root() {
        return Err(HttpError::new(409, "conflict", "the root container cannot be deleted"));
    }
    let snapshot = db.db.store().snapshot().map_err(store_error)?;
    let kv = snapshot.kv();
    let Some((etag, _)) = current_etag(kv, target)? else { return Err(HttpError::not_found(format!("no LDP resource {}", target.iri))) };
    check_if_match(req, Some(&etag))?;
    let docs = rhizome_ldp::storage::deletions(kv, &target.path, &target.root).map_err(ldp_error)?;
    drop(snapshot);
    for (id, outcome) in crate::couch::write_docs(ctx, db, docs, true)? {
        match outcome {
            Ok(_) => {}
            // Refused by a validation function: its status, not a conflict.
            Err(rhizome_docs::DocError::Coded { status: status @ (401 | 403), error, reason }) => return Err(HttpError::new(status, error, format!("{id}: {reason}"))),
            Err(e) => return Err(HttpError::new(409, "conflict", format!("{id} could not be deleted: {e}"))),
        }
    }
    let _ = Method::DELETE;
    Ok(empty(204))
}
