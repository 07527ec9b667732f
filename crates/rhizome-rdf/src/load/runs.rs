//! Sorted runs: quads are buffered as ids, sorted in every index ordering
//! and spilled to temporary files when the buffer is full; at the end each
//! ordering's runs are merged (removing duplicates) straight into the
//! storage engine's sorted files. Memory is the run buffer, whatever the
//! input size.

use super::sort::{sort_dedup, sorted_keys, SortedKeys};
use crate::index::layout::Ordering;
use crate::term::TermId;
use crate::{Error, Result};
use rhizome_kv::{KvRead, SortedRun, SortedRunWriter};
use rustc_hash::FxHashMap;
use std::collections::BinaryHeap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Quads of one family, each as N ids in `[s, p, o, g]` order (N = 3 for
/// subject-graph triples, whose graph is the subject).
pub(crate) struct Family<const N: usize> {
    pub orderings: &'static [Ordering],
    pub buffer: Vec<[u64; N]>,
    /// Spilled runs: per ordering, the files in key order of that ordering.
    pub spills: Vec<Vec<PathBuf>>,
}

fn as_quad<const N: usize>(q: &[u64; N]) -> [TermId; 4] {
    let g = if N == 4 { q[3] } else { q[0] };
    [TermId(q[0]), TermId(q[1]), TermId(q[2]), TermId(g)]
}

impl<const N: usize> Family<N> {
    pub fn new(orderings: &'static [Ordering]) -> Self {
        Family { orderings, buffer: Vec::new(), spills: vec![Vec::new(); orderings.len()] }
    }

    pub fn bytes(&self) -> usize {
        self.buffer.len() * N * 8
    }

    /// Sorts, removes duplicates and, when the store had quads, the quads
    /// it already has; what is left is new.
    pub fn prepare(&mut self, existing: Option<(&dyn KvRead, u64)>) -> Result<()> {
        sort_dedup(&mut self.buffer);
        if let Some((snapshot, first_new_id)) = existing {
            let is_new_id = |id: u64| {
                let t = TermId(id);
                (t.is_in_dictionary() || t.is_blank()) && t.sequence() >= first_new_id
            };
            let ordering = self.orderings[0];
            let mut key = Vec::with_capacity(32);
            let mut keep = Vec::with_capacity(self.buffer.len());
            for q in &self.buffer {
                if !q.iter().any(|id| is_new_id(*id)) {
                    ordering.encode(&as_quad(q), &mut key);
                    if snapshot.get(ordering.ks, &key)?.is_some() {
                        continue;
                    }
                }
                keep.push(*q);
            }
            self.buffer = keep;
        }
        Ok(())
    }

    /// Writes the (prepared) buffer as one sorted run file per ordering,
    /// `threads` orderings at a time (each sorts its own copy of the
    /// buffer: the parse waits meanwhile, so the cores are free).
    pub fn spill(&mut self, dir: &Path, existing: Option<(&dyn KvRead, u64)>, threads: usize) -> Result<()> {
        self.prepare(existing)?;
        let buffer = std::mem::take(&mut self.buffer);
        let jobs: Vec<(usize, &Ordering, PathBuf)> =
            self.orderings.iter().enumerate().map(|(i, ordering)| (i, ordering, dir.join(format!("{}-{}.run", ordering.name(), self.spills[i].len())))).collect();
        let jobs = std::sync::Mutex::new(jobs);
        let written = std::sync::Mutex::new(Vec::new());
        let buffer = &buffer;
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| loop {
                    let Some((i, ordering, path)) = jobs.lock().unwrap_or_else(|p| p.into_inner()).pop() else { return };
                    let result = write_run_file(&sorted_keys(buffer, ordering), &path);
                    written.lock().unwrap_or_else(|p| p.into_inner()).push((i, path, result));
                });
            }
        });
        let mut written = written.into_inner().unwrap_or_else(|p| p.into_inner());
        written.sort_by_key(|(i, ..)| *i);
        for (i, path, result) in written {
            result?;
            self.spills[i].push(path);
        }
        Ok(())
    }
}

/// Writes sorted keys to a run file (ids little-endian, N per key).
fn write_run_file<const N: usize>(keys: &SortedKeys<N>, path: &Path) -> Result<()> {
    let io = |source| Error::Io { path: path.to_owned(), source };
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(io)?);
    for i in 0..keys.len() {
        for id in keys.get(i) {
            w.write_all(&id.to_le_bytes()).map_err(io)?;
        }
    }
    w.flush().map_err(io)
}

/// A source of sorted keys for the merge.
enum Source<const N: usize> {
    Memory(SortedKeys<N>, usize),
    File(BufReader<std::fs::File>, PathBuf),
}

impl<const N: usize> Source<N> {
    fn next(&mut self) -> Result<Option<[u64; N]>> {
        match self {
            Source::Memory(keys, next) => Ok((*next < keys.len()).then(|| {
                *next += 1;
                keys.get(*next - 1)
            })),
            Source::File(r, path) => {
                let mut buf = [0u8; 32];
                let buf = &mut buf[..N * 8];
                match r.read_exact(buf) {
                    Ok(()) => {
                        let mut k = [0u64; N];
                        for (i, c) in buf.chunks_exact(8).enumerate() {
                            k[i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
                        }
                        Ok(Some(k))
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(source) => Err(Error::Io { path: path.clone(), source }),
                }
            }
        }
    }
}

/// What to count while writing an ordering (for statistics).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observe {
    Nothing,
    /// SPO-like keys: quads and distinct subjects per predicate, and the
    /// distinct subjects (graphs of subject-graph triples).
    Subjects { graphs: bool },
    /// POS-like keys: distinct objects per predicate, and quads per class
    /// (object) of the given `rdf:type` id.
    Objects {
        rdf_type: Option<u64>,
    },
    /// GSPO-like keys: the distinct graphs.
    Graphs,
}

#[derive(Default)]
pub(crate) struct Observed {
    pub keys: u64,
    pub per_predicate: FxHashMap<u64, [u64; 3]>,
    pub graphs: Vec<u64>,
    pub classes: FxHashMap<u64, u64>,
    /// POS-like keys: quads per object of each predicate.
    pub values: crate::stats::ValueCounter,
}

/// Merges the runs of one ordering (spilled files plus the sorted buffer)
/// into a storage run, dropping duplicates.
pub(crate) fn merge_into<const N: usize>(
    buffer_keys: SortedKeys<N>,
    files: &[PathBuf],
    mut writer: Box<dyn SortedRunWriter>,
    observe: Observe,
) -> Result<(SortedRun, Observed)> {
    let mut observed = Observed::default();
    let mut last: Option<[u64; N]> = None;
    let mut emit = |k: [u64; N]| -> Result<()> {
        if last == Some(k) {
            return Ok(());
        }
        match observe {
            Observe::Nothing => {}
            Observe::Subjects { graphs } => {
                let e = observed.per_predicate.entry(k[1]).or_default();
                e[0] += 1;
                if last.is_none_or(|l| l[0] != k[0] || l[1] != k[1]) {
                    e[1] += 1;
                }
                if graphs && last.is_none_or(|l| l[0] != k[0]) {
                    observed.graphs.push(k[0]);
                }
            }
            Observe::Objects { rdf_type } => {
                if last.is_none_or(|l| l[0] != k[0] || l[1] != k[1]) {
                    observed.per_predicate.entry(k[0]).or_default()[2] += 1;
                }
                if Some(k[0]) == rdf_type {
                    *observed.classes.entry(k[1]).or_default() += 1;
                }
                observed.values.add(k[0], k[1]);
            }
            Observe::Graphs => {
                if last.is_none_or(|l| l[0] != k[0]) {
                    observed.graphs.push(k[0]);
                }
            }
        }
        writer.put_ids(&k)?;
        observed.keys += 1;
        last = Some(k);
        Ok(())
    };
    if files.is_empty() {
        // Nothing spilled (the usual load): the sorted buffer as it is,
        // without a heap of one source.
        for i in 0..buffer_keys.len() {
            emit(buffer_keys.get(i))?;
        }
    } else {
        let mut sources: Vec<Source<N>> = vec![Source::Memory(buffer_keys, 0)];
        for f in files {
            let file = std::fs::File::open(f).map_err(|source| Error::Io { path: f.clone(), source })?;
            sources.push(Source::File(BufReader::with_capacity(1 << 20, file), f.clone()));
        }
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(k) = s.next()? {
                heap.push(std::cmp::Reverse((k, i)));
            }
        }
        while let Some(std::cmp::Reverse((k, i))) = heap.pop() {
            if let Some(next) = sources[i].next()? {
                heap.push(std::cmp::Reverse((next, i)));
            }
            emit(k)?;
        }
    }
    Ok((writer.finish()?, observed))
}
