use anyhow::Result;
use rhizome_rdf::{QuadPattern, Store, TermId};
use std::io::Write;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Subject, in N-Triples syntax (<iri> or _:b).
    #[arg(short)]
    s: Option<String>,
    /// Predicate (<iri>).
    #[arg(short)]
    p: Option<String>,
    /// Object (<iri>, "text"@en, "5"^^<datatype>, _:b).
    #[arg(short)]
    o: Option<String>,
    /// Graph (<iri>, _:b, or `default` for the default graph of a plain store).
    #[arg(short)]
    g: Option<String>,
    /// Print only the number of matching quads.
    #[arg(long)]
    count: bool,
    /// Stop after this many quads.
    #[arg(long)]
    limit: Option<u64>,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = Store::open_read_only(data)?;
    let snapshot = store.snapshot()?;
    let mut pattern = QuadPattern::default();
    let mut missing = false;
    let mut cache = rhizome_rdf::DecodeCache::new(&snapshot);
    for (text, slot) in [(&args.s, &mut pattern.s), (&args.p, &mut pattern.p), (&args.o, &mut pattern.o)] {
        if let Some(t) = text {
            let term = super::parse_term(t)?;
            match snapshot.lookup(term.as_ref())? {
                Some(id) => {
                    *slot = Some(id);
                    cache.remember(id, term);
                }
                None => missing = true,
            }
        }
    }
    if let Some(g) = &args.g {
        if g == "default" {
            pattern.g = Some(TermId::DEFAULT_GRAPH);
        } else {
            match super::term_id(&snapshot, g)? {
                Some(id) => pattern.g = Some(id),
                None => missing = true,
            }
        }
    }
    let limit = args.limit.unwrap_or(u64::MAX);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut n = 0u64;
    if !missing {
        for q in snapshot.scan(pattern) {
            if n >= limit {
                break;
            }
            let q = q?;
            n += 1;
            if !args.count {
                let quad = cache.quad(&q)?;
                write!(out, "{} {} {}", quad.subject, quad.predicate, quad.object)?;
                if !quad.graph_name.is_default_graph() {
                    write!(out, " {}", quad.graph_name)?;
                }
                writeln!(out, " .")?;
            }
        }
    }
    if args.count {
        writeln!(out, "{n}")?;
    }
    out.flush()?;
    Ok(())
}
