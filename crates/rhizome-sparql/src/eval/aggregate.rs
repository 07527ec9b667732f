//! GROUP BY and aggregates (SPARQL 1.1 section 18.5): groups are hashed on
//! the term ids of their keys; an aggregate whose input errs makes the
//! aggregate unbound (except COUNT, which skips errors).

use super::{fail, Evaluator, Rows};
use crate::error::Result;
use crate::expression::value::{num_arithmetic, numeric, order, Num};
use crate::plan::{Aggregate, AggregateKind, Plan, Row, Var};
use oxrdf::{Literal, Term};
use rhizome_rdf::TermId;
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

#[derive(Default)]
struct Accumulator {
    count: u64,
    /// SUM and AVG: kept as a number, not a term, between rows.
    sum: Option<Num>,
    best: Option<Term>,
    concat: Option<(String, Option<Option<String>>)>,
    sample: Option<Term>,
    failed: bool,
    seen: FxHashSet<Option<TermId>>,
}

impl<'a> Evaluator<'a> {
    pub(super) fn group(self: &Rc<Self>, inner: &'a Plan, keys: &'a [Var], aggregates: &'a [(Var, Aggregate)]) -> Rows<'a> {
        match self.group_rows(inner, keys, aggregates) {
            Ok(rows) => Box::new(rows.into_iter().map(Ok)),
            Err(e) => fail(e),
        }
    }

    fn group_rows(self: &Rc<Self>, inner: &'a Plan, keys: &'a [Var], aggregates: &'a [(Var, Aggregate)]) -> Result<Vec<Row>> {
        // Only COUNT(*) and no GROUP BY: count the rows, without building
        // them when the pattern is a single scan.
        if keys.is_empty() && !aggregates.is_empty() && aggregates.iter().all(|(_, a)| matches!(a.kind, AggregateKind::Count) && a.expr.is_none() && !a.distinct) {
            let n = Literal::from(i64::try_from(self.count_rows(inner)?).unwrap_or(i64::MAX));
            let id = self.encode(&n.into())?;
            let mut row = self.empty_row();
            for (v, _) in aggregates {
                row[*v] = Some(id);
            }
            return Ok(vec![row]);
        }
        if let Some(rows) = self.value_count_rows(inner, keys, aggregates)? {
            return Ok(rows);
        }
        // Groups in the order they first appear; the map finds a row's
        // group by its key ids without allocating a key per row.
        let mut found: FxHashMap<Box<[Option<TermId>]>, usize> = FxHashMap::default();
        let mut groups: Vec<(Box<[Option<TermId>]>, Vec<Accumulator>)> = Vec::new();
        let fresh = || aggregates.iter().map(|_| Accumulator::default()).collect::<Vec<_>>();
        if keys.is_empty() {
            // No GROUP BY: one group, even over no rows.
            found.insert(Box::default(), 0);
            groups.push((Box::default(), fresh()));
        }
        let mut key: Vec<Option<TermId>> = Vec::with_capacity(keys.len());
        for r in self.eval(inner, self.empty_row()) {
            let row = r?;
            key.clear();
            key.extend(keys.iter().map(|v| row[*v]));
            let at = match found.get(key.as_slice()) {
                Some(at) => *at,
                None => {
                    let at = groups.len();
                    found.insert(key.as_slice().into(), at);
                    groups.push((key.as_slice().into(), fresh()));
                    if groups.len().is_multiple_of(4096) {
                        self.check_memory(super::rows_bytes(groups.len(), 2 * keys.len() + 8 * aggregates.len()))?;
                    }
                    at
                }
            };
            for ((_, agg), acc) in aggregates.iter().zip(groups[at].1.iter_mut()) {
                self.accumulate(agg, acc, &row)?;
            }
        }
        drop(found);
        let mut out = Vec::with_capacity(groups.len());
        for (key, accs) in groups {
            let mut row = self.empty_row();
            for (v, id) in keys.iter().zip(key.iter()) {
                row[*v] = *id;
            }
            for ((v, agg), acc) in aggregates.iter().zip(accs) {
                if let Some(t) = finish(agg, acc) {
                    row[*v] = Some(self.encode(&t)?);
                }
            }
            out.push(row);
        }
        Ok(out)
    }

    /// `{ ?s <p> ?o } GROUP BY ?o` with only counts of its rows, over the
    /// whole union default graph: the predicate's value counts have the
    /// answer when the store keeps them (few distinct objects), in the
    /// order a scan would find the groups (by object id). `None`: evaluate.
    fn value_count_rows(&self, inner: &Plan, keys: &[Var], aggregates: &[(Var, Aggregate)]) -> Result<Option<Vec<Row>>> {
        use crate::plan::{GraphSlot, QuadPlan, Slot};
        let Plan::Bgp(patterns) = inner else { return Ok(None) };
        let [QuadPlan { s: Slot::Var(s), p: Slot::Const(predicate), o: Slot::Var(o), g: GraphSlot::Default, o_ranges: None, .. }] = patterns.as_slice() else {
            return Ok(None);
        };
        let whole_store = self.dataset.default.is_none() && self.space.default_graph().is_none();
        // COUNT(*), COUNT(?s), COUNT(?o): every row binds both.
        let counts_rows = |a: &Aggregate| {
            matches!(a.kind, AggregateKind::Count) && !a.distinct && a.expr.as_ref().is_none_or(|e| matches!(e, crate::expression::Expr::Var(v) if v == s || v == o))
        };
        if s == o || keys != [*o] || !whole_store || !aggregates.iter().all(|(_, a)| counts_rows(a)) {
            return Ok(None);
        }
        let Some(counts) = self.space.value_counts(*predicate)? else { return Ok(None) };
        let mut out = Vec::with_capacity(counts.len());
        for (value, n) in counts {
            let mut row = self.empty_row();
            row[*o] = Some(value);
            let n = self.encode(&Literal::from(i64::try_from(n).unwrap_or(i64::MAX)).into())?;
            for (v, _) in aggregates {
                row[*v] = Some(n);
            }
            out.push(row);
        }
        Ok(Some(out))
    }

    /// The number of rows of `inner` (seen through projections); a single
    /// quad pattern whose variables are all different is counted from its
    /// scans, without rows, or from the store's counters when it reads the
    /// whole union default graph with only its predicate bound.
    fn count_rows(self: &Rc<Self>, inner: &'a Plan) -> Result<u64> {
        // A projection keeps every row (DISTINCT would be a node of its own).
        if let Plan::Project(projected, _) = inner {
            return self.count_rows(projected);
        }
        if let Plan::Bgp(patterns) = inner {
            if let [p @ crate::plan::QuadPlan { o_ranges: None, .. }] = patterns.as_slice() {
                let vars: Vec<Var> = [p.s.var(), p.p.var(), p.o.var(), self.graph_var_to_bind(p.g)].into_iter().flatten().collect();
                let distinct = vars.iter().enumerate().all(|(i, v)| !vars[..i].contains(v));
                // Every quad of the store, or every quad of a predicate: the
                // store's counters have the answer (as Virtuoso's do).
                let whole_store = p.g == crate::plan::GraphSlot::Default && self.dataset.default.is_none() && self.space.default_graph().is_none();
                if distinct && whole_store && p.s.var().is_some() && p.o.var().is_some() {
                    let predicate = match p.p {
                        crate::plan::Slot::Const(id) => Some(id),
                        crate::plan::Slot::Var(_) => None,
                    };
                    return self.space.quads_counted(predicate);
                }
                if distinct {
                    let empty = self.empty_row();
                    let (graphs, skip_default) = self.graphs_of(p.g, &empty);
                    let mut n = 0;
                    for &g in graphs.iter() {
                        let pattern = rhizome_rdf::QuadPattern { s: p.s.value(&empty), p: p.p.value(&empty), o: p.o.value(&empty), g };
                        let mut scan = self.space.scan(pattern);
                        while let Some(q) = scan.next_quad()? {
                            self.limits.check()?;
                            if !(skip_default && q[3] == TermId::DEFAULT_GRAPH) {
                                n += 1;
                            }
                        }
                    }
                    return Ok(n);
                }
            }
            // A join: the rows of all patterns but the last, and per row
            // the quads of the last counted, not built into rows (EXPLAIN
            // runs the rows, to count what every pattern gives).
            if let [prefix @ .., last] = patterns.as_slice() {
                // Not a pattern a star on the previous one's subject would
                // read with it (one seek for both).
                let star = last.s.var().is_some() && prefix.last().is_some_and(|p| p.s == last.s);
                if !prefix.is_empty() && !star && self.profile.is_none() {
                    let pool = super::pattern::ScanPool::default();
                    let mut n = 0;
                    for r in self.bgp(prefix, self.empty_row()) {
                        n += self.count_quad(last, &r?, &pool)?;
                    }
                    return Ok(n);
                }
            }
        }
        let mut n = 0;
        for r in self.eval(inner, self.empty_row()) {
            r?;
            n += 1;
        }
        Ok(n)
    }

    fn accumulate(self: &Rc<Self>, agg: &'a Aggregate, acc: &mut Accumulator, row: &Row) -> Result<()> {
        if acc.failed {
            return Ok(());
        }
        let Some(e) = &agg.expr else {
            // COUNT(*): DISTINCT counts distinct rows.
            if agg.distinct {
                let id = Some(self.encode(&Literal::new_simple_literal(format!("{row:?}")).into())?);
                if !acc.seen.insert(id) {
                    return Ok(());
                }
            }
            acc.count += 1;
            return Ok(());
        };
        // COUNT(?v): ids, without decoding (every term has one id, so
        // DISTINCT compares ids too).
        if let (AggregateKind::Count, crate::expression::Expr::Var(v)) = (&agg.kind, e) {
            let id = row[*v];
            if id.is_none() || (agg.distinct && !acc.seen.insert(id)) {
                return Ok(());
            }
            acc.count += 1;
            return Ok(());
        }
        // SUM and AVG of a variable bound to an inlined integer: its value
        // from the id, without decoding.
        if let (AggregateKind::Sum | AggregateKind::Avg, crate::expression::Expr::Var(v), false) = (&agg.kind, e, agg.distinct) {
            if let Some(n) = row[*v].and_then(rhizome_rdf::term::inline::inline_integer_value) {
                self.add_to_sum(acc, Num::Integer(n.into()));
                return Ok(());
            }
        }
        let value = self.expr(e, row);
        self.limits.memory_error()?;
        if agg.distinct {
            let id = value.as_ref().map(|t| self.encode(t)).transpose()?;
            if !acc.seen.insert(id) {
                return Ok(());
            }
        }
        let Some(t) = value else {
            if !matches!(agg.kind, AggregateKind::Count | AggregateKind::Sample) {
                acc.failed = true;
            }
            return Ok(());
        };
        match &agg.kind {
            AggregateKind::Count => acc.count += 1,
            AggregateKind::Sum | AggregateKind::Avg => match numeric(&t) {
                Some(n) => self.add_to_sum(acc, n),
                None => acc.failed = true,
            },
            AggregateKind::Min | AggregateKind::Max => {
                let better = match &acc.best {
                    None => true,
                    Some(b) => {
                        let o = order(Some(&t), Some(b));
                        if matches!(agg.kind, AggregateKind::Min) {
                            o.is_lt()
                        } else {
                            o.is_gt()
                        }
                    }
                };
                if better {
                    acc.best = Some(t);
                }
            }
            AggregateKind::GroupConcat(sep) => {
                let Term::Literal(l) = &t else {
                    acc.failed = true;
                    return Ok(());
                };
                let lang = l.language().map(str::to_owned);
                match &mut acc.concat {
                    None => acc.concat = Some((l.value().to_owned(), Some(lang))),
                    Some((s, common)) => {
                        // The string grows for the whole group: it draws
                        // from the query's memory budget as it does.
                        self.check_memory(s.len() + sep.len() + l.value().len())?;
                        s.push_str(sep);
                        s.push_str(l.value());
                        if common.as_ref() != Some(&lang) {
                            *common = None;
                        }
                    }
                }
            }
            AggregateKind::Sample => {
                if acc.sample.is_none() {
                    acc.sample = Some(t);
                }
            }
        }
        Ok(())
    }
}

impl Evaluator<'_> {
    fn add_to_sum(&self, acc: &mut Accumulator, n: Num) {
        acc.count += 1;
        acc.sum = match acc.sum.take() {
            None => Some(n),
            Some(s) => num_arithmetic('+', s, n),
        };
        // Overflow: the aggregate errs.
        acc.failed |= acc.sum.is_none();
    }
}

fn finish(agg: &Aggregate, acc: Accumulator) -> Option<Term> {
    if acc.failed {
        return None;
    }
    match &agg.kind {
        AggregateKind::Count => Some(Literal::from(acc.count as i64).into()),
        AggregateKind::Sum => Some(acc.sum.map_or_else(|| Literal::from(0).into(), Num::into_term)),
        AggregateKind::Avg => match acc.sum {
            None => Some(Literal::from(0).into()),
            Some(s) => num_arithmetic('/', s, Num::Integer((acc.count as i64).into())).map(Num::into_term),
        },
        AggregateKind::Min | AggregateKind::Max => acc.best,
        // A simple literal, even when every value has the same language
        // (the W3C tests agg-groupconcat-4 and -6 say so).
        AggregateKind::GroupConcat(_) => Some(Literal::new_simple_literal(acc.concat.map(|(s, _)| s).unwrap_or_default()).into()),
        AggregateKind::Sample => acc.sample,
    }
}
