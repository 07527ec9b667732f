//! Mango JSON indexes: their definitions (views of `"language": "query"`
//! design documents, as CouchDB keeps them, so they replicate and list in
//! `_all_docs`), their rows in the store and keeping them up to date.
//!
//! An index's rows are `MANGO_ROWS` keys: the index id, its columns'
//! values collated ([`crate::collate`]), then the document id, so rows sort
//! as CouchDB's view rows (by key, then id). A document is indexed when it
//! has every column's field and matches the `partial_filter_selector`
//! (`mango_native_proc`), design documents never. `MANGO_STATE` keeps the
//! sequence an index has seen; [`Database::refresh_mango_index`] brings it
//! to the database's sequence from the documents changed since, in
//! transactions of [`REFRESH_BATCH`] documents, so memory stays bounded
//! and writers wait at most one batch.

use crate::collate;
use crate::secondary::IndexSpaces;
use crate::keys::{self, DocInfo, DB_META, DOCS, MANGO_DOC_ROWS, MANGO_ROWS, MANGO_STATE};
use crate::read::render_winner;
use crate::selector::{join_path, split_path, Selector};
use crate::{Database, DocError, Result};
use md5::{Digest, Md5};
use rhizome_kv::KvRead;
use serde_json::{json, Map, Value};

/// The version of the rows' format (the collation encoding and the key
/// layout), part of every index id: a new format gives every index a new
/// id, so old rows are dropped as stale and the index is built again.
const ROW_FORMAT: &[u8] = b"mango-rows-1\0";

/// Documents per transaction while an index catches up.
pub const REFRESH_BATCH: usize = 1000;

pub(crate) fn mango_error(status: u16, error: &'static str, reason: impl Into<String>) -> DocError {
    DocError::Coded { status, error, reason: reason.into() }
}

/// One JSON index of a design document.
#[derive(Clone, Debug)]
pub struct IndexDef {
    /// `_design/...`
    pub ddoc: String,
    pub name: String,
    /// Column paths, in order.
    pub columns: Vec<Vec<String>>,
    /// Whether the definition's fields are `desc` (all or none are).
    pub descending: bool,
    pub partial: Option<Selector>,
    partial_json: Option<Value>,
    /// The index reads `_conflicts` (a column or its partial selector), so
    /// documents are indexed with it, as CouchDB's map functions see them.
    sees_conflicts: bool,
    /// A partitioned index (`options.partitioned` of its design document,
    /// the database's own setting by default): its rows put the
    /// document's partition before the columns, so that a partition's
    /// query is one range of rows; it serves only partition queries.
    pub partitioned: bool,
    /// The store's name for the index: a hash of its design document, name
    /// and definition, so a changed definition is a new index.
    pub id: [u8; 8],
}

impl IndexDef {
    /// What `GET /{db}/_index` shows of it.
    pub fn to_json(&self) -> Value {
        let dir = if self.descending { "desc" } else { "asc" };
        let fields: Vec<Value> = self.columns.iter().map(|c| json!({ join_path(c): dir })).collect();
        let mut def = json!({ "fields": fields });
        if let Some(p) = &self.partial_json {
            def["partial_filter_selector"] = p.clone();
        }
        json!({ "ddoc": self.ddoc, "name": self.name, "type": "json", "partitioned": self.partitioned, "def": def })
    }

    /// The `MANGO_ROWS` key of `doc` (with `_id`), if the index holds it.
    fn row_key(&self, id: &str, doc: &Value) -> Option<Vec<u8>> {
        if self.partial.as_ref().is_some_and(|p| !p.matches(doc)) {
            return None;
        }
        let mut key = self.id.to_vec();
        if self.partitioned {
            let partition = crate::partition::partition_of(id)?;
            collate::encode_into(&Value::String(partition.to_owned()), &mut key);
        }
        for column in &self.columns {
            collate::encode_into(crate::selector::get_path(doc, column)?, &mut key);
        }
        key.extend_from_slice(id.as_bytes());
        Some(key)
    }
}

/// A Mango design document's `_info` (see [`Database::mango_design_info`]).
#[derive(Clone, Debug)]
pub struct MangoDesignInfo {
    pub signature: [u8; 16],
    /// The sequence every index of the design document has seen.
    pub seen: u64,
    pub update_seq: u64,
    pub bytes: u64,
}

/// The definition of a new index, from a `POST /{db}/_index` body.
#[derive(Clone, Debug)]
pub struct NewIndex {
    pub ddoc: String,
    pub name: String,
    /// The view as it goes into the design document's `views`.
    pub view: Value,
    /// The design document's `options.partitioned` this index needs:
    /// `Some(false)` for a global index of a partitioned database, `None`
    /// for the database's default.
    pub partitioned: Option<bool>,
    db_partitioned: bool,
}

const CREATE_KEYS: &[&str] = &["index", "ddoc", "name", "type", "partitioned", "w"];

/// Reads a `POST /{db}/_index` body (`mango_opts:validate_idx_create`)
/// for a database that is not partitioned.
pub fn new_index(body: &Map<String, Value>) -> Result<NewIndex> {
    new_index_in(body, false)
}

/// [`new_index`] for a database partitioned or not: in a partitioned one
/// an index is partitioned unless `"partitioned": false` asks for a
/// global one (`mango_httpd:get_idx_partitioned`).
pub fn new_index_in(body: &Map<String, Value>, db_partitioned: bool) -> Result<NewIndex> {
    if let Some(bad) = body.keys().find(|k| !CREATE_KEYS.contains(&k.as_str())) {
        return Err(mango_error(400, "invalid_key", format!("Invalid key {bad} for this request.")));
    }
    match body.get("type").map(|t| t.as_str()) {
        None | Some(Some("json")) => {}
        Some(Some(t @ ("text" | "nouveau"))) => return Err(mango_error(503, "required index service unavailable", t)),
        Some(Some(t)) => return Err(mango_error(400, "invalid_index", format!("Invalid type for index: {t}"))),
        Some(None) => return Err(mango_error(400, "invalid_string", format!("Invalid string: {}", body["type"]))),
    }
    let partitioned = match body.get("partitioned") {
        None => None,
        Some(Value::Bool(true)) if !db_partitioned => {
            return Err(mango_error(400, "invalid_partitioned_option", "Requested partitioned option does not match existing value on this database"))
        }
        Some(Value::Bool(p)) => (*p != db_partitioned).then_some(*p),
        Some(v) => return Err(mango_error(400, "invalid_partitioned_value", format!("Invalid partitioned value: {v}"))),
    };
    let Some(index) = body.get("index") else {
        return Err(mango_error(400, "missing_required_key", "Missing required key: index"));
    };
    let Some(index) = index.as_object() else {
        return Err(mango_error(400, "invalid_index", format!("JSON indexes must be an object, not: {index}")));
    };
    // mango_idx_view:opts(): `fields` and `partial_filter_selector` only.
    if let Some(bad) = index.keys().find(|k| !["fields", "partial_filter_selector"].contains(&k.as_str())) {
        return Err(mango_error(400, "invalid_key", format!("Invalid key {bad} for this request.")));
    }
    let (columns, descending) = parse_fields(index.get("fields"))?;
    // Kept in its normal form, as mango_opts:validate_selector keeps it.
    let partial = match index.get("partial_filter_selector") {
        Some(p) => Some(Selector::parse(p).map_err(|e| mango_error(400, e.error, e.reason))?.to_json()),
        None => None,
    };
    let partial = partial.as_ref();
    let dir = if descending { "desc" } else { "asc" };
    let fields: Vec<Value> = columns.iter().map(|c| json!({ join_path(c): dir })).collect();
    let mut def = json!({ "fields": fields });
    if let Some(p) = partial {
        def["partial_filter_selector"] = p.clone();
    }
    let (ddoc, name) = index_names(body, &def, "json")?;
    let mut map = Map::new();
    map.insert("fields".into(), Value::Object(fields.iter().filter_map(Value::as_object).flat_map(|m| m.clone()).collect()));
    if let Some(p) = partial {
        map.insert("partial_filter_selector".into(), p.clone());
    }
    let view = json!({ "map": map, "reduce": "_count", "options": { "def": def } });
    Ok(NewIndex { ddoc, name, view, partitioned, db_partitioned })
}

/// The design document and name of a new Mango index of `kind` (`json`,
/// `nouveau`): those given, or the MD5 of the definition with the options,
/// as `mango_idx:gen_name` does (a definition given two names makes two
/// design documents).
pub fn index_names(body: &Map<String, Value>, def: &Value, kind: &str) -> Result<(String, String)> {
    let text = |k: &str| -> Result<Option<String>> {
        match body.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(mango_error(400, "invalid_empty_string", "Index name or ddoc cannot be empty string")),
            Some(v) => Err(mango_error(400, "invalid_string", format!("Invalid string: {v}"))),
        }
    };
    let given_name = text("name")?;
    let options = json!({ "def": def, "name": given_name, "type": kind, "partitioned": body.get("partitioned") });
    let hash: String = Md5::digest(options.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let ddoc = match text("ddoc")? {
        Some(d) if d == "_design/" => return Err(mango_error(400, "illegal_docid", "Illegal document id `_design/`")),
        Some(d) if d.starts_with("_design/") => d,
        Some(d) => format!("_design/{d}"),
        None => format!("_design/{hash}"),
    };
    Ok((ddoc, given_name.unwrap_or(hash)))
}

/// Index fields: names or `{name: "asc"|"desc"}`, one direction for all.
/// A column's path; an empty part is refused (`mango_sort`).
fn sort_field(field: &str) -> Result<Vec<String>> {
    let path = split_path(field);
    if path.iter().any(String::is_empty) {
        return Err(mango_error(400, "invalid_sort_field", format!("Invalid sort field: {}", Value::String(field.to_owned()))));
    }
    Ok(path)
}

fn parse_fields(fields: Option<&Value>) -> Result<(Vec<Vec<String>>, bool)> {
    let bad = |v: &Value| mango_error(400, "invalid_sort_json", format!("Sort must be an array of sort specs, not: {v}"));
    let Some(Value::Array(items)) = fields else {
        return Err(mango_error(400, "invalid_index", "Index is missing its definition."));
    };
    if items.is_empty() {
        return Err(mango_error(400, "invalid_index", "Index is missing its definition."));
    }
    let mut columns = Vec::new();
    let mut dirs = Vec::new();
    for item in items {
        match item {
            Value::String(s) => {
                columns.push(sort_field(s)?);
                dirs.push(false);
            }
            Value::Object(m) if m.len() == 1 => {
                let (k, v) = m.iter().next().expect("one member");
                let desc = match v.as_str() {
                    Some("asc") => false,
                    Some("desc") => true,
                    _ => return Err(mango_error(400, "invalid_sort_dir", format!("Invalid sort direction: {v}"))),
                };
                columns.push(sort_field(k)?);
                dirs.push(desc);
            }
            other => return Err(bad(other)),
        }
    }
    if dirs.iter().any(|d| *d != dirs[0]) {
        return Err(mango_error(400, "unsupported_mixed_sort", "Sorts currently only support a single direction for all fields."));
    }
    Ok((columns, dirs[0]))
}

/// Adds `index` to a design document (or a new one); `None` when the
/// document has this very index already (CouchDB's `"exists"`).
pub fn add_to_design_doc(ddoc: Option<Map<String, Value>>, index: &NewIndex) -> Result<Option<Map<String, Value>>> {
    // mango_util:check_lang: an existing design document must be of
    // language `query` (one without a language is not).
    if let Some(existing) = &ddoc {
        match existing.get("language") {
            Some(Value::String(l)) if l == "query" => {}
            None => return Err(mango_error(400, "invalid_ddoc_lang", "Existing design doc has an invalid language: false")),
            Some(Value::String(l)) => return Err(mango_error(400, "invalid_ddoc_lang", format!("Existing design doc has an invalid language: {{<<\"language\">>,<<\"{l}\">>}}"))),
            Some(other) => return Err(mango_error(400, "invalid_ddoc_lang", format!("Existing design doc has an invalid language: {other}"))),
        }
    }
    // mango_httpd:check_partitioned: the design document's setting must
    // be the one asked for.
    if let Some(existing) = &ddoc {
        let current = existing.get("options").and_then(|o| o.get("partitioned")).and_then(Value::as_bool);
        if current.unwrap_or(index.db_partitioned) != index.partitioned.unwrap_or(index.db_partitioned) {
            return Err(mango_error(400, "invalid_partitioned_option", format!("Requested partitioned option does not match existing value on design document {}", index.ddoc)));
        }
    }
    let mut doc = ddoc.unwrap_or_default();
    doc.insert("_id".into(), Value::String(index.ddoc.clone()));
    if let Some(p) = index.partitioned {
        doc.insert("options".into(), json!({ "partitioned": p }));
    }
    doc.insert("language".into(), Value::String("query".into()));
    let views = doc.entry("views").or_insert_with(|| Value::Object(Map::new()));
    if !views.is_object() {
        *views = Value::Object(Map::new());
    }
    let views = views.as_object_mut().expect("views is an object");
    if views.get(&index.name).and_then(|v| v.get("options")).and_then(|o| o.get("def")) == index.view.get("options").and_then(|o| o.get("def")) {
        return Ok(None);
    }
    views.insert(index.name.clone(), index.view.clone());
    Ok(Some(doc))
}

/// Removes the JSON index `name` from a design document: the document to
/// write (deleted when no view is left), or `None` if it has no such index.
pub fn remove_from_design_doc(mut doc: Map<String, Value>, name: &str) -> Option<Map<String, Value>> {
    if doc.get("language").and_then(Value::as_str) != Some("query") {
        return None;
    }
    let views = doc.get_mut("views")?.as_object_mut()?;
    views.remove(name)?;
    if views.is_empty() {
        let mut gone = Map::new();
        for k in ["_id", "_rev"] {
            if let Some(v) = doc.get(k) {
                gone.insert(k.to_owned(), v.clone());
            }
        }
        gone.insert("_deleted".into(), Value::Bool(true));
        return Some(gone);
    }
    Some(doc)
}

/// The JSON indexes of one design document's body.
pub(crate) fn indexes_of(ddoc: &str, body: &Map<String, Value>, db_partitioned: bool) -> Vec<IndexDef> {
    if body.get("language").and_then(Value::as_str) != Some("query") {
        return Vec::new();
    }
    let partitioned = db_partitioned && body.get("options").and_then(|o| o.get("partitioned")).and_then(Value::as_bool).unwrap_or(true);
    let Some(views) = body.get("views").and_then(Value::as_object) else { return Vec::new() };
    let mut out = Vec::new();
    for (name, view) in views {
        let def = view.get("options").and_then(|o| o.get("def"));
        let fields = def.and_then(|d| d.get("fields")).cloned().or_else(|| {
            // CouchDB's `map.fields` is an object of field -> direction.
            let m = view.get("map")?.get("fields")?.as_object()?;
            Some(Value::Array(m.iter().map(|(k, v)| json!({ k: v })).collect()))
        });
        let Ok((columns, descending)) = parse_fields(fields.as_ref()) else { continue };
        let partial_json = def.and_then(|d| d.get("partial_filter_selector")).or_else(|| view.get("map").and_then(|m| m.get("partial_filter_selector"))).cloned();
        let partial = match &partial_json {
            Some(p) => match Selector::parse(p) {
                Ok(s) => Some(s),
                Err(_) => continue,
            },
            None => None,
        };
        let conflicts = |path: &Vec<String>| path.first().is_some_and(|f| f == "_conflicts");
        let sees_conflicts = columns.iter().any(conflicts) || partial.as_ref().is_some_and(|p| super::ranges::selector_fields(p).iter().any(conflicts));
        let mut md5 = Md5::new();
        md5.update(ROW_FORMAT);
        md5.update(ddoc.as_bytes());
        md5.update([0]);
        md5.update(name.as_bytes());
        md5.update([0]);
        md5.update(json!({ "columns": columns, "partial": partial_json }).to_string().as_bytes());
        // Indexes that read `_conflicts` were built without it before: a
        // new id builds them again.
        if sees_conflicts {
            md5.update(b"\0with-conflicts");
        }
        // Partitioned rows have the partition first: another layout.
        if partitioned {
            md5.update(b"\0partitioned");
        }
        let id: [u8; 8] = md5.finalize()[..8].try_into().expect("an MD5 digest has 16 bytes");
        out.push(IndexDef { ddoc: ddoc.to_owned(), name: name.clone(), columns, descending, partial, partial_json, sees_conflicts, partitioned, id });
    }
    out
}

impl Database {
    /// Every JSON index of the database, by design document and name.
    pub fn mango_indexes(&self) -> Result<Vec<IndexDef>> {
        let s = self.store.snapshot()?;
        list_indexes(s.kv())
    }

    /// Brings an index up to the database's current sequence.
    pub fn refresh_mango_index(&self, index: &IndexDef) -> Result<()> {
        // Checked on a snapshot first: a query on an index that is up to
        // date (the usual case) neither waits for nor blocks writers.
        if !index_behind(self.store.snapshot()?.kv(), index)? {
            return Ok(());
        }
        loop {
            let mut txn = self.store.transaction()?;
            let seen = keys::u64_value(txn.kv().get(MANGO_STATE, &index.id)?, "index state")?;
            let update_seq = keys::u64_value(txn.kv().get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?;
            if seen >= update_seq {
                return Ok(());
            }
            let (batch, reached) = crate::secondary::changed_since(txn.kv(), seen, update_seq, REFRESH_BATCH)?;
            for (_, id) in &batch {
                let mut doc_row = index.id.to_vec();
                doc_row.extend_from_slice(id.as_bytes());
                if let Some(old) = txn.kv().get(MANGO_DOC_ROWS, &doc_row)? {
                    txn.kv_mut().delete(MANGO_ROWS, &old);
                    txn.kv_mut().delete(MANGO_DOC_ROWS, &doc_row);
                }
                if id.starts_with("_design/") {
                    continue;
                }
                let Some(bytes) = txn.kv().get(DOCS, id.as_bytes())? else { continue };
                let header = DocInfo::header(&bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
                if header.deleted {
                    continue;
                }
                let doc = if index.sees_conflicts {
                    let info = DocInfo::from_bytes(id, &bytes)?;
                    match crate::read::render(txn.kv(), id, &info, &info.winner, &crate::read::ReadOptions { conflicts: true, ..Default::default() }, None) {
                        Ok(doc) => Some(doc),
                        Err(DocError::NotFound(_)) => None,
                        Err(e) => return Err(e),
                    }
                } else {
                    render_winner(txn.kv(), id, &header, None)?
                };
                let Some(doc) = doc else { continue };
                let doc = Value::Object(doc);
                if let Some(row) = index.row_key(id, &doc) {
                    txn.kv_mut().put(MANGO_ROWS, &row, id.as_bytes());
                    txn.kv_mut().put(MANGO_DOC_ROWS, &doc_row, &row);
                }
            }
            txn.kv_mut().put(MANGO_STATE, &index.id, &reached.to_be_bytes());
            txn.commit()?;
        }
    }

    /// What `GET /{db}/_design/{ddoc}/_info` shows of a `query` design
    /// document: its indexes' signature, the sequence all of them have
    /// seen and their rows' bytes; `None` when `body` is not Mango's.
    pub fn mango_design_info(&self, ddoc: &str, body: &Map<String, Value>) -> Result<Option<MangoDesignInfo>> {
        if body.get("language").and_then(Value::as_str) != Some("query") {
            return Ok(None);
        }
        let indexes = indexes_of(ddoc, body, self.is_partitioned());
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let mut md5 = Md5::new();
        let mut seen = None::<u64>;
        let mut bytes = 0u64;
        for index in &indexes {
            md5.update(index.id);
            let seq = keys::u64_value(kv.get(MANGO_STATE, &index.id)?, "index state")?;
            seen = Some(seen.map_or(seq, |s| s.min(seq)));
            let upper = rhizome_kv::prefix_upper_bound(&index.id);
            for ks in [MANGO_ROWS, MANGO_DOC_ROWS] {
                let mut cursor = kv.cursor(ks, &index.id, upper.as_deref());
                cursor.seek_first();
                while cursor.valid() {
                    bytes += (cursor.key().len() + cursor.value().len()) as u64;
                    cursor.next();
                }
                cursor.status()?;
            }
        }
        let update_seq = keys::u64_value(kv.get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?;
        Ok(Some(MangoDesignInfo { signature: md5.finalize().into(), seen: seen.unwrap_or(update_seq), update_seq, bytes }))
    }

    /// Removes the rows of indexes no design document defines any more
    /// (`stale`, from [`stale_indexes`]).
    pub(crate) fn drop_mango_indexes(&self, stale: Vec<Vec<u8>>) -> Result<()> {
        self.drop_indexes(&MANGO_SPACES, &stale)
    }
}

/// Whether the index has not seen the database's last change.
pub(crate) fn index_behind(kv: &dyn KvRead, index: &IndexDef) -> Result<bool> {
    let seen = keys::u64_value(kv.get(MANGO_STATE, &index.id)?, "index state")?;
    Ok(seen < keys::u64_value(kv.get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?)
}

/// The ids of indexes with rows in the store that `live` does not define.
/// Where Mango's indexes keep their state and rows.
pub(crate) const MANGO_SPACES: IndexSpaces = IndexSpaces { state: MANGO_STATE, rows: &[MANGO_ROWS, MANGO_DOC_ROWS] };

pub(crate) fn stale_indexes(kv: &dyn KvRead, live: &[IndexDef]) -> Result<Vec<Vec<u8>>> {
    let live: Vec<&[u8]> = live.iter().map(|i| &i.id[..]).collect();
    MANGO_SPACES.stale(kv, &live)
}

pub(crate) fn list_indexes(kv: &dyn KvRead) -> Result<Vec<IndexDef>> {
    let partitioned = kv.get(DB_META, keys::meta::PARTITIONED)?.is_some();
    let mut out = Vec::new();
    let mut cursor = kv.cursor(DOCS, b"_design/", Some(b"_design0"));
    cursor.seek_first();
    while cursor.valid() {
        let id = String::from_utf8_lossy(cursor.key()).into_owned();
        let info = DocInfo::from_bytes(&id, cursor.value())?;
        if !info.deleted {
            if let Some(body) = crate::read::body(kv, &id, &info, &info.winner, None)? {
                out.extend(indexes_of(&id, &body, partitioned));
            }
        }
        cursor.next();
    }
    cursor.status()?;
    out.sort_by(|a, b| (&a.ddoc, &a.name).cmp(&(&b.ddoc, &b.name)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: Value) -> (u16, &'static str) {
        match new_index(body.as_object().unwrap()) {
            Err(DocError::Coded { status, error, .. }) => (status, error),
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn index_definitions_are_checked_as_couchdb_checks_them() {
        // mango_idx_view:opts(): a `selector` inside the index is an unknown key.
        assert_eq!(refused(json!({ "index": { "fields": ["a"], "selector": { "a": { "$gte": "F" } } } })), (400, "invalid_key"));
        assert_eq!(refused(json!({ "index": { "fields": [""] } })), (400, "invalid_sort_field"));
        assert_eq!(refused(json!({ "index": { "fields": ["a"] }, "ddoc": "_design/" })), (400, "illegal_docid"));
        assert_eq!(refused(json!({ "index": { "fields": ["a"] }, "ddoc": "" })), (400, "invalid_empty_string"));
        // The partial filter is kept in its normal form.
        let new = new_index(json!({ "index": { "fields": ["a"], "partial_filter_selector": { "type": "x" } } }).as_object().unwrap()).unwrap();
        assert_eq!(new.view["map"]["partial_filter_selector"], json!({ "type": { "$eq": "x" } }));
        assert_eq!(new.view["options"]["def"]["partial_filter_selector"], json!({ "type": { "$eq": "x" } }));
    }
}
