//! CouchDB's Nouveau full-text search (https://docs.couchdb.org/en/stable/api/ddoc/nouveau.html):
//! `GET|POST /{db}/_design/{ddoc}/_nouveau/{index}`,
//! `GET /{db}/_design/{ddoc}/_nouveau_info/{index}` and
//! `POST /{db}/_nouveau_cleanup`, on `rhizome_search`'s embedded indexes
//! (no separate search service).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use rhizome_docs::ReadOptions;
use rhizome_search::{NouveauDef, SearchError, SearchRequest};
use serde_json::{json, Map, Value};

impl From<SearchError> for HttpError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Doc(e) => e.into(),
            SearchError::NotFound(m) => HttpError::not_found(m),
            SearchError::BadRequest(m) => HttpError::bad_request(m),
            SearchError::InvalidDesignDoc(m) => HttpError::new(400, "invalid_design_doc", m),
            SearchError::QueryParse(m) => HttpError::new(400, "query_parse_error", m),
            SearchError::Process(m) => HttpError::new(500, "os_process_error", m),
            SearchError::Index(m) => HttpError::internal(m),
        }
    }
}

/// The design document's body and its index `name`.
fn definition(db: &DbHandle, ddoc_id: &str, name: &str) -> Result<(NouveauDef, Value), HttpError> {
    let body = db.db.get_doc(ddoc_id, &ReadOptions::default())?;
    let defs = NouveauDef::parse_all(ddoc_id, &body)?;
    let def = defs.into_iter().find(|d| d.name == name).ok_or_else(|| HttpError::not_found(format!("{name} not found.")))?;
    Ok((def, Value::Object(body)))
}

fn query_err(m: impl Into<String>) -> HttpError {
    HttpError::new(400, "query_parse_error", m)
}

/// A JSON option: JSON text in a query string, JSON itself in a body.
fn json_option(v: &Value, name: &str, from_query: bool) -> Result<Value, HttpError> {
    match v {
        Value::String(s) if from_query => serde_json::from_str(s).map_err(|_| query_err(format!("Invalid value for {name}: {s}"))),
        other => Ok(other.clone()),
    }
}

fn strings(v: &Value, name: &str) -> Result<Vec<String>, HttpError> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_owned).ok_or_else(|| query_err(format!("all items in {name} parameter must be strings")))).collect(),
        _ => Err(query_err(format!("{name} parameter must be a list of strings"))),
    }
}

fn boolean(v: &Value, name: &str) -> Result<bool, HttpError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(query_err(format!("Invalid value for {name}: {other}"))),
    }
}

/// The options of a search, from the query string (GET) or the body
/// (POST), checked as `nouveau_httpd:validate_query_arg` does.
fn search_request(options: &Map<String, Value>, from_query: bool) -> Result<SearchRequest, HttpError> {
    let mut r = SearchRequest::default();
    r.q = match options.get("q").or_else(|| options.get("query")) {
        Some(Value::String(q)) => q.clone(),
        Some(_) => return Err(query_err("q parameter must be a string")),
        None => return Err(query_err("q parameter is mandatory")),
    };
    if let Some(v) = options.get("limit") {
        let n = match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse::<i64>().ok(),
            _ => None,
        }
        .ok_or_else(|| query_err("limit parameter must be an integer"))?;
        if n <= 0 {
            return Err(query_err("limit parameter must be greater than zero"));
        }
        r.limit = n as usize;
    }
    if let Some(v) = options.get("sort") {
        match json_option(v, "sort", from_query)? {
            Value::Null => {}
            s => r.sort = strings(&s, "sort")?,
        }
    }
    if let Some(v) = options.get("counts") {
        match json_option(v, "counts", from_query)? {
            Value::Null => {}
            Value::Array(a) => r.counts = Some(strings(&Value::Array(a), "counts")?),
            _ => return Err(query_err("counts parameter must be a list of strings")),
        }
    }
    if let Some(v) = options.get("ranges") {
        match json_option(v, "ranges", from_query)? {
            Value::Null => {}
            Value::Object(m) => {
                for ranges in m.values() {
                    let list = ranges.as_array().ok_or_else(|| query_err("range values must be lists of objects"))?;
                    if !list.iter().all(Value::is_object) {
                        return Err(query_err("all values in ranges parameter must be objects"));
                    }
                }
                r.ranges = Some(m);
            }
            _ => return Err(query_err("ranges parameter must be an object")),
        }
    }
    if let Some(v) = options.get("bookmark") {
        match v {
            Value::String(s) => r.bookmark = Some(s.clone()),
            Value::Null => {}
            _ => return Err(query_err("bookmark must be a string")),
        }
    }
    if let Some(v) = options.get("include_docs") {
        r.include_docs = boolean(v, "include_docs")?;
    }
    if let Some(v) = options.get("update") {
        r.update = boolean(v, "update")?;
    }
    Ok(r)
}

/// `GET|POST /{db}/_design/{ddoc}/_nouveau/{index}`.
pub fn search(req: &Request, db: &DbHandle, ddoc_id: &str, name: &str) -> Result<Response<Body>, HttpError> {
    let options: Map<String, Value> = match req.method {
        Method::GET | Method::HEAD => req.query.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect(),
        Method::POST => req.json_object()?,
        _ => return Err(HttpError::method_not_allowed("GET, POST")),
    };
    let (def, body) = definition(db, ddoc_id, name)?;
    let request = search_request(&options, req.method != Method::POST)?;
    let files = if request.update {
        rhizome_search::refresh(&db.db, &db.name, &def, &body, super::views::limits())?
    } else {
        rhizome_search::index::open(&db.db, &def)?
    };
    let answer = rhizome_search::search(&db.db, &files, &request)?;
    Ok(json(200, &answer))
}

/// `GET /{db}/_design/{ddoc}/_nouveau_info/{index}`.
pub fn info(req: &Request, db: &DbHandle, ddoc_id: &str, name: &str) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET"));
    }
    let (def, _) = definition(db, ddoc_id, name)?;
    let i = rhizome_search::index::info(&db.db, &def)?;
    Ok(json(
        200,
        &json!({
            "name": format!("{ddoc_id}/{name}"),
            "search_index": {
                "update_seq": i.update_seq,
                "purge_seq": 0,
                "num_docs": i.num_docs,
                "disk_size": i.disk_size,
                "signature": i.signature,
            }
        }),
    ))
}

/// Every Nouveau index of the database's design documents.
fn all_definitions(db: &DbHandle) -> Result<Vec<NouveauDef>, HttpError> {
    let mut out = Vec::new();
    let opts = rhizome_docs::AllDocsOptions { start_key: Some("_design/".into()), end_key: Some("_design0".into()), inclusive_end: false, include_docs: true, ..Default::default() };
    for row in db.db.all_docs(&opts)?.rows {
        let (Some(id), Some(Value::Object(doc))) = (row.get("id").and_then(Value::as_str), row.get("doc")) else { continue };
        // A malformed `nouveau` member has no index to keep.
        out.extend(NouveauDef::parse_all(id, doc).unwrap_or_default());
    }
    Ok(out)
}

/// `POST /{db}/_nouveau_cleanup` (and part of `_view_cleanup`): removes
/// the index files no design document uses.
pub fn cleanup(db: &DbHandle) -> Result<usize, HttpError> {
    let live = all_definitions(db)?;
    Ok(rhizome_search::cleanup(&db.db, &live)?)
}

/// `POST /{db}/_compact/{ddoc}`: merges the segments of the design
/// document's Nouveau indexes.
pub fn compact(db: &DbHandle, ddoc_id: &str) -> Result<(), HttpError> {
    let body = db.db.get_doc(ddoc_id, &ReadOptions::default())?;
    for def in NouveauDef::parse_all(ddoc_id, &body).unwrap_or_default() {
        rhizome_search::index::compact(&db.db, &def)?;
    }
    Ok(())
}
