//! Every literal goes in and comes out unchanged, inlined or not; a
//! language tag's code in an id names its primary subtag exactly.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rhizome_rdf::term::inline::{decode_inline, inline_literal};
use rhizome_rdf::term::{lang_code, tag};
use rhizome_rdf::TermId;

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
    // The body as a language tag: a code, when there is one, is that of
    // the primary subtag (2-3 lowercase letters) with the subtags flag, and
    // equal codes mean equal primary subtags.
    let code = lang_code::of(lexical);
    let (primary, more) = match lexical.split_once('-') {
        Some((p, _)) => (p, true),
        None => (lexical, false),
    };
    if code != 0 {
        assert!((2..=3).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_lowercase()), "{lexical:?}");
        assert_eq!(code & lang_code::HAS_SUBTAGS != 0, more);
        let id = TermId::dictionary(tag::LANG_STRING, u64::from(selector) << 32, Some(lexical)).expect("a small sequence fits");
        assert_eq!((id.lang_code(), id.sequence()), (Some(code), u64::from(selector) << 32));
        for other in ["de", "en", "fra", "zh"] {
            assert_eq!(lang_code::primary(other) == code & !lang_code::HAS_SUBTAGS, other == primary, "{lexical:?} {other}");
        }
    }
});
