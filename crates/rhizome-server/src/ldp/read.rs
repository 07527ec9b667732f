//! GET, HEAD and OPTIONS of LDP resources.

use super::{current_etag, resource_headers, Target};
use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::rdf::negotiate::{self, GRAPH_OFFERS};
use crate::state::DbHandle;
use bytes::Bytes;
use hyper::{Method, Response};
use oxrdf::{NamedNode, Term, Triple};
use oxrdfio::{RdfFormat, RdfSerializer};
use rhizome_ldp::vocab;
use rhizome_ldp::{index, InteractionModel, LdpPath, MemberRelation, Membership, Preferences};
use rhizome_rdf::{DecodeCache, QuadPattern, StoreSnapshot};
use std::io::Write;
use std::sync::Arc;

/// Bytes of a streamed body sent at once.
const CHUNK_BYTES: usize = 64 << 10;

pub fn options(db: &DbHandle, target: &Target) -> Result<Response<Body>, HttpError> {
    let snapshot = db.db.store().snapshot().map_err(super::store_error)?;
    let Some((etag, model)) = current_etag(snapshot.kv(), target)? else { return Err(not_found(target)) };
    // 200 with an empty body (the W3C suite expects 200 from OPTIONS).
    let mut r = http::response(200, "text/plain", Bytes::new());
    r.headers_mut().remove("content-type");
    http::set_header(&mut r, "content-length", "0");
    http::set_header(&mut r, "etag", &etag);
    resource_headers(&mut r, target, model);
    Ok(r)
}

fn not_found(target: &Target) -> HttpError {
    HttpError::not_found(format!("no LDP resource {}", target.iri))
}

pub fn get(req: &Request, db: &Arc<DbHandle>, target: &Target) -> Result<Response<Body>, HttpError> {
    let snapshot = db.db.store().snapshot().map_err(super::store_error)?;
    let Some((etag, model)) = current_etag(snapshot.kv(), target)? else { return Err(not_found(target)) };
    if target.description && model != InteractionModel::NonRdfSource {
        return Err(HttpError::not_found(format!("{} is not a non-RDF source: it has no _description", target.iri)));
    }
    let not_modified = req.header("if-none-match").is_some_and(|v| v.split(',').map(str::trim).any(|w| w == etag || w == "*"));
    if model == InteractionModel::NonRdfSource && !target.description {
        if not_modified {
            let mut r = http::response(304, "application/octet-stream", Bytes::new());
            finish(&mut r, req, target, model, &etag, None);
            return Ok(r);
        }
        let att = db.db.attachment_reader(&target.iri, super::write::CONTENT, None)?;
        let mut r = http::response(200, &att.content_type, Bytes::new());
        finish(&mut r, req, target, model, &etag, None);
        return crate::couch::attachments::send(req, r, &att);
    }
    let format = negotiate::choose(req.header("accept"), GRAPH_OFFERS)?.0;
    let prefs = Preferences::parse(req.headers.get_all("prefer").iter().filter_map(|v| v.to_str().ok()));
    // Exactly `text/turtle`: ldp-testsuite 0.1.1 refuses a charset.
    let content_type = format.media_type();
    if not_modified {
        let mut r = http::response(304, content_type, Bytes::new());
        finish(&mut r, req, target, model, &etag, None);
        return Ok(r);
    }
    let mut r = http::response(200, content_type, Bytes::new());
    finish(&mut r, req, target, model, &etag, Some(prefs));
    if req.method == Method::HEAD {
        return Ok(r);
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(8);
    let job = Representation { snapshot, target_iri: target.iri.clone(), root: target.root.clone(), path: target.path.clone(), model, prefs, description: target.description };
    std::thread::Builder::new()
        .name("ldp-get".into())
        .spawn(move || {
            let mut out = ChannelWriter { tx, buf: Vec::with_capacity(CHUNK_BYTES) };
            if let Err(e) = job.write(format, &mut out) {
                // The status is sent already: the body is cut short.
                eprintln!("rhizome: an LDP representation of {} stopped: {e}", job.target_iri);
                return;
            }
            let _ = out.flush();
        })
        .map_err(|e| HttpError::internal(format!("starting the LDP writer: {e}")))?;
    *r.body_mut() = Body::Stream(rx);
    Ok(r)
}

fn finish(r: &mut Response<Body>, req: &Request, target: &Target, model: InteractionModel, etag: &str, prefs: Option<Preferences>) {
    http::set_header(r, "etag", etag);
    resource_headers(r, target, model);
    if prefs.is_some_and(|p| p.applied) && model.is_container() {
        http::set_header(r, "preference-applied", "return=representation");
    }
    if req.method == Method::HEAD || r.status() == 304 {
        *r.body_mut() = Body::Full(None);
    }
}

/// Bytes to the response, in chunks of [`CHUNK_BYTES`]; an error once the
/// client has gone.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES)));
        self.tx.blocking_send(chunk).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

/// What a GET of an RDF source or container writes, from one snapshot.
struct Representation {
    snapshot: StoreSnapshot,
    target_iri: String,
    root: String,
    path: LdpPath,
    model: InteractionModel,
    prefs: Preferences,
    description: bool,
}

type WriteResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

impl Representation {
    fn write(&self, format: RdfFormat, out: &mut ChannelWriter) -> WriteResult {
        let mut serializer = RdfSerializer::from_format(format);
        if matches!(format, RdfFormat::Turtle | RdfFormat::TriG) {
            serializer = serializer.with_prefix("ldp", vocab::LDP)?;
        }
        let mut w = serializer.for_writer(out);
        let iri = NamedNode::new_unchecked(self.target_iri.clone());
        let rdf_type = NamedNode::new_unchecked(vocab::RDF_TYPE);
        // The server-managed types first, then the graph without them.
        for t in self.model.type_iris() {
            w.serialize_triple(&Triple::new(iri.clone(), rdf_type.clone(), NamedNode::new_unchecked(*t)))?;
        }
        let kv = self.snapshot.kv();
        let mut cache = DecodeCache::new(&self.snapshot);
        if let Some(g) = self.snapshot.lookup(iri.as_ref().into())? {
            for q in self.snapshot.scan(QuadPattern { g: Some(g), ..Default::default() }) {
                let quad = cache.quad(&q?)?;
                let own_type = quad.predicate == rdf_type
                    && matches!(&quad.subject, oxrdf::NamedOrBlankNode::NamedNode(n) if *n == iri)
                    && matches!(&quad.object, Term::NamedNode(n) if n.as_str().starts_with(vocab::LDP));
                if !own_type {
                    w.serialize_triple(&Triple::new(quad.subject, quad.predicate, quad.object))?;
                }
            }
        }
        if self.description {
            w.finish()?;
            return Ok(());
        }
        if self.prefs.containment && self.model.is_container() {
            let contains = NamedNode::new_unchecked(vocab::CONTAINS);
            let mut failed = None;
            index::for_each_child(kv, &self.path, |child| {
                let t = Triple::new(iri.clone(), contains.clone(), NamedNode::new_unchecked(child.iri(&self.root)));
                match w.serialize_triple(&t) {
                    Ok(()) => Ok(true),
                    Err(e) => {
                        failed = Some(e);
                        Ok(false)
                    }
                }
            })?;
            if let Some(e) = failed {
                return Err(e.into());
            }
        }
        if self.prefs.membership {
            // As the membership resource of containers (often itself).
            for container in index::membership_containers(kv, &self.target_iri)? {
                let c_iri = container.iri(&self.root);
                let Some(m) = Membership::read(kv, &c_iri)? else { continue };
                let MemberRelation::HasMember(p) = &m.relation else { continue };
                let p = NamedNode::new_unchecked(p.clone());
                let mut members = Vec::new();
                let mut failed = None;
                index::for_each_child(kv, &container, |child| {
                    members.clear();
                    members.extend(m.members_of_child(kv, &child.iri(&self.root))?);
                    for member in members.drain(..) {
                        if let Err(e) = w.serialize_triple(&Triple::new(iri.clone(), p.clone(), member)) {
                            failed = Some(e);
                            return Ok(false);
                        }
                    }
                    Ok(true)
                })?;
                if let Some(e) = failed {
                    return Err(e.into());
                }
            }
            // As a member of its parent (`isMemberOfRelation`).
            if let Some(parent) = self.path.parent() {
                let p_iri = parent.iri(&self.root);
                if let Some(m) = Membership::read(kv, &p_iri)?.filter(|_| index::get(kv, &parent).ok().flatten().is_some_and(|e| e.model.has_membership())) {
                    if let MemberRelation::IsMemberOf(q) = &m.relation {
                        for member in m.members_of_child(kv, &self.target_iri)? {
                            if let Term::NamedNode(member) = member {
                                w.serialize_triple(&Triple::new(member, NamedNode::new_unchecked(q.clone()), NamedNode::new_unchecked(m.resource.clone())))?;
                            }
                        }
                    }
                }
            }
        }
        w.finish()?;
        Ok(())
    }
}
