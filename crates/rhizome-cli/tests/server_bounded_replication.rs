//! A replication reads its source in bounded batches whatever the source
//! sends (issue 44, point 3). Before, the replicator read each answer
//! whole: a source whose `_changes` ignores `limit` and never ends grew the
//! server past 4 GB in 11 s (and, as a `_replicator` document, again at
//! every start), one change listing 1M revisions did the same, and a
//! 70 MB document arrived past the 64 MiB body limit.
//!
//! The source here is a small HTTP server in the test that answers the
//! replication protocol as a misbehaving peer would; the server's resident
//! memory is sampled (/proc) and the server killed the moment it passes
//! its cap.

mod common;

use common::attacks::{asked_at_least, fake_source, Source};
use common::process::{peak_rss_while, rss_bytes};
use common::server::{ServerProcess, ADMIN};
use std::sync::atomic::Ordering;

const MIB: u64 = 1 << 20;
/// Memory the server may grow by while it replicates.
const GROWTH_CAP: u64 = 256 * MIB;

#[test]
fn a_source_whose_changes_never_end_is_read_a_page_at_a_time_even_at_every_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path());
    let (port, changes) = fake_source(Source::EndlessChanges);
    let doc = format!(r#"{{"source":"http://127.0.0.1:{port}/src","target":"copy","create_target":true,"continuous":true}}"#);
    let base = rss_bytes(server.child.id());
    let ((), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || {
        assert_eq!(server.request("PUT", "/_replicator/endless", Some(ADMIN), Some(&doc)).0, 201);
        // Each page read, then the next asked for: the answer was left.
        asked_at_least(&changes, 4);
        assert_eq!(server.request("GET", "/copy", Some(ADMIN), None).0, 200);
    });
    eprintln!("endless _changes: peak {} MiB over a start of {} MiB", peak / MIB, base / MIB);
    // A `_replicator` document runs again at every start: the server
    // starts, serves and stays within its cap.
    server.restart();
    let seen = changes.load(Ordering::SeqCst);
    let base = rss_bytes(server.child.id());
    let ((), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || {
        asked_at_least(&changes, seen + 4);
        assert_eq!(server.request("GET", "/", None, None).0, 200);
        let (status, body) = server.request("GET", "/copy", Some(ADMIN), None);
        assert_eq!(status, 200, "{body}");
    });
    eprintln!("after a restart: peak {} MiB over a start of {} MiB", peak / MIB, base / MIB);
}

#[test]
fn a_change_with_a_million_revisions_is_reported_and_the_rest_copied() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    let (port, _) = fake_source(Source::MillionRevisions);
    let body = format!(r#"{{"source":"http://127.0.0.1:{port}/src","target":"copy","create_target":true}}"#);
    let base = rss_bytes(server.child.id());
    let ((status, answer), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || server.request("POST", "/_replicate", Some(ADMIN), Some(&body)));
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["history"][0]["doc_write_failures"], 1, "{answer}");
    assert_eq!(answer["history"][0]["docs_written"], 1, "{answer}");
    assert_eq!(server.request("GET", "/copy/plain", Some(ADMIN), None).0, 200);
    assert_eq!(server.request("GET", "/copy/many", Some(ADMIN), None).0, 404);
    eprintln!("a million revisions: peak {} MiB over a start of {} MiB", peak / MIB, base / MIB);
}

#[test]
fn a_document_past_the_answer_bound_is_reported_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    let (port, _) = fake_source(Source::HugeDocument);
    let body = format!(r#"{{"source":"http://127.0.0.1:{port}/src","target":"copy","create_target":true}}"#);
    let base = rss_bytes(server.child.id());
    let ((status, answer), peak) = peak_rss_while(server.child.id(), base + GROWTH_CAP, || server.request("POST", "/_replicate", Some(ADMIN), Some(&body)));
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["history"][0]["doc_write_failures"], 1, "{answer}");
    assert_eq!(server.request("GET", "/copy/huge", Some(ADMIN), None).0, 404, "a 70 MB document is not taken past the 64 MiB bound");
    eprintln!("a 70 MB document: peak {} MiB over a start of {} MiB", peak / MIB, base / MIB);
}

#[test]
fn a_server_with_a_larger_body_limit_replicates_a_document_that_large() {
    let dir = tempfile::tempdir().unwrap();
    // A PUT of 70 MB is taken by this server, so its replications take one too.
    let server = ServerProcess::start_with_env(dir.path(), &[("RHIZOME_MAX_BODY_BYTES", "100000000")]);
    let (port, _) = fake_source(Source::HugeDocument);
    let body = format!(r#"{{"source":"http://127.0.0.1:{port}/src","target":"copy","create_target":true}}"#);
    let (status, answer) = server.request("POST", "/_replicate", Some(ADMIN), Some(&body));
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!((&answer["history"][0]["doc_write_failures"], &answer["history"][0]["docs_written"]), (&serde_json::json!(0), &serde_json::json!(1)), "{answer}");
    let (status, doc) = server.request("GET", "/copy/huge", Some(ADMIN), None);
    assert_eq!(status, 200);
    assert!(doc.len() > 70_000_000, "{} bytes", doc.len());
}
