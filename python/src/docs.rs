//! CouchDB-style databases of a data folder, the folder `rhizome serve`
//! uses (`rhizome.open(data_dir).database("people")`).
//!
//! The folder is refused (`StoreLocked`) while a server runs on it: a
//! server opens and closes its databases on demand, so a database it has
//! closed for now is still its (the folder's lock, `DATA/lock`, held shared
//! here and exclusive by the server). Each database is its own store under
//! `<data>/dbs/`, with the engine's lock: one process holds a database at
//! a time, so a database another Python process has open raises
//! `StoreLocked` too, and nothing is ever written by two processes. In one
//! process a `DataFolder` hands out one shared handle per database, so
//! threads share it; writes are durable when they return and run without
//! the GIL.

use crate::errors::{doc_error, kv_error, rdf_error, Conflict, RhizomeError};
use crate::json::{from_py, map_from_py, map_to_py, to_py};
use crate::store::PyStore;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use rhizome_docs::{AllDocsOptions, ChangesFilter, ChangesOptions, ContextStore, Database, DocError, ReadOptions, Rev};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A server's data folder: ``rhizome.open("rhizome-data")``.
///
/// :param read_only: open databases without writing anything (writes
///     fail); still one process per database.
#[pyclass(frozen, name = "DataFolder", module = "rhizome")]
pub struct DataFolder {
    dir: PathBuf,
    read_only: bool,
    base: String,
    contexts: Arc<ContextStore>,
    open: Mutex<HashMap<String, Arc<Database>>>,
    /// The folder's lock, held shared until `close()`: no server starts on it meanwhile.
    folder_lock: Mutex<Option<std::fs::File>>,
}

fn server_error(e: rhizome_server::ServerError) -> PyErr {
    match e {
        rhizome_server::ServerError::FolderInUse(m) => crate::errors::StoreLocked::new_err(m),
        e => RhizomeError::new_err(e.to_string()),
    }
}

/// `rhizome.open(data_dir, read_only=False)`.
#[pyfunction]
#[pyo3(signature = (data_dir, *, read_only=false))]
pub fn open(data_dir: PathBuf, read_only: bool) -> PyResult<DataFolder> {
    if read_only && !data_dir.is_dir() {
        return Err(pyo3::exceptions::PyFileNotFoundError::new_err(format!("no data folder at {}", data_dir.display())));
    }
    std::fs::create_dir_all(&data_dir).map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot create {}: {e}", data_dir.display())))?;
    let folder_lock = rhizome_server::folder::share_folder(&data_dir).map_err(server_error)?;
    let base = rhizome_server::base_iri(&data_dir).map_err(server_error)?;
    let contexts = rhizome_server::context_store(&data_dir).map_err(server_error)?;
    Ok(DataFolder { dir: data_dir, read_only, base, contexts, open: Mutex::new(HashMap::new()), folder_lock: Mutex::new(Some(folder_lock)) })
}

impl DataFolder {
    fn ldp_root(&self, name: &str) -> String {
        rhizome_docs::DocumentIris::new(&self.base, name).ldp_root()
    }
}

#[pymethods]
impl DataFolder {
    /// The database ``name`` (created unless the folder is read-only).
    ///
    /// :raises StoreLocked: another Python process has it open.
    #[pyo3(signature = (name, *, create=true))]
    fn database(&self, py: Python<'_>, name: &str, create: bool) -> PyResult<PyDatabase> {
        if !rhizome_docs::valid_db_name(name) {
            return Err(PyValueError::new_err(format!("{name:?} is not a valid database name (a lowercase letter first, then a-z 0-9 _$()+/-)")));
        }
        if self.folder_lock.lock().map_err(|_| RhizomeError::new_err("a thread panicked while closing the folder"))?.is_none() {
            return Err(RhizomeError::new_err(format!("the folder {} is closed: rhizome.open it again", self.dir.display())));
        }
        let mut open = self.open.lock().map_err(|_| RhizomeError::new_err("a thread panicked while opening a database"))?;
        if let Some(db) = open.get(name) {
            return Ok(PyDatabase { db: db.clone(), name: name.to_owned(), read_only: self.read_only, ldp_root: self.ldp_root(name) });
        }
        let dir = rhizome_server::database_dir(&self.dir, name);
        if (self.read_only || !create) && !dir.join("CURRENT").exists() {
            return Err(crate::errors::NotFound::new_err(format!("no database {name} in {}", self.dir.display())));
        }
        let projector = rhizome_server::projector_for(&self.base, name, self.contexts.clone());
        let read_only = self.read_only;
        let db = py
            .detach(|| {
                if read_only {
                    Database::open_read_only(&dir, projector)
                } else {
                    std::fs::create_dir_all(&dir).map_err(|e| DocError::BadRequest(format!("cannot create {}: {e}", dir.display())))?;
                    Database::open(&dir, projector)
                }
            })
            .map_err(doc_error)?;
        let db = Arc::new(db);
        open.insert(name.to_owned(), db.clone());
        Ok(PyDatabase { db, name: name.to_owned(), read_only, ldp_root: self.ldp_root(name) })
    }

    /// The names of the folder's databases.
    fn databases(&self) -> PyResult<Vec<String>> {
        let mut names = Vec::new();
        let dbs = self.dir.join("dbs");
        if let Ok(entries) = std::fs::read_dir(&dbs) {
            for e in entries.flatten() {
                let folder = e.file_name().to_string_lossy().into_owned();
                names.push(decode_name(&folder));
            }
        }
        names.sort();
        Ok(names)
    }

    /// Closes the handles this folder opened and lets go of the folder (a
    /// server may start on it; other processes can open the databases
    /// once every ``Database`` object is gone too).
    fn close(&self) -> PyResult<()> {
        self.open.lock().map_err(|_| RhizomeError::new_err("a thread panicked while opening a database"))?.clear();
        self.folder_lock.lock().map_err(|_| RhizomeError::new_err("a thread panicked while closing the folder"))?.take();
        Ok(())
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.dir.clone()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(&self, _a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

/// The inverse of the server's folder naming (`%XX` for other characters).
fn decode_name(folder: &str) -> String {
    let mut out = String::new();
    let mut rest = folder;
    while let Some(c) = rest.chars().next() {
        if c == '%' {
            if let Some(b) = rest.get(1..3).and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
                out.push(b as char);
                rest = &rest[3..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// One database: documents with CouchDB's revisions, attachments,
/// ``_all_docs``, ``_changes``, Mango ``find`` and views; ``store`` is its
/// RDF (every document's graph).
#[pyclass(frozen, name = "Database", module = "rhizome")]
pub struct PyDatabase {
    db: Arc<Database>,
    name: String,
    read_only: bool,
    /// The root container's IRI of the database's LDP resources.
    ldp_root: String,
}

fn rev_arg(rev: Option<&str>) -> PyResult<Option<Rev>> {
    match rev {
        None => Ok(None),
        Some(r) => Rev::parse(r).map(Some).ok_or_else(|| PyValueError::new_err(format!("{r:?} is not a revision (N-hash)"))),
    }
}

impl PyDatabase {
    fn write(&self, py: Python<'_>, docs: Vec<Map<String, Value>>, new_edits: bool) -> PyResult<Vec<(String, rhizome_docs::WriteOutcome)>> {
        if self.read_only {
            return Err(pyo3::exceptions::PyPermissionError::new_err(format!("database {} was opened read-only: writes are refused", self.name)));
        }
        let db = self.db.clone();
        let user_ctx = admin_ctx(&self.name);
        py.detach(move || rhizome_views::validate::write_unless_refused(&db, &user_ctx, docs, rhizome_views::Limits::from_env(), |docs| db.update_docs_as(docs, new_edits, rhizome_docs::Writer::Admin)))
            .map_err(doc_error)
    }

    fn write_one(&self, py: Python<'_>, doc: Map<String, Value>) -> PyResult<String> {
        let mut out = self.write(py, vec![doc], true)?;
        match out.pop() {
            Some((_, Ok(rev))) => Ok(rev.to_string()),
            Some((_, Err(e))) => Err(doc_error(e)),
            None => Err(RhizomeError::new_err("no outcome for the write")),
        }
    }
}

#[pymethods]
impl PyDatabase {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// A document (the winning revision, or ``rev``).
    ///
    /// :raises NotFound: missing or deleted.
    #[pyo3(signature = (doc_id, *, rev=None, revs=false, conflicts=false, attachments=false))]
    fn get(&self, py: Python<'_>, doc_id: &str, rev: Option<&str>, revs: bool, conflicts: bool, attachments: bool) -> PyResult<Py<PyAny>> {
        let opts = ReadOptions { rev: rev_arg(rev)?, revs, conflicts, attachments, ..Default::default() };
        let db = self.db.clone();
        let id = doc_id.to_owned();
        let doc = py.detach(move || db.get_doc(&id, &opts)).map_err(doc_error)?;
        map_to_py(py, &doc)
    }

    /// Writes a document (a dict with ``_id``; ``_rev`` to update an
    /// existing one) and returns its new revision.
    ///
    /// :raises Conflict: ``_rev`` is not the current revision (or is
    ///     missing for an existing document).
    /// :raises Forbidden: a design document's ``validate_doc_update``
    ///     refused it (it runs for every write, as the server's do).
    #[pyo3(signature = (doc, *, doc_id=None))]
    fn put(&self, py: Python<'_>, doc: &Bound<'_, PyAny>, doc_id: Option<String>) -> PyResult<String> {
        let mut doc = map_from_py(doc, "a document")?;
        if let Some(id) = doc_id {
            doc.insert("_id".into(), Value::String(id));
        }
        match doc.get("_id") {
            Some(Value::String(id)) => rhizome_docs::validate_doc_id(id).map_err(doc_error)?,
            Some(_) => return Err(PyTypeError::new_err("_id must be a string")),
            None => return Err(PyValueError::new_err("the document has no _id (give one, or doc_id=)")),
        }
        if let Some(Value::String(id)) = doc.get("_id") {
            if id.starts_with("_design/") {
                rhizome_views::check_design_doc(id, &doc).map_err(|e| PyValueError::new_err(format!("{}: {e}", e.error())))?;
            }
        }
        self.write_one(py, doc)
    }

    /// Begins a transaction over the database's documents and quads
    /// (``rhizome.Transaction``): reads at one snapshot, commits
    /// atomically or raises ``Conflict``.
    fn transaction(&self) -> PyResult<crate::transaction::PyTransaction> {
        crate::transaction::PyTransaction::begin(self.db.clone(), &self.name, self.read_only)
    }

    /// Deletes a document at revision ``rev``; returns the deletion's
    /// revision.
    ///
    /// :raises Conflict: ``rev`` is not the current revision.
    fn delete(&self, py: Python<'_>, doc_id: &str, rev: &str) -> PyResult<String> {
        rev_arg(Some(rev))?;
        let doc = json!({ "_id": doc_id, "_rev": rev, "_deleted": true });
        let Value::Object(doc) = doc else { unreachable!("a JSON object literal") };
        self.write_one(py, doc)
    }

    /// Writes many documents in one transaction; returns CouchDB's
    /// ``_bulk_docs`` answer: ``{"ok", "id", "rev"}`` or ``{"id",
    /// "error", "reason"}`` per document (a conflict does not stop the
    /// others). ``new_edits=False`` stores given revisions as replication
    /// does.
    #[pyo3(signature = (docs, *, new_edits=true))]
    fn bulk_docs(&self, py: Python<'_>, docs: &Bound<'_, PyAny>, new_edits: bool) -> PyResult<Py<PyAny>> {
        let mut batch = Vec::new();
        for d in docs.try_iter()? {
            let mut doc = map_from_py(&d?, "a document")?;
            if !doc.contains_key("_id") && new_edits {
                doc.insert("_id".into(), Value::String(new_doc_id()));
            }
            batch.push(doc);
        }
        let out = self.write(py, batch, new_edits)?;
        let list = PyList::empty(py);
        for (id, outcome) in out {
            let row = match outcome {
                Ok(rev) => json!({ "ok": true, "id": id, "rev": rev.to_string() }),
                Err(e) => {
                    let (error, reason) = match &e {
                        DocError::Conflict => ("conflict", e.to_string()),
                        DocError::Validation(_) => ("doc_validation", e.to_string()),
                        DocError::Coded { error, reason, .. } => (*error, reason.clone()),
                        DocError::NotFound(_) => ("not_found", e.to_string()),
                        _ => ("bad_request", e.to_string()),
                    };
                    json!({ "id": id, "error": error, "reason": reason })
                }
            };
            list.append(to_py(py, &row)?)?;
        }
        Ok(list.into_any().unbind())
    }

    /// ``_all_docs``: ``{"total_rows", "offset", "rows"}``.
    #[pyo3(signature = (*, include_docs=false, start_key=None, end_key=None, inclusive_end=true, limit=None, skip=0, descending=false, keys=None, conflicts=false))]
    #[allow(clippy::too_many_arguments)]
    fn all_docs(
        &self,
        py: Python<'_>,
        include_docs: bool,
        start_key: Option<String>,
        end_key: Option<String>,
        inclusive_end: bool,
        limit: Option<usize>,
        skip: usize,
        descending: bool,
        keys: Option<Vec<String>>,
        conflicts: bool,
    ) -> PyResult<Py<PyAny>> {
        let opts = AllDocsOptions { start_key, end_key, inclusive_end, limit, skip, descending, include_docs, conflicts, attachments: false, keys, partition: None };
        let db = self.db.clone();
        let out = py.detach(move || db.all_docs(&opts)).map_err(doc_error)?;
        let body = json!({ "total_rows": out.total_rows, "offset": out.offset, "rows": out.rows, "update_seq": out.update_seq });
        to_py(py, &body)
    }

    /// ``_changes`` (a normal feed): ``{"results", "last_seq",
    /// "pending"}``; filter with ``doc_ids`` or a Mango ``selector``.
    #[pyo3(signature = (*, since=0, limit=None, descending=false, include_docs=false, conflicts=false, doc_ids=None, selector=None, style="main_only"))]
    #[allow(clippy::too_many_arguments)]
    fn changes(
        &self,
        py: Python<'_>,
        since: u64,
        limit: Option<usize>,
        descending: bool,
        include_docs: bool,
        conflicts: bool,
        doc_ids: Option<Vec<String>>,
        selector: Option<&Bound<'_, PyAny>>,
        style: &str,
    ) -> PyResult<Py<PyAny>> {
        let filter = match (doc_ids, selector) {
            (Some(_), Some(_)) => return Err(PyValueError::new_err("filter by doc_ids or by selector, not both")),
            (Some(ids), None) => ChangesFilter::DocIds(ids.into_iter().collect()),
            (None, Some(s)) => ChangesFilter::Selector(from_py(s)?),
            (None, None) => ChangesFilter::None,
        };
        let all_leaves = match style {
            "main_only" => false,
            "all_docs" => true,
            s => return Err(PyValueError::new_err(format!("style is main_only or all_docs, not {s:?}"))),
        };
        let opts = ChangesOptions { since, limit, descending, all_leaves, include_docs, conflicts, attachments: false, filter };
        let db = self.db.clone();
        let out = py.detach(move || db.changes(&opts)).map_err(doc_error)?;
        to_py(py, &json!({ "results": out.rows, "last_seq": out.last_seq, "pending": out.pending }))
    }

    /// An attachment's data and content type: ``(bytes, content_type)``.
    #[pyo3(signature = (doc_id, name, *, rev=None))]
    fn get_attachment<'py>(&self, py: Python<'py>, doc_id: &str, name: &str, rev: Option<&str>) -> PyResult<(Bound<'py, PyBytes>, String)> {
        let rev = rev_arg(rev)?;
        let db = self.db.clone();
        let (id, name) = (doc_id.to_owned(), name.to_owned());
        let a = py.detach(move || db.attachment(&id, &name, rev.as_ref())).map_err(doc_error)?;
        Ok((PyBytes::new(py, &a.data), a.content_type))
    }

    /// Adds or replaces an attachment of document ``doc_id`` at revision
    /// ``rev`` (None for a new document); returns the new revision.
    #[pyo3(signature = (doc_id, name, data, content_type="application/octet-stream", *, rev=None))]
    fn put_attachment(&self, py: Python<'_>, doc_id: &str, name: &str, data: &[u8], content_type: &str, rev: Option<&str>) -> PyResult<String> {
        rhizome_docs::validate_attachment_name(name).map_err(doc_error)?;
        let mut doc = match rev {
            None => Map::new(),
            Some(r) => {
                let opts = ReadOptions { rev: rev_arg(Some(r))?, ..Default::default() };
                let db = self.db.clone();
                let id = doc_id.to_owned();
                match py.detach(move || db.get_doc(&id, &opts)) {
                    Ok(d) => d,
                    Err(DocError::NotFound(_)) => return Err(Conflict::new_err("Document update conflict.")),
                    Err(e) => return Err(doc_error(e)),
                }
            }
        };
        doc.insert("_id".into(), Value::String(doc_id.to_owned()));
        if let Some(r) = rev {
            doc.insert("_rev".into(), Value::String(r.to_owned()));
        }
        let atts = doc.entry("_attachments").or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(atts) = atts else { return Err(RhizomeError::new_err("_attachments is not an object")) };
        use base64::Engine as _;
        atts.insert(
            name.to_owned(),
            json!({ "content_type": content_type, "data": base64::engine::general_purpose::STANDARD.encode(data) }),
        );
        self.write_one(py, doc)
    }

    /// Removes an attachment; returns the new revision.
    fn delete_attachment(&self, py: Python<'_>, doc_id: &str, name: &str, rev: &str) -> PyResult<String> {
        let opts = ReadOptions { rev: rev_arg(Some(rev))?, ..Default::default() };
        let db = self.db.clone();
        let id = doc_id.to_owned();
        let mut doc = py.detach(move || db.get_doc(&id, &opts)).map_err(doc_error)?;
        let removed = match doc.get_mut("_attachments") {
            Some(Value::Object(atts)) => atts.remove(name).is_some(),
            _ => false,
        };
        if !removed {
            return Err(crate::errors::NotFound::new_err("Document is missing attachment"));
        }
        doc.insert("_rev".into(), Value::String(rev.to_owned()));
        self.write_one(py, doc)
    }

    /// A Mango query (the body of ``POST /{db}/_find``): returns
    /// ``{"docs", "bookmark", ...}``.
    fn find(&self, py: Python<'_>, query: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let body = map_from_py(query, "a Mango query")?;
        let db = self.db.clone();
        let out = py.detach(move || db.find(&body)).map_err(doc_error)?;
        to_py(py, &out)
    }

    /// Queries view ``view`` of design document ``_design/{ddoc}`` with
    /// CouchDB's options as keyword arguments (``key``, ``start_key``,
    /// ``end_key``, ``reduce``, ``group``, ``group_level``, ``limit``,
    /// ``skip``, ``descending``, ``include_docs``, ...); brings the index
    /// up to date first.
    #[pyo3(signature = (ddoc, view, **options))]
    fn view(&self, py: Python<'_>, ddoc: &str, view: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
        let body = match options {
            Some(o) => map_from_py(o.as_any(), "view options")?,
            None => Map::new(),
        };
        let ddoc_id = if ddoc.starts_with("_design/") { ddoc.to_owned() } else { format!("_design/{ddoc}") };
        let read_only = self.read_only;
        let db = self.db.clone();
        let name = self.name.clone();
        let view = view.to_owned();
        let text = py
            .detach(move || -> Result<String, String> {
                let doc = db.get_doc(&ddoc_id, &ReadOptions::default()).map_err(|e| format!("{ddoc_id}: {e}"))?;
                let design = rhizome_views::DesignDoc::parse(&ddoc_id, &doc).map_err(|e| e.to_string())?.ok_or_else(|| format!("{ddoc_id} is not a design document"))?;
                if design.view(&view).is_none() {
                    return Err(format!("missing_named_view: {ddoc_id} has no view {view}"));
                }
                let mut q = rhizome_views::ViewQuery::default().from_json(&body).map_err(|e| e.to_string())?;
                if read_only {
                    // A read-only open cannot bring the index up to date:
                    // it answers from the index as the last writer left it.
                    q.update = rhizome_views::UpdateMode::False;
                }
                rhizome_views::run_query(&db, &name, &design, &view, &q, rhizome_views::Limits::from_env()).map_err(|e| e.to_string())
            })
            .map_err(|m| if m.starts_with("missing") || m.contains("missing") { crate::errors::NotFound::new_err(m) } else { RhizomeError::new_err(m) })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| RhizomeError::new_err(format!("a view answer that is not JSON: {e}")))?;
        to_py(py, &value)
    }

    /// Runs a SPARQL update on the database's graphs as a document write:
    /// every graph it changes gets a new revision of its document (as the
    /// server's ``/{db}/_sparql`` does), all in one transaction; writes to
    /// the default graph go to the database's stored default graph.
    /// Returns ``{"quads_inserted", "quads_deleted"}``.
    #[pyo3(signature = (update, *, base_iri=None))]
    fn update(&self, py: Python<'_>, update: &str, base_iri: Option<String>) -> PyResult<Py<PyAny>> {
        if self.read_only {
            return Err(pyo3::exceptions::PyPermissionError::new_err(format!("database {} was opened read-only: writes are refused", self.name)));
        }
        let text = update.to_owned();
        let (db, name) = (self.db.clone(), self.name.clone());
        let summary = py
            .detach(move || {
                crate::query_threads::run(move || -> Result<rhizome_sparql::UpdateSummary, PyErrText> {
                    use rhizome_sparql::{execute_update_with_stored_default, parse_update, LoadPolicy, Statistics, UpdateLimits};
                    use spargebra::algebra::GraphTarget;
                    use spargebra::GraphUpdateOperation;
                    let update = parse_update(&text, base_iri.as_deref()).map_err(PyErrText::Sparql)?;
                    let store = db.store();
                    let mode = store.mode();
                    let stats = Statistics::from_store(&store.planner_stats().map_err(|e| PyErrText::Sparql(e.into()))?);
                    let limits = UpdateLimits { load: LoadPolicy::AnyLocalFile, ..UpdateLimits::default() };
                    let stored_default = db
                        .stored_default_graph()
                        .map(oxrdf::NamedNode::new)
                        .transpose()
                        .map_err(|e| PyErrText::Other(format!("the stored default graph's IRI: {e}")))?;
                    // As the server: DROP/CLEAR ALL or NAMED delete the documents whose graphs they empty.
                    let everything = update.operations.iter().any(|op| {
                        matches!(
                            op,
                            GraphUpdateOperation::Drop { graph: GraphTarget::AllGraphs | GraphTarget::NamedGraphs, .. }
                                | GraphUpdateOperation::Clear { graph: GraphTarget::AllGraphs | GraphTarget::NamedGraphs, .. }
                        )
                    });
                    let emptied = if everything { rhizome_docs::EmptiedGraphs::DeleteDocuments } else { rhizome_docs::EmptiedGraphs::KeepDocumentData };
                    rhizome_views::validate::rdf_write_validated(&db, &admin_ctx(&name), rhizome_docs::Writer::Admin, rhizome_views::Limits::from_env(), emptied, |txn| {
                        execute_update_with_stored_default(txn, mode, &stats, &update, &limits, stored_default.as_ref()).map_err(PyErrText::Sparql)
                    })
                })
            })
            .map_err(PyErrText::into_py)?;
        to_py(py, &json!({ "quads_inserted": summary.quads_inserted, "quads_deleted": summary.quads_deleted }))
    }

    /// ``{"doc_count", "doc_del_count", "update_seq", "sizes": {"file"}}``.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let db = self.db.clone();
        let i = py.detach(move || db.info()).map_err(doc_error)?;
        to_py(py, &json!({ "db_name": self.name, "doc_count": i.doc_count, "doc_del_count": i.doc_del_count, "update_seq": i.update_seq, "sizes": { "file": i.bytes_on_disk } }))
    }

    /// The database's RDF for reading: a ``Store`` over the same quads
    /// (every document's graph; a union dataset): patterns, SPARQL
    /// queries, dumps. Its writes are refused (they would change graphs
    /// without their documents): write with the document calls or
    /// ``Database.update``.
    #[getter]
    fn store(&self) -> PyStore {
        PyStore::over(crate::store::StoreHandle::Database(self.db.clone()), true)
    }

    fn __contains__(&self, py: Python<'_>, doc_id: &str) -> PyResult<bool> {
        let db = self.db.clone();
        let id = doc_id.to_owned();
        match py.detach(move || db.get_doc(&id, &ReadOptions::default())) {
            Ok(_) => Ok(true),
            Err(DocError::NotFound(_)) => Ok(false),
            Err(e) => Err(doc_error(e)),
        }
    }

    /// The database's LDP resources (``rhizome.Ldp(db)`` wraps this).
    fn _ldp(&self) -> crate::ldp::PyLdp {
        crate::ldp::PyLdp::new(self.db.clone(), self.ldp_root.clone(), self.read_only, self.name.clone())
    }

    fn __repr__(&self) -> String {
        format!("<Database {}>", self.name)
    }
}

/// CouchDB's `userCtx` of this process's writes to `db`.
pub(crate) fn admin_ctx(db: &str) -> Value {
    rhizome_views::validate::owner_ctx(db)
}

/// An error made without the GIL.
enum PyErrText {
    Sparql(rhizome_sparql::SparqlError),
    Doc(DocError),
    Other(String),
}

impl From<DocError> for PyErrText {
    fn from(e: DocError) -> Self {
        PyErrText::Doc(e)
    }
}

impl PyErrText {
    fn into_py(self) -> PyErr {
        match self {
            PyErrText::Sparql(e) => crate::errors::sparql_error(e),
            PyErrText::Doc(e) => doc_error(e),
            PyErrText::Other(m) => RhizomeError::new_err(m),
        }
    }
}

/// A fresh document id (CouchDB's UUIDs: 32 hex digits).
pub(crate) fn new_doc_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:016x}{:08x}{:08x}", nanos, std::process::id(), n as u32)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DataFolder>()?;
    m.add_class::<PyDatabase>()?;
    m.add_class::<crate::transaction::PyTransaction>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    let _ = (kv_error, rdf_error);
    Ok(())
}
