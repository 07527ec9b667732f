//! The W3C RDF 1.1 conformance suites (N-Triples, N-Quads, Turtle, TriG,
//! RDF/XML) and the RDF 1.2 ones (N-Triples, N-Quads, Turtle, TriG: triple
//! terms, reifiers, annotations, base directions; each includes the RDF 1.1
//! suite of its syntax, run again by the RDF 1.2 parsers), run through the
//! store: every input is loaded into a fresh
//! in-memory plain dataset, and eval tests compare the store's N-Quads dump
//! with the expected result as isomorphic datasets. So these tests check
//! the parsers as wired into the loader, the all-or-nothing load, and that
//! the term encoding and the dump round-trip every term exactly. Beyond
//! the W3C rules, a positive syntax test also checks that the dump equals
//! what the parser alone reads, and an eval failure says whether the parser
//! alone gets the expected result (store bug) or not (parser bug). An RDF
//! 1.2 canonical-form (C14N) test loads its input and dumps it in the same
//! syntax: the dump must be the expected canonical text, line for line
//! (blank node labels aside, which the store chooses).
//!
//! The test data is the `rdf-tests` checkout described in
//! `shared/conformance/README.md`, found and read with `rhizome-w3c`.
//! Missing data fails the test.
//!
//! Known failures: `tests/w3c/known-failures-<suite>.txt`, one test IRI per
//! line followed by ` # reason`. A failure not listed fails the run, and so
//! does a listed test that passes (the lists must stay true).

use oxrdf::dataset::CanonicalizationAlgorithm;
use oxrdf::vocab::rdf;
use oxrdf::{Dataset, Graph, NamedNodeRef, NamedOrBlankNode, Term, TermRef};
use oxrdfio::{RdfFormat, RdfParser};
use rhizome_rdf::{dump, DatasetMode, DumpOptions, Error, LoadInput, LoadOptions, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use rhizome_w3c::{iri_to_path, read_known_failures, MF};
use std::path::Path;

const RDFT: &str = "http://www.w3.org/ns/rdftest#";
const DAWGT: &str = "http://www.w3.org/2001/sw/DataAccess/tests/test-dawg#";

struct Suite {
    name: &'static str,
    /// Entry manifest, under `rdf-tests/`.
    manifest: &'static str,
    format: RdfFormat,
    /// The number of tests the manifests list (README of the test data): a
    /// guard against a manifest read wrongly, or truncated data.
    expected_tests: usize,
}

const SUITES: &[Suite] = &[
    Suite { name: "ntriples", manifest: "rdf/rdf11/rdf-n-triples/manifest.ttl", format: RdfFormat::NTriples, expected_tests: 70 },
    Suite { name: "nquads", manifest: "rdf/rdf11/rdf-n-quads/manifest.ttl", format: RdfFormat::NQuads, expected_tests: 87 },
    Suite { name: "turtle", manifest: "rdf/rdf11/rdf-turtle/manifest.ttl", format: RdfFormat::Turtle, expected_tests: 313 },
    Suite { name: "trig", manifest: "rdf/rdf11/rdf-trig/manifest.ttl", format: RdfFormat::TriG, expected_tests: 356 },
    Suite { name: "rdfxml", manifest: "rdf/rdf11/rdf-xml/manifest.ttl", format: RdfFormat::RdfXml, expected_tests: 166 },
];

const RDF12_SUITES: &[Suite] = &[
    Suite { name: "ntriples12", manifest: "rdf/rdf12/rdf-n-triples/manifest.ttl", format: RdfFormat::NTriples, expected_tests: 140 },
    Suite { name: "nquads12", manifest: "rdf/rdf12/rdf-n-quads/manifest.ttl", format: RdfFormat::NQuads, expected_tests: 155 },
    Suite { name: "turtle12", manifest: "rdf/rdf12/rdf-turtle/manifest.ttl", format: RdfFormat::Turtle, expected_tests: 416 },
    Suite { name: "trig12", manifest: "rdf/rdf12/rdf-trig/manifest.ttl", format: RdfFormat::TriG, expected_tests: 416 },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    PositiveSyntax,
    NegativeSyntax,
    /// Loading must fail (a negative eval test: syntactically fine, but not
    /// valid RDF, e.g. a bad IRI after resolution).
    NegativeEval,
    Eval,
    /// RDF 1.2: the dump in the same syntax is the expected canonical text.
    C14n,
}

struct TestCase {
    iri: String,
    name: String,
    kind: Kind,
    action: String,
    result: Option<String>,
    /// NotApproved or Withdrawn.
    skip: bool,
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
    known: usize,
    /// Failures that are not on the known list, and listed tests that pass.
    unexpected: Vec<String>,
}

#[test]
fn w3c_rdf11_conformance() {
    run_suites(SUITES);
}

#[test]
fn w3c_rdf12_conformance() {
    run_suites(RDF12_SUITES);
}

fn run_suites(suites: &[Suite]) {
    let root = rhizome_w3c::conformance_root(suites[0].manifest);
    let lists = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/w3c");
    let mut totals = Tally::default();
    let mut problems: Vec<String> = Vec::new();
    for suite in suites {
        let known = read_known_failures(&lists.join(format!("known-failures-{}.txt", suite.name)));
        let tests = match read_manifest(&root, suite.manifest) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{}: cannot read the manifest: {e}", suite.name));
                continue;
            }
        };
        if tests.len() != suite.expected_tests {
            problems.push(format!("{}: the manifests list {} tests, expected {}", suite.name, tests.len(), suite.expected_tests));
        }
        let tally = run_suite(&root, suite, &tests, &known);
        println!(
            "{}: {} passed, {} failed, {} skipped ({} known failures)",
            suite.name, tally.passed, tally.failed, tally.skipped, tally.known
        );
        let ids: BTreeSet<&str> = tests.iter().map(|t| t.iri.as_str()).collect();
        for iri in known.keys() {
            if !ids.contains(iri.as_str()) {
                problems.push(format!("{}: {iri} is on the known-failure list but is not a test of the suite", suite.name));
            }
        }
        totals.passed += tally.passed;
        totals.failed += tally.failed;
        totals.skipped += tally.skipped;
        totals.known += tally.known;
        problems.extend(tally.unexpected);
    }
    println!("{} passed, {} failed", totals.passed, totals.failed);
    if !problems.is_empty() {
        panic!("{} unexpected results:\n  {}", problems.len(), problems.join("\n  "));
    }
}

// ---------------------------------------------------------------- manifests

/// The tests of a manifest and of the manifests it includes, in order.
fn read_manifest(root: &Path, rel: &str) -> Result<Vec<TestCase>, String> {
    rhizome_w3c::read_manifest(root, rel, test_case)
}

fn test_case(graph: &Graph, entry: &Term) -> Result<TestCase, String> {
    let subject: NamedOrBlankNode = match entry {
        Term::NamedNode(n) => n.clone().into(),
        Term::BlankNode(b) => b.clone().into(),
        other => return Err(format!("bad test entry {other}")),
    };
    let iri = match entry {
        Term::NamedNode(n) => n.as_str().to_owned(),
        other => other.to_string(),
    };
    let get = |ns: &str, local: &str| graph.object_for_subject_predicate(&subject, NamedNodeRef::new_unchecked(&format!("{ns}{local}"))).map(|t| t.into_owned());
    let iri_of = |t: Option<Term>| -> Option<String> {
        match t {
            Some(Term::NamedNode(n)) => Some(n.into_string()),
            _ => None,
        }
    };
    let mut kind = None;
    let mut types = Vec::new();
    for t in graph.objects_for_subject_predicate(&subject, rdf::TYPE) {
        let TermRef::NamedNode(t) = t else { continue };
        types.push(t.as_str().to_owned());
        let Some(local) = t.as_str().strip_prefix(RDFT) else { continue };
        let k = match local {
            "TestNTriplesPositiveSyntax" | "TestNQuadsPositiveSyntax" | "TestTurtlePositiveSyntax" | "TestTrigPositiveSyntax" => {
                Kind::PositiveSyntax
            }
            "TestNTriplesNegativeSyntax" | "TestNQuadsNegativeSyntax" | "TestTurtleNegativeSyntax" | "TestTrigNegativeSyntax"
            | "TestXMLNegativeSyntax" => Kind::NegativeSyntax,
            "TestTurtleNegativeEval" | "TestTrigNegativeEval" => Kind::NegativeEval,
            "TestTurtleEval" | "TestTrigEval" | "TestXMLEval" => Kind::Eval,
            "TestNTriplesPositiveC14N" | "TestNQuadsPositiveC14N" => Kind::C14n,
            _ => continue,
        };
        kind = Some(k);
    }
    let kind = kind.ok_or_else(|| format!("{iri}: unknown test type {types:?}"))?;
    let action = iri_of(get(MF, "action")).ok_or_else(|| format!("{iri}: no mf:action"))?;
    let result = iri_of(get(MF, "result"));
    if matches!(kind, Kind::Eval | Kind::C14n) && result.is_none() {
        return Err(format!("{iri}: an eval or C14N test without mf:result"));
    }
    let approval = iri_of(get(RDFT, "approval")).or_else(|| iri_of(get(DAWGT, "approval"))).unwrap_or_default();
    let skip = ["NotApproved", "Withdrawn"].iter().any(|s| approval == format!("{RDFT}{s}") || approval == format!("{DAWGT}{s}"));
    let name = match get(MF, "name") {
        Some(Term::Literal(l)) => l.value().to_owned(),
        _ => String::new(),
    };
    Ok(TestCase { iri, name, kind, action, result, skip })
}

// ---------------------------------------------------------------- running

fn run_suite(root: &Path, suite: &Suite, tests: &[TestCase], known: &BTreeMap<String, String>) -> Tally {
    let mut tally = Tally::default();
    for test in tests {
        if test.skip {
            tally.skipped += 1;
            continue;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| run_test(root, suite.format, test)))
            .unwrap_or_else(|p| Err(format!("panicked: {}", panic_message(&p))));
        match (outcome, known.get(&test.iri)) {
            (Ok(()), None) => tally.passed += 1,
            (Ok(()), Some(reason)) => {
                tally.passed += 1;
                tally.unexpected.push(format!("{}: {} passes but is on the known-failure list ({reason})", suite.name, test.iri));
            }
            (Err(why), listed) => {
                tally.failed += 1;
                println!("  FAIL {} ({}): {}{}", test.iri, test.name, why, if listed.is_some() { " [known]" } else { "" });
                if listed.is_some() {
                    tally.known += 1;
                } else {
                    tally.unexpected.push(format!("{}: {} failed: {}", suite.name, test.iri, first_line(&why)));
                }
            }
        }
    }
    tally
}

fn run_test(root: &Path, format: RdfFormat, test: &TestCase) -> Result<(), String> {
    let path = iri_to_path(root, &test.action)?;
    if !path.is_file() {
        return Err(format!("the action {} is missing", path.display()));
    }
    // N-Triples and N-Quads have no base: relative IRIs in them are errors.
    let base = match format {
        RdfFormat::NTriples | RdfFormat::NQuads => None,
        _ => Some(test.action.clone()),
    };
    let store = Store::memory(DatasetMode::Plain);
    let options = LoadOptions { format: Some(format), base_iri: base.clone(), ..Default::default() };
    let loaded = store.load(&[LoadInput { path: path.clone() }], &options);
    match test.kind {
        Kind::PositiveSyntax => {
            if let Err(e) = loaded {
                return Err(format!("the load failed: {e}"));
            }
            // Beyond the W3C test: the store gives back exactly what the
            // parser read (every term round-trips).
            let parsed = parse_file(&path, format, base.as_deref()).map_err(|e| format!("the parser alone fails: {e}"))?;
            let dumped = dump_nquads(&store)?;
            let actual = parse_dataset(&dumped, RdfFormat::NQuads).map_err(|e| format!("the dump does not parse back: {e}"))?;
            compare(actual, parsed).map_err(|e| format!("the store does not give back what the parser read: {e}"))
        }
        Kind::NegativeSyntax | Kind::NegativeEval => {
            match loaded {
                Ok(s) => return Err(format!("the load succeeded ({} quads) but must fail", s.quads_read)),
                Err(Error::Syntax(_)) => {}
                Err(e) => return Err(format!("the load failed, but not with a syntax error: {e}")),
            }
            let dumped = dump_nquads(&store)?;
            if !dumped.is_empty() {
                return Err(format!("the failed load left quads in the store:\n{}", String::from_utf8_lossy(&dumped)));
            }
            Ok(())
        }
        Kind::C14n => {
            if let Err(e) = loaded {
                return Err(format!("the load failed: {e}"));
            }
            let snapshot = store.snapshot().map_err(|e| format!("snapshot: {e}"))?;
            let mut dumped = Vec::new();
            dump(&snapshot, &DumpOptions { format, graph: None }, &mut dumped).map_err(|e| format!("the dump failed: {e}"))?;
            let result = test.result.as_ref().expect("C14N tests have a result");
            let expected_path = iri_to_path(root, result)?;
            let expected = std::fs::read(&expected_path).map_err(|e| format!("cannot read {}: {e}", expected_path.display()))?;
            let (actual, expected) = (canonical_lines(&dumped)?, canonical_lines(&expected)?);
            if actual != expected {
                return Err(format!("the dump is not the canonical form:\n      dumped:   {actual:?}\n      expected: {expected:?}"));
            }
            Ok(())
        }
        Kind::Eval => {
            if let Err(e) = loaded {
                return Err(format!("the load failed: {e}"));
            }
            let dumped = dump_nquads(&store)?;
            let actual = parse_dataset(&dumped, RdfFormat::NQuads).map_err(|e| format!("the dump does not parse back: {e}"))?;
            let result = test.result.as_ref().expect("eval tests have a result");
            let expected_path = iri_to_path(root, result)?;
            let expected_format = if format == RdfFormat::TriG || result.ends_with(".nq") { RdfFormat::NQuads } else { RdfFormat::NTriples };
            let bytes = std::fs::read(&expected_path).map_err(|e| format!("cannot read {}: {e}", expected_path.display()))?;
            let expected = parse_dataset(&bytes, expected_format).map_err(|e| format!("the expected result does not parse: {e}"))?;
            compare(actual, expected.clone()).map_err(|why| {
                // Say whose fault it is: the parser's, or the store's.
                let blame = match parse_file(&path, format, base.as_deref()) {
                    Ok(parsed) if compare(parsed.clone(), expected).is_ok() => "the parser alone gives the expected result: the store changed it",
                    Ok(_) => "the parser alone does not give the expected result either: a parser issue",
                    Err(_) => "the parser alone fails",
                };
                format!("{why}\n      ({blame})")
            })
        }
    }
}

/// The lines of canonical N-Triples or N-Quads, sorted, with blank node
/// labels renamed in order of appearance (the store names its own).
fn canonical_lines(bytes: &[u8]) -> Result<Vec<String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for line in lines {
        // Blank node labels outside literals: `_:` after a space or `(`.
        let mut renamed = String::new();
        let mut in_literal = false;
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if in_literal {
                renamed.push(c);
                if c == '\\' {
                    if let Some((_, n)) = chars.next() {
                        renamed.push(n);
                    }
                } else if c == '"' {
                    in_literal = false;
                }
                continue;
            }
            if c == '"' {
                in_literal = true;
            }
            if c == '_' && line[i..].starts_with("_:") {
                let end = line[i..].find([' ', ')']).map_or(line.len(), |e| i + e);
                let n = labels.len();
                let label = labels.entry(line[i..end].to_owned()).or_insert_with(|| format!("_:b{n}"));
                renamed.push_str(label);
                while chars.peek().is_some_and(|(j, _)| *j < end) {
                    chars.next();
                }
                continue;
            }
            renamed.push(c);
        }
        out.push(renamed);
    }
    Ok(out)
}

fn dump_nquads(store: &Store) -> Result<Vec<u8>, String> {
    let snapshot = store.snapshot().map_err(|e| format!("snapshot: {e}"))?;
    let mut out = Vec::new();
    dump(&snapshot, &DumpOptions { format: RdfFormat::NQuads, graph: None }, &mut out).map_err(|e| format!("the dump failed: {e}"))?;
    Ok(out)
}

/// The input read by the parser alone, not through the store.
fn parse_file(path: &Path, format: RdfFormat, base: Option<&str>) -> Result<Dataset, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut parser = RdfParser::from_format(format);
    if let Some(base) = base {
        parser = parser.with_base_iri(base).map_err(|e| e.to_string())?;
    }
    let mut dataset = Dataset::new();
    for q in parser.for_slice(&bytes) {
        dataset.insert(&q.map_err(|e| e.to_string())?);
    }
    Ok(dataset)
}

fn parse_dataset(bytes: &[u8], format: RdfFormat) -> Result<Dataset, String> {
    let mut dataset = Dataset::new();
    for q in RdfParser::from_format(format).for_slice(bytes) {
        dataset.insert(&q.map_err(|e| e.to_string())?);
    }
    Ok(dataset)
}

/// Isomorphism: equal once blank nodes are canonically relabelled.
fn compare(mut actual: Dataset, mut expected: Dataset) -> Result<(), String> {
    actual.canonicalize(CanonicalizationAlgorithm::Unstable);
    expected.canonicalize(CanonicalizationAlgorithm::Unstable);
    if actual == expected {
        return Ok(());
    }
    let a: BTreeSet<String> = actual.iter().map(|q| q.to_string()).collect();
    let e: BTreeSet<String> = expected.iter().map(|q| q.to_string()).collect();
    let mut why = format!("not isomorphic to the expected result ({} quads, expected {})", a.len(), e.len());
    const SHOWN: usize = 8;
    for (label, diff) in [("missing", e.difference(&a).collect::<Vec<_>>()), ("unexpected", a.difference(&e).collect())] {
        for q in diff.iter().take(SHOWN) {
            let _ = write!(why, "\n      {label}: {q}");
        }
        if diff.len() > SHOWN {
            let _ = write!(why, "\n      ... and {} more {label}", diff.len() - SHOWN);
        }
    }
    Err(why)
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
