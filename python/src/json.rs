//! JSON values (serde_json, what rhizome-docs speaks) to and from Python's
//! own objects: dict, list, str, int, float, bool, None.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deeper than CouchDB documents go, shallow enough for the Rust stack.
const MAX_DEPTH: usize = 512;

pub fn to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any().unbind()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any().unbind()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any().unbind()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_py(py, x)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(m) => map_to_py(py, m)?,
    })
}

pub fn map_to_py(py: Python<'_>, m: &Map<String, Value>) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    for (k, x) in m {
        d.set_item(k, to_py(py, x)?)?;
    }
    Ok(d.into_any().unbind())
}

pub fn from_py(o: &Bound<'_, PyAny>) -> PyResult<Value> {
    value(o, 0)
}

/// A JSON object from a dict (a document, a query body).
pub fn map_from_py(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Map<String, Value>> {
    match value(o, 0)? {
        Value::Object(m) => Ok(m),
        _ => Err(PyTypeError::new_err(format!("{what} must be a dict"))),
    }
}

fn value(o: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!("JSON nested deeper than {MAX_DEPTH} levels")));
    }
    if o.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = o.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if o.cast::<PyInt>().is_ok() {
        if let Ok(i) = o.extract::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = o.extract::<u64>() {
            return Ok(Value::Number(u.into()));
        }
        return Err(PyValueError::new_err("an integer too large for JSON"));
    }
    if let Ok(f) = o.cast::<PyFloat>() {
        return Number::from_f64(f.value()).map(Value::Number).ok_or_else(|| PyValueError::new_err("NaN and infinities are not JSON"));
    }
    if let Ok(s) = o.cast::<PyString>() {
        return Ok(Value::String(s.extract::<String>()?));
    }
    if let Ok(d) = o.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            let k = match k.cast::<PyString>() {
                Ok(s) => s.extract::<String>()?,
                Err(_) => return Err(PyTypeError::new_err(format!("JSON object keys are strings, not {}", k.get_type().name()?))),
            };
            m.insert(k, value(&x, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = o.cast::<PyList>() {
        return l.iter().map(|x| value(&x, depth + 1)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(t) = o.cast::<PyTuple>() {
        return t.iter().map(|x| value(&x, depth + 1)).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    Err(PyTypeError::new_err(format!("{} is not JSON (dict, list, str, int, float, bool or None)", o.get_type().name()?)))
}
