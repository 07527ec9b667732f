//! CouchDB's API, one file per group of endpoints
//! (https://docs.couchdb.org/en/stable/api/index.html).

pub mod all_dbs;
pub mod all_docs;
pub mod attachments;
pub mod bulk;
pub mod cluster_setup;
pub mod database;
pub mod design_functions;
pub mod documents;
pub mod mango;
pub mod node;
pub mod nouveau;
pub mod mango_text;
pub mod partitions;
pub mod multipart;
pub mod replicate;
pub mod server;
pub mod transaction;
pub mod views;

use crate::auth::{users, UserCtx};
use crate::error::HttpError;
use crate::http::Request;
use crate::state::DbHandle;
use rhizome_docs::{OpenRevs, ReadOptions, Rev, WriteOutcome};
use serde_json::{Map, Value};

/// For the fuzz target `couch_request`: a body through the decoders of
/// CouchDB's endpoints (`Content-Encoding`, `multipart/related` documents
/// and the multipart answers built from them), as text through the query
/// parser (with `SELECT *`'s order), and as an HTTP response through the
/// remote context fetcher's parser: never a panic.
pub fn fuzz_couch_request(content_encoding: &str, content_type: &str, body: &[u8]) {
    let mut headers = hyper::header::HeaderMap::new();
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_encoding) {
        headers.insert("content-encoding", v);
    }
    if let Ok(decoded) = crate::http::decode_body(&mut headers, bytes::Bytes::copy_from_slice(body), 1 << 16) {
        assert!(decoded.len() <= (1 << 16).max(body.len()), "decoding stays within the limit");
    }
    if let Ok(doc) = multipart::parse(content_type, body) {
        if let Ok(part) = multipart::document_part(doc) {
            let _ = multipart::mixed(vec![part]);
        }
    }
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = rhizome_sparql::parse_query(text, None);
    }
    crate::contexts::fuzz_response(body);
}

/// Writes documents through the store, then wakes `_changes` feeds. Writes
/// to `_users` have their passwords hashed first.
pub fn write_docs(ctx: &UserCtx, db: &DbHandle, mut docs: Vec<Map<String, Value>>, new_edits: bool) -> Result<Vec<(String, WriteOutcome)>, HttpError> {
    if db.name == "_users" {
        for doc in &mut docs {
            let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
            let current = db.db.get_doc(&id, &ReadOptions::default()).ok();
            users::prepare(ctx, doc, current.as_ref(), db.pbkdf2_iterations)?;
        }
    }
    if db.name == crate::replicator_db::REPLICATOR_DB {
        for doc in &mut docs {
            let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
            let current = db.db.get_doc(&id, &ReadOptions::default()).ok();
            crate::replicator_db::stamp_owner(ctx, doc, current.as_ref())?;
        }
    }
    // Refused before the write, each with its own error (CouchDB's
    // per-document results): design documents that do not compile, and
    // writes a validate_doc_update function refuses. What the writer may
    // write at all (design documents, LDP resources) is the store's rule
    // (`rhizome_docs::Writer`), per document too.
    let writer = crate::auth::access::writer(ctx, db)?;
    let validated = |docs| rhizome_views::validate::write_unless_refused(&db.db, &ctx.for_validation(&db.name), docs, views::limits(), |docs| db.writes.write(&db.db, docs, new_edits, writer));
    let out = if db.name == crate::replicator_db::REPLICATOR_DB {
        let refused = docs.iter().map(crate::replicator_db::spec_refusal).collect();
        rhizome_views::validate::write_except(docs, refused, validated)?
    } else {
        validated(docs)?
    };
    db.notify();
    Ok(out)
}

pub fn parse_rev(text: &str) -> Result<Rev, HttpError> {
    Rev::parse(text).ok_or_else(|| HttpError::bad_request("Invalid rev format"))
}

fn rev_list(v: &Value, name: &str) -> Result<Vec<Rev>, HttpError> {
    v.as_array()
        .ok_or_else(|| HttpError::bad_request(format!("{name} must be a JSON array of revisions")))?
        .iter()
        .map(|r| r.as_str().ok_or_else(|| HttpError::bad_request(format!("{name} must hold strings"))).and_then(parse_rev))
        .collect()
}

/// The read options of `GET /{db}/{docid}` and friends.
pub fn read_options(req: &Request) -> Result<ReadOptions, HttpError> {
    let meta = req.flag("meta", false)?;
    Ok(ReadOptions {
        rev: req.param("rev").map(parse_rev).transpose()?,
        revs: req.flag("revs", false)?,
        revs_info: req.flag("revs_info", false)? || meta,
        conflicts: req.flag("conflicts", false)? || meta,
        deleted_conflicts: req.flag("deleted_conflicts", false)? || meta,
        attachments: req.flag("attachments", false)?,
        atts_since: match req.json_param("atts_since")? {
            Some(v) => rev_list(&v, "atts_since")?,
            None => Vec::new(),
        },
        latest: req.flag("latest", false)?,
        local_seq: req.flag("local_seq", false)?,
    })
}

pub fn open_revs(req: &Request) -> Result<Option<OpenRevs>, HttpError> {
    match req.param("open_revs") {
        None => Ok(None),
        Some("all") => Ok(Some(OpenRevs::All)),
        Some(_) => Ok(Some(OpenRevs::List(rev_list(&req.json_param("open_revs")?.unwrap_or_default(), "open_revs")?))),
    }
}

/// A write outcome as `_bulk_docs` reports it.
pub fn outcome_json(id: &str, outcome: &WriteOutcome) -> Value {
    match outcome {
        Ok(rev) => serde_json::json!({ "ok": true, "id": id, "rev": rev.to_string() }),
        Err(e) => {
            let e = HttpError::from(clone_doc_error(e));
            serde_json::json!({ "id": id, "error": e.error, "reason": e.reason })
        }
    }
}

fn clone_doc_error(e: &rhizome_docs::DocError) -> rhizome_docs::DocError {
    use rhizome_docs::DocError as D;
    match e {
        D::Conflict => D::Conflict,
        D::IdConflict(r) => D::IdConflict(r.clone()),
        D::NotFound(r) => D::NotFound(r),
        D::BadRequest(r) => D::BadRequest(r.clone()),
        D::Validation(r) => D::Validation(r.clone()),
        D::MissingStub(r) => D::MissingStub(r.clone()),
        D::Coded { status, error, reason } => D::Coded { status: *status, error, reason: reason.clone() },
        other => D::Corrupt(other.to_string()),
    }
}
