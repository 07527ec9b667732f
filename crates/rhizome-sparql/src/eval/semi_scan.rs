//! `FILTER (NOT) EXISTS { p }` over one quad pattern read whole: `p` is
//! read alone once and hashed on the variables the pattern's rows bind (a
//! set of ids when they share one), then the pattern's quads are read in
//! batches of id columns and each is probed in the set; a row is built
//! only for the quads that pass. A semi-join (an anti-join for NOT EXISTS)
//! in place of a row and an EXISTS lookup per quad: m08's 128k students,
//! of which 4k pass, cost about 690 instructions each that way.
//!
//! Chosen when the pattern is expected to give enough rows for the
//! lookups to cost more than reading `p` once (`QuadPlan::alone_rows`, a
//! count the store keeps for a constant predicate or class); `p` is read
//! only up to what those lookups would cost, else the FILTER runs row by
//! row as before (at most twice the better plan's reads either way).

use super::{Evaluator, Rows};
use crate::expression::Expr;
use crate::plan::{Plan, QuadPlan, Row, Slot, Var};
use rhizome_rdf::{QuadBatch, QuadPattern, QuadScan, TermId};
use rustc_hash::FxHashSet;
use std::rc::Rc;

use super::join::{SemiJoin, SEMI_JOIN_EARLY_LOOKUPS, SEMI_JOIN_MAX_READ, SEMI_JOIN_MAX_ROWS, SEMI_JOIN_READ_PER_LOOKUP};
use super::pattern::{bind_quad_owned, LOOKUPS, ROWS_OUT, pattern_key};

/// What EXPLAIN records under a FILTER's address plus this when the FILTER
/// ran as a semi-join scan (plan addresses are 8-aligned: no node's key).
pub(crate) const SEMI_JOIN_SCAN: usize = 4;

/// Quads taken from the scan at once (a segment block's rows).
const BATCH_QUADS: usize = 1024;

impl<'a> Evaluator<'a> {
    /// The rows of `FILTER e` over `inner` from `input`, as a semi-join
    /// scan, or `None` when it does not apply (then the FILTER runs row by
    /// row): `e` is one (NOT) EXISTS, `inner` a BGP of one pattern of one
    /// graph whose variables `input` leaves unbound, expected to give at
    /// least as many rows as EXISTS lookups are made before hashing.
    pub(super) fn semi_join_scan(self: &Rc<Self>, filter: &'a Plan, e: &'a Expr, inner: &'a Plan, input: &Row) -> Option<Rows<'a>> {
        let (p, alone, negated) = match e {
            Expr::Exists(p, alone) => (&**p, alone.as_deref(), false),
            Expr::Not(inner) => match &**inner {
                Expr::Exists(p, alone) => (&**p, alone.as_deref(), true),
                _ => return None,
            },
            _ => return None,
        };
        let Plan::Bgp(patterns) = inner else { return None };
        let [q] = patterns.as_slice() else { return None };
        let vars: Vec<Var> = [q.s, q.p, q.o].iter().filter_map(|s| s.var()).collect();
        let repeats = vars.iter().enumerate().any(|(i, x)| vars[..i].contains(x));
        if !p.accepts_bindings() || !self.graph_context.borrow().is_empty() || q.o_ranges.is_some() || vars.iter().any(|v| input[*v].is_some()) {
            return None;
        }
        // Tests run the lookups alone this way (`set_hash_join_after(u64::MAX)`).
        if self.hash_after_lookups.get() == Some(u64::MAX) {
            return None;
        }
        let expected = q.alone_rows?;
        if expected < SEMI_JOIN_EARLY_LOOKUPS as f64 {
            return None;
        }
        let (graphs, _, _, one_graph) = self.quad_scope(q, input);
        if !one_graph {
            return None;
        }
        // The rows the pattern gives bind the input's variables and its own.
        let mut like = input.clone();
        for v in &vars {
            like[*v] = Some(TermId(0));
        }
        let max_read = ((expected as usize).saturating_mul(SEMI_JOIN_READ_PER_LOOKUP as usize)).min(SEMI_JOIN_MAX_READ);
        let semi = match self.semi_join_keys(alone.unwrap_or(p), &like, max_read) {
            Ok(Some(semi)) => semi,
            Ok(None) => return None,
            Err(e) => return Some(super::fail(e)),
        };
        // One variable shared, bound by the pattern: each quad probes the
        // set with its id there, no row built.
        let probe = semi.one_var().and_then(|(v, _)| [q.s, q.p, q.o].iter().position(|s| *s == Slot::Var(v)));
        let pattern = QuadPattern { s: q.s.value(input), p: q.p.value(input), o: q.o.value(input), g: graphs[0] };
        if let Some(profile) = &self.profile {
            profile.borrow_mut().insert(filter as *const Plan as usize + SEMI_JOIN_SCAN, 1);
            *profile.borrow_mut().entry(pattern_key(q, LOOKUPS)).or_default() += 1;
        }
        let scan = self.space.scan(pattern);
        Some(Box::new(SemiJoinScan {
            ev: self.clone(),
            q,
            inner,
            input: input.clone(),
            scan,
            batch: QuadBatch::default(),
            at: 0,
            semi,
            probe,
            negated,
            repeats,
            done: false,
        }))
    }

    /// `p`'s rows read alone and hashed for probes by rows like `like`
    /// (`semi_join_of`); a pattern of one quad pattern sharing one
    /// variable with `like` is read as id columns into a set of ids.
    pub(super) fn semi_join_keys(self: &Rc<Self>, p: &'a Plan, like: &Row, max_read: usize) -> crate::error::Result<Option<SemiJoin>> {
        if let Plan::Bgp(patterns) = p {
            if let [r] = patterns.as_slice() {
                if let Some(semi) = self.semi_join_ids(r, like, max_read)? {
                    return Ok(semi);
                }
            }
        }
        self.semi_join_of(p, like, max_read)
    }

    /// `None`: not of that shape; `Some(None)`: past `max_read`.
    fn semi_join_ids(self: &Rc<Self>, r: &'a QuadPlan, like: &Row, max_read: usize) -> crate::error::Result<Option<Option<SemiJoin>>> {
        let slots = [r.s, r.p, r.o];
        let vars: Vec<Var> = slots.iter().filter_map(|s| s.var()).collect();
        let distinct = vars.iter().enumerate().all(|(i, x)| !vars[..i].contains(x));
        let shared: Vec<usize> = (0..3).filter(|i| slots[*i].var().is_some_and(|v| like[v].is_some())).collect();
        let [at] = shared.as_slice() else { return Ok(None) };
        let empty = self.empty_row();
        let (graphs, _, _, one_graph) = self.quad_scope(r, &empty);
        if !distinct || r.o_ranges.is_some() || !one_graph {
            return Ok(None);
        }
        if r.alone_rows.is_some_and(|n| n > max_read as f64) {
            return Ok(Some(None));
        }
        let v = slots[*at].var().expect("a shared slot is a variable");
        let constant = |s: Slot| match s {
            Slot::Const(id) => Some(id),
            Slot::Var(_) => None,
        };
        let mut scan = self.space.scan(QuadPattern { s: constant(r.s), p: constant(r.p), o: constant(r.o), g: graphs[0] });
        let mut ids: FxHashSet<TermId> = FxHashSet::default();
        let mut batch = QuadBatch::default();
        let mut read = 0;
        loop {
            batch.clear();
            let n = scan.next_batch(&mut batch, BATCH_QUADS)?;
            if n == 0 {
                break;
            }
            self.limits.check_weighted(n)?;
            read += n;
            ids.extend(batch.column(*at).iter().copied());
            if read > max_read || ids.len() > SEMI_JOIN_MAX_ROWS {
                return Ok(Some(None));
            }
            self.check_memory(ids.len() * 16)?;
        }
        let dropped = vars.into_iter().filter(|x| *x != v).collect();
        Ok(Some(Some(SemiJoin::of_ids(v, ids, dropped))))
    }
}

/// The rows of a one-pattern BGP that pass a (NOT) EXISTS, read in
/// batches (see `semi_join_scan`).
struct SemiJoinScan<'a> {
    ev: Rc<Evaluator<'a>>,
    q: &'a QuadPlan,
    /// The BGP, whose rows EXPLAIN counts.
    inner: &'a Plan,
    input: Row,
    scan: QuadScan<'a>,
    batch: QuadBatch,
    at: usize,
    semi: SemiJoin,
    /// The pattern's position holding the one shared variable, when the
    /// hashed rows are a set of its ids.
    probe: Option<usize>,
    negated: bool,
    /// A variable repeats in the pattern (`?x :p ?x`): each quad is
    /// checked to bind a row.
    repeats: bool,
    done: bool,
}

impl SemiJoinScan<'_> {
    fn step(&mut self) -> crate::error::Result<Option<Row>> {
        loop {
            if self.at == self.batch.len() {
                self.batch.clear();
                self.at = 0;
                let n = self.scan.next_batch(&mut self.batch, BATCH_QUADS)?;
                if n == 0 {
                    return Ok(None);
                }
                self.ev.limits.check_weighted(n)?;
                if let Some(profile) = &self.ev.profile {
                    let mut profile = profile.borrow_mut();
                    *profile.entry(self.inner as *const Plan as usize).or_default() += n as u64;
                    *profile.entry(pattern_key(self.q, ROWS_OUT)).or_default() += n as u64;
                }
            }
            if let (Some(k), Some((_, ids)), false) = (self.probe, self.semi.one_var(), self.repeats) {
                // Every quad binds the row (no variable repeats): the
                // shared column alone decides, a row built only on a pass.
                let negated = self.negated;
                let column = &self.batch.column(k)[self.at..];
                match column.iter().position(|id| ids.contains(id) != negated) {
                    Some(i) => {
                        let quad = self.batch.quad(self.at + i);
                        self.at += i + 1;
                        return Ok(bind_quad_owned(self.input.clone(), self.q, None, &quad));
                    }
                    None => {
                        self.at = self.batch.len();
                        continue;
                    }
                }
            }
            let quad = self.batch.quad(self.at);
            self.at += 1;
            let Some(row) = bind_quad_owned(self.input.clone(), self.q, None, &quad) else { continue };
            if self.semi.matches(&row, false) != self.negated {
                return Ok(Some(row));
            }
        }
    }
}

impl Iterator for SemiJoinScan<'_> {
    type Item = crate::error::Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let out = self.step();
        if !matches!(out, Ok(Some(_))) {
            self.done = true;
        }
        out.transpose()
    }
}
