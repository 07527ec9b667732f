//! Rhizome's transaction doors over HTTP (issue 45): `_bulk_docs` with
//! `"all_or_nothing": true`, and `POST /{db}/_transaction`, a server-side
//! transaction of operations (`get`, `inc`, `set`, `put`, `delete`, each
//! with an optional `rev` precondition) that reads and writes several
//! documents where they are, under the database's writer lock, in one
//! durable commit shared with concurrent writers (group commit).
//!
//! Both pass the checks every document write passes: the rights rules
//! (`rhizome_docs::Writer`: design documents only from db admins, ...),
//! validation functions on every new revision (one
//! refusal refuses the whole request), `_users`' own rules.

use super::views;
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::DbHandle;
use hyper::{Method, Response};
use rhizome_docs::{parse_ops, DocError, OpResult, Refusals};
use rhizome_views::validate::{design_docs, refusals, Validators};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Map, Value};

/// `_bulk_docs` with `all_or_nothing`: 201 with every document's new
/// revision, or nothing written and the failing documents' errors (409
/// when one of them is a conflict, else the first error's status).
pub fn bulk_docs_atomic(ctx: &UserCtx, db: &DbHandle, mut docs: Vec<Map<String, Value>>) -> Result<Response<Body>, HttpError> {
    if docs.iter().any(|d| d.get("_id").and_then(Value::as_str).is_some_and(|id| id.starts_with("_local/"))) {
        return Err(HttpError::bad_request("all_or_nothing does not take _local documents (they have no revisions to check)"));
    }
    if db.name == "_users" {
        for doc in &mut docs {
            let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
            let current = db.db.get_doc(&id, &rhizome_docs::ReadOptions::default()).ok();
            crate::auth::users::prepare(ctx, doc, current.as_ref(), db.pbkdf2_iterations)?;
        }
    }
    // Validation functions see every document; one refusal refuses all.
    let refused: Refusals = refusals(&db.db, &ctx.for_validation(&db.name), &docs, views::limits())?
        .into_iter()
        .zip(&docs)
        .filter_map(|(r, d)| r.map(|e| (d.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned(), e)))
        .collect();
    if !refused.is_empty() {
        return Ok(refusal(refused));
    }
    match db.writes.write_atomic(&db.db, docs, access::writer(ctx, db)?)? {
        Ok(written) => {
            db.notify();
            let rows: Vec<Value> = written.iter().map(|(id, rev)| json!({ "ok": true, "id": id, "rev": rev.to_string() })).collect();
            Ok(json(201, &Value::Array(rows)))
        }
        Err(refused) => Ok(refusal(refused)),
    }
}

fn refusal(refused: Refusals) -> Response<Body> {
    let status = if refused.iter().any(|(_, e)| matches!(e, DocError::Conflict)) { 409 } else { HttpError::from(clone(&refused[0].1)).status };
    let rows: Vec<Value> = refused
        .into_iter()
        .map(|(id, e)| {
            let e = HttpError::from(e);
            json!({ "id": id, "error": e.error, "reason": e.reason })
        })
        .collect();
    json(status, &Value::Array(rows))
}

fn clone(e: &DocError) -> DocError {
    match e {
        DocError::Conflict => DocError::Conflict,
        DocError::NotFound(r) => DocError::NotFound(r),
        DocError::Coded { status, error, reason } => DocError::Coded { status: *status, error, reason: reason.clone() },
        other => DocError::BadRequest(other.to_string()),
    }
}

/// `POST /{db}/_transaction` with `{"ops": [...]}`: 200 with
/// `{"ok": true, "results": [{"id", "rev", "doc"?}, ...]}` once durable,
/// or the refused operation's error with its index (`"op": i`), nothing
/// written.
pub fn transaction(req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    if db.name == "_users" || db.name == "_replicator" {
        return Err(HttpError::forbidden(format!("{} is written by documents only (its own rules apply to each write)", db.name)));
    }
    let ops = parse_ops(&req.json_object()?)?;
    // A member's design document is refused by the write path
    // (`rhizome_docs::Writer`), as every door's, naming its operation.
    let writer = access::writer(ctx, db)?;
    let validators = match db.db.may_have_design_docs() {
        true => Validators::new(&design_docs(&db.db)?, views::limits()).map_err(|e| HttpError::new(400, e.error(), e.to_string()))?,
        false => None,
    };
    let outcome = match validators {
        // No validation function: the operations join the group commit.
        None => db.writes.apply_ops(&db.db, ops, writer)?,
        // Validation functions run under the writer lock where the new
        // revisions are known (as for SPARQL writes): alone.
        Some(mut validators) => {
            let (user_ctx, sec_obj) = (ctx.for_validation(&db.name), db.db.security()?);
            let mut check = |new: &Map<String, Value>, old: Option<&Map<String, Value>>| validators.check_revision(new, old, &user_ctx, &sec_obj);
            match db.db.apply_ops(&ops, Some(&mut check), writer) {
                Err(e) if rhizome_docs::is_aborted(&e) => return Err(HttpError::from(e)),
                other => other?,
            }
        }
    };
    match outcome {
        Ok(results) => {
            if results.iter().any(|r| r.rev.is_some()) {
                db.notify();
            }
            Ok(answer(&results))
        }
        Err((i, e)) => {
            let e = HttpError::from(e);
            Ok(json(e.status, &json!({ "error": e.error, "reason": e.reason, "op": i })))
        }
    }
}

/// `{"ok": true, "results": [...]}`, each result serialized as it is
/// (`OpResult`'s `Serialize`) rather than through a `Value` copy.
fn answer(results: &[OpResult]) -> Response<Body> {
    struct Answer<'a>(&'a [OpResult]);
    impl Serialize for Answer<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(2))?;
            m.serialize_entry("ok", &true)?;
            m.serialize_entry("results", self.0)?;
            m.end()
        }
    }
    let mut bytes = serde_json::to_vec(&Answer(results)).unwrap_or_default();
    bytes.push(b'\n');
    crate::http::response(200, "application/json", bytes.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rhizome_docs::Rev;

    #[test]
    fn answer_lists_each_result_with_its_rev_and_doc() {
        let results = vec![
            OpResult { id: "a".into(), rev: Rev::parse("2-7051cbe5c8faecd085a3fa619e6e6337"), doc: Some(Map::from_iter([("n".to_owned(), json!(1))])) },
            OpResult { id: "b".into(), rev: None, doc: None },
        ];
        let r = answer(&results);
        let crate::http::Body::Full(Some(bytes)) = r.body() else { panic!("a full body") };
        let got: Value = serde_json::from_slice(bytes).unwrap();
        let want = json!({ "ok": true, "results": [{ "id": "a", "rev": "2-7051cbe5c8faecd085a3fa619e6e6337", "doc": { "n": 1 } }, { "id": "b" }] });
        assert_eq!(got, want);
        assert_eq!(r.status(), 200);
    }
}
