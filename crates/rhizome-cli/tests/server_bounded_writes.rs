//! Writes take memory in proportion to what they bring, or are refused
//! past a documented size (issue 44, point 4): a `_bulk_docs` of 2M tiny
//! documents (16 MB of JSON) took about 2 KB per document before anything
//! was written, past 4 GB; it is refused with 413 past `--max-bulk-docs`
//! (10,000 by default), within the server's memory cap.

mod common;

use common::attacks::tiny_documents;
use common::process::{peak_rss_while, rss_bytes};
use common::server::{try_request, ServerProcess, ADMIN};

const MIB: u64 = 1 << 20;

#[test]
fn a_bulk_write_of_two_million_tiny_documents_is_refused_within_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("data"));
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let pid = server.child.id();
    let cap = rss_bytes(pid) + 256 * MIB;
    let ((), peak) = peak_rss_while(pid, cap, || {
        let (status, answer) = try_request(server.port, "POST", "/db/_bulk_docs", Some(ADMIN), Some(&tiny_documents(2_000_000)), &[]).unwrap();
        assert_eq!(status, 413, "{}", &answer[..answer.len().min(300)]);
        assert!(answer.contains("--max-bulk-docs") && answer.contains("2000000"), "{answer}");
    });
    eprintln!("2M documents refused: peak resident memory {} MiB", peak / MIB);
    // At the limit, written.
    let (status, answer) = try_request(server.port, "POST", "/db/_bulk_docs", Some(ADMIN), Some(&tiny_documents(10_000)), &[]).unwrap();
    assert_eq!(status, 201, "{}", &answer[..answer.len().min(300)]);
    let (status, answer) = server.request("GET", "/db", Some(ADMIN), None);
    assert_eq!(status, 200);
    assert!(answer.contains(r#""doc_count":10000"#), "{answer}");
    // _bulk_get has the same bound.
    let ids: Vec<String> = (0..10_001).map(|i| format!(r#"{{"id": "d{i}"}}"#)).collect();
    let (status, answer) = try_request(server.port, "POST", "/db/_bulk_get", Some(ADMIN), Some(&format!(r#"{{"docs": [{}]}}"#, ids.join(","))), &[]).unwrap();
    assert_eq!(status, 413, "{}", &answer[..answer.len().min(300)]);
}
