//! View queries with CouchDB 3's options
//! (https://docs.couchdb.org/en/stable/api/ddoc/views.html), over the rows
//! of [`crate::index`].
//!
//! Rows come from one range scan per requested key range (or per key of
//! `keys`), in collation order (reversed for `descending`). Reduce views
//! are reduced at query time, group by group (`group`, `group_level`),
//! in chunks of [`REDUCE_CHUNK`] rows then re-reduced. A built-in reduce
//! (`_count`, `_sum`, `_stats`) of one ascending range reads the stored
//! reductions of the rank buckets it covers whole, as CouchDB's B-tree
//! reads its inner nodes' (`bucket_reduce.rs`); `offset` is counted from
//! the buckets' row counts (`rank.rs`).

use crate::design::DesignDoc;
use crate::index::{self, index_id, process_error, view_prefix, IndexState, ViewError, VIEW_ROWS};
use crate::js::{Limits, Sandbox};
use crate::reduce::{Partial, ReduceError, Reducer};
use rhizome_docs::{collate, Database, DocError, ReadOptions, Rev};
use rhizome_kv::KvRead;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// Rows per call of a reduce function before partial results are re-reduced.
pub const REDUCE_CHUNK: usize = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UpdateMode {
    /// Bring the index up to date before answering (the default).
    #[default]
    True,
    /// Answer from the index as it is (`update=false`, `stale=ok`).
    False,
    /// Answer as it is, then update (`update=lazy`, `stale=update_after`).
    Lazy,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ViewQuery {
    pub key: Option<Value>,
    pub keys: Option<Vec<Value>>,
    pub start_key: Option<Value>,
    pub end_key: Option<Value>,
    pub start_docid: Option<String>,
    pub end_docid: Option<String>,
    pub inclusive_end: bool,
    pub descending: bool,
    pub skip: usize,
    pub limit: Option<usize>,
    pub group: Option<bool>,
    pub group_level: Option<usize>,
    pub reduce: Option<bool>,
    pub include_docs: bool,
    pub conflicts: bool,
    pub attachments: bool,
    pub update_seq: bool,
    pub update: UpdateMode,
    /// `partition`: the query of one partition's rows of a partitioned
    /// view (`/{db}/_partition/{p}/_design/...` sets it too).
    pub partition: Option<String>,
}

impl Default for ViewQuery {
    fn default() -> Self {
        ViewQuery {
            key: None,
            keys: None,
            start_key: None,
            end_key: None,
            start_docid: None,
            end_docid: None,
            inclusive_end: true,
            descending: false,
            skip: 0,
            limit: None,
            group: None,
            group_level: None,
            reduce: None,
            include_docs: false,
            conflicts: false,
            attachments: false,
            update_seq: false,
            update: UpdateMode::True,
            partition: None,
        }
    }
}

fn parse_error(reason: impl Into<String>) -> ViewError {
    ViewError::Query(reason.into())
}

fn boolean(name: &str, v: &Value) -> Result<bool, ViewError> {
    match v {
        Value::Bool(b) => Ok(*b),
        // Any case, as `couch_mrview_http:parse_boolean` (pycouchdb sends
        // Python's `True`).
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => Err(parse_error(format!("Invalid boolean parameter: {name}={}", plain(other)))),
    }
}

fn count(v: &Value) -> Result<usize, ViewError> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n >= 0 => Ok(n as usize),
        _ => Err(parse_error(format!("Invalid value for positive integer: {}", Value::String(plain(v))))),
    }
}

/// A parameter's text as given.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ViewQuery {
    /// From a query string: JSON values for keys, text for the rest.
    pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<ViewQuery, ViewError> {
        let mut q = ViewQuery::default();
        for (name, text) in params {
            let value = match name {
                "key" | "keys" | "startkey" | "start_key" | "endkey" | "end_key" => serde_json::from_str(text)
                    .map_err(|_| parse_error(format!("Invalid JSON for {name}: {text}")))?,
                _ => Value::String(text.to_owned()),
            };
            q.set(name, value)?;
        }
        q.check()?;
        Ok(q)
    }

    /// From a JSON body (`POST .../_view/{view}` and `/queries`), over
    /// what the query string gave.
    pub fn from_json(mut self, body: &Map<String, Value>) -> Result<ViewQuery, ViewError> {
        for (name, value) in body {
            self.set(name, value.clone())?;
        }
        self.check()?;
        Ok(self)
    }

    fn set(&mut self, name: &str, v: Value) -> Result<(), ViewError> {
        match name {
            "key" => self.key = Some(v),
            "keys" => match v {
                Value::Array(keys) => self.keys = Some(keys),
                _ => return Err(parse_error("`keys` member must be an array.")),
            },
            "startkey" | "start_key" => self.start_key = Some(v),
            "endkey" | "end_key" => self.end_key = Some(v),
            "startkey_docid" | "start_key_doc_id" => self.start_docid = Some(plain(&v)),
            "endkey_docid" | "end_key_doc_id" => self.end_docid = Some(plain(&v)),
            "inclusive_end" => self.inclusive_end = boolean(name, &v)?,
            "descending" => self.descending = boolean(name, &v)?,
            "skip" => self.skip = count(&v)?,
            "limit" => self.limit = Some(count(&v)?),
            "group" => self.group = Some(boolean(name, &v)?),
            "group_level" => self.group_level = Some(count(&v).map_err(|_| parse_error(format!("Invalid value for integer: {}", Value::String(plain(&v)))))?),
            "reduce" => self.reduce = Some(boolean(name, &v)?),
            "include_docs" => self.include_docs = boolean(name, &v)?,
            "conflicts" => self.conflicts = boolean(name, &v)?,
            "attachments" => self.attachments = boolean(name, &v)?,
            "update_seq" => self.update_seq = boolean(name, &v)?,
            "update" => {
                self.update = match plain(&v).as_str() {
                    "true" => UpdateMode::True,
                    "false" => UpdateMode::False,
                    "lazy" => UpdateMode::Lazy,
                    other => return Err(parse_error(format!("Invalid value for `update`: {other}"))),
                }
            }
            "stale" => {
                self.update = match plain(&v).as_str() {
                    "ok" => UpdateMode::False,
                    "update_after" => UpdateMode::Lazy,
                    other => return Err(parse_error(format!("Invalid value for `stale`: {other}"))),
                }
            }
            "partition" => self.partition = Some(plain(&v)),
            "stable" | "sorted" => {
                boolean(name, &v)?;
            }
            // Options CouchDB accepts that change nothing here, and any
            // other, which CouchDB keeps aside and ignores.
            _ => {}
        }
        Ok(())
    }

    fn check(&self) -> Result<(), ViewError> {
        if self.keys.is_some() && (self.key.is_some() || self.start_key.is_some() || self.end_key.is_some()) {
            return Err(parse_error("`keys` is incompatible with `key`, `start_key` and `end_key`"));
        }
        if self.group == Some(false) && self.group_level.is_some() {
            return Err(parse_error("Can't specify group=false and group_level"));
        }
        Ok(())
    }

    /// The key range as (start, end) in the query's direction.
    fn bounds(&self) -> (Option<&Value>, Option<&Value>) {
        match &self.key {
            Some(k) => (Some(k), Some(k)),
            None => (self.start_key.as_ref(), self.end_key.as_ref()),
        }
    }
}

/// What a view answers: the response body, as JSON text.
pub fn run_query(db: &Database, db_name: &str, ddoc: &DesignDoc, view_name: &str, q: &ViewQuery, limits: Limits) -> Result<String, ViewError> {
    let mut text = Vec::new();
    run_query_into(db, db_name, ddoc, view_name, q, limits, &mut |piece| {
        text.extend_from_slice(piece);
        Ok(())
    })?;
    String::from_utf8(text).map_err(|e| ViewError::Doc(DocError::Corrupt(format!("a view answer: {e}"))))
}

/// Bytes of an answer gathered before they go to the sink.
const SINK_BYTES: usize = 64 << 10;

/// [`run_query`], the answer given to `sink` a piece at a time as its map
/// rows are read (an answer of any size is not kept whole; a reduce's
/// groups still are).
pub fn run_query_into(
    db: &Database,
    db_name: &str,
    ddoc: &DesignDoc,
    view_name: &str,
    q: &ViewQuery,
    limits: Limits,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    let (view_no, view) = ddoc.view(view_name).ok_or_else(|| ViewError::NotFound("missing_named_view".into()))?;
    let reducing = match (view.reduce.is_some(), q.reduce) {
        (false, Some(true)) => return Err(parse_error("Reduce is invalid for map-only views.")),
        (has, r) => has && r != Some(false),
    };
    // As CouchDB 3.5: grouping rows that are not reduced (a map view, or
    // `reduce=false`) is an error.
    if !reducing && (q.group == Some(true) || q.group_level.is_some()) {
        return Err(parse_error("Invalid use of grouping on a map view."));
    }
    if reducing && q.include_docs {
        return Err(parse_error("`include_docs` is invalid for reduce"));
    }
    let grouped = q.group == Some(true) || q.group_level.is_some();
    let one_key;
    let q = match q.keys.as_deref() {
        // CouchDB 3.5 reads `keys` of one key as that `key`: one reduction.
        Some([key]) if reducing && !grouped => {
            one_key = ViewQuery { key: Some(key.clone()), keys: None, ..q.clone() };
            &one_key
        }
        Some(_) if reducing && !grouped => return Err(parse_error("Multi-key fetches for reduce views must use `group=true`")),
        _ => q,
    };
    if let (Some(s), Some(e)) = q.bounds() {
        let order = collate::compare(s, e);
        if !q.descending && order.is_gt() {
            return Err(parse_error("No rows can match your key range, reverse your start_key and end_key or set descending=true"));
        }
        if q.descending && order.is_lt() {
            return Err(parse_error("No rows can match your key range, reverse your start_key and end_key or set descending=false"));
        }
    }
    if q.update == UpdateMode::True {
        index::refresh(db, db_name, ddoc, limits)?;
    }
    let partition = view_partition(db, ddoc, q)?;
    let snapshot = db.store().snapshot()?;
    let kv = snapshot.kv();
    let id = index_id(ddoc);
    // The index as this snapshot has it (a refresh may have written since
    // `state` was read): its counts and rank buckets go with its rows.
    let current = IndexState::read(kv, &id)?.unwrap_or_default();
    let mut prefix = view_prefix(&id, view_no);
    if let Some(p) = partition {
        collate::encode_into(&Value::String(p.to_owned()), &mut prefix);
    }
    let ranges = ranges(&prefix, q);
    // The answer is written as JSON text: map rows go from their stored
    // text to the answer without being parsed into values.
    let mut out = String::from("{");
    let cached = (current.nonce != 0).then_some((current.nonce, current.seq));
    if reducing {
        // A built-in needs no sandbox (making one was most of a stored
        // reduction's time).
        let (reducer, mut sandbox) = match view.reduce.as_deref().and_then(crate::reduce::builtin) {
            Some(builtin) => (builtin, None),
            None => {
                let mut sandbox = Sandbox::new(limits).map_err(process_error)?;
                (DesignDoc::reducer(view, &mut sandbox, &ddoc.map_modules)?.expect("a reduce view"), Some(sandbox))
            }
        };
        // A built-in reduce of one ascending range reads the buckets'
        // stored reductions (`bucket_summary.rs`) for the buckets it
        // covers whole; the others reduce rows.
        let by_buckets = current.ranked && partition.is_none() && q.keys.is_none() && !q.descending && ranges.len() == 1 && matches!(reducer, Reducer::Count | Reducer::Sum | Reducer::Stats);
        let rows = if by_buckets {
            let fences = crate::rank::fences(kv, &prefix, cached)?;
            bucket_reduce::reduce(kv, &fences, &prefix, &ranges[0], q, reducer, &mut sandbox)?
        } else {
            reduce_rows(kv, &ranges, q, reducer, &mut sandbox)?
        };
        out.push_str(&format!("\"rows\":{}", Value::Array(rows)));
    } else {
        // A partition's rows are counted from its own range (the counts
        // by key range, `rank.rs`, are the whole view's).
        let ranked = current.ranked && partition.is_none();
        let total = match partition {
            Some(_) => count_rows(kv, &prefix)?,
            None => current.rows.get(view_no).copied().unwrap_or(0),
        };
        let offset = match ranges.first() {
            Some(r) if q.keys.is_none() && ranked && q.descending => total.saturating_sub(crate::rank::rows_before(kv, &prefix, &r.upper, cached)?),
            Some(r) if q.keys.is_none() && ranked => crate::rank::rows_before(kv, &prefix, &r.lower, cached)?,
            Some(r) if q.keys.is_none() => rows_before(kv, &prefix, r, q.descending)?,
            _ => 0,
        };
        // The first row returned comes after the skipped ones.
        let offset = (offset + q.skip as u64).min(total);
        out.push_str(&format!("\"total_rows\":{total},\"offset\":{offset},\"rows\":["));
        map_rows(db, kv, &ranges, q, &mut out, &mut |out| {
            if out.len() >= SINK_BYTES {
                sink(out.as_bytes())?;
                out.clear();
            }
            Ok(())
        })?;
        out.push(']');
    }
    if q.update_seq {
        out.push_str(&format!(",\"update_seq\":{}", current.seq));
    }
    out.push('}');
    sink(out.as_bytes())
}

/// The partition a query reads, checked as `couch_mrview_util` checks
/// it: a partitioned view needs one, a global view takes none.
fn view_partition<'q>(db: &Database, ddoc: &DesignDoc, q: &'q ViewQuery) -> Result<Option<&'q str>, ViewError> {
    let partitioned = ddoc.is_partitioned(db.is_partitioned());
    match (&q.partition, partitioned) {
        (Some(_), _) if !db.is_partitioned() => Err(parse_error("`partition` parameter is not supported on this db")),
        (Some(_), false) => Err(parse_error("`partition` parameter is not supported in this design doc")),
        (Some(p), true) => {
            rhizome_docs::check_partition_name(p).map_err(ViewError::Doc)?;
            Ok(Some(p))
        }
        (None, true) => Err(parse_error("`partition` parameter is mandatory for queries to this view.")),
        (None, false) => Ok(None),
    }
}

/// The rows under `prefix` (one partition's rows of a view).
fn count_rows(kv: &dyn KvRead, prefix: &[u8]) -> Result<u64, ViewError> {
    let upper = upper_of(prefix);
    let mut cursor = kv.cursor(VIEW_ROWS, prefix, Some(&upper));
    cursor.seek_first();
    let mut n = 0;
    while cursor.valid() {
        n += 1;
        cursor.next();
    }
    cursor.status()?;
    Ok(n)
}

/// A byte range of `VIEW_ROWS`: `[lower, upper)`.
struct Range {
    lower: Vec<u8>,
    upper: Vec<u8>,
}

fn upper_of(prefix: &[u8]) -> Vec<u8> {
    rhizome_kv::prefix_upper_bound(prefix).unwrap_or_else(|| vec![0xff; prefix.len() + 1])
}

fn with_key(prefix: &[u8], key: &Value, docid: Option<&str>) -> Vec<u8> {
    let mut k = prefix.to_vec();
    collate::encode_into(key, &mut k);
    if let Some(id) = docid {
        collate::encode_into(&Value::String(id.to_owned()), &mut k);
    }
    k
}

fn ranges(prefix: &[u8], q: &ViewQuery) -> Vec<Range> {
    if let Some(keys) = &q.keys {
        return keys
            .iter()
            .map(|k| {
                let base = with_key(prefix, k, None);
                Range { upper: upper_of(&base), lower: base }
            })
            .collect();
    }
    let (start, end) = q.bounds();
    let (start_id, end_id) = (q.start_docid.as_deref(), q.end_docid.as_deref());
    // `end` bounds one side, inclusively or not; `start` the other, always
    // inclusively.
    let end_bound = |inclusive_side_upper: bool| -> Option<Vec<u8>> {
        end.map(|e| {
            let base = with_key(prefix, e, end_id);
            if q.inclusive_end == inclusive_side_upper {
                upper_of(&base)
            } else {
                base
            }
        })
    };
    if !q.descending {
        let lower = start.map_or_else(|| prefix.to_vec(), |s| with_key(prefix, s, start_id));
        let upper = end_bound(true).unwrap_or_else(|| upper_of(prefix));
        vec![Range { lower, upper }]
    } else {
        let upper = start.map_or_else(|| upper_of(prefix), |s| upper_of(&with_key(prefix, s, start_id)));
        let lower = end_bound(false).unwrap_or_else(|| prefix.to_vec());
        vec![Range { lower, upper }]
    }
}

/// Calls `f` on each row of the ranges, in the query's order, until it
/// returns `false`. One cursor serves every range (a `keys` query of 10,000
/// keys is 10,000 seeks, not 10,000 new iterators).
fn scan(kv: &dyn KvRead, ranges: &[Range], descending: bool, mut f: impl FnMut(usize, &[u8]) -> Result<bool, ViewError>) -> Result<(), ViewError> {
    let (Some(low), Some(high)) = (ranges.iter().map(|r| &r.lower).min(), ranges.iter().map(|r| &r.upper).max()) else { return Ok(()) };
    let mut cursor = kv.cursor(VIEW_ROWS, low, Some(high));
    for (i, r) in ranges.iter().enumerate() {
        if r.lower >= r.upper {
            continue;
        }
        if descending {
            // The last row below `upper`.
            cursor.seek_for_prev(&r.upper);
            if cursor.valid() && cursor.key() >= r.upper.as_slice() {
                cursor.prev();
            }
        } else {
            cursor.seek(&r.lower);
        }
        while cursor.valid() && cursor.key() >= r.lower.as_slice() && cursor.key() < r.upper.as_slice() {
            if !f(i, cursor.value())? {
                return Ok(());
            }
            if descending {
                cursor.prev();
            } else {
                cursor.next();
            }
        }
        cursor.status()?;
    }
    Ok(())
}

fn row_parts(bytes: &[u8]) -> Result<(Value, String, Value), ViewError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("view row: {e}")))?;
    match v {
        Value::Array(mut a) if a.len() == 3 => {
            let value = a.pop().unwrap_or(Value::Null);
            let id = a.pop().and_then(|i| i.as_str().map(str::to_owned)).unwrap_or_default();
            Ok((a.pop().unwrap_or(Value::Null), id, value))
        }
        _ => Err(DocError::Corrupt("view row is not [key, id, value]".into()).into()),
    }
}

/// Rows of the view before the first row of `r` in the query's direction,
/// counted one by one (an index without `rank.rs`'s counts).
fn rows_before(kv: &dyn KvRead, prefix: &[u8], r: &Range, descending: bool) -> Result<u64, ViewError> {
    let (lower, upper) = if descending { (r.upper.clone(), upper_of(prefix)) } else { (prefix.to_vec(), r.lower.clone()) };
    if lower >= upper {
        return Ok(0);
    }
    let mut cursor = kv.cursor(VIEW_ROWS, &lower, Some(&upper));
    cursor.seek_first();
    let mut n = 0;
    while cursor.valid() {
        n += 1;
        cursor.next();
    }
    cursor.status()?;
    Ok(n)
}

/// A stored row's parts (`[key, doc id, value]`), the key and value as
/// the JSON text they were stored as.
fn stored_row(bytes: &[u8]) -> Result<(&RawValue, String, &RawValue), ViewError> {
    serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("view row: {e}")).into())
}

/// Appends `{"id":…,"key":…,"value":…` to an answer; the caller closes the
/// object (after a `doc`, if it adds one).
fn open_row(out: &mut String, key: &RawValue, id: &str, value: &RawValue) {
    out.push_str("{\"id\":");
    out.push_str(&Value::String(id.to_owned()).to_string());
    out.push_str(",\"key\":");
    out.push_str(key.get());
    out.push_str(",\"value\":");
    out.push_str(value.get());
}

/// The map rows into `out`, handed to `flush` after each row.
fn map_rows(db: &Database, kv: &dyn KvRead, ranges: &[Range], q: &ViewQuery, out: &mut String, flush: &mut dyn FnMut(&mut String) -> Result<(), ViewError>) -> Result<(), ViewError> {
    if q.keys.is_some() && q.skip == 0 && q.limit.is_none() && !q.descending && !q.include_docs {
        return keyed_rows(kv, ranges, out);
    }
    let mut skipped = 0;
    let mut written = 0;
    let limit = q.limit.unwrap_or(usize::MAX);
    if limit == 0 {
        return Ok(());
    }
    scan(kv, ranges, q.descending, |_, bytes| {
        if skipped < q.skip {
            skipped += 1;
            return Ok(true);
        }
        let (key, id, value) = stored_row(bytes)?;
        if written > 0 {
            out.push(',');
        }
        open_row(out, key, &id, value);
        if q.include_docs {
            let value: Value = serde_json::from_str(value.get()).map_err(|e| DocError::Corrupt(format!("view row: {e}")))?;
            out.push_str(",\"doc\":");
            out.push_str(&linked_doc(db, &id, &value, q)?.to_string());
        }
        out.push('}');
        written += 1;
        flush(out)?;
        Ok(written < limit)
    })
}

/// The rows of a `keys` query without paging: the keys are visited in
/// index order (a cursor moving forward costs less than seeks back and
/// forth) and the rows written back in the order the keys were given.
fn keyed_rows(kv: &dyn KvRead, ranges: &[Range], out: &mut String) -> Result<(), ViewError> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by(|a, b| ranges[*a].lower.cmp(&ranges[*b].lower));
    let mut texts: Vec<String> = vec![String::new(); ranges.len()];
    let (Some(low), Some(high)) = (ranges.iter().map(|r| &r.lower).min(), ranges.iter().map(|r| &r.upper).max()) else { return Ok(()) };
    let mut cursor = kv.cursor(VIEW_ROWS, low, Some(high));
    let mut last_upper: Option<&[u8]> = None;
    for i in order {
        let r = &ranges[i];
        // The cursor stands on the first row at or after the last range's
        // end: it is where this range starts if that end is not past this
        // start, or a few steps before it; otherwise (a key given twice,
        // a far jump) seek.
        let reusable = cursor.valid() && last_upper.is_some_and(|u| u <= r.lower.as_slice());
        let mut found = false;
        if reusable {
            for _ in 0..16 {
                if !cursor.valid() || cursor.key() >= r.lower.as_slice() {
                    found = true;
                    break;
                }
                cursor.next();
            }
        }
        if !found {
            cursor.seek(&r.lower);
        }
        last_upper = Some(r.upper.as_slice());
        let text = &mut texts[i];
        while cursor.valid() && cursor.key() < r.upper.as_slice() {
            let (key, id, value) = stored_row(cursor.value())?;
            if !text.is_empty() {
                text.push(',');
            }
            open_row(text, key, &id, value);
            text.push('}');
            cursor.next();
        }
        cursor.status()?;
    }
    let mut first = true;
    for t in texts.iter().filter(|t| !t.is_empty()) {
        if !first {
            out.push(',');
        }
        out.push_str(t);
        first = false;
    }
    Ok(())
}

/// The document `include_docs` adds: the one an emitted `{"_id": ...}`
/// value names (at its `_rev` if given), else the row's; `null` if it is
/// missing or deleted.
fn linked_doc(db: &Database, row_id: &str, value: &Value, q: &ViewQuery) -> Result<Value, ViewError> {
    let (id, rev) = match value.get("_id").and_then(Value::as_str) {
        Some(linked) => (linked, value.get("_rev").and_then(Value::as_str).and_then(Rev::parse)),
        None => (row_id, None),
    };
    let opts = ReadOptions { rev, conflicts: q.conflicts, attachments: q.attachments, ..Default::default() };
    match db.get_doc(id, &opts) {
        Ok(doc) => Ok(Value::Object(doc)),
        Err(DocError::NotFound(_)) => Ok(Value::Null),
        Err(e) => Err(e.into()),
    }
}

/// The part of a key a group is made of.
fn group_key(key: &Value, q: &ViewQuery) -> Value {
    match (q.group_level, q.group) {
        (Some(0), _) => Value::Null,
        (Some(level), _) => match key {
            Value::Array(items) => Value::Array(items.iter().take(level).cloned().collect()),
            other => other.clone(),
        },
        (None, Some(true)) => key.clone(),
        (None, _) => Value::Null,
    }
}

struct Group {
    key: Value,
    /// The collated group key and the range it came from (a group never
    /// spans two keys of `keys`).
    id: (usize, Vec<u8>),
    chunk: Vec<(Value, String, Value)>,
    partials: Vec<Partial>,
}

fn reduce_error(e: ReduceError) -> ViewError {
    match e {
        ReduceError::InvalidValue(m) => ViewError::InvalidValue(m),
        ReduceError::Js(e) => process_error(e),
    }
}

fn finish(group: Group, reducer: Reducer, sandbox: &mut Option<Sandbox>) -> Result<Value, ViewError> {
    let mut partials = group.partials;
    if !group.chunk.is_empty() {
        partials.push(reducer.reduce(sandbox.as_mut(), &group.chunk).map_err(reduce_error)?);
    }
    let value = reducer.rereduce(sandbox.as_mut(), partials).map_err(reduce_error)?.finalize();
    Ok(json!({ "key": group.key, "value": value }))
}

/// Rows and bucket reductions gathered into groups in key order, each
/// group reduced when the next starts and kept with `skip` and `limit`.
struct Groups<'q> {
    q: &'q ViewQuery,
    reducer: Reducer,
    limit: usize,
    skipped: usize,
    out: Vec<Value>,
    current: Option<Group>,
}

impl<'q> Groups<'q> {
    fn new(q: &'q ViewQuery, reducer: Reducer) -> Groups<'q> {
        Groups { q, reducer, limit: q.limit.unwrap_or(usize::MAX), skipped: 0, out: Vec::new(), current: None }
    }

    fn full(&self) -> bool {
        self.out.len() >= self.limit
    }

    fn emit(&mut self, g: Group, sandbox: &mut Option<Sandbox>) -> Result<bool, ViewError> {
        if self.skipped < self.q.skip {
            self.skipped += 1;
            return Ok(true);
        }
        self.out.push(finish(g, self.reducer, sandbox)?);
        Ok(!self.full())
    }

    /// Makes `gid` the current group (`key` gives its key when it is a
    /// new one); `false` once the answer is full.
    fn enter(&mut self, gid: (usize, Vec<u8>), key: impl FnOnce() -> Result<Value, ViewError>, sandbox: &mut Option<Sandbox>) -> Result<bool, ViewError> {
        if self.current.as_ref().is_some_and(|g| g.id != gid) {
            let done = self.current.take().expect("checked");
            if !self.emit(done, sandbox)? {
                return Ok(false);
            }
        }
        if self.current.is_none() {
            self.current = Some(Group { key: key()?, id: gid, chunk: Vec::new(), partials: Vec::new() });
        }
        Ok(true)
    }

    /// A row of range `range`; `false` once the answer is full.
    fn row(&mut self, range: usize, key: Value, id: String, value: Value, sandbox: &mut Option<Sandbox>) -> Result<bool, ViewError> {
        let gk = group_key(&key, self.q);
        let gid = (range, collate::encode(&gk));
        if !self.enter(gid, || Ok(gk), sandbox)? {
            return Ok(false);
        }
        let reducer = self.reducer;
        let g = self.current.as_mut().expect("entered");
        g.chunk.push((key, id, value));
        if g.chunk.len() >= REDUCE_CHUNK {
            let chunk = std::mem::take(&mut g.chunk);
            g.partials.push(reducer.reduce(sandbox.as_mut(), &chunk).map_err(reduce_error)?);
        }
        Ok(true)
    }

    /// The reduction of rows that are all in group `gid`, after the rows
    /// given before; `false` once the answer is full.
    fn partial(&mut self, gid: (usize, Vec<u8>), key: impl FnOnce() -> Result<Value, ViewError>, partial: Partial, sandbox: &mut Option<Sandbox>) -> Result<bool, ViewError> {
        if !self.enter(gid, key, sandbox)? {
            return Ok(false);
        }
        let reducer = self.reducer;
        let g = self.current.as_mut().expect("entered");
        // Partials stay in key order (`_sum` reports the first bad value).
        if !g.chunk.is_empty() {
            let chunk = std::mem::take(&mut g.chunk);
            g.partials.push(reducer.reduce(sandbox.as_mut(), &chunk).map_err(reduce_error)?);
        }
        g.partials.push(partial);
        Ok(true)
    }

    fn finish(mut self, sandbox: &mut Option<Sandbox>) -> Result<Vec<Value>, ViewError> {
        if !self.full() {
            if let Some(g) = self.current.take() {
                self.emit(g, sandbox)?;
            }
        }
        Ok(self.out)
    }
}

fn reduce_rows(kv: &dyn KvRead, ranges: &[Range], q: &ViewQuery, reducer: Reducer, sandbox: &mut Option<Sandbox>) -> Result<Vec<Value>, ViewError> {
    let mut groups = Groups::new(q, reducer);
    if groups.full() {
        return Ok(Vec::new());
    }
    scan(kv, ranges, q.descending, |range, bytes| {
        let (key, id, value) = row_parts(bytes)?;
        groups.row(range, key, id, value, sandbox)
    })?;
    groups.finish(sandbox)
}

mod bucket_reduce;
#[cfg(test)]
mod bucket_tests;
#[cfg(test)]
mod bulk_build_tests;
#[cfg(test)]
mod tests;
