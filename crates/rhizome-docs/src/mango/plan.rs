//! The options of `_find`/`_explain` and the choice of an index, as
//! CouchDB makes it (`mango_opts`, `mango_idx:get_usable_indexes`,
//! `mango_cursor_view:choose_best_index`).
//!
//! A JSON index is usable when the selector requires every column that is
//! not a sort field (the index holds only documents having them all) and
//! the sort is its columns in order, after columns the selector fixes to
//! one value. Indexes with a `partial_filter_selector` are used only when
//! `use_index` names them. `_all_docs` serves when no JSON index is usable
//! and the sort is empty or `_id`. Among usable indexes the one whose
//! leading columns the selector bounds most wins, then the one with fewer
//! columns, then the first by design document and name.

use super::index::{mango_error, IndexDef};
use crate::collate;
use crate::selector::{split_path, Cond, Selector};
use crate::Result;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;

/// CouchDB's default `limit` of `_find`.
pub const DEFAULT_LIMIT: u64 = 25;

#[derive(Clone, Debug)]
pub struct FindOptions {
    pub selector: Selector,
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
        if body.get("partition").is_some_and(|p| p.as_str() != Some("")) {
            return Err(mango_error(400, "bad_request", "`partition` parameter is not supported in this db."));
        }
        Ok(FindOptions {
            selector,
            limit: non_neg(body, "limit", DEFAULT_LIMIT)?,
            skip: non_neg(body, "skip", 0)?,
            fields,
            fields_json: body.get("fields").filter(|f| f.as_array().is_some_and(|a| !a.is_empty())).cloned().unwrap_or(Value::String("all_fields".into())),
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
            "partition": "",
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

/// Bounds of one column from the selector's top-level conditions.
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    /// `(value, inclusive)`
    pub lower: Option<(Value, bool)>,
    pub upper: Option<(Value, bool)>,
}

impl Bounds {
    pub fn is_point(&self) -> bool {
        matches!((&self.lower, &self.upper), (Some((a, true)), Some((b, true))) if collate::compare(a, b).is_eq())
    }

    fn tighten_lower(&mut self, v: &Value, inclusive: bool) {
        let tighter = match &self.lower {
            None => true,
            Some((cur, cur_inc)) => match collate::compare(v, cur) {
                Ordering::Greater => true,
                Ordering::Equal => *cur_inc && !inclusive,
                Ordering::Less => false,
            },
        };
        if tighter {
            self.lower = Some((v.clone(), inclusive));
        }
    }

    fn tighten_upper(&mut self, v: &Value, inclusive: bool) {
        let tighter = match &self.upper {
            None => true,
            Some((cur, cur_inc)) => match collate::compare(v, cur) {
                Ordering::Less => true,
                Ordering::Equal => *cur_inc && !inclusive,
                Ordering::Greater => false,
            },
        };
        if tighter {
            self.upper = Some((v.clone(), inclusive));
        }
    }
}

/// The bounds the selector puts on `path` (`None` if none).
pub fn bounds(selector: &Selector, path: &[String]) -> Option<Bounds> {
    let mut b = Bounds::default();
    let mut any = false;
    for c in selector.conjuncts() {
        let Selector::Field { path: p, cond } = c else { continue };
        if p != path {
            continue;
        }
        any |= match cond {
            Cond::Eq(v) => {
                b.tighten_lower(v, true);
                b.tighten_upper(v, true);
                true
            }
            Cond::Gt(v) => {
                b.tighten_lower(v, false);
                true
            }
            Cond::Gte(v) => {
                b.tighten_lower(v, true);
                true
            }
            Cond::Lt(v) => {
                b.tighten_upper(v, false);
                true
            }
            Cond::Lte(v) => {
                b.tighten_upper(v, true);
                true
            }
            // Every string starting with the prefix collates between the
            // prefix and the prefix followed by the last code point
            // (strings with U+10FFFF right after the prefix and more after
            // it excepted, a noncharacter).
            Cond::BeginsWith(p) => {
                b.tighten_lower(&Value::String(p.clone()), true);
                b.tighten_upper(&Value::String(format!("{p}\u{10FFFF}")), true);
                true
            }
            _ => false,
        };
    }
    any.then_some(b)
}

/// What runs the query: a JSON index or `_all_docs`.
#[derive(Clone, Debug)]
pub enum Access {
    AllDocs,
    Json(IndexDef),
}

impl Access {
    pub fn to_json(&self) -> Value {
        match self {
            Access::AllDocs => all_docs_json(),
            Access::Json(i) => i.to_json(),
        }
    }
}

/// The special index every database has.
pub fn all_docs_json() -> Value {
    json!({ "ddoc": null, "name": "_all_docs", "type": "special", "def": { "fields": [{ "_id": "asc" }] } })
}

pub struct Plan {
    pub access: Access,
    pub warnings: Vec<String>,
}

fn id_path() -> Vec<String> {
    vec!["_id".to_owned()]
}

fn usable(index: &IndexDef, opts: &FindOptions) -> bool {
    let required = index.columns.iter().filter(|c| !opts.sort.contains(c) && **c != id_path() && **c != ["_rev".to_owned()]);
    required.into_iter().all(|c| opts.selector.requires_field(c)) && can_use_sort(&index.columns, &opts.sort, &opts.selector)
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

/// How many leading columns the selector bounds.
fn prefix_len(index: &IndexDef, selector: &Selector) -> usize {
    let mut n = 0;
    for c in &index.columns {
        match bounds(selector, c) {
            Some(b) => {
                n += 1;
                if !b.is_point() {
                    break;
                }
            }
            None => break,
        }
    }
    n
}

fn ddoc_matches(index: &IndexDef, ddoc: &str) -> bool {
    index.ddoc == ddoc || index.ddoc.strip_prefix("_design/") == Some(ddoc)
}

/// Chooses how to run the query.
pub fn plan(indexes: &[IndexDef], opts: &FindOptions) -> Result<Plan> {
    let mut warnings = Vec::new();
    let sort_is_id = opts.sort.is_empty() || opts.sort == [id_path()];
    let candidates: Vec<&IndexDef> = indexes.iter().filter(|i| usable(i, opts)).collect();
    let mut chosen: Vec<&IndexDef> = if opts.use_index.is_empty() {
        let chosen: Vec<&IndexDef> = candidates.iter().copied().filter(|i| i.partial.is_none()).collect();
        // mango_cursor:create: without a fallback, only `_all_docs` usable
        // is an error.
        if chosen.is_empty() && !opts.allow_fallback {
            return Err(mango_error(400, "invalid_index", "You must specify an index with the `use_index` parameter."));
        }
        chosen
    } else {
        let named: Vec<&IndexDef> = candidates
            .iter()
            .copied()
            .filter(|i| ddoc_matches(i, &opts.use_index[0]) && opts.use_index.get(1).is_none_or(|n| *n == i.name))
            .collect();
        if named.is_empty() {
            let special = opts.use_index[0] == "_all_docs" && sort_is_id;
            if special {
                return Ok(Plan { access: Access::AllDocs, warnings });
            }
            let ddoc = opts.use_index[0].strip_prefix("_design/").unwrap_or(&opts.use_index[0]);
            if !opts.allow_fallback {
                return Err(mango_error(400, "invalid_index", match opts.use_index.get(1) {
                    Some(name) => format!("_design/{ddoc}, {name} specified by `use_index` could not be found or it is not suitable."),
                    None => format!("_design/{ddoc} specified by `use_index` could not be found or it is not suitable."),
                }));
            }
            warnings.push(match opts.use_index.get(1) {
                Some(name) => format!("_design/{ddoc}, {name} was not used because it is not a valid index for this query."),
                None => format!("_design/{ddoc} was not used because it does not contain a valid index for this query."),
            });
            candidates.iter().copied().filter(|i| i.partial.is_none()).collect()
        } else {
            named
        }
    };
    if chosen.is_empty() {
        if !sort_is_id {
            return Err(mango_error(400, "no_usable_index", "No index exists for this sort, try indexing by the sort fields."));
        }
        warnings.push("No matching index found, create an index to optimize query time.".into());
        return Ok(Plan { access: Access::AllDocs, warnings });
    }
    chosen.sort_by(|a, b| {
        prefix_len(b, &opts.selector)
            .cmp(&prefix_len(a, &opts.selector))
            .then_with(|| a.columns.len().cmp(&b.columns.len()))
            .then_with(|| (&a.ddoc, &a.name).cmp(&(&b.ddoc, &b.name)))
    });
    Ok(Plan { access: Access::Json(chosen[0].clone()), warnings })
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
        super::super::index::indexes_of(&new.ddoc, &doc).pop().unwrap()
    }

    fn chosen(indexes: &[IndexDef], query: Value) -> Result<String> {
        let opts = FindOptions::parse(query.as_object().unwrap())?;
        Ok(match plan(indexes, &opts)?.access {
            Access::AllDocs => "_all_docs".into(),
            Access::Json(i) => i.name,
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
        assert_eq!(chosen(&indexes, json!({ "selector": { "z": 1 }, "sort": ["_id"] })).unwrap(), "_all_docs");
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
