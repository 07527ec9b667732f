//! A design document's update, show and list functions
//! (https://docs.couchdb.org/en/stable/api/ddoc/render.html):
//!
//! - `POST /{db}/_design/{ddoc}/_update/{func}` and `PUT .../{func}/{docid}`
//!   run `updates.{func}` (`rhizome_views::update`) in the JavaScript
//!   sandbox on the stored document (or `null`), save the document it
//!   returns through the server's write path (validation functions and
//!   `_users` hashing included; a design document only for the
//!   database's admins) and answer with its response: 201 when a document
//!   was saved, 200 otherwise, unless it sets `code`; `X-Couch-Id` and
//!   `X-Couch-Update-NewRev` name what was saved.
//! - `GET|POST .../_show/{func}[/{docid}]` runs `shows.{func}` and answers
//!   with its response.
//! - `_list` (a function over a view's rows through `getRow`/`send`,
//!   deprecated since CouchDB 3.0 and gone in 4) is not run: an existing
//!   list function answers 501 `not_implemented` saying to query the view;
//!   a missing one, CouchDB's 404.

use super::{views, write_docs};
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use rhizome_docs::{DocError, ReadOptions};
use rhizome_views::update::{run_show, run_update, UpdateOutcome};
use rhizome_views::DesignDoc;
use serde_json::{json, Map, Value};

fn design_doc(db: &DbHandle, id: &str) -> Result<DesignDoc, HttpError> {
    let body = db.db.get_doc(id, &ReadOptions::default())?;
    DesignDoc::parse(id, &body)?.ok_or_else(|| HttpError::not_found("missing"))
}

/// `(function name, document id)` of the path after the action.
fn function_and_doc(rest: &str) -> Result<(&str, Option<&str>), HttpError> {
    match rest.split_once('/') {
        Some((f, id)) if !f.is_empty() && !id.is_empty() => Ok((f, Some(id))),
        _ if !rest.is_empty() && !rest.ends_with('/') => Ok((rest, None)),
        _ => Err(HttpError::not_found("missing function name")),
    }
}

/// The stored document as the function sees it (`null` when there is none).
fn stored(db: &DbHandle, id: Option<&str>) -> Result<Value, HttpError> {
    let Some(id) = id else { return Ok(Value::Null) };
    match db.db.get_doc(id, &ReadOptions::default()) {
        Ok(doc) => Ok(Value::Object(doc)),
        Err(DocError::NotFound(_)) => Ok(Value::Null),
        Err(e) => Err(e.into()),
    }
}

/// CouchDB's request object for these functions: the raw body, the form
/// of a form body, the document id and a fresh uuid.
fn request(req: &Request, ctx: &UserCtx, db: &DbHandle, id: Option<&str>) -> Result<Value, HttpError> {
    let mut object = views::request_object(req, ctx, db, None)?;
    let body = String::from_utf8_lossy(&req.body).into_owned();
    let form: Map<String, Value> = if req.header("content-type").is_some_and(|c| c.starts_with("application/x-www-form-urlencoded")) {
        http::parse_query(&body)?.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
    } else {
        Map::new()
    };
    object["body"] = if req.body.is_empty() { Value::String("undefined".into()) } else { Value::String(body) };
    object["form"] = Value::Object(form);
    object["id"] = id.map_or(Value::Null, |i| Value::String(i.to_owned()));
    object["uuid"] = Value::String(http::uuid());
    Ok(object)
}

fn respond(outcome: UpdateOutcome, status: u16) -> Result<Response<Body>, HttpError> {
    let body = if outcome.base64 {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(&outcome.body).map_err(|e| HttpError::internal(format!("the function's base64 body: {e}")))?
    } else {
        outcome.body
    };
    let mut r = http::response(outcome.code.unwrap_or(status), &outcome.content_type, body.into());
    for (name, value) in &outcome.headers {
        if let (Ok(n), Ok(v)) = (hyper::header::HeaderName::from_bytes(name.as_bytes()), hyper::header::HeaderValue::from_str(value)) {
            r.headers_mut().insert(n, v);
        }
    }
    Ok(r)
}

pub fn update(req: &Request, ctx: &UserCtx, db: &DbHandle, ddoc_id: &str, rest: &str) -> Result<Response<Body>, HttpError> {
    let (name, id) = function_and_doc(rest)?;
    match (&req.method, id) {
        (&Method::POST, _) | (&Method::PUT, Some(_)) => {}
        _ => return Err(HttpError::method_not_allowed("POST,PUT")),
    }
    let ddoc = design_doc(db, ddoc_id)?;
    let outcome = run_update(&ddoc, name, stored(db, id)?, request(req, ctx, db, id)?, views::limits())?;
    let Some(mut doc) = outcome.doc.clone() else { return respond(outcome, 200) };
    let doc_id = match doc.get("_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(HttpError::new(500, "error", "the update function's document has no _id")),
    };
    if doc_id.starts_with("_design/") && !access::is_db_admin(ctx, &db.db.security()?) {
        return Err(HttpError::forbidden("You are not a db or server admin."));
    }
    doc.insert("_id".into(), Value::String(doc_id.clone()));
    let mut written = write_docs(ctx, db, vec![doc], true)?;
    let (_, result) = written.pop().ok_or_else(|| HttpError::internal("a write returned no outcome"))?;
    let rev = result.map_err(HttpError::from)?;
    let mut r = respond(outcome, 201)?;
    http::set_header(&mut r, "x-couch-id", &doc_id);
    http::set_header(&mut r, "x-couch-update-newrev", &rev.to_string());
    Ok(r)
}

pub fn show(req: &Request, ctx: &UserCtx, db: &DbHandle, ddoc_id: &str, rest: &str) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD | Method::POST) {
        return Err(HttpError::method_not_allowed("GET,HEAD,POST"));
    }
    let (name, id) = function_and_doc(rest)?;
    let ddoc = design_doc(db, ddoc_id)?;
    let doc = stored(db, id)?;
    let outcome = run_show(&ddoc, name, doc, request(req, ctx, db, id)?, views::limits())?;
    respond(outcome, 200)
}

pub fn list(req: &Request, db: &DbHandle, ddoc_id: &str, rest: &str) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD | Method::POST) {
        return Err(HttpError::method_not_allowed("GET,HEAD,POST"));
    }
    let name = rest.split('/').next().unwrap_or_default();
    let ddoc = design_doc(db, ddoc_id)?;
    if ddoc.body.get("lists").and_then(|l| l.get(name)).is_none() {
        return Err(HttpError::not_found(format!("missing list function {name} on design doc {ddoc_id}")));
    }
    Err(HttpError::new(
        501,
        "not_implemented",
        format!("list functions are not run by this server (CouchDB deprecated them in 3.0); query the view and format its rows in the client: {}", json!(format!("/{}/{ddoc_id}/_view/...", db.name))),
    ))
}
