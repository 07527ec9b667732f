//! The executor's lookups take their first 16 quads from segment scans
//! one at a time, then in batches that grow (128, then 1,024 quads),
//! and hashed patterns group their quads by a counting sort. On a store
//! loaded to segments, with lookups whose quads cross every batch size,
//! lookups abandoned part-way (EXISTS, LIMIT) whose scans are then
//! re-pointed, and delta entries between the segment rows, every answer
//! must be the one the data gives.

use rhizome_rdf::{DatasetMode, LoadInput, LoadOptions, Store};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, Statistics};
use std::io::Write;

const EX: &str = "http://ex/";
const ITEMS: usize = 400;

/// Item `i`'s tags: from 0 to about 1,300, so lookups end inside each
/// batch size and past several batches.
fn tags_of(i: usize) -> usize {
    match i % 8 {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 17,
        4 => 146,
        5 => 1_300 + i % 7,
        _ => i % 40,
    }
}

/// A store on disk whose quads were bulk loaded (so they live in
/// segments), dropped with its folder.
struct Loaded {
    store: Store,
    dir: std::path::PathBuf,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn loaded() -> Loaded {
    let dir = std::env::temp_dir().join(format!("rhizome-batched-lookups-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.nt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..ITEMS {
        writeln!(f, "<{EX}i{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Item> .").unwrap();
        for t in 0..tags_of(i) {
            writeln!(f, "<{EX}i{i}> <{EX}tag> <{EX}t{t}> .").unwrap();
        }
    }
    drop(f);
    let store = Store::open_or_create(&dir.join("db"), Some(DatasetMode::Plain)).unwrap();
    store.load(&[LoadInput { path }], &LoadOptions::default()).unwrap();
    Loaded { store, dir }
}

/// The single integer a `SELECT (COUNT(..) AS ?n)` query gives, with
/// patterns hashed after `hash_after` lookups (`None`: the engine's own
/// choice).
fn count(store: &Store, text: &str, hash_after: Option<u64>) -> usize {
    let snapshot = store.snapshot().unwrap();
    let stats = Statistics::from_store(&store.planner_stats().unwrap());
    let prepared = PreparedQuery::new(&snapshot, stats, &parse_query(&format!("PREFIX : <{EX}> {text}"), None).unwrap()).unwrap();
    if let Some(n) = hash_after {
        prepared.set_hash_join_after(n);
    }
    let QueryResults::Solutions { solutions, .. } = prepared.execute().unwrap() else { panic!("not a SELECT") };
    let rows: Vec<_> = solutions.map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{text}");
    let n = rows[0][0].as_ref().expect("a count").to_string();
    n.trim_start_matches('"').split('"').next().unwrap().parse().unwrap_or_else(|_| panic!("{text}: {n}"))
}

/// Each query's count with lookups only, hashed after the first lookup
/// and as the engine chooses.
fn counts(store: &Store, text: &str) -> [usize; 3] {
    [count(store, text, Some(u64::MAX)), count(store, text, Some(1)), count(store, text, None)]
}

/// Checks the counts against item `i`'s tags, `tags(i)` (their numbers).
fn check(store: &Store, tags: &dyn Fn(usize) -> Vec<usize>) {
    let all: usize = (0..ITEMS).map(|i| tags(i).len()).sum();
    let tagged = (0..ITEMS).filter(|i| !tags(*i).is_empty()).count();
    let below = |n: usize| (0..ITEMS).map(|i| tags(i).iter().filter(|t| **t < n).count()).sum::<usize>();
    // Every lookup read to its end, across batch sizes.
    assert_eq!(counts(store, "SELECT (COUNT(*) AS ?n) { ?i a :Item . ?i :tag ?t }"), [all; 3], "every tag");
    // Lookups abandoned after their first quad, their scans re-pointed.
    assert_eq!(counts(store, "SELECT (COUNT(*) AS ?n) { ?i a :Item FILTER EXISTS { ?i :tag ?t } }"), [tagged; 3], "EXISTS");
    assert_eq!(counts(store, "SELECT (COUNT(*) AS ?n) { ?i a :Item FILTER NOT EXISTS { ?i :tag ?t } }"), [ITEMS - tagged; 3], "NOT EXISTS");
    // A scan stopped by a LIMIT inside a batch (the subquery's ?i is its
    // own: `limit` tags of all items, joined to every item).
    for limit in [1, 2, 3, 17, 18, 150, 1_200] {
        let text = format!("SELECT (COUNT(*) AS ?n) {{ ?i a :Item {{ SELECT ?t {{ ?x :tag ?t }} LIMIT {limit} }} }}");
        assert_eq!(count(store, &text, None), ITEMS * all.min(limit), "{text}");
    }
    // A lookup per item whose quads are filtered as they come.
    for n in [1, 2, 3, 17, 18, 147] {
        let list = (0..n).map(|t| format!(":t{t}")).collect::<Vec<_>>().join(", ");
        let text = format!("SELECT (COUNT(*) AS ?n) {{ ?i a :Item . ?i :tag ?t FILTER(?t IN ({list})) }}");
        assert_eq!(counts(store, &text), [below(n); 3], "{text}");
    }
}

#[test]
fn lookups_in_growing_batches_give_every_quad_once() {
    let loaded = loaded();
    let store = &loaded.store;
    check(store, &|i| (0..tags_of(i)).collect());
    // Delta entries between the segment rows: some tags deleted, some
    // added, so batches stop at them.
    let mut delete = String::new();
    let mut insert = String::new();
    for i in (4..ITEMS).step_by(8) {
        delete.push_str(&format!(":i{i} :tag :t3 . :i{i} :tag :t100 . "));
        insert.push_str(&format!(":i{i} :tag :t{} . ", 5_000 + i));
    }
    let update = format!("PREFIX : <{EX}> DELETE DATA {{ {delete} }} ; INSERT DATA {{ {insert} }}");
    execute_update(store, &parse_update(&update, None).unwrap()).unwrap();
    check(store, &|i| {
        let mut tags: Vec<usize> = (0..tags_of(i)).collect();
        if i % 8 == 4 {
            tags.retain(|t| *t != 3 && *t != 100);
            tags.push(5_000 + i);
        }
        tags
    });
}
