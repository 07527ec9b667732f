//! RDF terms as Python classes, named and shaped as pyoxigraph's
//! (`NamedNode`, `BlankNode`, `Literal`, `DefaultGraph`, `Triple`, `Quad`,
//! `Variable`): immutable, hashable, equal by value, `str()` in N-Triples
//! syntax. Each wraps the `oxrdf` value the crates below use, so crossing
//! the boundary is a clone, never a parse.

use oxrdf::{BlankNode, GraphName, Literal, NamedNode, NamedOrBlankNode, Quad, Term, Triple, Variable};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

fn hash_of(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

fn compare<T: PartialEq>(a: &T, other: &Bound<'_, PyAny>, op: CompareOp, b: Option<T>) -> Py<PyAny> {
    let py = other.py();
    match (op, b) {
        (CompareOp::Eq, Some(b)) => (*a == b).into_pyobject(py).map(|b| b.to_owned().into_any().unbind()).unwrap_or_else(|_| py.None()),
        (CompareOp::Ne, Some(b)) => (*a != b).into_pyobject(py).map(|b| b.to_owned().into_any().unbind()).unwrap_or_else(|_| py.None()),
        (CompareOp::Eq, None) => false.into_pyobject(py).map(|b| b.to_owned().into_any().unbind()).unwrap_or_else(|_| py.None()),
        (CompareOp::Ne, None) => true.into_pyobject(py).map(|b| b.to_owned().into_any().unbind()).unwrap_or_else(|_| py.None()),
        _ => py.NotImplemented(),
    }
}

/// The `#[pymethods]` of a class wrapping an oxrdf value in `inner`:
/// `str()`, `hash()` and comparisons as that value has them, then the
/// class's own methods (PyO3 takes one `#[pymethods]` block per class).
macro_rules! value_class {
    ($ty:ident; $($methods:tt)*) => {
        #[pymethods]
        impl $ty {
            fn __str__(&self) -> String {
                self.inner.to_string()
            }
            fn __hash__(&self) -> u64 {
                hash_of(&self.inner)
            }
            fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> Py<PyAny> {
                let b = other.cast::<$ty>().ok().map(|o| o.get().inner.clone());
                compare(&self.inner, other, op, b)
            }
            $($methods)*
        }
    };
}

/// An IRI, such as ``NamedNode("http://example.com/alice")``.
///
/// :param value: the IRI; a ValueError if it is not an absolute IRI.
#[pyclass(frozen, name = "NamedNode", module = "rhizome")]
#[derive(Clone)]
pub struct PyNamedNode {
    pub inner: NamedNode,
}

value_class! { PyNamedNode;
    #[new]
    fn new(value: String) -> PyResult<Self> {
        NamedNode::new(value).map(|inner| PyNamedNode { inner }).map_err(|e| PyValueError::new_err(format!("not an IRI: {e}")))
    }
    /// The IRI.
    #[getter]
    fn value(&self) -> &str {
        self.inner.as_str()
    }
    fn __repr__(&self) -> String {
        format!("<NamedNode value={}>", self.inner.as_str())
    }
    fn __getnewargs__(&self) -> (String,) {
        (self.inner.as_str().to_owned(),)
    }
}

/// A blank node; ``BlankNode()`` makes a fresh one.
///
/// :param value: its label (letters, digits, ``_``, ``-``, ``.``).
#[pyclass(frozen, name = "BlankNode", module = "rhizome")]
#[derive(Clone)]
pub struct PyBlankNode {
    pub inner: BlankNode,
}

value_class! { PyBlankNode;
    #[new]
    #[pyo3(signature = (value=None))]
    fn new(value: Option<String>) -> PyResult<Self> {
        match value {
            None => Ok(PyBlankNode { inner: BlankNode::default() }),
            Some(v) => BlankNode::new(v).map(|inner| PyBlankNode { inner }).map_err(|e| PyValueError::new_err(format!("not a blank node label: {e}"))),
        }
    }
    /// The label, without ``_:``.
    #[getter]
    fn value(&self) -> &str {
        self.inner.as_str()
    }
    fn __repr__(&self) -> String {
        format!("<BlankNode value={}>", self.inner.as_str())
    }
    fn __getnewargs__(&self) -> (String,) {
        (self.inner.as_str().to_owned(),)
    }
}

/// A literal: ``Literal("chat", language="fr")``,
/// ``Literal("5", datatype=NamedNode("http://www.w3.org/2001/XMLSchema#integer"))``.
/// Without datatype and language it is an ``xsd:string``.
#[pyclass(frozen, name = "Literal", module = "rhizome")]
#[derive(Clone)]
pub struct PyLiteral {
    pub inner: Literal,
}

value_class! { PyLiteral;
    #[new]
    #[pyo3(signature = (value, *, datatype=None, language=None, direction=None))]
    fn new(value: String, datatype: Option<PyNamedNode>, language: Option<String>, direction: Option<String>) -> PyResult<Self> {
        let direction = match direction.as_deref() {
            None => None,
            Some("ltr") => Some(oxrdf::BaseDirection::Ltr),
            Some("rtl") => Some(oxrdf::BaseDirection::Rtl),
            Some(other) => return Err(PyValueError::new_err(format!("a base direction is \"ltr\" or \"rtl\", not {other:?}"))),
        };
        let inner = match (datatype, language, direction) {
            (Some(_), Some(_), _) => return Err(PyValueError::new_err("a literal has a datatype or a language, not both")),
            (_, None, Some(_)) => return Err(PyValueError::new_err("a base direction needs a language")),
            (None, Some(l), Some(d)) => {
                Literal::new_directional_language_tagged_literal(value, l, d).map_err(|e| PyValueError::new_err(format!("not a language tag: {e}")))?
            }
            (None, Some(l), None) => Literal::new_language_tagged_literal(value, l).map_err(|e| PyValueError::new_err(format!("not a language tag: {e}")))?,
            (Some(d), None, None) => Literal::new_typed_literal(value, d.inner),
            (None, None, None) => Literal::new_simple_literal(value),
        };
        Ok(PyLiteral { inner })
    }
    /// The lexical form.
    #[getter]
    fn value(&self) -> &str {
        self.inner.value()
    }
    /// The datatype (``rdf:langString`` for a language-tagged literal).
    #[getter]
    fn datatype(&self) -> PyNamedNode {
        PyNamedNode { inner: self.inner.datatype().into_owned() }
    }
    /// The language tag, or None.
    #[getter]
    fn language(&self) -> Option<&str> {
        self.inner.language()
    }
    /// The base direction (RDF 1.2), ``"ltr"``, ``"rtl"`` or None.
    #[getter]
    fn direction(&self) -> Option<&'static str> {
        self.inner.direction().map(|d| match d {
            oxrdf::BaseDirection::Ltr => "ltr",
            oxrdf::BaseDirection::Rtl => "rtl",
        })
    }
    fn __repr__(&self) -> String {
        match self.inner.language() {
            Some(l) => format!("<Literal value={} language={l}>", self.inner.value()),
            None => format!("<Literal value={} datatype=<NamedNode value={}>>", self.inner.value(), self.inner.datatype().as_str()),
        }
    }
}

/// The default graph of a dataset.
#[pyclass(frozen, name = "DefaultGraph", module = "rhizome")]
#[derive(Clone)]
pub struct PyDefaultGraph;

#[pymethods]
impl PyDefaultGraph {
    #[new]
    fn new() -> Self {
        PyDefaultGraph
    }
    #[getter]
    fn value(&self) -> &str {
        ""
    }
    fn __str__(&self) -> &str {
        "DEFAULT"
    }
    fn __repr__(&self) -> &str {
        "<DefaultGraph>"
    }
    fn __hash__(&self) -> u64 {
        0
    }
    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> Py<PyAny> {
        let b = other.cast::<PyDefaultGraph>().ok().map(|_| ());
        compare(&(), other, op, b)
    }
}

/// A SPARQL variable, ``Variable("x")``.
#[pyclass(frozen, name = "Variable", module = "rhizome")]
#[derive(Clone)]
pub struct PyVariable {
    pub inner: Variable,
}

value_class! { PyVariable;
    #[new]
    fn new(value: String) -> PyResult<Self> {
        Variable::new(value).map(|inner| PyVariable { inner }).map_err(|e| PyValueError::new_err(format!("not a variable name: {e}")))
    }
    /// The name, without ``?``.
    #[getter]
    fn value(&self) -> &str {
        self.inner.as_str()
    }
    fn __repr__(&self) -> String {
        format!("<Variable value={}>", self.inner.as_str())
    }
}

/// A triple: subject, predicate, object. Unpacks as a 3-tuple.
#[pyclass(frozen, name = "Triple", module = "rhizome")]
#[derive(Clone)]
pub struct PyTriple {
    pub inner: Triple,
}

value_class! { PyTriple;
    #[new]
    fn new(subject: &Bound<'_, PyAny>, predicate: &Bound<'_, PyAny>, object: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyTriple { inner: Triple::new(subject_from_py(subject)?, predicate_from_py(predicate)?, term_from_py(object)?) })
    }
    #[getter]
    fn subject(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        term_to_py(py, self.inner.subject.clone().into())
    }
    #[getter]
    fn predicate(&self) -> PyNamedNode {
        PyNamedNode { inner: self.inner.predicate.clone() }
    }
    #[getter]
    fn object(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        term_to_py(py, self.inner.object.clone())
    }
    fn __len__(&self) -> usize {
        3
    }
    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyAny>> {
        match i {
            0 | -3 => self.subject(py),
            1 | -2 => Ok(Py::new(py, self.predicate())?.into_any()),
            2 | -1 => self.object(py),
            _ => Err(PyIndexError::new_err("a triple has 3 terms")),
        }
    }
    fn __repr__(&self) -> String {
        format!("<Triple {}>", self.inner)
    }
}

/// A quad: subject, predicate, object and graph name (``DefaultGraph()``
/// when left out). Unpacks as a 4-tuple.
///
/// It holds its four terms as the Python objects it hands out: a quad
/// from a lookup shares the term objects of the quads before it (the
/// predicate and class of every `?po` result are one object each), so
/// reading `q.predicate` makes nothing. Terms are immutable, so sharing
/// them is invisible but for `is`.
#[pyclass(frozen, name = "Quad", module = "rhizome")]
pub struct PyQuad {
    subject: Py<PyAny>,
    predicate: Py<PyAny>,
    object: Py<PyAny>,
    graph_name: Py<PyAny>,
}

impl PyQuad {
    /// A quad of term objects already checked for their positions.
    pub fn from_objects(subject: Py<PyAny>, predicate: Py<PyAny>, object: Py<PyAny>, graph_name: Py<PyAny>) -> Self {
        PyQuad { subject, predicate, object, graph_name }
    }

    pub fn from_quad(py: Python<'_>, q: Quad) -> PyResult<Self> {
        Ok(PyQuad {
            subject: term_to_py(py, q.subject.into())?,
            predicate: Py::new(py, PyNamedNode { inner: q.predicate })?.into_any(),
            object: term_to_py(py, q.object)?,
            graph_name: graph_to_py(py, q.graph_name)?,
        })
    }

    /// The oxrdf value (its terms copied out of their objects).
    pub fn to_quad(&self, py: Python<'_>) -> PyResult<Quad> {
        Ok(Quad::new(
            subject_from_py(self.subject.bind(py))?,
            predicate_from_py(self.predicate.bind(py))?,
            term_from_py(self.object.bind(py))?,
            graph_from_py(self.graph_name.bind(py))?,
        ))
    }
}

#[pymethods]
impl PyQuad {
    #[new]
    #[pyo3(signature = (subject, predicate, object, graph_name=None))]
    fn new(py: Python<'_>, subject: &Bound<'_, PyAny>, predicate: &Bound<'_, PyAny>, object: &Bound<'_, PyAny>, graph_name: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        // Checked as the oxrdf constructor would, then kept as given.
        subject_from_py(subject)?;
        predicate_from_py(predicate)?;
        term_from_py(object)?;
        let graph_name = match graph_name {
            Some(g) if !g.is_none() => {
                graph_from_py(g)?;
                g.clone().unbind()
            }
            _ => Py::new(py, PyDefaultGraph)?.into_any(),
        };
        Ok(PyQuad { subject: subject.clone().unbind(), predicate: predicate.clone().unbind(), object: object.clone().unbind(), graph_name })
    }
    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.to_quad(py)?.to_string())
    }
    fn __hash__(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(hash_of(&self.to_quad(py)?))
    }
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let b = match other.cast::<PyQuad>() {
            Ok(o) => Some(o.get().to_quad(py)?),
            Err(_) => None,
        };
        Ok(compare(&self.to_quad(py)?, other, op, b))
    }
    #[getter]
    fn subject(&self, py: Python<'_>) -> Py<PyAny> {
        self.subject.clone_ref(py)
    }
    #[getter]
    fn predicate(&self, py: Python<'_>) -> Py<PyAny> {
        self.predicate.clone_ref(py)
    }
    #[getter]
    fn object(&self, py: Python<'_>) -> Py<PyAny> {
        self.object.clone_ref(py)
    }
    #[getter]
    fn graph_name(&self, py: Python<'_>) -> Py<PyAny> {
        self.graph_name.clone_ref(py)
    }
    /// The quad without its graph name.
    #[getter]
    fn triple(&self, py: Python<'_>) -> PyResult<PyTriple> {
        let q = self.to_quad(py)?;
        Ok(PyTriple { inner: Triple::new(q.subject, q.predicate, q.object) })
    }
    fn __len__(&self) -> usize {
        4
    }
    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyAny>> {
        match i {
            0 | -4 => Ok(self.subject(py)),
            1 | -3 => Ok(self.predicate(py)),
            2 | -2 => Ok(self.object(py)),
            3 | -1 => Ok(self.graph_name(py)),
            _ => Err(PyIndexError::new_err("a quad has 4 terms")),
        }
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<Quad {}>", self.to_quad(py)?))
    }
}

pub fn term_to_py(py: Python<'_>, term: Term) -> PyResult<Py<PyAny>> {
    Ok(match term {
        Term::NamedNode(inner) => Py::new(py, PyNamedNode { inner })?.into_any(),
        Term::BlankNode(inner) => Py::new(py, PyBlankNode { inner })?.into_any(),
        Term::Literal(inner) => Py::new(py, PyLiteral { inner })?.into_any(),
        // RDF 1.2: a triple term is a `Triple` (as in pyoxigraph).
        Term::Triple(inner) => Py::new(py, PyTriple { inner: *inner })?.into_any(),
    })
}

pub fn graph_to_py(py: Python<'_>, g: GraphName) -> PyResult<Py<PyAny>> {
    Ok(match g {
        GraphName::NamedNode(inner) => Py::new(py, PyNamedNode { inner })?.into_any(),
        GraphName::BlankNode(inner) => Py::new(py, PyBlankNode { inner })?.into_any(),
        GraphName::DefaultGraph => Py::new(py, PyDefaultGraph)?.into_any(),
    })
}

fn kind(o: &Bound<'_, PyAny>) -> String {
    o.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

pub fn term_from_py(o: &Bound<'_, PyAny>) -> PyResult<Term> {
    if let Ok(l) = o.cast::<PyLiteral>() {
        return Ok(l.get().inner.clone().into());
    }
    if let Ok(t) = o.cast::<PyTriple>() {
        return Ok(t.get().inner.clone().into());
    }
    subject_from_py(o).map(Term::from).map_err(|_| PyTypeError::new_err(format!("expected a NamedNode, BlankNode, Literal or Triple, not {}", kind(o))))
}

pub fn subject_from_py(o: &Bound<'_, PyAny>) -> PyResult<NamedOrBlankNode> {
    if let Ok(n) = o.cast::<PyNamedNode>() {
        Ok(n.get().inner.clone().into())
    } else if let Ok(b) = o.cast::<PyBlankNode>() {
        Ok(b.get().inner.clone().into())
    } else {
        Err(PyTypeError::new_err(format!("a subject is a NamedNode or BlankNode, not {}", kind(o))))
    }
}

pub fn predicate_from_py(o: &Bound<'_, PyAny>) -> PyResult<NamedNode> {
    match o.cast::<PyNamedNode>() {
        Ok(n) => Ok(n.get().inner.clone()),
        Err(_) => Err(PyTypeError::new_err(format!("a predicate is a NamedNode, not {}", kind(o)))),
    }
}

pub fn graph_from_py(o: &Bound<'_, PyAny>) -> PyResult<GraphName> {
    if o.is_none() || o.cast::<PyDefaultGraph>().is_ok() {
        return Ok(GraphName::DefaultGraph);
    }
    subject_from_py(o).map(GraphName::from).map_err(|_| PyTypeError::new_err(format!("a graph name is a NamedNode, BlankNode or DefaultGraph, not {}", kind(o))))
}

pub fn quad_from_py(o: &Bound<'_, PyAny>) -> PyResult<Quad> {
    if let Ok(q) = o.cast::<PyQuad>() {
        return q.get().to_quad(o.py());
    }
    if let Ok(t) = o.cast::<PyTriple>() {
        return Ok(t.get().inner.clone().in_graph(GraphName::DefaultGraph));
    }
    Err(PyTypeError::new_err(format!("expected a Quad, not {}", kind(o))))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNamedNode>()?;
    m.add_class::<PyBlankNode>()?;
    m.add_class::<PyLiteral>()?;
    m.add_class::<PyDefaultGraph>()?;
    m.add_class::<PyVariable>()?;
    m.add_class::<PyTriple>()?;
    m.add_class::<PyQuad>()?;
    Ok(())
}
