//! `_local_docs`: the `_local` documents by id, with `_all_docs`' options
//! (https://docs.couchdb.org/en/stable/api/local.html#db-local-docs).
//! CouchDB answers `total_rows` and `offset` as `null` here (it does not
//! count local documents), and a `_local` document's row names its `0-N`
//! revision.

use crate::all_docs::{AllDocs, AllDocsOptions};
use crate::keys::LOCAL;
use crate::{Database, DocError, Result};
use serde_json::{json, Map, Value};

impl Database {
    /// The rows of `_local_docs` (ids include the `_local/` prefix, as do
    /// `opts`' keys and bounds). `total_rows` and `offset` of the answer
    /// are not meaningful (CouchDB writes `null`).
    pub fn local_docs(&self, opts: &AllDocsOptions) -> Result<AllDocs> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let limit = opts.limit.unwrap_or(usize::MAX);
        let mut rows = Vec::new();
        if let Some(keys) = &opts.keys {
            for key in keys.iter().skip(opts.skip).take(limit) {
                rows.push(match kv.get(LOCAL, key.as_bytes())? {
                    Some(v) => local_row(key, &v, opts.include_docs)?,
                    None => json!({ "key": key, "error": "not_found" }),
                });
            }
            return Ok(AllDocs { total_rows: 0, offset: 0, rows, update_seq: 0 });
        }
        let mut cursor = kv.cursor(LOCAL, &[], None);
        opts.seek_start(&mut *cursor);
        let mut skipped = 0;
        while cursor.valid() && rows.len() < limit {
            let key = cursor.key();
            if opts.past_end(key) {
                break;
            }
            if skipped < opts.skip {
                skipped += 1;
            } else {
                let id = String::from_utf8_lossy(key).into_owned();
                rows.push(local_row(&id, cursor.value(), opts.include_docs)?);
            }
            if opts.descending {
                cursor.prev()
            } else {
                cursor.next()
            }
        }
        cursor.status()?;
        Ok(AllDocs { total_rows: 0, offset: 0, rows, update_seq: 0 })
    }
}

fn local_row(id: &str, stored: &[u8], include_docs: bool) -> Result<Value> {
    let doc: Map<String, Value> = serde_json::from_slice(stored).map_err(|e| DocError::Corrupt(format!("local document {id}: {e}")))?;
    let rev = doc.get("_rev").cloned().unwrap_or(Value::Null);
    let mut row = json!({ "id": id, "key": id, "value": { "rev": rev } });
    if include_docs {
        row["doc"] = Value::Object(doc);
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use crate::{AllDocsOptions, Database};
    use serde_json::{json, Map, Value};

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn local_docs_list_in_id_order_with_ranges_limits_and_keys() {
        let db = Database::memory();
        for id in ["_local/b", "_local/a", "_local/c"] {
            db.put_local(id, doc(json!({ "n": id }))).unwrap();
        }
        db.update_docs(vec![doc(json!({ "_id": "plain" }))], true).unwrap();
        let ids = |o: &AllDocsOptions| db.local_docs(o).unwrap().rows.iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
        assert_eq!(ids(&AllDocsOptions::default()), ["_local/a", "_local/b", "_local/c"]);
        assert_eq!(ids(&AllDocsOptions { descending: true, limit: Some(2), ..Default::default() }), ["_local/c", "_local/b"]);
        assert_eq!(ids(&AllDocsOptions { start_key: Some("_local/b".into()), skip: 1, ..Default::default() }), ["_local/c"]);
        assert_eq!(ids(&AllDocsOptions { end_key: Some("_local/b".into()), inclusive_end: false, ..Default::default() }), ["_local/a"]);
        let with_docs = db.local_docs(&AllDocsOptions { include_docs: true, keys: Some(vec!["_local/c".into(), "_local/z".into()]), ..Default::default() }).unwrap();
        assert_eq!(with_docs.rows[0]["value"], json!({ "rev": "0-1" }));
        assert_eq!(with_docs.rows[0]["doc"]["n"], "_local/c");
        assert_eq!(with_docs.rows[1], json!({ "key": "_local/z", "error": "not_found" }));
    }
}
