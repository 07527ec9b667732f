//! `_all_docs`: documents by id
//! (https://docs.couchdb.org/en/stable/api/database/bulk-api.html#db-all-docs).
//! Ids are ordered by their UTF-8 bytes, which is code point order; CouchDB
//! uses raw collation for `_all_docs` too.

use crate::keys::{DocInfo, DOCS};
use crate::read::{doc_info, render, render_json, ReadOptions};
use crate::{Database, Result};
use rhizome_kv::KvRead;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
pub struct AllDocsOptions {
    pub start_key: Option<String>,
    pub end_key: Option<String>,
    pub inclusive_end: bool,
    pub limit: Option<usize>,
    pub skip: usize,
    pub descending: bool,
    pub include_docs: bool,
    pub conflicts: bool,
    pub attachments: bool,
    /// `keys`: these ids in this order, deleted and missing ones included.
    pub keys: Option<Vec<String>>,
    /// Only this partition's documents (`/{db}/_partition/{p}/_all_docs`):
    /// the scan stays in the partition's key range (`crate::partition`).
    /// `keys` are answered as given, as CouchDB answers them.
    pub partition: Option<String>,
}

impl AllDocsOptions {
    /// Puts a cursor over ids at the first row: `start_key`, or the first
    /// (last, descending) id.
    pub(crate) fn seek_start(&self, cursor: &mut dyn rhizome_kv::Cursor) {
        match (&self.start_key, self.descending) {
            (Some(k), false) => cursor.seek(k.as_bytes()),
            (None, false) => cursor.seek_first(),
            (Some(k), true) => cursor.seek_for_prev(k.as_bytes()),
            (None, true) => cursor.seek_last(),
        }
    }

    /// Whether `id` lies past `end_key` in the order read.
    pub(crate) fn past_end(&self, id: &[u8]) -> bool {
        let Some(end) = &self.end_key else { return false };
        let end = end.as_bytes();
        match (self.descending, self.inclusive_end) {
            (false, true) => id > end,
            (false, false) => id >= end,
            (true, true) => id < end,
            (true, false) => id <= end,
        }
    }
}

impl Default for AllDocsOptions {
    fn default() -> Self {
        AllDocsOptions {
            start_key: None,
            end_key: None,
            inclusive_end: true,
            limit: None,
            skip: 0,
            descending: false,
            include_docs: false,
            conflicts: false,
            attachments: false,
            keys: None,
            partition: None,
        }
    }
}

/// `_all_docs`' answer; its rows as values, or as the JSON bytes
/// `serde_json` writes of them ([`Database::all_docs_bytes`]).
pub struct AllDocs<Row = Value> {
    pub total_rows: u64,
    pub offset: u64,
    pub rows: Vec<Row>,
    pub update_seq: u64,
}

impl Database {
    pub fn all_docs(&self, opts: &AllDocsOptions) -> Result<AllDocs> {
        let mut rows = Vec::new();
        let all = self.all_docs_as(opts, row, Ok, &mut |_, r| {
            rows.push(r);
            Ok(())
        })?;
        Ok(AllDocs { total_rows: all.total_rows, offset: all.offset, rows, update_seq: all.update_seq })
    }

    /// [`Database::all_docs`] with each row as the JSON bytes `serde_json`
    /// writes of it, a document's JSON body copied as stored (as
    /// [`Database::get_doc_bytes`]).
    pub fn all_docs_bytes(&self, opts: &AllDocsOptions) -> Result<AllDocs<Vec<u8>>> {
        let mut rows = Vec::new();
        let all = self.all_docs_each_bytes(opts, &mut |_, r| {
            rows.push(r);
            Ok(())
        })?;
        Ok(AllDocs { total_rows: all.total_rows, offset: all.offset, rows, update_seq: all.update_seq })
    }

    /// [`Database::all_docs_bytes`]'s rows one at a time into `each`, as
    /// they are read (an answer of any size is not kept), each with the
    /// answer's counts (an answer's head comes before its rows); the counts
    /// come back at the end too, from the same snapshot.
    pub fn all_docs_each_bytes(&self, opts: &AllDocsOptions, each: &mut dyn FnMut(&AllDocs<()>, Vec<u8>) -> Result<()>) -> Result<AllDocs<()>> {
        self.all_docs_as(opts, row_bytes, |row| serde_json::to_vec(&row).map_err(|e| crate::DocError::Corrupt(e.to_string())), each)
    }

    /// `row` makes a live document's row; `other` writes the rows `keys`
    /// gives for missing and deleted documents; each row goes to `each`.
    fn all_docs_as<R>(
        &self,
        opts: &AllDocsOptions,
        row: impl Fn(&dyn KvRead, &str, &DocInfo, bool, &ReadOptions) -> Result<R>,
        other: impl Fn(Value) -> Result<R>,
        each: &mut dyn FnMut(&AllDocs<()>, R) -> Result<()>,
    ) -> Result<AllDocs<()>> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let info = self.info_in(kv)?;
        let counts = AllDocs { total_rows: info.0, offset: opts.skip as u64, rows: Vec::new(), update_seq: info.1 };
        let read = ReadOptions { conflicts: opts.conflicts, attachments: opts.attachments, ..Default::default() };
        let mut rows = 0;
        let limit = opts.limit.unwrap_or(usize::MAX);
        if let Some(keys) = &opts.keys {
            for key in keys.iter().skip(opts.skip).take(limit) {
                each(&counts, match doc_info(kv, key)? {
                    None => other(json!({ "key": key, "error": "not_found" }))?,
                    Some(d) if d.deleted => other(json!({ "id": key, "key": key, "value": { "rev": d.winner.to_string(), "deleted": true }, "doc": null }))?,
                    Some(d) => row(kv, key, &d, opts.include_docs, &read)?,
                })?;
            }
            return Ok(counts);
        }
        let (lower, upper) = match &opts.partition {
            Some(p) => {
                let (lower, upper) = crate::partition::partition_range(p);
                (lower, Some(upper))
            }
            None => (Vec::new(), None),
        };
        let mut cursor = kv.cursor(DOCS, &lower, upper.as_deref());
        opts.seek_start(&mut *cursor);
        // A start key past the partition's range leaves the cursor
        // outside it: nothing to read.
        let outside = |k: &[u8]| k < &lower[..] || upper.as_deref().is_some_and(|u| k >= u);
        if opts.start_key.as_deref().is_some_and(|k| outside(k.as_bytes())) {
            let before = opts.start_key.as_deref().is_some_and(|k| k.as_bytes() < &lower[..]);
            // Before the range, ascending: from its start; after it,
            // descending: from its end.
            match (before, opts.descending) {
                (true, false) => cursor.seek_first(),
                (false, true) => cursor.seek_last(),
                _ => return Ok(counts),
            }
        }
        let mut skipped = 0;
        while cursor.valid() && rows < limit {
            let key = cursor.key();
            if opts.past_end(key) || outside(key) {
                break;
            }
            let live = DocInfo::header(cursor.value()).is_some_and(|h| !h.deleted);
            if live {
                if skipped < opts.skip {
                    skipped += 1;
                } else {
                    let id = String::from_utf8_lossy(key).into_owned();
                    let d = DocInfo::from_bytes(&id, cursor.value())?;
                    each(&counts, row(kv, &id, &d, opts.include_docs, &read)?)?;
                    rows += 1;
                }
            }
            if opts.descending {
                cursor.prev()
            } else {
                cursor.next()
            }
        }
        cursor.status()?;
        // `offset` is the rows skipped here, not the position of the start
        // key among all rows: that would cost a scan from the first id, and
        // clients (PouchDB, the replicator) do not read it.
        Ok(counts)
    }

    fn info_in(&self, kv: &dyn KvRead) -> Result<(u64, u64)> {
        use crate::keys::{meta, u64_value, DB_META};
        Ok((u64_value(kv.get(DB_META, meta::DOC_COUNT)?, "doc_count")?, u64_value(kv.get(DB_META, meta::UPDATE_SEQ)?, "update_seq")?))
    }
}

fn row(kv: &dyn KvRead, id: &str, d: &DocInfo, include_docs: bool, read: &ReadOptions) -> Result<Value> {
    let mut row = json!({ "id": id, "key": id, "value": { "rev": d.winner.to_string() } });
    if include_docs {
        row["doc"] = Value::Object(render(kv, id, d, &d.winner, read, None)?);
    }
    Ok(row)
}

/// [`row`]'s bytes: `id`, `key`, `value`, then the document's bytes as
/// `doc`, CouchDB's order.
fn row_bytes(kv: &dyn KvRead, id: &str, d: &DocInfo, include_docs: bool, read: &ReadOptions) -> Result<Vec<u8>> {
    let rest = serde_json::to_vec(&json!({ "id": id, "key": id, "value": { "rev": d.winner.to_string() } })).map_err(|e| crate::DocError::Corrupt(e.to_string()))?;
    if !include_docs {
        return Ok(rest);
    }
    let doc = render_json(kv, id, d, &d.winner, read, None)?;
    let mut out = Vec::with_capacity(doc.len() + rest.len() + 8);
    out.extend_from_slice(&rest[..rest.len() - 1]);
    out.extend_from_slice(b",\"doc\":");
    out.extend_from_slice(&doc);
    out.push(b'}');
    Ok(out)
}
