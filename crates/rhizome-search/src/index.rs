//! Nouveau index files, kept up to the database's sequence.
//!
//! An index lives in `DIR/search/<signature>/` of its database's folder
//! (so it goes with the database), as a tantivy index of one document per
//! database document: its id, then every field the index function gave, in
//! one JSON field per kind (a text field per analyzer, `string`, `double`,
//! `stored`), so that an index function may name any fields without a
//! schema written first. Changed documents are indexed in batches
//! ([`crate::build`]); a tantivy commit, of whole batches, records in its
//! payload the sequence reached and the kind of every field seen: a commit
//! is atomic, so a process killed mid-build restarts from the last commit,
//! and a query never sees half a batch.

use crate::analyzers;
use crate::build;
use crate::definition::NouveauDef;
use crate::{Result, SearchError};
use rhizome_docs::keys::{self, DocInfo, DB_META};
use rhizome_docs::{Database, DocError, ReadOptions};
use rhizome_kv::KvRead;
use rhizome_views::js::{FnId, Limits, Sandbox};
use rhizome_views::tasks::IndexerTask;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use tantivy::schema::{Field, IndexRecordOption, JsonObjectOptions, OwnedValue, Schema, TextFieldIndexing, FAST, STORED, STRING};
use tantivy::store::Compressor;
use tantivy::{Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, TantivyDocument};

/// Bytes of memory the writer of a compaction may use before it writes a
/// segment.
const WRITER_BYTES: usize = 64 << 20;

/// The kinds of fields Nouveau has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    String,
    Double,
    Stored,
}

impl FieldKind {
    fn parse(s: &str) -> Option<FieldKind> {
        Some(match s {
            "text" => FieldKind::Text,
            "string" => FieldKind::String,
            "double" => FieldKind::Double,
            "stored" => FieldKind::Stored,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::String => "string",
            FieldKind::Double => "double",
            FieldKind::Stored => "stored",
        }
    }
}

/// The tantivy fields of an index.
pub(crate) struct Fields {
    pub id: Field,
    /// A JSON text field per analyzer, by analyzer name.
    pub text: Vec<(String, Field)>,
    pub string: Field,
    pub double: Field,
    pub stored: Field,
}

impl Fields {
    pub fn text_for(&self, analyzer: &str) -> Field {
        self.text.iter().find(|(a, _)| a == analyzer).map(|(_, f)| *f).unwrap_or(self.text[0].1)
    }
}

/// What a commit's payload keeps: the sequence reached, the fields seen.
#[derive(Clone, Debug, Default)]
pub struct IndexState {
    pub seq: u64,
    pub kinds: BTreeMap<String, FieldKind>,
}

impl IndexState {
    fn from_payload(payload: Option<&str>) -> IndexState {
        let Some(v) = payload.and_then(|p| serde_json::from_str::<Value>(p).ok()) else { return IndexState::default() };
        let kinds = v["fields"].as_object().map(|m| m.iter().filter_map(|(k, t)| Some((k.clone(), FieldKind::parse(t.as_str()?)?))).collect()).unwrap_or_default();
        IndexState { seq: v["seq"].as_u64().unwrap_or(0), kinds }
    }

    fn to_payload(&self) -> String {
        let fields: Map<String, Value> = self.kinds.iter().map(|(k, t)| (k.clone(), Value::from(t.name()))).collect();
        json!({ "seq": self.seq, "fields": fields }).to_string()
    }
}

/// One open index: its files, a reader, and its state.
pub struct IndexFiles {
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    pub(crate) state: Mutex<IndexState>,
    /// Held by the one refresh at a time that writes.
    writing: Mutex<()>,
    /// The folder's inode when opened: a database deleted and created
    /// again has a new folder, and its index is opened anew.
    inode: u64,
    pub(crate) def: NouveauDef,
}

static OPEN: Mutex<Option<HashMap<PathBuf, Arc<IndexFiles>>>> = Mutex::new(None);

/// The folder holding a database's full-text indexes.
pub fn search_dir(db: &Database) -> Result<PathBuf> {
    let path = db.store().path().ok_or_else(|| SearchError::Index("full-text indexes need a database kept on disk".into()))?;
    Ok(path.join("search"))
}

fn schema(def: &NouveauDef) -> Schema {
    let mut b = Schema::builder();
    b.add_text_field("_id", STRING | STORED | FAST);
    for a in def.analyzers() {
        let indexing = TextFieldIndexing::default().set_tokenizer(&analyzers::tokenizer_name(a)).set_index_option(IndexRecordOption::WithFreqsAndPositions);
        b.add_json_field(&format!("text_{a}"), JsonObjectOptions::default().set_indexing_options(indexing));
    }
    let raw = TextFieldIndexing::default().set_tokenizer("raw").set_index_option(IndexRecordOption::WithFreqs);
    b.add_json_field("string", JsonObjectOptions::default().set_indexing_options(raw.clone()).set_fast(Some("raw")));
    b.add_json_field("double", JsonObjectOptions::default().set_indexing_options(raw).set_fast(None));
    b.add_json_field("stored", JsonObjectOptions::default().set_stored());
    b.build()
}

fn fields_of(schema: &Schema, def: &NouveauDef) -> Result<Fields> {
    let get = |n: &str| schema.get_field(n).map_err(|_| SearchError::Index(format!("index files lack the field {n}")));
    let mut text = Vec::new();
    for a in def.analyzers() {
        text.push((a.to_owned(), get(&format!("text_{a}"))?));
    }
    // The default analyzer's field first: `text_for` falls back to it.
    text.sort_by_key(|(a, _)| *a != def.default_analyzer);
    Ok(Fields { id: get("_id")?, text, string: get("string")?, double: get("double")?, stored: get("stored")? })
}

/// Opens (or creates) the index of `def` in the database's folder.
pub fn open(db: &Database, def: &NouveauDef) -> Result<Arc<IndexFiles>> {
    let dir = search_dir(db)?.join(def.signature());
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let open = open.get_or_insert_with(HashMap::new);
    let inode = std::fs::metadata(&dir).map(|m| m.ino()).ok();
    if let (Some(files), Some(inode)) = (open.get(&dir), inode) {
        if files.inode == inode {
            return Ok(files.clone());
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| SearchError::Index(format!("creating {}: {e}", dir.display())))?;
    let inode = std::fs::metadata(&dir).map_err(|e| SearchError::Index(format!("{}: {e}", dir.display())))?.ino();
    let index = if dir.join("meta.json").exists() {
        Index::open_in_dir(&dir)?
    } else {
        // Stored fields are small (ids and what `store: true` asks for):
        // no compression, which also keeps lz4/zstd out of the build.
        let settings = IndexSettings { docstore_compression: Compressor::None, ..IndexSettings::default() };
        Index::builder().schema(schema(def)).settings(settings).create_in_dir(&dir)?
    };
    analyzers::register(index.tokenizers(), &def.analyzers());
    let fields = fields_of(&index.schema(), def)?;
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let state = IndexState::from_payload(index.load_metas()?.payload.as_deref());
    let files = Arc::new(IndexFiles { index, reader, fields, state: Mutex::new(state), writing: Mutex::new(()), inode, def: def.clone() });
    open.insert(dir, files.clone());
    Ok(files)
}

fn update_seq(kv: &dyn KvRead) -> Result<u64> {
    Ok(keys::u64_value(kv.get(DB_META, keys::meta::UPDATE_SEQ)?, "update_seq")?)
}

/// The index function, wrapped so that its `index(type, name, value,
/// options)` calls come out as emitted rows `[[type, name, store], value]`,
/// with the checks Nouveau's `index` makes (a call that fails them throws,
/// and the document is left out, as a throwing function's is).
fn wrapped(source: &str) -> String {
    let source = source.trim_end().trim_end_matches(';');
    format!(
        r#"(function () {{
  var index = function (type, name, value, options) {{
    if (typeof name !== "string" || name.length === 0) throw new Error("index: name must be a non-empty string");
    if (name === "_id") throw new Error("index: _id is reserved");
    if (type === "double") {{
      if (typeof value !== "number" || !isFinite(value)) throw new Error("index: value of double field '" + name + "' must be a finite number");
    }} else if (type === "string" || type === "text") {{
      if (typeof value !== "string") throw new Error("index: value of " + type + " field '" + name + "' must be a string");
    }} else if (type === "stored") {{
      if (typeof value !== "string" && typeof value !== "number") throw new Error("index: value of stored field '" + name + "' must be a string or a number");
    }} else {{
      throw new Error("index: type must be one of text, string, double or stored, not " + type);
    }}
    var store = false;
    if (options !== undefined && options !== null) {{
      if (typeof options !== "object") throw new Error("index: options must be an object");
      store = options.store === true;
    }}
    emit([type, name, store], value);
  }};
  return ({source}
);
}})()"#
    )
}

/// The compiled index function of an index.
struct Mapper {
    sandbox: Sandbox,
    f: FnId,
}

impl Mapper {
    fn new(def: &NouveauDef, ddoc: &Value, limits: Limits) -> Result<Mapper> {
        let mut sandbox = Sandbox::new(limits).map_err(|e| SearchError::Process(e.to_string()))?;
        let f = sandbox
            .compile(&wrapped(&def.index_fn), ddoc)
            .map_err(|e| SearchError::BadRequest(format!("compilation of the index function of {} {} failed: {e}", def.ddoc, def.name)))?;
        Ok(Mapper { sandbox, f })
    }
}

/// Brings the index of `def` to the database's sequence, in batches of
/// [`build::BATCH`] documents read and mapped on one thread while the
/// writer indexes and commits on this one ([`build`]); shown in
/// `_active_tasks` while it runs.
pub fn refresh(db: &Database, db_name: &str, def: &NouveauDef, ddoc_body: &Value, limits: Limits) -> Result<Arc<IndexFiles>> {
    let files = open(db, def)?;
    let first_target = {
        let s = db.store().snapshot()?;
        let target = update_seq(s.kv())?;
        if files.state.lock().unwrap_or_else(|e| e.into_inner()).seq >= target {
            return Ok(files);
        }
        target
    };
    let writer_of = files.clone();
    let _writing = writer_of.writing.lock().unwrap_or_else(|e| e.into_inner());
    let start = files.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if start.seq >= first_target {
        return Ok(files);
    }
    let task = IndexerTask::start(db_name, &def.ddoc, start.seq, first_target);
    let bounds = rhizome_views::js::RequestBounds { deadline: None, ..rhizome_views::js::RequestBounds::current() };
    let mut writer: IndexWriter<TantivyDocument> = files.index.writer_with_num_threads(build::WRITER_THREADS, build::WRITER_BYTES)?;
    let fields = &files.fields;
    let produce = move |send: SyncSender<build::Batch<IndexState>>| -> Result<()> {
        let _bounds = bounds.enter();
        let mut state = start;
        let native = def.mango.as_ref().map(crate::mango::MangoIndexer::new);
        let mut mapper = match native {
            Some(_) => None,
            None => Some(Mapper::new(def, ddoc_body, limits)?),
        };
        let read = ReadOptions::default();
        loop {
            let snapshot = db.store().snapshot()?;
            let target = update_seq(snapshot.kv())?;
            if state.seq >= target {
                return Ok(());
            }
            let (changed, reached) = rhizome_docs::secondary::changed_since(snapshot.kv(), state.seq, target, build::BATCH)?;
            let mut docs = Vec::with_capacity(changed.len());
            for (_, doc_id) in changed {
                let mut out = Vec::new();
                if let Some(d) = index_document(db, &snapshot, db_name, def, fields, native.as_ref(), mapper.as_mut(), &read, &mut state, &doc_id)? {
                    out.push(d);
                }
                docs.push((doc_id, out));
            }
            state.seq = reached;
            if send.send(build::Batch { docs, state: state.clone() }).is_err() {
                // The writer stopped (its error is the build's).
                return Ok(());
            }
        }
    };
    build::run(&mut writer, files.fields.id, produce, IndexState::to_payload, |state| {
        files.reader.reload()?;
        let reached = state.seq;
        *files.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        task.progress(reached);
        Ok(())
    })?;
    Ok(files)
}

/// The index document of one changed database document, read from
/// `snapshot`; `None` when it is a design document, deleted, or indexes
/// nothing.
#[allow(clippy::too_many_arguments)]
fn index_document(
    db: &Database,
    snapshot: &rhizome_rdf::StoreSnapshot,
    db_name: &str,
    def: &NouveauDef,
    fields: &Fields,
    native: Option<&crate::mango::MangoIndexer>,
    mapper: Option<&mut Mapper>,
    read: &ReadOptions,
    state: &mut IndexState,
    doc_id: &str,
) -> Result<Option<TantivyDocument>> {
    if doc_id.starts_with("_design/") {
        return Ok(None);
    }
    let Some(info) = snapshot.kv().get(keys::DOCS, doc_id.as_bytes())? else { return Ok(None) };
    if DocInfo::from_bytes(doc_id, &info)?.deleted {
        return Ok(None);
    }
    let doc = match db.get_doc_in(snapshot, doc_id, read) {
        Ok(d) => Value::Object(d),
        Err(DocError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let rows = match (native, mapper) {
        (Some(indexer), _) => indexer.rows(&doc),
        (None, Some(mapper)) => {
            let mut results = mapper.sandbox.map(&[mapper.f], &doc.to_string()).map_err(|e| SearchError::Process(e.to_string()))?;
            let rows = match results.pop() {
                Some(Ok(rows)) => rows,
                Some(Err(message)) => {
                    eprintln!("{}", json!({ "log": "nouveau index function threw", "db": db_name, "ddoc": def.ddoc, "index": def.name, "doc": doc_id, "error": message }));
                    return Ok(None);
                }
                None => return Ok(None),
            };
            for line in mapper.sandbox.take_logs() {
                eprintln!("{}", json!({ "log": "nouveau", "db": db_name, "ddoc": def.ddoc, "doc": doc_id, "message": line }));
            }
            rows
        }
        (None, None) => return Ok(None),
    };
    Ok(document(fields, def, state, doc_id, rows))
}

/// One database document as an index document; `None` when the function
/// indexed nothing (Nouveau leaves such a document out).
fn document(fields: &Fields, def: &NouveauDef, state: &mut IndexState, doc_id: &str, rows: Vec<(Value, Value)>) -> Option<TantivyDocument> {
    if rows.is_empty() {
        return None;
    }
    // Values by (json field, name), in call order.
    let mut by_field: BTreeMap<u32, BTreeMap<String, Vec<OwnedValue>>> = BTreeMap::new();
    let mut stored: BTreeMap<String, Vec<OwnedValue>> = BTreeMap::new();
    for (key, value) in rows {
        let (Some(kind), Some(name), store) = (key[0].as_str().and_then(FieldKind::parse), key[1].as_str(), key[2].as_bool() == Some(true)) else { continue };
        // A name keeps the kind it was first given (as Lucene's schema
        // would); a value of another kind for it is left out.
        let kind = *state.kinds.entry(name.to_owned()).or_insert(kind);
        let owned = match (&value, kind) {
            (Value::Number(n), FieldKind::Double) => OwnedValue::F64(n.as_f64().unwrap_or(0.0)),
            (Value::String(s), FieldKind::Text | FieldKind::String) => OwnedValue::Str(s.clone()),
            (Value::String(s), FieldKind::Stored) => OwnedValue::Str(s.clone()),
            (Value::Number(n), FieldKind::Stored) => OwnedValue::F64(n.as_f64().unwrap_or(0.0)),
            _ => continue,
        };
        if store || kind == FieldKind::Stored {
            stored.entry(name.to_owned()).or_default().push(owned.clone());
        }
        let field = match kind {
            FieldKind::Text => fields.text_for(def.analyzer_of(name)),
            FieldKind::String => fields.string,
            FieldKind::Double => fields.double,
            FieldKind::Stored => continue,
        };
        by_field.entry(field.field_id()).or_default().entry(name.to_owned()).or_default().push(owned);
    }
    let mut doc = TantivyDocument::default();
    doc.add_text(fields.id, doc_id);
    let one_or_many = |mut v: Vec<OwnedValue>| if v.len() == 1 { v.pop().unwrap_or(OwnedValue::Null) } else { OwnedValue::Array(v) };
    for (field, values) in by_field {
        doc.add_object(Field::from_field_id(field), values.into_iter().map(|(k, v)| (k, one_or_many(v))).collect());
    }
    if !stored.is_empty() {
        doc.add_object(fields.stored, stored.into_iter().map(|(k, v)| (k, one_or_many(v))).collect());
    }
    Some(doc)
}

/// What `_nouveau_info` tells of an index.
pub struct IndexInfo {
    pub update_seq: u64,
    pub num_docs: u64,
    pub disk_size: u64,
    pub signature: String,
}

/// The info of an index (opened, not brought up to date).
pub fn info(db: &Database, def: &NouveauDef) -> Result<IndexInfo> {
    let files = open(db, def)?;
    let seq = files.state.lock().unwrap_or_else(|e| e.into_inner()).seq;
    let num_docs = files.reader.searcher().num_docs();
    let dir = search_dir(db)?.join(def.signature());
    Ok(IndexInfo { update_seq: seq, num_docs, disk_size: dir_bytes(&dir), signature: def.signature() })
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()).unwrap_or(0)
}

/// Removes the index folders of signatures no live definition has
/// (`POST /{db}/_nouveau_cleanup`, `_view_cleanup`); returns how many.
pub fn cleanup(db: &Database, live: &[NouveauDef]) -> Result<usize> {
    let dir = search_dir(db)?;
    let live: Vec<String> = live.iter().map(NouveauDef::signature).collect();
    // The SPARQL literal index of the current settings stays; with
    // settings unreadable, every literal index stays.
    let rdf_text = match crate::rdf_text::RdfTextSettings::of(db) {
        Ok(s) => Some(s.folder_name()),
        Err(_) => None,
    };
    let keep_all_rdf_text = rdf_text.is_none();
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(0) };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if live.contains(&name) || rdf_text.as_ref().is_some_and(|r| *r == name) || (keep_all_rdf_text && name.starts_with("rdf_text-")) {
            continue;
        }
        let path = e.path();
        if let Some(open) = OPEN.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            open.remove(&path);
        }
        std::fs::remove_dir_all(&path).map_err(|e| SearchError::Index(format!("removing {}: {e}", path.display())))?;
        removed += 1;
    }
    Ok(removed)
}

/// Merges an index's segments into one and drops deleted documents
/// (`POST /{db}/_compact/{ddoc}`).
pub fn compact(db: &Database, def: &NouveauDef) -> Result<()> {
    let files = open(db, def)?;
    let _writing = files.writing.lock().unwrap_or_else(|e| e.into_inner());
    let mut writer: IndexWriter<TantivyDocument> = files.index.writer_with_num_threads(1, WRITER_BYTES)?;
    let ids: Vec<_> = files.index.searchable_segment_ids()?;
    if ids.len() > 1 || files.reader.searcher().segment_readers().iter().any(|s| s.has_deletes()) {
        writer.merge(&ids).wait()?;
    }
    writer.wait_merging_threads()?;
    files.reader.reload()?;
    Ok(())
}
