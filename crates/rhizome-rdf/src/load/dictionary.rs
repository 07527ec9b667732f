//! Assigning ids during a load.
//!
//! One thread resolves each chunk's distinct dictionary terms to ids: a
//! term seen earlier in this load is found in memory; else, if the store
//! had data before the load, in the store's dictionary; else it gets the
//! next id. New terms are kept (bytes and id) until the load writes them,
//! about 100 bytes per distinct new term: that, not the input size, is
//! what a load holds in memory besides its run buffer.
//!
//! The terms in memory are one open-addressed table of 32-byte slots
//! (hash, id, tag, where the bytes are) over one byte arena, not a map of
//! hashes to a list of boxed terms: a lookup is then two cache misses (the
//! slot, the bytes it is checked against) instead of four, and the id
//! assigner prefetches both for the terms a few places ahead
//! ([`LoadDictionary::prefetch`]) so that they overlap. At 4.8M triples
//! (1.04M new terms, resolved about 10M times) the old map's misses were
//! 17% of a load's CPU.

use crate::term::{tag, Dictionary, TermId, TermKey};
use crate::{Error, Result};
use rhizome_kv::KvRead;
use rustc_hash::FxHashMap;

/// A term this load created: its id and where its bytes are in
/// [`NewTerms::bytes`].
pub(crate) struct NewTerm {
    pub id: TermId,
    start: usize,
    len: usize,
}

/// The dictionary terms a load created.
pub(crate) struct NewTerms {
    pub terms: Vec<NewTerm>,
    arena: Vec<u8>,
}

impl NewTerms {
    pub fn bytes(&self, t: &NewTerm) -> &[u8] {
        &self.arena[t.start..t.start + t.len]
    }

    /// The bytes of every term together.
    pub fn arena_len(&self) -> usize {
        self.arena.len()
    }
}

/// A resolved term. `tag` 0 (the default graph's, which no dictionary
/// term has) marks an empty slot.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    hash: u64,
    id: u64,
    start: u64,
    len: u32,
    tag: u8,
}

const FIRST_SLOTS: usize = 1 << 12;

/// How many terms ahead the id assigner prefetches a slot; the bytes are
/// prefetched half as far ahead, once the slot is (likely) in cache.
pub(crate) const PREFETCH_AHEAD: usize = 16;

pub(crate) struct LoadDictionary<'a> {
    snapshot: &'a dyn KvRead,
    store_has_terms: bool,
    next_id: u64,
    /// Every term this load has resolved, new or not: linear probing over
    /// a power-of-two table at most half full. Two terms with the same
    /// hash (a 64-bit collision) are two slots, told apart by their bytes.
    slots: Vec<Slot>,
    used: usize,
    /// The bytes of every term in `slots`, one after the other.
    arena: Vec<u8>,
    blanks: FxHashMap<(usize, Box<str>), TermId>,
    pub new_terms: u64,
}

#[inline]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl<'a> LoadDictionary<'a> {
    pub fn new(snapshot: &'a dyn KvRead, next_id: u64, store_has_terms: bool) -> Self {
        LoadDictionary {
            snapshot,
            store_has_terms,
            next_id,
            slots: vec![Slot::default(); FIRST_SLOTS],
            used: 0,
            arena: Vec::new(),
            blanks: FxHashMap::default(),
            new_terms: 0,
        }
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    fn allocate(&mut self, tag: u8) -> TermId {
        let id = TermId::new(tag, self.next_id);
        self.next_id += 1;
        id
    }

    fn find_or_create(&mut self, tag: u8, bytes: &[u8]) -> Result<TermId> {
        if self.store_has_terms {
            if let Some(id) = Dictionary::lookup_key(self.snapshot, tag, bytes)? {
                return Ok(id);
            }
        }
        self.new_terms += 1;
        let id = crate::term::new_dictionary_id(tag, bytes, self.next_id)?;
        self.next_id += 1;
        Ok(id)
    }

    fn slot_bytes(&self, s: &Slot) -> &[u8] {
        &self.arena[s.start as usize..s.start as usize + s.len as usize]
    }

    /// The slot holding the term, or else the empty slot where it goes.
    fn find(&self, tag: u8, hash: u64, bytes: &[u8]) -> std::result::Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.tag == 0 {
                return Err(i);
            }
            if s.hash == hash && s.tag == tag && self.slot_bytes(s) == bytes {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Hints that the terms `ahead` and `ahead / 2` places on (by their
    /// hashes) will be resolved soon: loads their slot, and the bytes of
    /// the slot the nearer one's hash leads to.
    #[inline]
    pub fn prefetch(&self, far: Option<u64>, near: Option<u64>) {
        let mask = self.slots.len() - 1;
        if let Some(h) = far {
            prefetch(self.slots.as_ptr().wrapping_add(h as usize & mask));
        }
        if let Some(h) = near {
            let s = &self.slots[h as usize & mask];
            if s.tag != 0 && s.hash == h {
                prefetch(self.arena.as_ptr().wrapping_add(s.start as usize));
            }
        }
    }

    /// The id of a dictionary term (`hash` is `TermKey::hash` of its tag
    /// and bytes).
    pub fn resolve(&mut self, tag: u8, hash: u64, bytes: &[u8]) -> Result<TermId> {
        debug_assert_ne!(tag, 0, "the default graph is not a dictionary term");
        let empty = match self.find(tag, hash, bytes) {
            Ok(i) => return Ok(TermId(self.slots[i].id)),
            Err(i) => i,
        };
        let id = self.find_or_create(tag, bytes)?;
        let len = u32::try_from(bytes.len()).map_err(|_| Error::Invalid(format!("a term of {} bytes (at most 4 GiB)", bytes.len())))?;
        let start = self.arena.len() as u64;
        self.arena.extend_from_slice(bytes);
        self.slots[empty] = Slot { hash, id: id.0, start, len, tag };
        self.used += 1;
        if self.used * 2 > self.slots.len() {
            self.grow();
        }
        Ok(id)
    }

    pub fn resolve_iri(&mut self, iri: &str) -> Result<TermId> {
        self.resolve(tag::IRI, TermKey::hash(tag::IRI, iri.as_bytes()), iri.as_bytes())
    }

    fn grow(&mut self) {
        let slots = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, slots);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.tag != 0) {
            // Every term is distinct: the first empty slot is its place.
            let mut i = s.hash as usize & mask;
            while self.slots[i].tag != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// The id of a dictionary term this load resolved or the store had
    /// before it, without adding it.
    pub fn existing(&self, tag: u8, bytes: &[u8]) -> Result<Option<TermId>> {
        if let Ok(i) = self.find(tag, TermKey::hash(tag, bytes), bytes) {
            return Ok(Some(TermId(self.slots[i].id)));
        }
        if self.store_has_terms {
            return Dictionary::lookup_key(self.snapshot, tag, bytes);
        }
        Ok(None)
    }

    /// A blank node label of file `file`: fresh for this load.
    pub fn blank(&mut self, file: usize, label: &str) -> TermId {
        if let Some(id) = self.blanks.get(&(file, Box::from(label))) {
            return *id;
        }
        let id = self.allocate(tag::BLANK);
        self.blanks.insert((file, label.into()), id);
        id
    }

    /// The dictionary terms this load created, in no particular order.
    pub fn into_new_terms(self, first_new_id: u64) -> NewTerms {
        let terms = self
            .slots
            .iter()
            .filter(|s| s.tag != 0 && TermId(s.id).sequence() >= first_new_id)
            .map(|s| NewTerm { id: TermId(s.id), start: s.start as usize, len: s.len as usize })
            .collect();
        NewTerms { terms, arena: self.arena }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(dict: &mut LoadDictionary<'_>, tag: u8, text: &str) -> TermId {
        dict.resolve(tag, TermKey::hash(tag, text.as_bytes()), text.as_bytes()).unwrap()
    }

    #[test]
    fn a_term_resolves_to_one_id_through_growth_and_hash_collisions() {
        let store = rhizome_kv::Kv::memory();
        let snapshot = store.snapshot().unwrap();
        let mut dict = LoadDictionary::new(snapshot.as_ref(), 1, false);
        let n = 3 * FIRST_SLOTS;
        let mut ids = Vec::new();
        for i in 0..n {
            ids.push(resolve(&mut dict, tag::IRI, &format!("http://example.org/{i}")));
        }
        // Same hash, other bytes or tag: other terms (a forced collision).
        let ia = dict.resolve(tag::IRI, 7, b"http://a").unwrap();
        let ib = dict.resolve(tag::IRI, 7, b"http://b").unwrap();
        let ic = dict.resolve(tag::STRING, 7, b"http://a").unwrap();
        assert!(ia != ib && ib != ic && ia != ic);
        for i in (0..n).rev() {
            let text = format!("http://example.org/{i}");
            let hash = TermKey::hash(tag::IRI, text.as_bytes());
            dict.prefetch(Some(hash), Some(hash));
            assert_eq!(resolve(&mut dict, tag::IRI, &text), ids[i]);
        }
        assert_eq!(dict.resolve(tag::IRI, 7, b"http://b").unwrap(), ib);
        assert_eq!(dict.resolve(tag::STRING, 7, b"http://a").unwrap(), ic);
        assert_eq!(dict.existing(tag::IRI, b"http://example.org/5").unwrap(), Some(ids[5]));
        assert_eq!(dict.existing(tag::IRI, b"http://example.org/none").unwrap(), None);
        assert_eq!(dict.new_terms, n as u64 + 3);
        let new = dict.into_new_terms(1);
        assert_eq!(new.terms.len(), n + 3);
        let t = new.terms.iter().find(|t| t.id == ids[42]).unwrap();
        assert_eq!(new.bytes(t), b"http://example.org/42");
    }
}
