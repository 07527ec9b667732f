//! A speed smoke test on a generated dataset in a memory store (ignored by
//! default; `cargo test --release --test speed -- --ignored --nocapture`).
//! It prints times and checks the answers; the comparison with other
//! engines belongs in bench/sparql.

use rhizome_rdf::{DatasetMode, LoadInput, LoadOptions, Store};
use rhizome_sparql::{parse_query, PreparedQuery, QueryResults, Statistics};
use std::io::Write;
use std::time::Instant;

#[test]
#[ignore = "a timing smoke test, run by hand in release mode"]
fn queries_on_a_generated_university() {
    let people = 50_000;
    let dir = std::env::temp_dir().join(format!("rhizome-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.nt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let ex = "http://ex/";
    for i in 0..people {
        writeln!(f, "<{ex}p{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ex}Person> .").unwrap();
        writeln!(f, "<{ex}p{i}> <{ex}age> \"{}\"^^<http://www.w3.org/2001/XMLSchema#integer> .", 18 + i % 60).unwrap();
        writeln!(f, "<{ex}p{i}> <{ex}worksFor> <{ex}d{}> .", i % 500).unwrap();
        writeln!(f, "<{ex}p{i}> <{ex}knows> <{ex}p{}> .", (i * 7 + 1) % people).unwrap();
        writeln!(f, "<{ex}p{i}> <{ex}name> \"Person number {i}\" .").unwrap();
        if i % 10 == 0 {
            writeln!(f, "<{ex}p{i}> <{ex}email> \"p{i}@example.org\" .").unwrap();
        }
    }
    for d in 0..500 {
        writeln!(f, "<{ex}d{d}> <{ex}subOrganizationOf> <{ex}u{}> .", d % 20).unwrap();
    }
    drop(f);
    let store = Store::memory(DatasetMode::Union);
    let started = Instant::now();
    let summary = store.load(&[LoadInput { path: path.clone() }], &LoadOptions::default()).unwrap();
    println!("loaded {} quads in {:.2} s", summary.quads_added, started.elapsed().as_secs_f64());
    std::fs::remove_dir_all(&dir).ok();
    // (name, query, expected rows, expected last value of the first row)
    let int = |n: u32| format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    let queries = [
        ("count all", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }", 1, int(255_500)),
        ("lookup by subject", "SELECT * { <http://ex/p4242> ?p ?o }", 5, String::new()),
        ("2-hop", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { ?a :knows ?b . ?b :worksFor ?d }", 1, int(50_000)),
        ("3-pattern star", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { ?a a :Person ; :age ?age ; :worksFor :d7 }", 1, int(100)),
        ("chain to university", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { ?a :knows ?b . ?b :worksFor ?d . ?d :subOrganizationOf :u3 }", 1, int(2500)),
        ("optional", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { ?a :worksFor :d1 OPTIONAL { ?a :email ?e } }", 1, int(100)),
        ("filter number", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { ?a :age ?age FILTER(?age > 70) }", 1, int(5831)),
        ("order by limit", "PREFIX : <http://ex/> SELECT ?a ?age { ?a :age ?age } ORDER BY DESC(?age) ?a LIMIT 10", 10, int(77)),
        ("group by", "PREFIX : <http://ex/> SELECT ?d (COUNT(?a) AS ?n) { ?a :worksFor ?d } GROUP BY ?d", 500, int(100)),
        ("path +", "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) { :p1 :knows+ ?x }", 1, String::new()),
    ];
    let stats = Statistics::from_store(&store.planner_stats().unwrap());
    for (name, text, expected_rows, expected_first) in queries {
        let snapshot = store.snapshot().unwrap();
        let started = Instant::now();
        let prepared = PreparedQuery::new(&snapshot, stats.clone(), &parse_query(text, None).unwrap()).unwrap();
        let QueryResults::Solutions { solutions, .. } = prepared.execute().unwrap() else { panic!("not a SELECT") };
        let rows = solutions.map(Result::unwrap).collect::<Vec<_>>();
        let first = rows.first().and_then(|r| r.last().cloned().flatten()).map(|t| t.to_string()).unwrap_or_default();
        println!("{name:>22}: {:>8.1} ms, {} rows, first {first}", started.elapsed().as_secs_f64() * 1e3, rows.len());
        assert_eq!(rows.len(), expected_rows, "{name}");
        if !expected_first.is_empty() {
            assert_eq!(first, expected_first, "{name}");
        }
    }
}
