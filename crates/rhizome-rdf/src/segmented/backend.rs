//! [`SegmentedBackend`]: the engine wrapped so that the quad orderings
//! live in segments and deltas (see the module's documentation).

use super::carried::{is_carried, Carried, CarriedWrite};
use super::delta::Delta;
use super::manifest::{self, file_name, Manifest};
use super::merger::Merger;
use super::snapshot::SegmentedSnapshot;
use super::term_filter::TermFilter;
use super::view::{SegmentFile, View};
use super::write::{write_merged, Run};
use super::{columns, key_of, log, slot_of, slots_of, Key, ORDERINGS, QUAD_LOG, SEGMENT_SET, SLOTS};
use crate::index::layout::TERM2ID;
use crate::segment::{Segment, SegmentWriter};
use crate::{Error, Result};
use rhizome_kv::{Backend, Keyspace, Snapshot, SortedRun, SortedRunWriter, WriteBatch, WriteOp};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where segments are kept.
#[derive(Clone, Debug)]
pub enum Location {
    /// Files in this folder.
    Dir(PathBuf),
    /// In memory (memory stores: tests, one-shot tools).
    Memory,
}

/// When the delta is merged into new segments.
#[derive(Clone, Debug)]
pub struct MergeSettings {
    /// Quad changes in the delta past which a merge starts.
    pub delta_quads: u64,
    /// Age of the segment set past which a delta with any change is merged.
    pub max_age: Duration,
    /// Merge in a thread of the store's own (else in the commit that
    /// passes the size, after it).
    pub background: bool,
}

impl Default for MergeSettings {
    fn default() -> Self {
        // About 60 MB of delta for triples (three orderings of about 80
        // bytes a version); a merge rewrites the orderings changed.
        MergeSettings { delta_quads: 262_144, max_age: Duration::from_secs(600), background: true }
    }
}

impl MergeSettings {
    /// The defaults, changed by `RHIZOME_DELTA_QUADS` and
    /// `RHIZOME_DELTA_SECONDS`.
    pub fn from_env() -> Result<MergeSettings> {
        let mut settings = MergeSettings::default();
        let number = |name: &str| -> Result<Option<u64>> {
            match std::env::var(name) {
                Ok(v) => v.trim().parse().map(Some).map_err(|_| Error::Invalid(format!("{name} must be a whole number, not {v:?}"))),
                Err(_) => Ok(None),
            }
        };
        if let Some(n) = number("RHIZOME_DELTA_QUADS")? {
            settings.delta_quads = n.max(1);
        }
        if let Some(s) = number("RHIZOME_DELTA_SECONDS")? {
            settings.max_age = Duration::from_secs(s);
        }
        Ok(settings)
    }
}

/// Loads whose runs are in memory and hold fewer index keys than this
/// go through the log and the delta as one commit.
const SMALL_INGEST_KEYS: usize = 300_000;

/// What commits share: the log records after the cut, in order.
struct CommitState {
    log: Vec<u64>,
}

pub struct SegmentedBackend {
    inner: Arc<dyn Backend>,
    location: Location,
    writable: bool,
    settings: MergeSettings,
    view: Mutex<Arc<View>>,
    /// Odd while the view and the engine change together (a load's
    /// ingestion, a merge's new view): a reader taking a snapshot then
    /// waits, and one whose snapshot straddles a change takes it again.
    switching: AtomicU64,
    /// Held by every engine write (commits, a merge's record, a load's
    /// ingestion): the sequence number a commit will get is known.
    commit: Mutex<CommitState>,
    /// One merge or segment load at a time.
    merging: Mutex<()>,
    next_file: AtomicU64,
    /// Segment runs the loader finished, by path, with their slots.
    runs: Arc<Mutex<HashMap<PathBuf, usize>>>,
    /// Files of runs finished for keyspaces that carry no keys
    /// (`carried.rs`): an ingestion of only these needs no carried
    /// values flushed first.
    plain_runs: Arc<Mutex<std::collections::HashSet<PathBuf>>>,
    next_run: AtomicU64,
    closing: AtomicBool,
    merger: Mutex<Option<Merger>>,
    /// Every dictionary term key the store may hold (`term_filter.rs`):
    /// a lookup of a new term skips the engine's miss.
    terms: Arc<TermFilter>,
    /// The thread reading the engine's term keys into `terms` (stores
    /// with background merges; others read them at open).
    terms_filler: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its state whole or not at all.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_owned(), source }
}

fn engine(e: Error) -> rhizome_kv::Error {
    match e {
        Error::Storage(e) => e,
        other => rhizome_kv::Error::Engine(other.to_string()),
    }
}

/// Writes carried keys' values into an engine batch.
fn put_carried(batch: &mut WriteBatch, writes: Vec<CarriedWrite>) {
    for (ks, key, value) in writes {
        match value {
            Some(v) => batch.put(ks, &key, &v),
            None => batch.delete(ks, &key),
        }
    }
}

/// A commit's changes per slot, as keys.
fn keys_per_slot(changes: &[log::Change]) -> [Vec<(Key, bool)>; SLOTS] {
    let mut out: [Vec<(Key, bool)>; SLOTS] = Default::default();
    for (quad, there) in changes {
        for slot in slots_of(quad) {
            out[slot].push((key_of(slot, quad), *there));
        }
    }
    out
}

impl SegmentedBackend {
    /// Opens the segment set `inner` records (none yet in a new store),
    /// removes files it does not name (left by a crash or a merge whose
    /// readers are gone) and replays the log after its cut.
    pub fn open(inner: Arc<dyn Backend>, location: Location, writable: bool, settings: MergeSettings) -> Result<Arc<SegmentedBackend>> {
        if inner.latest_sequence().is_none() {
            return Err(Error::Invalid("the storage engine does not number its commits: its quad indexes cannot be kept in segments".into()));
        }
        if let (Location::Dir(dir), true) = (&location, writable) {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        // Nothing writes to the engine but through this backend, which
        // is not shared yet: every term key the snapshot lacks comes
        // later, into the filter first. Sized for the store's terms to
        // double (a new store's filter is small: one per database).
        let snapshot = inner.snapshot()?;
        let stored_terms = crate::store::read_u64(snapshot.as_ref(), crate::index::layout::meta::TERMS).unwrap_or(0);
        let terms = Arc::new(TermFilter::with_capacity(usize::try_from(stored_terms.saturating_mul(2)).unwrap_or(usize::MAX)));
        let manifest = match snapshot.get(SEGMENT_SET, manifest::KEY)? {
            Some(bytes) => Manifest::decode(&bytes)?,
            None => Manifest { next_file: 1, ..Default::default() },
        };
        let mut segments: [Option<Arc<SegmentFile>>; SLOTS] = Default::default();
        match &location {
            Location::Dir(dir) => {
                for (slot, (number, rows)) in manifest.files.iter().enumerate() {
                    if *number == 0 {
                        continue;
                    }
                    let path = dir.join(file_name(slot, *number));
                    let segment = Segment::open(&path)?;
                    if segment.rows() != *rows || segment.columns() != columns(slot) {
                        return Err(Error::Corrupt(format!(
                            "segment {} holds {} keys of {} ids; the segment set says {rows} of {}",
                            path.display(),
                            segment.rows(),
                            segment.columns(),
                            columns(slot)
                        )));
                    }
                    segments[slot] = Some(SegmentFile::new(segment, *number, Some(path)));
                }
                if writable {
                    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
                        let entry = entry.map_err(io(dir))?;
                        let name = entry.file_name();
                        if !manifest.names(&name.to_string_lossy()) {
                            let path = entry.path();
                            std::fs::remove_file(&path).map_err(io(&path))?;
                        }
                    }
                }
            }
            Location::Memory => {
                if manifest.files.iter().any(|(n, _)| *n != 0) {
                    return Err(Error::Invalid("a store kept in memory cannot open a segment set of files".into()));
                }
            }
        }
        let deltas: [Delta; SLOTS] = Default::default();
        let carried = Carried::default();
        let mut log = Vec::new();
        let mut stale = WriteBatch::default();
        {
            let mut cursor = snapshot.cursor(QUAD_LOG, &[], None);
            cursor.seek_first();
            while cursor.valid() {
                let key: [u8; 8] = cursor.key().try_into().map_err(|_| Error::Corrupt("a quad log key is not a sequence number".into()))?;
                let seq = u64::from_be_bytes(key);
                if seq <= manifest.cut {
                    stale.delete(QUAD_LOG, &key);
                } else {
                    let (changes, writes) = log::decode(cursor.value())?;
                    for (_, key, _) in writes.iter().filter(|w| w.0 == TERM2ID) {
                        terms.insert(key);
                    }
                    carried.apply(&writes, seq);
                    for (slot, keys) in keys_per_slot(&changes).into_iter().enumerate() {
                        if !keys.is_empty() {
                            deltas[slot].apply(keys, seq);
                        }
                    }
                    log.push(seq);
                }
                cursor.next();
            }
            cursor.status()?;
        }
        let background = settings.background && writable;
        let mut terms_filler = None;
        if writable {
            // A store whose writers merge in the background reads its
            // terms in the background too (a 4.8M-triple store's take
            // about a second); others before they can write.
            if background {
                let (filter, engine) = (terms.clone(), snapshot.clone());
                let thread = std::thread::Builder::new().name("rhizome-terms".into()).spawn(move || {
                    if let Err(e) = filter.fill_from(engine.as_ref()) {
                        // Left answering "maybe": lookups read the engine.
                        eprintln!("rhizome: reading the dictionary's terms into its filter failed: {e}");
                    }
                });
                terms_filler = Some(thread.map_err(|e| Error::Invalid(format!("cannot start the dictionary filter's thread: {e}")))?);
            } else {
                terms.fill_from(snapshot.as_ref())?;
            }
        }
        drop(snapshot);
        if writable && !stale.is_empty() {
            inner.commit(stale)?;
        }
        let view = View { segments, deltas, carried, cut: manifest.cut, created: Instant::now() };
        let tick = settings.max_age.clamp(Duration::from_millis(100), Duration::from_secs(60));
        let backend = Arc::new(SegmentedBackend {
            inner,
            location,
            writable,
            settings,
            view: Mutex::new(Arc::new(view)),
            switching: AtomicU64::new(0),
            commit: Mutex::new(CommitState { log }),
            merging: Mutex::new(()),
            next_file: AtomicU64::new(manifest.next_file.max(1)),
            runs: Default::default(),
            plain_runs: Default::default(),
            next_run: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            merger: Mutex::new(None),
            terms,
            terms_filler: Mutex::new(terms_filler),
        });
        if background {
            let merger = Merger::start(Arc::downgrade(&backend), tick).map_err(|e| Error::Invalid(format!("cannot start the merge thread: {e}")))?;
            *lock(&backend.merger) = Some(merger);
            if backend.merge_is_due() {
                backend.wake_merger();
            }
        }
        Ok(backend)
    }

    /// Stops the merge thread (abandoning a merge under way); the store
    /// calls it when it closes. Nothing is lost: the log holds the delta.
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let merger = lock(&self.merger).take();
        if let Some(mut merger) = merger {
            merger.stop();
        }
        // It holds an engine snapshot: stopped before the engine closes.
        self.terms.stop();
        if let Some(thread) = lock(&self.terms_filler).take() {
            let _ = thread.join();
        }
    }

    /// Whether the store may hold this `TERM2ID` key (`false`: it does
    /// not; see `term_filter.rs`), and whether "absent" is answered yet.
    pub fn term_may_be_stored(&self, key: &[u8]) -> bool {
        self.terms.may_hold(key)
    }

    /// Whether the dictionary's filter holds the engine's terms (it
    /// answers "absent"), and its bytes in memory.
    pub fn term_filter_state(&self) -> (bool, usize) {
        (self.terms.is_complete(), self.terms.bytes())
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    fn current(&self) -> Arc<View> {
        lock(&self.view).clone()
    }

    fn latest(&self) -> Result<u64> {
        self.inner.latest_sequence().ok_or_else(|| Error::Invalid("the storage engine stopped numbering its commits".into()))
    }

    /// Replaces the view while `change` changes the engine to match; a
    /// reader never pairs one with the other's state.
    fn switch<T>(&self, view: Arc<View>, change: impl FnOnce() -> Result<T>) -> Result<T> {
        self.switching.fetch_add(1, Ordering::SeqCst);
        let result = change();
        if result.is_ok() {
            *lock(&self.view) = view;
        }
        self.switching.fetch_add(1, Ordering::SeqCst);
        result
    }

    fn wake_merger(&self) {
        if let Some(merger) = lock(&self.merger).as_ref() {
            merger.wake();
        }
    }

    /// Whether the delta (or the statistics and terms carried with it) is past its size, or holds changes and the
    /// segment set is past its age.
    pub fn merge_is_due(&self) -> bool {
        let view = self.current();
        let quads = view.delta_quads();
        // Statistics carried in the log take memory too: past four
        // versions a quad change (a commit touches a predicate's entries
        // once or twice per quad, so only commits of statistics alone,
        // a recount, get there first).
        let carried_full = view.carried.versions() as u64 >= self.settings.delta_quads.saturating_mul(4)
            // And new terms' text: 64 MiB at the default size.
            || view.carried.bytes() as u64 >= self.settings.delta_quads.saturating_mul(256);
        quads >= self.settings.delta_quads || carried_full || (quads > 0 && view.created.elapsed() >= self.settings.max_age)
    }

    /// Quad changes in the delta now (versions of the first ordering of
    /// each family).
    pub fn delta_quads(&self) -> u64 {
        self.current().delta_quads()
    }

    /// The open segments: (ordering, file, rows, bytes).
    pub fn segment_files(&self) -> Vec<(String, Option<PathBuf>, u64, u64)> {
        let view = self.current();
        (0..SLOTS)
            .filter_map(|slot| view.segments[slot].as_ref().map(|f| (ORDERINGS[slot].name(), f.path.clone(), f.segment.rows(), f.segment.bytes())))
            .collect()
    }

    /// Bytes per ordering, column and encoding kind (`rhizome check`):
    /// `(ordering, column, kind, blocks, bytes)`.
    pub fn segment_columns(&self) -> Result<Vec<(String, usize, &'static str, usize, u64)>> {
        let view = self.current();
        let mut out = Vec::new();
        for (slot, file) in view.segments.iter().enumerate() {
            let Some(file) = file else { continue };
            let mut per_kind: std::collections::BTreeMap<(usize, &'static str), (usize, u64)> = Default::default();
            for (column, kind, _width, blocks, words) in file.segment.encoding_summary()? {
                let e = per_kind.entry((column, kind)).or_default();
                e.0 += blocks;
                e.1 += words as u64 * 8;
            }
            out.extend(per_kind.into_iter().map(|((column, kind), (blocks, bytes))| (ORDERINGS[slot].name(), column, kind, blocks, bytes)));
        }
        Ok(out)
    }

    /// Checks every block of every segment (checksums, encodings, order).
    pub fn verify_segments(&self) -> Result<()> {
        let view = self.current();
        for file in view.segments.iter().flatten() {
            file.segment.verify()?;
        }
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        if let Location::Dir(dir) = &self.location {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
        }
        Ok(())
    }

    /// Writes a slot's new segment: its keys a reader at `at` sees in
    /// `view`, with `runs`. `None` when it has no keys.
    fn write_slot(&self, view: &View, slot: usize, at: u64, runs: &[Run]) -> Result<Option<Arc<SegmentFile>>> {
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        let columns = columns(slot);
        match &self.location {
            Location::Dir(dir) => {
                let path = dir.join(file_name(slot, number));
                let mut writer = SegmentWriter::create(&path, columns)?;
                let rows = match write_merged(view, slot, at, runs, &mut writer, &self.closing) {
                    Ok(rows) => rows,
                    Err(e) => {
                        drop(writer);
                        let _ = std::fs::remove_file(&path);
                        return Err(e);
                    }
                };
                writer.finish()?;
                if rows == 0 {
                    std::fs::remove_file(&path).map_err(io(&path))?;
                    return Ok(None);
                }
                let segment = Segment::open(&path)?;
                Ok(Some(SegmentFile::new(segment, number, Some(path))))
            }
            Location::Memory => {
                let mut writer = SegmentWriter::in_memory(columns);
                let rows = write_merged(view, slot, at, runs, &mut writer, &self.closing)?;
                if rows == 0 {
                    return Ok(None);
                }
                let bytes = writer.finish_in_memory();
                let segment = Segment::from_bytes(&bytes, Path::new(&file_name(slot, number)))?;
                Ok(Some(SegmentFile::new(segment, number, None)))
            }
        }
    }

    fn manifest_of(&self, segments: &[Option<Arc<SegmentFile>>; SLOTS], cut: u64) -> Manifest {
        let mut files = [(0, 0); SLOTS];
        for (slot, file) in segments.iter().enumerate() {
            if let Some(f) = file {
                files[slot] = (f.number, f.segment.rows());
            }
        }
        Manifest { cut, next_file: self.next_file.load(Ordering::SeqCst), files }
    }

    /// Folds the delta into new segments of the orderings it changed, as
    /// of now (writers go on meanwhile; their changes stay in the delta).
    /// `false` when there was nothing to merge.
    /// A run writer of the engine's kind `make` (filtered or not,
    /// compressed or not) for `ks`, routed as `sorted_run_writer` routes:
    /// a quad ordering's run becomes a segment file whatever the kind.
    fn run_writer_of(&self, ks: Keyspace, make: impl FnOnce(&dyn Backend, Keyspace) -> rhizome_kv::Result<Box<dyn SortedRunWriter>>) -> rhizome_kv::Result<Box<dyn SortedRunWriter>> {
        if slot_of(ks).is_some() {
            return self.sorted_run_writer(ks);
        }
        let inner = make(self.inner.as_ref(), ks)?;
        Ok(if is_carried(ks) { self.filtered_terms(ks, inner) } else { Box::new(PlainRunWriter { inner, plain: self.plain_runs.clone() }) })
    }

    /// A run of `TERM2ID` inserts its keys into the term filter as they
    /// are written (before the run can be ingested); others as they are.
    fn filtered_terms(&self, ks: Keyspace, inner: Box<dyn SortedRunWriter>) -> Box<dyn SortedRunWriter> {
        if ks == TERM2ID {
            Box::new(TermRunWriter { inner, terms: self.terms.clone() })
        } else {
            inner
        }
    }

    pub fn merge(&self) -> Result<bool> {
        if !self.writable {
            return Ok(false);
        }
        let _merging = lock(&self.merging);
        let (view, cut) = {
            let _commit = lock(&self.commit);
            (self.current(), self.latest()?)
        };
        debug_assert!(cut >= view.cut, "sequence numbers only grow");
        let slots: Vec<usize> = (0..SLOTS).filter(|s| view.deltas[*s].any_at(cut)).collect();
        if slots.is_empty() && !view.carried.any_at(cut) {
            return Ok(false);
        }
        let mut written = Vec::with_capacity(slots.len());
        let result = (|| {
            for slot in slots {
                let file = self.write_slot(&view, slot, cut, &[])?;
                written.push((slot, file));
            }
            self.sync_dir()
        })();
        let retire_written = |written: &[(usize, Option<Arc<SegmentFile>>)]| {
            for file in written.iter().filter_map(|(_, f)| f.as_ref()) {
                file.retire();
            }
        };
        if let Err(e) = result {
            retire_written(&written);
            return Err(e);
        }
        let mut state = lock(&self.commit);
        let mut segments = view.segments.clone();
        for (slot, file) in &written {
            segments[*slot] = file.clone();
        }
        let manifest = self.manifest_of(&segments, cut);
        let mut batch = WriteBatch::default();
        batch.put(SEGMENT_SET, manifest::KEY, &manifest.encode());
        // The carried keys' values at the cut go to the engine with it.
        put_carried(&mut batch, view.carried.at(cut));
        let folded = state.log.iter().take_while(|seq| **seq <= cut).count();
        for seq in &state.log[..folded] {
            batch.delete(QUAD_LOG, &seq.to_be_bytes());
        }
        if let Err(e) = self.inner.commit(batch) {
            retire_written(&written);
            return Err(e.into());
        }
        state.log.drain(..folded);
        debug_assert!(Arc::ptr_eq(&view, &self.current()), "only merges and loads replace views, one at a time");
        let deltas = std::array::from_fn(|slot| view.deltas[slot].after(cut));
        let new = Arc::new(View { segments, deltas, carried: view.carried.after(cut), cut, created: Instant::now() });
        self.switch(new, || Ok(()))?;
        drop(state);
        for (slot, _) in &written {
            if let Some(old) = &view.segments[*slot] {
                old.retire();
            }
        }
        Ok(true)
    }

    /// A load of runs with segment files among them (or too large for the
    /// delta): each ordering loaded or with changes is written anew, and
    /// the new set goes into the engine in the same ingestion as the rest.
    fn ingest_segments(&self, index: Vec<(usize, Run)>, mut others: Vec<SortedRun>, run_paths: Vec<PathBuf>) -> Result<()> {
        let _merging = lock(&self.merging);
        let state = lock(&self.commit);
        let cut = self.latest()?;
        let view = self.current();
        let mut runs: [Vec<Run>; SLOTS] = Default::default();
        for (slot, run) in index {
            runs[slot].push(run);
        }
        let mut written: Vec<(usize, Option<Arc<SegmentFile>>)> = Vec::new();
        let result = (|| -> Result<()> {
            for slot in 0..SLOTS {
                let changed = view.deltas[slot].any_at(cut);
                if runs[slot].is_empty() && !changed {
                    continue;
                }
                // An empty ordering loaded from one file: the file is its
                // segment.
                if let (Location::Dir(dir), None, false, [Run::File(run)]) = (&self.location, view.segment(slot), changed, runs[slot].as_slice()) {
                    let number = self.next_file.fetch_add(1, Ordering::SeqCst);
                    let path = dir.join(file_name(slot, number));
                    std::fs::rename(run.path(), &path).map_err(io(&path))?;
                    let segment = Segment::open(&path)?;
                    written.push((slot, Some(SegmentFile::new(segment, number, Some(path)))));
                    continue;
                }
                let file = self.write_slot(&view, slot, cut, &runs[slot])?;
                written.push((slot, file));
            }
            self.sync_dir()
        })();
        let retire_written = |written: &[(usize, Option<Arc<SegmentFile>>)]| {
            for file in written.iter().filter_map(|(_, f)| f.as_ref()) {
                file.retire();
            }
        };
        drop(runs);
        for path in &run_paths {
            let _ = std::fs::remove_file(path);
        }
        if let Err(e) = result {
            retire_written(&written);
            return Err(e);
        }
        let mut segments = view.segments.clone();
        for (slot, file) in &written {
            segments[*slot] = file.clone();
        }
        let manifest = self.manifest_of(&segments, cut);
        let mut w = self.inner.sorted_run_writer(SEGMENT_SET)?;
        w.put(manifest::KEY, &manifest.encode())?;
        others.push(w.finish()?);
        let deltas = std::array::from_fn(|slot| view.deltas[slot].after(cut));
        // The carried keys' values at the cut go to the engine first (a
        // commit), so that the load's own runs of them come after.
        let mut flush = WriteBatch::default();
        put_carried(&mut flush, view.carried.at(cut));
        let new = Arc::new(View { segments, deltas, carried: view.carried.after(cut), cut, created: Instant::now() });
        let ingested = self.switch(new, || {
            if !flush.is_empty() {
                self.inner.commit(flush)?;
            }
            Ok(self.inner.ingest(others)?)
        });
        if let Err(e) = ingested {
            retire_written(&written);
            return Err(e);
        }
        for (slot, _) in &written {
            if let Some(old) = &view.segments[*slot] {
                old.retire();
            }
        }
        // The log up to the cut is in the segments now; records left by a
        // failure here are deleted at the next open.
        let mut state = state;
        let folded = state.log.iter().take_while(|seq| **seq <= cut).count();
        if folded > 0 {
            let mut batch = WriteBatch::default();
            for seq in &state.log[..folded] {
                batch.delete(QUAD_LOG, &seq.to_be_bytes());
            }
            if self.inner.commit(batch).is_ok() {
                state.log.drain(..folded);
            }
        }
        Ok(())
    }
}

impl Backend for SegmentedBackend {
    fn snapshot(&self) -> rhizome_kv::Result<Arc<dyn Snapshot>> {
        let mut waited = 0u32;
        loop {
            let before = self.switching.load(Ordering::SeqCst);
            if before & 1 == 1 {
                // A load's ingestion is under way: a few milliseconds.
                waited += 1;
                if waited < 64 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(200));
                }
                continue;
            }
            let view = self.current();
            let inner = self.inner.snapshot()?;
            if self.switching.load(Ordering::SeqCst) != before {
                continue;
            }
            let at = inner.sequence().ok_or_else(|| rhizome_kv::Error::Engine("a snapshot without a sequence number".into()))?;
            return Ok(Arc::new(SegmentedSnapshot { inner, view, at, terms: self.terms.clone() }));
        }
    }

    fn commit(&self, batch: WriteBatch) -> rhizome_kv::Result<()> {
        let (changes, carried, mut rest) = log::split(batch)?;
        let mut state = lock(&self.commit);
        if changes.is_empty() && carried.is_empty() {
            return self.inner.commit(rest);
        }
        if !self.writable {
            return Err(rhizome_kv::Error::Engine("the store is open for reading only".into()));
        }
        let seq = self.latest().map_err(engine)? + 1;
        // New terms into the filter before any reader can find them.
        for (_, key, _) in carried.iter().filter(|w| w.0 == TERM2ID && w.2.is_some()) {
            self.terms.insert(key);
        }
        rest.put(QUAD_LOG, &seq.to_be_bytes(), &log::encode(&changes, &carried)?);
        let view = self.current();
        let per_slot = keys_per_slot(&changes);
        // Before the engine's commit, numbered as it will be: readers
        // before it skip these versions, readers after it find them.
        for (slot, keys) in per_slot.iter().enumerate() {
            if !keys.is_empty() {
                view.deltas[slot].apply(keys.iter().copied(), seq);
            }
        }
        view.carried.apply(&carried, seq);
        if let Err(e) = self.inner.commit(rest) {
            for (slot, keys) in per_slot.iter().enumerate() {
                if !keys.is_empty() {
                    view.deltas[slot].undo(seq);
                }
            }
            view.carried.undo(&carried, seq);
            return Err(e);
        }
        debug_assert!(self.inner.latest_sequence().is_some_and(|s| s >= seq), "the commit got the number it was given");
        state.log.push(seq);
        drop(state);
        if self.merge_is_due() {
            if self.settings.background {
                self.wake_merger();
            } else {
                self.merge().map_err(engine)?;
            }
        }
        Ok(())
    }

    fn sorted_run_writer(&self, ks: Keyspace) -> rhizome_kv::Result<Box<dyn SortedRunWriter>> {
        match (slot_of(ks), &self.location) {
            (Some(slot), Location::Dir(dir)) => {
                let n = self.next_run.fetch_add(1, Ordering::SeqCst);
                let path = dir.join(format!("run-{}-{n}.tmp", std::process::id()));
                Ok(Box::new(SegmentRunWriter { writer: None, path, slot, rows: 0, runs: self.runs.clone() }))
            }
            _ if !is_carried(ks) => Ok(Box::new(PlainRunWriter { inner: self.inner.sorted_run_writer(ks)?, plain: self.plain_runs.clone() })),
            _ => Ok(self.filtered_terms(ks, self.inner.sorted_run_writer(ks)?)),
        }
    }

    fn index_run_writer(&self, ks: Keyspace) -> rhizome_kv::Result<Box<dyn SortedRunWriter>> {
        self.run_writer_of(ks, |inner, ks| inner.index_run_writer(ks))
    }

    fn unfiltered_run_writer(&self, ks: Keyspace) -> rhizome_kv::Result<Box<dyn SortedRunWriter>> {
        self.run_writer_of(ks, |inner, ks| inner.unfiltered_run_writer(ks))
    }

    fn ingest(&self, runs: Vec<SortedRun>) -> rhizome_kv::Result<()> {
        let mut index = Vec::new();
        let mut others = Vec::new();
        let mut run_paths = Vec::new();
        {
            let mut registered = lock(&self.runs);
            for run in runs {
                match run {
                    SortedRun::File { path } => match registered.remove(&path) {
                        Some(slot) => {
                            let segment = Segment::open(&path).map_err(engine)?;
                            run_paths.push(path);
                            index.push((slot, Run::File(segment)));
                        }
                        None => others.push(SortedRun::File { path }),
                    },
                    SortedRun::Memory { ks, entries } => match slot_of(ks) {
                        Some(slot) => index.push((slot, Run::Memory(entries))),
                        None => {
                            // A run made by other means than this backend's
                            // writers: its terms go into the filter here.
                            if ks == TERM2ID {
                                for (key, _) in &entries {
                                    self.terms.insert(key);
                                }
                            }
                            others.push(SortedRun::Memory { ks, entries })
                        }
                    },
                    SortedRun::Empty => {}
                }
            }
        }
        if index.is_empty() {
            // Runs of keyspaces that carry no keys (a view index's, say)
            // need no carried values flushed first: that flush copies every
            // ordering's delta, which cost a 20,000-document view build
            // 240 M instructions.
            let plain = {
                let mut known = lock(&self.plain_runs);
                others.iter().fold(true, |all, run| {
                    let this = match run {
                        SortedRun::File { path } => known.remove(path),
                        SortedRun::Memory { ks, .. } => !is_carried(*ks),
                        SortedRun::Empty => true,
                    };
                    all && this
                })
            };
            let _commit = lock(&self.commit);
            let view = self.current();
            if view.carried.is_empty() || plain {
                return self.inner.ingest(others);
            }
            // The runs may hold carried keys: their values go to the
            // engine first, and a view without them comes with the runs.
            let cut = self.latest().map_err(engine)?;
            let mut flush = WriteBatch::default();
            put_carried(&mut flush, view.carried.at(cut));
            let deltas = std::array::from_fn(|slot| view.deltas[slot].after(view.cut));
            let new = Arc::new(View { segments: view.segments.clone(), deltas, carried: view.carried.after(cut), cut: view.cut, created: view.created });
            return self
                .switch(new, || {
                    if !flush.is_empty() {
                        self.inner.commit(flush)?;
                    }
                    Ok(self.inner.ingest(others)?)
                })
                .map_err(engine);
        }
        if !self.writable {
            return Err(rhizome_kv::Error::Engine("the store is open for reading only".into()));
        }
        let memory_keys: usize = index.iter().map(|(_, r)| if let Run::Memory(e) = r { e.len() } else { 0 }).sum();
        let all_memory = index.iter().all(|(_, r)| matches!(r, Run::Memory(_))) && others.iter().all(|r| matches!(r, SortedRun::Memory { .. } | SortedRun::Empty));
        if all_memory && memory_keys < SMALL_INGEST_KEYS {
            // Small: the quads go through the log and the delta, in one
            // commit with the rest.
            let mut batch = WriteBatch::default();
            for (slot, run) in index {
                let Run::Memory(entries) = run else { unreachable!("only memory runs here") };
                let ks = ORDERINGS[slot].ks;
                batch.ops.extend(entries.into_iter().map(|(k, v)| WriteOp::Put(ks, k, v)));
            }
            for run in others {
                if let SortedRun::Memory { ks, entries } = run {
                    batch.ops.extend(entries.into_iter().map(|(k, v)| WriteOp::Put(ks, k, v)));
                }
            }
            return self.commit(batch);
        }
        self.ingest_segments(index, others, run_paths).map_err(engine)
    }

    fn compact(&self) -> rhizome_kv::Result<()> {
        self.merge().map_err(engine)?;
        self.inner.compact()
    }

    fn settle(&self, from: Keyspace, to: Keyspace) -> rhizome_kv::Result<()> {
        self.inner.settle(from, to)
    }

    fn size_on_disk(&self) -> rhizome_kv::Result<u64> {
        // The engine's folder holds the segments' (see `Store::open`).
        self.inner.size_on_disk()
    }

    fn tuple_layout(&self) -> Option<&'static dyn rhizome_kv::TupleLayout> {
        Some(&super::OrderingLayout)
    }

    fn latest_sequence(&self) -> Option<u64> {
        self.inner.latest_sequence()
    }

    fn clear_keyspace(&self, ks: Keyspace) -> rhizome_kv::Result<()> {
        if slot_of(ks).is_some() || is_carried(ks) {
            return Err(rhizome_kv::Error::Engine(format!("keyspace {} holds a quad index or statistics kept with the quad log; it is cleared by writes", ks.0)));
        }
        self.inner.clear_keyspace(ks)
    }
}

/// A run of a keyspace that carries no keys, remembered as such when
/// finished (see `plain_runs`).
struct PlainRunWriter {
    inner: Box<dyn SortedRunWriter>,
    plain: Arc<Mutex<std::collections::HashSet<PathBuf>>>,
}

impl SortedRunWriter for PlainRunWriter {
    fn put(&mut self, key: &[u8], value: &[u8]) -> rhizome_kv::Result<()> {
        self.inner.put(key, value)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn finish(self: Box<Self>) -> rhizome_kv::Result<SortedRun> {
        let run = self.inner.finish()?;
        if let SortedRun::File { path } = &run {
            lock(&self.plain).insert(path.clone());
        }
        Ok(run)
    }
}

/// A run of `TERM2ID`: each key into the term filter as it is written.
struct TermRunWriter {
    inner: Box<dyn SortedRunWriter>,
    terms: Arc<TermFilter>,
}

impl SortedRunWriter for TermRunWriter {
    fn put(&mut self, key: &[u8], value: &[u8]) -> rhizome_kv::Result<()> {
        self.terms.insert(key);
        self.inner.put(key, value)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn finish(self: Box<Self>) -> rhizome_kv::Result<SortedRun> {
        self.inner.finish()
    }
}

/// A loader's sorted run of one ordering, written as a segment file.
struct SegmentRunWriter {
    writer: Option<SegmentWriter>,
    path: PathBuf,
    slot: usize,
    rows: u64,
    runs: Arc<Mutex<HashMap<PathBuf, usize>>>,
}

impl SortedRunWriter for SegmentRunWriter {
    fn put(&mut self, key: &[u8], _value: &[u8]) -> rhizome_kv::Result<()> {
        let columns = columns(self.slot);
        if key.len() != columns * 8 {
            return Err(rhizome_kv::Error::Engine(format!("a key of {} bytes in the {} index", key.len(), ORDERINGS[self.slot].name())));
        }
        let mut words = [0u64; 4];
        for (i, chunk) in key.chunks_exact(8).enumerate() {
            words[i] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
        }
        self.put_ids(&words[..columns])
    }

    fn put_ids(&mut self, ids: &[u64]) -> rhizome_kv::Result<()> {
        let columns = columns(self.slot);
        if ids.len() != columns {
            return Err(rhizome_kv::Error::Engine(format!("a key of {} ids in the {} index", ids.len(), ORDERINGS[self.slot].name())));
        }
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(SegmentWriter::create(&self.path, columns).map_err(engine)?),
        };
        writer.push(ids).map_err(engine)?;
        self.rows += 1;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.rows
    }

    fn finish(self: Box<Self>) -> rhizome_kv::Result<SortedRun> {
        let Some(writer) = self.writer else { return Ok(SortedRun::Empty) };
        writer.finish().map_err(engine)?;
        lock(&self.runs).insert(self.path.clone(), self.slot);
        Ok(SortedRun::File { path: self.path })
    }
}
