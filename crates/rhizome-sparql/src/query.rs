//! Preparing and running a query against one snapshot.

use crate::error::{Result, SparqlError};
use crate::eval::{Evaluator, QueryDataset};
use crate::plan::{Plan, Row, Statistics, Translator, Var};
use crate::terms::TermSpace;
use oxrdf::{BlankNode, NamedOrBlankNode, Term, Triple, Variable};
use rhizome_kv::KvRead;
use rhizome_rdf::{DatasetMode, QuadPattern, StoreSnapshot, TermId};
use rustc_hash::{FxHashMap, FxHashSet};
use spargebra::algebra::GraphPattern;
use spargebra::term::{NamedNodePattern, TermPattern};
use spargebra::Query;
use rhizome_rdf::index::Families;
use rhizome_rdf::term::TermCache;
use std::rc::Rc;
use std::sync::Arc;

/// Parses a query; errors carry line, column and what was expected.
pub fn parse_query(text: &str, base_iri: Option<&str>) -> Result<Query> {
    // Nesting and chains first: the parser recurses over them.
    crate::nesting::check_request_text(text)?;
    let mut parser = spargebra::SparqlParser::new();
    if let Some(base) = base_iri {
        parser = parser.with_base_iri(base).map_err(|e| SparqlError::Evaluation(format!("bad base IRI: {e}")))?;
    }
    let mut query = parser.parse_query(text)?;
    crate::select_star::restore_order(text, &mut query);
    Ok(query)
}

enum TemplateTerm {
    Var(Var),
    Blank(String),
    Term(Term),
    /// A triple term with variables or blank nodes (SPARQL 1.2).
    Triple(Box<[TemplateTerm; 3]>),
}

impl TemplateTerm {
    fn variables(&self, out: &mut Vec<Var>) {
        match self {
            TemplateTerm::Var(v) => out.push(*v),
            TemplateTerm::Triple(parts) => parts.iter().for_each(|p| p.variables(out)),
            _ => {}
        }
    }
}

enum Form {
    Select(Vec<(Variable, Var)>),
    Ask,
    Construct(Vec<[TemplateTerm; 3]>),
    Describe(Vec<Var>),
}

/// A query bound to a snapshot, ready to run (possibly several times).
pub struct PreparedQuery<'s> {
    ev: Rc<Evaluator<'s>>,
    plan: Plan,
    form: Form,
    names: Vec<String>,
    stats: Statistics,
}

/// What a query answers.
pub enum QueryResults<'q> {
    Solutions { variables: Vec<Variable>, solutions: Box<dyn Iterator<Item = Result<Vec<Option<Term>>>> + 'q> },
    Boolean(bool),
    Graph(Box<dyn Iterator<Item = Result<Triple>> + 'q>),
}

fn projected(p: &GraphPattern) -> Option<&[Variable]> {
    match p {
        GraphPattern::Project { variables, .. } => Some(variables),
        GraphPattern::Slice { inner, .. } | GraphPattern::Distinct { inner } | GraphPattern::Reduced { inner } => projected(inner),
        _ => None,
    }
}

fn in_scope(p: &GraphPattern) -> Vec<Variable> {
    let mut vars = Vec::new();
    p.on_in_scope_variable(|v| {
        if !vars.contains(v) {
            vars.push(v.clone());
        }
    });
    vars
}

impl<'s> PreparedQuery<'s> {
    pub fn new(snapshot: &'s StoreSnapshot, stats: Statistics, query: &Query) -> Result<Self> {
        Self::build(snapshot.kv(), snapshot.mode(), stats, query, false, Some((snapshot.term_cache().clone(), snapshot.families())))
    }

    /// A query over any reader of the store (a write transaction's, for
    /// the WHERE clause of an update).
    pub fn over(reader: &'s dyn KvRead, mode: DatasetMode, stats: Statistics, query: &Query) -> Result<Self> {
        Self::build(reader, mode, stats, query, false, None)
    }

    /// The WHERE clause of an update: `WITH <g>` (a dataset without a
    /// named part) keeps the store's named graphs, where a query's FROM
    /// without FROM NAMED has none.
    pub(crate) fn for_update(reader: &'s dyn KvRead, mode: DatasetMode, stats: Statistics, query: &Query) -> Result<Self> {
        Self::build(reader, mode, stats, query, true, None)
    }

    fn build(
        reader: &'s dyn KvRead,
        mode: DatasetMode,
        stats: Statistics,
        query: &Query,
        update: bool,
        // A snapshot's shared term cache and family marks.
        snapshot: Option<(Arc<TermCache>, Families)>,
    ) -> Result<Self> {
        let mut space = TermSpace::new(reader, mode);
        if let Some((cache, families)) = snapshot {
            space = space.with_shared_cache(cache).with_families(families);
        }
        let (dataset, pattern, base_iri) = match query {
            Query::Select { dataset, pattern, base_iri }
            | Query::Ask { dataset, pattern, base_iri }
            | Query::Construct { dataset, pattern, base_iri, .. }
            | Query::Describe { dataset, pattern, base_iri } => (dataset, pattern, base_iri),
        };
        let mut query_dataset = QueryDataset::default();
        if let Some(d) = dataset {
            let encode = |n: &oxrdf::NamedNode| space.encode(n.as_ref().into());
            query_dataset.default = Some(d.default.iter().map(encode).collect::<Result<_>>()?);
            query_dataset.named = match (&d.named, update) {
                (None, true) => None,
                (named, _) => Some(named.as_deref().unwrap_or_default().iter().map(encode).collect::<Result<_>>()?),
            };
        }
        let mut t = Translator::new(&space, stats);
        let plan = t.pattern(pattern)?;
        let form = match query {
            Query::Select { pattern, .. } => {
                let vars = projected(pattern).map(<[Variable]>::to_vec).unwrap_or_else(|| in_scope(pattern));
                Form::Select(vars.into_iter().map(|v| (v.clone(), t.var(&v))).collect())
            }
            Query::Ask { .. } => Form::Ask,
            Query::Construct { template, .. } => {
                let mut triples = Vec::new();
                fn term(t: &mut Translator<'_, '_>, p: &TermPattern) -> TemplateTerm {
                    match p {
                        TermPattern::Variable(v) => TemplateTerm::Var(t.var(v)),
                        TermPattern::BlankNode(b) => TemplateTerm::Blank(b.as_str().to_owned()),
                        TermPattern::NamedNode(n) => TemplateTerm::Term(n.clone().into()),
                        TermPattern::Literal(l) => TemplateTerm::Term(l.clone().into()),
                        TermPattern::Triple(tp) => TemplateTerm::Triple(Box::new(triple(t, tp))),
                    }
                }
                fn triple(t: &mut Translator<'_, '_>, tp: &spargebra::term::TriplePattern) -> [TemplateTerm; 3] {
                    let p = match &tp.predicate {
                        NamedNodePattern::Variable(v) => TemplateTerm::Var(t.var(v)),
                        NamedNodePattern::NamedNode(n) => TemplateTerm::Term(n.clone().into()),
                    };
                    [term(t, &tp.subject), p, term(t, &tp.object)]
                }
                for tp in template {
                    triples.push(triple(&mut t, tp));
                }
                Form::Construct(triples)
            }
            Query::Describe { pattern, .. } => {
                let vars = projected(pattern).map(<[Variable]>::to_vec).unwrap_or_else(|| in_scope(pattern));
                Form::Describe(vars.iter().map(|v| t.var(v)).collect())
            }
        };
        // What the result reads: a BIND of anything else is not computed.
        let mut plan = plan;
        match &form {
            Form::Select(vars) => crate::plan::prune_unused_binds(&mut plan, &vars.iter().map(|(_, v)| *v).collect::<Vec<_>>()),
            Form::Ask => crate::plan::prune_unused_binds(&mut plan, &[]),
            Form::Construct(triples) => {
                let mut vars: Vec<Var> = Vec::new();
                triples.iter().flatten().for_each(|t| t.variables(&mut vars));
                crate::plan::prune_unused_binds(&mut plan, &vars)
            }
            Form::Describe(vars) => crate::plan::prune_unused_binds(&mut plan, vars),
        }
        let width = t.width();
        let stats = t.statistics().clone();
        let names = t.into_names();
        let ev = Evaluator {
            space,
            dataset: query_dataset,
            width,
            now: std::cell::OnceCell::new(),
            base_iri: base_iri.clone(),
            graph_context: Default::default(),
            limits: Default::default(),
            named_graphs: Default::default(),
            profile: None,
            hash_after_lookups: Default::default(),
            regexes: Default::default(),
            exists_states: Default::default(),
        };
        Ok(PreparedQuery { ev: Rc::new(ev), plan, form, names, stats })
    }

    /// Stops the query with `SparqlError::Timeout` once `timeout` has
    /// passed (from now).
    pub fn set_timeout(&self, timeout: std::time::Duration) {
        self.ev.limits.deadline.set(Some(std::time::Instant::now() + timeout));
    }

    /// The most bytes one sort, group, hash table or materialized pattern
    /// may take (1 GiB unless set); past it, `SparqlError::MemoryLimit`.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.ev.limits.memory_bytes.set(bytes);
    }

    /// Shares `pool` with other requests: what the query holds (within its
    /// own limit) is reserved there too, and a query the pool has no room
    /// for fails with `SparqlError::ServerMemory`.
    pub fn set_memory_pool(&self, pool: &std::sync::Arc<crate::MemoryPool>) {
        *self.ev.limits.pool.borrow_mut() = Some(pool.reservation());
    }

    /// Joins a pattern by hashing it after `lookups` index lookups made
    /// from the rows on the left, whatever its size (by default: once the
    /// lookups have cost about what reading the pattern whole does). For
    /// tests, which run both join methods over the same queries.
    pub fn set_hash_join_after(&self, lookups: u64) {
        self.ev.hash_after_lookups.set(Some(lookups));
    }

    /// Setting the flag (from any thread) stops the query with
    /// `SparqlError::Cancelled`.
    pub fn cancellation_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.ev.limits.cancelled.clone()
    }

    /// Also stops the query with `SparqlError::Cancelled` once `flag` is set
    /// (the caller's own flag; the first one given counts).
    pub fn cancel_with(&self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        let _ = self.ev.limits.also_cancelled.set(flag);
    }

    /// Runs the query to its end, counting the rows of every operator, and
    /// gives the plan with estimated (patterns) and actual row counts.
    pub fn explain(mut self) -> Result<String> {
        Rc::get_mut(&mut self.ev).expect("a prepared query's evaluator is not shared before it runs").profile = Some(Default::default());
        match self.execute()? {
            QueryResults::Solutions { mut solutions, .. } => solutions.try_for_each(|s| s.map(|_| ()))?,
            QueryResults::Graph(mut triples) => triples.try_for_each(|t| t.map(|_| ()))?,
            QueryResults::Boolean(_) => {}
        }
        let counts = self.ev.profile.as_ref().map(|c| c.borrow().clone()).unwrap_or_default();
        Ok(crate::explain::render(&self.plan, &counts, &self.names, &self.stats, &self.ev.space))
    }

    pub fn execute(&self) -> Result<QueryResults<'_>> {
        let ev = self.ev.clone();
        let rows: crate::eval::Rows<'_> = Box::new(WithinBudget { ev: ev.clone(), rows: ev.eval(&self.plan, ev.empty_row()), done: false });
        Ok(match &self.form {
            Form::Select(vars) => {
                let variables = vars.iter().map(|(v, _)| v.clone()).collect();
                let ev = self.ev.clone();
                let solutions = Prefetched { ev: ev.clone(), rows, vars, buffer: std::collections::VecDeque::new() }.map(move |r| {
                    let r = r?;
                    vars.iter().map(|(_, i)| r[*i].map(|id| ev.space.decode(id)).transpose()).collect()
                });
                QueryResults::Solutions { variables, solutions: Box::new(solutions) }
            }
            Form::Ask => {
                let mut rows = rows;
                QueryResults::Boolean(match rows.next() {
                    Some(r) => r.map(|_| true)?,
                    None => false,
                })
            }
            Form::Construct(template) => QueryResults::Graph(self.construct(rows, template)),
            Form::Describe(vars) => QueryResults::Graph(self.describe(rows, vars)),
        })
    }

    /// CONSTRUCT: the template's triples for each row, as the rows come.
    /// Triples already given are skipped while the set remembering them
    /// holds at most [`CONSTRUCT_SEEN_MAX`] (then it starts again): a
    /// graph written with a triple twice is the same graph, and a result
    /// of any size is not kept whole.
    fn construct<'q>(&'q self, mut rows: crate::eval::Rows<'q>, template: &'q [[TemplateTerm; 3]]) -> Box<dyn Iterator<Item = Result<Triple>> + 'q> {
        let mut pending: std::collections::VecDeque<Triple> = std::collections::VecDeque::new();
        let mut seen: FxHashSet<Triple> = FxHashSet::default();
        Box::new(std::iter::from_fn(move || loop {
            if let Some(t) = pending.pop_front() {
                return Some(Ok(t));
            }
            let row = match rows.next()?.and_then(|row| self.ev.limits.check_weighted(3 * template.len()).map(|()| row)) {
                Ok(row) => row,
                Err(e) => return Some(Err(e)),
            };
            if let Err(e) = self.instantiate(&row, template, &mut |triple| {
                if seen.len() >= CONSTRUCT_SEEN_MAX {
                    seen.clear();
                }
                if seen.insert(triple.clone()) {
                    pending.push_back(triple);
                }
            }) {
                return Some(Err(e));
            }
        }))
    }

    /// The template's triples for one row (those whose terms are all
    /// bound and fit their positions).
    fn instantiate(&self, row: &Row, template: &[[TemplateTerm; 3]], out: &mut dyn FnMut(Triple)) -> Result<()> {
        let mut blanks: FxHashMap<String, BlankNode> = FxHashMap::default();
        for parts in template {
            if let Some(triple) = self.template_triple(row, parts, &mut blanks)? {
                out(triple);
            }
        }
        Ok(())
    }

    /// One template triple for a row, `None` where a term is unbound or
    /// does not fit its position (a triple term's parts likewise).
    fn template_triple(&self, row: &Row, [s, p, o]: &[TemplateTerm; 3], blanks: &mut FxHashMap<String, BlankNode>) -> Result<Option<Triple>> {
        let mut get = |t: &TemplateTerm| -> Result<Option<Term>> {
            Ok(match t {
                TemplateTerm::Var(v) => row[*v].map(|id| self.ev.space.decode(id)).transpose()?,
                TemplateTerm::Blank(label) => Some(blanks.entry(label.clone()).or_default().clone().into()),
                TemplateTerm::Term(t) => Some(t.clone()),
                TemplateTerm::Triple(parts) => self.template_triple(row, parts, blanks)?.map(Term::from),
            })
        };
        let (Some(s), Some(p), Some(o)) = (get(s)?, get(p)?, get(o)?) else { return Ok(None) };
        let subject: NamedOrBlankNode = match s {
            Term::NamedNode(n) => n.into(),
            Term::BlankNode(b) => b.into(),
            _ => return Ok(None),
        };
        let Term::NamedNode(predicate) = p else { return Ok(None) };
        Ok(Some(Triple::new(subject, predicate, o)))
    }

    /// DESCRIBE: the triples whose subject is a described resource, in the
    /// query's default graph, following blank node objects, as the rows
    /// come. The resources described so far are remembered (within the
    /// query's memory budget) so that each is described once.
    fn describe<'q>(&'q self, mut rows: crate::eval::Rows<'q>, vars: &'q [Var]) -> Box<dyn Iterator<Item = Result<Triple>> + 'q> {
        let graphs: Vec<Option<TermId>> = match &self.ev.dataset.default {
            Some(list) => list.iter().map(|g| Some(*g)).collect(),
            None => vec![self.ev.space.default_graph()],
        };
        let mut todo: Vec<TermId> = Vec::new();
        let mut done: FxHashSet<TermId> = FxHashSet::default();
        let mut pending: std::collections::VecDeque<Triple> = std::collections::VecDeque::new();
        Box::new(std::iter::from_fn(move || loop {
            if let Some(t) = pending.pop_front() {
                return Some(Ok(t));
            }
            let Some(id) = todo.pop() else {
                match rows.next()? {
                    Ok(row) => todo.extend(vars.iter().filter_map(|v| row[*v])),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            };
            if !done.insert(id) {
                continue;
            }
            if let Err(e) = self.ev.check_memory(crate::eval::rows_bytes(done.len() + todo.len(), 1)) {
                return Some(Err(e));
            }
            if let Err(e) = self.describe_one(id, &graphs, &mut todo, &mut pending) {
                return Some(Err(e));
            }
        }))
    }

    /// The triples of one described resource into `out`; its blank node
    /// objects into `todo`.
    fn describe_one(&self, id: TermId, graphs: &[Option<TermId>], todo: &mut Vec<TermId>, out: &mut std::collections::VecDeque<Triple>) -> Result<()> {
        let quads = graphs.iter().flat_map(|g| self.ev.space.scan(QuadPattern { s: Some(id), g: *g, ..Default::default() }));
        for q in quads {
            let q = q?;
            self.ev.limits.check()?;
            let [s, p, o] = [q[0], q[1], q[2]].map(|id| self.ev.space.decode(id));
            let subject: NamedOrBlankNode = match s? {
                Term::NamedNode(n) => n.into(),
                Term::BlankNode(b) => b.into(),
                _ => continue,
            };
            let Term::NamedNode(predicate) = p? else { continue };
            if q[2].is_blank() {
                todo.push(q[2]);
            }
            out.push_back(Triple::new(subject, predicate, o?));
        }
        Ok(())
    }
}

/// Triples a CONSTRUCT remembers to skip repeats (a few tens of MB).
const CONSTRUCT_SEEN_MAX: usize = 1 << 16;

/// The result rows, failing with `SparqlError::MemoryLimit` if an
/// expression on the way gave up building a value past the memory budget
/// (it answered `None`, which a FILTER or an aggregate takes for an
/// ordinary error value: without this, rows would go missing silently).
struct WithinBudget<'a> {
    ev: Rc<Evaluator<'a>>,
    rows: crate::eval::Rows<'a>,
    done: bool,
}

impl Iterator for WithinBudget<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Result<Row>> {
        if self.done {
            return None;
        }
        let next = self.rows.next();
        if let Err(e) = self.ev.limits.memory_error() {
            self.done = true;
            return Some(Err(e));
        }
        self.done = next.is_none();
        next
    }
}

/// Result rows pulled in batches whose terms are decoded together
/// ([`TermSpace::prefetch`]: one cursor walk instead of a point lookup per
/// term) before they are handed on.
struct Prefetched<'a, V> {
    ev: std::rc::Rc<crate::eval::Evaluator<'a>>,
    rows: crate::eval::Rows<'a>,
    vars: &'a [(V, usize)],
    buffer: std::collections::VecDeque<Result<Row>>,
}

impl<V> Iterator for Prefetched<'_, V> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Result<Row>> {
        if self.buffer.is_empty() {
            let mut ids = Vec::new();
            for r in self.rows.by_ref() {
                // A row costs its width to decode and write: a row of
                // thousands of variables counts as thousands of steps
                // toward the time limit's next look at the clock (one
                // check per 1,024 quads let a 45,000-variable query run
                // minutes past its limit, writing huge rows).
                let r = r.and_then(|row| self.ev.limits.check_weighted(self.vars.len()).map(|()| row));
                let failed = r.is_err();
                if let Ok(row) = &r {
                    ids.extend(self.vars.iter().filter_map(|(_, i)| row[*i]));
                }
                self.buffer.push_back(r);
                // At most 1,024 rows or 64Ki bindings ahead.
                if failed || self.buffer.len() >= 1024 || ids.len() >= 1 << 16 {
                    break;
                }
            }
            if let Err(e) = self.ev.space.prefetch(ids) {
                self.buffer.clear();
                return Some(Err(e));
            }
        }
        self.buffer.pop_front()
    }
}
