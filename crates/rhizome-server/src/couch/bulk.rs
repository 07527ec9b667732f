//! `_bulk_docs`, `_bulk_get`, `_revs_diff` (`_all_docs` is `all_docs.rs`)
//! (https://docs.couchdb.org/en/stable/api/database/bulk-api.html).

use super::documents::outcomes;
use super::{outcome_json, parse_rev, read_options, write_docs};
use crate::auth::{access, UserCtx};
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::{DbHandle, Server};
use crate::stream::BodyWriter;
use bytes::Bytes;
use hyper::{Method, Response};
use rhizome_docs::{DocError, OpenRev, OpenRevs, ReadOptions, Rev};
use rhizome_rdf::StoreSnapshot;
use serde_json::{json, Map, Value};
use std::io::Write;

/// A streamed answer's client went away: the read stops (`DocError` so
/// that it crosses the store's callbacks).
pub(crate) fn gone(e: std::io::Error) -> DocError {
    DocError::Coded { status: 499, error: "client_closed_request", reason: e.to_string() }
}

pub fn bulk_docs(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    check_bulk_count("_bulk_docs", count_docs(&req.body), server.max_bulk_docs)?;
    let body = req.json_object()?;
    let new_edits = match body.get("new_edits") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(HttpError::bad_request("new_edits must be a boolean")),
    };
    // Rhizome's extension (issue 45): CouchDB 1.x had the flag with a
    // weaker meaning, 2.x and later refuse it.
    let all_or_nothing = match body.get("all_or_nothing") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) if new_edits => true,
        Some(Value::Bool(true)) => return Err(HttpError::bad_request("all_or_nothing checks revisions: it cannot go with new_edits=false")),
        Some(_) => return Err(HttpError::bad_request("all_or_nothing must be a boolean")),
    };
    let docs = body.get("docs").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("POST body must include `docs` parameter."))?;
    let mut batch = Vec::with_capacity(docs.len());
    for doc in docs {
        let Value::Object(mut doc) = doc.clone() else {
            return Err(HttpError::bad_request("Document must be a JSON object"));
        };
        // Only a document without `_id` gets a fresh one; any other id is
        // checked below, as CouchDB does.
        if !doc.contains_key("_id") {
            doc.insert("_id".into(), Value::String(http::uuid()));
        }
        // As CouchDB reads the request: one document that fails its
        // checks fails the whole request, before anything is written.
        rhizome_docs::check_document_json(&doc, new_edits)?;
        super::partitions::check_id_for(db, &doc)?;
        batch.push(doc);
    }
    // A member's design document is refused per document by the write
    // path (`rhizome_docs::Writer`), as CouchDB 3.5 answers it; with
    // all_or_nothing it refuses the whole request.
    if all_or_nothing {
        return super::transaction::bulk_docs_atomic(ctx, db, batch);
    }
    if !batch.iter().any(is_local) {
        let results = write_docs(ctx, db, batch, new_edits)?;
        // With new_edits=false CouchDB reports only the failures.
        return Ok(json(201, &outcomes(&results, !new_edits)));
    }
    // `_local/` documents are written as `PUT /{db}/_local/{id}` writes
    // them, each with its own outcome, in the request's order (as CouchDB).
    let writer = access::writer(ctx, db)?;
    let mut answers: Vec<Option<Value>> = vec![None; batch.len()];
    let (local, shared): (Vec<_>, Vec<_>) = batch.into_iter().enumerate().partition(|(_, doc)| is_local(doc));
    for (i, doc) in local {
        let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        answers[i] = match db.db.put_local_as(&id, doc, writer) {
            Ok(_) if !new_edits => None,
            Ok(rev) => Some(json!({ "ok": true, "id": id, "rev": rev })),
            Err(e) => {
                let e = HttpError::from(e);
                Some(json!({ "id": id, "error": e.error, "reason": e.reason }))
            }
        };
    }
    let (places, docs): (Vec<usize>, Vec<_>) = shared.into_iter().unzip();
    let results = if docs.is_empty() { Vec::new() } else { write_docs(ctx, db, docs, new_edits)? };
    for (i, result) in places.into_iter().zip(results) {
        if new_edits || result.1.is_err() {
            answers[i] = Some(outcome_json(&result.0, &result.1));
        }
    }
    Ok(json(201, &Value::Array(answers.into_iter().flatten().collect())))
}

fn is_local(doc: &Map<String, Value>) -> bool {
    doc.get("_id").and_then(Value::as_str).is_some_and(|id| id.starts_with("_local/"))
}

pub fn bulk_get(req: &Request, db: &DbHandle, max_docs: usize) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    check_bulk_count("_bulk_get", count_docs(&req.body), max_docs)?;
    let body = req.json_object()?;
    let docs = body.get("docs").and_then(Value::as_array).ok_or_else(|| HttpError::bad_request("Missing JSON list of 'docs'."))?;
    let base = ReadOptions { rev: None, ..read_options(req)? };
    // Every document from one snapshot: the answer is the database as it
    // was at one moment (issue 45), so reads with revisions followed by an
    // all_or_nothing write of them are serialisable.
    let snapshot = db.db.read_snapshot()?;
    // The answer is written as bytes: each document's JSON body is copied
    // as stored (`get_doc_bytes`), not parsed into values and written
    // again. Members in the order `serde_json` writes a map's: `docs`
    // before `id`. Each entry goes out as it is read (`crate::stream`):
    // with their attachments inline, a replicator's 10,000 documents are
    // not held together.
    let mut w = BodyWriter::new(req, http::response(200, "application/json", Bytes::new()));
    let _ = w.write_all(b"{\"results\":[");
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        out.clear();
        if let Err(e) = bulk_get_entry(db, &snapshot, d, &base, i, &mut out).and_then(|()| w.write_all(&out).map_err(|e| HttpError::from(gone(e)))) {
            return w.fail(e);
        }
    }
    let _ = w.write_all(b"]}\n");
    w.finish()
}

/// One entry of a `_bulk_get` answer (the `i`-th), as `snapshot` has
/// it, into `out`. An entry CouchDB cannot read is answered with an error
/// of its own (`bad_request`, `illegal_docid`) in place of its documents.
fn bulk_get_entry(db: &DbHandle, snapshot: &StoreSnapshot, d: &Value, base: &ReadOptions, i: usize, out: &mut Vec<u8>) -> Result<(), HttpError> {
    let refused = |id: Value, rev: Value, error: &str, reason: &str| json!({ "error": { "id": id, "rev": rev, "error": error, "reason": reason } });
    let entry_error = match (d.get("id"), d.get("rev"), d.get("atts_since")) {
        (Some(Value::String(id)), ..) if id.is_empty() => Some(refused(json!(""), Value::Null, "illegal_docid", "Document id must not be empty")),
        (Some(Value::String(_)), Some(rev), _) if !rev.as_str().is_some_and(|r| Rev::parse(r).is_some()) => Some(refused(d["id"].clone(), rev.clone(), "bad_request", "Invalid rev format")),
        (Some(Value::String(_)), _, Some(since)) if !since.is_array() => Some(refused(d["id"].clone(), since.clone(), "bad_request", "att_since value must be array of revs.")),
        (Some(Value::String(_)), ..) => None,
        _ => Some(refused(Value::Null, Value::Null, "bad_request", "document must be a JSON object")),
    };
    let (id, answers) = match entry_error {
        Some(error) => (error["error"]["id"].clone(), vec![Err(error)]),
        None => {
            let id = d["id"].as_str().expect("checked above");
            (Value::String(id.to_owned()), entry_answers(db, snapshot, d, id, base)?)
        }
    };
    if i > 0 {
        out.push(b',');
    }
    out.extend_from_slice(b"{\"docs\":[");
    for (j, answer) in answers.iter().enumerate() {
        if j > 0 {
            out.push(b',');
        }
        match answer {
            Ok(doc) => {
                out.extend_from_slice(b"{\"ok\":");
                out.extend_from_slice(doc);
                out.push(b'}');
            }
            Err(error) => write_json(out, error)?,
        }
    }
    out.extend_from_slice(b"],\"id\":");
    write_json(out, &id)?;
    out.push(b'}');
    Ok(())
}

/// The documents (or per-revision errors) of a readable `_bulk_get` entry.
fn entry_answers(db: &DbHandle, snapshot: &StoreSnapshot, d: &Value, id: &str, base: &ReadOptions) -> Result<Vec<Result<Vec<u8>, Value>>, HttpError> {
    let mut opts = base.clone();
    if let Some(since) = d.get("atts_since").and_then(Value::as_array) {
        opts.atts_since = since.iter().filter_map(Value::as_str).filter_map(Rev::parse).collect();
    }
    Ok(match d.get("rev").and_then(Value::as_str) {
        Some(r) => {
            let rev = parse_rev(r)?;
            match db.db.open_revs_bytes_at(snapshot, id, &OpenRevs::List(vec![rev.clone()]), &opts)? {
                revs if revs.is_empty() => vec![Err(missing(id, &rev.to_string()))],
                revs => revs
                    .into_iter()
                    .map(|r| match r {
                        OpenRev::Ok(doc) => Ok(doc),
                        OpenRev::Missing(rev) => Err(missing(id, &rev.to_string())),
                    })
                    .collect(),
            }
        }
        None => match db.db.get_doc_bytes_at(snapshot, id, &opts) {
            Ok((_, doc)) => vec![Ok(doc)],
            Err(DocError::NotFound(reason)) => vec![Err(json!({ "error": { "id": id, "rev": "undefined", "error": "not_found", "reason": reason } }))],
            Err(e) => return Err(e.into()),
        },
    })
}

/// Documents one `_bulk_docs` or `_bulk_get` may name by default (as
/// CouchDB 4's `max_bulk_docs_count` and `max_bulk_get_count`): a body of
/// 2M tiny documents took about 2 KB each before anything was written.
pub const DEFAULT_MAX_BULK_DOCS: usize = 10_000;

/// How many members the body's top-level `docs` array has, counted as the
/// bytes stream by, without building a value for any of them (0 when the
/// body is not such an object: its own parse then says why). Counting
/// first keeps a body of millions of tiny documents from costing a parsed
/// value each (about 100 bytes for `{}`) before it is refused.
fn count_docs(body: &[u8]) -> usize {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Count(usize);
    impl<'de> serde::Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Elements;
            impl<'de> Visitor<'de> for Elements {
                type Value = Count;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an array")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                    let mut n = 0;
                    while seq.next_element::<IgnoredAny>()?.is_some() {
                        n += 1;
                    }
                    Ok(Count(n))
                }
            }
            d.deserialize_seq(Elements)
        }
    }
    struct Body;
    impl<'de> Visitor<'de> for Body {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match key.as_ref() {
                    "docs" => n = map.next_value::<Count>().map(|c| c.0).unwrap_or(0),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(n)
        }
    }
    serde_json::Deserializer::from_slice(body).deserialize_map(Body).unwrap_or(0)
}

/// 413 past `max` documents in one request (`--max-bulk-docs`).
fn check_bulk_count(endpoint: &str, count: usize, max: usize) -> Result<(), HttpError> {
    if count > max {
        return Err(HttpError::new(413, "too_large", format!("a {endpoint} request names at most {max} documents (--max-bulk-docs); this one names {count}: send them in several requests")));
    }
    Ok(())
}

fn write_json(out: &mut Vec<u8>, value: &Value) -> Result<(), HttpError> {
    serde_json::to_writer(out, value).map_err(|e| HttpError::internal(e.to_string()))
}

fn missing(id: &str, rev: &str) -> Value {
    json!({ "error": { "id": id, "rev": rev, "error": "not_found", "reason": "missing" } })
}

pub fn revs_diff(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body: Map<String, Value> = req.json_object()?;
    Ok(json(200, &Value::Object(db.db.revs_diff(&body)?)))
}

/// `POST /{db}/_missing_revs`: of each document's revisions, those this
/// database lacks (`_revs_diff`'s `missing`, without its ancestors);
/// documents lacking none are left out, as CouchDB.
pub fn missing_revs(req: &Request, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    if req.method != Method::POST {
        return Err(HttpError::method_not_allowed("POST"));
    }
    let body: Map<String, Value> = req.json_object()?;
    let missing: Map<String, Value> = db.db.revs_diff(&body)?.into_iter().filter_map(|(id, diff)| Some((id, diff.get("missing")?.clone()))).collect();
    Ok(json(200, &serde_json::json!({ "missing_revs": missing })))
}
