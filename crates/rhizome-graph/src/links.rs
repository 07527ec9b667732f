//! Reading a node's links from the quad indexes: a link is a quad whose
//! object is an IRI or a blank node (a literal is a value, not a node),
//! in any graph of the store (the union of a database's documents).
//! Lookups re-point a small pool of reusable scans instead of opening
//! RocksDB iterators per node (as `rhizome-sparql`'s property paths do).

use crate::{Error, Limits, Result};
use rhizome_rdf::index::Families;
use rhizome_rdf::term::Dictionary;
use rhizome_rdf::{QuadPattern, QuadScan, StoreSnapshot, TermId};

/// Where walks read quads: a store snapshot, or the reader a SPARQL query
/// runs on, with the index families known to hold quads.
#[derive(Clone, Copy)]
pub struct Source<'s> {
    kv: &'s dyn rhizome_kv::KvRead,
    families: Families,
}

impl<'s> Source<'s> {
    pub fn new(kv: &'s dyn rhizome_kv::KvRead, families: Families) -> Source<'s> {
        Source { kv, families }
    }

    pub fn of(snapshot: &'s StoreSnapshot) -> Source<'s> {
        Source { kv: snapshot.kv(), families: snapshot.families() }
    }

    pub(crate) fn scan(&self, pattern: QuadPattern) -> QuadScan<'s> {
        QuadScan::new_in(self.kv, pattern, self.families)
    }

    pub(crate) fn value_counts(&self, p: TermId) -> Result<Option<rhizome_rdf::ValueCounts>> {
        Ok(rhizome_rdf::value_counts(self.kv, p)?)
    }

    pub(crate) fn decode(&self, id: TermId) -> Result<Option<oxrdf::Term>> {
        Ok(Dictionary::decode(self.kv, id)?)
    }
}

/// Which way links are followed from a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Subject to object.
    Out,
    /// Object to subject.
    In,
    /// Both.
    Any,
}

impl Direction {
    /// The direction a search from the other end follows.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
            Direction::Any => Direction::Any,
        }
    }
}

/// Which links a walk follows: a direction and, optionally, predicates.
#[derive(Clone, Debug)]
pub struct LinkFilter {
    pub direction: Direction,
    /// `None`: every link. Sorted, without repeats (see [`LinkFilter::new`]).
    predicates: Option<Vec<TermId>>,
}

impl LinkFilter {
    pub fn new(direction: Direction, predicates: Option<Vec<TermId>>) -> LinkFilter {
        let predicates = predicates.map(|mut p| {
            p.sort_unstable();
            p.dedup();
            p
        });
        LinkFilter { direction, predicates }
    }

    pub fn reversed(&self) -> LinkFilter {
        LinkFilter { direction: self.direction.reverse(), predicates: self.predicates.clone() }
    }
}

/// Pooled scans kept by one reader: one per ordering a walk uses is enough.
const POOL: usize = 6;

/// With more predicates than this, a node's links are read with one scan
/// of all its quads, keeping the predicates asked for, rather than one
/// lookup per predicate.
const PER_PREDICATE_LOOKUPS: usize = 2;

/// Quads read between two looks at the clock.
const CLOCK_EVERY: u32 = 4096;

/// Reads links for one walk on one snapshot.
pub struct LinkReader<'s> {
    source: Source<'s>,
    filter: LinkFilter,
    pool: Vec<QuadScan<'s>>,
    limits: Limits,
    since_clock: u32,
    /// Quads read so far (for callers that report work done).
    pub quads_read: u64,
}

impl<'s> LinkReader<'s> {
    pub fn new(source: Source<'s>, filter: LinkFilter, limits: Limits) -> LinkReader<'s> {
        LinkReader { source, filter, pool: Vec::new(), limits, since_clock: 0, quads_read: 0 }
    }

    /// Calls `f` with every node linked to `node` (repeats possible: the
    /// same link in two graphs, or under two predicates).
    pub fn for_each(&mut self, node: TermId, mut f: impl FnMut(TermId)) -> Result<()> {
        let dir = self.filter.direction;
        if matches!(dir, Direction::Out | Direction::Any) {
            self.side(node, true, &mut f)?;
        }
        if matches!(dir, Direction::In | Direction::Any) {
            self.side(node, false, &mut f)?;
        }
        Ok(())
    }

    fn side(&mut self, node: TermId, out: bool, f: &mut impl FnMut(TermId)) -> Result<()> {
        let at = |p: Option<TermId>| if out { QuadPattern { s: Some(node), p, o: None, g: None } } else { QuadPattern { s: None, p, o: Some(node), g: None } };
        match self.filter.predicates.take() {
            Some(preds) if preds.len() <= PER_PREDICATE_LOOKUPS => {
                let mut result = Ok(());
                for p in &preds {
                    result = self.read(at(Some(*p)), out, None, f);
                    if result.is_err() {
                        break;
                    }
                }
                self.filter.predicates = Some(preds);
                result
            }
            Some(preds) => {
                let result = self.read(at(None), out, Some(&preds), f);
                self.filter.predicates = Some(preds);
                result
            }
            None => self.read(at(None), out, None, f),
        }
    }

    fn read(&mut self, pattern: QuadPattern, out: bool, keep: Option<&[TermId]>, f: &mut impl FnMut(TermId)) -> Result<()> {
        let at = self.pool.iter_mut().position(|scan| scan.rebind(pattern));
        let mut scan = match at {
            Some(i) => self.pool.swap_remove(i),
            None => QuadScan::reusable(self.source.kv, pattern, self.source.families),
        };
        let result = (|| {
            while let Some(q) = scan.next_quad()? {
                self.quads_read += 1;
                self.since_clock += 1;
                if self.since_clock >= CLOCK_EVERY {
                    self.since_clock = 0;
                    self.limits.check_time()?;
                }
                if keep.is_some_and(|k| k.binary_search(&q[1]).is_err()) {
                    continue;
                }
                let other = if out { q[2] } else { q[0] };
                if other.is_iri() || other.is_blank() {
                    f(other);
                }
            }
            Ok::<(), Error>(())
        })();
        if self.pool.len() < POOL {
            self.pool.push(scan);
        }
        result
    }
}
