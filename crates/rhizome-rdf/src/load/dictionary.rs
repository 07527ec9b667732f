//! Assigning ids during a load.
//!
//! One thread resolves each chunk's distinct dictionary terms to ids: a
//! term seen earlier in this load is found in memory; else, if the store
//! had data before the load, in the store's dictionary; else it gets the
//! next id. New terms are kept (bytes and id) until the load writes them,
//! about 100 bytes per distinct new term: that, not the input size, is
//! what a load holds in memory besides its run buffer.

use super::parse::LocalTerm;
use crate::term::{tag, Dictionary, TermId};
use crate::Result;
use rhizome_kv::KvRead;
use rustc_hash::FxHashMap;

pub(crate) struct NewTerm {
    pub id: TermId,
    pub bytes: Box<[u8]>,
}

pub(crate) struct LoadDictionary<'a> {
    snapshot: &'a dyn KvRead,
    store_has_terms: bool,
    next_id: u64,
    by_hash: FxHashMap<u64, u32>,
    /// Every term this load has resolved, new or not.
    entries: Vec<(u8, Box<[u8]>, TermId, u64)>,
    collisions: FxHashMap<(u8, Box<[u8]>), TermId>,
    blanks: FxHashMap<(usize, Box<str>), TermId>,
    pub new_terms: u64,
}

impl<'a> LoadDictionary<'a> {
    pub fn new(snapshot: &'a dyn KvRead, next_id: u64, store_has_terms: bool) -> Self {
        LoadDictionary {
            snapshot,
            store_has_terms,
            next_id,
            by_hash: FxHashMap::default(),
            entries: Vec::new(),
            collisions: FxHashMap::default(),
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

    pub fn resolve(&mut self, t: LocalTerm) -> Result<TermId> {
        if let Some(&i) = self.by_hash.get(&t.hash) {
            let (etag, ebytes, id, _) = &self.entries[i as usize];
            if *etag == t.tag && **ebytes == *t.bytes {
                return Ok(*id);
            }
            // A 64-bit hash collision: rare, resolved by the bytes.
            let key = (t.tag, t.bytes);
            if let Some(id) = self.collisions.get(&key) {
                return Ok(*id);
            }
            let id = self.find_or_create(key.0, &key.1)?;
            self.entries.push((key.0, key.1.clone(), id, t.hash));
            self.collisions.insert(key, id);
            return Ok(id);
        }
        let id = self.find_or_create(t.tag, &t.bytes)?;
        self.by_hash.insert(t.hash, self.entries.len() as u32);
        self.entries.push((t.tag, t.bytes, id, t.hash));
        Ok(id)
    }

    /// The id of a dictionary term this load resolved or the store had
    /// before it, without adding it.
    pub fn existing(&self, tag: u8, bytes: &[u8]) -> Result<Option<TermId>> {
        if let Some((_, _, id, _)) = self.entries.iter().find(|(t, b, _, _)| *t == tag && **b == *bytes) {
            return Ok(Some(*id));
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

    /// The dictionary terms this load created, in id order.
    pub fn into_new_terms(self, first_new_id: u64) -> Vec<NewTerm> {
        self.entries
            .into_iter()
            .filter(|(_, _, id, _)| id.sequence() >= first_new_id)
            .map(|(_, bytes, id, _)| NewTerm { id, bytes })
            .collect()
    }
}
