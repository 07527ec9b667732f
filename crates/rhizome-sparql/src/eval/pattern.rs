//! Quad patterns: one index scan per pattern, bound from the row on the
//! left; basic graph patterns as chains of such scans (index nested loops).

use super::star::SubjectRuns;
use super::{one, Evaluator, Rows};
use crate::error::Result;
use crate::plan::{GraphSlot, Plan, QuadPlan, Row, Slot, Var};
use rhizome_rdf::{QuadPattern, TermId};
use std::rc::Rc;
use std::sync::Arc;

impl<'a> Evaluator<'a> {
    pub(super) fn bgp(self: &Rc<Self>, patterns: &'a [QuadPlan], input: Row) -> Rows<'a> {
        self.bgp_pooled(patterns, input, &scan_pools(patterns))
    }

    /// A BGP evaluated with given reusable scans, one pool per pattern
    /// ([`scan_pools`]): a BGP evaluated once per row on the left (the right
    /// side of a join or OPTIONAL) keeps its pools across rows, so each row
    /// re-points scans instead of opening RocksDB iterators.
    pub(super) fn bgp_pooled(self: &Rc<Self>, patterns: &'a [QuadPlan], input: Row, pools: &[ScanPool<'a>]) -> Rows<'a> {
        // Variables bound before each pattern runs.
        let mut bound: Vec<bool> = input.iter().map(Option::is_some).collect();
        let (mut rows, merged) = match self.merge_leading(patterns, &input) {
            Some((rows, merged)) => {
                let last = &patterns[*merged.iter().max().expect("a merge joins patterns")];
                (self.counted(rows, pattern_key(last, ROWS_OUT)), merged)
            }
            None => (one(input), Vec::new()),
        };
        for &i in &merged {
            if let Some(v) = patterns[i].s.var() {
                bound[v] = true;
            }
        }
        let mut i = 0;
        while i < patterns.len() {
            if merged.contains(&i) {
                i += 1;
                continue;
            }
            let star = self.star_len(patterns, i, &merged, &bound);
            // A pattern whose variables are all bound before it (its graph
            // the default) only tests the rows: each passes as many times
            // as it has quads, counted, with no iterator per row.
            let test_only = star == 1 && {
                let p = &patterns[i];
                matches!(p.g, GraphSlot::Default) && [p.s, p.p, p.o].iter().all(|slot| slot.var().is_none_or(|v| bound[v]))
            };
            for p in &patterns[i..i + star] {
                for s in [p.s, p.p, p.o] {
                    if let Some(v) = s.var() {
                        bound[v] = true;
                    }
                }
                if let GraphSlot::Named(Slot::Var(v)) = p.g {
                    bound[v] = true;
                }
            }
            let ev = self.clone();
            rows = self.counted(rows, pattern_key(&patterns[i], LOOKUPS));
            if star > 1 {
                let (group, group_pools) = (&patterns[i..i + star], pools[i..i + star].to_vec());
                rows = Box::new(rows.flat_map(move |r| match r {
                    Ok(row) => ev.star_lookup(group, row, &group_pools),
                    Err(e) => super::fail(e),
                }));
            } else if test_only {
                let (p, pool) = (&patterns[i], pools[i].clone());
                rows = Box::new(TestedRows { ev, rows, p, pool, repeat: None });
            } else {
                let (p, pool) = (&patterns[i], pools[i].clone());
                let same_scope = matches!(p.g, GraphSlot::Default).then(|| self.quad_scope(p, &self.empty_row()));
                let one_graph = same_scope.and_then(|(graphs, skip_default, graph_var, hashable)| match *graphs {
                    [g] => Some(Scope { g, bind: Binding { p, graph_var, skip_default }, hashable }),
                    _ => None,
                });
                rows = Box::new(PatternJoin { ev, rows, p, pool, one_graph, current: None, graphs: None });
            }
            rows = self.counted(rows, pattern_key(&patterns[i + star - 1], ROWS_OUT));
            i += star;
        }
        rows
    }

    /// `rows`, counted under `key` when explaining.
    fn counted(self: &Rc<Self>, rows: Rows<'a>, key: usize) -> Rows<'a> {
        if self.profile.is_none() {
            return rows;
        }
        let ev = self.clone();
        Box::new(rows.inspect(move |_| {
            if let Some(c) = &ev.profile {
                *c.borrow_mut().entry(key).or_default() += 1;
            }
        }))
    }

    /// How many patterns from `i` on form a star around a subject variable
    /// bound before them (`?x :p ?a ; :q ?b` with `?x` bound): constant
    /// predicates, one graph fixed for the query, no object ranges. At
    /// least 1.
    fn star_len(&self, patterns: &[QuadPlan], i: usize, merged: &[usize], bound: &[bool]) -> usize {
        let fits = |p: &QuadPlan, x: Var| {
            p.s == Slot::Var(x)
                && matches!(p.p, Slot::Const(_))
                && p.o != Slot::Var(x)
                && p.o_ranges.is_none()
                && p.g == patterns[i].g
                && matches!(p.g, GraphSlot::Default | GraphSlot::Named(Slot::Const(_)))
        };
        let Some(x) = patterns[i].s.var().filter(|x| bound[*x] && fits(&patterns[i], *x)) else { return 1 };
        let (graphs, skip_default) = self.graphs_of(patterns[i].g, &self.empty_row());
        if graphs.len() != 1 || skip_default {
            return 1;
        }
        1 + patterns[i + 1..].iter().enumerate().take_while(|(k, p)| !merged.contains(&(i + 1 + k)) && fits(p, x)).count()
    }

    /// A star of patterns on one bound subject: the subject's quads read
    /// with one seek instead of one lookup per pattern, then matched to
    /// the patterns in memory as nested loops would. A subject with more
    /// quads than `STAR_MAX_QUADS` goes back to a lookup per pattern.
    fn star_lookup(self: &Rc<Self>, group: &'a [QuadPlan], row: Row, pools: &[ScanPool<'a>]) -> Rows<'a> {
        let first = &group[0];
        let subject = first.s.value(&row).expect("a star's subject is bound");
        let (graphs, _) = self.graphs_of(first.g, &row);
        let Some(&g) = graphs.first() else { return Box::new(std::iter::empty()) };
        let pattern = QuadPattern { s: Some(subject), p: None, o: None, g };
        let mut quads = std::mem::take(&mut pools[0].borrow_mut().star_quads);
        quads.clear();
        if let Err(e) = self.limits.check() {
            return super::fail(e);
        }
        // The subject's quads are read whole (up to STAR_MAX_QUADS): through
        // the star's one cursor over the subjects (`SubjectRuns`), else by a
        // lookup, in batches from the first quad.
        let runs = {
            let mut state = pools[0].borrow_mut();
            if !state.subject_runs_tried {
                state.subject_runs_tried = true;
                state.subject_runs = SubjectRuns::new(self.space.lookup_scan(QuadPattern { s: None, ..pattern }));
            }
            state.subject_runs.take()
        };
        if let Some(mut runs) = runs {
            let read = runs.quads_of(subject, &mut quads, STAR_MAX_QUADS);
            pools[0].borrow_mut().subject_runs = Some(runs);
            if let Err(e) = read {
                return super::fail(e);
            }
        } else {
            let mut lookup = Lookup::new(self, &pools[0], pattern);
            lookup.singles_left = 0;
            for q in lookup {
                if let Err(e) = self.limits.check() {
                    return super::fail(e);
                }
                match q {
                    Ok(q) => quads.push(q),
                    Err(e) => return super::fail(e.into()),
                }
                if quads.len() > STAR_MAX_QUADS {
                    break;
                }
            }
        }
        if quads.len() > STAR_MAX_QUADS {
            let mut rows = one(row);
            for (p, pool) in group.iter().zip(pools) {
                let (ev, pool) = (self.clone(), pool.clone());
                rows = Box::new(rows.flat_map(move |r| match r {
                    Ok(row) => ev.scan_quad(p, row, &pool),
                    Err(e) => super::fail(e),
                }));
            }
            return rows;
        }
        let mut rows = vec![row];
        for p in group {
            let (pred, object) = (p.p.value(&rows[0]), p.o.value(&rows[0]).filter(|_| p.o.var().is_none()));
            let mut matching = quads.iter().filter(|q| Some(q[1]) == pred && object.is_none_or(|o| q[2] == o));
            match (matching.next(), matching.clone().next()) {
                (None, _) => rows.clear(),
                // One quad (a single-valued property): each row extended in
                // place, nothing copied.
                (Some(q), None) => rows.retain_mut(|r| bind_in_place(r, p, None, q)),
                (Some(_), Some(_)) => {
                    let mut next = Vec::new();
                    for r in &rows {
                        for q in quads.iter().filter(|q| Some(q[1]) == pred && object.is_none_or(|o| q[2] == o)) {
                            next.extend(bind_quad(r, p, None, q));
                        }
                    }
                    rows = next;
                }
            }
            if rows.is_empty() {
                break;
            }
        }
        pools[0].borrow_mut().star_quads = quads;
        Box::new(rows.into_iter().map(Ok))
    }

    /// A merge join for the patterns of a BGP that bind only the first
    /// pattern's subject variable, their predicate and object being bound
    /// (`?x a :A . ?x a :B`, `?x :p :o . ?x a :C`): each such scan comes out
    /// of the POS index sorted by subject, so they are intersected by
    /// leapfrogging (a seek per scan only when it is behind), instead of one
    /// index lookup per row of the first. Returns the rows (input plus the
    /// subject) and the indexes of the patterns it answered.
    fn merge_leading(self: &Rc<Self>, patterns: &'a [QuadPlan], input: &Row) -> Option<(Rows<'a>, Vec<usize>)> {
        let subject_var = |p: &QuadPlan| -> Option<Var> {
            let v = p.s.var()?;
            if input[v].is_some() || p.p.value(input).is_none() || p.o.value(input).is_none() || self.graph_var_to_bind(p.g).is_some() {
                return None;
            }
            Some(v)
        };
        let x = subject_var(patterns.first()?)?;
        let merged: Vec<usize> = patterns.iter().enumerate().filter(|(_, p)| subject_var(p) == Some(x)).map(|(i, _)| i).collect();
        if merged.len() < 2 {
            return None;
        }
        let mut scans = Vec::with_capacity(merged.len());
        for &i in &merged {
            let p = &patterns[i];
            let (graphs, skip_default) = self.graphs_of(p.g, input);
            if graphs.len() != 1 || skip_default {
                return None;
            }
            let scan = self.space.scan(QuadPattern { s: None, p: p.p.value(input), o: p.o.value(input), g: graphs[0] });
            if !scan.sorted_by(0) {
                return None;
            }
            scans.push(Peek { scan, head: None, started: false });
        }
        let rows = MergeIntersect { ev: self.clone(), scans, row: input.clone(), var: x, pending: 0, done: false };
        Some((Box::new(rows), merged))
    }

    /// `SELECT DISTINCT ?v { one pattern }` where the index the pattern
    /// scans is ordered by `?v` first (`?t` in `?s a ?t`): one seek per
    /// distinct value, past all the quads that repeat it (a skip scan).
    /// `None` when the pattern does not allow it.
    pub(super) fn distinct_values(self: &Rc<Self>, p: &'a QuadPlan, v: Var) -> Option<Rows<'a>> {
        let slots = [p.s, p.p, p.o];
        let vars: Vec<Var> = slots.iter().filter_map(|s| s.var()).collect();
        let distinct = vars.iter().enumerate().all(|(i, x)| !vars[..i].contains(x));
        let component = slots.iter().position(|s| *s == Slot::Var(v))?;
        if !distinct || p.o_ranges.is_some() || self.graph_var_to_bind(p.g).is_some() {
            return None;
        }
        let empty = self.empty_row();
        let (graphs, skip_default) = self.graphs_of(p.g, &empty);
        let ([graph], false) = (&*graphs, skip_default) else { return None };
        let scan = self.space.scan(QuadPattern { s: p.s.value(&empty), p: p.p.value(&empty), o: p.o.value(&empty), g: *graph });
        if !scan.sorted_by(component) {
            return None;
        }
        Some(Box::new(SkipScan { ev: self.clone(), scan, component, var: v, next: None, done: false }))
    }

    fn named_allowed(&self, g: TermId) -> bool {
        g != TermId::DEFAULT_GRAPH && self.dataset.named.as_ref().is_none_or(|list| list.contains(&g))
    }

    /// The graphs a pattern scans (`None`: every graph at once) and whether
    /// quads of the plain default graph must be skipped.
    pub(super) fn graphs_of(&self, g: GraphSlot, row: &Row) -> (Graphs, bool) {
        match g {
            GraphSlot::Default => match &self.dataset.default {
                None => (Graphs::One([self.space.default_graph()]), false),
                Some(list) => (Graphs::Many(list.iter().map(|g| Some(*g)).collect()), false),
            },
            GraphSlot::Named(slot) => match slot.value(row).or_else(|| slot.var().and_then(|v| self.graph_context.borrow().get(&v).copied())) {
                Some(g) => (if self.named_allowed(g) { Graphs::One([Some(g)]) } else { Graphs::Many(Vec::new()) }, false),
                None => match &self.dataset.named {
                    Some(list) => (Graphs::Many(list.iter().map(|g| Some(*g)).collect()), false),
                    None => (Graphs::One([None]), true),
                },
            },
        }
    }

    /// The variable a pattern binds to its quads' graph; not the hidden
    /// variable of a `GraphLoop`, whose graph is set by the loop (binding it
    /// would make MINUS and joins inside see a variable they do not have).
    pub(super) fn graph_var_to_bind(&self, g: GraphSlot) -> Option<Var> {
        match g {
            GraphSlot::Named(Slot::Var(v)) if !self.graph_context.borrow().contains_key(&v) => Some(v),
            _ => None,
        }
    }

    /// Every named graph of the dataset (listed once per query; without
    /// FROM NAMED, by a skip scan with one seek per graph).
    pub(super) fn named_graphs(&self) -> Result<Rc<Vec<TermId>>> {
        if let Some(list) = &*self.named_graphs.borrow() {
            return Ok(list.clone());
        }
        let list = match &self.dataset.named {
            Some(list) => list.clone(),
            None => self.space.graph_names()?.into_iter().filter(|g| *g != TermId::DEFAULT_GRAPH).collect(),
        };
        let list = Rc::new(list);
        *self.named_graphs.borrow_mut() = Some(list.clone());
        Ok(list)
    }

    /// Where a row's lookup of `p` reads: the graphs, whether the default
    /// graph's quads are skipped, the graph variable it binds, and whether
    /// the pattern may be hashed (one graph, nothing bound from it).
    #[inline]
    pub(super) fn quad_scope(&self, p: &QuadPlan, row: &Row) -> (Graphs, bool, Option<Var>, bool) {
        // The common case, once per row on the left: the one default graph.
        if p.g == GraphSlot::Default && self.dataset.default.is_none() {
            return (Graphs::One([self.space.default_graph()]), false, None, true);
        }
        let (graphs, skip_default) = self.graphs_of(p.g, row);
        let graph_var = self.graph_var_to_bind(p.g);
        let hashable = graphs.len() == 1 && !skip_default && graph_var.is_none() && matches!(p.g, GraphSlot::Default | GraphSlot::Named(Slot::Const(_)));
        (graphs, skip_default, graph_var, hashable)
    }

    fn scan_quad(self: &Rc<Self>, p: &'a QuadPlan, row: Row, pool: &ScanPool<'a>) -> Rows<'a> {
        let (graphs, skip_default, graph_var, hashable) = self.quad_scope(p, &row);
        let bind = Binding { p, graph_var, skip_default };
        if let [g] = *graphs {
            // The common case, a row on the left looking up one graph: one
            // iterator, allocated once per row.
            return self.pattern_rows(bind, row, pool, g, hashable);
        }
        let (ev, pool) = (self.clone(), pool.clone());
        Box::new(graphs.to_vec().into_iter().flat_map(move |g| ev.pattern_rows(bind, row.clone(), &pool, g, false)))
    }

    /// The rows `row` extends to with the pattern's quads in graph `g`
    /// (`None`: every graph).
    fn pattern_rows(self: &Rc<Self>, bind: Binding<'a>, row: Row, pool: &ScanPool<'a>, g: Option<TermId>, hashable: bool) -> Rows<'a> {
        let quads = match self.pattern_quads(bind.p, &row, pool, g, hashable) {
            Err(e) => return super::fail(e),
            // A probe that misses costs no allocation (an empty iterator
            // boxes nothing).
            Ok(None) => return Box::new(std::iter::empty()),
            Ok(Some(quads)) => quads,
        };
        Box::new(PatternRows { ev: self.clone(), bind, row: Some(row), quads, ahead: None })
    }

    /// Where the quads of `p` in graph `g` that `row` may extend to come
    /// from: a group of the pattern hashed, or a lookup (`None`: a probe
    /// of the hashed pattern that found nothing). Inlined: its large value
    /// is then built where the caller keeps it, not moved once per lookup.
    #[inline(always)]
    fn pattern_quads(self: &Rc<Self>, p: &'a QuadPlan, row: &Row, pool: &ScanPool<'a>, g: Option<TermId>, hashable: bool) -> Result<Option<PatternQuads<'a>>> {
        let pattern = QuadPattern { s: p.s.value(row), p: p.p.value(row), o: p.o.value(row), g };
        match self.hashed_group(p, pool, pattern, hashable)? {
            Some(found) => Ok(found),
            None => Ok(Some(self.lookup_quads(p, pool, pattern))),
        }
    }

    /// The group of the pattern hashed that `pattern` (the row's values)
    /// probes (`Some(None)`: none), or `None` when the pattern is not
    /// hashed (yet): the caller looks up.
    #[inline(always)]
    fn hashed_group(self: &Rc<Self>, p: &'a QuadPlan, pool: &ScanPool<'a>, pattern: QuadPattern, hashable: bool) -> Result<Option<Option<PatternQuads<'a>>>> {
        if !hashable {
            return Ok(None);
        }
        Ok(self.hashed_pattern(p, pool, pattern)?.map(|hashed| {
            let group = hashed.group(pattern);
            (!group.is_empty()).then(|| PatternQuads::Hashed(hashed, group))
        }))
    }

    /// A lookup of `pattern`'s quads (its object restricted to the
    /// pattern's ranges when unbound).
    #[inline(always)]
    fn lookup_quads(&self, p: &'a QuadPlan, pool: &ScanPool<'a>, pattern: QuadPattern) -> PatternQuads<'a> {
        let mut scan = Lookup::new(self, pool, pattern);
        if pattern.o.is_none() {
            if let Some(ranges) = &p.o_ranges {
                scan.restrict(ranges.clone(), pattern.s.is_some());
            }
        }
        PatternQuads::Lookup(Box::new(scan))
    }

    /// How many rows `row` extends to with the quads of `p`, without
    /// building them: what `scan_quad(p, row, pool).count()` gives, for a
    /// COUNT over a BGP whose last pattern binds nothing read above it.
    pub(super) fn count_quad(self: &Rc<Self>, p: &'a QuadPlan, row: &Row, pool: &ScanPool<'a>) -> Result<u64> {
        let (graphs, skip_default, graph_var, hashable) = self.quad_scope(p, row);
        // A free variable repeated: a quad extends the row only where its
        // positions agree. Every quad of a lookup counts when none repeats
        // and there is no graph to skip or bind and no object range to
        // filter: the index's blocks count them without reading them, when
        // they can.
        let [s, pr, o] = [p.s, p.p, p.o].map(|slot| slot.var().filter(|v| row[*v].is_none()));
        let repeats = (s.is_some() && (s == pr || s == o)) || (pr.is_some() && pr == o);
        let every_quad_counts = !skip_default && graph_var.is_none() && !repeats && (p.o_ranges.is_none() || o.is_none());
        let mut n = 0;
        for &g in graphs.iter() {
            let pattern = QuadPattern { s: p.s.value(row), p: p.p.value(row), o: p.o.value(row), g };
            let found = match self.hashed_group(p, pool, pattern, hashable)? {
                Some(found) => found,
                None => {
                    // A scan kept from an earlier lookup counts without
                    // moving; the first lookup reads (and leaves its scan).
                    let counted = match pool.borrow().scans.last() {
                        Some(scan) if every_quad_counts => scan.count_pattern(pattern)?,
                        _ => None,
                    };
                    if let Some(k) = counted {
                        self.limits.check_weighted(k as usize)?;
                        n += k;
                        continue;
                    }
                    Some(self.lookup_quads(p, pool, pattern))
                }
            };
            let Some(mut quads) = found else { continue };
            if let PatternQuads::Hashed(_, group) = &quads {
                // The group agrees with the row on every position the row
                // binds (its key), and the graph is not bound: each quad
                // extends the row unless a free variable repeats.
                if !repeats {
                    self.limits.check_weighted(group.len())?;
                    n += group.len() as u64;
                    continue;
                }
            }
            while let Some(quad) = quads.next_quad()? {
                self.limits.check()?;
                if !(skip_default && quad[3] == TermId::DEFAULT_GRAPH) && quad_agrees(row, p, graph_var, &quad) {
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// The pattern's quads hashed for a hash join, once the lookups made
    /// with the same positions bound from the left have cost about what
    /// reading the pattern whole does (`QuadPlan::alone_rows`): from then
    /// on each row on the left is a probe instead of an index seek. Deciding
    /// by lookups made, not by the planner's guess of the left side's rows
    /// alone, bounds what a wrong guess costs: twice the better plan, or
    /// five times where the guess made it hash sooner (`TRUST_EARLY`).
    /// `None`: keep looking up (too few lookups, nothing bound from the
    /// left, or the pattern too large to hold).
    fn hashed_pattern(self: &Rc<Self>, p: &'a QuadPlan, pool: &ScanPool<'a>, pattern: QuadPattern) -> Result<Option<Rc<HashedQuads>>> {
        let bound_from_left = |slot: Slot, value: Option<TermId>| slot.var().is_some() && value.is_some();
        let mask = u8::from(bound_from_left(p.s, pattern.s)) | u8::from(bound_from_left(p.p, pattern.p)) << 1 | u8::from(bound_from_left(p.o, pattern.o)) << 2;
        let Some(alone) = p.alone_rows else { return Ok(None) };
        let mut state = pool.borrow_mut();
        if mask == 0 || state.refused & (1 << mask) != 0 {
            return Ok(None);
        }
        if let Some(h) = &state.hashed[usize::from(mask)] {
            return Ok(Some(h.clone()));
        }
        let lookups = &mut state.lookups[usize::from(mask)];
        *lookups += 1;
        let threshold = match self.hash_after_lookups.get() {
            Some(n) => n as f64,
            None => {
                let even = (alone / HASH_AFTER_QUADS_PER_LOOKUP).max(MIN_LOOKUPS_BEFORE_HASH);
                let whole_store = self.dataset.default.is_none() && self.space.default_graph().is_none();
                // The lookups to come are counted, not guessed, and cost
                // more than reading the pattern: hashed at once. Else, the
                // planner expecting many more lookups than that: hashed
                // sooner (ski rental with a prediction: right, the join
                // costs 1 + TRUST_EARLY of the better plan instead of 2;
                // wrong, at most 1 + 1 / TRUST_EARLY, and only when the
                // lookups end between the two thresholds).
                if p.left_rows_counted && whole_store && p.left_rows.is_some_and(|rows| rows >= even) {
                    0.0
                } else if p.left_rows.is_some_and(|rows| rows >= 2.0 * even) {
                    (even * TRUST_EARLY).max(MIN_LOOKUPS_BEFORE_HASH)
                } else {
                    even
                }
            }
        };
        if (*lookups as f64) < threshold {
            return Ok(None);
        }
        // Too large to hold in a share of the memory bound: stay with lookups.
        let cap = self.limits.memory_bytes.get() / 4 / std::mem::size_of::<[TermId; 4]>() / 2;
        if alone > cap as f64 {
            state.refused |= 1 << mask;
            return Ok(None);
        }
        drop(state);
        let constant = |slot: Slot| match slot {
            Slot::Const(id) => Some(id),
            Slot::Var(_) => None,
        };
        let whole = QuadPattern { s: constant(p.s), p: constant(p.p), o: constant(p.o), g: pattern.g };
        let whole_scan = self.space.scan(whole);
        // One position bound from the left, the index sorted by it: the
        // quads come grouped already.
        let grouped = match mask {
            1 => whole_scan.sorted_by(0),
            2 => whole_scan.sorted_by(1),
            4 => whole_scan.sorted_by(2),
            _ => false,
        };
        // Sized by the estimate, within the cap: growing a vector of
        // 100k quads copies it about 17 times.
        let mut quads = Vec::with_capacity((alone as usize).min(cap));
        let ranges = p.o_ranges.as_ref().filter(|_| mask & 4 == 0);
        if let Some(ranges) = ranges {
            let mut scan = Lookup::with_scan(ScanPool::default(), whole_scan);
            scan.restrict(ranges.clone(), false);
            for q in scan {
                self.limits.check()?;
                quads.push(q?);
                if quads.len() > cap {
                    pool.borrow_mut().refused |= 1 << mask;
                    return Ok(None);
                }
            }
        } else {
            // Read whole, a block's columns at a time (a step and a check
            // per quad cost more than hashing it).
            let (mut scan, mut batch) = (whole_scan, rhizome_rdf::QuadBatch::default());
            loop {
                batch.clear();
                let n = scan.next_batch(&mut batch, LOOKUP_BATCH_MAX)?;
                if n == 0 {
                    break;
                }
                self.limits.check_weighted(n)?;
                let [cs, cp, co, cg] = [0, 1, 2, 3].map(|c| batch.column(c));
                quads.extend(cs.iter().zip(cp).zip(co).zip(cg).map(|(((s, p), o), g)| [*s, *p, *o, *g]));
                if quads.len() > cap {
                    pool.borrow_mut().refused |= 1 << mask;
                    return Ok(None);
                }
            }
        }
        let hashed = Rc::new(if grouped { HashedQuads::of_runs(mask, quads) } else { HashedQuads::new(mask, quads) });
        let lookups = {
            let mut state = pool.borrow_mut();
            state.hashed[usize::from(mask)] = Some(hashed.clone());
            state.lookups[usize::from(mask)]
        };
        if let Some(profile) = &self.profile {
            profile.borrow_mut().insert(p as *const QuadPlan as usize, lookups);
        }
        Ok(Some(hashed))
    }

    pub(super) fn graph_var(self: &Rc<Self>, v: Var, inner: &'a Plan, input: Row) -> Rows<'a> {
        let ev = self.clone();
        Box::new(self.eval(inner, input).flat_map(move |r| -> Rows<'a> {
            let row = match r {
                Ok(row) => row,
                Err(e) => return super::fail(e),
            };
            if row[v].is_some() {
                return one(row);
            }
            let graphs = match ev.named_graphs() {
                Ok(g) => g,
                Err(e) => return super::fail(e),
            };
            Box::new((0..graphs.len()).map(move |i| {
                let g = graphs[i];
                let mut r = row.clone();
                r[v] = Some(g);
                Ok(r)
            }))
        }))
    }
}

/// Pulls rows of a `GraphLoop`'s inner pattern with its graph set, so that
/// scans opened or materialized during the pull read that graph.
struct InGraph<'a> {
    ev: Rc<Evaluator<'a>>,
    hidden: Var,
    graph: TermId,
    rows: Rows<'a>,
}

impl<'a> InGraph<'a> {
    fn with<T>(ev: &Evaluator<'a>, hidden: Var, graph: TermId, f: impl FnOnce() -> T) -> T {
        let previous = ev.graph_context.borrow_mut().insert(hidden, graph);
        let out = f();
        let mut context = ev.graph_context.borrow_mut();
        match previous {
            Some(p) => context.insert(hidden, p),
            None => context.remove(&hidden),
        };
        out
    }
}

impl Iterator for InGraph<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        let rows = &mut self.rows;
        Self::with(&self.ev, self.hidden, self.graph, || rows.next())
    }
}

impl<'a> Evaluator<'a> {
    /// SPARQL's GRAPH ?g: the inner pattern once per named graph.
    pub(super) fn graph_loop(self: &Rc<Self>, v: Var, hidden: Var, inner: &'a Plan, input: Row) -> Rows<'a> {
        let graphs = match input[v] {
            Some(g) => {
                if self.named_allowed(g) {
                    vec![g]
                } else {
                    vec![]
                }
            }
            None => match self.named_graphs() {
                Ok(g) => g.to_vec(),
                Err(e) => return super::fail(e),
            },
        };
        let ev = self.clone();
        Box::new(graphs.into_iter().flat_map(move |g| {
            // The inner pattern sees the outer bindings only if they cannot
            // change its answer; the rows are joined with them below.
            let mut start = if inner.accepts_bindings() { input.clone() } else { ev.empty_row() };
            start[v] = None;
            let rows = InGraph::with(&ev, hidden, g, || ev.eval(inner, start));
            let input = input.clone();
            InGraph { ev: ev.clone(), hidden, graph: g, rows }.filter_map(move |r| {
                let mut row = match r {
                    Ok(row) => row,
                    Err(e) => return Some(Err(e)),
                };
                match row[v] {
                    Some(x) if x != g => return None,
                    _ => row[v] = Some(g),
                }
                super::merge(&input, &row).map(Ok)
            })
        }))
    }

    /// Whether a graph of the given name is in the dataset and has quads.
    pub(super) fn graph_in_dataset(&self, g: TermId) -> Result<bool> {
        if !self.named_allowed(g) {
            return Ok(false);
        }
        Ok(self.space.scan(QuadPattern { g: Some(g), ..Default::default() }).next().transpose()?.is_some())
    }
}

/// What EXPLAIN counts per quad pattern, keyed by its address plus one of
/// these (addresses are 8-aligned, so the keys are no plan node's): the
/// rows that went into its lookups, and the rows after it.
pub(crate) const LOOKUPS: usize = 1;
pub(crate) const ROWS_OUT: usize = 2;

pub(crate) fn pattern_key(p: &QuadPlan, what: usize) -> usize {
    p as *const QuadPlan as usize + what
}

fn bind_quad(row: &Row, p: &QuadPlan, graph_var: Option<Var>, q: &[TermId; 4]) -> Option<Row> {
    bind_quad_owned(row.clone(), p, graph_var, q)
}

/// `row` extended with a quad's values (`None` if they disagree with it).
pub(super) fn bind_quad_owned(mut r: Row, p: &QuadPlan, graph_var: Option<Var>, q: &[TermId; 4]) -> Option<Row> {
    bind_in_place(&mut r, p, graph_var, q).then_some(r)
}

/// Whether `bind_in_place` would extend `row` with the quad (its values
/// agree with the row's and with each other where a variable repeats),
/// without changing the row.
pub(super) fn quad_agrees(row: &Row, p: &QuadPlan, graph_var: Option<Var>, q: &[TermId; 4]) -> bool {
    let slots = [(p.s.var(), q[0]), (p.p.var(), q[1]), (p.o.var(), q[2]), (graph_var, q[3])];
    for (i, &(slot, value)) in slots.iter().enumerate() {
        let Some(v) = slot else { continue };
        match row[v] {
            Some(x) if x != value => return false,
            Some(_) => {}
            None => {
                if slots[..i].iter().any(|&(earlier, w)| earlier == Some(v) && w != value) {
                    return false;
                }
            }
        }
    }
    true
}

/// Extends `r` with a quad's values; false if they disagree with it (`r`
/// is then partly extended, for the caller to drop).
fn bind_in_place(r: &mut Row, p: &QuadPlan, graph_var: Option<Var>, q: &[TermId; 4]) -> bool {
    for (slot, value) in [(p.s.var(), q[0]), (p.p.var(), q[1]), (p.o.var(), q[2]), (graph_var, q[3])] {
        if let Some(v) = slot {
            match r[v] {
                Some(x) if x != value => return false,
                _ => r[v] = Some(value),
            }
        }
    }
    true
}

/// The distinct values of one quad position, in order (see
/// `distinct_values`).
struct SkipScan<'a> {
    ev: Rc<Evaluator<'a>>,
    scan: rhizome_rdf::QuadScan<'a>,
    component: usize,
    var: Var,
    /// Where the next value starts: just past the last one.
    next: Option<TermId>,
    done: bool,
}

impl SkipScan<'_> {
    fn step(&mut self) -> Result<Option<Row>> {
        self.ev.limits.check()?;
        if let Some(at) = self.next {
            self.scan.seek_component(self.component, at)?;
        }
        let Some(q) = self.scan.next_quad()? else { return Ok(None) };
        let x = q[self.component];
        // The last possible id has nothing after it.
        self.next = x.0.checked_add(1).map(TermId);
        self.done = self.next.is_none();
        let mut row = self.ev.empty_row();
        row[self.var] = Some(x);
        Ok(Some(row))
    }
}

impl Iterator for SkipScan<'_> {
    type Item = Result<Row>;
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

/// A scan and its next quad.
struct Peek<'a> {
    scan: rhizome_rdf::QuadScan<'a>,
    head: Option<[TermId; 4]>,
    started: bool,
}

impl Peek<'_> {
    /// Moves to the first quad whose subject is at least `x`: a few steps
    /// forward first, since the target is often a quad or two ahead and a
    /// step costs a small part of a seek.
    fn seek(&mut self, x: TermId) -> Result<()> {
        if self.started {
            for _ in 0..STEPS_BEFORE_SEEK {
                match self.head {
                    Some(q) if q[0] < x => self.head = self.scan.next_quad()?,
                    _ => return Ok(()),
                }
            }
            if self.head.is_none_or(|q| q[0] >= x) {
                return Ok(());
            }
        }
        self.started = true;
        self.scan.seek_component(0, x)?;
        self.head = self.scan.next_quad()?;
        Ok(())
    }

    /// Quads with subject `x` from here on (consumed).
    fn run_of(&mut self, x: TermId) -> Result<u64> {
        let mut n = 0;
        while self.head.is_some_and(|q| q[0] == x) {
            n += 1;
            self.head = self.scan.next_quad()?;
        }
        Ok(n)
    }
}

/// Quads a merge join's scan steps over before it seeks instead.
const STEPS_BEFORE_SEEK: usize = 8;

/// Subjects found by every scan (leapfrog intersection); a subject repeats
/// as many times as the product of its quads in each scan (a quad per
/// graph), as nested loops would give.
struct MergeIntersect<'a> {
    ev: Rc<Evaluator<'a>>,
    scans: Vec<Peek<'a>>,
    row: Row,
    var: Var,
    pending: u64,
    done: bool,
}

impl MergeIntersect<'_> {
    fn step(&mut self) -> Result<Option<Row>> {
        while self.pending == 0 {
            if self.done {
                return Ok(None);
            }
            self.ev.limits.check()?;
            // The largest head; every scan seeks to it until all agree.
            let mut x = TermId::DEFAULT_GRAPH; // id 0, below every subject
            loop {
                let mut agreed = true;
                for sc in &mut self.scans {
                    sc.seek(x)?;
                    match sc.head {
                        None => {
                            self.done = true;
                            return Ok(None);
                        }
                        Some(q) if q[0] > x => {
                            x = q[0];
                            agreed = false;
                        }
                        Some(_) => {}
                    }
                }
                if agreed {
                    break;
                }
            }
            let mut n = 1u64;
            for sc in &mut self.scans {
                n = n.saturating_mul(sc.run_of(x)?);
            }
            self.pending = n;
            self.row[self.var] = Some(x);
        }
        self.pending -= 1;
        Ok(Some(self.row.clone()))
    }
}

impl Iterator for MergeIntersect<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step().transpose()
    }
}

/// The most quads of one subject a star reads whole (`star_lookup`):
/// reading a quad costs a fiftieth of a seek, and subjects rarely have
/// more.
const STAR_MAX_QUADS: usize = 64;

/// Lookups with one set of positions bound from the left, at the least,
/// before a pattern is hashed (below it, seeks cost little either way).
const MIN_LOOKUPS_BEFORE_HASH: f64 = 256.0;
/// The share of the break-even lookups after which a pattern is hashed
/// when the planner expects at least twice the break-even.
const TRUST_EARLY: f64 = 0.25;
/// Quads read and hashed for the cost of one lookup (measured at 4.8M
/// triples: a lookup's seek is 3-5 µs, a quad read in order and hashed
/// 0.3-0.4 µs).
const HASH_AFTER_QUADS_PER_LOOKUP: f64 = 12.0;

/// What one pattern of a BGP keeps across its lookups (one per row on the
/// left): reusable scans, re-pointed with a seek instead of opening new
/// RocksDB iterators, which costs more than the seek; and, once enough
/// lookups were made, the pattern's quads hashed (a hash join).
#[derive(Default)]
pub(super) struct PatternState<'a> {
    scans: Vec<rhizome_rdf::QuadScan<'a>>,
    /// Lookups made, per set of positions bound from the left (bit 0
    /// subject, 1 predicate, 2 object).
    lookups: [u64; 8],
    /// The pattern hashed, per set of bound positions (rows on the left
    /// may bind different variables, as after an OPTIONAL).
    hashed: [Option<Rc<HashedQuads>>; 8],
    /// Sets of bound positions whose pattern was too large to hash.
    refused: u8,
    /// A star's subject quads (the first pattern of a star keeps the
    /// buffer, reused from row to row).
    star_quads: Vec<[TermId; 4]>,
    /// A star's one cursor over its subjects' quads (kept by its first
    /// pattern), once tried: `None` when the scan is not in subject order.
    subject_runs: Option<SubjectRuns<'a>>,
    subject_runs_tried: bool,
    /// Lookups' batch buffers, reused from lookup to lookup.
    batches: Vec<rhizome_rdf::QuadBatch>,
}

pub(super) type ScanPool<'a> = Rc<std::cell::RefCell<PatternState<'a>>>;

/// Empty scan pools for the patterns of a BGP.
pub(super) fn scan_pools<'a>(patterns: &[QuadPlan]) -> Vec<ScanPool<'a>> {
    patterns.iter().map(|_| ScanPool::default()).collect()
}

/// A pattern's quads (its constants bound) grouped by the ids at the
/// positions of `mask`: each group's quads together, found by a table
/// indexed by the key's id when one position is bound and its ids are
/// dense (the loader numbers subjects densely), else by a hash map.
pub(super) struct HashedQuads {
    mask: u8,
    quads: Vec<[TermId; 4]>,
    groups: Groups,
}

/// Where each key's quads are in `HashedQuads::quads`.
enum Groups {
    /// Key `min + i` (the id at quad position `at`) has the quads
    /// `starts[i]..starts[i + 1]`: a probe is two array reads, with no
    /// hashing, and keys probed in id order read the table in order.
    Dense { at: usize, min: u64, starts: Vec<u32> },
    Hashed(rustc_hash::FxHashMap<[TermId; 3], (u32, u32)>),
}

/// A dense table may take this many slots per quad (and at least
/// `DENSE_MIN_SLOTS`): 4 bytes a slot, so at most 16 bytes per quad
/// beside the quad's own 32.
const DENSE_SLOTS_PER_QUAD: u64 = 4;
const DENSE_MIN_SLOTS: u64 = 4096;

impl HashedQuads {
    fn key(mask: u8, s: Option<TermId>, p: Option<TermId>, o: Option<TermId>) -> [TermId; 3] {
        let at = |bit: u8, v: Option<TermId>| if mask & bit != 0 { v.unwrap_or(TermId(0)) } else { TermId(0) };
        [at(1, s), at(2, p), at(4, o)]
    }

    /// Groups `quads`, keeping the scan's order within each group.
    fn new(mask: u8, quads: Vec<[TermId; 4]>) -> Self {
        match Self::dense(mask, &quads) {
            Some((at, min, max)) => Self::by_table(mask, quads, at, min, max),
            None => Self::by_hash(mask, quads),
        }
    }

    /// The quad position of a one-position key and its ids' bounds, if
    /// they are dense enough for a table.
    fn dense(mask: u8, quads: &[[TermId; 4]]) -> Option<(usize, u64, u64)> {
        let at = match mask {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => return None,
        };
        let (mut min, mut max) = (u64::MAX, 0);
        for q in quads {
            min = min.min(q[at].0);
            max = max.max(q[at].0);
        }
        let limit = (quads.len() as u64).saturating_mul(DENSE_SLOTS_PER_QUAD).max(DENSE_MIN_SLOTS);
        (!quads.is_empty() && quads.len() < u32::MAX as usize && max - min < limit).then_some((at, min, max))
    }

    /// A counting sort over the key's ids (stable: a group keeps the
    /// scan's order; quads already in key order stay where they are).
    fn by_table(mask: u8, quads: Vec<[TermId; 4]>, at: usize, min: u64, max: u64) -> Self {
        let slots = (max - min + 1) as usize;
        let mut starts = vec![0u32; slots + 1];
        for q in &quads {
            starts[(q[at].0 - min) as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let in_order = quads.windows(2).all(|w| w[0][at] <= w[1][at]);
        let quads = if in_order {
            quads
        } else {
            let mut next = starts.clone();
            let mut placed = vec![[TermId(0); 4]; quads.len()];
            for q in &quads {
                let slot = &mut next[(q[at].0 - min) as usize];
                placed[*slot as usize] = *q;
                *slot += 1;
            }
            placed
        };
        HashedQuads { mask, quads, groups: Groups::Dense { at, min, starts } }
    }

    /// Groups `quads` by a counting sort over their keys: one hash probe
    /// per quad numbers the groups, then each quad is placed in its
    /// group's range (the stable comparison sort this replaces took about
    /// a quarter of q10's instructions at 1M, callgrind).
    fn by_hash(mask: u8, quads: Vec<[TermId; 4]>) -> Self {
        let key = |q: &[TermId; 4]| Self::key(mask, Some(q[0]), Some(q[1]), Some(q[2]));
        // Per key: its group's number while counting, then (start, quads).
        let mut groups: rustc_hash::FxHashMap<[TermId; 3], (u32, u32)> = rustc_hash::FxHashMap::default();
        let mut group_of = Vec::with_capacity(quads.len());
        let mut lens: Vec<u32> = Vec::new();
        for q in &quads {
            let next = lens.len() as u32;
            let g = groups.entry(key(q)).or_insert((next, 0)).0;
            if g == next {
                lens.push(0);
            }
            lens[g as usize] += 1;
            group_of.push(g);
        }
        let mut starts = Vec::with_capacity(lens.len());
        let mut at = 0u32;
        for len in &lens {
            starts.push(at);
            at += len;
        }
        for group in groups.values_mut() {
            let g = group.0 as usize;
            *group = (starts[g], lens[g]);
        }
        let mut placed = vec![[TermId(0); 4]; quads.len()];
        // In scan order: a group keeps the scan's order.
        for (q, g) in quads.iter().zip(&group_of) {
            let slot = &mut starts[*g as usize];
            placed[*slot as usize] = *q;
            *slot += 1;
        }
        HashedQuads { mask, quads: placed, groups: Groups::Hashed(groups) }
    }

    /// `quads` already grouped (read from an index sorted by the key's one
    /// position): a hash insert per group, no quad moved. Quads of one key
    /// in two runs (not sorted after all) are grouped by `by_hash`.
    fn of_runs(mask: u8, quads: Vec<[TermId; 4]>) -> Self {
        if let Some((at, min, max)) = Self::dense(mask, &quads) {
            return Self::by_table(mask, quads, at, min, max);
        }
        let key = |q: &[TermId; 4]| Self::key(mask, Some(q[0]), Some(q[1]), Some(q[2]));
        let mut groups: rustc_hash::FxHashMap<[TermId; 3], (u32, u32)> = rustc_hash::FxHashMap::default();
        let mut start = 0;
        while start < quads.len() {
            let k = key(&quads[start]);
            let len = quads[start..].iter().take_while(|q| key(q) == k).count();
            if groups.insert(k, (start as u32, len as u32)).is_some() {
                return Self::by_hash(mask, quads);
            }
            start += len;
        }
        HashedQuads { mask, quads, groups: Groups::Hashed(groups) }
    }

    /// Where in `quads` the quads agreeing with the pattern's bound
    /// positions are.
    #[inline]
    fn group(&self, pattern: QuadPattern) -> std::ops::Range<usize> {
        match &self.groups {
            Groups::Dense { at, min, starts } => {
                let Some(id) = [pattern.s, pattern.p, pattern.o][*at] else { return 0..0 };
                match id.0.checked_sub(*min) {
                    Some(i) if (i as usize) + 1 < starts.len() => starts[i as usize] as usize..starts[i as usize + 1] as usize,
                    _ => 0..0,
                }
            }
            Groups::Hashed(groups) => {
                let (start, len) = groups.get(&Self::key(self.mask, pattern.s, pattern.p, pattern.o)).copied().unwrap_or((0, 0));
                start as usize..(start + len) as usize
            }
        }
    }
}

/// The rows on the left that a pattern binding nothing new matches, each
/// as many times as it has quads (`count_quad`: a probe of the hashed
/// pattern, or a lookup), moved through rather than copied.
struct TestedRows<'a> {
    ev: Rc<Evaluator<'a>>,
    rows: Rows<'a>,
    p: &'a QuadPlan,
    pool: ScanPool<'a>,
    /// A row that matched more than one quad, and its copies still due.
    repeat: Option<(Row, u64)>,
}

impl Iterator for TestedRows<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some((row, left)) = &mut self.repeat {
            *left -= 1;
            let row = if *left == 0 { self.repeat.take().expect("held").0 } else { row.clone() };
            return Some(Ok(row));
        }
        loop {
            let row = match self.rows.next()? {
                Ok(row) => row,
                Err(e) => return Some(Err(e)),
            };
            match self.ev.count_quad(self.p, &row, &self.pool) {
                Err(e) => return Some(Err(e)),
                Ok(0) => continue,
                Ok(1) => return Some(Ok(row)),
                Ok(n) => {
                    self.repeat = Some((row.clone(), n - 1));
                    return Some(Ok(row));
                }
            }
        }
    }
}

/// The graphs a pattern scans: nearly always one, held without allocating
/// (`graphs_of` runs once per row on the left).
pub(super) enum Graphs {
    One([Option<TermId>; 1]),
    Many(Vec<Option<TermId>>),
}

impl std::ops::Deref for Graphs {
    type Target = [Option<TermId>];
    fn deref(&self) -> &Self::Target {
        match self {
            Graphs::One(g) => g,
            Graphs::Many(list) => list,
        }
    }
}

/// How a pattern's quads bind a row: the pattern, the variable its graph
/// binds, and whether quads of the plain default graph are skipped.
#[derive(Clone, Copy)]
struct Binding<'a> {
    p: &'a QuadPlan,
    graph_var: Option<Var>,
    skip_default: bool,
}

/// Where one lookup's quads come from.
enum PatternQuads<'a> {
    /// A group of the pattern's hashed quads.
    Hashed(Rc<HashedQuads>, std::ops::Range<usize>),
    /// Boxed: a lookup's scan state is large, and a row's iterator is
    /// moved into its box once per row on the left, so a probe of the
    /// hashed pattern would copy it whole (memcpy was 8% of q07 at 4.8M).
    Lookup(Box<Lookup<'a>>),
}

impl PatternQuads<'_> {
    fn next_quad(&mut self) -> Result<Option<[TermId; 4]>> {
        match self {
            PatternQuads::Hashed(hashed, group) => Ok(group.next().map(|i| hashed.quads[i])),
            PatternQuads::Lookup(scan) => Ok(scan.next().transpose()?),
        }
    }
}

/// The rows one row on the left extends to with a pattern's quads. It reads
/// a quad ahead, so that the last quad takes the row instead of copying it
/// (in a join where each row on the left matches one quad, no row is
/// copied).
struct PatternRows<'a> {
    ev: Rc<Evaluator<'a>>,
    bind: Binding<'a>,
    /// The row on the left; taken by the last quad.
    row: Option<Row>,
    quads: PatternQuads<'a>,
    /// The next quad, read ahead.
    ahead: Option<[TermId; 4]>,
}

impl PatternRows<'_> {
    fn step(&mut self) -> Result<Option<Row>> {
        loop {
            let Some(row) = &self.row else { return Ok(None) };
            self.ev.limits.check()?;
            let quad = match self.ahead.take() {
                Some(q) => q,
                None => match self.quads.next_quad()? {
                    Some(q) => q,
                    None => {
                        self.row = None;
                        return Ok(None);
                    }
                },
            };
            if self.bind.skip_default && quad[3] == TermId::DEFAULT_GRAPH {
                continue;
            }
            self.ahead = self.quads.next_quad()?;
            let (p, graph_var) = (self.bind.p, self.bind.graph_var);
            let bound = if self.ahead.is_none() {
                let row = self.row.take().expect("checked above");
                bind_quad_owned(row, p, graph_var, &quad)
            } else {
                bind_quad(row, p, graph_var, &quad)
            };
            if bound.is_some() {
                return Ok(bound);
            }
        }
    }
}

impl Iterator for PatternRows<'_> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(row) => row.map(Ok),
            Err(e) => {
                self.row = None;
                Some(Err(e))
            }
        }
    }
}

/// The rows on the left extended with a pattern's quads (index nested
/// loops, or probes of the pattern hashed): each row's quads read through
/// one `PatternRows` held here, not one boxed per row on the left (the box,
/// its allocation and a call through it per row were a tenth of m05's
/// instructions).
struct PatternJoin<'a> {
    ev: Rc<Evaluator<'a>>,
    rows: Rows<'a>,
    p: &'a QuadPlan,
    pool: ScanPool<'a>,
    /// Where every row's lookup reads, when that does not depend on the
    /// row (a pattern of the default graph): found once, not per row.
    one_graph: Option<Scope<'a>>,
    /// The rows of the row on the left being extended, one graph read.
    current: Option<PatternRows<'a>>,
    /// Or of several graphs (`scan_quad`).
    graphs: Option<Rows<'a>>,
}

/// One graph a row's lookup reads, and how its quads bind the row.
#[derive(Clone, Copy)]
struct Scope<'a> {
    g: Option<TermId>,
    bind: Binding<'a>,
    hashable: bool,
}

impl<'a> Iterator for PatternJoin<'a> {
    type Item = Result<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(rows) = &mut self.current {
                match rows.next() {
                    Some(r) => return Some(r),
                    None => self.current = None,
                }
            }
            if let Some(rows) = &mut self.graphs {
                match rows.next() {
                    Some(r) => return Some(r),
                    None => self.graphs = None,
                }
            }
            let row = match self.rows.next()? {
                Ok(row) => row,
                Err(e) => return Some(Err(e)),
            };
            let scope = match self.one_graph {
                Some(scope) => scope,
                None => {
                    let (graphs, skip_default, graph_var, hashable) = self.ev.quad_scope(self.p, &row);
                    let [g] = *graphs else {
                        self.graphs = Some(self.ev.scan_quad(self.p, row, &self.pool));
                        continue;
                    };
                    Scope { g, bind: Binding { p: self.p, graph_var, skip_default }, hashable }
                }
            };
            match self.ev.pattern_quads(self.p, &row, &self.pool, scope.g, scope.hashable) {
                Err(e) => return Some(Err(e)),
                Ok(None) => {}
                Ok(Some(quads)) => {
                    self.current = Some(PatternRows { ev: self.ev.clone(), bind: scope.bind, row: Some(row), quads, ahead: None });
                }
            }
        }
    }
}

/// One lookup's scan, given back to its pool when dropped (exhausted, or
/// abandoned under a LIMIT).
struct Lookup<'a> {
    pool: ScanPool<'a>,
    scan: Option<rhizome_rdf::QuadScan<'a>>,
    ranges: Option<ObjectRanges>,
    /// Quads taken from the scan as id columns, handed out from
    /// `batch_at` on (not with `ranges`, whose scan seeks).
    batch: rhizome_rdf::QuadBatch,
    batch_at: usize,
    /// Quads still to take one at a time before the first batch.
    singles_left: u8,
    /// How many quads the next batch takes: it grows eightfold per batch
    /// up to [`LOOKUP_BATCH_MAX`], so a consumer that stops early (EXISTS,
    /// LIMIT, a probe wanting one row) reads at most about eight times
    /// what it takes, and a long scan reads in big batches (a fixed 256
    /// read far past early stops: 3-6x slower there).
    batch_max: usize,
}

/// The largest batch a lookup takes from its scan at once (a segment
/// block's rows).
const LOOKUP_BATCH_MAX: usize = 1024;
/// Quads a lookup takes one at a time before batches. Most lookups of a
/// join end within them, and for a run of a few quads a batch (its set-up
/// and a copy per column) costs more than the steps: with batches after
/// 2 quads, q09 and q20 took 5% more instructions. The scan reads ahead
/// from the same row count on (`READ_AHEAD_AFTER` in `rhizome-rdf`).
const LOOKUP_SINGLES: u8 = 16;
/// A lookup's first batch, after the single quads.
const LOOKUP_BATCH_FIRST: usize = 128;
/// Batch sizes grow by this factor from the first.
const LOOKUP_BATCH_GROWTH: usize = 8;

/// The object id ranges a filter lets through, and where the scan is in
/// them.
struct ObjectRanges {
    ranges: Arc<[(TermId, TermId)]>,
    /// The range the scan is in.
    at: usize,
    /// The scan comes out sorted by object: it seeks to each range instead
    /// of reading what lies between.
    seekable: bool,
    seek_next: bool,
}

impl<'a> Lookup<'a> {
    fn new(ev: &Evaluator<'a>, pool: &ScanPool<'a>, pattern: QuadPattern) -> Self {
        let reused = pool.borrow_mut().scans.pop().and_then(|mut scan| scan.rebind(pattern).then_some(scan));
        let scan = reused.unwrap_or_else(|| ev.space.lookup_scan(pattern));
        Lookup::with_scan(pool.clone(), scan)
    }

    fn with_scan(pool: ScanPool<'a>, scan: rhizome_rdf::QuadScan<'a>) -> Self {
        Lookup { pool, scan: Some(scan), ranges: None, batch: Default::default(), batch_at: 0, singles_left: LOOKUP_SINGLES, batch_max: LOOKUP_BATCH_FIRST }
    }

    /// The next quad from the batch, taking the next batch when it is
    /// used up.
    #[inline]
    fn next_batched(&mut self) -> rhizome_rdf::Result<Option<[TermId; 4]>> {
        if self.batch_at == self.batch.len() {
            let Some(scan) = self.scan.as_mut() else { return Ok(None) };
            if self.singles_left > 0 {
                self.singles_left -= 1;
                return scan.next_quad();
            }
            if self.batch_max == LOOKUP_BATCH_FIRST {
                // The first batch: a buffer from the pool (no allocation).
                if let Some(batch) = self.pool.borrow_mut().batches.pop() {
                    self.batch = batch;
                }
            }
            self.batch.clear();
            self.batch_at = 0;
            if scan.next_batch(&mut self.batch, self.batch_max)? == 0 {
                return Ok(None);
            }
            self.batch_max = (self.batch_max * LOOKUP_BATCH_GROWTH).min(LOOKUP_BATCH_MAX);
        }
        let q = self.batch.quad(self.batch_at);
        self.batch_at += 1;
        Ok(Some(q))
    }

    /// Only quads whose object lies in one of `ranges`. A scan by subject
    /// (a lookup from the row on the left) holds a few quads: checking
    /// them costs less than a seek per range.
    fn restrict(&mut self, ranges: Arc<[(TermId, TermId)]>, by_subject: bool) {
        let seekable = !by_subject && self.scan.as_ref().is_some_and(|s| s.sorted_by(2));
        self.ranges = Some(ObjectRanges { ranges, at: 0, seekable, seek_next: true });
    }

    fn next_in_ranges(&mut self) -> rhizome_rdf::Result<Option<[TermId; 4]>> {
        let (Some(scan), Some(r)) = (self.scan.as_mut(), self.ranges.as_mut()) else { return Ok(None) };
        loop {
            let Some(&(low, high)) = r.ranges.get(r.at) else { return Ok(None) };
            if r.seekable && r.seek_next {
                scan.seek_component(2, low)?;
                r.seek_next = false;
            }
            let Some(q) = scan.next_quad()? else { return Ok(None) };
            let o = q[2];
            if !r.seekable {
                if r.ranges.iter().any(|(l, h)| *l <= o && o <= *h) {
                    return Ok(Some(q));
                }
                continue;
            }
            if o < low {
                r.seek_next = true;
                continue;
            }
            if o > high {
                while r.ranges.get(r.at).is_some_and(|(_, h)| *h < o) {
                    r.at += 1;
                }
                match r.ranges.get(r.at) {
                    None => return Ok(None),
                    Some((l, _)) if *l <= o => return Ok(Some(q)),
                    Some(_) => {
                        r.seek_next = true;
                        continue;
                    }
                }
            }
            return Ok(Some(q));
        }
    }
}

impl Iterator for Lookup<'_> {
    type Item = rhizome_rdf::Result<[TermId; 4]>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.ranges.is_some() {
            return self.next_in_ranges().transpose();
        }
        self.next_batched().transpose()
    }
}

impl Drop for Lookup<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.borrow_mut();
        // A lookup that took batches gives its buffer back.
        if self.batch_max > LOOKUP_BATCH_FIRST && state.batches.len() < 4 {
            let mut batch = std::mem::take(&mut self.batch);
            batch.clear();
            state.batches.push(batch);
        }
        if let Some(scan) = self.scan.take() {
            let pool = &mut state.scans;
            // Nested loops hold one scan of a pattern at a time; a few
            // more cover patterns scanned once per graph.
            if pool.len() < 4 {
                pool.push(scan);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grouped by subject (mask 1): each group holds its quads in the
    /// order they came, every quad once, and a key without quads has an
    /// empty group.
    #[test]
    fn hashed_quads_group_every_quad_in_scan_order() {
        let t = TermId;
        // Subjects interleaved, objects numbering the arrival order.
        let quads: Vec<[TermId; 4]> = (0..300u64).map(|i| [t(10 + (i * 7) % 13), t(1), t(1_000 + i), t(0)]).collect();
        let hashed = HashedQuads::new(1, quads.clone());
        let mut seen = 0;
        for s in 10..23u64 {
            let group = hashed.group(QuadPattern { s: Some(t(s)), p: Some(t(1)), o: None, g: None });
            let got: Vec<[TermId; 4]> = hashed.quads[group].to_vec();
            let want: Vec<[TermId; 4]> = quads.iter().filter(|q| q[0] == t(s)).copied().collect();
            assert_eq!(got, want, "subject {s}");
            seen += got.len();
        }
        assert_eq!(seen, quads.len(), "every quad in one group");
        assert!(hashed.group(QuadPattern { s: Some(t(99)), ..QuadPattern::default() }).is_empty());
    }

    /// The table over dense ids and the hash map group alike, sorted or
    /// not, and both answer a key outside the table (below, above) empty;
    /// ids spread wide get the hash map.
    #[test]
    fn hashed_quads_dense_table_groups_as_the_hash_map_does() {
        let t = TermId;
        let scattered: Vec<[TermId; 4]> = (0..500u64).map(|i| [t(5_000 + (i * 37) % 211), t(1), t(i), t(0)]).collect();
        let mut sorted = scattered.clone();
        sorted.sort_by_key(|q| q[0]);
        for quads in [scattered, sorted] {
            let table = HashedQuads::new(1, quads.clone());
            assert!(matches!(table.groups, Groups::Dense { .. }));
            let hashed = HashedQuads::by_hash(1, quads.clone());
            for s in 4_990..5_220u64 {
                let pattern = QuadPattern { s: Some(t(s)), p: Some(t(1)), o: None, g: None };
                assert_eq!(table.quads[table.group(pattern)], hashed.quads[hashed.group(pattern)], "subject {s}");
            }
            assert_eq!(HashedQuads::of_runs(1, quads.clone()).quads, table.quads);
        }
        let wide: Vec<[TermId; 4]> = (0..100u64).map(|i| [t(i << 40), t(1), t(i), t(0)]).collect();
        let h = HashedQuads::new(1, wide.clone());
        assert!(matches!(h.groups, Groups::Hashed(_)));
        let runs = HashedQuads::of_runs(1, wide);
        assert!(matches!(runs.groups, Groups::Hashed(_)));
        assert_eq!(runs.quads[runs.group(QuadPattern { s: Some(t(7 << 40)), ..QuadPattern::default() })], h.quads[h.group(QuadPattern { s: Some(t(7 << 40)), ..QuadPattern::default() })]);
        assert_eq!(h.group(QuadPattern { s: Some(t(7 << 40)), ..QuadPattern::default() }).len(), 1);
    }

    /// Quads read in key order are grouped as the counting sort groups
    /// them; a key found in two runs (not in key order after all) too.
    #[test]
    fn hashed_quads_of_runs_group_as_the_counting_sort_does() {
        let t = TermId;
        let groups_of = |h: &HashedQuads| -> Vec<Vec<[TermId; 4]>> {
            (0..30u64).map(|o| h.quads[h.group(QuadPattern { s: None, p: None, o: Some(t(o)), g: None })].to_vec()).collect()
        };
        let mut sorted: Vec<[TermId; 4]> = (0..200u64).map(|i| [t(1_000 + i), t(1), t(i % 17), t(0)]).collect();
        sorted.sort_by_key(|q| q[2]);
        assert_eq!(groups_of(&HashedQuads::of_runs(4, sorted.clone())), groups_of(&HashedQuads::by_hash(4, sorted)));
        let unsorted: Vec<[TermId; 4]> = (0..200u64).map(|i| [t(1_000 + i), t(1), t(i % 17), t(0)]).collect();
        let by_runs = HashedQuads::of_runs(4, unsorted.clone());
        assert_eq!(groups_of(&by_runs), groups_of(&HashedQuads::by_hash(4, unsorted)));
        assert_eq!(by_runs.group(QuadPattern { s: None, p: None, o: Some(t(3)), g: None }).len(), 12);
    }
}
