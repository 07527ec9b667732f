//! Database endpoints: `PUT/GET/HEAD/DELETE /{db}`, `_compact`,
//! `_revs_limit`, `_security`, `_ensure_full_commit`
//! (https://docs.couchdb.org/en/stable/api/database/common.html).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use serde_json::{json, Value};

/// `PUT /{db}`, `?partitioned=true` for a partitioned database
/// (`rhizome_docs::partition`).
pub fn create(server: &Server, req: &Request, name: &str, exists: bool) -> Result<Response<Body>, HttpError> {
    let partitioned = match req.param("partitioned") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => return Err(HttpError::bad_request(format!("Invalid `partitioned` parameter: {v}"))),
    };
    if partitioned && name.starts_with('_') {
        return Err(HttpError::bad_request("Cannot partition a system database"));
    }
    if exists {
        return Err(HttpError::new(412, "file_exists", "The database could not be created, the file already exists."));
    }
    server.create_db_partitioned(name, partitioned)?;
    Ok(json(201, &json!({ "ok": true })))
}

/// A server admin may delete any database, `_users` too, as in CouchDB.
/// While `_users` is gone only the server admin logs in: a user's password
/// and session cookie are checked against their document there
/// (`auth::check_password`, `auth::session`), so none is found.
pub fn delete(server: &Server, name: &str) -> Result<Response<Body>, HttpError> {
    server.delete_db(name)?;
    Ok(json(200, &json!({ "ok": true })))
}

pub fn info(db: &DbHandle) -> Result<Response<Body>, HttpError> {
    Ok(json(200, &info_json(db)?))
}

/// `GET|POST /_dbs_info`: the info of several databases at once
/// (https://docs.couchdb.org/en/stable/api/server/common.html#dbs-info):
/// the `keys` of a POST, or every database (with `limit` and `skip`).
pub fn dbs_info(server: &Server, req: &Request) -> Result<Response<Body>, HttpError> {
    let names: Vec<String> = match req.method {
        Method::GET | Method::HEAD => {
            let all = server.all_dbs()?;
            let skip = req.number("skip")?.unwrap_or(0) as usize;
            let limit = req.number("limit")?.map(|n| n as usize).unwrap_or(usize::MAX);
            all.into_iter().skip(skip).take(limit).collect()
        }
        Method::POST => {
            let body = req.json_object()?;
            let keys = body.get("keys").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("`keys` member must exist."))?;
            keys.iter().map(|k| k.as_str().map(str::to_owned).ok_or_else(|| HttpError::bad_request("`keys` must hold database names"))).collect::<Result<_, _>>()?
        }
        _ => return Err(HttpError::method_not_allowed("GET,HEAD,POST")),
    };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        out.push(match server.db(&name)? {
            Some(db) => json!({ "key": name, "info": info_json(&db)? }),
            None => json!({ "key": name, "error": "not_found" }),
        });
    }
    Ok(json(200, &Value::Array(out)))
}

/// Every member CouchDB 3's `GET /{db}` has.
fn info_json(db: &DbHandle) -> Result<Value, HttpError> {
    let info = db.db.info()?;
    Ok(
        json!({
            "db_name": db.name,
            "update_seq": info.update_seq,
            "doc_count": info.doc_count,
            "doc_del_count": info.doc_del_count,
            "purge_seq": db.db.purge_seq()?,
            "compact_running": false,
            "sizes": { "file": info.bytes_on_disk, "external": info.bytes_on_disk, "active": info.bytes_on_disk },
            "disk_format_version": 8,
            "instance_start_time": "0",
            "props": if db.db.is_partitioned() { json!({ "partitioned": true }) } else { json!({}) },
            "cluster": { "q": 1, "n": 1, "w": 1, "r": 1 },
        }),
    )
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

/// `POST /{db}/_purge`: `{docid: [rev, ...]}`; answers the revisions
/// purged per document (`rhizome_docs::Database::purge`).
pub fn purge(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = super::mango::json_body(req)?;
    let mut requests = Vec::with_capacity(body.len());
    for (id, revs) in body {
        let Value::Array(revs) = revs else { return Err(HttpError::bad_request("Invalid list of revisions")) };
        let revs = revs
            .iter()
            .map(|r| r.as_str().and_then(rhizome_docs::Rev::parse).ok_or_else(|| HttpError::bad_request("Invalid rev format")))
            .collect::<Result<Vec<_>, _>>()?;
        requests.push((id, revs));
    }
    let purged = db.db.purge(&requests)?;
    let purged: serde_json::Map<String, Value> =
        purged.into_iter().map(|(id, revs)| (id, Value::Array(revs.iter().map(|r| Value::String(r.to_string())).collect()))).collect();
    Ok(json(201, &json!({ "purge_seq": null, "purged": purged })))
}

/// `GET /{db}/_purged_infos`: the purge requests kept, oldest first.
pub fn purged_infos(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET,HEAD"));
    }
    Ok(json(200, &json!({ "purged_infos": db.db.purged_infos()? })))
}

/// `GET /{db}/_shards[/{doc id}]`: a database here is one shard, the whole
/// range, on this one node (`_membership`).
pub fn shards(req: &Request, id: Option<&str>) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET,HEAD"));
    }
    const WHOLE: &str = "00000000-ffffffff";
    let node = super::node::NODE_NAME;
    Ok(json(200, &match id {
        None => json!({ "shards": { WHOLE: [node] } }),
        Some(_) => json!({ "range": WHOLE, "nodes": [node] }),
    }))
}

/// `POST /{db}/_sync_shards`: with one copy of each shard there is nothing
/// to synchronise; accepted as CouchDB accepts it.
pub fn sync_shards(req: &Request) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    Ok(json(202, &json!({ "ok": true })))
}

pub fn purged_infos_limit(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => Ok(json(200, &json!(db.db.purged_infos_limit()?))),
        Method::PUT => {
            let limit = req.json()?.as_u64().filter(|n| *n > 0).ok_or_else(|| HttpError::bad_request("`purged_infos_limit` must be positive integer"))?;
            db.db.set_purged_infos_limit(limit)?;
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
