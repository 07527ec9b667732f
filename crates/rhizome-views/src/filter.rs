//! Design-document filters for `_changes` and replication
//! (`filter=ddoc/name`: `fn(doc, req)`, a document passes when the result
//! is truthy; `filter=_view&view=ddoc/view`: it passes when the view's map
//! function emits for it). As in CouchDB's query server, a filter function
//! that throws fails the feed (500), a map function that throws leaves the
//! document out (logged), and one past its limits fails the feed
//! (`os_process_error`).

use crate::design::{compilation, DesignDoc, DesignError};
use crate::js::{FnId, JsError, Limits, Sandbox};
use rhizome_docs::{DocError, DocFilter};
use serde_json::{json, Map, Value};

#[derive(Clone, Debug)]
enum Kind {
    /// `filters.{name}`, called with the request object.
    Function { name: String, source: String, req: Value },
    /// A view's map function.
    View { name: String, source: String },
}

/// A filter of one design document, ready for `ChangesFilter::Custom`.
#[derive(Clone, Debug)]
pub struct JsFilter {
    ddoc: DesignDoc,
    kind: Kind,
    limits: Limits,
}

/// Why a filter cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// CouchDB's 404 `not_found` reason.
    #[error("{0}")]
    Missing(String),
    #[error(transparent)]
    Design(#[from] DesignError),
}

impl JsFilter {
    /// `filter=name` of `ddoc`; `req` is the request object the function
    /// gets (`query`, `userCtx`, `method`, ...).
    pub fn function(ddoc: DesignDoc, name: &str, req: Value, limits: Limits) -> Result<JsFilter, FilterError> {
        let source = ddoc.filter(name).ok_or_else(|| FilterError::Missing(format!("missing json key: {name}")))?.to_owned();
        Ok(JsFilter { ddoc, kind: Kind::Function { name: name.to_owned(), source, req }, limits })
    }

    /// `filter=_view` with the view `name` of `ddoc`.
    pub fn view(ddoc: DesignDoc, name: &str, limits: Limits) -> Result<JsFilter, FilterError> {
        let source = ddoc.view(name).map(|(_, v)| v.map.clone()).ok_or_else(|| FilterError::Missing("missing_named_view".into()))?;
        Ok(JsFilter { ddoc, kind: Kind::View { name: name.to_owned(), source }, limits })
    }

    /// Compiles the function in a new sandbox (checks it, and is what
    /// each pass over the changes does).
    fn compile(&self) -> Result<(Sandbox, FnId), DesignError> {
        let mut sandbox = Sandbox::new(self.limits).map_err(|e| DesignError::Compilation(e.to_string()))?;
        let f = match &self.kind {
            Kind::Function { name, source, .. } => sandbox.compile(source, &self.ddoc.body).map_err(|e| compilation("filter", name, e))?,
            Kind::View { name, source } => sandbox.compile(source, &self.ddoc.map_modules).map_err(|e| compilation("map", name, e))?,
        };
        Ok((sandbox, f))
    }

    pub fn check(&self) -> Result<(), DesignError> {
        self.compile().map(drop)
    }

    /// What identifies the filter in a replication id: the design
    /// document, the function's source and the request's query.
    pub fn identity(&self) -> Value {
        match &self.kind {
            Kind::Function { name, source, req } => json!([self.ddoc.id, name, source, req["query"]]),
            Kind::View { name, source } => json!([self.ddoc.id, "_view", name, source]),
        }
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn process_error(e: JsError) -> DocError {
    DocError::Coded { status: 500, error: "os_process_error", reason: e.to_string() }
}

impl DocFilter for JsFilter {
    fn start(&self) -> rhizome_docs::Result<Box<dyn FnMut(&Map<String, Value>) -> rhizome_docs::Result<bool>>> {
        let (mut sandbox, f) = self.compile().map_err(|e| DocError::Coded { status: 400, error: e.error(), reason: e.to_string() })?;
        let kind = self.kind.clone();
        let ddoc = self.ddoc.id.clone();
        Ok(Box::new(move |doc: &Map<String, Value>| {
            let doc = Value::Object(doc.clone());
            let outcome = match &kind {
                Kind::Function { req, .. } => sandbox.call(f, &[doc.clone(), req.clone()]).map(|v| truthy(&v)).map_err(Some),
                Kind::View { .. } => match sandbox.map(&[f], &doc.to_string()) {
                    Ok(mut results) => match results.pop() {
                        Some(Ok(rows)) => Ok(!rows.is_empty()),
                        Some(Err(message)) => Err(Some(JsError::Thrown(Value::String(message)))),
                        None => Ok(false),
                    },
                    Err(e) => Err(Some(e)),
                },
            };
            match outcome {
                Ok(pass) => Ok(pass),
                // CouchDB's query server runs filter functions without a
                // catch (main.js `Filter.filter`): a throw fails the feed.
                Err(Some(JsError::Thrown(thrown))) if matches!(kind, Kind::Function { .. }) => Err(DocError::Coded {
                    status: 500,
                    error: "error",
                    reason: format!("the filter function of {ddoc} threw for {}: {}", doc.get("_id").and_then(Value::as_str).unwrap_or_default(), crate::js::describe(&thrown)),
                }),
                // A map function that throws emits nothing for that
                // document, as in a view.
                Err(Some(JsError::Thrown(thrown))) => {
                    eprintln!("{}", json!({ "log": "filter function threw", "ddoc": ddoc, "doc": doc.get("_id"), "error": thrown }));
                    Ok(false)
                }
                Err(Some(e)) => Err(process_error(e)),
                Err(None) => Ok(false),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ddoc() -> DesignDoc {
        let body = json!({
            "filters": {"typed": "function (doc, req) { if (doc.boom) throw 'boom'; return doc.type === req.query.type; }"},
            "views": {"big": {"map": "function (doc) { if (doc.n > 10) emit(doc.n, null); }"}}
        });
        DesignDoc::parse("_design/f", body.as_object().unwrap()).unwrap().unwrap()
    }

    fn run(f: &JsFilter, docs: &[Value]) -> Vec<bool> {
        let mut m = f.start().unwrap();
        docs.iter().map(|d| m(d.as_object().unwrap()).unwrap()).collect()
    }

    #[test]
    fn filter_functions_and_views_pick_documents() {
        let f = JsFilter::function(ddoc(), "typed", json!({"query": {"type": "a"}}), Limits::default()).unwrap();
        assert_eq!(run(&f, &[json!({"type": "a"}), json!({"type": "b"})]), vec![true, false]);
        // A filter function that throws fails the feed, as in CouchDB.
        let thrown = f.start().unwrap()(json!({"_id": "x", "type": "a", "boom": true}).as_object().unwrap());
        assert!(matches!(thrown, Err(DocError::Coded { status: 500, .. })), "{thrown:?}");
        let v = JsFilter::view(ddoc(), "big", Limits::default()).unwrap();
        assert_eq!(run(&v, &[json!({"n": 11}), json!({"n": 1}), json!({})]), vec![true, false, false]);
        assert!(matches!(JsFilter::function(ddoc(), "nope", json!({}), Limits::default()), Err(FilterError::Missing(_))));
        assert!(matches!(JsFilter::view(ddoc(), "nope", Limits::default()), Err(FilterError::Missing(_))));
    }
}
