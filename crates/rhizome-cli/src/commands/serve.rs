//! `rhizome serve`: CouchDB's API over the data directory.

use anyhow::{bail, Result};
use std::net::SocketAddr;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:5984")]
    bind: SocketAddr,
    /// The server admin, USER:PASS. Required on first start (there is no
    /// admin party); later starts reuse the stored hash, or replace it.
    #[arg(long, env = "RHIZOME_ADMIN", hide_env_values = true)]
    admin: Option<String>,
    /// Largest request body accepted, in bytes (413 past it).
    #[arg(long, default_value_t = rhizome_server::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Do not log one line per request to stderr.
    #[arg(long)]
    quiet: bool,
    /// The one folder SPARQL `LOAD <file:...>` may read from (a file's
    /// path must lie inside it, symbolic links resolved). Without it,
    /// LOAD of files is refused; LOAD of http(s): IRIs always is.
    #[arg(long, env = "RHIZOME_LOAD_DIR")]
    load_dir: Option<std::path::PathBuf>,
    /// The most bytes one SPARQL LOAD reads (after decompression).
    #[arg(long, env = "RHIZOME_LOAD_MAX_BYTES", default_value_t = rhizome_sparql::DEFAULT_LOAD_MAX_BYTES)]
    load_max_bytes: u64,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let admin = match args.admin {
        None => None,
        Some(text) => match text.split_once(':') {
            Some((user, pass)) if !user.is_empty() && !pass.is_empty() => Some((user.to_owned(), pass.to_owned())),
            _ => bail!("--admin must be USER:PASS"),
        },
    };
    let config = rhizome_server::ServerConfig {
        data_dir: data.to_owned(),
        bind: args.bind,
        admin,
        max_body_bytes: args.max_body_bytes,
        log_requests: !args.quiet,
        load_dir: args.load_dir,
        load_max_bytes: args.load_max_bytes,
    };
    rhizome_server::run(config)?;
    Ok(())
}
