//! The node and scheduler endpoints of CouchDB 3 that clients and
//! consoles read (https://docs.couchdb.org/en/stable/api/server/common.html):
//! `/_membership`, `/_node/{name}` with `_config` and `_stats`,
//! `/_scheduler/jobs` and `/_scheduler/docs/{db}[/{docid}]`. Rhizome is one
//! node, [`NODE_NAME`], also reachable as `_local`.
//!
//! `_config` shows the settings the server runs with, in CouchDB's
//! sections and names where CouchDB has one (`[chttpd] port`, `[cors]
//! origins`, `[chttpd_auth] timeout`...), as strings as CouchDB keeps
//! them. They are `rhizome serve`'s options, fixed for the process: a
//! `PUT` or `DELETE` is a 405 that says which option to use.
//!
//! `_stats` counts requests by method and by status code since the start
//! (`couchdb.httpd_request_methods`, `couchdb.httpd_status_codes`,
//! `couchdb.httpd.requests`), each `{"value", "type": "counter", "desc"}`
//! as CouchDB writes them, plus the open databases. `_prometheus` gives
//! the same counters, the open databases and the uptime in Prometheus's
//! text format under CouchDB's metric names (`couchdb_httpd_requests_total`,
//! ...), and `_system` the uptime and the process's resident memory (the
//! rest of CouchDB's `_system` describes its Erlang VM).

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::Server;
use hyper::{Method, Response};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// This node's name in `_membership` and `/_node/{name}`.
pub const NODE_NAME: &str = "rhizome@localhost";

const METHODS: &[&str] = &["COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
const STATUSES: &[u16] = &[200, 201, 202, 204, 206, 301, 304, 400, 401, 403, 404, 405, 406, 409, 412, 413, 415, 416, 417, 500, 501, 503];

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static BY_METHOD: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static BY_STATUS: [AtomicU64; 22] = [const { AtomicU64::new(0) }; 22];

/// Counts one answered request (called for every answer, `lib.rs`).
pub fn count(method: &Method, status: u16) {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
    if let Some(i) = METHODS.iter().position(|m| *m == method.as_str()) {
        BY_METHOD[i].fetch_add(1, Ordering::Relaxed);
    }
    if let Some(i) = STATUSES.iter().position(|s| *s == status) {
        BY_STATUS[i].fetch_add(1, Ordering::Relaxed);
    }
}

fn counter(value: u64, desc: String) -> Value {
    json!({ "value": value, "type": "counter", "desc": desc })
}

/// `GET /_membership`.
pub fn membership(req: &Request) -> Result<Response<Body>, HttpError> {
    only_get(req)?;
    Ok(json(200, &json!({ "all_nodes": [NODE_NAME], "cluster_nodes": [NODE_NAME] })))
}

fn only_get(req: &Request) -> Result<(), HttpError> {
    if matches!(req.method, Method::GET | Method::HEAD) {
        Ok(())
    } else {
        Err(HttpError::method_not_allowed("GET,HEAD"))
    }
}

/// `/_node/{name}/...` (`rest` after the name).
pub fn node(server: &Server, req: &Request, name: &str, rest: &[String]) -> Result<Response<Body>, HttpError> {
    if name != "_local" && name != NODE_NAME {
        return Err(HttpError::not_found(format!("no node {name}: this server is one node, {NODE_NAME} (or _local)")));
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match rest.as_slice() {
        [] => {
            only_get(req)?;
            Ok(json(200, &json!({ "name": NODE_NAME })))
        }
        ["_config", path @ ..] => config(server, req, path),
        ["_stats", path @ ..] => stats(server, req, path),
        ["_prometheus"] => prometheus(server, req),
        ["_system"] => {
            only_get(req)?;
            Ok(json(200, &json!({ "uptime": server.uptime_secs(), "memory": { "resident": resident_bytes() } })))
        }
        ["_versions"] => {
            only_get(req)?;
            Ok(json(200, &json!({ "rhizome": { "version": env!("CARGO_PKG_VERSION") } })))
        }
        _ => Err(HttpError::not_found(format!("no such node endpoint: /_node/{name}/{}", rest.join("/")))),
    }
}

fn config(server: &Server, req: &Request, path: &[&str]) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => {}
        Method::PUT | Method::DELETE => {
            return Err(HttpError::new(
                405,
                "method_not_allowed",
                "this server's settings are the options of `rhizome serve` (see rhizome serve --help: --enable-cors, --cors-origins, --session-timeout-secs, ...); start it again with the ones wanted",
            ))
        }
        _ => return Err(HttpError::method_not_allowed("GET,HEAD")),
    }
    let all = &server.node_config;
    let unknown = || HttpError::not_found("unknown_config_value");
    Ok(match path {
        [] => json(200, all),
        [section] => json(200, all.get(*section).cloned().as_ref().unwrap_or(&json!({}))),
        [section, key] => json(200, all.get(*section).and_then(|s| s.get(*key)).ok_or_else(unknown)?),
        _ => return Err(unknown()),
    })
}

fn stats(server: &Server, req: &Request, path: &[&str]) -> Result<Response<Body>, HttpError> {
    only_get(req)?;
    let mut methods = Map::new();
    for (i, m) in METHODS.iter().enumerate() {
        methods.insert((*m).to_owned(), counter(BY_METHOD[i].load(Ordering::Relaxed), format!("number of HTTP {m} requests")));
    }
    let mut statuses = Map::new();
    for (i, s) in STATUSES.iter().enumerate() {
        statuses.insert(s.to_string(), counter(BY_STATUS[i].load(Ordering::Relaxed), format!("number of HTTP {s} responses")));
    }
    let open = server.open_databases() as u64;
    let all = json!({
        "couchdb": {
            "httpd": { "requests": counter(REQUESTS.load(Ordering::Relaxed), "number of HTTP requests".into()) },
            "httpd_request_methods": methods,
            "httpd_status_codes": statuses,
            "open_databases": { "value": open, "type": "gauge", "desc": "number of open databases" },
        }
    });
    let mut at = &all;
    for part in path {
        at = at.get(*part).ok_or_else(|| HttpError::not_found("unknown stat"))?;
    }
    Ok(json(200, at))
}

/// `GET /_node/{name}/_prometheus`: `_stats`'s counters as Prometheus
/// scrapes them (text format 0.0.4), named as CouchDB 3.5 names them.
fn prometheus(server: &Server, req: &Request) -> Result<Response<Body>, HttpError> {
    use std::fmt::Write;
    only_get(req)?;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &mut dyn Iterator<Item = (String, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    metric("couchdb_httpd_requests_total", "counter", "number of HTTP requests", &mut std::iter::once((String::new(), REQUESTS.load(Ordering::Relaxed))));
    metric(
        "couchdb_httpd_request_methods",
        "counter",
        "number of HTTP requests by method",
        &mut METHODS.iter().zip(&BY_METHOD).map(|(m, n)| (format!("{{method=\"{m}\"}}"), n.load(Ordering::Relaxed))),
    );
    metric(
        "couchdb_httpd_status_codes",
        "counter",
        "number of HTTP responses by status code",
        &mut STATUSES.iter().zip(&BY_STATUS).map(|(s, n)| (format!("{{code=\"{s}\"}}"), n.load(Ordering::Relaxed))),
    );
    metric("couchdb_open_databases", "gauge", "number of open databases", &mut std::iter::once((String::new(), server.open_databases() as u64)));
    metric("couchdb_uptime_seconds", "counter", "uptime", &mut std::iter::once((String::new(), server.uptime_secs())));
    Ok(crate::http::response(200, "text/plain; version=0.0.4; charset=utf-8", out.into()))
}

/// This process's resident memory in bytes (Linux's `/proc/self/statm`;
/// null elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// A job's source or target as CouchDB's scheduler shows it: a URL ending
/// in `/` (Fauxton cuts the last character off to name the database). A
/// database of this server, named without a URL (CouchDB 3 takes URLs
/// only), is shown at the address the client asked (`host`).
fn job_endpoint(endpoint: Option<&Value>, host: &str) -> Value {
    let Some(url) = endpoint.and_then(Value::as_str) else { return endpoint.cloned().unwrap_or(Value::Null) };
    let url = if url.contains("://") { url.to_owned() } else { format!("http://{host}/{}", url.replace('/', "%2F")) };
    Value::String(if url.ends_with('/') { url } else { url + "/" })
}

/// `GET /_scheduler/jobs`: the running replications, as CouchDB lists them.
pub fn scheduler_jobs(server: &Server, req: &Request) -> Result<Response<Body>, HttpError> {
    only_get(req)?;
    let mut jobs: Vec<Value> = Vec::new();
    let host = req.header("host").unwrap_or("127.0.0.1:5984").to_owned();
    let job = |id: String, task: Value, database: Value, doc_id: Value| {
        let time = |k: &str| task.get(k).and_then(Value::as_u64).map(crate::http::iso_time);
        // CouchDB's history, newest first; Fauxton's "_replicate Activity"
        // tab reads the first entry's type as the job's state.
        let mut history = Vec::new();
        if let Some(updated) = time("updated_on") {
            history.push(json!({ "timestamp": updated, "type": "started" }));
        }
        if let Some(started) = time("started_on") {
            history.push(json!({ "timestamp": started, "type": "added" }));
        }
        json!({
            "id": id, "database": database, "doc_id": doc_id, "node": NODE_NAME,
            "source": job_endpoint(task.get("source"), &host),
            "target": job_endpoint(task.get("target"), &host),
            "pid": Value::Null, "user": Value::Null, "start_time": time("started_on"),
            "history": history, "info": task,
        })
    };
    for (id, running) in server.replications.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        if let Some(task) = running.task() {
            jobs.push(job(id.clone(), task, Value::Null, Value::Null));
        }
    }
    for (doc_id, running) in crate::replicator_db::running(server) {
        if let Some(task) = running.task() {
            let id = task.get("replication_id").and_then(Value::as_str).map(|r| format!("{r}+continuous")).unwrap_or_else(|| doc_id.clone());
            jobs.push(job(id, task, json!(crate::replicator_db::REPLICATOR_DB), json!(doc_id)));
        }
    }
    let skip = req.number("skip")?.unwrap_or(0) as usize;
    let limit = req.number("limit")?.map_or(usize::MAX, |n| n as usize);
    let total = jobs.len();
    let jobs: Vec<Value> = jobs.into_iter().skip(skip).take(limit).collect();
    Ok(json(200, &json!({ "total_rows": total, "offset": skip, "jobs": jobs })))
}
