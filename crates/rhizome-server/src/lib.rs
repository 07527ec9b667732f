//! `rhizome-server`: the HTTP face of Rhizome.
//!
//! Owns: CouchDB's API over [`rhizome_docs`] and [`rhizome_views`] (server,
//! database, document, attachment, bulk, `_changes`, views, update and show
//! functions, Mango, node and scheduler endpoints, with CouchDB's JSON
//! errors), `/_replicate` and the `_replicator` database over
//! [`rhizome_replication`], authentication (server admin, `_users`, Basic
//! and cookie sessions) and the guard every route passes through, CORS,
//! group commit, the request log, body limits, connection limits and
//! timeouts, fetching remote JSON-LD contexts and the admin's `/_contexts`,
//! the data folder's layout ([`database_dir`], [`base_iri_or`]) and clean
//! shutdown; the RDF doors (`rdf/`: the SPARQL 1.1 Protocol at
//! `/{db}/_sparql`, the Graph Store Protocol at `/{db}/_graph`), LDP's HTTP
//! (`ldp/`, `/{db}/_ldp/`) and graph walks (`graph/`, `/{db}/_traverse`,
//! `/{db}/_path`). Does not own document semantics (`rhizome-docs`), query
//! evaluation (`rhizome-sparql`), the LDP model (`rhizome-ldp`) or walks
//! (`rhizome-graph`): every handler parses, checks access, calls them and
//! writes the answer.
//!
//! Main items: [`ServerConfig`], [`run`], [`serve`].
//!
//! # Shape
//!
//! - **Async shell, synchronous core** (`lib.rs`, `router.rs`): tokio +
//!   hyper 1 read a request and its body (bounded: 64 MiB by default,
//!   `--max-body-bytes`, 413 past it), then the whole handler runs on a
//!   blocking thread (`spawn_blocking`), because the document store is
//!   synchronous and a write answers only once fsynced. `_changes` feeds
//!   come back to the async side and wait on a per-database `watch` channel
//!   that every commit bumps. Each request carries a cancellation flag, set
//!   when hyper drops the request's future because its client went away;
//!   queries, updates, `LOAD` and Graph Store writes check it with their
//!   time limits and stop (499). At shutdown the runtime waits at most 5 s
//!   for blocking work.
//! - **One guard** (`auth/access.rs`): the router parses the path into a
//!   `Route`, the route names the `Access` it needs (public, server admin,
//!   member, db admin, owner of a `_users` document), and the guard checks
//!   it before any handler runs, with CouchDB 3's semantics (no admin
//!   party: the first start needs `--admin`, whose PBKDF2 hash is kept in
//!   `DATA/server.json`; a database whose `_security` was never set is
//!   `admin_only`; one whose `members` names nobody is public; db admins
//!   write `_security`, `_revs_limit` and design documents, members read
//!   and write documents); a server admin's route answers 401 to everyone
//!   else, a database's 401 without credentials and 403 with them. What a
//!   write may contain is not the guard's: every door passes who is
//!   writing (`access::writer`, a `rhizome_docs::Writer`) down to the write
//!   path all doors share, where `rhizome-docs`' `rights.rs` (design
//!   documents, `_local/rhizome-context`, graphs that are no document's of
//!   this database, system databases) and `rhizome-ldp`'s `rights.rs` (LDP
//!   resources) decide, per document for document writes and for the whole
//!   write for graph writes. `request_bodies.rs` keeps pages of other sites
//!   from writing through a signed-in browser: CouchDB's 415 for JSON
//!   endpoints sent anything but JSON, and form-like writes that say they
//!   come from an origin that is neither this server nor one CORS accepts
//!   refused.
//!   `docs/security.md` has every rule and limit.
//! - **Logins** (`auth/`): `_users` passwords replaced by a
//!   PBKDF2-SHA-256 hash on write (`password.rs`, weaker hashes upgraded at
//!   the next login); Basic checks cached by credential fingerprint, and
//!   requests with credentials being verified wait for that one
//!   verification (25 clients starting at once paid 25 PBKDF2s);
//!   `throttle.rs` slows failed logins per user and address; `session.rs`
//!   signs `AuthSession` cookies (HMAC, with the user's salt), and
//!   remembers logged-out ones in `DATA/revoked-sessions`. `POST /_session`
//!   takes `name` or `username`; a request authenticated by a cookie past a
//!   tenth of its lifetime (`--session-timeout-secs`, CouchDB's
//!   `[chttpd_auth] timeout`) gets a new cookie with its answer
//!   (`router::renew_session`), unless the handler set one.
//! - **Group commit** (`group_commit.rs`): concurrent writes to one
//!   database queue; a leader runs all queued requests as one
//!   `update_prepared` (same semantics as running them one after another)
//!   and one fsync; while more queue up it runs their groups too, up to 8
//!   (a hand-over wakes another thread: about 5% of a group), then hands
//!   leadership to the next waiter. Before queueing, each request's own
//!   thread runs `Database::prepare_docs` (remote contexts fetched, JSON-LD
//!   parsed against a snapshot, and the new revision's body, JSON and MD5
//!   when they follow from the document alone: `new_edits`, no
//!   attachments, `RevisionAhead`), so the leader, whose thread every
//!   queued write waits on, only checks that the stored default context is
//!   still the one parsed with (it parses again when it is not; a body with
//!   its own top-level `@context` is parsed without the default, so
//!   neither side reads it) and writes the quads. PUTs of Pokec profiles, 25 clients: 12-18%
//!   more writes/s.
//! - **Replication** (`couch/replicate.rs`, `replicator_db.rs`): `POST
//!   /_replicate` runs the replicator with the server's own databases as
//!   endpoints whose writes go through the server's write path (group
//!   commit, `_changes` wake-ups, `_users` hashing); one-shot runs in the
//!   request's thread, continuous ones get a thread each, registered by
//!   `_local_id` in `Server::replications` and stopped by `cancel` (which
//!   waits until the thread has finished) or shutdown. A thread follows
//!   `_replicator`'s `_changes` (created on first start like `_users`) and
//!   reconciles each changed document with its job (same replication
//!   members: nothing to do; otherwise the old job is stopped, waited for,
//!   and a new one started); jobs and their states live in
//!   `Server::replicator_docs`, shown by `/_scheduler/docs`; a generation
//!   number keeps a stopped job's last callbacks from overwriting its
//!   successor; every job runs again after a restart, since the documents
//!   are read from sequence 0. Every running job (of either kind) keeps its
//!   `_active_tasks` entry, updated after each batch.
//! - **Remote contexts** (`contexts.rs`): the fetcher behind the docs
//!   crate's `ContextStore` (plain HTTP/1.1 over `std::net`, no TLS; hosts
//!   from `--context-hosts`, none by default; a deadline for the whole
//!   fetch and a size limit) and the admin endpoint `/_contexts` (list,
//!   `?url=` GET/PUT/DELETE). `extension.rs` routes `/{db}/_sparql` and
//!   `/{db}/_graph`, guarded like the rest, to `rdf/`.
//! - **Connections** (`connections.rs`): every connection is registered (a
//!   cap in total and per client address) and is *busy* from a request's
//!   head to the end of its response (a streaming `_changes` feed
//!   included) or *waiting*; a waiting connection is closed past the header
//!   timeout (once a request has begun) or the idle timeout, and at a cap
//!   the waiting connection stalled longest is closed for the new one, so
//!   stalled sockets cannot lock out an honest client from the same
//!   address.
//! - **CouchDB's options** (`couch/all_docs.rs`): `_all_docs`,
//!   `_design_docs` and `_local_docs` (`rhizome_docs::Database::local_docs`)
//!   read their options as
//!   `couch_mrview_http` does (a POST body takes every option as JSON, the
//!   query string over it, booleans in any case, unknown options ignored;
//!   `/queries` runs each object over the query string's options); document
//!   and `_changes` options follow CouchDB's exact-match rule instead
//!   (`http::Request::flag`: anything but `true`/`false` is the default).
//! - **CORS** (`cors.rs`, CouchDB's `chttpd_cors`): off unless
//!   `--enable-cors`; preflights from listed origins answered 204 before
//!   authentication in `respond`, every other answer to an accepted `Origin` decorated
//!   last (errors included).
//! - **Documents by `Accept`** (`couch/documents.rs`): a type the client
//!   names beats a wildcard, and among named types at one q RDF beats JSON;
//!   JSON-LD is the JSON-LD view, an RDF syntax the document's graph
//!   (`rdf::graph_store::document_graph`). A 401
//!   on a document asked for as RDF carries `WWW-Authenticate: Basic` (JSON
//!   reads stay without it, so no browser dialog opens in a CouchDB app).
//!   `open_revs` answers `multipart/mixed` when asked for it (CouchDB's
//!   replicator does), JSON otherwise; `multipart/related` bodies are read
//!   and written (`couch/multipart.rs`).
//! - **Node endpoints** (`couch/node.rs`): one node, `rhizome@localhost`
//!   (`_local`): `_membership`, `_node/{name}/_config` (the settings the
//!   server runs with, `Server::node_config`, in CouchDB's sections; they
//!   are `serve`'s options, so writes are a 405), `_stats` (requests by
//!   method and status, counted in `respond`), `_scheduler/jobs` and
//!   `_scheduler/docs/{db}/{docid}`.
//! - **Design functions** (`couch/design_functions.rs`,
//!   `rhizome_views::update`): update and show functions run in the sandbox on the stored document and CouchDB's
//!   request object; an update's document is saved through the write path
//!   (validation included). List functions answer 501.
//!
//! # The RDF doors (`rdf/`)
//!
//! Each database answers RDF requests beside CouchDB's API, on the same
//! store, after the router's one access check (members query and write).
//! - **`/{db}/_sparql`** (`sparql_protocol.rs`, SPARQL 1.1 Protocol):
//!   queries by `GET ?query=`, form `POST` or `application/sparql-query`;
//!   updates by form `POST` or `application/sparql-update` (never GET).
//!   `default-graph-uri`/`named-graph-uri` replace the query's FROM/FROM
//!   NAMED (§2.1.4); `using-graph-uri`/`using-named-graph-uri` set an
//!   update's WHERE dataset, and are a 400 beside USING/WITH (§2.2.3). The
//!   base IRI is the endpoint's URL. A query runs on a thread of known
//!   stack against one snapshot, within `--query-timeout-ms` (30 s, 503
//!   past it) and 256 MiB (400 past it). Results are written as they are
//!   produced (`stream.rs`): an answer that fits in one chunk is sent
//!   whole, so a limit hit before then is an error status; past that a
//!   limit cuts the body. Syntax errors are 400 with line and column.
//! - **`/{db}/_graph`** (`graph_store.rs`, Graph Store HTTP Protocol):
//!   graphs named indirectly (`?graph=IRI`, `?default`) or directly (the
//!   request URL `/{db}/_graph/path` is the graph IRI); GET/HEAD, PUT
//!   (replace: 201 new, 204 existing), POST (merge; to the bare endpoint: a
//!   new graph, 201 and `Location`), DELETE (204, 404 if missing). Bodies in
//!   Turtle, N-Triples, N-Quads, TriG, RDF/XML, JSON-LD or
//!   `multipart/form-data` of those (415 otherwise, 400 with the parser's
//!   position if malformed), parsed and checked for nesting before the
//!   database's write lock is taken. In a union database the default graph
//!   is every graph for GET, and the stored default graph (the document
//!   `default-graph`) for writes to `?default`, as for SPARQL's
//!   `INSERT`/`DELETE` without `GRAPH` and `CLEAR`/`DROP DEFAULT`: no
//!   default-graph write reaches a document.
//! - **Negotiation** (`negotiate.rs`): `Accept` with q-values, most
//!   specific range wins, ties go to the server's order, 406 when nothing
//!   fits. SELECT and ASK: SPARQL JSON (default), XML, CSV, TSV;
//!   CONSTRUCT/DESCRIBE and graphs: Turtle (default), N-Triples, RDF/XML,
//!   JSON-LD, N-Quads, TriG.
//! - **One write path**: every RDF write (SPARQL Update, Graph Store
//!   PUT/POST/DELETE, LDP RDF sources) runs in `rdf::write_as`, that is
//!   `rhizome_views::validate::rdf_write_validated` over
//!   `rhizome_docs::Database::rdf_write_checked`: the seam where a graph
//!   write becomes a document write (a new revision of each graph touched,
//!   a `_changes` entry), validated and checked for the writer's rights.
//! - **Conformance**: `crates/rhizome-cli/tests/w3c_protocol.rs` runs the
//!   W3C protocol (34) and graph-store (13) suites against a live
//!   `rhizome serve`, one fresh database per test, known failures in
//!   `tests/w3c_protocol/`; `tests/rdf_endpoints.rs` tests negotiation,
//!   errors and access.
//!
//! # Known gaps
//!
//! Text indexes answer 503 as CouchDB without a search service; `_list`
//! functions are not run (501); `_purge` (`rhizome-docs/src/purge.rs`)
//! keeps no purge history, so purges do not replicate between Rhizome
//! databases (CouchDB's internal purge replication is between shards);
//! `_db_updates` (`db_updates.rs`) keeps its
//! events in memory (a restart begins the feed again, with sequences that
//! still grow); `_all_docs`' `offset` is the rows skipped, not the position
//! of the start key; sequence numbers are integers (clients treat them as
//! opaque).

mod auth;
mod changes;
mod connections;
mod console;
mod contexts;
mod cors;
mod db_updates;
mod couch;
pub mod error;
pub mod folder;
mod extension;
mod graph;
mod group_commit;
mod http;
mod ldp;
mod rdf;
mod replicator_db;
mod request_bodies;
mod router;
mod state;
mod stream;

pub use auth::password::DEFAULT_ITERATIONS as DEFAULT_PBKDF2_ITERATIONS;
pub use auth::{AuthSettings, SameSite, DEFAULT_LOGIN_ATTEMPTS, DEFAULT_LOGIN_DELAY_SECS, SESSION_SECONDS as DEFAULT_SESSION_TIMEOUT_SECS};
pub use connections::{
    ConnectionLimits, DEFAULT_BODY_TIMEOUT_SECS, DEFAULT_HEADER_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_WRITE_TIMEOUT_SECS,
};
pub use contexts::{ContextSettings, DEFAULT_CONTEXT_MAX_BYTES, DEFAULT_CONTEXT_TIMEOUT_MS};
pub use cors::{CorsSettings, DEFAULT_MAX_AGE_SECS as DEFAULT_CORS_MAX_AGE_SECS};
pub use error::{HttpError, ServerError};
pub use group_commit::GroupCommit;
pub use couch::bulk::DEFAULT_MAX_BULK_DOCS;
pub use rdf::QUERY_TIMEOUT_MS as DEFAULT_QUERY_TIMEOUT_MS;
pub use state::{base_iri, base_iri_or, requested_base, context_store, database_dir, listen_base, projector_for, DEFAULT_MAX_OPEN_DATABASES, DEFAULT_REQUEST_MEMORY_BYTES};
#[doc(hidden)]
pub use couch::fuzz_couch_request;
pub use graph::fuzz_walk_request;
pub use rdf::fuzz_parse_request;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use router::Reply;
use state::Server;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The largest request body accepted by default: 64 MiB (CouchDB's
/// `max_http_request_size` is 4 GiB; ours bounds memory, since a body is
/// read whole before it is parsed). Larger bodies get 413.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub bind: SocketAddr,
    /// `USER:PASS` from `--admin` or `RHIZOME_ADMIN`; required on first start.
    pub admin: Option<(String, String)>,
    pub max_body_bytes: usize,
    /// One line per request on stderr.
    pub log_requests: bool,
    // Hardening (issue 20): connection limits and timeouts, password
    // hashing and login throttling.
    pub connections: ConnectionLimits,
    pub auth: AuthSettings,
    /// The one folder SPARQL `LOAD <file:...>` may read (`--load-dir`);
    /// `None`: LOAD of files is refused.
    pub load_dir: Option<PathBuf>,
    /// The most bytes one LOAD reads (`--load-max-bytes`).
    pub load_max_bytes: u64,
    /// Fetching remote JSON-LD contexts (`--context-hosts` and friends).
    pub contexts: ContextSettings,
    /// Databases kept open at most (`--max-open-databases`).
    pub max_open_databases: usize,
    /// Memory all requests share (`--request-memory-bytes`).
    pub request_memory_bytes: usize,
    /// The time a SPARQL request or a Mango `_find` may take
    /// (`--query-timeout-ms`).
    pub query_timeout_ms: u64,
    /// Documents one `_bulk_docs` or `_bulk_get` may name (`--max-bulk-docs`).
    pub max_bulk_docs: usize,
    /// Cross-origin requests (`--enable-cors` and `--cors-*`, `cors.rs`).
    pub cors: CorsSettings,
}

/// Runs the server until SIGINT or SIGTERM, on its own runtime.
pub fn run(config: ServerConfig) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| ServerError::Io { what: "starting the runtime".into(), source })?;
    let result = runtime.block_on(async move {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = tx.send(true);
        });
        serve(config, rx).await
    });
    // Blocking work still running (a query, a write) has seen the shutdown
    // flag or its time limit by now; dropping the runtime would wait for it
    // without end, so wait a bounded time. Nothing answered is lost: every
    // answered write was fsynced before its answer.
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves until `shutdown` turns true, then stops accepting, lets running
/// requests finish (at most 10 s) and returns. Every answered write is
/// already durable, so nothing else needs flushing.
pub async fn serve(config: ServerConfig, mut shutdown: watch::Receiver<bool>) -> Result<(), ServerError> {
    // Bound first: a data folder's first start names its documents under
    // the address the server listens on (`state::base_iri_or`).
    let listener = TcpListener::bind(config.bind).await.map_err(|source| ServerError::Io { what: format!("binding {}", config.bind), source })?;
    let local = listener.local_addr().map_err(|source| ServerError::Io { what: "reading the bound address".into(), source })?;
    // Held while serving: `rhizome rebase` refuses to run under a server.
    let _folder_lock = {
        let data_dir = config.data_dir.clone();
        tokio::task::spawn_blocking(move || folder::lock_folder(&data_dir)).await.map_err(|e| ServerError::Config(format!("locking the data folder: {e}")))??
    };
    let base = {
        let data_dir = config.data_dir.clone();
        tokio::task::spawn_blocking(move || state::base_iri_or(&data_dir, &state::listen_base(local)))
            .await
            .map_err(|e| ServerError::Config(format!("reading the base IRI: {e}")))??
    };
    let server = {
        let config = config.clone();
        let rx = shutdown.clone();
        tokio::task::spawn_blocking(move || Server::open(&config.data_dir, config.admin.clone(), config.max_body_bytes, config.auth.clone(), rx))
            .await
            .map_err(|e| ServerError::Config(format!("opening the data directory: {e}")))??
    };
    let mut server = server;
    server.sparql = rdf::SparqlSettings::new(config.load_dir.as_deref(), config.load_max_bytes)?;
    server.max_open_databases = config.max_open_databases.max(1);
    server.request_memory = rhizome_sparql::MemoryPool::new(config.request_memory_bytes);
    server.query_timeout = Duration::from_millis(config.query_timeout_ms.max(1));
    server.max_bulk_docs = config.max_bulk_docs.max(1);
    server.node_config = node_config(&config, local, &base, &server.identity.uuid);
    server.cors = config.cors.clone();
    if !config.contexts.hosts.is_empty() {
        // No user database is open yet: each will see this store.
        let fetcher: Box<dyn rhizome_docs::ContextFetcher> = Box::new(contexts::HttpContextFetcher::new(config.contexts.clone()));
        server.contexts = std::sync::Arc::new(
            rhizome_docs::ContextStore::open(&state::contexts_dir(&config.data_dir), Some(fetcher)).map_err(ServerError::Config)?,
        );
    }
    let server = Arc::new(server);
    replicator_db::start(server.clone());
    eprintln!("rhizome: CouchDB API on http://{local} (data in {})", config.data_dir.display());
    eprintln!("rhizome: documents and LDP resources are named under {base}/ (the data folder's base IRI, kept in {})", config.data_dir.join("base-iri").display());
    if let Some(wanted) = state::requested_base().filter(|w| *w != base) {
        eprintln!(
            "rhizome: the base IRI asked for (--base-iri, RHIZOME_BASE_IRI) is {wanted}, but this data folder's IRIs are under {base}: serving them under {base} \
             (answered by path at any address). To move them to {wanted}, stop the server and run `rhizome --data {} rebase {wanted}`",
            config.data_dir.display()
        );
    }
    let file_limit = connections::raise_file_limit();
    let mut limits = config.connections.clone();
    limits.max_connections = connections::connections_within(limits.max_connections, file_limit);
    if limits.max_connections < config.connections.max_connections {
        eprintln!(
            "rhizome: at most {} connections (--max-connections is {}, but this process may open only {} files)",
            limits.max_connections,
            config.connections.max_connections,
            file_limit.unwrap_or(0)
        );
    }
    let connections = connections::Connections::new(limits);
    let active = Arc::new(AtomicUsize::new(0));
    let cors = Arc::new(config.cors.clone());
    if cors.enabled {
        eprintln!("rhizome: CORS on for {}", if cors.origins.is_empty() { "no origin (--cors-origins is empty)".to_owned() } else { cors.origins.join(", ") });
    }
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors (or another transient
                        // failure): accepting again at once would spin.
                        connections.on_accept_error(&e);
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                        continue;
                    }
                };
                backoff = ACCEPT_BACKOFF_MIN;
                let Some(admitted) = connections.admit(peer.ip()) else { continue };
                let _ = stream.set_nodelay(true);
                let server = server.clone();
                let active = active.clone();
                let connections = connections.clone();
                let log = config.log_requests;
                let cors = cors.clone();
                tokio::spawn(async move {
                    let conn = admitted.conn.clone();
                    let io = TokioIo::new(connections::TrackedIo::new(stream, &admitted));
                    let service = {
                        let connections = connections.clone();
                        let conn = conn.clone();
                        service_fn(move |req| {
                            let busy = connections.busy(&conn);
                            let body_timeout = connections.limits.body_timeout;
                            let server = server.clone();
                            let active = active.clone();
                            let cors = cors.clone();
                            async move {
                                active.fetch_add(1, Ordering::SeqCst);
                                let r = respond(&server, &cors, req, peer, body_timeout, log).await;
                                active.fetch_sub(1, Ordering::SeqCst);
                                Ok::<_, std::convert::Infallible>(r.map(|body| connections::TrackedBody::new(body, busy)))
                            }
                        })
                    };
                    let serving = hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(io, service);
                    // Dropping the connection closes it: when evicted, or
                    // past its header or idle timeout while waiting.
                    tokio::select! {
                        _ = serving => {}
                        _ = connections.watch(&conn) => {}
                    }
                    drop(admitted);
                });
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let deadline = Instant::now() + Duration::from_secs(10);
    while active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.close_all();
    eprintln!("rhizome: stopped");
    Ok(())
}

/// The settings of `_node/_local/_config`, in CouchDB's sections and
/// names where CouchDB has the setting, as strings as CouchDB keeps them.
fn node_config(config: &ServerConfig, local: SocketAddr, base: &str, uuid: &str) -> serde_json::Value {
    let list = |v: &[String]| v.join(", ");
    let c = &config.cors;
    serde_json::json!({
        "couchdb": { "uuid": uuid, "database_dir": config.data_dir.display().to_string(), "max_document_size": config.max_body_bytes.to_string() },
        "chttpd": {
            "bind_address": local.ip().to_string(),
            "port": local.port().to_string(),
            "enable_cors": c.enabled.to_string(),
            "max_http_request_size": config.max_body_bytes.to_string(),
            "require_valid_user": "false",
        },
        "chttpd_auth": {
            "authentication_db": "_users",
            "timeout": config.auth.session_timeout_secs.to_string(),
            "iterations": config.auth.pbkdf2_iterations.to_string(),
            "pbkdf2_prf": "sha256",
        },
        "couch_httpd_auth": {
            "authentication_db": "_users",
            "timeout": config.auth.session_timeout_secs.to_string(),
            "same_site": config.auth.same_site.name(),
        },
        "cors": {
            "origins": list(&c.origins),
            "credentials": c.credentials.to_string(),
            "methods": list(&c.methods()),
            "headers": list(&c.allowed_headers()),
            "exposed_headers": list(&c.exposed()),
            "max_age": c.max_age_secs.to_string(),
        },
        "rhizome": { "base_iri": base, "context_hosts": list(&config.contexts.hosts) },
    })
}

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

async fn respond(server: &Arc<Server>, cors: &cors::CorsSettings, req: hyper::Request<hyper::body::Incoming>, peer: SocketAddr, body_timeout: Duration, log: bool) -> hyper::Response<http::Body> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    // A CORS preflight is answered before anything else (a browser sends
    // it without credentials); other answers get their CORS headers last.
    if let Some(headers) = cors.preflight(&method, req.headers()) {
        let mut r = http::response(204, "text/plain", Bytes::new());
        r.headers_mut().remove("content-type");
        for (name, value) in headers {
            http::set_header(&mut r, name, &value);
        }
        return r;
    }
    let request_headers = if cors.enabled { Some(req.headers().clone()) } else { None };
    let mut response = match handle(server, req, peer, body_timeout).await {
        Ok(r) => r,
        Err(e) => {
            let timed_out = e.status == 408;
            let mut r = http::error(&e.without_path(&server.data_dir));
            if timed_out {
                // The rest of the body may still come: do not read it as
                // the next request.
                http::set_header(&mut r, "connection", "close");
            }
            r
        }
    };
    if let Some(request_headers) = request_headers {
        cors.decorate(&request_headers, response.headers_mut());
    }
    couch::node::count(&method, response.status().as_u16());
    if log {
        // One structured line per request: easy to grep, easy to parse.
        eprintln!(
            "{{\"method\":\"{}\",\"path\":{},\"status\":{},\"ms\":{:.3}}}",
            method,
            serde_json::Value::String(path),
            response.status().as_u16(),
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    response
}

/// Reads and drops the rest of a request body (at most the body limit, with
/// the body timeout between chunks) before an early answer: a server that
/// closes with the body unread resets the connection, and the client then
/// sees a broken pipe instead of the 503 telling it to retry.
async fn drain<B>(body: &mut B, body_timeout: Duration)
where
    B: hyper::body::Body + Unpin,
{
    while let Ok(Some(Ok(_))) = tokio::time::timeout(body_timeout, body.frame()).await {}
}

async fn handle(server: &Arc<Server>, req: hyper::Request<hyper::body::Incoming>, peer: SocketAddr, body_timeout: Duration) -> Result<hyper::Response<http::Body>, HttpError> {
    let (parts, body) = req.into_parts();
    let limit = server.max_body_bytes;
    let too_large = || HttpError::new(413, "too_large", format!("the request body is larger than the limit of {limit} bytes"));
    if parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    // A body counts twice against the memory all requests share: its
    // bytes, and about as much again for what is parsed from them. Past
    // that memory the request waits for nobody: 503, retry later.
    let mut memory = server.request_memory.reservation();
    let mut reserve = |bytes: usize| -> Result<(), HttpError> {
        if memory.grow_to(bytes.saturating_mul(2)) {
            return Ok(());
        }
        let total = server.request_memory.limit_bytes();
        let mut busy = HttpError::new(503, "server_busy", format!("the server's memory for requests ({total} bytes, --request-memory-bytes) is in use by other requests; retry later"));
        busy.retry_after_secs = Some(1);
        Err(busy)
    };
    // Read with a timeout between chunks, so that a client that stops
    // sending its body does not hold the connection (and its place under
    // the connection caps) forever.
    let mut body = Limited::new(body, limit);
    if let Some(n) = parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok()) {
        if let Err(busy) = reserve(n) {
            drain(&mut body, body_timeout).await;
            return Err(busy);
        }
    }
    let mut read = bytes::BytesMut::new();
    loop {
        match tokio::time::timeout(body_timeout, body.frame()).await {
            Err(_) => {
                eprintln!("rhizome: closed a connection from {peer} whose request body stalled for {} s (--body-timeout-secs)", body_timeout.as_secs_f64());
                return Err(HttpError::new(408, "request_timeout", format!("no part of the request body arrived for {} s", body_timeout.as_secs_f64())));
            }
            Ok(None) => break,
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    if let Err(busy) = reserve(read.len() + data.len()) {
                        drop(read);
                        drain(&mut body, body_timeout).await;
                        return Err(busy);
                    }
                    read.extend_from_slice(&data);
                }
            }
            Ok(Some(Err(e))) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return Err(too_large()),
            Ok(Some(Err(e))) => return Err(HttpError::bad_request(format!("reading the request body: {e}"))),
        }
    }
    let body: Bytes = read.freeze();
    let mut headers = parts.headers;
    let body = http::decode_body(&mut headers, body, limit)?;
    reserve(body.len())?;
    let cancel = CancelOnDrop::new();
    if parts.uri.path() == "/_utils" {
        // The console's page loads its files by relative paths: from the
        // folder, as CouchDB redirects.
        let mut r = http::response(301, "text/plain", bytes::Bytes::new());
        http::set_header(&mut r, "location", "/_utils/");
        return Ok(r);
    }
    let segments = http::split_path(parts.uri.path())?;
    let query = http::parse_request_query(&segments, parts.uri.query().unwrap_or(""))?;
    let (head_tx, head_rx) = tokio::sync::oneshot::channel();
    let mut request = http::Request {
        method: parts.method,
        segments,
        query,
        headers,
        body,
        peer: Some(peer.ip()),
        cancelled: cancel.flag.clone(),
        responder: Default::default(),
        memory,
    };
    // A single-document read is a few point reads of warm data: run it
    // here rather than pay a hop to the blocking pool. Everything that
    // writes (fsync) or scans goes to the blocking pool, and so does
    // everything under a design document but the document itself: a view
    // query may build its index, running JavaScript for minutes, which on
    // an async worker stalls the requests queued behind it on that worker.
    // Attachments are not: their bodies are streamed from the blocking
    // pool (`stream.rs`).
    let point_read = matches!(request.method, hyper::Method::GET | hyper::Method::HEAD)
        && match request.segments.as_slice() {
            [] => true,
            [_, id] => !id.starts_with('_'),
            [_, id, _] => id == "_local" || id == "_design",
            // `/_db_updates` may wait for an event: never on these threads.
            [db] => db.starts_with('_') && db != "_db_updates",
            // Attachments stream (`stream.rs`): from a blocking thread.
            _ => false,
        }
        // Credentials not verified yet cost a PBKDF2: not on async threads.
        && auth::is_cheap(server, &request);
    let reply = if point_read {
        router::handle(server, &request)?
    } else {
        // A handler may send its response early and stream the body
        // after it (`stream.rs`): answer with the head as soon as it comes,
        // while the handler goes on writing the body.
        request.responder = stream::Responder::new(head_tx);
        let srv = server.clone();
        let mut task = tokio::task::spawn_blocking(move || router::handle(&srv, &request));
        let mut head_rx = head_rx;
        let reply = tokio::select! {
            biased;
            done = &mut task => done,
            Ok(head) = &mut head_rx => {
                cancel.disarm();
                return Ok(head);
            }
        };
        match reply.map_err(|e| HttpError::internal(format!("request task failed: {e}")))?? {
            // Streamed, and finished before the head was seen here.
            Reply::Done(r) if matches!(r.body(), http::Body::Sent) => {
                cancel.disarm();
                return head_rx.await.map_err(|_| HttpError::internal("a streamed answer lost its head"));
            }
            other => other,
        }
    };
    cancel.disarm();
    Ok(match reply {
        Reply::Done(r) => r,
        Reply::Feed(feed) => changes::run(feed, server.shutdown.clone()),
    })
}

/// Sets its flag if dropped before `disarm`: hyper drops a request's future
/// when the client closes the connection, and the blocking work still
/// running for it (a query, a graph write) sees the flag and stops.
struct CancelOnDrop {
    flag: Arc<std::sync::atomic::AtomicBool>,
    armed: bool,
}

impl CancelOnDrop {
    fn new() -> CancelOnDrop {
        CancelOnDrop { flag: Arc::default(), armed: true }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}
