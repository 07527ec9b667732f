//! Design documents (`_design/{name}`) as CouchDB reads them: `language`,
//! `views` (each a `map` and an optional `reduce`, plus the `lib` of
//! CommonJS modules), `filters`, `validate_doc_update` and `options`.
//!
//! A design document is checked when it is written, as CouchDB 3 does
//! (`couch_mrview:validate`): a malformed one is a 400
//! `invalid_design_doc`, and every JavaScript function must compile (400
//! `compilation_error` with CouchDB's wording). Design documents of
//! language `query` are Mango's and are not read here.

use crate::js::{JsError, Limits, Sandbox};
use crate::reduce::{self, Reducer};
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

/// The version of view rows' order, part of every index's signature.
const VIEW_ROWS_VERSION: u32 = 2;

/// One view of a design document.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDef {
    pub name: String,
    pub map: String,
    pub reduce: Option<String>,
}

#[derive(Clone, Debug)]
pub struct DesignDoc {
    /// `_design/...`
    pub id: String,
    pub language: String,
    /// In name order (CouchDB's `views` object order does not matter).
    pub views: Vec<ViewDef>,
    /// What `require` sees from a map function: `{"views": {"lib": ...}}`.
    pub map_modules: Value,
    /// The whole body, for `require` in filters and validation.
    pub body: Value,
    /// `options.include_design`, `options.local_seq`.
    pub include_design: bool,
    pub local_seq: bool,
    /// `options.partitioned` as given (absent: the database's setting).
    pub partitioned_option: Option<bool>,
    /// [`DesignDoc::signature`], computed on first use (twice per view
    /// query otherwise: its JSON and MD5 were 4% of a `key=` query).
    signature_memo: std::sync::OnceLock<[u8; 16]>,
}

/// Why a design document or function is refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum DesignError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Compilation(String),
}

impl DesignError {
    /// CouchDB's error name.
    pub fn error(&self) -> &'static str {
        match self {
            DesignError::Invalid(_) => "invalid_design_doc",
            DesignError::Compilation(_) => "compilation_error",
        }
    }
}

fn invalid(reason: impl Into<String>) -> DesignError {
    DesignError::Invalid(reason.into())
}

impl DesignDoc {
    /// Reads a design document's body; `None` for Mango's (`query`).
    pub fn parse(id: &str, body: &Map<String, Value>) -> Result<Option<DesignDoc>, DesignError> {
        let language = match body.get("language") {
            None | Some(Value::Null) => "javascript".to_owned(),
            Some(Value::String(l)) => l.clone(),
            Some(_) => return Err(invalid("`language` field must be a string")),
        };
        if language == "query" {
            return Ok(None);
        }
        let mut views = Vec::new();
        let mut lib = Value::Null;
        match body.get("views") {
            None | Some(Value::Null) => {}
            Some(Value::Object(vs)) => {
                for (name, v) in vs {
                    if name == "lib" {
                        lib = v.clone();
                        continue;
                    }
                    let Value::Object(v) = v else { return Err(invalid(format!("View {name} must be an object"))) };
                    let map = match v.get("map") {
                        Some(Value::String(m)) => m.clone(),
                        None => return Err(invalid(format!("View {name} must have a map function"))),
                        Some(_) => return Err(invalid(format!("`map` in view {name} must be a string"))),
                    };
                    let reduce = match v.get("reduce") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(r)) => Some(r.clone()),
                        Some(_) => return Err(invalid(format!("`reduce` in view {name} must be a string"))),
                    };
                    views.push(ViewDef { name: name.clone(), map, reduce });
                }
            }
            Some(_) => return Err(invalid("`views` field must be an object")),
        }
        views.sort_by(|a, b| a.name.cmp(&b.name));
        if views.len() > 255 {
            return Err(invalid("a design document holds at most 255 views"));
        }
        for member in ["filters", "options", "updates", "shows", "lists"] {
            if body.get(member).is_some_and(|v| !v.is_object() && !v.is_null()) {
                return Err(invalid(format!("`{member}` field must be an object")));
            }
        }
        if body.get("validate_doc_update").is_some_and(|v| !v.is_string() && !v.is_null()) {
            return Err(invalid("`validate_doc_update` field must be a string"));
        }
        let option = |k: &str| body.get("options").and_then(|o| o.get(k)).and_then(Value::as_bool).unwrap_or(false);
        Ok(Some(DesignDoc {
            id: id.to_owned(),
            include_design: option("include_design"),
            local_seq: option("local_seq"),
            partitioned_option: body.get("options").and_then(|o| o.get("partitioned")).and_then(Value::as_bool),
            language,
            views,
            map_modules: json!({ "views": { "lib": lib } }),
            body: Value::Object(body.clone()),
            signature_memo: std::sync::OnceLock::new(),
        }))
    }

    /// Whether the design document's views are partitioned in a database
    /// that is (or is not): CouchDB's default is the database's setting.
    pub fn is_partitioned(&self, db_partitioned: bool) -> bool {
        db_partitioned && self.partitioned_option.unwrap_or(true)
    }

    pub fn view(&self, name: &str) -> Option<(usize, &ViewDef)> {
        self.views.iter().enumerate().find(|(_, v)| v.name == name)
    }

    /// The index's identity: a hash of everything that changes its rows
    /// (language, map and reduce sources, `lib`, options, and the version
    /// of the rows' order), so an edit that changes none of them keeps
    /// the index, as CouchDB's signature does.
    pub fn signature(&self) -> [u8; 16] {
        *self.signature_memo.get_or_init(|| self.compute_signature())
    }

    fn compute_signature(&self) -> [u8; 16] {
        let views: Vec<Value> = self.views.iter().map(|v| json!([v.name, v.map, v.reduce])).collect();
        let mut canonical = json!([self.language, views, self.map_modules, self.include_design, self.local_seq]);
        // Since version 2, one document's rows with one key are ordered by
        // value; indexes of the first order are built again.
        if let Value::Array(parts) = &mut canonical {
            parts.push(json!(VIEW_ROWS_VERSION));
            // A partitioned index's rows have the partition first: the
            // option changes the rows (left out when absent, so that the
            // signatures of indexes built before it stay).
            if let Some(p) = self.partitioned_option {
                parts.push(json!({ "partitioned": p }));
            }
        }
        Md5::digest(canonical.to_string().as_bytes()).into()
    }

    /// The `filters` member's function named `name`.
    pub fn filter(&self, name: &str) -> Option<&str> {
        self.body.get("filters")?.get(name)?.as_str()
    }

    pub fn validate_doc_update(&self) -> Option<&str> {
        self.body.get("validate_doc_update")?.as_str()
    }

    /// The reduce function of a view, compiled in `sandbox` if it is
    /// JavaScript.
    pub fn reducer(view: &ViewDef, sandbox: &mut Sandbox, modules: &Value) -> Result<Option<Reducer>, DesignError> {
        let Some(src) = &view.reduce else { return Ok(None) };
        if src.trim_start().starts_with('_') {
            return reduce::builtin(src).map(Some).ok_or_else(|| invalid(format!("Reduce function `{}` in view {} is not a built-in", src.trim(), view.name)));
        }
        sandbox.compile(src, modules).map(|f| Some(Reducer::Js(f))).map_err(|e| compilation("reduce", &view.name, e))
    }
}

/// CouchDB's `compilation_error` message.
pub fn compilation(kind: &str, name: &str, e: JsError) -> DesignError {
    match e {
        JsError::Compile(m) => DesignError::Compilation(format!("Compilation of the {kind} function in the '{name}' view failed: {m}")),
        other => DesignError::Compilation(format!("Compilation of the {kind} function in the '{name}' view failed: {other}")),
    }
}

/// Checks a design document about to be written (see the module comment).
pub fn check_design_doc(id: &str, body: &Map<String, Value>) -> Result<(), DesignError> {
    crate::design_fields::check_fields(body)?;
    let Some(ddoc) = DesignDoc::parse(id, body)? else { return Ok(()) };
    let needs_js = !ddoc.views.is_empty() || body.get("filters").is_some_and(|f| f.as_object().is_some_and(|m| !m.is_empty())) || ddoc.validate_doc_update().is_some();
    if !needs_js {
        return Ok(());
    }
    if ddoc.language != "javascript" {
        return Err(invalid(format!("unknown query language `{}`: this server runs `javascript` (and Mango's `query`)", ddoc.language)));
    }
    let mut sandbox = Sandbox::new(Limits::default()).map_err(|e| DesignError::Compilation(e.to_string()))?;
    for v in &ddoc.views {
        sandbox.compile(&v.map, &ddoc.map_modules).map_err(|e| compilation("map", &v.name, e))?;
        DesignDoc::reducer(v, &mut sandbox, &ddoc.map_modules)?;
    }
    if let Some(Value::Object(filters)) = body.get("filters") {
        for (name, f) in filters {
            let Value::String(src) = f else { return Err(invalid(format!("Filter {name} must be a string"))) };
            sandbox.compile(src, &ddoc.body).map_err(|e| compilation("filter", name, e))?;
        }
    }
    if let Some(src) = ddoc.validate_doc_update() {
        sandbox.compile(src, &ddoc.body).map_err(|e| compilation("validate_doc_update", "validate_doc_update", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn views_are_read_and_the_signature_follows_what_changes_rows() {
        let a = body(json!({"views": {"b": {"map": "function(d){emit(1)}", "reduce": "_count"}, "a": {"map": "function(d){}"}, "lib": {"x": "exports.y=1"}}}));
        let d = DesignDoc::parse("_design/d", &a).unwrap().unwrap();
        assert_eq!(d.views.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(d.view("b").unwrap().1.reduce.as_deref(), Some("_count"));
        let mut same = a.clone();
        same.insert("filters".into(), json!({"f": "function(doc, req){return true}"}));
        assert_eq!(DesignDoc::parse("_design/d", &same).unwrap().unwrap().signature(), d.signature());
        let mut other = a.clone();
        other["views"]["a"]["map"] = json!("function(d){emit(2)}");
        assert_ne!(DesignDoc::parse("_design/d", &other).unwrap().unwrap().signature(), d.signature());
        assert!(DesignDoc::parse("_design/m", &body(json!({"language": "query", "views": {}}))).unwrap().is_none());
    }

    #[test]
    fn malformed_design_documents_and_functions_are_refused_as_couchdb_does() {
        let err = |v: Value| check_design_doc("_design/d", &body(v)).unwrap_err();
        assert_eq!(err(json!({"views": []})).error(), "invalid_design_doc");
        assert_eq!(err(json!({"views": {"v": {"map": 1}}})).error(), "invalid_design_doc");
        assert_eq!(err(json!({"views": {"v": {"reduce": "_count"}}})).error(), "invalid_design_doc");
        assert_eq!(err(json!({"views": {"v": {"map": "function(d){}", "reduce": "_median"}}})).error(), "invalid_design_doc");
        let e = err(json!({"views": {"v": {"map": "function(doc) { emit(doc"}}}));
        assert_eq!(e.error(), "compilation_error");
        assert!(e.to_string().starts_with("Compilation of the map function in the 'v' view failed: "), "{e}");
        assert_eq!(err(json!({"views": {"v": {"map": "function(d){}", "reduce": "function(k, v) {"}}})).error(), "compilation_error");
        assert_eq!(err(json!({"filters": {"f": "not a function"}})).error(), "compilation_error");
        assert_eq!(err(json!({"validate_doc_update": "function(n, o) {"})).error(), "compilation_error");
        assert!(check_design_doc("_design/d", &body(json!({"views": {"v": {"map": "function(d){emit(d._id, 1)}", "reduce": "_sum"}}}))).is_ok());
        assert!(check_design_doc("_design/d", &body(json!({"language": "query", "views": {"x": {"map": {"fields": {"a": "asc"}}}}}))).is_ok());
    }
}
