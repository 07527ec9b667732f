//! Partitioned databases, as CouchDB 3 has them
//! (https://docs.couchdb.org/en/stable/partitioned-dbs/index.html): a
//! database created partitioned requires every document id but design and
//! local ones to be `partition:docid`, and answers queries limited to one
//! partition.
//!
//! CouchDB places a partition's documents on one shard so that such a
//! query reads one shard. Here the partition is the prefix of the id up to
//! its first `:`, and ids are the keys of `DOCS` in byte order, so a
//! partition's documents are the one key range `[p:, p;)` (`;` is the byte
//! after `:`): a partition's `_all_docs`, its size and counts are one
//! seek and a scan of that partition alone, never of the database. A
//! partitioned Mango index puts the partition before its columns
//! (`mango::index`), so a partition's `_find` is a range of that index too.
//!
//! Whether a database is partitioned is fixed when it is created (the
//! `partitioned` entry of `DB_META`; CouchDB has no way to change it).

use crate::keys::{meta, DocInfo, DB_META, DOCS};
use crate::{Database, DocError, Result};

/// The partition of a document id: what comes before its first `:`, for
/// ids that are neither design nor local documents.
pub fn partition_of(id: &str) -> Option<&str> {
    if id.starts_with("_design/") || id.starts_with("_local/") {
        return None;
    }
    id.split_once(':').map(|(p, _)| p)
}

fn illegal_docid(reason: &str) -> DocError {
    DocError::Coded { status: 400, error: "illegal_docid", reason: reason.into() }
}

fn illegal_partition(reason: &str) -> DocError {
    DocError::Coded { status: 400, error: "illegal_partition", reason: reason.into() }
}

/// A partition's name as CouchDB checks it (`couch_partition:validate_partition`).
pub fn check_partition_name(partition: &str) -> Result<()> {
    if partition.is_empty() {
        return Err(illegal_partition("Partition must not be empty"));
    }
    if partition.starts_with('_') {
        return Err(illegal_partition("Partition must not start with an underscore"));
    }
    Ok(())
}

/// An id of a partitioned database as CouchDB checks it
/// (`couch_partition:validate_docid`): design and local documents as
/// anywhere, every other one `partition:docid`, both parts valid.
pub fn check_partitioned_id(id: &str) -> Result<()> {
    if id.starts_with("_design/") || id.starts_with("_local/") {
        return Ok(());
    }
    let Some((partition, rest)) = id.split_once(':') else {
        return Err(illegal_docid("Doc id must be of form partition:id"));
    };
    check_partition_name(partition)?;
    if rest.is_empty() {
        return Err(illegal_docid("Document id must not be empty"));
    }
    if rest.starts_with('_') {
        return Err(illegal_docid("Only reserved document ids may start with underscore."));
    }
    Ok(())
}

/// The `DOCS` key range of a partition's documents: `[p:, p;)`.
pub fn partition_range(partition: &str) -> (Vec<u8>, Vec<u8>) {
    let mut lower = partition.as_bytes().to_vec();
    let mut upper = lower.clone();
    lower.push(b':');
    upper.push(b':' + 1);
    (lower, upper)
}

/// What `GET /{db}/_partition/{partition}` reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionInfo {
    pub doc_count: u64,
    pub doc_del_count: u64,
    /// Bytes the partition's document records and winning bodies take.
    pub active_bytes: u64,
    /// Bytes of the partition's winning bodies' JSON (CouchDB's
    /// `sizes.external`, the uncompressed documents).
    pub external_bytes: u64,
}

impl Database {
    /// Whether the database was created partitioned.
    pub fn is_partitioned(&self) -> bool {
        self.partitioned.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Makes a new database partitioned; refused once it has had a write
    /// (its documents would not all have a partition).
    pub fn make_partitioned(&self) -> Result<()> {
        let mut txn = self.store.transaction()?;
        let seq = crate::keys::u64_value(txn.kv().get(DB_META, meta::UPDATE_SEQ)?, "update_seq")?;
        if seq > 0 {
            return Err(DocError::BadRequest("only a new database can be made partitioned".into()));
        }
        txn.kv_mut().put(DB_META, meta::PARTITIONED, &[1]);
        txn.commit()?;
        self.partitioned.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// Counts and sizes of one partition, from a scan of its key range.
    pub fn partition_info(&self, partition: &str) -> Result<PartitionInfo> {
        check_partition_name(partition)?;
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let (lower, upper) = partition_range(partition);
        let mut info = PartitionInfo::default();
        let mut cursor = kv.cursor(DOCS, &lower, Some(&upper));
        cursor.seek_first();
        while cursor.valid() {
            let header = DocInfo::header(cursor.value()).ok_or_else(|| DocError::Corrupt(format!("document info of {:?}", String::from_utf8_lossy(cursor.key()))))?;
            info.active_bytes += (cursor.key().len() + cursor.value().len()) as u64;
            if header.deleted {
                info.doc_del_count += 1;
            } else {
                info.doc_count += 1;
                if let Some(kept) = header.body {
                    // Counted in the record's bytes above.
                    info.external_bytes += kept.len() as u64;
                } else {
                    let id = String::from_utf8_lossy(cursor.key());
                    if let Some(body) = kv.get(crate::keys::BODIES, &crate::keys::body_key(&id, &header.winner))? {
                        info.active_bytes += body.len() as u64;
                        info.external_bytes += body.len() as u64;
                    }
                }
            }
            cursor.next();
        }
        cursor.status()?;
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(id: &str) -> Option<(&'static str, String)> {
        match check_partitioned_id(id) {
            Ok(()) => None,
            Err(DocError::Coded { error, reason, .. }) => Some((error, reason)),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_are_checked_as_couchdb_checks_them() {
        assert_eq!(error_of("a:1"), None);
        assert_eq!(error_of("a:b:c"), None);
        assert_eq!(error_of("_design/x"), None);
        assert_eq!(error_of("_local/x"), None);
        assert_eq!(error_of("nopart"), Some(("illegal_docid", "Doc id must be of form partition:id".into())));
        assert_eq!(error_of(":1"), Some(("illegal_partition", "Partition must not be empty".into())));
        assert_eq!(error_of("_x:1"), Some(("illegal_partition", "Partition must not start with an underscore".into())));
        assert_eq!(error_of("a:"), Some(("illegal_docid", "Document id must not be empty".into())));
        assert_eq!(error_of("a:_x"), Some(("illegal_docid", "Only reserved document ids may start with underscore.".into())));
        assert_eq!(partition_of("a:1"), Some("a"));
        assert_eq!(partition_of("_design/a:1"), None);
        assert_eq!(partition_range("ab"), (b"ab:".to_vec(), b"ab;".to_vec()));
    }

    fn obj(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        v.as_object().expect("an object").clone()
    }

    /// A partition's queries read its own keys: a small partition beside a
    /// large one examines only its own rows, by `_all_docs` and by a
    /// partitioned index alike.
    #[test]
    fn a_partitions_queries_examine_its_keys_alone() {
        use serde_json::json;
        let db = Database::memory();
        db.make_partitioned().unwrap();
        let mut docs: Vec<_> = (0..2000).map(|i| obj(json!({ "_id": format!("big:{i:05}"), "n": i }))).collect();
        docs.extend((0..3).map(|i| obj(json!({ "_id": format!("small:{i}"), "n": i }))));
        // Beside it, the partitions that sort right before and after.
        docs.push(obj(json!({ "_id": "smal:1", "n": 1 })));
        docs.push(obj(json!({ "_id": "small0:1", "n": 1 })));
        for (id, outcome) in db.update_docs(docs, true).unwrap() {
            outcome.unwrap_or_else(|e| panic!("{id}: {e}"));
        }
        assert!(db.update_docs(vec![obj(json!({ "_id": "nopart" }))], true).unwrap()[0].1.is_err());
        let examined = |db: &Database| {
            let answer = db.find(&obj(json!({ "selector": { "n": { "$gte": 0 } }, "partition": "small", "execution_stats": true }))).unwrap();
            (answer["docs"].as_array().unwrap().len(), answer["execution_stats"]["total_keys_examined"].as_u64().unwrap())
        };
        assert_eq!(examined(&db), (3, 3));
        let index = crate::mango::new_index_in(&obj(json!({ "index": { "fields": ["n"] }, "ddoc": "n", "name": "n" })), true).unwrap();
        let ddoc = crate::mango::add_to_design_doc(None, &index).unwrap().unwrap();
        db.update_docs(vec![ddoc], true).unwrap()[0].1.as_ref().unwrap();
        let plan = db.explain("db", &obj(json!({ "selector": { "n": { "$gte": 0 } }, "partition": "small" }))).unwrap();
        assert_eq!(plan["index"]["name"], "n", "{plan}");
        assert_eq!(examined(&db), (3, 3));
        let all = db.all_docs(&crate::AllDocsOptions { partition: Some("small".into()), ..Default::default() }).unwrap();
        assert_eq!(all.rows.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), ["small:0", "small:1", "small:2"]);
        let info = db.partition_info("small").unwrap();
        assert_eq!((info.doc_count, info.doc_del_count), (3, 0));
        assert_eq!(db.partition_info("big").unwrap().doc_count, 2000);
    }
}
