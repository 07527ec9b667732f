//! The server's state: its identity file, the open databases and their
//! change notifications.
//!
//! Layout of the data directory:
//! - `server.json`: the server's uuid, the admin's PBKDF2 hash and the
//!   secret that signs session cookies (written atomically, mode 0600);
//! - `base-iri`: the base of document graph IRIs, fixed at first use and
//!   moved only by `rhizome rebase`;
//! - `lock`, `rebase-plan`: held by a running server or a rebase, and a
//!   rebase under way (`folder.rs`);
//! - `dbs/<name>/`: one store per database (documents and their graphs);
//!   characters of the name other than `[a-z0-9_-]` are written `%XX`
//!   (names whose folder name would pass 255 bytes are refused);
//! - `revoked-sessions`: session cookies logged out before their expiry
//!   (`auth/session.rs`);
//! - `_contexts/`: the remote JSON-LD context cache, one file per context
//!   (`rhizome_docs::contexts`).

use crate::auth::password::{self, PasswordHash};
use crate::error::{HttpError, ServerError};
use crate::http::uuid;
use rhizome_docs::{valid_db_name, ContextStore, Database, DocumentIris, GraphProjector, JsonLdProjector, NoGraphs};

/// Databases kept open by default: each open one holds about 6 file
/// descriptors, its caches and its memtable (within the process-wide
/// budgets); closed ones cost nothing but their files. CouchDB's
/// `max_dbs_open` is 500, for Erlang processes far cheaper than a store.
pub const DEFAULT_MAX_OPEN_DATABASES: usize = 100;

/// The base of document graph IRIs when a data folder is first used by
/// something other than a server (`load --db`, Python): CouchDB's address.
pub const DEFAULT_BASE_IRI: &str = "http://localhost:5984";

/// The base of document graph IRIs, `<base>/<db>/<doc id>`
/// (../shared/design.md), fixed per data folder: the first `serve` or
/// `load --db` writes it to `DATA/base-iri` (`RHIZOME_BASE_IRI`, by default
/// [`DEFAULT_BASE_IRI`], or for `serve` the address it listens on:
/// [`base_iri_or`]) and every later one reads it there. Changing it
/// renames every document's graph, which only `rhizome rebase` does: a
/// `RHIZOME_BASE_IRI` that disagrees with the stored one is not used
/// ([`requested_base`] lets `serve` say so), and a folder a rebase left
/// unfinished is refused until it is finished.
pub fn base_iri(data_dir: &Path) -> Result<String, ServerError> {
    base_iri_or(data_dir, DEFAULT_BASE_IRI)
}

/// The base a server listening on `addr` gives a data folder at its first
/// start: its own address, so that the IRIs of documents and LDP resources
/// are URLs a client can follow. A server listening on every interface
/// (`0.0.0.0`, `::`) names itself `localhost`; `RHIZOME_BASE_IRI` names
/// it for the world.
pub fn listen_base(addr: std::net::SocketAddr) -> String {
    match addr.ip() {
        ip if ip.is_unspecified() => format!("http://localhost:{}", addr.port()),
        std::net::IpAddr::V6(ip) => format!("http://[{ip}]:{}", addr.port()),
        std::net::IpAddr::V4(ip) => format!("http://{ip}:{}", addr.port()),
    }
}

/// The base `RHIZOME_BASE_IRI` asks for, if set (a data folder's first
/// use takes it; later ones keep the stored base, see [`base_iri`]).
pub fn requested_base() -> Option<String> {
    std::env::var("RHIZOME_BASE_IRI").ok().filter(|w| !w.is_empty())
}

/// [`base_iri`], with `default` for a data folder used for the first time
/// without `RHIZOME_BASE_IRI`.
pub fn base_iri_or(data_dir: &Path, default: &str) -> Result<String, ServerError> {
    let path = data_dir.join("base-iri");
    if let Some(plan) = crate::folder::rebase_plan(data_dir)? {
        return Err(ServerError::Config(format!(
            "a rebase of {} from {} to {} was interrupted; finish it with `rhizome --data {} rebase {}` before using the folder",
            data_dir.display(),
            plan.from,
            plan.to,
            data_dir.display(),
            plan.to
        )));
    }
    let wanted = requested_base();
    match std::fs::read_to_string(&path) {
        Ok(stored) => Ok(stored.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let base = wanted.unwrap_or_else(|| default.to_owned());
            oxiri::Iri::parse(format!("{}/db/doc", base.trim_end_matches('/')))
                .map_err(|e| ServerError::Config(format!("RHIZOME_BASE_IRI {base:?} is not an absolute IRI: {e}")))?;
            let io = |source| ServerError::Io { what: format!("writing {}", path.display()), source };
            std::fs::create_dir_all(data_dir).map_err(io)?;
            write_durably(&path, format!("{base}\n").as_bytes(), false).map_err(io)?;
            Ok(base)
        }
        Err(source) => Err(ServerError::Io { what: format!("reading {}", path.display()), source }),
    }
}

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;

/// What the server knows about itself (persisted in `server.json`).
#[derive(Clone, Debug)]
pub struct Identity {
    pub uuid: String,
    pub admin_name: String,
    pub admin_hash: PasswordHash,
    pub secret: String,
}

/// An open database and the channel that announces its commits.
pub struct DbHandle {
    pub name: String,
    pub db: Database,
    pub seq: watch::Sender<u64>,
    pub writes: crate::group_commit::GroupCommit,
    /// PBKDF2 iterations for passwords written to `_users`.
    pub pbkdf2_iterations: u32,
    /// When a request last asked for it (ms since the server's start): the
    /// least recently used idle database is closed first.
    last_used_ms: std::sync::atomic::AtomicU64,
    /// The server's `_db_updates` feed.
    pub updates: Arc<crate::db_updates::DbUpdates>,
}

impl DbHandle {
    /// Tells `_changes` feeds that `update_seq` moved, and `_db_updates`.
    pub fn notify(&self) {
        if let Ok(seq) = self.db.update_seq() {
            self.seq.send_replace(seq);
        }
        self.updates.record(&self.name, "updated");
    }
}

pub struct Server {
    pub data_dir: PathBuf,
    pub identity: Identity,
    /// The base of this data folder's document graph IRIs ([`base_iri`]).
    pub base_iri: String,
    pub max_body_bytes: usize,
    dbs: RwLock<HashMap<String, Arc<DbHandle>>>,
    /// Serializes creating, opening, closing and deleting databases.
    lifecycle: Mutex<()>,
    /// Databases kept open at most; past it, opening one closes the least
    /// recently used one nobody is using ([`DEFAULT_MAX_OPEN_DATABASES`]).
    pub max_open_databases: usize,
    started: std::time::Instant,
    /// Credentials verified already (keyed by an HMAC of name and
    /// password, with the salt and derived key they matched), so Basic auth
    /// on every request does not pay PBKDF2 every time.
    pub verified: Mutex<HashMap<[u8; 32], (String, String)>>,
    /// Credentials being verified now, by the same key: a request with
    /// credentials another is verifying waits for that one's PBKDF2
    /// instead of running its own (`auth::verify_cached`).
    pub verifying: Mutex<HashMap<[u8; 32], Arc<Mutex<()>>>>,
    pub auth: crate::auth::AuthSettings,
    /// The admin's hash as now stored (upgraded in place at a login).
    admin_hash: RwLock<PasswordHash>,
    /// A hash of a random password at the server's iteration count: a
    /// login for a name with no account is verified against it, so that
    /// it takes as long as one for a name with an account.
    pub dummy_hash: PasswordHash,
    pub login_throttle: crate::auth::throttle::LoginThrottle,
    pub revoked_sessions: crate::auth::session::RevokedSessions,
    projector: Arc<dyn GraphProjector>,
    pub shutdown: watch::Receiver<bool>,
    /// Continuous replications started by `POST /_replicate`, by their
    /// `_local_id`; setting the flag stops one.
    pub replications: Arc<Mutex<HashMap<String, Arc<crate::couch::replicate::Running>>>>,
    /// The replications of `_replicator` documents.
    pub replicator_docs: crate::replicator_db::DocJobs,
    /// What SPARQL requests may do beyond the database (LOAD).
    pub sparql: crate::rdf::SparqlSettings,
    /// Remote JSON-LD contexts: shipped, cached in `<data>/_contexts`, and
    /// fetched when `--context-hosts` allows (`crate::contexts`).
    pub contexts: Arc<ContextStore>,
    /// Memory all requests share (`--request-memory-bytes`): request
    /// bodies and what SPARQL requests sort, group and join.
    pub request_memory: Arc<rhizome_sparql::MemoryPool>,
    /// The time a SPARQL request or a Mango `_find` may take
    /// (`--query-timeout-ms`).
    pub query_timeout: std::time::Duration,
    /// Documents one `_bulk_docs` or `_bulk_get` may name (`--max-bulk-docs`).
    pub max_bulk_docs: usize,
    /// The settings the server runs with, in CouchDB's `_config` sections
    /// (`couch::node`; set by `serve`).
    pub node_config: Value,
    /// The origins whose pages may send writes here (`--enable-cors`; set
    /// by `serve`): `request_bodies` takes form-like writes from them.
    pub cors: crate::cors::CorsSettings,
    /// Databases created, updated and deleted (`/_db_updates`).
    pub db_updates: Arc<crate::db_updates::DbUpdates>,
}

/// Memory all requests together may hold by default (1 GiB): request
/// bodies (counted twice: the bytes and what is parsed from them) and
/// SPARQL's sorts, groups, joins and held solutions.
pub const DEFAULT_REQUEST_MEMORY_BYTES: usize = 1 << 30;

/// The folder of database `name` under a server's data folder (for tools
/// that write a database while the server is stopped: `rhizome load --db`).
pub fn database_dir(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("dbs").join(encode_name(name))
}

/// The projector of database `name`: user databases' documents are RDF,
/// their graphs named under `base` ([`base_iri`]), remote JSON-LD contexts
/// resolved in `contexts` ([`context_store`]).
pub fn projector_for(base: &str, name: &str, contexts: Arc<ContextStore>) -> Arc<dyn GraphProjector> {
    if name.starts_with('_') {
        return Arc::new(NoGraphs);
    }
    let iris = DocumentIris::new(base, name);
    let root = iris.ldp_root();
    // LDP resources are documents; their index follows every write.
    Arc::new(rhizome_ldp::LdpProjector::new(Arc::new(JsonLdProjector::with_contexts(iris, contexts)), root))
}

/// The folder of the remote context cache, `<data>/_contexts`.
pub(crate) fn contexts_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("_contexts")
}

/// The data folder's remote context cache, without fetching (for tools
/// that write a database while the server is stopped).
pub fn context_store(data_dir: &Path) -> Result<Arc<ContextStore>, ServerError> {
    ContextStore::open(&contexts_dir(data_dir), None).map(Arc::new).map_err(ServerError::Config)
}

fn encode_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' { c.to_string() } else { format!("%{:02X}", c as u32) }).collect()
}

/// The longest folder name most file systems take (ext4, XFS, APFS, NTFS).
const MAX_DIR_NAME_BYTES: usize = 255;

/// Whether database `name`'s folder name fits the file system. CouchDB
/// itself allows longer names (its files are named by the database name
/// too, so it fails the same way); refusing them up front gives a 400
/// instead of an I/O error.
fn name_fits(name: &str) -> bool {
    encode_name(name).len() <= MAX_DIR_NAME_BYTES
}

/// Whether database folder `dir` holds a store (on disk, or in the shared
/// store the server runs on).
fn store_exists(dir: &Path) -> Result<bool, HttpError> {
    rhizome_kv::remote::store_exists(dir).map_err(|e| HttpError::internal(format!("looking for {}: {e}", dir.display())))
}

fn decode_name(dir: &str) -> Option<String> {
    crate::http::percent_decode(dir, false).ok()
}

impl Server {
    pub fn open(
        data_dir: &Path,
        admin: Option<(String, String)>,
        max_body_bytes: usize,
        auth: crate::auth::AuthSettings,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Server, ServerError> {
        let io = |what: String| move |source| ServerError::Io { what, source };
        std::fs::create_dir_all(data_dir.join("dbs")).map_err(io(format!("creating {}", data_dir.display())))?;
        let identity = load_identity(data_dir, admin, auth.pbkdf2_iterations)?;
        let base_iri = base_iri(data_dir)?;
        let server = Server {
            data_dir: data_dir.to_owned(),
            identity: identity.clone(),
            base_iri,
            max_body_bytes,
            dbs: RwLock::new(HashMap::new()),
            lifecycle: Mutex::new(()),
            max_open_databases: DEFAULT_MAX_OPEN_DATABASES,
            started: std::time::Instant::now(),
            verified: Mutex::new(HashMap::new()),
            verifying: Mutex::new(HashMap::new()),
            admin_hash: RwLock::new(identity.admin_hash.clone()),
            dummy_hash: PasswordHash::unmatchable(auth.pbkdf2_iterations),
            login_throttle: crate::auth::throttle::LoginThrottle::new(auth.login_attempts, std::time::Duration::from_secs(auth.login_delay_secs)),
            revoked_sessions: crate::auth::session::RevokedSessions::open(data_dir),
            auth,
            projector: Arc::new(NoGraphs),
            shutdown,
            replications: Default::default(),
            replicator_docs: Default::default(),
            sparql: Default::default(),
            contexts: context_store(data_dir)?,
            request_memory: rhizome_sparql::MemoryPool::new(DEFAULT_REQUEST_MEMORY_BYTES),
            query_timeout: std::time::Duration::from_millis(crate::rdf::QUERY_TIMEOUT_MS),
            max_bulk_docs: crate::couch::bulk::DEFAULT_MAX_BULK_DOCS,
            node_config: json!({}),
            cors: Default::default(),
            db_updates: Arc::default(),
        };
        // CouchDB creates its system databases on first start. Servers
        // starting together on one cluster may each find them missing: the
        // one that comes second finds them made (412) and goes on.
        for system in ["_users", crate::replicator_db::REPLICATOR_DB] {
            if server.db(system).map_err(|e| ServerError::Config(e.reason))?.is_none() {
                match server.create_db(system) {
                    Ok(_) => {}
                    Err(e) if e.status == 412 => {}
                    Err(e) => return Err(ServerError::Config(e.reason)),
                }
            }
        }
        Ok(server)
    }

    /// Documents of user databases are RDF (JSON-LD projected into their
    /// graphs, named under the base IRI); system databases' are not.
    fn projector_for(&self, name: &str) -> Arc<dyn GraphProjector> {
        if name.starts_with('_') {
            return self.projector.clone();
        }
        projector_for(&self.base_iri, name, self.contexts.clone())
    }

    fn db_dir(&self, name: &str) -> PathBuf {
        database_dir(&self.data_dir, name)
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Seconds since this server started (`_system`, `_prometheus`).
    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// An existing database, opened on first use.
    pub fn db(&self, name: &str) -> Result<Option<Arc<DbHandle>>, HttpError> {
        let cached = self.dbs.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned();
        if let Some(h) = cached {
            // On a shared store another server may have deleted it.
            if rhizome_kv::remote::is_shared() && !store_exists(&self.db_dir(name))? {
                self.dbs.write().unwrap_or_else(|p| p.into_inner()).remove(name);
                return Ok(None);
            }
            h.last_used_ms.store(self.now_ms(), std::sync::atomic::Ordering::Relaxed);
            return Ok(Some(h));
        }
        if !valid_db_name(name) || !name_fits(name) {
            return Ok(None);
        }
        let _guard = self.lifecycle.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = self.dbs.read().unwrap_or_else(|p| p.into_inner()).get(name) {
            return Ok(Some(h.clone()));
        }
        let dir = self.db_dir(name);
        if !store_exists(&dir)? {
            return Ok(None);
        }
        Ok(Some(self.open_handle(name, &dir)?))
    }

    /// Opens a database (the lifecycle lock held), first closing idle ones
    /// past the cap.
    fn open_handle(&self, name: &str, dir: &Path) -> Result<Arc<DbHandle>, HttpError> {
        self.refuse_when_stopping()?;
        self.close_idle(self.max_open_databases.max(1) - 1);
        let db = Database::open(dir, self.projector_for(name))?;
        let seq = db.update_seq()?;
        let handle = Arc::new(DbHandle {
            name: name.to_owned(),
            db,
            seq: watch::Sender::new(seq),
            writes: Default::default(),
            pbkdf2_iterations: self.auth.pbkdf2_iterations,
            last_used_ms: self.now_ms().into(),
            updates: self.db_updates.clone(),
        });
        self.dbs.write().unwrap_or_else(|p| p.into_inner()).insert(name.to_owned(), handle.clone());
        Ok(handle)
    }

    /// Closes the least recently used databases that nobody is using (no
    /// request, feed or replication holds their handle) until at most
    /// `keep` are open. Called with the lifecycle lock held, so that the
    /// same database is not opened again before it is closed. Databases in
    /// use stay open even past the cap.
    fn close_idle(&self, keep: usize) {
        let closed: Vec<Arc<DbHandle>> = {
            let mut dbs = self.dbs.write().unwrap_or_else(|p| p.into_inner());
            if dbs.len() <= keep {
                return;
            }
            // Under the write lock nobody can take a new reference (`db`
            // clones under the read lock), so a count of 1 (the table's)
            // stays 1.
            let mut idle: Vec<(u64, String)> = dbs
                .iter()
                .filter(|(_, h)| Arc::strong_count(h) == 1)
                .map(|(name, h)| (h.last_used_ms.load(std::sync::atomic::Ordering::Relaxed), name.clone()))
                .collect();
            idle.sort_unstable();
            idle.truncate(dbs.len() - keep);
            idle.iter().filter_map(|(_, name)| dbs.remove(name)).collect()
        };
        // Dropped here, outside the table's lock: each store closes.
        drop(closed);
    }

    /// At shutdown: every open database out of the table, its background
    /// work (segment merge, RocksDB's compactions) stopped and, where
    /// nothing else holds it, closed. A process that exited with that work
    /// still writing died in RocksDB's static destructors ("pthread lock:
    /// Invalid argument", SIGABRT).
    /// Threads that outlive the server (the `_replicator` follower) hold
    /// the server, not its databases, and cannot open one again: once the
    /// shutdown flag is up, opening or creating a database is refused.
    pub fn close_all(&self) {
        let _guard = self.lifecycle.lock().unwrap_or_else(|p| p.into_inner());
        let open: Vec<Arc<DbHandle>> = self.dbs.write().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, h)| h).collect();
        for handle in &open {
            handle.db.store().stop_background_work();
        }
    }

    /// Once the server is stopping no database is opened or created.
    fn refuse_when_stopping(&self) -> Result<(), HttpError> {
        if *self.shutdown.borrow() {
            return Err(HttpError::new(503, "service_unavailable", "The server is stopping."));
        }
        Ok(())
    }

    pub fn create_db(&self, name: &str) -> Result<Arc<DbHandle>, HttpError> {
        self.create_db_partitioned(name, false)
    }

    /// Creates a database, partitioned or not (set before the database is
    /// announced, under the lifecycle lock, so no write comes first).
    pub fn create_db_partitioned(&self, name: &str, partitioned: bool) -> Result<Arc<DbHandle>, HttpError> {
        if !valid_db_name(name) {
            return Err(HttpError::new(
                400,
                "illegal_database_name",
                format!("Name: '{name}'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter."),
            ));
        }
        if !name_fits(name) {
            let shown: String = name.chars().take(40).collect();
            return Err(HttpError::new(
                400,
                "illegal_database_name",
                format!(
                    "Name: '{shown}...' is too long: its folder name would be {} bytes, over the file system's {MAX_DIR_NAME_BYTES} (characters other than a-z, 0-9, _ and - take 3 bytes each)",
                    encode_name(name).len()
                ),
            ));
        }
        let _guard = self.lifecycle.lock().unwrap_or_else(|p| p.into_inner());
        self.refuse_when_stopping()?;
        let dir = self.db_dir(name);
        if store_exists(&dir)? {
            return Err(HttpError::new(412, "file_exists", "The database could not be created, the file already exists."));
        }
        std::fs::create_dir_all(&dir).map_err(|e| HttpError::internal(format!("creating {}: {e}", dir.display())))?;
        let handle = self.open_handle(name, &dir)?;
        if partitioned {
            handle.db.make_partitioned()?;
        }
        self.db_updates.record(name, "created");
        Ok(handle)
    }

    pub fn delete_db(&self, name: &str) -> Result<(), HttpError> {
        let _guard = self.lifecycle.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self.db_dir(name);
        let handle = self.dbs.write().unwrap_or_else(|p| p.into_inner()).remove(name);
        if handle.is_none() && !store_exists(&dir)? {
            return Err(HttpError::no_db());
        }
        // Wake feeds so they notice; the store closes when its last user
        // (a running request) lets go of it.
        drop(handle);
        rhizome_kv::remote::destroy_store(&dir).map_err(|e| HttpError::internal(format!("deleting {}: {e}", dir.display())))?;
        match std::fs::remove_dir_all(&dir) {
            Err(e) if !(rhizome_kv::remote::is_shared() && e.kind() == std::io::ErrorKind::NotFound) => {
                return Err(HttpError::internal(format!("deleting {}: {e}", dir.display())))
            }
            _ => {}
        }
        self.db_updates.record(name, "deleted");
        Ok(())
    }

    /// The server admin's password hash.
    pub fn admin_hash(&self) -> PasswordHash {
        self.admin_hash.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the admin's hash (an upgrade), in `server.json` first.
    pub fn set_admin_hash(&self, hash: PasswordHash) -> Result<(), ServerError> {
        let mut current = self.admin_hash.write().unwrap_or_else(|p| p.into_inner());
        let identity = Identity { admin_hash: hash.clone(), ..self.identity.clone() };
        save_identity(&self.data_dir, &identity)?;
        *current = hash;
        Ok(())
    }

    /// How many databases are open (`_node/_local/_stats`).
    pub fn open_databases(&self) -> usize {
        self.dbs.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn all_dbs(&self) -> Result<Vec<String>, HttpError> {
        let dir = self.data_dir.join("dbs");
        if let Some(stores) = rhizome_kv::remote::list_stores(&dir).map_err(|e| HttpError::internal(format!("listing {}: {e}", dir.display())))? {
            let mut names: Vec<String> = stores.iter().filter_map(|s| decode_name(s)).collect();
            names.sort();
            return Ok(names);
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| HttpError::internal(format!("listing {}: {e}", dir.display())))?
            .flatten()
            .filter(|e| e.path().join("CURRENT").exists())
            .filter_map(|e| decode_name(&e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        Ok(names)
    }
}

fn load_identity(data_dir: &Path, admin: Option<(String, String)>, iterations: u32) -> Result<Identity, ServerError> {
    let path = data_dir.join("server.json");
    let stored: Option<Value> = match std::fs::read(&path) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).map_err(|e| ServerError::Config(format!("{}: {e}", path.display())))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(ServerError::Io { what: format!("reading {}", path.display()), source }),
    };
    let text = |k: &str| stored.as_ref().and_then(|s| s.get(k)).and_then(Value::as_str).map(str::to_owned);
    let uuid = text("uuid").unwrap_or_else(uuid);
    let secret = text("secret").unwrap_or_else(|| format!("{}{}", crate::http::uuid(), crate::http::uuid()));
    let stored_admin = stored.as_ref().and_then(|s| s.get("admin")).and_then(|a| {
        Some((a.get("name")?.as_str()?.to_owned(), PasswordHash::from_json(a)?))
    });
    let (admin_name, admin_hash, changed) = match (admin, stored_admin) {
        (Some((name, pass)), Some((old_name, old_hash))) if name == old_name && password::verify(&pass, &old_hash) => {
            if old_hash.needs_upgrade(iterations) {
                // Same salt: the admin's sessions survive the upgrade.
                (old_name, PasswordHash::with_salt(&pass, &old_hash.salt, iterations), true)
            } else {
                (old_name, old_hash, false)
            }
        }
        (Some((name, pass)), _) => {
            if name.is_empty() || pass.is_empty() {
                return Err(ServerError::Config("the admin must be given as USER:PASS with both parts non-empty".into()));
            }
            (name, PasswordHash::new(&pass, iterations), true)
        }
        (None, Some((name, hash))) => (name, hash, false),
        (None, None) => {
            return Err(ServerError::Config(
                "no server admin is configured: start once with --admin USER:PASS (or RHIZOME_ADMIN=USER:PASS); \
                 Rhizome has no admin party, so it will not serve without one"
                    .into(),
            ))
        }
    };
    let identity = Identity { uuid, admin_name, admin_hash, secret };
    if changed || stored.is_none() {
        save_identity(data_dir, &identity)?;
    }
    Ok(identity)
}

fn save_identity(data_dir: &Path, identity: &Identity) -> Result<(), ServerError> {
    let path = data_dir.join("server.json");
    let mut admin = identity.admin_hash.fields();
    admin["name"] = json!(identity.admin_name);
    let value = json!({ "uuid": identity.uuid, "secret": identity.secret, "admin": admin });
    write_durably(&path, value.to_string().as_bytes(), true).map_err(|source| ServerError::Io { what: format!("writing {}", path.display()), source })
}

/// Writes a file atomically (temp + fsync + rename), readable by its
/// owner only when `private`.
pub(crate) fn write_durably(path: &Path, bytes: &[u8], private: bool) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    }
    let mut f = opts.open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stopping server closes every database it opened, even while a
    /// thread that outlives it (as the `_replicator` follower does) still
    /// holds the server: the folder opens again in this process (RocksDB
    /// refuses a second open of a folder it holds), and the server opens
    /// no database after. A database left open at exit died in RocksDB's
    /// static destructors now and then ("pthread lock: Invalid argument").
    #[test]
    fn a_stopping_server_closes_its_databases_and_opens_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let (stop, shutdown) = watch::channel(false);
        let settings = crate::auth::AuthSettings { pbkdf2_iterations: 1_000, ..crate::auth::AuthSettings::default() };
        let server = Arc::new(Server::open(dir.path(), Some(("admin".into(), "pw".into())), 1 << 20, settings, shutdown).unwrap());
        drop(server.create_db("db").unwrap());
        let outliving = server.clone();
        assert!(Database::open(&server.db_dir("db"), server.projector_for("db")).is_err(), "the server holds the folder while it runs");
        stop.send(true).unwrap();
        server.close_all();
        let reopened = Database::open(&server.db_dir("db"), server.projector_for("db"));
        assert!(reopened.is_ok(), "closed at shutdown: {:?}", reopened.err());
        drop(reopened);
        assert_eq!(outliving.db("db").err().map(|e| e.status), Some(503));
        assert_eq!(outliving.create_db("other").err().map(|e| e.status), Some(503));
        assert!(!outliving.db_dir("other").exists());
    }
}
