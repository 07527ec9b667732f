//! The keys a batch of document writes will look for, looked up together
//! before the first write (`Transaction::find_absent`): each document's
//! record, its graph IRI as another document's id (`id_conflict`) and in
//! the term dictionary (the projection's `replace_graph`). For new
//! documents all three are misses, which one point read each made a fifth
//! of a `_bulk_docs`; one sorted walk per keyspace answers them.

use crate::keys::DOCS;
use crate::Database;
use rhizome_rdf::term::{term2id_key, term_key, TermKey};
use rhizome_rdf::StoreTransaction;
use serde_json::{Map, Value};

/// Fewer documents than this are read one by one: a cursor costs about
/// what a few point reads do.
const MIN_BATCH: usize = 32;

impl Database {
    pub(crate) fn find_new_keys(&self, txn: &mut StoreTransaction<'_>, docs: &[Map<String, Value>]) -> crate::Result<()> {
        if docs.len() < MIN_BATCH {
            return Ok(());
        }
        let mut records = Vec::with_capacity(2 * docs.len());
        let mut terms = Vec::with_capacity(docs.len());
        for id in docs.iter().filter_map(|d| d.get("_id").and_then(Value::as_str)) {
            records.push(id.as_bytes().to_vec());
            if let Some(iri) = self.projector.graph_iri(id) {
                if let TermKey::Dictionary { tag, bytes } = term_key(oxrdf::TermRef::NamedNode(oxrdf::NamedNodeRef::new_unchecked(&iri))) {
                    terms.push(term2id_key(tag, &bytes).0);
                }
                records.push(iri.into_bytes());
            }
        }
        let kv = txn.kv_mut();
        kv.find_absent(DOCS, records)?;
        kv.find_absent(rhizome_rdf::index::layout::TERM2ID, terms)?;
        Ok(())
    }
}
