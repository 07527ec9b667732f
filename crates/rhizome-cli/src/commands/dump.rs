use anyhow::{Context, Result};
use oxrdf::{GraphName, NamedNode};
use rhizome_rdf::{dump, DumpOptions, Store};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// nquads (default), ntriples, turtle, trig, rdfxml, jsonld.
    #[arg(long, default_value = "nquads")]
    format: String,
    /// Only this graph (an IRI, or `default` for the default graph).
    #[arg(long)]
    graph: Option<String>,
    /// Write here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let format = super::parse_format(&args.format)?;
    let graph = match args.graph.as_deref() {
        None => None,
        Some("default") => Some(GraphName::DefaultGraph),
        Some(g) => {
            let g = g.trim_start_matches('<').trim_end_matches('>');
            Some(GraphName::NamedNode(NamedNode::new(g).with_context(|| format!("--graph {g:?} is not an IRI"))?))
        }
    };
    let store = Store::open_read_only(data)?;
    let snapshot = store.snapshot()?;
    let options = DumpOptions { format, graph };
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
            let n = dump(&snapshot, &options, &mut w)?;
            w.flush()?;
            w.get_ref().sync_all()?;
            eprintln!("wrote {n} quads to {}", path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
            dump(&snapshot, &options, &mut w)?;
            w.flush()?;
        }
    }
    Ok(())
}
