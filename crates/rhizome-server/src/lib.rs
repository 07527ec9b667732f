//! `rhizome-server`: the HTTP face of Rhizome.
//!
//! Owns: CouchDB's API over [`rhizome_docs`] (server, database, document,
//! attachment, bulk and `_changes` endpoints with CouchDB's JSON errors),
//! authentication (server admin, `_users`, Basic and cookie sessions) and
//! the per-database `_security` guard that every route passes through, the
//! request log, body limits, connection limits and timeouts
//! (`connections.rs`), fetching remote JSON-LD contexts and the admin's
//! `/_contexts` (`contexts.rs`), and clean shutdown. Does not own document
//! semantics (`rhizome-docs`) or query evaluation (`rhizome-sparql`); the
//! RDF views (`/{db}/_sparql`, `/{db}/_graph`: SPARQL 1.1 Protocol and
//! Graph Store Protocol) are routed in `extension.rs` and answered in
//! `rdf/`.
//!
//! Shape: an async shell (tokio + hyper) reads each request body (bounded),
//! then runs the handler on a blocking thread, because the document store is
//! synchronous and a write returns only once it is fsynced. `_changes`
//! feeds come back to the async side to wait for commits.
//!
//! Main items: [`ServerConfig`], [`run`], [`serve`].

mod auth;
mod changes;
mod connections;
mod console;
mod contexts;
mod cors;
mod db_updates;
mod couch;
pub mod error;
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
pub use state::{base_iri, base_iri_or, context_store, database_dir, listen_base, projector_for, DEFAULT_MAX_OPEN_DATABASES, DEFAULT_REQUEST_MEMORY_BYTES};
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
    if let Some(n) = parts.headers.get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok()) {
        reserve(n)?;
    }
    // Read with a timeout between chunks, so that a client that stops
    // sending its body does not hold the connection (and its place under
    // the connection caps) forever.
    let mut body = Limited::new(body, limit);
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
                    reserve(read.len() + data.len())?;
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
