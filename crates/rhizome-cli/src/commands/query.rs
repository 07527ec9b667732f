//! `rhizome query`: a SPARQL query against a snapshot of the store.

use anyhow::{bail, Result};
use rhizome_rdf::Store;
use rhizome_sparql::{parse_query, write_results, PreparedQuery, QueryResults, ResultFormat, Statistics};
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The query text (or --file).
    query: Option<String>,
    /// Read the query from a file.
    #[arg(long, short)]
    file: Option<PathBuf>,
    /// json, xml, csv, tsv or table for solutions; nquads, turtle or
    /// ntriples for graphs. Default: a table on a terminal, JSON in a pipe
    /// (N-Triples for graphs).
    #[arg(long)]
    format: Option<String>,
    /// Base IRI to resolve relative IRIs of the query against.
    #[arg(long)]
    base: Option<String>,
    /// Stop the query after this many milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Run the query and print its plan with estimated and actual row
    /// counts instead of its results.
    #[arg(long)]
    explain: bool,
    /// Fail a query whose sort, group or join needs more memory than this.
    #[arg(long)]
    memory_limit_mb: Option<usize>,
}

/// Runs on a thread of the query stack (`rhizome_sparql::nesting`): the
/// deepest queries the nesting limits allow need more than the main
/// thread's stack.
pub fn run(data: &Path, args: Args) -> Result<()> {
    rhizome_sparql::nesting::run_with_query_stack(|| run_query(data, args))?
}

fn run_query(data: &Path, args: Args) -> Result<()> {
    let text = super::request_text(args.query, args.file.as_deref())?;
    // A syntax error says line, column and what was expected.
    let query = parse_query(&text, args.base.as_deref())?;
    let format = match args.format.as_deref() {
        Some(name) => match ResultFormat::from_name(name) {
            Some(f) => Some(f),
            None => bail!("unknown format {name:?} (json, xml, csv, tsv, table, nquads, turtle, ntriples)"),
        },
        None => None,
    };
    let store = Store::open_read_only(data)?;
    let stats = Statistics::from_store(&store.planner_stats()?);
    let snapshot = store.snapshot()?;
    let prepared = PreparedQuery::new(&snapshot, stats, &query)?;
    if let Some(ms) = args.timeout_ms {
        prepared.set_timeout(std::time::Duration::from_millis(ms));
    }
    if let Some(mb) = args.memory_limit_mb {
        prepared.set_memory_limit(mb.saturating_mul(1 << 20));
    }
    if args.explain {
        print!("{}", prepared.explain()?);
        return Ok(());
    }
    let results = prepared.execute()?;
    let terminal = std::io::stdout().is_terminal();
    let format = format.unwrap_or(match (&results, terminal) {
        (QueryResults::Graph(_), _) => ResultFormat::NTriples,
        (_, true) => ResultFormat::Table,
        (_, false) => ResultFormat::Json,
    });
    let mut out = BufWriter::new(std::io::stdout().lock());
    let n = write_results(results, format, &mut out)?;
    // JSON and XML documents end without a newline; a shell prompt should not.
    if matches!(format, ResultFormat::Json | ResultFormat::Xml) {
        writeln!(out)?;
    }
    out.flush()?;
    if terminal && format == ResultFormat::Table {
        eprintln!("{n} result{}", if n == 1 { "" } else { "s" });
    }
    Ok(())
}
