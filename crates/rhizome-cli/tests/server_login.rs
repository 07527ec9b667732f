//! Logins under attack: session cookies end with a password change and at
//! logout, wrong passwords are throttled, stored hashes are modern (and old
//! ones upgraded), and error bodies never show the server's paths.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::Value;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// `POST /_session` with a JSON body; the status and the cookie it sets.
fn login(port: u16, name: &str, password: &str) -> (u16, Option<String>) {
    let body = serde_json::json!({ "name": name, "password": password }).to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "POST /_session HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let cookie = out.lines().find_map(|l| l.strip_prefix("set-cookie: ")).map(|c| c.split(';').next().unwrap().to_owned());
    (status, cookie)
}

/// Who a cookie authenticates as (`null` when it does not).
fn session_name(port: u16, cookie: &str) -> Value {
    let (status, body) = try_request(port, "GET", "/_session", None, None, &[("Cookie", cookie)]).unwrap();
    assert_eq!(status, 200, "{body}");
    json(&body)["userCtx"]["name"].clone()
}

fn put_user(server: &ServerProcess, name: &str, password: &str) -> String {
    let body = format!(r#"{{"name":"{name}","type":"user","roles":[],"password":"{password}"}}"#);
    let (status, text) = server.request("PUT", &format!("/_users/org.couchdb.user:{name}"), Some(ADMIN), Some(&body));
    assert_eq!(status, 201, "{text}");
    json(&text)["rev"].as_str().unwrap().to_owned()
}

#[test]
fn a_password_change_and_a_logout_end_session_cookies_even_across_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(data.path());
    let rev = put_user(&server, "bob", "pw-1");
    let (status, old) = login(server.port, "bob", "pw-1");
    assert_eq!(status, 200);
    let old = old.expect("a cookie");
    assert_eq!(session_name(server.port, &old), "bob");
    // The password changes (through _users): the cookie signed with the
    // old salt is no longer anyone.
    let body = format!(r#"{{"_rev":"{rev}","name":"bob","type":"user","roles":[],"password":"pw-2"}}"#);
    assert_eq!(server.request("PUT", "/_users/org.couchdb.user:bob", Some(ADMIN), Some(&body)).0, 201);
    assert_eq!(session_name(server.port, &old), Value::Null);
    assert_eq!(try_request(server.port, "GET", "/_users/org.couchdb.user:bob", None, None, &[("Cookie", &old)]).unwrap().0, 401);
    // Logout ends the cookie on the server, not only in the browser.
    let (status, cookie) = login(server.port, "bob", "pw-2");
    assert_eq!(status, 200);
    let cookie = cookie.expect("a cookie");
    let (_, other) = login(server.port, "bob", "pw-2");
    let other = other.expect("a second session");
    assert_eq!(try_request(server.port, "GET", "/_users/org.couchdb.user:bob", None, None, &[("Cookie", &cookie)]).unwrap().0, 200);
    assert_eq!(try_request(server.port, "DELETE", "/_session", None, None, &[("Cookie", &cookie)]).unwrap().0, 200);
    assert_eq!(session_name(server.port, &cookie), Value::Null);
    assert_eq!(try_request(server.port, "GET", "/_users/org.couchdb.user:bob", None, None, &[("Cookie", &cookie)]).unwrap().0, 401);
    server.restart();
    assert_eq!(session_name(server.port, &cookie), Value::Null, "a restart does not bring a logged-out cookie back");
    // Another session of the same user lives on (logout is per cookie).
    assert_eq!(session_name(server.port, &other), "bob");
    // The admin's cookie is signed with the admin's salt the same way.
    let (status, admin_cookie) = login(server.port, "admin", "s3cret");
    assert_eq!(status, 200);
    assert_eq!(session_name(server.port, &admin_cookie.unwrap()), "admin");
}

#[test]
fn a_server_admin_may_delete_users_and_no_user_logs_in_until_it_is_back() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    put_user(&server, "bob", "pw-1");
    let (status, cookie) = login(server.port, "bob", "pw-1");
    assert_eq!(status, 200);
    let cookie = cookie.expect("a cookie");
    // Only a server admin deletes it (CouchDB allows that; its Mango suite
    // deletes and recreates _users).
    let bob = "bob:pw-1";
    assert_eq!(server.request("DELETE", "/_users", Some(bob), None).0, 401);
    let (status, text) = server.request("DELETE", "/_users", Some(ADMIN), None);
    assert_eq!((status, json(&text)), (200, serde_json::json!({ "ok": true })));
    assert_eq!(server.request("GET", "/_users", Some(ADMIN), None).0, 404);
    // While it is gone, no user is anyone; the admin still is.
    assert_eq!(login(server.port, "bob", "pw-1").0, 401);
    assert_eq!(session_name(server.port, &cookie), Value::Null);
    assert_eq!(server.request("GET", "/_all_dbs", Some(bob), None).0, 401);
    assert_eq!(login(server.port, ADMIN.split(':').next().unwrap(), ADMIN.split(':').nth(1).unwrap()).0, 200);
    // Made again, it holds new users; the old cookie stays no one.
    assert_eq!(server.request("PUT", "/_users", Some(ADMIN), None).0, 201);
    assert_eq!(login(server.port, "bob", "pw-1").0, 401);
    put_user(&server, "bob", "pw-2");
    assert_eq!(login(server.port, "bob", "pw-2").0, 200);
    assert_eq!(session_name(server.port, &cookie), Value::Null);
}

#[test]
fn wrong_passwords_are_throttled_per_user_and_address_and_the_right_one_works_after_the_wait() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    put_user(&server, "bob", "pw-bob");
    put_user(&server, "carol", "pw-carol");
    let get = |auth: &str| try_request(server.port, "GET", "/_session", Some(auth), None, &[]).unwrap();
    for i in 0..5 {
        let (status, body) = get("bob:guess");
        assert_eq!((status, json(&body)["reason"].as_str()), (401, Some("Name or password is incorrect.")), "attempt {i}");
    }
    // Locked: even the right password is not checked until the wait is over.
    let (status, body) = get("bob:pw-bob");
    assert_eq!(status, 401);
    assert!(json(&body)["reason"].as_str().unwrap().contains("temporarily locked"), "{body}");
    let (status, body) = try_request(server.port, "POST", "/_session", None, Some(r#"{"name":"bob","password":"pw-bob"}"#), &[]).unwrap();
    assert_eq!(status, 401, "cookie logins are throttled too: {body}");
    // Another user from the same address is not locked out.
    let (status, body) = get("carol:pw-carol");
    assert_eq!((status, json(&body)["userCtx"]["name"].as_str()), (200, Some("carol")), "{body}");
    // After the wait (1 s by default, doubling per further failure), bob's
    // right password works.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut status = 0;
    while Instant::now() < deadline {
        status = get("bob:pw-bob").0;
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(status, 200, "bob logs in once the wait is over");
    // A success forgets the failures: one more wrong password is a plain 401.
    let (status, body) = get("bob:guess");
    assert_eq!((status, json(&body)["reason"].as_str()), (401, Some("Name or password is incorrect.")));
    assert_eq!(get("bob:pw-bob").0, 200);
}

#[test]
fn old_sha1_hashes_still_log_in_and_are_upgraded() {
    let data = tempfile::tempdir().unwrap();
    // An admin hash as CouchDB 3.3 (and earlier Rhizome) stored it:
    // PBKDF2-HMAC-SHA1, 10 iterations, of "s3cret" (computed with Python's
    // hashlib.pbkdf2_hmac("sha1", b"s3cret", salt, 10)).
    std::fs::create_dir_all(data.path()).unwrap();
    let old_admin = serde_json::json!({
        "uuid": "0123456789abcdef0123456789abcdef",
        "secret": "a-secret-for-the-test",
        "admin": { "name": "admin", "password_scheme": "pbkdf2", "salt": "fedcba9876543210fedcba9876543210", "iterations": 10,
                   "derived_key": "1479870596d543f183a3cc498d302aedc5523f73" },
    });
    std::fs::write(data.path().join("server.json"), old_admin.to_string()).unwrap();
    let server = ServerProcess::start(data.path());
    let stored: Value = json(&std::fs::read_to_string(data.path().join("server.json")).unwrap());
    assert_eq!(stored["admin"]["pbkdf2_prf"], "sha256", "the admin's hash is upgraded when the server starts with its password: {stored}");
    assert_eq!(stored["admin"]["iterations"], 600_000);
    assert_eq!(stored["admin"]["salt"], "fedcba9876543210fedcba9876543210");
    // A user stored with the old hash of "old-pw".
    let old_user = r#"{"name":"olduser","type":"user","roles":[],"password_scheme":"pbkdf2","salt":"0123456789abcdef0123456789abcdef","iterations":10,"derived_key":"746f5e73c1a4b6919248b26d7c006bf5bd9c3ae1"}"#;
    assert_eq!(server.request("PUT", "/_users/org.couchdb.user:olduser", Some(ADMIN), Some(old_user)).0, 201);
    let (status, body) = try_request(server.port, "GET", "/_session", Some("olduser:wrong"), None, &[]).unwrap();
    assert_eq!(status, 401, "{body}");
    let (status, body) = try_request(server.port, "GET", "/_session", Some("olduser:old-pw"), None, &[]).unwrap();
    assert_eq!((status, json(&body)["userCtx"]["name"].as_str()), (200, Some("olduser")), "{body}");
    let doc = json(&server.request("GET", "/_users/org.couchdb.user:olduser", Some(ADMIN), None).1);
    assert_eq!((doc["pbkdf2_prf"].as_str(), doc["iterations"].as_u64()), (Some("sha256"), Some(600_000)), "upgraded at login: {doc}");
    assert_eq!(doc["derived_key"].as_str().map(str::len), Some(64));
    assert!(doc["_rev"].as_str().unwrap().starts_with("2-"), "{doc}");
    // The upgraded hash still takes the same password, and only that.
    assert_eq!(try_request(server.port, "GET", "/_session", Some("olduser:old-pw"), None, &[]).unwrap().0, 200);
    assert_eq!(try_request(server.port, "GET", "/_session", Some("olduser:wrong"), None, &[]).unwrap().0, 401);
}

#[test]
fn a_300_character_database_name_is_a_400_and_no_error_shows_the_data_path() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let long = "a".repeat(300);
    let (status, body) = server.request("PUT", &format!("/{long}"), Some(ADMIN), None);
    assert_eq!(status, 400, "{body}");
    assert_eq!(json(&body)["error"], "illegal_database_name");
    assert!(json(&body)["reason"].as_str().unwrap().contains("too long"), "{body}");
    // Names that fit still work: 255 bytes of folder name.
    assert_eq!(server.request("PUT", &format!("/{}", "b".repeat(255)), Some(ADMIN), None).0, 201);
    assert_eq!(server.request("PUT", &format!("/{}", "c".repeat(256)), Some(ADMIN), None).0, 400);
    // A name whose escaped folder name is too long (each `$` takes 3 bytes).
    assert_eq!(server.request("PUT", &format!("/d{}", "%24".repeat(90)), Some(ADMIN), None).0, 400);
    let data_path = data.path().display().to_string();
    let real_path = data.path().canonicalize().unwrap().display().to_string();
    let failing: &[(&str, String, Option<&str>)] = &[
        ("PUT", format!("/{long}"), None),
        ("GET", format!("/{long}"), None),
        ("GET", format!("/{long}/doc"), None),
        ("DELETE", format!("/{long}"), None),
        ("PUT", format!("/{long}/doc"), Some("{}")),
        ("POST", format!("/{long}/_bulk_docs"), Some(r#"{"docs":[{}]}"#)),
        ("GET", format!("/{long}/_sparql?query=ASK%7B%7D"), None),
        ("PUT", "/UPPER".into(), None),
        ("GET", "/_users/../../etc/passwd".into(), None),
    ];
    for (method, path, body) in failing {
        let (status, text) = server.request(method, path, Some(ADMIN), *body);
        assert!(status >= 400, "{method} {path}: {status}");
        assert!(!text.contains(&data_path) && !text.contains(&real_path), "{method} {path} shows the data path: {text}");
        assert!(!text.contains("/tmp") && !text.contains("dbs/"), "{method} {path}: {text}");
    }
    assert_eq!(server.request("GET", "/", None, None).0, 200, "the server is still up");
}
