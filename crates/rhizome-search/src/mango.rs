//! Mango indexes of type `nouveau` and the `$text` operator, as CouchDB
//! 3.5 has them (https://docs.couchdb.org/en/stable/api/database/find.html#find-text):
//! a definition written by `POST /{db}/_index` into a `"language":
//! "query"` design document's `nouveau` member, documents indexed here in
//! Rust as CouchDB's `mango_native_proc` indexes them (no JavaScript), and
//! `_find` by `$text`.
//!
//! Each indexed value is a field named by its path and JSON type,
//! `name:string`, `age:number`, `tags.[]:string`, `ok:boolean` (a string
//! `"true"`/`"false"`), and every string also goes into the text field
//! `$default`, which `$text` searches as a phrase (`mango_selector_text`
//! quotes its argument). A `_find` with `$text` among the top-level
//! conditions reads the index's hits in relevance order (or the sort
//! asked, by typed field names as CouchDB's text indexes take them) and
//! keeps the documents that match the rest of the selector, as
//! `mango_cursor_nouveau` does; its bookmark is Nouveau's.

use crate::index::{FieldKind, IndexFiles};
use crate::query::{self, SearchRequest};
use crate::{Result, SearchError};
use rhizome_docs::mango::plan::FindOptions;
use rhizome_docs::selector::{join_path, Selector};
use rhizome_docs::{Database, DocError, ReadOptions};
use serde_json::{json, Map, Value};

/// The text field every string value also goes into.
pub const DEFAULT_FIELD: &str = "$default";

/// Hits asked of the index per round (CouchDB's `nouveau.max_limit`).
const HITS_PER_ROUND: usize = 200;

fn mango_error(status: u16, error: &'static str, reason: impl Into<String>) -> SearchError {
    SearchError::Doc(DocError::Coded { status, error, reason: reason.into() })
}

/// A Mango `nouveau` index definition (`mango_idx_nouveau:opts()`).
#[derive(Clone, Debug, PartialEq)]
pub struct MangoDef {
    /// `(name, type)` of the fields indexed; `None`: every field.
    pub fields: Option<Vec<(String, String)>>,
    pub default_field: bool,
    pub default_field_analyzer: String,
    pub default_analyzer: String,
    /// Documents indexed are those this selector matches (`{}`: all).
    pub partial_filter_selector: Value,
    /// The legacy name of the partial filter (`selector`).
    pub selector: Value,
    pub index_array_lengths: bool,
}

const DEF_KEYS: &[&str] = &["default_analyzer", "default_field", "partial_filter_selector", "selector", "fields", "index_array_lengths"];
const FIELD_TYPES: &[&str] = &["text", "string", "number", "boolean"];

fn fields_error(v: &Value) -> SearchError {
    mango_error(
        400,
        "invalid_index_fields_definition",
        format!("Text Index field definitions must be of the form {{\"name\": \"non-empty fieldname\", \"type\": \"boolean,number,string or text\"}}. Def: {v}"),
    )
}

fn checked_selector(v: Option<&Value>) -> Result<Value> {
    match v {
        None => Ok(json!({})),
        Some(Value::Object(m)) if m.is_empty() => Ok(json!({})),
        Some(s) => Ok(Selector::parse(s).map_err(|e| mango_error(400, e.error, e.reason))?.to_json()),
    }
}

impl MangoDef {
    /// Reads an `index` object of `POST /{db}/_index` or of a design
    /// document, with CouchDB's checks.
    pub fn parse(m: &Map<String, Value>) -> Result<MangoDef> {
        if let Some(bad) = m.keys().find(|k| !DEF_KEYS.contains(&k.as_str())) {
            return Err(mango_error(400, "invalid_key", format!("Invalid key {bad} for this request.")));
        }
        let default_analyzer = match m.get("default_analyzer") {
            None => "keyword".to_owned(),
            Some(Value::String(a)) => a.clone(),
            Some(v) => return Err(mango_error(400, "invalid_string", format!("Invalid string: {v}"))),
        };
        let (default_field, default_field_analyzer) = match m.get("default_field") {
            None => (true, "standard".to_owned()),
            Some(Value::Bool(b)) => (*b, "standard".to_owned()),
            Some(Value::Object(o)) => {
                let enabled = match o.get("enabled") {
                    None => true,
                    Some(Value::Bool(b)) => *b,
                    Some(v) => return Err(mango_error(400, "invalid_boolean", format!("Invalid boolean value: {v}"))),
                };
                let analyzer = match o.get("analyzer") {
                    None => "standard".to_owned(),
                    Some(Value::String(a)) => a.clone(),
                    Some(v) => return Err(mango_error(400, "invalid_string", format!("Invalid string: {v}"))),
                };
                (enabled, analyzer)
            }
            Some(v) => return Err(mango_error(400, "invalid_default_field", format!("Invalid default field: {v}"))),
        };
        crate::analyzers::check(&default_field_analyzer)?;
        let fields = match m.get("fields") {
            None | Some(Value::String(_)) => None,
            Some(Value::Array(list)) if list.is_empty() => None,
            Some(Value::Array(list)) => {
                let mut out = Vec::with_capacity(list.len());
                for f in list {
                    let o = f.as_object().ok_or_else(|| fields_error(f))?;
                    let name = o.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or_else(|| fields_error(f))?;
                    let typ = o.get("type").and_then(Value::as_str).filter(|t| FIELD_TYPES.contains(t)).ok_or_else(|| fields_error(f))?;
                    if o.len() != 2 {
                        return Err(fields_error(f));
                    }
                    out.push((name.to_owned(), typ.to_owned()));
                }
                Some(out)
            }
            Some(v) => return Err(fields_error(v)),
        };
        let index_array_lengths = match m.get("index_array_lengths") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(mango_error(400, "invalid_boolean", format!("Invalid boolean value: {v}"))),
        };
        Ok(MangoDef {
            fields,
            default_field,
            default_field_analyzer,
            default_analyzer,
            partial_filter_selector: checked_selector(m.get("partial_filter_selector"))?,
            selector: checked_selector(m.get("selector"))?,
            index_array_lengths,
        })
    }

    /// The definition as the design document keeps it.
    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> = self.fields.iter().flatten().map(|(n, t)| json!({ "name": n, "type": t })).collect();
        json!({
            "default_analyzer": self.default_analyzer,
            "default_field": self.default_field_json(),
            "partial_filter_selector": self.partial_filter_selector,
            "selector": self.selector,
            "fields": fields,
            "index_array_lengths": self.index_array_lengths,
        })
    }

    fn default_field_json(&self) -> Value {
        if self.default_field && self.default_field_analyzer == "standard" {
            json!({})
        } else {
            json!({ "enabled": self.default_field, "analyzer": self.default_field_analyzer })
        }
    }

    /// The definition as `GET /{db}/_index` shows it (`def_to_json`).
    pub fn to_listed_json(&self) -> Value {
        let fields: Vec<Value> = self.fields.iter().flatten().map(|(n, t)| json!({ n.clone(): t })).collect();
        let mut def = Map::new();
        def.insert("default_analyzer".into(), Value::from(self.default_analyzer.clone()));
        def.insert("default_field".into(), self.default_field_json());
        if self.partial_filter_selector.as_object().is_some_and(|m| !m.is_empty()) {
            def.insert("partial_filter_selector".into(), self.partial_filter_selector.clone());
        }
        def.insert("selector".into(), self.selector.clone());
        def.insert("fields".into(), Value::Array(fields));
        def.insert("index_array_lengths".into(), Value::Bool(self.index_array_lengths));
        Value::Object(def)
    }

    /// The partial filter, if any (`partial_filter_selector`, else the
    /// legacy `selector`).
    fn partial_filter(&self) -> Option<Selector> {
        let s = if self.partial_filter_selector.as_object().is_some_and(|m| !m.is_empty()) { &self.partial_filter_selector } else { &self.selector };
        if s.as_object().is_some_and(|m| m.is_empty()) {
            return None;
        }
        Selector::parse(s).ok()
    }

    /// Whether the index holds the typed field `name` (`title:string`).
    fn has_field(&self, name: &str) -> bool {
        match &self.fields {
            None => true,
            Some(list) => list.iter().any(|(n, t)| format!("{n}:{t}") == name),
        }
    }
}

/// A new Mango `nouveau` index from a `POST /{db}/_index` body: its
/// design document id, its name and its definition.
pub struct NewMangoIndex {
    pub ddoc: String,
    pub name: String,
    pub def: MangoDef,
}

impl NewMangoIndex {
    /// Reads the body (`mango_opts:validate_idx_create` and
    /// `mango_idx_nouveau:validate_new`); the `type` is `nouveau`.
    pub fn parse(body: &Map<String, Value>) -> Result<NewMangoIndex> {
        const CREATE_KEYS: &[&str] = &["index", "ddoc", "name", "type", "partitioned", "w"];
        if let Some(bad) = body.keys().find(|k| !CREATE_KEYS.contains(&k.as_str())) {
            return Err(mango_error(400, "invalid_key", format!("Invalid key {bad} for this request.")));
        }
        let index = match body.get("index") {
            None => return Err(mango_error(400, "missing_required_key", "Missing required key: index")),
            Some(Value::Object(m)) => m,
            Some(v) => return Err(mango_error(400, "invalid_index_text", format!("Text indexes must be an object, not: {v}"))),
        };
        let def = MangoDef::parse(index)?;
        let (ddoc, name) = rhizome_docs::mango::index::index_names(body, &def.to_json(), "nouveau")?;
        Ok(NewMangoIndex { ddoc, name, def })
    }

    /// The design document with this index in its `nouveau` member, or
    /// `None` when it is there already as defined (`"result": "exists"`).
    pub fn add_to_design_doc(&self, ddoc: Option<Map<String, Value>>) -> Result<Option<Map<String, Value>>> {
        let mut doc = ddoc.filter(|d| !d.contains_key("_deleted")).unwrap_or_else(|| {
            let mut m = Map::new();
            m.insert("_id".into(), Value::String(self.ddoc.clone()));
            m
        });
        match doc.get("language").and_then(Value::as_str) {
            None => {
                doc.insert("language".into(), Value::from("query"));
            }
            Some("query") => {}
            Some(other) => {
                return Err(mango_error(400, "invalid_language", format!("Design document {} has language {other}; Mango indexes need \"query\"", self.ddoc)));
            }
        }
        let entry = json!({
            "index": self.def.to_json(),
            "analyzer": {
                "name": "perfield",
                "default": self.def.default_analyzer,
                "fields": { DEFAULT_FIELD: self.def.default_field_analyzer },
            },
        });
        let nouveau = doc.entry("nouveau").or_insert_with(|| json!({}));
        let Value::Object(indexes) = nouveau else {
            return Err(mango_error(400, "invalid_design_doc", format!("The `nouveau` member of {} must be an object", self.ddoc)));
        };
        if indexes.get(&self.name).and_then(|e| e.get("index")).and_then(Value::as_object).and_then(|d| MangoDef::parse(d).ok()).as_ref() == Some(&self.def) {
            return Ok(None);
        }
        indexes.insert(self.name.clone(), entry);
        Ok(Some(doc))
    }
}

/// The design document without the index `name` of its `nouveau` member,
/// or `None` when it has no such index.
pub fn remove_from_design_doc(mut doc: Map<String, Value>, name: &str) -> Option<Map<String, Value>> {
    let Value::Object(indexes) = doc.get_mut("nouveau")? else { return None };
    indexes.get(name)?.get("index")?.as_object()?;
    indexes.remove(name);
    if indexes.is_empty() {
        doc.remove("nouveau");
    }
    Some(doc)
}

/// A document's index entries, as the rows an index function would emit
/// (`[[type, name, store], value]`), following `mango_native_proc`'s
/// `get_nouveau_entries`. No rows when the partial filter refuses it.
pub(crate) struct MangoIndexer {
    def: MangoDef,
    partial: Option<Selector>,
}

impl MangoIndexer {
    pub fn new(def: &MangoDef) -> MangoIndexer {
        MangoIndexer { def: def.clone(), partial: def.partial_filter() }
    }

    pub fn rows(&self, doc: &Value) -> Vec<(Value, Value)> {
        if self.partial.as_ref().is_some_and(|p| !p.matches(doc)) {
            return Vec::new();
        }
        let mut fields: Vec<(String, &'static str, Value)> = Vec::new();
        let mut path = Vec::new();
        self.walk(doc, &mut path, &mut fields);
        let mut rows = Vec::with_capacity(fields.len() * 2);
        for (name, typ, value) in fields {
            if self.def.default_field && typ == "string" {
                rows.push((json!(["text", DEFAULT_FIELD, false]), value.clone()));
            }
            let (kind, value) = match (typ, value) {
                ("number", v) => ("double", v),
                ("boolean", Value::Bool(b)) => ("string", Value::from(if b { "true" } else { "false" })),
                (_, v) => ("string", v),
            };
            rows.push((json!([kind, name, false]), value));
        }
        rows
    }

    fn walk(&self, v: &Value, path: &mut Vec<String>, out: &mut Vec<(String, &'static str, Value)>) {
        let typed = |path: &[String], typ: &str| format!("{}:{typ}", join_path(path));
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    path.push(k.clone());
                    self.walk(x, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                path.push("[]".into());
                if self.def.index_array_lengths && self.def.has_field(&format!("{}:length", join_path(path))) {
                    out.push((typed(path, "length"), "number", Value::from(items.len())));
                }
                for x in items {
                    self.walk(x, path, out);
                }
                path.pop();
            }
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                if path.is_empty() {
                    return;
                }
                let typ = match v {
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    _ => "boolean",
                };
                let name = typed(path, typ);
                if self.def.has_field(&name) {
                    out.push((name, typ, v.clone()));
                }
            }
            // Nouveau has no null field (`convert_nouveau_fields`).
            Value::Null => {}
        }
    }
}

/// The text query of a `$text` argument: its words as a phrase over the
/// `$default` field (`mango_selector_text:value_str` quotes it).
pub fn text_argument(arg: &Value) -> Result<String> {
    match arg {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(mango_error(400, "bad_arg", format!("Bad argument for operator $text: {other}"))),
    }
}

/// Every document id whose `$default` text holds the phrase `text`
/// (for a `$text` below an `$or` or `$not`, which the rest of the
/// selector decides around).
pub fn matching_ids(files: &IndexFiles, text: &str) -> Result<Vec<String>> {
    query::phrase_ids(files, DEFAULT_FIELD, text)
}

/// What a `$text` `_find` ended with.
pub struct TextFindEnd {
    pub bookmark: String,
    pub docs_examined: u64,
    pub results_returned: u64,
}

/// The Nouveau sort of a Mango sort: typed field names (`age:number`,
/// `name:string`) as CouchDB's text indexes take them; an untyped name is
/// read as the type the index has seen for it.
fn nouveau_sort(files: &IndexFiles, opts: &FindOptions) -> Vec<String> {
    let kinds = files.state.lock().unwrap_or_else(|e| e.into_inner()).kinds.clone();
    let dir = if opts.descending { "-" } else { "" };
    opts.sort
        .iter()
        .map(|path| {
            let name = join_path(path);
            if name.ends_with(":number") {
                format!("{dir}{name}<double>")
            } else if name.ends_with(":string") || name.ends_with(":boolean") {
                format!("{dir}{name}<string>")
            } else if kinds.get(&format!("{name}:number")) == Some(&FieldKind::Double) {
                format!("{dir}{name}:number<double>")
            } else {
                format!("{dir}{name}:string<string>")
            }
        })
        .collect()
}

/// Runs a `_find` whose top-level conditions hold `$text`: the index's
/// hits for `text`, in relevance order or `opts`' sort, each document
/// kept when it matches `opts.selector` (the rest of the selector), after
/// `skip`, up to `limit`; `emit` gets each (projected) document and
/// returns false to stop.
pub fn find(db: &Database, files: &IndexFiles, text: &str, opts: &FindOptions, emit: &mut dyn FnMut(Value) -> bool) -> Result<TextFindEnd> {
    let (mut skip, mut left) = (opts.skip, opts.limit);
    let mut end = TextFindEnd { bookmark: opts.bookmark.clone().unwrap_or_else(|| "nil".into()), docs_examined: 0, results_returned: 0 };
    if left == 0 {
        return Ok(end);
    }
    let query = query::phrase(files, DEFAULT_FIELD, text)?;
    let mut req = SearchRequest { sort: nouveau_sort(files, opts), bookmark: opts.bookmark.clone(), ..SearchRequest::default() };
    let mut seen = std::collections::HashSet::new();
    loop {
        req.limit = HITS_PER_ROUND.min((left + skip).max(1) as usize);
        let answer = query::search_query(db, files, &req, query.box_clone())?;
        let hits = answer["hits"].as_array().cloned().unwrap_or_default();
        if hits.is_empty() {
            return Ok(end);
        }
        for hit in &hits {
            end.bookmark = query::bookmark_of(&hit["order"]);
            req.bookmark = Some(end.bookmark.clone());
            let Some(id) = hit["id"].as_str() else { continue };
            let doc = match db.get_doc(id, &ReadOptions { conflicts: opts.conflicts, ..ReadOptions::default() }) {
                Ok(d) => Value::Object(d),
                Err(DocError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            end.docs_examined += 1;
            if !opts.selector.matches(&doc) || !seen.insert(id.to_owned()) {
                continue;
            }
            if skip > 0 {
                skip -= 1;
                continue;
            }
            end.results_returned += 1;
            left -= 1;
            let go_on = emit(rhizome_docs::mango::project(doc, opts.fields.as_deref()));
            if left == 0 || !go_on {
                return Ok(end);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(v: Value) -> MangoDef {
        MangoDef::parse(v.as_object().unwrap()).unwrap()
    }

    #[test]
    fn strings_go_to_the_default_field_and_values_by_path_and_type() {
        let i = MangoIndexer::new(&def(json!({})));
        let rows = i.rows(&json!({ "_id": "a", "title": "Quick fox", "n": 2, "ok": true, "tags": ["x"], "nothing": null }));
        let has = |k: Value, v: Value| rows.iter().any(|(a, b)| *a == k && *b == v);
        assert!(has(json!(["text", "$default", false]), json!("Quick fox")), "{rows:?}");
        assert!(has(json!(["string", "title:string", false]), json!("Quick fox")));
        assert!(has(json!(["double", "n:number", false]), json!(2)));
        assert!(has(json!(["string", "ok:boolean", false]), json!("true")));
        assert!(has(json!(["string", "tags.[]:string", false]), json!("x")));
        assert!(!rows.iter().any(|(k, _)| k[1].as_str().unwrap().starts_with("nothing")));
    }

    #[test]
    fn a_field_list_and_a_partial_filter_narrow_what_is_indexed() {
        let i = MangoIndexer::new(&def(json!({ "fields": [{ "name": "title", "type": "string" }], "partial_filter_selector": { "kind": "post" } })));
        assert!(i.rows(&json!({ "kind": "page", "title": "x" })).is_empty());
        let rows = i.rows(&json!({ "kind": "post", "title": "x", "body": "y" }));
        assert!(rows.iter().all(|(k, _)| k[1] == "title:string" || k[1] == "$default"), "{rows:?}");
        assert!(!rows.iter().any(|(_, v)| *v == "y"));
    }

    #[test]
    fn refuses_bad_field_definitions() {
        for bad in [json!({ "fields": [{ "name": "" , "type": "string" }] }), json!({ "fields": [{ "name": "a", "type": "date" }] }), json!({ "fields": 3 }), json!({ "colour": 1 })] {
            assert!(MangoDef::parse(bad.as_object().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn adding_the_same_definition_twice_is_exists() {
        let new = NewMangoIndex::parse(json!({ "index": {}, "type": "nouveau", "ddoc": "t", "name": "n" }).as_object().unwrap()).unwrap();
        let doc = new.add_to_design_doc(None).unwrap().unwrap();
        assert_eq!(doc["language"], "query");
        assert!(new.add_to_design_doc(Some(doc.clone())).unwrap().is_none());
        let parsed = crate::NouveauDef::parse_all("_design/t", &doc).unwrap();
        assert_eq!(parsed[0].mango.as_ref(), Some(&new.def));
        assert_eq!(parsed[0].analyzer_of(DEFAULT_FIELD), "standard");
        assert!(remove_from_design_doc(doc, "n").is_some_and(|d| !d.contains_key("nouveau")));
    }
}
