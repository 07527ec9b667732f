//! Mango's full-text side over HTTP, on `rhizome_search::mango`: indexes
//! of type `nouveau` created, listed and deleted through `/{db}/_index`,
//! and `_find`/`_explain` of selectors holding `$text`
//! (https://docs.couchdb.org/en/stable/api/database/find.html#find-text).
//!
//! A `$text` among the top-level conditions (alone or inside top-level
//! `$and`s) is answered by the index in relevance order, the rest of the
//! selector filtering the documents, as CouchDB's `mango_cursor_nouveau`.
//! A `$text` below `$or`, `$nor` or `$not` becomes the set of ids it
//! matches (`_id` `$in` them) and the query runs as any other `_find`.
//! Where CouchDB answers a `$text` with no nouveau index by scanning and
//! ignoring the `$text` (every document matches it), Rhizome refuses the
//! query with `no_usable_index`: a text search that matches everything
//! is never what was asked.

use super::mango::{current, save, SAVE_ATTEMPTS};
use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{json, Body, Request};
use crate::state::DbHandle;
use hyper::Response;
use rhizome_docs::mango::plan::FindOptions;
use rhizome_search::mango::{self, NewMangoIndex};
use rhizome_search::NouveauDef;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Where a selector holds its `$text`.
enum TextAt {
    Nowhere,
    /// Among the top-level conditions: its argument, and the selector
    /// without it.
    Required { arg: Value, rest: Value },
    /// Below an `$or`, `$nor` or `$not`.
    Nested,
}

fn count_text(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.iter().map(|(k, x)| usize::from(k == "$text") + count_text(x)).sum(),
        Value::Array(a) => a.iter().map(count_text).sum(),
        _ => 0,
    }
}

/// Takes `$text` out of the top-level conditions, if it is one of them.
fn take_required(selector: &mut Value) -> Option<Value> {
    let Value::Object(m) = selector else { return None };
    if let Some(arg) = m.remove("$text") {
        return Some(arg);
    }
    let Some(Value::Array(items)) = m.get_mut("$and") else { return None };
    items.iter_mut().find_map(take_required)
}

/// Refuses a `$text` under a field (it applies to the whole document).
fn check_placement(v: &Value, selector_level: bool) -> Result<(), HttpError> {
    let Value::Object(m) = v else { return Ok(()) };
    for (k, x) in m {
        match k.as_str() {
            "$text" if !selector_level => return Err(HttpError::new(400, "bad_arg", format!("Bad argument for operator $text: it applies to whole documents, not to a field ({v})"))),
            "$and" | "$or" | "$nor" => {
                for item in x.as_array().into_iter().flatten() {
                    check_placement(item, selector_level)?;
                }
            }
            "$not" => check_placement(x, selector_level)?,
            _ if k.starts_with('$') => check_placement(x, false)?,
            _ => check_placement(x, false)?,
        }
    }
    Ok(())
}

fn locate(selector: &Value) -> Result<TextAt, HttpError> {
    match count_text(selector) {
        0 => return Ok(TextAt::Nowhere),
        1 => {}
        _ => return Err(HttpError::new(400, "multiple_text_selector", format!("Selector cannot contain more than one $text operator: {selector}"))),
    }
    check_placement(selector, true)?;
    let mut rest = selector.clone();
    Ok(match take_required(&mut rest) {
        Some(arg) => TextAt::Required { arg, rest },
        None => TextAt::Nested,
    })
}

/// The selector with its (nested) `$text` replaced by `_id` `$in` `ids`.
fn replace_nested(v: &Value, ids: &[String]) -> Value {
    match v {
        Value::Object(m) if m.contains_key("$text") => {
            let mut rest = m.clone();
            rest.remove("$text");
            // No empty `{}` beside it: negated, an empty `$and` is an
            // empty `$or`, which matches everything.
            let member = json!({ "_id": { "$in": ids } });
            if rest.is_empty() {
                member
            } else {
                json!({ "$and": [Value::Object(rest), member] })
            }
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), replace_nested(x, ids))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(|x| replace_nested(x, ids)).collect()),
        other => other.clone(),
    }
}

/// The database's Mango `nouveau` indexes, by design document and name.
fn mango_nouveau_indexes(db: &DbHandle) -> Result<Vec<NouveauDef>, HttpError> {
    let mut out = Vec::new();
    let opts = rhizome_docs::AllDocsOptions { start_key: Some("_design/".into()), end_key: Some("_design0".into()), inclusive_end: false, include_docs: true, ..Default::default() };
    for row in db.db.all_docs(&opts)?.rows {
        let (Some(id), Some(Value::Object(doc))) = (row.get("id").and_then(Value::as_str), row.get("doc")) else { continue };
        if doc.get("language").and_then(Value::as_str) != Some("query") {
            continue;
        }
        out.extend(NouveauDef::parse_all(id, doc).unwrap_or_default().into_iter().filter(|d| d.mango.is_some()));
    }
    Ok(out)
}

/// The index a `$text` query uses (`mango_cursor_nouveau:create`): the one
/// `use_index` names, else the only one there is.
fn choose(db: &DbHandle, use_index: &[String]) -> Result<NouveauDef, HttpError> {
    let all: Vec<NouveauDef> = mango_nouveau_indexes(db)?.into_iter().filter(|d| d.mango.as_ref().is_some_and(|m| m.default_field)).collect();
    let named: Vec<NouveauDef> = all
        .iter()
        .filter(|d| match use_index {
            [] => false,
            [ddoc] => d.ddoc == *ddoc || d.ddoc == format!("_design/{ddoc}"),
            [ddoc, name, ..] => (d.ddoc == *ddoc || d.ddoc == format!("_design/{ddoc}")) && d.name == *name,
        })
        .cloned()
        .collect();
    let mut usable = if named.is_empty() { all } else { named };
    match usable.len() {
        0 => Err(HttpError::new(
            400,
            "no_usable_index",
            "No index of type nouveau with a default field exists for this $text selector; create one with POST /{db}/_index and \"type\": \"nouveau\".",
        )),
        1 => Ok(usable.remove(0)),
        _ => Err(HttpError::new(400, "multiple_nouveau_indexes", "You must specify an index with the `use_index` parameter.")),
    }
}

fn design_body(db: &DbHandle, def: &NouveauDef) -> Result<Value, HttpError> {
    Ok(Value::Object(db.db.get_doc(&def.ddoc, &rhizome_docs::ReadOptions::default())?))
}

/// The index brought up to date (unless `update` is false).
fn open_index(db: &DbHandle, def: &NouveauDef, update: bool) -> Result<Arc<rhizome_search::index::IndexFiles>, HttpError> {
    Ok(if update { rhizome_search::refresh(&db.db, &db.name, def, &design_body(db, def)?, super::views::limits())? } else { rhizome_search::index::open(&db.db, def)? })
}

/// `use_index` as `FindOptions` reads it, without the rest of its checks.
fn use_index_of(body: &Map<String, Value>) -> Vec<String> {
    match body.get("use_index") {
        Some(Value::String(s)) => {
            let parts: Vec<&str> = s.split('/').filter(|p| !p.is_empty()).collect();
            match parts.as_slice() {
                ["_design", rest @ ..] => rest.iter().map(|p| p.to_string()).collect(),
                other => other.iter().map(|p| p.to_string()).collect(),
            }
        }
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// The options of a `$text` query: the body with `rest` as its selector,
/// kept to the queried partition if any.
fn options(body: &Map<String, Value>, rest: Value) -> Result<FindOptions, HttpError> {
    let mut b = body.clone();
    let selector = match body.get("partition").and_then(Value::as_str).filter(|p| !p.is_empty()) {
        Some(p) => json!({ "$and": [rest, { "_id": { "$beginsWith": format!("{p}:") } }] }),
        None => rest,
    };
    b.insert("selector".into(), selector);
    // The Mango bookmark check does not know Nouveau's bookmarks.
    b.remove("bookmark");
    let mut opts = FindOptions::parse(&b)?;
    opts.bookmark = match body.get("bookmark") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() || s == "nil" => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => return Err(HttpError::new(400, "invalid_bookmark", format!("Invalid bookmark value: {v}"))),
    };
    Ok(opts)
}

/// `_find` when the selector holds `$text`; `None` when it does not.
pub fn find(req: &Request, db: &Arc<DbHandle>, body: &Map<String, Value>, timeout: std::time::Duration) -> Result<Option<Response<Body>>, HttpError> {
    let Some(selector) = body.get("selector") else { return Ok(None) };
    match locate(selector)? {
        TextAt::Nowhere => Ok(None),
        TextAt::Nested => {
            let def = choose(db, &use_index_of(body))?;
            let update = body.get("update").and_then(Value::as_bool).unwrap_or(true);
            let files = open_index(db, &def, update)?;
            let text = mango::text_argument(&find_text_arg(selector).unwrap_or(Value::Null))?;
            let ids = mango::matching_ids(&files, &text)?;
            let mut b = body.clone();
            b.insert("selector".into(), replace_nested(selector, &ids));
            b.remove("use_index");
            super::mango::find_body(req, db, &b, timeout).map(Some)
        }
        TextAt::Required { arg, rest } => {
            let text = mango::text_argument(&arg)?;
            let opts = options(body, rest)?;
            let def = choose(db, &opts.use_index)?;
            let files = open_index(db, &def, opts.update)?;
            let started = std::time::Instant::now();
            let mut docs = Vec::new();
            let end = mango::find(&db.db, &files, &text, &opts, &mut |doc| {
                docs.push(doc);
                !req.cancelled.load(std::sync::atomic::Ordering::Relaxed)
            })?;
            let mut out = Map::new();
            out.insert("docs".into(), Value::Array(docs));
            out.insert("bookmark".into(), Value::String(end.bookmark));
            if opts.execution_stats {
                out.insert(
                    "execution_stats".into(),
                    json!({
                        "total_keys_examined": 0,
                        "total_docs_examined": end.docs_examined,
                        "total_quorum_docs_examined": 0,
                        "results_returned": end.results_returned,
                        "execution_time_ms": started.elapsed().as_secs_f64() * 1000.0,
                    }),
                );
            }
            Ok(Some(json(200, &Value::Object(out))))
        }
    }
}

fn find_text_arg(v: &Value) -> Option<Value> {
    match v {
        Value::Object(m) => m.get("$text").cloned().or_else(|| m.values().find_map(find_text_arg)),
        Value::Array(a) => a.iter().find_map(find_text_arg),
        _ => None,
    }
}

/// An index's entry in `_index` and `_explain`.
fn index_json(def: &NouveauDef, db: &DbHandle) -> Value {
    let listed = def.mango.as_ref().map(|m| m.to_listed_json()).unwrap_or(Value::Null);
    json!({ "ddoc": def.ddoc, "name": def.name, "type": "nouveau", "partitioned": db.db.is_partitioned(), "def": listed })
}

/// The `query` `_explain` shows: the Lucene text of the `$text` part.
fn lucene_of(text: &str) -> String {
    let escaped: String = text.chars().flat_map(|c| if matches!(c, '"' | '\\') { vec!['\\', c] } else { vec![c] }).collect();
    format!("($default:\"{escaped}\")")
}

/// `_explain` when the selector holds `$text`; `None` when it does not.
pub fn explain(db: &DbHandle, body: &Map<String, Value>) -> Result<Option<Value>, HttpError> {
    let Some(selector) = body.get("selector") else { return Ok(None) };
    let (arg, rest) = match locate(selector)? {
        TextAt::Nowhere => return Ok(None),
        TextAt::Required { arg, rest } => (arg, rest),
        TextAt::Nested => (find_text_arg(selector).unwrap_or(Value::Null), json!({})),
    };
    let text = mango::text_argument(&arg)?;
    let opts = options(body, rest)?;
    let def = choose(db, &opts.use_index)?;
    let normal = match opts.selector.to_json() {
        Value::Object(m) if m.is_empty() => json!({ "$default": { "$text": arg } }),
        other => json!({ "$and": [{ "$default": { "$text": arg } }, other] }),
    };
    let sort: Vec<String> = opts.sort.iter().map(|p| format!("{}{}", if opts.descending { "-" } else { "" }, rhizome_docs::selector::join_path(p))).collect();
    Ok(Some(json!({
        "dbname": db.name,
        "index": index_json(&def, db),
        "partitioned": db.db.is_partitioned(),
        "selector": normal,
        "opts": opts.to_json(),
        "limit": opts.limit,
        "skip": opts.skip,
        "fields": opts.fields_json(),
        "index_candidates": [],
        "selector_hints": [],
        "query": lucene_of(&text),
        "partition": body.get("partition").cloned().filter(|p| p.as_str().is_some_and(|s| !s.is_empty())).unwrap_or(Value::Null),
        "sort": if sort.is_empty() { Value::Null } else { json!(sort) },
    })))
}

/// `POST /{db}/_index` of `"type": "nouveau"`.
pub fn create(ctx: &UserCtx, db: &DbHandle, body: &Map<String, Value>) -> Result<Response<Body>, HttpError> {
    let new = NewMangoIndex::parse(body)?;
    let result = super::mango::add_index(ctx, db, &new.ddoc, |doc| Ok(new.add_to_design_doc(doc)?))?;
    // Built now, as CouchDB starts building at creation.
    if let Some(def) = mango_nouveau_indexes(db)?.into_iter().find(|d| d.ddoc == new.ddoc && d.name == new.name) {
        open_index(db, &def, true)?;
    }
    Ok(json(200, &json!({ "result": result, "id": new.ddoc, "name": new.name })))
}

/// The `nouveau` entries `GET /{db}/_index` adds to the JSON indexes.
pub fn listed(db: &DbHandle) -> Result<Vec<Value>, HttpError> {
    Ok(mango_nouveau_indexes(db)?.iter().map(|d| index_json(d, db)).collect())
}

/// `DELETE /{db}/_index/{ddoc}/nouveau/{name}`.
pub fn delete(ctx: &UserCtx, db: &DbHandle, ddoc_id: &str, name: &str) -> Result<Response<Body>, HttpError> {
    for _ in 0..SAVE_ATTEMPTS {
        let Some(doc) = current(db, ddoc_id)? else { return Err(HttpError::not_found("missing")) };
        let Some(changed) = mango::remove_from_design_doc(doc, name) else { return Err(HttpError::not_found("missing")) };
        if save(ctx, db, changed)? {
            return Ok(json(200, &json!({ "ok": true })));
        }
    }
    Err(HttpError::new(500, "error_saving_ddoc", "Encountered a conflict while saving the design document."))
}
