//! `/{db}/_sparql`: the SPARQL 1.1 Protocol
//! (https://www.w3.org/TR/sparql11-protocol/).
//!
//! - query: `GET ?query=`, `POST` form (`query=`), `POST
//!   application/sparql-query`; `default-graph-uri` and `named-graph-uri`
//!   give the dataset, replacing the query's FROM / FROM NAMED (§2.1.4: "the
//!   SPARQL service must execute the query using the RDF Dataset given in
//!   the protocol request");
//! - update: `POST` form (`update=`), `POST application/sparql-update`;
//!   `using-graph-uri` / `using-named-graph-uri` with a USING or WITH in the
//!   request is a 400 (§2.2.3);
//! - results by `Accept`: SELECT and ASK in SPARQL JSON (default), XML,
//!   CSV, TSV (ASK: `true` or `false`); CONSTRUCT and DESCRIBE in Turtle (default),
//!   N-Triples, RDF/XML, JSON-LD, N-Quads, TriG; 406 when nothing fits.
//!
//! Requests are parsed, planned and run on a thread of known stack
//! (`rhizome_sparql::nesting`: the router's blocking threads have 2 MiB,
//! too little for the deepest requests the engine's nesting limits let
//! through) against one snapshot, within `--query-timeout-ms` (default
//! [`QUERY_TIMEOUT_MS`]) counted from
//! the request's start (parsing and LOAD included) and one memory budget of
//! [`QUERY_MEMORY_BYTES`]. Results are written as they are produced
//! (`crate::stream`): an answer that fits in one chunk is sent whole, so a
//! limit hit before then is an error status; past that the response has
//! started and a limit cuts the body (the client sees an aborted
//! transfer). An update gets the same limits (then nothing is written). `LOAD <file:...>` reads only inside the folder an admin named
//! with `rhizome serve --load-dir`, and nothing without it; `http(s):` is
//! never fetched.

use super::negotiate::{self, GraphFormat, GRAPH_OFFERS};
use super::{endpoint_iri, sparql_error};
use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{self, Body, Request};
use crate::state::DbHandle;
use crate::stream::BodyWriter;
use bytes::Bytes;
use hyper::{Method, Response};
use oxrdf::NamedNode;
use crate::error::ServerError;
use rhizome_sparql::nesting::run_with_query_stack;
use rhizome_sparql::{
    execute_update_with_stored_default, parse_query, parse_update, write_results, LoadFolder, LoadPolicy, PreparedQuery, QueryResults, ResultFormat, SparqlError, Statistics,
    UpdateLimits,
};
use std::path::Path;
use serde_json::json;
use rhizome_docs::EmptiedGraphs;
use spargebra::algebra::{GraphTarget, QueryDataset};
use spargebra::{GraphUpdateOperation, Query, Update};
use rhizome_sparql::MemoryPool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A query stops with 503 after this long (30 s: long enough for analytic
/// queries on a laptop-sized store, short enough that a runaway query does
/// not hold one of the server's blocking threads for minutes).
pub const QUERY_TIMEOUT_MS: u64 = 30_000;

/// The memory budget of one request (256 MiB): the strings its expressions
/// build and keep, and each sort, group, join table or materialized
/// pattern on top of them; past it the request stops with 400.
pub const QUERY_MEMORY_BYTES: usize = 256 << 20;

/// What SPARQL requests may do beyond their database: which folder `LOAD`
/// may read, and how much of one file.
#[derive(Clone, Debug, Default)]
pub struct SparqlSettings {
    load: LoadPolicy,
    load_max_bytes: Option<u64>,
}

impl SparqlSettings {
    /// `load_dir`: the folder `LOAD <file:...>` may read (it must exist);
    /// `None` refuses every LOAD of a file.
    pub fn new(load_dir: Option<&Path>, load_max_bytes: u64) -> Result<SparqlSettings, ServerError> {
        let load = match load_dir {
            None => LoadPolicy::Refused,
            Some(dir) => LoadPolicy::Folder(LoadFolder::new(dir).map_err(|e| ServerError::Config(format!("--load-dir {}: {e}", dir.display())))?),
        };
        Ok(SparqlSettings { load, load_max_bytes: Some(load_max_bytes) })
    }
}

enum Operation {
    Query(String),
    Update(String),
}

/// The protocol's parameters, from the URL and (for a form POST) the body.
struct Params(Vec<(String, String)>);

impl Params {
    fn all(&self, name: &str) -> Vec<&str> {
        self.0.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// At most one value (the protocol allows exactly one `query`).
    fn one(&self, name: &str) -> Result<Option<String>, HttpError> {
        match self.all(name).as_slice() {
            [] => Ok(None),
            [v] => Ok(Some((*v).to_owned())),
            _ => Err(HttpError::bad_request(format!("more than one {name} parameter"))),
        }
    }

    fn iris(&self, name: &str) -> Result<Vec<NamedNode>, HttpError> {
        self.all(name).into_iter().map(|v| NamedNode::new(v).map_err(|e| HttpError::bad_request(format!("{name}: {v:?} is not an absolute IRI: {e}")))).collect()
    }
}

fn body_text(req: &Request) -> Result<String, HttpError> {
    String::from_utf8(req.body.to_vec()).map_err(|e| HttpError::bad_request(format!("the request body is not UTF-8: {e}")))
}

/// What the request asks for, per §2.1 and §2.2 of the protocol.
fn operation(req: &Request) -> Result<(Operation, Params), HttpError> {
    let mut params = Params(req.query.clone());
    let from_params = |params: &Params| -> Result<Operation, HttpError> {
        match (params.one("query")?, params.one("update")?) {
            (Some(_), Some(_)) => Err(HttpError::bad_request("a request carries either query or update, not both")),
            (Some(q), None) => Ok(Operation::Query(q)),
            (None, Some(u)) => Ok(Operation::Update(u)),
            (None, None) => Err(HttpError::bad_request("missing query (or, with POST, update) parameter")),
        }
    };
    match req.method {
        Method::GET | Method::HEAD => {
            if !params.all("update").is_empty() {
                return Err(HttpError::bad_request("an update must be sent with POST (SPARQL 1.1 Protocol §2.2)"));
            }
            let op = from_params(&params)?;
            Ok((op, params))
        }
        Method::POST => {
            let content_type = req.header("content-type");
            if let Some(ct) = content_type {
                negotiate::check_utf8(ct)?;
            }
            let op = match negotiate::essence(content_type).as_deref() {
                Some("application/x-www-form-urlencoded") => {
                    let body = body_text(req)?;
                    params.0.extend(http::parse_query(&body)?);
                    from_params(&params)?
                }
                Some("application/sparql-query") => {
                    if !params.all("query").is_empty() || !params.all("update").is_empty() {
                        return Err(HttpError::bad_request("the query is the body of an application/sparql-query POST; no query parameter"));
                    }
                    Operation::Query(body_text(req)?)
                }
                Some("application/sparql-update") => {
                    if !params.all("query").is_empty() || !params.all("update").is_empty() {
                        return Err(HttpError::bad_request("the update is the body of an application/sparql-update POST; no update parameter"));
                    }
                    Operation::Update(body_text(req)?)
                }
                None => return Err(HttpError::new(415, "unsupported_media_type", "a POST to _sparql needs a Content-Type: application/x-www-form-urlencoded, application/sparql-query or application/sparql-update")),
                Some(other) => {
                    return Err(HttpError::new(
                        415,
                        "unsupported_media_type",
                        format!("{other} is not a SPARQL request; use application/x-www-form-urlencoded, application/sparql-query or application/sparql-update"),
                    ))
                }
            };
            Ok((op, params))
        }
        _ => Err(HttpError::method_not_allowed("GET,POST")),
    }
}

/// `memory`: what all requests of the server share (`--request-memory-bytes`).
pub fn handle(req: &Request, settings: &SparqlSettings, memory: &Arc<MemoryPool>, timeout: Duration, ctx: &UserCtx, db: &DbHandle) -> Result<Response<Body>, HttpError> {
    // The time limit covers the whole request: parsing and LOAD too.
    let deadline = Instant::now() + timeout;
    let (op, params) = operation(req)?;
    let base = endpoint_iri(req, db, "_sparql");
    run_with_query_stack(|| match op {
        Operation::Query(text) => query(req, db, &text, &params, &base, deadline, memory),
        Operation::Update(text) => update(req, ctx, db, settings, &text, &params, &base, deadline, memory),
    })
    .map_err(sparql_error)?
}

/// The time left before `deadline`, or the time limit's error.
fn time_left(deadline: Instant) -> Result<Duration, HttpError> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(sparql_error(SparqlError::Timeout)),
    }
}

#[derive(Clone, Copy)]
enum Answer {
    Results(ResultFormat),
    Graph(GraphFormat),
}

const SELECT_OFFERS: &[(&str, ResultFormat)] = &[
    ("application/sparql-results+json", ResultFormat::Json),
    ("application/sparql-results+xml", ResultFormat::Xml),
    ("text/csv", ResultFormat::Csv),
    ("text/tab-separated-values", ResultFormat::Tsv),
    ("application/json", ResultFormat::Json),
    ("application/xml", ResultFormat::Xml),
    ("text/xml", ResultFormat::Xml),
];

/// The W3C CSV/TSV note defines no boolean form; `true` or `false` alone is
/// what sparesults (and Jena, Oxigraph) write, after the standard forms.
const ASK_OFFERS: &[(&str, ResultFormat)] = &[
    ("application/sparql-results+json", ResultFormat::Json),
    ("application/sparql-results+xml", ResultFormat::Xml),
    ("application/json", ResultFormat::Json),
    ("application/xml", ResultFormat::Xml),
    ("text/xml", ResultFormat::Xml),
    ("text/csv", ResultFormat::Csv),
    ("text/tab-separated-values", ResultFormat::Tsv),
];

fn results_content_type(f: ResultFormat) -> &'static str {
    match f {
        ResultFormat::Xml => "application/sparql-results+xml; charset=utf-8",
        ResultFormat::Csv => "text/csv; charset=utf-8",
        ResultFormat::Tsv => "text/tab-separated-values; charset=utf-8",
        _ => "application/sparql-results+json; charset=utf-8",
    }
}

fn query(req: &Request, db: &DbHandle, text: &str, params: &Params, base: &str, deadline: Instant, memory: &Arc<MemoryPool>) -> Result<Response<Body>, HttpError> {
    let mut query = parse_query(text, Some(base)).map_err(sparql_error)?;
    let default = params.iris("default-graph-uri")?;
    let named = params.iris("named-graph-uri")?;
    if !default.is_empty() || !named.is_empty() {
        let dataset = Some(QueryDataset { default, named: Some(named) });
        match &mut query {
            Query::Select { dataset: d, .. } | Query::Ask { dataset: d, .. } | Query::Construct { dataset: d, .. } | Query::Describe { dataset: d, .. } => *d = dataset,
        }
    }
    // Negotiate before running: a 406 costs nothing.
    let accept = req.header("accept");
    let answer = match &query {
        Query::Select { .. } => Answer::Results(negotiate::choose(accept, SELECT_OFFERS)?),
        Query::Ask { .. } => Answer::Results(negotiate::choose(accept, ASK_OFFERS)?),
        Query::Construct { .. } | Query::Describe { .. } => Answer::Graph(negotiate::choose(accept, GRAPH_OFFERS)?),
    };
    let store = db.db.store();
    let stats = Statistics::from_store(&store.planner_stats().map_err(super::store_error)?);
    let snapshot = store.snapshot().map_err(super::store_error)?;
    // Text search calls are answered before planning (the index is kept
    // outside the SPARQL engine).
    let calls = rhizome_sparql::text_search::text_calls(&query).map_err(sparql_error)?;
    let answers = super::text_search::answer(db, &calls)?;
    let prepared = rhizome_sparql::text_search::with_answers(answers, || PreparedQuery::new(&snapshot, stats, &query)).map_err(sparql_error)?;
    prepared.set_timeout(time_left(deadline)?);
    prepared.set_memory_limit(QUERY_MEMORY_BYTES);
    prepared.set_memory_pool(memory);
    prepared.cancel_with(req.cancelled.clone());
    let results = prepared.execute().map_err(sparql_error)?;
    let content_type = match answer {
        Answer::Results(format) => results_content_type(format).to_owned(),
        Answer::Graph(format) => format.content_type(),
    };
    let mut head = http::response(200, &content_type, Bytes::new());
    http::set_header(&mut head, "vary", "Accept");
    if req.method == Method::HEAD {
        // The length GET would send: the whole answer, counted, not kept.
        let mut counted = CountingWriter(0);
        write_answer(results, answer, &mut counted)?;
        super::head_only(&mut head);
        http::set_header(&mut head, "content-length", &counted.0.to_string());
        return Ok(head);
    }
    // Written as the rows come: a result of any size holds a few chunks
    // (`crate::stream`); one that fits in a chunk is answered whole.
    let mut out = BodyWriter::new(req, head);
    match write_answer(results, answer, &mut out) {
        Ok(()) => out.finish(),
        Err(e) => out.fail(e),
    }
}

/// Serializes a query's answer into `out`.
fn write_answer(results: QueryResults<'_>, answer: Answer, out: &mut impl std::io::Write) -> Result<(), HttpError> {
    match answer {
        Answer::Results(format) => {
            write_results(results, format, out).map_err(sparql_error)?;
        }
        Answer::Graph(format) => {
            let QueryResults::Graph(triples) = results else {
                return Err(HttpError::internal("a CONSTRUCT or DESCRIBE query gave no graph"));
            };
            let mut w = oxrdfio::RdfSerializer::from_format(format.0).for_writer(out);
            for t in triples {
                let t = t.map_err(sparql_error)?;
                w.serialize_triple(&t).map_err(write_error)?;
            }
            w.finish().map_err(write_error)?;
        }
    }
    Ok(())
}

/// A failed write of the answer: the client went away (499), or another
/// I/O error.
fn write_error(e: std::io::Error) -> HttpError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return sparql_error(SparqlError::Cancelled);
    }
    HttpError::internal(format!("writing results: {e}"))
}

/// Counts bytes instead of keeping them (HEAD).
struct CountingWriter(u64);

impl std::io::Write for CountingWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
fn update(
    req: &Request,
    ctx: &UserCtx,
    db: &DbHandle,
    settings: &SparqlSettings,
    text: &str,
    params: &Params,
    base: &str,
    deadline: Instant,
    memory: &Arc<MemoryPool>,
) -> Result<Response<Body>, HttpError> {
    let mut update: Update = parse_update(text, Some(base)).map_err(sparql_error)?;
    let default = params.iris("using-graph-uri")?;
    let named = params.iris("using-named-graph-uri")?;
    if !default.is_empty() || !named.is_empty() {
        for op in &mut update.operations {
            if let GraphUpdateOperation::DeleteInsert { using, .. } = op {
                if using.is_some() {
                    return Err(HttpError::bad_request(
                        "the update has USING, USING NAMED or WITH and the request has using-graph-uri or using-named-graph-uri; give the dataset one way (SPARQL 1.1 Protocol §2.2.3)",
                    ));
                }
                *using = Some(QueryDataset { default: default.clone(), named: Some(named.clone()) });
            }
        }
    }
    let store = db.db.store();
    let mode = store.mode();
    let stats = Statistics::from_store(&store.planner_stats().map_err(super::store_error)?);
    // The WHERE clauses and LOADs get the query limits, counted from the
    // request's start: an update holds the database's writer while it runs.
    time_left(deadline)?;
    let limits = UpdateLimits {
        deadline: Some(deadline),
        memory_bytes: Some(QUERY_MEMORY_BYTES),
        load: settings.load.clone(),
        load_max_bytes: settings.load_max_bytes,
        cancelled: Some(req.cancelled.clone()),
        memory_pool: Some(memory.clone()),
        max_inserted_quads: Some(super::MAX_GRAPH_WRITE_TRIPLES as u64),
    };
    // Writes to the default graph go to the database's stored default
    // graph, never to the documents the union default graph shows.
    let stored_default = db.db.stored_default_graph().map(oxrdf::NamedNode::new).transpose().map_err(|e| HttpError::internal(format!("stored default graph IRI: {e}")))?;
    // DROP/CLEAR ALL or NAMED are meant for every graph: the documents
    // whose graphs they remove are deleted, not kept with their other data.
    let everything = update.operations.iter().any(|op| {
        matches!(op, GraphUpdateOperation::Drop { graph: GraphTarget::AllGraphs | GraphTarget::NamedGraphs, .. } | GraphUpdateOperation::Clear { graph: GraphTarget::AllGraphs | GraphTarget::NamedGraphs, .. })
    });
    let emptied = if everything { EmptiedGraphs::DeleteDocuments } else { EmptiedGraphs::KeepDocumentData };
    // Without validation functions, concurrent updates share a commit and
    // its fsync (group commit, issue 45); each still reads and writes the
    // state the ones before it left, under the writer lock.
    if !db.db.may_have_design_docs() {
        let answer = db.writes.write_graphs(
            &db.db,
            emptied,
            crate::auth::access::writer(ctx, db)?,
            Box::new(move |txn| {
                let summary = execute_update_with_stored_default(txn, mode, &stats, &update, &limits, stored_default.as_ref()).map_err(sparql_error)?;
                Ok(json!({ "ok": true, "inserted": summary.quads_inserted, "deleted": summary.quads_deleted }))
            }),
        )?;
        db.notify();
        return Ok(http::json(200, &answer));
    }
    let summary = super::write_as(ctx, db, emptied, |txn| execute_update_with_stored_default(txn, mode, &stats, &update, &limits, stored_default.as_ref()).map_err(sparql_error))?;
    db.notify();
    Ok(http::json(200, &json!({ "ok": true, "inserted": summary.quads_inserted, "deleted": summary.quads_deleted })))
}
