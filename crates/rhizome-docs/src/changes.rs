//! `_changes`: documents in the order of their last change, one entry per
//! document (https://docs.couchdb.org/en/stable/api/database/changes.html).
//! Sequence numbers are plain integers: CouchDB's are opaque strings, and
//! clients (PouchDB, the replicator) only echo them back in `since`.

use crate::keys::{meta, u64_value, DocInfo, DB_META, SEQS};
use crate::read::{render, ReadOptions};
use crate::selector::Selector;
use crate::{Database, DocError, Result};
use rhizome_kv::KvRead;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

#[derive(Clone, Debug, Default)]
pub enum ChangesFilter {
    #[default]
    None,
    /// `filter=_doc_ids`
    DocIds(HashSet<String>),
    /// `filter=_selector`: a Mango selector on the winning revision.
    Selector(Value),
    /// `filter=_design`: design documents only.
    Design,
    /// Code from outside this crate: a design document's filter function,
    /// or `filter=_view` (rhizome-views).
    Custom(std::sync::Arc<dyn DocFilter>),
}

/// A filter on the winning revision that this crate does not know how to
/// run (JavaScript). `start` makes the matcher for one pass over the
/// changes, on the thread that makes the pass (a JavaScript engine is not
/// `Send`).
pub trait DocFilter: Send + Sync + std::fmt::Debug {
    fn start(&self) -> Result<Box<dyn FnMut(&Map<String, Value>) -> Result<bool>>>;
}

#[derive(Clone, Debug, Default)]
pub struct ChangesOptions {
    pub since: u64,
    pub limit: Option<usize>,
    pub descending: bool,
    /// `style=all_docs`: every leaf, not only the winner.
    pub all_leaves: bool,
    pub include_docs: bool,
    pub conflicts: bool,
    pub attachments: bool,
    pub filter: ChangesFilter,
}

/// How many remaining changes `pending` counts one by one.
const PENDING_COUNTED: u64 = 10_000;

pub struct Changes {
    pub rows: Vec<Value>,
    pub last_seq: u64,
    /// Changes after `last_seq` that a `limit` left out (CouchDB's
    /// `pending`; 0 for a descending feed).
    pub pending: u64,
}

impl Database {
    pub fn changes(&self, opts: &ChangesOptions) -> Result<Changes> {
        let mut rows = Vec::new();
        let changes = self.changes_each(opts, &mut |row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(Changes { rows, ..changes })
    }

    /// [`Database::changes`] with each row given to `each` as it is read
    /// (an answer of any size is not kept; `rows` of the result is empty).
    pub fn changes_each(&self, opts: &ChangesOptions, each: &mut dyn FnMut(Value) -> Result<()>) -> Result<Changes> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let update_seq = u64_value(kv.get(DB_META, meta::UPDATE_SEQ)?, "update_seq")?;
        let limit = opts.limit.unwrap_or(usize::MAX);
        let read = ReadOptions { conflicts: opts.conflicts, attachments: opts.attachments, ..Default::default() };
        let mut rows = 0;
        // Parsed once per feed; a bad selector is CouchDB's 400.
        let selector = match &opts.filter {
            ChangesFilter::Selector(v) => Some(Selector::parse(v).map_err(|e| DocError::Coded { status: 400, error: e.error, reason: e.reason })?),
            _ => None,
        };
        let mut custom = match &opts.filter {
            ChangesFilter::Custom(f) => Some(f.start()?),
            _ => None,
        };
        let mut cursor = kv.cursor(SEQS, &[], None);
        if opts.descending {
            cursor.seek_last();
        } else {
            cursor.seek(&(opts.since.saturating_add(1)).to_be_bytes());
        }
        let mut last_seq = if opts.descending { 0 } else { opts.since };
        let mut hit_limit = false;
        while cursor.valid() {
            if rows >= limit {
                hit_limit = true;
                break;
            }
            let seq = u64::from_be_bytes(cursor.key().try_into().map_err(|_| DocError::Corrupt("a changes key is not a u64".into()))?);
            if opts.descending && seq <= opts.since {
                break;
            }
            let id = String::from_utf8_lossy(cursor.value()).into_owned();
            if let Some(row) = change_row(kv, seq, &id, opts, selector.as_ref(), custom.as_deref_mut(), &read)? {
                each(row)?;
                rows += 1;
            }
            last_seq = seq;
            if opts.descending {
                cursor.prev()
            } else {
                cursor.next()
            }
        }
        cursor.status()?;
        let mut pending = 0;
        if hit_limit && !opts.descending {
            // What is left: the sequence entries after the last one read
            // (one per document), counted up to PENDING_COUNTED; past that,
            // the span of sequence numbers left, an upper bound (a document
            // changed twice has one entry), so that a replicator reading a
            // large database in small batches does not scan the rest of it
            // for every batch.
            while cursor.valid() && pending < PENDING_COUNTED {
                pending += 1;
                cursor.next();
            }
            cursor.status()?;
            if pending == PENDING_COUNTED && cursor.valid() {
                pending = update_seq.saturating_sub(last_seq);
            }
        }
        if !hit_limit && !opts.descending {
            last_seq = last_seq.max(update_seq);
        }
        Ok(Changes { rows: Vec::new(), last_seq, pending })
    }
}

type Matcher = dyn FnMut(&Map<String, Value>) -> Result<bool>;

fn change_row(
    kv: &dyn KvRead,
    seq: u64,
    id: &str,
    opts: &ChangesOptions,
    selector: Option<&Selector>,
    custom: Option<&mut Matcher>,
    read: &ReadOptions,
) -> Result<Option<Value>> {
    match &opts.filter {
        ChangesFilter::DocIds(ids) if !ids.contains(id) => return Ok(None),
        ChangesFilter::Design if !id.starts_with("_design/") => return Ok(None),
        _ => {}
    }
    // An entry naming a document that is gone (purged, `purge.rs`) tells
    // indexes to drop its rows; a feed shows nothing for it.
    let Some(bytes) = kv.get(crate::keys::DOCS, id.as_bytes())? else { return Ok(None) };
    let info = DocInfo::from_bytes(id, &bytes)?;
    if info.seq != seq {
        return Ok(None);
    }
    let doc = if opts.include_docs || matches!(opts.filter, ChangesFilter::Selector(_) | ChangesFilter::Custom(_)) {
        Some(match render(kv, id, &info, &info.winner, read, None) {
            Ok(doc) => doc,
            // A deleted winner's body may be empty; CouchDB shows the stub.
            Err(DocError::NotFound(_)) => deleted_stub(id, &info),
            Err(e) => return Err(e),
        })
    } else {
        None
    };
    if let (Some(selector), Some(doc)) = (selector, &doc) {
        if !selector.matches(&Value::Object(doc.clone())) {
            return Ok(None);
        }
    }
    if let (Some(matcher), Some(doc)) = (custom, &doc) {
        if !matcher(doc)? {
            return Ok(None);
        }
    }
    let changes: Vec<Value> = if opts.all_leaves {
        info.tree.leaves().iter().map(|l| json!({ "rev": l.rev.to_string() })).collect()
    } else {
        vec![json!({ "rev": info.winner.to_string() })]
    };
    let mut row = json!({ "seq": seq, "id": id, "changes": changes });
    if info.deleted {
        row["deleted"] = Value::Bool(true);
    }
    if opts.include_docs {
        row["doc"] = Value::Object(doc.unwrap_or_default());
    }
    Ok(Some(row))
}

fn deleted_stub(id: &str, info: &DocInfo) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("_id".into(), Value::String(id.to_owned()));
    m.insert("_rev".into(), Value::String(info.winner.to_string()));
    m.insert("_deleted".into(), Value::Bool(true));
    m
}
