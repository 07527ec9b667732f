//! Partitioned databases (`PUT /{db}?partitioned=true`) on `rhizome serve`
//! beside the real CouchDB 3.5.0 (`../shared/peers/couchdb`): every
//! request goes to both, and the test holds Rhizome's status, error and
//! answer to CouchDB's. Where CouchDB's answer is an accident of its
//! cluster (a 500 for conflicting partitions, `total_rows` per shard,
//! sizes on disk) the test says what Rhizome answers instead.

mod common;

use common::couchdb::{CouchDbPeer, COUCH_ADMIN};
use common::server::{ServerProcess, ADMIN};
use serde_json::{json, Value};

/// The two servers, each with its admin.
struct Pair {
    rhizome: ServerProcess,
    couch: CouchDbPeer,
}

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

impl Pair {
    fn start(dir: &std::path::Path) -> Pair {
        let rhizome = ServerProcess::start(&dir.join("rhizome"));
        let couch = CouchDbPeer::start(&dir.join("couch"));
        Pair { rhizome, couch }
    }

    /// One request to both, as their admins (or `auth` as given to both).
    fn both_as(&self, auth: Option<(&str, &str)>, method: &str, path: &str, body: Option<Value>) -> ((u16, Value), (u16, Value)) {
        let body = body.map(|b| b.to_string());
        let (ra, ca) = auth.map_or((Some(ADMIN), Some(COUCH_ADMIN)), |(r, c)| (Some(r).filter(|a| !a.is_empty()), Some(c).filter(|a| !a.is_empty())));
        let (rs, rt) = self.rhizome.request(method, path, ra, body.as_deref());
        let (cs, ct) = self.couch.request(method, path, ca, body.as_deref());
        ((rs, j(&rt)), (cs, j(&ct)))
    }

    fn both(&self, method: &str, path: &str, body: Option<Value>) -> (Value, Value) {
        let ((rs, r), (cs, c)) = self.both_as(None, method, path, body.clone());
        assert_eq!(rs, cs, "{method} {path} {body:?}: status, Rhizome {r} CouchDB {c}");
        (r, c)
    }

    /// Same status, `error` and `reason` on both.
    fn same_error(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (r, c) = self.both(method, path, body);
        assert!(c.get("error").is_some(), "CouchDB answers no error: {c}");
        assert_eq!((&r["error"], &r["reason"]), (&c["error"], &c["reason"]), "{method} {path}");
        r
    }

    /// Same success status and the same answer under `pick`.
    fn same(&self, method: &str, path: &str, body: Option<Value>, pick: impl Fn(&Value) -> Value) -> Value {
        let (r, c) = self.both(method, path, body);
        assert_eq!(pick(&r), pick(&c), "{method} {path}: Rhizome {r} CouchDB {c}");
        r
    }
}

fn ids(rows: &Value, member: &str) -> Value {
    Value::Array(rows[member].as_array().unwrap_or_else(|| panic!("no {member}: {rows}")).iter().map(|r| r.get("id").or_else(|| r.get("_id")).cloned().unwrap_or(Value::Null)).collect())
}

fn sorted_ids(rows: &Value, member: &str) -> Value {
    let mut v = ids(rows, member).as_array().unwrap().clone();
    v.sort_by_key(|x| x.to_string());
    Value::Array(v)
}

/// The seed both databases get: partitions a, b, c; `b:3` deleted.
fn seed(pair: &Pair, db: &str) {
    let docs = json!([
        { "_id": "a:1", "age": 7, "name": "x" },
        { "_id": "b:1", "age": 3, "name": "y" },
        { "_id": "b:2", "age": 5, "name": "z" },
        { "_id": "c:1", "age": 4, "name": "w" },
        { "_id": "b:3", "age": 9 },
    ]);
    // Revision ids are not compared: CouchDB's hash its own term format.
    pair.same("POST", &format!("/{db}/_bulk_docs"), Some(json!({ "docs": docs })), |r| Value::Array(r.as_array().unwrap().iter().map(|x| json!([x["id"], x["ok"]])).collect()));
    let (rev, couch_rev) = pair.both("GET", &format!("/{db}/b:3"), None);
    assert_eq!(pair.rhizome.request("DELETE", &format!("/{db}/b:3?rev={}", rev["_rev"].as_str().unwrap()), Some(ADMIN), None).0, 200);
    assert_eq!(pair.couch.request("DELETE", &format!("/{db}/b:3?rev={}", couch_rev["_rev"].as_str().unwrap()), Some(COUCH_ADMIN), None).0, 200);
}

#[test]
fn partitioned_databases_answer_as_couchdb_3_5() {
    let dir = tempfile::tempdir().unwrap();
    let pair = Pair::start(dir.path());
    // Creation and `props`.
    pair.same("PUT", "/pdb?partitioned=true", None, |r| r.clone());
    pair.same("PUT", "/npdb", None, |r| r.clone());
    pair.same("GET", "/pdb", None, |r| r["props"].clone());
    pair.same("GET", "/npdb", None, |r| r["props"].clone());
    // Ids: `partition:docid`, errors as CouchDB's, a whole `_bulk_docs`
    // refused for one bad id.
    for id in ["nopart", "%3A1", "_x:1", "a:", "a:_x"] {
        pair.same_error("PUT", &format!("/pdb/{id}"), Some(json!({ "v": 1 })));
    }
    pair.same_error("POST", "/pdb", Some(json!({ "v": 1 })));
    pair.same_error("POST", "/pdb/_bulk_docs", Some(json!({ "docs": [{ "_id": "b:9" }, { "_id": "c" }] })));
    pair.same("GET", "/pdb/b:9", None, |r| r["error"].clone());
    pair.same("PUT", "/pdb/_local/x", Some(json!({ "v": 1 })), |r| r["ok"].clone());
    pair.same("PUT", "/npdb/plain", Some(json!({ "v": 1 })), |r| r["ok"].clone());
    seed(&pair, "pdb");

    // A partition's counts.
    let info = pair.same("GET", "/pdb/_partition/b", None, |r| json!([r["db_name"], r["partition"], r["doc_count"], r["doc_del_count"]]));
    assert!(info["sizes"]["active"].as_u64().unwrap() > 0 && info["sizes"]["external"].as_u64().unwrap() > 0, "{info}");
    pair.same("GET", "/pdb/_partition/zz", None, |r| json!([r["doc_count"], r["doc_del_count"], r["sizes"]]));
    pair.same_error("GET", "/pdb/_partition/_a", None);
    pair.same_error("GET", "/npdb/_partition/a", None);
    pair.same_error("GET", "/pdb/_partition/b/_bogus", None);

    // A partition's `_all_docs`, with CouchDB's options.
    for q in ["", "?descending=true", "?limit=1&skip=1", "?start_key=%22b:2%22", "?end_key=%22b:1%22", "?start_key=%22a%22", "?start_key=%22c%22", "?descending=true&start_key=%22c%22", "?include_docs=true"] {
        let r = pair.same("GET", &format!("/pdb/_partition/b/_all_docs{q}"), None, |r| ids(r, "rows"));
        if q.contains("include_docs") {
            assert_eq!(r["rows"][0]["doc"]["age"], 3, "{r}");
        }
    }
    pair.same("POST", "/pdb/_partition/b/_all_docs", Some(json!({ "limit": 1, "descending": true })), |r| ids(r, "rows"));
    // Its `/queries` form: each query inside the partition. (CouchDB's
    // `total_rows` and `offset` here count the partition's shard, which
    // holds other partitions too: rows are compared, as above.)
    let queries = json!({ "queries": [{}, { "limit": 1, "skip": 1 }, { "descending": true }, { "start_key": "c" }, { "include_docs": true, "limit": 1 }] });
    let r = pair.same("POST", "/pdb/_partition/b/_all_docs/queries", Some(queries), |r| Value::Array(r["results"].as_array().unwrap().iter().map(|one| ids(one, "rows")).collect()));
    assert_eq!(r["results"][4]["rows"][0]["doc"]["age"], 3, "{r}");

    // Mango: a partitioned index (the default) and a global one.
    pair.same("POST", "/pdb/_index", Some(json!({ "index": { "fields": ["age"] }, "ddoc": "p-age", "name": "p-age" })), |r| r.clone());
    pair.same("POST", "/pdb/_index", Some(json!({ "index": { "fields": ["age"] }, "ddoc": "g-age", "name": "g-age", "partitioned": false })), |r| r.clone());
    pair.same("GET", "/pdb/_index", None, |r| r["indexes"].clone());
    pair.same_error("POST", "/pdb/_index", Some(json!({ "index": { "fields": ["name"] }, "ddoc": "g-age", "name": "n", "partitioned": true })));
    let find = json!({ "selector": { "age": { "$gt": 0 } }, "fields": ["_id", "age"] });
    pair.same("POST", "/pdb/_partition/b/_find", Some(find.clone()), |r| r["docs"].clone());
    pair.same("POST", "/pdb/_find", Some(find.clone()), |r| r["docs"].clone());
    pair.same("POST", "/pdb/_find", Some(json!({ "selector": { "age": { "$gt": 0 } }, "partition": "b" })), |r| ids(r, "docs"));
    pair.same("POST", "/pdb/_partition/c/_find", Some(json!({ "selector": { "name": "w" } })), |r| ids(r, "docs"));
    let explained = |r: &Value| {
        let candidates: Vec<Value> = r["index_candidates"].as_array().unwrap().iter().map(|c| json!([c["index"]["name"], c["analysis"]])).collect();
        json!([r["index"], r["partitioned"], r["opts"]["partition"], r["mrargs"]["partition"], r["mrargs"]["start_key"], candidates, r["covering"]])
    };
    pair.same("POST", "/pdb/_partition/b/_explain", Some(find.clone()), explained);
    pair.same("POST", "/pdb/_explain", Some(find.clone()), explained);
    pair.same("POST", "/pdb/_partition/b/_explain", Some(json!({ "selector": { "name": "y" } })), explained);
    pair.same_error("POST", "/npdb/_find", Some(json!({ "selector": { "v": 1 }, "partition": "a" })));
    // CouchDB answers a 500 (`bad_partition`) here; Rhizome says why.
    let ((status, body), _) = pair.both_as(None, "POST", "/pdb/_partition/b/_find", Some(json!({ "selector": {}, "partition": "c" })));
    assert_eq!((status, &body["reason"]), (400, &json!("Conflicting value for `partition` in request body")));

    // Views: partitioned by default, global when the design document says.
    let map = json!({ "map": "function (doc) { if (doc.age) emit(doc.age, doc.name); }" });
    pair.same("PUT", "/pdb/_design/p", Some(json!({ "views": { "v": map, "n": { "map": map["map"], "reduce": "_count" } } })), |r| r["ok"].clone());
    pair.same("PUT", "/pdb/_design/g", Some(json!({ "options": { "partitioned": false }, "views": { "v": map } })), |r| r["ok"].clone());
    pair.same_error("PUT", "/npdb/_design/p", Some(json!({ "options": { "partitioned": true }, "views": { "v": map } })));
    // Rows, documents without their revision ids.
    let rows = |r: &Value| {
        let mut rows = r["rows"].clone();
        for row in rows.as_array_mut().unwrap() {
            if let Some(doc) = row.get_mut("doc").and_then(Value::as_object_mut) {
                doc.remove("_rev");
            }
        }
        rows
    };
    for q in ["", "?descending=true", "?start_key=4", "?limit=1", "?include_docs=true"] {
        pair.same("GET", &format!("/pdb/_partition/b/_design/p/_view/v{q}"), None, rows);
    }
    pair.same("GET", "/pdb/_partition/b/_design/p/_view/n", None, rows);
    pair.same("GET", "/pdb/_design/p/_view/v?partition=c", None, rows);
    pair.same("GET", "/pdb/_design/g/_view/v", None, rows);
    pair.same_error("GET", "/pdb/_design/p/_view/v", None);
    pair.same_error("GET", "/pdb/_partition/b/_design/g/_view/v", None);
    pair.same_error("GET", "/pdb/_partition/b/_design/p/_view/v?partition=c", None);
    // A write after the first query reaches the partition's rows.
    pair.same("PUT", "/pdb/b:4", Some(json!({ "age": 1, "name": "v" })), |r| r["ok"].clone());
    pair.same("GET", "/pdb/_partition/b/_design/p/_view/v", None, rows);
    pair.same("GET", "/pdb/_partition/b/_all_docs", None, |r| ids(r, "rows"));
    pair.same("POST", "/pdb/_partition/b/_find", Some(find), |r| sorted_ids(r, "docs"));
}

#[test]
fn a_partitioned_database_replicates_to_and_from_couchdb() {
    let dir = tempfile::tempdir().unwrap();
    let pair = Pair::start(dir.path());
    pair.same("PUT", "/src?partitioned=true", None, |r| r.clone());
    pair.same("PUT", "/dst?partitioned=true", None, |r| r.clone());
    seed(&pair, "src");
    pair.same("PUT", "/src/_design/p", Some(json!({ "views": { "v": { "map": "function (doc) { emit(doc.age, null); }" } } })), |r| r["ok"].clone());
    let couch_url = |db: &str| format!("http://{COUCH_ADMIN}@127.0.0.1:{}/{db}", pair.couch.port);
    let rhizome_url = |db: &str| format!("{}/{db}", pair.rhizome.url(ADMIN));
    // Rhizome pulls CouchDB's `src` into its `dst`; CouchDB pulls
    // Rhizome's `src` into its `dst`.
    let (status, answer) = pair.rhizome.request("POST", "/_replicate", Some(ADMIN), Some(&json!({ "source": couch_url("src"), "target": "dst" }).to_string()));
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = pair.couch.request("POST", "/_replicate", Some(COUCH_ADMIN), Some(&json!({ "source": rhizome_url("src"), "target": "dst" }).to_string()));
    assert_eq!(status, 200, "{answer}");
    // Each `dst` holds what the other's `src` held, partitions included.
    pair.same("GET", "/dst/_all_docs", None, |r| ids(r, "rows"));
    pair.same("GET", "/dst/_partition/b", None, |r| json!([r["doc_count"], r["doc_del_count"]]));
    pair.same("GET", "/dst/_partition/b/_design/p/_view/v", None, |r| r["rows"].clone());
    pair.same("GET", "/dst", None, |r| json!([r["doc_count"], r["doc_del_count"], r["props"]]));
    // A partitioned target refuses what has no partition, whoever sends it.
    pair.same("PUT", "/plain", None, |r| r.clone());
    pair.same("PUT", "/plain/nopart", Some(json!({ "v": 1 })), |r| r["ok"].clone());
    let (_, answer) = pair.rhizome.request("POST", "/_replicate", Some(ADMIN), Some(&json!({ "source": couch_url("plain"), "target": "dst" }).to_string()));
    let answer = j(&answer);
    assert_eq!(pair.rhizome.request("GET", "/dst/nopart", Some(ADMIN), None).0, 404, "{answer}");
}

#[test]
fn a_partition_is_its_database_members_alone() {
    let dir = tempfile::tempdir().unwrap();
    let pair = Pair::start(dir.path());
    pair.same("PUT", "/pdb?partitioned=true", None, |r| r.clone());
    for name in ["alice", "bob"] {
        let user = json!({ "name": name, "password": "pw", "roles": [], "type": "user" });
        pair.same("PUT", &format!("/_users/org.couchdb.user:{name}"), Some(user), |r| r["ok"].clone());
    }
    pair.same("PUT", "/pdb/_security", Some(json!({ "members": { "names": ["alice"] } })), |r| r.clone());
    seed(&pair, "pdb");
    pair.same("PUT", "/pdb/_design/p", Some(json!({ "views": { "v": { "map": "function (doc) { emit(doc.age, null); }" } } })), |r| r["ok"].clone());
    let endpoints: [(&str, &str, Option<Value>); 6] = [
        ("GET", "/pdb/_partition/b", None),
        ("GET", "/pdb/_partition/b/_all_docs", None),
        ("POST", "/pdb/_partition/b/_all_docs/queries", Some(json!({ "queries": [{}] }))),
        ("POST", "/pdb/_partition/b/_find", Some(json!({ "selector": {} }))),
        ("POST", "/pdb/_partition/b/_explain", Some(json!({ "selector": {} }))),
        ("GET", "/pdb/_partition/b/_design/p/_view/v", None),
    ];
    for (method, path, body) in endpoints {
        // Nobody signed in: 401; a user who is no member: 403; a member: 200.
        for (who, status) in [("", 401), ("bob:pw", 403), ("alice:pw", 200)] {
            let ((rs, r), (cs, c)) = pair.both_as(Some((who, who)), method, path, body.clone());
            assert_eq!((rs, cs), (status, status), "{who} {method} {path}: Rhizome {r} CouchDB {c}");
            if status != 200 {
                assert_eq!(r["error"], c["error"], "{who} {method} {path}");
                assert!(r.get("rows").is_none() && r.get("results").is_none() && r.get("docs").is_none() && r.get("doc_count").is_none(), "{r}");
            }
        }
    }
}
