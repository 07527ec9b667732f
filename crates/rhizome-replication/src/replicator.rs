//! The replicator: read the source's changes in batches, ask the target
//! which revisions it lacks, copy those with their history, record a
//! checkpoint on both sides; in continuous mode, wait for more and go on.
//! (https://docs.couchdb.org/en/stable/replication/protocol.html)

use crate::endpoint::{Endpoint, Filter, Wanted};
use crate::{Error, Result};
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many checkpoint sessions a checkpoint document remembers.
const HISTORY: usize = 50;

#[derive(Clone, Debug)]
pub struct Options {
    /// Keep going: wait for new changes on the source and replicate them.
    pub continuous: bool,
    /// Create the target database when it does not exist.
    pub create_target: bool,
    /// Changes read per batch (CouchDB's replicator reads 500).
    pub batch_size: usize,
    /// In continuous mode, how long one wait for changes lasts before the
    /// progress callback is asked whether to go on.
    pub poll: Duration,
    /// Only these documents (a filtered replication has checkpoints of its own).
    pub filter: Option<Filter>,
}

impl Default for Options {
    fn default() -> Options {
        Options { continuous: false, create_target: false, batch_size: 500, poll: Duration::from_secs(10), filter: None }
    }
}

/// What a replication did, in the terms of CouchDB's replication history.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub replication_id: String,
    pub session_id: String,
    /// Where this run started (from the checkpoint) and where it is now.
    pub start_last_seq: Value,
    pub source_last_seq: Value,
    /// Revisions the source listed, and those the target lacked.
    pub missing_checked: u64,
    pub missing_found: u64,
    pub docs_read: u64,
    pub docs_written: u64,
    pub doc_write_failures: u64,
    /// The first few refusals, as `id: error: reason`.
    pub failures: Vec<String>,
    /// In continuous mode, the failure the replication is waiting out.
    pub error: Option<String>,
}

impl Report {
    /// This session as an entry of CouchDB's replication `history`.
    pub fn history_entry(&self) -> Value {
        json!({
            "session_id": self.session_id,
            "start_last_seq": self.start_last_seq,
            "end_last_seq": self.source_last_seq,
            "recorded_seq": self.source_last_seq,
            "missing_checked": self.missing_checked,
            "missing_found": self.missing_found,
            "docs_read": self.docs_read,
            "docs_written": self.docs_written,
            "doc_write_failures": self.doc_write_failures,
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ok": true,
            "replication_id": self.replication_id,
            "session_id": self.session_id,
            "start_last_seq": self.start_last_seq,
            "source_last_seq": self.source_last_seq,
            "missing_checked": self.missing_checked,
            "missing_found": self.missing_found,
            "docs_read": self.docs_read,
            "docs_written": self.docs_written,
            "doc_write_failures": self.doc_write_failures,
        })
    }
}

/// The id of the checkpoint documents of replications from `source` to
/// `target` (through `filter`): the same replication resumes where it stopped.
pub fn replication_id(source: &dyn Endpoint, target: &dyn Endpoint, filter: Option<&Filter>) -> String {
    let filter = match filter {
        None => String::new(),
        Some(Filter::DocIds(ids)) => {
            let mut ids = ids.clone();
            ids.sort();
            format!("\ndoc_ids {}", json!(ids))
        }
        Some(Filter::Selector(s)) => format!("\nselector {s}"),
        Some(Filter::Design { name, query_params }) => format!("\nfilter {name} {}", Value::Object(query_params.clone())),
    };
    hex(&Md5::digest(format!("rhizome-replication 1\n{}\n{}{filter}", source.name(), target.name()).as_bytes()))
}

/// Replicates every revision of `source` that `target` lacks. `progress` is
/// called after each batch and each wait; returning `false` stops (the last
/// checkpoint stands, so a later run goes on from there).
pub fn replicate(source: &dyn Endpoint, target: &dyn Endpoint, options: &Options, progress: &mut dyn FnMut(&Report) -> bool) -> Result<Report> {
    let id = replication_id(source, target, options.filter.as_ref());
    let now = unix_time();
    let mut report = Report {
        session_id: hex(&Md5::digest(format!("{id} {:?} {}", SystemTime::now(), std::process::id()).as_bytes())),
        replication_id: id.clone(),
        ..Default::default()
    };
    let mut backoff = RETRY_FIRST;
    // A continuous replication outlives an endpoint's restart or a network
    // failure, from its very start: it waits, longer each time, and goes
    // on from its last checkpoint.
    let mut checkpoint = loop {
        let setup = || -> Result<Checkpoint> {
            source.ensure_exists(false)?;
            target.ensure_exists(options.create_target)?;
            Checkpoint::read(source, target, &id)
        };
        match setup() {
            Ok(c) => break c,
            Err(e) if options.continuous && e.is_transient() => {
                if !wait_out(e, &mut report, &mut backoff, progress) {
                    return Ok(report);
                }
            }
            Err(e) => return Err(e),
        }
    };
    report.start_last_seq = checkpoint.start.clone();
    report.source_last_seq = checkpoint.start.clone();
    report.error = None;
    backoff = RETRY_FIRST;
    let batch_size = options.batch_size.max(1);
    loop {
        match step(source, target, options, batch_size, &mut checkpoint, &mut report, now) {
            Ok(caught_up) => {
                backoff = RETRY_FIRST;
                report.error = None;
                if !progress(&report) || (caught_up && !options.continuous) {
                    return Ok(report);
                }
            }
            Err(e) if options.continuous && e.is_transient() => {
                checkpoint.stale = true;
                if !wait_out(e, &mut report, &mut backoff, progress) {
                    return Ok(report);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reports a transient failure and waits before the next try; `false` when
/// the caller asked to stop instead.
fn wait_out(e: Error, report: &mut Report, backoff: &mut Duration, progress: &mut dyn FnMut(&Report) -> bool) -> bool {
    report.error = Some(e.to_string());
    if !progress(report) {
        return false;
    }
    std::thread::sleep(*backoff);
    *backoff = (*backoff * 2).min(RETRY_MAX);
    true
}

/// The first wait after a failed step, and the longest.
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_MAX: Duration = Duration::from_secs(10);

/// One batch: changes, missing revisions, copies, checkpoint. `Ok(true)`
/// when the source had no more changes than these.
fn step(
    source: &dyn Endpoint,
    target: &dyn Endpoint,
    options: &Options,
    batch_size: usize,
    checkpoint: &mut Checkpoint,
    report: &mut Report,
    start_time: u64,
) -> Result<bool> {
    if checkpoint.stale {
        // After a failure the `_rev`s we hold may be out of date (a write
        // whose answer was lost), so read them again.
        checkpoint.source_doc = source.get_local(&checkpoint.id)?;
        checkpoint.target_doc = target.get_local(&checkpoint.id)?;
        checkpoint.stale = false;
    }
    let wait = options.continuous.then_some(options.poll);
    let filter = options.filter.as_ref();
    let changes = source.changes(&report.source_last_seq, batch_size, filter, None)?;
    let changes = if changes.rows.is_empty() && wait.is_some() { source.changes(&report.source_last_seq, batch_size, filter, wait)? } else { changes };
    let full = changes.rows.len() + changes.skipped.len() >= batch_size || changes.cut;
    for failure in &changes.skipped {
        report.doc_write_failures += 1;
        if report.failures.len() < 10 {
            report.failures.push(format!("{}: {}: {}", failure.id, failure.error, failure.reason));
        }
    }
    if !changes.rows.is_empty() {
        copy_batch(source, target, &changes.rows, report)?;
    }
    if changes.last_seq != report.source_last_seq && !changes.last_seq.is_null() {
        report.source_last_seq = changes.last_seq;
        checkpoint.write(source, target, report, start_time)?;
    }
    Ok(!full)
}

/// Copies the revisions of one batch of changes that the target lacks.
fn copy_batch(source: &dyn Endpoint, target: &dyn Endpoint, rows: &[Value], report: &mut Report) -> Result<()> {
    let mut asked = Map::new();
    for row in rows {
        let (Some(id), Some(changes)) = (row.get("id").and_then(Value::as_str), row.get("changes").and_then(Value::as_array)) else {
            return Err(Error::Protocol { endpoint: source.name(), reason: format!("a _changes row without id or changes: {row}") });
        };
        let revs: Vec<Value> = changes.iter().filter_map(|c| c.get("rev").cloned()).collect();
        report.missing_checked += revs.len() as u64;
        asked.insert(id.to_owned(), Value::Array(revs));
    }
    let diff = target.revs_diff(&asked)?;
    let strings = |v: Option<&Value>| -> Vec<String> { v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect() };
    let wanted: Vec<Wanted> = diff
        .iter()
        .map(|(id, entry)| Wanted { id: id.clone(), revs: strings(entry.get("missing")), atts_since: strings(entry.get("possible_ancestors")) })
        .filter(|w| !w.revs.is_empty())
        .collect();
    report.missing_found += wanted.iter().map(|w| w.revs.len() as u64).sum::<u64>();
    // Bodies with inline attachments can be large: fetch in slices of at
    // most 100 revisions (PouchDB's batch size), fewer while the revisions
    // fetched are large, so that a slice holds about `STORE_BYTES`.
    let mut per_fetch = 100;
    let mut slice = Vec::new();
    let mut in_slice = 0;
    let mut wanted = wanted.into_iter().peekable();
    while let Some(w) = wanted.next() {
        in_slice += w.revs.len();
        slice.push(w);
        if in_slice >= per_fetch || wanted.peek().is_none() {
            let bytes = copy_revisions(source, target, &std::mem::take(&mut slice), report)?;
            let per_rev = bytes / in_slice.max(1);
            per_fetch = (STORE_BYTES / per_rev.max(1)).clamp(1, 100);
            in_slice = 0;
        }
    }
    Ok(())
}

/// At most this much JSON per write to the target, so that revisions with
/// large attachments stay under servers' request limits (ours is 64 MiB).
const STORE_BYTES: usize = 8 << 20;

/// Fetches and stores `wanted`; the bytes of JSON fetched.
fn copy_revisions(source: &dyn Endpoint, target: &dyn Endpoint, wanted: &[Wanted], report: &mut Report) -> Result<usize> {
    let docs = match source.fetch(wanted) {
        Ok(docs) => docs,
        // An answer past the replication's answer limit: asked again in
        // halves, down to one revision, which is then reported (a
        // document past the limit is not copied).
        Err(Error::TooLarge { reason, .. }) => {
            let revs: usize = wanted.iter().map(|w| w.revs.len()).sum();
            if revs <= 1 {
                report.doc_write_failures += 1;
                if report.failures.len() < 10 {
                    report.failures.push(format!("{}: too_large: {reason}", wanted.first().map_or("", |w| w.id.as_str())));
                }
                return Ok(0);
            }
            let halves: Vec<Vec<Wanted>> = if wanted.len() > 1 {
                let (a, b) = wanted.split_at(wanted.len() / 2);
                vec![a.to_vec(), b.to_vec()]
            } else {
                let w = &wanted[0];
                let (a, b) = w.revs.split_at(w.revs.len() / 2);
                vec![vec![Wanted { revs: a.to_vec(), ..w.clone() }], vec![Wanted { revs: b.to_vec(), ..w.clone() }]]
            };
            let mut bytes = 0;
            for half in halves {
                bytes += copy_revisions(source, target, &half, report)?;
            }
            return Ok(bytes);
        }
        Err(e) => return Err(e),
    };
    report.docs_read += docs.len() as u64;
    let mut batch = Vec::new();
    let (mut bytes, mut total) = (0, 0);
    for doc in docs {
        let size = serde_json::to_string(&doc).map(|t| t.len()).unwrap_or(0);
        total += size;
        if !batch.is_empty() && bytes + size > STORE_BYTES {
            store(target, std::mem::take(&mut batch), report)?;
            bytes = 0;
        }
        bytes += size;
        batch.push(doc);
    }
    if !batch.is_empty() {
        store(target, batch, report)?;
    }
    Ok(total)
}

fn store(target: &dyn Endpoint, docs: Vec<Value>, report: &mut Report) -> Result<()> {
    let n = docs.len() as u64;
    let failures = target.store(docs)?;
    report.doc_write_failures += failures.len() as u64;
    report.docs_written += n - failures.len() as u64;
    for f in failures.iter().take(10usize.saturating_sub(report.failures.len())) {
        report.failures.push(format!("{}: {}: {}", f.id, f.error, f.reason));
    }
    Ok(())
}

/// The `_local/<replication id>` documents on both sides.
struct Checkpoint {
    id: String,
    source_doc: Option<Map<String, Value>>,
    target_doc: Option<Map<String, Value>>,
    /// The sequence to start from: the last one both sides agree on.
    start: Value,
    /// Whether the documents must be read again before the next write.
    stale: bool,
}

impl Checkpoint {
    fn read(source: &dyn Endpoint, target: &dyn Endpoint, id: &str) -> Result<Checkpoint> {
        let source_doc = source.get_local(id)?;
        let target_doc = target.get_local(id)?;
        let start = match (&source_doc, &target_doc) {
            (Some(s), Some(t)) => agreed_seq(s, t),
            _ => json!(0),
        };
        Ok(Checkpoint { id: id.to_owned(), source_doc, target_doc, start, stale: false })
    }

    /// Records `report.source_last_seq` on the target, then the source: a
    /// crash between the two leaves them disagreeing on the newest session,
    /// and the next run falls back to the newest session both recorded.
    fn write(&mut self, source: &dyn Endpoint, target: &dyn Endpoint, report: &Report, start_time: u64) -> Result<()> {
        for (endpoint, doc) in [(target, &mut self.target_doc), (source, &mut self.source_doc)] {
            let mut history: Vec<Value> = doc.as_ref().and_then(|d| d.get("history")).and_then(Value::as_array).cloned().unwrap_or_default();
            history.retain(|h| h.get("session_id").and_then(Value::as_str) != Some(&report.session_id));
            let mut entry = report.history_entry();
            entry["start_time"] = json!(start_time);
            entry["end_time"] = json!(unix_time());
            history.insert(0, entry);
            history.truncate(HISTORY);
            let mut new = Map::new();
            if let Some(rev) = doc.as_ref().and_then(|d| d.get("_rev")) {
                new.insert("_rev".into(), rev.clone());
            }
            new.insert("session_id".into(), json!(report.session_id));
            new.insert("source_last_seq".into(), report.source_last_seq.clone());
            new.insert("history".into(), Value::Array(history));
            endpoint.put_local(&self.id, &new)?;
            // The `_rev` the next write must name.
            *doc = endpoint.get_local(&self.id)?;
        }
        Ok(())
    }
}

/// The newest sequence both checkpoints recorded: the same last session, or
/// else the newest session found in both histories, or else the beginning.
fn agreed_seq(source: &Map<String, Value>, target: &Map<String, Value>) -> Value {
    let session = |d: &Map<String, Value>| d.get("session_id").and_then(Value::as_str).map(str::to_owned);
    if session(source).is_some() && session(source) == session(target) {
        return source.get("source_last_seq").cloned().unwrap_or(json!(0));
    }
    let history = |d: &Map<String, Value>| d.get("history").and_then(Value::as_array).cloned().unwrap_or_default();
    let target_sessions: Vec<Value> = history(target).iter().filter_map(|h| h.get("session_id").cloned()).collect();
    history(source)
        .iter()
        .find(|h| h.get("session_id").is_some_and(|s| target_sessions.contains(s)))
        .and_then(|h| h.get("recorded_seq").cloned())
        .unwrap_or(json!(0))
}

fn unix_time() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalEndpoint;
    use rhizome_docs::{Database, ReadOptions};

    fn doc(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn endpoint(name: &str) -> LocalEndpoint {
        LocalEndpoint::new(Database::memory(), name)
    }

    fn put(e: &LocalEndpoint, v: Value) -> String {
        let out = e.database().update_docs(vec![doc(v)], true).unwrap();
        out[0].1.as_ref().unwrap().to_string()
    }

    fn leaves(e: &LocalEndpoint, id: &str) -> Vec<String> {
        let d = e.database().get_doc(id, &ReadOptions { conflicts: true, ..Default::default() }).unwrap();
        let mut revs = vec![d["_rev"].as_str().unwrap().to_owned()];
        revs.extend(d.get("_conflicts").and_then(Value::as_array).into_iter().flatten().map(|r| r.as_str().unwrap().to_owned()));
        revs
    }

    fn run(source: &LocalEndpoint, target: &LocalEndpoint) -> Report {
        replicate(source, target, &Options { batch_size: 3, ..Default::default() }, &mut |_| true).unwrap()
    }

    #[test]
    fn copies_every_revision_then_resumes_from_its_checkpoint() {
        let (a, b) = (endpoint("a"), endpoint("b"));
        for i in 0..10 {
            put(&a, json!({ "_id": format!("d{i}"), "n": i }));
        }
        let rev = put(&a, json!({ "_id": "d0", "n": 100, "_rev": leaves(&a, "d0")[0] }));
        put(&a, json!({ "_id": "gone" }));
        let gone = leaves(&a, "gone")[0].clone();
        put(&a, json!({ "_id": "gone", "_rev": gone, "_deleted": true }));
        let first = run(&a, &b);
        assert_eq!((first.docs_written, first.doc_write_failures), (11, 0));
        assert_eq!(leaves(&b, "d0"), vec![rev]);
        assert!(b.database().get_doc("gone", &ReadOptions::default()).is_err());
        assert_eq!(b.database().info().unwrap().doc_count, 10);
        // Nothing new: the checkpoint says where the last run stopped.
        let second = run(&a, &b);
        assert_eq!((second.missing_checked, second.docs_written), (0, 0));
        assert_eq!(second.start_last_seq, first.source_last_seq);
        put(&a, json!({ "_id": "new" }));
        let third = run(&a, &b);
        assert_eq!((third.missing_checked, third.docs_written), (1, 1));
    }

    #[test]
    fn conflicts_made_on_both_sides_end_the_same_on_both() {
        let (a, b) = (endpoint("a"), endpoint("b"));
        let base = put(&a, json!({ "_id": "x", "v": 0 }));
        run(&a, &b);
        put(&a, json!({ "_id": "x", "_rev": base, "v": "from a" }));
        put(&b, json!({ "_id": "x", "_rev": base, "v": "from b" }));
        run(&a, &b);
        run(&b, &a);
        let (on_a, on_b) = (leaves(&a, "x"), leaves(&b, "x"));
        assert_eq!(on_a.len(), 2);
        assert_eq!(on_a, on_b, "the same winner and conflicts on both sides");
        let read = |e: &LocalEndpoint| e.database().get_doc("x", &ReadOptions::default()).unwrap()["v"].clone();
        assert_eq!(read(&a), read(&b));
    }

    #[test]
    fn a_checkpoint_only_one_side_kept_starts_over() {
        let (a, b) = (endpoint("a"), endpoint("b"));
        put(&a, json!({ "_id": "x" }));
        let first = run(&a, &b);
        // The target lost its checkpoint (say, it was recreated): the
        // histories share no session, so everything is checked again.
        let id = replication_id(&a, &b, None);
        let stored = b.get_local(&id).unwrap().unwrap();
        b.put_local(&id, &doc(json!({ "_rev": stored["_rev"], "session_id": "other", "history": [] }))).unwrap();
        let again = run(&a, &b);
        assert_eq!(again.start_last_seq, json!(0));
        assert_eq!((again.missing_checked, again.missing_found), (1, 0));
        assert_ne!(first.session_id, again.session_id);
    }

    #[test]
    fn filtered_replications_copy_only_their_documents_and_keep_their_own_checkpoints() {
        let (a, b) = (endpoint("a"), endpoint("b"));
        for (id, kind) in [("x", "cat"), ("y", "dog"), ("z", "cat")] {
            put(&a, json!({ "_id": id, "kind": kind }));
        }
        let with = |filter: Filter| Options { filter: Some(filter), ..Default::default() };
        let ids = replicate(&a, &b, &with(Filter::DocIds(vec!["y".into()])), &mut |_| true).unwrap();
        assert_eq!((ids.missing_checked, ids.docs_written), (1, 1));
        assert_eq!(b.database().info().unwrap().doc_count, 1);
        let cats = replicate(&a, &b, &with(Filter::Selector(json!({ "kind": "cat" }))), &mut |_| true).unwrap();
        assert_eq!((cats.missing_checked, cats.docs_written, cats.start_last_seq.clone()), (2, 2, json!(0)), "a checkpoint of its own");
        assert!(b.database().get_doc("z", &ReadOptions::default()).is_ok());
        let all = run(&a, &b);
        assert_eq!((all.missing_checked, all.docs_written), (3, 0));
    }

    #[test]
    fn large_attachments_are_written_in_several_commits() {
        // Counts the target's commits.
        struct Counting(Database, std::rc::Rc<std::cell::Cell<usize>>);
        impl crate::LocalDatabase for Counting {
            fn database(&self) -> &Database {
                &self.0
            }
            fn write(&self, docs: Vec<Map<String, Value>>) -> Result<Vec<(String, rhizome_docs::WriteOutcome)>> {
                self.1.set(self.1.get() + 1);
                Ok(self.0.update_docs(docs, false)?)
            }
        }
        let a = endpoint("a");
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, vec![7u8; 5 << 19]);
        for i in 0..5 {
            put(&a, json!({ "_id": format!("big{i}"), "_attachments": { "blob": { "content_type": "application/octet-stream", "data": data } } }));
        }
        let commits = std::rc::Rc::new(std::cell::Cell::new(0));
        let b = LocalEndpoint::new(Counting(Database::memory(), commits.clone()), "b");
        let report = replicate(&a, &b, &Options::default(), &mut |_| true).unwrap();
        assert_eq!(report.docs_written, 5);
        // 3.3 MiB of base64 each, 8 MiB per commit: two at a time.
        assert_eq!(commits.get(), 3);
        assert_eq!(b.database().attachment("big4", "blob", None).unwrap().data.len(), 5 << 19);
    }

    #[test]
    fn large_revisions_are_fetched_fewer_at_a_time() {
        // A source that counts how many revisions each fetch asks for.
        struct Counting(LocalEndpoint, std::cell::RefCell<Vec<usize>>);
        impl Endpoint for Counting {
            fn name(&self) -> String {
                self.0.name()
            }
            fn ensure_exists(&self, create: bool) -> Result<()> {
                self.0.ensure_exists(create)
            }
            fn changes(&self, since: &Value, limit: usize, filter: Option<&Filter>, wait: Option<Duration>) -> Result<crate::ChangesBatch> {
                self.0.changes(since, limit, filter, wait)
            }
            fn revs_diff(&self, revs: &Map<String, Value>) -> Result<Map<String, Value>> {
                self.0.revs_diff(revs)
            }
            fn fetch(&self, wanted: &[Wanted]) -> Result<Vec<Value>> {
                self.1.borrow_mut().push(wanted.iter().map(|w| w.revs.len()).sum());
                self.0.fetch(wanted)
            }
            fn store(&self, docs: Vec<Value>) -> Result<Vec<crate::WriteFailure>> {
                self.0.store(docs)
            }
            fn get_local(&self, id: &str) -> Result<Option<Map<String, Value>>> {
                self.0.get_local(id)
            }
            fn put_local(&self, id: &str, doc: &Map<String, Value>) -> Result<()> {
                self.0.put_local(id, doc)
            }
        }
        let a = Counting(endpoint("a"), Default::default());
        // 200 KiB each: after a first slice of 100, about 40 fit in 8 MiB.
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, vec![1u8; 150 << 10]);
        for i in 0..180 {
            put(&a.0, json!({ "_id": format!("d{i:03}"), "_attachments": { "x": { "content_type": "application/octet-stream", "data": data } } }));
        }
        let b = endpoint("b");
        let report = replicate(&a, &b, &Options::default(), &mut |_| true).unwrap();
        assert_eq!(report.docs_written, 180);
        assert_eq!(a.1.borrow().as_slice(), &[100, 40, 40]);
    }

    #[test]
    fn attachments_travel_with_their_revisions() {
        let (a, b) = (endpoint("a"), endpoint("b"));
        put(&a, json!({ "_id": "f", "_attachments": { "hello.txt": { "content_type": "text/plain", "data": "aGVsbG8=" } } }));
        run(&a, &b);
        let att = b.database().attachment("f", "hello.txt", None).unwrap();
        assert_eq!((att.content_type.as_str(), att.data.as_slice()), ("text/plain", &b"hello"[..]));
    }
}
