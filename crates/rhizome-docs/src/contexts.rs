//! Remote JSON-LD contexts (`"@context": "https://schema.org/"`): where a
//! document's context URLs are resolved.
//!
//! - Shipped contexts ([`SHIPPED`], `contexts/README.md`) are compiled in:
//!   schema.org, Activity Streams, Verifiable Credentials v1 and v2, Web
//!   Annotation. They work offline.
//! - The context cache ([`ContextStore`]) holds every other context the
//!   server knows: fetched ones and ones an admin added, in one file each
//!   under the data folder (`<data>/_contexts/`), so they survive a restart,
//!   read when first used (a start reads none) and kept parsed in memory
//!   within [`MAX_CONTEXT_MEMORY_BYTES`]. The disk holds at most
//!   [`MAX_CACHED_CONTEXTS`] and [`MAX_CACHED_CONTEXT_BYTES`]: past them the
//!   least recently used fetched context goes. A fetched context is kept in
//!   memory only until a write that uses it commits
//!   ([`ContextStore::confirm`]): a refused write leaves nothing on disk.
//!   A cached context takes precedence over a shipped one of the same URL
//!   (an admin may pin another version).
//! - Fetching is never done while a database is locked: [`ContextStore::prefetch`]
//!   runs before a write and fills the cache (contexts that name contexts
//!   included, at most [`MAX_REMOTE_DEPTH`] deep and [`MAX_REMOTE_CONTEXTS`]
//!   in all per document) through a [`ContextFetcher`] (the server's, with
//!   its host allow-list, timeout and size limit; none: offline). Inside the
//!   write, [`ContextStore::resolve`] only reads the cache, and oxjsonld's
//!   document loader only reads what it resolved ([`Resolved::loader`]).

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// How deep contexts may name contexts (a document's remote context that
/// names another is depth 2).
pub const MAX_REMOTE_DEPTH: usize = 8;
/// Remote contexts one document may use, all levels together.
pub const MAX_REMOTE_CONTEXTS: usize = 32;
/// Contexts the cache keeps on disk at most: past it (or past
/// [`MAX_CACHED_CONTEXT_BYTES`]) the least recently used fetched one is
/// evicted (an admin's are kept), so that an open allow-list cannot fill
/// the disk.
pub const MAX_CACHED_CONTEXTS: usize = 10_000;
/// Bytes of contexts the cache keeps on disk at most (see
/// [`MAX_CACHED_CONTEXTS`]): 35 documents naming 32 contexts of 1 MiB each
/// made a 1.1 GB cache.
pub const MAX_CACHED_CONTEXT_BYTES: u64 = 64 << 20;
/// Bytes of contexts kept parsed in memory at most (least recently used
/// first out; read again from disk when used): the cache was all in memory
/// and read whole at start (2.6 GB, and a start that ran out of memory).
pub const MAX_CONTEXT_MEMORY_BYTES: usize = 32 << 20;
/// The version of the cache files' format.
const CACHE_FORMAT: u64 = 1;

/// The contexts compiled into the binary: the URLs each is served at, and
/// its bytes (see `contexts/README.md` for sources and licenses).
pub const SHIPPED: &[(&[&str], &[u8])] = &[
    (
        &[
            "https://schema.org/",
            "https://schema.org",
            "http://schema.org/",
            "http://schema.org",
            "https://schema.org/docs/jsonldcontext.jsonld",
            "http://schema.org/docs/jsonldcontext.jsonld",
            "https://schema.org/docs/jsonldcontext.json",
            "http://schema.org/docs/jsonldcontext.json",
        ],
        include_bytes!("../contexts/schema.org.jsonld"),
    ),
    (
        &[
            "https://www.w3.org/ns/activitystreams",
            "http://www.w3.org/ns/activitystreams",
            "https://www.w3.org/ns/activitystreams.jsonld",
            "http://www.w3.org/ns/activitystreams.jsonld",
        ],
        include_bytes!("../contexts/activitystreams.jsonld"),
    ),
    (&["https://www.w3.org/2018/credentials/v1"], include_bytes!("../contexts/credentials-v1.jsonld")),
    (&["https://www.w3.org/ns/credentials/v2"], include_bytes!("../contexts/credentials-v2.jsonld")),
    (&["http://www.w3.org/ns/anno.jsonld", "https://www.w3.org/ns/anno.jsonld"], include_bytes!("../contexts/anno.jsonld")),
];

/// Where a context came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextSource {
    Shipped,
    Fetched,
    Admin,
}

impl ContextSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextSource::Shipped => "shipped",
            ContextSource::Fetched => "fetched",
            ContextSource::Admin => "admin",
        }
    }
}

/// A remote context document (`{"@context": ...}`), parsed and as bytes.
#[derive(Debug)]
pub struct RemoteContext {
    pub document: Value,
    bytes: Arc<Vec<u8>>,
    pub source: ContextSource,
    /// Its term definitions, when it is plain: local term definitions only,
    /// no scoped contexts, no URLs, no `@import` (schema.org, Activity
    /// Streams, Web Annotation). `None`: it is not.
    plain_terms: Option<usize>,
}

impl RemoteContext {
    fn new(document: Value, bytes: Vec<u8>, source: ContextSource) -> RemoteContext {
        let plain_terms = plain_terms(document.get("@context").unwrap_or(&Value::Null));
        RemoteContext { document, bytes: Arc::new(bytes), source, plain_terms }
    }

    /// The value of the document's `@context`.
    pub fn context(&self) -> &Value {
        self.document.get("@context").unwrap_or(&Value::Null)
    }
}

/// Gets a context document over the network (the server's HTTP client and
/// policy). The error says why, for the client's 400.
pub trait ContextFetcher: Send + Sync {
    fn fetch(&self, url: &str) -> Result<Vec<u8>, String>;
}

/// The shipped contexts, parsed once.
fn shipped() -> &'static HashMap<&'static str, Arc<RemoteContext>> {
    static SHIPPED_PARSED: OnceLock<HashMap<&'static str, Arc<RemoteContext>>> = OnceLock::new();
    SHIPPED_PARSED.get_or_init(|| {
        let mut out = HashMap::new();
        for (urls, bytes) in SHIPPED {
            let document: Value = serde_json::from_slice(bytes).expect("a shipped context is JSON (checked by a unit test)");
            let context = Arc::new(RemoteContext::new(document, bytes.to_vec(), ContextSource::Shipped));
            for url in *urls {
                out.insert(*url, context.clone());
            }
        }
        out
    })
}

/// Checks a context document: a JSON object with `@context`, within the
/// bounds of [`crate::jsonld_limits`].
pub fn validate_context_document(document: &Value) -> Result<(), String> {
    let Some(object) = document.as_object() else { return Err("a context document must be a JSON object".into()) };
    let Some(context) = object.get("@context") else { return Err("a context document must have an \"@context\" member".into()) };
    if !matches!(context, Value::Object(_) | Value::Array(_) | Value::String(_) | Value::Null) {
        return Err("\"@context\" must be an object, an array, a URL or null".into());
    }
    crate::jsonld_limits::check_json_ld(&serde_json::json!({ "@context": context }))
}

/// The shipped contexts and the context cache (see the module comment).
pub struct ContextStore {
    /// `None`: memory only (tests, tools that do not serve).
    dir: Option<PathBuf>,
    cache: std::sync::Mutex<Cache>,
    fetcher: Option<Box<dyn ContextFetcher>>,
}

/// A context kept parsed in memory.
struct InMemory {
    context: Arc<RemoteContext>,
    used: u64,
    /// Written to its file (an admin's, or a fetched one a committed write
    /// used); else it lives in memory only, until evicted.
    on_disk: bool,
}

/// A context file: its size, when it was last used, and whether an admin
/// put it (`None`: not read since the start).
struct OnDisk {
    bytes: u64,
    used: u64,
    admin: Option<bool>,
}

#[derive(Default)]
struct Cache {
    memory: HashMap<String, InMemory>,
    memory_bytes: usize,
    /// By file name ([`file_name`]).
    disk: HashMap<String, OnDisk>,
    disk_bytes: u64,
    /// A clock for least recently used.
    tick: u64,
}

impl Cache {
    fn tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn forget(&mut self, url: &str) {
        if let Some(old) = self.memory.remove(url) {
            self.memory_bytes -= old.context.bytes.len();
        }
    }

    fn remember(&mut self, url: &str, context: Arc<RemoteContext>, on_disk: bool) {
        self.forget(url);
        let used = self.tick();
        self.memory_bytes += context.bytes.len();
        self.memory.insert(url.to_owned(), InMemory { context, used, on_disk });
        // Least recently used out, never the one just put.
        while self.memory_bytes > MAX_CONTEXT_MEMORY_BYTES && self.memory.len() > 1 {
            let Some(oldest) = self.memory.iter().filter(|(u, _)| u.as_str() != url).min_by_key(|(_, e)| e.used).map(|(u, _)| u.clone()) else { break };
            self.forget(&oldest);
        }
    }
}

impl std::fmt::Debug for ContextStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextStore").field("dir", &self.dir).field("fetches", &self.fetcher.is_some()).finish()
    }
}

impl Default for ContextStore {
    fn default() -> Self {
        ContextStore::offline()
    }
}

impl ContextStore {
    /// Shipped contexts only, nothing fetched or kept.
    pub fn offline() -> ContextStore {
        ContextStore { dir: None, cache: Default::default(), fetcher: None }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cache kept in `dir` (created if missing), fetching through
    /// `fetcher` if any. Only the folder's listing is read now: each file
    /// is read when its context is first used, so a large or damaged cache
    /// never stops a start.
    pub fn open(dir: &Path, fetcher: Option<Box<dyn ContextFetcher>>) -> Result<ContextStore, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mut cache = Cache::default();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        let mut files: Vec<(String, u64, std::time::SystemTime)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".json") {
                continue; // a temporary file left by a crash
            }
            let Ok(meta) = entry.metadata() else { continue };
            files.push((name, meta.len(), meta.modified().unwrap_or(std::time::UNIX_EPOCH)));
        }
        // The oldest written counts as the least recently used.
        files.sort_by_key(|f| f.2);
        for (name, bytes, _) in files {
            let used = cache.tick();
            cache.disk_bytes += bytes;
            cache.disk.insert(name, OnDisk { bytes, used, admin: None });
        }
        Ok(ContextStore { dir: Some(dir.to_owned()), cache: std::sync::Mutex::new(cache), fetcher })
    }

    /// Whether this store fetches contexts it lacks.
    pub fn fetches(&self) -> bool {
        self.fetcher.is_some()
    }

    /// The context at `url`: cached (in memory, else read from its file),
    /// else shipped.
    pub fn get(&self, url: &str) -> Option<Arc<RemoteContext>> {
        let mut cache = self.cache();
        let tick = cache.tick();
        if let Some(entry) = cache.memory.get_mut(url) {
            entry.used = tick;
            return Some(entry.context.clone());
        }
        let name = file_name(url);
        if let (Some(dir), true) = (&self.dir, cache.disk.contains_key(&name)) {
            match std::fs::read(dir.join(&name)).map_err(|e| e.to_string()).and_then(|b| read_cache_file(&b)) {
                Ok((stored_url, context)) if stored_url == url => {
                    let context = Arc::new(context);
                    if let Some(file) = cache.disk.get_mut(&name) {
                        file.used = tick;
                        file.admin = Some(context.source == ContextSource::Admin);
                    }
                    cache.remember(url, context.clone(), true);
                    return Some(context);
                }
                Ok(_) => {} // another URL with the same digest
                Err(e) => {
                    // Left aside, not fatal: the context is fetched again
                    // (or the admin puts it again).
                    eprintln!("rhizome: context cache file {}: {e}; ignored", dir.join(&name).display());
                    if let Some(file) = cache.disk.remove(&name) {
                        cache.disk_bytes -= file.bytes;
                    }
                }
            }
        }
        drop(cache);
        shipped().get(url).cloned()
    }

    /// The URLs of the shipped contexts and of the cached ones, with their
    /// sources, sorted. (Reads every cache file: for an admin's listing.)
    pub fn list(&self) -> Vec<(String, ContextSource)> {
        let mut out: Vec<(String, ContextSource)> = Vec::new();
        let (names, in_memory): (Vec<String>, Vec<(String, ContextSource)>) = {
            let cache = self.cache();
            (cache.disk.keys().cloned().collect(), cache.memory.iter().map(|(u, e)| (u.clone(), e.context.source)).collect())
        };
        out.extend(in_memory);
        if let Some(dir) = &self.dir {
            for name in names {
                if let Ok((url, context)) = std::fs::read(dir.join(&name)).map_err(|e| e.to_string()).and_then(|b| read_cache_file(&b)) {
                    if !out.iter().any(|(u, _)| *u == url) {
                        out.push((url, context.source));
                    }
                }
            }
        }
        out.extend(shipped().keys().map(|u| (u.to_string(), ContextSource::Shipped)));
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.as_str().cmp(b.1.as_str())));
        out
    }

    /// Adds (or replaces) the context document at `url` in the cache: an
    /// admin's durably at once (when the cache has a folder), a fetched one
    /// in memory until a write that uses it commits ([`Self::confirm`]).
    pub fn put(&self, url: &str, document: Value, source: ContextSource) -> Result<(), String> {
        check_url(url)?;
        validate_context_document(&document)?;
        let bytes = serde_json::to_vec(&document).map_err(|e| e.to_string())?;
        let context = Arc::new(RemoteContext::new(document, bytes, source));
        if source == ContextSource::Admin {
            self.write_file(url, &context)?;
        }
        self.cache().remember(url, context, source == ContextSource::Admin && self.dir.is_some());
        Ok(())
    }

    /// Writes the cache file of `url`, then evicts the least recently used
    /// fetched contexts past the disk's bounds.
    fn write_file(&self, url: &str, context: &RemoteContext) -> Result<(), String> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let file = serde_json::json!({ "format": CACHE_FORMAT, "url": url, "source": context.source.as_str(), "document": context.document });
        let text = serde_json::to_vec(&file).map_err(|e| e.to_string())?;
        let name = file_name(url);
        let path = dir.join(&name);
        let tmp = path.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|e| format!("writing {}: {e}", path.display()))?;
        let mut cache = self.cache();
        let used = cache.tick();
        if let Some(old) = cache.disk.insert(name.clone(), OnDisk { bytes: text.len() as u64, used, admin: Some(context.source == ContextSource::Admin) }) {
            cache.disk_bytes -= old.bytes;
        }
        cache.disk_bytes += text.len() as u64;
        while cache.disk.len() > MAX_CACHED_CONTEXTS || cache.disk_bytes > MAX_CACHED_CONTEXT_BYTES {
            let Some(oldest) = self.oldest_fetched_file(&mut cache, &name) else { break };
            let Some(gone) = cache.disk.remove(&oldest) else { break };
            cache.disk_bytes -= gone.bytes;
            // Evicted from memory too.
            let urls: Vec<String> = cache.memory.keys().filter(|u| file_name(u) == oldest).cloned().collect();
            for url in urls {
                cache.forget(&url);
            }
            let _ = std::fs::remove_file(dir.join(&oldest));
        }
        Ok(())
    }

    /// The least recently used file of a fetched context, other than
    /// `keep` (files not read since the start are read to know).
    fn oldest_fetched_file(&self, cache: &mut Cache, keep: &str) -> Option<String> {
        let dir = self.dir.as_ref()?;
        let mut by_age: Vec<(u64, String)> = cache.disk.iter().filter(|(n, f)| n.as_str() != keep && f.admin != Some(true)).map(|(n, f)| (f.used, n.clone())).collect();
        by_age.sort();
        for (_, name) in by_age {
            let admin = match cache.disk.get(&name).and_then(|f| f.admin) {
                Some(admin) => admin,
                None => {
                    let admin = std::fs::read(dir.join(&name)).ok().and_then(|b| read_cache_file(&b).ok()).is_some_and(|(_, c)| c.source == ContextSource::Admin);
                    if let Some(f) = cache.disk.get_mut(&name) {
                        f.admin = Some(admin);
                    }
                    admin
                }
            };
            if !admin {
                return Some(name);
            }
        }
        None
    }

    /// Keeps on disk the fetched contexts `doc` uses (a JSON-LD document
    /// or a context document whose write committed): until then a fetched
    /// context lives in memory only, so a refused write leaves nothing.
    pub fn confirm(&self, doc: &Value) {
        if self.dir.is_none() || self.fetcher.is_none() {
            return;
        }
        let Ok(resolved) = self.walk(doc, None, &mut |url| self.get(url).ok_or_else(|| self.missing(url))) else { return };
        for url in resolved.contexts.keys() {
            let pending = {
                let cache = self.cache();
                cache.memory.get(url).filter(|e| !e.on_disk && e.context.source == ContextSource::Fetched).map(|e| e.context.clone())
            };
            if let Some(context) = pending {
                match self.write_file(url, &context) {
                    Ok(()) => {
                        if let Some(e) = self.cache().memory.get_mut(url) {
                            e.on_disk = true;
                        }
                    }
                    Err(e) => eprintln!("rhizome: context cache: {e}"),
                }
            }
        }
    }

    /// Removes `url` from the cache; `false` if it was not cached (a
    /// shipped context cannot be removed).
    pub fn remove(&self, url: &str) -> Result<bool, String> {
        let name = file_name(url);
        let removed = {
            let mut cache = self.cache();
            let in_memory = cache.memory.contains_key(url);
            cache.forget(url);
            let on_disk = cache.disk.remove(&name);
            if let Some(f) = &on_disk {
                cache.disk_bytes -= f.bytes;
            }
            in_memory || on_disk.is_some()
        };
        if let (true, Some(dir)) = (removed, &self.dir) {
            let path = dir.join(&name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("removing {}: {e}", path.display())),
            }
        }
        Ok(removed)
    }

    /// Makes sure every remote context `doc` uses is in the cache,
    /// fetching the missing ones (before any lock is taken). `doc` is a
    /// JSON-LD document, or a context document.
    pub fn prefetch(&self, doc: &Value) -> Result<(), String> {
        self.walk(doc, None, &mut |url| match self.get(url) {
            Some(c) => Ok(c),
            None => match &self.fetcher {
                Some(fetcher) => {
                    let bytes = fetcher.fetch(url)?;
                    let document: Value = serde_json::from_slice(&bytes).map_err(|e| format!("remote context {url} is not JSON: {e}"))?;
                    validate_context_document(&document).map_err(|e| format!("remote context {url}: {e}"))?;
                    self.put(url, document, ContextSource::Fetched).map_err(|e| format!("remote context {url}: {e}"))?;
                    self.get(url).ok_or_else(|| format!("remote context {url} vanished from the cache"))
                }
                None => Err(self.missing(url)),
            },
        })
        .map(drop)
    }

    /// The remote contexts `doc` uses, from the cache only (no network).
    pub fn resolve(&self, doc: &Value) -> Result<Resolved, String> {
        self.walk(doc, None, &mut |url| self.get(url).ok_or_else(|| self.missing(url)))
    }

    fn missing(&self, url: &str) -> String {
        if self.fetcher.is_some() {
            format!("remote context {url} is not in the context cache and could not be fetched")
        } else {
            format!(
                "remote context {url} is not shipped with Rhizome nor in its context cache, and fetching remote contexts is off \
                 (serve --context-hosts); a server admin can add it with PUT /_contexts?url=..."
            )
        }
    }

    /// Every remote context reachable from `doc`, each obtained through
    /// `obtain`, within [`MAX_REMOTE_DEPTH`] and [`MAX_REMOTE_CONTEXTS`].
    fn walk(&self, doc: &Value, base: Option<&str>, obtain: &mut dyn FnMut(&str) -> Result<Arc<RemoteContext>, String>) -> Result<Resolved, String> {
        let mut resolved = Resolved::default();
        // (URL, depth)
        let mut pending: Vec<(String, usize)> = context_urls(doc, base).into_iter().map(|u| (u, 1)).collect();
        while let Some((url, depth)) = pending.pop() {
            if resolved.contexts.contains_key(&url) {
                continue;
            }
            if depth > MAX_REMOTE_DEPTH {
                return Err(format!("remote context {url} is nested {depth} deep in remote contexts; the limit is {MAX_REMOTE_DEPTH}"));
            }
            if resolved.contexts.len() >= MAX_REMOTE_CONTEXTS {
                return Err(format!("a document may use at most {MAX_REMOTE_CONTEXTS} remote contexts (reached at {url})"));
            }
            let context = obtain(&url)?;
            let inner = context_urls(&Value::Object(Map::from_iter([("@context".to_owned(), context.context().clone())])), Some(&url));
            pending.extend(inner.into_iter().map(|u| (u, depth + 1)));
            resolved.contexts.insert(url, context);
        }
        Ok(resolved)
    }
}

/// The remote contexts of one document, resolved (read-only).
#[derive(Clone, Debug, Default)]
pub struct Resolved {
    contexts: HashMap<String, Arc<RemoteContext>>,
}

impl Resolved {
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }

    /// The term definitions of these contexts together, when every one is
    /// plain (see [`RemoteContext`]).
    pub(crate) fn plain_terms(&self) -> Option<usize> {
        self.contexts.values().try_fold(0usize, |sum, c| c.plain_terms.map(|t| sum.saturating_add(t)))
    }

    /// Checks `doc` against the bounds of [`crate::jsonld_limits`] as
    /// oxjsonld will process it, with these remote contexts. Plain ones
    /// (checked on their own when cached) only add their terms to the
    /// document's count: they hold no scoped contexts, so they add no
    /// copies, and their chains (at most [`crate::MAX_CONTEXT_DEPTH`]) add
    /// at most that much to the depth where they are used, far within the
    /// stack JSON-LD runs on. Others are written in place and the whole is
    /// checked (slower: schema.org's 2,845 terms took 3.5 ms that way).
    pub fn check_limits(&self, doc: &Value) -> Result<(), String> {
        self.measure(doc).map(|_| ())
    }

    /// [`Resolved::check_limits`], answering how deep the document's
    /// processing goes. Remote contexts count as deep: only a document
    /// whose contexts are all in it is measured whole.
    pub(crate) fn measure(&self, doc: &Value) -> Result<crate::jsonld_limits::Depths, String> {
        use crate::jsonld_limits::{measure_json_ld, Depths};
        if self.contexts.is_empty() {
            return measure_json_ld(doc, 0);
        }
        let deep = |_| Depths { json: usize::MAX, context: usize::MAX, scoped: true };
        match self.plain_terms() {
            Some(terms) => measure_json_ld(doc, terms).map(deep),
            None => measure_json_ld(&self.inline(doc), 0).map(deep),
        }
    }

    /// The `@context` value of the remote context at `url`.
    pub(crate) fn context(&self, url: &str) -> Option<&Value> {
        self.contexts.get(url).map(|c| c.context())
    }

    /// The document with every remote context written in place (for the
    /// bounds of [`crate::jsonld_limits`], which must see what oxjsonld will
    /// process): a URL in an `@context` becomes that context's value, and
    /// `@import` merges the imported context under the importing one.
    pub(crate) fn inline(&self, doc: &Value) -> Value {
        self.inline_at(doc, 0, false)
    }

    fn inline_at(&self, value: &Value, depth: usize, in_context: bool) -> Value {
        match value {
            Value::Object(members) => {
                let mut out = Map::new();
                if in_context {
                    if let Some(Value::String(url)) = members.get("@import") {
                        if let (Some(Value::Object(imported)), true) = (self.context(url), depth < MAX_REMOTE_DEPTH) {
                            for (k, v) in imported {
                                out.insert(k.clone(), self.inline_at(v, depth + 1, true));
                            }
                        }
                    }
                }
                for (k, v) in members {
                    if in_context && k == "@import" {
                        continue;
                    }
                    let v = if k == "@context" { self.inline_context(v, depth) } else { self.inline_at(v, depth, in_context && !k.starts_with('@')) };
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| self.inline_at(i, depth, in_context)).collect()),
            other => other.clone(),
        }
    }

    /// An `@context` value with its URLs replaced by their contexts
    /// (arrays flattened, as context processing reads them in order).
    fn inline_context(&self, context: &Value, depth: usize) -> Value {
        let items: Vec<&Value> = match context {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        let mut out = Vec::new();
        for item in items {
            match item {
                Value::String(url) => match (self.context(url), depth < MAX_REMOTE_DEPTH) {
                    (Some(remote), true) => match self.inline_context(remote, depth + 1) {
                        Value::Array(inner) => out.extend(inner),
                        one => out.push(one),
                    },
                    _ => out.push(item.clone()),
                },
                other => out.push(self.inline_at(other, depth, true)),
            }
        }
        if out.len() == 1 {
            out.pop().unwrap_or(Value::Null)
        } else {
            Value::Array(out)
        }
    }

    /// The bytes of these contexts by URL, for a JSON-LD parser's document
    /// loader: it never fetches, and a URL not resolved here is an error
    /// naming it.
    pub fn documents(
        &self,
    ) -> impl Fn(&str) -> Result<Vec<u8>, String> + Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe + 'static {
        let bytes: Arc<HashMap<String, Arc<Vec<u8>>>> = Arc::new(self.contexts.iter().map(|(u, c)| (u.clone(), c.bytes.clone())).collect());
        move |url: &str| bytes.get(url).map(|b| b.as_ref().clone()).ok_or_else(|| format!("remote context {url} is not in the context cache"))
    }

    /// oxjsonld's document loader over these contexts ([`Self::documents`]).
    pub(crate) fn loader(
        &self,
    ) -> impl Fn(&str, &oxjsonld::JsonLdLoadDocumentOptions) -> Result<oxjsonld::JsonLdRemoteDocument, Box<dyn std::error::Error + Send + Sync>>
           + Send
           + Sync
           + std::panic::UnwindSafe
           + std::panic::RefUnwindSafe
           + 'static {
        let documents = self.documents();
        move |url: &str, _options: &oxjsonld::JsonLdLoadDocumentOptions| {
            Ok(oxjsonld::JsonLdRemoteDocument { document: documents(url)?, document_url: url.to_owned() })
        }
    }
}

/// The absolute URLs of the remote contexts `doc` names directly: strings
/// in an `@context` value (alone or in an array, at any level, scoped
/// contexts included) and `@import` values, resolved against `base` when
/// relative (a context's own URL; a relative URL in a document is left for
/// oxjsonld to refuse, since it would name this server).
pub fn context_urls(doc: &Value, base: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(doc, false)];
    let absolute = |s: &str| -> Option<String> {
        match base.and_then(|b| oxiri::Iri::parse(b.to_owned()).ok()) {
            Some(b) => b.resolve(s).ok().map(|i| i.into_inner()),
            None => oxiri::Iri::parse(s.to_owned()).ok().map(|i| i.into_inner()),
        }
    };
    while let Some((value, in_context)) = stack.pop() {
        match value {
            Value::Object(members) => {
                for (k, v) in members {
                    match (k.as_str(), v) {
                        ("@context", Value::String(s)) => out.extend(absolute(s)),
                        ("@context", Value::Array(items)) => {
                            for item in items {
                                match item {
                                    Value::String(s) => out.extend(absolute(s)),
                                    other => stack.push((other, true)),
                                }
                            }
                        }
                        ("@context", other) => stack.push((other, true)),
                        ("@import", Value::String(s)) if in_context => out.extend(absolute(s)),
                        (_, other) => stack.push((other, in_context)),
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, in_context))),
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The term definitions of a plain context (see [`RemoteContext`]).
fn plain_terms(context: &Value) -> Option<usize> {
    let items: Vec<&Value> = match context {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    let mut terms = 0;
    for item in items {
        match item {
            Value::Null => {}
            Value::Object(members) => {
                if members.contains_key("@import") {
                    return None;
                }
                for (key, definition) in members {
                    if definition.as_object().is_some_and(|d| d.contains_key("@context")) {
                        return None;
                    }
                    if !key.starts_with('@') {
                        terms += 1;
                    }
                }
            }
            _ => return None,
        }
    }
    Some(terms)
}

/// Only http(s) URLs name remote contexts here.
fn check_url(url: &str) -> Result<(), String> {
    let iri = oxiri::Iri::parse(url.to_owned()).map_err(|e| format!("{url:?} is not an absolute URL: {e}"))?;
    match iri.scheme() {
        "http" | "https" => Ok(()),
        other => Err(format!("{url}: remote contexts are http or https URLs, not {other}:")),
    }
}

/// A cache file's name: the MD5 of its URL (URLs can be longer than a
/// file name, and hold any character); the URL itself is inside.
fn file_name(url: &str) -> String {
    use md5::Digest;
    let digest = md5::Md5::digest(url.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

fn read_cache_file(bytes: &[u8]) -> Result<(String, RemoteContext), String> {
    let file: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    match file.get("format").and_then(Value::as_u64) {
        Some(CACHE_FORMAT) => {}
        other => return Err(format!("unknown format {other:?} (this version reads format {CACHE_FORMAT})")),
    }
    let url = file.get("url").and_then(Value::as_str).ok_or("no url")?.to_owned();
    let source = match file.get("source").and_then(Value::as_str) {
        Some("admin") => ContextSource::Admin,
        _ => ContextSource::Fetched,
    };
    let document = file.get("document").cloned().ok_or("no document")?;
    validate_context_document(&document)?;
    let bytes = serde_json::to_vec(&document).map_err(|e| e.to_string())?;
    Ok((url, RemoteContext::new(document, bytes, source)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shipped_contexts_are_context_documents_within_bounds() {
        for (urls, bytes) in SHIPPED {
            let doc: Value = serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{}: {e}", urls[0]));
            validate_context_document(&doc).unwrap_or_else(|e| panic!("{}: {e}", urls[0]));
            // oxjsonld reads a document using it.
            let probe = json!({ "@context": urls[0], "@id": "urn:x:s", "urn:x:p": "v" });
            let store = ContextStore::offline();
            let resolved = store.resolve(&probe).unwrap();
            crate::jsonld_limits::check_json_ld(&resolved.inline(&probe)).unwrap_or_else(|e| panic!("{}: {e}", urls[0]));
            resolved.check_limits(&probe).unwrap_or_else(|e| panic!("{}: {e}", urls[0]));
            let text = probe.to_string();
            let quads: Result<Vec<_>, _> = crate::jsonld_limits::on_known_stack(|| {
                oxjsonld::JsonLdParser::new().for_slice(text.as_bytes()).with_load_document_callback(resolved.loader()).collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
            assert_eq!(quads.unwrap_or_else(|e| panic!("{}: {e}", urls[0])).len(), 1, "{}", urls[0]);
        }
    }

    #[test]
    fn urls_are_found_in_contexts_arrays_scoped_contexts_and_imports() {
        let doc = json!({
            "@context": ["https://a.example/c", {"t": {"@id": "urn:t", "@context": "https://b.example/c"}}],
            "n": {"@context": "rel", "x": 1},
        });
        assert_eq!(context_urls(&doc, None), vec!["https://a.example/c", "https://b.example/c"]);
        let ctx = json!({"@context": {"@import": "other.jsonld"}});
        assert_eq!(context_urls(&ctx, Some("http://h.example/dir/c.jsonld")), vec!["http://h.example/dir/other.jsonld"]);
    }

    #[test]
    fn a_missing_context_is_named_and_a_cycle_or_chain_is_bounded() {
        let store = ContextStore::offline();
        let err = store.resolve(&json!({"@context": "http://nowhere.example/c"})).unwrap_err();
        assert!(err.contains("http://nowhere.example/c"), "{err}");
        // A cycle resolves once per URL.
        store.put("http://h.example/a", json!({"@context": ["http://h.example/b", {"x": "urn:x"}]}), ContextSource::Admin).unwrap();
        store.put("http://h.example/b", json!({"@context": ["http://h.example/a"]}), ContextSource::Admin).unwrap();
        assert_eq!(store.resolve(&json!({"@context": "http://h.example/a"})).unwrap().contexts.len(), 2);
        // A chain longer than the bound is refused.
        for i in 0..=MAX_REMOTE_DEPTH {
            store.put(&format!("http://h.example/chain{i}"), json!({"@context": format!("http://h.example/chain{}", i + 1)}), ContextSource::Admin).unwrap();
        }
        let err = store.resolve(&json!({"@context": "http://h.example/chain0"})).unwrap_err();
        assert!(err.contains("limit"), "{err}");
    }

    #[test]
    fn remote_terms_count_against_the_documents_bounds() {
        let store = ContextStore::offline();
        let big: Map<String, Value> = (0..6000).map(|i| (format!("t{i}"), Value::String(format!("urn:t:{i}")))).collect();
        let big = json!({ "@context": big });
        store.put("http://h.example/a", big.clone(), ContextSource::Admin).unwrap();
        store.put("http://h.example/b", big, ContextSource::Admin).unwrap();
        let one = json!({"@context": "http://h.example/a", "t1": "x"});
        store.resolve(&one).unwrap().check_limits(&one).unwrap();
        let two = json!({"@context": ["http://h.example/a", "http://h.example/b"], "t1": "x"});
        let err = store.resolve(&two).unwrap().check_limits(&two).unwrap_err();
        assert!(err.contains("term definitions"), "{err}");
        // A context with scoped contexts is checked written in place: its
        // scoped uses in the document count.
        store.put("http://h.example/s", json!({"@context": {"s": {"@id": "urn:s", "@context": {"x": "urn:x"}}}}), ContextSource::Admin).unwrap();
        let uses: Vec<Value> = (0..100).map(|_| json!({"s": {"x": 1}})).collect();
        let doc = json!({"@context": "http://h.example/s", "@graph": uses});
        let resolved = store.resolve(&doc).unwrap();
        assert_eq!(resolved.plain_terms(), None);
        resolved.check_limits(&doc).unwrap();
    }

    /// Serves a context of about 1 MiB for any URL.
    struct LargeContexts;

    impl ContextFetcher for LargeContexts {
        fn fetch(&self, url: &str) -> Result<Vec<u8>, String> {
            let pad = "x".repeat(1 << 20);
            Ok(serde_json::to_vec(&json!({ "@context": { "t": format!("urn:{url}:{pad}") } })).unwrap())
        }
    }

    #[test]
    fn the_cache_stays_within_its_bounds_and_keeps_an_admins_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContextStore::open(dir.path(), Some(Box::new(LargeContexts))).unwrap();
        store.put("http://h.example/admin", json!({"@context": {"a": "urn:a"}}), ContextSource::Admin).unwrap();
        let disk = |dir: &Path| -> u64 { std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum() };
        for i in 0..100 {
            let doc = json!({ "@context": format!("http://h.example/c{i}") });
            store.prefetch(&doc).unwrap();
            // Fetched, not yet used by a committed write: memory only.
            if i == 0 {
                assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
            }
            store.confirm(&doc);
            assert!(disk(dir.path()) <= MAX_CACHED_CONTEXT_BYTES + (2 << 20), "{} bytes on disk after {i}", disk(dir.path()));
            assert!(store.cache().memory_bytes <= MAX_CONTEXT_MEMORY_BYTES, "{} bytes in memory", store.cache().memory_bytes);
        }
        assert!(store.get("http://h.example/c99").is_some(), "the latest is kept");
        assert!(store.get("http://h.example/admin").is_some(), "an admin's context is never evicted");
        drop(store);
        // Reopened: nothing read until used; the evicted ones are gone.
        let store = ContextStore::open(dir.path(), None).unwrap();
        assert_eq!(store.cache().memory_bytes, 0);
        assert!(store.get("http://h.example/c0").is_none());
        assert!(store.get("http://h.example/c99").is_some());
        assert!(store.get("http://h.example/admin").is_some());
    }

    #[test]
    fn the_cache_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContextStore::open(dir.path(), None).unwrap();
        store.put("http://h.example/c", json!({"@context": {"n": "urn:n"}}), ContextSource::Admin).unwrap();
        drop(store);
        let store = ContextStore::open(dir.path(), None).unwrap();
        assert_eq!(store.get("http://h.example/c").unwrap().context(), &json!({"n": "urn:n"}));
        assert!(store.remove("http://h.example/c").unwrap());
        let store = ContextStore::open(dir.path(), None).unwrap();
        assert!(store.get("http://h.example/c").is_none());
    }
}
