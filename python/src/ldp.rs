//! LDP resources of a database, in process (`rhizome.Ldp(db)`; the
//! Python side, `rhizome/_ldp.py`, turns triples into rdflib graphs).
//!
//! The same model as `/{db}/_ldp/` (`rhizome-server/src/ldp`), on
//! `rhizome-ldp` directly: a resource is the document whose id is its IRI
//! under `<base>/<db>/_ldp/`, its graph of that IRI; containment comes
//! from the children index that the database's projector keeps in every
//! write. ETags are the server's (`rhizome_ldp::etag`), so an ETag seen
//! over HTTP works here and the other way round. What this door does not
//! do (yet): non-RDF sources, direct and indirect containers (creating
//! them, and membership triples in reads), PATCH.

use crate::errors::{doc_error, rdf_error, Conflict, NotFound, RhizomeError};
use crate::terms::{predicate_from_py, subject_from_py, term_from_py, term_to_py, PyTriple};
use oxrdf::{NamedNode, NamedOrBlankNode, Term, Triple};
use pyo3::exceptions::{PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rhizome_docs::{Database, DocError};
use rhizome_ldp::constraints::client_triples;
use rhizome_ldp::{index, storage, vocab, InteractionModel, LdpError, LdpPath};
use rhizome_rdf::{DecodeCache, QuadPattern};
use std::sync::Arc;

/// The most resources one delete removes (a container and its
/// descendants), as over HTTP.

/// Why an LDP call failed; becomes a Python exception at the edge.
enum Fail {
    /// `if_match` is not the current ETag (HTTP's 412): `Conflict`.
    Precondition(String),
    /// Server-managed triples, a parent that is no container, a reused
    /// URI (HTTP's 409): `ValueError`.
    Refused(String),
    NotFound(String),
    Doc(DocError),
    Store(rhizome_rdf::Error),
    Ldp(LdpError),
}

impl From<DocError> for Fail {
    fn from(e: DocError) -> Self {
        Fail::Doc(e)
    }
}

impl From<rhizome_rdf::Error> for Fail {
    fn from(e: rhizome_rdf::Error) -> Self {
        Fail::Store(e)
    }
}

impl From<LdpError> for Fail {
    fn from(e: LdpError) -> Self {
        match e {
            LdpError::Constraint(reason) => Fail::Refused(reason),
            other => Fail::Ldp(other),
        }
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Precondition(m) => Conflict::new_err(m),
            Fail::Refused(m) => PyValueError::new_err(m),
            Fail::NotFound(m) => NotFound::new_err(m),
            Fail::Doc(e) => doc_error(e),
            Fail::Store(e) => rdf_error(e),
            Fail::Ldp(e) => RhizomeError::new_err(e.to_string()),
        }
    }
}

/// A database's LDP resources (`rhizome.Ldp(db)` wraps it).
#[pyclass(frozen, name = "LdpResources", module = "rhizome")]
pub struct PyLdp {
    db: Arc<Database>,
    /// `<base>/<db>/_ldp/`, the root container's IRI.
    root: String,
    read_only: bool,
    /// The database's name, for its validation functions' `userCtx`.
    name: String,
}

impl PyLdp {
    pub fn new(db: Arc<Database>, root: String, read_only: bool, name: String) -> PyLdp {
        PyLdp { db, root, read_only, name }
    }

    fn user_ctx(&self) -> serde_json::Value {
        crate::docs::admin_ctx(&self.name)
    }

    /// A path (`/a/b`, names as they are, encoded here) or the resource's
    /// IRI; segments starting with `_` are reserved, as over HTTP.
    fn path(&self, path: &str) -> PyResult<LdpPath> {
        if path.contains("://") {
            return LdpPath::from_iri(&self.root, path).ok_or_else(|| PyValueError::new_err(format!("{path} is not under this database's LDP root {}", self.root)));
        }
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if let Some(s) = segments.iter().find(|s| s.starts_with('_')) {
            return Err(PyValueError::new_err(format!("path segments starting with _ ({s}) are reserved")));
        }
        LdpPath::from_segments(&segments).map_err(PyValueError::new_err)
    }

    fn writable(&self) -> PyResult<()> {
        if self.read_only {
            return Err(PyPermissionError::new_err("the database was opened read-only: writes are refused"));
        }
        Ok(())
    }
}

fn check_if_match(wanted: Option<&str>, current: Option<&str>, iri: &str) -> Result<(), Fail> {
    let Some(wanted) = wanted else { return Ok(()) };
    if wanted == "*" && current.is_some() || Some(wanted) == current {
        return Ok(());
    }
    Err(Fail::Precondition(format!("if_match {wanted} is not the ETag of {iri}, {} (read it again)", current.unwrap_or("none: it does not exist"))))
}

fn model_arg(container: bool) -> InteractionModel {
    if container {
        InteractionModel::BasicContainer
    } else {
        InteractionModel::RdfSource
    }
}

/// Triples from Python: `Triple`s or 3-tuples of Rhizome terms.
fn triples_from_py(triples: &Bound<'_, PyAny>) -> PyResult<Vec<Triple>> {
    let mut out = Vec::new();
    for item in triples.try_iter()? {
        let item = item?;
        if let Ok(t) = item.cast::<PyTriple>() {
            out.push(t.get().inner.clone());
            continue;
        }
        let (s, p, o): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        out.push(Triple::new(subject_from_py(&s)?, predicate_from_py(&p)?, term_from_py(&o)?));
    }
    Ok(out)
}

/// What a read returns: ETag, model IRI, and the triples (the model's
/// types, the graph, `ldp:contains` of a container's children).
struct Representation {
    etag: String,
    model: InteractionModel,
    triples: Vec<Triple>,
}

impl PyLdp {
    fn representation(&self, path: &LdpPath) -> Result<Representation, Fail> {
        let iri = path.iri(&self.root);
        let snapshot = self.db.store().snapshot()?;
        let kv = snapshot.kv();
        let Some((etag, model)) = storage::current_etag(kv, path, &iri, false)? else { return Err(Fail::NotFound(format!("no LDP resource {iri}"))) };
        if model == InteractionModel::NonRdfSource {
            return Err(Fail::Refused(format!("{iri} is a non-RDF source: read its bytes with Database.get_attachment({iri:?}, \"content\")")));
        }
        let me = NamedNode::new_unchecked(iri.clone());
        let rdf_type = NamedNode::new_unchecked(vocab::RDF_TYPE);
        let mut triples: Vec<Triple> = model.type_iris().iter().map(|t| Triple::new(me.clone(), rdf_type.clone(), NamedNode::new_unchecked(*t))).collect();
        let mut cache = DecodeCache::new(&snapshot);
        if let Some(g) = snapshot.lookup(me.as_ref().into())? {
            for q in snapshot.scan(QuadPattern { g: Some(g), ..Default::default() }) {
                let quad = cache.quad(&q?)?;
                let own_type = quad.predicate == rdf_type
                    && matches!(&quad.subject, NamedOrBlankNode::NamedNode(n) if *n == me)
                    && matches!(&quad.object, Term::NamedNode(n) if n.as_str().starts_with(vocab::LDP));
                if !own_type {
                    triples.push(Triple::new(quad.subject, quad.predicate, quad.object));
                }
            }
        }
        if model.is_container() {
            let contains = NamedNode::new_unchecked(vocab::CONTAINS);
            index::for_each_child(kv, path, |child| {
                triples.push(Triple::new(me.clone(), contains.clone(), NamedNode::new_unchecked(child.iri(&self.root))));
                Ok(true)
            })?;
        }
        Ok(Representation { etag, model, triples })
    }

    /// Creates `path` (its parent must be a container); its ETag.
    fn create(&self, path: &LdpPath, model: InteractionModel, triples: Vec<Triple>) -> Result<String, Fail> {
        let iri = path.iri(&self.root);
        let parent = path.parent().ok_or_else(|| Fail::Refused("the root container always exists".into()))?;
        let triples = client_triples(&iri, model, triples, &|_| false)?;
        rhizome_views::validate::rdf_write_validated(&self.db, &self.user_ctx(), rhizome_docs::Writer::Admin, rhizome_views::Limits::from_env(), rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| -> Result<(), Fail> {
            match index::get_or_root(txn.reader(), &parent)? {
                Some(e) if e.model.is_container() => {}
                Some(_) => return Err(Fail::Refused(format!("{} is not a container", parent.iri(&self.root)))),
                None => return Err(Fail::Refused(format!("the parent container {} does not exist", parent.iri(&self.root)))),
            }
            if index::get(txn.reader(), path)?.is_some() {
                return Err(Fail::Precondition(format!("{iri} exists")));
            }
            if storage::doc_known(txn.reader(), &iri)? {
                return Err(Fail::Refused(format!("{iri} was deleted; the URI of a deleted resource is not reused (create it under another name)")));
            }
            Ok(storage::write_graph(txn, &iri, model, &triples)?)
        })?;
        self.etag_now(path)
    }

    fn etag_now(&self, path: &LdpPath) -> Result<String, Fail> {
        let iri = path.iri(&self.root);
        let snapshot = self.db.store().snapshot()?;
        storage::current_etag(snapshot.kv(), path, &iri, false)?.map(|(e, _)| e).ok_or_else(|| Fail::NotFound(format!("{iri} went away")))
    }
}

#[pymethods]
impl PyLdp {
    /// The root container's IRI.
    #[getter]
    fn root(&self) -> &str {
        &self.root
    }

    /// The IRI of the resource at ``path``.
    fn iri(&self, path: &str) -> PyResult<String> {
        Ok(self.path(path)?.iri(&self.root))
    }

    /// The resource's ETag, or None when it does not exist.
    fn etag(&self, py: Python<'_>, path: &str) -> PyResult<Option<String>> {
        let path = self.path(path)?;
        let iri = path.iri(&self.root);
        let db = self.db.clone();
        let found = py.detach(move || -> Result<_, Fail> {
            let snapshot = db.store().snapshot()?;
            Ok(storage::current_etag(snapshot.kv(), &path, &iri, false)?)
        })?;
        Ok(found.map(|(e, _)| e))
    }

    /// ``(etag, model_iri, [Triple])``: the resource as a GET gives it.
    ///
    /// :raises NotFound: no resource there.
    fn read<'py>(&self, py: Python<'py>, path: &str) -> PyResult<(String, String, Bound<'py, PyList>)> {
        let path = self.path(path)?;
        let r = py.detach(|| self.representation(&path))?;
        let list = PyList::empty(py);
        for t in r.triples {
            list.append(Py::new(py, PyTriple { inner: t })?)?;
        }
        Ok((r.etag, r.model.iri().to_owned(), list))
    }

    /// ``(etag, model_iri, subjects, predicates, objects)``: the same as
    /// ``read`` as three parallel lists, IRIs as ``str`` and other terms
    /// as Rhizome's; a run of equal terms is one shared object (what the
    /// rdflib conversion wants).
    fn read_columns<'py>(&self, py: Python<'py>, path: &str) -> PyResult<(String, String, Bound<'py, PyList>, Bound<'py, PyList>, Bound<'py, PyList>)> {
        let path = self.path(path)?;
        let r = py.detach(|| self.representation(&path))?;
        let (s, p, o) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
        let mut last: [Option<(Term, Py<PyAny>)>; 3] = [None, None, None];
        let mut term = |i: usize, t: Term| -> PyResult<Py<PyAny>> {
            if let Some((prev, obj)) = &last[i] {
                if *prev == t {
                    return Ok(obj.clone_ref(py));
                }
            }
            let obj = match &t {
                // A plain str: the rdflib conversion makes a URIRef of it
                // directly (a NamedNode object first would cost as much
                // again).
                Term::NamedNode(n) => PyString::new(py, n.as_str()).into_any().unbind(),
                other => term_to_py(py, other.clone())?,
            };
            last[i] = Some((t, obj.clone_ref(py)));
            Ok(obj)
        };
        for t in r.triples {
            s.append(term(0, t.subject.into())?)?;
            p.append(term(1, t.predicate.into())?)?;
            o.append(term(2, t.object)?)?;
        }
        Ok((r.etag, r.model.iri().to_owned(), s, p, o))
    }

    /// Creates or replaces the resource at ``path`` with ``triples``
    /// (``Triple``s or 3-tuples of terms); returns its new ETag.
    /// ``container=True`` creates a basic container (a new resource only).
    ///
    /// :raises Conflict: ``if_match`` is not the current ETag.
    /// :raises ValueError: server-managed triples (``ldp:contains``,
    ///     another model's type), no container above, a deleted URI.
    #[pyo3(signature = (path, triples, *, if_match=None, container=false))]
    fn put(&self, py: Python<'_>, path: &str, triples: &Bound<'_, PyAny>, if_match: Option<String>, container: bool) -> PyResult<String> {
        self.writable()?;
        let path = self.path(path)?;
        let triples = triples_from_py(triples)?;
        let iri = path.iri(&self.root);
        let etag = py.detach(|| -> Result<String, Fail> {
            let snapshot = self.db.store().snapshot()?;
            let current = storage::current_etag(snapshot.kv(), &path, &iri, false)?;
            drop(snapshot);
            check_if_match(if_match.as_deref(), current.as_ref().map(|(e, _)| e.as_str()), &iri)?;
            let Some((_, model)) = current else { return self.create(&path, model_arg(container), triples) };
            if model == InteractionModel::NonRdfSource {
                return Err(Fail::Refused(format!("{iri} is a non-RDF source: write its bytes with Database.put_attachment")));
            }
            if container && !model.is_container() {
                return Err(Fail::Refused(format!("{iri} is an {}; its interaction model cannot become a container", model.iri())));
            }
            if model.has_membership() {
                return Err(Fail::Refused(format!("{iri} is an {}: write it over HTTP (/{{db}}/_ldp/), which keeps its membership settings", model.iri())));
            }
            let is_child = |c: &str| LdpPath::from_iri(&self.root, c).is_some_and(|p| p.iri(&self.root) == c && p.parent().as_ref() == Some(&path));
            let triples = client_triples(&iri, model, triples, &is_child)?;
            rhizome_views::validate::rdf_write_validated(&self.db, &self.user_ctx(), rhizome_docs::Writer::Admin, rhizome_views::Limits::from_env(), rhizome_docs::EmptiedGraphs::KeepDocumentData, |txn| -> Result<(), Fail> {
                // Checked again under the write lock: the ETag seen
                // before may have changed since.
                let now = storage::current_etag(txn.reader(), &path, &iri, false)?;
                check_if_match(if_match.as_deref(), now.as_ref().map(|(e, _)| e.as_str()), &iri)?;
                Ok(storage::write_graph(txn, &iri, model, &triples)?)
            })?;
            self.etag_now(&path)
        })?;
        Ok(etag)
    }

    /// Creates a child of the container at ``path`` named after ``slug``
    /// (letters, digits and ``-._~`` kept, others as ``-``; a new name
    /// when taken or missing); returns ``(child_path, etag)``.
    #[pyo3(signature = (path, triples, *, slug=None, container=false))]
    fn post(&self, py: Python<'_>, path: &str, triples: &Bound<'_, PyAny>, slug: Option<String>, container: bool) -> PyResult<(String, String)> {
        self.writable()?;
        let path = self.path(path)?;
        let triples = triples_from_py(triples)?;
        let out = py.detach(|| -> Result<(String, String), Fail> {
            let iri = path.iri(&self.root);
            let snapshot = self.db.store().snapshot()?;
            let Some(entry) = index::get_or_root(snapshot.kv(), &path)? else { return Err(Fail::NotFound(format!("no LDP resource {iri}"))) };
            if !entry.model.is_container() {
                return Err(Fail::Refused(format!("{iri} is not a container")));
            }
            let name = match slug.as_deref().and_then(storage::slug_name) {
                Some(n) if index::get(snapshot.kv(), &path.child(&n))?.is_none() && !storage::doc_known(snapshot.kv(), &path.child(&n).iri(&self.root))? => n,
                _ => new_name(),
            };
            drop(snapshot);
            let child = path.child(&name);
            let etag = self.create(&child, model_arg(container), triples)?;
            Ok((format!("/{}", child.as_str()), etag))
        })?;
        Ok(out)
    }

    /// Deletes the resource (a container with its descendants, up to
    /// 10000 resources).
    ///
    /// :raises Conflict: ``if_match`` is not the current ETag.
    #[pyo3(signature = (path, *, if_match=None))]
    fn delete(&self, py: Python<'_>, path: &str, if_match: Option<String>) -> PyResult<()> {
        self.writable()?;
        let path = self.path(path)?;
        py.detach(|| -> Result<(), Fail> {
            let iri = path.iri(&self.root);
            if path.is_root() {
                return Err(Fail::Refused("the root container cannot be deleted".into()));
            }
            let snapshot = self.db.store().snapshot()?;
            let kv = snapshot.kv();
            let Some((etag, _)) = storage::current_etag(kv, &path, &iri, false)? else { return Err(Fail::NotFound(format!("no LDP resource {iri}"))) };
            check_if_match(if_match.as_deref(), Some(&etag), &iri)?;
            let docs = storage::deletions(kv, &path, &self.root)?;
            drop(snapshot);
            let db = &self.db;
            for (id, outcome) in rhizome_views::validate::write_unless_refused(db, &self.user_ctx(), docs, rhizome_views::Limits::from_env(), |docs| db.update_docs_as(docs, true, rhizome_docs::Writer::Admin))? {
                if let Err(e) = outcome {
                    return Err(match e {
                        DocError::Conflict => Fail::Precondition(format!("{id} changed during the delete; read it again")),
                        other => Fail::Doc(other),
                    });
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!("<rhizome.LdpResources {}>", self.root)
    }
}

/// A fresh name for a child without a (free) slug.
fn new_name() -> String {
    crate::docs::new_doc_id()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLdp>()?;
    Ok(())
}
