//! `rhizome query` and `rhizome update` as a user meets them.

mod common;

use common::{rhizome, run, stdout, stderr};





#[test]
fn query_and_update_have_help() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["query", "update"] {
        let o = run(rhizome(dir.path()).args([sub, "--help"]));
        assert!(o.status.success(), "{sub} --help failed");
        assert!(stdout(&o).contains("Usage: rhizome"), "{sub} --help: {}", stdout(&o));
    }
}

#[test]
fn a_query_syntax_error_shows_line_column_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(rhizome(dir.path()).args(["query", "SELECT ?x\nWHERE { ?x ?p }"]));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("2:") && err.contains("expected"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_request_needs_text_or_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(rhizome(dir.path()).args(["update"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no request"), "{}", stderr(&o));
}

/// The whole round trip needs an on-disk store (the embedded backend).
#[cfg(feature = "rocksdb")]
#[test]
fn an_update_then_a_query_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    assert!(run(rhizome(&data).arg("init")).status.success());
    let o = run(rhizome(&data).args(["update", "PREFIX : <http://ex/> INSERT DATA { :a :age 30 . :b :age 41 }"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let q = "PREFIX : <http://ex/> SELECT ?s ?age { ?s :age ?age } ORDER BY ?age";
    let csv = stdout(&run(rhizome(&data).args(["query", q, "--format", "csv"])));
    assert_eq!(csv.replace("\r\n", "\n"), "s,age\nhttp://ex/a,30\nhttp://ex/b,41\n");
    let json = stdout(&run(rhizome(&data).args(["query", q, "--format", "json"])));
    assert!(json.contains(r#""vars":["s","age"]"#), "{json}");
    let nt = stdout(&run(rhizome(&data).args(["query", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "--format", "ntriples"])));
    assert_eq!(nt.lines().count(), 2, "{nt}");
    let explain = stdout(&run(rhizome(&data).args(["query", q, "--explain"])));
    assert!(explain.contains("rows"), "{explain}");
}
