//! The RDF views of a database, served beside CouchDB's API on the same
//! store: `/{db}/_sparql` (SPARQL 1.1 Protocol) and `/{db}/_graph` (Graph
//! Store Protocol). Routed and access-checked like every endpoint (members
//! of the database); answered in `crate::rdf`.

use crate::error::HttpError;
use crate::http::{Body, Request};
use crate::state::DbHandle;
use hyper::Response;

pub fn route(req: &Request, server: &crate::state::Server, db: &DbHandle, what: &str) -> Result<Response<Body>, HttpError> {
    crate::rdf::route(req, server, db, what)
}
