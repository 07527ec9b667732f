//! Moving a store's IRIs from one base to another (`rhizome rebase`).
//!
//! Term ids stay: only the dictionary's two entries of each IRI under the
//! old base change (`id2term`'s text and `term2id`'s key), so the quad
//! indexes, statistics and value counts, which hold ids alone, stay true.
//! Typed literals whose datatype is under the old base move with it.

use super::dictionary::term2id_key;
use super::id::{tag, TermId};
use crate::index::layout::{ID2TERM, TERM2ID};
use crate::{Error, Result};
use rhizome_kv::Transaction;

/// `iri` moved from `old` to `new`, when it is under `old`: equal to it,
/// or followed by `/`, `?` or `#` (so `http://h:5984` does not take
/// `http://h:59840/x`).
pub fn rebased_iri(iri: &str, old: &str, new: &str) -> Option<String> {
    let rest = iri.strip_prefix(old)?;
    let under = rest.is_empty() || old.ends_with('/') || rest.starts_with(['/', '?', '#']);
    under.then(|| format!("{new}{rest}"))
}

/// Rewrites every dictionary IRI (and typed literal datatype) under `old`
/// to `new` in `txn`; returns how many terms moved. Refuses when a moved
/// term is already in the dictionary under another id: the two would
/// need their quads merged, which a rename cannot do.
pub fn rebase_dictionary(txn: &mut Transaction<'_>, old: &str, new: &str) -> Result<u64> {
    let mut moves: Vec<(TermId, Vec<u8>, Vec<u8>)> = Vec::new();
    for t in [tag::IRI, tag::TYPED] {
        let lower = [t, 0, 0, 0, 0, 0, 0, 0];
        let upper = [t + 1, 0, 0, 0, 0, 0, 0, 0];
        let mut cursor = txn.cursor(ID2TERM, &lower, Some(&upper));
        cursor.seek_first();
        while cursor.valid() {
            let id = TermId::from_be_slice(cursor.key());
            let bytes = cursor.value();
            // A typed literal is `datatype NUL lexical`.
            let head_len = if t == tag::TYPED { bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len()) } else { bytes.len() };
            let head = std::str::from_utf8(&bytes[..head_len]).map_err(|_| Error::Corrupt(format!("term id {:#x} is not UTF-8", id.0)))?;
            if let Some(moved) = rebased_iri(head, old, new) {
                let mut to = moved.into_bytes();
                to.extend_from_slice(&bytes[head_len..]);
                moves.push((id, bytes.to_vec(), to));
            }
            cursor.next();
        }
        cursor.status()?;
    }
    for (id, from, to) in &moves {
        let t = id.tag();
        if crate::term::Dictionary::lookup_key(&*txn, t, to)?.is_some() {
            return Err(Error::Invalid(format!(
                "{} is already a term of this store beside {}: moving the base would make them one term, which a rebase cannot do",
                String::from_utf8_lossy(to),
                String::from_utf8_lossy(from)
            )));
        }
        remove_term2id(txn, t, from, *id)?;
    }
    for (id, _, to) in &moves {
        let t = id.tag();
        let (key, hashed) = term2id_key(t, to);
        let mut value = if hashed { txn.get(TERM2ID, &key)?.unwrap_or_default() } else { Vec::new() };
        value.extend_from_slice(&id.to_be_bytes());
        txn.put(TERM2ID, &key, &value);
        txn.put(ID2TERM, &id.to_be_bytes(), to);
    }
    Ok(moves.len() as u64)
}

fn remove_term2id(txn: &mut Transaction<'_>, t: u8, bytes: &[u8], id: TermId) -> Result<()> {
    let (key, hashed) = term2id_key(t, bytes);
    if !hashed {
        txn.delete(TERM2ID, &key);
        return Ok(());
    }
    let ids = txn.get(TERM2ID, &key)?.unwrap_or_default();
    let kept: Vec<u8> = ids.chunks_exact(8).filter(|c| *c != id.to_be_bytes()).flatten().copied().collect();
    if kept.is_empty() {
        txn.delete(TERM2ID, &key);
    } else {
        txn.put(TERM2ID, &key, &kept);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DatasetMode, Store};
    use oxrdf::{Literal, NamedNode, QuadRef, GraphNameRef};

    #[test]
    fn only_iris_under_the_base_move() {
        assert_eq!(rebased_iri("http://h:5984/db/x", "http://h:5984", "http://k:1"), Some("http://k:1/db/x".into()));
        assert_eq!(rebased_iri("http://h:5984", "http://h:5984", "http://k:1"), Some("http://k:1".into()));
        assert_eq!(rebased_iri("http://h:59840/db/x", "http://h:5984", "http://k:1"), None);
        assert_eq!(rebased_iri("http://h:5984#a", "http://h:5984", "http://k:1"), Some("http://k:1#a".into()));
    }

    #[test]
    fn moved_terms_keep_their_ids_and_quads() {
        // On disk and reopened: the id cache of the open store knows the
        // old names (a rebase runs in a process of its own).
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_or_create(dir.path(), Some(DatasetMode::Union)).unwrap();
        let s = NamedNode::new_unchecked("http://old:1/db/s");
        let long = NamedNode::new_unchecked(format!("http://old:1/db/{}", "l".repeat(300)));
        let p = NamedNode::new_unchecked("http://example.org/p");
        let typed = Literal::new_typed_literal("v", NamedNode::new_unchecked("http://old:1/dt"));
        let mut txn = store.transaction().unwrap();
        let g = GraphNameRef::NamedNode(s.as_ref());
        let q1 = txn.encode_quad(QuadRef::new(&s, &p, &long, g)).unwrap();
        txn.insert(&q1).unwrap();
        let q2 = txn.encode_quad(QuadRef::new(&s, &p, &typed, g)).unwrap();
        txn.insert(&q2).unwrap();
        txn.commit().unwrap();
        let mut txn = store.transaction().unwrap();
        assert_eq!(rebase_dictionary(txn.kv_mut(), "http://old:1", "http://new:2").unwrap(), 3);
        txn.commit().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        let snap = store.snapshot().unwrap();
        assert!(store.check().unwrap().is_sound());
        let new_s = NamedNode::new_unchecked("http://new:2/db/s");
        assert_eq!(snap.lookup(new_s.as_ref().into()).unwrap(), Some(q1[0]));
        assert_eq!(snap.lookup(s.as_ref().into()).unwrap(), None);
        let new_long = NamedNode::new_unchecked(format!("http://new:2/db/{}", "l".repeat(300)));
        assert_eq!(snap.lookup(new_long.as_ref().into()).unwrap(), Some(q1[2]));
        assert_eq!(snap.decode(q2[2]).unwrap(), Some(Literal::new_typed_literal("v", NamedNode::new_unchecked("http://new:2/dt")).into()));
        assert_eq!(snap.lookup(p.as_ref().into()).unwrap().is_some(), true);
    }

    #[test]
    fn a_move_onto_an_existing_term_is_refused() {
        let store = Store::memory(DatasetMode::Union);
        let mut txn = store.transaction().unwrap();
        let a = NamedNode::new_unchecked("http://old:1/x");
        let b = NamedNode::new_unchecked("http://new:2/x");
        let q = txn.encode_quad(QuadRef::new(&a, &a, &b, GraphNameRef::NamedNode(a.as_ref()))).unwrap();
        txn.insert(&q).unwrap();
        txn.commit().unwrap();
        let mut txn = store.transaction().unwrap();
        let e = rebase_dictionary(txn.kv_mut(), "http://old:1", "http://new:2").unwrap_err();
        assert!(e.to_string().contains("already a term"), "{e}");
    }
}
