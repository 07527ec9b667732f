//! Crash safety, tested by killing real processes with SIGKILL (never by
//! mocking the disk): a load killed in each of its phases and at several
//! times, and a process killed in the middle of small committed writes.
//! After each kill the store reopens with every committed write and no
//! partial one.

mod common;

use common::{output_ok, rhizome};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;



/// Quads counted by a full scan, and by the store's counter: they must agree.
fn quad_count(data: &Path) -> u64 {
    let scanned: u64 = output_ok(rhizome(data).args(["quads", "--count"])).trim().parse().expect("a count");
    let stats: serde_json::Value = serde_json::from_str(&output_ok(rhizome(data).arg("stats"))).expect("stats JSON");
    assert_eq!(stats["quads"].as_u64(), Some(scanned), "counter and scan disagree");
    scanned
}

fn write_triples(dir: &Path, name: &str, round: usize, n: usize) -> PathBuf {
    let path = dir.join(name);
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..n {
        writeln!(w, "<http://crash.example/r{round}/s{}> <http://crash.example/p{}> \"value {i} of round {round}\" .", i / 5, i % 7).unwrap();
    }
    w.flush().unwrap();
    path
}

/// Starts a load and kills it when it reports `phase` (or, with no phase,
/// after `delay`). Returns whether the load had finished by itself.
fn kill_load(data: &Path, file: &Path, phase: Option<&str>, delay: Duration) -> bool {
    let mut child = rhizome(data)
        .args(["load", "--quiet"])
        .arg(file)
        .env("RHIZOME_LOAD_TRACE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("load starts");
    match phase {
        Some(phase) => {
            let stderr = BufReader::new(child.stderr.take().expect("piped"));
            let marker = format!("rhizome-load-phase: {phase}");
            let mut seen = false;
            for line in stderr.lines() {
                if line.expect("stderr line") == marker {
                    seen = true;
                    break;
                }
            }
            assert!(seen, "the load never reached phase {phase}");
        }
        None => std::thread::sleep(delay),
    }
    let finished = child.try_wait().expect("wait works").is_some();
    let _ = child.kill(); // SIGKILL
    child.wait().expect("child reaped");
    finished
}

#[test]
fn load_is_all_or_nothing_when_killed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let base = write_triples(dir.path(), "base.nt", 0, 10);
    output_ok(rhizome(&data).args(["load", "--quiet"]).arg(&base));
    let mut expected = quad_count(&data);
    assert_eq!(expected, 10);
    let n = 200_000;
    // Killed before its data is ingested, a load leaves nothing.
    for (round, phase) in ["parsed", "written"].into_iter().enumerate() {
        let file = write_triples(dir.path(), "big.nt", round + 1, n);
        kill_load(&data, &file, Some(phase), Duration::ZERO);
        assert_eq!(quad_count(&data), expected, "killed after {phase}: nothing of it may remain");
    }
    // Killed right after ingestion returned, a load is all there.
    let file = write_triples(dir.path(), "big.nt", 3, n);
    kill_load(&data, &file, Some("ingested"), Duration::ZERO);
    expected += n as u64;
    assert_eq!(quad_count(&data), expected, "killed after ingestion: all of it must be there");
    // Killed at arbitrary times: all or nothing.
    for (i, ms) in [5u64, 60, 200, 500, 1200].into_iter().enumerate() {
        let file = write_triples(dir.path(), "big.nt", 10 + i, n);
        kill_load(&data, &file, None, Duration::from_millis(ms));
        let now = quad_count(&data);
        assert!(now == expected || now == expected + n as u64, "after a kill at {ms} ms: {now} quads, expected {expected} or {}", expected + n as u64);
        expected = now;
    }
    // The store still takes loads.
    let file = write_triples(dir.path(), "last.nt", 99, 1000);
    output_ok(rhizome(&data).args(["load", "--quiet"]).arg(&file));
    assert_eq!(quad_count(&data), expected + 1000);
}

fn subjects_with(data: &Path, predicate: &str) -> std::collections::BTreeSet<u64> {
    output_ok(rhizome(data).args(["quads", "-p", predicate]))
        .lines()
        .map(|l| {
            let s = l.split_whitespace().next().expect("a subject");
            s.trim_start_matches("<http://probe.example/tx").trim_end_matches('>').parse().expect("a transaction number")
        })
        .collect()
}

#[test]
fn committed_small_writes_survive_sigkill_and_none_is_partial() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let mut next = 0u64;
    let mut reported = std::collections::BTreeSet::new();
    for round in 0..3 {
        let mut child = rhizome(&data)
            .args(["write-probe", "--count", "1000000", "--start", &next.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("probe starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let want = 30 + round * 20;
        let mut seen = 0;
        while seen < want {
            let line = lines.next().expect("probe still writing").expect("a line");
            let i: u64 = line.strip_prefix("committed ").expect("a commit line").parse().expect("a number");
            reported.insert(i);
            seen += 1;
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        // Lines already written before the kill are commits too.
        for line in lines.map_while(Result::ok) {
            if let Some(i) = line.strip_prefix("committed ") {
                reported.insert(i.parse().expect("a number"));
            }
        }
        let a = subjects_with(&data, "<http://probe.example/a>");
        let b = subjects_with(&data, "<http://probe.example/b>");
        assert_eq!(a, b, "a transaction is there in part");
        assert!(reported.is_subset(&a), "a reported commit is missing: {:?}", reported.difference(&a).collect::<Vec<_>>());
        // At most the one transaction in flight may be there unreported.
        assert!(a.len() <= reported.len() + 1, "{} transactions stored, {} reported", a.len(), reported.len());
        assert_eq!(quad_count(&data), 2 * a.len() as u64);
        next = a.iter().max().map_or(0, |m| m + 1);
        reported = a;
    }
}
