use anyhow::{Context, Result};
use oxrdf::NamedNode;
use rhizome_rdf::{LoadInput, LoadOptions, Store};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Format of all inputs (ntriples, nquads, turtle, trig, rdfxml, jsonld);
    /// by default guessed from each file's extension (looking through .gz).
    #[arg(long)]
    format: Option<String>,
    /// Base IRI to resolve relative IRIs against.
    #[arg(long)]
    base: Option<String>,
    /// Load triples into this graph instead of their subjects' graphs (or
    /// the default graph of a plain store).
    #[arg(long)]
    graph: Option<String>,
    /// Skip bad statements (and report how many) instead of loading nothing.
    #[arg(long)]
    lenient: bool,
    /// No progress bar even on a terminal.
    #[arg(long, short)]
    quiet: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Load into database NAME of a server's data folder (`--data`, the
    /// server stopped): every new graph (each subject's triples, each named
    /// graph) becomes a document of it, readable and replicable through
    /// CouchDB's API, its body rendered from its quads as JSON-LD. A blank
    /// node's triples join the document of the subject that references it
    /// (through chains of blank nodes, as in lists); blank nodes that no
    /// IRI references join the document `default-graph`.
    #[arg(long, value_name = "NAME")]
    db: Option<String>,
    /// With --db: load even though the database has `validate_doc_update`
    /// functions. A load does not run them (its documents are made from
    /// the loaded graphs in bulk), so without this flag such a database
    /// refuses the load rather than take documents its rules never saw.
    #[arg(long, requires = "db")]
    skip_validation: bool,
    /// Files to load; `-` reads stdin (then --format is needed).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let mut options = LoadOptions::default();
    if let Some(f) = &args.format {
        options.format = Some(super::parse_format(f)?);
    }
    options.base_iri = args.base.clone();
    if let Some(g) = &args.graph {
        let g = g.trim_start_matches('<').trim_end_matches('>');
        options.graph = Some(NamedNode::new(g).with_context(|| format!("--graph {g:?} is not an IRI"))?);
    }
    options.lenient = args.lenient;
    options.progress = !args.quiet && std::io::stderr().is_terminal();
    if let Ok(v) = std::env::var("RHIZOME_LOAD_BUFFER_BYTES") {
        options.run_buffer_bytes = v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1 << 20..=1 << 40).contains(n))
            .with_context(|| format!("RHIZOME_LOAD_BUFFER_BYTES={v:?}: expected a number of bytes from 1048576 (1 MiB) to 2^40"))?;
    }
    // Check the inputs before creating a store a failed load would leave.
    for f in &args.files {
        if f.as_os_str() != "-" && !f.is_file() {
            anyhow::bail!("cannot read {}: no such file", f.display());
        }
    }
    let inputs: Vec<LoadInput> = args.files.iter().map(|p| LoadInput { path: p.clone() }).collect();
    let (s, adopted) = match &args.db {
        None => (Store::open_or_create(data, None)?.load(&inputs, &options)?, None),
        Some(name) => {
            if !rhizome_docs::valid_db_name(name) || name.starts_with('_') {
                anyhow::bail!("{name:?} is not a valid database name (lowercase letter first, then a-z 0-9 _$()+/-)");
            }
            // Loaded here, not through a server: none may run on the folder.
            let _folder = rhizome_server::folder::share_folder(data)?;
            let dir = rhizome_server::database_dir(data, name);
            let base = rhizome_server::base_iri(data)?;
            let db = rhizome_docs::Database::open(&dir, rhizome_server::projector_for(&base, name, rhizome_server::context_store(data)?))?;
            // Every door keeps a database's rules; this one cannot run them.
            let validators: Vec<String> = rhizome_views::validate::design_docs(&db)?.into_iter().filter(|d| d.validate_doc_update().is_some()).map(|d| d.id).collect();
            if !validators.is_empty() && !args.skip_validation {
                anyhow::bail!(
                    "database {name:?} has validate_doc_update functions ({}), which a bulk load does not run; \
                     write through the server instead (`_bulk_docs`, the Graph Store, SPARQL Update), or pass \
                     --skip-validation to load without them",
                    validators.join(", ")
                );
            }
            // Blank nodes no IRI references join the stored default graph.
            let mut options = options.clone();
            options.orphan_graph = db.stored_default_graph().map(NamedNode::new).transpose().context("the stored default graph's IRI")?;
            let summary = db.store().load(&inputs, &options)?;
            let show = options.progress;
            let adopted = db.adopt_graphs(10_000, |n| {
                if show {
                    eprint!("\rdocuments created: {n}");
                }
            })?;
            if show {
                eprintln!();
            }
            (summary, Some(adopted))
        }
    };
    let rate = s.quads_read as f64 / s.seconds.max(1e-9);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "quads_read": s.quads_read, "quads_added": s.quads_added, "terms_added": s.terms_added,
                "graphs_added": s.graphs_added, "bytes_read": s.bytes_read, "seconds": s.seconds,
                "quads_per_second": rate, "skipped": s.skipped, "documents_added": adopted,
            })
        );
    } else {
        println!(
            "loaded {} quads ({} read, {} new terms, {} new graphs) in {:.2} s, {:.0} quads/s",
            s.quads_added, s.quads_read, s.terms_added, s.graphs_added, s.seconds, rate
        );
        if let Some(n) = adopted {
            println!("{n} new documents");
        }
    }
    if s.skipped > 0 {
        eprintln!("skipped {} bad statements; the first:", s.skipped);
        for e in &s.skipped_examples {
            eprintln!("  {e}");
        }
    }
    Ok(())
}
