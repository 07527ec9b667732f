//! `rhizome`: the command line. Each subcommand lives in `commands/`: `init`,
//! `load` (into a store folder, or with `--db` into a server database whose
//! graphs become documents), `quads`, `dump`, `query`, `update`, `stats`,
//! `compact`, `check`, `replicate`, `serve` and `graph`, plus hidden
//! benchmark and crash-test helpers. Reading commands open the store
//! read-only. It owns argument parsing (`clap`), progress bars and the
//! process's allocator (`allocator.rs`: mimalloc, called the way its own
//! malloc is, with transparent huge pages off); everything else is the
//! crates it calls. Its `tests/` hold the black-box tests that need the real
//! binary: the server's API, interop with real clients, the W3C protocol
//! suites, crash tests that kill real processes, `rhizome check`.

mod allocator;
mod commands;

#[global_allocator]
static ALLOCATOR: allocator::Mimalloc = allocator::Mimalloc;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rhizome", version, about = "Rhizome: CouchDB for linked data. A document and RDF store on one engine.")]
struct Cli {
    /// The store's folder (created by `init` or the first `load`).
    #[arg(long, global = true, env = "RHIZOME_DATA", default_value = "./rhizome-data")]
    data: PathBuf,
    /// Keep the stores in an Apache Cassandra cluster instead of the data
    /// folder: cassandra://HOST[:PORT][,HOST...]/KEYSPACE, with settings
    /// after `?` (replication_factor, consistency, serial_consistency,
    /// lease_ms; bulk=auto|sstable|cql: how big loads write, SSTables
    /// streamed in from 50,000 rows by default, which needs Java 17). Every
    /// server given the same address serves the same databases. The
    /// default build has it (cargo feature `cassandra`).
    #[arg(long, global = true, env = "RHIZOME_STORE")]
    store: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create an empty store.
    Init(commands::init::Args),
    /// Load RDF files (N-Triples, N-Quads, Turtle, TriG, RDF/XML, JSON-LD; gzip too), all or nothing.
    Load(commands::load::Args),
    /// Print the quads matching a pattern, as N-Quads.
    Quads(commands::quads::Args),
    /// Write the store, or one graph, in an RDF format.
    Dump(commands::dump::Args),
    /// Run a SPARQL query (SELECT, ASK, CONSTRUCT, DESCRIBE).
    Query(commands::query::Args),
    /// Run a SPARQL update request, atomically.
    Update(commands::update::Args),
    /// Print statistics as JSON.
    Stats(commands::stats::Args),
    /// Compact the store and recompute its statistics exactly.
    Compact,
    /// Verify a store: segment checksums, every ordering holding the same quads, counters.
    Check(commands::check::Args),
    /// Move a server data folder's IRIs to a new base (a server moved to another host or port), offline.
    ///
    /// Moves every IRI under the folder's base (kept in DATA/base-iri, named at its first start) to
    /// NEW_BASE: documents, their graphs, LDP resources and containers, JSON-LD bodies and contexts.
    /// Run it with the server stopped, after moving the server to another host or port, then start
    /// the server at NEW_BASE. View and Mango indexes are rebuilt by their next query. Revision ids
    /// are kept: a peer that already replicated a document keeps its old IRIs until the document's
    /// next edit. Each database moves in one transaction; a rebase that was killed is finished by
    /// running the same command again, and nothing else opens the folder until then.
    Rebase(commands::rebase::Args),
    /// Copy every revision a database lacks from another (CouchDB's replication protocol), one-shot or continuous.
    Replicate(commands::replicate::Args),
    /// Serve CouchDB's HTTP API (documents, _changes, replication) over DATA.
    Serve(commands::serve::Args),
    /// Graph walks: neighbours to depth k, shortest and cheapest paths, counts by value.
    Graph(commands::graph::Args),
    /// Seed 003's graph workloads in process (for bench/graph).
    #[command(hide = true)]
    BenchGraph(commands::graph::BenchArgs),
    /// Time pattern lookups from a file of queries (for bench/seed-load).
    #[command(hide = true)]
    BenchLookups(commands::bench_lookups::Args),
    /// Time SPARQL queries from a file in one process (for bench/sparql).
    #[command(hide = true)]
    BenchQueries(commands::bench_queries::Args),
    #[command(hide = true)]
    BenchHttp(commands::bench_http::Args),
    /// TPC-B through a transaction door (for bench/tpcb).
    #[command(hide = true)]
    BenchTpcb(commands::bench_tpcb::Args),
    /// What the quad indexes cost per lookup and per row (for bench/index-cost).
    #[command(hide = true)]
    BenchIndex(commands::bench_index::Args),
    /// Small committed writes that report each commit (for crash tests).
    #[command(hide = true)]
    WriteProbe(commands::write_probe::Args),
}

fn main() -> ExitCode {
    allocator::no_transparent_huge_pages();
    let cli = Cli::parse();
    if let Err(e) = rhizome_kv::remote::configure(cli.store.as_deref(), &cli.data) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Init(args) => commands::init::run(&cli.data, args),
        Command::Load(args) => commands::load::run(&cli.data, args),
        Command::Quads(args) => commands::quads::run(&cli.data, args),
        Command::Dump(args) => commands::dump::run(&cli.data, args),
        Command::Query(args) => commands::query::run(&cli.data, args),
        Command::Update(args) => commands::update::run(&cli.data, args),
        Command::Stats(args) => commands::stats::run(&cli.data, args),
        Command::Compact => commands::compact(&cli.data),
        Command::Check(args) => commands::check::run(&cli.data, args),
        Command::Rebase(args) => commands::rebase::run(&cli.data, args),
        Command::Replicate(args) => commands::replicate::run(&cli.data, args),
        Command::Serve(args) => commands::serve::run(&cli.data, args),
        Command::Graph(args) => commands::graph::run(&cli.data, args),
        Command::BenchGraph(args) => commands::graph::bench(&cli.data, args),
        Command::BenchLookups(args) => commands::bench_lookups::run(&cli.data, args),
        Command::BenchQueries(args) => commands::bench_queries::run(&cli.data, args),
        Command::BenchHttp(args) => commands::bench_http::run(args),
        Command::BenchTpcb(args) => commands::bench_tpcb::run(&cli.data, args),
        Command::BenchIndex(args) => commands::bench_index::run(&cli.data, args),
        Command::WriteProbe(args) => commands::write_probe::run(&cli.data, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each once: many errors already print their
/// cause in their own message, and `{:#}` would repeat it.
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
