//! The types of a design document's members, checked on every write
//! whatever its language, as CouchDB 3.5 checks them
//! (`couch_mrview:validate_ddoc_fields` and
//! `require_map_function_for_views`), with CouchDB's messages: a
//! `"language": "query"` (Mango) view's `map` is an object, any other's a
//! string; every view but `lib` has a `map`.

use crate::design::DesignError;
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Object,
    String,
    Array,
    Boolean,
}

impl Kind {
    fn holds(self, v: &Value) -> bool {
        matches!((self, v), (Kind::Object, Value::Object(_)) | (Kind::String, Value::String(_)) | (Kind::Array, Value::Array(_)) | (Kind::Boolean, Value::Bool(_)))
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Object => "object",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Boolean => "boolean",
        }
    }
}

/// One step of a path: a member by name, or every member.
#[derive(Clone, Copy)]
enum Step {
    Key(&'static str),
    Any,
}

const OBJECT: &[Kind] = &[Kind::Object];
const STRING: &[Kind] = &[Kind::String];
const BOOLEAN: &[Kind] = &[Kind::Boolean];
const FUNCTION: &[Kind] = &[Kind::Object, Kind::String];

/// CouchDB's list, in its order (the first failure is the one reported).
fn paths(map: &'static [Kind]) -> Vec<Vec<(Step, &'static [Kind])>> {
    vec![
        vec![(Step::Key("filters"), OBJECT), (Step::Any, FUNCTION)],
        vec![(Step::Key("language"), STRING)],
        vec![(Step::Key("lists"), OBJECT), (Step::Any, FUNCTION)],
        vec![(Step::Key("options"), OBJECT)],
        vec![(Step::Key("options"), OBJECT), (Step::Key("include_design"), BOOLEAN)],
        vec![(Step::Key("options"), OBJECT), (Step::Key("local_seq"), BOOLEAN)],
        vec![(Step::Key("options"), OBJECT), (Step::Key("partitioned"), BOOLEAN)],
        vec![(Step::Key("rewrites"), &[Kind::String, Kind::Array])],
        vec![(Step::Key("shows"), OBJECT), (Step::Any, FUNCTION)],
        vec![(Step::Key("updates"), OBJECT), (Step::Any, FUNCTION)],
        vec![(Step::Key("validate_doc_update"), STRING)],
        vec![(Step::Key("views"), OBJECT), (Step::Key("lib"), OBJECT)],
        vec![(Step::Key("views"), OBJECT), (Step::Any, OBJECT), (Step::Key("map"), map)],
        vec![(Step::Key("views"), OBJECT), (Step::Any, OBJECT), (Step::Key("reduce"), STRING)],
    ]
}

/// A member of the wrong type: its dotted path and the types it may have.
type Mismatch = (Vec<String>, &'static [Kind]);

fn walk(props: &Map<String, Value>, path: &[(Step, &'static [Kind])], at: &mut Vec<String>) -> Result<(), Mismatch> {
    let Some(((step, kinds), rest)) = path.split_first() else { return Ok(()) };
    let keys: Vec<&String> = match step {
        Step::Key(k) => props.get_key_value(*k).map(|(k, _)| k).into_iter().collect(),
        Step::Any => props.keys().collect(),
    };
    for key in keys {
        let v = &props[key];
        at.push(key.clone());
        if !kinds.iter().any(|k| k.holds(v)) {
            return Err((at.clone(), kinds));
        }
        if let Value::Object(inner) = v {
            walk(inner, rest, at)?;
        }
        at.pop();
    }
    Ok(())
}

/// Checks the members' types and that every view has a map.
pub fn check_fields(body: &Map<String, Value>) -> Result<(), DesignError> {
    let map = if body.get("language").and_then(Value::as_str) == Some("query") { OBJECT } else { STRING };
    for path in paths(map) {
        if let Err((at, kinds)) = walk(body, &path, &mut Vec::new()) {
            let types: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            return Err(DesignError::Invalid(format!("`{}` field must have {} type", at.join("."), types.join(" or "))));
        }
    }
    if let Some(Value::Object(views)) = body.get("views") {
        for (name, view) in views {
            if name != "lib" && view.get("map").is_none() {
                return Err(DesignError::Invalid(format!("View `{name}` must contain map function")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(v: Value) -> Option<String> {
        check_fields(v.as_object().unwrap()).err().map(|e| e.to_string())
    }

    #[test]
    fn member_types_are_refused_with_couchdbs_messages() {
        assert_eq!(reason(json!({ "language": "query", "views": { "v": { "map": "function(doc){}" } } })).as_deref(), Some("`views.v.map` field must have object type"));
        assert_eq!(reason(json!({ "views": { "v": { "map": { "fields": {} } } } })).as_deref(), Some("`views.v.map` field must have string type"));
        assert_eq!(reason(json!({ "filters": { "f": 1 } })).as_deref(), Some("`filters.f` field must have object or string type"));
        assert_eq!(reason(json!({ "language": null })).as_deref(), Some("`language` field must have string type"));
        assert_eq!(reason(json!({ "options": { "partitioned": "yes" } })).as_deref(), Some("`options.partitioned` field must have boolean type"));
        assert_eq!(reason(json!({ "rewrites": {} })).as_deref(), Some("`rewrites` field must have string or array type"));
        assert_eq!(reason(json!({ "views": { "v": { "reduce": "_count" } } })).as_deref(), Some("View `v` must contain map function"));
        assert_eq!(reason(json!({ "views": { "lib": { "m": "exports.x = 1" }, "v": { "map": "function(doc){}", "reduce": "_sum" } }, "rewrites": [] })), None);
        assert_eq!(reason(json!({ "language": "query", "views": { "v": { "map": { "fields": { "a": "asc" } }, "reduce": "_count" } } })), None);
    }
}
