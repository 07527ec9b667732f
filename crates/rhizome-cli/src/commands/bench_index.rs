//! What the quad indexes cost per lookup and per row, for `bench/index-cost`:
//! lookups by subject and by object of terms sampled from the store itself,
//! each once unmeasured (warm caches) and once measured, with a new scan per
//! lookup (`fresh`) or one reusable scan re-pointed per lookup (`reused`,
//! what SPARQL's index nested loops and graph walks do), and a full scan of
//! every quad; quads are taken in batches of id columns
//! (`QuadScan::next_batch`, the scans' batch interface for the executor). Each measured phase runs in its own function
//! (`measured_phase`), so that callgrind's `--toggle-collect` counts its
//! instructions alone. Prints one JSON line per phase.

use anyhow::{bail, Result};
use rhizome_rdf::segment::{Segment, SegmentWriter};
use rhizome_rdf::{QuadBatch, QuadPattern, QuadScan, Store, StoreSnapshot, TermId};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Lookups per phase.
    #[arg(long, default_value_t = 2000)]
    lookups: usize,
    /// Phases to run (subject-fresh, subject-reused, object-fresh,
    /// object-reused, scan); all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the unmeasured pass (cold caches: what a process pays first).
    #[arg(long)]
    cold: bool,
    /// The sampled keys: read from this file when it exists, else sampled
    /// and written to it (so that runs under callgrind skip the sampling).
    #[arg(long)]
    keys: Option<std::path::PathBuf>,
    /// Run the phases on segment files of the store's subject-graph
    /// triples (SPO, POS, OSP) in this folder instead of the store's
    /// indexes, written from the store's keys when the folder lacks them:
    /// the segment format against RocksDB on the same quads.
    #[arg(long)]
    segments: Option<std::path::PathBuf>,
}

const PHASES: [&str; 5] = ["subject-fresh", "subject-reused", "object-fresh", "object-reused", "scan"];

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = Store::open_read_only(data)?;
    let snapshot = store.snapshot()?;
    let (subjects, objects) = match &args.keys {
        Some(path) if path.exists() => {
            let text = std::fs::read_to_string(path)?;
            let ids = |kind: &str| -> Result<Vec<TermId>> {
                text.lines().filter_map(|l| l.strip_prefix(kind)).map(|id| Ok(TermId(id.trim().parse()?))).collect()
            };
            (ids("s ")?, ids("o ")?)
        }
        _ => {
            let (subjects, objects) = sample(&snapshot, args.lookups)?;
            if let Some(path) = &args.keys {
                let mut text = String::new();
                for (kind, ids) in [("s", &subjects), ("o", &objects)] {
                    for id in ids {
                        text.push_str(&format!("{kind} {}\n", id.0));
                    }
                }
                std::fs::write(path, text)?;
            }
            (subjects, objects)
        }
    };
    for phase in PHASES {
        if !args.only.is_empty() && !args.only.iter().any(|p| p == phase) {
            continue;
        }
        let keys: Vec<QuadPattern> = match phase {
            "scan" => vec![QuadPattern::default()],
            p if p.starts_with("subject") => subjects.iter().map(|s| QuadPattern { s: Some(*s), ..Default::default() }).collect(),
            _ => objects.iter().map(|o| QuadPattern { o: Some(*o), ..Default::default() }).collect(),
        };
        let reused = phase.ends_with("reused");
        let segments = args.segments.as_deref().map(|dir| Segments::open_or_write(dir, &snapshot)).transpose()?;
        let source = match &segments {
            Some(s) => Source::Segments(s),
            None => Source::Store(&snapshot),
        };
        if !args.cold {
            warmup_phase(&source, &keys, reused)?;
        }
        let started = Instant::now();
        let rows = measured_phase(&source, &keys, reused)?;
        let seconds = started.elapsed().as_secs_f64();
        println!("{}", json!({"phase": phase, "lookups": keys.len(), "rows": rows, "seconds": seconds}));
    }
    Ok(())
}

/// Every `n`-th subject and IRI object of a full scan, at most `n` of each,
/// those with at most 64 quads.
fn sample(snapshot: &StoreSnapshot, n: usize) -> Result<(Vec<TermId>, Vec<TermId>)> {
    let quads: u64 = rhizome_rdf::quads_counted(snapshot.kv(), None)?;
    if quads == 0 {
        bail!("the store has no quads");
    }
    let every = (quads / n.max(1) as u64).max(1);
    let (mut subjects, mut objects) = (Vec::new(), Vec::new());
    for (i, q) in snapshot.scan(QuadPattern::default()).enumerate() {
        let q = q?;
        if i as u64 % every == 0 {
            if subjects.last() != Some(&q[0]) {
                subjects.push(q[0]);
            }
            if q[2].is_iri() {
                objects.push(q[2]);
            }
        }
    }
    // Keys with few quads, as most lookups of a join are (a class or a
    // container with 100k members would be a scan, not a lookup).
    let small = |pattern: QuadPattern| snapshot.scan(pattern).take(65).count() <= 64;
    subjects.retain(|s| small(QuadPattern { s: Some(*s), ..Default::default() }));
    objects.sort_unstable();
    objects.dedup();
    objects.retain(|o| small(QuadPattern { o: Some(*o), ..Default::default() }));
    subjects.truncate(n);
    objects.truncate(n);
    // Lookups in a random order, as an index nested loop's left side
    // rarely comes sorted by the looked-up key (a fixed shuffle).
    let shuffle = |v: &mut Vec<TermId>| {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..v.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
    };
    shuffle(&mut subjects);
    shuffle(&mut objects);
    Ok((subjects, objects))
}

// The two differ by the seed of their checksum: identical functions would
// be folded into one symbol, and callgrind would find no `measured_phase`.
/// The subject-graph triples' orderings as segment files.
struct Segments {
    spo: Segment,
    osp: Segment,
}

impl Segments {
    fn open_or_write(dir: &Path, snapshot: &StoreSnapshot) -> Result<Segments> {
        use rhizome_rdf::index::layout::{TRIPLE_OSP, TRIPLE_POS, TRIPLE_SPO};
        std::fs::create_dir_all(dir)?;
        for ordering in [TRIPLE_SPO, TRIPLE_POS, TRIPLE_OSP] {
            let path = dir.join(ordering.name());
            if path.exists() {
                continue;
            }
            let mut w = SegmentWriter::create(&dir.join("tmp"), 3)?;
            let mut cursor = snapshot.kv().cursor(ordering.ks, &[], None);
            cursor.seek_first();
            while cursor.valid() {
                let k = cursor.key();
                w.push(&[0, 8, 16].map(|i| u64::from_be_bytes(k[i..i + 8].try_into().expect("24-byte key"))))?;
                cursor.next();
            }
            cursor.status()?;
            let bytes = w.finish()?;
            std::fs::rename(dir.join("tmp"), &path)?;
            let in_store = snapshot.kv().approximate_bytes(ordering.ks, &[], None).unwrap_or(0);
            eprintln!("{}: {bytes} bytes as a segment, {in_store} in the store's files", ordering.name());
            for (column, kind, width, blocks, words) in Segment::open(&path)?.encoding_summary()? {
                eprintln!("  column {column} {kind} width {width}: {blocks} blocks, {} bytes", words * 8);
            }
        }
        Ok(Segments { spo: Segment::open(&dir.join("SPO"))?, osp: Segment::open(&dir.join("OSP"))? })
    }
}

enum Source<'a> {
    Store(&'a StoreSnapshot),
    Segments(&'a Segments),
}

// The two differ by the seed of their checksum: identical functions would
// be folded into one symbol, and callgrind would find no `measured_phase`.
#[inline(never)]
fn warmup_phase(source: &Source<'_>, keys: &[QuadPattern], reused: bool) -> Result<u64> {
    lookups(source, keys, reused, 1)
}

/// The phase callgrind counts (`--toggle-collect=*measured_phase*`): its
/// instructions alone. Callgrind's call counts (`calls=`, the "(Nx)" of
/// `callgrind_annotate --tree`) also count calls made while collection is
/// off, so they show the unmeasured pass's calls too: twice the scans,
/// re-pointings and `next_quad` calls of one pass, with one pass's
/// instructions (checked: `--toggle-collect=*warmup_phase*` plus this
/// phase's count make `--toggle-collect=*bench_index::lookups*`'s).
#[inline(never)]
fn measured_phase(source: &Source<'_>, keys: &[QuadPattern], reused: bool) -> Result<u64> {
    lookups(source, keys, reused, 2)
}

#[inline(never)]
fn lookups(source: &Source<'_>, keys: &[QuadPattern], reused: bool, seed: u64) -> Result<u64> {
    let snapshot = match source {
        Source::Store(s) => *s,
        Source::Segments(s) => return segment_lookups(s, keys, reused, seed),
    };
    let mut rows = 0u64;
    let mut checksum = seed;
    // Quads taken in batches of id columns (`QuadScan::next_batch`).
    let mut batch = QuadBatch::default();
    let mut take = |scan: &mut QuadScan<'_>| -> Result<()> {
        loop {
            batch.clear();
            if scan.next_batch(&mut batch, BATCH_QUADS)? == 0 {
                return Ok(());
            }
            rows += batch.len() as u64;
            checksum = batch.column(1).iter().fold(checksum, |c, p| c.wrapping_add(p.0));
        }
    };
    if reused {
        let mut scan: Option<QuadScan<'_>> = None;
        for k in keys {
            let rebound = scan.as_mut().is_some_and(|s| s.rebind(*k));
            if !rebound {
                scan = Some(QuadScan::reusable(snapshot.kv(), *k, snapshot.families()));
            }
            take(scan.as_mut().expect("set above"))?;
        }
    } else {
        for k in keys {
            take(&mut snapshot.scan(*k))?;
        }
    }
    std::hint::black_box(checksum);
    Ok(rows)
}

/// Quads a batch holds at most.
const BATCH_QUADS: usize = 1024;

/// [`lookups`] on segments: a subject's quads are a prefix of SPO, an
/// object's of OSP; the scan reads SPO whole.
fn segment_lookups(segments: &Segments, keys: &[QuadPattern], reused: bool, seed: u64) -> Result<u64> {
    let (mut rows, mut checksum) = (0u64, seed);
    let mut spo = segments.spo.cursor();
    let mut osp = segments.osp.cursor();
    for k in keys {
        let (cursor, prefix, p_at) = match (k.s, k.o) {
            (Some(s), _) => (&mut spo, Some(s.0), 1),
            (None, Some(o)) => (&mut osp, Some(o.0), 2),
            (None, None) => (&mut spo, None, 1),
        };
        let mut fresh;
        let cursor = if reused {
            cursor
        } else {
            fresh = if k.s.is_some() || k.o.is_none() { segments.spo.cursor() } else { segments.osp.cursor() };
            &mut fresh
        };
        match prefix {
            Some(p) => cursor.seek(&[p])?,
            None => cursor.seek_first()?,
        }
        while cursor.valid() {
            let key = cursor.key();
            if prefix.is_some_and(|p| key[0] != p) {
                break;
            }
            rows += 1;
            checksum = checksum.wrapping_add(key[p_at]);
            cursor.next()?;
        }
    }
    std::hint::black_box(checksum);
    Ok(rows)
}
