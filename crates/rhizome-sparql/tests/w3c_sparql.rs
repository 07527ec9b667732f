//! The W3C SPARQL conformance suites (SPARQL 1.1 query, update and result
//! formats, SPARQL 1.0 data-r2, SPARQL 1.2), run through the store: every test's data is
//! loaded into a fresh in-memory plain dataset, queries and updates run
//! through the engine, and results are compared as the test README says.
//!
//! The test data is `$RHIZOME_CONFORMANCE`, or `shared/conformance` beside
//! the repository; missing data fails the test. SPARQL 1.2's is kept in
//! this repository (`tests/w3c/rdf-tests/sparql/sparql12`, the test data
//! of w3c/rdf-tests at commit ad541a5, the same as the shared copy's).
//!
//! Known failures: `tests/w3c/known-failures-<suite>.txt`, one test IRI per
//! line followed by ` # reason`. A failure not listed fails the run, and so
//! does a listed test that passes (the lists must stay true).

mod sparql_support;

use oxrdf::{Dataset, GraphName, NamedNode, Quad};
use oxrdfio::RdfFormat;
use rhizome_rdf::{dump, format_from_path, DatasetMode, DumpOptions, LoadInput, LoadOptions, Store};
use rhizome_sparql::{execute_update, parse_query, parse_update, write_results, PreparedQuery, QueryResults, ResultFormat, Statistics};
use sparql_support::compare::{compare_datasets, compare_outcomes, parse_rdf, read_expected, Outcome};
use sparql_support::manifest::{iri_to_path, read_manifest, Kind, TestCase};
use spargebra::algebra::GraphPattern;
use spargebra::Query;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

struct Suite {
    name: &'static str,
    manifest: &'static str,
    expected_tests: usize,
    /// The data is in this repository (`tests/w3c/rdf-tests`), not the
    /// shared conformance folder.
    in_repository: bool,
}

const SUITES: &[Suite] = &[
    Suite { name: "query", manifest: "sparql/sparql11/manifest-sparql11-query.ttl", expected_tests: 328, in_repository: false },
    Suite { name: "update", manifest: "sparql/sparql11/manifest-sparql11-update.ttl", expected_tests: 157, in_repository: false },
    Suite { name: "results", manifest: "sparql/sparql11/manifest-sparql11-results.ttl", expected_tests: 10, in_repository: false },
    Suite { name: "sparql10", manifest: "sparql/sparql10/manifest.ttl", expected_tests: 482, in_repository: false },
    Suite { name: "sparql12", manifest: "sparql/sparql12/manifest.ttl", expected_tests: 269, in_repository: true },
];

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
    known: usize,
    unexpected: Vec<String>,
}

#[test]
fn w3c_sparql_conformance() {
    let shared_root = rhizome_w3c::conformance_root(SUITES[0].manifest);
    let lists = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/w3c");
    let repository_root = lists.join("rdf-tests");
    let only = std::env::var("RHIZOME_W3C_SUITE").ok();
    let mut totals = Tally::default();
    let mut problems = Vec::new();
    for suite in SUITES {
        if only.as_deref().is_some_and(|o| o != suite.name) {
            continue;
        }
        let root = if suite.in_repository { &repository_root } else { &shared_root };
        let known = rhizome_w3c::read_known_failures(&lists.join(format!("known-failures-{}.txt", suite.name)));
        let tests = match read_manifest(root, suite.manifest) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{}: cannot read the manifest: {e}", suite.name));
                continue;
            }
        };
        if tests.len() != suite.expected_tests {
            problems.push(format!("{}: the manifests list {} tests, expected {}", suite.name, tests.len(), suite.expected_tests));
        }
        let tally = run_suite(root, suite, &tests, &known);
        println!("{}: {} passed, {} failed, {} skipped ({} known failures)", suite.name, tally.passed, tally.failed, tally.skipped, tally.known);
        let ids: BTreeSet<&str> = tests.iter().map(|t| t.iri.as_str()).collect();
        for iri in known.keys() {
            if !ids.contains(iri.as_str()) {
                problems.push(format!("{}: {iri} is on the known-failure list but is not a test of the suite", suite.name));
            }
        }
        totals.passed += tally.passed;
        totals.failed += tally.failed;
        totals.skipped += tally.skipped;
        problems.extend(tally.unexpected);
    }
    println!("{} passed, {} failed", totals.passed, totals.failed);
    if !problems.is_empty() {
        panic!("{} unexpected results:\n  {}", problems.len(), problems.join("\n  "));
    }
}

fn run_suite(root: &Path, suite: &Suite, tests: &[TestCase], known: &BTreeMap<String, String>) -> Tally {
    let mut tally = Tally::default();
    for test in tests {
        if test.skip || test.kind == Kind::Other {
            tally.skipped += 1;
            continue;
        }
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| run_test(root, test))).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("panicked: {}", msg.unwrap_or_default()))
        });
        let seconds = started.elapsed().as_secs_f64();
        if seconds > 2.0 {
            println!("  SLOW {} ({seconds:.1} s)", test.iri);
        }
        match (outcome, known.get(&test.iri)) {
            (Ok(()), None) => tally.passed += 1,
            (Ok(()), Some(reason)) => {
                tally.passed += 1;
                tally.unexpected.push(format!("{}: {} passes but is on the known-failure list ({reason})", suite.name, test.iri));
            }
            (Err(why), listed) => {
                tally.failed += 1;
                if std::env::var_os("RHIZOME_W3C_VERBOSE").is_some() || listed.is_none() {
                    println!("  FAIL {} ({}): {}{}", test.iri, test.name, why, if listed.is_some() { " [known]" } else { "" });
                }
                if listed.is_some() {
                    tally.known += 1;
                } else {
                    tally.unexpected.push(format!("{}: {} failed: {}", suite.name, test.iri, why.lines().next().unwrap_or("")));
                }
            }
        }
    }
    tally
}

fn read(root: &Path, iri: &str) -> Result<Vec<u8>, String> {
    let path = iri_to_path(root, iri)?;
    std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn read_text(root: &Path, iri: &str) -> Result<String, String> {
    String::from_utf8(read(root, iri)?).map_err(|e| format!("{iri} is not UTF-8: {e}"))
}

fn load(store: &Store, root: &Path, file: &str, graph: Option<&str>) -> Result<(), String> {
    let path = iri_to_path(root, file)?;
    let format = format_from_path(&path).ok_or_else(|| format!("unknown format of {file}"))?;
    let options = LoadOptions {
        format: Some(format),
        base_iri: Some(file.to_owned()),
        graph: graph.map(NamedNode::new).transpose().map_err(|e| e.to_string())?,
        ..Default::default()
    };
    store.load(&[LoadInput { path }], &options).map(|_| ()).map_err(|e| format!("cannot load {file}: {e}"))
}

fn setup(root: &Path, test: &TestCase) -> Result<Store, String> {
    let store = Store::memory(DatasetMode::Plain);
    for d in &test.data {
        load(&store, root, d, None)?;
    }
    for g in &test.graph_data {
        load(&store, root, &g.file, Some(&g.name))?;
    }
    Ok(store)
}

fn is_ordered(p: &GraphPattern) -> bool {
    match p {
        GraphPattern::OrderBy { .. } => true,
        GraphPattern::Project { inner, .. }
        | GraphPattern::Distinct { inner }
        | GraphPattern::Reduced { inner }
        | GraphPattern::Slice { inner, .. }
        | GraphPattern::Extend { inner, .. } => is_ordered(inner),
        _ => false,
    }
}

/// `hash_at_once`: every pattern the nested loops look up is hashed at its
/// first lookup, so that the suite checks both join methods.
fn run_query(store: &Store, query: &Query, hash_at_once: bool) -> Result<Outcome, String> {
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let stats = Statistics::from_store(&store.planner_stats().map_err(|e| e.to_string())?);
    let prepared = PreparedQuery::new(&snapshot, stats, query).map_err(|e| e.to_string())?;
    if hash_at_once {
        prepared.set_hash_join_after(0);
    }
    let outcome = match prepared.execute().map_err(|e| e.to_string())? {
        QueryResults::Boolean(b) => Outcome::Boolean(b),
        QueryResults::Solutions { variables, solutions } => {
            let mut out = Vec::new();
            for s in solutions {
                let s = s.map_err(|e| e.to_string())?;
                out.push(variables.iter().zip(s).filter_map(|(v, t)| t.map(|t| (v.as_str().to_owned(), t))).collect());
            }
            Outcome::Solutions(out)
        }
        QueryResults::Graph(triples) => Outcome::Graph(Box::new(triples.collect::<Result<_, _>>().map_err(|e| e.to_string())?)),
    };
    Ok(outcome)
}

fn run_test(root: &Path, test: &TestCase) -> Result<(), String> {
    let request = test.request.as_deref().ok_or("no request file")?;
    match test.kind {
        Kind::PositiveSyntax => parse_query(&read_text(root, request)?, Some(request)).map(|_| ()).map_err(|e| e.to_string()),
        Kind::NegativeSyntax => match parse_query(&read_text(root, request)?, Some(request)) {
            Ok(_) => Err("the query parses but must not".into()),
            Err(_) => Ok(()),
        },
        Kind::PositiveUpdateSyntax => parse_update(&read_text(root, request)?, Some(request)).map(|_| ()).map_err(|e| e.to_string()),
        Kind::NegativeUpdateSyntax => match parse_update(&read_text(root, request)?, Some(request)) {
            Ok(_) => Err("the update parses but must not".into()),
            Err(_) => Ok(()),
        },
        Kind::QueryEvaluation | Kind::CsvResultFormat => {
            let query = parse_query(&read_text(root, request)?, Some(request)).map_err(|e| e.to_string())?;
            let store = setup(root, test)?;
            let (Query::Select { dataset, pattern, .. }
            | Query::Ask { dataset, pattern, .. }
            | Query::Construct { dataset, pattern, .. }
            | Query::Describe { dataset, pattern, .. }) = &query;
            if let Some(d) = dataset {
                // FROM and FROM NAMED name files: load them as graphs.
                for g in d.default.iter().chain(d.named.iter().flatten()) {
                    if iri_to_path(root, g.as_str()).is_ok_and(|p| p.is_file()) {
                        load(&store, root, g.as_str(), Some(g.as_str()))?;
                    }
                }
            }
            let result = test.result.as_deref().ok_or("no expected result")?;
            if test.kind == Kind::CsvResultFormat {
                let snapshot = store.snapshot().map_err(|e| e.to_string())?;
                let stats = Statistics::from_store(&store.planner_stats().map_err(|e| e.to_string())?);
                let prepared = PreparedQuery::new(&snapshot, stats, &query).map_err(|e| e.to_string())?;
                let expected = read_text(root, result)?.replace("\r\n", "\n");
                // SELECT * lists variables sorted (spargebra); the expected
                // file lists them as written: take its column order.
                let header: Vec<&str> = expected.lines().next().unwrap_or("").split(',').collect();
                let results = match prepared.execute().map_err(|e| e.to_string())? {
                    QueryResults::Solutions { variables, solutions } => {
                        let order: Vec<usize> = header.iter().filter_map(|h| variables.iter().position(|v| v.as_str() == *h)).collect();
                        if order.len() != variables.len() {
                            return Err(format!("variables {variables:?}, expected {header:?}"));
                        }
                        let variables = order.iter().map(|i| variables[*i].clone()).collect();
                        let solutions = solutions.map(move |s| s.map(|s| order.iter().map(|i| s[*i].clone()).collect()));
                        QueryResults::Solutions { variables, solutions: Box::new(solutions) }
                    }
                    other => other,
                };
                let mut out = Vec::new();
                write_results(results, ResultFormat::Csv, &mut out).map_err(|e| e.to_string())?;
                let (actual, expected) = (relabel_blanks(&String::from_utf8_lossy(&out).replace("\r\n", "\n")), relabel_blanks(&expected));
                return if actual.trim_end() == expected.trim_end() { Ok(()) } else { Err(format!("CSV differs:\n{actual}\nexpected:\n{expected}")) };
            }
            for hash_at_once in [false, true] {
                let actual = run_query(&store, &query, hash_at_once)?;
                let expected = read_expected(&read(root, result)?, result)?;
                compare_outcomes(actual, expected, is_ordered(pattern), test.lax)
                    .map_err(|e| if hash_at_once { format!("with hash joins: {e}") } else { e })?;
            }
            Ok(())
        }
        Kind::UpdateEvaluation => {
            let update = parse_update(&read_text(root, request)?, Some(request)).map_err(|e| e.to_string())?;
            let store = setup(root, test)?;
            execute_update(&store, &update).map_err(|e| format!("the update failed: {e}"))?;
            let mut expected = Dataset::new();
            for d in &test.result_data {
                // TriG (SPARQL 1.2's tests) gives the whole dataset.
                let format = rdf_format(d);
                for q in parse_rdf(&read(root, d)?, format, d)?.iter() {
                    let graph = if format == RdfFormat::TriG { q.graph_name.into_owned() } else { GraphName::DefaultGraph };
                    expected.insert(&Quad::new(q.subject.into_owned(), q.predicate.into_owned(), q.object.into_owned(), graph));
                }
            }
            for g in &test.result_graph_data {
                let name = NamedNode::new(&g.name).map_err(|e| e.to_string())?;
                for q in parse_rdf(&read(root, &g.file)?, rdf_format(&g.file), &g.file)?.iter() {
                    expected.insert(&Quad::new(q.subject.into_owned(), q.predicate.into_owned(), q.object.into_owned(), name.clone()));
                }
            }
            let snapshot = store.snapshot().map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            dump(&snapshot, &DumpOptions { format: RdfFormat::NQuads, graph: None }, &mut out).map_err(|e| e.to_string())?;
            let actual = parse_rdf(&out, RdfFormat::NQuads, "http://example.com/")?;
            compare_datasets(actual, expected)
        }
        Kind::Other => Ok(()),
    }
}

fn rdf_format(iri: &str) -> RdfFormat {
    if iri.ends_with(".rdf") {
        RdfFormat::RdfXml
    } else if iri.ends_with(".nt") {
        RdfFormat::NTriples
    } else if iri.ends_with(".trig") {
        RdfFormat::TriG
    } else {
        RdfFormat::Turtle
    }
}

/// Blank node labels of a CSV text renamed in order of appearance, so that
/// texts compare up to blank node renaming.
fn relabel_blanks(csv: &str) -> String {
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = String::new();
    for line in csv.lines() {
        let fields: Vec<String> = line
            .split(',')
            .map(|f| match f.strip_prefix("_:") {
                Some(label) => {
                    let n = names.len();
                    format!("_:b{}", names.entry(label.to_owned()).or_insert(n))
                }
                None => f.to_owned(),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}
