//! The base IRI follows the server (issue 43, point 3): without
//! `RHIZOME_BASE_IRI`, a data folder's first `serve` names documents and
//! LDP resources under the address it listens on, and says so; an LDP
//! client follows every `Location`; a server moved to another address
//! keeps the names it gave (they are graph names) and still answers them
//! by path.

mod common;

use common::server::{base64, exchange, free_port, try_request, ADMIN};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `rhizome serve` on `port` without RHIZOME_BASE_IRI, its stderr in `log`.
fn serve(data: &Path, port: u16, log: &Path) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_rhizome"))
        .arg("--data")
        .arg(data)
        .args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN])
        .env_remove("RHIZOME_BASE_IRI")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !matches!(try_request(port, "GET", "/_up", None, None, &[]), Ok((200, _))) {
        assert!(Instant::now() < deadline, "the server did not answer: {}", std::fs::read_to_string(log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// The path of an absolute `http://127.0.0.1:PORT/...` URL, checking its port.
fn path_on(url: &str, port: u16) -> String {
    let prefix = format!("http://127.0.0.1:{port}");
    url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url} is not on {prefix}")).to_owned()
}

#[test]
fn a_first_start_names_resources_under_its_own_address_and_a_moved_server_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let port = free_port();
    let mut child = serve(&data, port, &log);
    let base = format!("http://127.0.0.1:{port}");
    assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), base);
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains(&format!("named under {base}/")), "{said}");

    let auth = format!("Basic {}", base64(ADMIN.as_bytes()));
    let (status, _, _) = exchange(port, "PUT", "/db", &[("Authorization", &auth)], "");
    assert_eq!(status, 201);
    // An LDP client creates a resource and follows its Location.
    let turtle = "<> <http://purl.org/dc/terms/title> \"first\" .";
    let (status, headers, body) = exchange(port, "POST", "/db/_ldp/", &[("Authorization", &auth), ("Content-Type", "text/turtle"), ("Slug", "note")], turtle);
    assert_eq!(status, 201, "{body}");
    let location = header(&headers, "location").expect("a Location");
    let (status, _, body) = exchange(port, "GET", &path_on(&location, port), &[("Authorization", &auth), ("Accept", "text/turtle")], "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("first"), "{body}");
    let (_, _, container) = exchange(port, "GET", "/db/_ldp/", &[("Authorization", &auth), ("Accept", "application/n-triples")], "");
    assert!(container.contains(&format!("<{location}>")), "the container names what Location said: {container}");

    // Moved: the same data folder served from another port.
    let _ = child.kill();
    let _ = child.wait();
    let moved = free_port();
    let mut child = serve(&data, moved, &log);
    assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), base, "the names stay");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains(&format!("named under {base}/")), "{said}");
    let (status, _, body) = exchange(moved, "GET", &path_on(&location, port), &[("Authorization", &auth), ("Accept", "text/turtle")], "");
    assert_eq!(status, 200, "the resource answers by its path at the new address: {body}");
    assert!(body.contains("first"), "{body}");
    let _ = child.kill();
    let _ = child.wait();
}
