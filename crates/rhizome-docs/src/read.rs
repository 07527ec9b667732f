//! Reading documents: `GET /{db}/{docid}` with its options, `open_revs`,
//! attachments, `_revs_diff`.
//! (https://docs.couchdb.org/en/stable/api/document/common.html#get--db-docid)

use crate::member::member;
use crate::keys::{body_key, DocHeader, DocInfo, BODIES, DOCS};
use crate::{Database, DocError, Result, Rev};
use std::borrow::Cow;
use base64::Engine;
use rhizome_kv::KvRead;
use rhizome_rdf::StoreSnapshot;
use serde_json::{json, Map, Value};

/// The query options of a document read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    pub rev: Option<Rev>,
    pub revs: bool,
    pub revs_info: bool,
    pub conflicts: bool,
    pub deleted_conflicts: bool,
    /// Inline every attachment's data (base64) instead of stubs.
    pub attachments: bool,
    /// Inline only attachments changed since the newest of these revisions
    /// that is an ancestor of the one read.
    pub atts_since: Vec<Rev>,
    pub latest: bool,
    pub local_seq: bool,
}

impl ReadOptions {
    /// No option set: a plain read of the winner
    /// ([`Database::get_doc_json`] answers it).
    pub fn is_plain(&self) -> bool {
        let ReadOptions { rev, revs, revs_info, conflicts, deleted_conflicts, attachments, atts_since, latest, local_seq } = self;
        rev.is_none() && !revs && !revs_info && !conflicts && !deleted_conflicts && !attachments && atts_since.is_empty() && !latest && !local_seq
    }
}

/// Which revisions `open_revs` asks for.
#[derive(Clone, Debug)]
pub enum OpenRevs {
    All,
    List(Vec<Rev>),
}

/// One answer of `open_revs`: a document (as values, or as the JSON bytes
/// of those values from [`Database::open_revs_bytes`]), or a revision the
/// store lacks.
#[derive(Clone, Debug)]
pub enum OpenRev<Doc = Map<String, Value>> {
    Ok(Doc),
    Missing(Rev),
}

/// An attachment's metadata and bytes.
#[derive(Clone, Debug)]
pub struct Attachment {
    pub content_type: String,
    pub digest: String,
    pub data: Vec<u8>,
}

/// An attachment's metadata, and its bytes to be read a piece at a time
/// from the snapshot it was found in (a large attachment is not held
/// whole).
pub struct AttachmentReader {
    pub content_type: String,
    pub digest: String,
    /// Bytes, as its metadata records them.
    pub length: u64,
    snapshot: StoreSnapshot,
}

impl AttachmentReader {
    /// The bytes, a stored chunk (256 KiB at most, for attachments
    /// written since chunks) at a time, into `each`, which may stop the
    /// read with an error of its own.
    pub fn read_each<E: From<DocError>>(&self, each: &mut dyn FnMut(&[u8]) -> std::result::Result<(), E>) -> std::result::Result<(), E> {
        crate::attachment_data::read_each(self.snapshot.kv(), &self.digest, each)
    }
}

pub(crate) fn doc_info(kv: &dyn KvRead, id: &str) -> Result<Option<DocInfo>> {
    match kv.get(DOCS, id.as_bytes())? {
        Some(bytes) => Ok(Some(DocInfo::from_bytes(id, &bytes)?)),
        None => Ok(None),
    }
}

/// The stored bytes of revision `rev`'s body, `info` being its document's
/// record: the record's own copy when `rev` is the winner it keeps
/// ([`DocInfo::body`]), else `BODIES` (other leaves, older revisions, and
/// the winner of a record written before format 3). Every read of a
/// stored body goes through here, [`stored_body_of_header`] or
/// [`stored_body`].
/// A revision the tree does not have (stemmed, or purged) has none, even
/// while its body waits in `BODIES` for compaction.
pub(crate) fn stored_body_of<'a>(kv: &dyn KvRead, id: &str, info: &'a DocInfo, rev: &Rev) -> Result<Option<Cow<'a, [u8]>>> {
    match info.body.as_deref().filter(|_| info.winner == *rev) {
        Some(kept) => Ok(Some(Cow::Borrowed(kept))),
        None if !info.tree.contains(rev) => Ok(None),
        None => Ok(kv.get(BODIES, &body_key(id, rev))?.map(Cow::Owned)),
    }
}

/// [`stored_body_of`] from a record read in place.
pub(crate) fn stored_body_of_header<'a>(kv: &dyn KvRead, id: &str, header: &DocHeader<'a>, rev: &Rev) -> Result<Option<Cow<'a, [u8]>>> {
    match header.body.filter(|_| header.winner == *rev) {
        Some(kept) => Ok(Some(Cow::Borrowed(kept))),
        None => Ok(kv.get(BODIES, &body_key(id, rev))?.map(Cow::Owned)),
    }
}

/// [`stored_body_of`] reading the document's record first.
pub(crate) fn stored_body(kv: &dyn KvRead, id: &str, rev: &Rev) -> Result<Option<Vec<u8>>> {
    if let Some(record) = kv.get(DOCS, id.as_bytes())? {
        let header = DocInfo::header(&record).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
        if let Some(kept) = header.body.filter(|_| header.winner == *rev) {
            return Ok(Some(kept.to_vec()));
        }
    }
    Ok(kv.get(BODIES, &body_key(id, rev))?)
}

/// The body of revision `rev` of the document whose record is `info`; a
/// document whose body is its graph (a stored `{"_graph": IRI}`) is
/// rendered from its quads as JSON-LD. `snapshot`: the committed snapshot
/// `kv` reads, when it is one (never a write transaction, whose new terms
/// are not committed): its shared term cache, and the index families it
/// has quads in, are used.
pub(crate) fn body(kv: &dyn KvRead, id: &str, info: &DocInfo, rev: &Rev, snapshot: Option<&StoreSnapshot>) -> Result<Option<Map<String, Value>>> {
    stored_body_of(kv, id, info, rev)?.map(|bytes| parse_body(kv, id, rev, &bytes, snapshot)).transpose()
}

/// [`body`] of the stored bytes `bytes`.
fn parse_body(kv: &dyn KvRead, id: &str, rev: &Rev, bytes: &[u8], snapshot: Option<&StoreSnapshot>) -> Result<Map<String, Value>> {
    let stored: Map<String, Value> = serde_json::from_slice(bytes).map_err(|e| DocError::Corrupt(format!("body of {id} {rev}: {e}")))?;
    match member(&stored, crate::jsonld::GRAPH_MARKER) {
        Some(Value::String(iri)) => {
            let mut rendered = crate::jsonld::render_graph(kv, iri, snapshot)?;
            // A graph-bodied revision keeps its attachments.
            if let Some(atts) = member(&stored, "_attachments") {
                rendered.insert("_attachments".into(), atts.clone());
            }
            Ok(rendered)
        }
        _ => Ok(stored),
    }
}

/// The winning revision of a live document as a query sees it (`_id`,
/// `_rev`, the body, attachment stubs), from its record read in place
/// (`header`), without decoding its revision tree: what Mango reads for
/// every candidate row, and a transaction for every document it reads.
pub(crate) fn render_winner(kv: &dyn KvRead, id: &str, header: &DocHeader<'_>, snapshot: Option<&StoreSnapshot>) -> Result<Option<Map<String, Value>>> {
    let winner = &header.winner;
    let Some(bytes) = stored_body_of_header(kv, id, header, winner)? else { return Ok(None) };
    let mut doc = parse_body(kv, id, winner, &bytes, snapshot)?;
    let mut added = Map::new();
    added.insert("_id".into(), Value::String(id.to_owned()));
    added.insert("_rev".into(), Value::String(winner.text()));
    if let Some(atts) = doc.shift_remove("_attachments") {
        doc.insert("_attachments".into(), render_attachments(kv, &atts, None)?);
    }
    added.extend(doc);
    Ok(Some(added))
}

/// How a read gives a revision's document: [`render`] (values) or
/// [`render_json`] (bytes).
trait Renderer<T>: Fn(&dyn KvRead, &str, &DocInfo, &Rev, &ReadOptions, Option<&StoreSnapshot>) -> Result<T> {}
impl<T, F: Fn(&dyn KvRead, &str, &DocInfo, &Rev, &ReadOptions, Option<&StoreSnapshot>) -> Result<T>> Renderer<T> for F {}

/// Renders revision `rev` of a document as CouchDB returns it.
pub(crate) fn render(kv: &dyn KvRead, id: &str, info: &DocInfo, rev: &Rev, opts: &ReadOptions, snapshot: Option<&StoreSnapshot>) -> Result<Map<String, Value>> {
    let Some(stored) = body(kv, id, info, rev, snapshot)? else {
        return Err(DocError::NotFound("missing"));
    };
    render_body(kv, info, rev, opts, stored, added_members(kv, id, info, rev, opts)?)
}

/// [`render`]'s document as the JSON bytes `serde_json` writes of it. A
/// JSON body is copied as stored, the read's members put among its own
/// ([`splice_members`]); any other body is rendered as values and written.
/// Replication reads (`_bulk_get`, `open_revs`) ask for `_revisions`, so
/// this covers them, not only plain reads.
pub(crate) fn render_json(kv: &dyn KvRead, id: &str, info: &DocInfo, rev: &Rev, opts: &ReadOptions, snapshot: Option<&StoreSnapshot>) -> Result<Vec<u8>> {
    let Some(bytes) = stored_body_of(kv, id, info, rev)? else {
        return Err(DocError::NotFound("missing"));
    };
    render_json_from(kv, id, info, rev, opts, snapshot, &bytes)
}

/// [`render_json`] of the stored body `bytes` of revision `rev`, already
/// read (`read_in_order`).
pub(crate) fn render_json_from(kv: &dyn KvRead, id: &str, info: &DocInfo, rev: &Rev, opts: &ReadOptions, snapshot: Option<&StoreSnapshot>, bytes: &[u8]) -> Result<Vec<u8>> {
    let added = added_members(kv, id, info, rev, opts)?;
    if let Some(out) = splice_members(bytes, added.iter().map(|(k, v)| (k.as_str(), v))) {
        return Ok(out);
    }
    let doc = render_body(kv, info, rev, opts, parse_body(kv, id, rev, bytes, snapshot)?, added)?;
    serde_json::to_vec(&doc).map_err(|e| DocError::Corrupt(e.to_string()))
}

/// The members a read adds to a revision's stored body (every one named
/// with `_`, none of them stored), in CouchDB's order
/// (`couch_doc:to_json_obj`): `_id` and `_rev` before the body
/// ([`LEADING`]), then `_deleted` and what `opts` asks for after it.
fn added_members(kv: &dyn KvRead, id: &str, info: &DocInfo, rev: &Rev, opts: &ReadOptions) -> Result<Map<String, Value>> {
    let mut doc = Map::new();
    doc.insert("_id".into(), Value::String(id.to_owned()));
    doc.insert("_rev".into(), Value::String(rev.text()));
    if info.tree.is_deleted(rev).unwrap_or(false) {
        doc.insert("_deleted".into(), Value::Bool(true));
    }
    let path = info.tree.path(rev);
    if opts.revs {
        let ids: Vec<Value> = path.iter().map(|r| Value::String(r.hash.clone())).collect();
        doc.insert("_revisions".into(), json!({ "start": rev.pos, "ids": ids }));
    }
    if opts.revs_info {
        let mut infos = Vec::with_capacity(path.len());
        for r in &path {
            let status = if info.tree.is_deleted(r) == Some(true) {
                "deleted"
            } else if (info.body.is_some() && info.winner == *r) || kv.get(BODIES, &body_key(id, r))?.is_some() {
                "available"
            } else {
                "missing"
            };
            infos.push(json!({ "rev": r.to_string(), "status": status }));
        }
        doc.insert("_revs_info".into(), Value::Array(infos));
    }
    if opts.conflicts {
        let conflicts = info.tree.conflicts();
        if !conflicts.is_empty() {
            doc.insert("_conflicts".into(), conflicts.iter().map(|r| Value::String(r.to_string())).collect());
        }
    }
    if opts.deleted_conflicts {
        let deleted = info.tree.deleted_conflicts();
        if !deleted.is_empty() {
            doc.insert("_deleted_conflicts".into(), deleted.iter().map(|r| Value::String(r.to_string())).collect());
        }
    }
    if opts.local_seq {
        doc.insert("_local_seq".into(), json!(info.seq));
    }
    Ok(doc)
}

/// `{"_id":…,"_rev":"…"`: how CouchDB opens a document.
fn write_id_rev(out: &mut Vec<u8>, id: &str, rev: &Rev) -> Result<()> {
    out.extend_from_slice(b"{\"_id\":");
    serde_json::to_writer(&mut *out, id).map_err(|e| DocError::Corrupt(e.to_string()))?;
    out.extend_from_slice(b",\"_rev\":\"");
    rev.append_to(out);
    out.push(b'"');
    Ok(())
}

/// The added members CouchDB writes before a document's body; the others
/// follow it, and `_attachments` comes last.
const LEADING: [&str; 2] = ["_id", "_rev"];

/// A revision's document from its (parsed) stored body and the read's
/// `added` members; attachments as stubs or, as `opts` asks, inline.
fn render_body(kv: &dyn KvRead, info: &DocInfo, rev: &Rev, opts: &ReadOptions, stored: Map<String, Value>, added: Map<String, Value>) -> Result<Map<String, Value>> {
    let mut doc = Map::with_capacity(stored.len() + added.len());
    let (leading, trailing): (Vec<_>, Vec<_>) = added.into_iter().partition(|(k, _)| LEADING.contains(&k.as_str()));
    doc.extend(leading);
    let mut atts = None;
    for (k, v) in stored {
        if k == "_attachments" {
            atts = Some(v);
        } else {
            doc.insert(k, v);
        }
    }
    // Stored bodies hold no member the read adds (writes keep none named
    // with `_` but `_attachments` and the graph marker).
    doc.extend(trailing);
    if let Some(atts) = atts {
        doc.insert("_attachments".into(), render_attachments(kv, &atts, inline_after(info, rev, opts))?);
    }
    Ok(doc)
}

/// The JSON `serde_json` writes of a stored body (an object, its members
/// in the order written) with `added` put around them as CouchDB puts
/// them ([`LEADING`] first, the others after the body): the stored members
/// are copied as bytes. `None`, to build the document as values instead,
/// when the body has a member whose name starts with `_` (a read renders
/// `_attachments` as stubs and the graph marker from quads, and adds the
/// others), or is not the compact object `serde_json` writes (checked as
/// it is scanned).
fn splice_members<'a>(stored: &[u8], added: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Option<Vec<u8>> {
    let members = compact_members(stored)?;
    let mut out = Vec::with_capacity(stored.len() + 128);
    out.push(b'{');
    let write_added = |out: &mut Vec<u8>, key: &str, value: &Value| {
        if out.len() > 1 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key).ok()?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value).ok()
    };
    let (leading, trailing): (Vec<_>, Vec<_>) = added.into_iter().partition(|(k, _)| LEADING.contains(k));
    for (k, v) in leading {
        write_added(&mut out, k, v)?;
    }
    for (key, member) in members {
        if key.starts_with('_') {
            return None;
        }
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(member);
    }
    for (k, v) in trailing {
        write_added(&mut out, k, v)?;
    }
    out.push(b'}');
    Some(out)
}

/// The members of a compact JSON object (no whitespace, as `serde_json`
/// writes it), in order: each key (unescaped) and the member's bytes, key
/// to the end of its value. `None` if the bytes are anything else.
fn compact_members(bytes: &[u8]) -> Option<Vec<(std::borrow::Cow<'_, str>, &[u8])>> {
    let end = bytes.len().checked_sub(1)?;
    if bytes.first() != Some(&b'{') || bytes[end] != b'}' {
        return None;
    }
    let mut members: Vec<(std::borrow::Cow<'_, str>, &[u8])> = Vec::with_capacity(16);
    let mut i = 1;
    while i < end {
        if !members.is_empty() {
            if bytes[i] != b',' {
                return None;
            }
            i += 1;
        }
        let start = i;
        let key_end = string_end(bytes, i)?;
        let raw = &bytes[i + 1..key_end - 1];
        let key = if raw.contains(&b'\\') {
            std::borrow::Cow::Owned(serde_json::from_slice::<String>(&bytes[i..key_end]).ok()?)
        } else {
            std::borrow::Cow::Borrowed(std::str::from_utf8(raw).ok()?)
        };
        if bytes.get(key_end) != Some(&b':') {
            return None;
        }
        i = value_end(bytes, key_end + 1, end)?;
        members.push((key, &bytes[start..i]));
    }
    (i == end).then_some(members)
}

/// The index after the JSON string starting at `bytes[i]` (a quote).
fn string_end(bytes: &[u8], i: usize) -> Option<usize> {
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match *bytes.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// The index after the compact JSON value starting at `bytes[i]`, which
/// ends before `limit`.
fn value_end(bytes: &[u8], i: usize, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < limit {
        match bytes[j] {
            b'"' => {
                j = string_end(bytes, j)?;
                if depth == 0 {
                    return Some(j);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            b',' if depth == 0 => return (j > i).then_some(j),
            b' ' | b'\n' | b'\r' | b'\t' => return None,
            _ => {}
        }
        j += 1;
    }
    (depth == 0 && j > i).then_some(j)
}

/// `None`: stubs only; `Some(n)`: inline data of attachments with
/// `revpos > n`.
fn inline_after(info: &DocInfo, rev: &Rev, opts: &ReadOptions) -> Option<u64> {
    if opts.attachments {
        return Some(0);
    }
    if opts.atts_since.is_empty() {
        return None;
    }
    let path = info.tree.path(rev);
    // The newest revision the client has that is an ancestor; none known
    // means the client has nothing, so everything is sent.
    Some(opts.atts_since.iter().filter(|r| path.contains(r)).map(|r| r.pos).max().unwrap_or(0))
}

fn render_attachments(kv: &dyn KvRead, atts: &Value, inline_after: Option<u64>) -> Result<Value> {
    let Some(atts) = atts.as_object() else { return Ok(atts.clone()) };
    let mut out = Map::new();
    for (name, meta) in atts {
        let mut meta = meta.as_object().cloned().unwrap_or_default();
        let revpos = meta.get("revpos").and_then(Value::as_u64).unwrap_or(0);
        match inline_after {
            Some(after) if revpos > after => {
                let digest = meta.get("digest").and_then(Value::as_str).unwrap_or_default();
                let data = crate::attachment_data::read_all(kv, digest)?;
                meta.insert("data".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(data)));
                // As couch_att:to_json: inline data carries no `length`
                // (a stub or data that follows does).
                meta.shift_remove("length");
            }
            _ => {
                meta.insert("stub".into(), Value::Bool(true));
            }
        }
        out.insert(name.clone(), Value::Object(couch_attachment_order(meta)));
    }
    Ok(Value::Object(out))
}

/// An attachment's members in the order `couch_att:to_json` writes them:
/// `content_type`, `revpos`, `digest`, then `length` and `stub` or `data`,
/// then the others (`encoding`, `encoded_length`).
fn couch_attachment_order(mut meta: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::with_capacity(meta.len());
    for key in ["content_type", "revpos", "digest", "length", "stub", "data"] {
        if let Some(v) = meta.shift_remove(key) {
            out.insert(key.to_owned(), v);
        }
    }
    out.extend(meta);
    out
}

impl Database {
    /// A document: the winner, or `opts.rev`. 404 `deleted` for a deleted
    /// winner, `missing` for an unknown document or revision.
    pub fn get_doc(&self, id: &str, opts: &ReadOptions) -> Result<Map<String, Value>> {
        self.get_doc_as(id, opts, render)
    }

    /// [`Database::get_doc`]'s document as the JSON bytes `serde_json`
    /// writes of it, a JSON body copied as stored (no value built), with
    /// its revision.
    pub fn get_doc_bytes(&self, id: &str, opts: &ReadOptions) -> Result<(Rev, Vec<u8>)> {
        self.get_doc_as(id, opts, |kv, id, info, rev, opts, s| Ok((rev.clone(), render_json(kv, id, info, rev, opts, s)?)))
    }

    /// A snapshot of the database, for several reads that must agree
    /// (`_bulk_get`: the `*_at` reads).
    pub fn read_snapshot(&self) -> Result<StoreSnapshot> {
        Ok(self.store.snapshot()?)
    }

    /// [`Database::get_doc_bytes`] at a snapshot.
    pub fn get_doc_bytes_at(&self, s: &StoreSnapshot, id: &str, opts: &ReadOptions) -> Result<(Rev, Vec<u8>)> {
        Self::get_doc_from(s, id, opts, |kv, id, info, rev, opts, s| Ok((rev.clone(), render_json(kv, id, info, rev, opts, s)?)))
    }

    /// [`Database::open_revs_bytes`] at a snapshot.
    pub fn open_revs_bytes_at(&self, s: &StoreSnapshot, id: &str, which: &OpenRevs, opts: &ReadOptions) -> Result<Vec<OpenRev<Vec<u8>>>> {
        self.open_revs_at(s, id, which, opts, render_json)
    }

    /// [`Database::get_doc`] as `snapshot` has it (an index mapping a
    /// batch of documents reads them all from one snapshot).
    pub fn get_doc_in(&self, snapshot: &StoreSnapshot, id: &str, opts: &ReadOptions) -> Result<Map<String, Value>> {
        Self::get_doc_from(snapshot, id, opts, render)
    }

    fn get_doc_as<T>(&self, id: &str, opts: &ReadOptions, render: impl Renderer<T>) -> Result<T> {
        Self::get_doc_from(&self.store.snapshot()?, id, opts, render)
    }

    fn get_doc_from<T>(s: &StoreSnapshot, id: &str, opts: &ReadOptions, render: impl Renderer<T>) -> Result<T> {
        let kv = s.kv();
        let info = doc_info(kv, id)?.ok_or(DocError::NotFound("missing"))?;
        let rev = match &opts.rev {
            None => {
                if info.deleted {
                    return Err(DocError::NotFound("deleted"));
                }
                info.winner.clone()
            }
            Some(r) if opts.latest => info.tree.leaves_under(r).first().map(|l| l.rev.clone()).ok_or(DocError::NotFound("missing"))?,
            Some(r) => r.clone(),
        };
        render(kv, id, &info, &rev, opts, Some(s))
    }

    /// The storage reads of [`Database::get_doc_json`] for a graph-bodied
    /// document, alone: its snapshot, document record, graph id and quads,
    /// with no term named and no JSON written. For `bench/graph`, which
    /// measures what the engine's layout allows a read at most; the
    /// number of quads read.
    #[doc(hidden)]
    pub fn read_storage_only(&self, id: &str) -> Result<usize> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let info_bytes = kv.get(DOCS, id.as_bytes())?.ok_or(DocError::NotFound("missing"))?;
        let header = DocInfo::header(&info_bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
        let iri = header.graph_body(id).ok_or_else(|| DocError::Corrupt(format!("{id:?} has no graph body")))?;
        Ok(crate::jsonld::graph_quads(kv, iri, &s)?.len())
    }

    /// The winner as [`Database::get_doc`] without options gives it, as
    /// the JSON bytes `serde_json` writes of that (byte for byte), with its
    /// revision: what `GET /{db}/{docid}` answers. A graph-bodied
    /// document is written straight from its quads' terms
    /// ([`crate::jsonld::write_graph_json`]) instead of being built as
    /// values first.
    pub fn get_doc_json(&self, id: &str) -> Result<(Rev, Vec<u8>)> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let info_bytes = kv.get(DOCS, id.as_bytes())?.ok_or(DocError::NotFound("missing"))?;
        // The winner without decoding the revision tree.
        let header = DocInfo::header(&info_bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
        if header.deleted {
            return Err(DocError::NotFound("deleted"));
        }
        let rev = header.winner.clone();
        if let Some(iri) = header.graph_body(id) {
            // The body is this graph alone: nothing else to read.
            let mut out = Vec::with_capacity(1024);
            write_id_rev(&mut out, id, &rev)?;
            out.extend_from_slice(b",\"@graph\":");
            crate::jsonld::write_graph_json(kv, iri, &s, &mut out)?;
            out.push(b'}');
            return Ok((rev, out));
        }
        let bytes = stored_body_of_header(kv, id, &header, &rev)?.ok_or(DocError::NotFound("missing"))?;
        // A JSON body with no attachment: its stored bytes with `_id` and
        // `_rev` put among its members, nothing parsed into values.
        let (id_value, rev_value) = (Value::String(id.to_owned()), Value::String(rev.text()));
        if let Some(out) = splice_members(&bytes, [("_id", &id_value), ("_rev", &rev_value)]) {
            return Ok((rev, out));
        }
        let mut stored: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| DocError::Corrupt(format!("body of {id} {rev}: {e}")))?;
        let iri = match stored.get(crate::jsonld::GRAPH_MARKER) {
            Some(Value::String(iri)) => iri.clone(),
            _ => {
                // A JSON body: what `render` gives a live winner with no
                // option, from the body read above (reading and parsing it
                // again, and decoding the revision tree, was a third of
                // such a read).
                let mut doc = Map::new();
                doc.insert("_id".into(), Value::String(id.to_owned()));
                doc.insert("_rev".into(), Value::String(rev.text()));
                let atts = stored.shift_remove("_attachments");
                doc.extend(stored);
                if let Some(atts) = atts {
                    doc.insert("_attachments".into(), render_attachments(kv, &atts, None)?);
                }
                let out = serde_json::to_vec(&doc).map_err(|e| DocError::Corrupt(e.to_string()))?;
                return Ok((rev, out));
            }
        };
        // The members `render` gives a graph-bodied winner, in CouchDB's
        // order: `_id`, `_rev`, `@graph`, then `_attachments` (stubs).
        let mut out = Vec::with_capacity(1024);
        write_id_rev(&mut out, id, &rev)?;
        out.extend_from_slice(b",\"@graph\":");
        crate::jsonld::write_graph_json(kv, &iri, &s, &mut out)?;
        if let Some(atts) = stored.shift_remove("_attachments") {
            out.extend_from_slice(b",\"_attachments\":");
            serde_json::to_writer(&mut out, &render_attachments(kv, &atts, None)?).map_err(|e| DocError::Corrupt(e.to_string()))?;
        }
        out.push(b'}');
        Ok((rev, out))
    }

    /// `open_revs=all` or a list of revisions.
    pub fn open_revs(&self, id: &str, which: &OpenRevs, opts: &ReadOptions) -> Result<Vec<OpenRev>> {
        self.open_revs_as(id, which, opts, render)
    }

    /// [`Database::open_revs`], each document as the JSON bytes
    /// `serde_json` writes of it (as [`Database::get_doc_bytes`]).
    pub fn open_revs_bytes(&self, id: &str, which: &OpenRevs, opts: &ReadOptions) -> Result<Vec<OpenRev<Vec<u8>>>> {
        self.open_revs_as(id, which, opts, render_json)
    }

    fn open_revs_as<T>(&self, id: &str, which: &OpenRevs, opts: &ReadOptions, render: impl Renderer<T>) -> Result<Vec<OpenRev<T>>> {
        self.open_revs_at(&self.store.snapshot()?, id, which, opts, render)
    }

    fn open_revs_at<T>(&self, s: &StoreSnapshot, id: &str, which: &OpenRevs, opts: &ReadOptions, render: impl Renderer<T>) -> Result<Vec<OpenRev<T>>> {
        let kv = s.kv();
        let info = doc_info(kv, id)?;
        let mut out = Vec::new();
        match which {
            OpenRevs::All => {
                let Some(info) = info else { return Err(DocError::NotFound("missing")) };
                for leaf in info.tree.leaves() {
                    out.push(OpenRev::Ok(render(kv, id, &info, &leaf.rev, opts, Some(s))?));
                }
            }
            OpenRevs::List(revs) => {
                // With `latest`, several revisions asked for can lead to the
                // same leaf; CouchDB answers each leaf once.
                let mut seen = std::collections::HashSet::new();
                for r in revs {
                    let Some(info) = &info else {
                        out.push(OpenRev::Missing(r.clone()));
                        continue;
                    };
                    let targets: Vec<Rev> = if opts.latest { info.tree.leaves_under(r).into_iter().map(|l| l.rev).collect() } else { vec![r.clone()] };
                    if targets.is_empty() {
                        out.push(OpenRev::Missing(r.clone()));
                    }
                    for t in targets {
                        if !seen.insert(t.clone()) {
                            continue;
                        }
                        match render(kv, id, info, &t, opts, Some(s)) {
                            Ok(doc) => out.push(OpenRev::Ok(doc)),
                            Err(DocError::NotFound(_)) => out.push(OpenRev::Missing(t)),
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// An attachment of the winner, or of `rev`, whole.
    pub fn attachment(&self, id: &str, name: &str, rev: Option<&Rev>) -> Result<Attachment> {
        let reader = self.attachment_reader(id, name, rev)?;
        let data = crate::attachment_data::read_all(reader.snapshot.kv(), &reader.digest)?;
        Ok(Attachment { content_type: reader.content_type, digest: reader.digest, data })
    }

    /// An attachment of the winner, or of `rev`, to be read a piece at a
    /// time.
    pub fn attachment_reader(&self, id: &str, name: &str, rev: Option<&Rev>) -> Result<AttachmentReader> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let info = doc_info(kv, id)?.ok_or(DocError::NotFound("missing"))?;
        let rev = match rev {
            Some(r) => r.clone(),
            None if info.deleted => return Err(DocError::NotFound("deleted")),
            None => info.winner.clone(),
        };
        let stored = body(kv, id, &info, &rev, Some(&s))?.ok_or(DocError::NotFound("missing"))?;
        let meta = stored.get("_attachments").and_then(|a| a.get(name)).ok_or(DocError::NotFound("Document is missing attachment"))?;
        let digest = meta.get("digest").and_then(Value::as_str).unwrap_or_default().to_owned();
        let length = meta.get("length").and_then(Value::as_u64).unwrap_or(0);
        let content_type = meta.get("content_type").and_then(Value::as_str).unwrap_or("application/octet-stream").to_owned();
        drop(stored);
        Ok(AttachmentReader { content_type, digest, length, snapshot: s })
    }

    /// `_revs_diff`: for each document, the given revisions the store lacks
    /// (https://docs.couchdb.org/en/stable/api/database/misc.html#db-revs-diff).
    pub fn revs_diff(&self, request: &Map<String, Value>) -> Result<Map<String, Value>> {
        let s = self.store.snapshot()?;
        let kv = s.kv();
        let mut out = Map::new();
        for (id, revs) in request {
            let Some(revs) = revs.as_array() else {
                return Err(DocError::BadRequest(format!("revisions of {id} must be an array")));
            };
            let revs: Vec<Rev> = revs.iter().filter_map(Value::as_str).filter_map(Rev::parse).collect();
            let info = doc_info(kv, id)?;
            let missing: Vec<&Rev> = revs.iter().filter(|r| !info.as_ref().is_some_and(|i| i.tree.contains(r))).collect();
            if missing.is_empty() {
                continue;
            }
            let mut entry = Map::new();
            entry.insert("missing".into(), missing.iter().map(|r| Value::String(r.to_string())).collect());
            if let Some(info) = &info {
                let max_pos = missing.iter().map(|r| r.pos).max().unwrap_or(0);
                let ancestors: Vec<Value> =
                    info.tree.leaves().into_iter().filter(|l| l.rev.pos < max_pos).map(|l| Value::String(l.rev.to_string())).collect();
                if !ancestors.is_empty() {
                    entry.insert("possible_ancestors".into(), Value::Array(ancestors));
                }
            }
            out.insert(id.clone(), Value::Object(entry));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The splice gives the bytes `serde_json` writes of the body with the
    /// read's members added where CouchDB puts them (`_id` and `_rev`
    /// first; `_revisions` and others as a replication read asks, after
    /// the body), and declines what it cannot copy as is.
    #[test]
    fn stored_bodies_are_spliced_to_the_bytes_of_the_document() {
        let rev = Rev::parse("3-0123456789abcdef0123456789abcdef").unwrap();
        let mut added = Map::new();
        added.insert("_id".into(), json!("d\"oc/1"));
        added.insert("_rev".into(), json!(rev.to_string()));
        let mut replication = added.clone();
        replication.insert("_conflicts".into(), json!(["2-aa"]));
        replication.insert("_revisions".into(), json!({"start": 3, "ids": ["0123", "ab"]}));
        replication.insert("_deleted".into(), json!(true));
        let splice = |stored: &[u8], added: &Map<String, Value>| splice_members(stored, added.iter().map(|(k, v)| (k.as_str(), v)));
        let bodies = [
            json!({}),
            json!({"a": 1}),
            json!({"^": [1, {"}": "]["}], "`": null, "AGE": -2.5e-300, "a": {"_x": "\"\\"}}),
            json!({"\"k\"": "\u{1}é\u{2028}", "k\\": {"n": [[], {}, [[true]]]}, "z": 18446744073709551615u64}),
        ];
        for body in bodies {
            let stored = serde_json::to_vec(&body).unwrap();
            for added in [&added, &replication] {
                // CouchDB's order: `_id`, `_rev`, the body, the others.
                let mut doc: Map<String, Value> = added.iter().take(2).map(|(k, v)| (k.clone(), v.clone())).collect();
                doc.extend(body.as_object().unwrap().clone());
                doc.extend(added.iter().skip(2).map(|(k, v)| (k.clone(), v.clone())));
                let spliced = splice(&stored, added).unwrap_or_else(|| panic!("declined {body}"));
                assert_eq!(String::from_utf8(spliced).unwrap(), serde_json::to_string(&doc).unwrap());
            }
        }
        for declined in [
            &br#"{"_attachments":{}}"#[..],
            br#"{"_graph":"http://example.org/g"}"#,
            br#"{"_id":"x"}"#,
            br#"{"AB":1,"_rev":"1-x"}"#,
            br#"{"a": 1}"#,
            br#"{"a":1}x"#,
            br#"{"a":1,}"#,
            br#"{"a":}"#,
            br#"{"a":1]}"#,
            br#"{"a":"1}"#,
            br#"[1]"#,
            b"",
        ] {
            assert_eq!(splice(declined, &added), None, "{}", String::from_utf8_lossy(declined));
        }
    }
}
