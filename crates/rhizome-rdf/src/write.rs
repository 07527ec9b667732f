//! Small writes: a transaction that encodes terms (adding new ones to the
//! dictionary), inserts and removes quads in every index, and keeps the
//! counters true. Durable when `commit` returns; nothing of it is visible or
//! kept if it is dropped instead. SPARQL Update and document writes go
//! through here; bulk loads go through `load`.

use crate::index::layout::{self, meta, CLASS_STATS, GRAPHS, ID2TERM, META, PREDICATE_STATS, TERM2ID, VALUE_COUNTS};
use crate::stats::ValueState;
use crate::index::{Families, FamilyMarks, QuadPattern, QuadScan};
use crate::store::{graph_exists_in, read_u64, DatasetMode, Store};
use crate::term::{tag, term_key, Dictionary, IdCache, TermId, TermKey};
use crate::Result;
use oxrdf::{GraphNameRef, QuadRef, TermRef};
use rhizome_kv::{prefix_upper_bound, KvRead, Transaction};
use rustc_hash::{FxHashMap, FxHashSet};

pub struct StoreTransaction<'a> {
    txn: Transaction<'a>,
    /// The store's family marks, set before a quad goes into a family.
    families: std::sync::Arc<FamilyMarks>,
    mode: DatasetMode,
    next_id: u64,
    /// `next_id` when the transaction began: blank nodes numbered from here
    /// on are this transaction's own, so no committed quad holds them.
    first_id: u64,
    quads: u64,
    terms: u64,
    graphs: u64,
    /// Blank node labels of this transaction's input, scoped to it.
    blanks: FxHashMap<String, TermId>,
    /// Graphs whose quads (or existence) this transaction changed, in first
    /// change order: a document layer gives each a new revision.
    touched: Vec<TermId>,
    touched_set: FxHashSet<TermId>,
    key: Vec<u8>,
    /// Graphs and (subject, predicate) / (predicate, object) pairs that a
    /// removal may have emptied, checked once at commit. Checking at each
    /// removal would scan past every quad already deleted under the same
    /// prefix: quadratic for a DELETE WHERE or DROP of many quads sharing a
    /// graph or a predicate-object pair.
    maybe_gone: MaybeGone,
    /// Graphs and pairs this transaction inserted a quad of and has not
    /// removed one of since: they exist, with no need to look. Looking
    /// means a prefix seek, which steps over every key this transaction
    /// deleted under the prefix: replacing a graph (all its quads deleted,
    /// then the new ones inserted, sorting after the deleted ones when
    /// their blank nodes get new ids) looked over all the deleted quads
    /// for each insert, quadratic in the graph's size (a Graph Store PUT
    /// of 5,000 nested RDF/XML descriptions over the same took 10-50 s).
    present: MaybeGone,
    /// `rdf:type`'s id (set when this transaction adds the term): its
    /// quads are counted per class as well.
    rdf_type: Option<TermId>,
    /// The store's committed term ids, and the terms this transaction
    /// created, which join them once it commits.
    ids: std::sync::Arc<IdCache>,
    created: Vec<(u8, Box<[u8]>, TermId)>,
    /// `created` by hash of (tag, bytes): the latest term with that hash.
    /// A term met again in its own transaction (a document's IRI is the
    /// subject of each of its triples) is found here, not by a read.
    created_index: FxHashMap<u64, usize>,
    /// The last dictionary term [`Self::lookup`] found absent. Only this
    /// transaction writes, so it stays absent until `encode` creates it:
    /// a new document's IRI, looked up as its graph and then encoded as
    /// its subject, is searched for once (a miss reads every level).
    absent: std::cell::RefCell<Option<(u8, Vec<u8>)>>,
    /// Committed statistics kept across transactions (held from the
    /// first read to the commit, inside the store's writer lock).
    cache: std::sync::MutexGuard<'a, WriterCache>,
    /// The entries of `PREDICATE_STATS` this transaction changed, as they
    /// will be committed (written at commit).
    predicate_stats: FxHashMap<TermId, [u64; 3]>,
    /// The value-count state of each predicate this transaction wrote, as
    /// it will be committed, and as it was committed before; the counts
    /// of the (predicate, object) pairs it moved (written at commit).
    value_states: FxHashMap<TermId, (ValueState, ValueState)>,
    value_pairs: FxHashMap<(TermId, TermId), u64>,
    /// What this transaction did to each quad it wrote (`true`: inserted,
    /// `false`: removed): the same as its index keys in `txn`, which only
    /// `insert` and `remove` write. `contains` asks here rather than the
    /// overlay's ordered map (about 740 instructions a lookup, 200 of them
    /// an LDP PUT, issue 46). Empty where the transaction takes quads as
    /// tuples (segments): it keeps them so itself (`own_tuple`).
    own_quads: FxHashMap<[TermId; 4], bool>,
}

/// What one writer leaves the next, so that it does not read it back from
/// the store: the committed `PREDICATE_STATS` entries of recently written
/// predicates, and (predicate, term) pairs that committed quads have.
/// Written only under the store's writer lock, after a commit succeeded
/// (a pair a transaction may have emptied goes before it commits); bulk
/// loads and recounts clear it.
#[derive(Default)]
pub(crate) struct WriterCache {
    predicates: FxHashMap<TermId, [u64; 3]>,
    value_states: FxHashMap<TermId, ValueState>,
    value_pairs: FxHashMap<(TermId, TermId), u64>,
    pairs: FxHashSet<(TermId, TermId, bool)>,
    /// rdf:type's id as the last commit left it (`Some(None)`: no such
    /// term), so that a transaction does not look it up again: a miss
    /// searched every level, 2% of a Pokec write group.
    rdf_type: Option<Option<TermId>>,
}

/// Entries past which a cache map starts again empty (some tens of MB).
const WRITER_CACHE_ENTRIES: usize = 1 << 20;

impl WriterCache {
    pub(crate) fn clear(&mut self) {
        self.predicates.clear();
        self.value_states.clear();
        self.value_pairs.clear();
        self.pairs.clear();
        self.rdf_type = None;
    }
}

#[derive(Default)]
struct MaybeGone {
    graphs: FxHashSet<TermId>,
    /// (predicate, other term, whether the other term is the object).
    pairs: FxHashSet<(TermId, TermId, bool)>,
}

fn term_hash(tag: u8, bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    tag.hash(&mut h);
    bytes.hash(&mut h);
    h.finish()
}

/// Whether `id` was numbered by a transaction whose first new id was
/// `first_id` (see [`StoreTransaction::is_fresh`]).
fn is_fresh(id: TermId, first_id: u64) -> bool {
    (id.is_blank() || id.is_in_dictionary()) && id.sequence() >= first_id
}

impl Store {
    /// Starts a write transaction (waits for other writers).
    pub fn transaction(&self) -> Result<StoreTransaction<'_>> {
        let txn = self.kv().transaction()?;
        // After the writer lock: every user of the cache holds that first.
        let mut cache = self.writer_cache();
        if txn.changed_elsewhere() {
            // Another process wrote the store (a shared store): what the
            // cache carried from this process's last write may be stale.
            cache.clear();
        }
        let read = |k| read_u64(&txn, k);
        let (next_id, quads, terms, graphs) = (read(meta::NEXT_ID)?.max(1), read(meta::QUADS)?, read(meta::TERMS)?, read(meta::GRAPHS)?);
        let rdf_type = match cache.rdf_type {
            Some(known) => known,
            None => crate::stats::rdf_type_id(&txn)?,
        };
        Ok(StoreTransaction {
            txn,
            families: self.family_marks().clone(),
            mode: self.mode(),
            next_id,
            first_id: next_id,
            quads,
            terms,
            graphs,
            blanks: FxHashMap::default(),
            touched: Vec::new(),
            touched_set: FxHashSet::default(),
            key: Vec::new(),
            maybe_gone: MaybeGone::default(),
            present: MaybeGone::default(),
            rdf_type,
            ids: self.id_cache().clone(),
            created: Vec::new(),
            created_index: FxHashMap::default(),
            absent: std::cell::RefCell::new(None),
            cache,
            predicate_stats: FxHashMap::default(),
            value_states: FxHashMap::default(),
            value_pairs: FxHashMap::default(),
            own_quads: FxHashMap::default(),
        })
    }
}

impl<'a> StoreTransaction<'a> {
    /// Reads that see this transaction's own writes.
    pub fn reader(&self) -> &dyn KvRead {
        &self.txn
    }

    pub fn scan(&self, pattern: QuadPattern) -> QuadScan<'_> {
        QuadScan::new(&self.txn, pattern)
    }

    /// The graphs this transaction changed so far, in first-change order.
    pub fn touched_graphs(&self) -> &[TermId] {
        &self.touched
    }

    /// Forgets the graphs changed so far (a layer that already accounted
    /// for them, e.g. a document write projecting its own graph).
    pub fn clear_touched_graphs(&mut self) {
        self.touched.clear();
        self.touched_set.clear();
    }

    fn touch(&mut self, graph: TermId) {
        if self.touched_set.insert(graph) {
            self.touched.push(graph);
        }
    }

    /// The underlying key-value transaction, for layers that keep their own
    /// keyspaces beside the quads and must commit them atomically with
    /// them (documents: `rhizome-docs` owns keyspaces 30-49).
    pub fn kv(&self) -> &Transaction<'a> {
        &self.txn
    }

    /// Mutable access to the key-value transaction; see [`Self::kv`].
    pub fn kv_mut(&mut self) -> &mut Transaction<'a> {
        // Raw writes could add a term behind the memo's back.
        *self.absent.get_mut() = None;
        &mut self.txn
    }

    /// The id of a term, adding it to the dictionary if it is new. Blank
    /// nodes get fresh ids, one per label within this transaction.
    pub fn encode(&mut self, term: TermRef<'_>) -> Result<TermId> {
        match term_key(term) {
            TermKey::Inline(id) => Ok(id),
            TermKey::Blank(label) => {
                if let Some(id) = self.blanks.get(label) {
                    return Ok(*id);
                }
                let id = TermId::new(tag::BLANK, self.next_id);
                self.next_id += 1;
                self.blanks.insert(label.to_owned(), id);
                Ok(id)
            }
            TermKey::Dictionary { tag, bytes } => self.encode_entry(tag, bytes),
            TermKey::Triple(t) => {
                let s = self.encode(t.subject.as_ref().into())?;
                let p = self.encode(t.predicate.as_ref().into())?;
                let o = self.encode(t.object.as_ref())?;
                self.encode_entry(tag::TRIPLE, crate::term::triple_bytes(s, p, o).to_vec().into())
            }
        }
    }

    /// The id of a dictionary term given by its tag and bytes, adding it
    /// if it is new.
    fn encode_entry(&mut self, tag: u8, bytes: std::borrow::Cow<'_, [u8]>) -> Result<TermId> {
        if let Some(id) = self.ids.get(tag, &bytes).or_else(|| self.created_term(tag, &bytes)) {
            return Ok(id);
        }
        let known_absent = self.absent.get_mut().take_if(|(t, b)| *t == tag && b.as_slice() == bytes.as_ref()).is_some();
        if known_absent {
            // Created below.
        } else if let Some(id) = Dictionary::lookup_key(&self.txn.writing_misses(), tag, &bytes)? {
            if !self.is_fresh(id) {
                self.ids.insert(tag, &bytes, id);
            }
            return Ok(id);
        }
        let id = crate::term::new_dictionary_id(tag, &bytes, self.next_id)?;
        self.next_id += 1;
        self.terms += 1;
        let txn = &self.txn;
        let (key, value) = Dictionary::new_entry(tag, &bytes, id, |key| Ok(txn.get(TERM2ID, key)?))?;
        self.txn.put(TERM2ID, &key, &value);
        self.txn.put(ID2TERM, &id.to_be_bytes(), &bytes);
        if tag == crate::term::tag::IRI && bytes.as_ref() == crate::stats::RDF_TYPE.as_bytes() {
            self.rdf_type = Some(id);
        }
        self.created_index.insert(term_hash(tag, &bytes), self.created.len());
        self.created.push((tag, bytes.as_ref().into(), id));
        Ok(id)
    }

    /// A term this transaction created, by its tag and bytes.
    fn created_term(&self, tag: u8, bytes: &[u8]) -> Option<TermId> {
        let i = *self.created_index.get(&term_hash(tag, bytes))?;
        let (t, b, id) = &self.created[i];
        // Another term of the same hash: the dictionary answers.
        (*t == tag && b.as_ref() == bytes).then_some(*id)
    }

    /// The id of a term if the store (with this transaction's writes) has it.
    pub fn lookup(&self, term: TermRef<'_>) -> Result<Option<TermId>> {
        let TermKey::Dictionary { tag, bytes } = term_key(term) else {
            return Dictionary::lookup(&self.txn, term);
        };
        // A committed term keeps its id: the shared cache answers first.
        if let Some(id) = self.ids.get(tag, &bytes).or_else(|| self.created_term(tag, &bytes)) {
            return Ok(Some(id));
        }
        let found = Dictionary::lookup_key(&self.txn, tag, &bytes)?;
        if found.is_none() {
            *self.absent.borrow_mut() = Some((tag, bytes.into_owned()));
        }
        Ok(found)
    }

    /// Where a triple given without a graph goes: its subject's graph in a
    /// union store (the document model), the default graph in a plain one.
    pub fn default_graph_of(&self, subject: TermId) -> TermId {
        match self.mode {
            DatasetMode::Union => subject,
            DatasetMode::Plain => TermId::DEFAULT_GRAPH,
        }
    }

    /// Encodes a quad; a quad in the default graph goes to
    /// `default_graph_of` its subject.
    pub fn encode_quad(&mut self, quad: QuadRef<'_>) -> Result<[TermId; 4]> {
        let s = self.encode(quad.subject.into())?;
        let p = self.encode(quad.predicate.into())?;
        let o = self.encode(quad.object)?;
        let g = match quad.graph_name {
            GraphNameRef::DefaultGraph => self.default_graph_of(s),
            GraphNameRef::NamedNode(n) => self.encode(n.into())?,
            GraphNameRef::BlankNode(b) => self.encode(b.into())?,
        };
        Ok([s, p, o, g])
    }

    fn orderings(quad: &[TermId; 4]) -> &'static [layout::Ordering] {
        if layout::is_subject_graph(quad) {
            &layout::TRIPLE_ORDERINGS
        } else {
            &layout::QUAD_ORDERINGS
        }
    }

    pub fn contains(&mut self, quad: &[TermId; 4]) -> Result<bool> {
        // What this transaction wrote decides; then a quad with a term of
        // this transaction's own is in no committed index (no read).
        let own = if self.txn.takes_tuples() { self.txn.own_tuple(&quad.map(|t| t.0)) } else { self.own_quads.get(quad).copied() };
        if let Some(there) = own {
            return Ok(there);
        }
        if quad.iter().any(|t| self.is_fresh(*t)) {
            return Ok(false);
        }
        let ordering = Self::orderings(quad)[0];
        ordering.encode(quad, &mut self.key);
        Ok(self.txn.get(ordering.ks, &self.key)?.is_some())
    }

    fn has_prefix(reader: &dyn KvRead, ks: rhizome_kv::Keyspace, prefix: &[u8]) -> bool {
        let upper = prefix_upper_bound(prefix);
        let mut c = reader.cursor(ks, prefix, upper.as_deref());
        c.seek_first();
        c.valid()
    }

    /// Whether (s, p) or (p, o) occurs anywhere in `reader`, for distinct
    /// counts.
    fn pair_exists(reader: &dyn KvRead, a: TermId, b: TermId, triple_ks: rhizome_kv::Keyspace, quad_ks: rhizome_kv::Keyspace) -> bool {
        let prefix = [a.to_be_bytes(), b.to_be_bytes()].concat();
        Self::has_prefix(reader, triple_ks, &prefix) || Self::has_prefix(reader, quad_ks, &prefix)
    }

    /// A predicate's statistics as they stand in this transaction.
    fn predicate_stats(&mut self, p: TermId) -> Result<&mut [u64; 3]> {
        if !self.predicate_stats.contains_key(&p) {
            let c = match self.cache.predicates.get(&p) {
                Some(c) => *c,
                None => match self.txn.get(PREDICATE_STATS, &p.to_be_bytes())? {
                    Some(v) => crate::stats::decode_predicate_stats(&v)?,
                    None => [0; 3],
                },
            };
            self.predicate_stats.insert(p, c);
        }
        Ok(self.predicate_stats.get_mut(&p).expect("inserted above"))
    }

    fn bump_predicate(&mut self, quad: &[TermId; 4], delta: i64, new_s: bool, new_o: bool) -> Result<()> {
        let apply = |v: u64, d: i64| if d < 0 { v.saturating_sub(d.unsigned_abs()) } else { v + d as u64 };
        let c = self.predicate_stats(quad[1])?;
        c[0] = apply(c[0], delta);
        if new_s {
            c[1] = apply(c[1], delta);
        }
        if new_o {
            c[2] = apply(c[2], delta);
        }
        // A predicate whose quads all went keeps its entry (and its distinct
        // counts) until commit: the pairs its removals may have emptied are
        // uncounted then, from these counts. Deleting the entry here made a
        // graph replaced in one transaction end with distinct counts of 0.
        self.bump_value(quad[1], quad[2], delta, apply)
    }

    /// The quads of (`p`, `o`) counted, moved by `delta`, while `p` is
    /// counted; past the limit it stops being counted.
    fn bump_value(&mut self, p: TermId, o: TermId, delta: i64, apply: impl Fn(u64, i64) -> u64) -> Result<()> {
        let state = match self.value_states.get(&p) {
            Some((state, _)) => *state,
            None => {
                let state = match self.cache.value_states.get(&p) {
                    Some(state) => *state,
                    // Statistics and counts are written at commit: the
                    // transaction's reads see the committed ones.
                    None => crate::stats::value_state(&self.txn, p)?,
                };
                self.value_states.insert(p, (state, state));
                state
            }
        };
        let ValueState::Counted(objects) = state else { return Ok(()) };
        let before = match self.value_pairs.get(&(p, o)).or_else(|| self.cache.value_pairs.get(&(p, o))) {
            Some(n) => *n,
            // A pair with a term of this transaction's own has no committed
            // quad, so no committed count (counts are written at commit):
            // no read. A new literal's pair missed every level of the
            // engine, 16k instructions, for a third of an LDP PUT's quads.
            None if self.is_fresh(p) || self.is_fresh(o) => 0,
            None => crate::stats::value_count(&self.txn, p, o)?,
        };
        let after = apply(before, delta);
        let objects = match (before, after) {
            (0, 1..) => objects + 1,
            (1.., 0) => objects - 1,
            _ => objects,
        };
        let entry = self.value_states.get_mut(&p).expect("inserted above");
        if objects as usize > crate::stats::VALUE_COUNT_LIMIT {
            entry.0 = ValueState::Uncounted;
            self.value_pairs.retain(|k, _| k.0 != p);
        } else {
            entry.0 = ValueState::Counted(objects);
            self.value_pairs.insert((p, o), after);
        }
        Ok(())
    }

    /// The class count of a typed quad, moved by `delta`; the entry goes
    /// with the class's last quad.
    fn bump_class(&mut self, quad: &[TermId; 4], delta: i64) -> Result<()> {
        let Some(t) = self.rdf_type.filter(|t| *t == quad[1]) else { return Ok(()) };
        let key = crate::stats::class_key(t, quad[2]);
        let n = match self.txn.get(CLASS_STATS, &key)? {
            Some(v) => crate::stats::decode_count(&v)?,
            None => 0,
        };
        let n = if delta < 0 { n.saturating_sub(delta.unsigned_abs()) } else { n + delta as u64 };
        if n == 0 {
            self.txn.delete(CLASS_STATS, &key);
        } else {
            self.txn.put(CLASS_STATS, &key, &n.to_be_bytes());
        }
        Ok(())
    }

    /// One distinct subject (`column` 1) or object (2) of predicate `p` less.
    fn uncount_distinct(&mut self, p: TermId, column: usize) -> Result<()> {
        let c = self.predicate_stats(p)?;
        c[column] = c[column].saturating_sub(1);
        Ok(())
    }

    /// Whether committed quads have this pair (a prefix seek unless a
    /// writer before this one saw it).
    fn committed_pair(&self, pair: (TermId, TermId, bool)) -> bool {
        if self.cache.pairs.contains(&pair) {
            return true;
        }
        // Asked only of a pair this transaction has not written a quad of
        // (neither `present` nor `maybe_gone` holds it): the snapshot
        // answers, and the transaction's own quads are not sorted for it
        // (`Transaction::cursor` would, on segments).
        let (p, other, is_object) = pair;
        let committed = self.txn.base().as_ref();
        if is_object { Self::pair_exists(committed, p, other, layout::POS, layout::POSG) } else { Self::pair_exists(committed, other, p, layout::SPO, layout::SPOG) }
    }

    /// A term this transaction numbered (a blank node or a new dictionary
    /// term): no committed quad holds it.
    fn is_fresh(&self, id: TermId) -> bool {
        is_fresh(id, self.first_id)
    }

    /// Writes a quad's index keys (`there`) or their deletions: as one
    /// tuple where the store keeps its indexes in segments, which the
    /// transaction reads back as the keys and the commit hands to the
    /// quad log and delta as it is; else a key per ordering.
    fn write_keys(&mut self, quad: &[TermId; 4], there: bool) {
        if self.txn.takes_tuples() {
            self.txn.put_tuple(quad.map(|t| t.0), there);
            return;
        }
        for ordering in Self::orderings(quad) {
            ordering.encode(quad, &mut self.key);
            if there {
                self.txn.put(ordering.ks, &self.key, &[]);
            } else {
                self.txn.delete(ordering.ks, &self.key);
            }
        }
    }

    /// Whether a graph neither `present` nor `maybe_gone` holds exists.
    /// Without a `GRAPHS` write of this transaction's own, no quad of it
    /// was written either (only CREATE GRAPH takes a graph out of
    /// `maybe_gone` without putting it in `present`, and it writes that
    /// entry): the snapshot answers, and the transaction's own quads are
    /// not sorted for it (`Transaction::cursor` would, on segments).
    fn untouched_graph_exists(&self, graph: TermId) -> Result<bool> {
        if self.txn.own_write(GRAPHS, &graph.to_be_bytes()).is_some() {
            return graph_exists_in(&self.txn, graph);
        }
        // A graph named by a term of this transaction's own is in no
        // committed quad: new without a seek (a new document's graph).
        Ok(!self.is_fresh(graph) && graph_exists_in(self.txn.base().as_ref(), graph)?)
    }

    /// Adds a quad; `false` if it was there already.
    pub fn insert(&mut self, quad: &[TermId; 4]) -> Result<bool> {
        if self.contains(quad)? {
            return Ok(false);
        }
        // A graph or pair that an earlier removal may have emptied and this
        // insert fills again was never uncounted: it is not new. Either way
        // it exists from now on (`present`) until a removal under it. A
        // graph named by a term of this transaction's own, and not created
        // empty by it (CREATE GRAPH), is in no committed quad: new without
        // a seek (a new document's graph).
        let graph_is_new = !self.present.graphs.contains(&quad[3]) && !self.maybe_gone.graphs.remove(&quad[3]) && !self.untouched_graph_exists(quad[3])?;
        let s_pair = (quad[1], quad[0], false);
        let o_pair = (quad[1], quad[2], true);
        // A blank node of this transaction is in no committed quad: what
        // `present` and `maybe_gone` do not know of does not exist (no seek).
        let new_s = !self.present.pairs.contains(&s_pair)
            && !self.maybe_gone.pairs.remove(&s_pair)
            && (self.is_fresh(quad[0]) || self.is_fresh(quad[1]) || !self.committed_pair(s_pair));
        let new_o = !self.present.pairs.contains(&o_pair)
            && !self.maybe_gone.pairs.remove(&o_pair)
            && (self.is_fresh(quad[1]) || self.is_fresh(quad[2]) || !self.committed_pair(o_pair));
        self.present.graphs.insert(quad[3]);
        self.present.pairs.insert(s_pair);
        self.present.pairs.insert(o_pair);
        let triple = layout::is_subject_graph(quad);
        self.families.mark(Families { triples: triple, quads: !triple });
        self.write_keys(quad, true);
        if !self.txn.takes_tuples() {
            self.own_quads.insert(*quad, true);
        }
        self.quads += 1;
        self.touch(quad[3]);
        if graph_is_new {
            self.graphs += 1;
        }
        self.bump_predicate(quad, 1, new_s, new_o)?;
        self.bump_class(quad, 1)?;
        Ok(true)
    }

    /// Removes a quad; `false` if it was not there.
    pub fn remove(&mut self, quad: &[TermId; 4]) -> Result<bool> {
        if !self.contains(quad)? {
            return Ok(false);
        }
        self.write_keys(quad, false);
        if !self.txn.takes_tuples() {
            self.own_quads.insert(*quad, false);
        }
        self.quads -= 1;
        self.touch(quad[3]);
        let (s_pair, o_pair) = ((quad[1], quad[0], false), (quad[1], quad[2], true));
        self.present.graphs.remove(&quad[3]);
        self.present.pairs.remove(&s_pair);
        self.present.pairs.remove(&o_pair);
        self.maybe_gone.graphs.insert(quad[3]);
        self.maybe_gone.pairs.insert(s_pair);
        self.maybe_gone.pairs.insert(o_pair);
        self.bump_predicate(quad, -1, false, false)?;
        self.bump_class(quad, -1)?;
        Ok(true)
    }

    /// Whether a graph has quads or was created empty, with this
    /// transaction's writes (SPARQL CLEAR and DROP without SILENT).
    pub fn graph_exists(&self, graph: TermId) -> Result<bool> {
        // A graph this transaction inserted a quad of, and removed none of
        // since, holds that quad: no scan (on segments, a scan sorts the
        // transaction's quads of an ordering; a document write asks of the
        // graph it has just written).
        if self.present.graphs.contains(&graph) {
            return Ok(true);
        }
        graph_exists_in(&self.txn, graph)
    }

    /// Makes an empty graph exist (SPARQL CREATE).
    pub fn create_graph(&mut self, graph: TermId) -> Result<bool> {
        // (An LDP write creates its graph after its triples.)
        if self.graph_exists(graph)? {
            return Ok(false);
        }
        self.txn.put(GRAPHS, &graph.to_be_bytes(), &[]);
        if !self.maybe_gone.graphs.remove(&graph) {
            self.graphs += 1;
        }
        self.touch(graph);
        Ok(true)
    }

    /// Removes every quad of a graph and the graph itself.
    pub fn drop_graph(&mut self, graph: TermId) -> Result<u64> {
        let explicit = self.txn.get(GRAPHS, &graph.to_be_bytes())?.is_some();
        if explicit {
            self.txn.delete(GRAPHS, &graph.to_be_bytes());
            self.touch(graph);
        }
        let quads: Vec<[TermId; 4]> = self.scan(QuadPattern { g: Some(graph), ..Default::default() }).collect::<Result<_>>()?;
        // Without its GRAPHS entry, the graph stops existing (and is
        // uncounted) with its last quad.
        let mut n = 0;
        for q in &quads {
            if self.remove(q)? {
                n += 1;
            }
        }
        if explicit && quads.is_empty() && !self.maybe_gone.graphs.contains(&graph) {
            self.graphs = self.graphs.saturating_sub(1);
        }
        Ok(n)
    }

    /// Durable when it returns.
    pub fn commit(mut self) -> Result<()> {
        let maybe_gone = std::mem::take(&mut self.maybe_gone);
        for g in maybe_gone.graphs {
            if !graph_exists_in(&self.txn, g)? {
                self.graphs = self.graphs.saturating_sub(1);
            }
        }
        for pair in maybe_gone.pairs {
            let (p, other, is_object) = pair;
            let gone = if is_object { !Self::pair_exists(&self.txn, p, other, layout::POS, layout::POSG) } else { !Self::pair_exists(&self.txn, other, p, layout::SPO, layout::SPOG) };
            if gone {
                // Before the commit: a later writer must not find it.
                self.cache.pairs.remove(&pair);
                self.uncount_distinct(p, if is_object { 2 } else { 1 })?;
            }
        }
        // The statistics and counters are the transaction's last writes,
        // never read back: written past its overlay (`put_unread`). Only
        // the value counts of a cleared predicate are looked up, by a
        // cursor over the keys longer than these entries' own (or, with
        // the entry, of a predicate that writes none of them here).
        // A predicate left without quads loses its entries.
        let mut cleared = Vec::new();
        for (p, c) in &self.predicate_stats {
            if c[0] == 0 {
                self.txn.delete_unread(PREDICATE_STATS, &p.to_be_bytes());
                // With its value counts: the entry and any counts a load
                // left behind when it took the predicate past the limit.
                cleared.push((*p, true));
                self.value_states.insert(*p, (ValueState::Counted(0), ValueState::Counted(0)));
            } else {
                self.txn.put_unread(PREDICATE_STATS, &p.to_be_bytes(), &crate::stats::encode_predicate_stats(c));
                match self.value_states.get(p) {
                    // A count above 0 committed before is a key with that
                    // value: unchanged, it is not written again (most of an
                    // LDP PUT's predicates keep their objects' count: 100
                    // writes of 450, issue 46). A 0 may be no key at all.
                    Some((ValueState::Counted(n), before)) if *n > 0 && *before == ValueState::Counted(*n) => {}
                    Some((state @ ValueState::Counted(_), _)) => self.txn.put_unread(VALUE_COUNTS, &p.to_be_bytes(), &crate::stats::encode_value_state(*state)),
                    // Past the limit now: its counts go.
                    Some((ValueState::Uncounted, before)) if *before != ValueState::Uncounted => {
                        self.txn.put_unread(VALUE_COUNTS, &p.to_be_bytes(), &crate::stats::encode_value_state(ValueState::Uncounted));
                        cleared.push((*p, false));
                    }
                    _ => {}
                }
            }
        }
        for (p, with_entry) in &cleared {
            let prefix = p.to_be_bytes();
            let upper = prefix_upper_bound(&prefix);
            let mut keys = Vec::new();
            let mut cursor = self.txn.cursor(VALUE_COUNTS, &prefix, upper.as_deref());
            cursor.seek_first();
            while cursor.valid() {
                if *with_entry || cursor.key().len() > 8 {
                    keys.push(cursor.key().to_vec());
                }
                cursor.next();
            }
            cursor.status()?;
            drop(cursor);
            for k in keys {
                self.txn.delete(VALUE_COUNTS, &k);
            }
        }
        for ((p, o), n) in &self.value_pairs {
            if matches!(self.value_states.get(p), Some((ValueState::Counted(_), _))) {
                let key = crate::stats::value_key(*p, *o);
                if *n == 0 {
                    self.txn.delete_unread(VALUE_COUNTS, &key);
                } else {
                    self.txn.put_unread(VALUE_COUNTS, &key, &n.to_be_bytes());
                }
            }
        }
        self.txn.put_unread(META, meta::NEXT_ID, &self.next_id.to_be_bytes());
        self.txn.put_unread(META, meta::QUADS, &self.quads.to_be_bytes());
        self.txn.put_unread(META, meta::TERMS, &self.terms.to_be_bytes());
        self.txn.put_unread(META, meta::GRAPHS, &self.graphs.to_be_bytes());
        let StoreTransaction { txn, ids, created, mut cache, predicate_stats, value_states, value_pairs, present, first_id, rdf_type, .. } = self;
        // `cache` is held until the end: the next writer waits for it after
        // taking the writer lock that `commit` releases.
        txn.commit()?;
        cache.rdf_type = Some(rdf_type);
        for (tag, bytes, id) in created {
            ids.insert(tag, &bytes, id);
        }
        if cache.predicates.len() + predicate_stats.len() > WRITER_CACHE_ENTRIES {
            cache.predicates.clear();
        }
        cache.predicates.extend(predicate_stats);
        if cache.value_states.len() + value_states.len() > WRITER_CACHE_ENTRIES || cache.value_pairs.len() + value_pairs.len() > WRITER_CACHE_ENTRIES {
            cache.value_states.clear();
            cache.value_pairs.clear();
        }
        for (p, (state, _)) in value_states {
            if state == ValueState::Uncounted || state == ValueState::Counted(0) {
                // Counts of it kept from before are no longer the store's.
                cache.value_pairs.retain(|k, _| k.0 != p);
            }
            cache.value_states.insert(p, state);
        }
        let cache = &mut *cache;
        let states = &cache.value_states;
        cache.value_pairs.extend(value_pairs.into_iter().filter(|((p, _), _)| states.get(p).is_some_and(|s| *s != ValueState::Uncounted)));
        // Pairs with a term of this transaction's own are left out: only a
        // later write of that new term can meet them again, and a document
        // rewritten finds them among the pairs its removals may have
        // emptied (no seek). A new document's were most of the cache's
        // growth, and 6% of the work all group commits wait on.
        if cache.pairs.len() + present.pairs.len() > WRITER_CACHE_ENTRIES {
            cache.pairs.clear();
        }
        cache.pairs.extend(present.pairs.into_iter().filter(|(_, term, _)| !is_fresh(*term, first_id)));
        Ok(())
    }
}
