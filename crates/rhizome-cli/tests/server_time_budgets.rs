//! Time budgets that hold (issue 44, point 5): a view index is mapped
//! without the database's writer, so a write does not wait for a slow map
//! function; a looping `validate_doc_update` costs a `_bulk_docs` its
//! request's JavaScript budget once, not its per-call limit per document;
//! a Mango selector of 100,000 clauses stops at the query time limit.

mod common;

use common::server::{ServerProcess, ADMIN};
use std::time::{Duration, Instant};

/// Map log lines the server has written so far.
fn mapped(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().matches("mapping ").count()
}

#[test]
fn a_write_does_not_wait_for_a_view_being_built() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = ServerProcess::start_logged(&dir.path().join("data"), &log);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    for i in 0..6 {
        assert_eq!(server.request("PUT", &format!("/db/d{i}"), Some(ADMIN), Some(r#"{"n": 1}"#)).0, 201);
    }
    // A map function that takes a second per document, and says so.
    let ddoc = r#"{"views": {"slow": {"map": "function (doc) { log('mapping ' + doc._id); var t = Date.now(); while (Date.now() - t < 1000) {} emit(doc._id, 1); }"}}}"#;
    assert_eq!(server.request("PUT", "/db/_design/d", Some(ADMIN), Some(ddoc)).0, 201);
    std::thread::scope(|scope| {
        let view = scope.spawn(|| server.request("GET", "/db/_design/d/_view/slow", Some(ADMIN), None));
        let deadline = Instant::now() + Duration::from_secs(30);
        while mapped(&log) == 0 {
            assert!(Instant::now() < deadline, "the view build did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The build is under way: a plain write goes through at once.
        let (status, body) = server.request("PUT", "/db/during", Some(ADMIN), Some(r#"{"n": 2}"#));
        assert_eq!(status, 201, "{body}");
        let done = mapped(&log);
        assert!(done < 6, "the write waited until the build had mapped {done} of 6 documents");
        let (status, body) = view.join().unwrap();
        assert_eq!(status, 200, "{body}");
        // The answer is the index at its sequence, the write after it
        // is in the next build.
        assert!(body.contains(r#""total_rows":6"#) || body.contains(r#""total_rows":7"#), "{body}");
    });
    let (status, body) = server.request("GET", "/db/_design/d/_view/slow", Some(ADMIN), None);
    assert_eq!(status, 200);
    assert!(body.contains(r#""total_rows":7"#), "{body}");
}

#[test]
fn a_looping_validation_costs_a_bulk_write_its_request_budget_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(&dir.path().join("data"), &[("RHIZOME_JS_REQUEST_TIMEOUT_MS", "1500")]);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let ddoc = r#"{"validate_doc_update": "function (n, o, u, s) { while (true) {} }"}"#;
    assert_eq!(server.request("PUT", "/db/_design/v", Some(ADMIN), Some(ddoc)).0, 201);
    let docs: Vec<String> = (0..20).map(|i| format!(r#"{{"_id": "d{i}"}}"#)).collect();
    // Each call alone may loop 5 s: 100 s for 20 documents before.
    let (status, body) = server.request("POST", "/db/_bulk_docs", Some(ADMIN), Some(&format!(r#"{{"docs": [{}]}}"#, docs.join(","))));
    assert_eq!(status, 201, "{body}");
    let results: serde_json::Value = serde_json::from_str(&body).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 20);
    assert!(results.iter().all(|r| r["error"] == "os_process_error"), "{body}");
    let stopped = results.iter().filter(|r| r["reason"].as_str().unwrap_or("").contains("past the time all of a request's JavaScript may take")).count();
    assert_eq!(stopped, 20, "{body}");
    assert_eq!(server.request("GET", "/db/d0", Some(ADMIN), None).0, 404, "nothing refused was written");
}

#[test]
fn a_mango_selector_of_100000_clauses_stops_at_the_query_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(&dir.path().join("data"), &[("RHIZOME_QUERY_TIMEOUT_MS", "1000")]);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let docs: Vec<String> = (0..2000).map(|i| format!(r#"{{"_id": "d{i:04}", "b": "x{i}"}}"#)).collect();
    assert_eq!(server.request("POST", "/db/_bulk_docs", Some(ADMIN), Some(&format!(r#"{{"docs": [{}]}}"#, docs.join(",")))).0, 201);
    // 100,000 clauses to test per document: 14 s for these 2,000.
    let clauses: Vec<String> = (0..100_000).map(|i| format!(r#"{{"b": {{"$ne": "y{i}"}}}}"#)).collect();
    let query = format!(r#"{{"selector": {{"$and": [{}]}}, "limit": 1000}}"#, clauses.join(","));
    let (status, body) = common::server::try_request(server.port, "POST", "/db/_find", Some(ADMIN), Some(&query), &[]).unwrap();
    assert_eq!(status, 500, "{}", &body[..body.len().min(300)]);
    assert!(body.contains(r#""error":"timeout""#), "{}", &body[..body.len().min(300)]);
    assert_eq!(server.request("GET", "/_up", None, None).0, 200);
}
