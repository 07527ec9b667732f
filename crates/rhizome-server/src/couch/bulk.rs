//! `_all_docs`, `_bulk_docs`, `_bulk_get`, `_revs_diff`
//! (https://docs.couchdb.org/en/stable/api/database/bulk-api.html).

use super::documents::outcomes;
use super::{parse_rev, read_options, write_docs};
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::{DbHandle, Server};
use crate::stream::BodyWriter;
use bytes::Bytes;
use hyper::{Method, Response};
use rhizome_docs::{AllDocsOptions, DocError, OpenRev, OpenRevs, ReadOptions, Rev};
use std::io::Write;
use serde_json::{json, Map, Value};

fn key_param(req: &Request, names: &[&str]) -> Result<Option<String>, HttpError> {
    for name in names {
        if let Some(v) = req.json_param(name)? {
            return match v {
                Value::String(s) => Ok(Some(s)),
                _ => Err(HttpError::bad_request(format!("{name} must be a JSON string (document ids are strings)"))),
            };
        }
    }
    Ok(None)
}

pub fn all_docs(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    all_docs_in(req, db, false)
}

/// `_all_docs`, or with `design_only` `_design_docs`: the same options,
/// the key range clamped to `_design/` ids.
pub fn all_docs_in(req: &Request, db: &DbHandle, design_only: bool) -> Result<Response<Body>, HttpError> {
    let mut keys = match req.json_param("keys")? {
        Some(Value::Array(k)) => Some(k),
        Some(_) => return Err(HttpError::bad_request("keys must be an array")),
        None => None,
    };
    match req.method {
        Method::GET | Method::HEAD => {}
        Method::POST => {
            let body = req.json_object()?;
            if let Some(k) = body.get("keys") {
                keys = Some(k.as_array().cloned().ok_or_else(|| HttpError::bad_request("`keys` member must be an array."))?);
            }
        }
        _ => return Err(HttpError::method_not_allowed("GET,HEAD,POST")),
    }
    // As CouchDB (couch_mrview_http): `keys` picks rows itself, so a key
    // range beside it is a contradiction, not something to ignore.
    if keys.is_some() && ["key", "startkey", "start_key", "endkey", "end_key"].iter().any(|p| req.param(p).is_some()) {
        return Err(HttpError::new(400, "query_parse_error", "`keys` is incompatible with `key`, `start_key` and `end_key`"));
    }
    let keys = keys.map(|k| k.into_iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect());
    let key = key_param(req, &["key"])?;
    let opts = AllDocsOptions {
        start_key: key.clone().or(key_param(req, &["startkey", "start_key"])?),
        end_key: key.or(key_param(req, &["endkey", "end_key"])?),
        inclusive_end: req.flag("inclusive_end", true)?,
        limit: req.number("limit")?.map(|n| n as usize),
        skip: req.number("skip")?.unwrap_or(0) as usize,
        descending: req.flag("descending", false)?,
        include_docs: req.flag("include_docs", false)?,
        conflicts: req.flag("conflicts", false)?,
        attachments: req.flag("attachments", false)?,
        keys,
    };
    let mut opts = opts;
    if design_only {
        let (low, high) = ("_design/".to_owned(), "_design0".to_owned());
        let (first, last) = if opts.descending { (&mut opts.end_key, &mut opts.start_key) } else { (&mut opts.start_key, &mut opts.end_key) };
        *first = Some(first.take().map_or(low.clone(), |k| k.max(low)));
        let clamped_high = last.as_ref().is_none_or(|k| *k >= high);
        *last = Some(last.take().map_or(high.clone(), |k| k.min(high)));
        if clamped_high && !opts.descending {
            opts.inclusive_end = false;
        }
        if let Some(keys) = &mut opts.keys {
            keys.retain(|k| k.starts_with("_design/"));
        }
    }
    // Written as bytes, each document's JSON body copied as stored
    // (`all_docs_bytes`); members in `serde_json`'s order for a map. Rows
    // go out as they are read (`crate::stream`).
    let with_seq = req.flag("update_seq", false)?;
    let mut out = BodyWriter::new(req, http::response(200, "application/json", Bytes::new()));
    let _ = write!(out, "{{\"offset\":{},\"rows\":[", opts.skip);
    let mut first = true;
    let all = db.db.all_docs_each_bytes(&opts, &mut |row| {
        if !std::mem::take(&mut first) {
            out.write_all(b",").map_err(gone)?;
        }
        out.write_all(&row).map_err(gone)
    });
    let all = match all {
        Ok(all) => all,
        Err(e) => return out.fail(e.into()),
    };
    let _ = write!(out, "],\"total_rows\":{}", all.total_rows);
    if with_seq {
        let _ = write!(out, ",\"update_seq\":{}", all.update_seq);
    }
    let _ = out.write_all(b"}\n");
    out.finish()
}

/// A streamed answer's client went away: the read stops (`DocError` so
/// that it crosses the store's callbacks).
pub(crate) fn gone(e: std::io::Error) -> DocError {
    DocError::Coded { status: 499, error: "client_closed_request", reason: e.to_string() }
}

pub fn bulk_docs(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
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
    check_bulk_count("_bulk_docs", docs.len(), server.max_bulk_docs)?;
    let mut batch = Vec::with_capacity(docs.len());
    for doc in docs {
        let Value::Object(mut doc) = doc.clone() else {
            return Err(HttpError::bad_request("Document must be a JSON object"));
        };
        if !doc.get("_id").is_some_and(Value::is_string) {
            if !new_edits {
                return Err(HttpError::bad_request("Document id must be a string"));
            }
            doc.insert("_id".into(), Value::String(http::uuid()));
        }
        batch.push(doc);
    }
    let design = batch.iter().any(|d| d.get("_id").and_then(Value::as_str).is_some_and(|id| id.starts_with("_design/")));
    if design && !access::is_db_admin(ctx, &db.db.security()?) {
        return Err(HttpError::forbidden("You are not a db or server admin."));
    }
    let results = write_docs(ctx, db, batch, new_edits)?;
    // With new_edits=false CouchDB reports only the failures.
    Ok(json(201, &outcomes(&results, !new_edits)))
}

pub fn bulk_get(req: &Request, db: &DbHandle, max_docs: usize) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = req.json_object()?;
    let docs = body.get("docs").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("Missing JSON list of 'docs'."))?;
    check_bulk_count("_bulk_get", docs.len(), max_docs)?;
    let base = ReadOptions { rev: None, ..read_options(req)? };
    // The answer is written as bytes: each document's JSON body is copied
    // as stored (`get_doc_bytes`), not parsed into values and written
    // again. Members in the order `serde_json` writes a map's: `docs`
    // before `id`. Each entry goes out as it is read (`crate::stream`):
    // with their attachments inline, a replicator's 10,000 documents are
    // not held together.
    let mut w = BodyWriter::new(req, http::response(200, "application/json", Bytes::new()));
    let _ = w.write_all(b"{\"results\":[");
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        out.clear();
        if let Err(e) = bulk_get_entry(db, d, &base, i, &mut out).and_then(|()| w.write_all(&out).map_err(|e| HttpError::from(gone(e)))) {
            return w.fail(e);
        }
    }
    let _ = w.write_all(b"]}\n");
    w.finish()
}

/// One entry of a `_bulk_get` answer (the `i`-th) into `out`.
fn bulk_get_entry(db: &DbHandle, d: &Value, base: &ReadOptions, i: usize, out: &mut Vec<u8>) -> Result<(), HttpError> {
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
            Err(error) => write_json(out, error)?,
        }
    }
    out.extend_from_slice(b"],\"id\":");
    write_json(out, &Value::String(id.to_owned()))?;
    out.push(b'}');
    Ok(())
}

/// Documents one `_bulk_docs` or `_bulk_get` may name by default (as
/// CouchDB 4's `max_bulk_docs_count` and `max_bulk_get_count`): a body of
/// 2M tiny documents took about 2 KB each before anything was written.
pub const DEFAULT_MAX_BULK_DOCS: usize = 10_000;

/// 413 past `max` documents in one request (`--max-bulk-docs`).
fn check_bulk_count(endpoint: &str, count: usize, max: usize) -> Result<(), HttpError> {
    if count > max {
        return Err(HttpError::new(413, "too_large", format!("a {endpoint} request names at most {max} documents (--max-bulk-docs); this one names {count}: send them in several requests")));
    }
    Ok(())
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
