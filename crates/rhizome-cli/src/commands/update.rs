//! `rhizome update`: a SPARQL update request, as one transaction.

use anyhow::Result;
use rhizome_rdf::Store;
use rhizome_sparql::{execute_update, parse_update};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The update text (or --file).
    update: Option<String>,
    /// Read the update from a file.
    #[arg(long, short)]
    file: Option<PathBuf>,
    /// Base IRI to resolve relative IRIs of the update against.
    #[arg(long)]
    base: Option<String>,
}

/// Runs on a thread of the query stack, as `rhizome query`. `LOAD` reads
/// any local file the user can (the store is theirs, as with `rhizome
/// load`), within `rhizome_sparql::DEFAULT_LOAD_MAX_BYTES`.
pub fn run(data: &Path, args: Args) -> Result<()> {
    rhizome_sparql::nesting::run_with_query_stack(|| run_update(data, args))?
}

fn run_update(data: &Path, args: Args) -> Result<()> {
    let text = super::request_text(args.update, args.file.as_deref())?;
    let update = parse_update(&text, args.base.as_deref())?;
    let store = Store::open(data)?;
    let summary = execute_update(&store, &update)?;
    eprintln!("{} quads inserted, {} deleted", summary.quads_inserted, summary.quads_deleted);
    Ok(())
}
