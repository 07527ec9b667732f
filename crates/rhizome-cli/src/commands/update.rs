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

pub fn run(data: &Path, args: Args) -> Result<()> {
    let text = super::request_text(args.update, args.file.as_deref())?;
    let update = parse_update(&text, args.base.as_deref())?;
    let store = Store::open(data)?;
    let summary = execute_update(&store, &update)?;
    eprintln!("{} quads inserted, {} deleted", summary.quads_inserted, summary.quads_deleted);
    Ok(())
}
