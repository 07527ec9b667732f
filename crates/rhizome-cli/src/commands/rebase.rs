//! `rhizome rebase`: moves a server data folder's IRIs from its base
//! (`DATA/base-iri`) to another, offline, so that a server moved to
//! another host or port names and answers its documents, graphs and LDP
//! resources under its new address.
//!
//! Per database, one transaction: the dictionary's IRIs under the old base
//! (term ids kept, so the quad indexes are untouched), document ids that
//! are IRIs (LDP resources), graph-bodied records, IRIs in bodies and
//! `_local` documents, LDP membership resources; view and Mango indexes
//! dropped (rebuilt on their next query); the database marked with its new
//! base. The plan (`DATA/rebase-plan`) is synced first and removed last,
//! so a killed rebase leaves every database whole under one base or the
//! other, and running the command again finishes it.

use anyhow::{bail, Context, Result};
use rhizome_rdf::Store;
use rhizome_server::folder::{self, RebasePlan};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The new base, an absolute IRI such as http://db.example.org:5984 (usually the server's new address).
    new_base: String,
    /// Count what would change, and change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// What a rebase changed in one database (or would, in a dry run).
#[derive(Default)]
struct Counts {
    terms: u64,
    documents: u64,
    bodies: u64,
    ldp_entries: u64,
    index_keys: u64,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let new = args.new_base.trim_end_matches('/').to_owned();
    oxrdf::NamedNode::new(format!("{new}/db/doc")).map_err(|e| anyhow::anyhow!("{:?} is not an absolute IRI: {e}", args.new_base))?;
    let dbs_dir = data.join("dbs");
    if !data.join("base-iri").is_file() {
        bail!("{} is not a server's data folder with a base IRI (it has no base-iri file): nothing to rebase", data.display());
    }
    let _lock = folder::lock_folder(data).context("stop the server first: a rebase runs offline")?;
    let resumed = folder::rebase_plan(data)?;
    let old = match &resumed {
        Some(plan) if plan.to != new => bail!("a rebase from {} to {} was interrupted; finish it first with `rhizome --data {} rebase {}`", plan.from, plan.to, data.display(), plan.to),
        Some(plan) => {
            eprintln!("rhizome: finishing the interrupted rebase from {} to {new}", plan.from);
            plan.from.clone()
        }
        None => {
            let stored = std::fs::read_to_string(data.join("base-iri")).context("reading base-iri")?.trim().to_owned();
            if stored == new {
                println!("{} is already under {new}: nothing to do", data.display());
                return Ok(());
            }
            stored
        }
    };
    let mut databases: Vec<(String, PathBuf)> = Vec::new();
    if dbs_dir.is_dir() {
        for entry in std::fs::read_dir(&dbs_dir).with_context(|| format!("reading {}", dbs_dir.display()))? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                databases.push((entry.file_name().to_string_lossy().into_owned(), entry.path()));
            }
        }
    }
    databases.sort();
    // Every database is tried first without committing, so that one the
    // move cannot apply to (two terms that would become one) is refused
    // before any has moved.
    let (total, skipped) = if args.dry_run || resumed.is_none() {
        every_database(&databases, &old, &new, true)?
    } else {
        (Counts::default(), 0)
    };
    let (total, skipped) = if args.dry_run {
        (total, skipped)
    } else {
        if resumed.is_none() {
            folder::write_rebase_plan(data, &RebasePlan { from: old.clone(), to: new.clone() })?;
        }
        every_database(&databases, &old, &new, false)?
    };
    let what = format!(
        "{} databases{}: {} terms renamed, {} document ids renamed, {} bodies rewritten, {} LDP index entries, {} view and Mango index keys dropped",
        databases.len(),
        if skipped > 0 { format!(" ({skipped} already done)") } else { String::new() },
        total.terms,
        total.documents,
        total.bodies,
        total.ldp_entries,
        total.index_keys
    );
    if args.dry_run {
        println!("dry run, nothing changed: rebasing {} from {old} to {new} would change {what}", data.display());
        return Ok(());
    }
    folder::finish_rebase(data, &new)?;
    println!("rebased {} from {old} to {new}: {what}", data.display());
    Ok(())
}

/// [`rebase_database`] over every database, with a progress bar (or,
/// without a terminal, a line per database moved).
fn every_database(databases: &[(String, PathBuf)], old: &str, new: &str, dry_run: bool) -> Result<(Counts, usize)> {
    let bar = indicatif::ProgressBar::new(databases.len() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} databases {msg}").expect("a valid template").progress_chars("=> "));
    bar.set_prefix(if dry_run { "checking" } else { "rebasing" });
    let mut total = Counts::default();
    let mut skipped = 0;
    for (name, path) in databases {
        bar.set_message(name.clone());
        match rebase_database(path, old, new, dry_run).with_context(|| format!("database {name}"))? {
            Some(c) => {
                total.terms += c.terms;
                total.documents += c.documents;
                total.bodies += c.bodies;
                total.ldp_entries += c.ldp_entries;
                total.index_keys += c.index_keys;
            }
            None => skipped += 1,
        }
        bar.inc(1);
        if !dry_run && bar.is_hidden() {
            // Scripts and tests follow these lines.
            eprintln!("rhizome: rebased {name}");
        }
    }
    bar.finish_and_clear();
    Ok((total, skipped))
}

/// Moves one database in one transaction; `None` when an interrupted run
/// of the same rebase had done it already.
fn rebase_database(path: &Path, old: &str, new: &str, dry_run: bool) -> Result<Option<Counts>> {
    let store = Store::open(path)?;
    let mut txn = store.transaction()?;
    let kv = txn.kv_mut();
    if rhizome_docs::rebase::recorded_base(kv)?.as_deref() == Some(new) {
        return Ok(None);
    }
    let mut counts = Counts { terms: rhizome_rdf::term::rebase_dictionary(kv, old, new)?, ..Counts::default() };
    let docs = rhizome_docs::rebase::rebase_documents(kv, old, new)?;
    counts.documents = docs.renamed_docs;
    counts.bodies = docs.rewritten_bodies;
    counts.index_keys = docs.dropped_index_keys;
    counts.ldp_entries = rhizome_ldp::rebase::rebase_index(kv, old, new)?;
    for ks in rhizome_views::VIEW_INDEX_KEYSPACES {
        counts.index_keys += rhizome_docs::rebase::clear_keyspace(kv, ks)?;
    }
    if !dry_run {
        // Full-text indexes (`rhizome_search::search_dir`) hold documents'
        // ids and text under the old base: dropped (before the commit, so
        // that a run killed in between drops them when it runs again) and
        // rebuilt by the next search, as views and Mango indexes are.
        let search = path.join("search");
        if search.exists() {
            std::fs::remove_dir_all(&search)?;
        }
        txn.commit()?;
    }
    Ok(Some(counts))
}
