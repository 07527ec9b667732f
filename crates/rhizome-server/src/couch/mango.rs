//! Mango over HTTP: `POST /{db}/_find`, `POST /{db}/_explain`,
//! `GET|POST /{db}/_index`, `DELETE /{db}/_index/{ddoc}/json/{name}` and
//! `POST /{db}/_index/_bulk_delete`
//! (https://docs.couchdb.org/en/stable/api/database/find.html). The
//! queries run in `rhizome_docs`; indexes are design documents written
//! through the server's write path (group commit, `_changes` wake-ups), so
//! they replicate as CouchDB's do.

use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use rhizome_docs::{mango, DocError, ReadOptions};
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// CouchDB's `chttpd:validate_ctype(Req, "application/json")`.
pub(crate) fn json_body(req: &Request) -> Result<Map<String, Value>, HttpError> {
    let ctype = req.header("content-type").unwrap_or("");
    if !ctype.trim_start().to_ascii_lowercase().starts_with("application/json") {
        return Err(HttpError::new(415, "bad_content_type", "Content-Type must be application/json"));
    }
    match req.json()? {
        Value::Object(m) => Ok(m),
        other => Err(HttpError::new(400, "bad_request", format!("Request body must be a JSON object, not: {other}"))),
    }
}

/// Answers of at most this many documents are built whole; larger limits
/// stream, so memory stays bounded whatever `limit` asks.
pub const COLLECTED_FIND_LIMIT: u64 = 1000;

/// `timeout`: `--query-timeout-ms`.
pub fn find(req: &Request, db: &Arc<DbHandle>, timeout: std::time::Duration) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = json_body(req)?;
    find_body(req, db, &body, timeout)
}

/// `_find` of a body already read (`/{db}/_partition/{p}/_find` adds the
/// partition to it).
pub(crate) fn find_body(req: &Request, db: &Arc<DbHandle>, body: &Map<String, Value>, timeout: std::time::Duration) -> Result<Response<Body>, HttpError> {
    if let Some(answer) = super::mango_text::find(req, db, body, timeout)? {
        return Ok(answer);
    }
    let mut q = db.db.prepare_find(body)?;
    q.set_timeout(timeout);
    if q.limit() <= COLLECTED_FIND_LIMIT {
        let mut docs = Vec::new();
        let cancelled = req.cancelled.clone();
        let end = db.db.run_find(
            &q,
            &mut |doc| {
                docs.push(doc);
                true
            },
            &|| cancelled.load(std::sync::atomic::Ordering::Relaxed),
        )?;
        let mut out = Map::new();
        out.insert("docs".into(), Value::Array(docs));
        out.extend(q.tail(&end));
        return Ok(json(200, &Value::Object(out)));
    }
    // Streamed as CouchDB does: a failure after the first bytes ends the
    // body early (the status is already sent).
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    let db = db.clone();
    std::thread::Builder::new()
        .name("mango-find".into())
        .spawn(move || {
            let mut buf = b"{\"docs\":[".to_vec();
            let mut first = true;
            let mut open = true;
            let closed = tx.clone();
            let ended = db.db.run_find(
                &q,
                &mut |doc| {
                    if !first {
                        buf.push(b',');
                    }
                    first = false;
                    buf.extend_from_slice(doc.to_string().as_bytes());
                    if buf.len() >= STREAM_CHUNK_BYTES {
                        open = tx.blocking_send(Bytes::from(std::mem::take(&mut buf))).is_ok();
                    }
                    open
                },
                &|| closed.is_closed(),
            );
            if let (Ok(end), true) = (ended, open) {
                buf.push(b']');
                for (k, v) in q.tail(&end) {
                    buf.push(b',');
                    buf.extend_from_slice(Value::String(k).to_string().as_bytes());
                    buf.push(b':');
                    buf.extend_from_slice(v.to_string().as_bytes());
                }
                buf.extend_from_slice(b"}\n");
                let _ = tx.blocking_send(Bytes::from(buf));
            }
        })
        .map_err(|e| HttpError::internal(format!("a _find thread: {e}")))?;
    let mut r = Response::new(Body::Stream(rx));
    crate::http::set_header(&mut r, "content-type", "application/json");
    Ok(r)
}

/// Bytes gathered before a streamed `_find` sends them.
const STREAM_CHUNK_BYTES: usize = 64 * 1024;

pub fn explain(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = json_body(req)?;
    explain_body(db, &body)
}

/// `_explain` of a body already read.
pub(crate) fn explain_body(db: &DbHandle, body: &Map<String, Value>) -> Result<Response<Body>, HttpError> {
    if let Some(answer) = super::mango_text::explain(db, body)? {
        return Ok(json(200, &answer));
    }
    Ok(json(200, &db.db.explain(&db.name, body)?))
}

/// `/{db}/_index` and below; `rest` is the path after `_index`.
pub fn index(req: &Request, ctx: &UserCtx, db: &DbHandle, rest: &[String]) -> Result<Response<Body>, HttpError> {
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match (rest.as_slice(), &req.method) {
        ([], &Method::GET | &Method::HEAD) => list(req, db),
        ([], &Method::POST) => create(req, ctx, db),
        ([], _) => Err(HttpError::method_not_allowed("GET,POST")),
        (["_bulk_delete"], &Method::POST) => bulk_delete(req, ctx, db),
        (["_bulk_delete"], _) => Err(HttpError::method_not_allowed("POST")),
        (["_design", ddoc, kind, name] | [ddoc, kind, name], &Method::DELETE) => delete(ctx, db, ddoc, kind, name),
        (["_design", _, _, _] | [_, _, _], _) => Err(HttpError::method_not_allowed("DELETE")),
        _ => Err(HttpError::not_found("missing")),
    }
}

fn list(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let mut all = db.db.list_mango_indexes()?;
    all.extend(super::mango_text::listed(db)?);
    // `_all_docs` first, then by design document and name, as CouchDB lists them.
    all.sort_by(|a, b| (!a["ddoc"].is_null(), a["ddoc"].as_str(), a["name"].as_str()).cmp(&(!b["ddoc"].is_null(), b["ddoc"].as_str(), b["name"].as_str())));
    let bad = || HttpError::new(500, "invalid_list_index_params", "Index parameter ranges: limit > 1, skip > 0");
    let number = |k: &str| -> Result<Option<i64>, HttpError> { req.param(k).map(|v| v.parse::<i64>().map_err(|_| bad())).transpose() };
    let total = all.len();
    let limit = match number("limit")? {
        Some(l) if l < 1 => return Err(bad()),
        Some(l) => l as usize,
        None => total,
    };
    let skip = match number("skip")? {
        Some(s) if s < 0 => return Err(bad()),
        Some(s) => (s as usize).min(total),
        None => 0,
    };
    let indexes: Vec<Value> = all.into_iter().skip(skip).take(limit).collect();
    Ok(json(200, &json!({ "total_rows": total, "indexes": indexes })))
}

fn design_id(ddoc: &str) -> String {
    if ddoc.starts_with("_design/") {
        ddoc.to_owned()
    } else {
        format!("_design/{ddoc}")
    }
}

pub(crate) fn current(db: &DbHandle, id: &str) -> Result<Option<Map<String, Value>>, HttpError> {
    match db.db.get_doc(id, &ReadOptions::default()) {
        Ok(doc) => Ok(Some(doc)),
        Err(DocError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes a design document; `Ok(false)` on a conflict (to retry).
pub(crate) fn save(ctx: &UserCtx, db: &DbHandle, doc: Map<String, Value>) -> Result<bool, HttpError> {
    let (_, outcome) = super::write_docs(ctx, db, vec![doc], true)?.pop().ok_or_else(|| HttpError::internal("a write of one document answered nothing"))?;
    match outcome {
        Ok(_) => Ok(true),
        Err(DocError::Conflict) => Ok(false),
        Err(e) => Err(HttpError::new(500, "error_saving_ddoc", format!("Unknown error while saving the design document: {}", HttpError::from(e).reason))),
    }
}

/// Tries a read-modify-write of a design document a few times (another
/// writer may change it in between).
pub(crate) const SAVE_ATTEMPTS: usize = 5;

/// Adds an index to its design document, read and written again until no
/// other writer came in between: `add` gives the new body, or `None` when
/// the index is there already. CouchDB's `"created"` or `"exists"`.
pub(crate) fn add_index(
    ctx: &UserCtx,
    db: &DbHandle,
    ddoc: &str,
    add: impl Fn(Option<Map<String, Value>>) -> Result<Option<Map<String, Value>>, HttpError>,
) -> Result<&'static str, HttpError> {
    for _ in 0..SAVE_ATTEMPTS {
        match add(current(db, ddoc)?)? {
            None => return Ok("exists"),
            Some(doc) => {
                if save(ctx, db, doc)? {
                    return Ok("created");
                }
            }
        }
    }
    Err(HttpError::new(500, "error_saving_ddoc", "Encountered a conflict while saving the design document."))
}

fn create(req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let body = json_body(req)?;
    if body.get("type").and_then(Value::as_str) == Some("nouveau") {
        return super::mango_text::create(ctx, db, &body);
    }
    let new = mango::new_index_in(&body, db.db.is_partitioned())?;
    let result = add_index(ctx, db, &new.ddoc, |doc| Ok(mango::add_to_design_doc(doc, &new)?))?;
    // Built now, as CouchDB starts building at creation; queries bring it
    // up to date again.
    if let Some(index) = db.db.mango_indexes()?.into_iter().find(|i| i.ddoc == new.ddoc && i.name == new.name) {
        db.db.refresh_mango_index(&index)?;
    }
    Ok(json(200, &json!({ "result": result, "id": new.ddoc, "name": new.name })))
}

fn delete(ctx: &UserCtx, db: &DbHandle, ddoc: &str, kind: &str, name: &str) -> Result<Response<Body>, HttpError> {
    let id = design_id(ddoc);
    if kind == "nouveau" {
        return super::mango_text::delete(ctx, db, &id, name);
    }
    if kind != "json" {
        return Err(HttpError::not_found("missing"));
    }
    for _ in 0..SAVE_ATTEMPTS {
        let Some(doc) = current(db, &id)? else { return Err(HttpError::not_found("missing")) };
        let Some(changed) = mango::remove_from_design_doc(doc, name) else { return Err(HttpError::not_found("missing")) };
        if save(ctx, db, changed)? {
            return Ok(json(200, &json!({ "ok": true })));
        }
    }
    Err(HttpError::new(500, "error_saving_ddoc", "Encountered a conflict while saving the design document."))
}

fn bulk_delete(req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let body = json_body(req)?;
    let docids = match body.get("docids") {
        Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => ids.iter().filter_map(|v| v.as_str().map(design_id)).collect::<Vec<_>>(),
        other => {
            let shown = other.cloned().unwrap_or(Value::Null);
            return Err(HttpError::new(400, "invalid_bulk_docs", format!("Bulk Delete requires an array of non-null docids. Docids: {shown}")));
        }
    };
    let mut success = Vec::new();
    let mut fail = Vec::new();
    for id in docids {
        let mut deleted = false;
        for _ in 0..SAVE_ATTEMPTS {
            let Some(doc) = current(db, &id)? else { break };
            let names: Vec<String> = mango_index_names(&doc);
            if names.is_empty() {
                break;
            }
            let mut changed = Some(doc);
            for name in &names {
                changed = changed.and_then(|d| if d.contains_key("_deleted") { Some(d) } else { mango::remove_from_design_doc(d, name) });
            }
            let Some(changed) = changed else { break };
            if save(ctx, db, changed)? {
                deleted = true;
                break;
            }
        }
        if deleted {
            success.push(json!({ "id": id, "ok": true }));
        } else {
            fail.push(json!({ "id": id, "error": "not_found" }));
        }
    }
    Ok(json(200, &json!({ "success": success, "fail": fail })))
}

/// The views of a `"language": "query"` design document.
fn mango_index_names(doc: &Map<String, Value>) -> Vec<String> {
    if doc.get("language").and_then(Value::as_str) != Some("query") {
        return Vec::new();
    }
    doc.get("views").and_then(Value::as_object).map(|v| v.keys().cloned().collect()).unwrap_or_default()
}
