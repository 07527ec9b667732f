//! The RDF views of a database, served beside CouchDB's API on the same
//! store: `/{db}/_sparql` (SPARQL 1.1 Protocol) and `/{db}/_graph` (Graph
//! Store Protocol), `/{db}/_traverse` and `/{db}/_path` (graph walks,
//! `crate::graph`). Routed and access-checked like every endpoint (members
//! of the database); answered in `crate::rdf`.

use crate::auth::UserCtx;
use crate::error::HttpError;
use crate::http::{Body, Request};
use crate::state::{DbHandle, Server};
use hyper::Response;

pub fn route(server: &Server, req: &Request, ctx: &UserCtx, db: &DbHandle, what: &str) -> Result<Response<Body>, HttpError> {
    match what {
        "_traverse" | "_path" => crate::graph::handle(server, req, db, what),
        _ => crate::rdf::route(server, req, ctx, db, what),
    }
}
