//! Standalone attachments: `GET/HEAD/PUT/DELETE /{db}/{docid}/{name}`
//! (https://docs.couchdb.org/en/stable/api/document/attachments.html).
//! A PUT or DELETE is a new revision of the document with the other
//! attachments kept as stubs.

use super::{parse_rev, write_docs};
use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::{DbHandle, Server};
use base64::Engine;
use bytes::Bytes;
use hyper::{Method, Response};
use crate::stream::BodyWriter;
use rhizome_docs::{AttachmentReader, DocError, ReadOptions};
use serde_json::{json, Map, Value};

/// An attachment's bytes as the body of `head`, a stored chunk at a time
/// (`crate::stream`): a large attachment is never held whole, however
/// many clients read it and however slowly. HEAD gets the length only.
pub fn send(req: &Request, head: Response<Body>, att: &AttachmentReader) -> Result<Response<Body>, HttpError> {
    use std::io::Write;
    let mut out = BodyWriter::with_length(req, head, att.length);
    if req.method == Method::HEAD {
        return out.finish();
    }
    let written = att.read_each::<HttpError>(&mut |piece| {
        out.write_all(piece).map_err(|e| HttpError::new(499, "client_closed_request", e.to_string()))
    });
    match written {
        Ok(()) => out.finish(),
        Err(e) => out.fail(e),
    }
}

pub fn attachment(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle, id: &str, name: &str) -> Result<Response<Body>, HttpError> {
    let _ = server;
    let rev = req.param("rev").or_else(|| req.header("if-match").map(|r| r.trim_matches('"'))).map(parse_rev).transpose()?;
    match req.method {
        Method::GET | Method::HEAD => {
            let att = db.db.attachment_reader(id, name, rev.as_ref())?;
            let etag = format!("\"{}\"", att.digest);
            if req.header("if-none-match").is_some_and(|v| v.trim() == etag) {
                return Ok(http::response(304, &att.content_type, Bytes::new()));
            }
            let mut r = http::response(200, &att.content_type, Bytes::new());
            http::set_header(&mut r, "etag", &etag);
            if let Some(md5) = att.digest.strip_prefix("md5-") {
                http::set_header(&mut r, "content-md5", md5);
            }
            send(req, r, &att)
        }
        Method::PUT | Method::DELETE => {
            rhizome_docs::validate_attachment_name(name)?;
            let mut doc = match &rev {
                Some(r) => db.db.get_doc(id, &ReadOptions { rev: Some(r.clone()), ..Default::default() })?,
                None => match db.db.get_doc(id, &ReadOptions::default()) {
                    // No rev: only a new document may get an attachment.
                    Ok(_) => return Err(HttpError::new(409, "conflict", "Document update conflict.")),
                    Err(DocError::NotFound(_)) => {
                        let mut m = Map::new();
                        m.insert("_id".into(), Value::String(id.to_owned()));
                        m
                    }
                    Err(e) => return Err(e.into()),
                },
            };
            let mut kept = doc.shift_remove("_attachments").and_then(|a| a.as_object().cloned()).unwrap_or_default();
            let had_it = kept.shift_remove(name).is_some();
            // As CouchDB (`chttpd_db:db_attachment_req`): the attachment
            // written comes first, the others after it in their order (the
            // order is part of the new revision's id).
            let mut atts = Map::new();
            if req.method == Method::PUT {
                let content_type = req.header("content-type").unwrap_or("application/octet-stream");
                atts.insert(
                    name.to_owned(),
                    json!({ "content_type": content_type, "data": base64::engine::general_purpose::STANDARD.encode(&req.body) }),
                );
            } else if !had_it {
                return Err(HttpError::not_found("Document is missing attachment"));
            }
            atts.extend(kept);
            if !atts.is_empty() {
                doc.insert("_attachments".into(), Value::Object(atts));
            }
            let mut out = write_docs(ctx, db, vec![doc], true)?;
            let (id, outcome) = out.pop().ok_or_else(|| HttpError::internal("a write returned no outcome"))?;
            let rev = outcome.map_err(HttpError::from)?;
            let status = if req.method == Method::PUT { 201 } else { 200 };
            let mut r = json(status, &json!({ "ok": true, "id": id, "rev": rev.to_string() }));
            http::set_header(&mut r, "etag", &format!("\"{rev}\""));
            Ok(r)
        }
        _ => Err(HttpError::method_not_allowed("DELETE,GET,HEAD,PUT")),
    }
}
