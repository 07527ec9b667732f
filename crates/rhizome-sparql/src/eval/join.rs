//! Joins: index nested loops when the right side accepts bindings, else a
//! hash join on the variables every right row binds; OPTIONAL and MINUS.

use super::{fail, merge, Evaluator, Rows};
use crate::error::Result;
use crate::expression::Expr;
use crate::plan::{Plan, Row, Var};
use rhizome_rdf::TermId;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// The right side of a join, evaluated once and hashed.
pub(super) struct HashedSide {
    keys: Vec<Var>,
    buckets: FxHashMap<Vec<TermId>, Vec<Row>>,
    all: Vec<Row>,
}

impl HashedSide {
    pub(super) fn build(rows: Vec<Row>, width: usize) -> HashedSide {
        let keys: Vec<Var> = (0..width).filter(|v| !rows.is_empty() && rows.iter().all(|r| r[*v].is_some())).collect();
        let mut buckets: FxHashMap<Vec<TermId>, Vec<Row>> = FxHashMap::default();
        for r in &rows {
            let k = keys.iter().map(|v| r[*v].expect("key vars are bound in every row")).collect();
            buckets.entry(k).or_default().push(r.clone());
        }
        HashedSide { keys, buckets, all: rows }
    }

    /// The right rows that may be compatible with `left`.
    pub(super) fn candidates<'s>(&'s self, left: &Row) -> &'s [Row] {
        let bound: Option<Vec<TermId>> = self.keys.iter().map(|v| left[*v]).collect();
        match bound {
            Some(k) if !self.keys.is_empty() => self.buckets.get(&k).map_or(&[], |v| v.as_slice()),
            _ => &self.all,
        }
    }
}

/// How the right side of a nested-loop join runs for each left row.
type PerRow<'a> = Box<dyn Fn(&Rc<Evaluator<'a>>, Row) -> Rows<'a> + 'a>;

impl<'a> Evaluator<'a> {
    /// The right side of a nested loop, run once per left row: a BGP keeps
    /// its reusable scans across the rows.
    fn per_row(&self, b: &'a Plan) -> PerRow<'a> {
        match b {
            Plan::Bgp(patterns) => {
                let pools = super::pattern::scan_pools(patterns);
                Box::new(move |ev, row| ev.profiled(b, ev.bgp_pooled(patterns, row, &pools)))
            }
            _ => Box::new(move |ev, row| ev.eval(b, row)),
        }
    }

    /// Every row of a plan evaluated alone, within the memory limit.
    fn materialize(self: &Rc<Self>, plan: &'a Plan) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        for r in self.eval(plan, self.empty_row()) {
            rows.push(r?);
            if rows.len().is_multiple_of(4096) {
                self.check_memory(super::rows_bytes(2 * rows.len(), self.width))?;
            }
        }
        Ok(rows)
    }

    fn hashed(self: &Rc<Self>, plan: &'a Plan) -> Result<Rc<HashedSide>> {
        let rows = self.materialize(plan)?;
        Ok(Rc::new(HashedSide::build(rows, self.width)))
    }

    pub(super) fn join(self: &Rc<Self>, a: &'a Plan, b: &'a Plan, input: Row) -> Rows<'a> {
        let left = self.eval(a, input);
        if b.accepts_bindings() {
            let ev = self.clone();
            let per_row = self.per_row(b);
            return Box::new(left.flat_map(move |r| match r {
                Ok(row) => per_row(&ev, row),
                Err(e) => fail(e),
            }));
        }
        let right = match self.hashed(b) {
            Ok(h) => h,
            Err(e) => return fail(e),
        };
        Box::new(left.flat_map(move |r| -> Rows<'a> {
            let row = match r {
                Ok(row) => row,
                Err(e) => return fail(e),
            };
            let out: Vec<Result<Row>> = right.candidates(&row).iter().filter_map(|b| merge(&row, b)).map(Ok).collect();
            Box::new(out.into_iter())
        }))
    }

    pub(super) fn left_join(self: &Rc<Self>, a: &'a Plan, b: &'a Plan, e: Option<&'a Expr>, input: Row) -> Rows<'a> {
        let left = self.eval(a, input);
        let ev = self.clone();
        let per_row = self.per_row(b);
        let right = if b.accepts_bindings() {
            None
        } else {
            match self.hashed(b) {
                Ok(h) => Some(h),
                Err(e) => return fail(e),
            }
        };
        Box::new(left.flat_map(move |r| -> Rows<'a> {
            let row = match r {
                Ok(row) => row,
                Err(e) => return fail(e),
            };
            let extended: Vec<Row> = match &right {
                None => match per_row(&ev, row.clone()).collect::<Result<Vec<_>>>() {
                    Ok(rows) => rows,
                    Err(e) => return fail(e),
                },
                Some(h) => h.candidates(&row).iter().filter_map(|b| merge(&row, b)).collect(),
            };
            let kept: Vec<Result<Row>> =
                extended.into_iter().filter(|r| e.is_none_or(|e| ev.filter_true(e, r))).map(Ok).collect();
            if kept.is_empty() {
                Box::new(std::iter::once(Ok(row)))
            } else {
                Box::new(kept.into_iter())
            }
        }))
    }

    /// MINUS as an anti-join on hashes: the right rows are grouped by
    /// which variables they bind, and a left row is checked against each
    /// group by one hash lookup on the variables both bind (built per
    /// group and set of shared variables the first time it is needed),
    /// instead of against every right row.
    pub(super) fn minus(self: &Rc<Self>, a: &'a Plan, b: &'a Plan, input: Row) -> Rows<'a> {
        let right: Vec<Row> = match self.materialize(b) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        let mut anti = AntiJoin::new(right);
        Box::new(self.eval(a, input).filter(move |r| match r {
            Ok(row) => !anti.excludes(row),
            Err(_) => true,
        }))
    }
}

/// The right side of a MINUS: rows grouped by the variables they bind.
struct AntiJoin {
    groups: Vec<AntiGroup>,
}

struct AntiGroup {
    vars: Vec<Var>,
    rows: Vec<Row>,
    /// Per list of shared variables (those of the group a left row also
    /// binds): the right rows' values on them.
    by_shared: FxHashMap<Vec<Var>, rustc_hash::FxHashSet<Vec<TermId>>>,
}

impl AntiJoin {
    fn new(rows: Vec<Row>) -> AntiJoin {
        let mut index: FxHashMap<Vec<Var>, usize> = FxHashMap::default();
        let mut groups: Vec<AntiGroup> = Vec::new();
        for r in rows {
            let vars: Vec<Var> = (0..r.len()).filter(|v| r[*v].is_some()).collect();
            if vars.is_empty() {
                continue; // shares no variable with any row: removes nothing
            }
            let i = *index.entry(vars.clone()).or_insert_with(|| {
                groups.push(AntiGroup { vars, rows: Vec::new(), by_shared: FxHashMap::default() });
                groups.len() - 1
            });
            groups[i].rows.push(r);
        }
        AntiJoin { groups }
    }

    /// Whether some right row shares a variable with `left` and agrees
    /// with it on every variable both bind.
    fn excludes(&mut self, left: &Row) -> bool {
        for g in &mut self.groups {
            let shared: Vec<Var> = g.vars.iter().copied().filter(|v| left[*v].is_some()).collect();
            if shared.is_empty() {
                continue;
            }
            let key: Vec<TermId> = shared.iter().map(|v| left[*v].expect("shared vars are bound on the left")).collect();
            let rows = &g.rows;
            let set = g
                .by_shared
                .entry(shared)
                .or_insert_with_key(|shared| rows.iter().map(|r| shared.iter().map(|v| r[*v].expect("group vars are bound")).collect()).collect());
            if set.contains(&key) {
                return true;
            }
        }
        false
    }
}
