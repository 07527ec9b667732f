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
    failed: bool,
    /// What only some aggregates keep, boxed when first needed: a count
    /// per group stays 64 bytes, not 300 (m25's 239k groups moved and
    /// zeroed them all).
    rare: Option<Box<RareState>>,
}

/// MIN and MAX, GROUP_CONCAT, SAMPLE and DISTINCT's state.
#[derive(Default)]
struct RareState {
    best: Option<Term>,
    concat: Option<(String, Option<Option<String>>)>,
    sample: Option<Term>,
    seen: FxHashSet<Option<TermId>>,
}

impl Accumulator {
    fn rare(&mut self) -> &mut RareState {
        self.rare.get_or_insert_with(Default::default)
    }
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
        let mut groups = GroupTable::new(keys.len(), aggregates.len());
        if keys.is_empty() {
            // No GROUP BY: one group, even over no rows.
            groups.group_of(&[]);
        }
        let mut key: Vec<Option<TermId>> = Vec::with_capacity(keys.len());
        for r in self.eval(inner, self.empty_row()) {
            let row = r?;
            key.clear();
            key.extend(keys.iter().map(|v| row[*v]));
            let before = groups.len();
            let at = groups.group_of(&key);
            if groups.len() > before && groups.len().is_multiple_of(4096) {
                self.check_memory(super::rows_bytes(groups.len(), 2 * keys.len() + 8 * aggregates.len()))?;
            }
            for ((_, agg), acc) in aggregates.iter().zip(groups.accumulators(at)) {
                self.accumulate(agg, acc, &row)?;
            }
        }
        let n = groups.len();
        let (group_keys, accumulators) = groups.into_parts();
        let mut out = Vec::with_capacity(n);
        let mut accumulators = accumulators.into_iter();
        for at in 0..n {
            let mut row = self.empty_row();
            for (v, id) in keys.iter().zip(&group_keys[at * keys.len()..(at + 1) * keys.len()]) {
                row[*v] = *id;
            }
            for ((v, agg), acc) in aggregates.iter().zip(accumulators.by_ref()) {
                row[*v] = self.finished(agg, acc)?;
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
        // A union's rows are its two sides' rows, one after the other:
        // each side counted the way it can be (a join's last pattern from
        // its index blocks).
        if let Plan::Union(left, right) = inner {
            return Ok(self.count_rows(left)? + self.count_rows(right)?);
        }
        // An OPTIONAL of one pattern, without a filter: each row on the
        // left counts as the quads that extend it, or once when none does
        // (the pattern's quads counted from its index blocks where they
        // can be, not built into rows).
        if let (Plan::LeftJoin(left, right, None), None) = (inner, &self.profile) {
            if let Plan::Bgp(patterns) = &**right {
                if let [p] = patterns.as_slice() {
                    let pool = super::pattern::ScanPool::default();
                    let mut n = 0;
                    for r in self.eval(left, self.empty_row()) {
                        n += self.count_quad(p, &r?, &pool)?.max(1);
                    }
                    return Ok(n);
                }
            }
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
                // read with it (one seek for both): a subject bound before
                // that pattern (it binds it itself: no star).
                let bound_before = |v: Var, patterns: &[crate::plan::QuadPlan]| {
                    use crate::plan::{GraphSlot, Slot};
                    patterns.iter().any(|q| [q.s, q.p, q.o].iter().any(|slot| slot.var() == Some(v)) || matches!(q.g, GraphSlot::Named(Slot::Var(g)) if g == v))
                };
                let star = last.s.var().is_some_and(|x| {
                    prefix.split_last().is_some_and(|(previous, before)| previous.s == last.s && bound_before(x, before))
                });
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
                if !acc.rare().seen.insert(id) {
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
            if id.is_none() || (agg.distinct && !acc.rare().seen.insert(id)) {
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
            if !acc.rare().seen.insert(id) {
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
                let rare = acc.rare();
                let better = match &rare.best {
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
                    rare.best = Some(t);
                }
            }
            AggregateKind::GroupConcat(sep) => {
                let Term::Literal(l) = &t else {
                    acc.failed = true;
                    return Ok(());
                };
                let lang = l.language().map(str::to_owned);
                let concat = &mut acc.rare().concat;
                match concat {
                    None => *concat = Some((l.value().to_owned(), Some(lang))),
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
                let sample = &mut acc.rare().sample;
                if sample.is_none() {
                    *sample = Some(t);
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

impl Evaluator<'_> {
    /// The id of an aggregate's value: a count's inlined integer made from
    /// the number (writing it out and encoding the literal took a third of
    /// m25's instructions, a count per group of 239k).
    fn finished(&self, agg: &Aggregate, acc: Accumulator) -> Result<Option<TermId>> {
        if matches!(agg.kind, AggregateKind::Count) && !acc.failed {
            if let Some(id) = i64::try_from(acc.count).ok().and_then(rhizome_rdf::term::inline::inline_integer_id) {
                return Ok(Some(id));
            }
        }
        finish(agg, acc).map(|t| self.encode(&t)).transpose()
    }
}

/// The groups of a GROUP BY in the order they first appear, their keys
/// and accumulators in two flat vectors (no allocation per group).
///
/// Input sorted on the keys (a scan in PSO order grouped by subject, and
/// index nested loops keep their left side's order) is grouped as it
/// streams: a row's group is the last one or a new one after it, with no
/// hash table. The first key below the last one (input not sorted after
/// all) hashes the groups made so far, and every later row is looked up.
/// Keys compare as `Option<TermId>` lists; the order only has to be total.
struct GroupTable {
    width: usize,
    aggregates: usize,
    keys: Vec<Option<TermId>>,
    accumulators: Vec<Accumulator>,
    /// Groups made (keys and accumulators may both be empty: no GROUP BY,
    /// no aggregate).
    count: usize,
    /// Each group's key to its number, once the input was found unsorted.
    hashed: Option<KeyIndex>,
}

/// Group numbers by key: a key of one variable in a table indexed by its
/// id while the ids stay dense (`DenseIndex`), else hashed as its id, not
/// as a boxed slice (an allocation and a slice's hash per group).
enum KeyIndex {
    Dense(DenseIndex),
    One(FxHashMap<Option<TermId>, usize>),
    Many(FxHashMap<Box<[Option<TermId>]>, usize>),
}

impl KeyIndex {
    fn get(&self, key: &[Option<TermId>]) -> Option<usize> {
        match self {
            KeyIndex::Dense(table) => table.get(key[0]),
            KeyIndex::One(map) => map.get(&key[0]).copied(),
            KeyIndex::Many(map) => map.get(key).copied(),
        }
    }

    fn insert(&mut self, key: &[Option<TermId>], at: usize) {
        match self {
            KeyIndex::Dense(table) => {
                if !table.insert(key[0], at) {
                    // Too sparse for a table: hashed from now on.
                    let mut map = FxHashMap::with_capacity_and_hasher(2 * (at + 1), Default::default());
                    map.extend(table.groups());
                    map.insert(key[0], at);
                    *self = KeyIndex::One(map);
                }
            }
            KeyIndex::One(map) => {
                map.insert(key[0], at);
            }
            KeyIndex::Many(map) => {
                map.insert(Box::from(key), at);
            }
        }
    }
}

/// Group numbers of one key variable in a table indexed by `id - base`:
/// the ids a scan groups by are mostly numbered together (a loader numbers
/// subjects as it meets them, so a class's instances fill ranges), and a
/// slot costs a few instructions where a hash map's insert, probes and
/// growth cost hundreds (m25: 239k students grouped from POS, sorted by
/// course: the map was a sixth of its instructions). The table stays
/// within [`DENSE_SLOTS_PER_GROUP`] slots a group (and a floor); a key
/// past that makes the caller hash every group instead.
struct DenseIndex {
    base: u64,
    /// Group numbers plus one, 0 where no group has the id (a table of
    /// zeros is allocated zeroed: pages it never touches cost nothing).
    slots: Vec<u32>,
    /// The least and the greatest id of a group (meaningless while
    /// `slots` is empty).
    ids: (u64, u64),
    unbound: Option<usize>,
    groups: usize,
}

/// Slots a dense table may take per group, and at least: 4 MiB, which
/// covers the 764k subjects of the 4.8M-triple Faculty store (the first
/// groups of an unsorted input spread over all the ids their kind has).
const DENSE_SLOTS_PER_GROUP: u64 = 8;
const DENSE_SLOTS_MIN: u64 = 1 << 20;

impl DenseIndex {
    fn new() -> Self {
        DenseIndex { base: 0, slots: Vec::new(), ids: (0, 0), unbound: None, groups: 0 }
    }

    fn get(&self, key: Option<TermId>) -> Option<usize> {
        let Some(id) = key else { return self.unbound };
        let slot = *self.slots.get(usize::try_from(id.0.checked_sub(self.base)?).ok()?)?;
        (slot != 0).then(|| slot as usize - 1)
    }

    /// Records `key`'s group `at` (a key not in the table); `false`, with
    /// nothing recorded, when the table would grow past its bound.
    fn insert(&mut self, key: Option<TermId>, at: usize) -> bool {
        let Some(id) = key else {
            self.unbound = Some(at);
            self.groups += 1;
            return true;
        };
        let Some(slot) = u32::try_from(at).ok().and_then(|at| at.checked_add(1)) else { return false };
        let id = id.0;
        if id == u64::MAX {
            return false;
        }
        if self.slots.is_empty() {
            (self.base, self.ids) = (id, (id, id));
        }
        if id < self.base || id - self.base >= self.slots.len() as u64 {
            // The ids the groups have, with this one: the table's bound
            // is on them, not on the room left around them.
            let (low, high) = (self.ids.0.min(id), self.ids.1.max(id));
            let span = high - low + 1;
            let bound = DENSE_SLOTS_MIN.max(DENSE_SLOTS_PER_GROUP * (self.groups as u64 + 1));
            if span > bound {
                return false;
            }
            // Room for as many ids again on both sides, within the bound: a
            // table growing id by id, or by ids below and above in turn (the
            // first groups of an unsorted input), is not copied each time.
            let slack = span.min((bound - span) / 2);
            let (from, to) = (low.saturating_sub(slack), (high + 1).saturating_add(slack));
            let mut slots = vec![0; (to - from) as usize];
            let (used, at) = ((self.ids.0 - self.base) as usize..(self.ids.1 - self.base) as usize + 1, (self.ids.0 - from) as usize);
            if !self.slots.is_empty() {
                slots[at..at + used.len()].copy_from_slice(&self.slots[used]);
            }
            (self.base, self.slots) = (from, slots);
        }
        self.ids = (self.ids.0.min(id), self.ids.1.max(id));
        self.slots[(id - self.base) as usize] = slot;
        self.groups += 1;
        true
    }

    /// Every key with its group number.
    fn groups(&self) -> impl Iterator<Item = (Option<TermId>, usize)> + '_ {
        let ids = self.slots.iter().enumerate().filter(|(_, g)| **g != 0).map(|(i, g)| (Some(TermId(self.base + i as u64)), *g as usize - 1));
        self.unbound.map(|g| (None, g)).into_iter().chain(ids)
    }
}

impl GroupTable {
    fn new(width: usize, aggregates: usize) -> Self {
        GroupTable { width, aggregates, keys: Vec::new(), accumulators: Vec::new(), count: 0, hashed: None }
    }

    fn len(&self) -> usize {
        self.count
    }

    fn key(&self, at: usize) -> &[Option<TermId>] {
        &self.keys[at * self.width..(at + 1) * self.width]
    }

    /// The number of `key`'s group, made if new.
    fn group_of(&mut self, key: &[Option<TermId>]) -> usize {
        let n = self.count;
        if self.hashed.is_none() {
            match n.checked_sub(1).map(|last| (last, self.key(last).cmp(key))) {
                Some((last, std::cmp::Ordering::Equal)) => return last,
                None | Some((_, std::cmp::Ordering::Less)) => return self.push(key),
                Some((_, std::cmp::Ordering::Greater)) => {
                    // Room for as many groups again as were made in order.
                    let mut index = match self.width {
                        1 => KeyIndex::Dense(DenseIndex::new()),
                        _ => KeyIndex::Many(FxHashMap::with_capacity_and_hasher(2 * n, Default::default())),
                    };
                    for at in 0..n {
                        index.insert(self.key(at), at);
                    }
                    self.hashed = Some(index);
                }
            }
        }
        let hashed = self.hashed.as_mut().expect("hashed above");
        if let Some(at) = hashed.get(key) {
            return at;
        }
        hashed.insert(key, n);
        self.push(key)
    }

    fn push(&mut self, key: &[Option<TermId>]) -> usize {
        let at = self.count;
        self.keys.extend_from_slice(key);
        self.accumulators.extend((0..self.aggregates).map(|_| Accumulator::default()));
        self.count += 1;
        at
    }

    fn accumulators(&mut self, at: usize) -> &mut [Accumulator] {
        &mut self.accumulators[at * self.aggregates..(at + 1) * self.aggregates]
    }

    fn into_parts(self) -> (Vec<Option<TermId>>, Vec<Accumulator>) {
        (self.keys, self.accumulators)
    }
}

fn finish(agg: &Aggregate, acc: Accumulator) -> Option<Term> {
    if acc.failed {
        return None;
    }
    let rare = acc.rare.map(|r| *r).unwrap_or_default();
    match &agg.kind {
        AggregateKind::Count => Some(Literal::from(acc.count as i64).into()),
        AggregateKind::Sum => Some(acc.sum.map_or_else(|| Literal::from(0).into(), Num::into_term)),
        AggregateKind::Avg => match acc.sum {
            None => Some(Literal::from(0).into()),
            Some(s) => num_arithmetic('/', s, Num::Integer((acc.count as i64).into())).map(Num::into_term),
        },
        AggregateKind::Min | AggregateKind::Max => rare.best,
        // A simple literal, even when every value has the same language
        // (the W3C tests agg-groupconcat-4 and -6 say so).
        AggregateKind::GroupConcat(_) => Some(Literal::new_simple_literal(rare.concat.map(|(s, _)| s).unwrap_or_default()).into()),
        AggregateKind::Sample => rare.sample,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key's group number and its accumulators' counts (one
    /// aggregate counting the rows given to it).
    fn grouped(keys: &[&[Option<u64>]]) -> (Vec<Vec<Option<TermId>>>, Vec<u64>, bool) {
        let width = keys.first().map_or(0, |k| k.len());
        let mut table = GroupTable::new(width, 1);
        for k in keys {
            let key: Vec<Option<TermId>> = k.iter().map(|x| x.map(TermId)).collect();
            let at = table.group_of(&key);
            assert_eq!(table.key(at), key.as_slice(), "a row lands in the group of its key");
            table.accumulators(at)[0].count += 1;
        }
        let (n, hashed) = (table.len(), table.hashed.is_some());
        let (flat, accs) = table.into_parts();
        let keys = flat.chunks(width.max(1)).take(n).map(<[_]>::to_vec).collect();
        (keys, accs.iter().map(|a| a.count).collect(), hashed)
    }

    /// Keys in order (an index scan's runs), unbound ones first: a group
    /// per run, no hash table.
    #[test]
    fn sorted_keys_are_grouped_as_they_stream() {
        let (keys, counts, hashed) = grouped(&[&[None], &[None], &[Some(3)], &[Some(3)], &[Some(3)], &[Some(7)], &[Some(9)], &[Some(9)]]);
        assert_eq!(keys, vec![vec![None], vec![Some(TermId(3))], vec![Some(TermId(7))], vec![Some(TermId(9))]]);
        assert_eq!(counts, vec![2, 3, 1, 2]);
        assert!(!hashed);
    }

    /// A key below the last one hashes the groups made so far: a key seen
    /// before (in an earlier run, or unbound) goes back to its group, in
    /// first-seen order, and nothing is counted twice.
    #[test]
    fn unsorted_keys_fall_back_to_hashing_every_group() {
        let (keys, counts, hashed) =
            grouped(&[&[Some(5), Some(1)], &[Some(5), Some(1)], &[Some(5), None], &[Some(2), Some(1)], &[Some(5), Some(1)], &[Some(2), Some(1)], &[Some(5), None], &[Some(8), Some(0)]]);
        let t = |a: u64, b: Option<u64>| vec![Some(TermId(a)), b.map(TermId)];
        assert_eq!(keys, vec![t(5, Some(1)), t(5, None), t(2, Some(1)), t(8, Some(0))]);
        assert_eq!(counts, vec![3, 2, 2, 1]);
        assert!(hashed);
        // One key variable (hashed as an id), unbound after bound.
        let (keys, counts, hashed) = grouped(&[&[Some(4)], &[Some(9)], &[None], &[Some(4)], &[None], &[Some(9)], &[Some(1)]]);
        assert_eq!(keys, [Some(4), Some(9), None, Some(1)].map(|k| vec![k.map(TermId)]));
        assert_eq!(counts, vec![2, 2, 2, 1]);
        assert!(hashed);
    }

    /// One key variable, out of order: its groups in a table by id (beside
    /// the unbound key's) while the ids stay within the table's bound,
    /// then, from an id far past it, in the hash map, with every group
    /// found again; each row counted in its group as first seen.
    #[test]
    fn one_unsorted_key_is_grouped_by_id_until_too_sparse_then_hashed() {
        let id = |i: u64| Some(TermId(0x0200_0000_0000_0000 + i));
        let mut x = 7u64;
        let mut keys: Vec<Option<TermId>> = Vec::new();
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            keys.push(if x % 50 == 0 { None } else { id(x % 900_000) });
        }
        let check = |keys: &[Option<TermId>], dense_at_end: bool| {
            let mut table = GroupTable::new(1, 1);
            let mut first_seen: Vec<Option<TermId>> = Vec::new();
            let mut counts: Vec<u64> = Vec::new();
            for k in keys {
                let at = table.group_of(&[*k]);
                let want = first_seen.iter().position(|f| f == k).unwrap_or_else(|| {
                    first_seen.push(*k);
                    counts.push(0);
                    first_seen.len() - 1
                });
                assert_eq!(at, want, "key {k:?}");
                counts[at] += 1;
                table.accumulators(at)[0].count += 1;
            }
            assert_eq!(table.len(), first_seen.len());
            assert_eq!(table.accumulators.iter().map(|a| a.count).collect::<Vec<_>>(), counts);
            assert_eq!(matches!(table.hashed, Some(KeyIndex::Dense(_))), dense_at_end);
        };
        check(&keys, true);
        // An id far past the others: hashed from there on.
        keys.insert(2500, id(1 << 40));
        keys.extend_from_slice(&keys[..100].to_vec());
        check(&keys, false);
        // Ids below the first ones and then above: the table grows both ways.
        let both: Vec<Option<TermId>> = [500_000, 400_000, 600_000, 1, 899_999, 400_000, 1, 500_000].into_iter().map(id).collect();
        check(&both, true);
    }

    /// No GROUP BY: every row in the one group of the empty key; and no
    /// rows: no group.
    #[test]
    fn the_empty_key_is_one_group_and_no_rows_no_group() {
        let mut table = GroupTable::new(0, 2);
        for _ in 0..3 {
            assert_eq!(table.group_of(&[]), 0);
        }
        assert_eq!((table.len(), table.accumulators(0).len()), (1, 2));
        assert_eq!(grouped(&[]).1, Vec::<u64>::new());
    }
}
