//! spargebra algebra -> plan.

use super::order::{order_patterns, Statistics};
use super::*;
use crate::error::{Result, SparqlError};
use crate::expression::{translate_expression, Expr};
use crate::terms::TermSpace;
use oxrdf::Variable;
use rustc_hash::FxHashMap;
use spargebra::algebra::{AggregateExpression, AggregateFunction, GraphPattern, OrderExpression, PropertyPathExpression};
use spargebra::term::{GroundTerm, NamedNodePattern, TermPattern, TriplePattern};

pub struct Translator<'s, 'a> {
    pub space: &'s TermSpace<'a>,
    stats: Statistics,
    names: Vec<String>,
    ids: FxHashMap<String, Var>,
    graph: GraphSlot,
    hidden: usize,
    /// Variables a join's left side binds before the pattern being
    /// translated runs (for the join order of its BGPs).
    bound: Vec<Var>,
    /// Patterns, expressions and paths being translated around the current
    /// one (bounded by `MAX_PLAN_DEPTH`: every later stage recurses as deep).
    depth: usize,
    /// Nodes translated so far: a right side that cannot take bindings is
    /// translated twice, so nested ones cost twice per level.
    steps: u64,
}

/// The most algebra nodes one request may translate (right sides
/// translated twice included).
const MAX_TRANSLATION_STEPS: u64 = 2_000_000;

impl<'s, 'a> Translator<'s, 'a> {
    pub fn new(space: &'s TermSpace<'a>, stats: Statistics) -> Self {
        Translator { space, stats, names: Vec::new(), ids: FxHashMap::default(), graph: GraphSlot::Default, hidden: 0, bound: Vec::new(), depth: 0, steps: 0 }
    }

    /// The number of variables (the width of every row).
    pub fn width(&self) -> usize {
        self.names.len()
    }

    /// Variable names by position (for EXPLAIN).
    pub fn into_names(self) -> Vec<String> {
        self.names
    }

    pub fn statistics(&self) -> &Statistics {
        &self.stats
    }

    /// Runs `f` one level deeper in the algebra, refusing to go past
    /// `MAX_PLAN_DEPTH` (the text checks of `nesting` keep requests from
    /// text well inside it).
    pub(crate) fn descend<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= crate::nesting::MAX_PLAN_DEPTH {
            return Err(SparqlError::TooComplex(format!("query nesting deeper than {}", crate::nesting::MAX_PLAN_DEPTH)));
        }
        self.steps += 1;
        if self.steps > MAX_TRANSLATION_STEPS {
            return Err(SparqlError::TooComplex(format!("query too complex to plan (more than {MAX_TRANSLATION_STEPS} steps); split it")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }


    pub fn var(&mut self, v: &Variable) -> Var {
        self.var_named(v.as_str())
    }

    fn var_named(&mut self, name: &str) -> Var {
        if let Some(v) = self.ids.get(name) {
            return *v;
        }
        let v = self.names.len();
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), v);
        v
    }

    pub fn term(&mut self, t: &TermPattern) -> Result<Slot> {
        Ok(match t {
            TermPattern::Variable(v) => Slot::Var(self.var(v)),
            // Blank nodes in patterns are variables that are never projected.
            TermPattern::BlankNode(b) => Slot::Var(self.var_named(&format!("_:{}", b.as_str()))),
            TermPattern::NamedNode(n) => Slot::Const(self.space.encode(n.as_ref().into())?),
            TermPattern::Literal(l) => Slot::Const(self.space.encode(l.as_ref().into())?),
            // A triple term of constants; one with variables was rewritten
            // with its BGP (`crate::triple_terms`), so it is in a path here.
            TermPattern::Triple(tp) => match oxrdf::Triple::try_from((**tp).clone()) {
                Ok(triple) => Slot::Const(self.space.encode(oxrdf::TermRef::Triple(&triple))?),
                Err(_) => return Err(SparqlError::Unsupported("a triple term pattern with variables at the end of a property path".into())),
            },
        })
    }

    fn named(&mut self, n: &NamedNodePattern) -> Result<Slot> {
        Ok(match n {
            NamedNodePattern::Variable(v) => Slot::Var(self.var(v)),
            NamedNodePattern::NamedNode(n) => Slot::Const(self.space.encode(n.as_ref().into())?),
        })
    }

    pub fn ground(&mut self, t: &GroundTerm) -> Result<TermId> {
        match t {
            GroundTerm::NamedNode(n) => self.space.encode(n.as_ref().into()),
            GroundTerm::Literal(l) => self.space.encode(l.as_ref().into()),
            GroundTerm::Triple(t) => self.space.encode(oxrdf::Term::from(GroundTerm::Triple(t.clone())).as_ref()),
        }
    }

    fn triple(&mut self, t: &TriplePattern) -> Result<QuadPlan> {
        Ok(QuadPlan { s: self.term(&t.subject)?, p: self.named(&t.predicate)?, o: self.term(&t.object)?, g: self.graph, o_ranges: None, o_share: None, alone_rows: None, left_rows: None, left_rows_counted: false })
    }

    fn path(&mut self, p: &PropertyPathExpression) -> Result<PathPlan> {
        self.descend(|t| t.path_node(p))
    }

    fn path_node(&mut self, p: &PropertyPathExpression) -> Result<PathPlan> {
        use PropertyPathExpression as P;
        let b = |x: PathPlan| Box::new(x);
        Ok(match p {
            P::NamedNode(n) => PathPlan::Link(self.space.encode(n.as_ref().into())?),
            P::Reverse(x) => PathPlan::Reverse(b(self.path(x)?)),
            P::Sequence(x, y) => PathPlan::Sequence(b(self.path(x)?), b(self.path(y)?)),
            P::Alternative(x, y) => PathPlan::Alternative(b(self.path(x)?), b(self.path(y)?)),
            P::ZeroOrMore(x) => PathPlan::ZeroOrMore(b(self.path(x)?)),
            P::OneOrMore(x) => PathPlan::OneOrMore(b(self.path(x)?)),
            P::ZeroOrOne(x) => PathPlan::ZeroOrOne(b(self.path(x)?)),
            P::NegatedPropertySet(ns) => {
                PathPlan::Negated(ns.iter().map(|n| self.space.encode(n.as_ref().into())).collect::<Result<_>>()?)
            }
        })
    }

    pub fn expression(&mut self, e: &spargebra::algebra::Expression) -> Result<Expr> {
        translate_expression(self, e)
    }

    pub fn pattern(&mut self, p: &GraphPattern) -> Result<Plan> {
        self.descend(|t| t.pattern_node(p))
    }

    fn pattern_node(&mut self, p: &GraphPattern) -> Result<Plan> {
        let b = Box::new;
        Ok(match p {
            GraphPattern::Bgp { patterns } => {
                let mut hidden = self.hidden;
                let expanded = crate::triple_terms::expand_bgp(patterns, || {
                    hidden += 1;
                    Variable::new_unchecked(format!("#triple{hidden}"))
                });
                self.hidden = hidden;
                if let Some(expanded) = expanded {
                    return self.pattern_node(&expanded);
                }
                // The text search property function (`crate::text_search`).
                if let Some(plan) = crate::text_search::translate(self, patterns)? {
                    return Ok(plan);
                }
                let quads = patterns.iter().map(|t| self.triple(t)).collect::<Result<Vec<_>>>()?;
                Plan::Bgp(order_patterns(quads, &self.stats, &self.bound))
            }
            GraphPattern::Path { subject, path, object } => {
                Plan::Path { s: self.term(subject)?, path: self.path(path)?, o: self.term(object)?, g: self.graph }
            }
            GraphPattern::Join { left, right } => {
                if crate::graph_service::reads_variables(left) && !crate::graph_service::reads_variables(right) {
                    // A walk from variables runs per row of what binds
                    // them: second (an inner join's sides commute).
                    return self.pattern_node(&GraphPattern::Join { left: right.clone(), right: left.clone() });
                }
                if let Some(plan) = self.selective_bgp_before_path(left, right)? {
                    return Ok(plan);
                }
                let l = self.pattern(left)?;
                let r = self.right_side(&l, right)?;
                Plan::Join(b(l), b(r))
            }
            GraphPattern::LeftJoin { left, right, expression } => {
                let l = self.pattern(left)?;
                let r = self.right_side(&l, right)?;
                let e = expression.as_ref().map(|e| self.expression(e)).transpose()?;
                Plan::LeftJoin(b(l), b(r), e)
            }
            GraphPattern::Filter { expr, inner } => {
                let mut inner = self.pattern(inner)?;
                let expr = self.with_bound(&inner, |t| t.expression(expr))?;
                super::ranges::push_filter_ranges(&expr, &mut inner, self.space, &self.stats, &self.bound);
                super::pushdown::filter_into_bgp(expr, inner)
            }
            GraphPattern::Union { left, right } => Plan::Union(b(self.pattern(left)?), b(self.pattern(right)?)),
            GraphPattern::Graph { name, inner } => {
                let slot = self.named(name)?;
                let pushed = match (name, slot) {
                    (NamedNodePattern::Variable(v), Slot::Var(_)) => pushable(inner, v),
                    _ => true,
                };
                let (hidden, graph_slot) = if pushed {
                    (None, slot)
                } else {
                    self.hidden += 1;
                    let h = self.var_named(&format!("#graph{}", self.hidden));
                    (Some(h), Slot::Var(h))
                };
                let outer = std::mem::replace(&mut self.graph, GraphSlot::Named(graph_slot));
                let inner = self.pattern(inner);
                self.graph = outer;
                match (slot, hidden) {
                    (Slot::Var(v), None) => Plan::GraphVar(v, b(inner?)),
                    (Slot::Var(v), Some(h)) => Plan::GraphLoop(v, h, b(inner?)),
                    (Slot::Const(g), _) => Plan::GraphConst(g, b(inner?)),
                }
            }
            GraphPattern::Extend { inner, variable, expression } => {
                let inner = self.pattern(inner)?;
                let v = self.var(variable);
                let e = self.with_bound(&inner, |t| t.expression(expression))?;
                Plan::Extend(b(inner), v, e)
            }
            GraphPattern::Minus { left, right } => Plan::Minus(b(self.pattern(left)?), b(self.pattern(right)?)),
            GraphPattern::Values { variables, bindings } => {
                let vars: Vec<Var> = variables.iter().map(|v| self.var(v)).collect();
                let mut rows = Vec::with_capacity(bindings.len());
                for binding in bindings {
                    let mut row: Vec<(Var, TermId)> = Vec::new();
                    for (v, t) in vars.iter().zip(binding) {
                        if let Some(t) = t {
                            row.push((*v, self.ground(t)?));
                        }
                    }
                    rows.push(row);
                }
                // Rows are widened to the final width at evaluation.
                Plan::Values(rows.into_iter().map(sparse_row).collect())
            }
            GraphPattern::OrderBy { inner, expression } => {
                let inner = self.pattern(inner)?;
                let mut keys = Vec::new();
                for o in expression {
                    keys.push(match o {
                        OrderExpression::Asc(e) => (self.expression(e)?, false),
                        OrderExpression::Desc(e) => (self.expression(e)?, true),
                    });
                }
                Plan::OrderBy(b(inner), keys, None)
            }
            GraphPattern::Project { inner, variables } => {
                // A subquery runs alone (no outer bindings: order its BGPs
                // for themselves) but in the active graph.
                let outer = std::mem::take(&mut self.bound);
                let inner = self.pattern(inner);
                self.bound = outer;
                let inner = inner?;
                Plan::Project(b(inner), variables.iter().map(|v| self.var(v)).collect())
            }
            GraphPattern::Distinct { inner } => Plan::Distinct(b(self.pattern(inner)?)),
            GraphPattern::Reduced { inner } => Plan::Reduced(b(self.pattern(inner)?)),
            GraphPattern::Slice { inner, start, length } => {
                let mut inner = self.pattern(inner)?;
                if let Some(n) = length {
                    // ORDER BY ... LIMIT: only the first rows need sorting.
                    let sorted = match &mut inner {
                        Plan::Project(p, _) => &mut **p,
                        other => other,
                    };
                    if let Plan::OrderBy(_, _, top) = sorted {
                        *top = Some(start + n);
                    }
                }
                Plan::Slice(b(inner), *start, *length)
            }
            GraphPattern::Group { inner, variables, aggregates } => {
                let inner = self.pattern(inner)?;
                let keys = variables.iter().map(|v| self.var(v)).collect();
                let mut aggs = Vec::new();
                for (v, a) in aggregates {
                    let var = self.var(v);
                    aggs.push((var, self.aggregate(a)?));
                }
                Plan::Group(b(inner), keys, aggs)
            }
            // Graph walks (`crate::graph_service`); no other service is called.
            GraphPattern::Service { name, inner, .. } => match crate::graph_service::translate(self, name, inner)? {
                Some(plan) => plan,
                None => return Err(SparqlError::Unsupported("SERVICE (federated query)".into())),
            },
            #[allow(unreachable_patterns)]
            _ => return Err(SparqlError::Unsupported("this graph pattern".into())),
        })
    }

    /// An EXISTS pattern that is one BGP, ordered again for reading it
    /// alone (no variable bound from outside), as a semi-join reads it
    /// whole: ordered for its lookups, `{ ?s :advisor ?a . ?a :title "L" }`
    /// starts from every advisor quad; alone, from the few titles. `None`
    /// for other patterns (their one plan serves both).
    pub(crate) fn exists_alone(&mut self, p: &GraphPattern) -> Result<Option<Plan>> {
        if !matches!(p, GraphPattern::Bgp { .. }) {
            return Ok(None);
        }
        let outer = std::mem::take(&mut self.bound);
        let plan = self.pattern(p);
        self.bound = outer;
        plan.map(Some)
    }

    /// Translates with `inner`'s certain variables known bound: the
    /// patterns of an EXISTS in a FILTER or BIND over `inner` run once per
    /// row of it, with its bindings (a pattern of the EXISTS that looks
    /// rare alone but shares nothing bound must not go first).
    fn with_bound<T>(&mut self, inner: &Plan, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let outer = self.bound.len();
        self.bound.extend(inner.certain_vars());
        let out = f(self);
        self.bound.truncate(outer);
        out
    }

    /// The right side of a join: if it will run with the left's bindings
    /// (index nested loops), its BGPs are ordered knowing them.
    /// `?x (a|^b) ?p . ?p :title "Lecturer"`: a path with both ends free,
    /// joined to a BGP expected to give far fewer rows than the path and
    /// binding one of its ends, runs after the BGP, looked up from the bound
    /// end once per BGP row, instead of enumerating every pair of the path
    /// and probing the BGP with each. `None`: keep the written order (paths
    /// other than alternations of links are not estimated).
    fn selective_bgp_before_path(&mut self, left: &GraphPattern, right: &GraphPattern) -> Result<Option<Plan>> {
        let (GraphPattern::Path { subject, path, object }, GraphPattern::Bgp { .. }) = (left, right) else { return Ok(None) };
        let free = |t: &TermPattern| matches!(t, TermPattern::Variable(v) if self.ids.get(v.as_str()).is_none_or(|id| !self.bound.contains(id)));
        if !free(subject) || !free(object) {
            return Ok(None);
        }
        let path_plan = self.path(path)?;
        let Some((path_rows, links)) = alternation_rows(&path_plan, &self.stats) else { return Ok(None) };
        let bgp = self.pattern(right)?;
        let Plan::Bgp(patterns) = &bgp else { return Ok(None) };
        let (s, o) = (self.term(subject)?, self.term(object)?);
        let binds_an_end = bgp.certain_vars().iter().any(|v| s.var() == Some(*v) || o.var() == Some(*v));
        // A lookup from a bound end costs about what reading ten of the
        // path's pairs in order does (`HASH_AFTER_QUADS_PER_LOOKUP`).
        if !binds_an_end || super::order::bgp_rows(patterns, &self.stats, &self.bound) * links as f64 * 10.0 >= path_rows {
            return Ok(None);
        }
        let path = Plan::Path { s, path: path_plan, o, g: self.graph };
        Ok(Some(Plan::Join(Box::new(bgp), Box::new(path))))
    }

    fn right_side(&mut self, left: &Plan, right: &GraphPattern) -> Result<Plan> {
        if !may_accept_bindings(right) {
            // It runs alone: translated once, for itself (translating it
            // with hints first and again without would cost twice per
            // level of nested right sides, 2^depth in all).
            return self.pattern(right);
        }
        let outer = self.bound.len();
        self.bound.extend(left.certain_vars());
        let hinted = self.pattern(right);
        self.bound.truncate(outer);
        let hinted = hinted?;
        if hinted.accepts_bindings() {
            Ok(hinted)
        } else {
            // Evaluated alone and hashed: order it for itself.
            self.pattern(right)
        }
    }

    fn aggregate(&mut self, a: &AggregateExpression) -> Result<Aggregate> {
        Ok(match a {
            AggregateExpression::CountSolutions { distinct } => Aggregate { kind: AggregateKind::Count, expr: None, distinct: *distinct },
            AggregateExpression::FunctionCall { name, expr, distinct } => {
                let kind = match name {
                    AggregateFunction::Count => AggregateKind::Count,
                    AggregateFunction::Sum => AggregateKind::Sum,
                    AggregateFunction::Avg => AggregateKind::Avg,
                    AggregateFunction::Min => AggregateKind::Min,
                    AggregateFunction::Max => AggregateKind::Max,
                    AggregateFunction::GroupConcat { separator } => {
                        AggregateKind::GroupConcat(separator.clone().unwrap_or_else(|| " ".into()))
                    }
                    AggregateFunction::Sample => AggregateKind::Sample,
                    AggregateFunction::Custom(n) => return Err(SparqlError::Unsupported(format!("custom aggregate {n}"))),
                };
                Aggregate { kind, expr: Some(self.expression(expr)?), distinct: *distinct }
            }
        })
    }
}

/// The pairs an alternation of links (some reversed) gives with both ends
/// free, from the predicates' counts, and its number of links.
fn alternation_rows(path: &PathPlan, stats: &Statistics) -> Option<(f64, usize)> {
    match path {
        PathPlan::Link(p) => Some((stats.predicates.get(p).map_or(0.0, |c| c[0] as f64), 1)),
        PathPlan::Reverse(x) => alternation_rows(x, stats),
        PathPlan::Alternative(a, b) => {
            let ((ra, la), (rb, lb)) = (alternation_rows(a, stats)?, alternation_rows(b, stats)?);
            Some((ra + rb, la + lb))
        }
        _ => None,
    }
}

/// Whether a pattern's plan may accept bindings from the left
/// (`Plan::accepts_bindings`), told from the algebra before translating:
/// exact but for FILTER and BIND, whose plans may still refuse (their
/// variables must be certain below them), which `right_side` checks on the
/// translated plan.
fn may_accept_bindings(p: &GraphPattern) -> bool {
    match p {
        GraphPattern::Bgp { .. } | GraphPattern::Path { .. } | GraphPattern::Values { .. } => true,
        GraphPattern::Join { left, right } | GraphPattern::Union { left, right } => may_accept_bindings(left) && may_accept_bindings(right),
        GraphPattern::Graph { name: NamedNodePattern::Variable(v), inner } if !pushable(inner, v) => true,
        GraphPattern::Graph { inner, .. } => may_accept_bindings(inner),
        GraphPattern::Filter { expr, inner } | GraphPattern::Extend { inner, expression: expr, .. } => !has_exists(expr) && may_accept_bindings(inner),
        _ => false,
    }
}

fn has_exists(e: &spargebra::algebra::Expression) -> bool {
    use spargebra::algebra::Expression as E;
    match e {
        E::Exists(_) => true,
        E::Or(a, b)
        | E::And(a, b)
        | E::Equal(a, b)
        | E::SameTerm(a, b)
        | E::Greater(a, b)
        | E::GreaterOrEqual(a, b)
        | E::Less(a, b)
        | E::LessOrEqual(a, b)
        | E::Add(a, b)
        | E::Subtract(a, b)
        | E::Multiply(a, b)
        | E::Divide(a, b) => has_exists(a) || has_exists(b),
        E::UnaryPlus(a) | E::UnaryMinus(a) | E::Not(a) => has_exists(a),
        E::In(a, list) => has_exists(a) || list.iter().any(has_exists),
        E::If(a, b, c) => has_exists(a) || has_exists(b) || has_exists(c),
        E::Coalesce(list) | E::FunctionCall(_, list) => list.iter().any(has_exists),
        _ => false,
    }
}

/// Values rows before the final width is known: (var, id) pairs packed in a
/// row that evaluation pads.
fn sparse_row(pairs: Vec<(Var, TermId)>) -> Row {
    let width = pairs.iter().map(|(v, _)| v + 1).max().unwrap_or(0);
    let mut row = vec![None; width];
    for (v, id) in pairs {
        row[v] = Some(id);
    }
    row
}


/// Whether `GRAPH ?v { p }` may push `?v` into the scans of `p`: true when
/// `p` holds only operators that join their parts (so binding the graph
/// early changes nothing) and does not use `?v` itself.
fn pushable(p: &GraphPattern, v: &Variable) -> bool {
    fn simple(p: &GraphPattern) -> bool {
        match p {
            GraphPattern::Bgp { patterns } => !patterns.is_empty(),
            GraphPattern::Path { .. } => true,
            GraphPattern::Join { left, right } | GraphPattern::Union { left, right } | GraphPattern::LeftJoin { left, right, .. } => {
                simple(left) && simple(right)
            }
            GraphPattern::Filter { inner, .. } | GraphPattern::Extend { inner, .. } => simple(inner),
            _ => false,
        }
    }
    let mut uses = false;
    p.on_in_scope_variable(|x| uses |= x == v);
    simple(p) && !uses
}
