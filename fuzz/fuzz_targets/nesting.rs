//! Deep nesting made on purpose from the input bytes: JSON-LD contexts
//! with chains of terms (compact IRIs, `@id`, `@type`, cycles) inside
//! nested scoped contexts, written as documents and as the database's
//! default context; documents of nested JSON; RDF/XML of nested
//! descriptions; Turtle and TriG of nested collections and blank nodes,
//! with brackets hidden in strings, IRIs and comments. Nothing may crash;
//! input past a limit must get an error, and the nesting check must agree
//! with the depth the generator built.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxrdfio::{RdfFormat, RdfParser};
use rhizome_docs::{check_json_ld, Database, DocumentIris, JsonLdProjector, DEFAULT_CONTEXT_DOC, MAX_CONTEXT_DEPTH};
use rhizome_rdf::nesting::{check_nesting, MAX_RDF_NESTING};
use serde_json::{json, Map, Value};
use std::sync::Arc;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    /// A number below `max`, often near the limits.
    fn depth(&mut self, max: usize) -> usize {
        let n = (self.byte() as usize) << 8 | self.byte() as usize;
        match n % 4 {
            0 => MAX_RDF_NESTING - 2 + n % 5, // around the limit
            _ => n % max,
        }
    }
}

fn database() -> Database {
    Database::memory_with(Arc::new(JsonLdProjector::new(DocumentIris::new("http://localhost:5984", "db"))))
}

/// A context of `n + 1` terms, each defined on the one before in a way the
/// input picks; the longest chain it makes.
fn chained_context(input: &mut Input<'_>, n: usize) -> (Value, bool) {
    let mut context = Map::new();
    context.insert("t0".into(), json!("http://example.org/"));
    let mut cyclic = false;
    for i in 1..=n {
        let before = format!("t{}", i - 1);
        let definition = match input.byte() % 5 {
            0 => json!(format!("{before}:a")),
            1 => json!({ "@id": format!("{before}:a") }),
            2 => json!({ "@id": format!("{before}:a"), "@type": "@id" }),
            3 => json!({ "@id": format!("http://e/{i}"), "@type": before }),
            _ => json!({ "@reverse": format!("{before}:r") }),
        };
        context.insert(format!("t{i}"), definition);
    }
    if n > 0 && input.byte() == 255 {
        context.insert("t0".into(), json!(format!("t{n}:z")));
        cyclic = true;
    }
    (Value::Object(context), cyclic)
}

fn json_ld(input: &mut Input<'_>) {
    let n = input.depth(3_000);
    let (mut context, cyclic) = chained_context(input, n);
    let scoped = input.depth(300) % 64;
    for _ in 0..scoped {
        let terms = input.0.len() % 4;
        let (mut outer, _) = chained_context(input, terms);
        outer.as_object_mut().expect("an object").insert("s".into(), json!({ "@id": "http://e/s", "@context": context }));
        context = outer;
    }
    let doc = json!({ "_id": "d", "@context": context.clone(), "@id": "http://e/x", format!("t{n}"): 1, "s": { "t1": 2 } });
    let checked = check_json_ld(&doc);
    if n + 1 > MAX_CONTEXT_DEPTH || cyclic {
        assert!(checked.is_err(), "a chain of {} terms (cyclic: {cyclic}) passed the check", n + 1);
    }
    let db = database();
    let written = db.update_docs(vec![doc.as_object().expect("an object").clone()], true);
    if checked.is_err() {
        // Refused whole, or (as `_bulk_docs` answers) that document alone.
        let refused = written.as_ref().map_or(true, |out| out.iter().all(|(_, outcome)| outcome.is_err()));
        assert!(refused, "a document refused by the check was written: {written:?}");
    }
    // The same as the database's default context: refused, or usable.
    let local = json!({ "@context": context });
    let context_checked = check_json_ld(&local);
    let stored = db.put_local(DEFAULT_CONTEXT_DOC, local.as_object().expect("an object").clone());
    if context_checked.is_err() {
        assert!(stored.is_err(), "a default context refused by the check was stored");
    }
    let plain = json!({ "_id": "plain", "t1": 1 });
    let after = db.update_docs(vec![plain.as_object().expect("an object").clone()], true);
    if stored.is_err() {
        let written = after.as_ref().is_ok_and(|out| out.iter().all(|(_, outcome)| outcome.is_ok()));
        assert!(written, "a refused default context broke writes: {after:?}");
    }
}

fn nested_json(input: &mut Input<'_>) {
    let depth = input.depth(5_000);
    let mut text = String::from(r#"{"_id": "n", "@id": "http://e/x", "http://e/p": "#);
    let mut closers = Vec::new();
    for _ in 0..depth {
        if input.byte() % 2 == 0 {
            text.push('[');
            closers.push(']');
        } else {
            text.push_str(r#"{"http://e/q": "#);
            closers.push('}');
        }
    }
    text.push('1');
    text.extend(closers.iter().rev());
    text.push('}');
    // serde_json refuses past 128 levels; whatever it takes goes through the
    // check and the write path.
    let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(&text) else { return };
    let _ = check_json_ld(&Value::Object(doc.clone()));
    let _ = database().update_docs(vec![doc], true);
}

fn expect_nesting(format: RdfFormat, body: &str, depth: usize) {
    let checked = check_nesting(format, body.as_bytes(), MAX_RDF_NESTING);
    match &checked {
        Ok(()) => assert!(depth <= MAX_RDF_NESTING, "{depth} levels passed the check"),
        Err(e) => {
            assert!(depth > MAX_RDF_NESTING, "{depth} levels refused: {e}");
            assert!(e.line >= 1 && e.column >= 1);
        }
    }
    if checked.is_ok() {
        for q in RdfParser::from_format(format).with_base_iri("http://e/").expect("a valid base").for_slice(body.as_bytes()) {
            if q.is_err() {
                break;
            }
        }
    }
}

fn nested_rdf_xml(input: &mut Input<'_>) {
    let levels = input.depth(20_000) / 2;
    let mut s = String::from(r#"<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:e="http://e/">"#);
    let mut closers: Vec<&str> = Vec::new();
    for _ in 0..levels {
        match input.byte() % 4 {
            0 => {
                s.push_str("<!-- <e:p><e:p> --><rdf:Description><e:p>");
                closers.extend(["</rdf:Description>", "</e:p>"]);
            }
            1 => {
                s.push_str(r#"<rdf:Description e:a="/>"><e:p rdf:parseType="Resource"><e:q>"#);
                closers.extend(["</rdf:Description>", "</e:p>", "</e:q>"]);
            }
            _ => {
                s.push_str("<rdf:Description><e:p>");
                closers.extend(["</rdf:Description>", "</e:p>"]);
            }
        }
    }
    let depth = closers.len() + 1;
    s.push_str("<![CDATA[<x><y>]]>");
    for c in closers.iter().rev() {
        s.push_str(c);
    }
    s.push_str("</rdf:RDF>");
    expect_nesting(RdfFormat::RdfXml, &s, depth);
}

fn nested_turtle(input: &mut Input<'_>, format: RdfFormat) {
    let depth = input.depth(20_000);
    let mut s = String::new();
    let trig = format == RdfFormat::TriG;
    if trig {
        s.push_str("<http://e/g> {\n");
    }
    s.push_str("<http://e/s> <http://e/p> ");
    let mut closers = Vec::new();
    for _ in 0..depth {
        match input.byte() % 6 {
            0 => {
                s.push_str("( \"(((\" ");
                closers.push(" )");
            }
            1 => {
                s.push_str("[ <http://e/p(> '''[[\n[''' ; <http://e/q> ");
                closers.push(" ]");
            }
            2 => {
                s.push_str("( # ((( [[[\n");
                closers.push(")");
            }
            3 => {
                s.push_str("[ <http://e/p> ");
                closers.push("]");
            }
            _ => {
                s.push('(');
                closers.push(")");
            }
        }
    }
    s.push('1');
    for c in closers.iter().rev() {
        s.push_str(c);
    }
    s.push_str(" .\n");
    if trig {
        s.push_str("}\n");
    }
    expect_nesting(format, &s, depth + trig as usize);
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    match input.byte() % 5 {
        0 => json_ld(&mut input),
        1 => nested_json(&mut input),
        2 => nested_rdf_xml(&mut input),
        3 => nested_turtle(&mut input, RdfFormat::Turtle),
        _ => nested_turtle(&mut input, RdfFormat::TriG),
    }
});
