//! A FILTER over a BGP checked as early as it can be: each conjunct of the
//! filter right after the first patterns that bind all its variables (and
//! those of its EXISTS shared with the BGP), so the later patterns are not
//! looked up for rows it drops. `FILTER(a && b)` keeps a row exactly when
//! `FILTER(a)` and then `FILTER(b)` do, so the split changes no result.
//! Only the BGP's own variables count: a FILTER sees its group's variables,
//! not those a join injects from outside.

use super::{GraphSlot, Plan, QuadPlan, Slot, Var};
use crate::expression::Expr;

/// `Filter(expr, inner)`, with the conjuncts of `expr` moved between the
/// patterns of `inner` when it is a BGP.
pub fn filter_into_bgp(expr: Expr, inner: Plan) -> Plan {
    let Plan::Bgp(patterns) = inner else { return Plan::Filter(expr, Box::new(inner)) };
    let n = patterns.len();
    let mut parts = Vec::new();
    split(expr, &mut parts);
    // After how many patterns each conjunct can run (n: at the end).
    let placed: Vec<(usize, Expr)> = parts.into_iter().map(|e| (earliest(&e, &patterns), e)).collect();
    if n < 2 || placed.iter().all(|(k, _)| *k >= n) {
        return Plan::Filter(join_all(placed.into_iter().map(|(_, e)| e)), Box::new(Plan::Bgp(patterns)));
    }
    let mut cuts: Vec<usize> = placed.iter().map(|(k, _)| *k).collect();
    cuts.push(n);
    cuts.sort_unstable();
    cuts.dedup();
    let mut placed: Vec<Option<(usize, Expr)>> = placed.into_iter().map(Some).collect();
    let mut rest = patterns.into_iter();
    let mut plan: Option<Plan> = None;
    let mut from = 0;
    for cut in cuts {
        // A later segment's rows on the left are those the filter kept,
        // fewer than the first pattern's count (`left_rows_counted`).
        let after_filter = from > 0;
        let segment: Vec<QuadPlan> = rest
            .by_ref()
            .take(cut - from)
            .map(|mut p| {
                p.left_rows_counted &= !after_filter;
                p
            })
            .collect();
        from = cut;
        let bgp = Plan::Bgp(segment);
        let mut p = match plan.take() {
            None => bgp,
            Some(left) => Plan::Join(Box::new(left), Box::new(bgp)),
        };
        let here: Vec<Expr> = placed.iter_mut().filter(|x| x.as_ref().is_some_and(|(k, _)| *k == cut)).map(|x| x.take().expect("checked").1).collect();
        if !here.is_empty() {
            p = Plan::Filter(join_all(here.into_iter()), Box::new(p));
        }
        plan = Some(p);
    }
    plan.expect("at least one segment")
}

fn split(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split(*a, out);
            split(*b, out);
        }
        other => out.push(other),
    }
}

fn join_all(mut parts: impl Iterator<Item = Expr>) -> Expr {
    let first = parts.next().expect("a filter has a conjunct");
    parts.fold(first, |a, b| Expr::And(Box::new(a), Box::new(b)))
}

fn pattern_vars(p: &QuadPlan) -> impl Iterator<Item = Var> + '_ {
    let g = match p.g {
        GraphSlot::Named(Slot::Var(v)) => Some(v),
        _ => None,
    };
    [p.s, p.p, p.o].into_iter().filter_map(Slot::var).chain(g)
}

/// The fewest leading patterns binding every variable `e` reads (for an
/// EXISTS of patterns, its variables the BGP binds); `patterns.len()` when
/// there are none such or `e` has an EXISTS of another kind.
fn earliest(e: &Expr, patterns: &[QuadPlan]) -> usize {
    let n = patterns.len();
    // A variable compared with an inlined value is restricted in its scan
    // already (`ranges.rs`), and moving it would split a merge join.
    if let Expr::Greater(a, b) | Expr::GreaterOrEqual(a, b) | Expr::Less(a, b) | Expr::LessOrEqual(a, b) | Expr::Equal(a, b) = e {
        if matches!((&**a, &**b), (Expr::Var(_), Expr::Inlined(..)) | (Expr::Inlined(..), Expr::Var(_))) {
            return n;
        }
    }
    let in_bgp = |v: &Var| patterns.iter().any(|p| pattern_vars(p).any(|x| x == *v));
    let mut needed: Vec<Var> = e.vars();
    for p in e.exists_plans() {
        let Plan::Bgp(inner) = p else { return n };
        needed.extend(inner.iter().flat_map(pattern_vars).filter(in_bgp));
    }
    if needed.is_empty() || !needed.iter().all(in_bgp) {
        return n;
    }
    let mut bound: Vec<Var> = Vec::new();
    for (k, p) in patterns.iter().enumerate() {
        bound.extend(pattern_vars(p));
        if needed.iter().all(|v| bound.contains(v)) {
            return k + 1;
        }
    }
    n
}
