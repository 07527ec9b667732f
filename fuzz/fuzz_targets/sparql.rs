//! SPARQL query and update text through the parser, the nesting checks,
//! the translator and the evaluator, on a small memory store, on the query
//! stack (`rhizome_sparql::nesting::run_with_query_stack`) as the server
//! runs them. The first byte picks a mode: the rest as text, or a
//! construct from a list repeated N times (N from two bytes, up to 65,535)
//! around the rest, so that deep nesting and long chains, which overflowed
//! the stack before (issue 20), are generated on purpose rather than
//! waited for. What it asserts: no panic and no abort (a stack overflow
//! kills the process, which libFuzzer reports as a crash).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rhizome_rdf::{DatasetMode, Store};
use rhizome_sparql::nesting::run_with_query_stack;
use rhizome_sparql::{execute_update_in, parse_query, parse_update, PreparedQuery, QueryResults, Statistics, UpdateLimits};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// (prefix repeated, suffix repeated, template holding `X` where the
/// repetition goes, with the input's text in the middle of it).
const CONSTRUCTS: &[(&str, &str, &str)] = &[
    ("(", ")", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("{ ", " }", "SELECT * { X }"),
    ("!", "", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("!(", ")", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("+", "", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("-", "", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("1 + ", "", "SELECT * { ?s ?p ?o FILTER(X = 1) }"),
    ("?o = 1 || ", "", "SELECT * { ?s ?p ?o FILTER(X) }"),
    ("{ ?s ?p ?o } UNION ", "", "SELECT * { X }"),
    ("OPTIONAL { ?s ?p ?o } ", "", "SELECT * { ?s ?p ?o X }"),
    ("OPTIONAL { ?s ?p ?o ", "}", "SELECT * { ?s ?p ?o X }"),
    ("MINUS { ?s ?p ?o ", "}", "SELECT * { ?s ?p ?o X }"),
    ("<http://e/p>/", "", "SELECT * { ?s X ?o }"),
    ("<http://e/p>|", "", "SELECT * { ?s X ?o }"),
    ("^(", ")", "SELECT * { ?s X ?o }"),
    ("(", ")*", "SELECT * { ?s X ?o }"),
    ("[ <http://e/p> ", " ]", "SELECT * { ?s ?p X }"),
    ("BIND(CONCAT(?v, ?v) AS ?v) ", "", "SELECT * { BIND(\"0123456789abcdef\" AS ?v) X }"),
    ("FILTER(!EXISTS { ?s ?p ?o ", "})", "SELECT * { ?s ?p ?o X }"),
    ("{ SELECT * WHERE { ?s ?p ?o ", "} }", "SELECT * { X }"),
    ("CONCAT(", ", ?o)", "SELECT (X AS ?x) { ?s ?p ?o }"),
    ("(true) ", "", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o } HAVING X"),
    ("{ ", " }", "DELETE { ?s ?p ?o } WHERE { X }"),
    ("{ ?s ?p ?o } UNION ", "", "DELETE { ?s ?p ?o } WHERE { X }"),
    ("[ <http://e/p> ", " ]", "INSERT DATA { <http://e/s> <http://e/p> X }"),
    ("(", ")", "DELETE { ?s ?p ?o } WHERE { ?s ?p ?o FILTER(X) }"),
];

fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        let store = Store::memory(DatasetMode::Union);
        let data = "INSERT DATA { <http://e/s> <http://e/p> <http://e/s> . <http://e/s> <http://e/q> 1 . <http://e/s> <http://e/p> \"x\" . GRAPH <http://e/g> { <http://e/s> <http://e/p> <http://e/t> } }";
        rhizome_sparql::execute_update(&store, &parse_update(data, None).expect("the seed data parses")).expect("the seed data loads");
        store
    })
}

/// The text of a generated request: a construct repeated around the input.
fn generated(data: &[u8]) -> String {
    let (Some(&pick), Some(&hi), Some(&lo)) = (data.first(), data.get(1), data.get(2)) else { return String::new() };
    let (prefix, suffix, template) = CONSTRUCTS[pick as usize % CONSTRUCTS.len()];
    let n = (hi as usize) << 8 | lo as usize;
    let inner = String::from_utf8_lossy(&data[3..]);
    let inner = if inner.trim().is_empty() { "?o" } else { inner.as_ref() };
    let repeated = format!("{}{inner}{}", prefix.repeat(n), suffix.repeat(n));
    template.replacen('X', &repeated, 1)
}

fn run(text: &str) {
    let store = store();
    if let Ok(query) = parse_query(text, None) {
        let Ok(snapshot) = store.snapshot() else { return };
        let Ok(stats) = store.stats() else { return };
        let Ok(prepared) = PreparedQuery::new(&snapshot, Statistics::from_store(&stats), &query) else { return };
        prepared.set_timeout(Duration::from_secs(2));
        prepared.set_memory_limit(64 << 20);
        match prepared.execute() {
            Ok(QueryResults::Solutions { solutions, .. }) => solutions.take(10_000).for_each(drop),
            Ok(QueryResults::Graph(triples)) => triples.take(10_000).for_each(drop),
            Ok(QueryResults::Boolean(_)) | Err(_) => {}
        }
        return;
    }
    if let Ok(update) = parse_update(text, None) {
        let Ok(stats) = store.stats() else { return };
        let stats = Statistics::from_store(&stats);
        let Ok(mut txn) = store.transaction() else { return };
        let limits = UpdateLimits { deadline: Some(Instant::now() + Duration::from_secs(2)), memory_bytes: Some(64 << 20), ..UpdateLimits::default() };
        // Never committed: every run sees the same store.
        let _ = execute_update_in(&mut txn, store.mode(), &stats, &update, &limits);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let text = if mode % 2 == 0 { String::from_utf8_lossy(rest).into_owned() } else { generated(rest) };
    run_with_query_stack(|| run(&text)).expect("a query thread starts");
});
