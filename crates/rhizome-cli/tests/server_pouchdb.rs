//! The real PouchDB (npm, installed by `scripts/setup` into
//! `tests/pouchdb/node_modules`) against the real `rhizome serve`: the
//! scripts in `tests/pouchdb/` exit non-zero on the first failed check.

mod common;

use common::server::{ServerProcess, ADMIN};
use common::{output_ok, rhizome};
use std::path::PathBuf;
use std::process::Command;

fn pouchdb_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/pouchdb")
}

fn run_script(server: &ServerProcess, script: &str, env: &[(&str, &str)]) {
    let dir = pouchdb_dir();
    assert!(
        dir.join("node_modules/pouchdb").is_dir(),
        "PouchDB is not installed in {}: run ./scripts/setup (it runs npm ci there)",
        dir.display()
    );
    let status = Command::new("node")
        .arg(script)
        .current_dir(&dir)
        .env("RHIZOME_URL", server.url(ADMIN))
        .envs(env.iter().copied())
        .status()
        .expect("node runs (scripts/setup installs it)");
    assert!(status.success(), "{script} failed against rhizome serve");
}

#[test]
fn pouchdb_crud_bulk_changes_attachments_and_conflicts() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    run_script(&server, "crud.js", &[]);
}

#[test]
fn pouchdb_find_creates_indexes_queries_explains_and_deletes_them() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    run_script(&server, "find.js", &[]);
}

#[test]
fn pouchdb_meets_couchdbs_document_rules_local_documents_and_object_member_ids() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    run_script(&server, "rules.js", &[]);
}

#[test]
fn pouchdb_db_query_answers_as_pouchdbs_own_map_reduce_engine() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    run_script(&server, "views.js", &[]);
}

#[test]
fn pouchdb_push_pull_and_live_sync_of_10000_documents_agree_on_every_winner() {
    let data = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(data.path());
    run_script(&server, "sync.js", &[("SYNC_DOCS", "10000")]);
}

#[test]
fn pouchdb_reads_rdf_loaded_subjects_and_sparql_finds_pouchdb_documents() {
    let data = tempfile::tempdir().unwrap();
    let nt = data.path().join("people.nt");
    std::fs::write(
        &nt,
        "<http://example.org/bob> <http://xmlns.com/foaf/0.1/name> \"Bob\" .\n\
         <http://example.org/bob> <http://xmlns.com/foaf/0.1/knows> <http://example.org/carol> .\n\
         <http://example.org/carol> <http://xmlns.com/foaf/0.1/name> \"Carol\"@en .\n",
    )
    .unwrap();
    let dir = data.path().join("server");
    let out = output_ok(rhizome(&dir).args(["load", "--quiet", "--db", "people"]).arg(&nt));
    assert!(out.contains("2 new documents"), "{out}");
    let server = ServerProcess::start(&dir);
    run_script(&server, "rdf.js", &[("RDF_DB", "people"), ("RDF_SUBJECT", "http://example.org/bob")]);
}
