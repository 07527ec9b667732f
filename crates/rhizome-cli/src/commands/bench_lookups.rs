//! Times lookups in process, for `bench/seed-load`: each line of a query
//! file is `KIND<TAB>TERM`; files run in the order given, one store opened
//! once for all (as the peers' stores are), kinds of a file in the order
//! they first appear, and each result quad is decoded to terms (as a client
//! would get it). One JSON line per file and kind.

use anyhow::{bail, Context, Result};
use rhizome_rdf::{DecodeCache, QuadPattern, Store, StoreSnapshot};
use rhizome_kv::WaitStats;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Files of `KIND<TAB>TERM` lines; KIND is subject, predicate, object, id or range.
    #[arg(long, required = true, num_args = 1..)]
    queries: Vec<PathBuf>,
    /// Documents per range query.
    #[arg(long, default_value_t = 1000)]
    range_limit: usize,
    /// Stop a file's set of one kind after this many seconds (the JSON line
    /// then reports how many queries ran), as the harness does for peers.
    #[arg(long)]
    budget_seconds: Option<f64>,
    /// Decode each lookup's results together, as a SPARQL query's result
    /// rows are (the terms missing from the cache read in one batch), rather
    /// than term by term: on a cluster's store each read is a round trip.
    #[arg(long)]
    batch_decode: bool,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = Store::open(data)?;
    let snapshot = store.snapshot()?;
    for file in &args.queries {
        run_file(&snapshot, file, args.range_limit, args.budget_seconds, args.batch_decode)?;
    }
    Ok(())
}

fn run_file(snapshot: &StoreSnapshot, file: &Path, range_limit: usize, budget_seconds: Option<f64>, batch_decode: bool) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut kinds: Vec<String> = Vec::new();
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((kind, term)) = line.split_once('\t') else {
            bail!("{}:{}: expected KIND<TAB>TERM", file.display(), i + 1);
        };
        if !by_kind.contains_key(kind) {
            kinds.push(kind.to_owned());
        }
        by_kind.entry(kind.to_owned()).or_default().push(term.to_owned());
    }
    for kind in kinds {
        let terms = &by_kind[&kind];
        let started = Instant::now();
        let waits_before = rhizome_kv::remote::cluster_wait_stats();
        let cpu_before = cpu_seconds();
        let mut results = 0u64;
        let mut done = 0usize;
        // On a cluster's store, where the time goes: the term's id, the
        // index scan, the results' terms (batch decoding only).
        let mut phases = Phases::default();
        for t in terms {
            if budget_seconds.is_some_and(|b| started.elapsed().as_secs_f64() > b) {
                break;
            }
            done += 1;
            let term = super::parse_term(t)?;
            let mark = phases.start();
            let id = snapshot.lookup(term.as_ref())?;
            phases.end(0, mark);
            let Some(id) = id else { continue };
            let mut cache = DecodeCache::new(snapshot);
            cache.remember(id, term);
            let pattern = match kind.as_str() {
                "subject" => QuadPattern { s: Some(id), ..Default::default() },
                "predicate" => QuadPattern { p: Some(id), ..Default::default() },
                "object" => QuadPattern { o: Some(id), ..Default::default() },
                "id" => QuadPattern { g: Some(id), ..Default::default() },
                "range" => {
                    // The next `range_limit` documents in id order from this one.
                    let mut docs = 0;
                    let mut last = None;
                    for q in snapshot.scan_from_subject(id) {
                        let q = q?;
                        if last != Some(q[0]) {
                            docs += 1;
                            if docs > range_limit {
                                break;
                            }
                            last = Some(q[0]);
                        }
                        std::hint::black_box(cache.quad(&q)?);
                        results += 1;
                    }
                    continue;
                }
                other => bail!("unknown query kind {other:?}"),
            };
            if batch_decode {
                let mark = phases.start();
                let quads = snapshot.scan(pattern).collect::<rhizome_rdf::Result<Vec<_>>>()?;
                phases.end(1, mark);
                let mut ids: Vec<_> = quads.iter().flatten().copied().collect();
                let mut terms = Vec::new();
                let mark = phases.start();
                snapshot.decode_many(&mut ids, |id, t| terms.push((id, t)))?;
                phases.end(2, mark);
                for (id, t) in terms {
                    cache.remember(id, t);
                }
                for q in &quads {
                    std::hint::black_box(cache.quad(q)?);
                    results += 1;
                }
                continue;
            }
            for q in snapshot.scan(pattern) {
                std::hint::black_box(cache.quad(&q?)?);
                results += 1;
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        // On a cluster's store: how many times the lookups waited on it.
        let waited = rhizome_kv::remote::cluster_wait_stats().zip(waits_before).map(|(after, before)| after - before);
        // The process's CPU (every thread: the driver's too): what a wait
        // costs the client, beside what it costs in time.
        let cpu = cpu_seconds() - cpu_before;
        let mut line = serde_json::json!({"file": file, "kind": kind, "queries": done, "results": results, "seconds": seconds, "cluster_waits": waited.map(|w| w.waits), "cpu_seconds": cpu});
        // On a cluster's store: the seconds in those waits, the statements
        // they carried, and the same by phase.
        if let Some(waited) = waited {
            line["wait_seconds"] = serde_json::json!(waited.seconds);
            line["statements"] = serde_json::json!(waited.statements);
            line["phases"] = phases.json();
        }
        println!("{line}");
    }
    Ok(())
}

/// Per phase of a lookup (term id, index scan, results' terms): wall
/// seconds, and what it waited on the cluster.
#[derive(Default)]
struct Phases([(f64, WaitStats); 3]);

impl Phases {
    fn start(&self) -> (Instant, WaitStats) {
        (Instant::now(), rhizome_kv::remote::cluster_wait_stats().unwrap_or_default())
    }

    fn end(&mut self, phase: usize, (started, before): (Instant, WaitStats)) {
        let p = &mut self.0[phase];
        p.0 += started.elapsed().as_secs_f64();
        p.1 += rhizome_kv::remote::cluster_wait_stats().unwrap_or_default() - before;
    }

    fn json(&self) -> serde_json::Value {
        let phase = |(seconds, w): &(f64, WaitStats)| serde_json::json!({"seconds": seconds, "waits": w.waits, "wait_seconds": w.seconds, "statements": w.statements, "driver_seconds": w.driver_seconds});
        serde_json::json!({"term_id": phase(&self.0[0]), "scan": phase(&self.0[1]), "decode": phase(&self.0[2])})
    }
}

/// User and system CPU seconds of this process, all its threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
