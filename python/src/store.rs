//! `rhizome.Store`: the RDF store, shaped like pyoxigraph's `Store`.
//!
//! Every call that reads or writes the store runs without the GIL
//! (`Python::detach`), so other Python threads go on meanwhile. Reads are
//! on snapshots: a `quads_for_pattern` iterator sees the store as it was
//! when it was made, whatever other threads write after. Query results are
//! computed whole (without the GIL) and handed out row by row.

use crate::errors::{rdf_error, sparql_error};
use crate::terms::{graph_from_py, quad_from_py, subject_from_py, term_from_py, term_to_py, predicate_from_py, PyLiteral, PyNamedNode, PyQuad, PyTriple, PyVariable};
use rustc_hash::FxHashMap;
use oxrdf::{GraphName, NamedOrBlankNode, Term, Triple, Variable};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rhizome_rdf::{DatasetMode, DumpOptions, LoadInput, LoadOptions, QuadPattern, QuadScan, RdfFormat, StoreSnapshot, TermId};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, Statistics};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// An RDF format from its name (``turtle``, ``ntriples``, ``nquads``,
/// ``trig``, ``rdfxml``, ``jsonld``), media type or file extension.
pub fn format_from_py(name: &str) -> PyResult<RdfFormat> {
    rhizome_rdf::format_from_name(name)
        .or_else(|| RdfFormat::from_media_type(name))
        .or_else(|| RdfFormat::from_extension(name.trim_start_matches('.')))
        .ok_or_else(|| PyValueError::new_err(format!("unknown RDF format {name:?} (turtle, ntriples, nquads, trig, rdfxml, jsonld, or a media type)")))
}

/// An RDF store on disk (``Store("folder")``) or in memory (``Store()``).
///
/// A new store is a plain RDF dataset (the default graph is a graph of its
/// own, as in pyoxigraph) unless ``mode="union"`` (the document model of
/// ``rhizome serve``: triples without a graph go to their subject's graph
/// and the default graph is the union of all graphs). An existing store
/// keeps its mode. One process opens a store folder at a time
/// (``StoreLocked`` otherwise); ``Store.read_only(path)`` opens it without
/// writing anything.
#[pyclass(frozen, name = "Store", module = "rhizome")]
pub struct PyStore {
    pub inner: StoreHandle,
    blanks: Arc<std::sync::Mutex<BlankIds>>,
    read_only: bool,
}

impl PyStore {
    pub fn over(inner: StoreHandle, read_only: bool) -> Self {
        PyStore { inner, blanks: Arc::default(), read_only }
    }

    fn writable(&self) -> PyResult<()> {
        if self.read_only {
            return Err(pyo3::exceptions::PyPermissionError::new_err(match self.inner {
                StoreHandle::Own(_) => "the store was opened read-only: writes are refused",
                StoreHandle::Database(_) => "a database's store is for reading: write documents, or RDF with Database.update(), so that documents follow",
            }));
        }
        Ok(())
    }
}

/// A store of its own, or the store under a database's documents.
#[derive(Clone)]
pub enum StoreHandle {
    Own(Arc<rhizome_rdf::Store>),
    Database(Arc<rhizome_docs::Database>),
}

impl std::ops::Deref for StoreHandle {
    type Target = rhizome_rdf::Store;
    fn deref(&self) -> &rhizome_rdf::Store {
        match self {
            StoreHandle::Own(s) => s,
            StoreHandle::Database(db) => db.store(),
        }
    }
}

fn to_id(snapshot: &StoreSnapshot, blanks: &BlankIds, term: Option<Term>) -> PyResult<Option<Option<TermId>>> {
    // Outer None: no constraint; Some(None): a term the store lacks.
    match term {
        None => Ok(None),
        Some(Term::BlankNode(b)) if blanks.contains_key(b.as_str()) => Ok(Some(blanks.get(b.as_str()).copied())),
        Some(t) => Ok(Some(snapshot.lookup(t.as_ref()).map_err(rdf_error)?)),
    }
}

fn optional<'py, T>(o: Option<&Bound<'py, PyAny>>, f: impl Fn(&Bound<'py, PyAny>) -> PyResult<T>) -> PyResult<Option<T>> {
    match o {
        Some(o) if !o.is_none() => f(o).map(Some),
        _ => Ok(None),
    }
}

enum LoadSource {
    Path(PathBuf),
    Data(Vec<u8>),
}

fn load_source(input: &Bound<'_, PyAny>) -> PyResult<LoadSource> {
    if let Ok(b) = input.cast::<PyBytes>() {
        return Ok(LoadSource::Data(b.as_bytes().to_vec()));
    }
    if input.cast::<PyString>().is_ok() || input.hasattr("__fspath__")? {
        return Ok(LoadSource::Path(input.extract::<PathBuf>()?));
    }
    if input.hasattr("read")? {
        let data = input.call_method0("read")?;
        if let Ok(b) = data.cast::<PyBytes>() {
            return Ok(LoadSource::Data(b.as_bytes().to_vec()));
        }
        if let Ok(s) = data.cast::<PyString>() {
            return Ok(LoadSource::Data(s.extract::<String>()?.into_bytes()));
        }
        return Err(PyTypeError::new_err("the file's read() returned neither bytes nor str"));
    }
    Err(PyTypeError::new_err("load() takes a path (str or os.PathLike), bytes, or a file opened for reading"))
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (path=None, *, mode=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>, mode: Option<&str>) -> PyResult<Self> {
        let mode = match mode {
            None => None,
            Some("plain") => Some(DatasetMode::Plain),
            Some("union") => Some(DatasetMode::Union),
            Some(m) => return Err(PyValueError::new_err(format!("mode is \"plain\" or \"union\", not {m:?}"))),
        };
        let store = match path {
            None => rhizome_rdf::Store::memory(mode.unwrap_or(DatasetMode::Plain)),
            Some(p) => py.detach(|| {
                let exists = p.join("CURRENT").exists();
                rhizome_rdf::Store::open_or_create(&p, if exists { mode } else { Some(mode.unwrap_or(DatasetMode::Plain)) })
            })
            .map_err(rdf_error)?,
        };
        Ok(PyStore::over(StoreHandle::Own(Arc::new(store)), false))
    }

    /// Opens an existing store for reading only: nothing is written, and
    /// writers (``rhizome serve``, loads) are kept out while it is open.
    #[staticmethod]
    fn read_only(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let store = py.detach(|| rhizome_rdf::Store::open_read_only(&path)).map_err(rdf_error)?;
        Ok(PyStore::over(StoreHandle::Own(Arc::new(store)), true))
    }

    /// ``"plain"`` or ``"union"`` (see the class).
    #[getter]
    fn mode(&self) -> &'static str {
        match self.inner.mode() {
            DatasetMode::Plain => "plain",
            DatasetMode::Union => "union",
        }
    }

    /// Loads RDF with the bulk loader, all or nothing.
    ///
    /// :param input: a path (str or os.PathLike), bytes, or a file opened
    ///     for reading.
    /// :param format: ``turtle``, ``ntriples``, ``nquads``, ``trig``,
    ///     ``rdfxml``, ``jsonld`` or a media type; guessed from a path's
    ///     extension when left out, required for bytes and files.
    /// :param base_iri: to resolve relative IRIs against.
    /// :param to_graph: a graph for the triples (and default-graph quads).
    /// :param lenient: skip bad statements instead of loading nothing.
    /// :returns: a dict: quads_read, quads_added, terms_added, graphs_added,
    ///     skipped, seconds.
    /// :raises SyntaxError: bad RDF, with its file, line and column.
    #[pyo3(signature = (input=None, format=None, *, path=None, base_iri=None, to_graph=None, lenient=false))]
    #[allow(clippy::too_many_arguments)]
    fn load<'py>(
        &self,
        py: Python<'py>,
        input: Option<&Bound<'py, PyAny>>,
        format: Option<&str>,
        path: Option<PathBuf>,
        base_iri: Option<String>,
        to_graph: Option<&Bound<'py, PyAny>>,
        lenient: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        self.writable()?;
        let source = match (input, path) {
            (Some(i), None) => load_source(i)?,
            (None, Some(p)) => LoadSource::Path(p),
            _ => return Err(PyTypeError::new_err("load() takes either input or path=")),
        };
        let mut options = LoadOptions { base_iri, lenient, ..LoadOptions::default() };
        if let Some(f) = format {
            options.format = Some(format_from_py(f)?);
        }
        if let Some(g) = optional(to_graph, graph_from_py)? {
            match g {
                GraphName::NamedNode(n) => options.graph = Some(n),
                GraphName::DefaultGraph => {}
                GraphName::BlankNode(_) => return Err(PyValueError::new_err("to_graph must be a NamedNode (or DefaultGraph)")),
            }
        }
        if matches!(source, LoadSource::Data(_)) && options.format.is_none() {
            return Err(PyValueError::new_err("load() of bytes or a file needs format="));
        }
        let store = self.inner.clone();
        let summary = py
            .detach(move || -> Result<rhizome_rdf::LoadSummary, PyErrLater> {
                match source {
                    LoadSource::Path(p) => {
                        if !p.is_file() {
                            return Err(PyErrLater::Os(format!("cannot read {}: no such file", p.display())));
                        }
                        store.load(&[LoadInput { path: p }], &options).map_err(PyErrLater::Rdf)
                    }
                    LoadSource::Data(bytes) => {
                        // The loader reads files (in parallel chunks); data
                        // given in memory goes through a temporary one.
                        let mut tmp = tempfile::NamedTempFile::new().map_err(|e| PyErrLater::Os(e.to_string()))?;
                        tmp.write_all(&bytes).map_err(|e| PyErrLater::Os(e.to_string()))?;
                        tmp.flush().map_err(|e| PyErrLater::Os(e.to_string()))?;
                        store.load(&[LoadInput { path: tmp.path().to_owned() }], &options).map_err(|e| match e {
                            // The temporary file's name means nothing to the caller.
                            rhizome_rdf::Error::Syntax(mut issue) => {
                                issue.file = "<input>".into();
                                PyErrLater::Rdf(rhizome_rdf::Error::Syntax(issue))
                            }
                            e => PyErrLater::Rdf(e),
                        })
                    }
                }
            })
            .map_err(PyErrLater::into_py)?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("quads_read", summary.quads_read)?;
        d.set_item("quads_added", summary.quads_added)?;
        d.set_item("terms_added", summary.terms_added)?;
        d.set_item("graphs_added", summary.graphs_added)?;
        d.set_item("skipped", summary.skipped)?;
        d.set_item("seconds", summary.seconds)?;
        Ok(d)
    }

    /// Adds a quad (a Triple goes to the default graph), in one durable
    /// transaction.
    fn add(&self, py: Python<'_>, quad: &Bound<'_, PyAny>) -> PyResult<()> {
        let quads = vec![quad_from_py(quad)?];
        self.write(py, quads, true).map(|_| ())
    }

    /// Adds many quads in one transaction (all or nothing); returns how
    /// many were new.
    fn extend(&self, py: Python<'_>, quads: &Bound<'_, PyAny>) -> PyResult<u64> {
        let quads = quads.try_iter()?.map(|q| quad_from_py(&q?)).collect::<PyResult<Vec<_>>>()?;
        self.write(py, quads, true)
    }

    /// Removes a quad, if present.
    fn remove(&self, py: Python<'_>, quad: &Bound<'_, PyAny>) -> PyResult<()> {
        let quads = vec![quad_from_py(quad)?];
        self.write(py, quads, false).map(|_| ())
    }

    /// The quads matching a pattern (None matches anything), as a lazy
    /// iterator over a snapshot taken now.
    ///
    /// :param graph_name: a graph, or ``DefaultGraph()`` (in a union store
    ///     the default graph is every graph).
    #[pyo3(signature = (subject=None, predicate=None, object=None, graph_name=None))]
    fn quads_for_pattern(
        &self,
        py: Python<'_>,
        subject: Option<&Bound<'_, PyAny>>,
        predicate: Option<&Bound<'_, PyAny>>,
        object: Option<&Bound<'_, PyAny>>,
        graph_name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<QuadIter> {
        let s = optional(subject, |o| subject_from_py(o).map(Term::from))?;
        let p = optional(predicate, |o| predicate_from_py(o).map(Term::from))?;
        let o = optional(object, term_from_py)?;
        let g = optional(graph_name, graph_from_py)?;
        let store = self.inner.clone();
        let mode = store.mode();
        // The ids this object gave to the pattern's blank nodes (only
        // those: the map can be large).
        let blanks: BlankIds = {
            let all = self.blanks.lock().map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("a thread panicked while writing"))?;
            let mut labels: Vec<&str> = Vec::new();
            if let Some(Term::BlankNode(b)) = &s {
                labels.push(b.as_str());
            }
            if let Some(Term::BlankNode(b)) = &o {
                labels.push(b.as_str());
            }
            if let Some(GraphName::BlankNode(b)) = &g {
                labels.push(b.as_str());
            }
            labels.into_iter().filter_map(|l| all.get(l).map(|id| (l.to_owned(), *id))).collect()
        };
        let (snapshot, pattern) = py.detach(move || -> PyResult<(Arc<StoreSnapshot>, Option<QuadPattern>)> {
            let snapshot = Arc::new(store.snapshot().map_err(rdf_error)?);
            let mut pattern = QuadPattern::default();
            let mut missing = false;
            for (term, slot) in [(s, &mut pattern.s), (p, &mut pattern.p), (o, &mut pattern.o)] {
                match to_id(&snapshot, &blanks, term)? {
                    None => {}
                    Some(Some(id)) => *slot = Some(id),
                    Some(None) => missing = true,
                }
            }
            match g {
                None => {}
                Some(GraphName::DefaultGraph) => {
                    if mode == DatasetMode::Plain {
                        pattern.g = Some(TermId::DEFAULT_GRAPH)
                    }
                }
                Some(g) => {
                    let t: Term = match g {
                        GraphName::NamedNode(n) => n.into(),
                        GraphName::BlankNode(b) => b.into(),
                        GraphName::DefaultGraph => unreachable!("matched above"),
                    };
                    match to_id(&snapshot, &blanks, Some(t))? {
                        Some(Some(id)) => pattern.g = Some(id),
                        _ => missing = true,
                    }
                }
            }
            Ok((snapshot, if missing { None } else { Some(pattern) }))
        })?;
        Ok(QuadIter::new(snapshot, pattern))
    }

    /// Runs a SPARQL query on a snapshot.
    ///
    /// :returns: ``QuerySolutions`` for SELECT (iterable, with
    ///     ``variables``), a bool for ASK, ``QueryTriples`` for CONSTRUCT
    ///     and DESCRIBE.
    /// :param timeout_ms: stop the query after this many milliseconds.
    /// :raises SyntaxError: a query that does not parse, with its position.
    /// :param default_graph: a NamedNode or a list of them: the default
    ///     graph is their union, as if the query said FROM for each.
    #[pyo3(signature = (query, *, base_iri=None, timeout_ms=None, default_graph=None))]
    fn query(&self, py: Python<'_>, query: &str, base_iri: Option<String>, timeout_ms: Option<u64>, default_graph: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let text = query.to_owned();
        let from: Option<Vec<oxrdf::NamedNode>> = match default_graph {
            None => None,
            Some(g) if g.is_none() => None,
            Some(g) => match g.cast::<crate::terms::PyNamedNode>() {
                Ok(n) => Some(vec![n.get().inner.clone()]),
                Err(_) => Some(g.try_iter()?.map(|x| predicate_from_py(&x?).map_err(|_| PyTypeError::new_err("default_graph is a NamedNode or a list of them"))).collect::<PyResult<Vec<_>>>()?),
            },
        };
        let store = self.inner.clone();
        let outcome = py.detach(move || {
            crate::query_threads::run(move || -> rhizome_sparql::Result<Answer> {
                let mut query = parse_query(&text, base_iri.as_deref())?;
                if let Some(from) = from {
                    set_default_graph(&mut query, from);
                }
                let stats = Statistics::from_store(&store.planner_stats()?);
                let snapshot = store.snapshot()?;
                let prepared = PreparedQuery::new(&snapshot, stats, &query)?;
                if let Some(ms) = timeout_ms {
                    prepared.set_timeout(std::time::Duration::from_millis(ms));
                }
                let answer = match prepared.execute()? {
                    QueryResults::Boolean(b) => Answer::Boolean(b),
                    QueryResults::Solutions { variables, solutions } => Answer::Solutions(variables, solutions.collect::<rhizome_sparql::Result<Vec<_>>>()?),
                    QueryResults::Graph(triples) => Answer::Graph(triples.collect::<rhizome_sparql::Result<Vec<_>>>()?),
                };
                Ok(answer)
            })
        });
        match outcome.map_err(sparql_error)? {
            Answer::Boolean(b) => Ok(pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind()),
            Answer::Solutions(variables, rows) => {
                let variables = Arc::new(variables);
                Ok(Py::new(py, QuerySolutions { variables, rows: rows.into_iter() })?.into_any())
            }
            Answer::Graph(triples) => Ok(Py::new(py, QueryTriples { triples: triples.into_iter() })?.into_any()),
        }
    }

    /// Runs a SPARQL update as one transaction; returns a dict with
    /// quads_inserted and quads_deleted.
    #[pyo3(signature = (update, *, base_iri=None))]
    fn update<'py>(&self, py: Python<'py>, update: &str, base_iri: Option<String>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        self.writable()?;
        let text = update.to_owned();
        let store = self.inner.clone();
        let summary = py
            .detach(move || {
                crate::query_threads::run(move || {
                    let update = parse_update(&text, base_iri.as_deref())?;
                    execute_update(&*store, &update)
                })
            })
            .map_err(sparql_error)?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("quads_inserted", summary.quads_inserted)?;
        d.set_item("quads_deleted", summary.quads_deleted)?;
        Ok(d)
    }

    /// Serializes the store (or one graph) from a snapshot.
    ///
    /// :param output: a path or a file opened for writing in binary mode;
    ///     None returns the bytes.
    /// :param format: ``nquads`` (default), ``trig``, ``ntriples``,
    ///     ``turtle``, ``rdfxml``, ``jsonld``; a triple format needs
    ///     ``from_graph``.
    #[pyo3(signature = (output=None, format="nquads", *, from_graph=None))]
    fn dump(&self, py: Python<'_>, output: Option<&Bound<'_, PyAny>>, format: &str, from_graph: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let format = format_from_py(format)?;
        let graph = optional(from_graph, graph_from_py)?;
        if !format.supports_datasets() && graph.is_none() {
            return Err(PyValueError::new_err(format!("{} holds one graph: give from_graph=", format.name())));
        }
        let options = DumpOptions { format, graph };
        let store = self.inner.clone();
        let path = match output {
            Some(o) if o.cast::<PyString>().is_ok() || o.hasattr("__fspath__")? => Some(o.extract::<PathBuf>()?),
            _ => None,
        };
        let bytes = py
            .detach(move || -> Result<Vec<u8>, PyErrLater> {
                let snapshot = store.snapshot().map_err(PyErrLater::Rdf)?;
                match path {
                    Some(p) => {
                        let file = std::fs::File::create(&p).map_err(|e| PyErrLater::Os(format!("cannot create {}: {e}", p.display())))?;
                        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
                        rhizome_rdf::dump(&snapshot, &options, &mut w).map_err(PyErrLater::Rdf)?;
                        w.flush().map_err(|e| PyErrLater::Os(e.to_string()))?;
                        Ok(Vec::new())
                    }
                    None => {
                        let mut out = Vec::new();
                        rhizome_rdf::dump(&snapshot, &options, &mut out).map_err(PyErrLater::Rdf)?;
                        Ok(out)
                    }
                }
            })
            .map_err(PyErrLater::into_py)?;
        match output {
            None => Ok(PyBytes::new(py, &bytes).into_any().unbind()),
            Some(o) if o.cast::<PyString>().is_ok() || o.hasattr("__fspath__")? => Ok(py.None()),
            Some(o) => {
                o.call_method1("write", (PyBytes::new(py, &bytes),))?;
                Ok(py.None())
            }
        }
    }

    /// The number of quads.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.inner.clone();
        py.detach(move || {
            let snapshot = store.snapshot()?;
            rhizome_rdf::quads_counted(snapshot.kv(), None)
        })
        .map(|n| n as usize)
        .map_err(rdf_error)
    }

    fn __contains__(&self, py: Python<'_>, quad: &Bound<'_, PyAny>) -> PyResult<bool> {
        let q = quad_from_py(quad)?;
        let s = Term::from(q.subject);
        let (p, o) = (Term::from(q.predicate), q.object);
        let g = q.graph_name;
        let py_s = term_to_py(py, s)?;
        let py_p = term_to_py(py, p)?;
        let py_o = term_to_py(py, o)?;
        let py_g = crate::terms::graph_to_py(py, g)?;
        let mut it = self.quads_for_pattern(py, Some(py_s.bind(py)), Some(py_p.bind(py)), Some(py_o.bind(py)), Some(py_g.bind(py)))?;
        Ok(it.__next__(py)?.is_some())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<QuadIter> {
        self.quads_for_pattern(py, None, None, None, None)
    }

    /// Compacts the store and recounts its statistics.
    fn optimize(&self, py: Python<'_>) -> PyResult<()> {
        self.writable()?;
        let store = self.inner.clone();
        py.detach(move || store.compact()).map_err(rdf_error)
    }

    fn __repr__(&self) -> String {
        match self.inner.path() {
            Some(p) => format!("<Store path={} mode={}>", p.display(), self.mode()),
            None => format!("<Store in memory mode={}>", self.mode()),
        }
    }
}

impl PyStore {
    fn write(&self, py: Python<'_>, quads: Vec<oxrdf::Quad>, insert: bool) -> PyResult<u64> {
        self.writable()?;
        let store = self.inner.clone();
        let blanks = self.blanks.clone();
        py.detach(move || -> rhizome_rdf::Result<u64> {
            let mut blanks = blanks.lock().map_err(|_| rhizome_rdf::Error::Invalid("a thread panicked while writing".into()))?;
            let mut new_blanks = Vec::new();
            let mut txn = store.transaction()?;
            let mut n = 0;
            let mut iris = IriIds::default();
            for q in &quads {
                if insert {
                    let ids = encode_quad(&mut txn, &blanks, &mut new_blanks, &mut iris, q)?;
                    n += u64::from(txn.insert(&ids)?);
                } else if let Some(ids) = lookup_quad(&txn, &blanks, q)? {
                    n += u64::from(txn.remove(&ids)?);
                }
            }
            txn.commit()?;
            blanks.extend(new_blanks);
            Ok(n)
        })
        .map_err(rdf_error)
    }
}

/// The store gives a blank node a fresh id per transaction; a Python
/// program that adds `BlankNode("x")` twice means one node, as in
/// pyoxigraph. So a `Store` object remembers the id each of its own labels
/// got (labels the store wrote, `b<hex>`, are its ids already).
type BlankIds = std::collections::HashMap<String, TermId>;

fn encode_term(txn: &mut rhizome_rdf::StoreTransaction<'_>, blanks: &BlankIds, new_blanks: &mut Vec<(String, TermId)>, t: oxrdf::TermRef<'_>) -> rhizome_rdf::Result<TermId> {
    if let oxrdf::TermRef::BlankNode(b) = t {
        if let Some(id) = blanks.get(b.as_str()) {
            return Ok(*id);
        }
        if let Some((_, id)) = new_blanks.iter().find(|(l, _)| l == b.as_str()) {
            return Ok(*id);
        }
        if let Some(id) = txn.lookup(t)? {
            return Ok(id);
        }
        let id = txn.encode(t)?;
        new_blanks.push((b.as_str().to_owned(), id));
        return Ok(id);
    }
    txn.encode(t)
}

/// The ids of the subjects and predicates one write has encoded: a
/// resource's quads share their subject and a few predicates, and each
/// dictionary lookup is a read of the store (a batch of 200-quad
/// resources: 600 lookups each -> about 220).
#[derive(Default)]
struct IriIds {
    subject: Option<(oxrdf::NamedNode, TermId)>,
    predicates: std::collections::HashMap<oxrdf::NamedNode, TermId>,
}

fn encode_quad(txn: &mut rhizome_rdf::StoreTransaction<'_>, blanks: &BlankIds, new_blanks: &mut Vec<(String, TermId)>, iris: &mut IriIds, q: &oxrdf::Quad) -> rhizome_rdf::Result<[TermId; 4]> {
    let s = match &q.subject {
        NamedOrBlankNode::NamedNode(n) => match &iris.subject {
            Some((last, id)) if last == n => *id,
            _ => {
                let id = txn.encode(n.as_ref().into())?;
                iris.subject = Some((n.clone(), id));
                id
            }
        },
        other => encode_term(txn, blanks, new_blanks, other.as_ref().into())?,
    };
    let p = match iris.predicates.get(&q.predicate) {
        Some(id) => *id,
        None => {
            let id = txn.encode(q.predicate.as_ref().into())?;
            iris.predicates.insert(q.predicate.clone(), id);
            id
        }
    };
    let o = encode_term(txn, blanks, new_blanks, q.object.as_ref())?;
    let g = match &q.graph_name {
        GraphName::DefaultGraph => txn.default_graph_of(s),
        GraphName::NamedNode(n) => encode_term(txn, blanks, new_blanks, n.as_ref().into())?,
        GraphName::BlankNode(b) => encode_term(txn, blanks, new_blanks, b.as_ref().into())?,
    };
    Ok([s, p, o, g])
}

fn lookup_term(txn: &rhizome_rdf::StoreTransaction<'_>, blanks: &BlankIds, t: oxrdf::TermRef<'_>) -> rhizome_rdf::Result<Option<TermId>> {
    if let oxrdf::TermRef::BlankNode(b) = t {
        if let Some(id) = blanks.get(b.as_str()) {
            return Ok(Some(*id));
        }
    }
    txn.lookup(t)
}

/// The ids of a quad's terms, or None when the store lacks one (so it
/// holds no such quad).
fn lookup_quad(txn: &rhizome_rdf::StoreTransaction<'_>, blanks: &BlankIds, q: &oxrdf::Quad) -> rhizome_rdf::Result<Option<[TermId; 4]>> {
    let mut ids = [TermId::DEFAULT_GRAPH; 4];
    for (i, t) in [q.subject.as_ref().into(), q.predicate.as_ref().into(), q.object.as_ref()].into_iter().enumerate() {
        match lookup_term(txn, blanks, t)? {
            Some(id) => ids[i] = id,
            None => return Ok(None),
        }
    }
    ids[3] = match &q.graph_name {
        GraphName::DefaultGraph => txn.default_graph_of(ids[0]),
        GraphName::NamedNode(n) => match lookup_term(txn, blanks, n.as_ref().into())? {
            Some(id) => id,
            None => return Ok(None),
        },
        GraphName::BlankNode(b) => match lookup_term(txn, blanks, b.as_ref().into())? {
            Some(id) => id,
            None => return Ok(None),
        },
    };
    Ok(Some(ids))
}

/// An error made without the GIL, turned into a Python exception after.
enum PyErrLater {
    Rdf(rhizome_rdf::Error),
    Os(String),
}

impl PyErrLater {
    fn into_py(self) -> PyErr {
        match self {
            PyErrLater::Rdf(e) => rdf_error(e),
            PyErrLater::Os(m) => pyo3::exceptions::PyOSError::new_err(m),
        }
    }
}

/// FROM for each graph (replacing the query's own FROM and FROM NAMED).
fn set_default_graph(query: &mut spargebra::Query, graphs: Vec<oxrdf::NamedNode>) {
    use spargebra::Query;
    let dataset = match query {
        Query::Select { dataset, .. } | Query::Ask { dataset, .. } | Query::Construct { dataset, .. } | Query::Describe { dataset, .. } => dataset,
    };
    *dataset = Some(spargebra::algebra::QueryDataset { default: graphs, named: None });
}

enum Answer {
    Boolean(bool),
    Solutions(Vec<Variable>, Vec<Vec<Option<Term>>>),
    Graph(Vec<Triple>),
}

/// Quads of a pattern over one snapshot, decoded as they are read.
///
/// The scan borrows the snapshot it reads; both live here, the scan
/// declared first so that it is dropped first, and the snapshot is behind
/// an `Arc` whose heap place never moves: the borrow stays valid for the
/// scan's whole life. (`unsendable`: RocksDB's iterators stay on the
/// thread that made them; Python code that made the iterator reads it.)
#[pyclass(unsendable, name = "QuadIterator", module = "rhizome")]
pub struct QuadIter {
    scan: Option<QuadScan<'static>>,
    /// Quads read from the scan, not yet handed out; their terms all have
    /// objects. The scan is read ahead `batch` quads at a time (from 16 up
    /// to `MAX_BATCH`, so that a check of one quad reads few) and their
    /// new terms decoded in one walk of the dictionary.
    ahead: std::collections::VecDeque<[TermId; 4]>,
    batch: usize,
    /// An error the scan gave while reading ahead, for after `ahead`.
    failed: Option<rhizome_rdf::Error>,
    /// The Python object of each term handed out, by id (at most
    /// `TERM_OBJECTS`, then started afresh): a term met again, such as the
    /// predicate and object of every `?po` result, is handed out again
    /// rather than decoded and made anew.
    objects: FxHashMap<u64, Py<PyAny>>,
    snapshot: Arc<StoreSnapshot>,
}

/// About as many terms as the store's decode caches keep for one scan.
const TERM_OBJECTS: usize = 1 << 20;
const MAX_BATCH: usize = 1024;

impl QuadIter {
    fn new(snapshot: Arc<StoreSnapshot>, pattern: Option<QuadPattern>) -> Self {
        // SAFETY: see the type's comment: the snapshot outlives the scan
        // (fields drop in order, and `Drop` below clears the scan first),
        // and it does not move.
        let borrowed: &'static StoreSnapshot = unsafe { &*Arc::as_ptr(&snapshot) };
        QuadIter { scan: pattern.map(|p| borrowed.scan(p)), ahead: Default::default(), batch: 16, failed: None, objects: FxHashMap::default(), snapshot }
    }

    /// Reads the next batch of quads and makes the objects of their terms.
    fn read_ahead(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(scan) = self.scan.as_mut() else { return Ok(()) };
        let mut new_terms = Vec::new();
        for _ in 0..self.batch {
            match scan.next() {
                None => {
                    self.scan = None;
                    break;
                }
                Some(Err(e)) => {
                    self.scan = None;
                    self.failed = Some(e);
                    break;
                }
                Some(Ok(ids)) => {
                    new_terms.extend(ids.iter().filter(|id| !self.objects.contains_key(&id.0)).copied());
                    self.ahead.push_back(ids);
                }
            }
        }
        self.batch = (self.batch * 2).min(MAX_BATCH);
        if self.objects.len() + new_terms.len() > TERM_OBJECTS {
            self.objects.clear();
            new_terms = self.ahead.iter().flatten().copied().collect();
        }
        if new_terms.contains(&TermId::DEFAULT_GRAPH) {
            self.objects.insert(TermId::DEFAULT_GRAPH.0, Py::new(py, crate::terms::PyDefaultGraph)?.into_any());
        }
        let mut made = Ok(());
        let objects = &mut self.objects;
        self.snapshot
            .decode_many(&mut new_terms, |id, term| {
                if made.is_ok() {
                    match term_to_py(py, term) {
                        Ok(o) => {
                            objects.insert(id.0, o);
                        }
                        Err(e) => made = Err(e),
                    }
                }
            })
            .map_err(rdf_error)?;
        made
    }

    /// The term object of `id`, checked for its position: a literal is
    /// never a subject or graph name, and a predicate is an IRI.
    fn object(&self, py: Python<'_>, id: TermId, position: usize) -> PyResult<Py<PyAny>> {
        let object = self.objects.get(&id.0).ok_or_else(|| rdf_error(rhizome_rdf::Error::Corrupt(format!("term {:#x} is missing from the dictionary", id.0))))?;
        let bound = object.bind(py);
        let fits = match position {
            1 => bound.is_exact_instance_of::<PyNamedNode>(),
            2 => !bound.is_exact_instance_of::<crate::terms::PyDefaultGraph>(),
            3 => !bound.is_exact_instance_of::<PyLiteral>() && (id == TermId::DEFAULT_GRAPH || !bound.is_exact_instance_of::<crate::terms::PyDefaultGraph>()),
            _ => !bound.is_exact_instance_of::<PyLiteral>() && !bound.is_exact_instance_of::<crate::terms::PyDefaultGraph>(),
        };
        if !fits {
            return Err(rdf_error(rhizome_rdf::Error::Corrupt(format!("term {:#x} cannot stand at position {position} of a quad", id.0))));
        }
        Ok(object.clone_ref(py))
    }
}

impl Drop for QuadIter {
    fn drop(&mut self) {
        self.scan = None;
    }
}

#[pymethods]
impl QuadIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyQuad>> {
        if self.ahead.is_empty() {
            self.read_ahead(py)?;
        }
        match self.ahead.pop_front() {
            Some([s, p, o, g]) => Ok(Some(PyQuad::from_objects(self.object(py, s, 0)?, self.object(py, p, 1)?, self.object(py, o, 2)?, self.object(py, g, 3)?))),
            None => match self.failed.take() {
                Some(e) => Err(rdf_error(e)),
                None => Ok(None),
            },
        }
    }
}

/// The solutions of a SELECT query: iterate for ``QuerySolution`` rows;
/// ``variables`` lists the projected variables.
#[pyclass(name = "QuerySolutions", module = "rhizome")]
pub struct QuerySolutions {
    variables: Arc<Vec<Variable>>,
    rows: std::vec::IntoIter<Vec<Option<Term>>>,
}

#[pymethods]
impl QuerySolutions {
    #[getter]
    fn variables(&self) -> Vec<PyVariable> {
        self.variables.iter().map(|v| PyVariable { inner: v.clone() }).collect()
    }
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__(&mut self) -> Option<QuerySolution> {
        self.rows.next().map(|values| QuerySolution { variables: self.variables.clone(), values })
    }
    /// How many rows are left.
    fn __len__(&self) -> usize {
        self.rows.len()
    }
}

/// One row of a SELECT: ``row["x"]``, ``row[Variable("x")]`` or
/// ``row[0]`` (None when unbound); iterating gives the values in the
/// order of the variables.
#[pyclass(frozen, name = "QuerySolution", module = "rhizome")]
pub struct QuerySolution {
    variables: Arc<Vec<Variable>>,
    values: Vec<Option<Term>>,
}

#[pymethods]
impl QuerySolution {
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let i = if let Ok(i) = key.extract::<isize>() {
            let n = self.values.len() as isize;
            let j = if i < 0 { i + n } else { i };
            if j < 0 || j >= n {
                return Err(PyIndexError::new_err(format!("index {i} out of {n} variables")));
            }
            j as usize
        } else {
            let name = if let Ok(v) = key.cast::<PyVariable>() { v.get().inner.as_str().to_owned() } else { key.extract::<String>()? };
            let name = name.trim_start_matches(['?', '$']);
            self.variables.iter().position(|v| v.as_str() == name).ok_or_else(|| PyKeyError::new_err(format!("no variable {name}")))?
        };
        match &self.values[i] {
            Some(t) => term_to_py(py, t.clone()),
            None => Ok(py.None()),
        }
    }
    fn __len__(&self) -> usize {
        self.values.len()
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let values = self.values.iter().map(|v| v.clone().map_or_else(|| Ok(py.None()), |t| term_to_py(py, t))).collect::<PyResult<Vec<_>>>()?;
        Ok(pyo3::types::PyTuple::new(py, values)?.try_iter()?.into_any().unbind())
    }
    fn __repr__(&self) -> String {
        let parts: Vec<String> = self
            .variables
            .iter()
            .zip(&self.values)
            .map(|(v, t)| format!("{}={}", v.as_str(), t.as_ref().map_or("None".into(), |t| t.to_string())))
            .collect();
        format!("<QuerySolution {}>", parts.join(" "))
    }
}

/// The triples of a CONSTRUCT or DESCRIBE query.
#[pyclass(name = "QueryTriples", module = "rhizome")]
pub struct QueryTriples {
    triples: std::vec::IntoIter<Triple>,
}

#[pymethods]
impl QueryTriples {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__(&mut self) -> Option<PyTriple> {
        self.triples.next().map(|inner| PyTriple { inner })
    }
    fn __len__(&self) -> usize {
        self.triples.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStore>()?;
    m.add_class::<QuadIter>()?;
    m.add_class::<QuerySolutions>()?;
    m.add_class::<QuerySolution>()?;
    m.add_class::<QueryTriples>()?;
    Ok(())
}

