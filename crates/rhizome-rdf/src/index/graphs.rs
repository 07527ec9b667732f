//! Listing graph names without reading every quad: a skip scan over the
//! leading graph (GSPO) or subject (SPO: each subject-graph triple's graph
//! is its subject) of the keys, one seek per distinct graph, plus the
//! graphs created empty (GRAPHS).

use super::layout::{GRAPHS, GSPO, SPO};
use crate::term::TermId;
use crate::Result;
use rhizome_kv::{prefix_upper_bound, Keyspace, KvRead};

fn leading_ids(reader: &dyn KvRead, ks: Keyspace, out: &mut Vec<TermId>) -> Result<()> {
    let mut cursor = reader.cursor(ks, &[], None);
    cursor.seek_first();
    while cursor.valid() {
        let key = cursor.key();
        if key.len() < 8 {
            break;
        }
        let id = TermId::from_be_slice(&key[..8]);
        out.push(id);
        match prefix_upper_bound(&key[..8]) {
            Some(next) => cursor.seek(&next),
            None => break,
        }
    }
    cursor.status()?;
    Ok(())
}

/// Every graph of the store that has quads or was created, sorted, the
/// default graph of a plain store included (as `TermId::DEFAULT_GRAPH`).
pub fn graph_names(reader: &dyn KvRead) -> Result<Vec<TermId>> {
    let mut out = Vec::new();
    for ks in [GSPO, SPO, GRAPHS] {
        leading_ids(reader, ks, &mut out)?;
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DatasetMode, Store};
    use oxrdf::{GraphNameRef, NamedNodeRef, QuadRef};

    #[test]
    fn graph_names_lists_subject_graphs_named_graphs_and_empty_created_ones() {
        let store = Store::memory(DatasetMode::Union);
        let mut txn = store.transaction().unwrap();
        let n = |s: &'static str| NamedNodeRef::new_unchecked(s);
        for (s, g) in [("http://ex/a", GraphNameRef::DefaultGraph), ("http://ex/a", GraphNameRef::DefaultGraph), ("http://ex/b", n("http://ex/g").into())] {
            let q = txn.encode_quad(QuadRef::new(n(s), n("http://ex/p"), n("http://ex/o"), g)).unwrap();
            txn.insert(&q).unwrap();
        }
        let empty = txn.encode(n("http://ex/empty").into()).unwrap();
        txn.create_graph(empty).unwrap();
        txn.commit().unwrap();
        let snapshot = store.snapshot().unwrap();
        let names = graph_names(snapshot.kv()).unwrap();
        let expected: Vec<TermId> = ["http://ex/a", "http://ex/g", "http://ex/empty"]
            .iter()
            .map(|iri| snapshot.lookup(n(iri).into()).unwrap().unwrap())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(names, expected);
    }
}
