//! `rhizome replicate SOURCE TARGET`: CouchDB's replication between two
//! databases, each a server's URL or a database of the local data folder.

use anyhow::{bail, Context, Result};
use rhizome_docs::{Database, WriteOutcome};
use rhizome_replication::{replicate, Endpoint, Filter, HttpEndpoint, LocalDatabase, LocalEndpoint, Options};
use serde_json::{Map, Value};
use std::io::IsTerminal;
use std::path::Path;

#[derive(clap::Args)]
#[command(after_help = "Each endpoint is a URL, http://user:password@host:5984/db (CouchDB, PouchDB Server, \
another rhizome serve), or the name of a database in --data (a server's data folder; that server must be \
stopped, or use its URL). Checkpoints are kept in _local documents on both sides, so running the same \
replication again copies only what changed since; an interrupted one resumes from its last batch.\n\n\
Prints CouchDB's replication summary as JSON; fails if the target refused any revision.")]
pub struct Args {
    /// Where the revisions come from.
    source: String,
    /// Where they go.
    target: String,
    /// Keep running: wait for new changes on the source and copy them as they come.
    #[arg(long)]
    continuous: bool,
    /// Create the target database if it does not exist.
    #[arg(long)]
    create_target: bool,
    /// Only these documents (comma-separated ids).
    #[arg(long, value_delimiter = ',', conflicts_with = "selector")]
    doc_ids: Option<Vec<String>>,
    /// Only documents whose winning revision matches this Mango selector (JSON), e.g. '{"type": "person"}'.
    #[arg(long)]
    selector: Option<String>,
    /// Changes read from the source per batch.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    batch_size: u64,
    /// No progress line on a terminal.
    #[arg(long)]
    quiet: bool,
}

fn endpoint(data: &Path, spec: &str, is_target: bool, create: bool) -> Result<Box<dyn Endpoint>> {
    if spec.contains("://") {
        return Ok(Box::new(HttpEndpoint::new(spec)?));
    }
    if !rhizome_docs::valid_db_name(spec) || spec.starts_with('_') {
        bail!("{spec:?} is neither an http:// URL nor a database name (lowercase letter first, then a-z 0-9 _$()+/-)");
    }
    let dir = rhizome_server::database_dir(data, spec);
    let may_create = is_target && create;
    if !rhizome_kv::remote::store_exists(&dir)? && !may_create {
        bail!(
            "there is no database {spec:?} in {}{}",
            data.display(),
            if is_target { " (add --create-target to create it)" } else { "" }
        );
    }
    let base = rhizome_server::base_iri(data)?;
    let db = rhizome_docs::Database::open(&dir, rhizome_server::projector_for(&base, spec, rhizome_server::context_store(data)?)).with_context(|| {
        format!("cannot open database {spec:?} in {} (if a server is running on this folder, replicate through its URL)", data.display())
    })?;
    Ok(Box::new(LocalEndpoint::new(Validated { db, name: spec.to_owned() }, spec)))
}

/// A database of the local folder as a replication target: replicated
/// revisions pass its validation functions first, as they do when a
/// server is the target; a refused one is a write failure of the run.
struct Validated {
    db: Database,
    name: String,
}

impl LocalDatabase for Validated {
    fn database(&self) -> &Database {
        &self.db
    }

    fn write(&self, docs: Vec<Map<String, Value>>) -> rhizome_replication::Result<Vec<(String, WriteOutcome)>> {
        let ctx = rhizome_views::validate::owner_ctx(&self.name);
        rhizome_views::validate::write_unless_refused(&self.db, &ctx, docs, rhizome_views::Limits::from_env(), |docs| {
            Ok(self.db.update_docs(docs, false)?)
        })
    }
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    // A local database is opened here, not by a server: none may run on
    // the folder (it opens and closes databases on demand).
    let local = |spec: &str| !spec.contains("://") && rhizome_docs::valid_db_name(spec);
    let _folder = if local(&args.source) || local(&args.target) { Some(rhizome_server::folder::share_folder(data)?) } else { None };
    let source = endpoint(data, &args.source, false, false)?;
    let target = endpoint(data, &args.target, true, args.create_target)?;
    let filter = match (args.doc_ids, args.selector) {
        (Some(ids), _) => Some(Filter::DocIds(ids)),
        (None, Some(text)) => match serde_json::from_str(&text) {
            Ok(selector @ serde_json::Value::Object(_)) => Some(Filter::Selector(selector)),
            Ok(_) => bail!("--selector must be a JSON object, e.g. '{{\"type\": \"person\"}}'"),
            Err(e) => bail!("--selector is not JSON: {e}"),
        },
        (None, None) => None,
    };
    let options = Options { continuous: args.continuous, create_target: args.create_target, batch_size: args.batch_size as usize, filter, ..Default::default() };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let report = replicate(source.as_ref(), target.as_ref(), &options, &mut |r| {
        if let Some(e) = &r.error {
            eprintln!("{}waiting to retry: {e}", if show { "\n" } else { "" });
        } else if show {
            eprint!("\rchecked {} revisions, copied {} (of {} missing), at {}   ", r.missing_checked, r.docs_written, r.missing_found, r.source_last_seq);
        }
        true
    })?;
    if show {
        eprintln!();
    }
    println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    if report.doc_write_failures > 0 {
        for f in &report.failures {
            eprintln!("refused: {f}");
        }
        bail!("the target refused {} of {} revisions", report.doc_write_failures, report.docs_read);
    }
    Ok(())
}
