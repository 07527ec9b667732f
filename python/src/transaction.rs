//! `db.transaction()`: an in-process transaction over documents and
//! quads (issue 45), on `rhizome_docs::DocTransaction`. Reads see the
//! snapshot the transaction began at (and its own writes); `commit`
//! writes everything in one durable commit, or raises `Conflict` (nothing
//! written) when a document it read or writes changed since. As a
//! context manager it commits when the block ends without an exception
//! and writes nothing otherwise.

use crate::errors::{doc_error, RhizomeError};
use crate::json::{map_from_py, map_to_py};
use crate::terms::{quad_from_py, term_from_py, PyQuad};
use pyo3::exceptions::{PyPermissionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rhizome_docs::{Database, DocError, DocTransaction, Writer};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};

/// A transaction: ``with db.transaction() as t: ...``.
#[pyclass(frozen, name = "Transaction", module = "rhizome")]
pub struct PyTransaction {
    txn: Mutex<Option<DocTransaction<Arc<Database>>>>,
    name: String,
}

impl PyTransaction {
    pub fn begin(db: Arc<Database>, name: &str, read_only: bool) -> PyResult<PyTransaction> {
        if read_only {
            return Err(PyPermissionError::new_err(format!("database {name} was opened read-only: writes are refused")));
        }
        // As every write from Python: a database admin's (the process owns
        // the data folder), under the same rights rules as the server's.
        let txn = DocTransaction::new_as(db, Writer::Admin).map_err(doc_error)?;
        Ok(PyTransaction { txn: Mutex::new(Some(txn)), name: name.to_owned() })
    }

    fn with<T>(&self, f: impl FnOnce(&mut DocTransaction<Arc<Database>>) -> Result<T, DocError>) -> PyResult<T> {
        let mut guard = self.txn.lock().map_err(|_| RhizomeError::new_err("a thread panicked inside this transaction"))?;
        let txn = guard.as_mut().ok_or_else(|| RhizomeError::new_err("the transaction has ended (committed or rolled back)"))?;
        f(txn).map_err(doc_error)
    }
}

#[pymethods]
impl PyTransaction {
    /// The document ``doc_id`` as of the transaction's snapshot (or as
    /// this transaction wrote it); ``None`` when missing or deleted.
    fn get(&self, py: Python<'_>, doc_id: &str) -> PyResult<Option<Py<PyAny>>> {
        let doc = self.with(|t| t.get(doc_id))?;
        doc.map(|d| map_to_py(py, &d)).transpose()
    }

    /// Writes a document (its ``_rev``, if given, must be the revision
    /// the transaction read).
    #[pyo3(signature = (doc, *, doc_id=None))]
    fn put(&self, doc: &Bound<'_, PyAny>, doc_id: Option<String>) -> PyResult<()> {
        let mut doc: Map<String, Value> = map_from_py(doc, "a document")?;
        if let Some(id) = doc_id {
            doc.insert("_id".into(), Value::String(id));
        }
        match doc.get("_id") {
            Some(Value::String(_)) => {}
            Some(_) => return Err(PyTypeError::new_err("_id must be a string")),
            None => return Err(PyValueError::new_err("the document has no _id (give one, or doc_id=)")),
        }
        self.with(|t| t.put(doc))
    }

    /// Deletes the document ``doc_id``.
    fn delete(&self, doc_id: &str) -> PyResult<()> {
        self.with(|t| t.delete(doc_id))
    }

    /// Adds a quad (a ``rhizome.Quad`` or a 4-tuple of terms); its graph
    /// becomes a new revision of its document at commit.
    fn add(&self, quad: &Bound<'_, PyAny>) -> PyResult<()> {
        let q = quad_from_py(quad)?;
        self.with(|t| {
            t.insert_quad(q.as_ref());
            Ok(())
        })
    }

    /// Removes a quad.
    fn remove(&self, quad: &Bound<'_, PyAny>) -> PyResult<()> {
        let q = quad_from_py(quad)?;
        self.with(|t| {
            t.remove_quad(q.as_ref());
            Ok(())
        })
    }

    /// The quads matching a pattern at the transaction's snapshot.
    #[pyo3(signature = (subject=None, predicate=None, object=None, graph_name=None))]
    fn quads(
        &self,
        py: Python<'_>,
        subject: Option<&Bound<'_, PyAny>>,
        predicate: Option<&Bound<'_, PyAny>>,
        object: Option<&Bound<'_, PyAny>>,
        graph_name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyQuad>> {
        let term = |o: Option<&Bound<'_, PyAny>>| o.filter(|o| !o.is_none()).map(term_from_py).transpose();
        let (s, p, o, g) = (term(subject)?, term(predicate)?, term(object)?, term(graph_name)?);
        let quads = self.with(|t| t.quads(s.as_ref(), p.as_ref(), o.as_ref(), g.as_ref()))?;
        quads.into_iter().map(|q| PyQuad::from_quad(py, q)).collect()
    }

    /// Writes everything in one durable commit; returns ``{doc_id: rev}``
    /// of the documents written.
    ///
    /// :raises Conflict: a document it read or writes changed since the
    ///     transaction began (nothing is written; retry from the start).
    /// :raises Forbidden: a validation function refused a new revision.
    fn commit(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let txn = self
            .txn
            .lock()
            .map_err(|_| RhizomeError::new_err("a thread panicked inside this transaction"))?
            .take()
            .ok_or_else(|| RhizomeError::new_err("the transaction has ended (committed or rolled back)"))?;
        let name = self.name.clone();
        let written = py.detach(move || commit_validated(txn, &name)).map_err(doc_error)?;
        let out = PyDict::new(py);
        for (id, rev) in written {
            out.set_item(id, rev.to_string())?;
        }
        Ok(out.into_any().unbind())
    }

    /// Ends the transaction without writing anything.
    fn rollback(&self) -> PyResult<()> {
        self.txn.lock().map_err(|_| RhizomeError::new_err("a thread panicked inside this transaction"))?.take();
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(&self, py: Python<'_>, kind: &Bound<'_, PyAny>, _value: &Bound<'_, PyAny>, _tb: &Bound<'_, PyAny>) -> PyResult<bool> {
        let open = self.txn.lock().map_err(|_| RhizomeError::new_err("a thread panicked inside this transaction"))?.is_some();
        if kind.is_none() && open {
            self.commit(py)?;
        } else {
            self.rollback()?;
        }
        Ok(false)
    }
}

/// Commits with the database's validation functions shown every new
/// revision (as the server's writes and `Database.put` do), as an admin.
fn commit_validated(txn: DocTransaction<Arc<Database>>, name: &str) -> Result<Vec<(String, rhizome_docs::Rev)>, DocError> {
    let db = txn.database().clone();
    let validators = if db.may_have_design_docs() {
        rhizome_views::validate::Validators::new(&rhizome_views::validate::design_docs(&db)?, rhizome_views::Limits::from_env())
            .map_err(|e| DocError::Coded { status: 400, error: e.error(), reason: e.to_string() })?
    } else {
        None
    };
    let Some(mut validators) = validators else { return txn.commit(None) };
    let (user_ctx, sec_obj) = (crate::docs::admin_ctx(name), db.security()?);
    let mut check = |new: &Map<String, Value>, old: Option<&Map<String, Value>>| validators.check_revision(new, old, &user_ctx, &sec_obj);
    txn.commit(Some(&mut check))
}
