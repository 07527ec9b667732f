//! `rhizome check`: verifies a store (see `rhizome_rdf::Store::check`), or
//! with `--db` one database of a server's data folder, or with `--all`
//! every database there. Prints a JSON report per store; fails when one
//! has a problem.

use anyhow::{bail, Result};
use rhizome_rdf::{CheckReport, Store};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Check this database of a server's data folder.
    #[arg(long, conflicts_with = "all")]
    db: Option<String>,
    /// Check every database of a server's data folder.
    #[arg(long)]
    all: bool,
}

fn report_json(name: &str, report: &CheckReport) -> serde_json::Value {
    serde_json::json!({
        "store": name,
        "sound": report.is_sound(),
        "problems": report.problems,
        "orderings": report.orderings.iter().map(|(o, n)| serde_json::json!({"ordering": o, "quads": n})).collect::<Vec<_>>(),
        "segments": report.segments.iter().map(|(o, rows, bytes)| serde_json::json!({"ordering": o, "rows": rows, "bytes": bytes})).collect::<Vec<_>>(),
        "segment_columns": report.segment_columns.iter().map(|(o, c, kind, blocks, bytes)| serde_json::json!({"ordering": o, "column": c, "kind": kind, "blocks": blocks, "bytes": bytes})).collect::<Vec<_>>(),
        "keyspace_bytes": report.keyspace_bytes.iter().map(|(ks, bytes)| serde_json::json!({"keyspace": ks, "bytes": bytes})).collect::<Vec<_>>(),
        "delta_quads": report.delta_quads,
        "other_keys": report.other_keys,
    })
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let mut stores: Vec<(String, PathBuf)> = Vec::new();
    if args.all {
        let dbs = data.join("dbs");
        if !dbs.is_dir() {
            bail!("{} is not a server's data folder (it has no dbs folder)", data.display());
        }
        let mut entries: Vec<_> = std::fs::read_dir(&dbs)?.collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            stores.push((e.file_name().to_string_lossy().into_owned(), e.path()));
        }
    } else if let Some(name) = &args.db {
        stores.push((name.clone(), rhizome_server::database_dir(data, name)));
    } else {
        stores.push((data.display().to_string(), data.to_owned()));
    }
    let mut unsound = 0;
    for (name, path) in stores {
        let report = Store::open_read_only(&path)?.check()?;
        if !report.is_sound() {
            unsound += 1;
        }
        println!("{}", serde_json::to_string_pretty(&report_json(&name, &report))?);
    }
    if unsound > 0 {
        bail!("{unsound} store(s) failed the check");
    }
    Ok(())
}
