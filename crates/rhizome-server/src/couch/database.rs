//! Database endpoints: `PUT/GET/HEAD/DELETE /{db}`, `_compact`,
//! `_revs_limit`, `_security`, `_ensure_full_commit`
//! (https://docs.couchdb.org/en/stable/api/database/common.html).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use serde_json::{json, Value};

pub fn create(server: &Server, name: &str, exists: bool) -> Result<Response<Body>, HttpError> {
    if exists {
        return Err(HttpError::new(412, "file_exists", "The database could not be created, the file already exists."));
    }
    server.create_db(name)?;
    Ok(json(201, &json!({ "ok": true })))
}

pub fn delete(server: &Server, name: &str) -> Result<Response<Body>, HttpError> {
    if name == "_users" {
        return Err(HttpError::forbidden("The _users database cannot be deleted"));
    }
    server.delete_db(name)?;
    Ok(json(200, &json!({ "ok": true })))
}

pub fn info(db: &DbHandle) -> Result<Response<Body>, HttpError> {
    let info = db.db.info()?;
    Ok(json(
        200,
        &json!({
            "db_name": db.name,
            "update_seq": info.update_seq,
            "doc_count": info.doc_count,
            "doc_del_count": info.doc_del_count,
            "purge_seq": 0,
            "compact_running": false,
            "sizes": { "file": info.bytes_on_disk, "external": info.bytes_on_disk, "active": info.bytes_on_disk },
            "disk_format_version": 8,
            "instance_start_time": "0",
            "props": {},
            "cluster": { "q": 1, "n": 1, "w": 1, "r": 1 },
        }),
    ))
}

pub fn compact(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    db.db.compact()?;
    Ok(json(202, &json!({ "ok": true })))
}

pub fn revs_limit(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => Ok(json(200, &json!(db.db.revs_limit()?))),
        Method::PUT => {
            let limit = req.json()?.as_u64().filter(|n| *n > 0).ok_or_else(|| HttpError::bad_request("revs_limit must be a positive integer"))?;
            db.db.set_revs_limit(limit)?;
            Ok(json(200, &json!({ "ok": true })))
        }
        _ => Err(HttpError::method_not_allowed("GET,PUT")),
    }
}

pub fn security(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => Ok(json(200, &db.db.security()?)),
        Method::PUT => {
            let body: Value = req.json()?;
            db.db.set_security(&body)?;
            Ok(json(200, &json!({ "ok": true })))
        }
        _ => Err(HttpError::method_not_allowed("GET,PUT")),
    }
}

/// Every commit is durable already; kept for clients that call it.
pub fn ensure_full_commit(m: &Method) -> Result<Response<Body>, HttpError> {
    if *m != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    Ok(json(201, &json!({ "ok": true, "instance_start_time": "0" })))
}
