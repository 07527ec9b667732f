use anyhow::{bail, Result};
use rhizome_rdf::{DatasetMode, Store};
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// A plain RDF dataset: the default graph is a graph of its own, instead
    /// of the union of the documents' graphs.
    #[arg(long)]
    plain: bool,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    if rhizome_kv::remote::store_exists(data)? {
        bail!("{} already holds a store", data.display());
    }
    let mode = if args.plain { DatasetMode::Plain } else { DatasetMode::Union };
    Store::open_or_create(data, Some(mode))?;
    println!("created {} store at {}", if args.plain { "a plain" } else { "a union-default-graph" }, data.display());
    Ok(())
}
