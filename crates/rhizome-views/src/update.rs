//! Update and show functions (`updates`, `shows` of a design document),
//! run as CouchDB's
//! query server runs them
//! (https://docs.couchdb.org/en/stable/ddocs/ddocs.html#update-functions):
//! `function (doc, req)` returns `[doc, response]`; `doc` is the document
//! to save (`null`: nothing is saved), `response` a string (the body, as
//! `text/html`) or an object with `code`, `headers`, and `body`, `json` or
//! `base64`. The caller saves the document through its own write path
//! (validation included) and answers.

use crate::design::{compilation, DesignDoc};
use crate::index::{process_error, ViewError};
use crate::js::{JsError, Limits, Sandbox};
use serde_json::{Map, Value};

/// What an update function gave.
#[derive(Debug, PartialEq)]
pub struct UpdateOutcome {
    /// The document to save, if any.
    pub doc: Option<Map<String, Value>>,
    /// The answer's status, if the function set one.
    pub code: Option<u16>,
    pub headers: Vec<(String, String)>,
    /// The answer's body and its content type.
    pub body: Vec<u8>,
    pub content_type: String,
    /// `body` is the base64 text of the answer (`{"base64": ...}`), for
    /// the caller to decode.
    pub base64: bool,
}

/// Runs `updates.{name}` of `ddoc` on `doc` (`null` when there is none)
/// with CouchDB's request object `req`.
pub fn run_update(ddoc: &DesignDoc, name: &str, doc: Value, req: Value, limits: Limits) -> Result<UpdateOutcome, ViewError> {
    let source = ddoc
        .body
        .get("updates")
        .and_then(|u| u.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| ViewError::NotFound(format!("missing update function {name} on design doc {}", ddoc.id)))?;
    let mut sandbox = Sandbox::new(limits).map_err(process_error)?;
    let f = sandbox.compile(source, &ddoc.body).map_err(|e| compilation("update", name, e))?;
    let out = match sandbox.call(f, &[doc, req]) {
        Ok(v) => v,
        Err(JsError::Thrown(v)) => return Err(thrown(v)),
        Err(e) => return Err(process_error(e)),
    };
    let Value::Array(mut pair) = out else {
        return Err(ViewError::Process(format!("the update function {name} must return [doc, response]")));
    };
    if pair.len() != 2 {
        return Err(ViewError::Process(format!("the update function {name} must return [doc, response]")));
    }
    let response = pair.pop().unwrap_or(Value::Null);
    let doc = match pair.pop().unwrap_or(Value::Null) {
        Value::Null => None,
        Value::Object(d) => Some(d),
        other => return Err(ViewError::Process(format!("the update function {name} returned a document that is not an object: {other}"))),
    };
    answer(doc, response, "update", name)
}

/// Runs `shows.{name}` of `ddoc` on `doc` (`null` when there is none):
/// `function (doc, req)` returns the response alone.
pub fn run_show(ddoc: &DesignDoc, name: &str, doc: Value, req: Value, limits: Limits) -> Result<UpdateOutcome, ViewError> {
    let source = ddoc
        .body
        .get("shows")
        .and_then(|u| u.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| ViewError::NotFound(format!("missing show function {name} on design doc {}", ddoc.id)))?;
    let mut sandbox = Sandbox::new(limits).map_err(process_error)?;
    let f = sandbox.compile(source, &ddoc.body).map_err(|e| compilation("show", name, e))?;
    match sandbox.call(f, &[doc, req]) {
        Ok(response) => answer(None, response, "show", name),
        Err(JsError::Thrown(v)) => Err(thrown(v)),
        Err(e) => Err(process_error(e)),
    }
}

fn answer(doc: Option<Map<String, Value>>, response: Value, kind: &str, name: &str) -> Result<UpdateOutcome, ViewError> {
    let mut outcome = UpdateOutcome { doc, code: None, headers: Vec::new(), body: Vec::new(), content_type: "text/html; charset=utf-8".into(), base64: false };
    match response {
        Value::Null => {}
        Value::String(s) => outcome.body = s.into_bytes(),
        Value::Object(r) => {
            outcome.code = r.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).filter(|c| (100..600).contains(c));
            if let Some(Value::Object(h)) = r.get("headers") {
                outcome.headers = h.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect();
            }
            if let Some(j) = r.get("json") {
                outcome.body = j.to_string().into_bytes();
                outcome.content_type = "application/json".into();
            } else if let Some(b) = r.get("base64").and_then(Value::as_str) {
                outcome.body = b.as_bytes().to_vec();
                outcome.base64 = true;
                outcome.content_type = "application/binary".into();
            } else if let Some(b) = r.get("body").and_then(Value::as_str) {
                outcome.body = b.as_bytes().to_vec();
            }
            if let Some((_, ct)) = outcome.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                outcome.content_type = ct.clone();
            }
        }
        other => return Err(ViewError::Process(format!("the {kind} function {name} returned a response that is neither a string nor an object: {other}"))),
    }
    Ok(outcome)
}

/// What a function threw, as CouchDB answers it: `{forbidden: reason}`
/// 403, `{unauthorized: reason}` 401, anything else 500.
fn thrown(v: Value) -> ViewError {
    match &v {
        Value::Object(o) if o.contains_key("forbidden") => ViewError::Doc(rhizome_docs::DocError::Coded { status: 403, error: "forbidden", reason: crate::js::describe(&o["forbidden"]) }),
        Value::Object(o) if o.contains_key("unauthorized") => ViewError::Doc(rhizome_docs::DocError::Coded { status: 401, error: "unauthorized", reason: crate::js::describe(&o["unauthorized"]) }),
        other => ViewError::Process(format!("the function threw: {}", crate::js::describe(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ddoc(updates: Value) -> DesignDoc {
        DesignDoc::parse("_design/u", json!({ "updates": updates }).as_object().unwrap()).unwrap().unwrap()
    }

    #[test]
    fn update_functions_give_a_document_and_an_answer() {
        let d = ddoc(json!({
            "bump": "function (doc, req) { if (!doc) { return [{_id: req.uuid, n: 1}, 'made']; } doc.n += 1; return [doc, {json: {n: doc.n}, code: 202, headers: {'X-Mine': 'yes'}}]; }",
            "none": "function (doc, req) { return [null, 'nothing to do']; }",
            "deny": "function (doc, req) { throw({forbidden: 'not you'}); }",
        }));
        let made = run_update(&d, "bump", Value::Null, json!({ "uuid": "abc" }), Limits::default()).unwrap();
        assert_eq!(made.doc, Some(json!({ "_id": "abc", "n": 1 }).as_object().unwrap().clone()));
        assert_eq!((made.body.as_slice(), made.code), (&b"made"[..], None));
        let bumped = run_update(&d, "bump", json!({ "_id": "abc", "n": 1 }), json!({}), Limits::default()).unwrap();
        assert_eq!(bumped.doc.unwrap()["n"], 2);
        assert_eq!((bumped.code, bumped.content_type.as_str(), bumped.body.as_slice()), (Some(202), "application/json", &br#"{"n":2}"#[..]));
        assert_eq!(bumped.headers, vec![("X-Mine".to_owned(), "yes".to_owned())]);
        assert_eq!(run_update(&d, "none", Value::Null, json!({}), Limits::default()).unwrap().doc, None);
        assert!(matches!(run_update(&d, "deny", Value::Null, json!({}), Limits::default()), Err(ViewError::Doc(rhizome_docs::DocError::Coded { status: 403, .. }))));
        assert!(matches!(run_update(&d, "nope", Value::Null, json!({}), Limits::default()), Err(ViewError::NotFound(_))));
        let show = DesignDoc::parse("_design/s", json!({ "shows": { "page": "function (doc, req) { return {body: '<p>' + (doc ? doc.n : 'none') + '</p>'}; }" } }).as_object().unwrap()).unwrap().unwrap();
        assert_eq!(run_show(&show, "page", json!({ "n": 3 }), json!({}), Limits::default()).unwrap().body, b"<p>3</p>");
    }
}
