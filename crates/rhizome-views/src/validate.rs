//! `validate_doc_update`: every design document's validation function runs
//! on every write of a document that is not a design or `_local` one,
//! replicated writes included, as `fn(newDoc, oldDoc, userCtx, secObj)`
//! (`couch_query_servers:validate_doc_update`). Throwing `{forbidden: m}`
//! refuses the write with 403, `{unauthorized: m}` with 401; anything else
//! thrown is CouchDB's 500 `unknown_error`.

use crate::design::{check_design_doc, compilation, DesignDoc, DesignError};
use crate::js::{describe, FnId, JsError, Limits, Sandbox};
use rhizome_docs::{AllDocsOptions, Database, DocError, EmptiedGraphs, ReadOptions, WriteOutcome, Writer};
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};

/// Why a validation function refused a write.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    Forbidden(String),
    Unauthorized(String),
    /// Thrown as something else, or past the sandbox's limits.
    Failed { error: &'static str, reason: String },
}

impl Rejection {
    /// CouchDB's status and error name.
    pub fn status_and_error(&self) -> (u16, &'static str) {
        match self {
            Rejection::Forbidden(_) => (403, "forbidden"),
            Rejection::Unauthorized(_) => (401, "unauthorized"),
            Rejection::Failed { error, .. } => (500, error),
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Rejection::Forbidden(r) | Rejection::Unauthorized(r) | Rejection::Failed { reason: r, .. } => r,
        }
    }
}

/// The validation functions of a database's design documents, compiled.
pub struct Validators {
    sandbox: Sandbox,
    fns: Vec<FnId>,
}

impl Validators {
    /// `None` when no design document has a validation function.
    pub fn new(ddocs: &[DesignDoc], limits: Limits) -> Result<Option<Validators>, DesignError> {
        let sources: Vec<(&DesignDoc, &str)> = ddocs.iter().filter_map(|d| Some((d, d.validate_doc_update()?))).collect();
        if sources.is_empty() {
            return Ok(None);
        }
        let mut sandbox = Sandbox::new(limits).map_err(|e| DesignError::Compilation(e.to_string()))?;
        let mut fns = Vec::with_capacity(sources.len());
        for (d, src) in sources {
            fns.push(sandbox.compile(src, &d.body).map_err(|e| compilation("validate_doc_update", &d.id, e))?);
        }
        Ok(Some(Validators { sandbox, fns }))
    }

    /// The check a write path runs on each new revision it makes (`new`,
    /// and the winner it replaces): design and `_local` documents pass
    /// unchecked, as in CouchDB; a refusal becomes the write's error, named
    /// by the document's id.
    pub fn check_revision(&mut self, new: &Map<String, Value>, old: Option<&Map<String, Value>>, user_ctx: &Value, sec_obj: &Value) -> Result<(), DocError> {
        let id = new.get("_id").and_then(Value::as_str).unwrap_or_default();
        if id.starts_with("_design/") || id.starts_with("_local/") {
            return Ok(());
        }
        let old = old.map_or(Value::Null, |o| Value::Object(o.clone()));
        self.check(&Value::Object(new.clone()), &old, user_ctx, sec_obj).map_err(|r| {
            let (status, error) = r.status_and_error();
            DocError::Coded { status, error, reason: format!("{id}: {}", r.reason()) }
        })
    }

    /// Runs every function on one write; the first refusal.
    pub fn check(&mut self, new_doc: &Value, old_doc: &Value, user_ctx: &Value, sec_obj: &Value) -> Result<(), Rejection> {
        for f in &self.fns {
            match self.sandbox.call(*f, &[new_doc.clone(), old_doc.clone(), user_ctx.clone(), sec_obj.clone()]) {
                Ok(_) => {}
                Err(JsError::Thrown(Value::Object(m))) => {
                    return Err(match (m.get("forbidden"), m.get("unauthorized")) {
                        (Some(r), _) => Rejection::Forbidden(describe(r)),
                        (None, Some(r)) => Rejection::Unauthorized(describe(r)),
                        _ => Rejection::Failed { error: "unknown_error", reason: m.values().next().map(describe).unwrap_or_default() },
                    })
                }
                Err(JsError::Thrown(other)) => return Err(Rejection::Failed { error: "unknown_error", reason: describe(&other) }),
                Err(e) => return Err(Rejection::Failed { error: "os_process_error", reason: e.to_string() }),
            }
        }
        Ok(())
    }
}

/// Every design document of the database (JavaScript ones).
pub fn design_docs(db: &Database) -> Result<Vec<DesignDoc>, DocError> {
    if !db.may_have_design_docs() {
        return Ok(Vec::new());
    }
    let opts = AllDocsOptions { start_key: Some("_design/".into()), end_key: Some("_design0".into()), inclusive_end: false, include_docs: true, ..Default::default() };
    let mut out = Vec::new();
    for row in db.all_docs(&opts)?.rows {
        let (Some(id), Some(Value::Object(doc))) = (row.get("id").and_then(Value::as_str), row.get("doc")) else { continue };
        if let Ok(Some(d)) = DesignDoc::parse(id, doc) {
            out.push(d);
        }
    }
    Ok(out)
}

/// What the database's design documents refuse of a batch of document
/// writes, one entry per document (`None`: it may be written), as CouchDB
/// checks before writing: a design document whose functions do not
/// compile (400), and a write that a `validate_doc_update` function
/// refuses (403, 401, or 500 for anything else thrown). Every door that
/// writes documents (HTTP, replication, Python) asks this first, so a
/// database's rules hold whichever door a write comes through.
/// `user_ctx` is CouchDB's `userCtx` of the writer.
pub fn refusals(db: &Database, user_ctx: &Value, docs: &[Map<String, Value>], limits: Limits) -> Result<Vec<Option<DocError>>, DocError> {
    let id_of = |d: &Map<String, Value>| d.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let coded = |e: DesignError| DocError::Coded { status: 400, error: e.error(), reason: e.to_string() };
    let mut refused: Vec<Option<DocError>> = docs
        .iter()
        .map(|doc| {
            let id = id_of(doc);
            if !id.starts_with("_design/") || doc.get("_deleted").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            // A partitioned design document needs a partitioned database.
            if !db.is_partitioned() && doc.get("options").and_then(|o| o.get("partitioned")) == Some(&Value::Bool(true)) {
                return Some(coded(DesignError::Invalid("partitioned option cannot be true in a non-partitioned database.".into())));
            }
            check_design_doc(&id, doc).err().map(coded)
        })
        .collect();
    // Design and `_local` documents are not validated (as CouchDB).
    let validated = |id: &str| !id.starts_with("_design/") && !id.starts_with("_local/");
    if !docs.iter().any(|d| validated(&id_of(d))) {
        return Ok(refused);
    }
    let Some(mut validators) = Validators::new(&design_docs(db)?, limits).map_err(coded)? else { return Ok(refused) };
    let sec_obj = db.security()?;
    for (doc, slot) in docs.iter().zip(refused.iter_mut()) {
        let id = id_of(doc);
        if slot.is_some() || !validated(&id) {
            continue;
        }
        let old = match db.get_doc(&id, &ReadOptions::default()) {
            Ok(d) => Value::Object(d),
            Err(DocError::NotFound(_)) => Value::Null,
            Err(e) => return Err(e),
        };
        if let Err(r) = validators.check(&Value::Object(doc.clone()), &old, user_ctx, &sec_obj) {
            let (status, error) = r.status_and_error();
            *slot = Some(DocError::Coded { status, error, reason: r.reason().to_owned() });
        }
    }
    Ok(refused)
}

/// CouchDB's `userCtx` of a write by the process that opened the folder
/// (`rhizome replicate` into a local database, Python): it owns the files,
/// so it writes as CouchDB's admin would, still under the database's
/// validation functions, which bind admins too.
pub fn owner_ctx(db: &str) -> Value {
    serde_json::json!({ "db": db, "name": Value::Null, "roles": ["_admin"] })
}

/// Writes `docs` through `write` after asking [`refusals`]: the refused
/// documents are not written and get their refusal as their outcome, the
/// others the outcome `write` gives; one outcome per document, in order.
pub fn write_unless_refused<E: From<DocError>>(
    db: &Database,
    user_ctx: &Value,
    docs: Vec<Map<String, Value>>,
    limits: Limits,
    write: impl FnOnce(Vec<Map<String, Value>>) -> Result<Vec<(String, WriteOutcome)>, E>,
) -> Result<Vec<(String, WriteOutcome)>, E> {
    let refused = refusals(db, user_ctx, &docs, limits)?;
    write_except(docs, refused, write)
}

/// Writes the documents not `refused` (one entry per document), and
/// answers every document in order: its refusal or its write's outcome.
pub fn write_except<E>(
    docs: Vec<Map<String, Value>>,
    refused: Vec<Option<DocError>>,
    write: impl FnOnce(Vec<Map<String, Value>>) -> Result<Vec<(String, WriteOutcome)>, E>,
) -> Result<Vec<(String, WriteOutcome)>, E> {
    if refused.iter().all(Option::is_none) {
        return write(docs);
    }
    let ids: Vec<String> = docs.iter().map(|d| d.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned()).collect();
    let accepted: Vec<Map<String, Value>> = docs.into_iter().zip(&refused).filter(|(_, r)| r.is_none()).map(|(d, _)| d).collect();
    let mut written = if accepted.is_empty() { Vec::new() } else { write(accepted)? }.into_iter();
    let mut out = Vec::with_capacity(ids.len());
    for (id, r) in ids.into_iter().zip(refused) {
        match r {
            Some(e) => out.push((id, Err(e))),
            None => out.extend(written.next()),
        }
    }
    Ok(out)
}

/// Runs an RDF write (SPARQL Update, the Graph Store Protocol, LDP) by
/// `writer` as [`Database::rdf_write_checked`] does, with every document
/// revision it makes checked by the database's validation functions first,
/// as `user_ctx` (CouchDB's `userCtx`). A refusal refuses the whole write
/// (its error: 403, 401, or 500 for anything else thrown); nothing is
/// committed. The functions run under the database's writer lock, where the
/// new documents are known, as CouchDB runs them in its database updater.
pub fn rdf_write_validated<T, E: From<DocError>>(
    db: &Database,
    user_ctx: &Value,
    writer: Writer,
    limits: Limits,
    emptied: EmptiedGraphs,
    f: impl FnOnce(&mut StoreTransaction<'_>) -> Result<T, E>,
) -> Result<T, E> {
    let coded = |e: DesignError| DocError::Coded { status: 400, error: e.error(), reason: e.to_string() };
    let Some(mut validators) = Validators::new(&design_docs(db)?, limits).map_err(coded)? else {
        return db.rdf_write_checked(emptied, None, writer, f);
    };
    let sec_obj = db.security()?;
    let mut check = |new: &Map<String, Value>, old: Option<&Map<String, Value>>| validators.check_revision(new, old, user_ctx, &sec_obj);
    db.rdf_write_checked(emptied, Some(&mut check), writer, f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ddoc(id: &str, vdu: &str) -> DesignDoc {
        DesignDoc::parse(id, json!({ "validate_doc_update": vdu }).as_object().unwrap()).unwrap().unwrap()
    }

    #[test]
    fn refusals_carry_couchdbs_status() {
        let ddocs = vec![
            ddoc("_design/a", "function (n, o, u, s) { if (!n.type) throw({forbidden: 'type is required'}); }"),
            ddoc("_design/b", "function (n, o, u, s) { if (n.type === 'secret' && u.roles.indexOf('_admin') < 0) throw({unauthorized: 'admins only, ' + u.name}); if (o && o.locked) throw('locked'); }"),
        ];
        let mut v = Validators::new(&ddocs, Limits::default()).unwrap().unwrap();
        let user = json!({"db": "db", "name": "bob", "roles": []});
        let sec = json!({});
        assert_eq!(v.check(&json!({"_id": "x"}), &Value::Null, &user, &sec), Err(Rejection::Forbidden("type is required".into())));
        assert_eq!(v.check(&json!({"_id": "x", "type": "secret"}), &Value::Null, &user, &sec), Err(Rejection::Unauthorized("admins only, bob".into())));
        assert_eq!(v.check(&json!({"_id": "x", "type": "t"}), &json!({"locked": true}), &user, &sec), Err(Rejection::Failed { error: "unknown_error", reason: "locked".into() }));
        assert_eq!(v.check(&json!({"_id": "x", "type": "t"}), &Value::Null, &user, &sec), Ok(()));
        assert!(Validators::new(&[ddoc("_design/c", "function () {}")][..0], Limits::default()).unwrap().is_none());
    }

    /// A looping validation function over 20 documents costs the
    /// request's budget once, or stops when the request's client goes
    /// away, instead of running each call to its own 5 s limit (100 s).
    #[test]
    fn a_requests_bounds_stop_a_looping_validation() {
        use crate::js::RequestBounds;
        use std::sync::atomic::{AtomicBool, Ordering};
        let ddocs = vec![ddoc("_design/loop", "function (n, o, u, s) { while (true) {} }")];
        let (user, sec, doc) = (json!({"db": "db", "name": null, "roles": []}), json!({}), json!({"_id": "x"}));
        let stopped = |outcomes: Vec<Result<(), Rejection>>, why: &str| {
            for o in outcomes {
                match o {
                    Err(Rejection::Failed { error: "os_process_error", reason }) => assert!(reason.contains(why), "{reason}"),
                    other => panic!("{other:?}"),
                }
            }
        };
        let mut v = Validators::new(&ddocs, Limits::default()).unwrap().unwrap();
        {
            let _bounds = RequestBounds { deadline: Some(std::time::Instant::now() + std::time::Duration::from_millis(300)), cancelled: None }.enter();
            stopped((0..20).map(|_| v.check(&doc, &Value::Null, &user, &sec)).collect(), "past the time all of a request's JavaScript may take");
        }
        let flag = std::sync::Arc::new(AtomicBool::new(false));
        let _bounds = RequestBounds { deadline: None, cancelled: Some(flag.clone()) }.enter();
        // The client leaves while the first call loops.
        let leaving = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            flag.store(true, Ordering::SeqCst);
        });
        stopped((0..20).map(|_| v.check(&doc, &Value::Null, &user, &sec)).collect(), "its client went away");
        leaving.join().unwrap();
    }
}
