//! Mango on `rhizome serve` where CouchDB 3.5's own suites (CouchDB's
//! Mango suite, pouchdb-find) found Rhizome answering otherwise: each test
//! holds what the real CouchDB 3.5.0 answers (checked side by side with
//! `tests/couch-suites/run.js --couch`).

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

struct Db<'a> {
    server: &'a ServerProcess,
    name: &'static str,
}

impl Db<'_> {
    fn new<'s>(server: &'s ServerProcess, name: &'static str) -> Db<'s> {
        assert_eq!(server.request("PUT", &format!("/{name}"), Some(ADMIN), None).0, 201);
        Db { server, name }
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let body = if body.is_null() { None } else { Some(body.to_string()) };
        let (status, text) = self.server.request(method, &format!("/{}{path}", self.name), Some(ADMIN), body.as_deref());
        (status, j(&text))
    }

    fn ok(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, answer) = self.call(method, path, &body);
        assert!((200..300).contains(&status), "{method} {path} {body}: {status} {answer}");
        answer
    }

    fn put_all(&self, docs: Value) {
        for row in self.ok("POST", "/_bulk_docs", json!({ "docs": docs })).as_array().unwrap() {
            assert_eq!(row["ok"], true, "{row}");
        }
    }

    fn ids(&self, query: Value) -> Vec<String> {
        let answer = self.ok("POST", "/_find", query);
        let mut ids: Vec<String> = answer["docs"].as_array().unwrap_or_else(|| panic!("{answer}")).iter().map(|d| d["_id"].as_str().unwrap().to_owned()).collect();
        ids.sort();
        ids
    }
}

#[test]
fn index_lists_take_limit_and_skip_separated_by_semicolons_as_couchdb_reads_query_strings() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "semi");
    for f in ["a", "b", "c"] {
        db.ok("POST", "/_index", json!({ "index": { "fields": [f] }, "name": f }));
    }
    // CouchDB's Mango suite sends `_index?limit=2;skip=1` (mochiweb splits
    // a query string at `;` as at `&`).
    let listed = |q: &str| db.ok("GET", &format!("/_index?{q}"), Value::Null)["indexes"].as_array().unwrap().len();
    assert_eq!(listed("limit=2;"), 2);
    assert_eq!(listed("limit=5;skip=3"), 1);
    assert_eq!(listed(";skip=4"), 0);
    assert_eq!(listed("limit=2&skip=1"), 2);
}

#[test]
fn a_mango_design_document_has_info_and_is_checked_as_couchdb_checks_query_design_documents() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "info");
    db.put_all(json!([{ "_id": "a", "foo": 1, "bar": 2 }]));
    let created = db.ok("POST", "/_index", json!({ "index": { "fields": ["foo", "bar"] }, "name": "idx_01" }));
    let ddoc = created["id"].as_str().unwrap();
    let info = db.ok("GET", &format!("/{ddoc}/_info"), Value::Null);
    assert_eq!(info["name"], ddoc.trim_start_matches("_design/"), "{info}");
    assert_eq!(info["view_index"]["language"], "query", "{info}");
    assert!(info["view_index"]["signature"].as_str().is_some_and(|s| s.len() == 32), "{info}");
    // A `query` design document's map is an object (couch_mrview's
    // validate_ddoc_fields): a JavaScript map is refused.
    let (status, answer) = db.call(
        "PUT",
        "/_design/bad_view_index",
        &json!({ "language": "query", "views": { "views001": { "map": "function(doc){emit(doc.n)}" } } }),
    );
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_design_doc")), "{answer}");
    assert_eq!(answer["reason"], "`views.views001.map` field must have object type");
    let (status, answer) = db.call("PUT", "/_design/no_map", &json!({ "language": "query", "views": { "v": { "reduce": "_count" } } }));
    assert_eq!((status, answer["reason"].as_str()), (400, Some("View `v` must contain map function")), "{answer}");
}

#[test]
fn an_empty_or_is_neutral_beside_other_conditions_and_alone_selects_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "empty");
    db.put_all(json!([{ "_id": "a", "age": 22 }, { "_id": "b", "age": 23 }]));
    for with_index in [false, true] {
        if with_index {
            db.ok("POST", "/_index", json!({ "index": { "fields": ["age"] } }));
        }
        assert_eq!(db.ids(json!({ "selector": { "age": 22, "$or": [] } })), ["a"], "index {with_index}");
        assert_eq!(db.ids(json!({ "selector": { "age": 22, "$and": [] } })), ["a"]);
        assert!(db.ids(json!({ "selector": { "$or": [] } })).is_empty());
        assert!(db.ids(json!({ "selector": { "$and": [] } })).is_empty());
        assert!(db.ids(json!({ "selector": { "$or": [], "a": { "$in": [] } } })).is_empty());
        assert_eq!(db.ids(json!({ "selector": { "age": { "$nin": [] } } })), ["a", "b"]);
        // An empty `$or` requires every field (has_required_fields): a JSON index serves it.
        let explained = db.ok("POST", "/_explain", json!({ "selector": { "$or": [] } }));
        assert_eq!(explained["index"]["type"], if with_index { "json" } else { "special" }, "{explained}");
    }
}

#[test]
fn an_escaped_dollar_starts_a_field_name_and_ids_compare_in_erlang_term_order() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "escapes");
    db.put_all(json!([{ "_id": "doc", "$foobar": "a" }, { "_id": "other", "$foobar": "b" }]));
    db.ok("POST", "/_index", json!({ "index": { "fields": ["$foobar"] }, "name": "foo-index" }));
    // mango_util:parse_field drops every backslash of a name once split.
    assert_eq!(db.ids(json!({ "selector": { "\\$foobar": "a" }, "fields": ["_id"] })), ["doc"]);
    // `_id` compares in Erlang's term order (mango_json:cmp_raw): numbers,
    // then atoms, objects, arrays, strings; so every id is past `{}` and `[]`.
    assert_eq!(db.ids(json!({ "selector": { "_id": { "$gt": {} } } })), ["doc", "other"]);
    assert_eq!(db.ids(json!({ "selector": { "_id": { "$gte": [] } } })), ["doc", "other"]);
    assert_eq!(db.ids(json!({ "selector": { "_id": { "$gt": null } } })), ["doc", "other"]);
    assert!(db.ids(json!({ "selector": { "_id": { "$lt": {} } } })).is_empty());
    assert!(db.ids(json!({ "selector": { "_id": { "$lte": [] } } })).is_empty());
    assert!(db.ids(json!({ "selector": { "_id": { "$lt": 1 } } })).is_empty());
    assert_eq!(db.ids(json!({ "selector": { "_id": { "$gt": {} } }, "sort": [{ "_id": "desc" }] })), ["doc", "other"]);
}

#[test]
fn index_names_and_design_documents_follow_couchdbs_rules() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let db = Db::new(&server, "names");
    // Two definitions alike with other names go to two design documents
    // (mango_idx:gen_name hashes the definition with the options).
    let foo = db.ok("POST", "/_index", json!({ "index": { "fields": ["foo"] }, "name": "foo-index", "type": "json" }));
    let bar = db.ok("POST", "/_index", json!({ "index": { "fields": ["foo"] }, "name": "bar-index", "type": "json" }));
    assert_eq!((foo["result"].as_str(), bar["result"].as_str()), (Some("created"), Some("created")));
    assert_ne!(foo["id"], bar["id"]);
    // The same request again is the same index.
    let again = db.ok("POST", "/_index", json!({ "index": { "fields": ["foo"] }, "name": "foo-index", "type": "json" }));
    assert_eq!((again["result"].as_str(), &again["id"]), (Some("exists"), &foo["id"]));
    // An index goes only into a design document of language `query`
    // (mango_util:check_lang), one without a language included.
    db.put_all(json!([
        { "_id": "_design/plain" },
        { "_id": "_design/js", "views": { "foo-index": { "map": "function (){emit(1)}" } } },
    ]));
    for ddoc in ["plain", "js"] {
        let (status, answer) = db.call("POST", "/_index", &json!({ "index": { "fields": ["foo"] }, "name": "foo-index", "ddoc": ddoc }));
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_ddoc_lang")), "{ddoc}: {answer}");
    }
}
