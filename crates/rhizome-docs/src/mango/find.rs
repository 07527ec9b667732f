//! Running `_find` and `_explain`
//! (https://docs.couchdb.org/en/stable/api/database/find.html): the plan's
//! index (or `_all_docs`) is scanned in order between the bounds the
//! selector gives its leading columns, each document read from the
//! snapshot is matched against the whole selector, then `skip`, `limit`
//! and `fields` apply. Rows stream from the cursor and each answer's
//! document goes to the caller as it is found ([`Database::run_find`]), so
//! nothing is collected here. The bookmark is the last row's key, so the
//! next page resumes right after it.

use super::index::{index_behind, list_indexes, mango_error, stale_indexes, IndexDef};
use super::plan::{bounds, plan, Access, Bounds, FindOptions};
use crate::collate;
use crate::keys::{DocHeader, DocInfo, DOCS, MANGO_ROWS};
use crate::read::{render, render_winner, ReadOptions};
use crate::selector::get_path;
use crate::{Database, DocError, Result};
use base64::Engine;
use serde_json::{json, Map, Value};
use std::time::Instant;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A bookmark: the last row's key and the first 4 bytes of its MD5, so a
/// string this server did not hand out is refused (`invalid_bookmark`, as
/// CouchDB refuses one it cannot decode) rather than read as a key.
fn bookmark_of(key: &[u8]) -> String {
    use md5::{Digest, Md5};
    let mut bytes = key.to_vec();
    bytes.extend_from_slice(&Md5::digest(key)[..4]);
    B64.encode(bytes)
}

fn key_of_bookmark(bookmark: &str) -> Option<Vec<u8>> {
    use md5::{Digest, Md5};
    let mut bytes = B64.decode(bookmark).ok()?;
    let split = bytes.len().checked_sub(4)?;
    let check = bytes.split_off(split);
    (Md5::digest(&bytes)[..4] == check[..]).then_some(bytes)
}

/// A scan's key range: `[lower, upper)` in its keyspace.
struct Range {
    lower: Vec<u8>,
    upper: Vec<u8>,
    /// For `_explain`'s `mrargs`.
    start_key: Value,
    end_key: Value,
}

fn column_range(index: &IndexDef, opts: &FindOptions) -> Range {
    let mut prefix = index.id.to_vec();
    let mut start_key = Vec::new();
    let mut end_key = Vec::new();
    let mut last: Option<Bounds> = None;
    for column in &index.columns {
        match bounds(&opts.selector, column) {
            Some(b) if b.is_point() => {
                let v = b.lower.as_ref().expect("a point has a lower bound").0.clone();
                collate::encode_into(&v, &mut prefix);
                start_key.push(v.clone());
                end_key.push(v);
            }
            Some(b) => {
                last = Some(b);
                break;
            }
            None => break,
        }
    }
    let mut lower = prefix.clone();
    let mut upper = prefix;
    match last.as_ref().and_then(|b| b.lower.as_ref()) {
        Some((v, inclusive)) => {
            collate::encode_into(v, &mut lower);
            if !inclusive {
                lower.push(collate::AFTER);
            }
            start_key.push(v.clone());
        }
        None => {}
    }
    match last.as_ref().and_then(|b| b.upper.as_ref()) {
        Some((v, inclusive)) => {
            collate::encode_into(v, &mut upper);
            if *inclusive {
                upper.push(collate::AFTER);
            }
            end_key.push(v.clone());
        }
        None => {
            upper.push(collate::AFTER);
            end_key.push(Value::String("<MAX>".into()));
        }
    }
    Range { lower, upper, start_key: Value::Array(start_key), end_key: Value::Array(end_key) }
}

/// `_all_docs` between the string bounds the selector puts on `_id`
/// (raw order, as ids are stored).
fn id_range(opts: &FindOptions) -> Range {
    let b = bounds(&opts.selector, &["_id".to_owned()]).unwrap_or_default();
    let (mut lower, mut start_key) = (Vec::new(), Value::Null);
    if let Some((Value::String(s), inclusive)) = &b.lower {
        lower = s.as_bytes().to_vec();
        if !inclusive {
            lower.push(0);
        }
        start_key = Value::String(s.clone());
    }
    let (mut upper, mut end_key) = (vec![0xFF], Value::String("<MAX>".into()));
    if let Some((Value::String(s), inclusive)) = &b.upper {
        upper = s.as_bytes().to_vec();
        if *inclusive {
            upper.push(0);
        }
        end_key = Value::String(s.clone());
    }
    Range { lower, upper, start_key, end_key }
}

/// Rows scanned between two checks of `run_find`'s `cancelled`.
pub const CANCEL_CHECK_KEYS: u64 = 1024;

#[derive(Default)]
struct Stats {
    keys: u64,
    docs: u64,
}

/// A `_find` ready to run: options read, index chosen and up to date, the
/// bookmark decoded. Errors CouchDB answers with a status all happen while
/// preparing, so a caller can start streaming the answer after it.
pub struct PreparedFind {
    opts: FindOptions,
    plan: super::plan::Plan,
    range: Range,
    started: Instant,
}

/// CouchDB's default `[mango] index_scan_warning_threshold`.
pub const INDEX_SCAN_WARNING_RATIO: u64 = 10;

/// What follows the documents of a `_find` answer.
pub struct FindEnd {
    pub bookmark: String,
    keys: u64,
    docs: u64,
    returned: u64,
}

impl PreparedFind {
    pub fn limit(&self) -> u64 {
        self.opts.limit
    }

    /// The members after `docs`: `bookmark`, `warning`, `execution_stats`.
    pub fn tail(&self, end: &FindEnd) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("bookmark".into(), Value::String(end.bookmark.clone()));
        let mut warnings = self.plan.warnings.clone();
        // CouchDB's `index_scan_warning`: more than INDEX_SCAN_WARNING_RATIO
        // documents read per result (per nothing, when nothing was found).
        if end.docs > INDEX_SCAN_WARNING_RATIO * end.returned.max(1) {
            warnings.push("The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.".into());
        }
        if !warnings.is_empty() {
            out.insert("warning".into(), Value::String(warnings.join("\n")));
        }
        if self.opts.execution_stats {
            out.insert(
                "execution_stats".into(),
                json!({
                    "total_keys_examined": end.keys,
                    "total_docs_examined": end.docs,
                    "total_quorum_docs_examined": 0,
                    "results_returned": end.returned,
                    "execution_time_ms": self.started.elapsed().as_secs_f64() * 1000.0,
                }),
            );
        }
        out
    }
}

impl Database {
    /// `POST /{db}/_find`: the whole response body.
    pub fn find(&self, body: &Map<String, Value>) -> Result<Value> {
        let q = self.prepare_find(body)?;
        let mut docs = Vec::new();
        let end = self.run_find(
            &q,
            &mut |doc| {
                docs.push(doc);
                true
            },
            &|| false,
        )?;
        let mut out = Map::new();
        out.insert("docs".into(), Value::Array(docs));
        out.extend(q.tail(&end));
        Ok(Value::Object(out))
    }

    /// Reads the options, chooses the index and brings it up to date.
    pub fn prepare_find(&self, body: &Map<String, Value>) -> Result<PreparedFind> {
        let started = Instant::now();
        let opts = FindOptions::parse(body)?;
        // One snapshot decides; writes happen only when something is due.
        let (plan, behind, stale) = {
            let s = self.store.snapshot()?;
            let indexes = list_indexes(s.kv())?;
            let plan = plan(&indexes, &opts)?;
            let behind = match &plan.access {
                Access::Json(index) => opts.update && index_behind(s.kv(), index)?,
                Access::AllDocs => false,
            };
            (plan, behind, stale_indexes(s.kv(), &indexes)?)
        };
        if !stale.is_empty() {
            self.drop_mango_indexes(stale)?;
        }
        if let (Access::Json(index), true) = (&plan.access, behind) {
            self.refresh_mango_index(index)?;
        }
        let (prefix_len, mut range) = match &plan.access {
            Access::Json(index) => (index.id.len(), column_range(index, &opts)),
            Access::AllDocs => (0, id_range(&opts)),
        };
        if let Some(bookmark) = &opts.bookmark {
            let key = key_of_bookmark(bookmark)
                .filter(|k| k.len() > prefix_len && k[..prefix_len] == range.lower[..prefix_len.min(range.lower.len())])
                .ok_or_else(|| mango_error(400, "invalid_bookmark", format!("Invalid bookmark value: {}", Value::String(bookmark.clone()))))?;
            if opts.descending {
                range.upper = range.upper.min(key);
            } else {
                let mut after = key;
                after.push(0);
                range.lower = range.lower.max(after);
            }
        }
        Ok(PreparedFind { opts, plan, range, started })
    }

    /// Runs a prepared `_find` on a fresh snapshot, handing each answer's
    /// document to `emit` in order (which returns false to stop early).
    /// `cancelled` is asked every [`CANCEL_CHECK_KEYS`] rows scanned (a
    /// client that went away stops a long scan that matches nothing).
    pub fn run_find(&self, q: &PreparedFind, emit: &mut dyn FnMut(Value) -> bool, cancelled: &dyn Fn() -> bool) -> Result<FindEnd> {
        let opts = &q.opts;
        let range = &q.range;
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let keyspace = match q.plan.access {
            Access::Json(_) => MANGO_ROWS,
            Access::AllDocs => DOCS,
        };
        let mut stats = Stats::default();
        let mut returned = 0u64;
        let mut last_key: Option<Vec<u8>> = None;
        let mut skipped = 0;
        if range.lower < range.upper && opts.limit > 0 {
            let mut cursor = kv.cursor(keyspace, &range.lower, Some(&range.upper));
            if opts.descending {
                cursor.seek_last();
            } else {
                cursor.seek_first();
            }
            while cursor.valid() && returned < opts.limit {
                stats.keys += 1;
                if stats.keys % CANCEL_CHECK_KEYS == 0 && cancelled() {
                    return Err(mango_error(499, "cancelled", "the client went away"));
                }
                let id = match q.plan.access {
                    Access::AllDocs => String::from_utf8_lossy(cursor.key()).into_owned(),
                    Access::Json(_) => String::from_utf8_lossy(cursor.value()).into_owned(),
                };
                let doc = match q.plan.access {
                    // Design documents are no answer of a query (CouchDB's
                    // Mango skips them on `_all_docs`; JSON indexes hold none).
                    Access::AllDocs if id.starts_with("_design/") => None,
                    Access::AllDocs => candidate(kv, &id, Some(cursor.value()), opts.conflicts)?,
                    Access::Json(_) => candidate(kv, &id, kv.get(DOCS, id.as_bytes())?.as_deref(), opts.conflicts)?,
                };
                if let Some(doc) = doc {
                    stats.docs += 1;
                    if opts.selector.matches(&doc) {
                        if skipped < opts.skip {
                            skipped += 1;
                        } else {
                            returned += 1;
                            last_key = Some(cursor.key().to_vec());
                            if !emit(project(doc, opts.fields.as_deref())) {
                                break;
                            }
                        }
                    }
                }
                if opts.descending {
                    cursor.prev();
                } else {
                    cursor.next();
                }
            }
            cursor.status()?;
        }
        let bookmark = match last_key {
            Some(k) => bookmark_of(&k),
            None => opts.bookmark.clone().unwrap_or_else(|| "nil".into()),
        };
        Ok(FindEnd { bookmark, keys: stats.keys, docs: stats.docs, returned })
    }

    /// `POST /{db}/_explain`: the response body, in CouchDB's shape.
    pub fn explain(&self, db_name: &str, body: &Map<String, Value>) -> Result<Value> {
        let opts = FindOptions::parse(body)?;
        let plan = self.plan_find(&opts)?;
        let range = match &plan.access {
            Access::Json(index) => column_range(index, &opts),
            Access::AllDocs => id_range(&opts),
        };
        Ok(json!({
            "dbname": db_name,
            "index": plan.access.to_json(),
            "partitioned": false,
            "selector": opts.selector.to_json(),
            "opts": opts.to_json(),
            "limit": opts.limit,
            "skip": opts.skip,
            "fields": opts.fields_json(),
            "mrargs": {
                "include_docs": true,
                "view_type": "map",
                "reduce": false,
                "partition": null,
                "start_key": range.start_key,
                "end_key": range.end_key,
                "direction": if opts.descending { "rev" } else { "fwd" },
                "stable": opts.stable,
                "update": opts.update,
                "conflicts": "undefined",
            },
            "covering": false,
        }))
    }

    /// `GET /{db}/_index`: `_all_docs` then every JSON index.
    pub fn list_mango_indexes(&self) -> Result<Vec<Value>> {
        let mut out = vec![super::plan::all_docs_json()];
        out.extend(self.mango_indexes()?.iter().map(IndexDef::to_json));
        Ok(out)
    }

    fn plan_find(&self, opts: &FindOptions) -> Result<super::plan::Plan> {
        let s = self.store.snapshot()?;
        plan(&list_indexes(s.kv())?, opts)
    }
}

/// A live document of a row (its `DOCS` value given), as the selector
/// sees it; `None` for a deleted or vanished one. Only `conflicts` needs
/// the revision tree decoded.
fn candidate(kv: &dyn rhizome_kv::KvRead, id: &str, info: Option<&[u8]>, conflicts: bool) -> Result<Option<Value>> {
    let Some(bytes) = info else { return Ok(None) };
    let DocHeader { winner, deleted, .. } = DocInfo::header(bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
    if deleted {
        return Ok(None);
    }
    let doc = if conflicts {
        let info = DocInfo::from_bytes(id, bytes)?;
        match render(kv, id, &info, &info.winner, &ReadOptions { conflicts: true, ..Default::default() }, None) {
            Ok(d) => Some(d),
            Err(DocError::NotFound(_)) => None,
            Err(e) => return Err(e),
        }
    } else {
        render_winner(kv, id, &winner, None)?
    };
    Ok(doc.map(Value::Object))
}

/// Keeps only `fields` of a document (nested paths build nested objects),
/// as `mango_doc:get_field`/`set_field`.
fn project(doc: Value, fields: Option<&[Vec<String>]>) -> Value {
    let Some(fields) = fields else { return doc };
    let mut out = Value::Object(Map::new());
    for path in fields {
        let Some(v) = get_path(&doc, path) else { continue };
        let mut at = &mut out;
        for (i, part) in path.iter().enumerate() {
            let Value::Object(m) = at else { break };
            if i + 1 == path.len() {
                m.insert(part.clone(), v.clone());
                break;
            }
            at = m.entry(part.clone()).or_insert_with(|| Value::Object(Map::new()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_keeps_nested_paths() {
        let doc = json!({ "_id": "a", "a": { "b": 1, "c": 2 }, "d": 3 });
        let fields = vec![vec!["_id".to_owned()], vec!["a".to_owned(), "b".to_owned()], vec!["missing".to_owned()]];
        assert_eq!(project(doc, Some(&fields)), json!({ "_id": "a", "a": { "b": 1 } }));
    }
}
