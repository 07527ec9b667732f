//! Third-party CouchDB clients against the real `rhizome serve` (issue 43,
//! what clients found): IBM's Cloudant SDK and pycouchdb from PyPI (in
//! `tests/python/.venv`), nano from npm (`tests/clients`), PouchDB in Node
//! and in a page of Debian's Chromium (driven by playwright-core), each
//! installed by `scripts/setup`. The scripts in `tests/python/clients/` and
//! `tests/clients/` run one check each and exit non-zero on the first
//! failed one.

mod common;

use common::server::{exchange, ServerProcess, ADMIN};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `tests/python/clients/SCRIPT CHECK` against `server`.
fn python(server: &ServerProcess, script: &str, check: &str) {
    let python = root().join("tests/python/.venv/bin/python3");
    assert!(python.exists(), "run scripts/setup first: {} is missing", python.display());
    let out = Command::new(&python)
        .arg(root().join("tests/python/clients").join(script))
        .arg(check)
        .env("RHIZOME_URL", format!("http://127.0.0.1:{}", server.port))
        .env("RHIZOME_CREDENTIALS", ADMIN)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{script} {check} failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

fn server() -> (tempfile::TempDir, ServerProcess) {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    (data, server)
}

#[test]
fn cloudant_sdk_pages_all_docs_and_design_docs_with_body_options_and_queries() {
    let (_data, server) = server();
    python(&server, "cloudant_sdk.py", "all_docs_pager");
}

#[test]
fn cloudant_sdk_logs_in_with_username_and_password_and_works_by_cookie() {
    let (_data, server) = server();
    python(&server, "cloudant_sdk.py", "session_login");
}

#[test]
fn pycouchdb_sends_python_booleans_to_views_and_all_docs() {
    let (_data, server) = server();
    python(&server, "pycouchdb_client.py", "query_booleans");
}

fn session_cookie(headers: &[(String, String)]) -> Option<String> {
    headers.iter().filter(|(k, _)| k == "set-cookie").find_map(|(_, v)| v.split(';').next().filter(|c| c.starts_with("AuthSession=") && c.len() > "AuthSession=".len()).map(str::to_owned))
}

fn session_name(port: u16, cookie: &str) -> (serde_json::Value, Option<String>) {
    let (status, headers, body) = exchange(port, "GET", "/_session", &[("Cookie", cookie)], "");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    (v["userCtx"]["name"].clone(), session_cookie(&headers))
}

/// CouchDB renews a session cookie in the answer to a request made with it
/// once a tenth of its lifetime has passed, so a busy client is never
/// logged out; the cookie it was given at login still expires.
#[test]
fn a_session_used_past_a_tenth_of_its_lifetime_is_renewed_and_outlives_its_first_cookie() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(data.path(), &[("RHIZOME_SESSION_TIMEOUT_SECS", "3")]);
    let (user, password) = ADMIN.split_once(':').unwrap();
    let login = format!("{{\"username\":\"{user}\",\"password\":\"{password}\"}}");
    let (status, headers, body) = exchange(server.port, "POST", "/_session", &[("Content-Type", "application/json")], &login);
    assert_eq!(status, 200, "{body}");
    let first = session_cookie(&headers).expect("a session cookie at login");
    assert!(headers.iter().any(|(k, v)| k == "set-cookie" && v.contains("Max-Age=3")), "{headers:?}");
    // A client that keeps working swaps in every cookie it is given.
    let mut current = first.clone();
    let mut renewals = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        assert!(std::time::Instant::now() < deadline, "the first cookie never expired");
        let (name, renewed) = session_name(server.port, &current);
        assert_eq!(name, user, "the client was logged out after {renewals} renewals");
        if let Some(c) = renewed {
            renewals += 1;
            current = c;
        }
        let (first_name, _) = session_name(server.port, &first);
        if first_name.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(renewals > 0, "never renewed");
    assert_eq!(session_name(server.port, &current).0, user, "still logged in once the login cookie expired");
}

/// Runs `tests/clients/SCRIPT` with node against `server` (PouchDB from
/// tests/pouchdb's npm tree, nano and playwright-core from tests/clients').
fn node(server: &ServerProcess, script: &str) {
    node_with(server, script, &[]);
}

fn node_with(server: &ServerProcess, script: &str, env: &[(&str, &str)]) {
    let dir = root().join("tests/clients");
    assert!(dir.join("node_modules/nano").is_dir() && root().join("tests/pouchdb/node_modules/pouchdb").is_dir(), "run scripts/setup first (npm ci in tests/clients and tests/pouchdb)");
    let out = Command::new("node")
        .arg(dir.join(script))
        .current_dir(&dir)
        .env("RHIZOME_URL", server.url(ADMIN))
        .env("NODE_PATH", root().join("tests/pouchdb/node_modules"))
        .envs(env.iter().copied())
        .output()
        .expect("node runs (scripts/setup installs it)");
    assert!(out.status.success(), "{script} failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn pouchdb_replication_skips_a_document_with_a_malformed_context_and_writes_the_rest() {
    let (_data, server) = server();
    node(&server, "pouchdb_bad_context.js");
}

/// The offline-first case: a page on another origin, in headless Chromium
/// (Debian's, driven by playwright-core), syncs with the server through
/// PouchDB, both ways and live; the same page on an origin not listed in
/// `--cors-origins` cannot reach it.
#[test]
fn a_page_on_another_origin_syncs_through_pouchdb_in_chromium() {
    let data = tempfile::tempdir().unwrap();
    let (page_port, other_port) = (common::server::free_port(), common::server::free_port());
    let origin = format!("http://127.0.0.1:{page_port}");
    let env = [("RHIZOME_ENABLE_CORS", "true"), ("RHIZOME_CORS_ORIGINS", origin.as_str()), ("RHIZOME_CORS_CREDENTIALS", "true")];
    let server = ServerProcess::start_with_env(data.path(), &env);
    assert!(std::path::Path::new("/usr/bin/chromium").exists(), "run scripts/setup first: Debian's chromium is missing");
    let page_port = page_port.to_string();
    let other_port = other_port.to_string();
    node_with(&server, "cors_page.js", &[("PAGE_PORT", &page_port), ("OTHER_PORT", &other_port)]);
}

/// CouchDB's preflight and answer headers, checked from outside.
#[test]
fn preflights_and_answers_carry_couchdbs_cors_headers_only_when_enabled_for_the_origin() {
    let data = tempfile::tempdir().unwrap();
    let env = [("RHIZOME_ENABLE_CORS", "true"), ("RHIZOME_CORS_ORIGINS", "http://app.example:8080"), ("RHIZOME_CORS_CREDENTIALS", "true")];
    let server = ServerProcess::start_with_env(data.path(), &env);
    let find = |headers: &[(String, String)], name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let preflight = [("Origin", "http://app.example:8080"), ("Access-Control-Request-Method", "PUT"), ("Access-Control-Request-Headers", "authorization,content-type")];
    let (status, headers, _) = exchange(server.port, "OPTIONS", "/db/doc", &preflight, "");
    assert_eq!(status, 204);
    assert_eq!(find(&headers, "access-control-allow-origin").as_deref(), Some("http://app.example:8080"));
    assert_eq!(find(&headers, "access-control-allow-credentials").as_deref(), Some("true"));
    assert_eq!(find(&headers, "access-control-allow-headers").as_deref(), Some("authorization,content-type"));
    assert!(find(&headers, "access-control-allow-methods").is_some_and(|m| m.contains("PUT")));
    // An answer, an error included, to a listed origin.
    let (status, headers, _) = exchange(server.port, "GET", "/nodb", &[("Origin", "http://app.example:8080")], "");
    assert_eq!(status, 401);
    assert_eq!(find(&headers, "access-control-allow-origin").as_deref(), Some("http://app.example:8080"));
    assert!(find(&headers, "access-control-expose-headers").is_some_and(|h| h.starts_with("content-type") && h.contains("etag")));
    // Not listed: no CORS headers, and no preflight.
    let (_, headers, _) = exchange(server.port, "GET", "/", &[("Origin", "http://evil.example")], "");
    assert_eq!(find(&headers, "access-control-allow-origin"), None);
    let (status, headers, _) = exchange(server.port, "OPTIONS", "/db/doc", &[("Origin", "http://evil.example"), ("Access-Control-Request-Method", "GET")], "");
    assert_ne!(status, 204);
    assert_eq!(find(&headers, "access-control-allow-origin"), None);
    // Off by default.
    let plain_data = tempfile::tempdir().unwrap();
    let plain = ServerProcess::start(plain_data.path());
    let (_, headers, _) = exchange(plain.port, "GET", "/", &[("Origin", "http://app.example:8080")], "");
    assert_eq!(find(&headers, "access-control-allow-origin"), None);
}

/// Documents read as RDF by a linked-data client: Turtle and JSON-LD by
/// `Accept` (JSON-LD first when named beside JSON at the same weight), and
/// the Basic challenge urllib (like Jena) waits for before it sends
/// credentials; plain JSON clients get CouchDB's answers.
#[test]
fn a_linked_data_client_reads_documents_as_turtle_and_json_ld_after_a_challenge() {
    let (_data, server) = server();
    python(&server, "linked_data.py", "documents_as_rdf");
}

/// nano: a continuous replication cancelled by its `replication_id`
/// alone, a continuous `_changes` cut by `limit` saying what is left, and
/// a design document's update and show functions (`db.atomic`,
/// `db.show`); a list function answers 501.
#[test]
fn nano_cancels_a_replication_by_its_id_reads_pending_and_runs_update_and_show_functions() {
    let (_data, server) = server();
    node(&server, "nano_client.js");
}

#[test]
fn cloudant_sdk_reads_membership_scheduler_config_and_stats() {
    let (_data, server) = server();
    python(&server, "cloudant_sdk.py", "server_endpoints");
}

#[test]
fn cloudant_sdk_follows_db_updates() {
    let (_data, server) = server();
    python(&server, "cloudant_sdk.py", "db_updates");
}
