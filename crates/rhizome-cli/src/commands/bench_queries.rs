//! Times SPARQL queries in process, for `bench/sparql`: the store is opened
//! once, each query of the file runs `warmup` times unmeasured and then
//! `repeat` times measured, each time parsed, planned, executed and its
//! results serialized (TSV by default) into a sink, as a client would get
//! them. Prints one JSON line per query:
//! `{"id":"q01","rows":123,"seconds":[0.0012,...]}` (or `"error":"..."`).
//!
//! The query file holds one query per line as JSON: `{"id":"q01","query":"..."}`.

use anyhow::{bail, Context, Result};
use rhizome_rdf::Store;
use rhizome_sparql::{parse_query, write_results, PreparedQuery, ResultFormat, Statistics};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// File of JSON lines `{"id": ..., "query": ...}`.
    #[arg(long)]
    queries: PathBuf,
    /// Unmeasured runs of each query first.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Measured runs of each query.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Result format the rows are serialized in (into a sink).
    #[arg(long, default_value = "tsv")]
    format: String,
    /// A query whose warm-up run takes longer than this is measured once.
    #[arg(long, default_value_t = f64::INFINITY)]
    slow_seconds: f64,
    /// Stop a query after this many milliseconds (reported as an error).
    #[arg(long)]
    timeout_ms: Option<u64>,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let text = std::fs::read_to_string(&args.queries).with_context(|| format!("cannot read {}", args.queries.display()))?;
    let Some(format) = ResultFormat::from_name(&args.format) else { bail!("unknown format {:?}", args.format) };
    let store = Store::open(data)?;
    let stats = Statistics::from_store(&store.planner_stats()?);
    let snapshot = store.snapshot()?;
    let stdout = std::io::stdout();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: serde_json::Value = serde_json::from_str(line).with_context(|| format!("{}:{}: not JSON", args.queries.display(), i + 1))?;
        let id = entry["id"].as_str().unwrap_or("?").to_owned();
        let Some(query_text) = entry["query"].as_str() else { bail!("{}:{}: no \"query\"", args.queries.display(), i + 1) };
        let mut seconds = Vec::with_capacity(args.repeat);
        let mut rows = 0u64;
        let mut error = None;
        let mut runs = args.warmup + args.repeat;
        let mut run = 0;
        while run < runs {
            let started = Instant::now();
            let once = || -> Result<u64> {
                let query = parse_query(query_text, None)?;
                let prepared = PreparedQuery::new(&snapshot, stats.clone(), &query)?;
                if let Some(ms) = args.timeout_ms {
                    prepared.set_timeout(std::time::Duration::from_millis(ms));
                }
                let results = prepared.execute()?;
                Ok(write_results(results, format, std::io::sink())?)
            };
            match once() {
                Ok(n) => rows = n,
                Err(e) => {
                    error = Some(format!("{e:#}"));
                    break;
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            if run >= args.warmup {
                seconds.push(elapsed);
            } else if elapsed > args.slow_seconds {
                runs = run + 2;
            }
            run += 1;
        }
        let line = match error {
            Some(e) => serde_json::json!({"id": id, "error": e}),
            None => serde_json::json!({"id": id, "rows": rows, "seconds": seconds}),
        };
        let mut out = stdout.lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    Ok(())
}
