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
    };
    rhizome_server::run(config)?;
    Ok(())
}
