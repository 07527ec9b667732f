//! `_all_docs`, `_design_docs` and `_local_docs`, by GET or POST, and their
//! `/queries` forms
//! (https://docs.couchdb.org/en/stable/api/database/bulk-api.html#db-all-docs,
//! https://docs.couchdb.org/en/stable/api/local.html#db-local-docs).
//!
//! As CouchDB (`chttpd_db:all_docs_view`, `couch_mrview_http:parse_params`):
//! a POST body takes every option the query string takes, as JSON values
//! (`{"limit": 2, "include_docs": true, "start_key": "b"}`), and the query
//! string is read after it, so its options win; `/queries` runs each object
//! of `queries` over the options of the query string. Booleans are
//! case-insensitive (`descending=True`), anything else a 400
//! `query_parse_error`; options CouchDB ignores here are ignored.

use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::state::DbHandle;
use crate::stream::BodyWriter;
use bytes::Bytes;
use hyper::{Method, Response};
use rhizome_docs::AllDocsOptions;
use serde_json::{Map, Value};
use std::io::Write;

/// Which ids a request lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    All,
    Design,
    Local,
}

/// `/{db}/_all_docs`, `/{db}/_design_docs`, `/{db}/_local_docs`.
pub fn handle(req: &Request, db: &DbHandle, ns: Namespace) -> Result<Response<Body>, HttpError> {
    handle_in(req, db, ns, None)
}

/// [`handle`], limited to one partition's documents when one is given
/// (`/{db}/_partition/{p}/_all_docs`).
pub fn handle_in(req: &Request, db: &DbHandle, ns: Namespace, partition: Option<&str>) -> Result<Response<Body>, HttpError> {
    let mut query = AllDocsQuery::default();
    match req.method {
        Method::GET | Method::HEAD => {}
        Method::POST => {
            let body = req.json_object()?;
            if body.get("keys").is_some_and(|k| !k.is_array()) {
                return Err(HttpError::bad_request("`keys` body member must be an array."));
            }
            query.apply_json(&body)?;
        }
        _ => return Err(HttpError::method_not_allowed("GET,HEAD,POST")),
    }
    query.apply_query_string(req)?;
    let mut opts = query.options()?;
    opts.partition = partition.map(str::to_owned);
    // Rows go out as they are read (`crate::stream`).
    let mut out = BodyWriter::new(req, http::response(200, "application/json", Bytes::new()));
    if let Err(e) = answer(db, ns, &query, opts, &mut out).and_then(|()| out.write_all(b"\n").map_err(client_gone)) {
        return out.fail(e);
    }
    out.finish()
}

/// `POST /{db}/_all_docs/queries` (and `_design_docs`, `_local_docs`).
pub fn queries(req: &Request, db: &DbHandle, ns: Namespace) -> Result<Response<Body>, HttpError> {
    queries_in(req, db, ns, None)
}

/// [`queries`], each query limited to one partition's documents when one is
/// given (`/{db}/_partition/{p}/_all_docs/queries`).
pub fn queries_in(req: &Request, db: &DbHandle, ns: Namespace, partition: Option<&str>) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = req.json_object()?;
    let list = match body.get("queries") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err(HttpError::bad_request("`queries` member must be an array.")),
        None => return Err(HttpError::bad_request("POST body must include `queries` parameter.")),
    };
    let mut base = AllDocsQuery::default();
    base.apply_query_string(req)?;
    // Every query checked before the first answer is sent: a bad one is
    // still a 400 for the whole request.
    let mut checked = Vec::with_capacity(list.len());
    for item in list {
        let obj = item.as_object().ok_or_else(|| HttpError::bad_request("each query must be a JSON object"))?;
        let mut q = base.clone();
        q.apply_json(obj)?;
        let mut opts = q.options()?;
        opts.partition = partition.map(str::to_owned);
        checked.push((q, opts));
    }
    let mut out = BodyWriter::new(req, http::response(200, "application/json", Bytes::new()));
    let _ = out.write_all(b"{\"results\":[");
    for (i, (q, opts)) in checked.into_iter().enumerate() {
        let separated = if i > 0 { out.write_all(b",").map_err(client_gone) } else { Ok(()) };
        if let Err(e) = separated.and_then(|()| answer(db, ns, &q, opts, &mut out)) {
            return out.fail(e);
        }
    }
    let _ = out.write_all(b"]}\n");
    out.finish()
}

fn client_gone(e: std::io::Error) -> HttpError {
    super::bulk::gone(e).into()
}

/// The options of one listing, as CouchDB's `#mrargs` for a map over ids.
#[derive(Clone)]
struct AllDocsQuery {
    key: Option<Value>,
    keys: Option<Vec<Value>>,
    start_key: Option<Value>,
    end_key: Option<Value>,
    inclusive_end: bool,
    limit: Option<usize>,
    skip: usize,
    descending: bool,
    include_docs: bool,
    conflicts: bool,
    attachments: bool,
    update_seq: bool,
    group: bool,
}

impl Default for AllDocsQuery {
    fn default() -> Self {
        AllDocsQuery {
            key: None,
            keys: None,
            start_key: None,
            end_key: None,
            inclusive_end: true,
            limit: None,
            skip: 0,
            descending: false,
            include_docs: false,
            conflicts: false,
            attachments: false,
            update_seq: false,
            group: false,
        }
    }
}

fn parse_error(reason: impl Into<String>) -> HttpError {
    HttpError::new(400, "query_parse_error", reason.into())
}

/// A parameter as CouchDB's error messages quote it.
fn quoted(v: &Value) -> String {
    match v {
        Value::String(s) => Value::String(s.clone()).to_string(),
        other => other.to_string(),
    }
}

/// `couch_mrview_http:parse_boolean`: JSON booleans, or `true`/`false` in
/// any case.
pub fn boolean(v: &Value) -> Result<bool, HttpError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => Err(parse_error(format!("Invalid boolean parameter: {}", quoted(other)))),
    }
}

/// `couch_mrview_http:parse_pos_int`.
fn count(v: &Value) -> Result<usize, HttpError> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => match s.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => return Err(parse_error(format!("Invalid value for integer: {}", quoted(v)))),
        },
        _ => None,
    };
    match n {
        Some(n) if n >= 0 => Ok(n as usize),
        _ => Err(parse_error(format!("Invalid value for positive integer: {}", quoted(v)))),
    }
}

impl AllDocsQuery {
    fn apply_json(&mut self, body: &Map<String, Value>) -> Result<(), HttpError> {
        for (name, value) in body {
            self.set(name, value.clone())?;
        }
        Ok(())
    }

    /// The query string: JSON for the keys, text for the rest.
    fn apply_query_string(&mut self, req: &Request) -> Result<(), HttpError> {
        for (name, text) in &req.query {
            let value = match name.as_str() {
                "key" | "keys" | "startkey" | "start_key" | "endkey" | "end_key" => {
                    serde_json::from_str(text).map_err(|e| HttpError::bad_request(format!("Invalid JSON in parameter {name}: {e}")))?
                }
                _ => Value::String(text.clone()),
            };
            if name == "keys" && !value.is_array() {
                return Err(HttpError::bad_request("`keys` parameter must be an array."));
            }
            self.set(name, value)?;
        }
        Ok(())
    }

    fn set(&mut self, name: &str, v: Value) -> Result<(), HttpError> {
        match name {
            "key" => self.key = Some(v),
            "keys" => match v {
                Value::Array(keys) => self.keys = Some(keys),
                _ => return Err(parse_error("`keys` must be an array of strings.")),
            },
            "startkey" | "start_key" => self.start_key = Some(v),
            "endkey" | "end_key" => self.end_key = Some(v),
            "limit" => self.limit = Some(count(&v)?),
            "skip" => self.skip = count(&v)?,
            "descending" => self.descending = boolean(&v)?,
            "inclusive_end" => self.inclusive_end = boolean(&v)?,
            "include_docs" => self.include_docs = boolean(&v)?,
            "conflicts" => self.conflicts = boolean(&v)?,
            "attachments" => self.attachments = boolean(&v)?,
            "update_seq" => self.update_seq = boolean(&v)?,
            "group" => self.group = boolean(&v)?,
            "reduce" => {
                if boolean(&v)? {
                    return Err(parse_error("Reduce is invalid for map-only views."));
                }
            }
            "group_level" => {
                count(&v)?;
            }
            "att_encoding_info" | "sorted" => {
                boolean(&v)?;
            }
            "stale" => match v.as_str() {
                Some("ok" | "update_after") => {}
                _ => return Err(parse_error("Invalid value for `stale`.")),
            },
            "stable" => match v {
                Value::Bool(_) => {}
                Value::String(ref s) if s == "true" || s == "false" => {}
                _ => return Err(parse_error("Invalid value for `stable`.")),
            },
            "update" => match v {
                Value::Bool(_) => {}
                Value::String(ref s) if s == "true" || s == "false" || s == "lazy" => {}
                _ => return Err(parse_error("Invalid value for `update`.")),
            },
            // CouchDB keeps any other option aside and ignores it
            // (`startkey_docid` among them: ids are the keys here).
            _ => {}
        }
        Ok(())
    }

    /// The store's options, checked as `couch_mrview_util:validate_args`.
    fn options(&self) -> Result<AllDocsOptions, HttpError> {
        if self.group {
            return Err(parse_error("Invalid use of grouping on a map view."));
        }
        let id = |v: &Value, name: &str| -> Result<String, HttpError> {
            v.as_str().map(str::to_owned).ok_or_else(|| HttpError::bad_request(format!("{name} must be a JSON string (document ids are strings)")))
        };
        let (mut start, mut end) = (self.start_key.clone(), self.end_key.clone());
        if let Some(k) = &self.key {
            (start, end) = (Some(k.clone()), Some(k.clone()));
        }
        let keys = self.keys.clone();
        // `keys` picks rows itself (deleted and missing ones included);
        // beside a range it is a contradiction, except a range of its one
        // key (which is what CouchDB makes of `keys` of one key).
        if let Some(list) = &keys {
            match list.as_slice() {
                [] => {}
                [one] if start.as_ref().is_none_or(|s| s == one) && end.as_ref().is_none_or(|e| e == one) => {}
                _ if start.is_none() && end.is_none() => {}
                _ => return Err(parse_error("`keys` is incompatible with `key`, `start_key` and `end_key`")),
            }
            (start, end) = (None, None);
        }
        Ok(AllDocsOptions {
            start_key: start.as_ref().map(|k| id(k, "start_key")).transpose()?,
            end_key: end.as_ref().map(|k| id(k, "end_key")).transpose()?,
            inclusive_end: self.inclusive_end,
            limit: self.limit,
            skip: self.skip,
            descending: self.descending,
            include_docs: self.include_docs,
            conflicts: self.conflicts,
            attachments: self.attachments,
            keys: keys.map(|k| k.into_iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect()),
            partition: None,
        })
    }
}

/// One listing's answer as JSON into `out`, its rows as they are read:
/// CouchDB's members, each document's JSON body copied as stored for
/// `_all_docs` (`all_docs_each_bytes`).
fn answer(db: &DbHandle, ns: Namespace, query: &AllDocsQuery, mut opts: AllDocsOptions, out: &mut dyn Write) -> Result<(), HttpError> {
    if ns == Namespace::Local {
        let listed = db.db.local_docs(&opts)?;
        let rows: Vec<String> = listed.rows.iter().map(Value::to_string).collect();
        return write!(out, "{{\"total_rows\":null,\"offset\":null,\"rows\":[{}]}}", rows.join(",")).map_err(client_gone);
    }
    let mut total_rows = None;
    if ns == Namespace::Design {
        clamp_to_design(&mut opts);
        // CouchDB counts the design documents alone; they are few.
        let mut every = AllDocsOptions::default();
        clamp_to_design(&mut every);
        total_rows = Some(db.db.all_docs(&every)?.rows.len() as u64);
    }
    // With `keys` there is no position to report (CouchDB: `null`).
    let by_keys = opts.keys.is_some();
    let head = |out: &mut dyn Write, all: &rhizome_docs::AllDocs<()>| {
        let offset = if by_keys { "null".to_owned() } else { all.offset.to_string() };
        write!(out, "{{\"total_rows\":{},\"offset\":{offset},\"rows\":[", total_rows.unwrap_or(all.total_rows))
    };
    let mut first = true;
    let all = db.db.all_docs_each_bytes(&opts, &mut |all, row| {
        if std::mem::take(&mut first) {
            head(out, all).map_err(super::bulk::gone)?;
        } else {
            out.write_all(b",").map_err(super::bulk::gone)?;
        }
        out.write_all(&row).map_err(super::bulk::gone)
    })?;
    if first {
        head(out, &all).map_err(client_gone)?;
    }
    out.write_all(b"]").map_err(client_gone)?;
    if query.update_seq {
        write!(out, ",\"update_seq\":{}", all.update_seq).map_err(client_gone)?;
    }
    out.write_all(b"}").map_err(client_gone)
}

/// `_design_docs`: the key range clamped to `_design/` ids.
fn clamp_to_design(opts: &mut AllDocsOptions) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from_body(body: Value) -> Result<AllDocsOptions, HttpError> {
        let mut q = AllDocsQuery::default();
        q.apply_json(body.as_object().unwrap())?;
        q.options()
    }

    #[test]
    fn a_post_body_takes_every_option_of_the_query_string() {
        let o = from_body(json!({ "limit": 2, "skip": 1, "start_key": "b", "end_key": "d", "inclusive_end": false, "descending": "TRUE", "include_docs": true, "conflicts": true })).unwrap();
        assert_eq!((o.limit, o.skip, o.start_key.as_deref(), o.end_key.as_deref()), (Some(2), 1, Some("b"), Some("d")));
        assert!(!o.inclusive_end && o.descending && o.include_docs && o.conflicts);
        let o = from_body(json!({ "startkey": "x", "endkey": "y" })).unwrap();
        assert_eq!((o.start_key.as_deref(), o.end_key.as_deref()), (Some("x"), Some("y")));
        let o = from_body(json!({ "key": "k" })).unwrap();
        assert_eq!((o.start_key.as_deref(), o.end_key.as_deref()), (Some("k"), Some("k")));
    }

    #[test]
    fn options_are_checked_as_couchdb_checks_them() {
        assert_eq!(from_body(json!({ "limit": -1 })).unwrap_err().reason, "Invalid value for positive integer: -1");
        assert_eq!(from_body(json!({ "skip": "x" })).unwrap_err().reason, "Invalid value for integer: \"x\"");
        assert_eq!(from_body(json!({ "descending": "yes" })).unwrap_err().reason, "Invalid boolean parameter: \"yes\"");
        assert_eq!(from_body(json!({ "keys": ["a", "b"], "start_key": "a" })).unwrap_err().error, "query_parse_error");
        assert!(from_body(json!({ "keys": ["a"], "key": "a" })).is_ok(), "one key and the same key agree");
        assert_eq!(from_body(json!({ "group": true })).unwrap_err().reason, "Invalid use of grouping on a map view.");
        assert!(from_body(json!({ "startkey_docid": "x", "stale": "ok", "anything": 1 })).is_ok(), "ignored as CouchDB ignores them");
        assert!(boolean(&json!("False")).is_ok_and(|b| !b));
    }
}
