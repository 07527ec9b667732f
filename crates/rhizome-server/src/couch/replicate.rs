//! `POST /_replicate`: the server runs CouchDB's replicator
//! (https://docs.couchdb.org/en/stable/api/server/common.html#replicate),
//! one-shot (answered when done, with CouchDB's history) or continuous (a
//! background thread until `"cancel": true` or the server stops). Each
//! endpoint is a database of this server, or a URL of any CouchDB-compatible
//! server. For server admins only, as the endpoints' credentials travel in
//! the request.

use super::write_docs;
use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use rhizome_docs::{Database, WriteOutcome};
use rhizome_replication::{replication_id, Endpoint, Filter, HttpEndpoint, LocalDatabase, LocalEndpoint, Options, Report};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A replication running on its own thread.
#[derive(Default)]
pub struct Running {
    stop: AtomicBool,
    done: Mutex<bool>,
    finished: Condvar,
    /// Its `_active_tasks` entry, updated after every batch.
    task: Mutex<Value>,
}

impl Running {
    /// The `_active_tasks` entry while it runs.
    pub(crate) fn task(&self) -> Option<Value> {
        let done = *self.done.lock().unwrap_or_else(|p| p.into_inner());
        (!done).then(|| self.task.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// Asks the replication to stop and waits until it has (it notices
    /// within one wait for changes).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.finished.wait_timeout_while(done, Duration::from_secs(60), |d| !*d);
    }

    fn finish(&self) {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.finished.notify_all();
    }
}

/// How long a continuous replication run by the server waits for changes
/// before it checks whether it was cancelled.
pub(crate) const POLL: Duration = Duration::from_secs(1);

/// A database of this server, written through the server's own write path.
struct Served {
    handle: Arc<DbHandle>,
    ctx: UserCtx,
}

impl LocalDatabase for Served {
    fn database(&self) -> &Database {
        &self.handle.db
    }

    fn write(&self, docs: Vec<Map<String, Value>>) -> rhizome_replication::Result<Vec<(String, WriteOutcome)>> {
        write_docs(&self.ctx, &self.handle, docs, false)
            .map_err(|e| rhizome_replication::Error::Http { status: e.status, message: format!("{}: {}: {}", self.handle.name, e.error, e.reason) })
    }
}

pub(crate) type Boxed = Box<dyn Endpoint + Send>;

/// An endpoint from its JSON: a database name, a URL, or CouchDB's object
/// form `{"url": ..., "auth": {"basic": {"username", "password"}}}` or
/// `{"url": ..., "headers": {"Authorization": ...}}`.
pub(crate) fn endpoint(server: &Server, ctx: &UserCtx, spec: &Value, create: bool) -> Result<Boxed, HttpError> {
    let (url, authorization) = match spec {
        Value::String(s) => (s.clone(), None),
        Value::Object(o) => {
            let url = o.get("url").and_then(Value::as_str).ok_or_else(|| HttpError::bad_request("an endpoint object needs a url"))?.to_owned();
            let basic = o.get("auth").and_then(|a| a.get("basic"));
            let header = o.get("headers").and_then(|h| h.as_object()).and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case("authorization")));
            let authorization = match (basic, header) {
                (Some(b), _) => {
                    let field = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                    Some(format!("Basic {}", base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{}:{}", field("username"), field("password")))))
                }
                (None, Some((_, v))) => Some(v.as_str().ok_or_else(|| HttpError::bad_request("the Authorization header must be a string"))?.to_owned()),
                (None, None) => None,
            };
            (url, authorization)
        }
        _ => return Err(HttpError::bad_request("source and target must be database names or URLs")),
    };
    if url.contains("://") {
        let mut endpoint = HttpEndpoint::new(&url).map_err(|e| HttpError::bad_request(e.to_string()))?;
        endpoint.set_max_answer_bytes(server.max_body_bytes);
        if let Some(a) = authorization {
            endpoint.set_authorization(a);
        }
        return Ok(Box::new(endpoint));
    }
    // A database of this server is read and written with `ctx`'s rights
    // there (a `_replicator` document's owner may be no server admin).
    let handle = match server.db(&url)? {
        Some(h) => h,
        None if create && ctx.is_server_admin() => server.create_db(&url)?,
        None if create => return Err(HttpError::forbidden(format!("only server admins create databases ({url})"))),
        None => return Err(HttpError::not_found(format!("could not open {url}"))),
    };
    crate::auth::access::check(ctx, &crate::auth::access::Access::Member, Some(&handle))?;
    Ok(Box::new(LocalEndpoint::new(Served { handle, ctx: ctx.clone() }, url)))
}

/// A boolean member of a replication request, `false` when absent.
pub(crate) fn flag(body: &Map<String, Value>, k: &str) -> Result<bool, HttpError> {
    match body.get(k) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(HttpError::bad_request(format!("{k} must be a boolean"))),
    }
}

/// The documents a replication request chooses: `doc_ids` or `selector`.
pub(crate) fn filter(body: &Map<String, Value>) -> Result<Option<Filter>, HttpError> {
    let chosen = ["doc_ids", "selector", "filter"].iter().filter(|k| body.contains_key(**k)).count();
    if chosen > 1 {
        return Err(HttpError::bad_request("give one of doc_ids, selector and filter"));
    }
    if let Some(name) = body.get("filter") {
        let name = name.as_str().filter(|n| *n == "_view" || n.contains('/')).ok_or_else(|| HttpError::bad_request("filter must be `designname/filtername` or `_view`"))?;
        let query_params = match body.get("query_params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(q)) => q.clone(),
            Some(_) => return Err(HttpError::bad_request("query_params must be an object")),
        };
        return Ok(Some(Filter::Design { name: name.to_owned(), query_params }));
    }
    Ok(match (body.get("doc_ids"), body.get("selector")) {
        (Some(_), Some(_)) => return Err(HttpError::bad_request("give doc_ids or selector, not both")),
        (Some(Value::Array(ids)), None) => Some(Filter::DocIds(
            ids.iter().map(|i| i.as_str().map(str::to_owned)).collect::<Option<_>>().ok_or_else(|| HttpError::bad_request("doc_ids must hold strings"))?,
        )),
        (Some(_), None) => return Err(HttpError::bad_request("doc_ids must be an array")),
        (None, Some(s @ Value::Object(_))) => Some(Filter::Selector(s.clone())),
        (None, Some(_)) => return Err(HttpError::bad_request("selector must be an object")),
        (None, None) => None,
    })
}

/// A replication failure as CouchDB reports one.
pub(crate) fn failure(e: rhizome_replication::Error) -> HttpError {
    use rhizome_replication::Error;
    match e {
        Error::Address(reason) => HttpError::bad_request(reason),
        Error::Http { status: 404, message } => HttpError::new(404, "db_not_found", message),
        Error::Http { status: status @ (401 | 403), message } => HttpError::new(status, if status == 401 { "unauthorized" } else { "forbidden" }, message),
        other => HttpError::new(500, "replication_failed", other.to_string()),
    }
}

/// CouchDB's answer to a finished one-shot replication.
fn summary(report: &Report) -> Value {
    json!({
        "ok": true,
        "session_id": report.session_id,
        "source_last_seq": report.source_last_seq,
        "replication_id_version": 4,
        "history": [report.history_entry()],
    })
}

pub fn replicate(server: &Server, req: &Request, ctx: &UserCtx) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body = req.json_object()?;
    let (continuous, create_target, cancel) = (flag(&body, "continuous")?, flag(&body, "create_target")?, flag(&body, "cancel")?);
    for unsupported in ["since_seq"] {
        if body.contains_key(unsupported) {
            return Err(HttpError::bad_request(format!("{unsupported} is not supported by this server's replicator yet (doc_ids, selector and filter are)")));
        }
    }
    // CouchDB cancels by the id `_active_tasks` and the answer to the
    // start gave, without source or target: `{"replication_id": ID,
    // "cancel": true}` (with or without its `+continuous`).
    if cancel {
        if let Some(id) = body.get("replication_id") {
            let id = id.as_str().ok_or_else(|| HttpError::bad_request("replication_id must be a string"))?;
            let base = id.strip_suffix("+continuous").unwrap_or(id);
            let local_id = format!("{base}+continuous");
            let replication = server.replications.lock().unwrap_or_else(|p| p.into_inner()).remove(&local_id);
            let Some(replication) = replication else {
                return Err(HttpError::not_found(format!("no continuous replication {local_id} is running")));
            };
            replication.stop();
            return Ok(json(200, &json!({ "ok": true, "_local_id": local_id })));
        }
    }
    let filter = filter(&body)?;
    let spec = |k: &str| body.get(k).ok_or_else(|| HttpError::bad_request(format!("{k} is missing")));
    let source = endpoint(server, ctx, spec("source")?, false)?;
    let target = endpoint(server, ctx, spec("target")?, create_target && !cancel)?;
    let local_id = format!("{}+continuous", replication_id(source.as_ref(), target.as_ref(), filter.as_ref()));
    let mut running = server.replications.lock().unwrap_or_else(|p| p.into_inner());
    if cancel {
        let Some(replication) = running.remove(&local_id) else {
            return Err(HttpError::not_found(format!("no continuous replication {local_id} is running")));
        };
        drop(running);
        replication.stop();
        return Ok(json(200, &json!({ "ok": true, "_local_id": local_id })));
    }
    let options = Options { continuous, create_target, poll: POLL, filter, ..Default::default() };
    if !continuous {
        drop(running);
        let shutdown = server.shutdown.clone();
        let report = rhizome_replication::replicate(source.as_ref(), target.as_ref(), &options, &mut |_| !*shutdown.borrow()).map_err(failure)?;
        return Ok(json(200, &summary(&report)));
    }
    if running.contains_key(&local_id) {
        return Ok(json(202, &json!({ "ok": true, "_local_id": local_id })));
    }
    // Check both ends now, so that a wrong address is the client's error
    // and not only a line in the log.
    source.ensure_exists(false).map_err(failure)?;
    target.ensure_exists(create_target).map_err(failure)?;
    let (registry, id) = (server.replications.clone(), local_id.clone());
    let log_id = local_id.clone();
    let replication = Arc::new(Running::default());
    running.insert(local_id.clone(), replication.clone());
    drop(running);
    let mine = replication.clone();
    spawn_job(
        replication,
        source,
        target,
        options,
        server.shutdown.clone(),
        move |r| {
            if let Some(e) = &r.error {
                eprintln!("{}", json!({ "replication": log_id, "retrying": e }));
            }
        },
        move |outcome| {
            if let Err(e) = outcome {
                eprintln!("{}", json!({ "replication": id, "failed": e.to_string() }));
            }
            let mut running = registry.lock().unwrap_or_else(|p| p.into_inner());
            if running.get(&id).is_some_and(|r| Arc::ptr_eq(r, &mine)) {
                running.remove(&id);
            }
        },
    )?;
    Ok(json(202, &json!({ "ok": true, "_local_id": local_id })))
}

/// Runs a replication on a thread of its own until it ends, `job` is
/// stopped or the server shuts down; `progress` sees every batch, `end` the
/// outcome (by then `job` counts as finished).
pub(crate) fn spawn_job(
    job: Arc<Running>,
    source: Boxed,
    target: Boxed,
    options: Options,
    shutdown: tokio::sync::watch::Receiver<bool>,
    mut progress: impl FnMut(&Report) + Send + 'static,
    end: impl FnOnce(rhizome_replication::Result<Report>) + Send + 'static,
) -> Result<(), HttpError> {
    let started_on = now();
    // CouchDB names each task by its Erlang process; Fauxton's active tasks
    // screen shows it (and fails on a task without one). Replications
    // count in their own sequence, `<0.N.1>`, apart from index builds'
    // `<0.N.0>`.
    static JOBS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let pid = format!("<0.{}.1>", JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    *job.task.lock().unwrap_or_else(|p| p.into_inner()) = json!({
        "type": "replication", "node": crate::couch::node::NODE_NAME, "pid": pid, "source": source.name(), "target": target.name(),
        "continuous": options.continuous, "started_on": started_on, "updated_on": started_on,
        "replication_id": replication_id(source.as_ref(), target.as_ref(), options.filter.as_ref()),
    });
    std::thread::Builder::new()
        .name("replication".into())
        .spawn(move || {
            let outcome = rhizome_replication::replicate(source.as_ref(), target.as_ref(), &options, &mut |r| {
                progress(r);
                let mut task = job.task.lock().unwrap_or_else(|p| p.into_inner());
                for (k, v) in [
                    ("docs_read", json!(r.docs_read)),
                    ("docs_written", json!(r.docs_written)),
                    ("doc_write_failures", json!(r.doc_write_failures)),
                    ("missing_revisions_found", json!(r.missing_found)),
                    ("revisions_checked", json!(r.missing_checked)),
                    ("source_seq", r.source_last_seq.clone()),
                    ("checkpointed_source_seq", r.source_last_seq.clone()),
                    ("updated_on", json!(now())),
                ] {
                    task[k] = v;
                }
                drop(task);
                !job.stop.load(Ordering::Relaxed) && !*shutdown.borrow()
            });
            // Finished as soon as nothing more is copied; `end` only keeps books.
            job.finish();
            end(outcome);
        })
        .map(drop)
        .map_err(|e| HttpError::internal(format!("cannot start the replication: {e}")))
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// `GET /_active_tasks`: the replications running now, continuous ones of
/// `/_replicate` and those of `_replicator` documents (this server has no
/// other background tasks: indexes are kept in the write, compaction runs
/// in the request).
pub fn active_tasks(server: &Server, method: &Method) -> Result<Response<Body>, HttpError> {
    if *method != Method::GET {
        return Err(HttpError::method_not_allowed("GET"));
    }
    let mut tasks: Vec<Value> = server.replications.lock().unwrap_or_else(|p| p.into_inner()).values().filter_map(|r| r.task()).collect();
    tasks.extend(crate::replicator_db::running(server).into_iter().filter_map(|(doc_id, r)| {
        let mut task = r.task()?;
        task["database"] = json!(crate::replicator_db::REPLICATOR_DB);
        task["doc_id"] = json!(doc_id);
        Some(task)
    }));
    tasks.extend(rhizome_views::tasks::active_tasks());
    Ok(json(200, &Value::Array(tasks)))
}
