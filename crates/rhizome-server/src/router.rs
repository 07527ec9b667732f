//! From a request to a handler: the path is parsed into a [`Route`], the
//! route names the [`Access`] it needs, and the guard checks it before any
//! handler runs. Every endpoint goes through here; what a write may
//! contain (design documents in a `_bulk_docs`, LDP resources, graphs) is
//! the store's rule wherever the write lands (`rhizome_docs::Writer`).

use crate::auth::access::{self, Access};
use crate::auth::{self, UserCtx};
use crate::changes::FeedRequest;
use crate::couch;
use crate::error::HttpError;
use crate::extension;
use crate::http::{Body, Request};
use crate::state::{DbHandle, Server};
use hyper::{Method, Response};
use std::sync::Arc;

/// What a handler produced: a response, or a `_changes` feed for the async
/// side to run.
pub enum Reply {
    Done(Response<Body>),
    Feed(FeedRequest),
}

impl From<Response<Body>> for Reply {
    fn from(r: Response<Body>) -> Reply {
        Reply::Done(r)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbOp {
    AllDocs,
    BulkDocs,
    BulkGet,
    RevsDiff,
    Changes,
    Compact,
    RevsLimit,
    Security,
    EnsureFullCommit,
    DesignDocs,
    LocalDocs,
    /// `POST /{db}/_all_docs/queries` (and `_design_docs`, `_local_docs`).
    AllDocsQueries(couch::all_docs::Namespace),
    ViewCleanup,
    Find,
    Explain,
    /// `POST /{db}/_transaction` (issue 45).
    Transaction,
    Purge,
    PurgedInfosLimit,
    PurgedInfos,
    /// `POST /{db}/_missing_revs`: `_revs_diff` as CouchDB 1.x's
    /// replicator asked it.
    MissingRevs,
    /// `GET /{db}/_shards` and `/{db}/_shards/{doc id}`: one shard here.
    Shards(Option<String>),
    SyncShards,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Root,
    Up,
    Uuids,
    AllDbs,
    DbsInfo,
    Session,
    Replicate,
    SchedulerDocs,
    /// `/_scheduler/docs/{db}[/{docid}]`.
    SchedulerDoc(String, Option<String>),
    SchedulerJobs,
    Membership,
    ClusterSetup,
    DbUpdates,
    /// `/_node/{name}/...`: the name and what follows it.
    Node(String, Vec<String>),
    ActiveTasks,
    /// `/_contexts`: the remote JSON-LD context cache (`contexts.rs`).
    Contexts,
    Db(String),
    DbOp(String, DbOp),
    Doc(String, String),
    Local(String, String),
    Attachment(String, String, String),
    /// Views the lead builds on the same store: `_sparql`, `_graph`.
    Extension(String, String),
    /// `/{db}/_design/{ddoc}/_view/...` and CouchDB's other design
    /// functions, which Rhizome does not run: CouchDB's 404s, so that a
    /// client sees "no such view" rather than a missing attachment.
    DesignAction(String, String, String, String),
    /// `/{db}/_index` and below (Mango's indexes).
    MangoIndex(String, Vec<String>),
    /// `/{db}/_ldp/...`: Linked Data Platform (`crate::ldp`).
    Ldp(String, Vec<String>),
    /// `/{db}/_partition/{partition}/...`: one partition of a partitioned
    /// database (`couch::partitions`), with what follows the partition.
    Partition(String, String, Vec<String>),
    /// `/_utils/...`: the console's files (`crate::console`).
    Console(Vec<String>),
}

/// The design-document handlers of CouchDB (`chttpd_handlers`): paths
/// under a design document starting with one of these are not
/// attachments.
const DESIGN_ACTIONS: &[&str] = &["_view", "_show", "_list", "_update", "_rewrite", "_info", "_search", "_search_info", "_nouveau", "_nouveau_info"];

impl Route {
    pub fn parse(segments: &[String]) -> Result<Route, HttpError> {
        let s: Vec<&str> = segments.iter().map(String::as_str).collect();
        Ok(match s.as_slice() {
            [] => Route::Root,
            ["_up"] => Route::Up,
            ["_uuids"] => Route::Uuids,
            ["_all_dbs"] => Route::AllDbs,
            ["_dbs_info"] => Route::DbsInfo,
            ["_session"] => Route::Session,
            ["_replicate"] => Route::Replicate,
            ["_scheduler", "docs"] => Route::SchedulerDocs,
            ["_scheduler", "docs", db] => Route::SchedulerDoc(db.to_string(), None),
            ["_scheduler", "docs", db, id @ ..] => Route::SchedulerDoc(db.to_string(), Some(id.join("/"))),
            ["_scheduler", "jobs"] => Route::SchedulerJobs,
            ["_membership"] => Route::Membership,
            ["_cluster_setup"] => Route::ClusterSetup,
            ["_db_updates"] => Route::DbUpdates,
            ["_node", name, rest @ ..] => Route::Node(name.to_string(), rest.iter().map(|p| p.to_string()).collect()),
            ["_active_tasks"] => Route::ActiveTasks,
            ["_contexts"] => Route::Contexts,
            ["_utils", rest @ ..] => Route::Console(rest.iter().map(|p| p.to_string()).collect()),
            [db] if db.starts_with('_') && *db != "_users" && *db != "_replicator" => {
                return Err(HttpError::bad_request(format!("Unknown or unsupported endpoint /{db}")))
            }
            [db] => Route::Db(db.to_string()),
            [db, "_partition", partition, rest @ ..] => Route::Partition(db.to_string(), partition.to_string(), rest.iter().map(|p| p.to_string()).collect()),
            [db, "_ldp", rest @ ..] => Route::Ldp(db.to_string(), rest.iter().map(|p| p.to_string()).collect()),
            [db, op] if op.starts_with('_') && *op != "_design" && *op != "_local" => {
                let op = match *op {
                    "_all_docs" => DbOp::AllDocs,
                    "_bulk_docs" => DbOp::BulkDocs,
                    "_bulk_get" => DbOp::BulkGet,
                    "_revs_diff" => DbOp::RevsDiff,
                    "_changes" => DbOp::Changes,
                    "_compact" => DbOp::Compact,
                    "_revs_limit" => DbOp::RevsLimit,
                    "_security" => DbOp::Security,
                    "_ensure_full_commit" => DbOp::EnsureFullCommit,
                    "_design_docs" => DbOp::DesignDocs,
                    "_local_docs" => DbOp::LocalDocs,
                    "_view_cleanup" | "_nouveau_cleanup" => DbOp::ViewCleanup,
                    "_find" => DbOp::Find,
                    "_explain" => DbOp::Explain,
                    "_transaction" => DbOp::Transaction,
                    "_purge" => DbOp::Purge,
                    "_purged_infos_limit" => DbOp::PurgedInfosLimit,
                    "_purged_infos" => DbOp::PurgedInfos,
                    "_missing_revs" => DbOp::MissingRevs,
                    "_shards" => DbOp::Shards(None),
                    "_sync_shards" => DbOp::SyncShards,
                    "_index" => return Ok(Route::MangoIndex(db.to_string(), Vec::new())),
                    "_sparql" | "_graph" | "_traverse" | "_path" => return Ok(Route::Extension(db.to_string(), op.to_string())),
                    // CouchDB reads it as a document id (`illegal_docid`).
                    _ => return Err(HttpError::new(400, "illegal_docid", "Only reserved document ids may start with underscore.")),
                };
                Route::DbOp(db.to_string(), op)
            }
            [db, listing @ ("_all_docs" | "_design_docs" | "_local_docs"), "queries"] => {
                use couch::all_docs::Namespace;
                let ns = match *listing {
                    "_design_docs" => Namespace::Design,
                    "_local_docs" => Namespace::Local,
                    _ => Namespace::All,
                };
                Route::DbOp(db.to_string(), DbOp::AllDocsQueries(ns))
            }
            [db, "_shards", id] => Route::DbOp(db.to_string(), DbOp::Shards(Some(id.to_string()))),
            [db, "_index", rest @ ..] => Route::MangoIndex(db.to_string(), rest.iter().map(|p| p.to_string()).collect()),
            [db, "_local", id] => Route::Local(db.to_string(), format!("_local/{id}")),
            [_, "_local", _, ..] => return Err(HttpError::bad_request("_local documents do not accept attachments.")),
            [db, "_design", name, action, rest @ ..] if DESIGN_ACTIONS.contains(action) => {
                Route::DesignAction(db.to_string(), format!("_design/{name}"), action.to_string(), rest.join("/"))
            }
            [db, "_design", name] => Route::Doc(db.to_string(), format!("_design/{name}")),
            // `POST /{db}/_compact/{ddoc}`: a design document's indexes.
            [db, "_compact", name] => Route::DesignAction(db.to_string(), format!("_design/{name}"), "_compact".into(), String::new()),
            [db, "_design", name, rest @ ..] => Route::Attachment(db.to_string(), format!("_design/{name}"), rest.join("/")),
            [_, "_design"] | [_, "_local"] => return Err(HttpError::bad_request("Missing document id")),
            [db, id] => Route::Doc(db.to_string(), id.to_string()),
            // Graph Store Protocol, direct graph identification.
            [db, "_graph", rest @ ..] => Route::Extension(db.to_string(), format!("_graph/{}", rest.join("/"))),
            [db, id, rest @ ..] => Route::Attachment(db.to_string(), id.to_string(), rest.join("/")),
        })
    }

    pub fn db_name(&self) -> Option<&str> {
        match self {
            Route::Db(db) | Route::DbOp(db, _) | Route::Doc(db, _) | Route::Local(db, _) | Route::Attachment(db, _, _) | Route::Extension(db, _) | Route::DesignAction(db, ..) | Route::MangoIndex(db, _) | Route::Ldp(db, _) | Route::Partition(db, ..) => Some(db),
            _ => None,
        }
    }

    /// The access a route needs for a method.
    pub fn access(&self, method: &Method) -> Access {
        let read = matches!(*method, Method::GET | Method::HEAD);
        match self {
            Route::Root | Route::Up | Route::Uuids | Route::Session | Route::Console(_) => Access::Public,
            Route::AllDbs | Route::DbsInfo | Route::Replicate | Route::SchedulerDocs | Route::ActiveTasks | Route::Contexts => Access::ServerAdmin,
            Route::SchedulerDoc(..) | Route::SchedulerJobs | Route::Membership | Route::ClusterSetup | Route::Node(..) | Route::DbUpdates => Access::ServerAdmin,
            Route::Db(_) if *method == Method::PUT || *method == Method::DELETE => Access::ServerAdmin,
            Route::Db(_) => Access::Member,
            Route::DbOp(_, DbOp::Compact | DbOp::ViewCleanup) => Access::DbAdmin,
            // CouchDB's chttpd_auth_request: server admins alone, reads too.
            Route::DbOp(_, DbOp::Purge | DbOp::PurgedInfosLimit | DbOp::SyncShards) => Access::ServerAdmin,
            Route::DesignAction(_, _, action, _) if action == "_compact" => Access::DbAdmin,
            Route::DbOp(_, DbOp::Security | DbOp::RevsLimit) if !read => Access::DbAdmin,
            Route::DbOp(_, _) => Access::Member,
            // Creating or deleting an index writes a design document.
            Route::MangoIndex(..) if !read => Access::DbAdmin,
            Route::MangoIndex(..) => Access::Member,
            Route::Doc(db, id) | Route::Attachment(db, id, _) if db == "_users" && id.starts_with(auth::users::USER_PREFIX) => Access::UserDoc(id.clone()),
            Route::Doc(_, id) | Route::Attachment(_, id, _) if id.starts_with("_design/") && !read => Access::DbAdmin,
            Route::Doc(..) | Route::Attachment(..) | Route::Local(..) | Route::Extension(..) | Route::DesignAction(..) | Route::Ldp(..) => Access::Member,
            // Reads of one partition (`_find` and `_explain` are POSTs).
            Route::Partition(..) => Access::Member,
        }
    }
}

/// Runs one request (on a blocking thread: the document store is
/// synchronous).
pub fn handle(server: &Server, req: &Request) -> Result<Reply, HttpError> {
    // All of the request's JavaScript (validation, filters) within one
    // budget, and stopped when its client goes away.
    let _js = rhizome_views::RequestBounds {
        deadline: Some(std::time::Instant::now() + crate::couch::views::limits().request_timeout),
        cancelled: Some(req.cancelled.clone()),
    }
    .enter();
    let route = Route::parse(&req.segments)?;
    let rdf = matches!(route, Route::Extension(..) | Route::Ldp(..));
    let is_doc = matches!(route, Route::Doc(..));
    let handled = auth::authenticate(server, req).and_then(|ctx| {
        let reply = handle_route(server, req, route, &ctx)?;
        Ok(renew_session(server, req, &ctx, reply))
    });
    match handled {
        // SPARQL and Graph Store clients (Jena, Java's Authenticator,
        // urllib's handlers, SPARQLWrapper) send their credentials only
        // when challenged, and so do linked-data clients reading a
        // document as RDF. CouchDB's endpoints stay without a challenge
        // for JSON, as CouchDB's (no browser pop-up in a CouchDB app).
        Err(e) if e.status == 401 && (rdf || (is_doc && couch::documents::wants_rdf(req))) => {
            let mut r = crate::http::error(&e);
            crate::http::set_header(&mut r, "www-authenticate", "Basic realm=\"rhizome\"");
            Ok(Reply::Done(r))
        }
        other => other,
    }
}

fn handle_route(server: &Server, req: &Request, route: Route, ctx: &UserCtx) -> Result<Reply, HttpError> {
    let db: Option<Arc<DbHandle>> = match route.db_name() {
        Some(name) => server.db(name)?,
        None => None,
    };
    access::check(ctx, &route.access(&req.method), db.as_deref())?;
    crate::request_bodies::check(&route, req, &server.cors)?;
    dispatch(server, req, ctx, route, db)
}

/// A session past a tenth of its lifetime gets a new cookie with the
/// answer, unless the handler set one (login, logout), as CouchDB.
fn renew_session(server: &Server, req: &Request, ctx: &UserCtx, reply: Reply) -> Reply {
    match reply {
        Reply::Done(mut r) if !r.headers().contains_key("set-cookie") => {
            if let Some(cookie) = auth::renewal_cookie(server, req, ctx) {
                crate::http::set_header(&mut r, "set-cookie", &cookie);
            }
            Reply::Done(r)
        }
        other => other,
    }
}

fn need(db: Option<Arc<DbHandle>>) -> Result<Arc<DbHandle>, HttpError> {
    db.ok_or_else(HttpError::no_db)
}

fn dispatch(server: &Server, req: &Request, ctx: &UserCtx, route: Route, db: Option<Arc<DbHandle>>) -> Result<Reply, HttpError> {
    use couch::{all_docs, attachments, bulk, database, documents, server as srv};
    let m = &req.method;
    Ok(match route {
        Route::Root => srv::welcome(server, m)?.into(),
        Route::Up => srv::up(m)?.into(),
        Route::Uuids => srv::uuids(req)?.into(),
        Route::AllDbs => srv::all_dbs(server, req)?.into(),
        Route::DbsInfo => database::dbs_info(server, req)?.into(),
        Route::Session => srv::session(server, req, ctx)?.into(),
        Route::Replicate => couch::replicate::replicate(server, req, ctx)?.into(),
        Route::SchedulerDocs => crate::replicator_db::scheduler_docs(server, m)?.into(),
        Route::SchedulerDoc(db, id) => crate::replicator_db::scheduler_doc(server, m, &db, id.as_deref())?.into(),
        Route::SchedulerJobs => couch::node::scheduler_jobs(server, req)?.into(),
        Route::Membership => couch::node::membership(req)?.into(),
        Route::ClusterSetup => couch::cluster_setup::handle(req)?.into(),
        Route::DbUpdates => crate::db_updates::handle(&server.db_updates, req)?.into(),
        Route::Node(name, rest) => couch::node::node(server, req, &name, &rest)?.into(),
        Route::ActiveTasks => couch::replicate::active_tasks(server, m)?.into(),
        Route::Contexts => crate::contexts::handle(server, req)?.into(),
        Route::Console(rest) => crate::console::handle(req, &rest)?.into(),
        Route::Db(name) => match *m {
            Method::PUT => database::create(server, req, &name, db.is_some())?.into(),
            Method::DELETE => database::delete(server, &name)?.into(),
            Method::GET | Method::HEAD => database::info(&*need(db)?)?.into(),
            Method::POST => documents::post(server, req, ctx, &*need(db)?)?.into(),
            _ => return Err(HttpError::method_not_allowed("DELETE,GET,HEAD,POST,PUT")),
        },
        Route::DbOp(_, op) => {
            let db = need(db)?;
            match op {
                DbOp::AllDocs => all_docs::handle(req, &db, all_docs::Namespace::All)?.into(),
                DbOp::BulkDocs => bulk::bulk_docs(server, req, ctx, &db)?.into(),
                DbOp::BulkGet => bulk::bulk_get(req, &db, server.max_bulk_docs)?.into(),
                DbOp::Transaction => couch::transaction::transaction(req, ctx, &db)?.into(),
                DbOp::RevsDiff => bulk::revs_diff(req, &db)?.into(),
                DbOp::Changes => crate::changes::request(req, ctx, db)?,
                DbOp::Compact => database::compact(req, &db)?.into(),
                DbOp::RevsLimit => database::revs_limit(req, &db)?.into(),
                DbOp::Security => database::security(req, &db)?.into(),
                DbOp::EnsureFullCommit => database::ensure_full_commit(m)?.into(),
                DbOp::DesignDocs => all_docs::handle(req, &db, all_docs::Namespace::Design)?.into(),
                DbOp::LocalDocs => all_docs::handle(req, &db, all_docs::Namespace::Local)?.into(),
                DbOp::AllDocsQueries(ns) => all_docs::queries(req, &db, ns)?.into(),
                DbOp::ViewCleanup => couch::views::cleanup(req, &db)?.into(),
                DbOp::Find => couch::mango::find(req, &db, server.query_timeout)?.into(),
                DbOp::Explain => couch::mango::explain(req, &db)?.into(),
                DbOp::Purge => database::purge(req, &db)?.into(),
                DbOp::PurgedInfosLimit => database::purged_infos_limit(req, &db)?.into(),
                DbOp::PurgedInfos => database::purged_infos(req, &db)?.into(),
                DbOp::MissingRevs => bulk::missing_revs(req, &db)?.into(),
                DbOp::Shards(id) => database::shards(req, id.as_deref())?.into(),
                DbOp::SyncShards => database::sync_shards(req)?.into(),
            }
        }
        Route::Doc(_, id) => documents::document(server, req, ctx, &*need(db)?, &id)?.into(),
        Route::Local(_, id) => documents::local(req, ctx, &*need(db)?, &id)?.into(),
        Route::Attachment(_, id, name) => attachments::attachment(server, req, ctx, &*need(db)?, &id, &name)?.into(),
        Route::Extension(_, what) => extension::route(server, req, ctx, &*need(db)?, &what)?.into(),
        Route::DesignAction(_, ddoc, action, rest) => couch::views::design_action(req, ctx, need(db)?, &ddoc, &action, &rest)?.into(),
        Route::MangoIndex(_, rest) => couch::mango::index(req, ctx, &*need(db)?, &rest)?.into(),
        Route::Ldp(_, rest) => crate::ldp::handle(server, req, ctx, need(db)?, &rest)?.into(),
        Route::Partition(_, partition, rest) => couch::partitions::handle(server, req, need(db)?, &partition, &rest)?.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(path: &str) -> Result<Route, HttpError> {
        Route::parse(&crate::http::split_path(path).unwrap())
    }

    #[test]
    fn paths_parse_to_routes() {
        assert_eq!(p("/").unwrap(), Route::Root);
        assert_eq!(p("/db/").unwrap(), Route::Db("db".into()));
        assert_eq!(p("/db/_design/x").unwrap(), Route::Doc("db".into(), "_design/x".into()));
        assert_eq!(p("/db/a%2Fb").unwrap(), Route::Doc("db".into(), "a/b".into()));
        assert_eq!(p("/db/doc/dir/file.txt").unwrap(), Route::Attachment("db".into(), "doc".into(), "dir/file.txt".into()));
        assert_eq!(p("/db/_local/cp").unwrap(), Route::Local("db".into(), "_local/cp".into()));
        assert_eq!(p("/db/_sparql").unwrap(), Route::Extension("db".into(), "_sparql".into()));
        assert_eq!(p("/db/_ldp/").unwrap(), Route::Ldp("db".into(), vec![]));
        assert_eq!(p("/db/_ldp/c/r").unwrap(), Route::Ldp("db".into(), vec!["c".into(), "r".into()]));
        assert_eq!(p("/db/_bogus").unwrap_err().status, 400);
        assert_eq!(p("/_utils/").unwrap(), Route::Console(vec![]));
        assert_eq!(p("/_utils/rhizome/sparql.html").unwrap(), Route::Console(vec!["rhizome".into(), "sparql.html".into()]));
        assert_eq!(p("/_users").unwrap(), Route::Db("_users".into()));
        assert_eq!(p("/db/_local/cp/file.txt").unwrap_err().status, 400);
        assert_eq!(p("/db/_design/d/_view/v").unwrap(), Route::DesignAction("db".into(), "_design/d".into(), "_view".into(), "v".into()));
        assert_eq!(p("/db/_compact/d").unwrap(), Route::DesignAction("db".into(), "_design/d".into(), "_compact".into(), String::new()));
        assert_eq!(p("/db/_find").unwrap(), Route::DbOp("db".into(), DbOp::Find));
        assert_eq!(p("/db/_local_docs").unwrap(), Route::DbOp("db".into(), DbOp::LocalDocs));
        assert_eq!(p("/db/_all_docs/queries").unwrap(), Route::DbOp("db".into(), DbOp::AllDocsQueries(couch::all_docs::Namespace::All)));
        assert_eq!(p("/db/_index").unwrap(), Route::MangoIndex("db".into(), vec![]));
        assert_eq!(p("/db/_index/_design/d/json/n").unwrap(), Route::MangoIndex("db".into(), vec!["_design".into(), "d".into(), "json".into(), "n".into()]));
        assert_eq!(p("/db/_partition/p/_all_docs").unwrap(), Route::Partition("db".into(), "p".into(), vec!["_all_docs".into()]));
        assert_eq!(p("/db/_design/d/_other").unwrap(), Route::Attachment("db".into(), "_design/d".into(), "_other".into()));
    }
}
