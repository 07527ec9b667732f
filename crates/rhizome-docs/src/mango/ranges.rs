//! What a selector tells an index, as CouchDB's `mango_idx_view` reads
//! it: the fields an index could serve (`indexable_fields`) and the range
//! of values each is restricted to (`field_ranges`), narrowed through
//! `$and` in collation order. The planner ranks indexes by how many of
//! their leading columns have a range; `_explain` shows the ranges as
//! `start_key` and `end_key`; a scan reads between them.

use crate::collate;
use crate::selector::{Cond, Selector};
use serde_json::Value;
use std::cmp::Ordering;

/// One end of a range: below or above every value, or a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Edge {
    Min,
    Value(Value),
    Max,
}

impl Edge {
    fn cmp(&self, other: &Edge) -> Ordering {
        match (self, other) {
            (Edge::Min, Edge::Min) | (Edge::Max, Edge::Max) => Ordering::Equal,
            (Edge::Min, _) | (_, Edge::Max) => Ordering::Less,
            (_, Edge::Min) | (Edge::Max, _) => Ordering::Greater,
            (Edge::Value(a), Edge::Value(b)) => collate::compare(a, b),
        }
    }
}

/// The comparison at an end of a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Gte,
    Eq,
    Lt,
    Lte,
}

/// The values a field may take: `low_op low`, `high_op high`.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub low_op: Op,
    pub low: Edge,
    pub high_op: Op,
    pub high: Edge,
}

impl Range {
    fn whole() -> Range {
        Range { low_op: Op::Gt, low: Edge::Min, high_op: Op::Lt, high: Edge::Max }
    }

    fn point(v: &Value) -> Range {
        Range { low_op: Op::Eq, low: Edge::Value(v.clone()), high_op: Op::Eq, high: Edge::Value(v.clone()) }
    }

    /// Whether the range is one value.
    pub fn is_point(&self) -> bool {
        self.low_op == Op::Eq
    }
}

/// A field's range, or no value at all (`Empty`: the query matches
/// nothing).
#[derive(Clone, Debug, PartialEq)]
pub enum FieldRange {
    Range(Range),
    Empty,
}

/// Whether an index could find a condition's values (`indexable/1`).
fn indexable(cond: &Cond) -> bool {
    matches!(cond, Cond::Lt(_) | Cond::Lte(_) | Cond::Eq(_) | Cond::Gt(_) | Cond::Gte(_) | Cond::BeginsWith(_) | Cond::Exists(_))
}

/// The fields of the selector's conjunction that an index could serve,
/// sorted and without repeats (`indexable_fields/1`: only `$and` is seen
/// through).
pub fn indexable_fields(selector: &Selector) -> Vec<Vec<String>> {
    fn walk(s: &Selector, out: &mut Vec<Vec<String>>) {
        match s {
            Selector::And(xs) => xs.iter().for_each(|x| walk(x, out)),
            Selector::Field { path, cond } if !path.is_empty() && indexable(cond) => out.push(path.clone()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(selector, &mut out);
    out.sort_by(|a, b| crate::selector::join_path(a).cmp(&crate::selector::join_path(b)));
    out.dedup();
    out
}

/// Every field a selector names (`mango_selector:fields/1`).
pub fn selector_fields(selector: &Selector) -> Vec<Vec<String>> {
    match selector {
        Selector::And(xs) | Selector::Or(xs) | Selector::Nor(xs) => xs.iter().flat_map(selector_fields).collect(),
        Selector::Not(x) => selector_fields(x),
        Selector::Field { path, .. } => vec![path.clone()],
    }
}

/// Each indexable field with its range (`field_ranges/1`); a field whose
/// range is empty is the only one returned, as in CouchDB.
pub fn field_ranges(selector: &Selector) -> Vec<(Vec<String>, FieldRange)> {
    let mut out = Vec::new();
    for field in indexable_fields(selector) {
        match narrow(selector, &field, FieldRange::Range(Range::whole())) {
            FieldRange::Empty => return vec![(field, FieldRange::Empty)],
            r => out.push((field, r)),
        }
    }
    out
}

/// The range `field` keeps in `selector`, from `r` (`range/6`).
fn narrow(selector: &Selector, field: &[String], r: FieldRange) -> FieldRange {
    match selector {
        Selector::And(xs) => xs.iter().fold(r, |r, x| narrow(x, field, r)),
        Selector::Field { path, cond } if path == field => match r {
            FieldRange::Range(r) => narrow_cond(cond, r),
            FieldRange::Empty => FieldRange::Empty,
        },
        _ => r,
    }
}

/// Where `arg` falls against a range's ends (`range_pos/3`).
#[derive(PartialEq)]
enum Pos {
    Min,
    Low,
    Mid,
    High,
    Max,
}

fn pos(low: &Edge, arg: &Value, high: &Edge) -> Pos {
    let arg = Edge::Value(arg.clone());
    match arg.cmp(low) {
        Ordering::Less => Pos::Min,
        Ordering::Equal => Pos::Low,
        Ordering::Greater => match arg.cmp(high) {
            Ordering::Less => Pos::Mid,
            Ordering::Equal => Pos::High,
            Ordering::Greater => Pos::Max,
        },
    }
}

fn narrow_cond(cond: &Cond, r: Range) -> FieldRange {
    use FieldRange::{Empty, Range as R};
    let v = |a: &Value| Edge::Value(a.clone());
    match cond {
        // Every string starting with the prefix sorts between it and the
        // prefix followed by U+FFFF, the last character in collation.
        Cond::BeginsWith(p) => match narrow_cond(&Cond::Gte(Value::String(p.clone())), r) {
            R(r) => narrow_cond(&Cond::Lte(Value::String(format!("{p}\u{FFFF}"))), r),
            Empty => Empty,
        },
        Cond::Lt(a) => match pos(&r.low, a, &r.high) {
            Pos::Min | Pos::Low => Empty,
            Pos::Mid | Pos::High => R(Range { high_op: Op::Lt, high: v(a), ..r }),
            Pos::Max => R(r),
        },
        Cond::Lte(a) => match pos(&r.low, a, &r.high) {
            Pos::Min => Empty,
            Pos::Low if matches!(r.low_op, Op::Gte | Op::Eq) => R(Range::point(a)),
            Pos::Low => Empty,
            Pos::Mid => R(Range { high_op: Op::Lte, high: v(a), ..r }),
            Pos::High | Pos::Max => R(r),
        },
        Cond::Eq(a) => match pos(&r.low, a, &r.high) {
            Pos::Min | Pos::Max => Empty,
            Pos::Low if matches!(r.low_op, Op::Gte | Op::Eq) => R(Range::point(a)),
            Pos::Mid => R(Range::point(a)),
            Pos::High if matches!(r.high_op, Op::Lte | Op::Eq) => R(Range::point(a)),
            Pos::Low | Pos::High => Empty,
        },
        Cond::Gte(a) => match pos(&r.low, a, &r.high) {
            Pos::Min | Pos::Low => R(r),
            Pos::Mid => R(Range { low_op: Op::Gte, low: v(a), ..r }),
            Pos::High if matches!(r.high_op, Op::Lte | Op::Eq) => R(Range::point(a)),
            Pos::High | Pos::Max => Empty,
        },
        Cond::Gt(a) => match pos(&r.low, a, &r.high) {
            Pos::Min => R(r),
            Pos::Low | Pos::Mid => R(Range { low_op: Op::Gt, low: v(a), ..r }),
            Pos::High | Pos::Max => Empty,
        },
        // Other conditions are checked on each document after the scan.
        _ => R(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ranges(sel: Value) -> Vec<(String, FieldRange)> {
        field_ranges(&Selector::parse(&sel).unwrap()).into_iter().map(|(p, r)| (crate::selector::join_path(&p), r)).collect()
    }

    fn r(low_op: Op, low: Edge, high_op: Op, high: Edge) -> FieldRange {
        FieldRange::Range(Range { low_op, low, high_op, high })
    }

    #[test]
    fn ranges_narrow_as_couchdbs() {
        let v = |x: Value| Edge::Value(x);
        assert_eq!(ranges(json!({ "a": { "$gt": 1, "$lte": 5 }, "b": { "$regex": "x" } })), vec![("a".into(), r(Op::Gt, v(json!(1)), Op::Lte, v(json!(5))))]);
        assert_eq!(ranges(json!({ "a": { "$gte": 5, "$lte": 5 } })), vec![("a".into(), r(Op::Eq, v(json!(5)), Op::Eq, v(json!(5))))]);
        assert_eq!(ranges(json!({ "a": { "$exists": true } })), vec![("a".into(), r(Op::Gt, Edge::Min, Op::Lt, Edge::Max))]);
        assert_eq!(ranges(json!({ "a": { "$beginsWith": "A" } })), vec![("a".into(), r(Op::Gte, v(json!("A")), Op::Lte, v(json!("A\u{FFFF}"))))]);
        // An empty range is the only one returned.
        assert_eq!(ranges(json!({ "a": 1, "b": { "$gt": 3, "$lt": 2 } })), vec![("b".into(), FieldRange::Empty)]);
        // `$or` is not seen through; fields come sorted.
        assert_eq!(ranges(json!({ "$or": [{ "a": 1 }, { "a": 2 }] })), vec![]);
        let names: Vec<String> = ranges(json!({ "z": 1, "m": { "$lt": 0 } })).into_iter().map(|(f, _)| f).collect();
        assert_eq!(names, ["m", "z"]);
    }
}
