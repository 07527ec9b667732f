//! Join order of a basic graph pattern: greedily the pattern with the fewest
//! expected rows given what is bound so far, preferring patterns connected
//! to the bound variables (no cartesian products while a connected pattern
//! is left). Estimates come from the store's per-predicate statistics.

use super::{QuadPlan, Slot};
use rhizome_rdf::{Stats, TermId};
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Clone, Debug, Default)]
pub struct Statistics {
    pub quads: u64,
    /// Per predicate: quads, distinct subjects, distinct objects.
    pub predicates: FxHashMap<TermId, [u64; 3]>,
    /// `rdf:type`'s id, and per class its quads: `?x a C` is estimated
    /// exactly, not as the predicate's average over its classes.
    pub rdf_type: Option<TermId>,
    pub classes: FxHashMap<TermId, u64>,
}

impl Statistics {
    pub fn from_store(stats: &Stats) -> Self {
        Statistics {
            quads: stats.quads,
            predicates: stats.predicates.iter().map(|p| (p.predicate, [p.quads, p.distinct_subjects, p.distinct_objects])).collect(),
            rdf_type: stats.rdf_type,
            classes: stats.classes.iter().copied().collect(),
        }
    }

    /// Expected rows of a pattern when the flagged positions are bound.
    pub fn estimate(&self, p: &QuadPlan, bound: &[bool; 3]) -> f64 {
        let rows = self.estimate_unfiltered(p, bound);
        // A scan restricted to object ranges by a filter: the share of the
        // index the ranges cover, or a guess of half where unknown.
        if p.o_ranges.is_some() && !bound[2] {
            rows * p.o_share.unwrap_or(0.5)
        } else {
            rows
        }
    }

    /// Whether the pattern's estimate alone (nothing bound from outside)
    /// is a count the store keeps for the whole store: a constant
    /// predicate with free subject and object, or `?x a C`.
    fn counts(&self, p: &QuadPlan) -> bool {
        let Slot::Const(pred) = p.p else { return false };
        let free = |s: Slot, other: Slot| matches!(s, Slot::Var(v) if other != Slot::Var(v));
        let typed = self.rdf_type == Some(pred) && matches!(p.o, Slot::Const(_)) && matches!(p.s, Slot::Var(_));
        p.g == super::GraphSlot::Default && p.o_ranges.is_none() && self.predicates.contains_key(&pred) && ((free(p.s, p.o) && free(p.o, p.s)) || typed)
    }

    fn estimate_unfiltered(&self, p: &QuadPlan, bound: &[bool; 3]) -> f64 {
        let total = self.quads.max(1) as f64;
        match p.p {
            Slot::Const(pred) => {
                let [q, ds, dobj] = self.predicates.get(&pred).copied().unwrap_or([0, 1, 1]);
                let q = q as f64;
                if let (Some(t), Slot::Const(class), false) = (self.rdf_type, p.o, bound[0]) {
                    if t == pred {
                        return self.classes.get(&class).copied().unwrap_or(0) as f64;
                    }
                }
                match (bound[0], bound[2]) {
                    (true, true) => 1.0_f64.min(q),
                    (true, false) => q / ds.max(1) as f64,
                    (false, true) => q / dobj.max(1) as f64,
                    (false, false) => q,
                }
            }
            Slot::Var(_) => match (bound[0], bound[1], bound[2]) {
                (true, _, true) => 2.0,
                (true, _, _) | (_, _, true) => 20.0,
                (_, true, _) => total / 10.0,
                _ => total,
            },
        }
    }
}

/// Orders patterns; `bound` are the variables the left context binds
/// before this BGP runs (index nested loops from a join's left side).
pub fn order_patterns(mut patterns: Vec<QuadPlan>, stats: &Statistics, bound: &[usize]) -> Vec<QuadPlan> {
    // A set: a BGP of thousands of patterns (a path of as many steps)
    // would otherwise cost n^3 lookups here.
    let mut bound_vars: FxHashSet<usize> = bound.iter().copied().collect();
    let mut out = Vec::with_capacity(patterns.len());
    // Expected rows so far, per row the BGP starts from.
    let mut rows = 1.0;
    while !patterns.is_empty() {
        let mut best = 0;
        let mut best_key = (true, f64::INFINITY);
        for (i, p) in patterns.iter().enumerate() {
            let is_bound = |s: Slot| match s {
                Slot::Const(_) => true,
                Slot::Var(v) => bound_vars.contains(&v),
            };
            let bound = [is_bound(p.s), is_bound(p.p), is_bound(p.o)];
            let connected = [p.s, p.p, p.o].iter().any(|s| matches!(s, Slot::Var(v) if bound_vars.contains(v)));
            let key = (!(connected || bound_vars.is_empty()), stats.estimate(p, &bound));
            if (!key.0 && best_key.0) || (key.0 == best_key.0 && key.1 < best_key.1) {
                best = i;
                best_key = key;
            }
        }
        let mut p = patterns.remove(best);
        let constant = |s: Slot| matches!(s, Slot::Const(_));
        p.alone_rows = Some(stats.estimate(&p, &[constant(p.s), constant(p.p), constant(p.o)]));
        p.left_rows = Some(rows);
        p.left_rows_counted = bound.is_empty() && out.len() == 1 && out.first().is_some_and(|first: &QuadPlan| stats.counts(first));
        rows *= best_key.1;
        for s in [p.s, p.p, p.o] {
            if let Slot::Var(v) = s {
                bound_vars.insert(v);
            }
        }
        if let super::GraphSlot::Named(Slot::Var(v)) = p.g {
            bound_vars.insert(v);
        }
        out.push(p);
    }
    out
}

/// Expected rows of an ordered BGP per row it starts from (`bound`: the
/// variables bound before it), as `order_patterns` estimates them.
pub fn bgp_rows(patterns: &[QuadPlan], stats: &Statistics, bound: &[usize]) -> f64 {
    let mut bound_vars: FxHashSet<usize> = bound.iter().copied().collect();
    let mut rows = 1.0;
    for p in patterns {
        let is_bound = |s: Slot| match s {
            Slot::Const(_) => true,
            Slot::Var(v) => bound_vars.contains(&v),
        };
        rows *= stats.estimate(p, &[is_bound(p.s), is_bound(p.p), is_bound(p.o)]);
        for s in [p.s, p.p, p.o] {
            if let Slot::Var(v) = s {
                bound_vars.insert(v);
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::GraphSlot;

    #[test]
    fn the_rare_predicate_goes_first_and_the_join_stays_connected() {
        let (common, rare, other) = (TermId(0x0200_0000_0000_0001), TermId(0x0200_0000_0000_0002), TermId(0x0200_0000_0000_0003));
        let mut stats = Statistics { quads: 1000, ..Default::default() };
        stats.predicates.insert(common, [900, 900, 10]);
        stats.predicates.insert(rare, [5, 5, 5]);
        stats.predicates.insert(other, [100, 100, 100]);
        let q = |s, p, o| QuadPlan { s: Slot::Var(s), p: Slot::Const(p), o: Slot::Var(o), g: GraphSlot::Default, o_ranges: None, o_share: None, alone_rows: None, left_rows: None, left_rows_counted: false };
        // ?a common ?b . ?c other ?d . ?a rare ?e
        let ordered = order_patterns(vec![q(0, common, 1), q(2, other, 3), q(0, rare, 4)], &stats, &[]);
        let preds: Vec<Slot> = ordered.iter().map(|p| p.p).collect();
        assert_eq!(preds, vec![Slot::Const(rare), Slot::Const(common), Slot::Const(other)]);
    }

    #[test]
    fn a_typed_subject_pattern_is_estimated_from_its_class_count() {
        let (ty, big, small) = (TermId(0x0200_0000_0000_0001), TermId(0x0200_0000_0000_0002), TermId(0x0200_0000_0000_0003));
        let mut stats = Statistics { quads: 10_000, rdf_type: Some(ty), ..Default::default() };
        stats.predicates.insert(ty, [5000, 5000, 2]);
        stats.classes.insert(big, 4900);
        stats.classes.insert(small, 100);
        let q = |o| QuadPlan {
            s: Slot::Var(0),
            p: Slot::Const(ty),
            o: Slot::Const(o),
            g: GraphSlot::Default,
            o_ranges: None,
            o_share: None,
            alone_rows: None,
            left_rows: None,
            left_rows_counted: false,
        };
        let unbound = [false, true, true];
        assert_eq!(stats.estimate(&q(big), &unbound), 4900.0);
        assert_eq!(stats.estimate(&q(small), &unbound), 100.0);
        assert_eq!(stats.estimate(&q(TermId(0x0200_0000_0000_0009)), &unbound), 0.0, "a class with no members");
        assert_eq!(stats.estimate(&q(big), &[true, true, true]), 1.0, "membership of a bound subject");
    }

    #[test]
    fn variables_bound_on_the_left_make_their_patterns_go_first() {
        let (big, small) = (TermId(0x0200_0000_0000_0001), TermId(0x0200_0000_0000_0002));
        let mut stats = Statistics { quads: 100_000, ..Default::default() };
        stats.predicates.insert(big, [90_000, 90_000, 90_000]);
        stats.predicates.insert(small, [1000, 1000, 1000]);
        let q = |s, p, o| QuadPlan { s: Slot::Var(s), p: Slot::Const(p), o: Slot::Var(o), g: GraphSlot::Default, o_ranges: None, o_share: None, alone_rows: None, left_rows: None, left_rows_counted: false };
        // OPTIONAL { ?x small ?y . ?a big ?x } with ?a bound on the left.
        let ordered = order_patterns(vec![q(1, small, 2), q(0, big, 1)], &stats, &[0]);
        assert_eq!(ordered[0].p, Slot::Const(big), "the pattern on the bound ?a is one lookup per left row");
    }
}
