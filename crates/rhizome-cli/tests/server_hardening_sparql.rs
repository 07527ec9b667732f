//! Issue 20, points 1, 4 and 5, on a real `rhizome serve`: SPARQL requests
//! nested too deep, building strings past the memory budget, or LOADing
//! server files get a 400 with a reason, and the server answers afterwards;
//! LOAD reads only inside the folder an admin named (`--load-dir`) and its
//! refusals tell nothing of what exists outside it.

mod common;
mod rdf_support;

use common::server::{ServerProcess, ADMIN};
use rdf_support::client::{request, Reply};
use serde_json::Value;
use std::path::Path;

fn post(server: &ServerProcess, content_type: &str, body: &str) -> Reply {
    request(server.port, "POST", "/db/_sparql", Some(ADMIN), &[("Content-Type", content_type), ("Accept", "application/sparql-results+json")], Some(body.as_bytes()))
        .expect("the server answers")
}

fn query(server: &ServerProcess, text: &str) -> Reply {
    post(server, "application/sparql-query", text)
}

fn update(server: &ServerProcess, text: &str) -> Reply {
    post(server, "application/sparql-update", text)
}

fn reason(r: &Reply) -> String {
    let v: Value = serde_json::from_slice(&r.body).unwrap_or_else(|_| panic!("a JSON error, got {}", r.text()));
    v["reason"].as_str().unwrap_or_else(|| panic!("a reason in {v}")).to_owned()
}

fn server_with_db(env: &[(&str, &str)]) -> (tempfile::TempDir, ServerProcess) {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_env(&dir.path().join("data"), env);
    assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
    let r = update(&server, "INSERT DATA { GRAPH <http://e/g> { <http://e/s> <http://e/p> <http://e/s> } }");
    assert_eq!(r.status, 200, "{}", r.text());
    (dir, server)
}

fn assert_up(server: &ServerProcess, after: &str) {
    let r = query(server, "ASK { GRAPH <http://e/g> { <http://e/s> <http://e/p> ?o } }");
    assert_eq!((r.status, r.text().contains("true")), (200, true), "the server answers a query after {after}: {}", r.text());
}

fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

fn chain(item: &str, sep: &str, n: usize) -> String {
    vec![item; n].join(sep)
}

#[test]
fn deep_nesting_gets_400_with_a_reason_and_the_server_stays_up() {
    let (_dir, server) = server_with_db(&[]);
    let group = "{ ?s ?p ?o }";
    let queries = [
        ("1,000 parentheses in a FILTER", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("(", "1", ")", 1000))),
        ("2,000 nested {}", format!("SELECT * {}", nested("{ ", "?s ?p ?o", " }", 2000))),
        ("50,000 !", format!("SELECT * {{ ?s ?p ?o FILTER({}?o) }}", "!".repeat(50_000))),
        ("50,000 +", format!("SELECT * {{ ?s ?p ?o FILTER({} = 1) }}", chain("1", "+", 50_000))),
        ("20,000 UNIONs", format!("SELECT * {{ {} }}", chain(group, " UNION ", 20_000))),
        ("a 20,000-step path", format!("SELECT * {{ ?s {} ?o }}", chain("<http://e/p>", "/", 20_000))),
        ("30 nested !(", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("!(", "?o", ")", 30))),
    ];
    for (what, text) in &queries {
        let r = query(&server, text);
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        let reason = reason(&r);
        assert!(reason.contains("deeper than") || reason.contains("operators"), "{what}: {reason}");
        assert_up(&server, what);
    }
    let updates = [
        ("2,000 nested {} in an update's WHERE", format!("DELETE {{ ?s ?p ?o }} WHERE {}", nested("{ ", "?s ?p ?o", " }", 2000))),
        ("20,000 UNIONs in an update's WHERE", format!("DELETE {{ ?s ?p ?o }} WHERE {{ {} }}", chain(group, " UNION ", 20_000))),
        ("1,000 parentheses in an update's FILTER", format!("DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o FILTER({}) }}", nested("(", "1", ")", 1000))),
    ];
    for (what, text) in &updates {
        let r = update(&server, text);
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        assert!(reason(&r).contains("deeper than") || reason(&r).contains("operators"), "{what}: {}", r.text());
        assert_up(&server, what);
    }
}

#[test]
fn long_chains_within_the_limits_run() {
    let (_dir, server) = server_with_db(&[]);
    let optionals = format!("SELECT * {{ ?s ?p ?o {} }}", "OPTIONAL { ?s ?p ?o } ".repeat(3000));
    let r = query(&server, &optionals);
    assert_eq!(r.status, 200, "3,000 OPTIONALs: {}", r.text());
    let deleted = format!("DELETE {{ GRAPH <http://e/g> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <http://e/g> {{ ?s ?p ?o }} {} }}", "OPTIONAL { ?s ?p ?o } ".repeat(3000));
    let r = update(&server, &deleted);
    assert_eq!(r.status, 200, "3,000 OPTIONALs in an update: {}", r.text());
    let r = query(&server, "ASK { GRAPH <http://e/g> { ?s ?p ?o } }");
    assert!(r.text().contains("false"), "the update ran: {}", r.text());
}

/// `BIND(CONCAT(?v, ?v))` `rounds` times from a string of `bytes`.
fn doubling(bytes: usize, rounds: usize) -> String {
    let binds: String = (0..rounds).map(|i| format!("BIND(CONCAT(?v{i}, ?v{i}) AS ?v{})\n", i + 1)).collect();
    format!("SELECT (STRLEN(?v{rounds}) AS ?n) {{ BIND(\"{}\" AS ?v0)\n{binds}}}", "x".repeat(bytes))
}

#[test]
fn strings_built_by_expressions_stop_at_the_memory_limit() {
    let (_dir, server) = server_with_db(&[]);
    let r = query(&server, &doubling(1024, 4));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("16384"), "{}", r.text());
    // 20 rounds from 1 KiB is a 1 GiB string.
    let r = query(&server, &doubling(1024, 20));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(reason(&r).contains("memory limit of"), "{}", r.text());
    assert_up(&server, "a 1 GiB CONCAT");
    let replace = format!("SELECT (STRLEN(REPLACE(REPLACE(?v, \"x\", \"{r}\"), \"y\", \"{r}\")) AS ?n) {{ BIND(\"{}\" AS ?v) }}", "x".repeat(100_000), r = "y".repeat(3000));
    let r = query(&server, &replace);
    assert_eq!(r.status, 400, "REPLACE growing a 100 KB string 9,000,000 times: {}", r.text());
    assert!(reason(&r).contains("memory limit of"), "{}", r.text());
    // The same from an update: refused, nothing written.
    let text = doubling(1024, 20).replacen("SELECT (STRLEN(?v20) AS ?n)", "INSERT { GRAPH <http://e/big> { <http://e/s> <http://e/p> ?v20 } } WHERE", 1);
    let r = update(&server, &text);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(reason(&r).contains("memory limit of"), "{}", r.text());
    let r = query(&server, "ASK { GRAPH <http://e/big> { ?s ?p ?o } }");
    assert!(r.text().contains("false"), "nothing written: {}", r.text());
    assert_up(&server, "an update building a 1 GiB string");
}

fn file_iri(path: &Path) -> String {
    format!("file://{}", path.display())
}

#[test]
fn load_of_files_is_refused_without_load_dir_and_http_always() {
    let (dir, server) = server_with_db(&[]);
    let secret = dir.path().join("secret.nt");
    std::fs::write(&secret, "this is SECRET-CONTENT and not N-Triples\n").unwrap();
    for iri in [file_iri(&secret), file_iri(&dir.path().join("missing.nt"))] {
        let r = update(&server, &format!("LOAD <{iri}> INTO GRAPH <http://e/leak>"));
        assert_eq!(r.status, 400, "{}", r.text());
        let reason = reason(&r);
        assert!(reason.contains("off on this server"), "{reason}");
        assert!(!reason.contains("SECRET") && !reason.contains(&dir.path().display().to_string()), "{reason}");
    }
    let r = update(&server, "LOAD <http://127.0.0.1:1/data.nt>");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(reason(&r).contains("http"), "{}", r.text());
    assert_up(&server, "refused LOADs");
}

#[test]
fn load_reads_only_inside_the_load_dir_and_refusals_reveal_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("load");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(folder.join("in.nt"), "<http://e/a> <http://e/b> <http://e/c> .\n").unwrap();
    std::fs::write(folder.join("big.nt"), "<http://e/a> <http://e/b> \"0123456789\" .\n".repeat(200)).unwrap();
    std::fs::write(folder.join("bad.nt"), "<http://e/a> <http://e/b> broken\n").unwrap();
    std::fs::write(outside.join("secret.nt"), "this is SECRET-CONTENT and not N-Triples\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.join("secret.nt"), folder.join("link.nt")).unwrap();
    let folder_text = folder.display().to_string();
    let (_data, server) = {
        let data = tempfile::tempdir().unwrap();
        let server = ServerProcess::start_with_env(data.path(), &[("RHIZOME_LOAD_DIR", &folder_text), ("RHIZOME_LOAD_MAX_BYTES", "4096")]);
        assert_eq!(server.request("PUT", "/db", Some(ADMIN), None).0, 201);
        (data, server)
    };
    let r = update(&server, &format!("LOAD <{}> INTO GRAPH <http://e/loaded>", file_iri(&folder.join("in.nt"))));
    assert_eq!(r.status, 200, "a file inside the folder loads: {}", r.text());
    let r = query(&server, "ASK { GRAPH <http://e/loaded> { <http://e/a> <http://e/b> <http://e/c> } }");
    assert!(r.text().contains("true"), "{}", r.text());

    // Outside the folder, existing or not, by `..`, by a symbolic link, by
    // a host: one and the same answer.
    let refused = [
        file_iri(&outside.join("secret.nt")),
        file_iri(&outside.join("missing.nt")),
        format!("file://{folder_text}/../outside/secret.nt"),
        format!("file://{folder_text}/../outside/missing.nt"),
        file_iri(&folder.join("link.nt")),
        file_iri(&folder.join("missing.nt")),
        format!("file://otherhost{}", outside.join("secret.nt").display()),
        "file:///etc/passwd".to_owned(),
    ];
    let mut reasons = Vec::new();
    for iri in &refused {
        let r = update(&server, &format!("LOAD <{iri}> INTO GRAPH <http://e/leak>"));
        assert_eq!(r.status, 400, "{iri}: {}", r.text());
        let reason = reason(&r);
        assert!(!reason.contains("SECRET") && !reason.contains(&dir.path().display().to_string()) && !reason.contains("/etc"), "{iri}: {reason}");
        reasons.push(reason.replace("secret.nt", "NAME").replace("missing.nt", "NAME").replace("link.nt", "NAME").replace("passwd", "NAME"));
    }
    assert!(reasons.windows(2).all(|w| w[0] == w[1]), "every refusal reads the same: {reasons:?}");
    let r = query(&server, "ASK { GRAPH <http://e/leak> { ?s ?p ?o } }");
    assert!(r.text().contains("false"), "{}", r.text());

    let r = update(&server, &format!("LOAD <{}>", file_iri(&folder.join("big.nt"))));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(reason(&r).contains("larger than the load limit of 4096 bytes"), "{}", r.text());
    let r = update(&server, &format!("LOAD <{}>", file_iri(&folder.join("bad.nt"))));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(!reason(&r).contains(&folder_text), "{}", r.text());
    let r = update(&server, "LOAD <https://127.0.0.1:1/data.nt>");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(reason(&r).contains("http"), "{}", r.text());
    assert_up_plain(&server);
}

fn assert_up_plain(server: &ServerProcess) {
    assert_eq!(server.request("GET", "/_up", None, None).0, 200);
}

#[test]
fn the_cli_refuses_deep_queries_cleanly_and_loads_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("store");
    common::output_ok(common::rhizome(&data).args(["init"]));
    let deep = dir.path().join("deep.rq");
    std::fs::write(&deep, format!("SELECT * {}", nested("{ ", "?s ?p ?o", " }", 2000))).unwrap();
    let o = common::run(common::rhizome(&data).args(["query", "--file"]).arg(&deep));
    assert_eq!(o.status.code(), Some(1), "a clean failure, not a crash: {}", common::stderr(&o));
    assert!(common::stderr(&o).contains("deeper than"), "{}", common::stderr(&o));
    let unions = format!("SELECT * {{ {} }}", chain("{ ?s ?p ?o }", " UNION ", 20_000));
    let update = dir.path().join("unions.ru");
    std::fs::write(&update, format!("DELETE {{ ?s ?p ?o }} WHERE {unions}")).unwrap();
    let o = common::run(common::rhizome(&data).args(["update", "--file"]).arg(&update));
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    // The CLI's user owns the store and the files: LOAD reads local files.
    let file = dir.path().join("local.nt");
    std::fs::write(&file, "<http://e/a> <http://e/b> <http://e/c> .\n").unwrap();
    common::output_ok(common::rhizome(&data).args(["update", &format!("LOAD <{}>", file_iri(&file))]));
    let out = common::output_ok(common::rhizome(&data).args(["query", "--format", "csv", "SELECT ?o { <http://e/a> <http://e/b> ?o }"]));
    assert!(out.contains("http://e/c"), "{out}");
}
