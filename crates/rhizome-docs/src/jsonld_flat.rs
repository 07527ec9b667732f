//! The quads of a flat JSON-LD document, read without the JSON-LD
//! algorithms.
//!
//! Most documents a database holds are one node: an `@id`, a context that
//! is only a vocabulary (`{"@vocab": V}`), and members whose values are
//! strings, integers, booleans, nulls or arrays of them. For such a
//! document, JSON-LD's expansion and RDF conversion come down to one
//! triple per value: `<@id> <V + member> value`. Running the full
//! algorithms (`oxjsonld`: the document written out as text, parsed again,
//! expanded event by event) was a quarter of the CPU of a Pokec profile
//! write; this reads the shape straight from the JSON values.
//!
//! Anything outside the shape returns `None`, and the caller runs
//! `oxjsonld` as before: a context with terms, `@language` or `@base`,
//! nested objects, value objects, floating-point numbers, member names
//! that are IRIs or compact IRIs or hold anything but IRI-unreserved
//! characters, an `@id` that is not an absolute IRI left unchanged by
//! resolution, blank nodes, keywords other than `@context`, `@id` and
//! `@type`. The tests below compare the two readings on generated documents
//! in and around the shape.

use oxrdf::vocab::{rdf, xsd};
use oxrdf::{GraphName, Literal, NamedNode, Quad, Term};
use serde_json::{Map, Value};

/// The quads `oxjsonld` would give for `body` (its `_` members already
/// ignored) read with `context` (its own `@context`, or the database's
/// default) and `base` as the base IRI; `None` when the document is not of
/// the flat shape this module reads.
pub(crate) fn flat_quads(body: &Map<String, Value>, context: &Value, base: &str) -> Option<Vec<Quad>> {
    let vocab = vocabulary(context)?;
    let subject = subject(body.get("@id")?, base)?;
    let mut quads = Vec::with_capacity(body.len());
    for (key, value) in body {
        if key.starts_with('_') {
            continue; // document metadata, not JSON-LD
        }
        match key.as_str() {
            "@context" | "@id" => {}
            "@type" => {
                let mut add = |v: &Value| -> Option<()> {
                    let Value::String(name) = v else { return None };
                    let class = vocab_iri(&vocab, name)?;
                    quads.push(Quad::new(subject.clone(), rdf::TYPE.into_owned(), class, GraphName::DefaultGraph));
                    Some(())
                };
                match value {
                    Value::Array(items) => items.iter().try_for_each(&mut add)?,
                    v => add(v)?,
                }
            }
            _ if key.starts_with('@') => return None,
            _ => {
                let predicate = vocab_iri(&vocab, key)?;
                let mut add = |v: &Value| -> Option<()> {
                    if let Some(object) = literal(v)? {
                        quads.push(Quad::new(subject.clone(), predicate.clone(), object, GraphName::DefaultGraph));
                    }
                    Some(())
                };
                match value {
                    Value::Array(items) => items.iter().try_for_each(&mut add)?,
                    v => add(v)?,
                }
            }
        }
    }
    Some(quads)
}

/// The vocabulary of a context that is nothing else: `{"@vocab": V}` with
/// `V` an absolute IRI.
fn vocabulary(context: &Value) -> Option<String> {
    let Value::Object(members) = context else { return None };
    let Some(Value::String(vocab)) = members.get("@vocab") else { return None };
    if members.len() != 1 || !is_plain_absolute(vocab) {
        return None;
    }
    Some(vocab.clone())
}

/// `V + name`, for a name JSON-LD expands by concatenation alone: not
/// empty, no `:` (which would make it an IRI or a compact IRI), no `@`
/// (a keyword's form), and only IRI-unreserved characters, so that the
/// result is an IRI whatever `V` is.
fn vocab_iri(vocab: &str, name: &str) -> Option<NamedNode> {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if name.is_empty() || !name.bytes().all(unreserved) {
        return None;
    }
    Some(NamedNode::new_unchecked(format!("{vocab}{name}")))
}

/// The node's `@id`: an absolute IRI that resolution against `base`
/// leaves as it is (no dot segments), so that no reading could change it.
fn subject(id: &Value, base: &str) -> Option<NamedNode> {
    let Value::String(id) = id else { return None };
    if !is_plain_absolute(id) {
        return None;
    }
    let resolved = oxiri::Iri::parse(base).ok()?.resolve(id).ok()?;
    (resolved.as_str() == id).then(|| NamedNode::new_unchecked(id.clone()))
}

/// An absolute IRI with a scheme of letters (so not a blank node's `_:`)
/// and only printable ASCII other than `<>"{}|\^` and backquote.
fn is_plain_absolute(iri: &str) -> bool {
    let Some((scheme, _)) = iri.split_once(':') else { return false };
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    scheme_ok && iri.bytes().all(|b| b.is_ascii_graphic() && !b"<>\"{}|\\^`".contains(&b)) && oxiri::Iri::parse(iri).is_ok()
}

/// A JSON value as JSON-LD's RDF conversion writes it: strings as plain
/// literals, integers as `xsd:integer` in canonical form, booleans as
/// `xsd:boolean`; `Some(None)` for null (no triple); `None` for what this
/// module leaves to `oxjsonld` (floating-point numbers, objects, arrays).
fn literal(value: &Value) -> Option<Option<Term>> {
    Some(Some(match value {
        Value::Null => return Some(None),
        Value::String(s) => Literal::new_simple_literal(s.as_str()).into(),
        Value::Bool(b) => Literal::new_typed_literal(if *b { "true" } else { "false" }, xsd::BOOLEAN).into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => Literal::new_typed_literal(n.to_string(), xsd::INTEGER).into(),
        Value::Number(_) | Value::Array(_) | Value::Object(_) => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `oxjsonld`'s reading of `body` with `context`, as `parse_document`
    /// runs it: the `_` members dropped, the context put in.
    fn reference(body: &Map<String, Value>, context: &Value, base: &str) -> Result<Vec<String>, String> {
        let mut json: Map<String, Value> = body.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect();
        json.insert("@context".into(), context.clone());
        let text = Value::Object(json).to_string();
        let quads: Result<Vec<Quad>, _> = oxjsonld::JsonLdParser::new().with_base_iri(base).map_err(|e| e.to_string())?.for_slice(text.as_bytes()).collect();
        let mut quads: Vec<String> = quads.map_err(|e| e.to_string())?.iter().map(ToString::to_string).collect();
        quads.sort();
        Ok(quads)
    }

    /// xorshift64: the same documents on every run.
    struct Draw(u64);

    impl Draw {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
        fn pick<T: Clone>(&mut self, items: &[T]) -> T {
            items[self.below(items.len())].clone()
        }
        /// One of `items`, from its first `good` three times in four.
        fn mostly<T: Clone>(&mut self, items: &[T], good: usize) -> T {
            if self.below(4) == 0 {
                self.pick(items)
            } else {
                self.pick(&items[..good])
            }
        }
    }

    /// Generated documents in and around the flat shape: wherever the fast
    /// reading answers, it answers exactly what oxjsonld does, and the
    /// generator reaches both sides of the shape's edge.
    #[test]
    fn flat_documents_read_as_oxjsonld_reads_them() {
        let base = "http://localhost:5984/db/doc";
        let contexts = [
            json!({"@vocab": "http://e.example/v#"}),
            json!({"@vocab": "urn:x:"}),
            json!({"@vocab": "http://e.example/v/"}),
            json!({"@vocab": "http://e.example/v#", "@language": "en"}),
            json!({"@vocab": "v/"}),
            json!({"@vocab": ""}),
            json!({"@vocab": "_:b"}),
            json!({"@vocab": null}),
            json!({"name": "http://schema.org/name"}),
            json!([{"@vocab": "http://e.example/v#"}]),
            json!({"@vocab": "http://e.example/a b#"}),
        ];
        let keys = [
            "AGE", "region", "last_login", "a.b", "a-b", "x~y", "@type", "_private", "", "a b", "x:y", "http://e.example/p", "é", "@foo", "@type", "@type", "@id", "@value",
            "@graph", "@reverse", "@context", "1", "name",
        ];
        let ids = [
            json!("http://pokec.example/p/1"),
            json!("http://pokec.example/p/1"),
            json!("urn:uuid:123"),
            json!("http://e.example/a/../b"),
            json!("http://e.example/a/./b"),
            json!("p/2"),
            json!("#frag"),
            json!("_:b0"),
            json!("http://e.example/p#x y"),
            json!("http://e.example/%zz"),
            json!("HTTP://E.example/Case"),
            json!(7),
            json!(null),
        ];
        let scalars = [
            json!("kosicky kraj, kosice - juh"),
            json!(""),
            json!("quote \" backslash \\ newline \n tab \t é ☃ 𝄞 \u{0}"),
            json!(0),
            json!(-7),
            json!(29),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(true),
            json!(false),
            json!(null),
            json!(1.5),
            json!(1.0),
            json!(1e21),
            json!(-0.0),
            json!("Person"),
            json!("x:y"),
            json!({"@value": "v", "@language": "sk"}),
            json!({"@id": "http://e.example/o"}),
            json!({"k": 1}),
        ];
        let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
        let (mut flat, mut other) = (0, 0);
        for _ in 0..20_000 {
            let context = draw.mostly(&contexts, 3);
            let mut doc = Map::new();
            if draw.below(8) != 0 {
                doc.insert("@id".into(), draw.mostly(&ids, 3));
            }
            for _ in 0..draw.below(6) {
                let key = draw.mostly(&keys, 6).to_owned();
                let value = match draw.below(5) {
                    0 => Value::Array((0..draw.below(4)).map(|_| if draw.below(12) == 0 { json!([1]) } else { draw.mostly(&scalars, 8) }).collect()),
                    _ => draw.mostly(&scalars, 8),
                };
                doc.insert(key, value);
            }
            doc.insert("_id".into(), json!("doc"));
            match flat_quads(&doc, &context, base) {
                Some(quads) => {
                    flat += 1;
                    let mut ours: Vec<String> = quads.iter().map(ToString::to_string).collect();
                    ours.sort();
                    assert_eq!(Ok(ours), reference(&doc, &context, base), "context {context}, document {}", Value::Object(doc.clone()));
                }
                None => other += 1,
            }
        }
        eprintln!("{flat} flat documents, {other} left to oxjsonld");
        assert!(flat > 1_000 && other > 1_000, "both sides of the shape reached: {flat} flat, {other} not");
    }

    /// A Pokec profile, as `bench/graph` writes them, is flat.
    #[test]
    fn a_pokec_profile_is_flat() {
        let doc = json!({"@context": {"@vocab": "http://pokec.example/v#"}, "@id": "http://pokec.example/p/9", "_id": "http://pokec.example/p/9", "public": 0, "AGE": 29,
                         "region": "kosicky kraj, kosice - juh", "last_login": "2012-05-02 00:09:00.0", "hobbies": null});
        let doc = doc.as_object().unwrap();
        let quads = flat_quads(doc, &doc["@context"], "http://pokec.example/p/9").expect("flat");
        assert_eq!(quads.len(), 4);
        let mut ours: Vec<String> = quads.iter().map(ToString::to_string).collect();
        ours.sort();
        assert_eq!(Ok(ours), reference(doc, &doc["@context"], "http://pokec.example/p/9"));
    }
}
