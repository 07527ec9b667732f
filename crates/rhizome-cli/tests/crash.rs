//! Crash safety, tested by killing real processes with SIGKILL (never by
//! mocking the disk): a load killed in each of its phases and at several
//! times, a process killed in the middle of small committed writes, and
//! SPARQL updates of every kind (INSERT DATA, INSERT/DELETE ... WHERE, LOAD,
//! MOVE) killed at random moments. After each kill the store reopens with every committed write and no
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
    kill_load_into(data, None, file, phase, delay)
}

/// [`kill_load`], into database `db` (`load --db`) when given.
fn kill_load_into(data: &Path, db: Option<&str>, file: &Path, phase: Option<&str>, delay: Duration) -> bool {
    let mut cmd = rhizome(data);
    cmd.args(["load", "--quiet"]);
    if let Some(db) = db {
        cmd.args(["--db", db]);
    }
    let mut child = cmd
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

/// A load into a new database, killed while its subjects become
/// documents (before and after the documents are ingested, and at several
/// times), then run again: every subject is a document once, and the
/// database's counters and changes agree.
#[test]
fn a_load_killed_while_making_documents_is_completed_by_the_next() {
    let n = 30_000;
    for (round, (phase, ms)) in [(Some("documents-written"), 0u64), (Some("documents-ingested"), 0), (None, 300), (None, 900), (None, 1500)].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let file = write_triples(dir.path(), "people.nt", round, n * 5);
        let finished = kill_load_into(&data, Some("people"), &file, phase, Duration::from_millis(ms));
        let again: serde_json::Value = serde_json::from_str(&output_ok(rhizome(&data).args(["load", "--quiet", "--json", "--db", "people"]).arg(&file))).unwrap();
        let server = common::server::ServerProcess::start(&data);
        let (status, info) = server.request("GET", "/people", Some(common::server::ADMIN), None);
        assert_eq!(status, 200, "{info}");
        let info: serde_json::Value = serde_json::from_str(&info).unwrap();
        let context = format!("killed at {phase:?} / {ms} ms (finished by itself: {finished}), loaded again: {again}");
        assert_eq!(info["doc_count"], serde_json::json!(n), "{context}");
        assert_eq!(info["update_seq"].as_u64().map(|s| s >= n as u64), Some(true), "{context}");
        let (_, changes) = server.request("GET", "/people/_changes", Some(common::server::ADMIN), None);
        let changes: serde_json::Value = serde_json::from_str(&changes).unwrap();
        let mut ids: Vec<&str> = changes["results"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{context}: one change per document");
        let (status, doc) = server.request("GET", &format!("/people/{}", "http:%2F%2Fcrash.example%2Fr{round}%2Fs7".replace("{round}", &round.to_string())), Some(common::server::ADMIN), None);
        assert_eq!(status, 200, "{context}: {doc}");
        if phase == Some("documents-ingested") {
            assert_eq!(again["documents_added"], serde_json::json!(0), "{context}: the documents were all there");
        }
    }
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
    // Rounds after the first flush every few commits: the engine's logs
    // are switched and written over (recycled), so the kill lands in a log
    // whose tail still holds an older log's records.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let mut next = 0u64;
    let mut reported = std::collections::BTreeSet::new();
    for round in 0..3 {
        let mut child = rhizome(&data)
            .args(["write-probe", "--count", "1000000", "--start", &next.to_string()])
            .args(["--flush-every", if round == 0 { "0" } else { "7" }])
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

/// Small writes with the quad indexes' delta merged into new segments
/// every few commits (called by the probe, and in the background past a
/// tiny delta), killed at random points: after a number of commits and a
/// random pause, or inside a merge (a pause after its `merging` line). At
/// least 100 kill points (`RHIZOME_CRASH_POINTS` for more); after each
/// the store has every reported commit, none in part, and its orderings
/// agree (`rhizome check` every few rounds and at the end).
#[test]
fn writes_and_merges_killed_at_random_points_lose_nothing_committed() {
    let points: usize = std::env::var("RHIZOME_CRASH_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(110);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let mut rng = Rng(0x5EED_0046_0001);
    let mut next = 0u64;
    let mut stored = std::collections::BTreeSet::new();
    let mut in_merge = 0;
    for round in 0..points {
        let merge_every = 2 + rng.below(4);
        let mut child = rhizome(&data)
            .args(["write-probe", "--count", "1000000", "--start", &next.to_string(), "--merge-every", &merge_every.to_string()])
            .env("RHIZOME_DELTA_QUADS", "6")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("probe starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut reported = stored.clone();
        let kill_in_merge = rng.below(2) == 0;
        let commits = rng.below(12);
        let mut seen = 0;
        loop {
            let Some(Ok(line)) = lines.next() else { panic!("round {round}: the probe stopped writing") };
            if let Some(i) = line.strip_prefix("committed ") {
                reported.insert(i.parse::<u64>().expect("a number"));
                seen += 1;
            }
            if seen >= commits && (!kill_in_merge || line.starts_with("merging ")) {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        // A merge was under way unless its end was printed before the kill.
        let mut merge_open = kill_in_merge;
        for line in lines.map_while(Result::ok) {
            if let Some(i) = line.strip_prefix("committed ") {
                reported.insert(i.parse().expect("a number"));
            }
            merge_open = line.starts_with("merging ") || (merge_open && !line.starts_with("merged "));
        }
        in_merge += merge_open as usize;
        let mut a = std::collections::BTreeSet::new();
        let mut b = std::collections::BTreeSet::new();
        for line in output_ok(rhizome(&data).arg("quads")).lines() {
            let mut parts = line.split_whitespace();
            let s = parts.next().expect("a subject");
            let p = parts.next().expect("a predicate");
            let i: u64 = s.trim_start_matches("<http://probe.example/tx").trim_end_matches('>').parse().expect("a transaction number");
            match p {
                "<http://probe.example/a>" => assert!(a.insert(i), "round {round}: a quad twice"),
                "<http://probe.example/b>" => assert!(b.insert(i), "round {round}: a quad twice"),
                other => panic!("round {round}: an unknown predicate {other}"),
            }
        }
        assert_eq!(a, b, "round {round}: a transaction is there in part");
        assert!(reported.is_subset(&a), "round {round}: a reported commit is missing: {:?}", reported.difference(&a).collect::<Vec<_>>());
        assert!(a.len() <= reported.len() + 1, "round {round}: {} transactions stored, {} reported", a.len(), reported.len());
        if round % 10 == 9 || round + 1 == points {
            output_ok(rhizome(&data).arg("check"));
            assert_eq!(quad_count(&data), 2 * a.len() as u64, "round {round}");
        }
        next = a.iter().max().map_or(0, |m| m + 1);
        stored = a;
    }
    eprintln!("{points} kills, {in_merge} of them inside a merge; {} transactions stored", stored.len());
    assert!(in_merge >= points / 5, "only {in_merge} of {points} kills landed inside a merge");
}

// ---------------------------------------------------------------- SPARQL Update

const BATCH: &str = "<http://crash.example/batch>";
const HALF: &str = "<http://crash.example/half>";
const MOVED: &str = "<http://crash.example/moved>";

/// A small deterministic generator (xorshift64*): a fixed seed, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Triples of batch `b`: `n` subjects, each with a `batch` and a `half`
/// triple carrying the batch number, so a batch is whole when both counts
/// are `n`.
fn batch_triples(b: u64, n: usize) -> String {
    let mut s = String::with_capacity(n * 150);
    for i in 0..n {
        s.push_str(&format!("<http://crash.example/b{b}/s{i}> {BATCH} {b} ; {HALF} {b} .\n"));
    }
    s
}

/// Per batch number, the counts of its `batch` and `half` triples.
fn batches(data: &Path) -> std::collections::BTreeMap<u64, (u64, u64)> {
    let q = format!("SELECT ?p ?b (COUNT(*) AS ?n) WHERE {{ ?s ?p ?b FILTER(?p IN ({BATCH}, {HALF})) }} GROUP BY ?p ?b");
    let mut out = std::collections::BTreeMap::new();
    for line in output_ok(rhizome(data).args(["query", &q, "--format", "tsv"])).lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let b: u64 = cols[1].parse().expect("a batch number");
        let n: u64 = cols[2].parse().expect("a count");
        let e = out.entry(b).or_insert((0, 0));
        if cols[0] == BATCH {
            e.0 = n;
        } else {
            e.1 = n;
        }
    }
    out
}

/// Per graph, the number of `moved` triples in it.
fn moved_graphs(data: &Path) -> std::collections::BTreeMap<String, u64> {
    let q = format!("SELECT ?g (COUNT(*) AS ?n) WHERE {{ GRAPH ?g {{ ?s {MOVED} ?o }} }} GROUP BY ?g");
    output_ok(rhizome(data).args(["query", &q, "--format", "tsv"]))
        .lines()
        .skip(1)
        .map(|l| {
            let (g, n) = l.split_once('\t').expect("two columns");
            (g.to_owned(), n.parse().expect("a count"))
        })
        .collect()
}

/// Runs `rhizome update --file request` and SIGKILLs it after `delay`
/// unless it finished first; returns whether it finished successfully
/// (acknowledged).
fn update_killed_after(data: &Path, request: &Path, delay: Duration) -> bool {
    let mut child = rhizome(data)
        .args(["update", "--file"])
        .arg(request)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("update starts");
    let deadline = std::time::Instant::now() + delay;
    loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            return status.success();
        }
        if std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill(); // SIGKILL
    let status = child.wait().expect("child reaped");
    // It may have exited between the last poll and the kill.
    status.success()
}

/// SPARQL updates of every kind (INSERT DATA, INSERT ... WHERE copying a
/// batch, DELETE ... WHERE removing one, LOAD of a file, MOVE of a graph
/// to another) killed at random moments: after each kill the store has every
/// acknowledged update and each update either whole or not at all.
#[test]
fn sparql_updates_are_all_or_nothing_when_killed() {
    const N: usize = 5_000; // subjects per batch
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let request = dir.path().join("request.ru");
    output_ok(rhizome(&data).arg("init"));
    // A graph to move back and forth.
    let mut moved = String::from("INSERT DATA { GRAPH <http://crash.example/gA> {\n");
    for i in 0..N {
        moved.push_str(&format!("<http://crash.example/m{i}> {MOVED} {i} .\n"));
    }
    moved.push_str("} }");
    std::fs::write(&request, moved).unwrap();
    output_ok(rhizome(&data).args(["update", "--file"]).arg(&request));
    let mut moved_to = "<http://crash.example/gA>".to_owned();
    // One batch inserted unkilled: its duration sets the range of the kill
    // delays (a loaded machine is slower), so that kills land before, during
    // and after the commit.
    std::fs::write(&request, format!("INSERT DATA {{\n{}}}", batch_triples(0, N))).unwrap();
    let started = std::time::Instant::now();
    output_ok(rhizome(&data).args(["update", "--file"]).arg(&request));
    let max_delay_ms = (started.elapsed().as_millis() as u64 * 2).max(50);

    let mut rng = Rng(0x5EED_2026_0003);
    // Batches expected whole in the store, and batches that may be whole or absent.
    let mut present: std::collections::BTreeSet<u64> = [0].into();
    let mut next = 1u64;
    let mut kinds_done = [0u32; 5];
    for round in 0..25 {
        let kind = (round % 5) as usize; // every kind, in turn
        let delay = Duration::from_millis(rng.below(max_delay_ms));
        // (batch added, batch removed) by this update, if it lands.
        let (added, removed, text) = match kind {
            0 => {
                let b = next;
                next += 1;
                (Some(b), None, format!("INSERT DATA {{\n{}}}", batch_triples(b, N)))
            }
            1 => match present.iter().nth(rng.below(present.len().max(1) as u64) as usize).copied() {
                Some(from) => {
                    let b = next;
                    next += 1;
                    let text = format!(
                        "INSERT {{ ?t {BATCH} {b} ; {HALF} {b} }} WHERE {{ ?s {BATCH} {from} . BIND(IRI(CONCAT(STR(?s), \"/copy{b}\")) AS ?t) }}"
                    );
                    (Some(b), None, text)
                }
                None => continue,
            },
            2 => match present.iter().nth(rng.below(present.len().max(1) as u64) as usize).copied() {
                Some(b) => (None, Some(b), format!("DELETE {{ ?s ?p ?o }} WHERE {{ ?s {BATCH} {b} ; ?p ?o }}")),
                None => continue,
            },
            3 => {
                let b = next;
                next += 1;
                let file = dir.path().join(format!("batch{b}.ttl"));
                std::fs::write(&file, batch_triples(b, N)).unwrap();
                (Some(b), None, format!("LOAD <file://{}>", file.display()))
            }
            _ => {
                let to = if moved_to.ends_with("gA>") { "<http://crash.example/gB>" } else { "<http://crash.example/gA>" };
                (None, None, format!("MOVE {moved_to} TO {to}"))
            }
        };
        std::fs::write(&request, &text).unwrap();
        let acknowledged = update_killed_after(&data, &request, delay);

        let now = batches(&data);
        for (b, &(n_batch, n_half)) in &now {
            assert_eq!((n_batch, n_half), (N as u64, N as u64), "round {round}: batch {b} is there in part");
        }
        let landed = match (added, removed) {
            (Some(b), _) => now.contains_key(&b),
            (_, Some(b)) => !now.contains_key(&b),
            _ => {
                let graphs = moved_graphs(&data);
                assert_eq!(graphs.len(), 1, "round {round}: the moved graph is split: {graphs:?}");
                assert_eq!(graphs.values().next(), Some(&(N as u64)), "round {round}: the moved graph lost triples");
                let g = graphs.keys().next().expect("one graph").clone();
                let landed = g != moved_to;
                moved_to = g;
                landed
            }
        };
        assert!(landed || !acknowledged, "round {round}: an acknowledged update ({text:.60}...) is missing");
        if landed {
            if let Some(b) = added {
                present.insert(b);
            }
            if let Some(b) = removed {
                present.remove(&b);
            }
            kinds_done[kind] += 1;
        }
        let expected: std::collections::BTreeSet<u64> = now.keys().copied().collect();
        assert_eq!(expected, present, "round {round}: batches other than this update's changed");
        assert_eq!(quad_count(&data), 2 * N as u64 * present.len() as u64 + N as u64, "round {round}: quad count");
    }
    eprintln!("kill delays up to {max_delay_ms} ms; updates landed per kind (insert data, insert where, delete where, load, move): {kinds_done:?}");
}
