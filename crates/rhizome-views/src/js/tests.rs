use super::*;
use serde_json::json;

fn sandbox() -> Sandbox {
    Sandbox::new(Limits { call_timeout: Duration::from_millis(300), memory_bytes: 16 << 20, ..Limits::default() }).unwrap()
}

#[test]
fn map_functions_emit_and_a_throw_skips_only_that_document() {
    let mut s = sandbox();
    let f = s.compile("function (doc) { if (doc.n > 1) throw new Error('too big'); emit(doc.n, doc.tags); emit([doc._id]); }", &json!({})).unwrap();
    let out = s.map(&[f], r#"{"_id":"a","n":1,"tags":["x"]}"#).unwrap();
    assert_eq!(out, vec![Ok(vec![(json!(1), json!(["x"])), (json!(["a"]), Value::Null)])]);
    let out = s.map(&[f], r#"{"_id":"b","n":2}"#).unwrap();
    assert_eq!(out, vec![Err("too big".to_owned())]);
}

#[test]
fn documents_are_sealed_so_one_function_cannot_change_what_the_next_sees() {
    let mut s = sandbox();
    let a = s.compile("function (doc) { doc.n = 99; doc.list.push(1); emit(doc.n, null); }", &json!({})).unwrap();
    let b = s.compile("function (doc) { emit(doc.n, doc.list.length); }", &json!({})).unwrap();
    let out = s.map(&[a, b], r#"{"n":1,"list":[]}"#).unwrap();
    // Assigning to a frozen object is ignored; push throws.
    assert!(out[0].is_err(), "{out:?}");
    assert_eq!(out[1], Ok(vec![(json!(1), json!(0))]));
}

#[test]
fn couchdbs_helpers_and_require_of_design_document_modules() {
    let mut s = sandbox();
    let ddoc = json!({"views": {"lib": {"util": "exports.twice = function (x) { return 2 * x; }; exports.more = require('./more').n;", "more": "module.exports = {n: 5};"}}});
    let f = s
        .compile("function (doc) { var u = require('views/lib/util'); log('seen ' + doc.x); emit(isArray(doc.a), [sum(doc.a), u.twice(doc.x), u.more, toJSON({a: 1})]); }", &ddoc)
        .unwrap();
    let out = s.map(&[f], r#"{"x":4,"a":[1,2,3]}"#).unwrap();
    assert_eq!(out, vec![Ok(vec![(json!(true), json!([6, 8, 5, "{\"a\":1}"]))])]);
    assert_eq!(s.take_logs(), vec!["seen 4".to_owned()]);
    assert!(s.take_logs().is_empty());
    let g = s.compile("function (doc) { require('views/lib/nothing'); }", &ddoc).unwrap();
    let out = s.map(&[g], "{}").unwrap();
    assert!(out[0].as_ref().unwrap_err().contains("nothing"), "{out:?}");
}

#[test]
fn a_function_followed_by_a_semicolon_compiles_as_in_couchdbs_quickjs() {
    let mut s = sandbox();
    // PouchDB's suites write map functions so; CouchDB 3.5 accepts them.
    let f = s.compile("function (doc) { emit(doc._id, null) };\n", &json!({})).unwrap();
    assert_eq!(s.map(&[f], r#"{"_id":"a"}"#).unwrap(), vec![Ok(vec![(json!("a"), Value::Null)])]);
}

#[test]
fn what_is_not_a_function_fails_to_compile() {
    let mut s = sandbox();
    for bad in ["function (doc) { emit(doc", "42", "'a string'", "function (doc) {} function"] {
        match s.compile(bad, &json!({})) {
            Err(JsError::Compile(m)) => assert!(!m.is_empty()),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn runaway_functions_stop_at_the_time_limit_and_the_sandbox_goes_on() {
    let mut s = sandbox();
    let f = s.compile("function (doc) { while (true) {} }", &json!({})).unwrap();
    // The interrupt cannot be caught by the function's own try/catch.
    let g = s.compile("function (doc) { try { while (true) {} } catch (e) { emit('caught', null); } }", &json!({})).unwrap();
    assert_eq!(s.map(&[f], "{}"), Err(JsError::Timeout(Duration::from_millis(300))));
    assert_eq!(s.map(&[g], "{}"), Err(JsError::Timeout(Duration::from_millis(300))));
    let h = s.compile("function (doc) { emit(1, 2); }", &json!({})).unwrap();
    assert_eq!(s.map(&[h], "{}").unwrap(), vec![Ok(vec![(json!(1), json!(2))])]);
}

#[test]
fn memory_and_stack_are_bounded() {
    let mut s = sandbox();
    let f = s.compile("function (doc) { var a = []; while (true) a.push(new Array(100000).fill(1)); }", &json!({})).unwrap();
    let out = s.map(&[f], "{}");
    assert!(matches!(&out, Err(JsError::OutOfMemory(_))) || matches!(&out, Ok(v) if v[0].as_ref().is_err_and(|m| m.contains("memory"))), "{out:?}");
    let mut s = sandbox();
    let g = s.compile("function (doc) { function r(n) { return r(n + 1) + 1; } emit(r(0), null); }", &json!({})).unwrap();
    let out = s.map(&[g], "{}").unwrap();
    assert!(out[0].is_err(), "{out:?}");
}

#[test]
fn nothing_outside_the_language_is_reachable() {
    let mut s = sandbox();
    let f = s
        .compile(
            "function (doc) { emit([typeof require('x') ], null); }",
            &json!({}),
        )
        .unwrap();
    assert!(s.map(&[f], "{}").unwrap()[0].is_err());
    let g = s
        .compile(
            "function (doc) { emit([typeof std, typeof os, typeof fetch, typeof XMLHttpRequest, typeof process, typeof import_meta], null); }",
            &json!({}),
        )
        .unwrap();
    assert_eq!(s.map(&[g], "{}").unwrap(), vec![Ok(vec![(json!(vec!["undefined"; 6]), Value::Null)])]);
    let h = s.compile("function (doc) { return import('os'); }", &json!({})).unwrap();
    // A dynamic import finds no loader.
    let r = s.call(h, &[json!({})]);
    assert!(r.is_err() || r == Ok(json!({})), "{r:?}");
}

#[test]
fn calls_take_and_give_json() {
    let mut s = sandbox();
    let f = s.compile("function (keys, values, rereduce) { return {n: values.length, re: rereduce, k: keys}; }", &json!({})).unwrap();
    assert_eq!(s.call(f, &[json!([[1, "a"]]), json!([5]), json!(false)]).unwrap(), json!({"n": 1, "re": false, "k": [[1, "a"]]}));
    let g = s.compile("function () { throw({forbidden: 'no'}); }", &json!({})).unwrap();
    assert_eq!(s.call(g, &[]), Err(JsError::Thrown(json!({"forbidden": "no"}))));
    let u = s.compile("function () { }", &json!({})).unwrap();
    assert_eq!(s.call(u, &[]).unwrap(), Value::Null);
}
