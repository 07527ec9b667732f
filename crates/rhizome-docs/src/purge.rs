//! `_purge`: removing revisions as if they had never been written, as
//! CouchDB's purge does (https://docs.couchdb.org/en/stable/api/database/misc.html).
//!
//! A purge names leaves; each goes with the revisions above it that lead
//! to it alone. A document left with no revision is gone entirely: its
//! record, its bodies and its graph, and it no longer appears in
//! `_changes` or `_all_docs`. A document that keeps revisions gets a new
//! sequence, as any write, so views and Mango indexes see it again.
//!
//! Indexes learn of a document that is gone through a sequence entry that
//! names it while `DOCS` has no record of it (the indexers already drop
//! the rows of a document they cannot find); `_changes` skips such
//! entries.
//!
//! As CouchDB, every request counts (`purge_seq` goes up by one per
//! document named, whether or not anything was purged) and the last
//! `_purged_infos_limit` requests are kept for `_purged_infos`; older ones
//! are dropped at the next purge. Rhizome has no purge replication between
//! its databases, so nothing else reads them.

use crate::keys::{self, body_key, meta, DocInfo, BODIES, DB_META, DOCS, SEQS};
use crate::write::{graph_alone, read_body, Counters};
use crate::{Database, DocError, Result, Rev};

/// CouchDB's `[purge] max_document_id_number` and `max_revisions_number`.
pub const MAX_PURGE_DOCS: usize = 100;
pub const MAX_PURGE_REVS: usize = 1000;
/// CouchDB's default `_purged_infos_limit`.
pub const DEFAULT_PURGED_INFOS_LIMIT: u64 = 1000;

impl Database {
    /// Purges each document's listed revisions in one transaction;
    /// returns, per document in the order given, the revisions purged
    /// (only leaves are; the others are left out, as CouchDB).
    pub fn purge(&self, requests: &[(String, Vec<Rev>)]) -> Result<Vec<(String, Vec<Rev>)>> {
        if requests.len() > MAX_PURGE_DOCS {
            return Err(DocError::BadRequest("Exceeded maximum number of documents.".into()));
        }
        if requests.iter().map(|(_, r)| r.len()).sum::<usize>() > MAX_PURGE_REVS {
            return Err(DocError::BadRequest("Exceeded maximum number of revisions.".into()));
        }
        let mut txn = self.store.transaction()?;
        let mut counters = Counters::read(&txn)?;
        let mut purge_seq = keys::u64_value(txn.kv().get(DB_META, meta::PURGE_SEQ)?, "purge_seq")?;
        let mut out = Vec::with_capacity(requests.len());
        let mut infos = Vec::with_capacity(requests.len());
        for (id, revs) in requests {
            purge_seq += 1;
            infos.push((purge_seq, serde_json::json!({ "id": id, "revs": revs.iter().map(Rev::to_string).collect::<Vec<_>>() })));
            let Some(bytes) = txn.kv().get(DOCS, id.as_bytes())? else {
                out.push((id.clone(), Vec::new()));
                continue;
            };
            let info = DocInfo::from_bytes(id, &bytes)?;
            let mut tree = info.tree.clone();
            let before: Vec<Rev> = tree.revs().cloned().collect();
            let purged = tree.purge(revs);
            if purged.is_empty() {
                out.push((id.clone(), purged));
                continue;
            }
            self.writing(id);
            for gone in before.iter().filter(|r| !tree.contains(r)) {
                txn.kv_mut().delete(BODIES, &body_key(id, gone));
            }
            counters.update_seq += 1;
            txn.kv_mut().delete(SEQS, &info.seq.to_be_bytes());
            // Also when the document is gone: indexes find no record and
            // drop its rows; `_changes` skips the entry.
            txn.kv_mut().put(SEQS, &counters.update_seq.to_be_bytes(), id.as_bytes());
            if info.deleted {
                counters.doc_del_count = counters.doc_del_count.saturating_sub(1);
            } else {
                counters.doc_count = counters.doc_count.saturating_sub(1);
            }
            match tree.winner() {
                None => {
                    txn.kv_mut().delete(DOCS, id.as_bytes());
                    if !info.deleted {
                        self.project(&mut txn, id, &info.winner, true, None, None, false)?;
                    }
                }
                Some(winner) => {
                    if winner.deleted {
                        counters.doc_del_count += 1;
                    } else {
                        counters.doc_count += 1;
                    }
                    let graph_body = match (winner.deleted, winner.rev == info.winner) {
                        (true, _) => None,
                        (false, true) => info.graph_body.clone(),
                        (false, false) => read_body(&txn, id, &winner.rev)?.as_ref().and_then(graph_alone),
                    };
                    // The record keeps the body of a winner that stays; a
                    // revision that stops being the winner (if a purge can
                    // leave it) takes its body to `BODIES`, and the new
                    // winner's is read from there.
                    let body = match (winner.rev == info.winner, &info.body) {
                        (true, body) => body.clone(),
                        (false, Some(old)) => {
                            if tree.contains(&info.winner) {
                                txn.kv_mut().put(BODIES, &body_key(id, &info.winner), old);
                            }
                            None
                        }
                        (false, None) => None,
                    };
                    let new_info = DocInfo { seq: counters.update_seq, winner: winner.rev.clone(), deleted: winner.deleted, graph_body, graph_empty: false, body, tree };
                    txn.kv_mut().put(DOCS, id.as_bytes(), &new_info.to_bytes(id));
                    if winner.rev != info.winner {
                        self.project(&mut txn, id, &winner.rev, winner.deleted, None, None, false)?;
                    }
                }
            }
            out.push((id.clone(), purged));
        }
        counters.write(&mut txn);
        txn.kv_mut().put(DB_META, meta::PURGE_SEQ, &purge_seq.to_be_bytes());
        // The last `limit` requests are kept: older ones, stored or new, not.
        let limit = purged_infos_limit(txn.kv().get(DB_META, meta::PURGED_INFOS_LIMIT)?)?;
        let keep_from = purge_seq.saturating_sub(limit) + 1;
        keys::delete_range(txn.kv_mut(), DB_META, &purged_info_key(0), &purged_info_key(keep_from))?;
        for (seq, info) in infos.into_iter().filter(|(seq, _)| *seq >= keep_from) {
            txn.kv_mut().put(DB_META, &purged_info_key(seq), info.to_string().as_bytes());
        }
        txn.commit()?;
        Ok(out)
    }

    /// The purge requests kept (the last `_purged_infos_limit`), oldest
    /// first, each as `{"id", "revs"}` as it was asked.
    pub fn purged_infos(&self) -> Result<Vec<serde_json::Value>> {
        let s = self.store.snapshot()?;
        let upper = rhizome_kv::prefix_upper_bound(meta::PURGED_INFO);
        let mut cursor = s.kv().cursor(DB_META, meta::PURGED_INFO, upper.as_deref());
        cursor.seek_first();
        let mut out = Vec::new();
        while cursor.valid() {
            out.push(serde_json::from_slice(cursor.value()).map_err(|e| DocError::Corrupt(format!("purge request: {e}")))?);
            cursor.next();
        }
        cursor.status()?;
        Ok(out)
    }

    /// How many purges this database has had (`purge_seq` of its info).
    pub fn purge_seq(&self) -> Result<u64> {
        let s = self.store.snapshot()?;
        keys::u64_value(s.kv().get(DB_META, meta::PURGE_SEQ)?, "purge_seq")
    }

    pub fn purged_infos_limit(&self) -> Result<u64> {
        purged_infos_limit(self.store.snapshot()?.kv().get(DB_META, meta::PURGED_INFOS_LIMIT)?)
    }

    pub fn set_purged_infos_limit(&self, limit: u64) -> Result<()> {
        if limit == 0 {
            return Err(DocError::BadRequest("`purged_infos_limit` must be positive integer".into()));
        }
        let mut txn = self.store.transaction()?;
        txn.kv_mut().put(DB_META, meta::PURGED_INFOS_LIMIT, &limit.to_be_bytes());
        Ok(txn.commit()?)
    }
}

/// The limit stored (`meta::PURGED_INFOS_LIMIT`'s value), or CouchDB's default.
fn purged_infos_limit(stored: Option<Vec<u8>>) -> Result<u64> {
    Ok(match stored {
        None => DEFAULT_PURGED_INFOS_LIMIT,
        some => keys::u64_value(some, "purged_infos_limit")?,
    })
}

fn purged_info_key(seq: u64) -> Vec<u8> {
    [meta::PURGED_INFO, &seq.to_be_bytes()].concat()
}
