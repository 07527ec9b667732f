//! RDF 1.2 triple terms in document bodies.
//!
//! JSON-LD 1.1 has no triple terms, so a document whose graph holds one
//! (written by SPARQL Update or the Graph Store) would have no body to
//! show. Its body writes a triple term the way the JSON-LD-star community
//! report does (https://json-ld.github.io/json-ld-star/#embedded-nodes):
//! as an *embedded node*, a node object whose `@id` is itself a node object
//! with exactly one property and one value, in expanded form:
//!
//! ```json
//! {"@id": "http://example.org/carol",
//!  "http://example.org/said": [{"@id": {"@id": "http://example.org/bob",
//!                                        "http://example.org/knows": [{"@value": "Dana"}]}}]}
//! ```
//!
//! Reading a body back (a client's `PUT` of what it read, a replicated
//! revision) turns embedded nodes into triple terms again, so nothing is
//! lost through the CouchDB door, replication, CouchDB or PouchDB (which
//! keep the body as JSON). oxjsonld reads JSON-LD 1.1 only, so the body is
//! rewritten first: each embedded node gets a placeholder IRI (a fresh
//! nonce, so no IRI of the document can collide with one) in its place,
//! and its one triple goes to a named graph of that name; after parsing,
//! each placeholder's graph gives its triple term. A JSON-LD 1.1 processor
//! other than Rhizome refuses such a body (an `@id` must be a string).

use oxrdf::{GraphName, NamedNode, NamedOrBlankNode, Quad, Term, Triple};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The embedded node of a triple term (its object in expanded JSON-LD is
/// `object(o)`).
pub(crate) fn embedded_node(t: &Triple, object: impl Fn(&Term) -> Option<Value>) -> Option<Value> {
    let id = match &t.subject {
        NamedOrBlankNode::NamedNode(n) => n.as_str().to_owned(),
        NamedOrBlankNode::BlankNode(b) => b.to_string(),
    };
    let mut node = Map::new();
    node.insert("@id".into(), Value::String(id));
    node.insert(t.predicate.as_str().to_owned(), Value::Array(vec![object(&t.object)?]));
    let mut wrapper = Map::new();
    wrapper.insert("@id".into(), Value::Object(node));
    Some(Value::Object(wrapper))
}

/// A body's embedded nodes replaced by placeholders ([`extract`]).
pub(crate) struct Placeholders {
    prefix: String,
}

/// Rewrites `json` (a document's top-level object) for oxjsonld when it
/// holds embedded nodes; `None` (and `json` untouched) when it holds none.
pub(crate) fn extract(json: &mut Map<String, Value>) -> Option<Placeholders> {
    if !json.values().any(has_embedded) {
        return None;
    }
    let prefix = format!("urn:rhizome:triple-term:{:016x}:", nonce());
    let mut definitions = Vec::new();
    for v in json.values_mut() {
        replace(v, &prefix, &mut definitions);
    }
    let graphs = definitions.into_iter().map(|(name, node)| {
        let mut g = Map::new();
        g.insert("@id".into(), Value::String(name));
        g.insert("@graph".into(), Value::Array(vec![node]));
        Value::Object(g)
    });
    let named = json.contains_key("@id");
    match json.get_mut("@graph") {
        // A default graph of nodes: the definitions join them.
        Some(Value::Array(nodes)) if !named => nodes.extend(graphs),
        _ => {
            // A node object (or a named graph): it goes inside a default
            // graph beside the definitions, under the same context.
            let context = json.remove("@context");
            let node = Value::Object(std::mem::take(json));
            if let Some(c) = context {
                json.insert("@context".into(), c);
            }
            json.insert("@graph".into(), Value::Array(std::iter::once(node).chain(graphs).collect()));
        }
    }
    Some(Placeholders { prefix })
}

fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    h.finish()
}

fn has_embedded(v: &Value) -> bool {
    match v {
        Value::Object(m) => matches!(m.get("@id"), Some(Value::Object(_))) || m.values().any(has_embedded),
        Value::Array(a) => a.iter().any(has_embedded),
        _ => false,
    }
}

/// Replaces every embedded node under `v` (inner ones first) by a
/// placeholder, listing each placeholder with its node.
fn replace(v: &mut Value, prefix: &str, definitions: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                replace(child, prefix, definitions);
            }
            if let Some(Value::Object(_)) = m.get("@id") {
                let node = m.insert("@id".into(), Value::Null).expect("just seen");
                let name = format!("{prefix}{}", definitions.len());
                definitions.push((name.clone(), node));
                m.insert("@id".into(), Value::String(name));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace(x, prefix, definitions)),
        _ => {}
    }
}

impl Placeholders {
    /// The parsed quads with each placeholder's graph taken out and the
    /// placeholder replaced by its triple term.
    pub(crate) fn resolve(&self, quads: Vec<Quad>) -> Result<Vec<Quad>, String> {
        let is_placeholder = |n: &NamedNode| n.as_str().starts_with(&self.prefix);
        let mut triples: HashMap<String, Triple> = HashMap::new();
        let mut rest = Vec::with_capacity(quads.len());
        for q in quads {
            match &q.graph_name {
                GraphName::NamedNode(g) if is_placeholder(g) => {
                    if triples.insert(g.as_str().to_owned(), Triple::new(q.subject, q.predicate, q.object)).is_some() {
                        return Err("an embedded node (a triple term) has more than one property or value".into());
                    }
                }
                _ => rest.push(q),
            }
        }
        // Inner embedded nodes were numbered first: resolving in number
        // order finds every inner triple term done.
        let mut names: Vec<String> = triples.keys().cloned().collect();
        names.sort_by_key(|n| n[self.prefix.len()..].parse::<usize>().unwrap_or(usize::MAX));
        let mut done: HashMap<String, Term> = HashMap::new();
        for name in names {
            let t = triples.remove(&name).expect("listed");
            let object = self.substitute(t.object, &done)?;
            self.check_subject(&t.subject)?;
            done.insert(name, Triple::new(t.subject, t.predicate, object).into());
        }
        rest.into_iter()
            .map(|q| {
                self.check_subject(&q.subject)?;
                Ok(Quad::new(q.subject, q.predicate, self.substitute(q.object, &done)?, q.graph_name))
            })
            .collect()
    }

    fn substitute(&self, t: Term, done: &HashMap<String, Term>) -> Result<Term, String> {
        match &t {
            Term::NamedNode(n) if n.as_str().starts_with(&self.prefix) => {
                done.get(n.as_str()).cloned().ok_or_else(|| "an embedded node (a triple term) without exactly one property and value".to_owned())
            }
            _ => Ok(t),
        }
    }

    fn check_subject(&self, s: &NamedOrBlankNode) -> Result<(), String> {
        match s {
            NamedOrBlankNode::NamedNode(n) if n.as_str().starts_with(&self.prefix) => Err("a triple term (an embedded node) cannot be a subject in RDF 1.2".into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(mut body: Map<String, Value>) -> Result<Vec<Quad>, String> {
        let placeholders = extract(&mut body);
        let text = Value::Object(body).to_string();
        let quads = oxjsonld::JsonLdParser::new().for_slice(text.as_bytes()).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
        match placeholders {
            Some(p) => p.resolve(quads),
            None => Ok(quads),
        }
    }

    #[test]
    fn embedded_nodes_read_back_as_the_triple_terms_they_render() {
        let inner = Triple::new(NamedNode::new_unchecked("http://e/b"), NamedNode::new_unchecked("http://e/k"), oxrdf::Literal::new_simple_literal("x"));
        let outer = Triple::new(oxrdf::BlankNode::new_unchecked("r"), NamedNode::new_unchecked("http://e/says"), inner);
        let object = |t: &Term| -> Option<Value> {
            fn go(t: &Term) -> Option<Value> {
                Some(match t {
                    Term::NamedNode(n) => json!({"@id": n.as_str()}),
                    Term::BlankNode(b) => json!({"@id": b.to_string()}),
                    Term::Literal(l) => json!({"@value": l.value()}),
                    Term::Triple(t) => embedded_node(t, go)?,
                })
            }
            go(t)
        };
        let body = json!({"@context": {"@vocab": "http://e/"}, "@id": "http://e/a", "claims": [object(&outer.clone().into()).unwrap()]});
        let Value::Object(body) = body else { unreachable!() };
        let quads = parse(body).unwrap();
        assert_eq!(quads.len(), 1, "{quads:?}");
        let Term::Triple(got) = &quads[0].object else { panic!("{quads:?}") };
        // The blank node is the document's: only its label may differ.
        assert_eq!((&got.predicate, &got.object), (&outer.predicate, &outer.object));
        assert_eq!(quads[0].subject, NamedNode::new_unchecked("http://e/a").into());

        // Without embedded nodes, the body is not touched.
        let mut plain = Map::new();
        plain.insert("@id".into(), json!("http://e/a"));
        assert!(extract(&mut plain).is_none());
        // An embedded node with two properties is no triple term.
        let two = json!({"@graph": [{"@id": "http://e/a", "http://e/p": [{"@id": {"@id": "http://e/s", "http://e/p": [{"@value": 1}], "http://e/q": [{"@value": 2}]}}]}]});
        let Value::Object(two) = two else { unreachable!() };
        assert!(parse(two).is_err());
    }
}
