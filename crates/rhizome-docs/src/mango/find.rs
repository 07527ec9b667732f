//! Running `_find` and `_explain`
//! (https://docs.couchdb.org/en/stable/api/database/find.html): the plan's
//! index (or `_all_docs`) is scanned in order between the bounds the
//! selector gives its leading columns, each document read from the
//! snapshot is matched against the whole selector, then `skip`, `limit`
//! and `fields` apply. Rows stream from the cursor and each answer's
//! document goes to the caller as it is found ([`Database::run_find`]), so
//! nothing is collected here. The bookmark is the last row's key, so the
//! next page resumes right after it.

use super::candidates;
use super::index::{index_behind, list_indexes, mango_error, stale_indexes, IndexDef};
use super::prefilter::{body_reader, Look, Prefilter};
use super::plan::{plan, Access, FindOptions, Kind, Plan};
use super::ranges::{selector_fields, Edge, FieldRange};
use crate::collate;
use crate::keys::{DocInfo, DOCS, MANGO_ROWS};
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
struct ScanRange {
    lower: Vec<u8>,
    upper: Vec<u8>,
    /// For `_explain`'s `mrargs`, in ascending order.
    start_key: Value,
    end_key: Value,
}

/// What `_explain` shows for the largest key (CouchDB's `?MAX_JSON_OBJ`
/// and `?MAX_STR`, which JSON cannot hold).
const MAX_KEY: &str = "<MAX>";

/// The scan of a JSON index between CouchDB's `start_key` and `end_key`
/// (`mango_idx_view:start_key/end_key`): the low ends of the ranges up to
/// the first without one, and the high ends up to the first without one,
/// then the largest key. Both ends are inclusive, as in CouchDB, whose
/// view rows between them are matched against the selector, so the rows
/// examined are the same.
fn view_range(index: &IndexDef, ranges: &[FieldRange], partition: &str) -> ScanRange {
    let ranges = || ranges.iter().filter_map(|r| if let FieldRange::Range(r) = r { Some(r) } else { None });
    let start: Vec<Value> = ranges().map_while(|r| if let Edge::Value(v) = &r.low { Some(v.clone()) } else { None }).collect();
    let end: Vec<Value> = ranges().map_while(|r| if let Edge::Value(v) = &r.high { Some(v.clone()) } else { None }).collect();
    // A partitioned index's rows have the partition first: a partition's
    // query scans its rows alone.
    let mut prefix = index.id.to_vec();
    if index.partitioned {
        collate::encode_into(&Value::String(partition.to_owned()), &mut prefix);
    }
    let mut lower = prefix.clone();
    start.iter().for_each(|v| collate::encode_into(v, &mut lower));
    let mut upper = prefix;
    end.iter().for_each(|v| collate::encode_into(v, &mut upper));
    upper.push(collate::AFTER);
    let mut end_key = end;
    end_key.push(Value::String(MAX_KEY.into()));
    ScanRange { lower, upper, start_key: Value::Array(start), end_key: Value::Array(end_key) }
}

/// The scan of `_all_docs` over `_id`'s range (`mango_idx_special`): ids
/// compare as raw strings there, and every value that is not a string
/// below every string (Erlang's term order).
fn id_range(ranges: &[FieldRange]) -> ScanRange {
    let Some(FieldRange::Range(r)) = ranges.first() else { return ScanRange { lower: Vec::new(), upper: Vec::new(), start_key: Value::Null, end_key: Value::Null } };
    let (lower, start_key) = match &r.low {
        Edge::Value(Value::String(s)) => (s.as_bytes().to_vec(), Value::String(s.clone())),
        Edge::Value(v) => (Vec::new(), v.clone()),
        Edge::Min | Edge::Max => (Vec::new(), Value::String(String::new())),
    };
    let (upper, end_key) = match &r.high {
        Edge::Value(Value::String(s)) => {
            let mut upper = s.as_bytes().to_vec();
            upper.push(0);
            (upper, Value::String(s.clone()))
        }
        Edge::Value(v) => (Vec::new(), v.clone()),
        Edge::Min | Edge::Max => (vec![0xFF], Value::String(MAX_KEY.into())),
    };
    ScanRange { lower, upper, start_key, end_key }
}

fn scan_range(plan: &Plan, partition: &str) -> ScanRange {
    if plan.selects_nothing() {
        return ScanRange { lower: Vec::new(), upper: Vec::new(), start_key: Value::Null, end_key: Value::Null };
    }
    match &plan.access {
        Some(Access::Json(index)) => view_range(index, &plan.ranges, partition),
        _ if partition.is_empty() => id_range(&plan.ranges),
        _ => {
            // `_all_docs` within the partition's key range.
            let mut range = id_range(&plan.ranges);
            let (lower, upper) = crate::partition::partition_range(partition);
            if range.lower < range.upper {
                range.lower = range.lower.max(lower);
                range.upper = range.upper.min(upper);
            }
            range
        }
    }
}

/// The fields a query needs (`mango_cursor_view:required_fields`): those
/// it returns and those its selector reads; `None` for whole documents.
fn required_fields(opts: &FindOptions) -> Option<Vec<Vec<String>>> {
    let mut fields = opts.fields.clone()?;
    fields.extend(selector_fields(&opts.selector));
    fields.sort();
    fields.dedup();
    Some(fields)
}

/// Rows scanned between two checks of `run_find`'s `cancelled`.
pub const CANCEL_CHECK_KEYS: u64 = 1024;

/// What a query examined, as CouchDB's `execution_stats` counts it.
#[derive(Default)]
struct Stats {
    keys: u64,
    docs: u64,
    /// Documents read after the scan, as CouchDB's coordinator reads them
    /// when `r` is above 1.
    quorum_docs: u64,
}

/// A `_find` ready to run: options read, index chosen and up to date, the
/// bookmark decoded. Errors CouchDB answers with a status all happen while
/// preparing, so a caller can start streaming the answer after it.
pub struct PreparedFind {
    opts: FindOptions,
    plan: Plan,
    range: ScanRange,
    /// The index alone answers: no document is read.
    covering: bool,
    started: Instant,
    /// Past it the scan stops (500 `timeout`, as CouchDB's fabric timeout).
    deadline: Option<Instant>,
    /// Rows between two looks at `cancelled` and the clock: fewer for a
    /// large selector (a selector of 100,000 clauses took 7 ms a row, and
    /// 1,024 rows between looks let a request run minutes).
    check_every: u64,
}

/// The time a `_find` may take unless set otherwise.
pub const FIND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl PreparedFind {
    /// Stops the scan `timeout` after the query was prepared.
    pub fn set_timeout(&mut self, timeout: std::time::Duration) {
        self.deadline = Some(self.started + timeout);
    }
}

/// CouchDB's default `[mango] index_scan_warning_threshold`.
pub const INDEX_SCAN_WARNING_RATIO: u64 = 10;

/// What follows the documents of a `_find` answer.
pub struct FindEnd {
    pub bookmark: String,
    stats: Stats,
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
        if end.stats.docs + end.stats.quorum_docs > INDEX_SCAN_WARNING_RATIO * end.returned.max(1) {
            warnings.push("The number of documents examined is high in proportion to the number of results returned. Consider adding a more specific index to improve this.".into());
        }
        if !warnings.is_empty() {
            out.insert("warning".into(), Value::String(warnings.join("\n")));
        }
        if self.opts.execution_stats {
            out.insert(
                "execution_stats".into(),
                json!({
                    "total_keys_examined": end.stats.keys,
                    "total_docs_examined": end.stats.docs,
                    "total_quorum_docs_examined": end.stats.quorum_docs,
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
        self.check_find_partition(&opts)?;
        // One snapshot decides; writes happen only when something is due.
        let (plan, behind, stale) = {
            let s = self.store.snapshot()?;
            let indexes = list_indexes(s.kv())?;
            let plan = plan(&indexes, &opts, Kind::Find)?;
            let behind = match &plan.access {
                Some(Access::Json(index)) => opts.update && index_behind(s.kv(), index)?,
                _ => false,
            };
            (plan, behind, stale_indexes(s.kv(), &indexes)?)
        };
        if !stale.is_empty() {
            self.drop_mango_indexes(stale)?;
        }
        if let (Some(Access::Json(index)), true) = (&plan.access, behind) {
            self.refresh_mango_index(index)?;
        }
        let prefix_len = match &plan.access {
            Some(Access::Json(index)) => index.id.len(),
            _ => 0,
        };
        let mut range = scan_range(&plan, &opts.partition);
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
        let covering = plan.access.as_ref().is_some_and(|a| a.covers(required_fields(&opts).as_deref()));
        // About one clause per 32 bytes of the selector's JSON.
        let weight = serde_json::to_string(body.get("selector").unwrap_or(&Value::Null)).map_or(1, |t| (t.len() / 32).max(1)) as u64;
        let check_every = (CANCEL_CHECK_KEYS / weight).max(1);
        Ok(PreparedFind { opts, plan, range, covering, started, deadline: Some(started + FIND_TIMEOUT), check_every })
    }

    /// Runs a prepared `_find` on a fresh snapshot, handing each answer's
    /// document to `emit` in order (which returns false to stop early).
    /// `cancelled` is asked every [`CANCEL_CHECK_KEYS`] rows scanned (a
    /// client that went away stops a long scan that matches nothing).
    ///
    /// As in CouchDB, where the index's rows stream to the coordinator
    /// until it has `limit` answers and sees one more, the scan goes on
    /// past the last answer to the next matching row, and
    /// `execution_stats` counts it.
    pub fn run_find(&self, q: &PreparedFind, emit: &mut dyn FnMut(Value) -> bool, cancelled: &dyn Fn() -> bool) -> Result<FindEnd> {
        let opts = &q.opts;
        let range = &q.range;
        let s = self.snapshot_for(q)?;
        let kv = s.kv();
        let (keyspace, index) = match &q.plan.access {
            Some(Access::Json(index)) => (MANGO_ROWS, Some(index)),
            _ => (DOCS, None),
        };
        let mut stats = Stats::default();
        let mut returned = 0u64;
        let mut last_key: Option<Vec<u8>> = None;
        let mut skipped = 0;
        // Without `conflicts` (which the first look does not render).
        let prefilter = if index.is_none() && !opts.conflicts { Prefilter::new(&opts.selector) } else { None };
        let mut bodies = body_reader(kv);
        if range.lower < range.upper {
            let mut cursor = kv.cursor(keyspace, &range.lower, Some(&range.upper));
            if opts.descending {
                cursor.seek_last();
            } else {
                cursor.seek_first();
            }
            while cursor.valid() {
                stats.keys += 1;
                if stats.keys % q.check_every == 0 {
                    if cancelled() {
                        return Err(mango_error(499, "cancelled", "the client went away"));
                    }
                    if q.deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(mango_error(500, "timeout", "The request could not be processed in a reasonable amount of time."));
                    }
                }
                // A document the first look rejects is examined, not rendered.
                let mut rejected = false;
                let doc = match index {
                    None => {
                        let id = String::from_utf8_lossy(cursor.key());
                        match prefilter.as_ref().map(|p| p.look(&mut bodies, &id, cursor.value(), &opts.selector)).transpose()? {
                            Some(Look::Gone) => None,
                            Some(Look::Rejected) => {
                                rejected = true;
                                None
                            }
                            Some(Look::Maybe) | None => candidate(kv, &id, Some(cursor.value()), opts.conflicts)?,
                        }
                    }
                    Some(index) if q.covering => Some(doc_of_row(index, cursor.key(), cursor.value())?),
                    Some(_) => {
                        let id = String::from_utf8_lossy(cursor.value());
                        candidate(kv, &id, kv.get(DOCS, id.as_bytes())?.as_deref(), opts.conflicts)?
                    }
                };
                if !q.covering && (doc.is_some() || rejected) {
                    if opts.r > 1 {
                        stats.quorum_docs += 1;
                    } else {
                        stats.docs += 1;
                    }
                }
                // Design documents are examined but are no answer (CouchDB's
                // Mango drops them from `_all_docs`; JSON indexes hold none).
                let design = index.is_none() && cursor.key().starts_with(b"_design/");
                if let Some(doc) = doc.filter(|d| !design && opts.selector.matches(d)) {
                    if returned == opts.limit {
                        break;
                    }
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
        Ok(FindEnd { bookmark, stats, returned })
    }

    /// The snapshot a `_find` reads: one where its JSON index is up to
    /// date (unless `update` is false), so that index rows and documents
    /// agree (issue 45: a `_find` is one snapshot of the database). A
    /// write that lands between the index's refresh and the snapshot
    /// means one more refresh; under a stream of writes that never leaves
    /// room, 503 after a bounded number of tries.
    fn snapshot_for(&self, q: &PreparedFind) -> Result<rhizome_rdf::StoreSnapshot> {
        let Some(Access::Json(index)) = &q.plan.access else { return Ok(self.store.snapshot()?) };
        if !q.opts.update {
            return Ok(self.store.snapshot()?);
        }
        for _ in 0..64 {
            let s = self.store.snapshot()?;
            if !index_behind(s.kv(), index)? {
                return Ok(s);
            }
            drop(s);
            self.refresh_mango_index(index)?;
        }
        Err(mango_error(503, "busy", "writes kept the index behind every snapshot; retry the query"))
    }

    /// `POST /{db}/_explain`: the response body, in CouchDB 3.5's shape
    /// (`mango_cursor:explain`, `mango_cursor_view:explain`).
    pub fn explain(&self, db_name: &str, body: &Map<String, Value>) -> Result<Value> {
        let opts = FindOptions::parse(body)?;
        self.check_find_partition(&opts)?;
        let plan = {
            let s = self.store.snapshot()?;
            plan(&list_indexes(s.kv())?, &opts, Kind::Explain)?
        };
        let mut out = json!({
            "dbname": db_name,
            "index": plan.access.as_ref().map_or(Value::Null, Access::to_json),
            "partitioned": self.is_partitioned(),
            "selector": opts.selector.to_json(),
            "opts": opts.to_json(),
            "limit": opts.limit,
            "skip": opts.skip,
            "fields": opts.fields_json(),
            "index_candidates": candidates::index_candidates(&plan, &opts),
            "selector_hints": candidates::selector_hints(&opts.selector),
        });
        if let Some(access) = &plan.access {
            let range = scan_range(&plan, &opts.partition);
            let (start_key, end_key) = if opts.descending { (range.end_key, range.start_key) } else { (range.start_key, range.end_key) };
            let covering = access.covers(required_fields(&opts).as_deref());
            out["mrargs"] = json!({
                "include_docs": opts.r == 1 && !covering,
                "view_type": "map",
                "reduce": false,
                "partition": if opts.partition.is_empty() { Value::Null } else { Value::String(opts.partition.clone()) },
                "start_key": start_key,
                "end_key": end_key,
                "direction": if opts.descending { "rev" } else { "fwd" },
                "stable": opts.stable,
                "update": opts.update,
                "conflicts": if opts.conflicts { Value::Bool(true) } else { Value::String("undefined".into()) },
            });
            out["covering"] = Value::Bool(covering);
        }
        Ok(out)
    }

    /// A partition's query needs a partitioned database and a valid
    /// partition name.
    fn check_find_partition(&self, opts: &FindOptions) -> Result<()> {
        if opts.partition.is_empty() {
            return Ok(());
        }
        if !self.is_partitioned() {
            return Err(mango_error(400, "query_parse_error", "`partition` parameter is not supported on this db"));
        }
        crate::partition::check_partition_name(&opts.partition)
    }

    /// `GET /{db}/_index`: `_all_docs` then every JSON index.
    pub fn list_mango_indexes(&self) -> Result<Vec<Value>> {
        let mut out = vec![super::plan::all_docs_json()];
        out.extend(self.mango_indexes()?.iter().map(IndexDef::to_json));
        Ok(out)
    }
}

/// The document a covering index's row stands for
/// (`mango_cursor_view:derive_doc_from_index`): its `_id` and its columns'
/// values, read back from the row's key.
fn doc_of_row(index: &IndexDef, key: &[u8], id: &[u8]) -> Result<Value> {
    let corrupt = || DocError::Corrupt(format!("a row of Mango index {}/{}", index.ddoc, index.name));
    let mut doc = Value::Object(Map::from_iter([("_id".to_owned(), Value::String(String::from_utf8_lossy(id).into_owned()))]));
    let mut at = key.get(index.id.len()..).ok_or_else(corrupt)?;
    if index.partitioned {
        let (_, used) = collate::decode_prefix(at).ok_or_else(corrupt)?;
        at = &at[used..];
    }
    for column in &index.columns {
        let (v, used) = collate::decode_prefix(at).ok_or_else(corrupt)?;
        at = &at[used..];
        set_path(&mut doc, column, v);
    }
    Ok(doc)
}

/// Sets a field by path, making the objects on the way (`mango_doc:set_field`).
fn set_path(doc: &mut Value, path: &[String], v: Value) {
    let mut at = doc;
    for (i, part) in path.iter().enumerate() {
        let Value::Object(m) = at else { return };
        if i + 1 == path.len() {
            m.insert(part.clone(), v);
            return;
        }
        at = m.entry(part.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
}

/// A live document of a row (its `DOCS` value given), as the selector
/// sees it; `None` for a deleted or vanished one. Only `conflicts` needs
/// the revision tree decoded.
fn candidate(kv: &dyn rhizome_kv::KvRead, id: &str, info: Option<&[u8]>, conflicts: bool) -> Result<Option<Value>> {
    let Some(bytes) = info else { return Ok(None) };
    let header = DocInfo::header(bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
    if header.deleted {
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
        render_winner(kv, id, &header, None)?
    };
    Ok(doc.map(Value::Object))
}

/// Keeps only `fields` of a document (nested paths build nested objects),
/// as `mango_doc:get_field`/`set_field`.
pub fn project(doc: Value, fields: Option<&[Vec<String>]>) -> Value {
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
