//! Design-document endpoints of CouchDB's query side
//! (https://docs.couchdb.org/en/stable/api/ddoc/views.html):
//! `GET|POST /{db}/_design/{ddoc}/_view/{view}`, `POST .../queries`,
//! `GET /{db}/_design/{ddoc}/_info`, `POST /{db}/_compact/{ddoc}` and
//! `POST /{db}/_view_cleanup`. The indexes and queries are
//! `rhizome_views`'.

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use crate::auth::UserCtx;
use rhizome_docs::{ChangesFilter, ReadOptions};
use rhizome_views::filter::{FilterError, JsFilter};
use rhizome_views::index::{index_bytes, index_id, IndexState};
use rhizome_views::{DesignDoc, DesignError, Limits, UpdateMode, ViewError, ViewQuery};
use serde_json::{json, Map, Value};
use std::sync::Arc;

impl From<ViewError> for HttpError {
    fn from(e: ViewError) -> Self {
        match e {
            ViewError::Doc(e) => e.into(),
            ViewError::Design(e) => e.into(),
            ViewError::Process(m) => HttpError::new(500, "os_process_error", m),
            ViewError::Query(m) => HttpError::new(400, "query_parse_error", m),
            ViewError::InvalidValue(m) => HttpError::new(500, "invalid_value", m),
            ViewError::NotFound(m) => HttpError::not_found(m),
        }
    }
}

impl From<DesignError> for HttpError {
    fn from(e: DesignError) -> Self {
        HttpError::new(400, e.error(), e.to_string())
    }
}

/// The limits of design-document functions (see [`Limits::from_env`]).
pub fn limits() -> Limits {
    Limits::from_env()
}

fn design_doc(db: &DbHandle, id: &str) -> Result<DesignDoc, HttpError> {
    let body = db.db.get_doc(id, &ReadOptions::default())?;
    DesignDoc::parse(id, &body)?.ok_or_else(|| HttpError::not_found("missing_named_view"))
}

/// Design documents parsed for view queries, by database and id, each
/// with the handle it was read through and the database's `update_seq`
/// before it was read: while neither changed, the document did not
/// either. Reading, rendering and parsing it was a tenth of a `key=`
/// query's server time.
type ParsedDesignDocs = std::collections::HashMap<(String, String), (std::sync::Weak<DbHandle>, u64, Arc<DesignDoc>)>;
static PARSED_DESIGN_DOCS: std::sync::Mutex<Option<ParsedDesignDocs>> = std::sync::Mutex::new(None);
/// Design documents kept (the map is emptied when it is full).
const PARSED_DESIGN_DOCS_MAX: usize = 256;

fn design_doc_for_query(db: &Arc<DbHandle>, id: &str) -> Result<Arc<DesignDoc>, HttpError> {
    let lock = || PARSED_DESIGN_DOCS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Read before the document: a write after this read moves it, so an
    // entry is never older than its sequence says.
    let seq = db.db.update_seq()?;
    let key = (db.name.clone(), id.to_owned());
    if let Some((handle, at, ddoc)) = lock().as_ref().and_then(|m| m.get(&key)) {
        // The same handle (a database deleted and made again has a new
        // one) at the same sequence.
        if *at == seq && handle.upgrade().is_some_and(|h| Arc::ptr_eq(&h, db)) {
            return Ok(ddoc.clone());
        }
    }
    let ddoc = Arc::new(design_doc(db, id)?);
    let mut map = lock();
    let map = map.get_or_insert_with(Default::default);
    if map.len() >= PARSED_DESIGN_DOCS_MAX {
        map.clear();
    }
    map.insert(key, (Arc::downgrade(db), seq, ddoc.clone()));
    Ok(ddoc)
}

pub fn design_action(req: &Request, ctx: &UserCtx, db: Arc<DbHandle>, ddoc: &str, action: &str, rest: &str) -> Result<Response<Body>, HttpError> {
    match action {
        "_view" => view(req, db, ddoc, rest, None),
        "_update" => super::design_functions::update(req, ctx, &db, ddoc, rest),
        "_show" => super::design_functions::show(req, ctx, &db, ddoc, rest),
        "_list" => super::design_functions::list(req, &db, ddoc, rest),
        "_info" => info(req, &db, ddoc),
        "_nouveau" => super::nouveau::search(req, &db, ddoc, rest),
        "_nouveau_info" => super::nouveau::info(req, &db, ddoc, rest),
        "_compact" => {
            if req.method != Method::POST {
                return Err(HttpError::method_not_allowed("POST"));
            }
            super::nouveau::compact(&db, ddoc)?;
            design_doc(&db, ddoc)?;
            Ok(json(202, &json!({ "ok": true })))
        }
        _ => {
            if !matches!(req.method, Method::GET | Method::HEAD | Method::POST) {
                return Err(HttpError::method_not_allowed("GET,HEAD,POST"));
            }
            db.db.get_doc(ddoc, &ReadOptions::default())?;
            Err(HttpError::not_found(format!("missing function {} {rest} on design doc {ddoc}", &action[1..])))
        }
    }
}

/// `/_view/...` of a design document; `partition` when the path is
/// `/{db}/_partition/{p}/_design/...` (a `partition` in the query string
/// or body must then be the same, as CouchDB's `chttpd_view` checks).
pub(crate) fn view(req: &Request, db: Arc<DbHandle>, ddoc_id: &str, rest: &str, partition: Option<&str>) -> Result<Response<Body>, HttpError> {
    let (name, queries) = match rest.split_once('/') {
        Some((name, "queries")) => (name, true),
        Some(_) => return Err(HttpError::not_found("missing_named_view")),
        None => (rest, false),
    };
    let body = match req.method {
        Method::GET | Method::HEAD if !queries => None,
        Method::POST => Some(req.json_object()?),
        _ => return Err(HttpError::method_not_allowed(if queries { "POST" } else { "GET,HEAD,POST" })),
    };
    let params: Vec<(&str, &str)> = req.query.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut base = ViewQuery::from_params(params)?;
    if let Some(p) = partition {
        if base.partition.as_deref().is_some_and(|given| given != p) {
            return Err(HttpError::bad_request("Conflicting value for `partition` in query string"));
        }
        base.partition = Some(p.to_owned());
    }
    if let (Some(p), Some(given)) = (partition, body.as_ref().and_then(|b| b.get("partition"))) {
        if given.as_str() != Some(p) {
            return Err(HttpError::bad_request("Conflicting value for `partition` in request body"));
        }
    }
    let ddoc = design_doc_for_query(&db, ddoc_id)?;
    if ddoc.view(name).is_none() {
        return Err(HttpError::not_found("missing_named_view"));
    }
    let run = |q: &ViewQuery| -> Result<String, HttpError> {
        let out = rhizome_views::run_query(&db.db, &db.name, &ddoc, name, q, limits())?;
        if q.update == UpdateMode::Lazy {
            update_later(db.clone(), (*ddoc).clone());
        }
        Ok(out)
    };
    if queries {
        let body = body.unwrap_or_default();
        let list = body.get("queries").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("`queries` member must be an array"))?;
        let mut results = Vec::with_capacity(list.len());
        for item in list {
            let obj = item.as_object().ok_or_else(|| HttpError::bad_request("each query must be an object"))?;
            results.push(run(&base.clone().from_json(obj)?)?);
        }
        let text = format!("{{\"results\":[{}]}}", results.join(","));
        return Ok(crate::http::response(200, "application/json", text.into_bytes().into()));
    }
    let q = match &body {
        Some(b) => base.from_json(b)?,
        None => base,
    };
    // Rows go out as they are read (`crate::stream`).
    let mut out = crate::stream::BodyWriter::new(req, crate::http::response(200, "application/json", bytes::Bytes::new()));
    let answered = rhizome_views::run_query_into(&db.db, &db.name, &ddoc, name, &q, limits(), &mut |piece| {
        use std::io::Write;
        out.write_all(piece).map_err(|e| ViewError::Doc(crate::couch::bulk::gone(e)))
    });
    if let Err(e) = answered {
        return out.fail(e.into());
    }
    if q.update == UpdateMode::Lazy {
        update_later(db.clone(), (*ddoc).clone());
    }
    out.finish()
}

/// `update=lazy`: the index catches up after the answer.
fn update_later(db: Arc<DbHandle>, ddoc: DesignDoc) {
    std::thread::spawn(move || {
        if let Err(e) = rhizome_views::refresh(&db.db, &db.name, &ddoc, limits()) {
            eprintln!("{}", json!({ "log": "lazy view update failed", "db": db.name, "ddoc": ddoc.id, "error": e.to_string() }));
        }
    });
}

fn info(req: &Request, db: &DbHandle, ddoc_id: &str) -> Result<Response<Body>, HttpError> {
    if !matches!(req.method, Method::GET | Method::HEAD) {
        return Err(HttpError::method_not_allowed("GET,HEAD"));
    }
    let body = db.db.get_doc(ddoc_id, &ReadOptions::default())?;
    if let Some(mango) = db.db.mango_design_info(ddoc_id, &body)? {
        return Ok(json(200, &info_json(ddoc_id, &mango.signature, "query", mango.bytes, mango.seen, mango.update_seq, false)));
    }
    let ddoc = DesignDoc::parse(ddoc_id, &body)?.ok_or_else(|| HttpError::not_found("missing_named_view"))?;
    let id = index_id(&ddoc);
    let state = {
        let s = db.db.store().snapshot().map_err(|e| HttpError::internal(e.to_string()))?;
        IndexState::read(s.kv(), &id)?.unwrap_or_default()
    };
    let bytes = index_bytes(&db.db, &id)?;
    let update_seq = db.db.update_seq()?;
    let running = rhizome_views::tasks::active_tasks().iter().any(|t| t["database"] == db.name.as_str() && t["design_document"] == ddoc_id);
    Ok(json(200, &info_json(ddoc_id, &ddoc.signature(), &ddoc.language, bytes, state.seq, update_seq, running)))
}

/// The body of `_info`, in CouchDB's shape.
fn info_json(ddoc_id: &str, signature: &[u8; 16], language: &str, bytes: u64, seen: u64, update_seq: u64, running: bool) -> Value {
    let signature: String = signature.iter().map(|b| format!("{b:02x}")).collect();
    let pending = update_seq.saturating_sub(seen);
    json!({
        "name": ddoc_id.trim_start_matches("_design/"),
        "view_index": {
            "signature": signature,
            "language": language,
            "sizes": { "file": bytes, "active": bytes, "external": bytes },
            "update_seq": seen,
            "purge_seq": 0,
            "updater_running": running,
            "compact_running": false,
            "waiting_clients": 0,
            "waiting_commit": false,
            "collator_versions": [],
            "updates_pending": { "minimum": pending, "preferred": pending, "total": pending },
        }
    })
}

/// Every design document of the database (JavaScript ones).
pub fn design_docs(db: &DbHandle) -> Result<Vec<DesignDoc>, HttpError> {
    Ok(rhizome_views::validate::design_docs(&db.db)?)
}

/// `POST /{db}/_view_cleanup`: drops indexes no design document uses.
pub fn cleanup(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let live = design_docs(db)?;
    rhizome_views::index::cleanup(&db.db, &live)?;
    super::nouveau::cleanup(db)?;
    Ok(json(202, &json!({ "ok": true })))
}

/// `_changes?filter=ddoc/name` (a design document's filter function) and
/// `filter=_view&view=ddoc/view` (documents the view's map emits for).
pub fn changes_filter(req: &Request, ctx: &UserCtx, db: &DbHandle, name: &str, body: Option<&Map<String, Value>>) -> Result<ChangesFilter, HttpError> {
    let (ddoc_name, function, is_view) = if name == "_view" {
        let view = req.param("view").ok_or_else(|| HttpError::bad_request("filter=_view needs view=ddoc/view"))?;
        let (d, v) = view.split_once('/').ok_or_else(|| HttpError::bad_request("`view` must be of the form `designname/viewname`"))?;
        (d, v, true)
    } else {
        let (d, f) = name.split_once('/').ok_or_else(|| HttpError::bad_request("`filter` must be of the form `designname/filtername`"))?;
        (d, f, false)
    };
    let ddoc_id = format!("_design/{ddoc_name}");
    let body_doc = db.db.get_doc(&ddoc_id, &ReadOptions::default())?;
    let ddoc = DesignDoc::parse(&ddoc_id, &body_doc)?.ok_or_else(|| HttpError::not_found("missing"))?;
    let filter = if is_view {
        JsFilter::view(ddoc, function, limits())
    } else {
        JsFilter::function(ddoc, function, request_object(req, ctx, db, body)?, limits())
    }
    .map_err(|e| match e {
        FilterError::Missing(reason) => HttpError::not_found(reason),
        FilterError::Design(e) => e.into(),
    })?;
    filter.check()?;
    Ok(ChangesFilter::Custom(Arc::new(filter)))
}

/// The request object CouchDB gives filter functions (`chttpd_external`).
pub(crate) fn request_object(req: &Request, ctx: &UserCtx, db: &DbHandle, body: Option<&Map<String, Value>>) -> Result<Value, HttpError> {
    let query: Map<String, Value> = req.query.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    let headers: Map<String, Value> = req
        .headers
        .iter()
        .filter(|(k, _)| k.as_str() != "authorization" && k.as_str() != "cookie")
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), Value::String(v.to_str().ok()?.to_owned()))))
        .collect();
    Ok(json!({
        "info": { "db_name": db.name, "update_seq": db.db.update_seq()? },
        "id": null,
        "method": req.method.as_str(),
        "path": req.segments,
        "query": query,
        "headers": headers,
        "body": body.map_or(Value::String("undefined".into()), |b| Value::String(Value::Object(b.clone()).to_string())),
        "peer": req.peer.map(|p| p.to_string()),
        "form": {},
        "cookie": {},
        "userCtx": { "db": db.name, "name": ctx.name, "roles": ctx.roles },
        "secObj": db.db.security()?,
    }))
}
