//! CouchDB 3's security model on `rhizome serve`: every endpoint refuses
//! anonymous and wrongly authenticated requests (401) and users without
//! rights (403; 401 on a server admin's endpoint, as CouchDB), and such
//! requests change nothing; members, database admins, `_users` owners and
//! cookie sessions get what CouchDB gives them, and a database whose
//! `members` names nobody is public.

mod common;

use common::server::{try_request, ServerProcess, ADMIN};
use serde_json::Value;

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Everything an outsider could try to read or change.
const ENDPOINTS: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/_all_dbs", None),
    ("POST", "/_replicate", Some(r#"{"source":"secret","target":"stolen","create_target":true}"#)),
    ("GET", "/_scheduler/docs", None),
    ("GET", "/_active_tasks", None),
    ("PUT", "/_replicator/steal", Some(r#"{"source":"secret","target":"stolen","create_target":true}"#)),
    ("GET", "/_replicator/_all_docs", None),
    ("PUT", "/newdb", None),
    ("DELETE", "/secret", None),
    ("GET", "/secret", None),
    ("HEAD", "/secret", None),
    ("POST", "/secret", Some(r#"{"_id":"posted"}"#)),
    ("GET", "/secret/_all_docs?include_docs=true", None),
    ("POST", "/secret/_all_docs", Some(r#"{"keys":["d1"]}"#)),
    ("POST", "/secret/_bulk_docs", Some(r#"{"docs":[{"_id":"bulk"}]}"#)),
    ("POST", "/secret/_bulk_get", Some(r#"{"docs":[{"id":"d1"}]}"#)),
    ("POST", "/secret/_revs_diff", Some(r#"{"d1":["1-abc"]}"#)),
    ("POST", "/secret/_missing_revs", Some(r#"{"d1":["1-abc"]}"#)),
    ("GET", "/secret/_purged_infos", None),
    ("GET", "/secret/_shards", None),
    ("GET", "/secret/_shards/d1", None),
    ("POST", "/secret/_sync_shards", Some("")),
    ("GET", "/secret/_changes", None),
    ("GET", "/secret/_changes?feed=longpoll&timeout=100", None),
    ("GET", "/secret/_changes?feed=continuous&timeout=100", None),
    ("POST", "/secret/_changes?filter=_selector", Some(r#"{"selector":{}}"#)),
    ("POST", "/secret/_compact", Some("")),
    ("GET", "/secret/_revs_limit", None),
    ("PUT", "/secret/_revs_limit", Some("5")),
    ("GET", "/secret/_security", None),
    ("PUT", "/secret/_security", Some(r#"{"members":{"names":["eve"]}}"#)),
    ("POST", "/secret/_ensure_full_commit", Some("")),
    ("GET", "/secret/d1", None),
    ("HEAD", "/secret/d1", None),
    ("PUT", "/secret/d1", Some(r#"{"x":"overwritten"}"#)),
    ("PUT", "/secret/newdoc", Some(r#"{"x":1}"#)),
    ("DELETE", "/secret/d1?rev=1-abc", None),
    ("GET", "/secret/d1/a.txt", None),
    ("PUT", "/secret/d1/b.txt?rev=1-abc", Some("data")),
    ("DELETE", "/secret/d1/a.txt?rev=1-abc", None),
    ("GET", "/secret/_local/l1", None),
    ("PUT", "/secret/_local/l1", Some(r#"{"x":2}"#)),
    ("DELETE", "/secret/_local/l1", None),
    ("GET", "/secret/_design/app", None),
    ("PUT", "/secret/_design/app2", Some(r#"{"views":{}}"#)),
    ("GET", "/secret/_sparql?query=ASK%7B%7D", None),
    ("POST", "/secret/_graph", Some("")),
    ("GET", "/_users/_all_docs", None),
    ("GET", "/_users/org.couchdb.user:bob", None),
    ("PUT", "/_users/org.couchdb.user:mallory", Some(r#"{"name":"mallory","type":"user","roles":["_admin"],"password":"x"}"#)),
    ("DELETE", "/_users", None),
];

/// The endpoints of `ENDPOINTS` that are for server admins alone.
const SERVER_ADMIN_ENDPOINTS: &[(&str, &str)] =
    &[("GET", "/_all_dbs"), ("POST", "/_replicate"), ("GET", "/_scheduler/docs"), ("GET", "/_active_tasks"), ("PUT", "/newdb"), ("DELETE", "/secret"), ("DELETE", "/_users"), ("POST", "/secret/_sync_shards")];

fn state(server: &ServerProcess) -> Vec<String> {
    let get = |path: &str| server.request("GET", path, Some(ADMIN), None).1;
    vec![
        get("/_all_dbs"),
        // The info without `sizes`: RocksDB's bytes on disk move with
        // background flushes, not only with writes.
        {
            let mut info = json(&get("/secret"));
            info.as_object_mut().unwrap().remove("sizes");
            info.to_string()
        },
        get("/secret/_all_docs?include_docs=true&conflicts=true"),
        get("/secret/_security"),
        get("/secret/_revs_limit"),
        get("/secret/_local/l1"),
        get("/_users/_all_docs"),
        get("/_replicator/_all_docs"),
    ]
}

fn setup(server: &ServerProcess) {
    let admin = Some(ADMIN);
    let ok = |method: &str, path: &str, body: &str| {
        let (status, text) = server.request(method, path, admin, Some(body));
        assert!(status < 300, "{method} {path}: {status} {text}");
        text
    };
    ok("PUT", "/secret", "");
    ok("PUT", "/closed", "");
    let rev = json(&ok("PUT", "/secret/d1", r#"{"x":1,"_attachments":{"a.txt":{"content_type":"text/plain","data":"aGk="}}}"#))["rev"].as_str().unwrap().to_owned();
    assert!(rev.starts_with("1-"));
    ok("PUT", "/secret/_local/l1", r#"{"x":1}"#);
    ok("PUT", "/secret/_design/app", r#"{"views":{}}"#);
    ok("PUT", "/secret/_security", r#"{"admins":{"names":["dba"],"roles":[]},"members":{"names":["bob"],"roles":["readers"]}}"#);
    for (name, roles) in [("bob", "[]"), ("eve", "[]"), ("dba", "[]"), ("carol", r#"["readers"]"#)] {
        ok("PUT", &format!("/_users/org.couchdb.user:{name}"), &format!(r#"{{"name":"{name}","type":"user","roles":{roles},"password":"pw-{name}"}}"#));
    }
}

#[test]
fn every_endpoint_refuses_anonymous_wrong_and_unprivileged_users_and_changes_nothing() {
    let data = tempfile::tempdir().unwrap();
    // Dozens of wrong logins on purpose: throttling (server_login.rs) would
    // lock the admin out of checking the state afterwards.
    let server = ServerProcess::start_with_env(data.path(), &[("RHIZOME_LOGIN_ATTEMPTS", "1000")]);
    setup(&server);
    let before = state(&server);
    for (who, auth, want) in [("anonymous", None, 401), ("wrong password", Some("admin:nope"), 401), ("unknown user", Some("nobody:x"), 401), ("eve", Some("eve:pw-eve"), 403)] {
        for (method, path, body) in ENDPOINTS {
            let (status, text) = try_request(server.port, method, path, auth, *body, &[]).unwrap();
            let allowed_for_eve = who == "eve" && path.starts_with("/_users/org.couchdb.user:") && *method == "GET" && path.ends_with("eve");
            assert!(!allowed_for_eve);
            // couch_httpd:verify_is_server_admin answers 401 to everyone.
            let server_admins_only = SERVER_ADMIN_ENDPOINTS.contains(&(*method, *path));
            let want = if server_admins_only { 401 } else { want };
            assert_eq!(status, want, "{who}: {method} {path} gave {status} {text}");
            if *method != "HEAD" {
                let err = json(&text);
                assert!(err["error"].is_string() && err["reason"].is_string(), "{method} {path}: {text}");
            }
        }
    }
    // A garbage cookie is anonymous, so still 401.
    let (status, _) = try_request(server.port, "GET", "/secret/d1", None, None, &[("Cookie", "AuthSession=Ym9iOjk5OTk5OTk5OQ.forged")]).unwrap();
    assert_eq!(status, 401);
    assert_eq!(state(&server), before, "refused requests changed something");
}

#[test]
fn members_db_admins_user_owners_and_sessions_get_couchdb_3_rights() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    setup(&server);
    let r = |method: &str, path: &str, auth: &str, body: Option<&str>| server.request(method, path, Some(auth), body);
    let bob = "bob:pw-bob";
    // Members read and write documents, not security, design docs or compaction.
    assert_eq!(r("GET", "/secret/d1", bob, None).0, 200);
    assert_eq!(r("PUT", "/secret/bobs", bob, Some(r#"{"by":"bob"}"#)).0, 201);
    assert_eq!(r("GET", "/secret/_changes", bob, None).0, 200);
    assert_eq!(r("GET", "/carol-has-no-db", "carol:pw-carol", None).0, 404);
    assert_eq!(r("GET", "/secret/d1", "carol:pw-carol", None).0, 200, "members by role");
    assert_eq!(r("PUT", "/secret/_security", bob, Some("{}")).0, 403);
    assert_eq!(r("PUT", "/secret/_design/bob", bob, Some("{}")).0, 403);
    // `_bulk_docs` answers per document, as CouchDB 3.5 does.
    let (status, body) = r("POST", "/secret/_bulk_docs", bob, Some(r#"{"docs":[{"_id":"_design/sneaky"}]}"#));
    assert_eq!((status, json(&body)[0]["error"].as_str()), (201, Some("forbidden")), "{body}");
    assert_eq!(r("GET", "/secret/_design/sneaky", ADMIN, None).0, 404);
    assert_eq!(r("POST", "/secret/_compact", bob, Some("")).0, 403);
    // A new database is for server admins only until it names members.
    assert_eq!(r("GET", "/closed", bob, None).0, 403);
    let (status, text) = r("PUT", "/another", bob, None);
    assert_eq!((status, json(&text)), (401, serde_json::json!({ "error": "unauthorized", "reason": "You are not a server admin." })));
    // Database admins manage their database but not the server.
    let dba = "dba:pw-dba";
    assert_eq!(r("PUT", "/secret/_design/app3", dba, Some(r#"{"views":{}}"#)).0, 201);
    assert_eq!(r("PUT", "/secret/_revs_limit", dba, Some("50")).0, 200);
    assert_eq!(r("GET", "/_all_dbs", dba, None).0, 401);
    // Users read their own document (hashed password, no cleartext), not others'.
    let (status, me) = r("GET", "/_users/org.couchdb.user:bob", bob, None);
    assert_eq!(status, 200);
    let me = json(&me);
    assert!(me.get("password").is_none());
    assert_eq!(me["password_scheme"], "pbkdf2");
    assert!(me["derived_key"].as_str().unwrap().len() == 64 && me["salt"].is_string());
    assert_eq!((me["pbkdf2_prf"].as_str(), me["iterations"].as_u64()), (Some("sha256"), Some(600_000)), "CouchDB 3.4's hash");
    assert_eq!(r("GET", "/_users/org.couchdb.user:eve", bob, None).0, 403);
    // ...and may change their password but not their roles.
    let rev = me["_rev"].as_str().unwrap();
    let change = format!(r#"{{"_rev":"{rev}","name":"bob","type":"user","roles":["_admin"],"password":"new"}}"#);
    assert_eq!(r("PUT", "/_users/org.couchdb.user:bob", bob, Some(&change)).0, 403);
    let change = format!(r#"{{"_rev":"{rev}","name":"bob","type":"user","roles":[],"password":"new-bob"}}"#);
    assert_eq!(r("PUT", "/_users/org.couchdb.user:bob", bob, Some(&change)).0, 201);
    assert_eq!(r("GET", "/secret/d1", bob, None).0, 401, "the old password is gone");
    let bob = "bob:new-bob";
    assert_eq!(r("GET", "/secret/d1", bob, None).0, 200);
    // Cookie sessions: log in, use the cookie, log out.
    let (status, text) = try_request(
        server.port,
        "POST",
        "/_session",
        None,
        Some("name=bob&password=new-bob"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
    )
    .unwrap();
    assert_eq!(status, 200, "{text}");
    let (_, raw) = raw_session(server.port);
    let cookie = raw.lines().find_map(|l| l.strip_prefix("set-cookie: ")).expect("a session cookie").split(';').next().unwrap().to_owned();
    let (status, who) = try_request(server.port, "GET", "/_session", None, None, &[("Cookie", &cookie)]).unwrap();
    assert_eq!(status, 200);
    assert_eq!(json(&who)["userCtx"]["name"], "bob");
    assert_eq!(try_request(server.port, "GET", "/secret/d1", None, None, &[("Cookie", &cookie)]).unwrap().0, 200);
    assert_eq!(r("POST", "/_session", "admin:s3cret", Some(r#"{"name":"bob","password":"wrong"}"#)).0, 401);
}

/// The raw response of a JSON login, headers included.
fn raw_session(port: u16) -> (u16, String) {
    use std::io::{Read, Write};
    let body = r#"{"name":"bob","password":"new-bob"}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "POST /_session HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), out)
}

#[test]
fn without_an_admin_the_server_refuses_to_start_and_says_how() {
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rhizome"))
        .arg("--data")
        .arg(data.path())
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("RHIZOME_ADMIN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--admin USER:PASS") && err.contains("RHIZOME_ADMIN"), "{err}");
}

/// CouchDB 3: a new database shows (and applies) the `admin_only` default;
/// a `_security` whose `members` names nobody makes it public, for
/// anonymous users too, while design documents and `_security` stay with
/// its admins.
#[test]
fn a_database_whose_members_name_nobody_is_public() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    let admin = |method: &str, path: &str, body: &str| server.request(method, path, Some(ADMIN), Some(body));
    assert_eq!(admin("PUT", "/pub", "").0, 201);
    let (_, sec) = server.request("GET", "/pub/_security", Some(ADMIN), None);
    assert_eq!(json(&sec), serde_json::json!({ "members": { "roles": ["_admin"] }, "admins": { "roles": ["_admin"] } }));
    let anon = |method: &str, path: &str, body: Option<&str>| try_request(server.port, method, path, None, body, &[]).unwrap();
    assert_eq!(anon("GET", "/pub", None).0, 401);
    assert_eq!(admin("PUT", "/pub/_security", r#"{"members":{"names":[],"roles":[]}}"#).0, 200);
    assert_eq!(anon("GET", "/pub", None).0, 200);
    assert_eq!(anon("PUT", "/pub/doc", Some(r#"{"by":"anyone"}"#)).0, 201);
    assert_eq!(anon("GET", "/pub/doc", None).0, 200);
    let (status, text) = anon("PUT", "/pub/_design/d", Some("{}"));
    assert_eq!((status, json(&text)["reason"].as_str()), (401, Some("You are not a db or server admin.")));
    assert_eq!(anon("PUT", "/pub/_security", Some("{}")).0, 401);
    assert_eq!(anon("GET", "/_users/_all_docs", None).0, 401, "_users keeps the admin_only default");
    // `{}` names no members either.
    assert_eq!(admin("PUT", "/open", "").0, 201);
    assert_eq!(admin("PUT", "/open/_security", "{}").0, 200);
    assert_eq!(anon("GET", "/open/_all_docs", None).0, 200);
}
