//! Mango indexes of type `nouveau` and the `$text` operator on a real
//! `rhizome serve`, as CouchDB 3.5 has them: `POST /{db}/_index` with
//! `"type": "nouveau"` (the design document CouchDB writes), `GET
//! /{db}/_index`, `_find` with `$text` alone, with other conditions, below
//! `$or`, with sort, skip, limit, fields and Nouveau bookmarks, `_explain`,
//! `DELETE`, and the errors when there is no such index, when there are
//! two, and for a bad `$text`.

mod common;

use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};

fn call(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let text = body.map(|b| b.to_string());
    let (status, out) = server.request(method, path, Some(ADMIN), text.as_deref());
    (status, serde_json::from_str(&out).unwrap_or_else(|_| Value::String(out)))
}

fn ok(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, out) = call(server, method, path, body);
    assert!((200..300).contains(&status), "{method} {path}: {status} {out}");
    out
}

fn ids(answer: &Value) -> Vec<String> {
    answer["docs"].as_array().unwrap_or_else(|| panic!("no docs: {answer}")).iter().map(|d| d["_id"].as_str().unwrap().to_owned()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn find(server: &ServerProcess, body: Value) -> Value {
    ok(server, "POST", "/db/_find", Some(body))
}

/// 30 books: three titles, two kinds, a price each.
fn library() -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    ok(&server, "PUT", "/db", None);
    let docs: Vec<Value> = (0..30)
        .map(|i| {
            let (title, kind) = (["The quick brown fox", "A lazy dog sleeps", "Brown bears fish"][i % 3], ["novel", "essay"][i % 2]);
            json!({"_id": format!("b{i:02}"), "title": title, "kind": kind, "price": i, "shelf": {"room": format!("room {}", i % 4)}})
        })
        .collect();
    let out = ok(&server, "POST", "/db/_bulk_docs", Some(json!({ "docs": docs })));
    assert!(out.as_array().unwrap().iter().all(|r| r["ok"] == true), "{out}");
    (dir, server)
}

#[test]
fn text_finds_through_a_nouveau_index_with_the_rest_of_the_selector() {
    let (_dir, server) = library();
    // No nouveau index: refused, not answered by ignoring the $text.
    let (status, e) = call(&server, "POST", "/db/_find", Some(json!({"selector": {"$text": "fox"}})));
    assert_eq!((status, e["error"].as_str()), (400, Some("no_usable_index")), "{e}");

    let created = ok(&server, "POST", "/db/_index", Some(json!({"type": "nouveau", "ddoc": "text", "name": "books", "index": {}})));
    assert_eq!(created, json!({"result": "created", "id": "_design/text", "name": "books"}));
    let again = ok(&server, "POST", "/db/_index", Some(json!({"type": "nouveau", "ddoc": "text", "name": "books", "index": {}})));
    assert_eq!(again["result"], "exists");
    // The design document is CouchDB's shape.
    let ddoc = ok(&server, "GET", "/db/_design/text", None);
    assert_eq!(ddoc["language"], "query");
    assert_eq!(ddoc["nouveau"]["books"]["index"]["default_analyzer"], "keyword");
    assert_eq!(ddoc["nouveau"]["books"]["analyzer"]["fields"]["$default"], "standard");
    let listed = ok(&server, "GET", "/db/_index", None);
    let entry = listed["indexes"].as_array().unwrap().iter().find(|i| i["type"] == "nouveau").cloned().unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(entry["ddoc"], "_design/text");
    assert_eq!(entry["def"]["fields"], json!([]));

    // $text alone: a phrase over every string of the document.
    let a = find(&server, json!({"selector": {"$text": "brown"}, "limit": 100}));
    assert_eq!(ids(&a).len(), 20, "{a}");
    let a = find(&server, json!({"selector": {"$text": "quick brown"}, "limit": 100}));
    assert_eq!(ids(&a).len(), 10, "a phrase: {a}");
    assert!(find(&server, json!({"selector": {"$text": "brown quick"}}))["docs"].as_array().unwrap().is_empty());
    // Nested strings count too ("room 3" is in shelf.room).
    assert_eq!(sorted(ids(&find(&server, json!({"selector": {"$text": "room 3", "kind": "novel"}, "limit": 100})))), Vec::<String>::new());
    assert_eq!(sorted(ids(&find(&server, json!({"selector": {"$text": "room 3"}, "limit": 100})))), ["b03", "b07", "b11", "b15", "b19", "b23", "b27"]);
    // With other conditions, in $and too.
    let a = find(&server, json!({"selector": {"$text": "fox", "kind": "novel", "price": {"$lt": 10}}}));
    assert_eq!(sorted(ids(&a)), ["b00", "b06"]);
    let a = find(&server, json!({"selector": {"$and": [{"price": {"$gte": 20}}, {"$text": "bears"}]}}));
    assert_eq!(sorted(ids(&a)), ["b20", "b23", "b26", "b29"]);
    // Below $or: text hits or the other branch.
    let a = find(&server, json!({"selector": {"$or": [{"$text": "bears"}, {"price": 0}]}, "limit": 100}));
    assert_eq!(ids(&a).len(), 11, "{a}");
    let a = find(&server, json!({"selector": {"$not": {"$text": "brown"}}, "limit": 100}));
    assert_eq!(ids(&a).len(), 10, "{a}");

    // Sort by a typed field, skip, limit, fields, and paging by bookmark.
    let page = find(&server, json!({"selector": {"$text": "brown"}, "sort": [{"price:number": "desc"}], "limit": 3, "fields": ["_id", "price"]}));
    assert_eq!(ids(&page), ["b29", "b27", "b26"], "{page}");
    assert_eq!(page["docs"][0], json!({"_id": "b29", "price": 29}));
    let next = find(&server, json!({"selector": {"$text": "brown"}, "sort": [{"price:number": "desc"}], "limit": 3, "bookmark": page["bookmark"]}));
    assert_eq!(ids(&next), ["b24", "b23", "b21"], "{next}");
    // A nested field sorts by its dotted name.
    let by_room = find(&server, json!({"selector": {"$text": "fox"}, "sort": [{"shelf.room:string": "desc"}], "limit": 3}));
    assert_eq!(ids(&by_room), ["b03", "b15", "b27"], "{by_room}");
    let skipped = find(&server, json!({"selector": {"$text": "brown"}, "sort": ["price:number"], "skip": 2, "limit": 2}));
    assert_eq!(ids(&skipped), ["b03", "b05"]);
    // Relevance order, paged without loss or repeat.
    let mut seen = Vec::new();
    let mut bookmark = Value::Null;
    loop {
        let p = find(&server, json!({"selector": {"$text": "brown", "kind": "essay"}, "limit": 4, "bookmark": bookmark}));
        if ids(&p).is_empty() {
            break;
        }
        seen.extend(ids(&p));
        bookmark = p["bookmark"].clone();
    }
    assert_eq!(sorted(seen), ["b03", "b05", "b09", "b11", "b15", "b17", "b21", "b23", "b27", "b29"]);
    let stats = find(&server, json!({"selector": {"$text": "fox", "kind": "essay"}, "execution_stats": true}));
    assert_eq!(stats["execution_stats"]["results_returned"], 5);
    assert_eq!(stats["execution_stats"]["total_docs_examined"], 10);

    // The index follows writes.
    ok(&server, "PUT", "/db/new", Some(json!({"title": "An unusual aardvark"})));
    assert_eq!(ids(&find(&server, json!({"selector": {"$text": "aardvark"}}))), ["new"]);
    let rev = ok(&server, "GET", "/db/new", None)["_rev"].as_str().unwrap().to_owned();
    ok(&server, "DELETE", &format!("/db/new?rev={rev}"), None);
    assert!(ids(&find(&server, json!({"selector": {"$text": "aardvark"}}))).is_empty());

    // _explain shows the nouveau index and the query.
    let x = ok(&server, "POST", "/db/_explain", Some(json!({"selector": {"$text": "fox", "kind": "novel"}, "sort": ["price:number"]})));
    assert_eq!(x["index"]["type"], "nouveau", "{x}");
    assert_eq!(x["index"]["name"], "books");
    assert_eq!(x["query"], "($default:\"fox\")");
    assert_eq!(x["selector"], json!({"$and": [{"$default": {"$text": "fox"}}, {"kind": {"$eq": "novel"}}]}));
    assert_eq!(x["sort"], json!(["price:number"]));

    // Errors: two $text, a bad argument, a $text under a field, two indexes.
    let (status, e) = call(&server, "POST", "/db/_find", Some(json!({"selector": {"$text": "a", "$or": [{"$text": "b"}]}})));
    assert_eq!((status, e["error"].as_str()), (400, Some("multiple_text_selector")), "{e}");
    let (status, e) = call(&server, "POST", "/db/_find", Some(json!({"selector": {"$text": {"x": 1}}})));
    assert_eq!((status, e["error"].as_str()), (400, Some("bad_arg")), "{e}");
    let (status, e) = call(&server, "POST", "/db/_find", Some(json!({"selector": {"title": {"$text": "fox"}}})));
    assert_eq!((status, e["error"].as_str()), (400, Some("bad_arg")), "{e}");
    ok(&server, "POST", "/db/_index", Some(json!({"type": "nouveau", "ddoc": "text2", "name": "titles", "index": {"fields": [{"name": "title", "type": "string"}]}})));
    let (status, e) = call(&server, "POST", "/db/_find", Some(json!({"selector": {"$text": "fox"}})));
    assert_eq!((status, e["error"].as_str(), e["reason"].as_str()), (400, Some("multiple_nouveau_indexes"), Some("You must specify an index with the `use_index` parameter.")));
    // use_index picks one; the narrower index has only titles in $default.
    assert_eq!(ids(&find(&server, json!({"selector": {"$text": "room 3"}, "use_index": "text2"}))).len(), 0);
    assert_eq!(ids(&find(&server, json!({"selector": {"$text": "fox"}, "use_index": ["text2", "titles"], "limit": 100}))).len(), 10);
    // A bad definition is refused as CouchDB refuses it.
    let (status, e) = call(&server, "POST", "/db/_index", Some(json!({"type": "nouveau", "index": {"fields": [{"name": "a", "type": "date"}]}})));
    assert_eq!((status, e["error"].as_str()), (400, Some("invalid_index_fields_definition")), "{e}");

    // Deleted, the index is gone from the list and from _find.
    ok(&server, "DELETE", "/db/_index/text2/nouveau/titles", None);
    let (status, _) = call(&server, "DELETE", "/db/_index/text2/nouveau/titles", None);
    assert_eq!(status, 404);
    assert_eq!(ids(&find(&server, json!({"selector": {"$text": "fox"}, "limit": 100}))).len(), 10);
    // _nouveau_cleanup keeps the live Mango index's files.
    ok(&server, "POST", "/db/_nouveau_cleanup", Some(json!({})));
    assert_eq!(ids(&find(&server, json!({"selector": {"$text": "fox"}, "limit": 100, "update": false}))).len(), 10);
}

#[test]
fn a_partial_filter_and_field_list_narrow_the_index() {
    let (_dir, server) = library();
    ok(
        &server,
        "POST",
        "/db/_index",
        Some(json!({"type": "nouveau", "ddoc": "novels", "index": {"partial_filter_selector": {"kind": "novel"}, "fields": [{"name": "title", "type": "string"}, {"name": "price", "type": "number"}]}})),
    );
    let a = find(&server, json!({"selector": {"$text": "fox"}, "sort": [{"price:number": "desc"}], "limit": 3}));
    assert_eq!(ids(&a), ["b24", "b18", "b12"], "only novels: {a}");
    // shelf.room is not one of the fields: its words are not in $default.
    assert!(ids(&find(&server, json!({"selector": {"$text": "room"}}))).is_empty());
    // A partitioned query keeps to its partition.
    let dir = tempfile::tempdir().unwrap();
    let p = ServerProcess::start(dir.path());
    ok(&p, "PUT", "/pdb?partitioned=true", None);
    ok(&p, "POST", "/pdb/_bulk_docs", Some(json!({"docs": [{"_id": "a:1", "t": "red fox"}, {"_id": "b:1", "t": "red fox"}]})));
    ok(&p, "POST", "/pdb/_index", Some(json!({"type": "nouveau", "ddoc": "t", "index": {}, "partitioned": false})));
    let all = ok(&p, "POST", "/pdb/_find", Some(json!({"selector": {"$text": "fox"}})));
    assert_eq!(sorted(ids(&all)), ["a:1", "b:1"]);
    let one = ok(&p, "POST", "/pdb/_partition/a/_find", Some(json!({"selector": {"$text": "fox"}})));
    assert_eq!(ids(&one), ["a:1"]);
}
