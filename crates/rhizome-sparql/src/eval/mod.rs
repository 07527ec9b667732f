//! Plan execution: iterators of rows of term ids. Every operator takes the
//! bindings of its left context (`input`) and yields compatible extensions
//! of it: patterns that accept bindings use them to bind their scans (index
//! nested loops); the others are evaluated alone and joined.

mod aggregate;
mod join;
mod path;
mod pattern;
mod semi_scan;
mod sort;
mod star;
pub(crate) use pattern::{LOOKUPS, ROWS_OUT, pattern_key};
pub(crate) use semi_scan::SEMI_JOIN_SCAN;

use crate::error::{Result, SparqlError};
use crate::expression::evaluate;
use crate::plan::{Plan, Row, Var};
use crate::terms::TermSpace;
use oxrdf::Term;
use oxsdatatypes::DateTime;
use rhizome_rdf::TermId;
use rustc_hash::FxHashSet;
use std::rc::Rc;

pub type Rows<'a> = Box<dyn Iterator<Item = Result<Row>> + 'a>;

/// Which graphs the query reads.
#[derive(Clone, Debug, Default)]
pub struct QueryDataset {
    /// FROM graphs; `None` is the store's default graph.
    pub default: Option<Vec<TermId>>,
    /// FROM NAMED graphs; `None` is every named graph of the store.
    pub named: Option<Vec<TermId>>,
}

pub struct Evaluator<'a> {
    pub space: TermSpace<'a>,
    pub dataset: QueryDataset,
    pub width: usize,
    /// NOW(): read at its first use in the query and the same for every
    /// later use (reading the clock and converting it costs a tenth of a
    /// small query, and most queries never ask).
    pub now: std::cell::OnceCell<DateTime>,
    pub base_iri: Option<oxiri::Iri<String>>,
    /// The graph of each hidden graph variable of a `GraphLoop` being
    /// evaluated (set around every pull of its inner rows).
    pub graph_context: std::cell::RefCell<rustc_hash::FxHashMap<crate::plan::Var, TermId>>,
    pub limits: Limits,
    /// Rows given per plan node (by address), when explaining; by a quad
    /// pattern's address, the lookups after which it was hashed.
    pub profile: Option<std::cell::RefCell<rustc_hash::FxHashMap<usize, u64>>>,
    /// The named graphs of the dataset, listed once per query.
    pub named_graphs: std::cell::RefCell<Option<Rc<Vec<TermId>>>>,
    /// Hash a pattern after this many lookups whatever its size, instead
    /// of when the lookups have cost what reading it whole does (tests use
    /// it to run both join methods over the same queries).
    pub hash_after_lookups: std::cell::Cell<Option<u64>>,
    /// Compiled regular expressions by pattern and flags (`None`: the
    /// pattern or flags are invalid): a REGEX filter compiles its pattern
    /// once per query, not once per row.
    /// Per EXISTS pattern (by address): lookups made, or its rows hashed.
    pub exists_states: std::cell::RefCell<rustc_hash::FxHashMap<usize, join::ExistsState>>,
    pub regexes: std::cell::RefCell<rustc_hash::FxHashMap<(String, Option<String>), Option<Rc<regex::Regex>>>>,
}

/// A time limit and a cancellation flag, checked as scans yield quads
/// (every scan pull goes through `check`, so no operator runs unchecked
/// for long).
pub struct Limits {
    pub deadline: std::cell::Cell<Option<std::time::Instant>>,
    pub cancelled: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A second flag owned by the caller (the server's per-request flag,
    /// set when the client goes away), checked as `cancelled` is.
    pub also_cancelled: std::cell::OnceCell<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    ticks: std::cell::Cell<u32>,
    /// The query's memory budget: what it keeps for its whole run (the
    /// terms it computed, `TermSpace::local_bytes`) plus any one sort,
    /// group, hash table, MINUS side or string being built (estimated from
    /// its rows or bytes) may not pass it; past it the query fails with a
    /// clear error instead of the process being killed.
    pub memory_bytes: std::cell::Cell<usize>,
    /// Set when an expression gave up building a value past the budget:
    /// expressions answer `None` (SPARQL's error value), so the error is
    /// raised by the operator around them (BIND, the result rows, `check`).
    memory_exceeded: std::cell::Cell<bool>,
    /// What the query holds of the memory shared by every request (the
    /// largest it has reported to `check_memory`), when it shares one.
    pub pool: std::cell::RefCell<Option<crate::MemoryReservation>>,
    /// Set when the shared memory had no room (then `memory_exceeded` too).
    pool_exhausted: std::cell::Cell<bool>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Default::default(),
            cancelled: Default::default(),
            also_cancelled: Default::default(),
            ticks: Default::default(),
            memory_bytes: std::cell::Cell::new(1 << 30),
            memory_exceeded: Default::default(),
            pool: Default::default(),
            pool_exhausted: Default::default(),
        }
    }
}

/// Estimated bytes of `n` materialized rows of `width` variables.
pub fn rows_bytes(n: usize, width: usize) -> usize {
    n.saturating_mul(24 + 16 * width)
}

impl Limits {
    pub fn check_memory(&self, bytes: usize) -> Result<()> {
        let limit = self.memory_bytes.get();
        if bytes > limit {
            return Err(SparqlError::MemoryLimit { limit_bytes: limit });
        }
        if !self.pool_grows_to(bytes) {
            return Err(self.pool_error());
        }
        Ok(())
    }

    /// Whether the shared memory (if any) holds `bytes` for this query.
    fn pool_grows_to(&self, bytes: usize) -> bool {
        let grown = self.pool.borrow_mut().as_mut().is_none_or(|r| r.grow_to(bytes));
        if !grown {
            self.pool_exhausted.set(true);
        }
        grown
    }

    fn pool_error(&self) -> SparqlError {
        let limit_bytes = self.pool.borrow().as_ref().map_or(0, |r| r.pool().limit_bytes());
        SparqlError::ServerMemory { limit_bytes }
    }

    /// Whether a value of `bytes` in all fits the budgets (the query's and
    /// the shared one).
    pub fn fits(&self, bytes: usize) -> bool {
        bytes <= self.memory_bytes.get() && self.pool_grows_to(bytes)
    }

    /// The error of an expression that gave up building a value, if one did.
    pub fn memory_error(&self) -> Result<()> {
        if self.memory_exceeded.get() {
            if self.pool_exhausted.get() {
                return Err(self.pool_error());
            }
            return Err(SparqlError::MemoryLimit { limit_bytes: self.memory_bytes.get() });
        }
        Ok(())
    }

    pub fn check(&self) -> Result<()> {
        self.check_weighted(1)
    }

    /// `check` for a step that costs about `weight` ordinary ones (a row
    /// of that many variables): the clock is looked at every 1,024 steps.
    pub fn check_weighted(&self, weight: usize) -> Result<()> {
        self.memory_error()?;
        let before = self.ticks.get();
        let t = before.wrapping_add(u32::try_from(weight).unwrap_or(u32::MAX));
        self.ticks.set(t);
        if before / 1024 == t / 1024 && t >= before {
            return Ok(());
        }
        if self.cancelled.load(std::sync::atomic::Ordering::Relaxed)
            || self.also_cancelled.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
        {
            return Err(SparqlError::Cancelled);
        }
        match self.deadline.get() {
            Some(d) if std::time::Instant::now() >= d => Err(SparqlError::Timeout),
            _ => Ok(()),
        }
    }
}

fn one<'a>(row: Row) -> Rows<'a> {
    Box::new(std::iter::once(Ok(row)))
}

fn fail<'a>(e: SparqlError) -> Rows<'a> {
    Box::new(std::iter::once(Err(e)))
}

/// The rows a DISTINCT has given, by their values on the variables its
/// rows may bind (a projection's): up to two or up to `SMALL_KEY` of them
/// held inline, so a new row costs a hash insert and no copy of the row
/// (m28's rows were cloned whole, as wide as the query, to be kept), and
/// a key of two variables hashes and moves 32 bytes, not 64.
enum DistinctRows {
    Pair(Vec<Var>, FxHashSet<[Option<TermId>; 2]>),
    Small(Vec<Var>, FxHashSet<[Option<TermId>; SMALL_KEY]>),
    Rows(FxHashSet<Row>),
}

const SMALL_KEY: usize = 4;

/// `row`'s values on `vars` (at most `N`), the rest `None`.
fn key_of<const N: usize>(vars: &[Var], row: &Row) -> [Option<TermId>; N] {
    let mut key = [None; N];
    for (k, v) in key.iter_mut().zip(vars.iter()) {
        *k = row[*v];
    }
    key
}

impl DistinctRows {
    fn new(inner: &Plan, width: usize) -> Self {
        let vars = match inner {
            Plan::Project(_, vars) => vars.clone(),
            _ => (0..width).collect(),
        };
        match vars.len() {
            0..=2 => DistinctRows::Pair(vars, FxHashSet::default()),
            3..=SMALL_KEY => DistinctRows::Small(vars, FxHashSet::default()),
            _ => DistinctRows::Rows(FxHashSet::default()),
        }
    }

    /// Whether `row` is new (then remembered).
    fn insert(&mut self, row: &Row) -> bool {
        match self {
            DistinctRows::Pair(vars, seen) => seen.insert(key_of(vars, row)),
            DistinctRows::Small(vars, seen) => seen.insert(key_of(vars, row)),
            DistinctRows::Rows(seen) => seen.insert(row.clone()),
        }
    }

    fn len(&self) -> usize {
        match self {
            DistinctRows::Pair(_, seen) => seen.len(),
            DistinctRows::Small(_, seen) => seen.len(),
            DistinctRows::Rows(seen) => seen.len(),
        }
    }
}

/// The union of two compatible rows, or `None` if they disagree.
pub fn merge(a: &Row, b: &Row) -> Option<Row> {
    let mut out = a.clone();
    for (i, v) in b.iter().enumerate() {
        if let Some(v) = v {
            match out[i] {
                Some(x) if x != *v => return None,
                _ => out[i] = Some(*v),
            }
        }
    }
    Some(out)
}

impl<'a> Evaluator<'a> {
    pub fn empty_row(&self) -> Row {
        vec![None; self.width]
    }

    /// `bytes` more than the query keeps for its run (the terms it
    /// computed): within the memory budget, or `SparqlError::MemoryLimit`.
    pub fn check_memory(&self, bytes: usize) -> Result<()> {
        self.limits.check_memory(bytes.saturating_add(self.space.local_bytes()))
    }

    /// Whether a value of `bytes` may be built; if not, the query fails
    /// (`Limits::memory_error`) and the expression answers `None`.
    pub fn value_fits(&self, bytes: usize) -> bool {
        let fits = self.limits.fits(bytes.saturating_add(self.space.local_bytes()));
        if !fits {
            self.limits.memory_exceeded.set(true);
        }
        fits
    }

    pub fn expr(self: &Rc<Self>, e: &'a crate::expression::Expr, row: &Row) -> Option<Term> {
        evaluate(self, e, row)
    }

    fn filter_true(self: &Rc<Self>, e: &'a crate::expression::Expr, row: &Row) -> bool {
        crate::expression::truth(self, e, row) == Some(true)
    }

    /// A FILTER's test of its rows. `FILTER (NOT) EXISTS { p }` alone looks
    /// `p` up through scans it keeps from row to row, as the right side of
    /// a join does (the scans hold the store's reader, so they live with
    /// the operator, not in the evaluator).
    fn row_filter(self: &Rc<Self>, e: &'a crate::expression::Expr) -> Box<dyn Fn(&Row) -> bool + 'a> {
        use crate::expression::Expr;
        let ev = self.clone();
        let (p, alone, negated) = match e {
            Expr::Exists(p, alone) => (p, alone.as_deref(), false),
            Expr::Not(inner) => match &**inner {
                Expr::Exists(p, alone) => (p, alone.as_deref(), true),
                _ => return Box::new(move |row| ev.filter_true(e, row)),
            },
            _ => return Box::new(move |row| ev.filter_true(e, row)),
        };
        let per_row = self.per_row(p);
        // An error inside (a time limit, say) is raised again by the
        // operators around, which check the same limits.
        Box::new(move |row| ev.exists_with(p, alone, row, &per_row).is_ok_and(|found| found != negated))
    }

    /// The rows of `rows` that pass FILTER `e` (an error passes, for the
    /// operators around to raise). Where `e` reads stored text
    /// ([`Expr::text_vars`](crate::expression::Expr::text_vars)), the rows
    /// are tested in batches, the terms of a batch decoded together first
    /// ([`TermSpace::prefetch`]): in a fresh process each term decoded
    /// alone was a cold point read of the dictionary, some 15,000
    /// instructions (m15, STRSTARTS on 91,705 course codes at 4.8M: 400M of
    /// the process's 747M).
    ///
    /// The conjuncts of `e` that read no text (`lang(?l) = "en" && regex(?l,
    /// ...)`) are tested first, as the rows are read: a row they fail is
    /// dropped before its terms are decoded (`A && B` is true only when
    /// both are), so the batch decodes what the row-by-row test did.
    fn filtered(self: &Rc<Self>, e: &'a crate::expression::Expr, rows: Rows<'a>) -> Rows<'a> {
        let vars = e.text_vars();
        if vars.is_empty() {
            let test = self.row_filter(e);
            return Box::new(rows.filter(move |r| match r {
                Ok(row) => test(row),
                Err(_) => true,
            }));
        }
        let (mut first, mut test): (Vec<&'a crate::expression::Expr>, Box<dyn Fn(&Row) -> bool + 'a>) = (Vec::new(), self.row_filter(e));
        let conjuncts = e.conjuncts();
        if conjuncts.len() > 1 && !e.has_exists() {
            let (text, reads_ids): (Vec<_>, Vec<_>) = conjuncts.into_iter().partition(|c| !c.text_vars().is_empty());
            let ev = self.clone();
            first = reads_ids;
            test = Box::new(move |row| text.iter().all(|c| ev.filter_true(c, row)));
        }
        Box::new(TextFilter { ev: self.clone(), rows, first, test, vars, batch: std::collections::VecDeque::new(), batch_rows: TextFilter::FIRST_BATCH })
    }

    pub fn encode(&self, t: &Term) -> Result<TermId> {
        self.space.encode(t.as_ref())
    }

    pub fn eval(self: &Rc<Self>, plan: &'a Plan, input: Row) -> Rows<'a> {
        let rows = self.eval_node(plan, input);
        self.profiled(plan, rows)
    }

    /// The rows of `plan`, counted for EXPLAIN when it runs.
    fn profiled(self: &Rc<Self>, plan: &'a Plan, rows: Rows<'a>) -> Rows<'a> {
        match &self.profile {
            // EXPLAIN: count the rows each operator gives.
            Some(_) => {
                let (ev, key) = (self.clone(), plan as *const Plan as usize);
                Box::new(rows.inspect(move |_| {
                    if let Some(c) = &ev.profile {
                        *c.borrow_mut().entry(key).or_default() += 1;
                    }
                }))
            }
            None => rows,
        }
    }

    fn eval_node(self: &Rc<Self>, plan: &'a Plan, input: Row) -> Rows<'a> {
        match plan {
            Plan::Bgp(patterns) => self.bgp(patterns, input),
            Plan::Path { s, path, o, g } => self.path(*s, path, *o, *g, input),
            Plan::Join(a, b) => self.join(a, b, input),
            // Bindings from outside would change what OPTIONAL, MINUS and
            // DISTINCT see (a variable of the right side bound on the left):
            // those run alone, then join.
            Plan::LeftJoin(..) | Plan::Minus(..) | Plan::Distinct(_) | Plan::Reduced(_) if input.iter().any(Option::is_some) => {
                self.alone(plan, input)
            }
            Plan::LeftJoin(a, b, e) => self.left_join(a, b, e.as_ref(), input),
            Plan::Filter(e, inner) => {
                if !plan.accepts_bindings() {
                    return self.alone(plan, input);
                }
                let rows = self.eval(inner, input);
                self.filtered(e, rows)
            }
            Plan::Union(a, b) => Box::new(self.eval(a, input.clone()).chain(self.eval(b, input))),
            Plan::GraphVar(v, inner) => self.graph_var(*v, inner, input),
            Plan::GraphLoop(v, hidden, inner) => self.graph_loop(*v, *hidden, inner, input),
            Plan::GraphConst(g, inner) => match self.graph_in_dataset(*g) {
                Ok(true) => self.eval(inner, input),
                Ok(false) => Box::new(std::iter::empty()),
                Err(e) => fail(e),
            },
            Plan::Extend(inner, v, e) => {
                if !plan.accepts_bindings() && input.iter().any(Option::is_some) {
                    return self.alone(plan, input);
                }
                let (ev, v) = (self.clone(), *v);
                Box::new(self.eval(inner, input).filter_map(move |r| {
                    let mut row = match r {
                        Ok(row) => row,
                        Err(e) => return Some(Err(e)),
                    };
                    // Integer arithmetic on inlined integers: the id
                    // computed as is, no term decoded, built or encoded.
                    let computed = crate::expression::integer_id(e, &row).map(Ok).or_else(|| {
                        // A computed term is kept for the whole query.
                        ev.expr(e, &row).map(|t| ev.encode(&t).and_then(|id| ev.check_memory(0).map(|()| id)))
                    });
                    if let Some(id) = computed {
                        let id = match id {
                            Ok(id) => id,
                            Err(e) => return Some(Err(e)),
                        };
                        match row[v] {
                            Some(x) if x != id => return None,
                            _ => row[v] = Some(id),
                        }
                    } else if let Err(e) = ev.limits.memory_error() {
                        return Some(Err(e));
                    }
                    Some(Ok(row))
                }))
            }
            Plan::Minus(a, b) => self.minus(a, b, input),
            Plan::Walk(w) => {
                let rows = match self.limits.check().and_then(|()| w.rows(&self.space, &input, self.limits.deadline.get())) {
                    Ok(rows) => rows,
                    Err(e) => return fail(e),
                };
                let width = self.width;
                Box::new(rows.into_iter().filter_map(move |pairs| {
                    let mut r = vec![None; width];
                    for (v, id) in pairs {
                        r[v] = Some(id);
                    }
                    merge(&input, &r).map(Ok)
                }))
            }
            Plan::Values(rows) => {
                let width = self.width;
                Box::new(rows.iter().filter_map(move |r| {
                    let mut r = r.clone();
                    r.resize(width, None);
                    merge(&input, &r).map(Ok)
                }))
            }
            Plan::OrderBy(inner, keys, top) => {
                if input.iter().any(Option::is_some) {
                    return self.alone(plan, input);
                }
                match self.sorted(inner, keys, *top) {
                    Ok(rows) => Box::new(rows.into_iter().map(Ok)),
                    Err(e) => fail(e),
                }
            }
            Plan::Project(inner, vars) => {
                if input.iter().any(Option::is_some) {
                    return self.alone(plan, input);
                }
                // The row is cleared in place of the variables not
                // projected: no new row allocated per row.
                let width = self.width;
                let mut projected = vec![false; width];
                for v in vars {
                    projected[*v] = true;
                }
                Box::new(self.eval(inner, input).map(move |r| {
                    let mut r = r?;
                    r.resize(width, None);
                    for (slot, keep) in r.iter_mut().zip(&projected) {
                        if !keep {
                            *slot = None;
                        }
                    }
                    Ok(r)
                }))
            }
            Plan::Distinct(inner) | Plan::Reduced(inner) => {
                if let Plan::Project(projected, vars) = &**inner {
                    if let (Plan::Bgp(patterns), [v]) = (&**projected, vars.as_slice()) {
                        if let [p] = patterns.as_slice() {
                            if let Some(rows) = self.distinct_values(p, *v) {
                                return rows;
                            }
                        }
                    }
                }
                // The rows seen are held: within the memory budget.
                let mut seen = DistinctRows::new(inner, self.width);
                let ev = self.clone();
                let width = self.width;
                Box::new(self.eval(inner, input).filter_map(move |r| match r {
                    Ok(row) => {
                        if !seen.insert(&row) {
                            return None;
                        }
                        if seen.len().is_multiple_of(4096) {
                            if let Err(e) = ev.check_memory(rows_bytes(seen.len(), width)) {
                                return Some(Err(e));
                            }
                        }
                        Some(Ok(row))
                    }
                    Err(e) => Some(Err(e)),
                }))
            }
            Plan::Slice(inner, start, length) => {
                if input.iter().any(Option::is_some) {
                    return self.alone(plan, input);
                }
                // Errors are not rows: OFFSET must not skip one (a sort
                // past its memory limit answered no rows instead of failing).
                let mut to_skip = *start;
                let rows = self.eval(inner, input).filter(move |r| {
                    if to_skip > 0 && r.is_ok() {
                        to_skip -= 1;
                        return false;
                    }
                    true
                });
                match length {
                    Some(n) => Box::new(rows.take(*n)),
                    None => Box::new(rows),
                }
            }
            Plan::Group(inner, keys, aggregates) => {
                if input.iter().any(Option::is_some) {
                    return self.alone(plan, input);
                }
                self.group(inner, keys, aggregates)
            }
        }
    }

    /// Evaluates a plan that does not accept bindings on its own, then
    /// keeps the rows compatible with the input.
    fn alone(self: &Rc<Self>, plan: &'a Plan, input: Row) -> Rows<'a> {
        let empty = self.empty_row();
        Box::new(self.eval_unbound(plan, empty).filter_map(move |r| match r {
            Ok(row) => merge(&input, &row).map(Ok),
            Err(e) => Some(Err(e)),
        }))
    }

    /// Evaluation with no outer bindings, bypassing the `accepts_bindings`
    /// check of the top operator.
    fn eval_unbound(self: &Rc<Self>, plan: &'a Plan, empty: Row) -> Rows<'a> {
        match plan {
            Plan::Filter(e, inner) => {
                if let Some(rows) = self.semi_join_scan(plan, e, inner, &empty) {
                    return rows;
                }
                let rows = self.eval(inner, empty);
                self.filtered(e, rows)
            }
            _ => self.eval(plan, empty),
        }
    }
}

/// A FILTER that reads stored text, tested a batch of rows at a time
/// (`Evaluator::filtered`). Batches grow from [`FIRST_BATCH`](Self::FIRST_BATCH)
/// rows to [`LAST_BATCH`](Self::LAST_BATCH), so that a FILTER under a LIMIT
/// or an ASK reads few rows past the ones it needs.
struct TextFilter<'a> {
    ev: Rc<Evaluator<'a>>,
    rows: Rows<'a>,
    /// Conjuncts tested as rows are read, before any term is decoded.
    first: Vec<&'a crate::expression::Expr>,
    /// The rest of the FILTER, tested on the batch.
    test: Box<dyn Fn(&Row) -> bool + 'a>,
    vars: Vec<crate::plan::Var>,
    batch: std::collections::VecDeque<Result<Row>>,
    batch_rows: usize,
}

impl TextFilter<'_> {
    const FIRST_BATCH: usize = 32;
    const LAST_BATCH: usize = 1024;

    /// Reads the next batch and decodes its terms; `false`: none left.
    fn refill(&mut self) -> Result<bool> {
        let mut ids = Vec::new();
        for r in self.rows.by_ref() {
            let failed = r.is_err();
            if let Ok(row) = &r {
                if !self.first.iter().all(|c| self.ev.filter_true(c, row)) {
                    continue;
                }
                ids.extend(self.vars.iter().filter_map(|v| row.get(*v).copied().flatten()));
            }
            self.batch.push_back(r);
            if failed || self.batch.len() >= self.batch_rows {
                break;
            }
        }
        self.batch_rows = (self.batch_rows * 2).min(Self::LAST_BATCH);
        if !ids.is_empty() {
            self.ev.space.prefetch(ids)?;
        }
        Ok(!self.batch.is_empty())
    }
}

impl Iterator for TextFilter<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Result<Row>> {
        loop {
            match self.batch.pop_front() {
                Some(Ok(row)) => {
                    if (self.test)(&row) {
                        return Some(Ok(row));
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => match self.refill() {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => {
                        self.batch.clear();
                        return Some(Err(e));
                    }
                },
            }
        }
    }
}
