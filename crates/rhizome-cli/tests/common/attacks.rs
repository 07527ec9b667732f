//! The reproductions of issue 44's memory findings, shared by the
//! `server_bounded_*` tests (each alone) and `server_bounded_together`
//! (all at once): a misbehaving replication source, cartesian SPARQL
//! answers, JSON-LD lists and large graph writes.

use super::server::{base64, try_request, ServerProcess, ADMIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn with_twelve_triples(server: &ServerProcess) {
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let triples: String = (0..12).map(|i| format!("<http://e/s{i}> <http://e/p{}> \"value {i}\" .\n", i % 3)).collect();
    let update = format!("INSERT DATA {{ GRAPH <http://e/g> {{ {triples} }} }}");
    let (status, body) = try_request(server.port, "POST", "/db/_sparql", Some(ADMIN), Some(&update), &[("Content-Type", "application/sparql-update")]).unwrap();
    assert_eq!(status, 200, "{body}");
}

/// Nine unconnected patterns: every combination of the 12 triples.
pub fn cartesian_where() -> String {
    let patterns: Vec<String> = (1..=9).map(|i| format!("?s{i} ?p{i} ?o{i}")).collect();
    format!("WHERE {{ {} }}", patterns.join(" . "))
}

/// Sends a query and returns the connection, its response head read.
pub fn ask(port: u16, query: &str, accept: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST /db/_sparql HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {}\r\nContent-Type: application/sparql-query\r\nAccept: {accept}\r\nContent-Length: {}\r\n\r\n{query}",
        base64(ADMIN.as_bytes()),
        query.len()
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "the connection closed before the response head");
        head.push(byte[0]);
    }
    (s, String::from_utf8_lossy(&head).into_owned())
}

/// Reads `bytes` of the body (chunked framing included).
pub fn read_some(s: &mut TcpStream, bytes: u64) -> u64 {
    let mut buf = vec![0u8; 64 << 10];
    let mut read = 0;
    while read < bytes {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the answer ended after {read} bytes");
        read += n as u64;
    }
    read
}

/// How the fake source misbehaves.
#[derive(Clone, Copy)]
pub enum Source {
    /// `_changes` ignores `limit` and `since` and never ends.
    EndlessChanges,
    /// One change lists a million revisions; another is a plain document.
    MillionRevisions,
    /// One document of 70 MB (past the 64 MiB answer bound).
    HugeDocument,
}

pub const REV_HASH: &str = "0123456789abcdef0123456789abcdef";

/// Starts the fake source on a free port; counts its `_changes` requests.
pub fn fake_source(kind: Source) -> (u16, Arc<AtomicUsize>) {
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
pub fn asked_at_least(changes: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while changes.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "the replication asked for changes {} times in 120 s", changes.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A JSON-LD document whose `items` is a list of `n` numbers (two
/// triples per item).
pub fn list_document(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!(r#"{{"@context":{{"items":{{"@id":"http://e/items","@container":"@list"}}}},"@id":"http://e/s","items":[{}]}}"#, items.join(","))
}

pub fn ntriples(n: usize) -> String {
    (0..n).map(|i| format!("<http://e/s{i}> <http://e/p> \"v{i}\" .\n")).collect()
}

/// `len` bytes that do not compress (so the store keeps them whole).
pub fn incompressible(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect()
}

/// Stores `data` as the attachment at `path` (`/db/doc/name`), as the admin.
pub fn put_attachment(port: u16, path: &str, data: &[u8]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        base64(ADMIN.as_bytes()),
        data.len()
    )
    .unwrap();
    s.write_all(data).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
}

/// Asks for `path` as the admin and returns the connection unread.
pub fn get_unread(port: u16, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {}\r\nConnection: close\r\n\r\n", base64(ADMIN.as_bytes())).unwrap();
    s
}

/// Reads at least `bytes` of what `s` answers (head included) and stops,
/// as a slow reader whose socket then fills.
pub fn read_a_little(s: &mut TcpStream, bytes: usize) -> Vec<u8> {
    let mut first = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while first.len() < bytes {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the answer ended early");
        first.extend_from_slice(&buf[..n]);
    }
    first
}

/// A `_bulk_docs` body of `n` empty documents.
pub fn tiny_documents(n: usize) -> String {
    format!(r#"{{"docs": [{}]}}"#, vec!["{}"; n].join(","))
}

/// Sends a SPARQL query until it is answered 200, as a client honouring
/// `Retry-After` would: a 503 `server_busy` (the memory all requests
/// share is taken) counts in `busy` and is retried after a pause spread
/// by `client`, so that clients do not retry in step. The answer's body.
pub fn query_until_answered(port: u16, query: &str, client: u64, busy: &AtomicUsize) -> String {
    for attempt in 0..100u64 {
        let (status, body) = try_request(port, "POST", "/db/_sparql", Some(ADMIN), Some(query), &[("Content-Type", "application/sparql-query")]).unwrap();
        if status == 200 {
            return body;
        }
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("server_busy"), "{body}");
        busy.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(200 + (client * 131 + attempt * 71) % 800));
    }
    panic!("a query never found room in 100 tries");
}

/// Adds 80 triples `<http://e/sI> <http://e/p> I` to `/db` (which exists).
pub fn with_eighty_numbers(server: &ServerProcess) {
    let triples: String = (0..80).map(|i| format!("<http://e/s{i}> <http://e/p> {i} .\n")).collect();
    let update = format!("INSERT DATA {{ GRAPH <http://e/numbers> {{ {triples} }} }}");
    let (status, body) = try_request(server.port, "POST", "/db/_sparql", Some(ADMIN), Some(&update), &[("Content-Type", "application/sparql-update")]).unwrap();
    assert_eq!(status, 200, "{body}");
}

/// Over `with_eighty_numbers`' triples, 80^3 rows sorted to keep the last
/// (its `?a` is 79): the whole sort is held, about 160 MB by the engine's
/// estimate.
pub const SORT_QUERY: &str = "SELECT ?a ?b ?c WHERE { ?x <http://e/p> ?a . ?y <http://e/p> ?b . ?z <http://e/p> ?c } ORDER BY ?a ?b ?c LIMIT 1 OFFSET 511999";
