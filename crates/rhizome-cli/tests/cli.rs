//! The command line as a user meets it: help, errors, and the commands'
//! output formats.

mod common;

use common::{output_ok, rhizome, run, stderr, stdout};
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};





fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/faculty.ttl")
}

#[test]
fn every_subcommand_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["init", "load", "quads", "dump", "stats", "compact"] {
        let o = run(rhizome(dir.path()).args([sub, "--help"]));
        assert!(o.status.success(), "{sub} --help failed");
        assert!(stdout(&o).contains("Usage: rhizome"), "{sub} --help: {}", stdout(&o));
    }
    let o = run(rhizome(dir.path()).arg("--help"));
    for sub in ["init", "load", "quads", "dump", "stats", "compact"] {
        assert!(stdout(&o).contains(sub));
    }
}

fn assert_clean_failure(o: &Output, needle: &str) {
    assert!(!o.status.success(), "expected a failure");
    let err = stderr(o);
    assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
    assert!(!err.contains("panicked"), "a panic: {err}");
}

#[test]
fn bad_invocations_fail_with_clear_messages() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    assert_clean_failure(&run(rhizome(&data).args(["load", "--bogus", "x.nt"])), "--bogus");
    assert_clean_failure(&run(rhizome(&data).args(["load", "/no/such/file.nt"])), "/no/such/file.nt");
    assert!(!data.exists(), "a failed load must not leave an empty store behind");
    assert_clean_failure(&run(rhizome(&dir.path().join("none")).args(["quads"])), "no Rhizome store");
    assert_clean_failure(&run(rhizome(&data).args(["load", "--format", "klingon", "x"])), "unknown format");
    output_ok(rhizome(&data).args(["init"]));
    assert_clean_failure(&run(rhizome(&data).args(["quads", "-s", "not a term"])), "N-Triples syntax");
    assert_clean_failure(&run(rhizome(&data).args(["init"])), "already");
}


#[test]
fn a_syntax_error_names_the_place_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    output_ok(rhizome(&data).arg("load").arg(sample()));
    let before = output_ok(rhizome(&data).args(["quads", "--count"]));
    let bad = dir.path().join("bad.ttl");
    std::fs::write(&bad, "@prefix e: <http://e/> .\ne:a e:b e:c .\ne:a e:b \"oops .\n").unwrap();
    let o = run(rhizome(&data).arg("load").arg(&bad));
    assert_clean_failure(&o, "bad.ttl:3:");
    assert_eq!(output_ok(rhizome(&data).args(["quads", "--count"])), before);
    let o = run(rhizome(&data).args(["load", "--lenient"]).arg(&bad));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipped 1 bad statement"), "{}", stderr(&o));
}

#[test]
fn load_quads_dump_and_stats_work_together() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let summary = output_ok(rhizome(&data).arg("load").arg(sample()));
    assert!(summary.starts_with("loaded "), "{summary}");
    let teaches = output_ok(rhizome(&data).args(["quads", "-p", "<http://www.unifr.ch/faculty.owl#teaches>"]));
    assert_eq!(teaches.lines().count(), 3, "{teaches}");
    for line in teaches.lines() {
        // Subject-graph triples are quads in their subject's graph.
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts[0], parts[3], "{line}");
        assert!(line.ends_with(" ."));
    }
    let ects = output_ok(rhizome(&data).args(["quads", "-o", "\"5\"^^<http://www.w3.org/2001/XMLSchema#integer>"]));
    assert!(ects.contains("#Databases>"), "{ects}");
    let fr = output_ok(rhizome(&data).args(["quads", "-o", "\"Bases de données\"@fr", "--count"]));
    assert_eq!(fr.trim(), "1");
    let stats: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).arg("stats"))).unwrap();
    for k in ["quads", "terms", "graphs", "bytes_on_disk"] {
        assert!(stats[k].as_u64().is_some_and(|v| v > 0), "stats lacks {k}: {stats}");
    }
    let total = stats["quads"].as_u64().unwrap();
    // Per predicate, whether its values are counted: `teaches` (three
    // quads) is: a count for each of its objects.
    let per: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).args(["stats", "--predicates"]))).unwrap();
    let teaches = per["per_predicate"].as_array().unwrap().iter().find(|p| p["predicate"] == "<http://www.unifr.ch/faculty.owl#teaches>").unwrap();
    assert_eq!(teaches["counted_values"], teaches["distinct_objects"], "{teaches}");
    for format in ["nquads", "trig", "ntriples", "turtle", "rdfxml"] {
        let out = dir.path().join(format!("dump.{format}"));
        output_ok(rhizome(&data).args(["dump", "--format", format, "--output"]).arg(&out));
        let copy = dir.path().join(format!("copy-{format}"));
        let loaded = output_ok(rhizome(&copy).args(["load", "--json", "--format", format]).arg(&out));
        let loaded: serde_json::Value = serde_json::from_str(&loaded).unwrap();
        assert_eq!(loaded["quads_added"].as_u64(), Some(total), "{format} dump does not load back");
    }
    let graph = output_ok(rhizome(&data).args(["dump", "--format", "ntriples", "--graph", "http://www.unifr.ch/faculty.owl#Databases"]));
    assert_eq!(graph.lines().count(), 6, "{graph}");
    output_ok(rhizome(&data).arg("compact"));
    assert_eq!(output_ok(rhizome(&data).args(["quads", "--count"])).trim(), total.to_string());
}

/// A load that spills sorted runs (a 1 MiB buffer) holds what a load in
/// memory holds, counters and dump alike; a buffer size that is not one is
/// refused before anything is read.
#[test]
fn a_load_buffer_too_small_for_the_file_spills_and_loads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.nt");
    let mut nt = String::new();
    for i in 0..60_000 {
        nt.push_str(&format!("<http://e/s{}> <http://e/p{}> <http://e/o{}> .\n", i % 7_919, i % 13, i % 5_003));
    }
    std::fs::write(&file, nt).unwrap();
    let mut dumps = Vec::new();
    for buffer in [None, Some("1048576")] {
        let data = dir.path().join(format!("db-{buffer:?}"));
        let mut cmd = rhizome(&data);
        if let Some(b) = buffer {
            cmd.env("RHIZOME_LOAD_BUFFER_BYTES", b);
        }
        let loaded: serde_json::Value = serde_json::from_str(&output_ok(cmd.args(["load", "--json"]).arg(&file))).unwrap();
        assert_eq!(loaded["quads_added"].as_u64(), Some(60_000), "{loaded}");
        assert_eq!(output_ok(rhizome(&data).args(["quads", "--count"])).trim(), "60000");
        let stats: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).args(["stats", "--predicates"]))).unwrap();
        let mut dump: Vec<String> = output_ok(rhizome(&data).args(["dump", "--format", "nquads"])).lines().map(str::to_owned).collect();
        dump.sort();
        dumps.push((dump, stats["per_predicate"].clone()));
    }
    assert!(dumps[0] == dumps[1], "a spilled load differs from one in memory");
    let o = run(rhizome(&dir.path().join("db-bad")).env("RHIZOME_LOAD_BUFFER_BYTES", "lots").arg("load").arg(&file));
    assert!(!o.status.success() && stderr(&o).contains("RHIZOME_LOAD_BUFFER_BYTES"), "{}", stderr(&o));
}

#[test]
fn stdin_loads_with_a_format() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let mut child = rhizome(&data)
        .args(["load", "--format", "ntriples", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"<http://e/a> <http://e/p> <http://e/b> .\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("loaded 1 quads"), "{}", stdout(&o));
    assert_clean_failure(&run(rhizome(&data).args(["load", "-"]).stdin(Stdio::null())), "--format");
}

#[test]
fn plain_stores_keep_a_default_graph() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    output_ok(rhizome(&data).args(["init", "--plain"]));
    output_ok(rhizome(&data).arg("load").arg(sample()));
    let all = output_ok(rhizome(&data).args(["quads", "--count"]));
    let default = output_ok(rhizome(&data).args(["quads", "-g", "default", "--count"]));
    assert_eq!(all, default);
    let nq = output_ok(rhizome(&data).args(["quads", "--limit", "1"]));
    assert_eq!(nq.split(' ').count(), 4, "default-graph quads have no graph term: {nq}");
}

#[test]
fn queries_open_the_store_read_only_and_wait_for_no_writer() {
    // `query`, `quads`, `dump` and `stats` open the store read-only: they
    // write nothing to it (no new manifest or log file), and a store a
    // server holds is refused with a clear message, as writes are.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    output_ok(rhizome(&data).arg("load").arg(sample()));
    let files = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("LOG")) // the engine's info log
            .collect();
        names.sort();
        names
    };
    let before = files();
    let q = "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }";
    let count = output_ok(rhizome(&data).args(["query", "--format", "tsv", q]));
    output_ok(rhizome(&data).args(["quads", "--count"]));
    output_ok(rhizome(&data).arg("stats"));
    output_ok(rhizome(&data).args(["dump", "--format", "nquads"]));
    assert_eq!(files(), before, "a read-only command changed the store's files");
    // A load reading from a pipe holds the store open until its input ends.
    // A query that opens the store first makes the load fail the same way
    // (each refuses the other): then the load is started again, given a
    // little longer each time to open the store first (on a busy machine
    // a process takes a while to start).
    let mut held = None;
    for attempt in 0..20u64 {
        let mut writer = rhizome(&data).args(["load", "--format", "ntriples", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let mut input = writer.stdin.take().unwrap();
        input.write_all(b"<http://e/s> <http://e/p> <http://e/o> .\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(25 * attempt));
        let mut refused = None;
        for _ in 0..200 {
            if writer.try_wait().unwrap().is_some() {
                break; // it lost the race: start it again
            }
            let o = run(rhizome(&data).args(["query", "--format", "tsv", q]));
            if !o.status.success() {
                refused = Some(o);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        match refused {
            Some(o) => {
                held = Some((writer, input, o));
                break;
            }
            None => {
                let _ = writer.kill();
                let _ = writer.wait();
            }
        }
    }
    let (mut writer, input, refused) = held.expect("a query while a load holds the store is refused");
    assert_clean_failure(&refused, "in use by another process");
    drop(input);
    assert!(writer.wait().unwrap().success());
    let after = output_ok(rhizome(&data).args(["query", "--format", "tsv", q]));
    assert_ne!(after, count, "the load's triple is seen once the load is done");
}

/// The binary turns transparent huge pages off for itself (mimalloc's huge
/// pages cost a 2 MiB fault after each purge; bench/measured-changes.md
/// "Huge pages off"), unless the user's `MIMALLOC_ALLOW_THP` says otherwise.
#[cfg(target_os = "linux")]
#[test]
fn the_server_runs_without_transparent_huge_pages_unless_told() {
    use common::server::ServerProcess;
    let thp = |server: &ServerProcess| {
        let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("the kernel reports THP_enabled").to_owned();
        line.split_whitespace().nth(1).unwrap().to_owned()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path());
    assert_eq!(thp(&server), "0", "huge pages off by default");
    server.kill();
    let mut server = ServerProcess::start_with_env(dir.path(), &[("MIMALLOC_ALLOW_THP", "1")]);
    assert_eq!(thp(&server), "1", "the user's MIMALLOC_ALLOW_THP wins");
    server.kill();
}
