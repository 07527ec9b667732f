//! Mango, CouchDB's declarative queries: JSON indexes kept in the store
//! ([`index`]), the choice of an index ([`plan`]) and `_find`/`_explain`
//! ([`find`]). Selectors are [`crate::selector`]'s; rows are ordered by
//! [`crate::collate`].

mod find;
pub use find::{FindEnd, PreparedFind};
pub mod index;
pub mod plan;

pub use index::{add_to_design_doc, new_index, remove_from_design_doc, IndexDef, NewIndex, REFRESH_BATCH};
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
}
