//! Times lookups in process, for `bench/seed-load`: each line of the query
//! file is `KIND<TAB>TERM`; kinds run in the order they first appear, and
//! each result quad is decoded to terms (as a client would get it).

use anyhow::{bail, Context, Result};
use rhizome_rdf::{DecodeCache, QuadPattern, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// File of `KIND<TAB>TERM` lines; KIND is subject, predicate, object, id or range.
    #[arg(long)]
    queries: PathBuf,
    /// Documents per range query.
    #[arg(long, default_value_t = 1000)]
    range_limit: usize,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let text = std::fs::read_to_string(&args.queries).with_context(|| format!("cannot read {}", args.queries.display()))?;
    let mut kinds: Vec<String> = Vec::new();
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((kind, term)) = line.split_once('\t') else {
            bail!("{}:{}: expected KIND<TAB>TERM", args.queries.display(), i + 1);
        };
        if !by_kind.contains_key(kind) {
            kinds.push(kind.to_owned());
        }
        by_kind.entry(kind.to_owned()).or_default().push(term.to_owned());
    }
    let store = Store::open(data)?;
    let snapshot = store.snapshot()?;
    for kind in kinds {
        let terms = &by_kind[&kind];
        let started = Instant::now();
        let mut results = 0u64;
        for t in terms {
            let Some(id) = super::term_id(&snapshot, t)? else { continue };
            let mut cache = DecodeCache::new(&snapshot);
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
                            if docs > args.range_limit {
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
            for q in snapshot.scan(pattern) {
                std::hint::black_box(cache.quad(&q?)?);
                results += 1;
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        println!("{}", serde_json::json!({"kind": kind, "queries": terms.len(), "results": results, "seconds": seconds}));
    }
    Ok(())
}
