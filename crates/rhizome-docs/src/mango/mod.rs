//! Mango, CouchDB's declarative queries: JSON indexes kept in the store
//! ([`index`]), what a selector tells an index ([`ranges`]), the choice of
//! an index ([`plan`]), `_find`/`_explain` ([`find`]) and what `_explain`
//! tells of the choice ([`candidates`]). Selectors are
//! [`crate::selector`]'s; rows are ordered by [`crate::collate`].

mod find;
pub use find::{project, FindEnd, PreparedFind};
pub mod index;
pub mod plan;
mod candidates;
mod prefilter;
pub mod ranges;

pub use index::{add_to_design_doc, new_index, new_index_in, remove_from_design_doc, IndexDef, MangoDesignInfo, NewIndex, REFRESH_BATCH};
pub use plan::DEFAULT_LIMIT;

#[cfg(test)]
mod tests {
    use crate::Database;
    use serde_json::{json, Map, Value};

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().expect("an object").clone()
    }

    fn put(db: &Database, docs: Vec<Value>) {
        for (_, outcome) in db.update_docs(docs.into_iter().map(obj).collect(), true).unwrap() {
            outcome.unwrap();
        }
    }

    fn ids(answer: &Value) -> Vec<String> {
        answer["docs"].as_array().unwrap().iter().map(|d| d["_id"].as_str().unwrap().to_owned()).collect()
    }

    #[test]
    fn find_uses_an_index_in_collation_order_and_follows_writes() {
        let db = Database::memory();
        put(&db, vec![json!({ "_id": "s", "v": "b" }), json!({ "_id": "n", "v": 2 }), json!({ "_id": "t", "v": true }), json!({ "_id": "x", "w": 1 }), json!({ "_id": "a", "v": [1] })]);
        let index = super::new_index(&obj(json!({ "index": { "fields": ["v"] }, "ddoc": "d", "name": "by-v" }))).unwrap();
        let ddoc = super::add_to_design_doc(None, &index).unwrap().unwrap();
        put(&db, vec![Value::Object(ddoc)]);
        let q = obj(json!({ "selector": { "v": { "$gte": null } }, "sort": ["v"] }));
        let answer = db.find(&q).unwrap();
        assert_eq!(ids(&answer), ["t", "n", "s", "a"], "{answer}");
        assert!(answer.get("warning").is_none());
        put(&db, vec![json!({ "_id": "m", "v": null })]);
        let rev = db.get_doc("n", &Default::default()).unwrap()["_rev"].clone();
        put(&db, vec![json!({ "_id": "n", "_rev": rev, "_deleted": true })]);
        assert_eq!(ids(&db.find(&q).unwrap()), ["m", "t", "s", "a"]);
        let page = db.find(&obj(json!({ "selector": { "v": { "$gte": null } }, "sort": [{ "v": "desc" }], "limit": 2 }))).unwrap();
        assert_eq!(ids(&page), ["a", "s"]);
        let next = db.find(&obj(json!({ "selector": { "v": { "$gte": null } }, "sort": [{ "v": "desc" }], "limit": 2, "bookmark": page["bookmark"] }))).unwrap();
        assert_eq!(ids(&next), ["t", "m"]);
        // Design documents are no answer, even to a selector matching all.
        put(&db, vec![json!({ "_id": "_design/any", "v": 1 })]);
        for selector in [json!({}), json!({ "_id": { "$gt": null } })] {
            let answer = db.find(&obj(json!({ "selector": selector }))).unwrap();
            assert!(!ids(&answer).iter().any(|id| id.starts_with("_design/")), "{answer}");
        }
        // A bookmark this server did not hand out is refused, as in CouchDB.
        for bad in ["bad-bookmark", "g2wAAAABaANkABFub2RlMUBjb3VjaGRiLm5ldGwAAAACYQBiP____2poAkY_8AAAAAAAAGEHag"] {
            let err = db.find(&obj(json!({ "selector": { "_id": { "$gt": 0 } }, "bookmark": bad }))).unwrap_err();
            assert!(matches!(&err, crate::DocError::Coded { status: 400, error: "invalid_bookmark", .. }), "{bad}: {err:?}");
            assert_eq!(err.to_string(), format!("Invalid bookmark value: \"{bad}\""));
        }
        let full = db.find(&obj(json!({ "selector": { "w": 1 } }))).unwrap();
        assert_eq!(ids(&full), ["x"]);
        assert!(full["warning"].as_str().unwrap().contains("No matching index"));
        let err = db.find(&obj(json!({ "selector": { "w": 1 }, "sort": ["w"] }))).unwrap_err();
        assert!(matches!(err, crate::DocError::Coded { error: "no_usable_index", .. }), "{err:?}");
    }

    fn index(db: &Database, fields: Value, name: &str) {
        let index = super::new_index(&obj(json!({ "index": { "fields": fields }, "ddoc": name, "name": name }))).unwrap();
        put(db, vec![Value::Object(super::add_to_design_doc(None, &index).unwrap().unwrap())]);
    }

    #[test]
    fn a_covering_index_answers_without_reading_documents_and_stats_count_as_couchdbs() {
        let db = Database::memory();
        put(&db, (0..6).map(|i| json!({ "_id": format!("d{i}"), "age": 20 + 5 * i, "name": { "first": format!("F{i}") } })).collect());
        index(&db, json!(["age", "name.first"]), "age");
        let q = |extra: Value| {
            let mut q = json!({ "selector": { "age": { "$lt": 33 }, "name.first": { "$exists": true } }, "execution_stats": true });
            q.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            db.find(&obj(q)).unwrap()
        };
        // Covered: the answers come from the rows' keys, no document read.
        let covered = q(json!({ "fields": ["_id", "name.first"] }));
        assert_eq!(covered["docs"], json!([{ "_id": "d0", "name": { "first": "F0" } }, { "_id": "d1", "name": { "first": "F1" } }, { "_id": "d2", "name": { "first": "F2" } }]));
        assert_eq!((&covered["execution_stats"]["total_keys_examined"], &covered["execution_stats"]["total_docs_examined"]), (&json!(3), &json!(0)));
        // Not covered: each row's document is read.
        let whole = q(json!({}));
        assert_eq!((&whole["execution_stats"]["total_keys_examined"], &whole["execution_stats"]["total_docs_examined"]), (&json!(3), &json!(3)));
        // r above 1: documents are read after the scan, as quorum reads.
        let quorum = q(json!({ "r": 2 }));
        assert_eq!((&quorum["execution_stats"]["total_docs_examined"], &quorum["execution_stats"]["total_quorum_docs_examined"]), (&json!(0), &json!(3)));
        // A limit: the scan goes on to the next match, as CouchDB's does.
        let limited = q(json!({ "limit": 2 }));
        assert_eq!((ids(&limited).len(), &limited["execution_stats"]["total_keys_examined"]), (2, &json!(3)));
        // _explain says so.
        let explain = |q: Value| db.explain("db", &obj(q)).unwrap();
        let e = explain(json!({ "selector": { "age": { "$gt": 21 }, "name.first": { "$gt": null } }, "fields": ["age"] }));
        assert_eq!((&e["covering"], &e["mrargs"]["include_docs"]), (&json!(true), &json!(false)), "{e}");
        assert_eq!((&e["mrargs"]["start_key"], &e["mrargs"]["end_key"]), (&json!([21, null]), &json!(["<MAX>"])));
        let e = explain(json!({ "selector": { "age": { "$gt": 21 }, "name.first": { "$gt": null } }, "fields": ["age", "x"] }));
        assert_eq!((&e["covering"], &e["mrargs"]["include_docs"]), (&json!(false), &json!(true)), "{e}");
    }

    #[test]
    fn explain_shows_ranges_candidates_and_hints_as_couchdb_3_5() {
        let db = Database::memory();
        index(&db, json!(["location"]), "location");
        index(&db, json!(["name", "location"]), "name");
        index(&db, json!(["other"]), "other");
        let explain = |q: Value| db.explain("db", &obj(q)).unwrap();
        // $beginsWith ranges up to the prefix and U+FFFF, the last character.
        let e = explain(json!({ "selector": { "name": "Eddie", "location": { "$beginsWith": "A" } } }));
        assert_eq!(e["index"]["name"], "name");
        assert_eq!((&e["mrargs"]["start_key"], &e["mrargs"]["end_key"]), (&json!(["Eddie", "A"]), &json!(["Eddie", "A\u{FFFF}", "<MAX>"])));
        let e = explain(json!({ "selector": { "location": { "$beginsWith": "A" } }, "sort": [{ "location": "desc" }] }));
        assert_eq!((&e["mrargs"]["start_key"], &e["mrargs"]["end_key"], &e["mrargs"]["direction"]), (&json!(["A\u{FFFF}", "<MAX>"]), &json!(["A"]), &json!("rev")));
        let e = explain(json!({ "selector": { "_id": { "$beginsWith": "a" } } }));
        assert_eq!((&e["mrargs"]["start_key"], &e["mrargs"]["end_key"]), (&json!("a"), &json!("a\u{FFFF}")));
        // Every index but the chosen one, last design document first.
        let e = explain(json!({ "selector": { "location": "X", "z": { "$regex": "y" } } }));
        assert_eq!(e["index"]["name"], "location");
        let candidates: Vec<(Value, Value, Value, Value)> = e["index_candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["index"]["name"].clone(), c["analysis"]["usable"].clone(), c["analysis"]["reasons"][0]["name"].clone(), c["analysis"]["ranking"].clone()))
            .collect();
        assert_eq!(
            candidates,
            [
                (json!("other"), json!(false), json!("field_mismatch"), json!(2)),
                (json!("name"), json!(false), json!("field_mismatch"), json!(2)),
                (json!("_all_docs"), json!(true), json!("unfavored_type"), json!(1)),
            ]
        );
        assert_eq!(e["selector_hints"], json!([{ "type": "json", "indexable_fields": ["location"], "unindexable_fields": ["z"] }]));
        // No usable index: _explain says so where _find refuses.
        let e = explain(json!({ "selector": { "q": 1 }, "sort": ["q"] }));
        assert_eq!(e["index"], Value::Null);
        assert!(e.get("mrargs").is_none());
        assert_eq!(e["index_candidates"].as_array().unwrap().last().unwrap()["analysis"], json!({ "usable": false, "reasons": [{ "name": "field_mismatch" }], "ranking": 1, "covering": null }));
    }

    #[test]
    fn an_index_on_conflicts_holds_the_documents_that_have_some() {
        let db = Database::memory();
        put(&db, vec![json!({ "_id": "doc", "a": 2 }), json!({ "_id": "calm", "a": 3 })]);
        for (_, outcome) in db.update_docs(vec![obj(json!({ "_id": "doc", "_rev": "1-23202479633c2b380f79507a776743d5", "a": 1 }))], false).unwrap() {
            outcome.unwrap();
        }
        index(&db, json!(["_conflicts"]), "conflicts");
        let answer = db.find(&obj(json!({ "selector": { "_conflicts": { "$exists": true } }, "conflicts": true }))).unwrap();
        assert!(answer.get("warning").is_none(), "the index serves: {answer}");
        assert_eq!(ids(&answer), ["doc"]);
        assert_eq!(answer["docs"][0]["_conflicts"].as_array().unwrap().len(), 1, "{answer}");
    }
}
