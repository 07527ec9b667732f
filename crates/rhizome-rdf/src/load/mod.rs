//! The bulk loader: a pipeline of parse (parallel where the format allows),
//! encode, sort runs, write sorted files, ingest. New subjects are
//! numbered first when the quads are all in memory (`renumber`).
//!
//! A load holds the store's writer lock and makes its data visible in one
//! atomic ingestion at the end (one RocksDB MANIFEST edit covering every
//! keyspace), so a failed or killed load leaves the store exactly as it was.
//! Memory: the run buffer (`run_buffer_bytes`, default 1 GiB, the CLI's
//! `RHIZOME_LOAD_BUFFER_BYTES`; beyond it runs spill to a temporary folder
//! beside the store, sorted and written one ordering per core, each from
//! its own copy of the buffer), plus about 100 bytes per distinct new
//! term. A file larger than memory loads; what must fit is the
//! set of its distinct new terms.

mod blank_owners;
mod dictionary;
mod input;
mod parse;
mod radix;
mod renumber;
mod runs;
mod sort;

pub use input::{format_from_name, format_from_path, LoadInput};

use crate::index::layout::{self, meta, CLASS_STATS, ID2TERM, META, PREDICATE_STATS, TERM2ID, VALUE_COUNTS};
use crate::store::Store;
use crate::term::TermId;
use crate::{Error, Result, SyntaxIssue};
use blank_owners::BlankOwners;
use dictionary::{LoadDictionary, PREFETCH_AHEAD};
use indicatif::{ProgressBar, ProgressStyle};
use oxrdf::NamedNode;
use oxrdfio::RdfFormat;
use parse::{EncodedChunk, Slot};
use runs::{merge_into, Family, Observe, Observed};
use sort::sorted_keys;
use rhizome_kv::{Keyspace, SortedRun, SortedRunWriter};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Format of every input; `None` guesses from each file's extension.
    pub format: Option<RdfFormat>,
    pub base_iri: Option<String>,
    /// Graph for triples (and default-graph quads) of the inputs.
    pub graph: Option<NamedNode>,
    /// In a union store without `graph`: where blank-node triples go whose
    /// chain of referrers reaches no IRI (unreferenced blank nodes, cycles);
    /// `None` leaves each in its own blank node's graph. Every other
    /// blank-node triple goes to its referring subject's graph
    /// (`blank_owners`).
    pub orphan_graph: Option<NamedNode>,
    /// Skip bad statements instead of failing the load.
    pub lenient: bool,
    /// Show a progress bar (the caller decides: a terminal, not a pipe).
    pub progress: bool,
    pub run_buffer_bytes: usize,
    pub parse_threads: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            format: None,
            base_iri: None,
            graph: None,
            orphan_graph: None,
            lenient: false,
            progress: false,
            run_buffer_bytes: 1 << 30,
            parse_threads: std::thread::available_parallelism().map_or(2, |n| n.get()).min(8),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct LoadSummary {
    pub quads_read: u64,
    pub quads_added: u64,
    pub terms_added: u64,
    pub graphs_added: u64,
    pub bytes_read: u64,
    pub seconds: f64,
    /// Statements skipped by `lenient`, and the first few of them.
    pub skipped: u64,
    pub skipped_examples: Vec<SyntaxIssue>,
}

/// Marks a phase on stderr when RHIZOME_LOAD_TRACE is set, so that crash
/// tests can kill a load in each phase rather than at random times.
fn trace(phase: &str) {
    if std::env::var_os("RHIZOME_LOAD_TRACE").is_some() {
        eprintln!("rhizome-load-phase: {phase}");
    }
}

/// Loads in one write of fewer keys than this go through a write batch
/// rather than sorted files (no tiny files for the engine to compact).
const SMALL_LOAD_KEYS: u64 = 100_000;
const MAX_EXAMPLES: usize = 5;

impl Store {
    /// Loads the inputs, all or nothing.
    pub fn load(&self, inputs: &[LoadInput], options: &LoadOptions) -> Result<LoadSummary> {
        let started = Instant::now();
        let mut formats = Vec::with_capacity(inputs.len());
        for input in inputs {
            let format = match options.format {
                Some(f) => f,
                None if input.is_stdin() => {
                    return Err(Error::Invalid("reading stdin needs --format".into()));
                }
                None => format_from_path(&input.path).ok_or_else(|| {
                    Error::Invalid(format!("cannot tell the format of {} from its extension; use --format", input.path.display()))
                })?,
            };
            if !input.is_stdin() && !input.path.exists() {
                return Err(Error::Io {
                    path: input.path.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                });
            }
            formats.push(format);
        }

        let bulk = self.kv().bulk_writer()?;
        let snapshot = bulk.snapshot().clone();
        let read = |k| crate::store::read_u64(snapshot.as_ref(), k);
        let first_new_id = read(meta::NEXT_ID)?.max(1);
        let quads_before = read(meta::QUADS)?;
        let terms_before = read(meta::TERMS)?;
        let graphs_before = read(meta::GRAPHS)?;
        let store_had_quads = quads_before > 0;
        let mut dict = LoadDictionary::new(snapshot.as_ref(), first_new_id, terms_before > 0);

        let total_bytes: Option<u64> = inputs.iter().map(|i| i.size()).sum();
        let bar = if options.progress {
            let bar = match total_bytes {
                Some(t) => ProgressBar::new(t),
                None => ProgressBar::new_spinner(),
            };
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {msg} (ETA {eta})")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar
        } else {
            ProgressBar::hidden()
        };

        let bytes_read = Arc::new(AtomicU64::new(0));
        let cancel = AtomicBool::new(false);
        let mut triples: Family<3> = Family::new(&layout::TRIPLE_ORDERINGS);
        let mut quads: Family<4> = Family::new(&layout::QUAD_ORDERINGS);
        let spill_parent = self.path().map(|p| p.to_path_buf()).unwrap_or_else(std::env::temp_dir);
        let mut spill_dir: Option<tempfile::TempDir> = None;
        let mut summary = LoadSummary::default();
        let forced_graph = match &options.graph {
            Some(g) => Some(dict.resolve_iri(g.as_str())?),
            None => None,
        };
        let plain = self.mode() == crate::DatasetMode::Plain;
        let orphan_graph = match &options.orphan_graph {
            Some(g) if forced_graph.is_none() && !plain => Some(dict.resolve_iri(g.as_str())?),
            _ => None,
        };
        let mut blanks = BlankOwners::default();
        let mut subjects = renumber::SubjectOrder::new(first_new_id);
        let mut saw_triple_terms = false;
        let existing: Option<(&dyn rhizome_kv::KvRead, u64)> = store_had_quads.then_some((snapshot.as_ref() as &dyn rhizome_kv::KvRead, first_new_id));

        // Parse in worker threads; assign ids and buffer quads here.
        let outcome: Result<()> = std::thread::scope(|scope| {
            let (chunk_tx, chunk_rx) = mpsc::sync_channel::<EncodedChunk>(options.parse_threads * 2);
            let (line_tx, line_rx) = mpsc::sync_channel::<parse::LineChunk>(options.parse_threads * 2);
            let line_rx = Arc::new(Mutex::new(line_rx));
            for _ in 0..options.parse_threads.max(1) {
                let rx = line_rx.clone();
                let tx = chunk_tx.clone();
                scope.spawn(move || parse::parse_line_chunks(&rx, &tx));
            }
            let reader = {
                let chunk_tx = chunk_tx.clone();
                let bytes_read = bytes_read.clone();
                let cancel = &cancel;
                let formats = &formats;
                scope.spawn(move || -> Result<()> {
                    for (file, input) in inputs.iter().enumerate() {
                        match formats[file] {
                            RdfFormat::NTriples | RdfFormat::NQuads => parse::split_lines(
                                file,
                                input,
                                formats[file] == RdfFormat::NQuads,
                                bytes_read.clone(),
                                cancel,
                                &line_tx,
                            )?,
                            format => parse::parse_sequential(
                                file,
                                input,
                                format,
                                options.base_iri.as_deref(),
                                bytes_read.clone(),
                                cancel,
                                &chunk_tx,
                            )?,
                        }
                        if cancel.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    Ok(())
                })
            };
            drop(chunk_tx);
            let mut ids: Vec<TermId> = Vec::new();
            let mut blank_ids: Vec<TermId> = Vec::new();
            let mut result = Ok(());
            for mut chunk in chunk_rx.iter() {
                if result.is_err() {
                    continue; // drain so the workers can finish
                }
                if let Some(e) = chunk.fatal {
                    result = Err(e);
                    cancel.store(true, Ordering::Relaxed);
                    continue;
                }
                if !chunk.errors.is_empty() {
                    if !options.lenient {
                        let first = chunk.errors.iter().min_by_key(|e| (e.line, e.column)).expect("not empty").clone();
                        result = Err(Error::Syntax(first));
                        cancel.store(true, Ordering::Relaxed);
                        continue;
                    }
                    // A statement can raise several errors: count lines.
                    let mut lines: Vec<(u64, u64)> = chunk.errors.iter().map(|e| (e.line, e.column)).collect();
                    lines.dedup_by_key(|l| l.0);
                    summary.skipped += if chunk.errors.iter().all(|e| e.line > 0) { lines.len() } else { chunk.errors.len() } as u64;
                    let mut last_line = None;
                    for e in std::mem::take(&mut chunk.errors) {
                        if e.line > 0 && last_line == Some(e.line) {
                            continue;
                        }
                        last_line = Some(e.line);
                        if summary.skipped_examples.len() < MAX_EXAMPLES {
                            summary.skipped_examples.push(e);
                        }
                    }
                }
                // A chunk with triple terms numbers its blank nodes first: a
                // triple term's parts may be any of them (and earlier terms).
                let triple_terms = chunk.terms.iter().any(|t| t.tag == crate::term::tag::TRIPLE);
                saw_triple_terms |= triple_terms;
                blank_ids.clear();
                if triple_terms {
                    for b in &chunk.blanks {
                        blank_ids.push(dict.blank(chunk.file, b));
                    }
                }
                ids.clear();
                let hash = |k: usize| chunk.terms.get(k).map(|t| t.hash);
                for (k, t) in chunk.terms.iter().enumerate() {
                    dict.prefetch(hash(k + PREFETCH_AHEAD), hash(k + PREFETCH_AHEAD / 2));
                    let resolved = if t.tag == crate::term::tag::TRIPLE {
                        let bytes = chunk.resolve_triple(t, &ids, &blank_ids);
                        dict.resolve(t.tag, crate::term::TermKey::hash(t.tag, &bytes), &bytes)
                    } else {
                        dict.resolve(t.tag, t.hash, chunk.bytes(t))
                    };
                    match resolved {
                        Ok(id) => ids.push(id),
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
                if result.is_err() {
                    cancel.store(true, Ordering::Relaxed);
                    continue;
                }
                if !triple_terms {
                    for b in &chunk.blanks {
                        blank_ids.push(dict.blank(chunk.file, b));
                    }
                }
                let id = |slot: Slot| match slot {
                    Slot::Id(id) => id,
                    Slot::Term(i) => ids[i as usize],
                    Slot::Blank(i) => blank_ids[i as usize],
                    Slot::DefaultGraph => TermId::DEFAULT_GRAPH,
                };
                for q in &chunk.quads {
                    let (s, p, o) = (id(q[0]), id(q[1]), id(q[2]));
                    subjects.subject(s);
                    let g = match q[3] {
                        Slot::DefaultGraph => match forced_graph {
                            Some(g) => g,
                            None if plain => TermId::DEFAULT_GRAPH,
                            None => {
                                // The subject's document; a blank node's
                                // is its referrer's (blank_owners).
                                blanks.refer(s, o);
                                if !s.is_blank() {
                                    s
                                } else if let Some(owner) = blanks.owner(s) {
                                    owner
                                } else {
                                    blanks.wait([s, p, o]);
                                    continue;
                                }
                            }
                        },
                        other => id(other),
                    };
                    if g == s {
                        triples.buffer.push([s.0, p.0, o.0]);
                    } else {
                        quads.buffer.push([s.0, p.0, o.0, g.0]);
                    }
                }
                summary.quads_read += chunk.quads.len() as u64;
                if triples.bytes() + quads.bytes() + blanks.bytes() + subjects.bytes() > options.run_buffer_bytes {
                    let spilled = (|| -> Result<()> {
                        if spill_dir.is_none() {
                            spill_dir = Some(
                                tempfile::Builder::new()
                                    .prefix("load-tmp-")
                                    .tempdir_in(&spill_parent)
                                    .map_err(|source| Error::Io { path: spill_parent.clone(), source })?,
                            );
                        }
                        let dir = spill_dir.as_ref().expect("just made").path();
                        let threads = options.parse_threads.clamp(1, 4);
                        triples.spill(dir, existing, threads)?;
                        quads.spill(dir, existing, threads)
                    })();
                    if let Err(e) = spilled {
                        result = Err(e);
                        cancel.store(true, Ordering::Relaxed);
                        continue;
                    }
                }
                let done = bytes_read.load(Ordering::Relaxed);
                bar.set_position(done);
                let secs = started.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{} quads, {:.0} quads/s", summary.quads_read, summary.quads_read as f64 / secs));
            }
            let reader_result = reader.join().unwrap_or_else(|_| Err(Error::Invalid("the reader thread panicked".into())));
            result.and(reader_result)
        });
        if let Err(e) = outcome {
            bar.finish_and_clear();
            return Err(e);
        }
        summary.bytes_read = bytes_read.load(Ordering::Relaxed);
        for ([s, p, o], owner) in blanks.finish() {
            match owner.or(orphan_graph) {
                Some(g) => quads.buffer.push([s.0, p.0, o.0, g.0]),
                None => triples.buffer.push([s.0, p.0, o.0]),
            }
        }
        // Subjects numbered first (`renumber`), when every quad is still
        // in memory to be renumbered.
        let spilled = triples.spills.iter().chain(&quads.spills).any(|s| !s.is_empty());
        let renumbering = if spilled || saw_triple_terms { None } else { subjects.renumbering(dict.next_id()) };
        if let Some(r) = &renumbering {
            for q in triples.buffer.iter_mut() {
                *q = q.map(|id| r.raw(id));
            }
            for q in quads.buffer.iter_mut() {
                *q = q.map(|id| r.raw(id));
            }
        }
        let renumbered = |id: TermId| renumbering.as_ref().map_or(id, |r| r.id(id));
        bar.set_message("sorting and writing indexes");
        trace("parsed");

        // Sort each ordering, merge with spilled runs, write sorted files.
        triples.prepare(existing)?;
        quads.prepare(existing)?;
        let estimated_keys = (triples.buffer.len() * 3 + quads.buffer.len() * 6) as u64
            + triples.spills.iter().chain(&quads.spills).map(|s| s.len() as u64).sum::<u64>() * SMALL_LOAD_KEYS;
        let small = estimated_keys < SMALL_LOAD_KEYS;
        let writer = |ks: Keyspace| -> Result<Box<dyn SortedRunWriter>> {
            Ok(if small { rhizome_kv::memory_run_writer(ks) } else { bulk.sorted_run_writer(ks)? })
        };
        let rdf_type = dict.existing(crate::term::tag::IRI, crate::stats::RDF_TYPE.as_bytes())?.map(renumbered);
        let objects = Observe::Objects { rdf_type: rdf_type.map(|t| t.0) };
        let mut jobs: Vec<(Ordering3or4, Observe)> = Vec::new();
        for (i, o) in layout::TRIPLE_ORDERINGS.iter().enumerate() {
            let observe = match i {
                0 => Observe::Subjects { graphs: true },
                1 => objects,
                _ => Observe::Nothing,
            };
            jobs.push((Ordering3or4::Triple(i, *o), observe));
        }
        for (i, o) in layout::QUAD_ORDERINGS.iter().enumerate() {
            let observe = match o.name().as_str() {
                "SPOG" => Observe::Subjects { graphs: false },
                "POSG" => objects,
                "GSPO" => Observe::Graphs,
                _ => Observe::Nothing,
            };
            jobs.push((Ordering3or4::Quad(i, *o), observe));
        }
        let jobs = Mutex::new(jobs);
        let results: Mutex<Vec<Result<(SortedRun, Observed, bool)>>> = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..options.parse_threads.clamp(1, 4) {
                scope.spawn(|| loop {
                    let Some((job, observe)) = jobs.lock().expect("job list").pop() else { return };
                    let r = match job {
                        Ordering3or4::Triple(i, o) => writer(o.ks).and_then(|w| {
                            merge_into(sorted_keys(&triples.buffer, &o), &triples.spills[i], w, observe).map(|(r, ob)| (r, ob, true))
                        }),
                        Ordering3or4::Quad(i, o) => writer(o.ks).and_then(|w| {
                            merge_into(sorted_keys(&quads.buffer, &o), &quads.spills[i], w, observe).map(|(r, ob)| (r, ob, false))
                        }),
                    };
                    results.lock().expect("results").push(r);
                });
            }
        });
        let mut runs = Vec::new();
        let mut per_predicate: FxHashMap<u64, [u64; 3]> = FxHashMap::default();
        let mut classes: FxHashMap<u64, u64> = FxHashMap::default();
        // Each family's counts are exact for its new quads; summed below.
        let mut values: FxHashMap<u64, Option<crate::stats::ValueCounts>> = FxHashMap::default();
        let mut triple_graphs = Vec::new();
        let mut quad_graphs = Vec::new();
        let mut triples_added = 0;
        let mut quads_added = 0;
        for r in results.into_inner().expect("results") {
            let (run, observed, is_triple) = r?;
            runs.push(run);
            for (class, n) in observed.classes {
                *classes.entry(class).or_default() += n;
            }
            for (p, counts) in observed.values.into_counts() {
                let sum = match values.remove(&p) {
                    Some(before) => crate::stats::add_value_counts(before, counts.as_deref()),
                    None => counts,
                };
                values.insert(p, sum);
            }
            for (p, c) in observed.per_predicate {
                let e = per_predicate.entry(p).or_default();
                for k in 0..3 {
                    e[k] += c[k];
                }
            }
            // Every ordering of a family holds the same new quads.
            if is_triple {
                triples_added = observed.keys;
                triple_graphs.extend(observed.graphs);
            } else {
                quads_added = observed.keys;
                quad_graphs.extend(observed.graphs);
            }
        }
        drop(spill_dir);

        // Graphs that did not exist before.
        let mut graphs: Vec<u64> = triple_graphs;
        graphs.extend(quad_graphs);
        graphs.sort_unstable();
        graphs.dedup();
        let graphs_added = if store_had_quads {
            let mut n = 0;
            for g in &graphs {
                if !crate::store::graph_exists_in(snapshot.as_ref(), TermId(*g))? {
                    n += 1;
                }
            }
            n
        } else {
            graphs.len() as u64
        };

        // Dictionary, statistics and counters.
        let next_id = dict.next_id();
        let terms_added = dict.new_terms;
        let mut new_terms = dict.into_new_terms(first_new_id);
        if let Some(r) = &renumbering {
            for t in new_terms.terms.iter_mut() {
                t.id = r.id(t.id);
            }
        }
        new_terms.terms.sort_unstable_by_key(|t| t.id);
        // Without a filter (0.9 MB of 7.0 at 4.8M triples): every id a
        // read asks for comes from a quad, so its entry exists; an id from
        // elsewhere (a blank node label) is still answered "absent".
        let mut w = if small { writer(ID2TERM)? } else { bulk.unfiltered_run_writer(ID2TERM)? };
        for t in &new_terms.terms {
            w.put(&t.id.to_be_bytes(), new_terms.bytes(t))?;
        }
        runs.push(w.finish()?);
        // term2id in key order: each new term under its own bytes (new to
        // the store, so nothing to merge), long ones under their hash, whose
        // ids join those of earlier terms with the same hash. The keys go
        // into one buffer and the values into one reused vector: at 4.8M
        // triples that was two million allocations.
        let mut key_bytes: Vec<u8> = Vec::with_capacity(new_terms.arena_len() + new_terms.terms.len());
        let mut entries: Vec<(u64, u32, bool, TermId)> = Vec::with_capacity(new_terms.terms.len());
        for t in &new_terms.terms {
            let start = key_bytes.len();
            let hashed = crate::term::term2id_key_into(t.id.tag(), new_terms.bytes(t), &mut key_bytes);
            entries.push((start as u64, (key_bytes.len() - start) as u32, hashed, t.id));
        }
        drop(new_terms);
        let key_of = |e: &(u64, u32, bool, TermId)| &key_bytes[e.0 as usize..e.0 as usize + e.1 as usize];
        let order = sort::sort_by_bytes(entries.len(), |i| key_of(&entries[i]));
        let entries: Vec<(u64, u32, bool, TermId)> = order.into_iter().map(|i| entries[i as usize]).collect();
        let mut w = writer(TERM2ID)?;
        let mut value = Vec::with_capacity(8);
        let mut i = 0;
        while i < entries.len() {
            let (_, _, hashed, id) = entries[i];
            let key = key_of(&entries[i]);
            value.clear();
            if hashed && terms_before > 0 {
                if let Some(before) = snapshot.get(TERM2ID, key)? {
                    value = before;
                }
            }
            value.extend_from_slice(&id.to_be_bytes());
            i += 1;
            while i < entries.len() && key_of(&entries[i]) == key {
                value.extend_from_slice(&entries[i].3.to_be_bytes());
                i += 1;
            }
            w.put(key, &value)?;
        }
        drop(entries);
        runs.push(w.finish()?);
        // Each predicate's statistics and value-count state before the
        // load, all read together (on a cluster's store a read is a round
        // trip: two a predicate, one after another, before).
        let per_predicate: BTreeMap<u64, [u64; 3]> = per_predicate.into_iter().collect();
        let predicate_keys: Vec<Vec<u8>> = per_predicate.keys().map(|p| p.to_be_bytes().to_vec()).collect();
        let old_stats = snapshot.get_many(PREDICATE_STATS, &predicate_keys)?;
        let old_states = snapshot.get_many(VALUE_COUNTS, &predicate_keys)?;
        let mut stats: BTreeMap<u64, [u64; 3]> = BTreeMap::new();
        let mut states: FxHashMap<u64, crate::stats::ValueState> = FxHashMap::default();
        for (((p, c), old), state) in per_predicate.into_iter().zip(&old_stats).zip(&old_states) {
            let mut total = c;
            if let Some(old) = old {
                let old = crate::stats::decode_predicate_stats(old)?;
                for k in 0..3 {
                    total[k] += old[k];
                }
            }
            states.insert(p, crate::stats::value_state_from(state.as_deref(), old.is_some())?);
            stats.insert(p, total);
        }
        // Value counts: the load's added to the store's (read from the
        // snapshot before this load, whose predicate statistics decide
        // whether a predicate without an entry was counted). A predicate
        // the load takes past the limit keeps its old object counts until a
        // transaction empties it or `compact` recounts (a run cannot delete
        // keys); its entry says it is uncounted, so they are never read.
        let mut value_entries: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for p in stats.keys() {
            let p = TermId(*p);
            let loaded = values.remove(&p.0).unwrap_or(Some(Vec::new()));
            let state = match (states.remove(&p.0).expect("every predicate's state was read"), loaded) {
                (crate::stats::ValueState::Counted(mut objects), Some(loaded)) => {
                    // The counts before the load, read together: on a
                    // cluster's store a read is a round trip, and a load
                    // has tens of thousands of (predicate, object) pairs
                    // (seed 000's 97k triples: 22 s read one by one, 9 s
                    // together). A counted predicate's counts are exact,
                    // so in a store without quads they are all 0.
                    let keys: Vec<Vec<u8>> = loaded.iter().map(|(o, _)| crate::stats::value_key(p, *o).to_vec()).collect();
                    let befores = if store_had_quads { snapshot.get_many(VALUE_COUNTS, &keys)? } else { vec![None; keys.len()] };
                    let mut counts = Vec::with_capacity(loaded.len());
                    for ((key, (_, n)), before) in keys.into_iter().zip(loaded).zip(befores) {
                        let before = match before {
                            Some(v) => crate::stats::decode_count(&v)?,
                            None => 0,
                        };
                        objects += (before == 0) as u64;
                        counts.push((key, before + n));
                    }
                    if objects as usize <= crate::stats::VALUE_COUNT_LIMIT {
                        value_entries.extend(counts.into_iter().map(|(k, n)| (k.to_vec(), n.to_be_bytes().to_vec())));
                        crate::stats::ValueState::Counted(objects)
                    } else {
                        crate::stats::ValueState::Uncounted
                    }
                }
                _ => crate::stats::ValueState::Uncounted,
            };
            value_entries.insert(p.to_be_bytes().to_vec(), crate::stats::encode_value_state(state));
        }
        let mut w = writer(PREDICATE_STATS)?;
        for (p, c) in &stats {
            w.put(&p.to_be_bytes(), &crate::stats::encode_predicate_stats(c))?;
        }
        runs.push(w.finish()?);
        let mut w = writer(VALUE_COUNTS)?;
        for (k, v) in &value_entries {
            w.put(k, v)?;
        }
        runs.push(w.finish()?);
        if let Some(t) = rdf_type.filter(|_| !classes.is_empty()) {
            let mut counts: Vec<(u64, u64)> = classes.into_iter().collect();
            counts.sort_unstable();
            let mut w = writer(CLASS_STATS)?;
            let keys: Vec<Vec<u8>> = counts.iter().map(|(class, _)| crate::stats::class_key(t, TermId(*class)).to_vec()).collect();
            let befores = snapshot.get_many(CLASS_STATS, &keys)?;
            for ((key, (_, n)), before) in keys.iter().zip(counts).zip(befores) {
                let before = match before {
                    Some(v) => crate::stats::decode_count(&v)?,
                    None => 0,
                };
                w.put(key, &(before + n).to_be_bytes())?;
            }
            runs.push(w.finish()?);
        }
        summary.quads_added = triples_added + quads_added;
        summary.terms_added = terms_added;
        summary.graphs_added = graphs_added;
        let mut counters: BTreeMap<&[u8], u64> = BTreeMap::new();
        counters.insert(meta::NEXT_ID, next_id);
        counters.insert(meta::QUADS, quads_before + summary.quads_added);
        counters.insert(meta::TERMS, terms_before + terms_added);
        counters.insert(meta::GRAPHS, graphs_before + graphs_added);
        let mut w = writer(META)?;
        for (k, v) in counters {
            w.put(k, &v.to_be_bytes())?;
        }
        runs.push(w.finish()?);
        trace("written");
        drop(snapshot);
        self.family_marks().mark(crate::index::Families { triples: triples_added > 0, quads: quads_added > 0 });
        // The loaded counts replace what writers kept (under the writer lock).
        self.writer_cache().clear();
        bulk.ingest(runs)?;
        trace("ingested");
        summary.seconds = started.elapsed().as_secs_f64();
        bar.finish_and_clear();
        Ok(summary)
    }
}

#[derive(Clone, Copy)]
enum Ordering3or4 {
    Triple(usize, layout::Ordering),
    Quad(usize, layout::Ordering),
}
