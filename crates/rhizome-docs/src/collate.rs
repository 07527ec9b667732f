//! CouchDB's collation of JSON values, as a comparison and as an
//! order-preserving byte encoding
//! (https://docs.couchdb.org/en/stable/ddocs/views/collation.html).
//!
//! The order of types: `null` < `false` < `true` < numbers < strings <
//! arrays < objects. Numbers by value; arrays element by element, a shorter
//! prefix first; objects member by member (key, then value), a shorter
//! prefix first. Strings as ICU's root collation orders them at tertiary
//! strength, approximated: first by a primary weight ignoring case and the
//! accents of Latin letters (whitespace, then punctuation and symbols in
//! ICU's order, then digits, then letters; other characters after them, by
//! lowercase code point), then at a tie by accents (`"e" < "é"`), then
//! lowercase before uppercase (`"a" < "A" < "aa"`), then by code point.
//! Known differences from ICU: scripts other than Latin sort by code point,
//! and letters ICU expands (`ß`, `æ`) or strokes (`ø`) are not folded.
//! U+FFFF sorts after every other character, as in ICU.
//!
//! [`encode`] gives a byte string whose bytewise order is [`compare`]'s
//! order, so a store's ordered keys can hold collated values: Mango's JSON
//! indexes use it for their rows, and JavaScript map/reduce views (issue 15,
//! point 1) are meant to reuse it for theirs. Encodings are prefix-free, so
//! several values (a compound key, then a document id) can be concatenated
//! and still sort as a tuple. `_id` comparisons in Mango use raw (code
//! point) order instead, as CouchDB's `cmp_raw`.

use serde_json::{Map, Value};
use std::cmp::Ordering;

const TAG_NULL: u8 = 0x10;
const TAG_FALSE: u8 = 0x20;
const TAG_TRUE: u8 = 0x30;
const TAG_NUMBER: u8 = 0x40;
const TAG_STRING: u8 = 0x50;
const TAG_ARRAY: u8 = 0x60;
const TAG_OBJECT: u8 = 0x70;
/// Ends a string's sections, an array and an object: below every tag and
/// every weight's first byte.
const END: u8 = 0x00;
/// Greater than any encoding's first byte: `encode(v)` followed by this is
/// above every key starting with `encode(v)` (range scans' upper bounds).
pub const AFTER: u8 = 0xFF;
/// Starts each member of an object.
const MEMBER: u8 = 0x01;

/// ICU root order of the printable ASCII characters that are not letters or
/// digits (whitespace first, then punctuation and symbols).
const ASCII_ORDER: &[u8] = b"\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/// Latin letters with diacritics, U+00C0 to U+024F: the base letter of
/// each (`.` where there is none) and its first combining mark (1 + the
/// mark's offset from U+0300; 0 for none), from Unicode's canonical
/// decompositions (NFD). ICU orders these by the base letter first and by
/// the accent after (secondary strength), before case.
const LATIN_FIRST: u32 = 0xC0;
const LATIN_BASES: &[u8] = concat!(
    "AAAAAA.CEEEEIIII.NOOOOO..UUUUY..aaaaaa.ceeeeiiii.nooooo..uuuuy.yAaAaAaCcCcCcCcDd..EeEeEeEeEeGgGg",
    "GgGgHh..IiIiIiIiI...JjKk.LlLlLl....NnNnNn...OoOoOo..RrRrRrSsSsSsSsTtTt..UuUuUuUuUuUuWwYyYZzZzZz.",
    "................................Oo.............Uu............................AaIiOoUuUuUuUuUu.Aa",
    "Aa....GgKkOoOo..j...Gg..NnAa....AaAaEeEeIiIiOoOoRrRrUuUuSsTt..Hh......AaEeOoOoOoOoYy............",
    "................",
).as_bytes();
const LATIN_ACCENTS: &[u8] = &[
    1, 2, 3, 4, 9, 11, 0, 40, 1, 2, 3, 9, 1, 2, 3, 9, 0, 4, 1, 2, 3, 4, 9, 0, 0, 1, 2, 3, 9, 2, 0, 0, 1, 2, 3,
    4, 9, 11, 0, 40, 1, 2, 3, 9, 1, 2, 3, 9, 0, 4, 1, 2, 3, 4, 9, 0, 0, 1, 2, 3, 9, 2, 0, 9, 5, 5, 7, 7, 41,
    41, 2, 2, 3, 3, 8, 8, 13, 13, 13, 13, 0, 0, 5, 5, 7, 7, 8, 8, 41, 41, 13, 13, 3, 3, 7, 7, 8, 8, 40, 40, 3,
    3, 0, 0, 4, 4, 5, 5, 7, 7, 41, 41, 8, 0, 0, 0, 3, 3, 40, 40, 0, 2, 2, 40, 40, 13, 13, 0, 0, 0, 0, 2, 2,
    40, 40, 13, 13, 0, 0, 0, 5, 5, 7, 7, 12, 12, 0, 0, 2, 2, 40, 40, 13, 13, 2, 2, 3, 3, 40, 40, 13, 13, 40,
    40, 13, 13, 0, 0, 4, 4, 5, 5, 7, 7, 11, 11, 12, 12, 41, 41, 3, 3, 3, 3, 9, 2, 2, 8, 8, 13, 13, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 28, 28, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 28, 28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 13, 13, 13, 13, 13, 13, 13, 13, 9, 9, 9, 9, 9, 9, 9, 9, 0, 9, 9, 8, 8, 0, 0, 0, 0, 13, 13, 13,
    13, 41, 41, 41, 41, 0, 0, 13, 0, 0, 0, 2, 2, 0, 0, 1, 1, 11, 11, 0, 0, 0, 0, 16, 16, 18, 18, 16, 16, 18,
    18, 16, 16, 18, 18, 16, 16, 18, 18, 16, 16, 18, 18, 16, 16, 18, 18, 39, 39, 39, 39, 0, 0, 13, 13, 0, 0, 0,
    0, 0, 0, 8, 8, 40, 40, 9, 9, 4, 4, 8, 8, 8, 8, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0
];

const _: () = assert!(LATIN_BASES.len() == LATIN_ACCENTS.len(), "one accent per base letter");

/// The base letter and accent weight of a character (itself and 0 when it
/// has no accent in the table).
fn fold(c: char) -> (char, u8) {
    let i = (c as u32).wrapping_sub(LATIN_FIRST) as usize;
    match LATIN_BASES.get(i) {
        Some(&b) if b != b'.' => (b as char, LATIN_ACCENTS[i]),
        _ => (c, 0),
    }
}

/// The primary weight of U+FFFF: above every other character's, as in
/// ICU's root collation, where it sorts last (CouchDB's `$beginsWith`
/// ranges and the `endkey: "abc\ufff0"`-style idiom rely on it).
const PRIMARY_LAST: u32 = 0xFF_FFFF;

fn primary(c: char) -> u32 {
    if c == '\u{FFFF}' {
        return PRIMARY_LAST;
    }
    let c = fold(c).0;
    let lower = if c.is_ascii_uppercase() { c.to_ascii_lowercase() } else { c };
    if lower.is_ascii() {
        match ASCII_ORDER.iter().position(|&b| b as char == lower) {
            Some(i) => 0x10000 + 0x20 + i as u32,
            // Control characters: before everything else.
            None => 0x10000 + lower as u32,
        }
    } else {
        let folded = c.to_lowercase().next().unwrap_or(c);
        0x10000 + 0x100 + folded as u32
    }
}

/// Accents: 1 for none, above for a mark (never 0, which ends a section).
fn secondary(c: char) -> u8 {
    1 + fold(c).1
}

fn tertiary(c: char) -> u8 {
    if c.is_uppercase() {
        2
    } else {
        1
    }
}

/// The collation order of two strings (see the module's comment).
pub fn compare_strings(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    a.chars()
        .map(primary)
        .cmp(b.chars().map(primary))
        .then_with(|| a.chars().map(secondary).cmp(b.chars().map(secondary)))
        .then_with(|| a.chars().map(tertiary).cmp(b.chars().map(tertiary)))
        .then_with(|| a.cmp(b))
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(false) => 1,
        Value::Bool(true) => 2,
        Value::Number(_) => 3,
        Value::String(_) => 4,
        Value::Array(_) => 5,
        Value::Object(_) => 6,
    }
}

fn number(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

/// CouchDB's collation of two JSON values.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (number(x), number(y));
            // total_cmp tells -0.0 from 0.0; collation does not.
            if x == y {
                Ordering::Equal
            } else {
                x.total_cmp(&y)
            }
        }
        (Value::String(x), Value::String(y)) => compare_strings(x, y),
        (Value::Array(x), Value::Array(y)) => x.iter().zip(y).map(|(a, b)| compare(a, b)).find(|o| o.is_ne()).unwrap_or(x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => compare_objects(x, y),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_objects(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    for ((ka, va), (kb, vb)) in x.iter().zip(y) {
        let o = compare_strings(ka, kb).then_with(|| compare(va, vb));
        if o.is_ne() {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

/// Appends the order-preserving encoding of `v` to `out`.
pub fn encode_into(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(TAG_NULL),
        Value::Bool(false) => out.push(TAG_FALSE),
        Value::Bool(true) => out.push(TAG_TRUE),
        Value::Number(n) => {
            out.push(TAG_NUMBER);
            let mut x = number(n);
            if x == 0.0 {
                x = 0.0; // -0.0 collates as 0
            }
            let bits = x.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::String(s) => {
            out.push(TAG_STRING);
            encode_string(s, out);
        }
        Value::Array(items) => {
            out.push(TAG_ARRAY);
            for item in items {
                encode_into(item, out);
            }
            out.push(END);
        }
        Value::Object(members) => {
            out.push(TAG_OBJECT);
            for (k, v) in members {
                // A member starts above END, even with an empty key.
                out.push(MEMBER);
                encode_string(k, out);
                encode_into(v, out);
            }
            out.push(END);
        }
    }
}

/// Four sections, each ended by `END`: primary weights (3 bytes each, the
/// first byte never 0), accent weights, case weights (1 or 2), code points
/// (3 bytes each, offset so the first byte is never 0).
fn encode_string(s: &str, out: &mut Vec<u8>) {
    for c in s.chars() {
        out.extend_from_slice(&primary(c).to_be_bytes()[1..]);
    }
    out.push(END);
    for c in s.chars() {
        out.push(secondary(c));
    }
    out.push(END);
    for c in s.chars() {
        out.push(tertiary(c));
    }
    out.push(END);
    for c in s.chars() {
        out.extend_from_slice(&(0x10000 + c as u32).to_be_bytes()[1..]);
    }
    out.push(END);
}

/// The order-preserving encoding of `v`: `encode(a).cmp(&encode(b)) ==
/// compare(a, b)` for every `a` and `b` (up to numbers that `f64` cannot
/// tell apart).
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(v, &mut out);
    out
}

/// Reads back the value [`encode_into`] wrote at the start of `bytes`,
/// with the bytes it took; `None` when they are no encoding. A number comes
/// back as the `f64` it was collated as (an integer when it is one that
/// `f64` holds exactly), so `1.0` reads as `1`. Covering Mango indexes
/// answer from their rows' keys with it, reading no document.
pub fn decode_prefix(bytes: &[u8]) -> Option<(Value, usize)> {
    let (&tag, rest) = bytes.split_first()?;
    let (v, used) = match tag {
        TAG_NULL => (Value::Null, 0),
        TAG_FALSE => (Value::Bool(false), 0),
        TAG_TRUE => (Value::Bool(true), 0),
        TAG_NUMBER => {
            let ordered = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
            let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
            let x = f64::from_bits(bits);
            let n = if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 { serde_json::Number::from(x as i64) } else { serde_json::Number::from_f64(x)? };
            (Value::Number(n), 8)
        }
        TAG_STRING => {
            let (s, used) = decode_string(rest)?;
            (Value::String(s), used)
        }
        TAG_ARRAY => {
            let mut items = Vec::new();
            let mut at = 0;
            while *rest.get(at)? != END {
                let (v, used) = decode_prefix(&rest[at..])?;
                items.push(v);
                at += used;
            }
            (Value::Array(items), at + 1)
        }
        TAG_OBJECT => {
            let mut members = Map::new();
            let mut at = 0;
            while *rest.get(at)? == MEMBER {
                let (k, used) = decode_string(&rest[at + 1..])?;
                at += 1 + used;
                let (v, used) = decode_prefix(&rest[at..])?;
                at += used;
                members.insert(k, v);
            }
            (*rest.get(at)? == END).then_some(())?;
            (Value::Object(members), at + 1)
        }
        _ => return None,
    };
    Some((v, 1 + used))
}

/// A string's four sections (see [`encode_string`]): the primary weights
/// give the number of characters, the last section their code points.
fn decode_string(bytes: &[u8]) -> Option<(String, usize)> {
    let mut n = 0;
    while *bytes.get(3 * n)? != END {
        n += 1;
    }
    let code_points = 3 * n + 1 + (n + 1) + (n + 1);
    let mut s = String::with_capacity(n);
    for unit in bytes.get(code_points..code_points + 3 * n)?.chunks_exact(3) {
        let c = (u32::from(unit[0]) << 16 | u32::from(unit[1]) << 8 | u32::from(unit[2])).checked_sub(0x10000)?;
        s.push(char::from_u32(c)?);
    }
    (*bytes.get(code_points + 3 * n)? == END).then_some((s, code_points + 3 * n + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The order of CouchDB's collation documentation, and more.
    fn ordered() -> Vec<Value> {
        vec![
            json!(null),
            json!(false),
            json!(true),
            json!(-1e10),
            json!(-2),
            json!(0),
            json!(1),
            json!(2.5),
            json!(3),
            json!(1e20),
            json!(""),
            json!(" "),
            json!("_"),
            json!("-"),
            json!("$"),
            json!("0"),
            json!("9"),
            json!("a"),
            json!("A"),
            json!("aa"),
            json!("Aa"),
            json!("aB"),
            json!("b"),
            json!("B"),
            json!("ba"),
            json!("bb"),
            json!("e"),
            json!("E"),
            json!("é"),
            json!("É"),
            json!("ef"),
            json!("éf"),
            json!("z"),
            json!("Ω"),
            json!("\u{10FFFF}"),
            json!("\u{FFFF}"),
            json!([]),
            json!([null]),
            json!(["a"]),
            json!(["b"]),
            json!(["b", "c"]),
            json!(["b", "c", "a"]),
            json!(["b", "d"]),
            json!({}),
            json!({ "": 1 }),
            json!({ "a": 1 }),
            json!({ "a": 2 }),
            json!({ "b": 1 }),
            json!({ "b": 2, "c": 2 }),
        ]
    }

    #[test]
    fn values_compare_and_encode_in_couchdbs_collation_order() {
        let values = ordered();
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate() {
                assert_eq!(compare(a, b), i.cmp(&j), "{a} vs {b}");
                assert_eq!(encode(a).cmp(&encode(b)), i.cmp(&j), "encoded {a} vs {b}");
            }
        }
    }

    #[test]
    fn encodings_are_prefix_free_so_tuples_sort_element_wise() {
        let values = ordered();
        for a in &values {
            for b in &values {
                for c in &values {
                    let mut x = encode(a);
                    encode_into(c, &mut x);
                    let mut y = encode(b);
                    encode_into(c, &mut y);
                    assert_eq!(x.cmp(&y), compare(a, b), "({a}, {c}) vs ({b}, {c})");
                    let mut after = encode(a);
                    after.push(AFTER);
                    assert!(after > x, "({a}, AFTER) is above ({a}, {c})");
                    if compare(a, b).is_lt() {
                        assert!(after < encode(b), "({a}, AFTER) is below {b}");
                    }
                }
            }
        }
        assert_eq!(compare(&json!(-0.0), &json!(0)), Ordering::Equal);
        assert_eq!(encode(&json!(-0.0)), encode(&json!(0)));
    }

    #[test]
    fn encodings_decode_to_their_values() {
        let mut values = ordered();
        values.push(json!({ "name": { "first": "Zoë", "last": "O'Neil" }, "tags": ["a", 1, null, { "x": [true] }], "n": -7.25 }));
        for v in &values {
            let mut bytes = encode(v);
            let used = bytes.len();
            bytes.extend_from_slice(b"doc-id");
            let (back, back_used) = decode_prefix(&bytes).unwrap_or_else(|| panic!("{v} decodes"));
            // Equal in collation: numbers may change between integer and f64.
            assert_eq!((compare(&back, v), back_used), (Ordering::Equal, used), "{v} read back as {back}");
        }
        assert_eq!(decode_prefix(&encode(&json!(1.0))).map(|(v, _)| v), Some(json!(1)), "an integral f64 reads as an integer");
        for bad in [&b""[..], &[TAG_NUMBER, 1, 2][..], &[TAG_STRING, 1][..], &[0x99][..]] {
            assert_eq!(decode_prefix(bad), None, "{bad:?}");
        }
    }
}
