//! Durability of `rhizome serve`: a SIGKILL in the middle of a stream of
//! writes loses none that was answered 201 (every commit is fsynced before
//! the answer), and the database opens again consistent.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn a_sigkill_during_writes_loses_no_write_that_was_answered_201() {
    let data = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(data.path());
    assert_eq!(server.request("PUT", "/crash", Some(ADMIN), None).0, 201);
    let port = server.port;
    // (id, rev) of every write the server acknowledged.
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let acked = acked.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let (path, body) = if i % 5 == 4 {
                        ("/crash/_bulk_docs".to_owned(), format!(r#"{{"docs":[{{"_id":"w{w}-bulk{i}-a"}},{{"_id":"w{w}-bulk{i}-b"}}]}}"#))
                    } else {
                        (format!("/crash/w{w}-{i}"), format!(r#"{{"writer":{w},"i":{i}}}"#))
                    };
                    let method = if i % 5 == 4 { "POST" } else { "PUT" };
                    let Ok((201, text)) = try_request(port, method, &path, Some(ADMIN), Some(&body), &[]) else { return };
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    let rows = if v.is_array() { v.as_array().unwrap().clone() } else { vec![v] };
                    let mut acked = acked.lock().unwrap();
                    for row in rows {
                        acked.push((row["id"].as_str().unwrap().to_owned(), row["rev"].as_str().unwrap().to_owned()));
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 300 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill(); // SIGKILL
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 300, "only {} writes before the deadline", acked.len());
    let server = ServerProcess::start(data.path());
    for (id, rev) in &acked {
        let (status, text) = server.request("GET", &format!("/crash/{id}"), Some(ADMIN), None);
        assert_eq!(status, 200, "{id} was answered 201 before the kill but is gone: {text}");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["_rev"], rev.as_str());
    }
    // Counters, changes and all_docs agree with each other after the crash.
    let info: serde_json::Value = serde_json::from_str(&server.request("GET", "/crash", Some(ADMIN), None).1).unwrap();
    let changes: serde_json::Value = serde_json::from_str(&server.request("GET", "/crash/_changes", Some(ADMIN), None).1).unwrap();
    let all: serde_json::Value = serde_json::from_str(&server.request("GET", "/crash/_all_docs", Some(ADMIN), None).1).unwrap();
    let n = info["doc_count"].as_u64().unwrap() as usize;
    assert!(n >= acked.len());
    assert_eq!(changes["results"].as_array().unwrap().len(), n);
    assert_eq!(all["rows"].as_array().unwrap().len(), n);
    assert_eq!(info["update_seq"], changes["last_seq"]);
}
