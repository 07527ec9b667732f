//! A database: one store holding documents and their graphs, its counters,
//! `_security`, `_revs_limit` and `_local` documents.

use crate::keys::{self, meta, DocInfo, BODIES, DB_META, DOCS, LOCAL};
use crate::{DocError, GraphProjector, NoProjection, Result};
use rhizome_rdf::{DatasetMode, Store};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Arc;

/// CouchDB's default `_revs_limit`
/// (https://docs.couchdb.org/en/stable/api/database/misc.html#db-revs-limit).
pub const DEFAULT_REVS_LIMIT: u64 = 1000;

pub struct Database {
    pub(crate) store: Store,
    pub(crate) projector: Arc<dyn GraphProjector>,
    /// True while the database has never had a design document since it
    /// was opened (checked at open; any write of a `_design/` id clears
    /// it for good): every write asks for the validation functions, and
    /// their range read was 7% of a server's work on document PUTs.
    no_design_docs: std::sync::atomic::AtomicBool,
    /// Created partitioned (`crate::partition`): fixed once set.
    pub(crate) partitioned: std::sync::atomic::AtomicBool,
    /// Decoded records of documents the writer rewrites often
    /// (`hot_docs.rs`).
    pub(crate) hot_docs: crate::hot_docs::HotDocs,
}

/// What `GET /{db}` reports.
/// What a compaction removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Bodies of revisions that were no longer leaves.
    pub bodies: u64,
    /// Attachment data no remaining revision referred to.
    pub attachments: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbInfo {
    pub update_seq: u64,
    pub doc_count: u64,
    pub doc_del_count: u64,
    pub bytes_on_disk: u64,
}

/// Whether a name is a valid CouchDB database name: `^[a-z][a-z0-9_$()+/-]*$`
/// (https://docs.couchdb.org/en/stable/api/database/common.html#put--db),
/// plus the system databases that start with `_`.
pub fn valid_db_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some('a'..='z') => chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '$' | '(' | ')' | '+' | '/' | '-')),
        _ => matches!(name, "_users" | "_replicator"),
    }
}

impl Database {
    /// Opens (creating if missing) the database stored at `path`.
    pub fn open(path: &Path, projector: Arc<dyn GraphProjector>) -> Result<Database> {
        let store = Store::open_or_create(path, Some(DatasetMode::Union))?;
        Self::init(store, projector, true)
    }

    /// Opens the database stored at `path` for reading only
    /// (`Store::open_read_only`: nothing written, writers kept out while
    /// it is open); it must exist.
    pub fn open_read_only(path: &Path, projector: Arc<dyn GraphProjector>) -> Result<Database> {
        Self::init(Store::open_read_only(path)?, projector, false)
    }

    /// A database in memory (tests).
    pub fn memory() -> Database {
        Self::memory_with(Arc::new(NoProjection))
    }

    /// A database in memory with a projector (tests).
    pub fn memory_with(projector: Arc<dyn GraphProjector>) -> Database {
        Self::init(Store::memory(DatasetMode::Union), projector, true).expect("a memory database opens")
    }

    fn init(store: Store, projector: Arc<dyn GraphProjector>, writable: bool) -> Result<Database> {
        let snapshot = store.snapshot()?;
        let no_design_docs = {
            let mut cursor = snapshot.kv().cursor(keys::DOCS, b"_design/", Some(b"_design0"));
            cursor.seek_first();
            let none = !cursor.valid();
            cursor.status()?;
            none
        };
        let partitioned = snapshot.kv().get(DB_META, meta::PARTITIONED)?.is_some();
        let db = Database { store, projector, no_design_docs: no_design_docs.into(), partitioned: partitioned.into(), hot_docs: Default::default() };
        match snapshot.kv().get(DB_META, meta::FORMAT_VERSION)? {
            Some(v) => {
                let found = keys::u64_value(Some(v), "format_version")?;
                if !(keys::FORMAT_VERSION_1..=keys::FORMAT_VERSION).contains(&found) {
                    return Err(DocError::Corrupt(format!("document format {found}, expected {}", keys::FORMAT_VERSION)));
                }
                if found < keys::FORMAT_VERSION && writable {
                    // Formats 1 and 2 are read as they are: only the number
                    // moves, so that an older build refuses the database
                    // once its records may hold their bodies (its compaction
                    // would drop attachments only those bodies name).
                    let mut txn = db.store.transaction()?;
                    txn.kv_mut().put(DB_META, meta::FORMAT_VERSION, &keys::FORMAT_VERSION.to_be_bytes());
                    txn.commit()?;
                }
            }
            None => {
                let mut txn = db.store.transaction()?;
                txn.kv_mut().put(DB_META, meta::FORMAT_VERSION, &keys::FORMAT_VERSION.to_be_bytes());
                txn.kv_mut().put(DB_META, meta::REVS_LIMIT, &DEFAULT_REVS_LIMIT.to_be_bytes());
                txn.commit()?;
            }
        }
        Ok(db)
    }

    /// Whether the database may hold design documents: `false` means it
    /// has had none since it was opened, so there are no validation
    /// functions or views to look for.
    pub fn may_have_design_docs(&self) -> bool {
        !self.no_design_docs.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Called before any write of the document `id`.
    pub(crate) fn writing(&self, id: &str) {
        if id.starts_with("_design/") {
            self.no_design_docs.store(false, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The store under the documents (for the RDF views of the database).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The IRI of a document's graph, if this database's documents have
    /// graphs (for indexes kept over them).
    pub fn doc_graph_iri(&self, doc_id: &str) -> Option<String> {
        self.projector.graph_iri(doc_id)
    }

    pub fn info(&self) -> Result<DbInfo> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let get = |k: &[u8]| -> Result<u64> { keys::u64_value(kv.get(DB_META, k)?, "counter") };
        Ok(DbInfo {
            update_seq: get(meta::UPDATE_SEQ)?,
            doc_count: get(meta::DOC_COUNT)?,
            doc_del_count: get(meta::DOC_DEL_COUNT)?,
            bytes_on_disk: self.store.path().map(dir_size).unwrap_or(0),
        })
    }

    pub fn update_seq(&self) -> Result<u64> {
        let s = self.store.snapshot()?;
        keys::u64_value(s.kv().get(DB_META, meta::UPDATE_SEQ)?, "update_seq")
    }

    pub fn revs_limit(&self) -> Result<u64> {
        let s = self.store.snapshot()?;
        Ok(keys::u64_value(s.kv().get(DB_META, meta::REVS_LIMIT)?, "revs_limit")?.max(1))
    }

    pub fn set_revs_limit(&self, limit: u64) -> Result<()> {
        if limit == 0 {
            return Err(DocError::BadRequest("revs_limit must be a positive integer".into()));
        }
        let mut txn = self.store.transaction()?;
        txn.kv_mut().put(DB_META, meta::REVS_LIMIT, &limit.to_be_bytes());
        Ok(txn.commit()?)
    }

    /// The `_security` object. Until one is set, CouchDB 3's default for
    /// new databases (`[couchdb] default_security = admin_only`): members
    /// and admins are the role `_admin`, so only server admins get in. A
    /// `_security` set with nobody in `members` makes the database public,
    /// as in CouchDB.
    pub fn security(&self) -> Result<Value> {
        let s = self.store.snapshot()?;
        match s.kv().get(DB_META, meta::SECURITY)? {
            Some(v) => serde_json::from_slice(&v).map_err(|e| DocError::Corrupt(format!("security object: {e}"))),
            None => Ok(json!({ "members": { "roles": ["_admin"] }, "admins": { "roles": ["_admin"] } })),
        }
    }

    pub fn set_security(&self, security: &Value) -> Result<()> {
        validate_security(security)?;
        let mut txn = self.store.transaction()?;
        txn.kv_mut().put(DB_META, meta::SECURITY, security.to_string().as_bytes());
        Ok(txn.commit()?)
    }

    /// CouchDB's compaction: drops the bodies of revisions that are no
    /// longer leaves and the attachment data no remaining body refers to,
    /// then lets the engine reclaim the space. Writes to this database wait
    /// while the old bodies are found (one transaction, so a write cannot
    /// refer to attachment data as it goes).
    pub fn compact(&self) -> Result<Compacted> {
        let mut txn = self.store.transaction()?;
        let mut dead_bodies = Vec::new();
        let mut referenced = std::collections::HashSet::new();
        {
            let kv = txn.kv();
            let mut info: Option<(String, Option<DocInfo>)> = None;
            let mut cursor = kv.cursor(BODIES, &[], None);
            cursor.seek(&[]);
            while cursor.valid() {
                let key = cursor.key();
                let (id, rev) = keys::parse_body_key(key).ok_or_else(|| DocError::Corrupt(format!("a body key {key:?}")))?;
                if info.as_ref().is_none_or(|(i, _)| i != id) {
                    info = Some((id.to_owned(), crate::read::doc_info(kv, id)?));
                }
                let live = info.as_ref().and_then(|(_, i)| i.as_ref()).is_some_and(|i| i.tree.is_leaf(&rev));
                if live {
                    let body: Value = serde_json::from_slice(cursor.value()).map_err(|e| DocError::Corrupt(format!("body of {id} {rev}: {e}")))?;
                    for att in body.get("_attachments").and_then(Value::as_object).into_iter().flat_map(|a| a.values()) {
                        if let Some(d) = att.get("digest").and_then(Value::as_str) {
                            referenced.insert(d.to_owned());
                        }
                    }
                } else {
                    dead_bodies.push(key.to_vec());
                }
                cursor.next();
            }
            cursor.status()?;
            // Winners' bodies kept in their records are leaves too.
            let mut cursor = kv.cursor(DOCS, &[], None);
            cursor.seek_first();
            while cursor.valid() {
                let header = DocInfo::header(cursor.value()).ok_or_else(|| DocError::Corrupt(format!("document info of {:?}", String::from_utf8_lossy(cursor.key()))))?;
                if let Some(body) = header.body.filter(|b| names_attachments(b)) {
                    let body: Value = serde_json::from_slice(body).map_err(|e| DocError::Corrupt(format!("body of {:?}: {e}", String::from_utf8_lossy(cursor.key()))))?;
                    for att in body.get("_attachments").and_then(Value::as_object).into_iter().flat_map(|a| a.values()) {
                        if let Some(d) = att.get("digest").and_then(Value::as_str) {
                            referenced.insert(d.to_owned());
                        }
                    }
                }
                cursor.next();
            }
            cursor.status()?;
        }
        let mut dead_attachments = Vec::new();
        {
            crate::attachment_data::digests(txn.kv(), &mut |digest| {
                if !referenced.contains(digest) {
                    dead_attachments.push(digest.to_owned());
                }
            })?;
        }
        for key in &dead_bodies {
            txn.kv_mut().delete(BODIES, key);
        }
        for digest in &dead_attachments {
            crate::attachment_data::delete(txn.kv_mut(), digest)?;
        }
        txn.commit()?;
        self.store.compact()?;
        Ok(Compacted { bodies: dead_bodies.len() as u64, attachments: dead_attachments.len() as u64 })
    }

    /// A `_local` document (`id` includes the `_local/` prefix). Local
    /// documents are not replicated, have no history and no `_changes`
    /// entry; their `_rev` is `0-N` (CouchDB's local revision counter).
    pub fn get_local(&self, id: &str) -> Result<Map<String, Value>> {
        let s = self.store.snapshot()?;
        match s.kv().get(LOCAL, id.as_bytes())? {
            Some(v) => serde_json::from_slice(&v).map_err(|e| DocError::Corrupt(format!("local document {id}: {e}"))),
            None => Err(DocError::NotFound("missing")),
        }
    }

    /// Where this database's documents resolve remote JSON-LD contexts
    /// (`None`: its documents are not RDF).
    pub fn contexts(&self) -> Option<&crate::ContextStore> {
        self.projector.contexts()
    }

    /// Writes (or, with `_deleted`, removes) a `_local` document; returns
    /// the new `_rev`. As CouchDB keeps them
    /// (`couch_db_updater:increment_local_doc_revs`): the revision is
    /// `0-N`, one more than the revision given (`0-1` without one), a
    /// removal answers `0-0`, and only the body is kept (no history, no
    /// attachments). Unlike CouchDB 3, which lets the last writer win, a
    /// revision given for a document that exists must be its current one
    /// (409 otherwise, as PouchDB's own local documents and CouchDB 1.x);
    /// after a removal the document can be put again with or without the
    /// revision it had. A removal without a revision removes whatever is
    /// there.
    ///
    /// As a database admin (in-process callers); see
    /// [`Database::put_local_as`].
    pub fn put_local(&self, id: &str, doc: Map<String, Value>) -> Result<String> {
        self.put_local_as(id, doc, crate::Writer::Admin)
    }

    /// [`Database::put_local`] by `writer`: the database's default context
    /// (`_local/rhizome-context`) is its admins' (`crate::rights`).
    pub fn put_local_as(&self, id: &str, doc: Map<String, Value>, writer: crate::Writer) -> Result<String> {
        crate::rights::check_local(id, writer)?;
        if let Some(bad) = doc.keys().find(|k| k.starts_with('_') && !LOCAL_MEMBERS.contains(&k.as_str())) {
            return Err(DocError::Validation(format!("Bad special document member: {bad}")));
        }
        let deleted = match doc.get("_deleted") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(DocError::Validation("_deleted must be a boolean".into())),
        };
        if !deleted {
            self.projector.check_local(id, &doc).map_err(|reason| DocError::Validation(format!("{id}: {reason}")))?;
        }
        let given = match doc.get("_rev") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => Some(r.strip_prefix("0-").and_then(|n| n.parse::<u64>().ok()).ok_or_else(|| DocError::BadRequest("Invalid rev format".into()))?),
            Some(_) => return Err(DocError::BadRequest("Invalid rev format".into())),
        };
        // A default context's remote contexts are kept on disk once it is
        // written (`ContextStore::confirm`).
        let context = if deleted { None } else { doc.get("@context").cloned() };
        let mut txn = self.store.transaction()?;
        let current: Option<Map<String, Value>> = match txn.kv().get(LOCAL, id.as_bytes())? {
            Some(v) => Some(serde_json::from_slice(&v).map_err(|e| DocError::Corrupt(format!("local document {id}: {e}")))?),
            None => None,
        };
        let current_rev = current.as_ref().and_then(|c| c.get("_rev")).and_then(Value::as_str).and_then(|r| r.strip_prefix("0-")).and_then(|n| n.parse::<u64>().ok());
        if let Some(current_rev) = current_rev {
            if given.is_some_and(|g| g != current_rev) || (given.is_none() && !deleted) {
                return Err(DocError::Conflict);
            }
        }
        let rev = if deleted {
            if current.is_none() {
                return Err(DocError::NotFound("missing"));
            }
            txn.kv_mut().delete(LOCAL, id.as_bytes());
            "0-0".to_owned()
        } else {
            let rev = format!("0-{}", given.unwrap_or(0) + 1);
            let mut body: Map<String, Value> = doc.into_iter().filter(|(k, _)| !k.starts_with('_')).collect();
            body.insert("_id".into(), Value::String(id.to_owned()));
            body.insert("_rev".into(), Value::String(rev.clone()));
            txn.kv_mut().put(LOCAL, id.as_bytes(), Value::Object(body).to_string().as_bytes());
            rev
        };
        txn.commit()?;
        if let (Some(context), Some(contexts)) = (context, self.projector.contexts()) {
            contexts.confirm(&serde_json::json!({ "@context": context }));
        }
        Ok(rev)
    }
}

/// The special members a `_local` document may carry: all but `_id`,
/// `_rev` and `_deleted` are ignored, as CouchDB ignores them.
const LOCAL_MEMBERS: &[&str] = &["_id", "_rev", "_deleted", "_attachments", "_revisions", "_revs_info", "_conflicts", "_deleted_conflicts", "_local_seq"];

fn validate_security(security: &Value) -> Result<()> {
    let Some(obj) = security.as_object() else {
        return Err(DocError::BadRequest("the security object must be a JSON object".into()));
    };
    for section in ["admins", "members"] {
        let Some(part) = obj.get(section) else { continue };
        let Some(part) = part.as_object() else {
            return Err(DocError::BadRequest(format!("{section} must be an object")));
        };
        for list in ["names", "roles"] {
            match part.get(list) {
                None => {}
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
                Some(_) => return Err(DocError::BadRequest(format!("{section}.{list} must be an array of strings"))),
            }
        }
    }
    Ok(())
}

fn dir_size(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// Whether a stored body's JSON may name attachments: false when the
/// member's key is nowhere in it (serde_json writes that key without
/// escapes), so compaction parses only the bodies that may.
fn names_attachments(json: &[u8]) -> bool {
    const KEY: &[u8] = b"\"_attachments\"";
    json.windows(KEY.len()).any(|w| w == KEY)
}
