//! Property paths (SPARQL 1.1 section 9): sequences and alternatives as
//! joins and unions of their steps, `*` `+` `?` as breadth-first closures
//! with set semantics, negated property sets as filtered scans. Results of
//! a path are materialized per input row (a known cost: the crate docs list it among the limits).

use super::{fail, Evaluator, Rows};
use crate::error::Result;
use crate::plan::{GraphSlot, PathPlan, Row, Slot};

use rhizome_rdf::{QuadPattern, TermId};
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

type Pairs = Vec<(TermId, TermId)>;

/// Reusable scans kept for property paths' lookups.
const PATH_SCANS: usize = 8;

impl<'a> Evaluator<'a> {
    pub(super) fn path(self: &Rc<Self>, s: Slot, path: &'a PathPlan, o: Slot, g: GraphSlot, input: Row) -> Rows<'a> {
        self.path_pooled(s, path, o, g, input, &PathScans::default())
    }

    /// A path evaluated with a pool of reusable scans kept by the caller: a
    /// path on the right of a join runs once per left row, and opening
    /// RocksDB iterators per row costs more than its lookups.
    pub(super) fn path_pooled(self: &Rc<Self>, s: Slot, path: &'a PathPlan, o: Slot, g: GraphSlot, input: Row, scans: &PathScans<'a>) -> Rows<'a> {
        match self.path_rows(s, path, o, g, &input, scans) {
            Ok(rows) => Box::new(rows.into_iter().map(Ok)),
            Err(e) => fail(e),
        }
    }

    fn path_rows(&self, s: Slot, path: &PathPlan, o: Slot, g: GraphSlot, input: &Row, scans: &PathScans<'a>) -> Result<Vec<Row>> {
        let (sv, ov) = (s.value(input), o.value(input));
        let (graphs, all_named) = self.graphs_of(g, input);
        let graphs: Vec<Option<TermId>> = if all_named { self.named_graphs()?.iter().map(|g| Some(*g)).collect() } else { graphs.to_vec() };
        let graph_var = self.graph_var_to_bind(g);
        let walk = Walk { ev: self, scans };
        let mut out = Vec::new();
        for graph in graphs {
            for (x, y) in walk.pairs(path, sv, ov, graph, [matches!(s, Slot::Const(_)), matches!(o, Slot::Const(_))])? {
                let mut r = input.clone();
                let mut ok = true;
                for (slot, value) in [(s.var(), Some(x)), (o.var(), Some(y)), (graph_var, graph)] {
                    if let (Some(v), Some(value)) = (slot, value) {
                        match r[v] {
                            Some(old) if old != value => ok = false,
                            _ => r[v] = Some(value),
                        }
                    }
                }
                if ok {
                    out.push(r);
                    if out.len().is_multiple_of(4096) {
                        self.check_memory(super::rows_bytes(out.len(), self.width))?;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The predicates of an alternative of plain links, if it is one and no
/// predicate repeats (`a|a` gives its pairs twice).
fn links(path: &PathPlan) -> Option<Vec<TermId>> {
    fn collect(path: &PathPlan, out: &mut Vec<TermId>) -> bool {
        match path {
            PathPlan::Link(p) => {
                out.push(*p);
                true
            }
            PathPlan::Alternative(x, y) => collect(x, out) && collect(y, out),
            _ => false,
        }
    }
    let mut out = Vec::new();
    if !collect(path, &mut out) {
        return None;
    }
    let mut sorted = out.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (sorted.len() == out.len()).then_some(sorted)
}

/// Reusable scans of a path's lookups.
pub(super) type PathScans<'a> = std::cell::RefCell<Vec<rhizome_rdf::QuadScan<'a>>>;

/// One path evaluation: its lookups share a small pool of reusable scans,
/// re-pointed from node to node (and from row to row, with `path_pooled`)
/// instead of opening a RocksDB iterator per node reached (a walk looks up
/// every node it reaches).
struct Walk<'e, 'a> {
    ev: &'e Evaluator<'a>,
    scans: &'e PathScans<'a>,
}

impl<'a> Walk<'_, 'a> {
    fn scan_pairs(&self, s: Option<TermId>, p: Option<TermId>, o: Option<TermId>, g: Option<TermId>, not: &[TermId]) -> Result<Pairs> {
        let mut out = Vec::new();
        self.with_path_scan(QuadPattern { s, p, o, g }, |scan| {
            while let Some(q) = scan.next_quad()? {
                self.ev.limits.check()?;
                if !not.contains(&q[1]) {
                    out.push((q[0], q[2]));
                }
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs `f` on a scan of `pattern` from the path scans' pool (a walk
    /// looks up every node it reaches), then gives the scan back.
    fn with_path_scan<T>(&self, pattern: QuadPattern, f: impl FnOnce(&mut rhizome_rdf::QuadScan<'a>) -> Result<T>) -> Result<T> {
        let pooled = {
            let mut pool = self.scans.borrow_mut();
            let at = pool.iter_mut().position(|scan| scan.rebind(pattern));
            at.map(|i| pool.swap_remove(i))
        };
        let mut scan = pooled.unwrap_or_else(|| self.ev.space.lookup_scan(pattern));
        let result = f(&mut scan);
        let mut pool = self.scans.borrow_mut();
        // One scan per ordering a walk uses is enough.
        if pool.len() < PATH_SCANS {
            pool.push(scan);
        }
        result
    }

    fn in_graph(&self, t: TermId, g: Option<TermId>) -> Result<bool> {
        for pattern in [QuadPattern { s: Some(t), g, ..Default::default() }, QuadPattern { o: Some(t), g, ..Default::default() }] {
            if self.with_path_scan(pattern, |scan| Ok(scan.next_quad()?.is_some()))? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every subject and object of a graph (the nodes zero-length paths reach).
    fn nodes(&self, g: Option<TermId>) -> Result<Vec<TermId>> {
        let mut seen = FxHashSet::default();
        for q in self.ev.space.scan(QuadPattern { g, ..Default::default() }) {
            let q = q?;
            seen.insert(q[0]);
            seen.insert(q[2]);
        }
        let mut v: Vec<TermId> = seen.into_iter().collect();
        v.sort_unstable();
        Ok(v)
    }

    /// `constant`: whether each end is a constant of the query (a zero-length
    /// path reaches a constant even when the graph lacks it, but reaches a
    /// bound variable's value only if the graph has it).
    fn pairs(&self, path: &PathPlan, s: Option<TermId>, o: Option<TermId>, g: Option<TermId>, constant: [bool; 2]) -> Result<Pairs> {
        Ok(match path {
            PathPlan::Link(p) => self.scan_pairs(s, Some(*p), o, g, &[])?,
            PathPlan::Negated(not) => self.scan_pairs(s, None, o, g, not)?,
            PathPlan::Reverse(x) => self.pairs(x, o, s, g, [constant[1], constant[0]])?.into_iter().map(|(a, b)| (b, a)).collect(),
            PathPlan::Alternative(..) if s.is_some() != o.is_some() && links(path).is_some_and(|ps| ps.len() >= 3) => {
                // `(a|b|c|...)` from one bound end: one scan of the end's
                // quads keeping those predicates, not a lookup per predicate
                // (each node of a `*` walk is looked up once, not n times).
                let set = links(path).expect("checked");
                let mut out = Vec::new();
                self.with_path_scan(QuadPattern { s, p: None, o, g }, |scan| {
                    while let Some(q) = scan.next_quad()? {
                        self.ev.limits.check()?;
                        if set.contains(&q[1]) {
                            out.push((q[0], q[2]));
                        }
                    }
                    Ok(())
                })?;
                out
            }
            PathPlan::Alternative(x, y) => {
                let mut v = self.pairs(x, s, o, g, constant)?;
                v.extend(self.pairs(y, s, o, g, constant)?);
                v
            }
            PathPlan::Sequence(x, y) => {
                let mut out = Vec::new();
                if s.is_some() || o.is_none() {
                    for (a, m) in self.pairs(x, s, None, g, [constant[0], false])? {
                        for (_, b) in self.pairs(y, Some(m), o, g, [false, constant[1]])? {
                            out.push((a, b));
                        }
                    }
                } else {
                    for (m, b) in self.pairs(y, None, o, g, [false, constant[1]])? {
                        for (a, _) in self.pairs(x, None, Some(m), g, [constant[0], false])? {
                            out.push((a, b));
                        }
                    }
                }
                out
            }
            PathPlan::ZeroOrMore(x) | PathPlan::OneOrMore(x) | PathPlan::ZeroOrOne(x) => {
                let zero = !matches!(path, PathPlan::OneOrMore(_));
                let many = !matches!(path, PathPlan::ZeroOrOne(_));
                match (s, o) {
                    (Some(s), _) => {
                        self.closure(x, s, zero, many, false, g, constant[0])?.into_iter().filter(|b| o.is_none_or(|o| o == *b)).map(|b| (s, b)).collect()
                    }
                    (None, Some(o)) => self.closure(x, o, zero, many, true, g, constant[1])?.into_iter().map(|a| (a, o)).collect(),
                    (None, None) => self.all_pairs_closure(x, zero, many, g)?,
                }
            }
        })
    }

    /// `?s path* ?o` with both ends free: the one-step relation is read
    /// once into memory and walked from every start (every node of the
    /// graph for `*` and `?`, the first steps' sources for `+`), instead
    /// of one index lookup per node per step.
    fn all_pairs_closure(&self, x: &PathPlan, zero: bool, many: bool, g: Option<TermId>) -> Result<Pairs> {
        let step = self.pairs(x, None, None, g, [false; 2])?;
        let mut next: FxHashMap<TermId, Vec<TermId>> = FxHashMap::default();
        for (a, b) in &step {
            next.entry(*a).or_default().push(*b);
        }
        let starts: Vec<TermId> = if zero {
            self.nodes(g)?
        } else {
            let mut s: Vec<TermId> = next.keys().copied().collect();
            s.sort_unstable();
            s
        };
        let mut out = Vec::new();
        for start in starts {
            let mut seen = FxHashSet::default();
            if zero {
                seen.insert(start);
                out.push((start, start));
            }
            let mut frontier = vec![start];
            let mut first = true;
            while !frontier.is_empty() && (many || first) {
                first = false;
                let mut following = Vec::new();
                for n in frontier {
                    for b in next.get(&n).map_or(&[][..], Vec::as_slice) {
                        if seen.insert(*b) {
                            out.push((start, *b));
                            following.push(*b);
                        }
                    }
                }
                frontier = following;
            }
            self.ev.check_memory(out.len() * 16)?;
        }
        Ok(out)
    }

    /// The nodes reachable from `start` by one step (`many`: or more) of
    /// `x`, plus `start` itself when `zero`; backwards when `reverse`.
    #[allow(clippy::too_many_arguments)]
    fn closure(&self, x: &PathPlan, start: TermId, zero: bool, many: bool, reverse: bool, g: Option<TermId>, constant: bool) -> Result<Vec<TermId>> {
        let mut seen = FxHashSet::default();
        let mut out = Vec::new();
        // The zero-length path reaches only terms of the graph (the W3C
        // test values_and_path).
        if zero && (constant || self.in_graph(start, g)?) {
            seen.insert(start);
            out.push(start);
        }
        let mut frontier = vec![start];
        let mut first = true;
        while !frontier.is_empty() && (many || first) {
            first = false;
            let mut next = Vec::new();
            for n in frontier {
                let steps = if reverse { self.pairs(x, None, Some(n), g, [false; 2])? } else { self.pairs(x, Some(n), None, g, [false; 2])? };
                for (a, b) in steps {
                    let reached = if reverse { a } else { b };
                    if seen.insert(reached) {
                        out.push(reached);
                        next.push(reached);
                    }
                }
            }
            frontier = next;
        }
        Ok(out)
    }
}
