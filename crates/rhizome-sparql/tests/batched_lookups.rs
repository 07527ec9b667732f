//! The executor's lookups take their first 16 quads from segment scans
//! one at a time, then in batches that grow (128, then 1,024 quads),
//! and hashed patterns group their quads by a counting sort. On a store
//! loaded to segments, with lookups whose quads cross every batch size,
//! lookups abandoned part-way (EXISTS, LIMIT) whose scans are then
//! re-pointed, and delta entries between the segment rows, every answer
//! must be the one the data gives. Stars read their subjects through one
//! cursor kept from row to row (the second test).

use rhizome_rdf::{DatasetMode, LoadInput, LoadOptions, Store};
use rhizome_sparql::{execute_update, parse_query, parse_update, PreparedQuery, QueryResults, Statistics};
use std::collections::BTreeSet;
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

/// A new store folder named `name` with the N-Triples `write` gives bulk
/// loaded into it.
fn load_nt(name: &str, mode: DatasetMode, write: impl FnOnce(&mut dyn Write)) -> Loaded {
    let dir = std::env::temp_dir().join(format!("rhizome-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.nt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write(&mut f);
    drop(f);
    let store = Store::open_or_create(&dir.join("db"), Some(mode)).unwrap();
    store.load(&[LoadInput { path }], &LoadOptions::default()).unwrap();
    Loaded { store, dir }
}

fn loaded() -> Loaded {
    load_nt("batched-lookups", DatasetMode::Plain, |f| {
        for i in 0..ITEMS {
            writeln!(f, "<{EX}i{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Item> .").unwrap();
            for t in 0..tags_of(i) {
                writeln!(f, "<{EX}i{i}> <{EX}tag> <{EX}t{t}> .").unwrap();
            }
        }
    })
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

// A star (`?x :name ?n ; :email ?e` with `?x` bound on the left) reads
// its subjects' quads through one cursor kept from row to row, moving
// along the subject index while the rows come in subject order and
// seeking otherwise. On random data loaded to segments, with rows in
// subject order and out of it, subjects asked for several times in a row,
// subjects with no quads and with more than a star reads at once, stars
// inside OPTIONAL and under FILTER, and delta entries (deletes and
// inserts) between the segment rows, every answer must be the one the
// data gives, computed here from the data itself.

const SUBJECTS: usize = 700;

/// splitmix64: deterministic numbers without a dependency.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Triples as (subject number, predicate, object as written in N-Triples).
type Triples = BTreeSet<(usize, &'static str, String)>;

fn random_data(seed: u64) -> Triples {
    let mut state = seed;
    let mut below = |n: usize| (splitmix(&mut state) % n as u64) as usize;
    let mut t = Triples::new();
    for i in 0..SUBJECTS {
        // Every seventh subject is not an item (a gap in the rows the
        // items drive), every eleventh has no quads besides its type.
        t.insert((i, "type", format!("<{EX}{}>", if i % 7 == 3 { "Other" } else { "Item" })));
        if i % 11 == 5 {
            continue;
        }
        for _ in 0..below(3) {
            t.insert((i, "name", format!("\"n{}\"", below(5))));
        }
        for _ in 0..below(3) {
            t.insert((i, "email", format!("\"e{}@x\"", below(4))));
        }
        // Some subjects have more quads than a star reads at once (64).
        let tags = if i % 50 == 7 { 90 } else { below(4) };
        for k in 0..tags {
            t.insert((i, "tag", format!("<{EX}t{k}>")));
        }
        for _ in 0..below(3) {
            t.insert((i, "next", format!("<{EX}s{}>", below(SUBJECTS + 20))));
        }
    }
    t
}

/// The triples bulk loaded (into segments) into a new store.
fn load(triples: &Triples, mode: DatasetMode) -> Loaded {
    load_nt(&format!("star-runs-{mode:?}"), mode, |f| {
        for (s, p, o) in triples {
            let p = if *p == "type" { "http://www.w3.org/1999/02/22-rdf-syntax-ns#type".to_owned() } else { format!("{EX}{p}") };
            writeln!(f, "<{EX}s{s}> <{p}> {o} .").unwrap();
        }
    })
}

/// A query's rows, each as its terms written out ("-" unbound), sorted.
fn rows(store: &Store, text: &str) -> Vec<Vec<String>> {
    let snapshot = store.snapshot().unwrap();
    let stats = Statistics::from_store(&store.planner_stats().unwrap());
    let prepared = PreparedQuery::new(&snapshot, stats, &parse_query(&format!("PREFIX : <{EX}> {text}"), None).unwrap()).unwrap();
    let QueryResults::Solutions { solutions, .. } = prepared.execute().unwrap() else { panic!("not a SELECT") };
    let mut out: Vec<Vec<String>> = solutions.map(|r| r.unwrap().iter().map(|t| t.as_ref().map_or("-".to_owned(), |t| t.to_string())).collect()).collect();
    out.sort();
    out
}

/// What the data gives for each query.
struct Expected<'a>(&'a Triples);

impl Expected<'_> {
    fn values(&self, s: usize, p: &str) -> Vec<String> {
        self.0.iter().filter(|(x, q, _)| *x == s && *q == p).map(|(_, _, o)| o.clone()).collect()
    }
    fn subject(s: usize) -> String {
        format!("<{EX}s{s}>")
    }
    fn items(&self) -> Vec<usize> {
        (0..SUBJECTS).filter(|s| self.values(*s, "type").contains(&format!("<{EX}Item>"))).collect()
    }
    /// Subjects each `?y :next ?x` row gives, in the data's order (not the
    /// subjects' order), duplicates kept; those without quads too.
    fn linked(&self) -> Vec<usize> {
        self.0.iter().filter(|(_, p, _)| *p == "next").map(|(_, _, o)| o.trim_start_matches(&format!("<{EX}s")).trim_end_matches('>').parse().unwrap()).collect()
    }
    fn star(&self, subjects: &[usize], preds: &[&str]) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for &s in subjects {
            let mut rows = vec![vec![Self::subject(s)]];
            for p in preds {
                let vals = self.values(s, p);
                rows = rows.iter().flat_map(|r| vals.iter().map(move |v| [r.clone(), vec![v.clone()]].concat())).collect();
            }
            out.extend(rows);
        }
        out.sort();
        out
    }
}

fn check_stars(store: &Store, data: &Triples, what: &str) {
    let e = Expected(data);
    let items = e.items();
    // Rows in subject order (the items' POS scan).
    assert_eq!(rows(store, "SELECT ?x ?n ?m { ?x a :Item ; :name ?n ; :email ?m }"), e.star(&items, &["name", "email"]), "{what}: star on items");
    // Subjects with more quads than a star reads at once.
    assert_eq!(rows(store, "SELECT ?x ?t ?n { ?x a :Item ; :tag ?t ; :name ?n }"), e.star(&items, &["tag", "name"]), "{what}: star with big subjects");
    // Rows out of subject order, subjects repeated and without quads.
    let linked = e.linked();
    let mut expected: Vec<Vec<String>> = e.star(&linked, &["name", "tag"]);
    expected.sort();
    assert_eq!(rows(store, "SELECT ?x ?n ?t { ?y :next ?x . ?x :name ?n ; :tag ?t }"), expected, "{what}: star on linked subjects");
    // OPTIONAL around a star: an item without both keeps one row.
    let mut expected = Vec::new();
    for &s in &items {
        let star = e.star(&[s], &["name", "email"]);
        if star.is_empty() {
            expected.push(vec![Expected::subject(s), "-".to_owned(), "-".to_owned()]);
        }
        expected.extend(star);
    }
    expected.sort();
    assert_eq!(rows(store, "SELECT ?x ?n ?m { ?x a :Item OPTIONAL { ?x :name ?n ; :email ?m } }"), expected, "{what}: OPTIONAL star");
    // A subject asked for once per row of its `:next` values, rows of
    // one subject together (a star in OPTIONAL, evaluated per row).
    let mut expected = Vec::new();
    for &s in &items {
        let star = e.star(&[s], &["name", "email"]);
        for y in e.values(s, "next") {
            if star.is_empty() {
                expected.push(vec![Expected::subject(s), y.clone(), "-".to_owned(), "-".to_owned()]);
            }
            expected.extend(star.iter().map(|r| vec![r[0].clone(), y.clone(), r[1].clone(), r[2].clone()]));
        }
    }
    expected.sort();
    assert_eq!(rows(store, "SELECT ?x ?y ?n ?m { ?x a :Item ; :next ?y OPTIONAL { ?x :name ?n ; :email ?m } }"), expected, "{what}: star on repeated subjects");
    // FILTER on a star's values.
    let filtered: Vec<Vec<String>> = e.star(&items, &["name", "email"]).into_iter().filter(|r| r[1] != "\"n1\"").collect();
    assert_eq!(rows(store, "SELECT ?x ?n ?m { ?x a :Item ; :name ?n ; :email ?m FILTER(?n != \"n1\") }"), filtered, "{what}: FILTER star");
    // Counted.
    let n = e.star(&items, &["name", "email"]).len();
    assert_eq!(rows(store, "SELECT (COUNT(*) AS ?c) { ?x a :Item ; :name ?n ; :email ?m }"), vec![vec![format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>")]], "{what}: count");
}

#[test]
fn a_star_read_through_one_cursor_gives_what_the_data_gives() {
    for (seed, mode) in [(0x5eed_0001u64, DatasetMode::Plain), (0x5eed_0002, DatasetMode::Union), (7, DatasetMode::Plain), (8, DatasetMode::Union)] {
        let mut data = random_data(seed);
        let loaded = load(&data, mode);
        check_stars(&loaded.store, &data, &format!("{mode:?} loaded"));
        // Delta entries between the segment rows: names and emails
        // deleted, others added (some to subjects that had none).
        let (mut delete, mut insert) = (String::new(), String::new());
        let existing: Vec<_> = data.iter().filter(|(_, p, _)| *p == "name" || *p == "email").cloned().collect();
        for (k, (s, p, o)) in existing.iter().enumerate() {
            if k % 5 == 0 {
                delete.push_str(&format!(":s{s} :{p} {o} . "));
                data.remove(&(*s, p, o.clone()));
            }
        }
        for s in (0..SUBJECTS).step_by(9) {
            let o = format!("\"added{s}\"");
            insert.push_str(&format!(":s{s} :name {o} . :s{s} :email {o} . "));
            data.insert((s, "name", o.clone()));
            data.insert((s, "email", o));
        }
        let update = format!("PREFIX : <{EX}> DELETE DATA {{ {delete} }} ; INSERT DATA {{ {insert} }}");
        execute_update(&loaded.store, &parse_update(&update, None).unwrap()).unwrap();
        check_stars(&loaded.store, &data, &format!("{mode:?} with a delta"));
    }
}
