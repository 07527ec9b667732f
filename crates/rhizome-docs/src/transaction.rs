//! Transactions across documents and graphs (issue 45): three shapes of
//! one guarantee, that a request's writes are committed together or not
//! at all, on the store's one writer lock.
//!
//! - [`Database::write_atomic_in`]: `_bulk_docs` with `"all_or_nothing":
//!   true`. Every `_rev` is checked against the current winner before
//!   anything is written; one failure refuses the whole request.
//! - [`Database::apply_ops_in`]: the server-side transaction
//!   (`POST /{db}/_transaction`): reads and writes run where the data is,
//!   under the writer lock, so a read-modify-write needs no round trip per
//!   step and never conflicts with another (increments commute; the lock
//!   orders them). Group commit runs many of them in one fsync.
//! - [`DocTransaction`] ([`Database::begin`]): the in-process transaction
//!   of the Rust and Python APIs. Reads at a snapshot, buffers writes of
//!   documents and quads, and at commit validates (under the writer lock)
//!   that nothing it read or writes changed since its snapshot: optimistic
//!   concurrency, serialisable, a conflict when it lost.
//!
//! Each `*_in` function works inside a transaction its caller commits and
//! either leaves nothing of its request in it (`Ok(Err(..))`: refused) or
//! all of it (`Ok(Ok(..))`); an outer `Err` means the transaction holds a
//! part of the request and must be dropped, not committed.
//!
//! Around them: the server's group commit (`rhizome-server`'s
//! `group_commit.rs`) runs all-or-nothing writes and operation lists first
//! in a group's one store transaction (they can be re-run), plain writes
//! last; a request that aborts drops the group's transaction, runs alone
//! for its own answer, and the rest of the group runs again without it.
//! Snapshot reads make the optimistic pattern serialisable: `_all_docs`
//! with `keys` and `_bulk_get` read one snapshot ([`Database::read_snapshot`]
//! and the `*_at` reads), and `_find` with a JSON index takes a snapshot at
//! which its index is up to date (refreshing until one is; 503 after 64
//! tries under a write storm). [`DocTransaction::commit`] checks that every
//! document read or written still has its snapshot's winner (a graph counts
//! as its document; a quad pattern without a graph checks the database's
//! sequence): optimistic concurrency with backward validation.

use crate::member::member;
use crate::hot_docs::HotDocs;
use crate::keys::{meta, DocInfo, DB_META, DOCS};
use crate::read::render_winner;
use crate::write::WriteCheck;
use crate::{Database, DocError, EmptiedGraphs, PreparedDoc, ReadOptions, Result, Rev, Writer};
use oxrdf::{Quad, QuadRef, Term};
use rhizome_rdf::{QuadPattern, StoreSnapshot, StoreTransaction};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::ops::Deref;

/// The winner of a document in `kv` (deleted or not), `None` when it has
/// no record: what a transaction compares to see whether a document
/// changed. Read from the record's header, without decoding its tree.
fn winner_of(kv: &dyn rhizome_kv::KvRead, id: &str) -> Result<Option<(Rev, bool)>> {
    match kv.get(DOCS, id.as_bytes())? {
        Some(bytes) => {
            let h = DocInfo::header(&bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
            Ok(Some((h.winner.clone(), h.deleted)))
        }
        None => Ok(None),
    }
}

/// [`winner_of`] and the winner's document as a read gives it (`None`
/// when deleted), from one read of the record when it keeps its body.
/// `hot`: the writer's decoded records (`hot_docs.rs`), for a read under
/// the writer lock.
fn winner_and_doc(kv: &dyn rhizome_kv::KvRead, id: &str, snapshot: Option<&StoreSnapshot>, hot: Option<&HotDocs>) -> Result<Option<WinnerAndDoc>> {
    let Some(bytes) = kv.get(DOCS, id.as_bytes())? else { return Ok(None) };
    let h = DocInfo::header(&bytes).ok_or_else(|| DocError::Corrupt(format!("document info of {id:?}")))?;
    let doc = match (h.deleted, hot.and_then(|hot| hot.take_body(id, &bytes))) {
        (true, _) => None,
        // A plain body as `render_winner` gives it: `_id`, `_rev`, then
        // the body's members.
        (false, Some(body)) => {
            let mut doc = Map::with_capacity(body.len() + 2);
            doc.insert("_id".into(), Value::String(id.to_owned()));
            doc.insert("_rev".into(), Value::String(h.winner.text()));
            doc.extend(body);
            Some(doc)
        }
        (false, None) => Some(render_winner(kv, id, &h, snapshot)?.ok_or_else(|| DocError::Corrupt(format!("body of {id} {}", h.winner)))?),
    };
    Ok(Some(((h.winner.clone(), h.deleted), doc)))
}

type WinnerAndDoc = ((Rev, bool), Option<Map<String, Value>>);

fn id_of(doc: &Map<String, Value>) -> String {
    member(&doc, "_id").and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn rev_of(doc: &Map<String, Value>) -> Result<Option<Rev>> {
    match member(&doc, "_rev") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(r)) => Rev::parse(r).map(Some).ok_or_else(|| DocError::BadRequest(format!("Invalid rev format: {r}"))),
        Some(_) => Err(DocError::BadRequest("_rev must be a string".into())),
    }
}

/// Whether a write that names `given` (its `_rev`, or none) may replace
/// the current state `current`: the given revision must be the current
/// winner; a document with no live winner is written without one (or
/// with its deleted winner's).
fn rev_matches(given: Option<&Rev>, current: Option<&(Rev, bool)>) -> bool {
    match (given, current) {
        (None, None) => true,
        (None, Some((_, deleted))) => *deleted,
        (Some(g), Some((w, _))) => g == w,
        (Some(_), None) => false,
    }
}

/// The 409 a transaction gets when documents it depends on changed.
pub fn conflict_on(ids: &[String]) -> DocError {
    DocError::Coded { status: 409, error: "conflict", reason: format!("Document update conflict: {} changed since the transaction read it", ids.join(", ")) }
}

/// The outcome of an all-or-nothing write that was refused: each failing
/// document with its error (the others were not written either).
pub type Refusals = Vec<(String, DocError)>;

impl Database {
    /// `_bulk_docs` with `all_or_nothing`: every document of `docs` (with
    /// its preparation, from [`Database::prepare_docs`] with `new_edits`)
    /// written in `txn`, or none. Each `_rev` must be the current winner
    /// (409 otherwise); a document the projection refused, or one its
    /// preparation's writer may not write (`crate::rights`), refuses all.
    pub fn write_atomic_in(&self, txn: &mut StoreTransaction<'_>, docs: Vec<Map<String, Value>>, prepared: Vec<PreparedDoc>) -> Result<std::result::Result<Vec<(String, Rev)>, Refusals>> {
        let mut refused = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (doc, p) in docs.iter().zip(&prepared) {
            let id = id_of(doc);
            let rights = match id.starts_with("_local/") {
                true => crate::rights::check_local(&id, p.writer),
                false => crate::rights::check_document(&id, p.writer),
            };
            if let Err(e) = rights.and_then(|()| crate::validate_doc_id(&id)).and_then(|()| self.check_id_partition(&id)) {
                refused.push((id, e));
                continue;
            }
            if let Some(reason) = p.refusal() {
                refused.push((id.clone(), DocError::Validation(format!("{id}: {reason}"))));
                continue;
            }
            // Two edits of one document in one request: the second edits
            // a revision the first replaces, a conflict as in sequence.
            if !seen.insert(id.clone()) {
                refused.push((id, DocError::Conflict));
                continue;
            }
            let given = match rev_of(doc) {
                Ok(r) => r,
                Err(e) => {
                    refused.push((id, e));
                    continue;
                }
            };
            if !rev_matches(given.as_ref(), winner_of(txn.reader(), &id)?.as_ref()) {
                refused.push((id, DocError::Conflict));
            }
        }
        if !refused.is_empty() {
            return Ok(Err(refused));
        }
        let outcomes = self.write_prepared_in(txn, docs, prepared, true)?;
        let mut written = Vec::with_capacity(outcomes.len());
        for (id, outcome) in outcomes {
            match outcome {
                Ok(rev) => written.push((id, rev)),
                // Checked above; a failure here (a bad member, an id that
                // is another document's graph) leaves the others written
                // in `txn`, which must then be dropped.
                Err(e) => return Err(aborted(&id, &e)),
            }
        }
        Ok(Ok(written))
    }

    /// [`Database::write_atomic_in`] in a transaction of its own, by
    /// `writer`: written and durable, or refused with nothing written.
    pub fn write_atomic(&self, docs: Vec<Map<String, Value>>, writer: Writer) -> Result<std::result::Result<Vec<(String, Rev)>, Refusals>> {
        let prepared = self.prepare_docs(&docs, true, writer)?;
        let fetched = self.fetched_contexts(&docs);
        let mut txn = self.store.transaction()?;
        match self.write_atomic_in(&mut txn, docs.clone(), prepared) {
            Ok(Ok(written)) => {
                txn.commit()?;
                self.confirm_contexts(fetched, std::iter::repeat(true));
                Ok(Ok(written))
            }
            Ok(Err(refused)) => Ok(Err(refused)),
            Err(DocError::Coded { error: "aborted", .. }) => {
                // A document failed past the checks: each one's own error,
                // from a write of each alone that is never committed.
                drop(txn);
                Ok(Err(self.explain_refusal(docs, writer)?))
            }
            Err(e) => Err(e),
        }
    }

    /// Why an all-or-nothing write failed past its checks: each document
    /// written alone in a transaction that is dropped.
    pub fn explain_refusal(&self, docs: Vec<Map<String, Value>>, writer: Writer) -> Result<Refusals> {
        let prepared = self.prepare_docs(&docs, true, writer)?;
        let mut txn = self.store.transaction()?;
        let out = self.write_prepared_in(&mut txn, docs, prepared, true)?;
        drop(txn);
        Ok(out.into_iter().filter_map(|(id, o)| o.err().map(|e| (id, e))).collect())
    }

    /// A partitioned database's ids are `partition:docid` (checked here,
    /// before anything is staged, so that a bad id refuses the request
    /// rather than abort the group it was committed in).
    fn check_id_partition(&self, id: &str) -> Result<()> {
        match self.is_partitioned() {
            true => crate::partition::check_partitioned_id(id),
            false => Ok(()),
        }
    }

    /// Runs the operations of a server-side transaction in `txn`, in
    /// order, each seeing the ones before it (and every earlier request of
    /// the transaction): all their checks and reads first, then each
    /// document changed is written once. `check` sees every new revision
    /// and the one it replaces (validation functions); each document is
    /// written by `writer`, under `crate::rights`. Refused: the index of
    /// the operation and why; nothing is written.
    pub fn apply_ops_in(&self, txn: &mut StoreTransaction<'_>, ops: &[TxnOp], mut check: Option<WriteCheck<'_>>, writer: Writer) -> Result<std::result::Result<Vec<OpResult>, (usize, DocError)>> {
        struct Staged {
            winner: Option<(Rev, bool)>,
            doc: Option<Map<String, Value>>,
            old: Option<Map<String, Value>>,
            changed: bool,
        }
        // Seeded Fx rather than SipHash (a map lookup per operation and
        // per document written: 22 SipHash runs a TPC-B transaction).
        let mut staged: HashMap<&str, Staged, _> = HashMap::with_hasher(rhizome_kv::seeded_fx());
        let mut order: Vec<&str> = Vec::new();
        let mut results: Vec<(usize, Option<Map<String, Value>>)> = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let refuse = |e: DocError| Ok(Err((i, e)));
            if let Err(e) = self.check_id_partition(&op.id) {
                return refuse(e);
            }
            if !staged.contains_key(op.id.as_str()) {
                // The winner from the record's header, its body alone: a hot
                // document's revision tree is decoded once, by the write.
                let (winner, doc) = match winner_and_doc(txn.reader(), &op.id, None, Some(&self.hot_docs))? {
                    Some((w, doc)) => (Some(w), doc),
                    None => (None, None),
                };
                // The body before the transaction only for validation
                // functions (a clone of every document otherwise).
                let old = if check.is_some() { doc.clone() } else { None };
                staged.insert(&op.id, Staged { winner, old, doc, changed: false });
                order.push(&op.id);
            }
            let s = staged.get_mut(op.id.as_str()).expect("staged just above");
            if let Some(rev) = &op.rev {
                if s.winner.as_ref().map(|w| &w.0) != Some(rev) {
                    return refuse(DocError::Conflict);
                }
            }
            let returned = match &op.kind {
                OpKind::Get => match &s.doc {
                    Some(d) => Some(d.clone()),
                    None => return refuse(DocError::NotFound(if s.winner.is_some() { "deleted" } else { "missing" })),
                },
                OpKind::Inc(fields) => {
                    let Some(doc) = s.doc.as_mut() else {
                        return refuse(DocError::NotFound(if s.winner.is_some() { "deleted" } else { "missing" }));
                    };
                    for (name, by) in fields {
                        let sum = match add(doc.get(name), by) {
                            Ok(v) => v,
                            Err(reason) => return refuse(DocError::BadRequest(format!("{}: inc of {name}: {reason}", op.id))),
                        };
                        doc.insert(name.clone(), sum);
                    }
                    s.changed = true;
                    Some(doc.clone())
                }
                OpKind::Set(fields) => {
                    let doc = s.doc.get_or_insert_with(|| Map::from_iter([("_id".to_owned(), Value::String(op.id.clone()))]));
                    doc.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                    s.changed = true;
                    Some(doc.clone())
                }
                OpKind::Put(body) => {
                    if op.rev.is_none() && s.doc.is_some() {
                        // A replacement names what it replaces, as a PUT.
                        return refuse(DocError::Conflict);
                    }
                    let mut doc = body.clone();
                    doc.insert("_id".into(), Value::String(op.id.clone()));
                    if let Some(atts) = s.doc.as_ref().and_then(|d| d.get("_attachments")) {
                        doc.entry("_attachments").or_insert_with(|| atts.clone());
                    }
                    s.doc = Some(doc);
                    s.changed = true;
                    None
                }
                OpKind::Delete => {
                    if s.doc.take().is_none() {
                        return refuse(DocError::NotFound(if s.winner.is_some() { "deleted" } else { "missing" }));
                    }
                    s.changed = true;
                    None
                }
            };
            results.push((i, returned));
        }
        // Every check passed: the documents' new revisions.
        let mut docs = Vec::new();
        for id in &order {
            let s = staged.get_mut(id).expect("every id in order is staged");
            if !s.changed {
                continue;
            }
            if let Err(e) = crate::rights::check_document(id, writer) {
                return Ok(Err((ops.iter().position(|o| o.id == *id).unwrap_or(0), e)));
            }
            // The staged body is not read again (results hold their own).
            let mut doc = match s.doc.take() {
                Some(d) => d,
                None => Map::from_iter([("_deleted".to_owned(), Value::Bool(true))]),
            };
            doc.insert("_id".into(), Value::String((*id).to_owned()));
            match &s.winner {
                Some((w, false)) => {
                    doc.insert("_rev".into(), Value::String(w.text()));
                }
                _ => {
                    doc.remove("_rev");
                }
            }
            if let Some(check) = check.as_mut() {
                if let Err(e) = check(&doc, s.old.as_ref()) {
                    return Ok(Err((ops.iter().position(|o| o.id == *id).unwrap_or(0), e)));
                }
            }
            docs.push(doc);
        }
        let mut revs: HashMap<String, Rev, _> = HashMap::with_hasher(rhizome_kv::seeded_fx());
        if !docs.is_empty() {
            let prepared = self.prepare_docs_reading(txn.reader(), &docs, true, writer);
            if let Some((n, reason)) = prepared.iter().enumerate().find_map(|(n, p)| p.refusal().map(|r| (n, r.to_owned()))) {
                let id = id_of(&docs[n]);
                return Ok(Err((ops.iter().position(|o| o.id == id).unwrap_or(0), DocError::Validation(format!("{id}: {reason}")))));
            }
            for (id, outcome) in self.write_prepared_in(txn, docs, prepared, true)? {
                match outcome {
                    Ok(rev) => {
                        revs.insert(id, rev);
                    }
                    Err(e) => return Err(aborted(&id, &e)),
                }
            }
        }
        Ok(Ok(results
            .into_iter()
            .map(|(i, doc)| {
                let id = &ops[i].id;
                let rev = revs.get(id).cloned().or_else(|| staged[id.as_str()].winner.as_ref().map(|w| w.0.clone()));
                let doc = doc.map(|mut d| {
                    if let Some(r) = &rev {
                        d.insert("_rev".into(), Value::String(r.text()));
                    }
                    d
                });
                OpResult { id: id.clone(), rev, doc }
            })
            .collect()))
    }

    /// [`Database::apply_ops_in`] in a transaction of its own, committed
    /// when the operations pass; a refusal is the refused operation's
    /// error (nothing written).
    pub fn apply_ops(&self, ops: &[TxnOp], check: Option<WriteCheck<'_>>, writer: Writer) -> Result<std::result::Result<Vec<OpResult>, (usize, DocError)>> {
        let mut txn = self.store.transaction()?;
        match self.apply_ops_in(&mut txn, ops, check, writer)? {
            Ok(out) => {
                txn.commit()?;
                Ok(Ok(out))
            }
            Err(refused) => Ok(Err(refused)),
        }
    }

    /// Starts an in-process transaction at the current snapshot, as a
    /// database admin (in-process callers that own the data folder, as
    /// [`Database::update_docs`]).
    pub fn begin(&self) -> Result<DocTransaction<&Database>> {
        DocTransaction::new(self)
    }

    /// [`Database::begin`] by `writer`, under the rules of `crate::rights`.
    pub fn begin_as(&self, writer: Writer) -> Result<DocTransaction<&Database>> {
        DocTransaction::new_as(self, writer)
    }
}

/// The error of a request that failed past its checks with a part of it
/// already in the transaction (which must be dropped): see
/// [`is_aborted`].
fn aborted(id: &str, e: &DocError) -> DocError {
    DocError::Coded { status: 400, error: "aborted", reason: format!("{id}: {e}") }
}

/// Whether an error of a `*_in` function left a part of its request in
/// the transaction (a document failed after every check passed).
pub fn is_aborted(e: &DocError) -> bool {
    matches!(e, DocError::Coded { error: "aborted", .. })
}

/// `current + by` for `inc`: a missing member counts as 0; integers stay
/// integers while they fit in 64 bits.
fn add(current: Option<&Value>, by: &Value) -> std::result::Result<Value, String> {
    let by = by.as_number().ok_or("the increment is not a number")?;
    let current = match current {
        None | Some(Value::Null) => &Number::from(0),
        Some(Value::Number(n)) => n,
        Some(_) => return Err("the member is not a number".into()),
    };
    if let (Some(a), Some(b)) = (current.as_i64(), by.as_i64()) {
        return a.checked_add(b).map(Value::from).ok_or_else(|| "the sum overflows 64 bits".into());
    }
    let sum = current.as_f64().unwrap_or(0.0) + by.as_f64().unwrap_or(0.0);
    Number::from_f64(sum).map(Value::Number).ok_or_else(|| "the sum is not a finite number".into())
}

/// One operation of a server-side transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct TxnOp {
    pub id: String,
    /// A precondition: the document's current winner.
    pub rev: Option<Rev>,
    pub kind: OpKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// The document as it is at this point of the transaction.
    Get,
    /// Adds each number to the member of that name (missing: 0).
    Inc(Map<String, Value>),
    /// Sets members, creating the document if it does not exist.
    Set(Map<String, Value>),
    /// Replaces the body (a new document, or with `rev` an existing one).
    Put(Map<String, Value>),
    Delete,
}

/// What one operation answers: the document's revision after the
/// transaction, and for `get`, `inc` and `set` the document.
#[derive(Clone, Debug, PartialEq)]
pub struct OpResult {
    pub id: String,
    pub rev: Option<Rev>,
    pub doc: Option<Map<String, Value>>,
}

/// `{"id", "rev"?, "doc"?}`, each operation's entry of a `_transaction`
/// answer, written straight from the result (no `Value` copy of its
/// document: on TPC-B that copy was about 12k instructions a transaction).
impl serde::Serialize for OpResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        if let Some(rev) = &self.rev {
            m.serialize_entry("rev", &rev.text())?;
        }
        if let Some(doc) = &self.doc {
            m.serialize_entry("doc", doc)?;
        }
        m.end()
    }
}

/// Parses `{"ops": [...]}`: each operation an object with `id`, one of
/// `get` (true), `inc` (an object of numbers), `set` (an object), `put`
/// (an object), `delete` (true), and optionally `rev`. Members whose name
/// starts with `_` are not set through operations (attachments and
/// CouchDB's metadata have their own requests).
pub fn parse_ops(body: &Map<String, Value>) -> Result<Vec<TxnOp>> {
    let ops = body.get("ops").and_then(Value::as_array).ok_or_else(|| DocError::BadRequest("the body must hold `ops`, an array of operations".into()))?;
    if ops.is_empty() {
        return Err(DocError::BadRequest("`ops` is empty".into()));
    }
    ops.iter().enumerate().map(|(i, op)| parse_op(i, op)).collect()
}

fn parse_op(i: usize, op: &Value) -> Result<TxnOp> {
    let bad = |m: String| DocError::BadRequest(format!("ops[{i}]: {m}"));
    let op = op.as_object().ok_or_else(|| bad("an operation is an object".into()))?;
    let id = op.get("id").and_then(Value::as_str).ok_or_else(|| bad("`id` (a string) is required".into()))?.to_owned();
    crate::validate_doc_id(&id).map_err(|e| bad(e.to_string()))?;
    let rev = match op.get("rev") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(Rev::parse(r).ok_or_else(|| bad(format!("invalid rev {r:?}")))?),
        Some(_) => return Err(bad("`rev` must be a string".into())),
    };
    let members = |name: &str, v: &Value| -> Result<Map<String, Value>> {
        let m = v.as_object().ok_or_else(|| bad(format!("`{name}` must be an object")))?;
        if let Some(k) = m.keys().find(|k| k.starts_with('_')) {
            return Err(bad(format!("`{name}` cannot set the special member {k}")));
        }
        Ok(m.clone())
    };
    let mut kinds = Vec::new();
    for (name, v) in op {
        match name.as_str() {
            "id" | "rev" => {}
            "get" if v == &Value::Bool(true) => kinds.push(OpKind::Get),
            "delete" if v == &Value::Bool(true) => kinds.push(OpKind::Delete),
            "inc" => {
                let m = members(name, v)?;
                if let Some((k, _)) = m.iter().find(|(_, n)| !n.is_number()) {
                    return Err(bad(format!("`inc` of {k} is not a number")));
                }
                kinds.push(OpKind::Inc(m));
            }
            "set" => kinds.push(OpKind::Set(members(name, v)?)),
            "put" => kinds.push(OpKind::Put(members(name, v)?)),
            other => return Err(bad(format!("unknown member {other:?} (an operation is one of get, inc, set, put, delete)"))),
        }
    }
    match (kinds.pop(), kinds.is_empty()) {
        (Some(kind), true) => Ok(TxnOp { id, rev, kind }),
        _ => Err(bad("an operation has exactly one of get, inc, set, put, delete".into())),
    }
}

/// An in-process transaction ([`Database::begin`]): reads at the snapshot
/// it started from (and its own writes), buffers documents and quads, and
/// [`DocTransaction::commit`] writes them all in one durable commit, or
/// none with a 409 conflict when a document it read or writes changed
/// since its snapshot (optimistic concurrency: serialisable, and a reader
/// never waits). A graph counts as its document: reading its quads reads
/// the document. Dropping it without commit writes nothing.
pub struct DocTransaction<D: Deref<Target = Database>> {
    db: D,
    snapshot: StoreSnapshot,
    base_seq: u64,
    /// Every document read or written, with its winner at the snapshot.
    seen: HashMap<String, Option<(Rev, bool)>>,
    /// A read of quads in every graph: any later write conflicts.
    reads_all: bool,
    docs: Vec<Map<String, Value>>,
    /// (insert, quad), in order.
    quads: Vec<(bool, Quad)>,
    /// Whose rights the writes are made with (`crate::rights`).
    writer: Writer,
}

impl<D: Deref<Target = Database>> DocTransaction<D> {
    /// A transaction on a database held by `db` (`&Database`, or an
    /// `Arc<Database>` for one that outlives a borrow: Python's), as a
    /// database admin (in-process callers that own the data folder).
    pub fn new(db: D) -> Result<Self> {
        Self::new_as(db, Writer::Admin)
    }

    /// [`DocTransaction::new`] by `writer`: its documents and graph writes
    /// are refused at commit where `crate::rights` refuses them.
    pub fn new_as(db: D, writer: Writer) -> Result<Self> {
        let snapshot = db.store.snapshot()?;
        let base_seq = crate::keys::u64_value(snapshot.kv().get(DB_META, meta::UPDATE_SEQ)?, "update_seq")?;
        Ok(DocTransaction { db, snapshot, base_seq, seen: HashMap::new(), reads_all: false, docs: Vec::new(), quads: Vec::new(), writer })
    }

    /// The database the transaction writes to.
    pub fn database(&self) -> &D {
        &self.db
    }

    /// The snapshot the transaction reads.
    pub fn snapshot(&self) -> &StoreSnapshot {
        &self.snapshot
    }

    fn note(&mut self, id: &str) -> Result<Option<(Rev, bool)>> {
        if let Some(w) = self.seen.get(id) {
            return Ok(w.clone());
        }
        let w = winner_of(self.snapshot.kv(), id)?;
        self.seen.insert(id.to_owned(), w.clone());
        Ok(w)
    }

    /// The document `id` (its winner at the snapshot, or this
    /// transaction's own write of it); `None` when missing or deleted.
    pub fn get(&mut self, id: &str) -> Result<Option<Map<String, Value>>> {
        self.note(id)?;
        if let Some(own) = self.docs.iter().rev().find(|d| id_of(d) == id) {
            return Ok((own.get("_deleted") != Some(&Value::Bool(true))).then(|| own.clone()));
        }
        match self.seen.get(id).cloned().flatten() {
            Some((_, false)) => Ok(winner_and_doc(self.snapshot.kv(), id, Some(&self.snapshot), None)?.and_then(|(_, doc)| doc)),
            _ => Ok(None),
        }
    }

    /// Writes a document (with `_id`; `_rev`, when given, must be its
    /// winner at the snapshot). A later write of the same id replaces it.
    pub fn put(&mut self, doc: Map<String, Value>) -> Result<()> {
        let id = id_of(&doc);
        crate::validate_doc_id(&id)?;
        self.db.check_id_partition(&id)?;
        rev_of(&doc)?;
        self.note(&id)?;
        self.docs.retain(|d| id_of(d) != id);
        self.docs.push(doc);
        Ok(())
    }

    /// Deletes the document `id` (missing or deleted: 404).
    pub fn delete(&mut self, id: &str) -> Result<()> {
        if self.get(id)?.is_none() {
            return Err(DocError::NotFound("missing"));
        }
        self.put(Map::from_iter([("_id".to_owned(), Value::String(id.to_owned())), ("_deleted".to_owned(), Value::Bool(true))]))
    }

    /// Adds a quad (its graph becomes a new revision of its document).
    pub fn insert_quad(&mut self, quad: QuadRef<'_>) {
        self.quads.push((true, quad.into_owned()));
    }

    /// Removes a quad.
    pub fn remove_quad(&mut self, quad: QuadRef<'_>) {
        self.quads.push((false, quad.into_owned()));
    }

    /// The quads matching a pattern at the snapshot (without this
    /// transaction's own quad changes). Reading a named graph reads its
    /// document; reading across graphs conflicts with any later write.
    pub fn quads(&mut self, s: Option<&Term>, p: Option<&Term>, o: Option<&Term>, g: Option<&Term>) -> Result<Vec<Quad>> {
        match g {
            Some(Term::NamedNode(iri)) => {
                let id = self.db.projector.doc_id(iri.as_str()).unwrap_or_else(|| iri.as_str().to_owned());
                self.note(&id)?;
            }
            _ => self.reads_all = true,
        }
        let mut ids = [None; 4];
        for (slot, term) in ids.iter_mut().zip([s, p, o, g]) {
            if let Some(t) = term {
                match self.snapshot.lookup(t.as_ref())? {
                    Some(id) => *slot = Some(id),
                    None => return Ok(Vec::new()),
                }
            }
        }
        let pattern = QuadPattern { s: ids[0], p: ids[1], o: ids[2], g: ids[3] };
        let mut out = Vec::new();
        for q in self.snapshot.scan(pattern) {
            let q = q?;
            let mut terms = Vec::with_capacity(4);
            for id in q {
                terms.push(self.snapshot.decode(id)?.ok_or_else(|| DocError::Corrupt(format!("term {id:?} without a dictionary entry")))?);
            }
            let [s, p, o, g]: [Term; 4] = terms.try_into().expect("four terms");
            let subject = match s {
                Term::NamedNode(n) => oxrdf::NamedOrBlankNode::NamedNode(n),
                Term::BlankNode(b) => oxrdf::NamedOrBlankNode::BlankNode(b),
                _ => continue,
            };
            let Term::NamedNode(predicate) = p else { continue };
            let graph = match g {
                Term::NamedNode(n) => oxrdf::GraphName::NamedNode(n),
                Term::BlankNode(b) => oxrdf::GraphName::BlankNode(b),
                _ => oxrdf::GraphName::DefaultGraph,
            };
            out.push(Quad::new(subject, predicate, o, graph));
        }
        Ok(out)
    }

    /// Commits: under the writer lock, checks that every document read or
    /// written still has its snapshot's winner (and, after a read across
    /// graphs, that nothing was written at all), then writes the quads
    /// (each graph changed a new revision of its document, shown to
    /// `check`), then the documents (each shown to `check`), in one
    /// durable commit. A conflict is a 409 naming the documents; nothing
    /// is written. Returns each document written with its new revision.
    pub fn commit(self, mut check: Option<WriteCheck<'_>>) -> Result<Vec<(String, Rev)>> {
        let DocTransaction { db, snapshot, base_seq, seen, reads_all, mut docs, quads, writer } = self;
        drop(snapshot);
        let db: &Database = &db;
        // A document's `_rev`, when given, must be the winner it read; the
        // write edits that winner (the check below makes sure it still is).
        for doc in &mut docs {
            let id = id_of(doc);
            let then = seen.get(&id).and_then(Option::as_ref);
            if let Some(given) = rev_of(doc)? {
                if then.map(|w| &w.0) != Some(&given) {
                    return Err(conflict_on(&[id]));
                }
            }
            match then {
                Some((w, false)) => {
                    doc.insert("_rev".into(), Value::String(w.text()));
                }
                _ => {
                    doc.remove("_rev");
                }
            }
        }
        for doc in &docs {
            crate::rights::check_document(&id_of(doc), writer)?;
        }
        let prepared = db.prepare_docs(&docs, true, writer)?;
        let fetched = db.fetched_contexts(&docs);
        let mut txn = db.store.transaction()?;
        let mut changed: Vec<String> = Vec::new();
        for (id, then) in &seen {
            if winner_of(txn.reader(), id)? != *then {
                changed.push(id.clone());
            }
        }
        if reads_all && crate::keys::u64_value(txn.kv().get(DB_META, meta::UPDATE_SEQ)?, "update_seq")? != base_seq {
            changed.push("(a read across graphs)".into());
        }
        if !changed.is_empty() {
            changed.sort();
            return Err(conflict_on(&changed));
        }
        if !quads.is_empty() {
            for (insert, quad) in &quads {
                let ids = txn.encode_quad(quad.as_ref())?;
                if *insert {
                    txn.insert(&ids)?;
                } else {
                    txn.remove(&ids)?;
                }
            }
            // The documents of the graphs changed: they must not also be
            // written as JSON here (one new revision per document).
            let mut graph_docs = Vec::new();
            for graph in txn.touched_graphs().to_vec() {
                if let Some(Term::NamedNode(iri)) = rhizome_rdf::term::Dictionary::decode(txn.reader(), graph)? {
                    graph_docs.push(db.projector.doc_id(iri.as_str()).unwrap_or_else(|| iri.as_str().to_owned()));
                }
            }
            if let Some(id) = docs.iter().map(id_of).find(|id| graph_docs.contains(id)) {
                return Err(DocError::BadRequest(format!("{id}: a transaction writes a document either as JSON or through its graph, not both")));
            }
            let reborrowed: Option<WriteCheck<'_>> = match &mut check {
                Some(c) => Some(&mut **c),
                None => None,
            };
            db.record_graph_writes_in(&mut txn, EmptiedGraphs::KeepDocumentData, reborrowed, writer)?;
        }
        if let Some(check) = check.as_mut() {
            for doc in &docs {
                let id = id_of(doc);
                let old = match seen.get(&id).and_then(Option::as_ref) {
                    Some((_, false)) => Some(db.get_doc(&id, &ReadOptions::default())?),
                    _ => None,
                };
                check(doc, old.as_ref())?;
            }
        }
        let mut written = Vec::with_capacity(docs.len());
        if !docs.is_empty() {
            for (id, outcome) in db.write_prepared_in(&mut txn, docs, prepared, true)? {
                written.push((id, outcome?));
            }
        }
        txn.commit()?;
        db.confirm_contexts(fetched, std::iter::repeat(true));
        Ok(written)
    }
}
