//! Revision ids as CouchDB 3.5 makes them, so the same edit written to
//! Rhizome and to CouchDB gets the same `_rev` (clients and test suites
//! compare them, and a conflict's winner is chosen by them).
//!
//! CouchDB's `couch_db:new_revid/1` hashes, with MD5, Erlang's external term
//! format (`term_to_binary(_, [{minor_version, 1}])`) of the list
//! `[Deleted, OldStart, OldRev, Body, Atts]`:
//! - `Deleted`: the atom `true` or `false`;
//! - `OldStart`, `OldRev`: the edited revision's position and id (the id's
//!   16 bytes when it is 32 hex digits, else its text), `0` and `0` for a
//!   first edit;
//! - `Body`: the document without its `_` members, as jiffy decodes JSON
//!   (EJSON): an object is `{[{Key, Value}, ...]}` in the order its members
//!   were written, strings are binaries, integers integers, numbers with a
//!   fraction or exponent floats, `true`/`false`/`null` atoms (and a list
//!   of integers from 0 to 255 is written as a string, as Erlang does);
//! - `Atts`: `{Name, Type, MD5}` of each attachment, in reverse order of
//!   `_attachments` (a left fold builds the list).
//!
//! The format is https://www.erlang.org/doc/apps/erts/erl_ext_dist.html.
//! Known differences: integers beyond 64 bits are floats here (serde_json
//! reads them so) where jiffy keeps them exact; an attachment CouchDB
//! stores compressed (`text/*`, JSON, XML, JavaScript) has CouchDB's MD5
//! of its gzip stream as digest, Rhizome's of its data, so documents with
//! such attachments get other ids.

use crate::revtree::Rev;
use md5::{Digest, Md5};
use serde_json::{Map, Number, Value};

const VERSION: u8 = 131;
const NEW_FLOAT_EXT: u8 = 70;
const SMALL_INTEGER_EXT: u8 = 97;
const INTEGER_EXT: u8 = 98;
const ATOM_EXT: u8 = 100;
const SMALL_TUPLE_EXT: u8 = 104;
const NIL_EXT: u8 = 106;
const STRING_EXT: u8 = 107;
const LIST_EXT: u8 = 108;
const BINARY_EXT: u8 = 109;
const SMALL_BIG_EXT: u8 = 110;

/// An attachment as the revision id sees it: its name, content type and
/// MD5 (the 16 bytes of its digest).
pub(crate) struct AttachmentDigest<'a> {
    pub name: &'a str,
    pub content_type: &'a str,
    pub md5: Vec<u8>,
}

/// The attachments of a stored body's `_attachments` (`name` to metadata
/// with `content_type` and `digest`, `md5-` and base64), in the order
/// written.
pub(crate) fn attachment_digests(atts: Option<&Value>) -> Vec<AttachmentDigest<'_>> {
    use base64::Engine;
    let Some(Value::Object(atts)) = atts else { return Vec::new() };
    atts.iter()
        .map(|(name, meta)| {
            let content_type = meta.get("content_type").and_then(Value::as_str).unwrap_or("application/octet-stream");
            let digest = meta.get("digest").and_then(Value::as_str).unwrap_or("");
            let md5 = digest
                .strip_prefix("md5-")
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .unwrap_or_else(|| digest.as_bytes().to_vec());
            AttachmentDigest { name, content_type, md5 }
        })
        .collect()
}

/// The hex revision id CouchDB gives the edit: `body` is the document's
/// members (those named with `_` are left out, `_attachments` among them),
/// `parent` the revision edited (`None` for a first edit).
pub(crate) fn revision_id(deleted: bool, parent: Option<&Rev>, body: &Map<String, Value>, atts: &[AttachmentDigest<'_>]) -> String {
    let mut out = Vec::with_capacity(256);
    out.push(VERSION);
    list_header(&mut out, 5);
    atom(&mut out, if deleted { "true" } else { "false" });
    match parent {
        Some(p) => {
            integer(&mut out, i128::from(p.pos));
            binary(&mut out, &rev_id_bytes(&p.hash));
        }
        None => {
            integer(&mut out, 0);
            integer(&mut out, 0);
        }
    }
    object(&mut out, body.iter().filter(|(k, _)| !is_special(k)), body.keys().filter(|k| !is_special(k)).count());
    if atts.is_empty() {
        out.push(NIL_EXT);
    } else {
        list_header(&mut out, atts.len());
        for att in atts.iter().rev() {
            out.extend_from_slice(&[SMALL_TUPLE_EXT, 3]);
            binary(&mut out, att.name.as_bytes());
            binary(&mut out, att.content_type.as_bytes());
            binary(&mut out, &att.md5);
        }
        out.push(NIL_EXT);
    }
    out.push(NIL_EXT);
    let digest = Md5::digest(&out);
    let mut hex = String::with_capacity(32);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

/// Members CouchDB keeps out of a body (`couch_doc:transfer_fields`): those
/// named with `_` but `_replication_*` and `_access`. Rhizome's graph
/// marker is kept: it stands for the body.
fn is_special(member: &str) -> bool {
    member.starts_with('_') && !member.starts_with("_replication_") && member != "_access" && member != crate::jsonld::GRAPH_MARKER
}

/// CouchDB's `couch_doc:parse_revid`: 32 hex digits are the 16 bytes they
/// spell, any other id its text.
fn rev_id_bytes(hash: &str) -> Vec<u8> {
    if hash.len() == 32 {
        if let Ok(n) = u128::from_str_radix(hash, 16) {
            return n.to_be_bytes().to_vec();
        }
    }
    hash.as_bytes().to_vec()
}

fn list_header(out: &mut Vec<u8>, len: usize) {
    out.push(LIST_EXT);
    out.extend_from_slice(&(len as u32).to_be_bytes());
}

fn atom(out: &mut Vec<u8>, name: &str) {
    // Erlang/OTP 25 (CouchDB 3.5's) writes latin-1 atoms as ATOM_EXT at
    // minor version 1.
    out.push(ATOM_EXT);
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
}

fn binary(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(BINARY_EXT);
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn integer(out: &mut Vec<u8>, n: i128) {
    if (0..=255).contains(&n) {
        out.extend_from_slice(&[SMALL_INTEGER_EXT, n as u8]);
    } else if i128::from(i32::MIN) <= n && n <= i128::from(i32::MAX) {
        out.push(INTEGER_EXT);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        // A bignum: its magnitude's bytes, least significant first.
        let magnitude = n.unsigned_abs().to_le_bytes();
        let len = magnitude.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        out.extend_from_slice(&[SMALL_BIG_EXT, len as u8, u8::from(n < 0)]);
        out.extend_from_slice(&magnitude[..len]);
    }
}

fn number(out: &mut Vec<u8>, n: &Number) {
    if let Some(i) = n.as_i64() {
        integer(out, i128::from(i));
    } else if let Some(u) = n.as_u64() {
        integer(out, i128::from(u));
    } else {
        out.push(NEW_FLOAT_EXT);
        out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_be_bytes());
    }
}

/// An object as EJSON: `{[{Key, Value}, ...]}`.
fn object<'a>(out: &mut Vec<u8>, members: impl Iterator<Item = (&'a String, &'a Value)>, len: usize) {
    out.extend_from_slice(&[SMALL_TUPLE_EXT, 1]);
    if len == 0 {
        out.push(NIL_EXT);
        return;
    }
    list_header(out, len);
    for (k, v) in members {
        out.extend_from_slice(&[SMALL_TUPLE_EXT, 2]);
        binary(out, k.as_bytes());
        value(out, v);
    }
    out.push(NIL_EXT);
}

fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => atom(out, "null"),
        Value::Bool(b) => atom(out, if *b { "true" } else { "false" }),
        Value::Number(n) => number(out, n),
        Value::String(s) => binary(out, s.as_bytes()),
        Value::Array(items) if items.is_empty() => out.push(NIL_EXT),
        // Erlang writes a list of bytes as a string: `[2,1]` is "\x02\x01".
        Value::Array(items) if items.len() <= usize::from(u16::MAX) && items.iter().all(|i| i.as_u64().is_some_and(|n| n <= 255)) => {
            out.push(STRING_EXT);
            out.extend_from_slice(&(items.len() as u16).to_be_bytes());
            out.extend(items.iter().filter_map(Value::as_u64).map(|n| n as u8));
        }
        Value::Array(items) => {
            list_header(out, items.len());
            for item in items {
                value(out, item);
            }
            out.push(NIL_EXT);
        }
        Value::Object(members) => object(out, members.iter(), members.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().expect("an object").clone()
    }

    /// Ids read from CouchDB 3.5.0 (the interop test in rhizome-cli
    /// compares many more against the running peer).
    #[test]
    fn revision_ids_are_couchdbs() {
        // PUT {"b":2,"a":1}: members as written, not sorted.
        assert_eq!(revision_id(false, None, &body(json!({"b": 2, "a": 1})), &[]), "caca8b193c5fc9720d024664e9310ed2");
        // Mango's 19-find-conflicts.py: {"_id": "doc", "a": 2}.
        assert_eq!(revision_id(false, None, &body(json!({"_id": "doc", "a": 2})), &[]), "3975759ccff3842adf690a5c10caee42");
        // A list of bytes is a string in Erlang's format.
        assert_eq!(revision_id(false, None, &body(json!({"x": [2, 1]})), &[]), "de207ed564c1be30549a56e112535339");
    }

    #[test]
    fn integers_take_the_smallest_external_form() {
        let encoded = |n: i128| {
            let mut out = Vec::new();
            integer(&mut out, n);
            out
        };
        assert_eq!(encoded(255), [SMALL_INTEGER_EXT, 255]);
        assert_eq!(encoded(-1), [INTEGER_EXT, 255, 255, 255, 255]);
        assert_eq!(encoded(1 << 31), [SMALL_BIG_EXT, 4, 0, 0, 0, 0, 128]);
        assert_eq!(encoded(-(1 << 40)), [SMALL_BIG_EXT, 6, 1, 0, 0, 0, 0, 0, 1]);
    }
}
