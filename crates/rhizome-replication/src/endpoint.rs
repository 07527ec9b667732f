//! What the replicator needs of a database, in the protocol's own JSON
//! shapes, so that a local database and a remote server look the same.

use crate::{Error, Result};
use rhizome_docs::{ChangesFilter, ChangesOptions, Database, DocError, OpenRev, OpenRevs, ReadOptions, Rev, WriteOutcome};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

/// One page of `_changes` (`style=all_docs`): rows `{"seq", "id",
/// "changes": [{"rev"}], "deleted"?}` and the sequence to continue from.
#[derive(Clone, Debug)]
pub struct ChangesBatch {
    pub rows: Vec<Value>,
    pub last_seq: Value,
    /// Rows left out, with why (a document listing more than
    /// [`crate::MAX_CHANGE_REVS`] leaves): reported as failures.
    pub skipped: Vec<WriteFailure>,
    /// The page was cut before the answer's end (past its byte bound):
    /// more changes may follow whatever its length.
    pub cut: bool,
}

/// Which documents a replication copies (CouchDB's built-in filters).
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `doc_ids`: these documents only.
    DocIds(Vec<String>),
    /// `selector`: documents whose winning revision matches a Mango selector.
    Selector(Value),
    /// `filter`: a design document's filter function (`ddoc/name`, or
    /// `_view` with `query_params.view`), called with `query_params` as
    /// the request's query.
    Design { name: String, query_params: serde_json::Map<String, Value> },
}

/// A revision the target refused (`_bulk_docs` with `new_edits=false`
/// answers only these).
#[derive(Clone, Debug)]
pub struct WriteFailure {
    pub id: String,
    pub error: String,
    pub reason: String,
}

/// A database as a replication source or target.
pub trait Endpoint {
    /// The endpoint as it names itself in messages and replication ids
    /// (a URL without its password, or a local database's name).
    fn name(&self) -> String;
    /// Checks that the database exists; creates it when `create` is set.
    fn ensure_exists(&self, create: bool) -> Result<()>;
    /// Changes after `since` of the documents `filter` lets through, at most
    /// `limit` rows; with `wait`, blocks up to that long for a first change
    /// when there is none yet.
    fn changes(&self, since: &Value, limit: usize, filter: Option<&Filter>, wait: Option<Duration>) -> Result<ChangesBatch>;
    /// `_revs_diff`: `{id: [rev]}` to `{id: {"missing": [rev], "possible_ancestors"?: [rev]}}`.
    fn revs_diff(&self, revs: &Map<String, Value>) -> Result<Map<String, Value>>;
    /// The given revisions, each with `_revisions` and attachments inline
    /// (except those already in a revision of `atts_since`).
    fn fetch(&self, wanted: &[Wanted]) -> Result<Vec<Value>>;
    /// Stores replicated revisions as they are (`new_edits=false`).
    fn store(&self, docs: Vec<Value>) -> Result<Vec<WriteFailure>>;
    /// A `_local` document (`id` without the `_local/` prefix).
    fn get_local(&self, id: &str) -> Result<Option<Map<String, Value>>>;
    /// Writes a `_local` document; `doc` carries the `_rev` it replaces.
    fn put_local(&self, id: &str, doc: &Map<String, Value>) -> Result<()>;
}

/// Revisions of one document the target lacks.
#[derive(Clone, Debug)]
pub struct Wanted {
    pub id: String,
    pub revs: Vec<String>,
    /// Revisions the target has, whose attachments need not be sent again.
    pub atts_since: Vec<String>,
}

/// A database of this process, and how replicated revisions are written to
/// it: straight to the store by default; a server passes its own write path
/// (group commit, waking `_changes` feeds, `_users` password hashing).
pub trait LocalDatabase {
    fn database(&self) -> &Database;
    /// Writes replicated revisions (`new_edits=false`) in one commit.
    fn write(&self, docs: Vec<Map<String, Value>>) -> Result<Vec<(String, WriteOutcome)>> {
        Ok(self.database().update_docs(docs, false)?)
    }
}

impl LocalDatabase for Database {
    fn database(&self) -> &Database {
        self
    }
}

/// A database of this process as an endpoint.
pub struct LocalEndpoint<D: LocalDatabase = Database> {
    db: D,
    name: String,
}

impl<D: LocalDatabase> LocalEndpoint<D> {
    pub fn new(db: D, name: impl Into<String>) -> LocalEndpoint<D> {
        LocalEndpoint { db, name: name.into() }
    }

    pub fn database(&self) -> &Database {
        self.db.database()
    }
}

/// Our sequences are integers; a sequence another server gave (a string)
/// cannot be ours, so it starts from the beginning.
fn local_seq(since: &Value) -> u64 {
    match since {
        Value::Number(n) => n.as_u64().unwrap_or(0),
        Value::String(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

fn revs(list: &[String]) -> Vec<Rev> {
    list.iter().filter_map(|r| Rev::parse(r)).collect()
}

impl<D: LocalDatabase> Endpoint for LocalEndpoint<D> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn ensure_exists(&self, _create: bool) -> Result<()> {
        // A local database exists once opened.
        Ok(())
    }

    fn changes(&self, since: &Value, limit: usize, filter: Option<&Filter>, wait: Option<Duration>) -> Result<ChangesBatch> {
        let filter = match filter {
            None => ChangesFilter::None,
            Some(Filter::DocIds(ids)) => ChangesFilter::DocIds(ids.iter().cloned().collect()),
            Some(Filter::Selector(s)) => ChangesFilter::Selector(s.clone()),
            Some(Filter::Design { name, query_params }) => ChangesFilter::Custom(std::sync::Arc::new(design_filter(&self.database(), name, query_params)?)),
        };
        let opts = ChangesOptions { since: local_seq(since), limit: Some(limit), all_leaves: true, filter, ..Default::default() };
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            let changes = self.database().changes(&opts)?;
            // Every write to the database goes through this process, so
            // reading changes again is enough to see new ones.
            if !changes.rows.is_empty() || changes.last_seq > opts.since || deadline.is_none_or(|d| Instant::now() >= d) {
                return Ok(ChangesBatch { rows: changes.rows, last_seq: json!(changes.last_seq), skipped: Vec::new(), cut: false });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn revs_diff(&self, revs: &Map<String, Value>) -> Result<Map<String, Value>> {
        Ok(self.database().revs_diff(revs)?)
    }

    fn fetch(&self, wanted: &[Wanted]) -> Result<Vec<Value>> {
        let mut docs = Vec::new();
        for w in wanted {
            let opts = ReadOptions { revs: true, attachments: true, atts_since: revs(&w.atts_since), latest: true, ..Default::default() };
            for answer in self.database().open_revs(&w.id, &OpenRevs::List(revs(&w.revs)), &opts)? {
                if let OpenRev::Ok(doc) = answer {
                    docs.push(Value::Object(doc));
                }
            }
        }
        Ok(docs)
    }

    fn store(&self, docs: Vec<Value>) -> Result<Vec<WriteFailure>> {
        let docs = docs.into_iter().filter_map(|d| if let Value::Object(m) = d { Some(m) } else { None }).collect();
        let outcomes = self.db.write(docs)?;
        Ok(outcomes
            .into_iter()
            .filter_map(|(id, outcome)| outcome.err().map(|e| WriteFailure { id, error: error_name(&e).into(), reason: e.to_string() }))
            .collect())
    }

    fn get_local(&self, id: &str) -> Result<Option<Map<String, Value>>> {
        match self.database().get_local(&format!("_local/{id}")) {
            Ok(doc) => Ok(Some(doc)),
            Err(DocError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn put_local(&self, id: &str, doc: &Map<String, Value>) -> Result<()> {
        self.database().put_local(&format!("_local/{id}"), doc.clone()).map(drop).map_err(|e| match e {
            DocError::Conflict => Error::Protocol { endpoint: self.name.clone(), reason: format!("checkpoint _local/{id} was changed by another replication") },
            e => e.into(),
        })
    }
}

fn error_name(e: &DocError) -> &'static str {
    match e {
        DocError::Conflict => "conflict",
        DocError::NotFound(_) => "not_found",
        DocError::BadRequest(_) => "bad_request",
        DocError::Validation(_) => "doc_validation",
        DocError::MissingStub(_) => "missing_stub",
        _ => "error",
    }
}

/// A design-document filter of a local source database.
fn design_filter(db: &Database, name: &str, query_params: &serde_json::Map<String, Value>) -> Result<rhizome_views::filter::JsFilter> {
    use rhizome_views::filter::JsFilter;
    let bad = |reason: String| Error::Protocol { endpoint: "source".into(), reason };
    let (ddoc_name, function, view) = if name == "_view" {
        let v = query_params.get("view").and_then(Value::as_str).ok_or_else(|| bad("filter _view needs query_params.view".into()))?;
        let (d, f) = v.split_once('/').ok_or_else(|| bad(format!("view {v:?} is not designname/viewname")))?;
        (d.to_owned(), f.to_owned(), true)
    } else {
        let (d, f) = name.split_once('/').ok_or_else(|| bad(format!("filter {name:?} is not designname/filtername")))?;
        (d.to_owned(), f.to_owned(), false)
    };
    let id = format!("_design/{ddoc_name}");
    let body = db.get_doc(&id, &ReadOptions::default())?;
    let ddoc = rhizome_views::DesignDoc::parse(&id, &body).map_err(|e| bad(e.to_string()))?.ok_or_else(|| bad(format!("{id} is not a JavaScript design document")))?;
    let limits = rhizome_views::Limits::default();
    let req = serde_json::json!({ "query": query_params, "method": "GET", "userCtx": { "db": null, "name": null, "roles": ["_admin"] } });
    let filter = if view { JsFilter::view(ddoc, &function, limits) } else { JsFilter::function(ddoc, &function, req, limits) }.map_err(|e| bad(format!("{name}: {e}")))?;
    filter.check().map_err(|e| bad(e.to_string()))?;
    Ok(filter)
}
