//! A Mango selector and a document (two JSON texts on two lines): parsing
//! never panics, the normal form means what the selector means, and the
//! collation encoding orders the two values as the comparison does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_docs::collate;
use rhizome_docs::selector::Selector;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |b| *b == b'\n');
    let (Some(a), Some(b)) = (parts.next(), parts.next()) else { return };
    let (Ok(selector), Ok(doc)) = (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)) else { return };
    assert_eq!(collate::encode(&selector).cmp(&collate::encode(&doc)), collate::compare(&selector, &doc), "{selector} vs {doc}");
    if let Ok(parsed) = Selector::parse(&selector) {
        let matched = parsed.matches(&doc);
        let normal = parsed.to_json();
        // Field names with a backslash have no exact dotted spelling.
        if !normal.to_string().contains('\\') {
            let again = Selector::parse(&normal).expect("the normal form parses");
            assert_eq!(again.matches(&doc), matched, "{selector} as {normal} on {doc}");
        }
    }
});
