//! FILTER comparisons pushed into scans: a conjunct `?x >= c`, `?x <= c`,
//! `?x = c` (or `<`, `>`, either way round) with `c` an inlined number,
//! date or date-time restricts every quad pattern under the filter whose
//! object is `?x` to the id ranges such terms can have
//! (`rhizome_rdf::term::range`). The filter itself stays above: the ranges
//! only skip quads whose rows it would drop, since a conjunction with a
//! false (or erroring) conjunct never holds.

use super::order::{order_patterns, Statistics};
use super::{GraphSlot, Plan, QuadPlan, Slot, Var};
use crate::terms::TermSpace;
use rhizome_rdf::QuadPattern;
use crate::expression::Expr;
use rhizome_rdf::term::range::{comparison_ranges, intersect, IdRanges, Side};
use rhizome_rdf::TermId;
use std::sync::Arc;

/// Restricts the object scans under `filter` (see the module), and
/// re-orders a BGP directly under it now that its estimates changed.
pub fn push_filter_ranges(filter: &Expr, inner: &mut Plan, space: &TermSpace<'_>, stats: &Statistics, bound: &[Var]) {
    let mut by_var: Vec<(Var, IdRanges)> = Vec::new();
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    for e in parts {
        let Some((v, ranges)) = constraint(e) else { continue };
        match by_var.iter_mut().find(|(x, _)| *x == v) {
            Some((_, old)) => *old = intersect(old, &ranges),
            None => by_var.push((v, ranges)),
        }
    }
    if by_var.is_empty() {
        return;
    }
    for (v, ranges) in by_var {
        restrict(inner, v, &Arc::from(ranges));
    }
    if let Plan::Bgp(patterns) = inner {
        for p in patterns.iter_mut() {
            p.o_share = share(space, p);
        }
        *patterns = order_patterns(std::mem::take(patterns), stats, bound);
    }
}

/// The share of a constant-predicate pattern's quads within its object
/// ranges, from the bytes each takes in the index ordered by predicate and
/// object.
fn share(space: &TermSpace<'_>, p: &QuadPlan) -> Option<f64> {
    let (Some(ranges), Slot::Const(predicate), GraphSlot::Default) = (&p.o_ranges, p.p, p.g) else { return None };
    let pattern = QuadPattern { p: Some(predicate), ..Default::default() };
    let whole = space.approximate_bytes(pattern, None)?;
    if whole == 0 {
        return None;
    }
    let mut kept = 0;
    for r in ranges.iter() {
        kept += space.approximate_bytes(pattern, Some(*r))?;
    }
    Some((kept as f64 / whole as f64).min(1.0))
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e),
    }
}

fn constraint(e: &Expr) -> Option<(Var, IdRanges)> {
    let (a, b, side) = match e {
        Expr::GreaterOrEqual(a, b) | Expr::Greater(a, b) => (a, b, Side::AtLeast),
        Expr::LessOrEqual(a, b) | Expr::Less(a, b) => (a, b, Side::AtMost),
        Expr::Equal(a, b) => (a, b, Side::Equal),
        _ => return None,
    };
    let flip = |s| match s {
        Side::AtLeast => Side::AtMost,
        Side::AtMost => Side::AtLeast,
        Side::Equal => Side::Equal,
    };
    let (v, c, side) = match (&**a, &**b) {
        (Expr::Var(v), c) => (*v, inlined(c)?, side),
        (c, Expr::Var(v)) => (*v, inlined(c)?, flip(side)),
        _ => return None,
    };
    Some((v, comparison_ranges(side, c)?))
}

/// The inlined id of a constant, if the store inlines its value.
fn inlined(e: &Expr) -> Option<TermId> {
    match e {
        Expr::Inlined(id, _) => Some(*id),
        _ => None,
    }
}

/// Inner joins and filters only: under OPTIONAL, UNION, MINUS, BIND or a
/// subquery a pattern's object is not the filter's variable in every row.
fn restrict(plan: &mut Plan, v: Var, ranges: &Arc<[(TermId, TermId)]>) {
    match plan {
        Plan::Bgp(patterns) => {
            for p in patterns.iter_mut().filter(|p| p.o == Slot::Var(v)) {
                p.o_ranges = Some(match &p.o_ranges {
                    Some(old) => intersect(old, ranges).into(),
                    None => ranges.clone(),
                });
            }
        }
        Plan::Join(a, b) => {
            restrict(a, v, ranges);
            restrict(b, v, ranges);
        }
        Plan::Filter(_, inner) => restrict(inner, v, ranges),
        _ => {}
    }
}
