//! `SERVICE <urn:rhizome:graph>`: traversals and paths of `rhizome-graph`
//! inside a query, joined with the query's other patterns.

use rhizome_rdf::{DatasetMode, Store};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, Statistics};

fn store() -> Store {
    let store = Store::memory(DatasetMode::Union);
    let data = "PREFIX : <http://ex/> INSERT DATA {
        :a :knows :b . :b :knows :c . :c :knows :d . :a :knows :e . :e :likes :c .
        :a :name \"A\" . :b :name \"B\" . :c :name \"C\" . :d :name \"D\" . :e :name \"E\" .
        :b :cost 10 . :c :cost 1 . :d :cost 1 . :e :cost 1 . :z :name \"Z\" }";
    execute_update(&store, &parse_update(data, None).unwrap()).unwrap();
    store
}

fn run(store: &Store, text: &str) -> Result<Vec<Vec<String>>, String> {
    let snapshot = store.snapshot().unwrap();
    let stats = Statistics::from_store(&store.planner_stats().unwrap());
    let query = format!("PREFIX : <http://ex/> PREFIX rg: <urn:rhizome:graph#> {text}");
    let prepared = PreparedQuery::new(&snapshot, stats, &parse_query(&query, None).unwrap()).map_err(|e| e.to_string())?;
    let QueryResults::Solutions { solutions, .. } = prepared.execute().map_err(|e| e.to_string())? else { panic!("not a SELECT") };
    // An error while rows are drawn (a walk from an unbound variable) is the query's error too.
    let mut rows: Vec<Vec<String>> = solutions
        .map(|s| s.map(|s| s.into_iter().map(|t| t.map(|t| t.to_string()).unwrap_or_default()).collect()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    rows.sort();
    Ok(rows)
}

fn strs(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect()
}

#[test]
fn a_traversal_joins_with_other_patterns() {
    let s = store();
    let rows = run(&s, "SELECT ?name ?d { SERVICE <urn:rhizome:graph> { [] rg:start :a ; rg:maxDepth 2 ; rg:node ?n ; rg:depth ?d } ?n :name ?name }").unwrap();
    let i = |n: u8| format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    assert_eq!(rows, vec![vec!["\"B\"".to_owned(), i(1)], vec!["\"C\"".to_owned(), i(2)], vec!["\"E\"".to_owned(), i(1)]]);
    let inbound = run(&s, "SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start :c ; rg:direction \"in\" ; rg:predicate :knows ; rg:node ?n } }").unwrap();
    assert_eq!(inbound, strs(&[&["<http://ex/b>"]]));
    let none = run(&s, "SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start :z ; rg:maxDepth 3 ; rg:node ?n } }").unwrap();
    assert!(none.is_empty());
}

#[test]
fn paths_come_as_one_row_per_node() {
    let s = store();
    let rows = run(&s, "SELECT ?i ?n ?l { SERVICE <urn:rhizome:graph> { [] rg:from :a ; rg:to :d ; rg:node ?n ; rg:index ?i ; rg:length ?l } }").unwrap();
    let nodes: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(rows.len(), 4);
    assert!(nodes.contains(&"<http://ex/b>") && nodes.contains(&"<http://ex/c>"), "{rows:?}");
    assert!(rows.iter().all(|r| r[2].starts_with("\"3\"")));
    let all = run(&s, "SELECT (COUNT(DISTINCT ?p) AS ?k) { SERVICE <urn:rhizome:graph> { [] rg:from :a ; rg:to :c ; rg:all true ; rg:path ?p ; rg:node ?n } }").unwrap();
    assert!(all[0][0].starts_with("\"2\""), "{all:?}");
    let cheap = run(&s, "SELECT ?n ?c { SERVICE <urn:rhizome:graph> { [] rg:from :a ; rg:to :c ; rg:weight :cost ; rg:node ?n ; rg:index 1 ; rg:cost ?c } }");
    // rg:index takes a variable: a constant there is refused.
    assert!(cheap.unwrap_err().contains("rg:index binds a variable"));
    let cheap = run(&s, "SELECT ?n ?c { SERVICE <urn:rhizome:graph> { [] rg:from :a ; rg:to :c ; rg:weight :cost ; rg:node ?n ; rg:index ?i ; rg:cost ?c } FILTER(?i = 1) }").unwrap();
    assert_eq!(cheap.len(), 1);
    assert_eq!(cheap[0][0], "<http://ex/e>");
    assert!(cheap[0][1].contains("2"), "{cheap:?}");
    let none = run(&s, "SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:from :d ; rg:to :a ; rg:node ?n } }").unwrap();
    assert!(none.is_empty());
}

/// Every node of the store that names something (the test's start set).
const NODES: [&str; 6] = [":a", ":b", ":c", ":d", ":e", ":z"];

#[test]
fn a_start_bound_by_other_patterns_walks_once_per_row() {
    let s = store();
    // The reference: the same walk from each start written as an IRI.
    let mut want = Vec::new();
    for start in NODES {
        for row in run(&s, &format!("SELECT ?n ?d {{ SERVICE <urn:rhizome:graph> {{ [] rg:start {start} ; rg:maxDepth 2 ; rg:node ?n ; rg:depth ?d }} }}")).unwrap() {
            want.push([vec![start.replace(':', "<http://ex/") + ">"], row].concat());
        }
    }
    want.sort();
    assert!(want.len() > 6, "{want:?}");
    // Bound by a pattern, with the SERVICE written after it or before it.
    let after = run(&s, "SELECT ?who ?n ?d { ?who :name ?name . SERVICE <urn:rhizome:graph> { [] rg:start ?who ; rg:maxDepth 2 ; rg:node ?n ; rg:depth ?d } }").unwrap();
    assert_eq!(after, want);
    let before = run(&s, "SELECT ?who ?n ?d { SERVICE <urn:rhizome:graph> { [] rg:start ?who ; rg:maxDepth 2 ; rg:node ?n ; rg:depth ?d } ?who :name ?name }").unwrap();
    assert_eq!(before, want);
    // An output the row already binds must agree with the walk (a join).
    let agreed = run(&s, "SELECT ?n ?d { VALUES ?who { :a } ?who :knows ?n . SERVICE <urn:rhizome:graph> { [] rg:start ?who ; rg:maxDepth 2 ; rg:node ?n ; rg:depth ?d } }").unwrap();
    let one = "\"1\"^^<http://www.w3.org/2001/XMLSchema#integer>";
    assert_eq!(agreed, strs(&[&["<http://ex/b>", one], &["<http://ex/e>", one]]));
    // OPTIONAL keeps the rows whose walk finds nothing.
    let liked = run(&s, "SELECT ?who ?l { VALUES ?who { :a :e } OPTIONAL { SERVICE <urn:rhizome:graph> { [] rg:start ?who ; rg:predicate :likes ; rg:node ?l } } }").unwrap();
    assert_eq!(liked, strs(&[&["<http://ex/a>", ""], &["<http://ex/e>", "<http://ex/c>"]]));
}

#[test]
fn path_ends_bound_by_other_patterns() {
    let s = store();
    let rows = run(&s, "SELECT ?x ?y ?n ?i { VALUES (?x ?y) { (:a :d) (:d :a) (:b :c) } SERVICE <urn:rhizome:graph> { [] rg:from ?x ; rg:to ?y ; rg:node ?n ; rg:index ?i } }").unwrap();
    for (from, to) in [(":a", ":d"), (":d", ":a"), (":b", ":c")] {
        let alone = run(&s, &format!("SELECT ?n ?i {{ SERVICE <urn:rhizome:graph> {{ [] rg:from {from} ; rg:to {to} ; rg:node ?n ; rg:index ?i }} }}")).unwrap();
        let iri = |t: &str| t.replace(':', "<http://ex/") + ">";
        let mine: Vec<Vec<String>> = rows.iter().filter(|r| r[0] == iri(from) && r[1] == iri(to)).map(|r| r[2..].to_vec()).collect();
        assert_eq!(mine, alone, "{from} -> {to}");
    }
    assert_eq!(rows.len(), 4 + 2, "{rows:?}");
    // One end a constant, the other bound.
    let to_d = run(&s, "SELECT ?x ?l { VALUES ?x { :a :b :c :z } SERVICE <urn:rhizome:graph> { [] rg:from ?x ; rg:to :d ; rg:length ?l ; rg:index 0 } }");
    assert!(to_d.unwrap_err().contains("rg:index binds a variable"));
    let to_d = run(&s, "SELECT DISTINCT ?x ?l { VALUES ?x { :a :b :c :z } SERVICE <urn:rhizome:graph> { [] rg:from ?x ; rg:to :d ; rg:length ?l } }").unwrap();
    let len = |n: u8| format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    assert_eq!(to_d, vec![vec!["<http://ex/a>".to_owned(), len(3)], vec!["<http://ex/b>".to_owned(), len(2)], vec!["<http://ex/c>".to_owned(), len(1)]]);
}

#[test]
fn bad_parameters_and_other_services_are_errors() {
    let s = store();
    for (q, want) in [
        ("SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start ?x ; rg:node ?n } }", "?x is unbound"),
        ("SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start \"a\" ; rg:node ?n } }", "an IRI or a variable"),
        ("SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:node ?n } }", "rg:start"),
        ("SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start :a ; rg:bogus 1 ; rg:node ?n } }", "unknown parameter"),
        ("SELECT ?n { SERVICE <urn:rhizome:graph> { [] rg:start :a ; rg:direction \"up\" ; rg:node ?n } }", "rg:direction"),
        ("SELECT ?n { SERVICE <http://elsewhere/sparql> { ?n ?p ?o } }", "SERVICE"),
    ] {
        let e = run(&s, q).unwrap_err();
        assert!(e.contains(want), "{q}: {e}");
    }
}
