//! Keyspaces of the document store and their value formats.
//!
//! Documents live in the same RocksDB store as the database's quads, so a
//! document write and its graph projection commit in one batch. The RDF
//! layer uses keyspaces 0-25; documents take 30-49.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `DOCS` 30 | doc id | [`DocInfo`]: seq, winner, whether the winner's body is its graph alone, the winner's body (records written since format 3), revision tree |
//! | `SEQS` 31 | seq (u64 BE) | doc id (one entry per document, as CouchDB's by-seq index) |
//! | `BODIES` 32 | doc id len (u32 BE), doc id, rev | JSON body of a revision that is not kept in its record: other leaves (conflicts), older revisions until compaction, and the winner of a record written before format 3 |
//! | `ATTACHMENTS` 33 | digest (`md5-<base64>`) | attachment bytes (up to 256 KiB; larger ones are in `ATTACHMENT_CHUNKS`) |
//! | `LOCAL` 34 | `_local/` id | JSON body with `_rev` `0-N` |
//! | `DB_META` 35 | name | counters (u64 BE) and the security object; `purged_info/` and a purge's sequence (u64 BE): that purge request as JSON `{"id", "revs"}` |
//! | `MANGO_ROWS` 36 | index id (8 bytes), collated columns ([`crate::collate`]), doc id | doc id |
//! | `MANGO_DOC_ROWS` 37 | index id, doc id | the document's `MANGO_ROWS` key |
//! | `MANGO_STATE` 38 | index id | the sequence the index is up to date with (u64 BE) |
//! | `ATTACHMENT_CHUNKS` 39 | digest, 0, chunk number (u32 BE) | 256 KiB of an attachment's bytes (format 2, `attachment_data`) |

use crate::{DocError, Result, Rev, RevTree};
use rhizome_kv::Keyspace;

pub const DOCS: Keyspace = Keyspace(30);
// Its misses are filtered in the memtable (see `rhizome_kv::MEMTABLE_FILTERED`).
const _: () = assert!(rhizome_kv::MEMTABLE_FILTERED[1].0 == DOCS.0);
pub const SEQS: Keyspace = Keyspace(31);
pub const BODIES: Keyspace = Keyspace(32);
pub const ATTACHMENTS: Keyspace = Keyspace(33);
pub const LOCAL: Keyspace = Keyspace(34);
pub const DB_META: Keyspace = Keyspace(35);
pub const MANGO_ROWS: Keyspace = Keyspace(36);
pub const MANGO_DOC_ROWS: Keyspace = Keyspace(37);
pub const MANGO_STATE: Keyspace = Keyspace(38);
pub const ATTACHMENT_CHUNKS: Keyspace = Keyspace(39);
// The embedded engine keeps these in the documents' column family (LZ4).
const _: () = assert!(rhizome_kv::DOCUMENT_KEYSPACES.start == DOCS.0 && rhizome_kv::DOCUMENT_KEYSPACES.end == ATTACHMENT_CHUNKS.0 + 1);

pub mod meta {
    pub const FORMAT_VERSION: &[u8] = b"format_version";
    pub const UPDATE_SEQ: &[u8] = b"update_seq";
    pub const DOC_COUNT: &[u8] = b"doc_count";
    pub const DOC_DEL_COUNT: &[u8] = b"doc_del_count";
    pub const REVS_LIMIT: &[u8] = b"revs_limit";
    pub const SECURITY: &[u8] = b"security";
    pub const PURGE_SEQ: &[u8] = b"purge_seq";
    pub const PURGED_INFOS_LIMIT: &[u8] = b"purged_infos_limit";
    /// Prefix of the last `purged_infos_limit` purge requests, each under
    /// its purge sequence (u64 BE), for `_purged_infos`.
    pub const PURGED_INFO: &[u8] = b"purged_info/";
    /// Present (one byte, 1) in a database created partitioned.
    pub const PARTITIONED: &[u8] = b"partitioned";
}

/// Version of the document keyspaces' formats: 2 added chunked
/// attachments (`ATTACHMENT_CHUNKS`), 3 document records holding their
/// winners' bodies ([`DocInfo::body`], written by every document write
/// since). A database of an older format is read as it is (each format
/// only adds): records without a body read theirs from `BODIES`, and take
/// the new form when next written. Its number is raised to 3 when it is
/// opened, so that an older build refuses it instead of missing the
/// bodies (its compaction would drop the attachments only those bodies
/// name).
pub const FORMAT_VERSION: u64 = 3;
/// The format with chunked attachments and no body in a record.
pub const FORMAT_VERSION_2: u64 = 2;
/// The format before chunked attachments, still read.
pub const FORMAT_VERSION_1: u64 = 1;
/// Format of a `DOCS` value: 1, or 2 when its flags byte holds more than
/// "deleted" (the winner's graph named, or known empty): an older build
/// then reports the record as corrupt instead of reading its flags byte
/// as "deleted". Format 2 readers ignore flag bits they do not know, so a
/// build from before [`FLAG_GRAPH_EMPTY`] reads records with it as without
/// (and a record without it, as every record written before, only means
/// "not known empty": nothing to migrate).
const DOC_INFO_FORMAT: u8 = 1;
const DOC_INFO_FORMAT_GRAPH: u8 = 2;
/// Format of a `DOCS` value holding its winner's body (format 2's fields,
/// then [`FLAG_BODY`]'s length-prefixed body before the tree): a build
/// from before it reports the record as corrupt.
const DOC_INFO_FORMAT_BODY: u8 = 3;
/// Bits of a `DOCS` value's flags byte.
const FLAG_DELETED: u8 = 1;
const FLAG_GRAPH_BODY: u8 = 2;
/// [`DocInfo::graph_empty`].
const FLAG_GRAPH_EMPTY: u8 = 4;
/// [`DocInfo::body`] (format 3 only).
const FLAG_BODY: u8 = 8;

pub fn body_key(id: &str, rev: &Rev) -> Vec<u8> {
    let mut key = Vec::with_capacity(4 + id.len() + rev.text_len());
    key.extend_from_slice(&(id.len() as u32).to_be_bytes());
    key.extend_from_slice(id.as_bytes());
    rev.append_to(&mut key);
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
    /// The winner's body is its graph alone (no attachments), this IRI:
    /// a plain read renders the graph without reading the body. `None`
    /// for any other winner, and for records written before it was kept.
    pub graph_body: Option<String>,
    /// The document's graph holds no quad: the projection of its winner
    /// (or its deletion) left the graph empty, and no graph write has
    /// touched it since (every write to a document's graph clears this:
    /// `Database::record_graph_writes_in`, `adopt_graphs`). Lets the next
    /// projection skip looking for a graph to drop (the graph IRI's
    /// dictionary lookup, a miss that searched the store's bottom level,
    /// was a tenth of a TPC-B transaction). `false` is always safe: "not
    /// known", as for every record written before it was kept.
    pub graph_empty: bool,
    /// The winner's stored body (its JSON, as `BODIES` would hold it),
    /// kept in the record so that a read of the winner is one read and a
    /// write of a new winner one key. `None` for a record written before
    /// format 3, and for a winner whose body a write did not have in hand
    /// (another leaf becoming the winner): its body is then in `BODIES`.
    /// Never both: a body kept here is not in `BODIES`.
    pub body: Option<Vec<u8>>,
    pub tree: RevTree,
}

/// A `DocInfo` value's fields before the revision tree, read in place.
pub struct DocHeader<'a> {
    pub seq: u64,
    pub winner: Rev,
    pub deleted: bool,
    /// As [`DocInfo::graph_body`]; empty when the IRI is the document id.
    graph_body: Option<&'a str>,
    pub graph_empty: bool,
    /// As [`DocInfo::body`].
    pub body: Option<&'a [u8]>,
    pub tree: &'a [u8],
}

impl DocHeader<'_> {
    /// The IRI of the winner's graph when its body is that graph alone.
    pub fn graph_body<'a>(&'a self, id: &'a str) -> Option<&'a str> {
        self.graph_body.map(|iri| if iri.is_empty() { id } else { iri })
    }
}

impl DocInfo {
    /// `id` is the document's: a graph IRI equal to it is not repeated.
    pub fn to_bytes(&self, id: &str) -> Vec<u8> {
        let winner_len = self.winner.text_len();
        let tree = self.tree.to_bytes();
        let graph = self.graph_body.as_deref().map(|iri| if iri == id { "" } else { iri });
        let body = self.body.as_deref();
        let mut out = Vec::with_capacity(22 + winner_len + graph.map_or(0, str::len) + body.map_or(0, <[u8]>::len) + tree.len());
        let graph_empty = self.graph_empty && graph.is_none();
        out.push(if body.is_some() {
            DOC_INFO_FORMAT_BODY
        } else if graph.is_some() || graph_empty {
            DOC_INFO_FORMAT_GRAPH
        } else {
            DOC_INFO_FORMAT
        });
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.push(if self.deleted { FLAG_DELETED } else { 0 } | if graph.is_some() { FLAG_GRAPH_BODY } else { 0 } | if graph_empty { FLAG_GRAPH_EMPTY } else { 0 } | if body.is_some() { FLAG_BODY } else { 0 });
        out.extend_from_slice(&(winner_len as u16).to_be_bytes());
        self.winner.append_to(&mut out);
        if let Some(iri) = graph {
            out.extend_from_slice(&(iri.len() as u32).to_be_bytes());
            out.extend_from_slice(iri.as_bytes());
        }
        if let Some(body) = body {
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(body);
        }
        out.extend_from_slice(&tree);
        out
    }

    pub fn from_bytes(id: &str, bytes: &[u8]) -> Result<DocInfo> {
        Self::header(bytes)
            .and_then(|h| {
                Some(DocInfo {
                    seq: h.seq,
                    graph_body: h.graph_body(id).map(str::to_owned),
                    graph_empty: h.graph_empty,
                    winner: h.winner,
                    deleted: h.deleted,
                    body: h.body.map(<[u8]>::to_vec),
                    tree: RevTree::from_bytes(h.tree)?,
                })
            })
            .ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))
    }

    /// [`DocInfo::from_bytes`] with its revision tree already decoded
    /// (`tree` must be the decoding of the tree in `bytes`).
    pub(crate) fn with_tree(id: &str, bytes: &[u8], tree: RevTree) -> Result<DocInfo> {
        let h = Self::header(bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
        Ok(DocInfo { seq: h.seq, graph_body: h.graph_body(id).map(str::to_owned), graph_empty: h.graph_empty, winner: h.winner, deleted: h.deleted, body: h.body.map(<[u8]>::to_vec), tree })
    }

    /// Seq, winner, deletion and graph without decoding the tree.
    pub fn header(bytes: &[u8]) -> Option<DocHeader<'_>> {
        let format = *bytes.first()?;
        if !matches!(format, DOC_INFO_FORMAT | DOC_INFO_FORMAT_GRAPH | DOC_INFO_FORMAT_BODY) {
            return None;
        }
        let seq = u64::from_be_bytes(bytes.get(1..9)?.try_into().ok()?);
        let flags = *bytes.get(9)?;
        // Format 1 wrote the flags byte as a bool.
        let (deleted, graph, graph_empty) = match format {
            DOC_INFO_FORMAT => (flags != 0, false, false),
            _ => (flags & FLAG_DELETED != 0, flags & FLAG_GRAPH_BODY != 0, flags & (FLAG_GRAPH_BODY | FLAG_GRAPH_EMPTY) == FLAG_GRAPH_EMPTY),
        };
        let len = u16::from_be_bytes(bytes.get(10..12)?.try_into().ok()?) as usize;
        let winner = Rev::parse(std::str::from_utf8(bytes.get(12..12 + len)?).ok()?)?;
        let mut at = 12 + len;
        let graph_body = if graph {
            let n = u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize;
            let iri = std::str::from_utf8(bytes.get(at + 4..at + 4 + n)?).ok()?;
            at += 4 + n;
            Some(iri)
        } else {
            None
        };
        let body = if format == DOC_INFO_FORMAT_BODY && flags & FLAG_BODY != 0 {
            let n = u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize;
            let body = bytes.get(at + 4..at + 4 + n)?;
            at += 4 + n;
            Some(body)
        } else {
            None
        };
        Some(DocHeader { seq, winner, deleted, graph_body, graph_empty, body, tree: bytes.get(at..)? })
    }
}

pub fn u64_value(v: Option<Vec<u8>>, what: &str) -> Result<u64> {
    match v {
        None => Ok(0),
        Some(v) => Ok(u64::from_be_bytes(v.as_slice().try_into().map_err(|_| DocError::Corrupt(format!("{what} is not a u64")))?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(deleted: bool, graph_body: Option<&str>) -> DocInfo {
        let mut tree = RevTree::default();
        let winner = tree.edit(None, "abc", deleted).unwrap();
        DocInfo { seq: 7, winner, deleted, graph_body: graph_body.map(str::to_owned), graph_empty: false, body: None, tree }
    }

    /// A record can say its document's graph is empty (format 2, flag 4,
    /// no graph named); one written without it, in either format, reads as
    /// "not known"; a graph body is never empty. A build from before the
    /// flag read format 2's flags bit by bit (deleted 1, graph body 2), so
    /// it reads such a record's deletion and graph as written.
    #[test]
    fn document_records_keep_whether_the_graph_is_known_empty() {
        let id = "d";
        for deleted in [false, true] {
            let mut written = info(deleted, None);
            assert!(!DocInfo::from_bytes(id, &written.to_bytes(id)).unwrap().graph_empty);
            written.graph_empty = true;
            let bytes = written.to_bytes(id);
            assert_eq!((bytes[0], bytes[9]), (2, 4 | deleted as u8));
            let read = DocInfo::from_bytes(id, &bytes).unwrap();
            assert_eq!((read.graph_empty, read.deleted, read.graph_body.as_deref(), read.winner), (true, deleted, None, written.winner.clone()));
            assert!(DocInfo::header(&bytes).unwrap().graph_empty);
            // Format 1 (as every record before graphs were kept).
            let mut old = info(deleted, None).to_bytes(id);
            assert_eq!(old[0], 1);
            old[9] = deleted as u8;
            assert!(!DocInfo::from_bytes(id, &old).unwrap().graph_empty);
        }
        let mut graph = info(false, Some("http://example.org/g"));
        graph.graph_empty = true;
        let read = DocInfo::from_bytes(id, &graph.to_bytes(id)).unwrap();
        assert_eq!((read.graph_empty, read.graph_body.as_deref()), (false, Some("http://example.org/g")));
    }

    /// Every combination reads back as written; a graph named by the
    /// document id is stored without repeating it; a record written before
    /// graphs were kept (format 1, a bool for "deleted") reads as having
    /// none.
    #[test]
    fn document_records_keep_whether_the_winner_is_its_graph_alone() {
        let id = "http://example.org/d";
        for deleted in [false, true] {
            for graph in [None, Some(id), Some("http://example.org/other")] {
                let written = info(deleted, graph);
                let bytes = written.to_bytes(id);
                let read = DocInfo::from_bytes(id, &bytes).unwrap();
                assert_eq!((read.seq, &read.winner, read.deleted, read.graph_body.as_deref(), &read.tree), (7, &written.winner, deleted, graph, &written.tree));
                let header = DocInfo::header(&bytes).unwrap();
                assert_eq!((header.deleted, header.graph_body(id)), (deleted, graph));
                assert_eq!(bytes[0], if graph.is_some() { 2 } else { 1 }, "an older build must not read a graph record");
            }
        }
        assert_eq!(info(false, Some(id)).to_bytes(id).len() + "http://example.org/other".len(), info(false, Some("http://example.org/other")).to_bytes(id).len());
        // Format 1 as it was written: the flags byte a bool.
        let old = info(true, None);
        let mut bytes = old.to_bytes(id);
        bytes[9] = 1;
        assert!(DocInfo::from_bytes(id, &bytes).unwrap().deleted);
        bytes[9] = 0;
        let read = DocInfo::from_bytes(id, &bytes).unwrap();
        assert!(!read.deleted && read.graph_body.is_none());
        // A graph length past the end is corrupt, not a short read.
        let mut bytes = info(false, Some("http://example.org/other")).to_bytes(id);
        let at = 12 + old.winner.to_string().len();
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(DocInfo::from_bytes(id, &bytes).is_err());
    }

    /// A record with its winner's body (format 3) reads back every field,
    /// with or without a graph, deleted or not; one without a body is
    /// written in the older formats, byte for byte as before; a body's
    /// length past the end is corrupt.
    #[test]
    fn document_records_keep_their_winners_body() {
        let id = "http://example.org/d";
        for deleted in [false, true] {
            for graph in [None, Some("http://example.org/other")] {
                for graph_empty in [false, true] {
                    let mut written = info(deleted, graph);
                    written.graph_empty = graph_empty;
                    let without = written.to_bytes(id);
                    assert_ne!(without[0], 3);
                    written.body = Some(br#"{"a":1}"#.to_vec());
                    let bytes = written.to_bytes(id);
                    assert_eq!(bytes[0], 3, "an older build must not read a record with a body");
                    let read = DocInfo::from_bytes(id, &bytes).unwrap();
                    assert_eq!(
                        (read.seq, &read.winner, read.deleted, read.graph_body.as_deref(), read.graph_empty, read.body.as_deref(), &read.tree),
                        (7, &written.winner, deleted, graph, graph_empty && graph.is_none(), Some(&br#"{"a":1}"#[..]), &written.tree)
                    );
                    let header = DocInfo::header(&bytes).unwrap();
                    assert_eq!((header.deleted, header.graph_body(id), header.body), (deleted, graph, Some(&br#"{"a":1}"#[..])));
                    assert!(DocInfo::header(&without).unwrap().body.is_none());
                    let mut cut = bytes.clone();
                    let at = 12 + written.winner.to_string().len() + graph.map_or(0, |g| 4 + g.len());
                    cut[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
                    assert!(DocInfo::from_bytes(id, &cut).is_err());
                }
            }
        }
    }
}

/// Deletes every key of `[lower, upper)` in `ks` that `txn` sees (its own
/// writes too).
pub(crate) fn delete_range(txn: &mut rhizome_kv::Transaction<'_>, ks: Keyspace, lower: &[u8], upper: &[u8]) -> Result<()> {
    let keys: Vec<Vec<u8>> = {
        let mut cursor = txn.cursor(ks, lower, Some(upper));
        cursor.seek_first();
        let mut keys = Vec::new();
        while cursor.valid() {
            keys.push(cursor.key().to_vec());
            cursor.next();
        }
        cursor.status()?;
        keys
    };
    for key in keys {
        txn.delete(ks, &key);
    }
    Ok(())
}
