//! The same edits written to `rhizome serve` and to the real Apache CouchDB
//! 3.5.0 (`../shared/peers/couchdb`, started here) get the same revision
//! ids, and the documents come back with their members in the same order
//! (issue 43, point 1): nested objects written unsorted, unicode, small,
//! big and negative integers, floats, deletions, a document made again
//! after its deletion, attachments (inline, stubs, standalone), edits of
//! edits, `_bulk_docs`.

mod common;

use common::server::{base64, exchange, free_port, ServerProcess, ADMIN};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// CouchDB 3.5.0 on a free port in a temporary folder, stopped on drop.
struct CouchPeer {
    dir: tempfile::TempDir,
    port: u16,
    scripts: PathBuf,
}

const PEER_ADMIN: &str = "admin:secret";

impl CouchPeer {
    fn start() -> CouchPeer {
        let scripts = common::couchdb::peer_folder();
        assert!(scripts.join("start").exists(), "the CouchDB peer is missing at {}", scripts.display());
        let dir = tempfile::tempdir().expect("a temporary folder");
        let port = free_port();
        // `start` waits until CouchDB answers (with its own deadline).
        let out = Command::new(scripts.join("start"))
            .arg(dir.path().join("peer"))
            .arg(port.to_string())
            .arg(PEER_ADMIN)
            .output()
            .expect("the peer's start script runs");
        assert!(out.status.success(), "CouchDB did not start: {}", String::from_utf8_lossy(&out.stderr));
        CouchPeer { dir, port, scripts }
    }
}

impl Drop for CouchPeer {
    fn drop(&mut self) {
        let _ = Command::new(self.scripts.join("stop")).arg(self.dir.path().join("peer")).output();
    }
}

/// Both servers: each request goes to both, and both must answer alike.
struct Pair {
    rhizome: u16,
    couch: u16,
}

impl Pair {
    /// One request to one server: status and body.
    fn send(port: u16, auth: &str, method: &str, path: &str, body: &str, content_type: &str) -> (u16, String) {
        let auth = format!("Basic {}", base64(auth.as_bytes()));
        let headers = [("Authorization", auth.as_str()), ("Content-Type", content_type), ("Accept", "application/json")];
        let (status, _, body) = exchange(port, method, path, &headers, body);
        (status, body)
    }

    /// Sends the request to both; their statuses must agree. The answers.
    fn both(&self, method: &str, path: &str, body: Option<&str>, content_type: &str) -> (Value, Value) {
        let body = body.unwrap_or("");
        let (rs, rb) = Self::send(self.rhizome, ADMIN, method, path, body, content_type);
        let (cs, cb) = Self::send(self.couch, PEER_ADMIN, method, path, body, content_type);
        assert_eq!(rs, cs, "{method} {path}: Rhizome answered {rb}, CouchDB {cb}");
        let parse = |b: &str| serde_json::from_str::<Value>(b).unwrap_or_else(|e| panic!("{method} {path}: {e}: {b}"));
        (parse(&rb), parse(&cb))
    }

    /// A write to both: the revision ids must be equal. The revision.
    fn write(&self, method: &str, path: &str, body: &str) -> String {
        self.write_as(method, path, body, "application/json")
    }

    fn write_as(&self, method: &str, path: &str, body: &str, content_type: &str) -> String {
        let (r, c) = self.both(method, path, Some(body), content_type);
        assert_eq!(r["rev"], c["rev"], "{method} {path} {body}: Rhizome {r}, CouchDB {c}");
        r["rev"].as_str().unwrap_or_else(|| panic!("{method} {path}: no rev in {r}")).to_owned()
    }

    /// A read from both: the JSON texts must be equal, members in order.
    fn same_text(&self, path: &str) {
        let (_, r) = Self::send(self.rhizome, ADMIN, "GET", path, "", "application/json");
        let (_, c) = Self::send(self.couch, PEER_ADMIN, "GET", path, "", "application/json");
        // Both are compact JSON; compare them parsed with order kept, so
        // whitespace alone never differs.
        let (r, c): (Value, Value) = (serde_json::from_str(&r).expect("JSON"), serde_json::from_str(&c).expect("JSON"));
        assert_eq!(r.to_string(), c.to_string(), "GET {path}");
    }
}

#[test]
fn edits_get_couchdbs_revision_ids_and_documents_its_member_order() {
    let couch = CouchPeer::start();
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = ServerProcess::start(data.path());
    let pair = Pair { rhizome: server.port, couch: couch.port };
    pair.both("PUT", "/revs", None, "application/json");

    // Bodies: members unsorted at every depth, unicode raw and escaped,
    // integers of every external size, floats, empty containers.
    let bodies = [
        r#"{"b":2,"a":1}"#,
        r#"{"z":{"y":[1,{"x":null,"w":true}],"v":false},"u":[],"t":{}}"#,
        r#"{"name":"Zoë \u00e9\u2028 ☃ 𝄞 \ud834\udd1e","ключ":"значение","":"","q\"uote":"back\\slash\n"}"#,
        r#"{"small":255,"int":256,"neg":-1,"min32":-2147483648,"max32":2147483647,"big":2147483648,"bigneg":-2147483649,"i64":-9223372036854775808,"u64":18446744073709551615,"js":9007199254740993}"#,
        r#"{"half":0.5,"tiny":-2.5e-300,"huge":1e300,"one":1.0,"exp":1E2,"pi":3.141592653589793}"#,
        r#"{"deep":[[[[{"k":[[]]}]]]],"_id":"doc5"}"#,
    ];
    for (i, body) in bodies.iter().enumerate() {
        let id = format!("doc{i}");
        let rev1 = pair.write("PUT", &format!("/revs/{id}"), body);
        pair.same_text(&format!("/revs/{id}?revs=true"));
        // An edit, then an edit of the edit (the parent's id is hashed).
        let mut edited: Value = serde_json::from_str(body).expect("JSON");
        edited["_rev"] = json!(rev1);
        edited["edited"] = json!(1);
        let rev2 = pair.write("PUT", &format!("/revs/{id}"), &edited.to_string());
        edited["_rev"] = json!(rev2);
        edited["edited"] = json!({"again": [2, 1]});
        let rev3 = pair.write("PUT", &format!("/revs/{id}"), &edited.to_string());
        // (`_local_seq` differs: CouchDB counts per shard.)
        pair.same_text(&format!("/revs/{id}?revs=true&revs_info=true"));
        // Deleted, then made again without `_rev` (on the deleted branch).
        let deleted = pair.write("DELETE", &format!("/revs/{id}?rev={rev3}"), "");
        pair.same_text(&format!("/revs/{id}?rev={deleted}&revs=true"));
        pair.write("PUT", &format!("/revs/{id}"), body);
    }

    // -0.0 hashes with its sign (CouchDB then writes it as 0.0, which is
    // jiffy's encoding, not compared here).
    pair.write("PUT", "/revs/negzero", r#"{"z":-0.0,"y":[-0.0,0.0]}"#);

    // A deletion that keeps a body, through `_bulk_docs`, with new ones.
    let rev = pair.write("PUT", "/revs/kept", r#"{"a":[1,2]}"#);
    let bulk = json!({"docs": [
        {"_id": "kept", "_rev": rev, "_deleted": true, "why": "gone"},
        {"_id": "b1", "n": 1, "m": {"b": 1, "a": 2}},
        {"_id": "b2", "_deleted": false, "s": "ä"},
    ]});
    let (r, c) = pair.both("POST", "/revs/_bulk_docs", Some(&bulk.to_string()), "application/json");
    assert_eq!(r, c, "_bulk_docs");

    // Attachments of types CouchDB stores as they are (it compresses text
    // and JSON, and its digest is then of the gzip stream): two inline,
    // not in name order; then an edit keeping them as stubs; then one
    // written alone, which CouchDB puts first.
    let atts = json!({"n": 1, "_attachments": {
        "z.png": {"content_type": "image/png", "data": "iVBORw0KGgo="},
        "a.bin": {"content_type": "application/octet-stream", "data": "AAECAwQF"},
    }});
    let rev1 = pair.write("PUT", "/revs/atts", &atts.to_string());
    pair.same_text(&format!("/revs/atts?rev={rev1}"));
    let stubs = json!({"_rev": rev1, "n": 2, "_attachments": {
        "a.bin": {"stub": true},
        "z.png": {"stub": true},
    }});
    let rev2 = pair.write("PUT", "/revs/atts", &stubs.to_string());
    let rev3 = pair.write_as("PUT", &format!("/revs/atts/m.gif?rev={rev2}"), "GIF89a", "image/gif");
    pair.same_text("/revs/atts?revs=true");
    let rev4 = pair.write("DELETE", &format!("/revs/atts/z.png?rev={rev3}"), "");
    pair.same_text(&format!("/revs/atts?rev={rev4}&revs=true"));

    // Conflicts: the winner is the same on both (it is chosen by id).
    let conflicted = r#"{"docs":[{"_id":"c","_rev":"1-23202479633c2b380f79507a776743d5","a":1}],"new_edits":false}"#;
    pair.write("PUT", "/revs/c", r#"{"a":2}"#);
    pair.both("POST", "/revs/_bulk_docs", Some(conflicted), "application/json");
    pair.same_text("/revs/c?conflicts=true");
}
