//! The options of `_find`/`_explain` and the choice of an index, as
//! CouchDB 3.5 makes it (`mango_opts`, `mango_idx:get_usable_indexes`,
//! `mango_cursor:create`, `mango_cursor_view:choose_best_index`).
//!
//! A JSON index is usable when the selector requires every column that is
//! not a sort field (the index holds only documents having them all) and
//! the sort is its columns in order, after columns the selector fixes to
//! one value; `_all_docs` when there is no sort, or the sort is `_id` and
//! the selector ranges `_id`. Indexes with a `partial_filter_selector` are
//! used only when `use_index` names them. A usable JSON index is preferred
//! to `_all_docs`; among JSON indexes the one whose leading columns use
//! most of the fields the selector ranges ([`ranges`]) wins, then the one
//! with fewer columns, then the first by design document and name. The
//! [`Trace`] of that choice is what `_explain` shows as `index_candidates`.

use super::index::{mango_error, IndexDef};
use super::ranges::{self, indexable_fields, Edge, FieldRange, Op, Range};
use crate::selector::{split_path, Selector};
use crate::Result;
use serde_json::{json, Map, Value};

/// CouchDB's default `limit` of `_find`.
pub const DEFAULT_LIMIT: u64 = 25;

#[derive(Clone, Debug)]
pub struct FindOptions {
    pub selector: Selector,
    /// The selector selects nothing ([`Selector::is_noop`]).
    pub noop: bool,
    pub limit: u64,
    pub skip: u64,
    /// Field paths to keep; `None`: the whole document.
    pub fields: Option<Vec<Vec<String>>>,
    fields_json: Value,
    /// `(path, descending)`; one direction for all.
    pub sort: Vec<Vec<String>>,
    pub descending: bool,
    sort_json: Value,
    pub bookmark: Option<String>,
    /// `[ddoc]` or `[ddoc, name]`; empty when not given.
    pub use_index: Vec<String>,
    pub allow_fallback: bool,
    pub conflicts: bool,
    pub r: u64,
    pub update: bool,
    pub stable: bool,
    pub execution_stats: bool,
    /// The partition queried (`/{db}/_partition/{p}/_find` or the body's
    /// `partition`); empty for a global query.
    pub partition: String,
}

const FIND_KEYS: &[&str] =
    &["selector", "limit", "skip", "sort", "fields", "bookmark", "use_index", "allow_fallback", "conflicts", "r", "update", "stable", "stale", "execution_stats", "partition"];

fn boolean(body: &Map<String, Value>, key: &str, default: bool) -> Result<bool> {
    match body.get(key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(mango_error(400, "invalid_boolean", format!("Invalid boolean value: {v}"))),
    }
}

fn non_neg(body: &Map<String, Value>, key: &str, default: u64) -> Result<u64> {
    match body.get(key) {
        None => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| mango_error(400, "invalid_non_neg_integer", format!("{v} is not an integer greater than or equal to zero"))),
    }
}

impl FindOptions {
    /// Reads a `_find` body (`mango_opts:validate_find`).
    pub fn parse(body: &Map<String, Value>) -> Result<FindOptions> {
        if let Some(bad) = body.keys().find(|k| !FIND_KEYS.contains(&k.as_str())) {
            return Err(mango_error(400, "invalid_key", format!("Invalid key {bad} for this request.")));
        }
        let Some(selector) = body.get("selector") else {
            return Err(mango_error(400, "missing_required_key", "Missing required key: selector"));
        };
        let noop = Selector::is_noop(selector);
        let selector = Selector::parse(selector).map_err(|e| mango_error(400, e.error, e.reason))?;
        let fields = match body.get("fields") {
            None => None,
            Some(Value::Array(items)) if items.is_empty() => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|f| f.as_str().map(split_path).ok_or_else(|| mango_error(400, "invalid_field", format!("Invalid JSON for field spec: {f}"))))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Some(v) => return Err(mango_error(400, "invalid_fields", format!("Fields must be an array of strings, not: {v}"))),
        };
        let (sort, descending) = parse_sort(body.get("sort"))?;
        let bookmark = match body.get("bookmark") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "nil" || s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => return Err(mango_error(400, "invalid_bookmark", format!("Invalid bookmark value: {v}"))),
        };
        // `mango_opts:validate_use_index`: null is no index named; a
        // string is `ddoc`, `ddoc/name`, `_design/ddoc` or `_design/ddoc/name`.
        let use_index = match body.get("use_index") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) if s.is_empty() => Vec::new(),
            Some(Value::String(s)) => {
                let parts: Vec<&str> = s.split('/').collect();
                match parts.as_slice() {
                    [ddoc] | ["_design", ddoc] => vec![ddoc.to_string()],
                    [ddoc, name] | ["_design", ddoc, name] => vec![ddoc.to_string(), name.to_string()],
                    _ => return Err(mango_error(400, "invalid_index_name", format!("Invalid index name: {}", Value::String(s.clone())))),
                }
            }
            Some(Value::Array(items)) if items.len() <= 2 && items.iter().all(Value::is_string) => items.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect(),
            Some(v) => return Err(mango_error(400, "invalid_index_name", format!("Invalid index name: {v}"))),
        };
        let (mut update, mut stable) = (boolean(body, "update", true)?, boolean(body, "stable", false)?);
        match body.get("stale") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::String(s)) if s == "ok" => (update, stable) = (false, true),
            Some(v) => return Err(mango_error(400, "invalid_value", format!("Invalid value for stale: {v}"))),
        }
        let r = match body.get("r") {
            None => 1,
            Some(v) => v.as_u64().filter(|n| *n > 0).ok_or_else(|| mango_error(400, "invalid_pos_integer", format!("{v} is not an integer greater than zero")))?,
        };
        let partition = match body.get("partition") {
            None => String::new(),
            Some(Value::String(p)) => p.clone(),
            Some(v) => return Err(mango_error(400, "invalid_partition", format!("Invalid partition: {v}"))),
        };
        Ok(FindOptions {
            selector,
            noop,
            limit: non_neg(body, "limit", DEFAULT_LIMIT)?,
            skip: non_neg(body, "skip", 0)?,
            fields,
            fields_json: body.get("fields").filter(|f| f.as_array().is_some_and(|a| !a.is_empty())).cloned().unwrap_or(json!([])),
            sort,
            descending,
            sort_json: body.get("sort").cloned().unwrap_or(json!({})),
            bookmark,
            use_index,
            allow_fallback: boolean(body, "allow_fallback", true)?,
            conflicts: boolean(body, "conflicts", false)?,
            r,
            update,
            stable,
            execution_stats: boolean(body, "execution_stats", false)?,
            partition,
        })
    }

    /// `opts` of `_explain`.
    pub fn to_json(&self) -> Value {
        json!({
            "use_index": self.use_index,
            "bookmark": self.bookmark.clone().unwrap_or_else(|| "nil".into()),
            "limit": self.limit,
            "skip": self.skip,
            "sort": self.sort_json,
            "fields": self.fields_json,
            "partition": self.partition,
            "r": self.r,
            "conflicts": self.conflicts,
            "stale": false,
            "update": self.update,
            "stable": self.stable,
            "execution_stats": self.execution_stats,
            "allow_fallback": self.allow_fallback,
        })
    }

    pub fn fields_json(&self) -> &Value {
        &self.fields_json
    }
}

fn parse_sort(sort: Option<&Value>) -> Result<(Vec<Vec<String>>, bool)> {
    let bad = |v: &Value| mango_error(400, "invalid_sort_json", format!("Sort must be an array of sort specs, not: {v}"));
    let items = match sort {
        None => return Ok((Vec::new(), false)),
        Some(Value::Array(items)) => items,
        // mango_sort:new: anything but an array, `{}` included, is refused.
        Some(v) => return Err(bad(v)),
    };
    let mut fields = Vec::new();
    let mut dirs = Vec::new();
    for item in items {
        match item {
            Value::String(s) => {
                fields.push(split_path(s));
                dirs.push(false);
            }
            Value::Object(m) if m.len() == 1 => {
                let (k, v) = m.iter().next().expect("one member");
                dirs.push(match v.as_str() {
                    Some("asc") => false,
                    Some("desc") => true,
                    _ => return Err(mango_error(400, "invalid_sort_dir", format!("Invalid sort direction: {v}"))),
                });
                fields.push(split_path(k));
            }
            other => return Err(mango_error(400, "invalid_sort_field", format!("Invalid sort field: {other}"))),
        }
    }
    if dirs.iter().any(|d| *d != dirs[0]) {
        return Err(mango_error(400, "unsupported_mixed_sort", "Sorts currently only support a single direction for all fields."));
    }
    Ok((fields, dirs.first().copied().unwrap_or(false)))
}

/// An index a query may run on: the special `_all_docs` or a JSON index
/// (CouchDB's `#idx{}`).
#[derive(Clone, Debug)]
pub enum Access {
    AllDocs,
    Json(IndexDef),
}

/// An index's identity: design document (none for `_all_docs`), name. Its
/// order is CouchDB's term order of `#idx{}` records, which `_explain`'s
/// `index_candidates` follows.
pub(super) type IndexKey = (Option<String>, String);

impl Access {
    pub fn to_json(&self) -> Value {
        match self {
            Access::AllDocs => all_docs_json(),
            Access::Json(i) => i.to_json(),
        }
    }

    pub(super) fn key(&self) -> IndexKey {
        match self {
            Access::AllDocs => (None, "_all_docs".to_owned()),
            Access::Json(i) => (Some(i.ddoc.clone()), i.name.clone()),
        }
    }

    pub(super) fn columns(&self) -> Vec<Vec<String>> {
        match self {
            Access::AllDocs => vec![id_path()],
            Access::Json(i) => i.columns.clone(),
        }
    }

    fn is_partial(&self) -> bool {
        matches!(self, Access::Json(i) if i.partial.is_some())
    }

    /// Whether the index alone can answer a query needing `fields`
    /// (`mango_idx_view:covers`): a JSON index whose columns and `_id`
    /// hold every field; never all fields, never `_all_docs`.
    pub fn covers(&self, fields: Option<&[Vec<String>]>) -> bool {
        match (self, fields) {
            (Access::Json(i), Some(fields)) => fields.iter().all(|f| *f == id_path() || i.columns.contains(f)),
            _ => false,
        }
    }

    /// Why the index cannot run the query (`is_usable/3` of
    /// `mango_idx_view` and `mango_idx_special`); empty when it can.
    fn unusable_reasons(&self, opts: &FindOptions) -> Vec<&'static str> {
        let mut reasons = Vec::new();
        match self {
            Access::AllDocs => {
                if !opts.sort.is_empty() {
                    if !indexable_fields(&opts.selector).contains(&id_path()) {
                        reasons.push("field_mismatch");
                    }
                    if opts.sort != [id_path()] {
                        reasons.push("sort_order_mismatch");
                    }
                }
            }
            Access::Json(index) => {
                // Sort fields exist in every answer, and `_id` and `_rev` in
                // every document: the selector need not require them.
                let mut required = index.columns.iter().filter(|c| !opts.sort.contains(c) && **c != id_path() && **c != ["_rev".to_owned()]);
                if !required.all(|c| opts.selector.requires_field(c)) {
                    reasons.push("field_mismatch");
                }
                if !can_use_sort(&index.columns, &opts.sort, &opts.selector) {
                    reasons.push("sort_order_mismatch");
                }
            }
        }
        reasons
    }
}

/// The special index every database has.
pub fn all_docs_json() -> Value {
    json!({ "ddoc": null, "name": "_all_docs", "type": "special", "def": { "fields": [{ "_id": "asc" }] } })
}

fn id_path() -> Vec<String> {
    vec!["_id".to_owned()]
}

fn can_use_sort(columns: &[Vec<String>], sort: &[Vec<String>], selector: &Selector) -> bool {
    if sort.is_empty() {
        return true;
    }
    match columns.first() {
        None => false,
        Some(first) if *first == sort[0] => columns.starts_with(sort),
        Some(first) => selector.is_constant_field(first) && can_use_sort(&columns[1..], sort, selector),
    }
}

/// Whether the query is a `_find` (no usable index is an error) or an
/// `_explain` (it shows that no index is usable).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Find,
    Explain,
}

/// How the planner saw every index, for `_explain`'s `index_candidates`
/// (CouchDB's cursor `trace`).
#[derive(Default)]
pub(super) struct Trace {
    pub all: Vec<Access>,
    pub global: Vec<Access>,
    /// The indexes the query may use (the partition's, once partitioned
    /// databases are served).
    pub in_scope: Vec<Access>,
    pub usable: Vec<Access>,
    /// Each index in scope with why it is not usable (empty: usable).
    pub usability: Vec<(Access, Vec<&'static str>)>,
    /// The usable indexes `use_index` left (all usable ones without it).
    pub filtered: Vec<Access>,
    /// Those of the cursor's type (JSON before `_all_docs`).
    pub of_type: Vec<Access>,
    /// `of_type` best first, each with how many of the selector's ranged
    /// fields its columns do not use.
    pub sorted: Vec<(Access, usize)>,
}

pub struct Plan {
    /// `None` only for an `_explain` with no usable index.
    pub access: Option<Access>,
    /// The ranges of the index's leading columns (`[Empty]`: the query
    /// selects nothing).
    pub ranges: Vec<FieldRange>,
    pub warnings: Vec<String>,
    pub(super) trace: Trace,
}

impl Plan {
    /// Whether the query can select nothing, so nothing is scanned.
    pub fn selects_nothing(&self) -> bool {
        matches!(self.ranges.as_slice(), [FieldRange::Empty])
    }
}

fn ddoc_matches(index: &Access, ddoc: &str) -> bool {
    let Access::Json(index) = index else { return false };
    index.ddoc == ddoc || index.ddoc.strip_prefix("_design/") == Some(ddoc)
}

/// The indexes `use_index` names (`maybe_filter_indexes_by_ddoc`).
fn named_by_use_index(indexes: &[Access], use_index: &[String]) -> Vec<Access> {
    let Some(ddoc) = use_index.first() else { return Vec::new() };
    indexes.iter().filter(|i| ddoc_matches(i, ddoc) && use_index.get(1).is_none_or(|n| *n == i.key().1)).cloned().collect()
}

fn contains(set: &[Access], index: &Access) -> bool {
    let key = index.key();
    set.iter().any(|i| i.key() == key)
}

/// Chooses the index as CouchDB's `mango_cursor:create` does.
pub fn plan(indexes: &[IndexDef], opts: &FindOptions, kind: Kind) -> Result<Plan> {
    // mango_idx:get_usable_indexes
    let mut trace = Trace { all: std::iter::once(Access::AllDocs).chain(indexes.iter().cloned().map(Access::Json)).collect(), ..Default::default() };
    trace.global = trace.all.iter().filter(|i| !i.is_partial()).cloned().collect();
    let mut in_scope = trace.global.clone();
    for named in named_by_use_index(&trace.all, &opts.use_index) {
        if !contains(&in_scope, &named) {
            in_scope.push(named);
        }
    }
    // mango_idx:filter_partition_indexes: a partition's query uses
    // partitioned indexes, a global one global indexes; `_all_docs` both.
    let partition_query = !opts.partition.is_empty();
    in_scope.retain(|i| match i {
        Access::AllDocs => true,
        Access::Json(index) => index.partitioned == partition_query,
    });
    in_scope.sort_by_key(Access::key);
    trace.in_scope = in_scope;
    trace.usability = trace.in_scope.iter().map(|i| (i.clone(), i.unusable_reasons(opts))).collect();
    trace.usable = trace.usability.iter().filter(|(_, r)| r.is_empty()).map(|(i, _)| i.clone()).collect();
    if trace.usable.is_empty() && kind == Kind::Find {
        return Err(mango_error(400, "no_usable_index", "No index exists for this sort, try indexing by the sort fields."));
    }
    // mango_cursor:create
    let named = named_by_use_index(&trace.usable, &opts.use_index);
    let chosen_from = if named.is_empty() {
        if !(opts.allow_fallback || (opts.use_index.is_empty() && trace.usable.len() > 1)) {
            let ddoc = opts.use_index.first().map(|d| d.strip_prefix("_design/").unwrap_or(d));
            return Err(mango_error(400, "invalid_index", match (ddoc, opts.use_index.get(1)) {
                (None, _) => "You must specify an index with the `use_index` parameter.".to_owned(),
                (Some(ddoc), None) => format!("_design/{ddoc} specified by `use_index` could not be found or it is not suitable."),
                (Some(ddoc), Some(name)) => format!("_design/{ddoc}, {name} specified by `use_index` could not be found or it is not suitable."),
            }));
        }
        trace.usable.clone()
    } else {
        named
    };
    trace.filtered = chosen_from;
    if trace.filtered.is_empty() {
        return Ok(Plan { access: None, ranges: Vec::new(), warnings: Vec::new(), trace });
    }
    // mango_cursor:group_indexes_by_type: a JSON index before `_all_docs`.
    let json: Vec<Access> = trace.filtered.iter().filter(|i| matches!(i, Access::Json(_))).cloned().collect();
    let mut field_ranges = ranges::field_ranges(&opts.selector);
    trace.of_type = if json.is_empty() {
        // mango_cursor_special: `_id`'s own range first, the whole of
        // `_all_docs` when the selector gives none.
        let whole = Range { low_op: Op::Gt, low: Edge::Value(Value::Null), high_op: Op::Lt, high: Edge::Max };
        field_ranges.push((id_path(), FieldRange::Range(whole)));
        vec![Access::AllDocs]
    } else {
        json
    };
    // mango_cursor_view:composite_indexes and choose_best_index: the index
    // using most of the ranged fields, then the one with fewer columns,
    // then the first by design document and name.
    let mut composited: Vec<(Access, Vec<FieldRange>, usize)> = trace
        .of_type
        .iter()
        .map(|i| {
            let prefix = composite_prefix(&i.columns(), &field_ranges);
            let distance = field_ranges.len() - prefix.len();
            (i.clone(), prefix, distance)
        })
        .collect();
    composited.sort_by(|(a, _, da), (b, _, db)| da.cmp(db).then_with(|| a.columns().len().cmp(&b.columns().len())).then_with(|| a.key().cmp(&b.key())));
    trace.sorted = composited.iter().map(|(i, _, d)| (i.clone(), *d)).collect();
    let (access, mut ranges, _) = composited.swap_remove(0);
    // mango_cursor:maybe_noop_range
    if opts.noop {
        ranges = vec![FieldRange::Empty];
    }
    let mut warnings = Vec::new();
    if let Some(ddoc) = opts.use_index.first() {
        if !ddoc_matches(&access, ddoc) || opts.use_index.get(1).is_some_and(|n| *n != access.key().1) {
            let ddoc = ddoc.strip_prefix("_design/").unwrap_or(ddoc);
            warnings.push(match opts.use_index.get(1) {
                Some(name) => format!("_design/{ddoc}, {name} was not used because it is not a valid index for this query."),
                None => format!("_design/{ddoc} was not used because it does not contain a valid index for this query."),
            });
        }
    }
    if matches!(access, Access::AllDocs) {
        warnings.push("No matching index found, create an index to optimize query time.".into());
    }
    Ok(Plan { access: Some(access), ranges, warnings, trace })
}

/// The ranges of an index's leading columns that the selector restricts.
fn composite_prefix(columns: &[Vec<String>], field_ranges: &[(Vec<String>, FieldRange)]) -> Vec<FieldRange> {
    let mut out = Vec::new();
    for c in columns {
        match field_ranges.iter().find(|(f, _)| f == c) {
            Some((_, r)) => out.push(r.clone()),
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mango::index::{add_to_design_doc, new_index};

    fn index(fields: Value, name: &str, partial: Option<Value>) -> IndexDef {
        let mut def = json!({ "fields": fields });
        if let Some(p) = partial {
            def["partial_filter_selector"] = p;
        }
        let new = new_index(json!({ "index": def, "ddoc": name, "name": name }).as_object().unwrap()).unwrap();
        let doc = add_to_design_doc(None, &new).unwrap().unwrap();
        super::super::index::indexes_of(&new.ddoc, &doc, false).pop().unwrap()
    }

    fn chosen(indexes: &[IndexDef], query: Value) -> Result<String> {
        let opts = FindOptions::parse(query.as_object().unwrap())?;
        Ok(match plan(indexes, &opts, Kind::Find)?.access {
            Some(Access::AllDocs) => "_all_docs".into(),
            Some(Access::Json(i)) => i.name,
            None => "none".into(),
        })
    }

    #[test]
    fn the_planner_chooses_as_couchdb() {
        let indexes = vec![
            index(json!(["a"]), "a", None),
            index(json!(["a", "b"]), "ab", None),
            index(json!(["b", "c"]), "bc", None),
            index(json!(["c"]), "c-partial", Some(json!({ "t": 1 }))),
        ];
        // The selector must require every column that is not sorted on.
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1 } })).unwrap(), "a");
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1, "b": { "$gt": 2 } } })).unwrap(), "ab");
        assert_eq!(chosen(&indexes, json!({ "selector": { "z": 1 } })).unwrap(), "_all_docs");
        assert_eq!(chosen(&indexes, json!({ "selector": { "$or": [{ "a": 1 }, { "a": 2 }] } })).unwrap(), "a");
        assert_eq!(chosen(&indexes, json!({ "selector": { "$or": [{ "a": 1 }, { "b": 2 }] } })).unwrap(), "_all_docs");
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": { "$exists": false } } })).unwrap(), "_all_docs");
        // A sort must be the columns in order, after fixed ones.
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1 }, "sort": ["b"] })).unwrap(), "ab");
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": { "$gt": 1 } }, "sort": ["b"] })).map_err(|e| e.to_string()), Err("No index exists for this sort, try indexing by the sort fields.".into()));
        // `_all_docs` serves a sort on `_id` only when the selector ranges
        // `_id` (mango_idx_special:is_usable).
        assert_eq!(chosen(&indexes, json!({ "selector": { "_id": { "$gt": "a" }, "z": 1 }, "sort": ["_id"] })).unwrap(), "_all_docs");
        assert!(chosen(&indexes, json!({ "selector": { "z": 1 }, "sort": ["_id"] })).is_err_and(|e| e.to_string().starts_with("No index exists for this sort")));
        // Partial indexes only when named.
        assert_eq!(chosen(&indexes, json!({ "selector": { "c": 1 } })).unwrap(), "_all_docs");
        assert_eq!(chosen(&indexes, json!({ "selector": { "c": 1 }, "use_index": "c-partial" })).unwrap(), "c-partial");
        assert!(chosen(&indexes, json!({ "selector": { "z": 1 }, "use_index": "a", "allow_fallback": false })).is_err());
    }

    #[test]
    fn use_index_null_names_no_index_and_a_path_names_the_design_document_and_the_index() {
        // Two indexes alike: unnamed, the first design document's is chosen.
        let indexes = vec![index(json!(["a"]), "x", None), index(json!(["a"]), "y", None)];
        // CouchDB's Mango suite sends `"use_index": null` in most queries.
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1 }, "use_index": null })).unwrap(), "x");
        for named in ["y/y", "_design/y/y", "_design/y", "y"] {
            assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1 }, "use_index": named })).unwrap(), "y", "{named}");
        }
        // A sort that is not an array is refused (mango_sort:new), `{}` too.
        let refused = chosen(&indexes, json!({ "selector": { "a": 1 }, "sort": {} })).unwrap_err();
        assert!(matches!(&refused, crate::DocError::Coded { status: 400, error: "invalid_sort_json", .. }), "{refused:?}");
        // Without a fallback, an index must be named or usable (mango_cursor:create).
        let refused = chosen(&indexes, json!({ "selector": { "z": 1 }, "allow_fallback": false })).unwrap_err();
        assert!(matches!(&refused, crate::DocError::Coded { status: 400, error: "invalid_index", .. }), "{refused:?}");
        assert_eq!(chosen(&indexes, json!({ "selector": { "a": 1 }, "use_index": [], "allow_fallback": false })).unwrap(), "x");
        let refused = chosen(&indexes, json!({ "selector": { "z": 1 }, "use_index": "y/nope", "allow_fallback": false })).unwrap_err();
        assert_eq!(refused.to_string(), "_design/y, nope specified by `use_index` could not be found or it is not suitable.");
        let refused = chosen(&indexes, json!({ "selector": { "a": 1 }, "use_index": "a/b/c/d" }));
        assert!(refused.is_err_and(|e| e.to_string().starts_with("Invalid index name")));
    }
}
