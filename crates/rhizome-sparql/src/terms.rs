//! The term space of one query: stored terms keep their store ids; terms
//! the store does not hold (constants of the query, computed values) get
//! ids under the reserved `QUERY_LOCAL` tag, in memory only. Every term has
//! exactly one id (stored terms are looked up first, inlinable literals are
//! inlined), so id equality is term equality and joins compare ids.

use crate::error::Result;
use oxrdf::{Term, TermRef};
use rhizome_kv::KvRead;
use rhizome_rdf::term::{tag, term_key, Dictionary, TermCache, TermKey};
use rhizome_rdf::index::{families_present, Families};
use rhizome_rdf::{DatasetMode, QuadPattern, QuadScan, TermId};
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

pub struct TermSpace<'a> {
    reader: &'a dyn KvRead,
    mode: DatasetMode,
    local: RefCell<LocalTerms>,
    decoded: RefCell<FxHashMap<TermId, Term>>,
    /// Terms a sort decoded for its keys, kept for the rest of the query
    /// so the output finds them ([`TermSpace::pin`]).
    pinned: RefCell<FxHashMap<TermId, Term>>,
    /// The store's cache shared across queries, when reading a snapshot.
    shared: Option<Arc<TermCache>>,
    families: Cell<Option<Families>>,
}

#[derive(Default)]
struct LocalTerms {
    terms: Vec<Term>,
    ids: FxHashMap<Term, TermId>,
    /// What `terms` and `ids` hold, estimated: kept for the whole query,
    /// so it counts against the query's memory budget.
    bytes: usize,
}

/// Estimated bytes of a term kept twice (in the list and as a map key).
fn kept_bytes(t: &Term) -> usize {
    let text = match t {
        Term::NamedNode(n) => n.as_str().len(),
        Term::BlankNode(b) => b.as_str().len(),
        Term::Literal(l) => l.value().len() + l.language().map_or(0, str::len) + l.datatype().as_str().len(),
        Term::Triple(_) => 3 * 64,
    };
    2 * (text + std::mem::size_of::<Term>()) + 16
}

impl<'a> TermSpace<'a> {
    /// Terms of a store read through `reader` (a snapshot, or a write
    /// transaction that sees its own writes).
    pub fn new(reader: &'a dyn KvRead, mode: DatasetMode) -> Self {
        TermSpace { reader, mode, local: RefCell::default(), decoded: RefCell::default(), pinned: RefCell::default(), shared: None, families: Cell::new(None) }
    }

    /// The index families known to hold quads (a snapshot's, from the
    /// store's marks), instead of looking them up.
    pub fn with_families(self, families: Families) -> Self {
        self.families.set(Some(families));
        self
    }

    /// Decoded terms also go through the store's shared cache (see
    /// `rhizome_rdf::term::TermCache`: for snapshots only).
    pub fn with_shared_cache(mut self, cache: Arc<TermCache>) -> Self {
        self.shared = Some(cache);
        self
    }

    pub fn scan(&self, pattern: QuadPattern) -> QuadScan<'a> {
        QuadScan::new_in(self.reader, pattern, self.families())
    }

    /// Which index families hold quads, looked up once per query: the
    /// reader does not change while a query runs (an update's WHERE is
    /// evaluated whole before its writes).
    fn families(&self) -> Families {
        if let Some(f) = self.families.get() {
            return f;
        }
        let f = families_present(self.reader).unwrap_or_default();
        self.families.set(Some(f));
        f
    }

    /// Where graph walks read (`crate::graph_service`).
    pub fn graph_source(&self) -> rhizome_graph::Source<'a> {
        rhizome_graph::Source::new(self.reader, self.families())
    }

    /// A scan that can be re-pointed at other patterns
    /// ([`QuadScan::rebind`]), for index nested loops.
    pub fn lookup_scan(&self, pattern: QuadPattern) -> QuadScan<'a> {
        QuadScan::reusable(self.reader, pattern, self.families())
    }

    /// See `rhizome_rdf::quads_counted`.
    pub fn quads_counted(&self, p: Option<TermId>) -> Result<u64> {
        Ok(rhizome_rdf::quads_counted(self.reader, p)?)
    }

    /// See `rhizome_rdf::value_counts`.
    pub fn value_counts(&self, p: TermId) -> Result<Option<rhizome_rdf::ValueCounts>> {
        Ok(rhizome_rdf::value_counts(self.reader, p)?)
    }

    /// See `rhizome_rdf::index::approximate_bytes`.
    pub fn approximate_bytes(&self, pattern: QuadPattern, objects: Option<(TermId, TermId)>) -> Option<u64> {
        rhizome_rdf::index::approximate_bytes(self.reader, pattern, objects)
    }

    /// Every graph of the store, by a skip scan of the index keys.
    pub fn graph_names(&self) -> Result<Vec<TermId>> {
        Ok(rhizome_rdf::index::graph_names(self.reader)?)
    }

    /// The graph pattern of the store's default graph.
    pub fn default_graph(&self) -> Option<TermId> {
        match self.mode {
            DatasetMode::Union => None,
            DatasetMode::Plain => Some(TermId::DEFAULT_GRAPH),
        }
    }

    /// Bytes held by the terms the query computed (see `LocalTerms::bytes`).
    pub fn local_bytes(&self) -> usize {
        self.local.borrow().bytes
    }

    /// The id of a term: the store's if it has it, else a query-local one.
    pub fn encode(&self, term: TermRef<'_>) -> Result<TermId> {
        match term_key(term) {
            TermKey::Inline(id) => return Ok(id),
            // A blank node the store named (a decoded value, e.g. a
            // triple term's part) keeps its store id, so that it joins
            // with the rows that scanned it; others are the query's own.
            TermKey::Blank(_) => {
                if let Some(id) = Dictionary::lookup(self.reader, term)? {
                    return Ok(id);
                }
            }
            TermKey::Dictionary { .. } | TermKey::Triple(_) => {
                if let Some(id) = Dictionary::lookup(self.reader, term)? {
                    return Ok(id);
                }
            }
        }
        Ok(self.local_id(term.into_owned()))
    }

    fn local_id(&self, term: Term) -> TermId {
        let mut local = self.local.borrow_mut();
        if let Some(id) = local.ids.get(&term) {
            return *id;
        }
        let id = TermId::new(tag::QUERY_LOCAL, local.terms.len() as u64);
        local.bytes += kept_bytes(&term);
        local.terms.push(term.clone());
        local.ids.insert(term, id);
        id
    }

    /// Decodes the dictionary terms among `ids` into the cache at once
    /// ([`Dictionary::decode_many`]), so that the `decode` calls that
    /// follow find them there.
    pub fn prefetch(&self, mut ids: Vec<TermId>) -> Result<()> {
        // With the store's shared cache, terms are kept there alone: each
        // `decode` then clones a term once, not once per cache.
        {
            let pinned = self.pinned.borrow();
            if !pinned.is_empty() {
                ids.retain(|id| !pinned.contains_key(id));
            }
        }
        if let Some(shared) = &self.shared {
            ids.retain(|id| id.is_in_dictionary() && !shared.touch(*id));
            shared.decode_missing(self.reader, &mut ids, |_, _| {})?;
            return Ok(());
        }
        {
            let cache = self.decoded.borrow();
            ids.retain(|id| id.is_in_dictionary() && !cache.contains_key(id));
        }
        if ids.is_empty() {
            return Ok(());
        }
        let mut cache = self.decoded.borrow_mut();
        if cache.len() + ids.len() > 1 << 16 {
            cache.clear();
        }
        Dictionary::decode_many(self.reader, &mut ids, |id, term| {
            cache.insert(id, term);
        })?;
        Ok(())
    }

    /// The terms of `ids` (sorted and deduplicated here), each given to
    /// `out` once, for a caller that needs many at once (a sort's keys):
    /// those cached are copied, the others read in one walk of the
    /// dictionary ([`Dictionary::decode_many`]) and not added to the
    /// store's shared cache, so that a scan of more terms than it holds
    /// does not evict the terms other queries use again (a sort of 1.2M
    /// keys through it, each decoded alone, missed it for most).
    pub fn decode_batch(&self, ids: &mut Vec<TermId>, mut out: impl FnMut(TermId, Term)) -> Result<()> {
        ids.sort_unstable();
        ids.dedup();
        let mut missing = Vec::new();
        for &id in ids.iter() {
            if !id.is_in_dictionary() {
                out(id, self.decode(id)?);
                continue;
            }
            let cached = match &self.shared {
                Some(s) => s.with(id, Term::clone),
                None => self.decoded.borrow().get(&id).cloned(),
            };
            match self.pinned.borrow().get(&id).cloned().or(cached) {
                Some(t) => out(id, t),
                None => missing.push(id),
            }
        }
        Dictionary::decode_many(self.reader, &mut missing, &mut out)?;
        Ok(())
    }

    /// Keeps `terms` (decoded by a sort) for the rest of the query, where
    /// `decode` finds them first: a sort's rows are given in key order,
    /// so their ids would be decoded again in random order, each a miss
    /// of a cache smaller than the rows. Counted as the query's own terms
    /// against its memory budget.
    pub fn pin(&self, terms: impl IntoIterator<Item = (TermId, Term)>) {
        let mut pinned = self.pinned.borrow_mut();
        let mut bytes = 0;
        for (id, term) in terms {
            bytes += kept_bytes(&term) / 2;
            pinned.insert(id, term);
        }
        self.local.borrow_mut().bytes += bytes;
    }

    fn pinned(&self, id: TermId) -> Option<Term> {
        let pinned = self.pinned.borrow();
        if pinned.is_empty() {
            return None;
        }
        pinned.get(&id).cloned()
    }

    /// `f` of an id's term, without a copy where the term is cached
    /// (string filters over stored text read it in place).
    pub fn with_term<R>(&self, id: TermId, f: impl Fn(&Term) -> R) -> Result<R> {
        if id.is_in_dictionary() {
            if let Some(s) = &self.shared {
                if let Some(r) = s.with(id, &f) {
                    return Ok(r);
                }
                let term = self.decode(id)?;
                return Ok(f(&term));
            }
        }
        Ok(f(&self.decode(id)?))
    }

    pub fn decode(&self, id: TermId) -> Result<Term> {
        if id.tag() == tag::QUERY_LOCAL {
            let local = self.local.borrow();
            return local
                .terms
                .get(id.payload() as usize)
                .cloned()
                .ok_or_else(|| crate::SparqlError::Evaluation(format!("unknown query-local term {:#x}", id.0)));
        }
        if let Some(t) = self.pinned(id) {
            return Ok(t);
        }
        let shared = self.shared.as_ref().filter(|_| id.is_in_dictionary());
        if let Some(s) = shared {
            if let Some(t) = s.get(id) {
                return Ok(t);
            }
        } else if let Some(t) = self.decoded.borrow().get(&id) {
            return Ok(t.clone());
        }
        let term = Dictionary::decode(self.reader, id)?.ok_or_else(|| crate::SparqlError::Evaluation("the default graph is not a term".into()))?;
        match shared {
            Some(s) => s.insert(id, term.clone()),
            None => {
                let mut cache = self.decoded.borrow_mut();
                if cache.len() > 1 << 16 {
                    cache.clear();
                }
                cache.insert(id, term.clone());
            }
        }
        Ok(term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{Literal, NamedNode};
    use rhizome_rdf::{DatasetMode, Store};

    #[test]
    fn terms_outside_the_store_get_stable_local_ids_that_decode_back() {
        let store = Store::memory(DatasetMode::Plain);
        let snapshot = store.snapshot().unwrap();
        let space = TermSpace::new(snapshot.kv(), snapshot.mode());
        let iri: Term = NamedNode::new_unchecked("http://example.com/not-stored").into();
        let a = space.encode(iri.as_ref()).unwrap();
        assert_eq!(a.tag(), tag::QUERY_LOCAL);
        assert_eq!(space.encode(iri.as_ref()).unwrap(), a);
        assert_eq!(space.decode(a).unwrap(), iri);
        let small: Term = Literal::from(42).into();
        assert_eq!(space.encode(small.as_ref()).unwrap().tag(), tag::INTEGER);
    }
}
