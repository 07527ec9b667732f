//! Partitioned databases over HTTP
//! (https://docs.couchdb.org/en/stable/api/partitioned-dbs.html):
//! `GET /{db}/_partition/{p}` and a partition's `_all_docs` (and its
//! `/queries` form), `_find`,
//! `_explain` and views. Each reads the partition's own key range
//! (`rhizome_docs::partition`); the guard checks them as any read of the
//! database (members).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// A partitioned database's rule on document ids, checked for a whole
/// request before anything is written (as CouchDB reads the request).
pub fn check_id_for(db: &DbHandle, doc: &Map<String, Value>) -> Result<(), HttpError> {
    if !db.db.is_partitioned() {
        return Ok(());
    }
    match doc.get("_id") {
        Some(Value::String(id)) => Ok(rhizome_docs::check_partitioned_id(id)?),
        _ => Ok(()),
    }
}

/// `/{db}/_partition/{partition}/...`; `rest` is what follows the partition.
pub fn handle(server: &Server, req: &Request, db: Arc<DbHandle>, partition: &str, rest: &[String]) -> Result<Response<Body>, HttpError> {
    if !db.db.is_partitioned() {
        return Err(HttpError::bad_request("database is not partitioned"));
    }
    rhizome_docs::check_partition_name(partition)?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match rest.as_slice() {
        [] => info(req, &db, partition),
        ["_all_docs"] => super::all_docs::handle_in(req, &db, super::all_docs::Namespace::All, Some(partition)),
        ["_all_docs", "queries"] => super::all_docs::queries_in(req, &db, super::all_docs::Namespace::All, Some(partition)),
        ["_find"] | ["_explain"] => {
            if req.method != Method::POST {
                return Err(HttpError::method_not_allowed("POST"));
            }
            let mut body = super::mango::json_body(req)?;
            match body.get("partition") {
                None => {}
                Some(Value::String(p)) if p == partition => {}
                Some(_) => return Err(HttpError::bad_request("Conflicting value for `partition` in request body")),
            }
            body.insert("partition".into(), Value::String(partition.to_owned()));
            if rest[0] == "_find" {
                super::mango::find_body(req, &db, &body, server.query_timeout)
            } else {
                super::mango::explain_body(&db, &body)
            }
        }
        ["_design", name, "_view", view @ ..] if !view.is_empty() => {
            let ddoc = format!("_design/{name}");
            super::views::view(req, db, &ddoc, &view.join("/"), Some(partition))
        }
        _ => Err(HttpError::not_found("missing")),
    }
}

/// `GET /{db}/_partition/{partition}`: the partition's counts and sizes.
fn info(req: &Request, db: &DbHandle, partition: &str) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET,HEAD"));
    }
    let info = db.db.partition_info(partition)?;
    Ok(json(
        200,
        &json!({
            "db_name": db.name,
            "sizes": { "active": info.active_bytes, "external": info.external_bytes },
            "partition": partition,
            "doc_count": info.doc_count,
            "doc_del_count": info.doc_del_count,
        }),
    ))
}
