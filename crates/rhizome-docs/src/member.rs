//! A member of a document's JSON object, found without hashing its name.
//!
//! serde_json's objects (with `preserve_order`) are `IndexMap`s hashed with
//! SipHash: a lookup hashes the name first (about 200 instructions). A
//! document write asks for a score of members, most of them absent
//! (`_attachments`, `_deleted`, `_revisions`, `@context`): on TPC-B,
//! about 80 lookups and 19k instructions a transaction. A document has
//! few members, and comparing a few names (most differ in length) costs
//! less than hashing one.

use serde_json::{Map, Value};

/// Members past which a lookup hashes after all.
const SCAN_MAX: usize = 8;

/// `doc.get(name)`.
pub(crate) fn member<'a>(doc: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if doc.len() > SCAN_MAX {
        return doc.get(name);
    }
    doc.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_is_what_get_finds_in_small_and_large_objects() {
        for n in [0, 1, 5, 8, 9, 40] {
            let doc: Map<String, Value> = (0..n).map(|i| (format!("m{i}"), json!(i))).collect();
            for name in ["m0", "m4", "m8", "m39", "absent", ""] {
                assert_eq!(member(&doc, name), doc.get(name), "{name} of {n}");
            }
        }
    }
}
