//! A full scan's first look at a document: the selector tried on the
//! members of the stored body it reads (with `_id` and `_rev`), parsed
//! alone, the others skipped unparsed. A document it cannot match is
//! dropped without being rendered; one it may match is rendered and tried
//! as before. A `_find` without an index reads every document, and
//! rendering each whole (every member as a value, the read's members
//! added) was most of its time, though few match.
//!
//! Exact because a selector reads a document only through the top-level
//! members its conditions name (`lookup` from the root), and those are
//! the rendered document's: the body's own, `_id` and `_rev`. Bodies the
//! renderer changes (a graph body rendered from its quads, attachment
//! stubs) and selectors naming other `_` members are left to the full
//! render.

use crate::keys::{body_key, DocInfo, BODIES};
use crate::selector::Selector;
use crate::{Result, SteppingReader};
use rhizome_kv::KvRead;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What the first look found.
pub(super) enum Look {
    /// No live winner with a body: nothing to render.
    Gone,
    /// The selector does not match.
    Rejected,
    /// It may: render and try the whole document.
    Maybe,
}

pub(super) struct Prefilter {
    /// The top-level members the selector reads.
    fields: HashSet<String>,
}

/// The top-level members `selector` reads; `None` when one condition
/// reads the document itself (no member).
fn top_fields(selector: &Selector, out: &mut HashSet<String>) -> Option<()> {
    match selector {
        Selector::And(xs) | Selector::Or(xs) | Selector::Nor(xs) => xs.iter().try_for_each(|x| top_fields(x, out)),
        Selector::Not(x) => top_fields(x, out),
        Selector::Field { path, .. } => {
            out.insert(path.first()?.clone());
            Some(())
        }
    }
}

impl Prefilter {
    pub fn new(selector: &Selector) -> Option<Prefilter> {
        let mut fields = HashSet::new();
        top_fields(selector, &mut fields)?;
        // Members the renderer adds or changes, other than `_id` and `_rev`.
        if fields.iter().any(|f| f.starts_with('_') && f != "_id" && f != "_rev") {
            return None;
        }
        Some(Prefilter { fields })
    }

    /// Looks at document `id`, whose `DOCS` value is `info`, its body
    /// the one `info` keeps or read through `bodies`.
    pub fn look(&self, bodies: &mut SteppingReader, id: &str, info: &[u8], selector: &Selector) -> Result<Look> {
        let Some(header) = DocInfo::header(info) else { return Ok(Look::Maybe) };
        if header.deleted {
            return Ok(Look::Gone);
        }
        // The record's own copy of the winner's body, else `BODIES`'s.
        let bytes = match header.body {
            Some(kept) => kept,
            None => match bodies.get(&body_key(id, &header.winner))? {
                Some(bytes) => bytes,
                None => return Ok(Look::Gone),
            },
        };
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let Ok(mut members) = (Wanted { fields: &self.fields }).deserialize(&mut de) else { return Ok(Look::Maybe) };
        if members.contains_key(crate::jsonld::GRAPH_MARKER) {
            return Ok(Look::Maybe);
        }
        members.insert("_id".into(), Value::String(id.to_owned()));
        members.insert("_rev".into(), Value::String(header.winner.to_string()));
        Ok(if selector.matches(&Value::Object(members)) { Look::Maybe } else { Look::Rejected })
    }
}

/// Bodies read in the order of a scan of `DOCS`: `BODIES` keys (the
/// id's length, the id, the revision) of ids of one length follow that
/// order, so the next body is usually a few steps ahead of the last one,
/// and a cursor stepping there costs less than a point read per document
/// (half of a full scan's time).
pub(super) fn body_reader(kv: &dyn KvRead) -> SteppingReader<'_> {
    SteppingReader::new(kv, BODIES)
}

/// A body's members named in `fields` (and the graph marker), parsed;
/// the others skipped.
struct Wanted<'a> {
    fields: &'a HashSet<String>,
}

impl<'de> DeserializeSeed<'de> for Wanted<'_> {
    type Value = Map<String, Value>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Wanted<'_> {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key { fields: self.fields })? {
            match key {
                Some(name) => {
                    out.insert(name, map.next_value::<Value>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// A member's name, kept (`Some`) only when it is wanted.
struct Key<'a> {
    fields: &'a HashSet<String>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Option<String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: serde::de::Error>(self, name: &str) -> std::result::Result<Self::Value, E> {
        Ok((self.fields.contains(name) || name == crate::jsonld::GRAPH_MARKER).then(|| name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_named_members_are_parsed() {
        let fields: HashSet<String> = ["a", "c"].iter().map(|s| s.to_string()).collect();
        let body = br#"{"a": 1, "b": {"deep": [1, 2, {"x": "y"}]}, "c\u0020": 2, "c": [3], "_graph": "g"}"#;
        let mut de = serde_json::Deserializer::from_slice(body);
        let got = (Wanted { fields: &fields }).deserialize(&mut de).unwrap();
        assert_eq!(Value::Object(got), json!({"a": 1, "c": [3], "_graph": "g"}));
    }

    /// A full scan with the first look answers what trying every
    /// rendered document answers, and examines every live document.
    #[test]
    fn a_full_scan_answers_what_the_rendered_documents_match() {
        let db = crate::Database::memory();
        let docs: Vec<Map<String, Value>> = (0..60)
            .map(|i| {
                let mut d = json!({"_id": format!("d{i:02}"), "n": i, "tags": if i % 3 == 0 { json!(["x", i]) } else { json!("x") }, "o": {"k": i % 4}});
                if i % 5 == 0 {
                    d.as_object_mut().unwrap().remove("n");
                }
                d.as_object().unwrap().clone()
            })
            .collect();
        for (_, r) in db.update_docs(docs, true).unwrap() {
            r.unwrap();
        }
        let rev = db.get_doc("d07", &Default::default()).unwrap()["_rev"].clone();
        db.update_docs(vec![json!({"_id": "d07", "_rev": rev, "_deleted": true}).as_object().unwrap().clone()], true).unwrap();
        let all: Vec<Value> = (0..60).filter_map(|i| db.get_doc(&format!("d{i:02}"), &Default::default()).ok().map(Value::Object)).collect();
        for selector in [
            json!({"n": {"$gt": 30}}),
            json!({"n": {"$exists": false}}),
            json!({"o.k": 2, "tags": {"$size": 2}}),
            json!({"$or": [{"n": 3}, {"_id": {"$gte": "d55"}}]}),
            json!({"$nor": [{"n": {"$lt": 50}}]}),
            json!({"tags": {"$elemMatch": {"$eq": 9}}}),
            json!({"_rev": {"$regex": "^1-"}, "n": {"$lt": 4}}),
        ] {
            let parsed = Selector::parse(&selector).unwrap();
            let want: Vec<&Value> = all.iter().filter(|d| parsed.matches(d)).map(|d| &d["_id"]).collect();
            let answer = db.find(json!({"selector": selector, "execution_stats": true, "limit": 1000}).as_object().unwrap()).unwrap();
            let got: Vec<&Value> = answer["docs"].as_array().unwrap().iter().map(|d| &d["_id"]).collect();
            assert_eq!(got, want, "{selector}");
            assert_eq!(answer["execution_stats"]["total_docs_examined"], 59, "{selector}");
        }
    }

    #[test]
    fn selectors_reading_rendered_members_are_left_to_the_render() {
        let parse = |v: Value| Selector::parse(&v).unwrap();
        assert!(Prefilter::new(&parse(json!({"a": 1, "_id": {"$gt": "x"}}))).is_some());
        assert!(Prefilter::new(&parse(json!({"_attachments": {"$exists": true}}))).is_none());
        assert!(Prefilter::new(&parse(json!({"$or": [{"a": 1}, {"_conflicts": {"$exists": true}}]}))).is_none());
        let p = Prefilter::new(&parse(json!({"$or": [{"a.b": 1}, {"$not": {"c": 2}}]}))).unwrap();
        assert_eq!(p.fields, ["a", "c"].iter().map(|s| s.to_string()).collect());
    }
}
