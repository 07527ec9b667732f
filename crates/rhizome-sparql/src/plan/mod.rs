//! The plan: spargebra's algebra with variables numbered, constants encoded
//! to term ids, the active graph pushed into every quad pattern, and the
//! patterns of each basic graph pattern ordered from the store's statistics.

mod order;
mod prune;
mod pushdown;
mod ranges;
mod translate;

pub use order::Statistics;
pub use prune::prune_unused_binds;
pub use translate::Translator;

use crate::expression::Expr;
use rhizome_rdf::TermId;
use std::sync::Arc;

/// A variable's position in a row.
pub type Var = usize;

/// A solution: one optional term id per variable of the query.
pub type Row = Vec<Option<TermId>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Const(TermId),
    Var(Var),
}

impl Slot {
    pub fn var(self) -> Option<Var> {
        match self {
            Slot::Var(v) => Some(v),
            Slot::Const(_) => None,
        }
    }
    /// The value of the slot in a row, if known.
    pub fn value(self, row: &Row) -> Option<TermId> {
        match self {
            Slot::Const(id) => Some(id),
            Slot::Var(v) => row[v],
        }
    }
}

/// Which graph a pattern matches in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphSlot {
    /// The query's default graph (the store's, or the FROM graphs).
    Default,
    /// A named graph (GRAPH); never the default graph of a plain store.
    Named(Slot),
}

#[derive(Clone, Debug)]
pub struct QuadPlan {
    pub s: Slot,
    pub p: Slot,
    pub o: Slot,
    pub g: GraphSlot,
    /// Object ids a FILTER above lets through (inclusive, sorted), when the
    /// object is a variable the filter compares with an inlined value: the
    /// scan then seeks over the index's object ranges instead of reading
    /// every object (see `rhizome_rdf::term::range`).
    pub o_ranges: Option<Arc<[(TermId, TermId)]>>,
    /// The share of the pattern's quads `o_ranges` keeps, estimated from
    /// the bytes the ranges take in the index (`None`: unknown).
    pub o_share: Option<f64>,
    /// Expected quads of the pattern with only its constants bound (from
    /// the statistics, set when the BGP is ordered): what reading it once
    /// whole for a hash join costs, against one lookup per row on the left.
    pub alone_rows: Option<f64>,
    /// Expected rows on the left when the pattern runs, per row the BGP
    /// starts from (from the statistics, set when the BGP is ordered): the
    /// lookups a hash join would save, a prediction the run-time choice
    /// trusts only in part (`hashed_pattern`).
    pub left_rows: Option<f64>,
    /// `left_rows` is a count the store keeps, not a guess: the pattern is
    /// second in a BGP run from no bindings, after a pattern of the default
    /// graph with only a constant predicate (or `a` and a class) bound and
    /// no object ranges. Over the whole union default graph (checked when
    /// it runs) the run-time choice trusts it whole.
    pub left_rows_counted: bool,
}

#[derive(Clone, Debug)]
pub enum PathPlan {
    Link(TermId),
    Reverse(Box<PathPlan>),
    Sequence(Box<PathPlan>, Box<PathPlan>),
    Alternative(Box<PathPlan>, Box<PathPlan>),
    ZeroOrMore(Box<PathPlan>),
    OneOrMore(Box<PathPlan>),
    ZeroOrOne(Box<PathPlan>),
    Negated(Vec<TermId>),
}

#[derive(Clone, Debug)]
pub enum AggregateKind {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    GroupConcat(String),
    Sample,
}

#[derive(Clone, Debug)]
pub struct Aggregate {
    pub kind: AggregateKind,
    /// `None` is `COUNT(*)`.
    pub expr: Option<Expr>,
    pub distinct: bool,
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Patterns in evaluation order (index nested loops).
    Bgp(Vec<QuadPlan>),
    Path { s: Slot, path: PathPlan, o: Slot, g: GraphSlot },
    Join(Box<Plan>, Box<Plan>),
    LeftJoin(Box<Plan>, Box<Plan>, Option<Expr>),
    Filter(Expr, Box<Plan>),
    Union(Box<Plan>, Box<Plan>),
    /// `GRAPH ?g { inner }`: rows where the inner pattern left `?g` unbound
    /// (no pattern inside) get one row per named graph.
    GraphVar(Var, Box<Plan>),
    /// `GRAPH ?g { inner }` with SPARQL's own semantics: the inner pattern
    /// evaluated once per named graph, its patterns reading the graph from
    /// the hidden variable (second), the graph then joined as `?g` (first).
    /// Used when the inner pattern would see `?g` differently if it were
    /// pushed into its scans (subqueries, MINUS, `?g` used inside).
    GraphLoop(Var, Var, Box<Plan>),
    /// `GRAPH <g> { inner }`: nothing if the dataset has no such graph.
    GraphConst(TermId, Box<Plan>),
    Extend(Box<Plan>, Var, Expr),
    Minus(Box<Plan>, Box<Plan>),
    Values(Vec<Row>),
    /// Sort keys (descending when true), and how many first rows are
    /// wanted when a LIMIT above says so (a top-k instead of a full sort).
    OrderBy(Box<Plan>, Vec<(Expr, bool)>, Option<usize>),
    Project(Box<Plan>, Vec<Var>),
    Distinct(Box<Plan>),
    Reduced(Box<Plan>),
    Slice(Box<Plan>, usize, Option<usize>),
    Group(Box<Plan>, Vec<Var>, Vec<(Var, Aggregate)>),
    /// A graph walk whose start or ends are variables
    /// (`crate::graph_service`): run once per row it joins.
    Walk(Box<crate::graph_service::Walk>),
}

impl Plan {
    /// Whether evaluating with bindings injected from the left gives the
    /// same rows as evaluating alone and joining: true for patterns whose
    /// meaning does not depend on which variables are bound around them.
    pub fn accepts_bindings(&self) -> bool {
        match self {
            Plan::Bgp(_) | Plan::Path { .. } | Plan::Values(_) | Plan::Walk(_) => true,
            Plan::Join(a, b) | Plan::Union(a, b) => a.accepts_bindings() && b.accepts_bindings(),
            Plan::GraphVar(_, inner) | Plan::GraphConst(_, inner) => inner.accepts_bindings(),
            Plan::GraphLoop(..) => true,
            Plan::Filter(e, inner) | Plan::Extend(inner, _, e) => {
                inner.accepts_bindings() && !e.has_exists() && e.vars().iter().all(|v| inner.certain_vars().contains(v))
            }
            _ => false,
        }
    }

    /// Variables bound in every row the plan gives.
    pub fn certain_vars(&self) -> Vec<Var> {
        let mut out = Vec::new();
        self.certain_into(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Every variable some row of the plan may bind; `None` when not known
    /// here (graph loops, walks): callers then assume any.
    pub fn possible_vars(&self) -> Option<Vec<Var>> {
        let mut out = Vec::new();
        self.possible_into(&mut out)?;
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    fn possible_into(&self, out: &mut Vec<Var>) -> Option<()> {
        match self {
            Plan::Bgp(_) | Plan::Path { .. } => self.certain_into(out),
            Plan::Values(rows) => {
                for r in rows {
                    out.extend((0..r.len()).filter(|v| r[*v].is_some()));
                }
            }
            Plan::Join(a, b) | Plan::LeftJoin(a, b, _) | Plan::Union(a, b) => {
                a.possible_into(out)?;
                b.possible_into(out)?;
            }
            Plan::Minus(a, _) | Plan::Filter(_, a) | Plan::OrderBy(a, _, _) | Plan::Distinct(a) | Plan::Reduced(a) | Plan::Slice(a, _, _) => {
                a.possible_into(out)?
            }
            Plan::Extend(a, v, _) => {
                out.push(*v);
                a.possible_into(out)?;
            }
            Plan::Project(_, vars) => out.extend(vars.iter().copied()),
            Plan::Group(_, keys, aggregates) => out.extend(keys.iter().copied().chain(aggregates.iter().map(|(v, _)| *v))),
            Plan::GraphVar(..) | Plan::GraphLoop(..) | Plan::GraphConst(..) | Plan::Walk(_) => return None,
        }
        Some(())
    }

    fn certain_into(&self, out: &mut Vec<Var>) {
        match self {
            Plan::Bgp(ps) => {
                for p in ps {
                    for s in [p.s, p.p, p.o] {
                        out.extend(s.var());
                    }
                    if let GraphSlot::Named(Slot::Var(v)) = p.g {
                        out.push(v);
                    }
                }
            }
            Plan::Path { s, o, g, .. } => {
                out.extend(s.var());
                out.extend(o.var());
                if let GraphSlot::Named(Slot::Var(v)) = g {
                    out.push(*v);
                }
            }
            Plan::Join(a, b) => {
                a.certain_into(out);
                b.certain_into(out);
            }
            Plan::LeftJoin(a, _, _) | Plan::Minus(a, _) | Plan::Filter(_, a) | Plan::Extend(a, _, _) => a.certain_into(out),
            Plan::Union(a, b) => {
                let (x, y) = (a.certain_vars(), b.certain_vars());
                out.extend(x.into_iter().filter(|v| y.contains(v)));
            }
            Plan::GraphVar(v, inner) | Plan::GraphLoop(v, _, inner) => {
                out.push(*v);
                inner.certain_into(out);
            }
            Plan::GraphConst(_, inner) => inner.certain_into(out),
            Plan::Values(rows) => {
                // Rows are as wide as their last bound variable.
                let width = rows.iter().map(Vec::len).max().unwrap_or(0);
                for v in 0..width {
                    if rows.iter().all(|r| r.get(v).copied().flatten().is_some()) {
                        out.push(v);
                    }
                }
            }
            Plan::OrderBy(a, _, _) | Plan::Distinct(a) | Plan::Reduced(a) | Plan::Slice(a, _, _) => a.certain_into(out),
            Plan::Project(a, vars) => {
                let inner = a.certain_vars();
                out.extend(vars.iter().copied().filter(|v| inner.contains(v)));
            }
            Plan::Group(_, keys, _) => out.extend(keys.iter().copied()),
            Plan::Walk(w) => out.extend(w.certain_vars()),
        }
    }
}
