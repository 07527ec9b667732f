//! The store: opening, modes, snapshots and the META counters.

use crate::index::layout::{self, meta, GRAPHS, META};
use crate::index::{Families, FamilyMarks, QuadPattern, QuadScan};
use crate::term::{term_key, Dictionary, IdCache, TermCache, TermId, TermKey};
use crate::{Error, Result};
use oxrdf::{Term, TermRef};
use crate::segmented::{Location, MergeSettings, SegmentedBackend};
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
    /// The backend under `kv` when the quad indexes are in segments.
    segments: Option<Arc<SegmentedBackend>>,
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

/// `RHIZOME_INDEXES=keys`: stores on disk keep their quad indexes as keys
/// in the engine (format 2, as a backend without local files does), for
/// comparisons with segments and to run the tests on that path; `segments`
/// (the default) keeps them in segments.
fn indexes_as_keys() -> Result<bool> {
    match std::env::var("RHIZOME_INDEXES") {
        Err(_) => Ok(false),
        Ok(v) if v == "segments" => Ok(false),
        Ok(v) if v == "keys" => Ok(true),
        Ok(v) => Err(Error::Invalid(format!("RHIZOME_INDEXES is `segments` or `keys`, not {v:?}"))),
    }
}

impl Store {
    /// Opens the store at `path`; it must exist. A store of the previous
    /// format (quad indexes as keys) is migrated to segments first.
    pub fn open(path: &Path) -> Result<Store> {
        if !is_store_dir(path) {
            return Err(Error::NoStore(path.to_owned()));
        }
        Self::open_segmented(path, false, None, None)
    }

    /// Opens an existing store for reading only (queries, dumps): faster
    /// to open, nothing written; writes fail. Writers are kept out while
    /// it is open, as by `open`.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !is_store_dir(path) {
            return Err(Error::NoStore(path.to_owned()));
        }
        Self::open_segmented(path, true, None, None)
    }

    /// Opens the store at `path`, creating it in `mode` if it does not exist.
    /// An existing store keeps its mode; asking for another is an error.
    pub fn open_or_create(path: &Path, mode: Option<DatasetMode>) -> Result<Store> {
        Self::open_segmented(path, false, mode, None)
    }

    /// [`Store::open_or_create`] with the delta merged as `settings` say
    /// rather than as the environment does (tests that want merges).
    pub fn open_or_create_with(path: &Path, mode: Option<DatasetMode>, settings: MergeSettings) -> Result<Store> {
        Self::open_segmented(path, false, mode, Some(settings))
    }

    /// The embedded engine at `path` with the quad indexes in segments
    /// (`path/segments`).
    fn open_segmented(path: &Path, read_only: bool, mode: Option<DatasetMode>, settings: Option<MergeSettings>) -> Result<Store> {
        // A store in the process's shared store (`--store`): no local
        // files, so its quad indexes are keys in it (as `over_kv`).
        if let Some(shared) = rhizome_kv::remote::open(path)? {
            return Self::open_kv(Kv::new(shared), Some(path.to_owned()), mode, None);
        }
        let inner = Kv::open_backend(path, read_only)?;
        if indexes_as_keys()? {
            return Self::open_kv(Kv::new(inner), Some(path.to_owned()), mode, None);
        }
        let dir = path.join("segments");
        if read_only {
            let snapshot = inner.snapshot()?;
            if snapshot.get(META, meta::MODE)?.is_some() && read_u64(snapshot.as_ref(), meta::FORMAT_VERSION)? == layout::KEYS_FORMAT_VERSION {
                return Err(Error::Invalid(format!(
                    "the store at {} is of format {} (quad indexes as keys); this build keeps them in segments (format {}) and moves a store over when it opens it for writing: run `rhizome --data {} compact` once (or start the server on it), then read it",
                    path.display(),
                    layout::KEYS_FORMAT_VERSION,
                    layout::FORMAT_VERSION,
                    path.display()
                )));
            }
        } else {
            crate::segmented::migrate::migrate(&inner, &dir)?;
        }
        let settings = match settings {
            Some(s) => s,
            None => MergeSettings::from_env()?,
        };
        let segments = SegmentedBackend::open(inner, Location::Dir(dir), !read_only, settings)?;
        Self::open_kv(Kv::new(segments.clone()), Some(path.to_owned()), mode, Some(segments))
    }

    /// A store in memory (tests, one-shot tools), its quad indexes in
    /// segments kept in memory, as on disk.
    pub fn memory(mode: DatasetMode) -> Store {
        if indexes_as_keys().unwrap_or(false) {
            return Self::open_kv(Kv::memory(), None, Some(mode), None).expect("a new memory store opens");
        }
        Self::memory_with(mode, MergeSettings { background: false, ..MergeSettings::default() })
    }

    /// [`Store::memory`] with the delta merged as `settings` say (tests
    /// that want merges to happen).
    pub fn memory_with(mode: DatasetMode, settings: MergeSettings) -> Store {
        let inner: Arc<dyn rhizome_kv::Backend> = Arc::new(rhizome_kv::MemoryBackend::new());
        let segments = SegmentedBackend::open(inner, Location::Memory, true, settings).expect("a new memory store opens");
        Self::open_kv(Kv::new(segments.clone()), None, Some(mode), Some(segments)).expect("a new memory store opens")
    }

    /// A store over any key-value backend, its quad indexes kept as keys
    /// in it (format 2): the path of a backend without local files, such
    /// as a cluster's. `Kv::memory()` stands in for one in tests.
    pub fn over_kv(kv: Kv, mode: Option<DatasetMode>) -> Result<Store> {
        Self::open_kv(kv, None, mode, None)
    }

    fn open_kv(kv: Kv, path: Option<PathBuf>, wanted: Option<DatasetMode>, segments: Option<Arc<SegmentedBackend>>) -> Result<Store> {
        let expected = if segments.is_some() { layout::FORMAT_VERSION } else { layout::KEYS_FORMAT_VERSION };
        let snapshot = kv.snapshot()?;
        let mode = match snapshot.get(META, meta::MODE)? {
            Some(m) => {
                let version = read_u64(snapshot.as_ref(), meta::FORMAT_VERSION)?;
                if version != expected {
                    return Err(Error::FormatVersion { found: version, expected });
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
                txn.put(META, meta::FORMAT_VERSION, &expected.to_be_bytes());
                txn.put(META, meta::MODE, mode.as_bytes());
                // Dictionary ids start at 1 so that no id is 0 in any tag.
                txn.put(META, meta::NEXT_ID, &1u64.to_be_bytes());
                txn.commit()?;
                mode
            }
        };
        drop(snapshot);
        let families = Arc::new(FamilyMarks::of(kv.snapshot()?.as_ref())?);
        if kv.is_shared() {
            // Other processes may put quads in a family this one saw empty;
            // its marks would not know, so every scan reads both.
            families.mark(crate::index::Families { triples: true, quads: true });
        }
        Ok(Store { kv, segments, mode, path, terms: Arc::default(), ids: Arc::default(), writer_cache: Default::default(), families })
    }

    /// The quad indexes' segments and delta, when the store keeps them so
    /// (every store but those made by [`Store::over_kv`]).
    pub fn segments(&self) -> Option<&Arc<SegmentedBackend>> {
        self.segments.as_ref()
    }

    /// Folds the quad indexes' delta into their segments now (a merge
    /// also happens by itself past a size or an age); `false` when there
    /// was nothing to fold or the indexes are keys.
    pub fn merge(&self) -> Result<bool> {
        match &self.segments {
            Some(s) => s.merge(),
            None => Ok(false),
        }
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

    /// A sorted run of a layer above's derived index, written without the
    /// writer lock, for a later [`Store::bulk_writer`] to ingest (see
    /// [`rhizome_kv::Kv::index_run_writer`]). Never for the RDF keyspaces.
    pub fn index_run_writer(&self, ks: rhizome_kv::Keyspace) -> Result<Box<dyn rhizome_kv::SortedRunWriter>> {
        Ok(self.kv.index_run_writer(ks)?)
    }

    /// Whether other processes write this store too (a cluster's shared
    /// store, whose ingestion is a batch commit, not files adopted).
    pub fn is_shared(&self) -> bool {
        self.kv.is_shared()
    }

    /// See [`rhizome_kv::Kv::settle`].
    pub fn settle(&self, from: rhizome_kv::Keyspace, to: rhizome_kv::Keyspace) -> Result<()> {
        Ok(self.kv.settle(from, to)?)
    }
}

impl Store {
    /// Stops the store's background work before the process exits: the
    /// segment merge (abandoning one under way; the quad log keeps the
    /// delta) and the engine's compactions, waiting for both. A server
    /// calls it for every open database when it stops, whoever else still
    /// holds the store: an engine thread still writing while the process
    /// exits can die in the engine's static destructors.
    pub fn stop_background_work(&self) {
        self.stop_merge();
        self.kv.stop_background_work();
    }

    fn stop_merge(&self) {
        if let Some(segments) = &self.segments {
            segments.close();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // The merge thread holds the engine while it merges: stopped
        // before the engine closes, so the store can be opened again.
        self.stop_merge();
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
