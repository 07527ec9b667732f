//! `rhizome replicate` between real servers and local databases: every
//! revision, conflicts, deletions, attachments and JSON-LD graphs arrive;
//! checkpoints make a second run copy only what changed; continuous mode
//! follows new writes; the server's `/_replicate` and `_replicator`; a
//! PouchDB server (express-pouchdb) as the peer; bad endpoints fail with a
//! reason; local databases are refused while a server runs on their folder.

mod common;

use common::server::{ServerProcess, ADMIN};
use common::{rhizome, run, stderr, stdout};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn request(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string());
    let (status, text) = server.request(method, path, Some(ADMIN), body.as_deref());
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn ok(server: &ServerProcess, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, value) = request(server, method, path, body);
    assert!(status < 300, "{method} {path}: {status} {value}");
    value
}

/// Polls `probe` until `done` holds of its answer (or a minute passed, for
/// the assertion that follows to fail on); the last answer.
fn eventually<T>(mut probe: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = probe();
        if done(&answer) || Instant::now() > deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Everything replication must carry, as a client sees it.
fn contents(server: &ServerProcess, db: &str) -> Value {
    let all = ok(server, "GET", &format!("/{db}/_all_docs?include_docs=true&conflicts=true&attachments=true"), None);
    let deleted: Vec<Value> = ok(server, "GET", &format!("/{db}/_changes?style=all_docs"), None)["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.get("deleted") == Some(&json!(true)))
        .map(|r| json!([r["id"], r["changes"]]))
        .collect();
    json!({ "rows": all["rows"], "deleted": deleted })
}

/// `rhizome replicate` with these arguments; its JSON summary.
fn replicate(data: &std::path::Path, args: &[&str]) -> Value {
    let out = run(rhizome(data).args(args));
    assert!(out.status.success(), "replicate {args:?} failed: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("a JSON summary")
}

/// Two servers, each on a data folder of its own; `da` is also the data
/// folder `rhizome replicate` runs with. Bind every field, folders first:
/// a field left to `..` is dropped at once (its folder with it), and
/// bindings drop last-bound first, so the servers stop before their
/// folders go.
struct Pair {
    a: ServerProcess,
    b: ServerProcess,
    da: tempfile::TempDir,
    _db: tempfile::TempDir,
}

fn pair() -> Pair {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Pair { a: ServerProcess::start(da.path()), b: ServerProcess::start(db.path()), da, _db: db }
}

/// A `rhizome replicate --continuous --create-target` process, its stderr
/// collected as it comes.
struct Follower {
    child: std::process::Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Follower {
    fn start(data: &std::path::Path, source: &str, target: &str) -> Follower {
        let mut child = rhizome(data)
            .args(["replicate", "--continuous", "--create-target", source, target])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rhizome replicate starts");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (mut pipe, sink) = (child.stderr.take().unwrap(), stderr.clone());
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = std::io::Read::read(&mut pipe, &mut chunk) {
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        Follower { child, stderr, reader }
    }

    /// Waits until it has printed `needle` (a minute at most: the test's
    /// assertion on `stop`'s stderr then fails with what it did print).
    /// Waiting on what the follower says, not on a fixed sleep, keeps the
    /// tests right on a loaded machine.
    fn wait_until_printed(&self, needle: &str) {
        eventually(|| self.stderr.lock().unwrap().contains(needle), |&seen| seen);
    }

    /// Stops it; whether it was still running, and what it printed on stderr.
    fn stop(mut self) -> (bool, String) {
        let running = self.child.try_wait().unwrap().is_none();
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.reader.join().unwrap();
        let stderr = self.stderr.lock().unwrap().clone();
        (running, stderr)
    }
}

fn seed(server: &ServerProcess, db: &str) {
    ok(server, "PUT", &format!("/{db}"), None);
    for i in 0..120 {
        ok(server, "PUT", &format!("/{db}/doc{i:03}"), Some(json!({ "n": i })));
    }
    // A JSON-LD document, so also a graph.
    ok(server, "PUT", &format!("/{db}/ann"), Some(json!({ "@context": { "@vocab": "http://schema.org/" }, "@id": "", "name": "Ann" })));
    // A conflict: two branches of one document, as replication makes them.
    ok(server, "POST", &format!("/{db}/_bulk_docs"), Some(json!({ "new_edits": false, "docs": [
        { "_id": "split", "_rev": "2-aaaa", "_revisions": { "start": 2, "ids": ["aaaa", "0000"] }, "side": "a" },
        { "_id": "split", "_rev": "2-bbbb", "_revisions": { "start": 2, "ids": ["bbbb", "0000"] }, "side": "b" },
    ] })));
    // A deletion and an attachment.
    let rev = ok(server, "PUT", &format!("/{db}/gone"), Some(json!({ "x": 1 })))["rev"].as_str().unwrap().to_owned();
    ok(server, "DELETE", &format!("/{db}/gone?rev={rev}"), None);
    ok(server, "PUT", &format!("/{db}/file"), Some(json!({ "_attachments": { "a.txt": { "content_type": "text/plain", "data": "aGVsbG8gd29ybGQ=" } } })));
}

#[test]
fn replication_between_servers_carries_everything_and_resumes_from_checkpoints() {
    let Pair { da, _db, a, b } = pair();
    seed(&a, "src");
    let (src, dst) = (format!("{}/src", a.url(ADMIN)), format!("{}/dst", b.url(ADMIN)));

    // The target must exist unless asked to create it.
    let refused = run(rhizome(da.path()).args(["replicate", &src, &dst]));
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("--create-target"), "{}", stderr(&refused));

    let first = replicate(da.path(), &["replicate", &src, &dst, "--create-target", "--batch-size", "50"]);
    assert_eq!(first["docs_written"], json!(125), "{first}");
    assert_eq!(first["doc_write_failures"], json!(0));
    assert_eq!(contents(&a, "src"), contents(&b, "dst"));
    let split = ok(&b, "GET", "/dst/split?conflicts=true", None);
    assert_eq!((split["_rev"].clone(), split["_conflicts"].clone()), (json!("2-bbbb"), json!(["2-aaaa"])));
    // The JSON-LD document is a graph on the target too.
    let (_, found) = request(&b, "GET", "/dst/_sparql?query=ASK%20%7B%20%3Fs%20%3Chttp%3A%2F%2Fschema.org%2Fname%3E%20%22Ann%22%20%7D", None);
    assert_eq!(found["boolean"], json!(true), "{found}");

    // Again: the checkpoint says everything is there.
    let second = replicate(da.path(), &["replicate", &src, &dst]);
    assert_eq!((second["missing_checked"].clone(), second["docs_written"].clone()), (json!(0), json!(0)), "{second}");
    assert_eq!(second["start_last_seq"], first["source_last_seq"]);

    // Edits on both sides, then both ways: the same winner and conflicts everywhere.
    let rev = ok(&a, "GET", "/src/doc001", None)["_rev"].as_str().unwrap().to_owned();
    ok(&a, "PUT", &format!("/src/doc001?rev={rev}"), Some(json!({ "n": "from a" })));
    ok(&b, "PUT", &format!("/dst/doc001?rev={rev}"), Some(json!({ "n": "from b" })));
    ok(&b, "PUT", "/dst/only-on-b", Some(json!({})));
    let third = replicate(da.path(), &["replicate", &src, &dst]);
    assert_eq!(third["missing_checked"], json!(1), "{third}");
    replicate(da.path(), &["replicate", &dst, &src]);
    assert_eq!(contents(&a, "src"), contents(&b, "dst"));
    assert_eq!(ok(&a, "GET", "/src/doc001?conflicts=true", None)["_conflicts"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_local_database_replicates_with_a_server_and_is_served_afterwards() {
    let (da, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = ServerProcess::start(da.path());
    seed(&a, "src");
    let src = format!("{}/src", a.url(ADMIN));
    let missing = run(rhizome(local.path()).args(["replicate", &src, "copy"]));
    assert!(stderr(&missing).contains("no database \"copy\""), "{}", stderr(&missing));
    let pulled = replicate(local.path(), &["replicate", &src, "copy", "--create-target"]);
    assert_eq!(pulled["docs_written"], json!(125), "{pulled}");
    // Edit the local copy offline, push it back.
    let b = ServerProcess::start(local.path());
    let rev = ok(&b, "GET", "/copy/doc000", None)["_rev"].as_str().unwrap().to_owned();
    ok(&b, "PUT", &format!("/copy/doc000?rev={rev}"), Some(json!({ "n": "offline" })));
    // While a server runs on the folder nothing else opens its databases,
    // not even one it has not opened yet (it opens them on demand).
    let nt = da.path().join("one.nt");
    std::fs::write(&nt, "<http://example.org/a> <http://example.org/p> \"x\" .\n").unwrap();
    for args in [vec!["load", "--quiet", "--db", "fresh", nt.to_str().unwrap()], vec!["replicate", "copy", &src]] {
        let refused = run(rhizome(local.path()).args(&args));
        assert!(!refused.status.success() && stderr(&refused).contains("in use: a running server"), "{args:?}: {}", stderr(&refused));
    }
    assert_eq!(request(&b, "GET", "/fresh", None).0, 404);
    drop(b);
    let pushed = replicate(local.path(), &["replicate", "copy", &src]);
    assert_eq!(pushed["docs_written"], json!(1), "{pushed}");
    assert_eq!(ok(&a, "GET", "/src/doc000", None)["n"], json!("offline"));
    let b = ServerProcess::start(local.path());
    assert_eq!(contents(&a, "src"), contents(&b, "copy"));
}

#[test]
fn a_local_target_database_keeps_its_validation_functions() {
    let (da, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = ServerProcess::start(da.path());
    ok(&a, "PUT", "/src", None);
    ok(&a, "POST", "/src/_bulk_docs", Some(json!({ "docs": [{ "_id": "good", "n": 1 }, { "_id": "bad", "forbidden": true }] })));
    let b = ServerProcess::start(local.path());
    ok(&b, "PUT", "/guarded", None);
    let vdu = "function(doc) { if (doc.forbidden) throw({forbidden: 'no forbidden documents'}); }";
    ok(&b, "PUT", "/guarded/_design/rules", Some(json!({ "validate_doc_update": vdu })));
    drop(b);

    let src = format!("{}/src", a.url(ADMIN));
    let out = run(rhizome(local.path()).args(["replicate", &src, "guarded"]));
    assert!(!out.status.success(), "a refused revision fails the run");
    let report: Value = serde_json::from_str(&stdout(&out)).expect("a JSON summary");
    assert_eq!(report["docs_written"], json!(1), "{report}");
    assert_eq!(report["doc_write_failures"], json!(1), "{report}");
    assert!(stderr(&out).contains("no forbidden documents"), "{}", stderr(&out));
    let b = ServerProcess::start(local.path());
    assert_eq!(request(&b, "GET", "/guarded/good", None).0, 200);
    assert_eq!(request(&b, "GET", "/guarded/bad", None).0, 404);
}

#[test]
fn continuous_replication_follows_new_writes() {
    let Pair { da, _db, a, b } = pair();
    ok(&a, "PUT", "/live", None);
    let follower = Follower::start(da.path(), &format!("{}/live", a.url(ADMIN)), &format!("{}/live", b.url(ADMIN)));
    // Two rounds: the second is written after the first arrived, so the
    // follower must have waited for it.
    let count = || request(&b, "GET", "/live", None).1["doc_count"].as_u64().unwrap_or(0);
    for round in 0..2 {
        for i in 0..5 {
            ok(&a, "PUT", &format!("/live/r{round}d{i}"), Some(json!({ "i": i })));
        }
        assert_eq!(eventually(count, |&n| n >= 5 * (round + 1)), 5 * (round + 1), "round {round} arrived");
    }
    let (still_running, _) = follower.stop();
    assert!(still_running, "a continuous replication keeps running");
    assert_eq!(contents(&a, "live"), contents(&b, "live"));
}

#[test]
fn continuous_replication_waits_out_a_target_restart() {
    let Pair { da, _db, a, mut b } = pair();
    ok(&a, "PUT", "/live", None);
    let follower = Follower::start(da.path(), &format!("{}/live", a.url(ADMIN)), &format!("{}/live", b.url(ADMIN)));
    let count = |b: &ServerProcess| request(b, "GET", "/live", None).1["doc_count"].as_u64().unwrap_or(0);
    let wait_for = |b: &ServerProcess, n: u64| eventually(|| count(b), |&c| c >= n);
    ok(&a, "PUT", "/live/before", Some(json!({})));
    assert_eq!(wait_for(&b, 1), 1);
    b.kill();
    for i in 0..3 {
        ok(&a, "PUT", &format!("/live/while-down-{i}"), Some(json!({})));
    }
    // Let the follower meet the closed port at least once.
    follower.wait_until_printed("waiting to retry");
    b.restart();
    assert_eq!(wait_for(&b, 4), 4, "the writes made while the target was down arrive");
    let (still_running, stderr) = follower.stop();
    assert!(still_running, "the follower survived the restart");
    assert!(stderr.contains("waiting to retry"), "{stderr}");
    assert_eq!(contents(&a, "live"), contents(&b, "live"));
}

#[test]
fn filtered_replication_copies_only_the_chosen_documents() {
    let Pair { da, _db, a, b } = pair();
    seed(&a, "src");
    let (src, dst) = (format!("{}/src", a.url(ADMIN)), format!("{}/dst", b.url(ADMIN)));
    let ids = |server: &ServerProcess, db: &str| -> Vec<String> {
        ok(server, "GET", &format!("/{db}/_all_docs"), None)["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
    };
    let out = replicate(da.path(), &["replicate", &src, &dst, "--create-target", "--doc-ids", "doc003,ann,split"]);
    assert_eq!(out["docs_written"], json!(4), "two branches of split, doc003, ann: {out}");
    assert_eq!(ids(&b, "dst"), vec!["ann", "doc003", "split"]);
    let out = replicate(da.path(), &["replicate", &src, &dst, "--selector", r#"{"n": {"$gte": 118}}"#]);
    assert_eq!(out["docs_written"], json!(2), "{out}");
    assert_eq!(ids(&b, "dst"), vec!["ann", "doc003", "doc118", "doc119", "split"]);
    let bad = run(rhizome(da.path()).args(["replicate", &src, &dst, "--selector", "[1]"]));
    assert!(stderr(&bad).contains("must be a JSON object"), "{}", stderr(&bad));
    // The server's replicator takes the same filters.
    let out = ok(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": "few", "create_target": true, "doc_ids": ["doc010", "doc011"] })));
    assert_eq!(out["history"][0]["docs_written"], json!(2), "{out}");
    assert_eq!(ids(&a, "few"), vec!["doc010", "doc011"]);
    assert_eq!(request(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": "few", "doc_ids": "doc010" }))).0, 400);
}

#[test]
fn continuous_replication_waits_for_a_target_that_is_down_when_it_starts() {
    // Two nodes restarting together: the replication of the first one up
    // must not give up on the other.
    let Pair { da, _db, a, mut b } = pair();
    ok(&a, "PUT", "/early", None);
    ok(&a, "PUT", "/early/d", Some(json!({})));
    b.kill();
    let follower = Follower::start(da.path(), &format!("{}/early", a.url(ADMIN)), &format!("{}/early", b.url(ADMIN)));
    follower.wait_until_printed("waiting to retry");
    b.restart();
    let arrived = eventually(|| request(&b, "GET", "/early/d", None).0, |&s| s == 200);
    let (still_running, stderr) = follower.stop();
    assert_eq!(arrived, 200, "{stderr}");
    assert!(still_running, "{stderr}");
    assert!(stderr.contains("waiting to retry"), "{stderr}");
}

#[test]
fn bad_endpoints_fail_with_a_reason() {
    let data = tempfile::tempdir().unwrap();
    let a = ServerProcess::start(data.path());
    ok(&a, "PUT", "/db", None);
    let port = a.port;
    for (source, expected) in [
        (format!("http://admin:wrong@127.0.0.1:{port}/db"), "401"),
        (format!("http://127.0.0.1:{port}/db"), "401"),
        (format!("{}/nodb", a.url(ADMIN)), "does not exist"),
        ("https://example.org/db".to_owned(), "https is not supported"),
        ("Not A Name".to_owned(), "neither an http:// URL nor a database name"),
    ] {
        let out = run(rhizome(data.path()).args(["replicate", &source, &format!("{}/db", a.url(ADMIN))]));
        assert!(!out.status.success(), "{source} was taken");
        assert!(stderr(&out).contains(expected), "{source}: {}", stderr(&out));
        assert!(!stderr(&out).contains("wrong"), "a password is never printed: {}", stderr(&out));
    }
}

#[test]
fn the_server_replicates_on_request_one_shot_and_continuous() {
    let Pair { da: _da, _db, a, b } = pair();
    seed(&a, "src");
    // Between two databases of the server.
    let out = ok(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": "copy", "create_target": true })));
    assert_eq!(out["history"][0]["docs_written"], json!(125), "{out}");
    assert_eq!(contents(&a, "src"), contents(&a, "copy"));
    // To another server, credentials in CouchDB's object form.
    let (user, password) = ADMIN.split_once(':').unwrap();
    let remote = json!({ "url": format!("http://127.0.0.1:{}/remote", b.port), "auth": { "basic": { "username": user, "password": password } } });
    let out = ok(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": remote, "create_target": true })));
    assert_eq!(out["history"][0]["docs_written"], json!(125), "{out}");
    assert_eq!(contents(&a, "src"), contents(&b, "remote"));
    let out = ok(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": remote })));
    assert_eq!(out["history"][0]["missing_checked"], json!(0), "the checkpoint holds: {out}");
    // Errors a client can act on.
    assert_eq!(request(&a, "POST", "/_replicate", Some(json!({ "source": "nothing", "target": "copy" }))).0, 404);
    let wrong = json!({ "url": format!("http://127.0.0.1:{}/remote", b.port), "auth": { "basic": { "username": user, "password": "wrong" } } });
    assert_eq!(request(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": wrong }))).0, 401);
    assert_eq!(request(&a, "POST", "/_replicate", Some(json!({ "source": "src" }))).0, 400);

    // Continuous: follows writes until cancelled, and stops when cancelled.
    let live = json!({ "source": "src", "target": "follower", "create_target": true, "continuous": true });
    let started = ok(&a, "POST", "/_replicate", Some(live.clone()));
    assert_eq!(started["ok"], json!(true), "{started}");
    ok(&a, "PUT", "/src/after-start", Some(json!({})));
    assert_eq!(eventually(|| request(&a, "GET", "/follower/after-start", None).0, |&s| s == 200), 200, "the follower copied a new write");
    let tasks = ok(&a, "GET", "/_active_tasks", None);
    assert_eq!(tasks.as_array().map(Vec::len), Some(1), "{tasks}");
    assert_eq!((tasks[0]["type"].clone(), tasks[0]["continuous"].clone(), tasks[0]["target"].clone()), (json!("replication"), json!(true), json!("follower")));
    assert!(tasks[0]["docs_written"].as_u64().unwrap() >= 1, "{tasks}");
    let cancel = json!({ "source": "src", "target": "follower", "cancel": true });
    assert_eq!(ok(&a, "POST", "/_replicate", Some(cancel.clone()))["_local_id"], started["_local_id"]);
    // The cancel is answered once the replication has stopped.
    ok(&a, "PUT", "/src/after-cancel", Some(json!({})));
    let out = ok(&a, "POST", "/_replicate", Some(json!({ "source": "src", "target": "copy" })));
    assert_eq!(out["history"][0]["docs_written"], json!(2), "{out}");
    assert_eq!(request(&a, "GET", "/follower/after-cancel", None).0, 404, "a cancelled replication copies nothing more");
    assert_eq!(request(&a, "POST", "/_replicate", Some(cancel)).0, 404);
    assert_eq!(ok(&a, "GET", "/_active_tasks", None), json!([]), "a cancelled replication is no task");
}

/// The `_scheduler/docs` entry of a `_replicator` document, once `ready` holds.
fn wait_for_doc(server: &ServerProcess, doc_id: &str, ready: impl Fn(Option<&Value>) -> bool) -> Option<Value> {
    let entry = || ok(server, "GET", "/_scheduler/docs", None)["docs"].as_array().unwrap().iter().find(|d| d["doc_id"] == json!(doc_id)).cloned();
    eventually(entry, |e| ready(e.as_ref()))
}

#[test]
fn replicator_documents_run_until_deleted_and_again_after_a_restart() {
    let Pair { da: _da, _db, mut a, b } = pair();
    seed(&a, "src");
    ok(&a, "PUT", "/_replicator/once", Some(json!({ "source": "src", "target": "copy", "create_target": true })));
    let once = wait_for_doc(&a, "once", |d| d.is_some_and(|d| d["state"] == json!("completed")));
    assert_eq!(once.as_ref().map(|d| d["info"]["docs_written"].clone()), Some(json!(125)), "{once:?}");
    assert_eq!(contents(&a, "src"), contents(&a, "copy"));
    // As in CouchDB 3, the completed state is written into the document.
    let recorded = eventually(|| ok(&a, "GET", "/_replicator/once", None), |d| d["_replication_state"] == json!("completed"));
    assert_eq!(recorded["_replication_stats"]["docs_written"], json!(125), "{recorded}");
    assert!(recorded["_replication_state_time"].as_str().is_some_and(|t| t.ends_with('Z')), "{recorded}");
    // A document that cannot make a replication is refused when written.
    let (status, refused) = request(&a, "PUT", "/_replicator/odd", Some(json!({ "source": "src", "target": "copy", "continuous": "yes" })));
    assert_eq!((status, refused["error"].clone()), (403, json!("forbidden")), "{refused}");
    let bulk = ok(&a, "POST", "/_replicator/_bulk_docs", Some(json!({ "docs": [{ "_id": "nosource", "target": "copy" }, { "_id": "odd-ids", "source": "src", "target": "copy", "doc_ids": "a" }] })));
    assert_eq!(bulk.as_array().map(|r| r.iter().map(|r| r["error"].clone()).collect::<Vec<_>>()), Some(vec![json!("forbidden"), json!("forbidden")]), "{bulk}");
    // A bad document fails with its reason, and nothing else.
    ok(&a, "PUT", "/_replicator/broken", Some(json!({ "source": "no-such-db", "target": "copy" })));
    let broken = wait_for_doc(&a, "broken", |d| d.is_some_and(|d| d["state"] == json!("failed")));
    assert!(broken.is_some_and(|d| d["info"]["reason"].as_str().unwrap().contains("no-such-db")));

    let live = json!({ "source": "src", "target": format!("{}/live", b.url(ADMIN)), "create_target": true, "continuous": true });
    ok(&a, "PUT", "/_replicator/live", Some(live));
    let count = || request(&b, "GET", "/live", None).1["doc_count"].as_u64().unwrap_or(0);
    let wait_count = |n: u64| eventually(count, |&c| c >= n);
    assert_eq!(wait_count(123), 123, "the live documents of src");
    let tasks = ok(&a, "GET", "/_active_tasks", None);
    assert_eq!(tasks.as_array().map(|t| t.iter().map(|t| t["doc_id"].clone()).collect::<Vec<_>>()), Some(vec![json!("live")]), "only the running one: {tasks}");
    // Killed and started again: the document still describes a replication.
    a.restart();
    ok(&a, "PUT", "/src/after-restart", Some(json!({})));
    assert_eq!(wait_count(124), 124, "the replication runs again after a restart");
    // A completed one is listed as such and not run again.
    let once = wait_for_doc(&a, "once", |d| d.is_some_and(|d| d["state"] == json!("completed")));
    assert_eq!(once.as_ref().map(|d| d["info"]["docs_written"].clone()), Some(json!(125)), "{once:?}");
    assert_eq!(ok(&a, "GET", "/_replicator/once", None)["_rev"], recorded["_rev"]);
    assert_eq!(request(&a, "GET", "/copy/after-restart", None).0, 404);
    // Deleting the document stops it; once gone from the list it copies nothing more.
    let rev = ok(&a, "GET", "/_replicator/live", None)["_rev"].as_str().unwrap().to_owned();
    ok(&a, "DELETE", &format!("/_replicator/live?rev={rev}"), None);
    assert!(wait_for_doc(&a, "live", |d| d.is_none()).is_none(), "the deleted document's replication left the list");
    ok(&a, "PUT", "/src/after-delete", Some(json!({})));
    assert_eq!(request(&b, "GET", "/live/after-delete", None).0, 404);
    // Deleting the database stops all of them; made again, it starts empty.
    ok(&a, "PUT", "/_replicator/again", Some(json!({ "source": "src", "target": "again", "create_target": true, "continuous": true })));
    assert!(wait_for_doc(&a, "again", |d| d.is_some_and(|d| d["state"] == json!("running"))).is_some());
    ok(&a, "DELETE", "/_replicator", None);
    ok(&a, "PUT", "/_replicator", None);
    assert!(wait_for_doc(&a, "again", |d| d.is_none()).is_none(), "a deleted _replicator's replications stop");
}

/// A PouchDB server (`tests/pouchdb/peer-server.js`: express-pouchdb, the
/// HTTP layer of pouchdb-server, over in-memory PouchDB; npm, installed by
/// `scripts/setup`) on a free port.
struct PouchDbServer {
    child: std::process::Child,
    port: u16,
}

impl PouchDbServer {
    fn start() -> PouchDbServer {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/pouchdb");
        assert!(
            dir.join("node_modules/express-pouchdb").is_dir(),
            "express-pouchdb is not installed in {}: run ./scripts/setup (it runs npm ci there)",
            dir.display()
        );
        let port = common::server::free_port();
        let child = std::process::Command::new("node")
            .arg("peer-server.js")
            .arg(port.to_string())
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs (scripts/setup installs it)");
        let mut server = PouchDbServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(common::server::try_request(port, "GET", "/", None, None, &[]), Ok((200, _))) {
            assert!(server.child.try_wait().unwrap().is_none(), "the PouchDB server exited early");
            assert!(Instant::now() < deadline, "the PouchDB server did not answer within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }
}

impl Drop for PouchDbServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn replication_through_a_pouchdb_server_and_back_loses_nothing() {
    let data = tempfile::tempdir().unwrap();
    let rhizome_server = ServerProcess::start(data.path());
    let peer = PouchDbServer::start();
    seed(&rhizome_server, "src");
    let (src, there, back) = (format!("{}/src", rhizome_server.url(ADMIN)), format!("http://127.0.0.1:{}/there", peer.port), format!("{}/back", rhizome_server.url(ADMIN)));
    let out = replicate(data.path(), &["replicate", &src, &there, "--create-target"]);
    assert_eq!(out["docs_written"], json!(125), "{out}");
    // A new revision and a new document made on the peer come back too.
    let put = |path: &str, body: Value| {
        let (status, text) = common::server::try_request(peer.port, "PUT", path, None, Some(&body.to_string()), &[]).unwrap();
        assert!(status < 300, "PUT {path}: {status} {text}");
    };
    let (_, doc) = common::server::try_request(peer.port, "GET", "/there/doc007", None, None, &[]).unwrap();
    let rev = serde_json::from_str::<Value>(&doc).unwrap()["_rev"].clone();
    put("/there/doc007", json!({ "_rev": rev, "n": "edited on the PouchDB server" }));
    put("/there/made-there", json!({ "@context": { "@vocab": "http://schema.org/" }, "@id": "", "name": "Bea" }));
    let out = replicate(data.path(), &["replicate", &there, &back, "--create-target"]);
    assert_eq!(out["docs_written"], json!(126), "{out}");
    replicate(data.path(), &["replicate", &there, &src]);
    assert_eq!(contents(&rhizome_server, "src"), contents(&rhizome_server, "back"));
    assert_eq!(ok(&rhizome_server, "GET", "/back/doc007", None)["n"], json!("edited on the PouchDB server"));
    assert_eq!(ok(&rhizome_server, "GET", "/back/split?conflicts=true", None)["_conflicts"], json!(["2-aaaa"]));
    let (_, found) = request(&rhizome_server, "GET", "/back/_sparql?query=ASK%20%7B%20%3Fs%20%3Chttp%3A%2F%2Fschema.org%2Fname%3E%20%22Bea%22%20%7D", None);
    assert_eq!(found["boolean"], json!(true), "{found}");
}
