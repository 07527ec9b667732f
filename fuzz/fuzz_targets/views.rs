//! View requests and design documents: a query string, a JSON body and a
//! design document (three parts split on newlines) never panic the
//! parsers, and the built-in reduces never panic on any values, giving the
//! same answer reduced at once or in two parts re-reduced.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_views::reduce::Reducer;
use rhizome_views::{DesignDoc, ViewQuery};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let query = std::str::from_utf8(parts.next().unwrap_or_default()).unwrap_or_default();
    let pairs: Vec<(&str, &str)> = query.split('&').map(|p| p.split_once('=').unwrap_or((p, ""))).collect();
    if let Ok(q) = ViewQuery::from_params(pairs) {
        if let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(parts.next().unwrap_or_default()) {
            let _ = q.from_json(&body);
        }
    }
    let Ok(doc) = serde_json::from_slice::<Value>(parts.next().unwrap_or_default()) else { return };
    if let Value::Object(body) = &doc {
        if let Ok(Some(d)) = DesignDoc::parse("_design/fuzz", body) {
            assert_eq!(d.signature(), d.clone().signature());
        }
    }
    let values: Vec<(Value, String, Value)> = match &doc {
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| (v.clone(), i.to_string(), v.clone())).collect(),
        other => vec![(other.clone(), "0".into(), other.clone())],
    };
    for r in [Reducer::Count, Reducer::Sum, Reducer::Stats, Reducer::ApproxCountDistinct] {
        let whole = r.reduce(None, &values);
        if values.len() >= 2 {
            let (a, b) = values.split_at(values.len() / 2);
            if let (Ok(x), Ok(y)) = (r.reduce(None, a), r.reduce(None, b)) {
                let parts = r.rereduce(None, vec![x, y]).map(|p| p.finalize());
                if matches!(r, Reducer::Count | Reducer::ApproxCountDistinct) {
                    assert_eq!(parts.ok(), whole.clone().ok().map(|p| p.finalize()));
                }
            }
        }
    }
});
