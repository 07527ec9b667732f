//! Reduce functions: CouchDB's built-ins (`couch_query_servers.erl`) and
//! JavaScript ones through the sandbox, with `rereduce` over partial
//! results, as CouchDB computes them.
//!
//! - `_count`: rows; on rereduce, the sum of the counts.
//! - `_sum`: numbers, arrays of numbers (element-wise, the shorter padded)
//!   and objects of those (member-wise). Anything else does not fail the
//!   query: the reduction *is* CouchDB's `builtin_reduce_error` object,
//!   with the offending value in `caused_by`.
//! - `_stats`: `{sum, count, min, max, sumsqr}` of numbers, arrays of
//!   numbers (element-wise) or of such objects given by the map; anything
//!   else is an `invalid_value` error.
//! - `_approx_count_distinct`: the number of distinct keys. CouchDB keeps a
//!   HyperLogLog sketch of precision 11 (about 2% error); this keeps the
//!   distinct keys' collation bytes, which is exact and costs memory in the
//!   number of distinct keys of one reduction.

use crate::js::{FnId, JsError, Sandbox};
use rhizome_docs::collate;
use serde_json::{json, Map, Number, Value};
use std::collections::BTreeSet;

pub const SUM_ERROR: &str = "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all fields are themselves numbers, arrays of numbers, or objects.";

/// A view's reduce function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reducer {
    Count,
    Sum,
    Stats,
    ApproxCountDistinct,
    Js(FnId),
}

/// Why a reduction failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ReduceError {
    /// CouchDB's `invalid_value` (bad `_stats` input).
    #[error("{0}")]
    InvalidValue(String),
    #[error(transparent)]
    Js(#[from] JsError),
}

/// The built-in named by a reduce source (`_count`, `_sum`, `_stats`,
/// `_approx_count_distinct`; CouchDB matches on the prefix).
pub fn builtin(source: &str) -> Option<Reducer> {
    let s = source.trim();
    [("_count", Reducer::Count), ("_sum", Reducer::Sum), ("_stats", Reducer::Stats), ("_approx_count_distinct", Reducer::ApproxCountDistinct)]
        .into_iter()
        .find(|(name, _)| s.starts_with(name))
        .map(|(_, r)| r)
}

/// A partial reduction, before `finalize`: what rereduce combines.
#[derive(Clone, Debug, PartialEq)]
pub enum Partial {
    Value(Value),
    Distinct(BTreeSet<Vec<u8>>),
}

impl Reducer {
    /// Reduces rows (`(key, doc id, value)`).
    pub fn reduce(&self, sandbox: Option<&mut Sandbox>, rows: &[(Value, String, Value)]) -> Result<Partial, ReduceError> {
        Ok(match self {
            Reducer::Count => Partial::Value(json!(rows.len())),
            Reducer::Sum => Partial::Value(sum_all(rows.iter().map(|r| &r.2))),
            Reducer::Stats => Partial::Value(stats_all(rows.iter().map(|r| &r.2))?),
            Reducer::ApproxCountDistinct => Partial::Distinct(rows.iter().map(|r| collate::encode(&r.0)).collect()),
            Reducer::Js(f) => {
                let sandbox = sandbox.ok_or_else(|| ReduceError::InvalidValue("a JavaScript reduce needs a sandbox".into()))?;
                let keys: Vec<Value> = rows.iter().map(|(k, id, _)| json!([k, id])).collect();
                let values: Vec<Value> = rows.iter().map(|r| r.2.clone()).collect();
                Partial::Value(survive_throw(sandbox.call(*f, &[Value::Array(keys), Value::Array(values), Value::Bool(false)]))?)
            }
        })
    }

    /// Combines partial reductions.
    pub fn rereduce(&self, sandbox: Option<&mut Sandbox>, partials: Vec<Partial>) -> Result<Partial, ReduceError> {
        if partials.len() == 1 {
            return Ok(partials.into_iter().next().expect("one"));
        }
        let values = |ps: Vec<Partial>| -> Vec<Value> {
            ps.into_iter()
                .filter_map(|p| match p {
                    Partial::Value(v) => Some(v),
                    Partial::Distinct(_) => None,
                })
                .collect()
        };
        Ok(match self {
            Reducer::Count | Reducer::Sum => Partial::Value(sum_all(values(partials).iter())),
            Reducer::Stats => Partial::Value(stats_all(values(partials).iter())?),
            Reducer::ApproxCountDistinct => {
                let mut all = BTreeSet::new();
                for p in partials {
                    if let Partial::Distinct(s) = p {
                        all.extend(s);
                    }
                }
                Partial::Distinct(all)
            }
            Reducer::Js(f) => {
                let sandbox = sandbox.ok_or_else(|| ReduceError::InvalidValue("a JavaScript reduce needs a sandbox".into()))?;
                Partial::Value(survive_throw(sandbox.call(*f, &[Value::Null, Value::Array(values(partials)), Value::Bool(true)]))?)
            }
        })
    }
}

/// A JavaScript reduce that throws gives `null` and a log line, as
/// CouchDB's query server does (`views.js`: `handleViewError`, then the
/// reduction is null), unless it throws `"fatal_error"` or
/// `["fatal", ...]`. Limits (time, memory) still fail the query.
fn survive_throw(result: Result<Value, JsError>) -> Result<Value, JsError> {
    match result {
        Err(JsError::Thrown(v)) if !is_fatal(&v) => {
            eprintln!("{}", json!({ "log": "reduce function threw", "error": v }));
            Ok(Value::Null)
        }
        other => other,
    }
}

fn is_fatal(thrown: &Value) -> bool {
    thrown.as_str() == Some("fatal_error") || thrown.get(0).and_then(Value::as_str) == Some("fatal")
}

impl Partial {
    /// The value a query shows.
    pub fn finalize(self) -> Value {
        match self {
            Partial::Value(v) => v,
            Partial::Distinct(s) => json!(s.len()),
        }
    }
}

// ---- _sum ----

fn sum_error(cause: &Value) -> Value {
    json!({"error": "builtin_reduce_error", "reason": SUM_ERROR, "caused_by": cause})
}

fn is_reduce_error(v: &Value) -> bool {
    v.get("error").and_then(Value::as_str) == Some("builtin_reduce_error")
}

fn sum_all<'a>(values: impl Iterator<Item = &'a Value>) -> Value {
    let mut acc = json!(0);
    for v in values {
        if is_reduce_error(v) {
            return v.clone();
        }
        match add(v, acc) {
            Ok(next) => acc = next,
            Err(e) => return e,
        }
    }
    acc
}

fn add_numbers(a: &Number, b: &Number) -> Value {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) if x.checked_add(y).is_some() => json!(x + y),
        _ => Number::from_f64(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)).map_or(Value::Null, Value::Number),
    }
}

/// `value + acc` as CouchDB's `sum_values`; the error object on bad input.
fn add(value: &Value, acc: Value) -> Result<Value, Value> {
    match (value, acc) {
        (Value::Number(x), Value::Number(y)) => Ok(add_numbers(x, &y)),
        (Value::Array(xs), Value::Array(ys)) => add_arrays(xs, &ys),
        (Value::Array(xs), Value::Number(y)) => add_arrays(xs, &[Value::Number(y)]),
        (Value::Number(x), Value::Array(ys)) => add_arrays(&[Value::Number(x.clone())], &ys),
        (Value::Object(x), Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(Value::Object(x.clone())),
        (Value::Object(x), Value::Object(mut y)) => {
            for (k, v) in x {
                let merged = match y.shift_remove(k) {
                    Some(prev) => add(v, prev)?,
                    None => v.clone(),
                };
                y.insert(k.clone(), merged);
            }
            Ok(Value::Object(y))
        }
        (other, _) => Err(sum_error(other)),
    }
}

fn add_arrays(xs: &[Value], ys: &[Value]) -> Result<Value, Value> {
    let mut out = Vec::with_capacity(xs.len().max(ys.len()));
    for i in 0..xs.len().max(ys.len()) {
        out.push(match (xs.get(i), ys.get(i)) {
            (Some(Value::Number(x)), Some(Value::Number(y))) => add_numbers(x, y),
            (Some(v), None) | (None, Some(v)) if v.is_number() => v.clone(),
            (Some(bad), _) if !bad.is_number() => return Err(sum_error(&Value::Array(xs.to_vec()))),
            _ => return Err(sum_error(&Value::Array(ys.to_vec()))),
        });
    }
    Ok(Value::Array(out))
}

// ---- _stats ----

#[derive(Clone, Copy, Debug)]
struct Stats {
    sum: f64,
    count: f64,
    min: f64,
    max: f64,
    sumsqr: f64,
}

enum StatsAcc {
    One(Stats),
    Many(Vec<Stats>),
}

fn stats_of(v: &Value) -> Result<StatsAcc, ReduceError> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            Ok(StatsAcc::One(Stats { sum: x, count: 1.0, min: x, max: x, sumsqr: x * x }))
        }
        Value::Array(items) => Ok(StatsAcc::Many(
            items
                .iter()
                .map(|i| match stats_of(i)? {
                    StatsAcc::One(s) => Ok(s),
                    StatsAcc::Many(_) => Err(stat_error(i)),
                })
                .collect::<Result<_, _>>()?,
        )),
        Value::Object(o) => {
            let get = |k: &str| -> Result<f64, ReduceError> {
                match o.get(k) {
                    Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(0.0)),
                    None => Err(ReduceError::InvalidValue(format!("user _stats input missing required field {k} ({v})"))),
                    Some(other) => Err(ReduceError::InvalidValue(format!("non-numeric _stats input received for {k}: {other}"))),
                }
            };
            Ok(StatsAcc::One(Stats { sum: get("sum")?, count: get("count")?, min: get("min")?, max: get("max")?, sumsqr: get("sumsqr")? }))
        }
        other => Err(stat_error(other)),
    }
}

fn stat_error(v: &Value) -> ReduceError {
    ReduceError::InvalidValue(format!("The _stats function requires that map values be numbers or arrays of numbers, not '{v}'"))
}

fn merge(a: Stats, b: Stats) -> Stats {
    Stats { sum: a.sum + b.sum, count: a.count + b.count, min: a.min.min(b.min), max: a.max.max(b.max), sumsqr: a.sumsqr + b.sumsqr }
}

fn stats_all<'a>(values: impl Iterator<Item = &'a Value>) -> Result<Value, ReduceError> {
    let mut acc: Option<StatsAcc> = None;
    for v in values {
        let next = stats_of(v)?;
        acc = Some(match (acc, next) {
            (None, n) => n,
            (Some(StatsAcc::One(a)), StatsAcc::One(b)) => StatsAcc::One(merge(a, b)),
            // CouchDB's builtin_stats zips the arrays and fails on unequal lengths.
            (Some(StatsAcc::Many(a)), StatsAcc::Many(b)) if a.len() != b.len() => {
                return Err(ReduceError::InvalidValue(format!("The _stats function requires that arrays of numbers have the same length, not {} and {}", a.len(), b.len())));
            }
            (Some(StatsAcc::Many(a)), StatsAcc::Many(b)) => StatsAcc::Many(a.into_iter().zip(b).map(|(x, y)| merge(x, y)).collect()),
            (Some(_), _) => return Err(stat_error(v)),
        });
    }
    Ok(match acc {
        None => json!({"sum": 0, "count": 0, "min": 0, "max": 0, "sumsqr": 0}),
        Some(StatsAcc::One(s)) => pack(s),
        Some(StatsAcc::Many(all)) => Value::Array(all.into_iter().map(pack).collect()),
    })
}

/// Whole numbers as integers, as CouchDB's Erlang arithmetic shows them.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

fn pack(s: Stats) -> Value {
    let mut m = Map::new();
    m.insert("sum".into(), number(s.sum));
    m.insert("count".into(), number(s.count));
    m.insert("min".into(), number(s.min));
    m.insert("max".into(), number(s.max));
    m.insert("sumsqr".into(), number(s.sumsqr));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[Value]) -> Vec<(Value, String, Value)> {
        values.iter().enumerate().map(|(i, v)| (json!(i % 2), format!("d{i}"), v.clone())).collect()
    }

    fn reduce(r: Reducer, values: &[Value]) -> Result<Value, ReduceError> {
        r.reduce(None, &rows(values)).map(Partial::finalize)
    }

    /// Reduce in two halves, then rereduce: the same answer as one pass.
    fn in_halves(r: Reducer, values: &[Value]) -> Value {
        let all = rows(values);
        let (a, b) = all.split_at(all.len() / 2);
        let parts = vec![r.reduce(None, a).unwrap(), r.reduce(None, b).unwrap()];
        r.rereduce(None, parts).unwrap().finalize()
    }

    #[test]
    fn count_and_sum() {
        let v = [json!(1), json!(2.5), json!(3)];
        assert_eq!(reduce(Reducer::Count, &v).unwrap(), json!(3));
        assert_eq!(in_halves(Reducer::Count, &v), json!(3));
        assert_eq!(reduce(Reducer::Sum, &v).unwrap(), json!(6.5));
        assert_eq!(reduce(Reducer::Sum, &[json!(1), json!(2)]).unwrap(), json!(3));
        let arrays = [json!([1, 2]), json!([10]), json!([1, 1, 1])];
        assert_eq!(reduce(Reducer::Sum, &arrays).unwrap(), json!([12, 3, 1]));
        assert_eq!(in_halves(Reducer::Sum, &arrays), json!([12, 3, 1]));
        let objects = [json!({"a": 1, "b": {"c": [1, 2]}}), json!({"a": 2, "b": {"c": [1]}, "d": 5})];
        assert_eq!(reduce(Reducer::Sum, &objects).unwrap(), json!({"a": 3, "b": {"c": [2, 2]}, "d": 5}));
        assert_eq!(reduce(Reducer::Sum, &[json!(1), json!(2), json!(4)]).unwrap(), in_halves(Reducer::Sum, &[json!(1), json!(2), json!(4)]));
    }

    #[test]
    fn sum_of_what_is_not_a_number_is_couchdbs_error_object() {
        let got = reduce(Reducer::Sum, &[json!(1), json!("x")]).unwrap();
        assert_eq!(got, json!({"error": "builtin_reduce_error", "reason": SUM_ERROR, "caused_by": "x"}));
        // And stays the answer through rereduce.
        assert_eq!(in_halves(Reducer::Sum, &[json!(1), json!(2), json!("x"), json!(4)]), got);
        // Objects do not mix with numbers.
        assert_eq!(reduce(Reducer::Sum, &[json!({"a": 1}), json!(2)]).unwrap(), sum_error(&json!(2)));
    }

    #[test]
    fn stats() {
        let v = [json!(1), json!(2), json!(3), json!(4)];
        let want = json!({"sum": 10, "count": 4, "min": 1, "max": 4, "sumsqr": 30});
        assert_eq!(reduce(Reducer::Stats, &v).unwrap(), want);
        assert_eq!(in_halves(Reducer::Stats, &v), want);
        assert_eq!(
            reduce(Reducer::Stats, &[json!([1, 10]), json!([3, 20])]).unwrap(),
            json!([{"sum": 4, "count": 2, "min": 1, "max": 3, "sumsqr": 10}, {"sum": 30, "count": 2, "min": 10, "max": 20, "sumsqr": 500}])
        );
        assert_eq!(reduce(Reducer::Stats, &[json!({"sum": 5, "count": 2, "min": 1, "max": 4, "sumsqr": 17}), json!(1)]).unwrap(), json!({"sum": 6, "count": 3, "min": 1, "max": 4, "sumsqr": 18}));
        assert!(matches!(reduce(Reducer::Stats, &[json!("x")]), Err(ReduceError::InvalidValue(m)) if m.contains("'\"x\"'")));
        assert!(matches!(reduce(Reducer::Stats, &[json!({"sum": 1})]), Err(ReduceError::InvalidValue(m)) if m.contains("missing required field count")));
        // Arrays of unequal length are refused, as CouchDB's zip of them fails.
        assert!(matches!(reduce(Reducer::Stats, &[json!([1, 2, 3]), json!([1, 2])]), Err(ReduceError::InvalidValue(m)) if m.contains("same length")));
    }

    #[test]
    fn approx_count_distinct_counts_distinct_keys() {
        let r = Reducer::ApproxCountDistinct;
        let rows: Vec<(Value, String, Value)> = ["a", "b", "a", "c", "b"].iter().enumerate().map(|(i, k)| (json!(k), format!("{i}"), Value::Null)).collect();
        assert_eq!(r.reduce(None, &rows).unwrap().finalize(), json!(3));
        let parts = vec![r.reduce(None, &rows[..2]).unwrap(), r.reduce(None, &rows[2..]).unwrap()];
        assert_eq!(r.rereduce(None, parts).unwrap().finalize(), json!(3));
    }

    #[test]
    fn builtins_are_named_by_prefix() {
        assert_eq!(builtin("_count"), Some(Reducer::Count));
        assert_eq!(builtin(" _sum\n"), Some(Reducer::Sum));
        assert_eq!(builtin("_stats"), Some(Reducer::Stats));
        assert_eq!(builtin("_approx_count_distinct"), Some(Reducer::ApproxCountDistinct));
        assert_eq!(builtin("function (k, v) { return 1; }"), None);
    }
}
