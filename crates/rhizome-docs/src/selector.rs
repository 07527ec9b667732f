//! A subset of Mango selectors, for `_changes?filter=_selector`
//! (https://docs.couchdb.org/en/stable/api/database/find.html#selector-syntax):
//! implicit and explicit `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`,
//! `$exists`, `$in`, `$nin`, `$and`, `$or`, `$nor`, `$not`, and dotted
//! field paths into nested objects. Values compare in CouchDB's collation
//! order of types (null, false, true, numbers, strings, arrays, objects).

use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Whether `doc` satisfies `selector`. An unknown operator matches nothing,
/// so a typo never leaks documents.
pub fn matches(selector: &Value, doc: &Value) -> bool {
    match selector {
        Value::Object(conditions) => conditions.iter().all(|(k, v)| condition(k, v, doc)),
        _ => false,
    }
}

fn condition(key: &str, value: &Value, doc: &Value) -> bool {
    match key {
        "$and" => value.as_array().is_some_and(|xs| xs.iter().all(|x| matches(x, doc))),
        "$or" => value.as_array().is_some_and(|xs| xs.iter().any(|x| matches(x, doc))),
        "$nor" => value.as_array().is_some_and(|xs| !xs.iter().any(|x| matches(x, doc))),
        "$not" => !matches(value, doc),
        _ if key.starts_with('$') => false,
        field => field_matches(lookup(doc, field), value),
    }
}

fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, part| v.as_object()?.get(part))
}

/// A field's condition: an object of operators, or a value meaning `$eq`.
fn field_matches(field: Option<&Value>, cond: &Value) -> bool {
    match cond {
        Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => ops.iter().all(|(op, arg)| operator(field, op, arg)),
        Value::Object(nested) if !nested.is_empty() => {
            // `{"a": {"b": 1}}` is `{"a.b": 1}`.
            field.is_some_and(|f| nested.iter().all(|(k, v)| field_matches(lookup(f, k), v)))
        }
        other => field.is_some_and(|f| collate(f, other) == Ordering::Equal),
    }
}

fn operator(field: Option<&Value>, op: &str, arg: &Value) -> bool {
    let cmp = |want: fn(Ordering) -> bool| field.is_some_and(|f| same_class(f, arg) && want(collate(f, arg)));
    match op {
        "$eq" => cmp(|o| o == Ordering::Equal),
        "$ne" => field.is_none_or(|f| collate(f, arg) != Ordering::Equal),
        "$gt" => cmp(|o| o == Ordering::Greater),
        "$gte" => cmp(|o| o != Ordering::Less),
        "$lt" => cmp(|o| o == Ordering::Less),
        "$lte" => cmp(|o| o != Ordering::Greater),
        "$exists" => arg.as_bool().is_some_and(|want| want == field.is_some()),
        "$in" => field.is_some_and(|f| arg.as_array().is_some_and(|xs| xs.iter().any(|x| collate(f, x) == Ordering::Equal))),
        "$nin" => arg.as_array().is_some_and(|xs| field.is_none_or(|f| !xs.iter().any(|x| collate(f, x) == Ordering::Equal))),
        "$not" => !field_matches(field, arg),
        _ => false,
    }
}

/// Range operators compare within a type class, as Mango does for
/// `$gt` on a number not matching strings.
fn same_class(a: &Value, b: &Value) -> bool {
    rank(a) == rank(b) || (rank(a) <= 2 && rank(b) <= 2)
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(false) => 1,
        Value::Bool(true) => 2,
        Value::Number(_) => 3,
        Value::String(_) => 4,
        Value::Array(_) => 5,
        Value::Object(_) => 6,
    }
}

/// CouchDB's collation of JSON values (strings by code point here, not ICU).
pub fn collate(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_f64().unwrap_or(f64::NAN).partial_cmp(&y.as_f64().unwrap_or(f64::NAN)).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).map(|(a, b)| collate(a, b)).find(|o| *o != Ordering::Equal).unwrap_or(x.len().cmp(&y.len()))
        }
        (Value::Object(x), Value::Object(y)) => collate_objects(x, y),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn collate_objects(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    for ((ka, va), (kb, vb)) in x.iter().zip(y) {
        let o = ka.cmp(kb).then_with(|| collate(va, vb));
        if o != Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_fields_operators_and_combinations() {
        let doc = json!({ "_id": "a", "type": "post", "n": 5, "tags": ["x"], "author": { "name": "ann", "age": 40 } });
        for (sel, want) in [
            (json!({ "type": "post" }), true),
            (json!({ "type": { "$eq": "page" } }), false),
            (json!({ "n": { "$gt": 4, "$lte": 5 } }), true),
            (json!({ "n": { "$gt": "4" } }), false),
            (json!({ "author.name": "ann" }), true),
            (json!({ "author": { "age": { "$gte": 41 } } }), false),
            (json!({ "missing": { "$exists": false } }), true),
            (json!({ "n": { "$in": [1, 5] } }), true),
            (json!({ "type": { "$ne": "post" } }), false),
            (json!({ "$or": [{ "n": 1 }, { "type": "post" }] }), true),
            (json!({ "$and": [{ "n": 5 }, { "type": "page" }] }), false),
            (json!({ "n": { "$bogus": 1 } }), false),
            (json!({}), true),
        ] {
            assert_eq!(matches(&sel, &doc), want, "{sel}");
        }
    }
}
