//! Deeply nested and long-chained requests: refused with a clear error
//! before anything recursive runs, or run to their end, never a stack
//! overflow (which aborts the process, so a failure here is a crash of the
//! test binary). The worst requests the limits let through must run in a
//! quarter of the query stack, so the limits keep their margin.

use rhizome_rdf::{DatasetMode, Store};
use rhizome_sparql::nesting::{run_with_query_stack, MAX_NEGATION_NESTING, MAX_NESTING, MAX_OPERATORS, QUERY_STACK_BYTES};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, SparqlError, Statistics};

fn store() -> Store {
    let store = Store::memory(DatasetMode::Union);
    execute_update(&store, &parse_update("INSERT DATA { <http://e/s> <http://e/p> <http://e/s> . <http://e/s> <http://e/q> 1 }", None).unwrap()).unwrap();
    store
}

/// Parses, plans and runs a query or update to its end; the error if any.
fn run(store: &Store, text: &str) -> Result<(), SparqlError> {
    if let Ok(update) = parse_update(text, None) {
        return execute_update(store, &update).map(|_| ());
    }
    let query = parse_query(text, None)?;
    let snapshot = store.snapshot()?;
    let prepared = PreparedQuery::new(&snapshot, Statistics::from_store(&store.planner_stats()?), &query)?;
    // A path of 10,000 steps becomes a BGP of 10,000 patterns, whose rows
    // are 10,000 variables wide: slow, which the time limit bounds.
    prepared.set_timeout(std::time::Duration::from_secs(10));
    match prepared.execute()? {
        QueryResults::Solutions { solutions, .. } => {
            for s in solutions {
                s?;
            }
        }
        QueryResults::Graph(triples) => {
            for t in triples {
                t?;
            }
        }
        QueryResults::Boolean(_) => {}
    }
    Ok(())
}

/// `run` on a thread of `stack` bytes.
fn run_on_stack(stack: usize, text: String) -> Result<(), SparqlError> {
    let store = store();
    std::thread::scope(|s| std::thread::Builder::new().stack_size(stack).spawn_scoped(s, || run(&store, &text)).unwrap().join().unwrap())
}

fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

fn chain(item: &str, sep: &str, n: usize) -> String {
    vec![item; n].join(sep)
}

/// The reproductions of issue 20 (point 4), each refused with a reason.
fn too_deep() -> Vec<(&'static str, String)> {
    let group = "{ ?s ?p ?o }";
    vec![
        ("1,000 parentheses in a FILTER", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("(", "1", ")", 1000))),
        ("2,000 nested groups", format!("SELECT * {}", nested("{ ", "?s ?p ?o", " }", 2000))),
        ("50,000 !", format!("SELECT * {{ ?s ?p ?o FILTER({}?o) }}", "!".repeat(50_000))),
        ("30 nested !(", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("!(", "?o", ")", 30))),
        ("50,000 unary +", format!("SELECT * {{ ?s ?p ?o FILTER({}1) }}", "+".repeat(50_000))),
        ("50,000 binary +", format!("SELECT * {{ ?s ?p ?o FILTER({} = 1) }}", chain("1", "+", 50_000))),
        ("20,000 UNIONs", format!("SELECT * {{ {} }}", chain(group, " UNION ", 20_000))),
        ("20,000-step path", format!("SELECT * {{ ?s {} ?o }}", chain("<http://e/p>", "/", 20_000))),
        ("20,000 OPTIONALs", format!("SELECT * {{ ?s ?p ?o {} }}", format!("OPTIONAL {group} ").repeat(20_000))),
        ("1,000 nested OPTIONALs", format!("SELECT * {{ ?s ?p ?o {} }}", nested("OPTIONAL { ?s ?p ?o ", "", "}", 1000))),
        ("20,000 ||", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", chain("?o = 1", " || ", 20_000))),
        ("20,000 - without spaces", format!("SELECT * {{ BIND({} AS ?x) }}", chain("1", "-1", 20_000))),
        ("20,000 HAVING constraints", format!("SELECT (COUNT(*) AS ?n) {{ ?s ?p ?o }} HAVING {}", "(true) ".repeat(20_000))),
        ("20,000 nested blank nodes", format!("SELECT * {{ ?s ?p {} }}", nested("[ <http://e/p> ", "1", " ]", 20_000))),
        ("update WHERE with 2,000 nested groups", format!("DELETE {{ ?s ?p ?o }} WHERE {}", nested("{ ", "?s ?p ?o", " }", 2000))),
        ("update WHERE with 20,000 UNIONs", format!("DELETE {{ ?s ?p ?o }} WHERE {{ {} }}", chain(group, " UNION ", 20_000))),
        ("INSERT DATA with 20,000 nested blank nodes", format!("INSERT DATA {{ <http://e/a> <http://e/p> {} }}", nested("[ <http://e/p> ", "1", " ]", 20_000))),
    ]
}

/// The deepest requests the limits allow, of each kind.
fn at_the_limits() -> Vec<(&'static str, String)> {
    let group = "{ ?s ?p ?o }";
    // Each group is an operator of its own; the UNION keyword another.
    let n = MAX_OPERATORS / 2 - 2;
    let depth = MAX_NESTING - 4;
    vec![
        ("parentheses", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("(", "1", ")", depth))),
        ("groups", format!("SELECT * {}", nested("{ ", "?s ?p ?o", " }", depth))),
        ("nested OPTIONALs", format!("SELECT * {{ ?s ?p ?o {} }}", nested("OPTIONAL { ?s ?p ?o ", "", "}", depth / 2))),
        ("nested subqueries", format!("SELECT * {}", nested("{ SELECT * WHERE { ?s ?p ?o ", "", "} }", depth / 2))),
        ("prefix ! and parentheses", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("!(", &nested("(", "?o", ")", depth - 20), ")", MAX_NEGATION_NESTING))),
        ("inverse paths in parentheses", format!("SELECT * {{ ?s {} ?o }}", nested("^(", "<http://e/p>", ")", depth / 2 - 2))),
        ("binary +", format!("SELECT * {{ ?s ?p ?o FILTER({} = 1) }}", chain("1", " + ", MAX_OPERATORS - 10))),
        ("||", format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", chain("?o = 1", " || ", MAX_OPERATORS / 2 - 10))),
        ("UNIONs", format!("SELECT * {{ {} }}", chain(group, " UNION ", n))),
        ("OPTIONALs", format!("SELECT * {{ ?s ?p ?o {} }}", format!("OPTIONAL {group} ").repeat(n))),
        ("MINUS", format!("SELECT * {{ ?s ?p ?o {} }}", format!("MINUS {{ ?s <http://e/none> ?o }} ").repeat(n))),
        ("joined groups", format!("SELECT * {{ {} }}", format!("{group} ").repeat(MAX_OPERATORS - 10))),
        ("path steps", format!("SELECT * {{ ?s {} ?o }}", chain("<http://e/p>", "/", MAX_OPERATORS - 10))),
        ("path alternatives", format!("SELECT * {{ ?s {} ?o }}", chain("<http://e/p>", "|", MAX_OPERATORS - 10))),
        ("BINDs", format!("SELECT * {{ ?s ?p ?o {} }}", (0..n).map(|i| format!("BIND(1 AS ?v{i}) ")).collect::<String>())),
        ("FILTERs", format!("SELECT * {{ ?s ?p ?o {} }}", "FILTER(?o != 2) ".repeat(n))),
        ("update WHERE with UNIONs", format!("DELETE {{ ?s ?p ?o }} WHERE {{ {} }}", chain(group, " UNION ", n))),
        ("update WHERE with nested groups", format!("DELETE {{ ?s <http://e/none> ?o }} WHERE {}", nested("{ ", "?s ?p ?o", " }", depth))),
    ]
}

#[test]
fn the_reproductions_are_refused_with_a_reason() {
    for (what, text) in too_deep() {
        match run_on_stack(QUERY_STACK_BYTES, text) {
            Err(SparqlError::TooComplex(reason)) => assert!(reason.contains("nesting deeper than") || reason.contains("operators") || reason.contains("nests !"), "{what}: {reason}"),
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn the_deepest_requests_the_limits_allow_run_in_a_quarter_of_the_query_stack() {
    for (what, text) in at_the_limits() {
        let started = std::time::Instant::now();
        let r = run_on_stack(QUERY_STACK_BYTES / 4, text);
        assert!(matches!(r, Ok(()) | Err(SparqlError::Timeout)), "{what}: {r:?}");
        eprintln!("{what}: {:?}", started.elapsed());
    }
}

#[test]
fn run_with_query_stack_gives_the_result_back() {
    let text = format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", nested("(", "true", ")", MAX_NESTING - 4));
    let store = store();
    assert!(run_with_query_stack(|| run(&store, &text)).unwrap().is_ok());
}

/// By hand (`--ignored --nocapture`): the smallest stack, to 64 KiB, each
/// request at the limits needs (a run that overflows aborts, so each try
/// is a child process).
#[test]
#[ignore]
fn measure_stacks() {
    if let Ok(case) = std::env::var("NESTING_CASE") {
        let stack: usize = std::env::var("NESTING_STACK").unwrap().parse().unwrap();
        let (_, text) = at_the_limits().into_iter().chain(too_deep()).find(|(w, _)| *w == case).unwrap();
        let _ = run_on_stack(stack, text);
        return;
    }
    for (what, _) in at_the_limits().into_iter().chain(too_deep()) {
        let (mut low, mut high) = (64usize << 10, QUERY_STACK_BYTES);
        while high - low > 64 << 10 {
            let mid = (low + high) / 2;
            let ok = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--ignored", "--exact", "measure_stacks", "--nocapture"])
                .env("NESTING_CASE", what)
                .env("NESTING_STACK", mid.to_string())
                .output()
                .unwrap()
                .status
                .success();
            if ok {
                high = mid;
            } else {
                low = mid;
            }
        }
        eprintln!("{what}: {} KiB", high >> 10);
    }
}
