//! A moved server keeps its IRIs resolvable (issue 43, point 3):
//! `rhizome rebase` moves every IRI of a data folder from the base it was
//! named under at its first start to the server's new address, offline;
//! a server started with another base than its folder's says so and keeps
//! answering. Checked from outside: SPARQL, LDP (every `Location`, `Link`
//! and containment triple walked), the CouchDB door, views, Mango and
//! replication to a real CouchDB 3.5.0; and a rebase killed at every
//! database leaves each database whole and is finished by running it again.

mod common;

use common::server::{base64, exchange, free_port, try_request, ADMIN};
use common::{output_ok, rhizome, run, stderr, stdout};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LDP: &str = "http://www.w3.org/ns/ldp#";

/// `rhizome serve` on `port`, with `--base-iri` if given (without, the
/// folder's first start names itself by its address).
struct Served {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Served {
    fn start(data: &Path, port: u16, base: Option<&str>) -> Served {
        let log = data.with_extension(format!("{port}.log"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_rhizome"));
        command.arg("--data").arg(data).args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}"), "--admin", ADMIN]);
        command.env_remove("RHIZOME_BASE_IRI");
        if let Some(b) = base {
            command.args(["--base-iri", b]);
        }
        let mut child = command.stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !matches!(try_request(port, "GET", "/_up", None, None, &[]), Ok((200, _))) {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the server stopped ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default());
            }
            assert!(Instant::now() < deadline, "the server did not answer: {}", std::fs::read_to_string(&log).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(20));
        }
        Served { child, port, log }
    }

    fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn call(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Vec<(String, String)>, String) {
        let auth = format!("Basic {}", base64(ADMIN.as_bytes()));
        let mut all = vec![("Authorization", auth.as_str())];
        all.extend_from_slice(headers);
        exchange(self.port, method, path, &all, body)
    }

    fn json(&self, method: &str, path: &str, body: &str) -> Value {
        let (status, _, text) = self.call(method, path, &[("Content-Type", "application/json")], body);
        assert!((200..300).contains(&status), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: {e}: {text}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
}

/// The path of `url`, which must be on `base`.
fn path_under(url: &str, base: &str) -> String {
    url.strip_prefix(base).unwrap_or_else(|| panic!("{url} is not under {base}")).to_owned()
}

/// Every IRI of every graph of `db`, by SPARQL.
fn sparql_iris(s: &Served) -> Vec<String> {
    let q = "SELECT DISTINCT ?t WHERE { { GRAPH ?t { ?a ?b ?c } } UNION { GRAPH ?g { ?t ?b ?c } } UNION { GRAPH ?g { ?a ?t ?c } } UNION { GRAPH ?g { ?a ?b ?t } } FILTER(isIRI(?t)) }";
    let (status, _, body) = s.call("POST", "/db/_sparql", &[("Content-Type", "application/sparql-query"), ("Accept", "application/sparql-results+json")], q);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["results"]["bindings"].as_array().unwrap().iter().map(|b| b["t"]["value"].as_str().unwrap().to_owned()).collect()
}

/// The ldp:contains objects of a container, as N-Triples lines read.
fn contained(s: &Served, path: &str) -> Vec<String> {
    let (status, _, body) = s.call("GET", path, &[("Accept", "application/n-triples")], "");
    assert_eq!(status, 200, "{path}: {body}");
    body.lines()
        .filter(|l| l.contains(&format!("<{LDP}contains>")))
        .map(|l| l.rsplit_once('<').unwrap().1.split_once('>').unwrap().0.to_owned())
        .collect()
}

/// Loads documents, graphs and LDP resources through a server named by
/// its address; returns the base it named them under.
fn fill(s: &Served) -> String {
    let base = format!("http://127.0.0.1:{}", s.port);
    assert_eq!(s.call("PUT", "/db", &[], "").0, 201);
    // Documents through the CouchDB door, one naming another by IRI.
    let alice = format!(r#"{{"@context": {{"@vocab": "http://xmlns.com/foaf/0.1/", "knows": {{"@type": "@id"}}}}, "@id": "", "name": "alice", "knows": "{base}/db/bob"}}"#);
    assert_eq!(s.call("PUT", "/db/alice", &[("Content-Type", "application/json")], &alice).0, 201);
    let bob = r#"{"@context": {"@vocab": "http://xmlns.com/foaf/0.1/"}, "@id": "", "name": "bob"}"#;
    assert_eq!(s.call("PUT", "/db/bob", &[("Content-Type", "application/json")], bob).0, 201);
    // A graph through SPARQL.
    let update = format!("INSERT DATA {{ GRAPH <{base}/db/g1> {{ <{base}/db/g1> <http://e/about> <{base}/db/alice> }} }}");
    let (status, _, body) = s.call("POST", "/db/_sparql", &[("Content-Type", "application/sparql-update")], &update);
    assert!(status == 200 || status == 204, "{status} {body}");
    // LDP: a basic container with a child, a shelf and a direct container
    // whose membership resource is the shelf.
    let turtle = ("Content-Type", "text/turtle");
    let basic = ("Link", "<http://www.w3.org/ns/ldp#BasicContainer>; rel=\"type\"");
    assert_eq!(s.call("PUT", "/db/_ldp/box", &[turtle, basic], "<> <http://purl.org/dc/terms/title> \"box\" .").0, 201);
    let (status, headers, body) = s.call("POST", "/db/_ldp/box", &[turtle, ("Slug", "note")], "<> <http://purl.org/dc/terms/title> \"note\" ; <http://e/see> <../shelf> .");
    assert_eq!(status, 201, "{body}");
    let note = header(&headers, "location")[0].to_owned();
    assert!(note.starts_with(&format!("{base}/db/_ldp/box/")), "{note}");
    assert_eq!(s.call("PUT", "/db/_ldp/shelf", &[turtle], "").0, 201);
    let direct = ("Link", "<http://www.w3.org/ns/ldp#DirectContainer>; rel=\"type\"");
    let body = format!("<> <{LDP}membershipResource> <{base}/db/_ldp/shelf> ; <{LDP}hasMemberRelation> <http://e/holds> .");
    assert_eq!(s.call("PUT", "/db/_ldp/d", &[turtle, direct], &body).0, 201);
    assert_eq!(s.call("PUT", "/db/_ldp/d/x", &[turtle], "").0, 201);
    // A view and a Mango index, built before the move.
    let ddoc = r#"{"views": {"knows": {"map": "function(doc) { if (doc.knows) emit(doc.knows, doc.name); }"}}}"#;
    assert_eq!(s.call("PUT", "/db/_design/v", &[("Content-Type", "application/json")], ddoc).0, 201);
    let view = s.json("GET", "/db/_design/v/_view/knows", "");
    assert_eq!(view["rows"][0]["key"], format!("{base}/db/bob"));
    s.json("POST", "/db/_index", r#"{"index": {"fields": ["name"]}, "name": "by-name"}"#);
    let found = s.json("POST", "/db/_find", r#"{"selector": {"name": "alice"}, "use_index": "by-name"}"#);
    assert_eq!(found["docs"][0]["knows"], format!("{base}/db/bob"));
    // A full-text index of the IRIs a document names (its tokens include
    // the port), built before the move.
    let search = r#"{"nouveau": {"k": {"index": "function(doc) { if (doc.knows) index('text', 'knows', doc.knows); }"}}}"#;
    assert_eq!(s.call("PUT", "/db/_design/s", &[("Content-Type", "application/json")], search).0, 201);
    assert_eq!(s.json("GET", &format!("/db/_design/s/_nouveau/k?q=knows:{}", s.port), "")["total_hits"], 1);
    assert!(sparql_iris(s).iter().any(|i| i.starts_with(&base)));
    base
}

/// Runs the peer CouchDB's `start` (`$RHIZOME_SHARED/peers/couchdb`, or
/// `../shared` beside the clone) in a folder of its own, and `stop` when
/// dropped.
struct CouchDb {
    dir: PathBuf,
    url: String,
}

fn couchdb_peer() -> PathBuf {
    let peer = common::couchdb::peer_folder();
    assert!(peer.join("start").exists(), "no peer CouchDB at {} (set RHIZOME_SHARED)", peer.display());
    peer
}

impl CouchDb {
    fn start(dir: &Path) -> CouchDb {
        let port = free_port();
        let out = Command::new(couchdb_peer().join("start")).arg(dir).arg(port.to_string()).arg("admin:secret").stderr(Stdio::inherit()).output().expect("the CouchDB peer's start script runs");
        assert!(out.status.success(), "CouchDB did not start");
        CouchDb { dir: dir.to_owned(), url: String::from_utf8_lossy(&out.stdout).trim().to_owned() }
    }
}

impl Drop for CouchDb {
    fn drop(&mut self) {
        let _ = Command::new(couchdb_peer().join("stop")).arg(&self.dir).output();
    }
}

#[test]
fn a_rebased_folder_names_and_answers_everything_under_its_new_address() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let old_port = free_port();
    let served = Served::start(&data, old_port, None);
    let old = fill(&served);
    // A real CouchDB replicates the database before the move.
    let couch = CouchDb::start(&dir.path().join("couchdb"));
    let couch_port: u16 = couch.url.rsplit(':').next().unwrap().parse().unwrap();
    let couch_get = |path: &str| {
        let (status, _, body) = exchange(couch_port, "GET", path, &[("Authorization", &format!("Basic {}", base64(b"admin:secret")))], "");
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    let replicate = |s: &Served, target: &str| {
        let rep = s.json("POST", "/_replicate", &serde_json::json!({"source": "db", "target": format!("{}/{target}", couch.url), "create_target": true}).to_string());
        assert_eq!(rep["ok"], true, "{rep}");
    };
    replicate(&served, "before");
    assert!(couch_get("/before/_all_docs").contains(&format!("{old}/db/_ldp/box/note")));

    // Offline only: the server holds the folder.
    let refused = run(rhizome(&data).args(["rebase", "http://127.0.0.1:1"]));
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("stop the server"), "{}", stderr(&refused));
    drop(served);

    let new_port = free_port();
    let new = format!("http://127.0.0.1:{new_port}");
    // A dry run counts and changes nothing.
    let counted = output_ok(rhizome(&data).args(["rebase", "--dry-run", &new]));
    assert!(counted.contains("dry run") && counted.contains("document ids renamed"), "{counted}");
    assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), old);
    let done = output_ok(rhizome(&data).args(["rebase", &new]));
    assert!(done.contains(&format!("from {old} to {new}")), "{done}");
    assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), new);
    output_ok(rhizome(&data).args(["check", "--all"]));

    let s = Served::start(&data, new_port, None);
    assert!(s.said().contains(&format!("named under {new}/")), "{}", s.said());
    // SPARQL sees only the new base.
    let iris = sparql_iris(&s);
    assert!(iris.iter().all(|i| !i.starts_with(&old)), "old IRIs left: {iris:?}");
    for expected in [format!("{new}/db/alice"), format!("{new}/db/bob"), format!("{new}/db/g1"), format!("{new}/db/_ldp/box/note"), format!("{new}/db/_ldp/shelf")] {
        assert!(iris.contains(&expected), "{expected} missing from {iris:?}");
    }
    let (status, _, g1) = s.call("POST", "/db/_sparql", &[("Content-Type", "application/sparql-query"), ("Accept", "application/n-triples")], "CONSTRUCT { ?s <http://e/about> ?o } WHERE { GRAPH ?g { ?s <http://e/about> ?o } }");
    assert_eq!(status, 200, "{g1}");
    assert!(g1.contains(&format!("<{new}/db/g1> <http://e/about> <{new}/db/alice>")), "{g1}");

    // LDP: walk from the root, following every containment triple and
    // `Link`; each IRI is on the new address and answers there.
    let root = format!("{new}/db/_ldp/");
    let mut queue = vec![root.clone()];
    let mut seen = Vec::new();
    while let Some(iri) = queue.pop() {
        let path = path_under(&iri, &new);
        let (status, headers, body) = s.call("GET", &path, &[("Accept", "text/turtle")], "");
        assert_eq!(status, 200, "{iri}: {body}");
        assert!(!body.contains(&old), "{iri} still names the old base: {body}");
        for link in header(&headers, "link") {
            for target in link.split(',').filter_map(|l| l.trim().strip_prefix('<').and_then(|l| l.split_once('>')).map(|(t, _)| t)) {
                if target.starts_with("http://127.0.0.1") {
                    assert!(target.starts_with(&new), "{iri}: Link {target}");
                    let (status, _, _) = s.call("GET", &path_under(target, &new), &[], "");
                    assert_eq!(status, 200, "{iri}: Link {target} does not answer");
                }
            }
        }
        for child in contained(&s, &path) {
            assert!(child.starts_with(&new), "{iri} contains {child}");
            queue.push(child);
        }
        seen.push(iri);
    }
    for expected in ["box", "box/note", "shelf", "d", "d/x"] {
        assert!(seen.contains(&format!("{root}{expected}")), "{expected} not reached: {seen:?}");
    }
    // The shelf is the direct container's membership resource still.
    let (_, _, shelf) = s.call("GET", "/db/_ldp/shelf", &[("Accept", "application/n-triples")], "");
    assert!(shelf.contains(&format!("<{root}shelf> <http://e/holds> <{root}d/x> .")), "{shelf}");
    // A new resource gets a Location on the new address.
    let (status, headers, _) = s.call("POST", "/db/_ldp/box", &[("Content-Type", "text/turtle"), ("Slug", "later")], "");
    assert_eq!(status, 201);
    assert_eq!(header(&headers, "location"), vec![format!("{root}box/later").as_str()]);

    // The CouchDB door: bodies, ids, views and Mango with the new IRIs.
    let alice = s.json("GET", "/db/alice", "");
    assert_eq!(alice["knows"], format!("{new}/db/bob"));
    let all = s.json("GET", "/db/_all_docs", "");
    let ids: Vec<&str> = all["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&format!("{root}box/note").as_str()), "{ids:?}");
    assert!(ids.iter().all(|i| !i.starts_with(&old)), "{ids:?}");
    let note = s.json("GET", &format!("/db/{}", percent(&format!("{root}box/note"))), "");
    let text = note.to_string();
    assert!(text.contains(&format!("{new}/db/_ldp/shelf")) && !text.contains(&old), "{text}");
    // A document round-trips: written back unchanged, it keeps its graph.
    let (status, _, body) = s.call("PUT", "/db/alice", &[("Content-Type", "application/json")], &alice.to_string());
    assert_eq!(status, 201, "{body}");
    assert!(sparql_iris(&s).contains(&format!("{new}/db/bob")));
    let view = s.json("GET", "/db/_design/v/_view/knows", "");
    assert_eq!(view["rows"][0]["key"], format!("{new}/db/bob"), "the view was rebuilt: {view}");
    let found = s.json("POST", "/db/_find", r#"{"selector": {"name": "alice"}, "use_index": "by-name"}"#);
    assert_eq!(found["docs"][0]["knows"], format!("{new}/db/bob"), "{found}");
    let old_port = old.rsplit(':').next().unwrap();
    let hits = |port: &str| s.json("GET", &format!("/db/_design/s/_nouveau/k?q=knows:{port}"), "")["total_hits"].clone();
    assert_eq!((hits(&new_port.to_string()), hits(old_port)), (serde_json::json!(1), serde_json::json!(0)), "the full-text index was rebuilt");

    // Replication carries the new IRIs to a real CouchDB: all of them to a
    // new database, and the renamed documents to the one replicated before
    // the move (they are new documents there; its checkpoint is passed).
    replicate(&s, "copy");
    let copied = couch_get("/copy/_all_docs?include_docs=true");
    assert!(!copied.contains(&old), "CouchDB got old IRIs: {copied}");
    assert!(copied.contains(&format!("{root}box/note")) && copied.contains(&format!("{new}/db/bob")), "{copied}");
    replicate(&s, "before");
    let again = couch_get("/before/_all_docs");
    assert!(again.contains(&format!("{root}box/note")) && again.contains(&format!("{root}d/x")), "{again}");
}

fn percent(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[test]
fn a_server_started_with_another_base_says_so_and_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let old = fill(&Served::start(&data, port, None));
    let moved = free_port();
    let wanted = format!("http://127.0.0.1:{moved}");
    let s = Served::start(&data, moved, Some(&wanted));
    let said = s.said();
    assert!(said.contains(&format!("(--base-iri, RHIZOME_BASE_IRI) is {wanted}")) && said.contains(&format!("under {old}")) && said.contains("rebase"), "{said}");
    // The stored names stay, and answer by path at the new address.
    let (status, headers, _) = s.call("GET", "/db/_ldp/box/note", &[("Accept", "text/turtle")], "");
    assert_eq!(status, 200);
    assert!(header(&headers, "link").iter().all(|l| !l.contains(&wanted)), "{headers:?}");
    assert_eq!(s.json("GET", "/db/alice", "")["knows"], format!("{old}/db/bob"));
}

/// Databases loaded offline under `base`, `n` of them, each of `triples`.
fn loaded_folder(data: &Path, base: &str, n: usize, triples: usize) {
    for d in 0..n {
        let file = data.with_extension(format!("db{d}.nt"));
        let mut text = String::new();
        for i in 0..triples {
            text.push_str(&format!("<{base}/db{d}/s{i}> <{base}/vocab#next> <{base}/db{d}/s{}> .\n", i + 1));
        }
        std::fs::write(&file, text).unwrap();
        let out = run(rhizome(data).args(["load", "--db", &format!("db{d}")]).arg(&file).env("RHIZOME_BASE_IRI", base));
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

/// How many IRIs of database `db` are under `old` and under `new`.
fn iris_by_base(data: &Path, db: &str, old: &str, new: &str) -> (usize, usize) {
    let out = output_ok(rhizome(&data.join("dbs").join(db)).arg("quads"));
    let iris: Vec<&str> = out.split('<').skip(1).map(|p| p.split_once('>').unwrap().0).collect();
    (iris.iter().filter(|i| i.starts_with(old)).count(), iris.iter().filter(|i| i.starts_with(new)).count())
}

#[test]
fn a_rebase_killed_at_any_database_leaves_each_whole_and_is_finished_by_running_it_again() {
    let (old, new) = ("http://old.example:5984", "http://new.example:7000");
    let dbs = 5;
    let mut cut_between = 0;
    for kill_after in 0..=dbs {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        loaded_folder(&data, old, dbs, 400);
        // Killed (SIGKILL) once `kill_after` databases have said they are done.
        let mut child = rhizome(&data).args(["rebase", new]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut reported = 0;
        while reported < kill_after {
            match lines.next() {
                Some(Ok(line)) if line.contains("rebased db") => reported += 1,
                Some(Ok(_)) => {}
                _ => break,
            }
        }
        let _ = child.kill();
        let finished = child.wait().unwrap().success();
        // Consistent stores, and each database whole under one base.
        output_ok(rhizome(&data).args(["check", "--all"]));
        let mut moved = 0;
        for d in 0..dbs {
            let (at_old, at_new) = iris_by_base(&data, &format!("db{d}"), old, new);
            assert!(at_old == 0 || at_new == 0, "db{d} is half moved: {at_old} old, {at_new} new");
            assert_eq!(at_old + at_new, 400 * 4, "db{d}");
            moved += (at_new > 0) as usize;
        }
        assert!(moved >= kill_after, "{moved} moved, {kill_after} reported");
        let base_now = std::fs::read_to_string(data.join("base-iri")).unwrap().trim().to_owned();
        if !finished && moved < dbs {
            assert_eq!(base_now, old, "the base moves only when every database has");
        }
        if data.join("rebase-plan").exists() {
            cut_between += (moved > 0 && moved < dbs) as usize;
            // Nothing starts on a folder between two bases; it says how to finish.
            let out = run(rhizome(&data).args(["load", "--db", "db0"]).arg(data.with_extension("db0.nt")));
            assert!(!out.status.success() && stderr(&out).contains(&format!("rebase {new}")), "{}", stderr(&out));
        }
        // Running it again finishes it.
        let out = run(rhizome(&data).args(["rebase", new]));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(new), "{}", stdout(&out));
        assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), new);
        assert!(!data.join("rebase-plan").exists());
        for d in 0..dbs {
            assert_eq!(iris_by_base(&data, &format!("db{d}"), old, new), (0, 400 * 4), "db{d}");
        }
        output_ok(rhizome(&data).args(["check", "--all"]));
    }
    assert!(cut_between > 0, "no kill left the folder between the two bases: the test tested nothing");
}

#[test]
fn a_rebase_that_would_make_two_terms_one_is_refused_before_any_database_moves() {
    let (old, new) = ("http://old.example:5984", "http://new.example:7000");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    loaded_folder(&data, old, 2, 10);
    // db9 (moved last) already names the new address too.
    let file = data.with_extension("clash.nt");
    std::fs::write(&file, format!("<{old}/db9/a> <http://e/same> <{new}/db9/a> .\n")).unwrap();
    let out = run(rhizome(&data).args(["load", "--db", "db9"]).arg(&file).env("RHIZOME_BASE_IRI", old));
    assert!(out.status.success(), "{}", stderr(&out));
    let refused = run(rhizome(&data).args(["rebase", new]));
    assert!(!refused.status.success());
    let said = stderr(&refused);
    assert!(said.contains("db9") && said.contains(&format!("{new}/db9/a")) && said.contains("already a term"), "{said}");
    assert_eq!(std::fs::read_to_string(data.join("base-iri")).unwrap().trim(), old);
    assert!(!data.join("rebase-plan").exists());
    assert_eq!(iris_by_base(&data, "db0", old, new), (40, 0), "nothing moved");
    // The folder still serves as it was.
    let port = free_port();
    let s = Served::start(&data, port, None);
    assert!(s.said().contains(&format!("named under {old}/")), "{}", s.said());
}
