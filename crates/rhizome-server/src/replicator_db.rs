//! The `_replicator` database: a document `{"source", "target",
//! "continuous"?, "create_target"?, "doc_ids"? | "selector"?}` is a
//! replication the server runs while the document exists, again after every
//! restart (checkpoints make a finished one a quick no-op). Changing the
//! document's replication members restarts it; deleting the document stops
//! it. States are kept in memory and shown by `GET /_scheduler/docs`; as
//! in CouchDB 3, a one-shot replication that completes writes
//! `_replication_state: "completed"` (with its time and stats) into its
//! document, and a document in that state is not run again (after a
//! restart too, and whatever else changes) until a writer removes it. A document whose members cannot make a replication (no
//! source, `continuous` not a boolean, `doc_ids` not an array...) is
//! refused when written (403 `forbidden`, CouchDB's `_replicator` rules).
//!
//! A replication runs with its document's writer's rights, as CouchDB's
//! (`owner`): a user who is not a server admin writes a document stamped
//! with their name, may change only their own documents, and their
//! replication reads and writes only the databases they may read and
//! write, with the rights they have there (a member's replication writes
//! no design document). Documents written by server admins without an
//! `owner` run as a server admin.

use crate::auth::UserCtx;
use crate::couch::replicate::{endpoint, filter, flag, spawn_job, Running, POLL};
use crate::error::HttpError;
use crate::http::json;
use crate::state::{DbHandle, Server};
use rhizome_docs::{ChangesOptions, DocError, ReadOptions};
use rhizome_replication::{replication_id, Endpoint, Options};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const REPLICATOR_DB: &str = "_replicator";

/// The members of a `_replicator` document that define its replication.
const SPEC_MEMBERS: &[&str] = &["source", "target", "continuous", "create_target", "doc_ids", "selector", "filter", "query_params", "owner"];

/// Stamps a `_replicator` document written by `ctx` with its owner, or
/// refuses it: a user who is not a server admin owns the documents they
/// write and may change no one else's (`current`: the stored winner).
pub(crate) fn stamp_owner(ctx: &UserCtx, doc: &mut Map<String, Value>, current: Option<&Map<String, Value>>) -> Result<(), HttpError> {
    if ctx.is_server_admin() {
        return Ok(());
    }
    let name = ctx.name.clone().ok_or_else(|| HttpError::unauthorized("You are not authorized to access this db."))?;
    if let Some(current) = current {
        if current.get("owner").and_then(Value::as_str) != Some(name.as_str()) {
            return Err(HttpError::forbidden("Only the owner of a replication document, or a server admin, may change it."));
        }
    }
    if doc.get("owner").is_some_and(|o| o.as_str() != Some(name.as_str())) {
        return Err(HttpError::forbidden(format!("A replication document's owner is its writer: {name}.")));
    }
    doc.insert("owner".into(), Value::String(name));
    Ok(())
}

/// The members of a `_replicator` document that define its replication.
fn spec_of(doc: &Map<String, Value>) -> Map<String, Value> {
    doc.iter().filter(|(k, _)| SPEC_MEMBERS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// CouchDB's `_replicator` validation: a live document (not deleted, not a
/// design document) must define a replication whose members are well
/// formed; the reason otherwise (answered as 403 `forbidden`).
pub(crate) fn spec_refusal(doc: &Map<String, Value>) -> Option<rhizome_docs::DocError> {
    let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default();
    if doc.get("_deleted") == Some(&Value::Bool(true)) || id.starts_with("_design/") {
        return None;
    }
    let problem = ["source", "target"]
        .into_iter()
        .find(|k| !matches!(doc.get(*k), Some(Value::String(_) | Value::Object(_))))
        .map(|k| format!("a replication document needs a {k} (a URL, or an object with a url)"))
        .or_else(|| ["continuous", "create_target"].into_iter().find_map(|k| flag(doc, k).err().map(|e| e.reason)))
        .or_else(|| filter(doc).err().map(|e| e.reason))?;
    Some(rhizome_docs::DocError::Coded { status: 403, error: "forbidden", reason: problem })
}

/// What the server knows of one `_replicator` document's replication.
pub struct DocJob {
    spec: Value,
    /// Tells a finished job's callbacks apart from its successor's.
    generation: u64,
    job: Option<Arc<Running>>,
    state: &'static str,
    info: Value,
    id: Option<String>,
    source: String,
    target: String,
    /// When the document's job was made, and last changed (seconds).
    start_time: u64,
    last_updated: u64,
}

#[derive(Default)]
pub struct DocJobs {
    jobs: Mutex<HashMap<String, DocJob>>,
    generations: std::sync::atomic::AtomicU64,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Starts the thread that follows `_replicator` until the server stops.
pub fn start(server: Arc<Server>) {
    let spawned = std::thread::Builder::new().name("replicator".into()).spawn(move || {
        // The database followed, and how far: a database deleted and made
        // again is another handle, read from the start.
        let mut followed: Weak<DbHandle> = Weak::new();
        let mut since = 0;
        while !*server.shutdown.borrow() {
            let handle = server.db(REPLICATOR_DB).ok().flatten();
            if !handle.as_ref().is_some_and(|h| Weak::ptr_eq(&followed, &Arc::downgrade(h))) {
                // Gone or new: every job is checked against the database now.
                followed = handle.as_ref().map(Arc::downgrade).unwrap_or_default();
                since = 0;
                let ids: Vec<String> = server.replicator_docs.jobs.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
                for id in ids {
                    reconcile(&server, &id);
                }
            }
            // The handle's sequence moves with every commit: read the store
            // only when it did.
            if let Some(handle) = handle.filter(|h| since == 0 || *h.seq.borrow() != since) {
                match handle.db.changes(&ChangesOptions { since, ..Default::default() }) {
                    Ok(changes) => {
                        for row in &changes.rows {
                            if let Some(id) = row.get("id").and_then(Value::as_str) {
                                reconcile(&server, id);
                            }
                        }
                        since = changes.last_seq;
                    }
                    Err(e) => eprintln!("{}", json!({ "replicator": "reading _replicator", "error": e.to_string() })),
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    if let Err(e) = spawned {
        eprintln!("{}", json!({ "replicator": "cannot start", "error": e.to_string() }));
    }
}

/// Brings the replication of document `id` in line with the document.
fn reconcile(server: &Arc<Server>, id: &str) {
    let doc = match server.db(REPLICATOR_DB) {
        Ok(Some(handle)) => match handle.db.get_doc(id, &ReadOptions::default()) {
            Ok(doc) => Some(doc),
            Err(DocError::NotFound(_)) => None,
            Err(e) => return eprintln!("{}", json!({ "replicator": id, "error": e.to_string() })),
        },
        _ => None,
    };
    let doc = doc.filter(|_| !id.starts_with("_design/"));
    // A one-shot replication that completed, as its document records.
    let completed = doc.as_ref().filter(|d| d.get("_replication_state").and_then(Value::as_str) == Some("completed")).map(|d| {
        let mut stats = d.get("_replication_stats").cloned().unwrap_or(Value::Null);
        if let Value::Object(m) = &mut stats {
            m.remove("start_time");
        }
        let time = d.get("_replication_state_time").and_then(Value::as_str).map(str::to_owned);
        (stats, time)
    });
    let spec = doc.as_ref().map(spec_of);
    let jobs = &server.replicator_docs;
    let old = {
        let map = jobs.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(id).is_some_and(|j| spec.as_ref().is_some_and(|s| j.spec == Value::Object(s.clone())) && (j.state == "completed") == completed.is_some()) {
            return; // Another member changed; the replication did not.
        }
        map.get(id).and_then(|j| j.job.clone())
    };
    // Stopped before it leaves the list, so a client that sees it gone
    // knows it copies nothing more.
    if let Some(job) = old {
        job.stop();
    }
    jobs.jobs.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    let Some(spec) = spec else { return };
    let generation = jobs.generations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // In the map before the job starts, so its first callbacks find it.
    let entry = DocJob {
        spec: Value::Object(spec.clone()),
        generation,
        job: None,
        state: "running",
        info: Value::Null,
        id: None,
        source: String::new(),
        target: String::new(),
        start_time: now(),
        last_updated: now(),
    };
    if let Some((stats, _)) = completed {
        // Listed as done, not run again (CouchDB's scheduler does the same).
        let mut entry = entry;
        entry.state = "completed";
        entry.info = stats;
        (entry.source, entry.target) = (shown(spec.get("source")), shown(spec.get("target")));
        jobs.jobs.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_owned(), entry);
        return;
    }
    jobs.jobs.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_owned(), entry);
    let started = start_job(server, id, &spec, generation);
    update(server, id, generation, |j| match started {
        Ok((job, rep_id, source, target)) => (j.job, j.id, j.source, j.target) = (Some(job), Some(rep_id), source, target),
        Err(e) => {
            j.state = "failed";
            j.info = json!({ "error": e.error, "reason": e.reason });
        }
    });
}

/// The jobs of documents that have one, by document id.
pub(crate) fn running(server: &Server) -> Vec<(String, Arc<Running>)> {
    let map = server.replicator_docs.jobs.lock().unwrap_or_else(|p| p.into_inner());
    map.iter().filter_map(|(id, j)| j.job.clone().map(|r| (id.clone(), r))).collect()
}

/// Updates document `id`'s job, unless a newer job replaced it.
fn update(server: &Server, id: &str, generation: u64, f: impl FnOnce(&mut DocJob)) {
    let mut map = server.replicator_docs.jobs.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(j) = map.get_mut(id).filter(|j| j.generation == generation) {
        f(j);
        j.last_updated = now();
    }
}

fn start_job(server: &Arc<Server>, id: &str, spec: &Map<String, Value>, generation: u64) -> Result<(Arc<Running>, String, String, String), HttpError> {
    // Its owner's rights (their roles as now stored), or a server admin's.
    let ctx = match spec.get("owner").and_then(Value::as_str) {
        Some(owner) => UserCtx { name: Some(owner.to_owned()), roles: crate::auth::roles_of_user(server, owner)?, method: None },
        None => UserCtx { name: Some(REPLICATOR_DB.into()), roles: vec!["_admin".into()], method: None },
    };
    let member = |k: &str| spec.get(k).ok_or_else(|| HttpError::bad_request(format!("the document has no {k}")));
    let create_target = flag(spec, "create_target")?;
    let source = endpoint(server, &ctx, member("source")?, false)?;
    let target = endpoint(server, &ctx, member("target")?, create_target)?;
    let options = Options { continuous: flag(spec, "continuous")?, create_target, poll: POLL, filter: filter(spec)?, ..Default::default() };
    let rep_id = replication_id(source.as_ref(), target.as_ref(), options.filter.as_ref());
    let (source_name, target_name) = (source.name(), target.name());
    let job = Arc::new(Running::default());
    let (on_batch, on_end) = ((server.clone(), id.to_owned()), (server.clone(), id.to_owned()));
    spawn_job(
        job.clone(),
        source,
        target,
        options,
        server.shutdown.clone(),
        move |r| {
            let (server, id) = &on_batch;
            update(server, id, generation, |j| {
                j.state = if r.error.is_some() { "crashing" } else { "running" };
                j.info = stats(r);
            });
        },
        move |outcome| {
            let (server, id) = &on_end;
            let mut record = None;
            update(server, id, generation, |j| match outcome {
                Ok(r) => {
                    j.info = stats(&r);
                    j.state = if j.spec.get("continuous") == Some(&Value::Bool(true)) {
                        "stopped"
                    } else {
                        record = Some((j.spec.clone(), j.info.clone(), j.start_time));
                        "completed"
                    };
                }
                Err(e) => {
                    j.state = "failed";
                    j.info = json!({ "error": e.to_string() });
                }
            });
            if let Some((spec, info, start_time)) = record {
                record_completion(server, id, &spec, info, start_time);
            }
        },
    )?;
    Ok((job, rep_id, source_name, target_name))
}

/// An endpoint as `/_scheduler/docs` shows it (a URL's password masked).
fn shown(endpoint: Option<&Value>) -> String {
    let url = match endpoint {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Object(o)) => o.get("url").and_then(Value::as_str).unwrap_or_default(),
        _ => "",
    };
    match url.contains("://") {
        true => rhizome_replication::HttpEndpoint::new(url).map(|e| e.name()).unwrap_or_default(),
        false => url.to_owned(),
    }
}

/// Writes a completed one-shot replication's state into its document, as
/// CouchDB 3 does, unless the document changed its replication meanwhile
/// (its next job records its own end).
fn record_completion(server: &Arc<Server>, id: &str, spec: &Value, mut info: Value, start_time: u64) {
    let Ok(Some(handle)) = server.db(REPLICATOR_DB) else { return };
    let admin = UserCtx { name: Some(REPLICATOR_DB.into()), roles: vec!["_admin".into()], method: None };
    // A writer's concurrent edit of another member: read again and retry.
    for _ in 0..3 {
        let Ok(mut doc) = handle.db.get_doc(id, &ReadOptions::default()) else { return };
        if Value::Object(spec_of(&doc)) != *spec {
            return;
        }
        info["start_time"] = json!(crate::http::iso_time(start_time));
        doc.insert("_replication_state".into(), json!("completed"));
        doc.insert("_replication_state_time".into(), json!(crate::http::iso_time(now())));
        doc.insert("_replication_stats".into(), info.clone());
        match crate::couch::write_docs(&admin, &handle, vec![doc], true) {
            Ok(out) if out.iter().all(|(_, o)| o.is_ok()) => return,
            Ok(out) if out.iter().any(|(_, o)| matches!(o, Err(DocError::Conflict))) => continue,
            Ok(out) => return eprintln!("{}", json!({ "replicator": id, "recording its state": format!("{:?}", out.into_iter().find_map(|(_, o)| o.err())) })),
            Err(e) => return eprintln!("{}", json!({ "replicator": id, "recording its state": e.to_string() })),
        }
    }
}

fn stats(r: &rhizome_replication::Report) -> Value {
    let mut info = json!({
        "source_seq": r.source_last_seq,
        "checkpointed_source_seq": r.source_last_seq,
        "missing_revisions_found": r.missing_found,
        "revisions_checked": r.missing_checked,
        "docs_read": r.docs_read,
        "docs_written": r.docs_written,
        "doc_write_failures": r.doc_write_failures,
    });
    if let Some(e) = &r.error {
        info["error"] = json!(e);
    }
    info
}

/// `GET /_scheduler/docs`: every `_replicator` document's replication.
pub fn scheduler_docs(server: &Server, method: &hyper::Method) -> Result<hyper::Response<crate::http::Body>, HttpError> {
    if *method != hyper::Method::GET {
        return Err(HttpError::method_not_allowed("GET"));
    }
    let docs = scheduled(server);
    Ok(json(200, &json!({ "total_rows": docs.len(), "offset": 0, "docs": docs })))
}

/// Every `_replicator` document's job, as `/_scheduler/docs` lists them.
fn scheduled(server: &Server) -> Vec<Value> {
    let map = server.replicator_docs.jobs.lock().unwrap_or_else(|p| p.into_inner());
    let mut docs: Vec<(&String, &DocJob)> = map.iter().collect();
    docs.sort_by(|a, b| a.0.cmp(b.0));
    docs.into_iter()
        .map(|(doc_id, j)| {
            // Times in ISO 8601, as CouchDB's (Fauxton's replication table
            // reads them with `new Date(...)`); `error_count` counts the
            // errors since the last success, one at most here.
            json!({
                "database": REPLICATOR_DB, "doc_id": doc_id, "id": j.id, "node": crate::couch::node::NODE_NAME,
                "source": j.source, "target": j.target, "state": j.state, "info": j.info,
                "error_count": u32::from(matches!(j.state, "failed" | "crashing")),
                "start_time": crate::http::iso_time(j.start_time),
                "last_updated": crate::http::iso_time(j.last_updated),
            })
        })
        .collect()
}

/// `/_scheduler/docs/{db}` (that replicator database's documents) and
/// `/_scheduler/docs/{db}/{docid}` (one of them; 404 `missing` otherwise,
/// as CouchDB). The one replicator database here is `_replicator`.
pub fn scheduler_doc(server: &Server, method: &hyper::Method, db: &str, doc_id: Option<&str>) -> Result<hyper::Response<crate::http::Body>, HttpError> {
    if *method != hyper::Method::GET {
        return Err(HttpError::method_not_allowed("GET"));
    }
    if db != REPLICATOR_DB {
        return Err(HttpError::not_found("Database does not exist."));
    }
    let docs = scheduled(server);
    match doc_id {
        None => Ok(json(200, &json!({ "total_rows": docs.len(), "offset": 0, "docs": docs }))),
        Some(id) => docs.into_iter().find(|d| d["doc_id"] == id).map(|d| json(200, &d)).ok_or_else(|| HttpError::not_found("missing")),
    }
}
