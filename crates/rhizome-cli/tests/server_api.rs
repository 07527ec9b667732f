//! CouchDB's API details on `rhizome serve`: errors and status codes,
//! ETags, the `_changes` feeds, bulk endpoints, limits and shutdown.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::{json, Value};

fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn errors_follow_couchdb_status_codes_and_shapes() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let r = |m: &str, p: &str, b: Option<&str>| server.request(m, p, Some(ADMIN), b);
    let welcome = j(&r("GET", "/", None).1);
    assert_eq!(welcome["couchdb"], "Welcome");
    assert_eq!(welcome["version"], "3.3.3");
    let uuid = welcome["uuid"].clone();
    assert_eq!(r("GET", "/nope", None), (404, "{\"error\":\"not_found\",\"reason\":\"Database does not exist.\"}\n".to_owned()));
    assert_eq!(j(&r("PUT", "/Bad", None).1)["error"], "illegal_database_name");
    assert_eq!(r("PUT", "/db", None).0, 201);
    assert_eq!(r("PUT", "/db", None).0, 412);
    let (status, text) = r("PUT", "/db/doc", Some("{not json"));
    assert_eq!(status, 400);
    assert!(j(&text)["reason"].as_str().unwrap().contains("Invalid JSON"), "{text}");
    assert_eq!(r("PUT", "/db/doc", Some("[1]")).0, 400);
    assert_eq!(r("PUT", "/db/_bad", Some("{}")).0, 400);
    // CouchDB refuses the whole request as it reads it (couch_doc:validate_docid).
    let (status, text) = r("POST", "/db/_bulk_docs", Some(r#"{"docs":[{"_id":"_nope"}]}"#));
    assert_eq!((status, j(&text)["error"].as_str()), (400, Some("illegal_docid")), "{text}");
    assert_eq!(j(&r("PUT", "/db/doc", Some(r#"{"_foo":1}"#)).1)["error"], "doc_validation");
    assert_eq!(r("GET", "/db/missing", None).0, 404);
    assert_eq!(r("PUT", "/db/doc?rev=1-abc", Some("{}")).0, 409);
    assert_eq!(r("GET", "/db/doc?rev=bogus", None).0, 400);
    assert_eq!(j(&r("GET", "/_uuids?count=3", None).1)["uuids"].as_array().unwrap().len(), 3);
    assert_eq!(r("GET", "/_up", None).0, 200);
    // The server keeps its uuid across restarts.
    drop(server);
    let server = ServerProcess::start(data.path());
    assert_eq!(j(&server.request("GET", "/", None, None).1)["uuid"], uuid);
}

#[test]
fn documents_etags_bulk_endpoints_and_revs_limit() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let r = |m: &str, p: &str, b: Option<&str>| server.request(m, p, Some(ADMIN), b);
    r("PUT", "/db", None);
    let rev = j(&r("PUT", "/db/a", Some(r#"{"v":1}"#)).1)["rev"].as_str().unwrap().to_owned();
    let etag = format!("\"{rev}\"");
    let (status, _) = try_request(server.port, "GET", "/db/a", Some(ADMIN), None, &[("If-None-Match", &etag)]).unwrap();
    assert_eq!(status, 304);
    let rev2 = j(&r("PUT", &format!("/db/a?rev={rev}"), Some(r#"{"v":2}"#)).1)["rev"].as_str().unwrap().to_owned();
    let doc = j(&r("GET", "/db/a?revs_info=true&revs=true", None).1);
    assert_eq!(doc["_revisions"]["start"], 2);
    assert_eq!(doc["_revs_info"][0]["status"], "available");
    let bulk = j(&r("POST", "/db/_bulk_get?revs=true", Some(&format!(r#"{{"docs":[{{"id":"a","rev":"{rev2}"}},{{"id":"a","rev":"9-x"}},{{"id":"zz"}}]}}"#))).1);
    assert_eq!(bulk["results"][0]["docs"][0]["ok"]["v"], 2);
    assert_eq!(bulk["results"][1]["docs"][0]["error"]["error"], "not_found");
    assert_eq!(bulk["results"][2]["docs"][0]["error"]["error"], "not_found");
    let diff = j(&r("POST", "/db/_revs_diff", Some(&format!(r#"{{"a":["{rev2}","3-new"]}}"#))).1);
    assert_eq!(diff, json!({"a": {"missing": ["3-new"], "possible_ancestors": [rev2]}}));
    assert_eq!(r("PUT", "/db/_revs_limit", Some("2")).0, 200);
    assert_eq!(r("GET", "/db/_revs_limit", None).1.trim(), "2");
    let mut rev = rev2;
    for v in 3..6 {
        rev = j(&r("PUT", &format!("/db/a?rev={rev}"), Some(&format!(r#"{{"v":{v}}}"#))).1)["rev"].as_str().unwrap().to_owned();
    }
    assert_eq!(j(&r("GET", "/db/a?revs=true", None).1)["_revisions"]["ids"].as_array().unwrap().len(), 2);
    assert_eq!(r("DELETE", &format!("/db/a?rev={rev}"), None).0, 200);
    assert_eq!(j(&r("GET", "/db/a", None).1)["reason"], "deleted");
    assert_eq!(r("POST", "/db/_compact", Some("")).0, 202);
    assert_eq!(j(&r("GET", "/db", None).1)["doc_del_count"], 1);
}

#[test]
fn changes_feeds_normal_longpoll_continuous_and_eventsource() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let r = |m: &str, p: &str, b: Option<&str>| server.request(m, p, Some(ADMIN), b);
    r("PUT", "/db", None);
    for id in ["a", "b", "c"] {
        r("PUT", &format!("/db/{id}"), Some(r#"{"k":1}"#));
    }
    let normal = j(&r("GET", "/db/_changes?since=1", None).1);
    assert_eq!(normal["results"].as_array().unwrap().len(), 2);
    assert_eq!(normal["last_seq"], 3);
    let cont = r("GET", "/db/_changes?feed=continuous&timeout=200", None).1;
    let lines: Vec<Value> = cont.lines().filter(|l| !l.trim().is_empty()).map(j).collect();
    assert_eq!(lines.len(), 4, "{cont}");
    assert_eq!(lines[3]["last_seq"], 3);
    let limited = r("GET", "/db/_changes?feed=continuous&limit=2", None).1;
    assert_eq!(limited.lines().filter(|l| !l.trim().is_empty()).count(), 3, "{limited}");
    let es = r("GET", "/db/_changes?feed=eventsource&timeout=200", None).1;
    assert_eq!(es.matches("data: ").count(), 3, "{es}");
    // A longpoll waits for the next commit.
    let port = server.port;
    let waiter = std::thread::spawn(move || try_request(port, "GET", "/db/_changes?feed=longpoll&since=3&heartbeat=50", Some(ADMIN), None, &[]).unwrap());
    std::thread::sleep(std::time::Duration::from_millis(300));
    r("PUT", "/db/d", Some("{}"));
    let (status, text) = waiter.join().unwrap();
    assert_eq!(status, 200);
    let poll = j(text.trim());
    assert_eq!(poll["results"][0]["id"], "d");
    let timed_out = j(r("GET", "/db/_changes?feed=longpoll&since=4&timeout=100", None).1.trim());
    assert_eq!(timed_out["results"], json!([]));
}

#[test]
fn bodies_past_the_limit_get_413_and_sigterm_stops_cleanly() {
    let data = tempfile::tempdir().unwrap();
    let port = common::server::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rhizome"))
        .arg("--data")
        .arg(data.path())
        .args(["serve", "--quiet", "--max-body-bytes", "1000", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while try_request(port, "GET", "/_up", None, None, &[]).map(|r| r.0).ok() != Some(200) {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    try_request(port, "PUT", "/db", Some(ADMIN), None, &[]).unwrap();
    let big = format!(r#"{{"x":"{}"}}"#, "a".repeat(2000));
    let (status, text) = try_request(port, "PUT", "/db/big", Some(ADMIN), Some(&big), &[]).unwrap();
    assert_eq!(status, 413, "{text}");
    assert_eq!(try_request(port, "PUT", "/db/small", Some(ADMIN), Some("{}"), &[]).unwrap().0, 201);
    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "SIGTERM should end the server cleanly, got {status}");
}
