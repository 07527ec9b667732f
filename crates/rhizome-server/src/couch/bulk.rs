//! `_bulk_docs`, `_bulk_get`, `_revs_diff` (`_all_docs` is `all_docs.rs`)
//! (https://docs.couchdb.org/en/stable/api/database/bulk-api.html).

use super::documents::outcomes;
use super::{outcome_json, parse_rev, read_options, write_docs};
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use rhizome_docs::{DocError, OpenRev, OpenRevs, ReadOptions, Rev};
use serde_json::{json, Map, Value};

pub fn bulk_docs(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let _ = server;
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = req.json_object()?;
    let new_edits = match body.get("new_edits") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(HttpError::bad_request("new_edits must be a boolean")),
    };
    let docs = body.get("docs").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("POST body must include `docs` parameter."))?;
    let mut batch = Vec::with_capacity(docs.len());
    for doc in docs {
        let Value::Object(mut doc) = doc.clone() else {
            return Err(HttpError::bad_request("Document must be a JSON object"));
        };
        // Only a document without `_id` gets a fresh one; any other id is
        // checked below, as CouchDB does.
        if !doc.contains_key("_id") {
            doc.insert("_id".into(), Value::String(http::uuid()));
        }
        // As CouchDB reads the request: one document that fails its
        // checks fails the whole request, before anything is written.
        rhizome_docs::check_document_json(&doc, new_edits)?;
        batch.push(doc);
    }
    let design = batch.iter().any(|d| d.get("_id").and_then(Value::as_str).is_some_and(|id| id.starts_with("_design/")));
    if design && !access::is_db_admin(ctx, &db.db.security()?) {
        return Err(HttpError::forbidden("You are not a db or server admin."));
    }
    if !batch.iter().any(is_local) {
        let results = write_docs(ctx, db, batch, new_edits)?;
        // With new_edits=false CouchDB reports only the failures.
        return Ok(json(201, &outcomes(&results, !new_edits)));
    }
    // `_local/` documents are written as `PUT /{db}/_local/{id}` writes
    // them, each with its own outcome, in the request's order (as CouchDB).
    let mut answers: Vec<Option<Value>> = vec![None; batch.len()];
    let (local, shared): (Vec<_>, Vec<_>) = batch.into_iter().enumerate().partition(|(_, doc)| is_local(doc));
    for (i, doc) in local {
        let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        answers[i] = match db.db.put_local(&id, doc) {
            Ok(_) if !new_edits => None,
            Ok(rev) => Some(json!({ "ok": true, "id": id, "rev": rev })),
            Err(e) => {
                let e = HttpError::from(e);
                Some(json!({ "id": id, "error": e.error, "reason": e.reason }))
            }
        };
    }
    let (places, docs): (Vec<usize>, Vec<_>) = shared.into_iter().unzip();
    let results = if docs.is_empty() { Vec::new() } else { write_docs(ctx, db, docs, new_edits)? };
    for (i, result) in places.into_iter().zip(results) {
        if new_edits || result.1.is_err() {
            answers[i] = Some(outcome_json(&result.0, &result.1));
        }
    }
    Ok(json(201, &Value::Array(answers.into_iter().flatten().collect())))
}

fn is_local(doc: &Map<String, Value>) -> bool {
    doc.get("_id").and_then(Value::as_str).is_some_and(|id| id.starts_with("_local/"))
}

pub fn bulk_get(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = req.json_object()?;
    let docs = body.get("docs").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("Missing JSON list of 'docs'."))?;
    let base = ReadOptions { rev: None, ..read_options(req)? };
    // The answer is written as bytes: each document's JSON body is copied
    // as stored (`get_doc_bytes`), not parsed into values and written
    // again. Members in the order `serde_json` writes a map's: `docs`
    // before `id`.
    let mut out = Vec::with_capacity(64 + docs.len() * 512);
    out.extend_from_slice(b"{\"results\":[");
    for (i, d) in docs.iter().enumerate() {
        let id = d.get("id").and_then(Value::as_str).ok_or_else(|| HttpError::bad_request("every entry of docs needs an id"))?;
        let mut opts = base.clone();
        if let Some(since) = d.get("atts_since").and_then(Value::as_array) {
            opts.atts_since = since.iter().filter_map(Value::as_str).filter_map(Rev::parse).collect();
        }
        let answers: Vec<Result<Vec<u8>, Value>> = match d.get("rev").and_then(Value::as_str) {
            Some(r) => {
                let rev = parse_rev(r)?;
                match db.db.open_revs_bytes(id, &OpenRevs::List(vec![rev.clone()]), &opts)? {
                    revs if revs.is_empty() => vec![Err(missing(id, &rev.to_string()))],
                    revs => revs
                        .into_iter()
                        .map(|r| match r {
                            OpenRev::Ok(doc) => Ok(doc),
                            OpenRev::Missing(rev) => Err(missing(id, &rev.to_string())),
                        })
                        .collect(),
                }
            }
            None => match db.db.get_doc_bytes(id, &opts) {
                Ok((_, doc)) => vec![Ok(doc)],
                Err(DocError::NotFound(reason)) => vec![Err(json!({ "error": { "id": id, "rev": "undefined", "error": "not_found", "reason": reason } }))],
                Err(e) => return Err(e.into()),
            },
        };
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"docs\":[");
        for (j, answer) in answers.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            match answer {
                Ok(doc) => {
                    out.extend_from_slice(b"{\"ok\":");
                    out.extend_from_slice(doc);
                    out.push(b'}');
                }
                Err(error) => write_json(&mut out, error)?,
            }
        }
        out.extend_from_slice(b"],\"id\":");
        write_json(&mut out, &Value::String(id.to_owned()))?;
        out.push(b'}');
    }
    out.extend_from_slice(b"]}\n");
    Ok(http::response(200, "application/json", out.into()))
}

fn write_json(out: &mut Vec<u8>, value: &Value) -> Result<(), HttpError> {
    serde_json::to_writer(out, value).map_err(|e| HttpError::internal(e.to_string()))
}

fn missing(id: &str, rev: &str) -> Value {
    json!({ "error": { "id": id, "rev": rev, "error": "not_found", "reason": "missing" } })
}

pub fn revs_diff(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body: Map<String, Value> = req.json_object()?;
    Ok(json(200, &Value::Object(db.db.revs_diff(&body)?)))
}
