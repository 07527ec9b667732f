//! Quad patterns: one index scan per pattern, bound from the row on the
//! left; basic graph patterns as chains of such scans (index nested loops).

use super::{one, Evaluator, Rows};
use crate::error::Result;
use crate::plan::{GraphSlot, Plan, QuadPlan, Row, Slot, Var};
use rhizome_rdf::{QuadPattern, TermId};
use rustc_hash::FxHashSet;
use std::rc::Rc;

impl<'a> Evaluator<'a> {
    pub(super) fn bgp(self: &Rc<Self>, patterns: &'a [QuadPlan], input: Row) -> Rows<'a> {
        let mut rows = one(input);
        for p in patterns {
            let ev = self.clone();
            rows = Box::new(rows.flat_map(move |r| match r {
                Ok(row) => ev.scan_quad(p, row),
                Err(e) => super::fail(e),
            }));
        }
        rows
    }

    fn named_allowed(&self, g: TermId) -> bool {
        g != TermId::DEFAULT_GRAPH && self.dataset.named.as_ref().is_none_or(|list| list.contains(&g))
    }

    /// The graphs a pattern scans (`None`: every graph at once) and whether
    /// quads of the plain default graph must be skipped.
    pub(super) fn graphs_of(&self, g: GraphSlot, row: &Row) -> (Vec<Option<TermId>>, bool) {
        match g {
            GraphSlot::Default => match &self.dataset.default {
                None => (vec![self.space.default_graph()], false),
                Some(list) => (list.iter().map(|g| Some(*g)).collect(), false),
            },
            GraphSlot::Named(slot) => match slot.value(row) {
                Some(g) => (if self.named_allowed(g) { vec![Some(g)] } else { vec![] }, false),
                None => match &self.dataset.named {
                    Some(list) => (list.iter().map(|g| Some(*g)).collect(), false),
                    None => (vec![None], true),
                },
            },
        }
    }

    /// Every named graph of the dataset.
    pub(super) fn named_graphs(&self) -> Result<Vec<TermId>> {
        if let Some(list) = &self.dataset.named {
            return Ok(list.clone());
        }
        let mut seen = FxHashSet::default();
        let mut out = Vec::new();
        for q in self.space.scan(QuadPattern::default()) {
            let g = q?[3];
            if g != TermId::DEFAULT_GRAPH && seen.insert(g) {
                out.push(g);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn scan_quad(self: &Rc<Self>, p: &'a QuadPlan, row: Row) -> Rows<'a> {
        let (s, pr, o) = (p.s.value(&row), p.p.value(&row), p.o.value(&row));
        let (graphs, skip_default) = self.graphs_of(p.g, &row);
        let graph_var = match p.g {
            GraphSlot::Named(Slot::Var(v)) => Some(v),
            _ => None,
        };
        let ev = self.clone();
        Box::new(graphs.into_iter().flat_map(move |g| {
            let row = row.clone();
            ev.space.scan(QuadPattern { s, p: pr, o, g }).filter_map(move |q| {
                let q = match q {
                    Ok(q) => q,
                    Err(e) => return Some(Err(e.into())),
                };
                if skip_default && q[3] == TermId::DEFAULT_GRAPH {
                    return None;
                }
                bind_quad(&row, p, graph_var, &q).map(Ok)
            })
        }))
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
            Box::new(graphs.into_iter().map(move |g| {
                let mut r = row.clone();
                r[v] = Some(g);
                Ok(r)
            }))
        }))
    }
}

fn bind_quad(row: &Row, p: &QuadPlan, graph_var: Option<Var>, q: &[TermId; 4]) -> Option<Row> {
    let mut r = row.clone();
    for (slot, value) in [(p.s.var(), q[0]), (p.p.var(), q[1]), (p.o.var(), q[2]), (graph_var, q[3])] {
        if let Some(v) = slot {
            match r[v] {
                Some(x) if x != value => return None,
                _ => r[v] = Some(value),
            }
        }
    }
    Some(r)
}
