//! Reading many documents from one snapshot in about their keys' order
//! (a view build's batch: the documents of consecutive sequences, mostly
//! written together, so mostly neighbours in `DOCS` and `BODIES`): a
//! cursor per keyspace steps to the next key instead of a point read
//! each. The point reads of each document's record and body were 28% of a
//! view build's instructions (a RocksDB point read walks every level's
//! filters and index blocks; a cursor already there steps within a block).

use crate::keys::{body_key, DocInfo, BODIES, DOCS};
use crate::read::render_json_from;
use crate::{DocError, ReadOptions, Result, Rev};
use rhizome_kv::{Keyspace, KvRead};
use rhizome_rdf::StoreSnapshot;

/// Point reads of one keyspace through a cursor that steps forward when
/// the key asked for is a few keys ahead of the last one, and seeks
/// otherwise: as cheap as a point read out of order, much cheaper in
/// order.
pub struct SteppingReader<'a> {
    cursor: Box<dyn rhizome_kv::Cursor + 'a>,
}

/// Steps tried before a seek.
const STEPS: usize = 4;

impl<'a> SteppingReader<'a> {
    pub fn new(kv: &'a dyn KvRead, ks: Keyspace) -> SteppingReader<'a> {
        SteppingReader { cursor: kv.cursor(ks, &[], None) }
    }

    /// The value stored at `key`, if any.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<&[u8]>> {
        let mut there = false;
        if self.cursor.valid() && self.cursor.key() <= key {
            for _ in 0..STEPS {
                if !self.cursor.valid() || self.cursor.key() >= key {
                    there = self.cursor.valid();
                    break;
                }
                self.cursor.next();
            }
        }
        if !there {
            self.cursor.seek(key);
        }
        self.cursor.status()?;
        Ok((self.cursor.valid() && self.cursor.key() == key).then(|| self.cursor.value()))
    }
}

/// Documents of one snapshot read as [`crate::Database::get_doc_bytes_at`]
/// reads them, through a [`SteppingReader`] on `DOCS` and one on `BODIES`
/// (for records that do not keep their winner's body).
pub struct DocReader<'a> {
    snapshot: &'a StoreSnapshot,
    docs: SteppingReader<'a>,
    bodies: SteppingReader<'a>,
}

impl<'a> DocReader<'a> {
    pub fn new(snapshot: &'a StoreSnapshot) -> DocReader<'a> {
        let kv = snapshot.kv();
        DocReader { snapshot, docs: SteppingReader::new(kv, DOCS), bodies: SteppingReader::new(kv, BODIES) }
    }

    /// The winning revision of document `id` and its JSON bytes, exactly
    /// what [`crate::Database::get_doc_bytes_at`] gives for `opts` (which
    /// must not name a revision: only the winner is read here); 404
    /// `deleted` for a deleted winner, `missing` for an unknown document.
    pub fn winner_bytes(&mut self, id: &str, opts: &ReadOptions) -> Result<(Rev, Vec<u8>)> {
        debug_assert!(opts.rev.is_none(), "DocReader reads winners only");
        let info = match self.docs.get(id.as_bytes())? {
            Some(bytes) => DocInfo::from_bytes(id, bytes)?,
            None => return Err(DocError::NotFound("missing")),
        };
        if info.deleted {
            return Err(DocError::NotFound("deleted"));
        }
        let rev = info.winner.clone();
        // The record's own copy of the winner's body, else `BODIES`'s.
        let body = match info.body.as_deref() {
            Some(kept) => kept,
            None => match self.bodies.get(&body_key(id, &rev))? {
                Some(body) => body,
                None => return Err(DocError::NotFound("missing")),
            },
        };
        let json = render_json_from(self.snapshot.kv(), id, &info, &rev, opts, Some(self.snapshot), body)?;
        Ok((rev, json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;
    use serde_json::json;

    /// In order, out of order, deleted, missing, conflicted, with
    /// attachments and graph bodies: the reader gives what a point read
    /// of each gives.
    #[test]
    fn reads_what_point_reads_give_in_any_order() {
        let db = Database::memory();
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let mut ids = Vec::new();
        let mut docs = Vec::new();
        for i in 0..40 {
            let id = format!("d{i:03}");
            let mut doc = json!({"_id": id, "n": i, "s": format!("x{i}"), "o": {"k": [i, null]}});
            if i % 7 == 0 {
                doc["_attachments"] = json!({"a.txt": {"content_type": "text/plain", "data": "aGVsbG8="}});
            }
            docs.push(obj(doc));
            ids.push(id);
        }
        // A longer id (another `BODIES` length group), an id that is not
        // there, a deleted document and a conflicted one.
        docs.push(obj(json!({"_id": "a-much-longer-id", "v": 1})));
        ids.extend(["a-much-longer-id".to_owned(), "nope".to_owned()]);
        db.update_docs(docs, true).unwrap();
        let (rev, _) = db.get_doc_bytes("d005", &ReadOptions::default()).unwrap();
        db.update_docs(vec![obj(json!({"_id": "d005", "_rev": rev.to_string(), "_deleted": true}))], true).unwrap();
        db.update_docs(vec![obj(json!({"_id": "d006", "_rev": "1-0123456789abcdef0123456789abcdef", "other": true}))], false).unwrap();
        let opts = ReadOptions { conflicts: true, ..Default::default() };
        let snapshot = db.read_snapshot().unwrap();
        let mut orders = vec![ids.clone()];
        let mut reversed = ids.clone();
        reversed.reverse();
        orders.push(reversed);
        orders.push(ids.iter().enumerate().map(|(i, _)| ids[(i * 17) % ids.len()].clone()).collect());
        for order in orders {
            let mut reader = DocReader::new(&snapshot);
            for id in &order {
                let want = db.get_doc_bytes_at(&snapshot, id, &opts);
                let got = reader.winner_bytes(id, &opts);
                match (want, got) {
                    (Ok(w), Ok(g)) => assert_eq!((w.0, String::from_utf8(w.1).unwrap()), (g.0, String::from_utf8(g.1).unwrap()), "{id}"),
                    (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string(), "{id}"),
                    (w, g) => panic!("{id}: {w:?} against {g:?}"),
                }
            }
        }
    }
}
