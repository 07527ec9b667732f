//! Graph walks inside SPARQL: `SERVICE <urn:rhizome:graph> { ... }` runs a
//! traversal or a path search of `rhizome-graph` and binds its answer as
//! rows, which join with the query's other patterns (as Jena's and
//! Stardog's path extensions do). Inside the SERVICE, one node (any blank
//! node or variable) carries the walk's parameters and outputs, all under
//! `urn:rhizome:graph#` (prefix `rg:` below):
//!
//! - a traversal: `rg:start <iri>` with `rg:maxDepth k` (default 1);
//!   outputs `rg:node ?n` and `rg:depth ?d`, one row per node reached;
//! - a path: `rg:from <iri>` and `rg:to <iri>`, optionally `rg:all true`,
//!   `rg:maxPaths n`, `rg:maxDepth k`, or `rg:weight <property>` for the
//!   cheapest path; outputs one row per node of each path, `rg:node ?n`,
//!   `rg:index ?i` (0 at `from`), `rg:path ?p` (which path, from 0),
//!   `rg:length ?l` (links) and `rg:cost ?c` (cheapest path only); no
//!   rows when there is no path;
//! - both: `rg:direction "out"|"in"|"any"` (default out), `rg:predicate
//!   <iri>` (repeatable; default every link), `rg:limit n` (nodes visited,
//!   default 100,000).
//!
//! `rg:start`, `rg:from` and `rg:to` are IRIs or variables. With IRIs only,
//! the walk runs once, when the query is planned, and its rows enter the
//! plan as a VALUES block. With a variable, the walk runs once per row of
//! the patterns that bind it (`Plan::Walk`, a lateral join): the SERVICE
//! goes after them, whichever side of the group it is written on; a row
//! that leaves the variable unbound is an error that says so.

use crate::error::{Result, SparqlError};
use crate::plan::{Plan, Row, Translator, Var};
use crate::terms::TermSpace;
use oxrdf::{Literal, NamedNode};
use rhizome_graph::{Direction, LinkFilter, Limits, PathOptions, WeightOptions};
use rhizome_rdf::TermId;
use spargebra::algebra::GraphPattern;
use spargebra::term::{NamedNodePattern, TermPattern};
use std::time::{Duration, Instant};

pub const SERVICE_IRI: &str = "urn:rhizome:graph";
const NS: &str = "urn:rhizome:graph#";

/// Nodes a walk may visit unless `rg:limit` says.
const DEFAULT_LIMIT: u64 = 100_000;
/// The time a walk may take (the query's own limit applies after planning).
const WALK_TIMEOUT_MS: u64 = 30_000;

#[derive(Clone, Copy, Debug, Default)]
struct Outputs {
    node: Option<Var>,
    depth: Option<Var>,
    index: Option<Var>,
    path: Option<Var>,
    length: Option<Var>,
    cost: Option<Var>,
}

/// The plan of a SERVICE to `urn:rhizome:graph`, `None` for any other
/// service.
pub(crate) fn translate(t: &mut Translator<'_, '_>, name: &NamedNodePattern, inner: &GraphPattern) -> Result<Option<Plan>> {
    match name {
        NamedNodePattern::NamedNode(n) if n.as_str() == SERVICE_IRI => {}
        _ => return Ok(None),
    }
    let err = |m: String| SparqlError::Evaluation(format!("SERVICE <{SERVICE_IRI}>: {m}"));
    let GraphPattern::Bgp { patterns } = inner else {
        return Err(err("the service takes triple patterns only".into()));
    };
    let (mut start, mut from, mut to, mut weight) = (None, None, None, None);
    let (mut max_depth, mut all, mut max_paths, mut limit) = (None, false, 100u64, DEFAULT_LIMIT);
    let mut direction = Direction::Out;
    let mut predicates: Option<Vec<NamedNode>> = None;
    let mut out = Outputs::default();
    let mut subject = None;
    for p in patterns {
        if *subject.get_or_insert(&p.subject) != &p.subject {
            return Err(err("all parameters must be on one node".into()));
        }
        let NamedNodePattern::NamedNode(pred) = &p.predicate else { return Err(err("a predicate is a variable".into())) };
        let Some(local) = pred.as_str().strip_prefix(NS) else { return Err(err(format!("unknown parameter <{}>", pred.as_str()))) };
        let var = |o: &TermPattern| match o {
            TermPattern::Variable(v) => Ok(v.clone()),
            _ => Err(err(format!("rg:{local} binds a variable"))),
        };
        let iri = |o: &TermPattern| match o {
            TermPattern::NamedNode(n) => Ok(n.clone()),
            _ => Err(err(format!("rg:{local} takes a constant IRI"))),
        };
        let end = |t: &mut Translator<'_, '_>, o: &TermPattern| match o {
            TermPattern::NamedNode(n) => Ok(EndPattern::Iri(n.clone())),
            TermPattern::Variable(v) => Ok(EndPattern::Var(t.var(v), v.as_str().to_owned())),
            _ => Err(err(format!("rg:{local} takes an IRI or a variable"))),
        };
        let number = |o: &TermPattern| match o {
            TermPattern::Literal(l) => l.value().parse::<u64>().map_err(|_| err(format!("rg:{local} takes a non-negative integer"))),
            _ => Err(err(format!("rg:{local} takes a constant integer"))),
        };
        match local {
            "start" => start = Some(end(t, &p.object)?),
            "from" => from = Some(end(t, &p.object)?),
            "to" => to = Some(end(t, &p.object)?),
            "weight" => weight = Some(iri(&p.object)?),
            "predicate" => predicates.get_or_insert_with(Vec::new).push(iri(&p.object)?),
            "maxDepth" => max_depth = Some(number(&p.object)?.min(u32::MAX as u64) as u32),
            "maxPaths" => max_paths = number(&p.object)?.max(1),
            "limit" => limit = number(&p.object)?.max(1),
            "all" => {
                all = match &p.object {
                    TermPattern::Literal(l) if l.value() == "true" || l.value() == "1" => true,
                    TermPattern::Literal(l) if l.value() == "false" || l.value() == "0" => false,
                    _ => return Err(err("rg:all takes true or false".into())),
                }
            }
            "direction" => {
                direction = match &p.object {
                    TermPattern::Literal(l) if l.value() == "out" => Direction::Out,
                    TermPattern::Literal(l) if l.value() == "in" => Direction::In,
                    TermPattern::Literal(l) if l.value() == "any" => Direction::Any,
                    _ => return Err(err("rg:direction takes \"out\", \"in\" or \"any\"".into())),
                }
            }
            "node" => out.node = Some(t.var(&var(&p.object)?)),
            "depth" => out.depth = Some(t.var(&var(&p.object)?)),
            "index" => out.index = Some(t.var(&var(&p.object)?)),
            "path" => out.path = Some(t.var(&var(&p.object)?)),
            "length" => out.length = Some(t.var(&var(&p.object)?)),
            "cost" => out.cost = Some(t.var(&var(&p.object)?)),
            _ => return Err(err(format!("unknown parameter rg:{local}"))),
        }
    }
    let space = t.space;
    let id = |n: &NamedNode| space.encode(n.as_ref().into());
    let to_end = |e: EndPattern| -> Result<End> {
        Ok(match e {
            EndPattern::Iri(n) => End::Const(id(&n)?),
            EndPattern::Var(var, name) => End::Var(var, name),
        })
    };
    let preds = match &predicates {
        Some(ps) => Some(ps.iter().map(id).collect::<Result<Vec<TermId>>>()?),
        None => None,
    };
    let kind = match (start, from, to) {
        (Some(start), None, None) => Kind::Neighbours { start: to_end(start)?, max_depth: max_depth.unwrap_or(1) },
        (None, Some(from), Some(to)) => Kind::Paths {
            from: to_end(from)?,
            to: to_end(to)?,
            weight: weight.as_ref().map(id).transpose()?,
            options: PathOptions { all, max_paths: max_paths as usize, max_depth },
        },
        _ => return Err(err("give rg:start (a traversal), or rg:from and rg:to (a path)".into())),
    };
    let walk = Walk { kind, filter: LinkFilter::new(direction, preds), limit: limit as usize, out };
    if walk.ends().any(|e| matches!(e, End::Var(..))) {
        return Ok(Some(Plan::Walk(Box::new(walk))));
    }
    let rows = walk.rows(space, &Row::new(), None)?;
    Ok(Some(Plan::Values(rows.into_iter().map(widen).collect())))
}

/// An end of a walk as written.
enum EndPattern {
    Iri(NamedNode),
    Var(Var, String),
}

/// An end of a walk: a term, or a variable (with its name, for errors)
/// read from the row the walk joins.
#[derive(Clone, Debug)]
enum End {
    Const(TermId),
    Var(Var, String),
}

#[derive(Clone, Debug)]
enum Kind {
    Neighbours { start: End, max_depth: u32 },
    Paths { from: End, to: End, weight: Option<TermId>, options: PathOptions },
}

/// A walk of the service, its parameters resolved to term ids.
#[derive(Clone, Debug)]
pub struct Walk {
    kind: Kind,
    filter: LinkFilter,
    limit: usize,
    out: Outputs,
}

impl Walk {
    fn ends(&self) -> impl Iterator<Item = &End> {
        let (a, b) = match &self.kind {
            Kind::Neighbours { start, .. } => (start, None),
            Kind::Paths { from, to, .. } => (from, Some(to)),
        };
        std::iter::once(a).chain(b)
    }

    /// Variables bound in every row the walk gives.
    pub(crate) fn certain_vars(&self) -> impl Iterator<Item = Var> {
        let o = self.out;
        let cost = if matches!(self.kind, Kind::Paths { weight: Some(_), .. }) { o.cost } else { None };
        [o.node, o.depth, o.index, o.path, o.length, cost].into_iter().flatten()
    }

    /// The walk from the ends `input` gives, as (variable, term) pairs per
    /// row; `deadline` is the query's, if sooner than the walk's own.
    pub(crate) fn rows(&self, space: &TermSpace<'_>, input: &Row, deadline: Option<Instant>) -> Result<Vec<Vec<(Var, TermId)>>> {
        let end = |e: &End| match e {
            End::Const(id) => Ok(*id),
            End::Var(v, name) => input.get(*v).copied().flatten().ok_or_else(|| {
                SparqlError::Evaluation(format!("SERVICE <{SERVICE_IRI}>: ?{name} is unbound; a pattern beside the SERVICE must bind it"))
            }),
        };
        let own = Instant::now() + Duration::from_millis(WALK_TIMEOUT_MS);
        let limits = Limits { max_nodes: self.limit, deadline: Some(deadline.map_or(own, |d| d.min(own))) };
        let int = |i: u64| space.encode(Literal::from(i as i64).as_ref().into());
        let (source, out) = (space.graph_source(), self.out);
        let mut rows: Vec<Vec<(Var, TermId)>> = Vec::new();
        match &self.kind {
            Kind::Neighbours { start, max_depth } => {
                let found = rhizome_graph::neighbours(source, end(start)?, *max_depth, &self.filter, limits).map_err(walk_error)?;
                for r in found.nodes {
                    let mut row = Vec::new();
                    push(&mut row, out.node, r.id);
                    if let Some(v) = out.depth {
                        row.push((v, int(r.depth as u64)?));
                    }
                    rows.push(row);
                }
            }
            Kind::Paths { from, to, weight, options } => {
                let (from, to) = (end(from)?, end(to)?);
                let (paths, cost) = match weight {
                    Some(w) => {
                        let options = WeightOptions { weight: *w, default_weight: 1.0 };
                        match rhizome_graph::cheapest_path(source, from, to, &self.filter, options, limits).map_err(walk_error)? {
                            Some(p) => (vec![p.path], Some(p.cost)),
                            None => (Vec::new(), None),
                        }
                    }
                    None => (rhizome_graph::shortest_paths(source, from, to, &self.filter, *options, limits).map_err(walk_error)?.paths, None),
                };
                let cost = match cost {
                    Some(c) => Some(space.encode(Literal::from(c).as_ref().into())?),
                    None => None,
                };
                for (k, path) in paths.iter().enumerate() {
                    let length = int(path.len() as u64 - 1)?;
                    for (i, node) in path.iter().enumerate() {
                        let mut row = Vec::new();
                        push(&mut row, out.node, *node);
                        if let Some(v) = out.index {
                            row.push((v, int(i as u64)?));
                        }
                        if let Some(v) = out.path {
                            row.push((v, int(k as u64)?));
                        }
                        push(&mut row, out.length, length);
                        if let (Some(v), Some(c)) = (out.cost, cost) {
                            row.push((v, c));
                        }
                        rows.push(row);
                    }
                }
            }
        }
        Ok(rows)
    }
}

/// Whether `p` is a walk of this service whose start or ends are
/// variables, so that it must run after the patterns that bind them.
pub(crate) fn reads_variables(p: &GraphPattern) -> bool {
    let GraphPattern::Service { name: NamedNodePattern::NamedNode(n), inner, .. } = p else { return false };
    let GraphPattern::Bgp { patterns } = &**inner else { return false };
    n.as_str() == SERVICE_IRI
        && patterns.iter().any(|t| {
            matches!(&t.predicate, NamedNodePattern::NamedNode(pr) if [ "start", "from", "to"].iter().any(|l| pr.as_str().strip_prefix(NS) == Some(l)))
                && matches!(t.object, TermPattern::Variable(_))
        })
}

fn push(row: &mut Vec<(Var, TermId)>, var: Option<Var>, id: TermId) {
    if let Some(v) = var {
        row.push((v, id));
    }
}

/// A row as wide as its last variable (VALUES rows are widened to the
/// query's width when evaluated).
fn widen(pairs: Vec<(Var, TermId)>) -> Row {
    let width = pairs.iter().map(|(v, _)| v + 1).max().unwrap_or(0);
    let mut row = vec![None; width];
    for (v, id) in pairs {
        row[v] = Some(id);
    }
    row
}

fn walk_error(e: rhizome_graph::Error) -> SparqlError {
    match e {
        rhizome_graph::Error::Timeout => SparqlError::Timeout,
        rhizome_graph::Error::Store(e) => SparqlError::Store(e),
        e => SparqlError::Evaluation(format!("SERVICE <{SERVICE_IRI}>: {e}")),
    }
}
