//! Statistics: store-wide counters, per-predicate counts, per-class
//! counts (quads of `rdf:type` per object) and value counts (quads per
//! object of each predicate with few distinct objects), kept by every write
//! and recomputed exactly by `compact`. The SPARQL planner reads them, and
//! counts by value ("how many profiles of each age") are read from them
//! instead of scanning the predicate's quads.

use crate::index::layout::{self, meta, CLASS_STATS, GRAPHS, ID2TERM, META, PREDICATE_STATS, VALUE_COUNTS};
use crate::term::Dictionary;
use crate::store::{read_u64, DatasetMode, Store};
use crate::term::TermId;
use crate::{Error, Result};
use rhizome_kv::KvRead;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PredicateStats {
    pub predicate: TermId,
    pub quads: u64,
    pub distinct_subjects: u64,
    pub distinct_objects: u64,
}

#[derive(Clone, Debug)]
pub struct Stats {
    pub mode: DatasetMode,
    pub quads: u64,
    pub terms: u64,
    pub graphs: u64,
    /// 0 from `planner_stats` (walking the store's files is not free).
    pub bytes_on_disk: u64,
    pub predicates: Vec<PredicateStats>,
    /// `rdf:type`'s id, if the store has the term.
    pub rdf_type: Option<TermId>,
    /// Per class (object of `rdf:type`): its quads.
    pub classes: Vec<(TermId, u64)>,
}

pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// `rdf:type`'s id as `reader` sees it.
pub(crate) fn rdf_type_id(reader: &dyn KvRead) -> Result<Option<TermId>> {
    Dictionary::lookup(reader, oxrdf::NamedNodeRef::new_unchecked(RDF_TYPE).into())
}

pub(crate) fn class_key(rdf_type: TermId, class: TermId) -> [u8; 16] {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&rdf_type.to_be_bytes());
    k[8..].copy_from_slice(&class.to_be_bytes());
    k
}

pub(crate) fn decode_count(b: &[u8]) -> Result<u64> {
    b.try_into().map(u64::from_be_bytes).map_err(|_| Error::Corrupt("class statistics entry is not 8 bytes".into()))
}

pub(crate) fn encode_predicate_stats(c: &[u64; 3]) -> [u8; 24] {
    let mut b = [0; 24];
    for k in 0..3 {
        b[k * 8..k * 8 + 8].copy_from_slice(&c[k].to_be_bytes());
    }
    b
}

pub(crate) fn decode_predicate_stats(b: &[u8]) -> Result<[u64; 3]> {
    if b.len() != 24 {
        return Err(Error::Corrupt("predicate statistics entry is not 24 bytes".into()));
    }
    let mut c = [0; 3];
    for k in 0..3 {
        c[k] = u64::from_be_bytes(b[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
    }
    Ok(c)
}

/// Distinct objects past which a predicate's quads are no longer counted
/// per object. Fields users group by (a gender, an age, a country, a
/// status) have far fewer values; names and links have far more, and their
/// counts would be as large as an index.
pub const VALUE_COUNT_LIMIT: usize = 1024;

/// Quads per object of one predicate, by object id.
pub type ValueCounts = Vec<(TermId, u64)>;

/// A predicate's entry in `VALUE_COUNTS` (key: its id): tag 1 and how many
/// objects it has counts for (keys: predicate id, object id -> quads), or
/// tag 0 for a predicate that went past [`VALUE_COUNT_LIMIT`] (uncounted
/// until a recount finds it under the limit again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueState {
    Counted(u64),
    Uncounted,
}

pub(crate) fn encode_value_state(state: ValueState) -> Vec<u8> {
    match state {
        ValueState::Uncounted => vec![0],
        ValueState::Counted(n) => {
            let mut b = vec![1];
            b.extend_from_slice(&n.to_be_bytes());
            b
        }
    }
}

fn decode_value_state(b: &[u8]) -> Result<ValueState> {
    match b.split_first() {
        Some((0, [])) => Ok(ValueState::Uncounted),
        Some((1, n)) if n.len() == 8 => Ok(ValueState::Counted(u64::from_be_bytes(n.try_into().expect("8 bytes")))),
        _ => Err(Error::Corrupt("value counts entry is malformed".into())),
    }
}

/// A predicate's value-count state as `reader` sees it. A predicate without
/// an entry is counted (with nothing yet) if it has no quads, and
/// uncounted if it has some: statistics written before value counts.
pub(crate) fn value_state(reader: &dyn KvRead, p: TermId) -> Result<ValueState> {
    match reader.get(VALUE_COUNTS, &p.to_be_bytes())? {
        Some(b) => decode_value_state(&b),
        None => value_state_from(None, reader.get(PREDICATE_STATS, &p.to_be_bytes())?.is_some()),
    }
}

/// [`value_state`] from the predicate's two entries read already (a
/// load reads every predicate's together): its `VALUE_COUNTS` state
/// entry, and whether it has a `PREDICATE_STATS` entry.
pub(crate) fn value_state_from(state: Option<&[u8]>, has_predicate_stats: bool) -> Result<ValueState> {
    match state {
        Some(b) => decode_value_state(b),
        None if !has_predicate_stats => Ok(ValueState::Counted(0)),
        None => Ok(ValueState::Uncounted),
    }
}

pub(crate) fn value_key(p: TermId, o: TermId) -> [u8; 16] {
    class_key(p, o)
}

/// The quads of (`p`, `o`) counted in `reader` (0 when none).
pub(crate) fn value_count(reader: &dyn KvRead, p: TermId, o: TermId) -> Result<u64> {
    match reader.get(VALUE_COUNTS, &value_key(p, o))? {
        Some(v) => decode_count(&v),
        None => Ok(0),
    }
}

/// How many quads of predicate `p` (in every graph) have each object, by
/// object id (inlined numbers: by value), as `reader` sees it; `None` when
/// the predicate is not counted (more than [`VALUE_COUNT_LIMIT`] distinct
/// objects, or statistics written before value counts existed: `compact`
/// recounts). Exact for any snapshot: kept in the quads' own transactions.
pub fn value_counts(reader: &dyn KvRead, p: TermId) -> Result<Option<ValueCounts>> {
    if value_state(reader, p)? == ValueState::Uncounted {
        return Ok(None);
    }
    let prefix = p.to_be_bytes();
    let upper = rhizome_kv::prefix_upper_bound(&prefix);
    let mut cursor = reader.cursor(VALUE_COUNTS, &prefix, upper.as_deref());
    cursor.seek_first();
    let mut out = Vec::new();
    while cursor.valid() {
        // The predicate's own entry (8 bytes) sorts first; then its objects.
        if cursor.key().len() == 16 {
            out.push((TermId::from_be_slice(&cursor.key()[8..]), decode_count(cursor.value())?));
        }
        cursor.next();
    }
    cursor.status()?;
    Ok(Some(out))
}

/// The sum of two sets of counts; `None` if either is, or past the limit.
pub(crate) fn add_value_counts(a: Option<ValueCounts>, b: Option<&[(TermId, u64)]>) -> Option<ValueCounts> {
    let (a, b) = (a?, b?);
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                out.push((x.0, x.1 + y.1));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                out.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                out.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                out.push(*y);
                j += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    (out.len() <= VALUE_COUNT_LIMIT).then_some(out)
}

/// Builds per-predicate value counts from keys in (predicate, object, ...)
/// order, one call per key: a predicate's list is dropped (`None`) once it
/// passes the limit, so memory stays bounded by the limit per predicate.
/// The predicate being counted is kept aside (keys come grouped by it), so
/// a key costs a comparison, not a hash lookup.
#[derive(Default)]
pub(crate) struct ValueCounter {
    counts: FxHashMap<u64, Option<ValueCounts>>,
    current: Option<(u64, Option<ValueCounts>)>,
}

impl ValueCounter {
    pub fn add(&mut self, p: u64, o: u64) {
        if self.current.as_ref().is_none_or(|c| c.0 != p) {
            self.flush();
            let counts = self.counts.remove(&p).unwrap_or_else(|| Some(Vec::new()));
            self.current = Some((p, counts));
        }
        let (_, counts) = self.current.as_mut().expect("set above");
        let Some(list) = counts else { return };
        if let Some((_, n)) = list.last_mut().filter(|(last, _)| last.0 == o) {
            *n += 1;
        } else if list.len() >= VALUE_COUNT_LIMIT {
            *counts = None;
        } else {
            list.push((TermId(o), 1));
        }
    }

    fn flush(&mut self) {
        if let Some((p, counts)) = self.current.take() {
            self.counts.insert(p, counts);
        }
    }

    /// Each predicate's counts (`None`: past the limit).
    pub fn into_counts(mut self) -> FxHashMap<u64, Option<ValueCounts>> {
        self.flush();
        self.counts
    }
}

impl Store {
    /// Every statistic, with the bytes the store takes on disk.
    pub fn stats(&self) -> Result<Stats> {
        let mut stats = self.planner_stats()?;
        stats.bytes_on_disk = self.kv().size_on_disk()?;
        Ok(stats)
    }

    /// The statistics a query plan reads: counters, predicates and classes
    /// (no walk over the store's files).
    pub fn planner_stats(&self) -> Result<Stats> {
        let snapshot = self.snapshot()?;
        let kv = snapshot.kv();
        let mut predicates = Vec::new();
        let mut cursor = kv.cursor(PREDICATE_STATS, &[], None);
        cursor.seek_first();
        while cursor.valid() {
            let c = decode_predicate_stats(cursor.value())?;
            predicates.push(PredicateStats {
                predicate: TermId::from_be_slice(cursor.key()),
                quads: c[0],
                distinct_subjects: c[1],
                distinct_objects: c[2],
            });
            cursor.next();
        }
        cursor.status()?;
        let rdf_type = rdf_type_id(kv)?;
        let mut classes = Vec::new();
        if let Some(t) = rdf_type {
            let prefix = t.to_be_bytes();
            let upper = rhizome_kv::prefix_upper_bound(&prefix);
            let mut cursor = kv.cursor(CLASS_STATS, &prefix, upper.as_deref());
            cursor.seek_first();
            while cursor.valid() {
                classes.push((TermId::from_be_slice(&cursor.key()[8..]), decode_count(cursor.value())?));
                cursor.next();
            }
            cursor.status()?;
        }
        Ok(Stats {
            mode: self.mode(),
            quads: read_u64(kv, meta::QUADS)?,
            terms: read_u64(kv, meta::TERMS)?,
            graphs: read_u64(kv, meta::GRAPHS)?,
            bytes_on_disk: 0,
            predicates,
            rdf_type,
            classes,
        })
    }
}

/// The quads of predicate `p` in every graph (every quad of the store when
/// `None`), as seen by `reader`: read from the counters each write keeps in
/// the same transaction as its quads, so exact for any snapshot.
pub fn quads_counted(reader: &dyn KvRead, p: Option<TermId>) -> Result<u64> {
    match p {
        None => read_u64(reader, meta::QUADS),
        Some(p) => match reader.get(PREDICATE_STATS, &p.to_be_bytes())? {
            Some(v) => Ok(decode_predicate_stats(&v)?[0]),
            None => Ok(0),
        },
    }
}

fn count_keys(snapshot: &dyn KvRead, ks: rhizome_kv::Keyspace, mut each: impl FnMut(&[u8])) -> Result<u64> {
    let mut cursor = snapshot.cursor(ks, &[], None);
    cursor.seek_first();
    let mut n = 0;
    while cursor.valid() {
        each(cursor.key());
        n += 1;
        cursor.next();
    }
    cursor.status()?;
    Ok(n)
}

/// Calls `each` with the pair of leading ids of every key of two keyspaces
/// of the same key order, in that order (a merge of both scans), and
/// whether the pair is new (its first key).
fn key_pairs(snapshot: &dyn KvRead, a: rhizome_kv::Keyspace, b: rhizome_kv::Keyspace, mut each: impl FnMut(u64, u64, bool)) -> Result<()> {
    let (mut ca, mut cb) = (snapshot.cursor(a, &[], None), snapshot.cursor(b, &[], None));
    ca.seek_first();
    cb.seek_first();
    let pair = |k: &[u8]| (id_at(k, 0), id_at(k, 1));
    let mut last = None;
    loop {
        let next = match (ca.valid().then(|| pair(ca.key())), cb.valid().then(|| pair(cb.key()))) {
            (None, None) => break,
            (Some(x), Some(y)) if y < x => {
                cb.next();
                y
            }
            (Some(x), _) => {
                ca.next();
                x
            }
            (None, Some(y)) => {
                cb.next();
                y
            }
        };
        each(next.0, next.1, last != Some(next));
        last = Some(next);
    }
    ca.status()?;
    cb.status()?;
    Ok(())
}

fn id_at(key: &[u8], i: usize) -> u64 {
    u64::from_be_bytes(key[i * 8..i * 8 + 8].try_into().expect("key holds ids"))
}

/// Recomputes every counter exactly with full index scans.
pub(crate) fn refresh(store: &Store) -> Result<()> {
    let mut txn = store.kv().transaction()?;
    let snapshot = txn.base().clone();
    let snapshot = snapshot.as_ref();
    let mut per_p: BTreeMap<u64, [u64; 3]> = BTreeMap::new();
    let mut graphs: Vec<u64> = Vec::new();
    let mut last: Option<u64> = None;
    let triples = count_keys(snapshot, layout::SPO, |k| {
        let (s, p) = (id_at(k, 0), id_at(k, 1));
        per_p.entry(p).or_default()[0] += 1;
        if last != Some(s) {
            graphs.push(s);
        }
        last = Some(s);
    })?;
    let quads = count_keys(snapshot, layout::SPOG, |k| per_p.entry(id_at(k, 1)).or_default()[0] += 1)?;
    // A pair in both families (a triple in its subject's graph and a quad
    // in another graph) is one distinct subject or object, not two.
    key_pairs(snapshot, layout::SPO, layout::SPOG, |_, p, new| {
        if new {
            per_p.entry(p).or_default()[1] += 1
        }
    })?;
    let mut values = ValueCounter::default();
    key_pairs(snapshot, layout::POS, layout::POSG, |p, o, new| {
        if new {
            per_p.entry(p).or_default()[2] += 1;
        }
        values.add(p, o);
    })?;
    let rdf_type = rdf_type_id(snapshot)?.map(|t| t.0);
    let mut classes: BTreeMap<u64, u64> = BTreeMap::new();
    if let Some(t) = rdf_type {
        for ks in [layout::POS, layout::POSG] {
            let prefix = t.to_be_bytes();
            let upper = rhizome_kv::prefix_upper_bound(&prefix);
            let mut cursor = snapshot.cursor(ks, &prefix, upper.as_deref());
            cursor.seek_first();
            while cursor.valid() {
                *classes.entry(id_at(cursor.key(), 1)).or_default() += 1;
                cursor.next();
            }
            cursor.status()?;
        }
    }
    let mut last = None;
    count_keys(snapshot, layout::GSPO, |k| {
        let g = id_at(k, 0);
        if last != Some(g) {
            graphs.push(g);
        }
        last = Some(g);
    })?;
    count_keys(snapshot, GRAPHS, |k| graphs.push(id_at(k, 0)))?;
    graphs.sort_unstable();
    graphs.dedup();
    let terms = count_keys(snapshot, ID2TERM, |_| {})?;
    let mut old = Vec::new();
    count_keys(snapshot, PREDICATE_STATS, |k| old.push(k.to_vec()))?;
    for k in old {
        txn.delete(PREDICATE_STATS, &k);
    }
    for (p, c) in &per_p {
        txn.put(PREDICATE_STATS, &p.to_be_bytes(), &encode_predicate_stats(c));
    }
    let mut old = Vec::new();
    count_keys(snapshot, VALUE_COUNTS, |k| old.push(k.to_vec()))?;
    for k in old {
        txn.delete(VALUE_COUNTS, &k);
    }
    let values = values.into_counts();
    for p in per_p.keys() {
        let p = TermId(*p);
        match values.get(&p.0).and_then(Option::as_deref) {
            Some(counts) => {
                txn.put(VALUE_COUNTS, &p.to_be_bytes(), &encode_value_state(ValueState::Counted(counts.len() as u64)));
                for (o, n) in counts {
                    txn.put(VALUE_COUNTS, &value_key(p, *o), &n.to_be_bytes());
                }
            }
            None => txn.put(VALUE_COUNTS, &p.to_be_bytes(), &encode_value_state(ValueState::Uncounted)),
        }
    }
    let mut old = Vec::new();
    count_keys(snapshot, CLASS_STATS, |k| old.push(k.to_vec()))?;
    for k in old {
        txn.delete(CLASS_STATS, &k);
    }
    if let Some(t) = rdf_type {
        for (class, n) in &classes {
            txn.put(CLASS_STATS, &class_key(TermId(t), TermId(*class)), &n.to_be_bytes());
        }
    }
    txn.put(META, meta::QUADS, &(triples + quads).to_be_bytes());
    txn.put(META, meta::GRAPHS, &(graphs.len() as u64).to_be_bytes());
    txn.put(META, meta::TERMS, &terms.to_be_bytes());
    // Under the writer lock still: writers must not reuse the old counts.
    store.writer_cache().clear();
    Ok(txn.commit()?)
}
