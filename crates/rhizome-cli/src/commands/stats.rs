use anyhow::Result;
use rhizome_rdf::{DatasetMode, Store};
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Also list per-predicate counts, with `counted_values`: how many
    /// values have their quads counted (what `GROUP BY` on the predicate's
    /// object reads), or null for a predicate with too many values.
    #[arg(long)]
    predicates: bool,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = Store::open_read_only(data)?;
    let stats = store.stats()?;
    let mut json = serde_json::json!({
        "mode": match stats.mode { DatasetMode::Union => "union", DatasetMode::Plain => "plain" },
        "quads": stats.quads,
        "terms": stats.terms,
        "graphs": stats.graphs,
        "predicates": stats.predicates.len(),
        "bytes_on_disk": stats.bytes_on_disk,
        "bytes_per_quad": if stats.quads > 0 { stats.bytes_on_disk as f64 / stats.quads as f64 } else { 0.0 },
    });
    if args.predicates {
        let snapshot = store.snapshot()?;
        let mut list = Vec::new();
        for p in &stats.predicates {
            let name = snapshot.decode(p.predicate)?.map(|t| t.to_string()).unwrap_or_default();
            let counted = rhizome_rdf::value_counts(snapshot.kv(), p.predicate)?.map(|c| c.len());
            list.push(serde_json::json!({
                "predicate": name, "quads": p.quads,
                "distinct_subjects": p.distinct_subjects, "distinct_objects": p.distinct_objects,
                "counted_values": counted,
            }));
        }
        json["per_predicate"] = serde_json::Value::Array(list);
    }
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
