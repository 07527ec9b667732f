//! Bad input never panics and never corrupts: every query and update of the
//! W3C SPARQL suites, mutated at the token level (tokens dropped,
//! repeated, swapped, or replaced by other SPARQL syntax), is parsed,
//! planned and run against a small store in both dataset modes. Each must
//! give an answer or a clear error; an update that fails must leave the
//! store exactly as it was. A fixed seed and a bounded count keep it a
//! CI test (the libFuzzer targets under `fuzz/` explore further).
//!
//! The queries are read from `$RHIZOME_CONFORMANCE`, or `shared/conformance`
//! beside the repository.

use rhizome_rdf::{DatasetMode, QuadPattern, Store};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, Statistics};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SEED: u64 = 0x5eed_0f_5a4a1;
const MUTANTS_PER_FILE: usize = 24;

/// Data with a bit of everything the engine treats apart: IRIs, blank
/// nodes, inlined and dictionary literals of each kind, named graphs.
const DATA: &str = r#"PREFIX : <http://example.org/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
INSERT DATA {
  :a :p :b ; :q 1, 2.5, "3"^^xsd:int, 1.0e0, "x", "y"@en, "2010-01-01"^^xsd:date, "2010-01-01T10:00:00Z"^^xsd:dateTime, true .
  :b :p :c ; :q "a long string value that is not inlined" ; :r _:n .
  :c :p :a ; :list (1 2 3) .
  _:n :p :a ; :q -7 .
  GRAPH :g { :a :p :c . :c :q 42 }
  GRAPH :h { :b :q "z" }
}"#;

/// Syntax a mutation may put in place of a token.
const INSERTS: &[&str] = &[
    "{", "}", "(", ")", ".", ";", ",", "*", "+", "?", "/", "|", "^", "!", "a", "?x", "?y", "$z", "_:b", "[]", "()", "0", "-1", "1.5e308",
    "\"x\"@en", "<http://example.org/a>", ":p", "OPTIONAL", "UNION", "MINUS", "FILTER", "GRAPH", "SERVICE", "VALUES", "BIND", "AS", "SELECT",
    "DISTINCT", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT 1", "OFFSET 2", "COUNT(*)", "EXISTS", "NOT", "SUM(?x)", "STR(?x)",
    "IRI(?x)", "NOW()", "CONCAT(?x, ?y)", "SUBSTR(?x, 0, 99999999999)", "REPLACE(?x, \".*\", \"$1\")", "xsd:dateTime(?x)", "?x / 0",
    "INSERT", "DELETE", "DATA", "CLEAR", "DROP", "ALL", "DEFAULT", "NAMED", "WITH", "USING", "COPY", "MOVE", "ADD", "TO",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Splits text into tokens at whitespace, with brackets and the
/// punctuation that ends a triple peeled off as tokens of their own (the
/// split is rough on purpose: a mutant need not be valid).
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Comments end at the line's end: drop them before lines are joined.
    let uncommented: Vec<&str> = text.lines().map(|l| l.find(" #").or(l.trim_start().starts_with('#').then_some(0)).map_or(l, |i| &l[..i])).collect();
    for word in uncommented.join("\n").split_whitespace() {
        let mut word = word;
        while let Some(rest) = word.strip_prefix(['{', '(']) {
            out.push(word[..1].to_owned());
            word = rest;
        }
        let mut tail = Vec::new();
        while word.len() > 1 || matches!(word, "}" | ")" | "." | ";" | ",") {
            match word.strip_suffix(['}', ')', '.', ';', ',']) {
                Some(rest) if !word.ends_with(">") => {
                    tail.push(word[rest.len()..].to_owned());
                    word = rest;
                }
                _ => break,
            }
        }
        if !word.is_empty() {
            out.push(word.to_owned());
        }
        out.extend(tail.into_iter().rev());
    }
    out
}

/// A token's kind, for substitutions that keep a mutant parseable more
/// often than not: variables, IRIs and names, literals, other syntax.
fn class(token: &str) -> usize {
    match token.chars().next() {
        Some('?' | '$') => 0,
        Some('<') => 1,
        Some('"' | '\'' | '0'..='9' | '-' | '+') => 2,
        _ if token.contains(':') => 1,
        _ => 3,
    }
}

fn mutate(rng: &mut Rng, original: &[String], pool: &[Vec<String>; 4]) -> String {
    let mut t = original.to_vec();
    for _ in 0..1 + rng.below(3) {
        if t.is_empty() {
            break;
        }
        let i = rng.below(t.len());
        match rng.below(10) {
            // The same kind of token: IRIs and names from the same file
            // (its prefixes are declared), the others from any file.
            0..=5 => {
                let c = class(&t[i]);
                let own: Vec<&String> = original.iter().filter(|x| class(x) == c).collect();
                t[i] = if c == 1 { own[rng.below(own.len())].clone() } else { pool[c][rng.below(pool[c].len())].clone() };
            }
            6 => {
                t.remove(i);
            }
            7 => {
                let copy = t[i].clone();
                t.insert(rng.below(t.len() + 1), copy);
            }
            8 => {
                let j = rng.below(t.len());
                t.swap(i, j);
            }
            _ => t[i] = INSERTS[rng.below(INSERTS.len())].to_owned(),
        }
    }
    t.join(" ")
}

/// Every file under `dir` with the extension, sorted (a fixed order for
/// the fixed seed).
fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn store(mode: DatasetMode) -> Store {
    let store = Store::memory(mode);
    execute_update(&store, &parse_update(DATA, None).unwrap()).unwrap();
    store
}

/// Every quad of the store, in index order.
fn contents(store: &Store) -> Vec<[rhizome_rdf::TermId; 4]> {
    store.snapshot().unwrap().scan(QuadPattern::default()).map(|q| q.unwrap()).collect()
}

fn run_query(store: &Store, text: &str) -> Result<(), String> {
    let query = parse_query(text, Some("http://example.org/")).map_err(|e| e.to_string())?;
    let snapshot = store.snapshot().map_err(|e| e.to_string())?;
    let stats = Statistics::from_store(&store.planner_stats().map_err(|e| e.to_string())?);
    let prepared = PreparedQuery::new(&snapshot, stats, &query).map_err(|e| e.to_string())?;
    prepared.set_timeout(Duration::from_secs(2));
    prepared.set_memory_limit(64 << 20);
    match prepared.execute().map_err(|e| e.to_string())? {
        QueryResults::Solutions { solutions, .. } => {
            for s in solutions.take(2000) {
                s.map_err(|e| e.to_string())?;
            }
        }
        QueryResults::Graph(triples) => {
            for t in triples.take(2000) {
                t.map_err(|e| e.to_string())?;
            }
        }
        QueryResults::Boolean(_) => {}
    }
    Ok(())
}

/// What went wrong with one mutant: a panic, or a failed update that
/// changed the store.
fn check(kind: &str, text: &str, mode: DatasetMode) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let store = store(mode);
        if kind == "query" {
            let _ = run_query(&store, text);
            return None;
        }
        // LOAD reads files and the web: not something to point at random.
        if text.contains("LOAD") {
            return None;
        }
        let before = contents(&store);
        let update = parse_update(text, Some("http://example.org/")).ok()?;
        match execute_update(&store, &update) {
            Ok(_) => None,
            Err(e) => (contents(&store) != before).then(|| format!("a failed update ({e}) changed the store")),
        }
    }));
    match outcome {
        Ok(problem) => problem,
        Err(p) => Some(format!("panicked: {}", p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default())),
    }
    .map(|problem| format!("{kind} ({mode:?}): {problem}\n    {text}"))
}

#[test]
fn mutated_w3c_queries_and_updates_answer_or_fail_cleanly() {
    let root = rhizome_w3c::conformance_root("sparql").join("sparql");
    let mut rng = Rng(SEED);
    let (mut tried, mut parsed, mut originals, mut originals_parsed) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    // Panics are caught and reported with their input: keep them quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut inputs = Vec::new();
    let mut pool: [Vec<String>; 4] = Default::default();
    for (kind, extension) in [("query", "rq"), ("update", "ru")] {
        for file in files(&root, extension) {
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            let original = tokens(&text);
            for t in &original {
                pool[class(t)].push(t.clone());
            }
            originals += 1;
            let joined = original.join(" ");
            originals_parsed += usize::from(if kind == "query" { parse_query(&joined, None).is_ok() } else { parse_update(&joined, None).is_ok() });
            inputs.push((kind, original));
        }
    }
    for (kind, original) in &inputs {
        for _ in 0..MUTANTS_PER_FILE {
            let mutant = mutate(&mut rng, original, &pool);
            let mode = if rng.below(2) == 0 { DatasetMode::Plain } else { DatasetMode::Union };
            tried += 1;
            let parses = if *kind == "query" { parse_query(&mutant, Some("http://example.org/")).is_ok() } else { parse_update(&mutant, Some("http://example.org/")).is_ok() };
            parsed += usize::from(parses);
            if let Some(problem) = check(kind, &mutant, mode) {
                problems.push(problem);
            }
        }
    }
    std::panic::set_hook(hook);
    println!("{tried} mutated requests, {parsed} of them valid SPARQL, {} problems ({originals_parsed} of {originals} files parse once split into tokens)", problems.len());
    // Guards against a tokenizer or mutations that never make anything
    // runnable.
    assert!(originals_parsed > originals * 3 / 4, "{originals_parsed} of {originals} files parse once split into tokens");
    assert!(tried > 10_000 && parsed > tried / 20, "{parsed} of {tried} mutants parsed");
    assert!(problems.is_empty(), "{} mutants went wrong:\n  {}", problems.len(), problems.iter().take(10).cloned().collect::<Vec<_>>().join("\n  "));
}
