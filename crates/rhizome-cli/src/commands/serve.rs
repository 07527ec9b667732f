//! `rhizome serve`: CouchDB's API over the data directory.

use anyhow::{bail, Result};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:5984")]
    bind: SocketAddr,
    /// The server admin, USER:PASS. Required on first start (there is no
    /// admin party); later starts reuse the stored hash, or replace it.
    #[arg(long, env = "RHIZOME_ADMIN", hide_env_values = true)]
    admin: Option<String>,
    /// The base of document and LDP resource IRIs (the server's public
    /// URL), taken at the data folder's first start; by default the address
    /// it listens on. A later start with another base keeps the folder's
    /// and says so: `rhizome rebase` moves a folder's IRIs.
    #[arg(long, env = "RHIZOME_BASE_IRI")]
    base_iri: Option<String>,
    /// Largest request body accepted, in bytes (413 past it); also the
    /// most a replication reads of one answer from another server.
    #[arg(long, env = "RHIZOME_MAX_BODY_BYTES", default_value_t = rhizome_server::DEFAULT_MAX_BODY_BYTES)]
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
    #[command(flatten)]
    hardening: Hardening,
    #[command(flatten)]
    contexts: Contexts,
    #[command(flatten)]
    bounds: Bounds,
    #[command(flatten)]
    cors: Cors,
}

/// Bounds on what requests and databases may hold (issue 44).
#[derive(clap::Args)]
struct Bounds {
    /// Databases kept open at most: past it, opening one closes the least
    /// recently used database no request is using (each open one holds
    /// about 6 file descriptors and its caches).
    #[arg(long, env = "RHIZOME_MAX_OPEN_DATABASES", default_value_t = rhizome_server::DEFAULT_MAX_OPEN_DATABASES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_open_databases: u64,
    /// Bytes all requests together may hold: request bodies (counted
    /// twice: the bytes and what is parsed from them) and what SPARQL
    /// requests sort, group, join and hold (each also within its own
    /// 256 MiB). A request that finds no room gets 503 with Retry-After.
    #[arg(long, env = "RHIZOME_REQUEST_MEMORY_BYTES", default_value_t = rhizome_server::DEFAULT_REQUEST_MEMORY_BYTES as u64, value_parser = clap::value_parser!(u64).range(1 << 20..))]
    request_memory_bytes: u64,
    /// Milliseconds a SPARQL request (parsing, LOAD and evaluation) or a
    /// Mango `_find` may take (503 `query_limit` and 500 `timeout` past it).
    #[arg(long, env = "RHIZOME_QUERY_TIMEOUT_MS", default_value_t = rhizome_server::DEFAULT_QUERY_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    query_timeout_ms: u64,
    /// Documents one `_bulk_docs` or `_bulk_get` request may name (413
    /// past it; CouchDB 4's max_bulk_docs_count).
    #[arg(long, env = "RHIZOME_MAX_BULK_DOCS", default_value_t = rhizome_server::DEFAULT_MAX_BULK_DOCS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_bulk_docs: u64,
}

/// Cross-origin requests from web pages (CouchDB's `[chttpd] enable_cors`
/// and `[cors]` settings): off by default. A page on another origin (an
/// offline-first app syncing through PouchDB) needs `--enable-cors`, its
/// origin in `--cors-origins` and, to send its login, `--cors-credentials`.
#[derive(clap::Args)]
struct Cors {
    /// Answer cross-origin requests and preflights from the origins of
    /// `--cors-origins`.
    #[arg(long, env = "RHIZOME_ENABLE_CORS", value_parser = clap::builder::BoolishValueParser::new())]
    enable_cors: bool,
    /// Origins pages may call from, comma-separated, each exactly
    /// `scheme://host[:port]`, or `*` for any.
    #[arg(long, env = "RHIZOME_CORS_ORIGINS", value_delimiter = ',', default_value = "")]
    cors_origins: Vec<String>,
    /// Let those pages send credentials (cookies, Basic auth):
    /// `Access-Control-Allow-Credentials: true`.
    #[arg(long, env = "RHIZOME_CORS_CREDENTIALS", value_parser = clap::builder::BoolishValueParser::new())]
    cors_credentials: bool,
    /// Methods a preflight may ask for, comma-separated (default: CouchDB's
    /// list, GET, HEAD, POST, PUT, DELETE, COPY, OPTIONS...).
    #[arg(long, env = "RHIZOME_CORS_METHODS", value_delimiter = ',', default_value = "")]
    cors_methods: Vec<String>,
    /// Request headers a preflight may name, comma-separated (default:
    /// CouchDB's list: accept, authorization, content-type, if-match...).
    #[arg(long, env = "RHIZOME_CORS_HEADERS", value_delimiter = ',', default_value = "")]
    cors_headers: Vec<String>,
    /// Answer headers pages may read besides the simple ones (default:
    /// CouchDB's: etag, x-couch-update-newrev...).
    #[arg(long, env = "RHIZOME_CORS_EXPOSED_HEADERS", value_delimiter = ',', default_value = "")]
    cors_exposed_headers: Vec<String>,
    /// Seconds a browser may keep a preflight's answer.
    #[arg(long, env = "RHIZOME_CORS_MAX_AGE", default_value_t = rhizome_server::DEFAULT_CORS_MAX_AGE_SECS)]
    cors_max_age: u64,
}

fn listed(values: &[String]) -> Vec<String> {
    values.iter().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect()
}

/// Remote JSON-LD contexts (`"@context": "https://schema.org/"`, issue 14).
/// schema.org, Activity Streams, Verifiable Credentials v1 and v2 and Web
/// Annotation are shipped; others come from the cache in DATA/_contexts
/// (filled by fetches and by `PUT /_contexts?url=...`).
#[derive(clap::Args)]
struct Contexts {
    /// Hosts remote contexts may be fetched from, comma-separated: `host`
    /// (any port), `host:port`, or `*` for any host. Empty (the default):
    /// nothing is fetched; only shipped and cached contexts are used.
    /// Only http:// is fetched (no TLS client).
    #[arg(long, env = "RHIZOME_CONTEXT_HOSTS", value_delimiter = ',', default_value = "")]
    context_hosts: Vec<String>,
    /// Milliseconds one context fetch may take in all, redirects included.
    #[arg(long, env = "RHIZOME_CONTEXT_TIMEOUT_MS", default_value_t = rhizome_server::DEFAULT_CONTEXT_TIMEOUT_MS)]
    context_timeout_ms: u64,
    /// The largest context document fetched, in bytes.
    #[arg(long, env = "RHIZOME_CONTEXT_MAX_BYTES", default_value_t = rhizome_server::DEFAULT_CONTEXT_MAX_BYTES)]
    context_max_bytes: usize,
}

/// Connection limits, password hashing and login throttling (issue 20).
#[derive(clap::Args)]
struct Hardening {
    /// Seconds a client may take to send a request's header once it has
    /// begun; the connection is closed past it.
    #[arg(long, env = "RHIZOME_HEADER_TIMEOUT_SECS", default_value_t = rhizome_server::DEFAULT_HEADER_TIMEOUT_SECS)]
    header_timeout_secs: u64,
    /// Seconds a request body may pause between bytes (408 past it).
    #[arg(long, env = "RHIZOME_BODY_TIMEOUT_SECS", default_value_t = rhizome_server::DEFAULT_BODY_TIMEOUT_SECS)]
    body_timeout_secs: u64,
    /// Seconds a kept-alive connection may wait for its next request
    /// (a `_changes` feed that is streaming is not waiting).
    #[arg(long, env = "RHIZOME_IDLE_TIMEOUT_SECS", default_value_t = rhizome_server::DEFAULT_IDLE_TIMEOUT_SECS)]
    idle_timeout_secs: u64,
    /// Seconds a response may wait for its client to take any of it; the
    /// connection is closed past it (a client that asks for a large answer
    /// and does not read it holds nothing longer).
    #[arg(long, env = "RHIZOME_WRITE_TIMEOUT_SECS", default_value_t = rhizome_server::DEFAULT_WRITE_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    write_timeout_secs: u64,
    /// Open connections in total; at the cap, the connection that has gone
    /// longest without completing a request header is closed for the new one.
    #[arg(long, env = "RHIZOME_MAX_CONNECTIONS", default_value_t = rhizome_server::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Open connections from one client address (same rule at the cap).
    #[arg(long, env = "RHIZOME_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = rhizome_server::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS)]
    max_connections_per_address: usize,
    /// PBKDF2-HMAC-SHA-256 iterations for new password hashes; weaker
    /// stored hashes are upgraded at the next successful login.
    #[arg(long, env = "RHIZOME_PBKDF2_ITERATIONS", default_value_t = rhizome_server::DEFAULT_PBKDF2_ITERATIONS, value_parser = clap::value_parser!(u32).range(1..))]
    pbkdf2_iterations: u32,
    /// Failed logins of one user from one address (an IPv6 address's /64)
    /// before further attempts from there must wait. Other addresses, and
    /// credentials already verified, are never held back.
    #[arg(long, env = "RHIZOME_LOGIN_ATTEMPTS", default_value_t = rhizome_server::DEFAULT_LOGIN_ATTEMPTS)]
    login_attempts: u32,
    /// The first wait after too many failed logins, in seconds; each further
    /// failure doubles it, up to 15 minutes.
    #[arg(long, env = "RHIZOME_LOGIN_DELAY_SECS", default_value_t = rhizome_server::DEFAULT_LOGIN_DELAY_SECS)]
    login_delay_secs: u64,
    /// Seconds a session cookie (`POST /_session`) lasts; a request made
    /// with it once a tenth of that has passed gets a renewed cookie, so a
    /// busy client stays logged in (CouchDB's `[chttpd_auth] timeout`).
    #[arg(long, env = "RHIZOME_SESSION_TIMEOUT_SECS", default_value_t = rhizome_server::DEFAULT_SESSION_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    session_timeout_secs: u64,
    /// The SameSite attribute of session cookies: lax (the default: the
    /// cookie goes with no request another site makes in the background,
    /// so no page a signed-in user visits can write through it), strict
    /// (not even when following a link here), or none (with Secure, for a
    /// console on another site over HTTPS).
    #[arg(long, env = "RHIZOME_SESSION_SAME_SITE", default_value = "lax", value_parser = parse_same_site)]
    session_same_site: rhizome_server::SameSite,
}

fn parse_same_site(text: &str) -> Result<rhizome_server::SameSite, String> {
    rhizome_server::SameSite::parse(text).ok_or_else(|| format!("{text:?} is not strict, lax or none"))
}

impl Hardening {
    fn connections(&self) -> rhizome_server::ConnectionLimits {
        rhizome_server::ConnectionLimits {
            header_timeout: Duration::from_secs(self.header_timeout_secs),
            body_timeout: Duration::from_secs(self.body_timeout_secs),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            write_timeout: Duration::from_secs(self.write_timeout_secs),
            max_connections: self.max_connections.max(1),
            max_connections_per_address: self.max_connections_per_address.max(1),
        }
    }
    fn auth(&self) -> rhizome_server::AuthSettings {
        rhizome_server::AuthSettings {
            pbkdf2_iterations: self.pbkdf2_iterations,
            login_attempts: self.login_attempts,
            login_delay_secs: self.login_delay_secs,
            same_site: self.session_same_site,
            session_timeout_secs: self.session_timeout_secs,
        }
    }
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    // The server reads the base where every command does (the variable);
    // set while this process has one thread, before the runtime starts.
    if let Some(base) = args.base_iri.as_deref().filter(|b| !b.is_empty()) {
        std::env::set_var("RHIZOME_BASE_IRI", base);
    }
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
        connections: args.hardening.connections(),
        auth: args.hardening.auth(),
        load_dir: args.load_dir,
        load_max_bytes: args.load_max_bytes,
        contexts: rhizome_server::ContextSettings {
            hosts: args.contexts.context_hosts.iter().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect(),
            timeout_ms: args.contexts.context_timeout_ms.max(1),
            max_bytes: args.contexts.context_max_bytes,
        },
        max_open_databases: usize::try_from(args.bounds.max_open_databases).unwrap_or(usize::MAX),
        request_memory_bytes: usize::try_from(args.bounds.request_memory_bytes).unwrap_or(usize::MAX),
        query_timeout_ms: args.bounds.query_timeout_ms,
        max_bulk_docs: usize::try_from(args.bounds.max_bulk_docs).unwrap_or(usize::MAX),
        cors: rhizome_server::CorsSettings {
            enabled: args.cors.enable_cors,
            origins: listed(&args.cors.cors_origins),
            credentials: args.cors.cors_credentials,
            methods: listed(&args.cors.cors_methods),
            headers: listed(&args.cors.cors_headers),
            exposed_headers: listed(&args.cors.cors_exposed_headers),
            max_age_secs: args.cors.cors_max_age,
        },
    };
    rhizome_server::run(config)?;
    Ok(())
}
