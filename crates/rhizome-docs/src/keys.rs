//! Keyspaces of the document store and their value formats.
//!
//! Documents live in the same RocksDB store as the database's quads, so a
//! document write and its graph projection commit in one batch. The RDF
//! layer uses keyspaces 0-25; documents take 30-49.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `DOCS` 30 | doc id | [`DocInfo`]: seq, winner, revision tree |
//! | `SEQS` 31 | seq (u64 BE) | doc id (one entry per document, as CouchDB's by-seq index) |
//! | `BODIES` 32 | doc id len (u32 BE), doc id, rev | JSON body of a revision (leaves, and older ones until compaction) |
//! | `ATTACHMENTS` 33 | digest (`md5-<base64>`) | attachment bytes |
//! | `LOCAL` 34 | `_local/` id | JSON body with `_rev` `0-N` |
//! | `DB_META` 35 | name | counters (u64 BE) and the security object |
//! | `MANGO_ROWS` 36 | index id (8 bytes), collated columns ([`crate::collate`]), doc id | doc id |
//! | `MANGO_DOC_ROWS` 37 | index id, doc id | the document's `MANGO_ROWS` key |
//! | `MANGO_STATE` 38 | index id | the sequence the index is up to date with (u64 BE) |

use crate::{DocError, Result, Rev, RevTree};
use rhizome_kv::Keyspace;

pub const DOCS: Keyspace = Keyspace(30);
pub const SEQS: Keyspace = Keyspace(31);
pub const BODIES: Keyspace = Keyspace(32);
pub const ATTACHMENTS: Keyspace = Keyspace(33);
pub const LOCAL: Keyspace = Keyspace(34);
pub const DB_META: Keyspace = Keyspace(35);
pub const MANGO_ROWS: Keyspace = Keyspace(36);
pub const MANGO_DOC_ROWS: Keyspace = Keyspace(37);
pub const MANGO_STATE: Keyspace = Keyspace(38);

pub mod meta {
    pub const FORMAT_VERSION: &[u8] = b"format_version";
    pub const UPDATE_SEQ: &[u8] = b"update_seq";
    pub const DOC_COUNT: &[u8] = b"doc_count";
    pub const DOC_DEL_COUNT: &[u8] = b"doc_del_count";
    pub const REVS_LIMIT: &[u8] = b"revs_limit";
    pub const SECURITY: &[u8] = b"security";
}

/// Version of the document keyspaces' formats.
pub const FORMAT_VERSION: u64 = 1;
const DOC_INFO_FORMAT: u8 = 1;

pub fn body_key(id: &str, rev: &Rev) -> Vec<u8> {
    let mut key = Vec::with_capacity(4 + id.len() + 40);
    key.extend_from_slice(&(id.len() as u32).to_be_bytes());
    key.extend_from_slice(id.as_bytes());
    key.extend_from_slice(rev.to_string().as_bytes());
    key
}

/// The document id and revision of a `BODIES` key.
pub fn parse_body_key(key: &[u8]) -> Option<(&str, Rev)> {
    let len = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let id = std::str::from_utf8(key.get(4..4 + len)?).ok()?;
    let rev = Rev::parse(std::str::from_utf8(key.get(4 + len..)?).ok()?)?;
    Some((id, rev))
}

/// What `DOCS` keeps per document: where it is in the changes order, its
/// winner (so `_all_docs` and `_changes` need not rebuild the tree to skip
/// deleted documents), and the revision tree.
#[derive(Clone, Debug)]
pub struct DocInfo {
    pub seq: u64,
    pub winner: Rev,
    pub deleted: bool,
    pub tree: RevTree,
}

impl DocInfo {
    pub fn to_bytes(&self) -> Vec<u8> {
        let winner = self.winner.to_string();
        let tree = self.tree.to_bytes();
        let mut out = Vec::with_capacity(12 + winner.len() + tree.len());
        out.push(DOC_INFO_FORMAT);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.push(self.deleted as u8);
        out.extend_from_slice(&(winner.len() as u16).to_be_bytes());
        out.extend_from_slice(winner.as_bytes());
        out.extend_from_slice(&tree);
        out
    }

    pub fn from_bytes(id: &str, bytes: &[u8]) -> Result<DocInfo> {
        Self::header(bytes)
            .and_then(|(seq, winner, deleted, rest)| Some(DocInfo { seq, winner, deleted, tree: RevTree::from_bytes(rest)? }))
            .ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))
    }

    /// Seq, winner and deletion without decoding the tree.
    pub fn header(bytes: &[u8]) -> Option<(u64, Rev, bool, &[u8])> {
        if *bytes.first()? != DOC_INFO_FORMAT {
            return None;
        }
        let seq = u64::from_be_bytes(bytes.get(1..9)?.try_into().ok()?);
        let deleted = *bytes.get(9)? != 0;
        let len = u16::from_be_bytes(bytes.get(10..12)?.try_into().ok()?) as usize;
        let winner = Rev::parse(std::str::from_utf8(bytes.get(12..12 + len)?).ok()?)?;
        Some((seq, winner, deleted, &bytes[12 + len..]))
    }
}

pub fn u64_value(v: Option<Vec<u8>>, what: &str) -> Result<u64> {
    match v {
        None => Ok(0),
        Some(v) => Ok(u64::from_be_bytes(v.as_slice().try_into().map_err(|_| DocError::Corrupt(format!("{what} is not a u64")))?)),
    }
}
