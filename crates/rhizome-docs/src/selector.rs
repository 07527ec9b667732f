//! Mango selectors: the one selector engine of the database, for `_find`,
//! `_explain`, partial index filters, `_changes?filter=_selector` and
//! replication (https://docs.couchdb.org/en/stable/api/database/find.html#selector-syntax).
//!
//! A selector is parsed once into [`Selector`], CouchDB's normal form
//! (`mango_selector:normalize`): implicit `$eq` made explicit, nested
//! objects made dotted paths, several conditions on one field an `$and`, a
//! field's `$and`/`$or`/`$nor`/`$not` pushed around it. Bad selectors are
//! refused with CouchDB's errors (`invalid_operator`, `bad_arg`,
//! `invalid_selector`). Matching follows CouchDB's: values compare in
//! collation order ([`crate::collate`]) whatever their types (`$lt: "a"`
//! matches every number), `_id` in raw order, and a missing field fails
//! every condition except `$exists: false`.

use crate::collate;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Why a selector was refused: CouchDB's error name and reason (all 400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectorError {
    pub error: &'static str,
    pub reason: String,
}

fn bad_arg(op: &str, arg: &Value) -> SelectorError {
    SelectorError { error: "bad_arg", reason: format!("Bad argument for operator {op}: {arg}") }
}

/// A selector in normal form.
#[derive(Clone, Debug)]
pub enum Selector {
    And(Vec<Selector>),
    Or(Vec<Selector>),
    Nor(Vec<Selector>),
    Not(Box<Selector>),
    /// A condition on the value at `path` (empty: the value itself, inside
    /// `$elemMatch`, `$allMatch`, `$keyMapMatch`).
    Field { path: Vec<String>, cond: Cond },
}

#[derive(Clone, Debug)]
pub enum Cond {
    Eq(Value),
    Ne(Value),
    Gt(Value),
    Gte(Value),
    Lt(Value),
    Lte(Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Exists(bool),
    Type(String),
    Size(u64),
    Mod(i64, i64),
    Regex(regex::Regex),
    All(Vec<Value>),
    ElemMatch(Box<Selector>),
    AllMatch(Box<Selector>),
    KeyMapMatch(Box<Selector>),
    BeginsWith(String),
    /// A condition with no opposite operator, negated (`{"a": {"$not":
    /// {"$regex": ...}}}` in normal form).
    Not(Box<Cond>),
}

const COMBINATORS: &[&str] = &["$and", "$or", "$nor", "$not"];
const CONDITIONS: &[&str] = &[
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$size", "$mod", "$regex", "$all", "$elemMatch", "$allMatch", "$keyMapMatch", "$beginsWith",
];
const TYPES: &[&str] = &["null", "boolean", "number", "string", "array", "object"];

impl Selector {
    /// Parses and normalizes a selector (a JSON object).
    pub fn parse(v: &Value) -> Result<Selector, SelectorError> {
        match v {
            Value::Object(_) => Ok(normalize_negations(parse(v, &[], false)?)),
            other => Err(SelectorError { error: "invalid_selector_json", reason: format!("Selector must be a JSON object, not: {other}") }),
        }
    }

    /// Whether `doc` satisfies the selector. An empty `$and` or `$or`
    /// holds, as in `mango_selector:match` (a query of one alone selects
    /// nothing: [`Selector::is_noop`]).
    pub fn matches(&self, doc: &Value) -> bool {
        match self {
            Selector::And(xs) => xs.iter().all(|x| x.matches(doc)),
            Selector::Or(xs) => xs.is_empty() || xs.iter().any(|x| x.matches(doc)),
            Selector::Nor(xs) => !xs.iter().any(|x| x.matches(doc)),
            Selector::Not(x) => !x.matches(doc),
            Selector::Field { path, cond } => match lookup(doc, path) {
                Lookup::Found(v) => cond.matches(v, path.len() == 1 && path[0] == "_id"),
                Lookup::Missing => matches!(cond, Cond::Exists(false)),
                Lookup::BadPath => false,
            },
        }
    }

    /// The normal form as JSON (what `_explain` shows).
    pub fn to_json(&self) -> Value {
        let list = |name: &str, xs: &[Selector]| Value::Object(Map::from_iter([(name.to_owned(), Value::Array(xs.iter().map(Selector::to_json).collect()))]));
        match self {
            Selector::And(xs) if xs.is_empty() => Value::Object(Map::new()),
            Selector::And(xs) => list("$and", xs),
            Selector::Or(xs) => list("$or", xs),
            Selector::Nor(xs) => list("$nor", xs),
            Selector::Not(x) => Value::Object(Map::from_iter([("$not".to_owned(), x.to_json())])),
            Selector::Field { path, cond } => {
                let (op, arg) = cond.to_json();
                let c = Value::Object(Map::from_iter([(op.to_owned(), arg)]));
                if path.is_empty() {
                    c
                } else {
                    Value::Object(Map::from_iter([(selector_field_name(path), c)]))
                }
            }
        }
    }

    /// The conjuncts at the top: the members of an `$and`, or the selector.
    pub fn conjuncts(&self) -> Vec<&Selector> {
        match self {
            Selector::And(xs) => xs.iter().flat_map(Selector::conjuncts).collect(),
            other => vec![other],
        }
    }

    /// Whether every document the selector matches has the field `path`
    /// (CouchDB's `has_required_fields`: an index on a field only holds
    /// the documents that have it).
    pub fn requires_field(&self, path: &[String]) -> bool {
        match self {
            Selector::And(xs) => xs.iter().any(|x| x.requires_field(path)),
            // An empty `$or` requires every field, as CouchDB's
            // `has_required_fields` reads it.
            Selector::Or(xs) => xs.iter().all(|x| x.requires_field(path)),
            Selector::Nor(_) | Selector::Not(_) => false,
            Selector::Field { path: p, cond } => p == path && !matches!(cond, Cond::Exists(false)),
        }
    }

    /// Whether a query of this selector (as given, before normalization)
    /// selects nothing: one `$and`, `$or`, `$in` or `$all` of an empty
    /// array alone, as CouchDB's `mango_cursor:maybe_noop_range` decides.
    pub fn is_noop(given: &Value) -> bool {
        let Value::Object(m) = given else { return false };
        m.len() == 1 && m.iter().all(|(k, v)| ["$and", "$or", "$in", "$all"].contains(&k.as_str()) && v.as_array().is_some_and(Vec::is_empty))
    }

    /// Whether the selector fixes the field to one value at the top level
    /// (`is_constant_field`: such a column does not disturb a sort).
    pub fn is_constant_field(&self, path: &[String]) -> bool {
        self.conjuncts().iter().any(|c| matches!(c, Selector::Field { path: p, cond: Cond::Eq(_) } if p == path))
    }
}

impl Cond {
    fn matches(&self, v: &Value, raw: bool) -> bool {
        let cmp = |a: &Value, b: &Value| -> Ordering { if raw { raw_compare(a, b) } else { collate::compare(a, b) } };
        match self {
            Cond::Eq(a) => cmp(v, a).is_eq(),
            Cond::Ne(a) => cmp(v, a).is_ne(),
            Cond::Gt(a) => cmp(v, a).is_gt(),
            Cond::Gte(a) => cmp(v, a).is_ge(),
            Cond::Lt(a) => cmp(v, a).is_lt(),
            Cond::Lte(a) => cmp(v, a).is_le(),
            Cond::In(args) => match v {
                Value::Array(items) => args.iter().any(|a| items.iter().any(|x| cmp(x, a).is_eq())),
                _ => args.iter().any(|a| cmp(v, a).is_eq()),
            },
            Cond::Nin(args) => match v {
                Value::Array(items) => !args.iter().any(|a| items.iter().any(|x| cmp(x, a).is_eq())),
                _ => !args.iter().any(|a| cmp(v, a).is_eq()),
            },
            Cond::Exists(want) => *want,
            Cond::Type(t) => type_name(v) == t,
            Cond::Size(n) => v.as_array().is_some_and(|a| a.len() as u64 == *n),
            Cond::Mod(d, r) => v.as_i64().is_some_and(|x| x.checked_rem(*d) == Some(*r)),
            Cond::Regex(re) => v.as_str().is_some_and(|s| re.is_match(s)),
            Cond::All(args) => match v {
                Value::Array(items) => {
                    !args.is_empty()
                        && (args.iter().all(|a| items.iter().any(|x| collate::compare(x, a).is_eq()))
                            || (args.len() == 1 && collate::compare(&args[0], v).is_eq()))
                }
                _ => false,
            },
            Cond::ElemMatch(sel) => v.as_array().is_some_and(|items| items.iter().any(|x| sel.matches(x))),
            Cond::AllMatch(sel) => v.as_array().is_some_and(|items| !items.is_empty() && items.iter().all(|x| sel.matches(x))),
            Cond::KeyMapMatch(sel) => v.as_object().is_some_and(|m| m.keys().any(|k| sel.matches(&Value::String(k.clone())))),
            Cond::BeginsWith(p) => v.as_str().is_some_and(|s| s.starts_with(p.as_str())),
            Cond::Not(c) => !c.matches(v, raw),
        }
    }

    fn to_json(&self) -> (&'static str, Value) {
        match self {
            Cond::Eq(a) => ("$eq", a.clone()),
            Cond::Ne(a) => ("$ne", a.clone()),
            Cond::Gt(a) => ("$gt", a.clone()),
            Cond::Gte(a) => ("$gte", a.clone()),
            Cond::Lt(a) => ("$lt", a.clone()),
            Cond::Lte(a) => ("$lte", a.clone()),
            Cond::In(a) => ("$in", Value::Array(a.clone())),
            Cond::Nin(a) => ("$nin", Value::Array(a.clone())),
            Cond::Exists(b) => ("$exists", Value::Bool(*b)),
            Cond::Type(t) => ("$type", Value::String(t.clone())),
            Cond::Size(n) => ("$size", Value::from(*n)),
            Cond::Mod(d, r) => ("$mod", Value::Array(vec![Value::from(*d), Value::from(*r)])),
            Cond::Regex(re) => ("$regex", Value::String(re.as_str().to_owned())),
            Cond::All(a) => ("$all", Value::Array(a.clone())),
            Cond::ElemMatch(s) => ("$elemMatch", s.to_json()),
            Cond::AllMatch(s) => ("$allMatch", s.to_json()),
            Cond::KeyMapMatch(s) => ("$keyMapMatch", s.to_json()),
            Cond::BeginsWith(p) => ("$beginsWith", Value::String(p.clone())),
            Cond::Not(c) => {
                let (op, arg) = c.to_json();
                ("$not", Value::Object(Map::from_iter([(op.to_owned(), arg)])))
            }
        }
    }

    /// The condition's opposite, as `mango_selector:negate` writes it.
    fn negate(self) -> Cond {
        match self {
            Cond::Lt(v) => Cond::Gte(v),
            Cond::Lte(v) => Cond::Gt(v),
            Cond::Eq(v) => Cond::Ne(v),
            Cond::Ne(v) => Cond::Eq(v),
            Cond::Gte(v) => Cond::Lt(v),
            Cond::Gt(v) => Cond::Lte(v),
            Cond::In(v) => Cond::Nin(v),
            Cond::Nin(v) => Cond::In(v),
            Cond::Exists(b) => Cond::Exists(!b),
            Cond::Not(c) => *c,
            other => Cond::Not(Box::new(other)),
        }
    }
}

/// CouchDB's `norm_negations`: `$not` and `$nor` pushed down to the
/// conditions through `$and` and `$or` (De Morgan's laws), each condition
/// negated by its opposite operator. A negated condition then needs its
/// field (`{"$not": {"a": 1}}` is `{"a": {"$ne": 1}}`, which a document
/// without `a` fails), as in CouchDB. The selectors of `$elemMatch` and
/// kin are left as written, as CouchDB leaves them.
fn normalize_negations(s: Selector) -> Selector {
    match s {
        Selector::Not(x) => negate(*x),
        Selector::Nor(xs) => Selector::And(xs.into_iter().map(negate).collect()),
        Selector::And(xs) => Selector::And(xs.into_iter().map(normalize_negations).collect()),
        Selector::Or(xs) => Selector::Or(xs.into_iter().map(normalize_negations).collect()),
        field @ Selector::Field { .. } => field,
    }
}

fn negate(s: Selector) -> Selector {
    match s {
        Selector::Not(x) => normalize_negations(*x),
        Selector::Nor(xs) => Selector::Or(xs.into_iter().map(normalize_negations).collect()),
        Selector::And(xs) => Selector::Or(xs.into_iter().map(negate).collect()),
        Selector::Or(xs) => Selector::And(xs.into_iter().map(negate).collect()),
        Selector::Field { path, cond } => Selector::Field { path, cond: cond.negate() },
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Parses the selector `v` whose fields are under `path`. `relative`: an
/// operator may apply to the value itself (inside `$elemMatch` and kin).
fn parse(v: &Value, path: &[String], relative: bool) -> Result<Selector, SelectorError> {
    let Value::Object(members) = v else {
        return Ok(field(path, relative, Cond::Eq(v.clone()))?);
    };
    let mut parts = Vec::with_capacity(members.len());
    for (key, arg) in members {
        parts.push(parse_member(key, arg, path, relative)?);
    }
    Ok(if parts.len() == 1 { parts.pop().expect("one part") } else { Selector::And(parts) })
}

fn field(path: &[String], relative: bool, cond: Cond) -> Result<Selector, SelectorError> {
    if path.is_empty() && !relative {
        return Err(SelectorError { error: "invalid_selector", reason: "One or more conditions is missing a field name.".into() });
    }
    Ok(Selector::Field { path: path.to_vec(), cond })
}

fn parse_member(key: &str, arg: &Value, path: &[String], relative: bool) -> Result<Selector, SelectorError> {
    if COMBINATORS.contains(&key) {
        return match key {
            "$not" => match arg {
                Value::Object(_) => Ok(Selector::Not(Box::new(parse(arg, path, relative)?))),
                _ => Err(bad_arg(key, arg)),
            },
            _ => {
                let Value::Array(items) = arg else { return Err(bad_arg(key, arg)) };
                let parsed = items.iter().map(|x| parse(x, path, relative)).collect::<Result<Vec<_>, _>>()?;
                Ok(match key {
                    "$and" => Selector::And(parsed),
                    "$or" => Selector::Or(parsed),
                    _ => Selector::Nor(parsed),
                })
            }
        };
    }
    if CONDITIONS.contains(&key) {
        return field(path, relative, condition(key, arg)?);
    }
    if key == "$text" {
        return Err(SelectorError { error: "not_supported", reason: "Unsupported operator here: $text (text search runs in the server's _find, on a Mango index of type nouveau)".into() });
    }
    if key.starts_with('$') {
        return Err(SelectorError { error: "invalid_operator", reason: format!("Invalid operator: {key}") });
    }
    let parts = split_path(key);
    // mango_util:parse_field: no part of a field name may be empty.
    if parts.iter().any(String::is_empty) {
        let name = if path.is_empty() { key.to_owned() } else { format!("{}.{key}", join_path(path)) };
        return Err(SelectorError { error: "invalid_field_name", reason: format!("Invalid field name: {name}") });
    }
    let mut full = path.to_vec();
    full.extend(parts);
    match arg {
        Value::Object(m) if !m.is_empty() => parse(arg, &full, relative),
        _ => field(&full, relative, Cond::Eq(arg.clone())),
    }
}

fn condition(op: &str, arg: &Value) -> Result<Cond, SelectorError> {
    let array = || arg.as_array().cloned().ok_or_else(|| bad_arg(op, arg));
    let sub = || match arg {
        Value::Object(_) => parse(arg, &[], true).map(Box::new),
        _ => Err(bad_arg(op, arg)),
    };
    Ok(match op {
        "$eq" => Cond::Eq(arg.clone()),
        "$ne" => Cond::Ne(arg.clone()),
        "$gt" => Cond::Gt(arg.clone()),
        "$gte" => Cond::Gte(arg.clone()),
        "$lt" => Cond::Lt(arg.clone()),
        "$lte" => Cond::Lte(arg.clone()),
        "$in" => Cond::In(array()?),
        "$nin" => Cond::Nin(array()?),
        "$all" => Cond::All(array()?),
        "$exists" => Cond::Exists(arg.as_bool().ok_or_else(|| bad_arg(op, arg))?),
        "$type" => match arg.as_str() {
            Some(t) if TYPES.contains(&t) => Cond::Type(t.to_owned()),
            _ => return Err(bad_arg(op, arg)),
        },
        "$size" => Cond::Size(arg.as_u64().ok_or_else(|| bad_arg(op, arg))?),
        "$mod" => match arg.as_array().map(Vec::as_slice) {
            Some([d, r]) => match (d.as_i64(), r.as_i64()) {
                (Some(d), Some(r)) if d != 0 => Cond::Mod(d, r),
                _ => return Err(bad_arg(op, arg)),
            },
            _ => return Err(bad_arg(op, arg)),
        },
        "$regex" => {
            let text = arg.as_str().ok_or_else(|| bad_arg(op, arg))?;
            Cond::Regex(regex::RegexBuilder::new(text).size_limit(1 << 20).build().map_err(|_| bad_arg(op, arg))?)
        }
        // mango_selector:norm_ops reads `$beginsWith` with a string only;
        // any other argument falls to its "invalid operator" clause.
        "$beginsWith" => Cond::BeginsWith(arg.as_str().ok_or_else(|| SelectorError { error: "invalid_operator", reason: format!("Invalid operator: {op}") })?.to_owned()),
        "$elemMatch" => Cond::ElemMatch(sub()?),
        "$allMatch" => Cond::AllMatch(sub()?),
        "$keyMapMatch" => Cond::KeyMapMatch(sub()?),
        _ => return Err(SelectorError { error: "invalid_operator", reason: format!("Invalid operator: {op}") }),
    })
}

/// A field name's path, as `mango_util:parse_field` reads it: split at
/// dots not after a backslash, then every backslash dropped (`\.` is a dot
/// inside a name, `\$a` a name starting with `$`).
pub fn split_path(field: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in field.chars() {
        match c {
            '\\' => escaped = true,
            '.' if !escaped => parts.push(String::new()),
            c => {
                parts.last_mut().expect("a part").push(c);
                escaped = false;
            }
        }
    }
    parts
}

/// The field name of a path (dots inside names escaped).
pub fn join_path(path: &[String]) -> String {
    path.iter().map(|p| p.replace('.', "\\.")).collect::<Vec<_>>().join(".")
}

/// The field name of a path as a selector writes it: [`join_path`], with
/// a leading `$` escaped so that it is not read as an operator.
fn selector_field_name(path: &[String]) -> String {
    let name = join_path(path);
    if name.starts_with('$') {
        format!("\\{name}")
    } else {
        name
    }
}

/// Erlang's order of terms, which CouchDB's Mango compares `_id` in
/// (`mango_json:cmp_raw`): numbers, then the atoms `false`, `null`,
/// `true`, then objects, arrays, strings; objects and arrays member by
/// member, strings byte by byte.
pub fn raw_compare(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::Bool(false) => 1,
            Value::Null => 2,
            Value::Bool(true) => 3,
            Value::Object(_) => 4,
            Value::Array(_) => 5,
            Value::String(_) => 6,
        }
    }
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => collate::compare(a, b),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = raw_compare(p, q);
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            for ((k1, v1), (k2, v2)) in x.iter().zip(y) {
                let o = k1.as_bytes().cmp(k2.as_bytes()).then_with(|| raw_compare(v1, v2));
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

enum Lookup<'a> {
    Found(&'a Value),
    Missing,
    /// A step went through something other than an object.
    BadPath,
}

fn lookup<'a>(doc: &'a Value, path: &[String]) -> Lookup<'a> {
    let mut v = doc;
    for part in path {
        match v {
            Value::Object(m) => match m.get(part) {
                Some(x) => v = x,
                None => return Lookup::Missing,
            },
            // `tags.0`: an array's element by position, as `mango_doc`.
            Value::Array(items) => match part.parse::<usize>().ok().and_then(|i| items.get(i)) {
                Some(x) => v = x,
                None => return Lookup::BadPath,
            },
            _ => return Lookup::BadPath,
        }
    }
    Lookup::Found(v)
}

/// The value at `path` in `doc`, if it is there.
pub fn get_path<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    match lookup(doc, path) {
        Lookup::Found(v) => Some(v),
        _ => None,
    }
}

/// Whether `doc` satisfies `selector`; a selector that does not parse
/// matches nothing, so a typo never leaks documents.
pub fn matches(selector: &Value, doc: &Value) -> bool {
    Selector::parse(selector).is_ok_and(|s| s.matches(doc))
}

/// CouchDB's collation of JSON values (see [`crate::collate`]).
pub fn collate(a: &Value, b: &Value) -> Ordering {
    collate::compare(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_fields_operators_and_combinations() {
        let doc = json!({ "_id": "a", "type": "post", "n": 5, "tags": ["x", "y"], "author": { "name": "ann", "age": 40 }, "m": { "k1": 1, "zz": 2 }, "$dollar": 1 });
        for (sel, want) in [
            (json!({ "type": "post" }), true),
            (json!({ "type": { "$eq": "page" } }), false),
            (json!({ "n": { "$gt": 4, "$lte": 5 } }), true),
            (json!({ "n": { "$gt": "4" } }), false),
            (json!({ "n": { "$lt": "4" } }), true),
            (json!({ "author.name": "ann" }), true),
            (json!({ "author": { "age": { "$gte": 41 } } }), false),
            (json!({ "missing": { "$exists": false } }), true),
            (json!({ "missing": { "$ne": 1 } }), false),
            (json!({ "n": { "$in": [1, 5] } }), true),
            (json!({ "tags": { "$in": ["y", "z"] } }), true),
            (json!({ "tags": { "$nin": ["y"] } }), false),
            (json!({ "type": { "$ne": "post" } }), false),
            (json!({ "$or": [{ "n": 1 }, { "type": "post" }] }), true),
            (json!({ "$and": [{ "n": 5 }, { "type": "page" }] }), false),
            (json!({ "$nor": [{ "n": 1 }, { "type": "page" }] }), true),
            (json!({ "$not": { "n": 5 } }), false),
            (json!({ "n": { "$not": { "$eq": 4 } } }), true),
            (json!({ "n": { "$type": "number" } }), true),
            (json!({ "tags": { "$size": 2 } }), true),
            (json!({ "n": { "$mod": [2, 1] } }), true),
            (json!({ "type": { "$regex": "^po" } }), true),
            (json!({ "tags": { "$all": ["x", "y"] } }), true),
            (json!({ "tags": { "$all": ["x", "q"] } }), false),
            (json!({ "tags": { "$elemMatch": { "$eq": "y" } } }), true),
            (json!({ "tags": { "$allMatch": { "$gt": "w" } } }), true),
            (json!({ "m": { "$keyMapMatch": { "$beginsWith": "k" } } }), true),
            (json!({ "type": { "$beginsWith": "pa" } }), false),
            (json!({ "author.name.first": "ann" }), false),
            (json!({ "tags.1": "y" }), true),
            (json!({ "tags.5": { "$exists": false } }), false),
            (json!({}), true),
            (json!({ "$and": [] }), true),
            (json!({ "$or": [] }), true),
            (json!({ "n": 5, "$or": [] }), true),
            (json!({ "\\$dollar": 1 }), true),
            (json!({ "n": 5, "$and": [] }), true),
            // Negations are pushed down to the conditions (norm_negations):
            // a negated condition still needs its field.
            (json!({ "$not": { "zzz": 1 } }), false),
            (json!({ "$nor": [{ "zzz": 1 }] }), false),
            (json!({ "$not": { "$or": [{ "n": 4 }, { "zzz": 1 }] } }), false),
            (json!({ "$not": { "$and": [{ "n": 4 }, { "zzz": 1 }] } }), true),
            (json!({ "$not": { "zzz": { "$exists": true } } }), true),
            (json!({ "type": { "$not": { "$regex": "^pa" } } }), true),
            (json!({ "zzz": { "$not": { "$regex": "^pa" } } }), false),
            (json!({ "tags": { "$elemMatch": { "$not": { "$eq": "x" } } } }), true),
        ] {
            let parsed = Selector::parse(&sel).unwrap_or_else(|e| panic!("{sel}: {e:?}"));
            assert_eq!(parsed.matches(&doc), want, "{sel}");
            // The normal form means the same.
            assert_eq!(Selector::parse(&parsed.to_json()).unwrap().matches(&doc), want, "normal form of {sel}");
        }
    }

    #[test]
    fn bad_selectors_get_couchdbs_errors() {
        for (sel, error) in [
            (json!({ "n": { "$bogus": 1 } }), "invalid_operator"),
            (json!({ "n": { "$in": 1 } }), "bad_arg"),
            (json!({ "n": { "$mod": [0, 1] } }), "bad_arg"),
            (json!({ "n": { "$type": "integer" } }), "bad_arg"),
            (json!({ "n": { "$regex": "(" } }), "bad_arg"),
            (json!({ "$and": {} }), "bad_arg"),
            (json!({ "$gt": 1 }), "invalid_selector"),
            (json!({ "_id": { "$beginsWith": true } }), "invalid_operator"),
            (json!([1]), "invalid_selector_json"),
        ] {
            assert_eq!(Selector::parse(&sel).unwrap_err().error, error, "{sel}");
        }
    }

    #[test]
    fn the_normal_form_has_no_negation_above_a_condition() {
        for (given, normal) in [
            (json!({ "$not": { "n": 5 } }), json!({ "n": { "$ne": 5 } })),
            (json!({ "$nor": [{ "a": { "$lt": 1 } }, { "b": { "$in": [1] } }] }), json!({ "$and": [{ "a": { "$gte": 1 } }, { "b": { "$nin": [1] } }] })),
            (json!({ "$not": { "$and": [{ "a": 1 }, { "$not": { "b": 2 } }] } }), json!({ "$or": [{ "a": { "$ne": 1 } }, { "b": { "$eq": 2 } }] })),
            (json!({ "a": { "$not": { "$regex": "x" } } }), json!({ "a": { "$not": { "$regex": "x" } } })),
        ] {
            assert_eq!(Selector::parse(&given).unwrap().to_json(), normal, "{given}");
        }
    }

    #[test]
    fn ids_compare_in_erlangs_term_order() {
        let ordered = [json!(-1), json!(2.5), json!(false), json!(null), json!(true), json!({}), json!({ "a": 1 }), json!([]), json!([1]), json!(""), json!("B"), json!("a")];
        for (i, a) in ordered.iter().enumerate() {
            for (k, b) in ordered.iter().enumerate() {
                assert_eq!(raw_compare(a, b), i.cmp(&k), "{a} vs {b}");
            }
        }
        assert!(raw_compare(&json!(1), &json!(1.0)).is_eq());
        let sel = Selector::parse(&json!({ "_id": { "$gt": {} } })).unwrap();
        assert!(sel.matches(&json!({ "_id": "a" })));
        assert!(!Selector::parse(&json!({ "_id": { "$lt": [] } })).unwrap().matches(&json!({ "_id": "a" })));
    }

    #[test]
    fn a_selector_of_one_empty_list_alone_selects_nothing() {
        for noop in [json!({ "$or": [] }), json!({ "$and": [] }), json!({ "$in": [] }), json!({ "$all": [] })] {
            assert!(Selector::is_noop(&noop), "{noop}");
        }
        for not in [json!({}), json!({ "a": 1, "$or": [] }), json!({ "$or": [{ "a": 1 }] }), json!({ "$nor": [] })] {
            assert!(!Selector::is_noop(&not), "{not}");
        }
        assert!(Selector::parse(&json!({ "$or": [] })).unwrap().requires_field(&["a".to_owned()]));
    }

    #[test]
    fn dotted_paths_and_escaped_dots() {
        assert_eq!(split_path("a.b\\.c"), vec!["a".to_owned(), "b.c".to_owned()]);
        // mango_util:parse_field drops every backslash once split.
        assert_eq!(split_path("\\$a.b\\c"), vec!["$a".to_owned(), "bc".to_owned()]);
        let s = Selector::parse(&json!({ "\\$a": 1 })).unwrap();
        assert_eq!(s.to_json(), json!({ "\\$a": { "$eq": 1 } }));
        // An empty part of a field name is refused, as mango_util:parse_field does.
        for (bad, name) in [(json!({"_id": {"": null}}), "_id."), (json!({"a..b": 1}), "a..b"), (json!({"": 1}), "")] {
            let e = Selector::parse(&bad).err().unwrap_or_else(|| panic!("{bad} parsed"));
            assert_eq!((e.error, e.reason.as_str()), ("invalid_field_name", format!("Invalid field name: {name}").as_str()), "{bad}");
        }
        assert_eq!(join_path(&split_path("a.b\\.c")), "a.b\\.c");
        let s = Selector::parse(&json!({ "a": { "b": 1, "c": { "$gt": 2 } } })).unwrap();
        assert_eq!(s.to_json(), json!({ "$and": [{ "a.b": { "$eq": 1 } }, { "a.c": { "$gt": 2 } }] }));
        assert!(s.requires_field(&["a".to_owned(), "b".to_owned()]));
        assert!(s.is_constant_field(&["a".to_owned(), "b".to_owned()]));
    }
}
