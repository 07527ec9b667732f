use super::*;
use crate::js::{Limits, Sandbox};
use serde_json::json;

/// A small deterministic generator (no dependency for a test's dice).
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const NAMES: [&str; 10] = ["a", "b", "n", "tags", "constructor", "toString", "_id", "1", "nested", "x y"];

fn member(d: &mut Dice, depth: usize) -> String {
    let mut s = "doc".to_owned();
    let steps = if d.below(4) == 0 { 1 + d.below(depth + 1) } else { 1 };
    for step in 0..steps {
        // Mostly names documents have; now and then one they inherit.
        let name = if d.below(12) == 0 || step > 0 { d.pick(&NAMES) } else { d.pick(&NAMES[..4]) };
        s += &match (name, d.below(3)) {
            ("1", _) => "[1]".to_owned(),
            ("x y", _) => "['x y']".to_owned(),
            (n, 0) => format!("[\"{n}\"]"),
            (n, _) => format!(".{n}"),
        };
    }
    s
}

fn expr(d: &mut Dice, depth: usize) -> String {
    let leaf = depth == 0;
    match d.below(if leaf { 4 } else { 11 }) {
        0 | 1 => member(d, 2),
        2 => d.pick(&["null", "true", "false", "undefined", "0", "7", "9007199254740992", "'s'", "\"\"", "'7'"]).to_owned(),
        3 => format!("typeof {}", member(d, 1)),
        4 => format!("[{}, {}]", expr(d, depth - 1), expr(d, depth - 1)),
        5 => format!("!{}", expr(d, depth - 1)),
        6 => format!("({} && {})", expr(d, depth - 1), expr(d, depth - 1)),
        7 => format!("({} || {})", expr(d, depth - 1), expr(d, depth - 1)),
        8 => format!("{} {} {}", expr(d, depth - 1), d.pick(&["===", "!==", "==", "!="]), expr(d, depth - 1)),
        9 => format!("{} {} {}", expr(d, 0), d.pick(&["<", "<=", ">", ">="]), expr(d, 0)),
        _ => "[]".to_owned(),
    }
}

fn statement(d: &mut Dice, depth: usize) -> String {
    match d.below(if depth == 0 { 1 } else { 4 }) {
        0 => match d.below(4) {
            0 => format!("emit({});", expr(d, 2)),
            1 => "emit();".to_owned(),
            _ => format!("emit({}, {})", expr(d, 2), expr(d, 2)) + d.pick(&[";", ";", "\n"]),
        },
        1 => format!("if ({}) {}", expr(d, 2), statement(d, depth - 1)),
        2 => format!("if ({}) {} else {}", expr(d, 2), statement(d, depth - 1), statement(d, depth - 1)),
        _ => format!("{{ {} {} }}", statement(d, depth - 1), statement(d, depth - 1)),
    }
}

fn value(d: &mut Dice, depth: usize) -> Value {
    match d.below(if depth == 0 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => Value::Bool(d.below(2) == 0),
        2 => json!(d.below(5) as i64 - 2),
        3 if d.below(3) == 0 => [json!(0.5), json!(1e300), json!(9007199254740993u64), json!(-0.0), json!(2.0)][d.below(5)].clone(),
        3 | 4 => json!(["", "s", "7", "é", "a\u{0}b"][d.below(5)]),
        5 => json!(d.below(3) as i64),
        6 => json!("x"),
        7 => Value::Array((0..d.below(3)).map(|_| value(d, depth - 1)).collect()),
        _ => object(d, depth - 1),
    }
}

fn object(d: &mut Dice, depth: usize) -> Value {
    let mut o = serde_json::Map::new();
    for _ in 0..d.below(9) {
        let name = if d.below(3) == 0 { d.pick(&NAMES) } else { d.pick(&NAMES[..4]) };
        o.insert(name.to_owned(), value(d, depth));
    }
    Value::Object(o)
}

fn sandbox() -> Sandbox {
    Sandbox::new(Limits::default()).unwrap()
}

/// The check that makes the native path allowed at all: on thousands of
/// generated functions and documents, whatever it answers is what QuickJS
/// answers, and it answers often enough that the comparison covers it.
#[test]
fn native_maps_give_quickjss_rows_on_generated_functions_and_documents() {
    let mut d = Dice(0x5eed);
    let mut s = sandbox();
    let (mut compared, mut left_to_quickjs) = (0, 0);
    for _ in 0..1500 {
        let source = format!("function (doc) {{ {} {} }}", statement(&mut d, 2), statement(&mut d, 1));
        let native = NativeMap::parse(&source).unwrap_or_else(|| panic!("not accepted: {source}"));
        let f = s.compile(&source, &json!({})).unwrap_or_else(|e| panic!("{source}: {e}"));
        for _ in 0..10 {
            let mut doc = object(&mut d, 2);
            doc.as_object_mut().unwrap().insert("_id".into(), json!("d1"));
            let text = doc.to_string();
            let doc: Value = serde_json::from_str(&text).unwrap();
            match native.map(&doc) {
                Some(rows) => {
                    let quickjs = s.map(&[f], &text).unwrap();
                    assert_eq!(quickjs, vec![Ok(rows)], "{source} on {text}");
                    compared += 1;
                }
                None => left_to_quickjs += 1,
            }
        }
    }
    // Generated expressions often reach what is left to QuickJS (a member
    // of a number, a comparison of mixed types): a fifth must be native.
    assert!(compared * 5 > compared + left_to_quickjs, "native {compared}, left to QuickJS {left_to_quickjs}");
}

#[test]
fn common_shapes_are_native_and_the_rest_is_left_to_quickjs() {
    for accepted in [
        "function (doc) { if (doc.num !== undefined) emit(doc.num, doc.score); }",
        "function(doc) {\n  if (doc.type === 'person' && doc.age) {\n    emit([doc.city, doc.age], null)\n  }\n}",
        "function by_id(d) { emit(d._id); };",
        "function (doc) { if (typeof doc.tags == 'object' || doc.x != null) emit(doc['a b'], [1, 'two', true]); else emit(null, doc); }",
        "function (doc) { /* all */ emit(doc._id, 1); // one\n }",
    ] {
        assert!(NativeMap::parse(accepted).is_some(), "{accepted}");
    }
    for refused in [
        "function (doc) { emit(doc.a + 1, null); }",
        "function (doc) { doc.tags.forEach(function (t) { emit(t, null); }); }",
        "function (doc) { var k = doc.a; emit(k, null); }",
        "function (doc) { emit(doc.a, 1.5); }",
        "function (doc) { emit(doc.a, 010); }",
        "function (doc) { emit('a\\nb', null); }",
        "function (doc) { log(doc); emit(doc.a); }",
        "function (doc) { emit(doc.a, doc.b, doc.c, doc.d); }",
        "function (emit) { emit(1); }",
        "function (doc) { emit([1, ], null); }",
        "function (doc) { if (doc.a) emit(1) emit(2); } x",
        "(function (doc) { emit(1); })",
    ] {
        assert!(NativeMap::parse(refused).is_none(), "{refused}");
    }
    let f = NativeMap::parse("function (doc) { emit(doc.a.b, doc.n); }").unwrap();
    // A member of undefined throws in JavaScript: left to QuickJS.
    assert_eq!(f.map(&json!({"n": 1})), None);
    assert_eq!(f.map(&json!({"a": {"b": 2}, "n": 1})), Some(vec![(json!(2), json!(1))]));
    // Inherited members, inexact numbers and index-like keys: QuickJS.
    let g = NativeMap::parse("function (doc) { emit(doc.constructor, doc.v); }").unwrap();
    assert_eq!(g.map(&json!({"v": 1})), None);
    let h = NativeMap::parse("function (doc) { emit(doc.v); }").unwrap();
    assert_eq!(h.map(&json!({"v": 1.5})), None);
    assert_eq!(h.map(&json!({"v": {"2": 1, "a": 0}})), None);
    assert_eq!(h.map(&json!({"v": {"a": [1, null, "x"]}})), Some(vec![(json!({"a": [1, null, "x"]}), Value::Null)]));
}
