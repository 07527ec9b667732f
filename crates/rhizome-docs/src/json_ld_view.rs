//! A document as a JSON-LD processor should read it (`GET /{db}/{doc}`
//! with `Accept: application/ld+json`): the same body, with a context that
//! makes any processor (rdflib, Comunica, jsonld.js) find exactly the
//! document's graph.
//!
//! Two things differ between reading the stored body as JSON-LD and the
//! projection that made its graph (`jsonld.rs`):
//! - CouchDB's members (`_id`, `_rev`, `_attachments`, `_conflicts`, ...)
//!   are not RDF; the projection skips them, but with `@vocab` a processor
//!   would make triples of them. The rendered context maps each to `null`.
//! - The projection resolves relative IRIs against the document's graph
//!   IRI, and uses the database's default context when the document has
//!   none; a processor knows only the URL it fetched. The rendered context
//!   starts with `@base` (the document's own `@base`, later in the array,
//!   still wins) and carries the default context.
//!
//! The stored body does not change: CouchDB clients, which ask for
//! `application/json`, get it as written.

use crate::{Database, DocError, Result, DEFAULT_CONTEXT_DOC};
use serde_json::{Map, Value};

impl Database {
    /// `doc` (as read by [`Database::get_doc`]) with the context described
    /// in this module's comment.
    pub fn json_ld_view(&self, mut doc: Map<String, Value>) -> Result<Map<String, Value>> {
        let id = doc.get("_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let id = id.as_str();
        let mut context = Vec::new();
        if let Some(iri) = self.projector.graph_iri(id) {
            let mut base = Map::new();
            base.insert("@base".into(), Value::String(iri));
            context.push(Value::Object(base));
        }
        let own = match doc.shift_remove("@context") {
            Some(c) => Some(c),
            None if self.projector.graph_iri(id).is_some() => match self.get_local(DEFAULT_CONTEXT_DOC) {
                Ok(local) => local.get("@context").cloned(),
                Err(DocError::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        match own {
            Some(Value::Array(items)) => context.extend(items),
            Some(Value::Null) | None => {}
            Some(c) => context.push(c),
        }
        let couch: Map<String, Value> = doc.keys().filter(|k| k.starts_with('_')).map(|k| (k.clone(), Value::Null)).collect();
        if !couch.is_empty() {
            context.push(Value::Object(couch));
        }
        if !context.is_empty() {
            doc.insert("@context".into(), Value::Array(context));
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Database, DocumentIris, JsonLdProjector, ReadOptions};
    use serde_json::{json, Map, Value};
    use std::sync::Arc;

    fn db() -> Database {
        Database::memory_with(Arc::new(JsonLdProjector::new(DocumentIris::new("http://h", "db"))))
    }

    fn put(db: &Database, body: Value) {
        let Value::Object(doc) = body else { panic!() };
        let out = db.update_docs(vec![doc], true).unwrap();
        assert!(out[0].1.is_ok(), "{:?}", out[0].1);
    }

    fn view(db: &Database, id: &str) -> Value {
        Value::Object(db.json_ld_view(db.get_doc(id, &ReadOptions::default()).unwrap()).unwrap())
    }

    #[test]
    fn couchdb_members_map_to_null_and_the_base_is_the_graph_iri() {
        let db = db();
        put(&db, json!({"_id": "p", "@context": {"@vocab": "http://v/"}, "name": "P"}));
        let v = view(&db, "p");
        assert_eq!(v["@context"][0], json!({"@base": "http://h/db/p"}));
        assert_eq!(v["@context"][1], json!({"@vocab": "http://v/"}));
        assert_eq!(v["@context"][2], json!({"_id": null, "_rev": null}));
        assert_eq!(v["name"], "P");
    }

    #[test]
    fn a_context_array_is_spliced_and_the_default_context_is_carried() {
        let db = db();
        put(&db, json!({"_id": "a", "@context": [{"@vocab": "http://x/"}, {"n": "http://v/n"}], "n": 1}));
        assert_eq!(view(&db, "a")["@context"][1], json!({"@vocab": "http://x/"}));
        assert_eq!(view(&db, "a")["@context"][2], json!({"n": "http://v/n"}));
        let mut local = Map::new();
        local.insert("@context".into(), json!({"n": "http://d/n"}));
        db.put_local("_local/rhizome-context", local).unwrap();
        put(&db, json!({"_id": "b", "n": 2}));
        assert_eq!(view(&db, "b")["@context"][1], json!({"n": "http://d/n"}));
    }

    #[test]
    fn design_documents_have_no_graph_even_under_a_default_context() {
        let db = db();
        let mut local = Map::new();
        local.insert("@context".into(), json!({"@vocab": "http://d/"}));
        db.put_local("_local/rhizome-context", local).unwrap();
        put(&db, json!({"_id": "_design/x", "views": {"age": {"map": "function (doc) {}"}}}));
        assert_eq!(db.store().stats().unwrap().quads, 0);
        put(&db, json!({"_id": "p", "age": 3}));
        assert_eq!(db.store().stats().unwrap().quads, 1);
    }
}
