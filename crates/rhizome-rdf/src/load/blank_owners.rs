//! Which document a blank node's triples belong to in a union store.
//!
//! A triple without a graph goes to its subject's graph, the subject's
//! document. A blank node has no document of its own: its triples belong
//! to the subject that references it (its concise bounded description), and
//! through chains of blank nodes (`<s> :p _:a . _:a :q _:b . _:b :r "x"`,
//! RDF lists) to the first IRI up the chain. The loader reads triples in
//! any order, so a blank node's triples read before the triple that
//! references it wait here until the end of the input.
//!
//! A blank node referenced by several subjects goes with the reference read
//! first (for N-Triples and N-Quads parsed in parallel, first to arrive);
//! one with no IRI up its chain (never referenced, or a cycle of blank
//! nodes) goes to the load's `orphan` graph if it has one, else to its own.
//!
//! Memory: 16 bytes per referenced blank node and 24 per blank-node triple
//! read before its owner is known.

use crate::term::TermId;
use rustc_hash::FxHashMap;

#[derive(Default)]
pub(crate) struct BlankOwners {
    /// Blank node -> the subject of the first triple that has it as object.
    referrer: FxHashMap<TermId, TermId>,
    /// Blank-node triples whose owner was not known when read.
    pending: Vec<[TermId; 3]>,
}

impl BlankOwners {
    /// Records a default-graph triple `s _ o`; the first referrer wins.
    pub fn refer(&mut self, s: TermId, o: TermId) {
        if o.is_blank() && o != s {
            self.referrer.entry(o).or_insert(s);
        }
    }

    /// The IRI up `b`'s chain of referrers, if the chain reaches one within
    /// a few steps (longer chains, and cycles, wait for [`Self::finish`],
    /// so that reading a long list stays linear).
    pub fn owner(&self, b: TermId) -> Option<TermId> {
        let mut at = b;
        for _ in 0..32 {
            if !at.is_blank() {
                return Some(at);
            }
            at = *self.referrer.get(&at)?;
        }
        None
    }

    pub fn wait(&mut self, triple: [TermId; 3]) {
        self.pending.push(triple);
    }

    pub fn bytes(&self) -> usize {
        self.pending.len() * 24 + self.referrer.len() * 16
    }

    /// The waiting triples with the graph each belongs to (its owner, or
    /// `None` when the chain reaches no IRI), once every triple is read.
    /// Resolves each chain once: a list of n blank nodes costs O(n).
    pub fn finish(self) -> impl Iterator<Item = ([TermId; 3], Option<TermId>)> {
        let BlankOwners { referrer, pending } = self;
        let mut resolved: FxHashMap<TermId, Option<TermId>> = FxHashMap::default();
        let mut path = Vec::new();
        let mut owner_of = move |b: TermId| -> Option<TermId> {
            path.clear();
            let mut at = b;
            let found = loop {
                if !at.is_blank() {
                    break Some(at);
                }
                // A node on this path is marked `None` until the walk ends:
                // meeting it again is a cycle, which reaches no IRI.
                if let Some(known) = resolved.get(&at) {
                    break *known;
                }
                resolved.insert(at, None);
                path.push(at);
                match referrer.get(&at) {
                    Some(next) => at = *next,
                    None => break None,
                }
            };
            for &p in &path {
                resolved.insert(p, found);
            }
            found
        };
        pending.into_iter().map(move |t| (t, owner_of(t[0])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::tag;

    fn iri(n: u64) -> TermId {
        TermId::new(tag::IRI, n)
    }
    fn blank(n: u64) -> TermId {
        TermId::new(tag::BLANK, n)
    }

    #[test]
    fn chains_reach_the_first_iri_whatever_the_order() {
        let mut o = BlankOwners::default();
        let (s, p, lit) = (iri(1), iri(2), iri(3));
        // _:2's triple arrives before anything references it.
        assert_eq!(o.owner(blank(2)), None);
        o.wait([blank(2), p, lit]);
        o.refer(blank(1), blank(2));
        o.refer(s, blank(1));
        o.refer(iri(9), blank(1)); // a second referrer: the first stays
        assert_eq!(o.owner(blank(1)), Some(s));
        assert_eq!(o.owner(blank(2)), Some(s));
        o.wait([blank(1), p, lit]);
        let out: Vec<_> = o.finish().collect();
        assert_eq!(out, vec![([blank(2), p, lit], Some(s)), ([blank(1), p, lit], Some(s))]);
    }

    #[test]
    fn cycles_and_unreferenced_blank_nodes_have_no_owner() {
        let mut o = BlankOwners::default();
        let p = iri(2);
        o.refer(blank(1), blank(2));
        o.refer(blank(2), blank(1));
        o.refer(blank(3), blank(3)); // a self-loop is no reference
        assert_eq!(o.owner(blank(1)), None);
        o.wait([blank(1), p, blank(2)]);
        o.wait([blank(3), p, blank(3)]);
        o.wait([blank(4), p, iri(5)]);
        assert!(o.finish().all(|(_, owner)| owner.is_none()));
    }

    #[test]
    fn long_lists_resolve() {
        let mut o = BlankOwners::default();
        let n = 100_000;
        for i in 0..n {
            o.wait([blank(i), iri(2), blank(i + 1)]);
        }
        for i in (0..n).rev() {
            o.refer(blank(i), blank(i + 1));
        }
        o.refer(iri(1), blank(0));
        assert!(o.finish().all(|(_, owner)| owner == Some(iri(1))));
    }
}
