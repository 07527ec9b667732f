//! Work for a client that went away stops: hyper drops the request's
//! future when the connection closes, and the query running for it on a
//! blocking thread sees the request's cancellation flag at its next check
//! (the server logs that it stopped it). Without the flag the query would
//! run to its 30 s time limit and end as a timeout, never as a cancellation.

mod common;

use common::server::{base64, ServerProcess, ADMIN};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const STOPPED: &str = "stopped a SPARQL request whose client went away";

#[test]
fn a_query_whose_client_goes_away_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = ServerProcess::start_logged(&dir.path().join("data"), &log);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    // 1,000 triples: a three-way cartesian product of them is 10^9 rows.
    let triples: String = (0..1000).map(|i| format!("<http://e/s{i}> <http://e/p> {i} .\n")).collect();
    let update = format!("INSERT DATA {{ GRAPH <http://e/g> {{ {triples} }} }}");
    let (status, body) = common::server::try_request(server.port, "POST", "/db/_sparql", Some(ADMIN), Some(&update), &[("Content-Type", "application/sparql-update")]).unwrap();
    assert!(status == 200 || status == 204, "{status} {body}");

    let query = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }";
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        s,
        "POST /db/_sparql HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {}\r\nContent-Type: application/sparql-query\r\nContent-Length: {}\r\n\r\n{query}",
        base64(ADMIN.as_bytes()),
        query.len()
    )
    .unwrap();
    // Let the query start, then go away.
    std::thread::sleep(Duration::from_millis(500));
    drop(s);

    let deadline = Instant::now() + Duration::from_secs(25);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(STOPPED) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(text.contains(STOPPED), "the query went on after its client left; server log:\n{text}");
    // And the server answers the next client.
    assert_eq!(server.request("GET", "/", None, None).0, 200);
}
