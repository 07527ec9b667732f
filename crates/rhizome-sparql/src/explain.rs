//! EXPLAIN: the plan as an indented tree, each operator with the rows it
//! gave, each quad pattern with the rows the planner expected per lookup
//! beside the rows it gave per lookup, so a misestimate shows.

use crate::plan::{GraphSlot, Plan, QuadPlan, Slot, Statistics, Var};
use crate::terms::TermSpace;
use rustc_hash::FxHashMap;
use std::fmt::Write;

struct Explain<'r, 's> {
    /// Variables bound by the left side of the join being rendered (a
    /// BGP on the right is looked up with them bound).
    outer: Vec<Var>,
    counts: &'r FxHashMap<usize, u64>,
    names: &'r [String],
    stats: &'r Statistics,
    space: &'r TermSpace<'s>,
    out: String,
}

pub fn render(plan: &Plan, counts: &FxHashMap<usize, u64>, names: &[String], stats: &Statistics, space: &TermSpace<'_>) -> String {
    let mut e = Explain { outer: Vec::new(), counts, names, stats, space, out: String::new() };
    e.node(plan, 0);
    e.out
}

impl Explain<'_, '_> {
    fn var(&self, v: Var) -> String {
        format!("?{}", self.names.get(v).map_or("?", String::as_str))
    }

    fn slot(&self, s: Slot) -> String {
        match s {
            Slot::Var(v) => self.var(v),
            Slot::Const(id) => self.space.decode(id).map_or_else(|_| format!("#{:x}", id.0), |t| t.to_string()),
        }
    }

    fn patterns(&mut self, ps: &[QuadPlan], depth: usize) {
        use crate::eval::{LOOKUPS, ROWS_OUT, pattern_key};
        let mut bound: Vec<Var> = self.outer.clone();
        let pad = "  ".repeat(depth);
        // Lookups counted at the first pattern of a star, whose rows are
        // counted after its last pattern.
        let mut group_lookups: Option<u64> = None;
        for p in ps {
            let is_bound = |s: Slot| matches!(s, Slot::Const(_)) || s.var().is_some_and(|v| bound.contains(&v));
            let estimate = self.stats.estimate(p, &[is_bound(p.s), is_bound(p.p), is_bound(p.o)]);
            let graph = match p.g {
                GraphSlot::Default => String::new(),
                GraphSlot::Named(g) => format!(" in {}", self.slot(g)),
            };
            let ranges = match &p.o_ranges {
                Some(r) => format!(" (object in {} id ranges from the filter)", r.len()),
                None => String::new(),
            };
            let hashed = match self.counts.get(&(p as *const QuadPlan as usize)) {
                Some(n) => format!(", hashed after {n} lookups (hash join)"),
                None => String::new(),
            };
            if let Some(n) = self.counts.get(&pattern_key(p, LOOKUPS)) {
                group_lookups = Some(*n);
            }
            let actual = match (self.counts.get(&pattern_key(p, ROWS_OUT)), group_lookups) {
                (Some(rows), Some(lookups)) => {
                    group_lookups = None;
                    let per = if lookups == 0 { 0.0 } else { *rows as f64 / lookups as f64 };
                    format!("; actual {rows} rows from {lookups} lookups ({per:.1} per lookup)")
                }
                (Some(rows), None) => {
                    format!("; actual {rows} rows (merge join of the patterns so far)")
                }
                (None, Some(_)) => "; actual: counted with the next pattern (one lookup for both)".into(),
                (None, None) => String::new(),
            };
            let line = format!(
                "{pad}{} {} {}{graph}{ranges}: estimated {estimate:.0} rows per lookup{hashed}{actual}",
                self.slot(p.s),
                self.slot(p.p),
                self.slot(p.o)
            );
            let _ = writeln!(self.out, "{line}");
            bound.extend([p.s, p.p, p.o].iter().filter_map(|s| s.var()));
        }
    }

    fn node(&mut self, plan: &Plan, depth: usize) {
        let rows = self.counts.get(&(plan as *const Plan as usize)).copied().unwrap_or(0);
        let (label, children): (String, Vec<&Plan>) = match plan {
            Plan::Bgp(_) => ("BGP (in this order: index nested loops, or a hash join where marked)".into(), vec![]),
            Plan::Path { s, o, .. } => (format!("Path {} .. {}", self.slot(*s), self.slot(*o)), vec![]),
            Plan::Join(a, b) => ((if b.accepts_bindings() { "Join (index nested loops)" } else { "Join (hash)" }).into(), vec![a, b]),
            Plan::LeftJoin(a, b, _) => ("Optional".into(), vec![a, b]),
            Plan::Filter(_, a) if self.counts.contains_key(&(plan as *const Plan as usize + crate::eval::SEMI_JOIN_SCAN)) => {
                ("Filter (semi-join scan: EXISTS read once and hashed, the pattern below read in batches and probed)".into(), vec![a])
            }
            Plan::Filter(_, a) => ("Filter".into(), vec![a]),
            Plan::Union(a, b) => ("Union".into(), vec![a, b]),
            Plan::GraphVar(v, a) => (format!("Graph {} (pushed into scans)", self.var(*v)), vec![a]),
            Plan::GraphLoop(v, _, a) => (format!("Graph {} (once per named graph)", self.var(*v)), vec![a]),
            Plan::GraphConst(g, a) => (format!("Graph {}", self.slot(Slot::Const(*g))), vec![a]),
            Plan::Extend(a, v, _) => (format!("Bind {}", self.var(*v)), vec![a]),
            Plan::Minus(a, b) => ("Minus".into(), vec![a, b]),
            Plan::Values(r) => (format!("Values ({} rows)", r.len()), vec![]),
            Plan::Walk(_) => ("Graph walk (once per row)".into(), vec![]),
            Plan::OrderBy(a, _, top) => (top.map_or("OrderBy".into(), |k| format!("OrderBy (top {k})")), vec![a]),
            Plan::Project(a, _) => ("Project".into(), vec![a]),
            Plan::Distinct(a) => ("Distinct".into(), vec![a]),
            Plan::Reduced(a) => ("Reduced".into(), vec![a]),
            Plan::Slice(a, start, len) => (format!("Slice offset {start} limit {}", len.map_or("-".into(), |l| l.to_string())), vec![a]),
            Plan::Group(a, ..) => ("Group".into(), vec![a]),
        };
        let _ = writeln!(self.out, "{}{label}: {rows} rows", "  ".repeat(depth));
        if let Plan::Bgp(ps) = plan {
            self.patterns(ps, depth + 1);
        }
        for (i, c) in children.iter().enumerate() {
            // The right side of a nested-loop join runs with the left's
            // variables bound.
            let outer = match plan {
                Plan::Join(a, b) | Plan::LeftJoin(a, b, _) if i == 1 && b.accepts_bindings() => Some(a.certain_vars()),
                _ => None,
            };
            let saved = outer.map(|o| {
                let widened = [self.outer.clone(), o].concat();
                std::mem::replace(&mut self.outer, widened)
            });
            self.node(c, depth + 1);
            if let Some(s) = saved {
                self.outer = s;
            }
        }
    }
}
