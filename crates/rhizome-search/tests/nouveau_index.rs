//! A Nouveau index over a real database on disk: building, Lucene's
//! query forms, sort, paging by bookmark, counts, ranges, and upkeep as
//! documents change.

use rhizome_docs::{Database, NoProjection};
use rhizome_search::{index, search, NouveauDef, SearchRequest};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const INDEX_FN: &str = r#"function (doc) {
  if (doc.title) index("text", "title", doc.title, {store: true});
  if (doc.title) index("text", "default", doc.title);
  if (doc.kind) index("string", "kind", doc.kind, {store: true});
  if (typeof doc.price === "number") index("double", "price", doc.price, {store: true});
  if (doc.note) index("stored", "note", doc.note);
}"#;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn def() -> (NouveauDef, Value) {
    let body = json!({"_id": "_design/s", "nouveau": {"books": {"index": INDEX_FN, "field_analyzers": {"title": "english"}}}});
    let defs = NouveauDef::parse_all("_design/s", &obj(body.clone())).unwrap();
    (defs.into_iter().next().unwrap(), body)
}

fn put(db: &Database, docs: Vec<Value>) {
    let out = db.update_docs(docs.into_iter().map(obj).collect(), true).unwrap();
    assert_eq!(out.len(), out.iter().filter(|(_, o)| o.is_ok()).count(), "{out:?}");
}

fn books(db: &Database) {
    put(
        db,
        vec![
            json!({"_id": "b1", "title": "The quick brown fox jumps", "kind": "novel", "price": 12.5, "note": "first"}),
            json!({"_id": "b2", "title": "Running with foxes", "kind": "essay", "price": 30}),
            json!({"_id": "b3", "title": "A brown dog sleeps", "kind": "novel", "price": 7}),
            json!({"_id": "b4", "title": "Quick recipes for busy cooks", "kind": "cookbook", "price": 19.99}),
            json!({"_id": "b5", "kind": "novel"}),
        ],
    );
}

fn run(db: &Database, q: &str, f: impl FnOnce(&mut SearchRequest)) -> Value {
    let (d, body) = def();
    let files = index::refresh(db, "db", &d, &body, rhizome_views::Limits::from_env()).unwrap();
    let mut req = SearchRequest { q: q.into(), ..Default::default() };
    f(&mut req);
    search(db, &files, &req).unwrap()
}

fn ids(answer: &Value) -> Vec<String> {
    answer["hits"].as_array().unwrap().iter().map(|h| h["id"].as_str().unwrap().to_owned()).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn lucene_query_forms_find_what_they_should() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    // A term, stemmed by the field's analyzer (english): foxes -> fox.
    assert_eq!(sorted(ids(&run(&db, "title:fox", |_| {}))), ["b1", "b2"]);
    // A phrase.
    assert_eq!(ids(&run(&db, "title:\"brown fox\"", |_| {})), ["b1"]);
    // A prefix, and the default field.
    assert_eq!(sorted(ids(&run(&db, "title:quic*", |_| {}))), ["b1", "b4"]);
    assert_eq!(sorted(ids(&run(&db, "brown", |_| {}))), ["b1", "b3"]);
    // Boolean forms.
    assert_eq!(ids(&run(&db, "title:brown AND kind:novel AND -title:dog", |_| {})), ["b1"]);
    assert_eq!(sorted(ids(&run(&db, "kind:essay OR kind:cookbook", |_| {}))), ["b2", "b4"]);
    // Numeric ranges and exact values on doubles.
    assert_eq!(sorted(ids(&run(&db, "price:[10 TO 20]", |_| {}))), ["b1", "b4"]);
    assert_eq!(sorted(ids(&run(&db, "price:{7 TO *]", |_| {}))), ["b1", "b2", "b4"]);
    assert_eq!(ids(&run(&db, "price:30", |_| {})), ["b2"]);
    // Every document, and a field nobody indexed.
    assert_eq!(run(&db, "*:*", |_| {})["total_hits"], 5);
    assert_eq!(run(&db, "nosuchfield:x", |_| {})["total_hits"], 0);
}

#[test]
fn and_not_excludes_as_lucene_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    // Lucene reads `a AND NOT b` as `+a -b` (tantivy's grammar as `+a +(-b)`,
    // which found nothing).
    assert_eq!(ids(&run(&db, "brown AND NOT dog", |_| {})), ["b1"]);
    assert_eq!(ids(&run(&db, "title:brown AND NOT kind:novel", |_| {})), Vec::<String>::new());
    assert_eq!(sorted(ids(&run(&db, "kind:novel AND NOT title:dog AND NOT title:fox", |_| {}))), ["b5"]);
    assert_eq!(ids(&run(&db, "(quick OR brown) AND NOT (fox OR cooks)", |_| {})), ["b3"]);
}

#[test]
fn answers_have_nouveaus_shape_with_stored_fields_and_docs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    let a = run(&db, "title:brown", |r| {
        r.sort = vec!["price<double>".into()];
        r.include_docs = true;
    });
    assert_eq!(a["total_hits"], 2);
    assert_eq!(a["total_hits_relation"], "EQUAL_TO");
    assert!(a["bookmark"].is_string());
    assert_eq!(a["counts"], Value::Null);
    let hits = a["hits"].as_array().unwrap();
    assert_eq!(hits[0]["id"], "b3");
    assert_eq!(hits[0]["order"], json!([{"@type": "double", "value": 7.0}, {"@type": "string", "value": "b3"}]));
    assert_eq!(hits[1]["fields"], json!({"title": "The quick brown fox jumps", "kind": "novel", "price": 12.5, "note": "first"}));
    assert_eq!(hits[1]["doc"]["_id"], "b1");
    assert!(hits[1]["doc"]["_rev"].is_string());
    let desc = run(&db, "*:*", |r| r.sort = vec!["-kind<string>".into()]);
    assert_eq!(ids(&desc), ["b1", "b3", "b5", "b2", "b4"]);
}

#[test]
fn bookmarks_page_through_every_hit_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    let docs: Vec<Value> = (0..57).map(|i| json!({"_id": format!("d{i:03}"), "title": format!("common word {}", if i % 3 == 0 { "extra" } else { "" }), "price": i % 7})).collect();
    put(&db, docs);
    for sort in [vec![], vec!["-price<double>".to_owned()]] {
        let mut seen = Vec::new();
        let mut bookmark = None;
        loop {
            let a = run(&db, "title:common", |r| {
                r.limit = 10;
                r.bookmark = bookmark.clone();
                r.sort = sort.clone();
            });
            let page = ids(&a);
            if page.is_empty() {
                assert_eq!(a["bookmark"].as_str(), bookmark.as_deref(), "the last page gives the same bookmark back");
                break;
            }
            assert!(page.len() <= 10);
            seen.extend(page);
            bookmark = Some(a["bookmark"].as_str().unwrap().to_owned());
        }
        assert_eq!(seen.len(), 57, "{sort:?}");
        assert_eq!(sorted(seen).windows(2).filter(|w| w[0] == w[1]).count(), 0);
    }
}

#[test]
fn counts_and_ranges_cover_every_match() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    let a = run(&db, "*:*", |r| {
        r.limit = 1;
        r.counts = Some(vec!["kind".into()]);
        r.ranges = Some(obj(json!({"price": [{"label": "cheap", "min": 0, "max": 15}, {"label": "dear", "min": 15, "min_inclusive": false}]})));
    });
    assert_eq!(a["counts"], json!({"kind": {"cookbook": 1, "essay": 1, "novel": 3}}));
    assert_eq!(a["ranges"], json!({"price": {"cheap": 2, "dear": 2}}));
}

#[test]
fn the_index_follows_updates_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    assert_eq!(sorted(ids(&run(&db, "title:brown", |_| {}))), ["b1", "b3"]);
    let b3 = db.get_doc("b3", &Default::default()).unwrap();
    put(&db, vec![json!({"_id": "b3", "_rev": b3["_rev"], "title": "A grey dog"})]);
    let b1 = db.get_doc("b1", &Default::default()).unwrap();
    put(&db, vec![json!({"_id": "b1", "_rev": b1["_rev"], "_deleted": true})]);
    put(&db, vec![json!({"_id": "b9", "title": "brown bread"})]);
    assert_eq!(ids(&run(&db, "title:brown", |_| {})), ["b9"]);
    assert_eq!(ids(&run(&db, "title:grey", |_| {})), ["b3"]);
    // update=false answers from the index as it is.
    put(&db, vec![json!({"_id": "b10", "title": "brown rice"})]);
    let (d, _) = def();
    let files = index::open(&db, &d).unwrap();
    let stale = search(&db, &files, &SearchRequest { q: "title:brown".into(), ..Default::default() }).unwrap();
    assert_eq!(ids(&stale), ["b9"]);
    assert_eq!(sorted(ids(&run(&db, "title:brown", |_| {}))), ["b10", "b9"]);
}

#[test]
fn bad_queries_are_query_parse_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("db"), Arc::new(NoProjection)).unwrap();
    books(&db);
    let (d, body) = def();
    let files = index::refresh(&db, "db", &d, &body, rhizome_views::Limits::from_env()).unwrap();
    for (q, sort) in [("price:abc", vec![]), ("title:(unclosed", vec![]), ("title:x", vec!["title<int>".to_owned()])] {
        let e = search(&db, &files, &SearchRequest { q: q.into(), sort, ..Default::default() }).unwrap_err();
        assert!(matches!(e, rhizome_search::SearchError::QueryParse(_)), "{q}: {e:?}");
    }
    let e = search(&db, &files, &SearchRequest { q: "x".into(), bookmark: Some("!!".into()), ..Default::default() }).unwrap_err();
    assert!(matches!(e, rhizome_search::SearchError::BadRequest(_)), "{e:?}");
}
