//! The store: opening, modes, snapshots and the META counters.

use crate::index::layout::{self, meta, GRAPHS, META};
use crate::index::{Families, FamilyMarks, QuadPattern, QuadScan};
use crate::term::{term_key, Dictionary, IdCache, TermCache, TermId, TermKey};
use crate::{Error, Result};
use oxrdf::{Term, TermRef};
use rhizome_kv::{Kv, KvRead, Snapshot};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the default graph is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetMode {
    /// The document model: triples without a graph go to their subject's
    /// graph, and the default graph is the union of all graphs.
    Union,
    /// A plain RDF dataset: the default graph is a graph of its own.
    Plain,
}

impl DatasetMode {
    fn as_bytes(self) -> &'static [u8] {
        match self {
            DatasetMode::Union => b"union",
            DatasetMode::Plain => b"plain",
        }
    }
}

pub struct Store {
    kv: Kv,
    mode: DatasetMode,
    path: Option<PathBuf>,
    terms: Arc<TermCache>,
    /// Committed terms' ids, for write transactions' encoding.
    ids: Arc<IdCache>,
    /// Committed statistics writers reuse (see `WriterCache`); locked
    /// only by the holder of the store's writer lock.
    writer_cache: std::sync::Mutex<crate::write::WriterCache>,
    families: Arc<FamilyMarks>,
}

/// Whether a store exists at `path`: the embedded engine's folder, or a
/// store of that name in the process's shared store (`rhizome_kv::remote`).
fn is_store_dir(path: &Path) -> bool {
    rhizome_kv::remote::store_exists(path).unwrap_or(false)
}

pub(crate) fn read_u64(snapshot: &dyn KvRead, key: &[u8]) -> Result<u64> {
    Ok(match snapshot.get(META, key)? {
        Some(v) if v.len() == 8 => u64::from_be_bytes(v.try_into().expect("8 bytes")),
        Some(_) => return Err(Error::Corrupt(format!("META {} is not a u64", String::from_utf8_lossy(key)))),
        None => 0,
    })
}

impl Store {
    /// Opens the store at `path`; it must exist.
    pub fn open(path: &Path) -> Result<Store> {
        if !is_store_dir(path) {
            return Err(Error::NoStore(path.to_owned()));
        }
        Self::open_kv(Kv::open(path)?, Some(path.to_owned()), None)
    }

    /// Opens an existing store for reading only (queries, dumps): faster
    /// to open, nothing written; writes fail. Writers are kept out while
    /// it is open, as by `open`.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !is_store_dir(path) {
            return Err(Error::NoStore(path.to_owned()));
        }
        Self::open_kv(Kv::open_read_only(path)?, Some(path.to_owned()), None)
    }

    /// Opens the store at `path`, creating it in `mode` if it does not exist.
    /// An existing store keeps its mode; asking for another is an error.
    pub fn open_or_create(path: &Path, mode: Option<DatasetMode>) -> Result<Store> {
        Self::open_kv(Kv::open(path)?, Some(path.to_owned()), mode)
    }

    /// A store in memory (tests, one-shot tools).
    pub fn memory(mode: DatasetMode) -> Store {
        Self::open_kv(Kv::memory(), None, Some(mode)).expect("a new memory store opens")
    }

    fn open_kv(kv: Kv, path: Option<PathBuf>, wanted: Option<DatasetMode>) -> Result<Store> {
        let snapshot = kv.snapshot()?;
        let mode = match snapshot.get(META, meta::MODE)? {
            Some(m) => {
                let version = read_u64(snapshot.as_ref(), meta::FORMAT_VERSION)?;
                if version != layout::FORMAT_VERSION {
                    return Err(Error::FormatVersion { found: version, expected: layout::FORMAT_VERSION });
                }
                let mode = match m.as_slice() {
                    b"union" => DatasetMode::Union,
                    b"plain" => DatasetMode::Plain,
                    other => return Err(Error::Corrupt(format!("unknown mode {}", String::from_utf8_lossy(other)))),
                };
                if let Some(w) = wanted {
                    if w != mode {
                        return Err(Error::Invalid(format!(
                            "the store is a {} dataset; it cannot be reopened as {}",
                            String::from_utf8_lossy(mode.as_bytes()),
                            String::from_utf8_lossy(w.as_bytes())
                        )));
                    }
                }
                mode
            }
            None => {
                let mode = wanted.unwrap_or(DatasetMode::Union);
                let mut txn = kv.transaction()?;
                txn.put(META, meta::FORMAT_VERSION, &layout::FORMAT_VERSION.to_be_bytes());
                txn.put(META, meta::MODE, mode.as_bytes());
                // Dictionary ids start at 1 so that no id is 0 in any tag.
                txn.put(META, meta::NEXT_ID, &1u64.to_be_bytes());
                txn.commit()?;
                mode
            }
        };
        let families = Arc::new(FamilyMarks::of(kv.snapshot()?.as_ref())?);
        if kv.is_shared() {
            // Other processes may put quads in a family this one saw empty;
            // its marks would not know, so every scan reads both.
            families.mark(crate::index::Families { triples: true, quads: true });
        }
        Ok(Store { kv, mode, path, terms: Arc::default(), ids: Arc::default(), writer_cache: Default::default(), families })
    }

    pub fn mode(&self) -> DatasetMode {
        self.mode
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub(crate) fn kv(&self) -> &Kv {
        &self.kv
    }

    pub(crate) fn id_cache(&self) -> &Arc<IdCache> {
        &self.ids
    }

    /// The writer cache; call only while holding the store's writer lock
    /// (a transaction or a bulk writer), which orders its users.
    pub(crate) fn writer_cache(&self) -> std::sync::MutexGuard<'_, crate::write::WriterCache> {
        self.writer_cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// See [`FamilyMarks`]: writers mark before they commit.
    pub(crate) fn family_marks(&self) -> &Arc<FamilyMarks> {
        &self.families
    }

    pub fn snapshot(&self) -> Result<StoreSnapshot> {
        let snapshot = self.kv.snapshot()?;
        // Read after the snapshot is taken: every family it has quads in is
        // marked by then.
        let families = self.families.get();
        Ok(StoreSnapshot { snapshot, mode: self.mode, terms: self.terms.clone(), ids: self.ids.clone(), families })
    }

    pub fn compact(&self) -> Result<()> {
        self.kv.compact()?;
        crate::stats::refresh(self)
    }

    /// The store's writer lock for a layer above that writes keyspaces of
    /// its own as sorted runs (documents made from a first load's graphs,
    /// `rhizome-docs`), ingested at once. Never for the RDF keyspaces:
    /// their counters and caches are kept by [`Store::load`] and
    /// transactions.
    pub fn bulk_writer(&self) -> Result<rhizome_kv::BulkWriter<'_>> {
        Ok(self.kv.bulk_writer()?)
    }

    /// See [`rhizome_kv::Kv::settle`].
    pub fn settle(&self, from: rhizome_kv::Keyspace, to: rhizome_kv::Keyspace) -> Result<()> {
        Ok(self.kv.settle(from, to)?)
    }
}

/// A consistent read view of the store.
pub struct StoreSnapshot {
    snapshot: Arc<dyn Snapshot>,
    mode: DatasetMode,
    terms: Arc<TermCache>,
    /// The store's committed term ids, shared with its writers.
    ids: Arc<IdCache>,
    families: Families,
}

impl StoreSnapshot {
    pub fn mode(&self) -> DatasetMode {
        self.mode
    }

    /// The index families that may hold quads in this snapshot (see
    /// [`FamilyMarks`]).
    pub fn families(&self) -> Families {
        self.families
    }

    pub fn kv(&self) -> &dyn Snapshot {
        self.snapshot.as_ref()
    }

    /// The graph pattern that means "the default graph" in this mode.
    pub fn default_graph(&self) -> Option<TermId> {
        match self.mode {
            DatasetMode::Union => None,
            DatasetMode::Plain => Some(TermId::DEFAULT_GRAPH),
        }
    }

    /// The quads matching a pattern, skipping index families that hold
    /// none (in union mode, while every quad is in its subject's graph, a
    /// lookup is one cursor instead of two).
    pub fn scan(&self, pattern: QuadPattern) -> QuadScan<'_> {
        QuadScan::new_in(self.snapshot.as_ref(), pattern, self.families)
    }

    /// Quads from subject `start` on, in subject id order.
    pub fn scan_from_subject(&self, start: TermId) -> QuadScan<'_> {
        QuadScan::subjects_from(self.snapshot.as_ref(), start, self.families)
    }

    /// The id of a term if the store has it. Ids found are shared with
    /// the store's other readers and writers: a term keeps its id for the
    /// store's life, so an id committed after this snapshot was taken is
    /// still the term's, and only finds none of the quads written with it.
    pub fn lookup(&self, term: TermRef<'_>) -> Result<Option<TermId>> {
        let TermKey::Dictionary { tag, bytes } = term_key(term) else {
            return Dictionary::lookup(self.snapshot.as_ref(), term);
        };
        if let Some(id) = self.ids.get(tag, &bytes) {
            return Ok(Some(id));
        }
        let id = Dictionary::lookup_key(self.snapshot.as_ref(), tag, &bytes)?;
        if let Some(id) = id {
            self.ids.insert(tag, &bytes, id);
        }
        Ok(id)
    }

    /// The term of an id (`None` for the default graph).
    pub fn decode(&self, id: TermId) -> Result<Option<Term>> {
        if !id.is_in_dictionary() {
            return Dictionary::decode(self.snapshot.as_ref(), id);
        }
        if let Some(t) = self.terms.get(id) {
            return Ok(Some(t));
        }
        let term = Dictionary::decode(self.snapshot.as_ref(), id)?;
        if let Some(t) = &term {
            self.terms.insert(id, t.clone());
        }
        Ok(term)
    }

    /// The terms of many ids, each given to `out` once (the default graph,
    /// which has no term, is skipped): from the shared cache, else all the
    /// others in one walk of the dictionary in id order, a step or two of
    /// one cursor each where [`decode`](Self::decode) would make a point
    /// lookup each. For readers that hold a batch of quads, such as an
    /// iterator handing them out one at a time.
    pub fn decode_many(&self, ids: &mut Vec<TermId>, mut out: impl FnMut(TermId, Term)) -> Result<()> {
        ids.sort_unstable();
        ids.dedup();
        let mut missing = Vec::new();
        for &id in ids.iter() {
            if id == TermId::DEFAULT_GRAPH {
                continue;
            }
            if !id.is_in_dictionary() {
                if let Some(t) = Dictionary::decode(self.snapshot.as_ref(), id)? {
                    out(id, t);
                }
            } else if let Some(t) = self.terms.get(id) {
                out(id, t);
            } else {
                missing.push(id);
            }
        }
        self.terms.decode_missing(self.snapshot.as_ref(), &mut missing, |id, t| out(id, t.clone()))
    }

    /// The decoded terms shared by the store's snapshots (see
    /// [`TermCache`]): for readers of this snapshot only, never for a
    /// write transaction's reads.
    pub fn term_cache(&self) -> &Arc<TermCache> {
        &self.terms
    }

    pub fn contains(&self, quad: &[TermId; 4]) -> Result<bool> {
        let mut key = Vec::with_capacity(32);
        let ordering = if layout::is_subject_graph(quad) { layout::TRIPLE_SPO } else { layout::QUAD_SPOG };
        ordering.encode(quad, &mut key);
        Ok(self.snapshot.get(ordering.ks, &key)?.is_some())
    }

    /// Whether a graph has quads or was created empty.
    pub fn graph_exists(&self, graph: TermId) -> Result<bool> {
        graph_exists_in(self.snapshot.as_ref(), graph)
    }
}

pub(crate) fn graph_exists_in(snapshot: &dyn KvRead, graph: TermId) -> Result<bool> {
    if snapshot.get(GRAPHS, &graph.to_be_bytes())?.is_some() {
        return Ok(true);
    }
    Ok(QuadScan::new(snapshot, QuadPattern { g: Some(graph), ..Default::default() }).next_quad()?.is_some())
}
