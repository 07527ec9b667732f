//! Unused BINDs dropped: a BIND never adds or removes rows, so one whose
//! variable nothing above reads (a COUNT(*) over a subquery, a projection
//! that leaves it out) need not be computed. Operators whose result depends
//! on every variable (joins, DISTINCT, EXISTS, ...) keep everything below
//! them, up to the next projection.

use super::{Plan, Var};
use crate::expression::Expr;
use rustc_hash::FxHashSet;

/// The variables read above a node; `None`: all of them.
type Needed = Option<FxHashSet<Var>>;

pub fn prune_unused_binds(plan: &mut Plan, needed: &[Var]) {
    prune(plan, Some(needed.iter().copied().collect()));
}

fn with(needed: &Needed, extra: impl IntoIterator<Item = Var>) -> Needed {
    needed.as_ref().map(|n| n.iter().copied().chain(extra).collect())
}

fn expr_vars(e: &Expr, needed: &Needed) -> Needed {
    if e.has_exists() {
        return None;
    }
    with(needed, e.vars())
}

fn prune(plan: &mut Plan, needed: Needed) {
    if let Plan::Extend(inner, v, e) = plan {
        if needed.as_ref().is_some_and(|n| !n.contains(v)) && !e.has_exists() {
            let inner = std::mem::replace(&mut **inner, Plan::Values(Vec::new()));
            *plan = inner;
            return prune(plan, needed);
        }
    }
    match plan {
        Plan::Bgp(_) | Plan::Path { .. } | Plan::Values(_) | Plan::Walk(_) => {}
        Plan::Extend(inner, _, e) => {
            let below = expr_vars(e, &needed);
            prune(inner, below);
        }
        Plan::Filter(e, inner) => {
            let below = expr_vars(e, &needed);
            prune(inner, below);
        }
        Plan::OrderBy(inner, keys, _) => {
            let mut below = needed;
            for (e, _) in keys.iter() {
                below = expr_vars(e, &below);
            }
            prune(inner, below);
        }
        Plan::Slice(inner, ..) => prune(inner, needed),
        Plan::Project(inner, vars) => {
            let below = match &needed {
                Some(n) => vars.iter().copied().filter(|v| n.contains(v)).collect(),
                None => vars.iter().copied().collect(),
            };
            prune(inner, Some(below));
        }
        Plan::Group(inner, keys, aggregates) => {
            let mut below: Needed = Some(keys.iter().copied().collect());
            for (_, a) in aggregates.iter() {
                below = match &a.expr {
                    Some(e) => expr_vars(e, &below),
                    // COUNT(DISTINCT *) compares whole rows.
                    None if a.distinct => None,
                    None => below,
                };
            }
            prune(inner, below);
        }
        // Their rows depend on every variable below (shared variables,
        // distinct rows, graphs): nothing below is dropped but under a
        // projection of its own.
        Plan::Join(a, b) | Plan::LeftJoin(a, b, _) | Plan::Union(a, b) | Plan::Minus(a, b) => {
            prune(a, None);
            prune(b, None);
        }
        Plan::Distinct(inner) | Plan::Reduced(inner) | Plan::GraphVar(_, inner) | Plan::GraphLoop(_, _, inner) | Plan::GraphConst(_, inner) => {
            prune(inner, None)
        }
    }
}
