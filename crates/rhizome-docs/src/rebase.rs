//! Moving a database's documents to another base IRI (`rhizome rebase`),
//! inside the caller's transaction (which also moves the dictionary's
//! terms, `rhizome_rdf::term::rebase_dictionary`, and the LDP index).
//!
//! What holds IRIs here: document ids that are IRIs (LDP resources'),
//! so `DOCS`, `SEQS` and `BODIES` keys; the graph a graph-bodied record
//! names; JSON strings and member names in bodies and `_local` documents
//! (contexts, `@id`s, `{"_graph": IRI}`). Revisions keep their ids: the
//! rename is of names, not an edit; a renamed document takes a new
//! sequence (replicators see a new document). Mango's indexes are dropped (rebuilt
//! from sequence 0 by the next query), since their rows hold values.

use crate::keys::{body_key, meta, parse_body_key, u64_value, DocInfo, BODIES, DB_META, DOCS, LOCAL, MANGO_DOC_ROWS, MANGO_ROWS, MANGO_STATE, SEQS};
use crate::{DocError, Result};
use rhizome_kv::{Keyspace, Transaction};
use rhizome_rdf::term::rebased_iri;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// `DB_META` key naming the base this database's IRIs are under, written
/// by the rebase that moved them (so an interrupted rebase knows which
/// databases it has done).
pub const BASE_IRI_META: &[u8] = b"base_iri";

/// What a database's rebase changed (or, in a dry run, would change).
#[derive(Clone, Debug, Default)]
pub struct DocsRebased {
    /// Documents whose id is an IRI under the old base, renamed.
    pub renamed_docs: u64,
    /// Stored bodies (and `_local` documents) with an IRI rewritten.
    pub rewritten_bodies: u64,
    /// Keys of derived indexes dropped, to be rebuilt.
    pub dropped_index_keys: u64,
}

/// The base recorded by the last rebase of this database, if any.
pub fn recorded_base(txn: &Transaction<'_>) -> Result<Option<String>> {
    Ok(txn.get(DB_META, BASE_IRI_META)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
}

/// Moves every document IRI under `old` to `new` in `txn` and records
/// `new` as the database's base.
pub fn rebase_documents(txn: &mut Transaction<'_>, old: &str, new: &str) -> Result<DocsRebased> {
    let mut out = DocsRebased::default();
    let moved = |s: &str| rebased_iri(s, old, new);
    // DOCS: renamed ids, the graphs records name, and IRIs inside the
    // winners' bodies records keep.
    let mut renames: HashMap<String, String> = HashMap::new();
    let mut records: Vec<(String, Option<String>, DocInfo)> = Vec::new();
    {
        let mut c = txn.cursor(DOCS, &[], None);
        c.seek_first();
        while c.valid() {
            let id = std::str::from_utf8(c.key()).map_err(|_| DocError::Corrupt("a document id is not UTF-8".into()))?.to_owned();
            let new_id = moved(&id);
            let header_moves = DocInfo::header(c.value()).and_then(|h| h.graph_body(&id).map(|g| moved(g).is_some())).unwrap_or(false);
            // The winner's body the record keeps, with IRIs rewritten.
            let kept_body = match DocInfo::header(c.value()).and_then(|h| h.body) {
                Some(body) => rewrite_json_bytes(body, &moved)?,
                None => None,
            };
            if new_id.is_some() || header_moves || kept_body.is_some() {
                let mut info = DocInfo::from_bytes(&id, c.value())?;
                if header_moves || new_id.is_some() {
                    // Its graph's name moves: not known empty under the new one.
                    info.graph_empty = false;
                }
                if let Some(g) = info.graph_body.as_deref().and_then(moved) {
                    info.graph_body = Some(g);
                }
                if let Some(body) = kept_body {
                    info.body = Some(body);
                    out.rewritten_bodies += 1;
                }
                records.push((id, new_id, info));
            }
            c.next();
        }
        c.status()?;
    }
    for (id, new_id, _) in &records {
        if let Some(n) = new_id {
            if txn.get(DOCS, n.as_bytes())?.is_some() {
                return Err(DocError::BadRequest(format!("document {id:?} would be renamed {n:?}, which is already a document of this database")));
            }
            renames.insert(id.clone(), n.clone());
        }
    }
    // A renamed document is a new one to a peer that replicated it: it
    // gets a new sequence, so `_changes` after any checkpoint carries it.
    let mut update_seq = u64_value(txn.get(DB_META, meta::UPDATE_SEQ)?, "update_seq")?;
    for (id, new_id, info) in &mut records {
        let key = new_id.clone().unwrap_or_else(|| id.clone());
        if new_id.is_some() {
            txn.delete(DOCS, id.as_bytes());
            txn.delete(SEQS, &info.seq.to_be_bytes());
            update_seq += 1;
            info.seq = update_seq;
            txn.put(SEQS, &info.seq.to_be_bytes(), key.as_bytes());
            out.renamed_docs += 1;
        }
        txn.put(DOCS, key.as_bytes(), &info.to_bytes(&key));
    }
    txn.put(DB_META, meta::UPDATE_SEQ, &update_seq.to_be_bytes());
    // BODIES: keys of renamed documents, and IRIs inside every body.
    let mut bodies: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = Vec::new();
    {
        let mut c = txn.cursor(BODIES, &[], None);
        c.seek_first();
        while c.valid() {
            let (id, rev) = parse_body_key(c.key()).ok_or_else(|| DocError::Corrupt("a body key".into()))?;
            let new_key = renames.get(id).map(|n| body_key(n, &rev));
            let new_body = rewrite_json_bytes(c.value(), &moved)?;
            if new_key.is_some() || new_body.is_some() {
                let body = new_body.unwrap_or_else(|| c.value().to_vec());
                bodies.push((c.key().to_vec(), new_key.unwrap_or_else(|| c.key().to_vec()), body));
            }
            c.next();
        }
        c.status()?;
    }
    for (old_key, new_key, body) in bodies {
        if old_key != new_key {
            txn.delete(BODIES, &old_key);
        }
        txn.put(BODIES, &new_key, &body);
        out.rewritten_bodies += 1;
    }
    // `_local` documents (the default context among them).
    let mut locals = Vec::new();
    {
        let mut c = txn.cursor(LOCAL, &[], None);
        c.seek_first();
        while c.valid() {
            if let Some(body) = rewrite_json_bytes(c.value(), &moved)? {
                locals.push((c.key().to_vec(), body));
            }
            c.next();
        }
        c.status()?;
    }
    for (key, body) in locals {
        txn.put(LOCAL, &key, &body);
        out.rewritten_bodies += 1;
    }
    for ks in [MANGO_ROWS, MANGO_DOC_ROWS, MANGO_STATE] {
        out.dropped_index_keys += clear_keyspace(txn, ks)?;
    }
    txn.put(DB_META, BASE_IRI_META, new.as_bytes());
    Ok(out)
}

/// Deletes every key of `ks` in `txn`; returns how many.
pub fn clear_keyspace(txn: &mut Transaction<'_>, ks: Keyspace) -> Result<u64> {
    let mut keys = Vec::new();
    {
        let mut c = txn.cursor(ks, &[], None);
        c.seek_first();
        while c.valid() {
            keys.push(c.key().to_vec());
            c.next();
        }
        c.status()?;
    }
    for k in &keys {
        txn.delete(ks, k);
    }
    Ok(keys.len() as u64)
}

/// A JSON body with its IRIs moved, or `None` when none was under the base.
fn rewrite_json_bytes(bytes: &[u8], moved: &dyn Fn(&str) -> Option<String>) -> Result<Option<Vec<u8>>> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("a stored body: {e}")))?;
    if !rewrite_json(&mut value, moved) {
        return Ok(None);
    }
    serde_json::to_vec(&value).map(Some).map_err(|e| DocError::Corrupt(e.to_string()))
}

/// Moves every string and member name under the base; true if any moved.
/// Members keep their order (rebuilt in place of the old map).
fn rewrite_json(value: &mut Value, moved: &dyn Fn(&str) -> Option<String>) -> bool {
    match value {
        Value::String(s) => match moved(s) {
            Some(n) => {
                *s = n;
                true
            }
            None => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |any, v| rewrite_json(v, moved) | any),
        Value::Object(map) => {
            let mut any = false;
            let mut out = Map::new();
            for (k, mut v) in std::mem::take(map) {
                any |= rewrite_json(&mut v, moved);
                let k = match moved(&k) {
                    Some(n) => {
                        any = true;
                        n
                    }
                    None => k,
                };
                out.insert(k, v);
            }
            *map = out;
            any
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_and_member_names_under_the_base_move() {
        let mut v = serde_json::json!({"@id": "http://a:1/db/x", "http://a:1/v#p": [{"@id": "http://a:1"}, "http://a:10/no"], "n": 1});
        let moved = |s: &str| rebased_iri(s, "http://a:1", "http://b:2");
        assert!(rewrite_json(&mut v, &moved));
        assert_eq!(v, serde_json::json!({"@id": "http://b:2/db/x", "http://b:2/v#p": [{"@id": "http://b:2"}, "http://a:10/no"], "n": 1}));
        assert!(!rewrite_json(&mut v, &moved));
    }
}
