//! Every literal goes in and comes out unchanged, inlined or not.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_rdf::term::inline::{decode_inline, inline_literal};

const TYPES: [&str; 6] = ["string", "boolean", "integer", "decimal", "date", "dateTime"];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let Ok(lexical) = std::str::from_utf8(body) else { return };
    let datatype = format!("http://www.w3.org/2001/XMLSchema#{}", TYPES[selector as usize % TYPES.len()]);
    if let Some(id) = inline_literal(lexical, &datatype) {
        let (back, dt) = decode_inline(id).expect("inlined ids decode");
        assert_eq!(back, lexical);
        assert_eq!(dt, datatype);
    }
});
