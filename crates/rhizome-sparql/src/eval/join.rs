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
    /// `left_vars`: the variables every row on the left binds. The keys
    /// are those bound on both sides: a key the left rows lack would send
    /// every probe to every right row.
    pub(super) fn build(rows: Vec<Row>, width: usize, left_vars: &[Var]) -> HashedSide {
        let keys: Vec<Var> = (0..width).filter(|v| left_vars.contains(v) && !rows.is_empty() && rows.iter().all(|r| r[*v].is_some())).collect();
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
pub(super) type PerRow<'a> = Box<dyn Fn(&Rc<Evaluator<'a>>, Row) -> Rows<'a> + 'a>;

impl<'a> Evaluator<'a> {
    /// The right side of a nested loop, run once per left row: a BGP or a
    /// path keeps its reusable scans across the rows.
    pub(super) fn per_row(&self, b: &'a Plan) -> PerRow<'a> {
        match b {
            Plan::Bgp(patterns) => {
                let pools = super::pattern::scan_pools(patterns);
                Box::new(move |ev, row| ev.profiled(b, ev.bgp_pooled(patterns, row, &pools)))
            }
            Plan::Path { s, path, o, g } => {
                let scans = super::path::PathScans::default();
                Box::new(move |ev, row| ev.profiled(b, ev.path_pooled(*s, path, *o, *g, row, &scans)))
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

    fn hashed(self: &Rc<Self>, plan: &'a Plan, left: &'a Plan, input: &Row) -> Result<Rc<HashedSide>> {
        let rows = self.materialize(plan)?;
        let mut left_vars = left.certain_vars();
        left_vars.extend((0..input.len()).filter(|v| input[*v].is_some()));
        Ok(Rc::new(HashedSide::build(rows, self.width, &left_vars)))
    }

    pub(super) fn join(self: &Rc<Self>, a: &'a Plan, b: &'a Plan, input: Row) -> Rows<'a> {
        let left = self.eval(a, input.clone());
        if b.accepts_bindings() {
            let ev = self.clone();
            let per_row = self.per_row(b);
            return Box::new(left.flat_map(move |r| match r {
                Ok(row) => per_row(&ev, row),
                Err(e) => fail(e),
            }));
        }
        let right = match self.hashed(b, a, &input) {
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
        let left = self.eval(a, input.clone());
        let ev = self.clone();
        let per_row = self.per_row(b);
        let right = if b.accepts_bindings() {
            None
        } else {
            match self.hashed(b, a, &input) {
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
        if let Some(shared) = minus_key_vars(a, b, &input) {
            match self.anti_join_keys(b, &shared) {
                Err(e) => return fail(e),
                Ok(None) => {}
                Ok(Some(keys)) => {
                    // A left row without a key (the plan's certain variables
                    // wrong) is compared with the right rows as rows.
                    let (ev, mut rows) = (self.clone(), None);
                    return Box::new(self.eval(a, input).filter_map(move |r| match r {
                        Ok(row) => match keys.contains(&shared, &row) {
                            Some(true) => None,
                            Some(false) => Some(Ok(row)),
                            None => {
                                if rows.is_none() {
                                    match ev.materialize(b) {
                                        Ok(right) => rows = Some(SemiJoin::new(right)),
                                        Err(e) => return Some(Err(e)),
                                    }
                                }
                                let anti = rows.as_mut().expect("materialized above");
                                (!anti.matches(&row, true)).then_some(Ok(row))
                            }
                        },
                        Err(e) => Some(Err(e)),
                    }));
                }
            }
        }
        let right: Vec<Row> = match self.materialize(b) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        let mut anti = SemiJoin::new(right);
        Box::new(self.eval(a, input).filter(move |r| match r {
            Ok(row) => !anti.matches(row, true),
            Err(_) => true,
        }))
    }

    /// The values of the right side of a MINUS on its key variables
    /// (`minus_key_vars`), streamed into a set: no row kept, no row
    /// grouped by the variables it binds.
    /// `None`: a right row without a key (the plan's certain variables
    /// wrong), for the rows to be compared as rows.
    fn anti_join_keys(self: &Rc<Self>, b: &'a Plan, shared: &[Var]) -> Result<Option<AntiJoinKeys>> {
        let mut keys = AntiJoinKeys::new(shared.len());
        for (read, r) in self.eval(b, self.empty_row()).enumerate() {
            if !keys.insert(shared, &r?) {
                return Ok(None);
            }
            if read.is_multiple_of(4096) {
                self.check_memory(keys.bytes())?;
            }
        }
        Ok(Some(keys))
    }

    /// `EXISTS { p }` for `row`: looked up with the row's bindings, until
    /// as many rows have been looked up as make reading `p` once whole
    /// likely cheaper; then `p` is read alone (if it has at most
    /// `SEMI_JOIN_MAX_ROWS` solutions) and every later row is one hash
    /// probe on the variables it shares with `p` (a semi-join; NOT EXISTS
    /// is its negation, an anti-join).
    /// `alone`: the same pattern ordered for reading it whole (`p` serves
    /// when `None`).
    pub(crate) fn exists(self: &Rc<Self>, p: &'a Plan, alone: Option<&'a Plan>, row: &Row) -> Result<bool> {
        self.exists_in(p, alone, row, None)
    }

    /// `exists`, its lookups run by `per_row` (scans kept across rows).
    pub(super) fn exists_with(self: &Rc<Self>, p: &'a Plan, alone: Option<&'a Plan>, row: &Row, per_row: &PerRow<'a>) -> Result<bool> {
        self.exists_in(p, alone, row, Some(per_row))
    }

    fn exists_in(self: &Rc<Self>, p: &'a Plan, alone: Option<&'a Plan>, row: &Row, per_row: Option<&PerRow<'a>>) -> Result<bool> {
        let key = p as *const Plan as usize;
        let lookups = {
            let mut states = self.exists_states.borrow_mut();
            let state = match states.get_mut(&key) {
                Some(state) => state,
                None => states.entry(key).or_default(),
            };
            match &mut state.hashed {
                Some(hashed) if hashed.covers(row) => return Ok(hashed.matches(row, false)),
                // A row binding a variable the hashed rows dropped: looked up.
                Some(_) => u64::MAX,
                None => {
                    state.lookups += 1;
                    state.lookups
                }
            }
        };
        // Reading the pattern whole is tried twice: after
        // SEMI_JOIN_EARLY_LOOKUPS lookups reading at most
        // SEMI_JOIN_READ_PER_LOOKUP solutions per lookup made (a small
        // pattern hashed early; a try that gives up costs about what the
        // lookups before it did), then after SEMI_JOIN_AFTER_LOOKUPS with
        // the largest read. Tests set the threshold to run both methods
        // (0: hash at once with the largest read, `u64::MAX`: never).
        let (due, max_read) = match self.hash_after_lookups.get() {
            Some(after) => (lookups == after.max(1), SEMI_JOIN_MAX_READ),
            None if lookups == SEMI_JOIN_EARLY_LOOKUPS => (true, (SEMI_JOIN_EARLY_LOOKUPS * SEMI_JOIN_READ_PER_LOOKUP) as usize),
            None => (lookups == SEMI_JOIN_AFTER_LOOKUPS, SEMI_JOIN_MAX_READ),
        };
        if due && p.accepts_bindings() && self.graph_context.borrow().is_empty() {
            if let Some(mut hashed) = self.semi_join_keys(alone.unwrap_or(p), row, max_read)? {
                let found = hashed.matches(row, false);
                self.exists_states.borrow_mut().entry(key).or_default().hashed = Some(hashed);
                return Ok(found);
            }
        }
        // One lookup; through scans kept across the rows when the caller
        // has them (a BGP re-points its scans instead of opening new ones,
        // and hashes a pattern of it once its lookups cost more).
        let mut rows = match per_row {
            Some(per_row) => per_row(self, row.clone()),
            None => self.eval(p, row.clone()),
        };
        match rows.next() {
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// The rows of an EXISTS pattern evaluated alone, for a semi-join with
    /// rows on the left like `row`: each kept only on the variables `row`
    /// binds (the others can not decide compatibility with such rows) and
    /// only once, so that a pattern of millions of solutions with few
    /// distinct values on the shared variables (`?s :attends ?course`)
    /// hashes small. `None` past `max_read` solutions read or
    /// `SEMI_JOIN_MAX_ROWS` kept.
    pub(super) fn semi_join_of(self: &Rc<Self>, p: &'a Plan, row: &Row, max_read: usize) -> Result<Option<SemiJoin>> {
        let mut kept: rustc_hash::FxHashSet<Row> = rustc_hash::FxHashSet::default();
        let mut dropped = vec![false; self.width];
        for (read, r) in self.eval(p, self.empty_row()).enumerate() {
            let mut r = r?;
            for (v, value) in r.iter_mut().enumerate() {
                if value.is_some() && row[v].is_none() {
                    dropped[v] = true;
                    *value = None;
                }
            }
            kept.insert(r);
            if read >= max_read || kept.len() > SEMI_JOIN_MAX_ROWS {
                return Ok(None);
            }
            if read.is_multiple_of(4096) {
                self.check_memory(super::rows_bytes(2 * kept.len(), self.width))?;
            }
        }
        let mut hashed = SemiJoin::new(kept.into_iter().collect());
        hashed.dropped = (0..self.width).filter(|v| dropped[*v]).collect();
        Ok(Some(hashed))
    }
}

/// The variables a MINUS can decide its rows on by their values alone:
/// those both sides bind in every row, when no other variable may be bound
/// on both sides. Every left row and every right row then share exactly
/// these (at least one), so a right row removes a left row (compatible,
/// sharing a variable: SPARQL 1.1 section 18.5, Minus) exactly when their
/// values there are equal. `None`: rows that may share other variables,
/// or none, are compared as rows.
fn minus_key_vars(a: &Plan, b: &Plan, input: &Row) -> Option<Vec<Var>> {
    let bound = (0..input.len()).filter(|v| input[*v].is_some());
    let mut left_certain = a.certain_vars();
    left_certain.extend(bound.clone());
    let mut left_possible = a.possible_vars()?;
    left_possible.extend(bound);
    let (right_certain, right_possible) = (b.certain_vars(), b.possible_vars()?);
    let shared: Vec<Var> = right_certain.iter().copied().filter(|v| left_certain.contains(v)).collect();
    let may_share = right_possible.iter().filter(|v| left_possible.contains(v)).count();
    (!shared.is_empty() && may_share == shared.len()).then_some(shared)
}

/// The right side of a MINUS as its values on the key variables, in a set
/// sized to the key (one or two ids inline, more boxed).
enum AntiJoinKeys {
    One(rustc_hash::FxHashSet<TermId>),
    Two(rustc_hash::FxHashSet<[TermId; 2]>),
    Many(rustc_hash::FxHashSet<Box<[TermId]>>),
}

impl AntiJoinKeys {
    fn new(width: usize) -> Self {
        match width {
            1 => AntiJoinKeys::One(Default::default()),
            2 => AntiJoinKeys::Two(Default::default()),
            _ => AntiJoinKeys::Many(Default::default()),
        }
    }

    /// `row`'s values on `vars`; `None` if one is unbound.
    fn key<const N: usize>(vars: &[Var], row: &Row) -> Option<[TermId; N]> {
        let mut key = [TermId(0); N];
        for (k, v) in key.iter_mut().zip(vars) {
            *k = row[*v]?;
        }
        Some(key)
    }

    /// False if `row` leaves a key variable unbound.
    fn insert(&mut self, vars: &[Var], row: &Row) -> bool {
        match self {
            AntiJoinKeys::One(set) => Self::key::<1>(vars, row).map(|[k]| set.insert(k)).is_some(),
            AntiJoinKeys::Two(set) => Self::key(vars, row).map(|k| set.insert(k)).is_some(),
            AntiJoinKeys::Many(set) => vars.iter().map(|v| row[*v]).collect::<Option<Box<[TermId]>>>().map(|k| set.insert(k)).is_some(),
        }
    }

    /// Whether a right row has `row`'s values on `vars`; `None` if `row`
    /// leaves one unbound.
    fn contains(&self, vars: &[Var], row: &Row) -> Option<bool> {
        Some(match self {
            AntiJoinKeys::One(set) => set.contains(&Self::key::<1>(vars, row)?[0]),
            AntiJoinKeys::Two(set) => set.contains(&Self::key(vars, row)?),
            AntiJoinKeys::Many(set) => set.contains(vars.iter().map(|v| row[*v]).collect::<Option<Vec<TermId>>>()?.as_slice()),
        })
    }

    /// Estimated bytes held.
    fn bytes(&self) -> usize {
        match self {
            AntiJoinKeys::One(set) => set.capacity() * 16,
            AntiJoinKeys::Two(set) => set.capacity() * 24,
            AntiJoinKeys::Many(set) => set.iter().next().map_or(0, |k| set.capacity() * (24 + 8 * k.len())),
        }
    }
}

/// EXISTS lookups made before reading the pattern whole is first tried,
/// reading as many solutions as those lookups cost.
pub(super) const SEMI_JOIN_EARLY_LOOKUPS: u64 = 256;
/// Solutions the early try reads per lookup made: a lookup (at least one
/// seek per pattern) costs what reading ten to twenty solutions in order
/// does.
pub(super) const SEMI_JOIN_READ_PER_LOOKUP: u64 = 16;
/// EXISTS lookups made before reading the pattern whole is tried again
/// with the largest read: a lookup costs about what reading a few hundred
/// quads in order does.
const SEMI_JOIN_AFTER_LOOKUPS: u64 = 1024;
/// The most distinct solutions (on the variables shared with the left) an
/// EXISTS pattern may have to be hashed.
pub(super) const SEMI_JOIN_MAX_ROWS: usize = 1 << 18;
/// The most solutions read to hash an EXISTS pattern. A solution read in
/// order costs a tenth to a twentieth of a lookup, so this is what
/// 100,000-200,000 lookups cost: paid once, and wasted only when the left
/// side ends soon after the lookups that triggered it.
pub(super) const SEMI_JOIN_MAX_READ: usize = 1 << 21;

/// An EXISTS pattern's evaluation state (per query and pattern).
#[derive(Default)]
pub struct ExistsState {
    lookups: u64,
    hashed: Option<SemiJoin>,
}

/// The rows of a pattern, grouped by the variables they bind, for probes
/// by a row on the variables both bind: the right side of a MINUS, or an
/// EXISTS pattern read whole.
pub struct SemiJoin {
    groups: Vec<AntiGroup>,
    /// Variables the rows were bound on but no longer hold (`semi_join_of`):
    /// a left row binding one of them is not decided here.
    dropped: Vec<Var>,
    /// Buffers of `matches`: the variables a group and the left row share,
    /// and the left row's values on them.
    shared: Vec<Var>,
    key: Vec<TermId>,
}

struct AntiGroup {
    vars: Vec<Var>,
    rows: Vec<Row>,
    /// Per list of shared variables (those of the group a left row also
    /// binds): the right rows' values on them. Nearly always one list (the
    /// left rows bind the same variables), found by comparing it, not by
    /// hashing it on every probe.
    by_shared: Vec<(Vec<Var>, SharedValues)>,
}

/// The right rows' values on a list of shared variables: one id each when
/// they share one variable (the common case), no vector hashed per probe.
enum SharedValues {
    One(rustc_hash::FxHashSet<TermId>),
    Many(rustc_hash::FxHashSet<Vec<TermId>>),
}

impl SemiJoin {
    fn new(rows: Vec<Row>) -> SemiJoin {
        let mut index: FxHashMap<Vec<Var>, usize> = FxHashMap::default();
        let mut groups: Vec<AntiGroup> = Vec::new();
        for r in rows {
            let vars: Vec<Var> = (0..r.len()).filter(|v| r[*v].is_some()).collect();
            let i = *index.entry(vars.clone()).or_insert_with(|| {
                groups.push(AntiGroup { vars, rows: Vec::new(), by_shared: Vec::new() });
                groups.len() - 1
            });
            groups[i].rows.push(r);
        }
        // One variable shared (`EXISTS { ?s :p ?o }` kept on `?s`): its
        // values hashed now, for `matches`' shortest path.
        for g in &mut groups {
            if let [v] = *g.vars.as_slice() {
                let values = SharedValues::One(g.rows.iter().map(|r| r[v].expect("group vars are bound")).collect());
                g.by_shared.push((vec![v], values));
            }
        }
        SemiJoin { groups, dropped: Vec::new(), shared: Vec::new(), key: Vec::new() }
    }

    /// The rows of a pattern that share one variable `v` with the rows
    /// that probe them, as the set of their ids there; `dropped`: the
    /// pattern's other variables (a row binding one is not decided here).
    pub(super) fn of_ids(v: Var, ids: rustc_hash::FxHashSet<TermId>, dropped: Vec<Var>) -> SemiJoin {
        let groups = if ids.is_empty() {
            Vec::new()
        } else {
            // No rows kept: a group of one variable is probed through its
            // set alone (`matches` builds other lists only for groups of
            // several variables).
            vec![AntiGroup { vars: vec![v], rows: Vec::new(), by_shared: vec![(vec![v], SharedValues::One(ids))] }]
        };
        SemiJoin { groups, dropped, shared: Vec::new(), key: Vec::new() }
    }

    /// The variable and the set of ids, when the rows are one group on
    /// one variable (the shape `matches` answers by one set lookup).
    pub(super) fn one_var(&self) -> Option<(Var, &rustc_hash::FxHashSet<TermId>)> {
        match self.groups.as_slice() {
            [AntiGroup { vars, by_shared, .. }] => match (vars.as_slice(), by_shared.as_slice()) {
                ([v], [(_, SharedValues::One(ids))]) => Some((*v, ids)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `left` binds none of the variables the rows dropped.
    fn covers(&self, left: &Row) -> bool {
        self.dropped.iter().all(|v| left[*v].is_none())
    }

    /// Whether some row agrees with `left` on every variable both bind
    /// (compatible), sharing at least one when `shared_needed` (MINUS).
    /// Called once per left row: the shared variables and the key are
    /// gathered in reused buffers, so a probe allocates nothing.
    pub(super) fn matches(&mut self, left: &Row, shared_needed: bool) -> bool {
        if let [AntiGroup { vars, by_shared, .. }] = self.groups.as_slice() {
            if let ([v], [(_, SharedValues::One(values))]) = (vars.as_slice(), by_shared.as_slice()) {
                if let Some(x) = left[*v] {
                    return values.contains(&x);
                }
            }
        }
        let (shared, key) = (&mut self.shared, &mut self.key);
        for g in &mut self.groups {
            shared.clear();
            shared.extend(g.vars.iter().copied().filter(|v| left[*v].is_some()));
            if shared.is_empty() {
                if shared_needed {
                    continue;
                }
                return true; // a row compatible with any
            }
            let at = match g.by_shared.iter().position(|(vars, _)| vars == shared) {
                Some(at) => at,
                None => {
                    let values = match shared.as_slice() {
                        [v] => SharedValues::One(g.rows.iter().map(|r| r[*v].expect("group vars are bound")).collect()),
                        _ => SharedValues::Many(g.rows.iter().map(|r| shared.iter().map(|v| r[*v].expect("group vars are bound")).collect()).collect()),
                    };
                    g.by_shared.push((shared.clone(), values));
                    g.by_shared.len() - 1
                }
            };
            let found = match &g.by_shared[at].1 {
                SharedValues::One(set) => set.contains(&left[shared[0]].expect("shared vars are bound on the left")),
                SharedValues::Many(set) => {
                    key.clear();
                    key.extend(shared.iter().map(|v| left[*v].expect("shared vars are bound on the left")));
                    set.contains(key.as_slice())
                }
            };
            if found {
                return true;
            }
        }
        false
    }
}
