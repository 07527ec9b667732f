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

use common::process::{peak_rss_while, rss_bytes};
use common::server::{ServerProcess, ADMIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// Memory the server may grow by while it replicates.
const GROWTH_CAP: u64 = 256 * MIB;

/// How the fake source misbehaves.
#[derive(Clone, Copy)]
enum Source {
    /// `_changes` ignores `limit` and `since` and never ends.
    EndlessChanges,
    /// One change lists a million revisions; another is a plain document.
    MillionRevisions,
    /// One document of 70 MB (past the 64 MiB answer bound).
    HugeDocument,
}

const REV_HASH: &str = "0123456789abcdef0123456789abcdef";

/// Starts the fake source on a free port; counts its `_changes` requests.
fn fake_source(kind: Source) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let changes = Arc::new(AtomicUsize::new(0));
    let counted = changes.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                let _ = serve(stream, kind, &counted);
            });
        }
    });
    (port, changes)
}

fn serve(stream: TcpStream, kind: Source, changes: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            if header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let reply = |out: &mut TcpStream, status: u16, body: &[u8]| -> std::io::Result<()> {
            write!(out, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len())?;
            out.write_all(body)
        };
        let route = path.split('?').next().unwrap_or("");
        match (method.as_str(), route) {
            ("GET", "/src") => reply(&mut out, 200, br#"{"db_name":"src","update_seq":"1"}"#)?,
            ("GET", p) if p.starts_with("/src/_local/") => reply(&mut out, 404, br#"{"error":"not_found","reason":"missing"}"#)?,
            ("PUT", p) if p.starts_with("/src/_local/") => reply(&mut out, 201, br#"{"ok":true,"id":"_local/x","rev":"0-1"}"#)?,
            (_, "/src/_changes") => {
                changes.fetch_add(1, Ordering::SeqCst);
                match kind {
                    Source::EndlessChanges => {
                        // No length: the answer goes on until the reader leaves.
                        write!(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{{\"results\":[\n")?;
                        for seq in 1u64.. {
                            write!(out, "{{\"seq\":{seq},\"id\":\"d{seq}\",\"changes\":[{{\"rev\":\"1-{REV_HASH}\"}}]}},\n")?;
                        }
                    }
                    Source::MillionRevisions => {
                        let mut text = String::from(r#"{"results":[{"seq":1,"id":"many","changes":["#);
                        for i in 0..1_000_000 {
                            if i > 0 {
                                text.push(',');
                            }
                            text.push_str(&format!(r#"{{"rev":"1-{i:032x}"}}"#));
                        }
                        text.push_str(&format!(r#"]}},{{"seq":2,"id":"plain","changes":[{{"rev":"1-{REV_HASH}"}}]}}],"last_seq":2}}"#));
                        reply(&mut out, 200, text.as_bytes())?;
                    }
                    Source::HugeDocument => {
                        let text = format!(r#"{{"results":[{{"seq":1,"id":"huge","changes":[{{"rev":"1-{REV_HASH}"}}]}}],"last_seq":1}}"#);
                        reply(&mut out, 200, text.as_bytes())?;
                    }
                }
            }
            ("POST", "/src/_bulk_get") => {
                let asked = String::from_utf8_lossy(&body).into_owned();
                let doc = |id: &str, extra: &str| format!(r#"{{"_id":"{id}","_rev":"1-{REV_HASH}","_revisions":{{"start":1,"ids":["{REV_HASH}"]}}{extra}}}"#);
                let entry = |doc: String, id: &str| format!(r#"{{"docs":[{{"ok":{doc}}}],"id":"{id}"}}"#);
                let mut results = Vec::new();
                if asked.contains("\"plain\"") {
                    results.push(entry(doc("plain", r#","n":1"#), "plain"));
                }
                if asked.contains("\"huge\"") {
                    results.push(entry(doc("huge", &format!(r#","blob":"{}""#, "x".repeat(70 << 20))), "huge"));
                }
                reply(&mut out, 200, format!(r#"{{"results":[{}]}}"#, results.join(",")).as_bytes())?;
            }
            _ => reply(&mut out, 404, br#"{"error":"not_found","reason":"no such thing here"}"#)?,
        }
    }
}

/// Waits until the fake source has been asked `n` times for changes.
fn asked_at_least(changes: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while changes.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "the replication asked for changes {} times in 120 s", changes.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(20));
    }
}

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
