//! The RDF views of a database, served beside CouchDB's API on the same
//! store: `/{db}/_sparql` (SPARQL 1.1 Protocol) and `/{db}/_graph` (Graph
//! Store Protocol). Routed and access-checked like every endpoint (members
//! of the database); the handlers come with the JSON-LD projection.

use crate::error::HttpError;
use crate::http::{Body, Request};
use crate::state::DbHandle;
use hyper::Response;

pub fn route(_req: &Request, _db: &DbHandle, what: &str) -> Result<Response<Body>, HttpError> {
    Err(HttpError::new(501, "not_implemented", format!("{what} is not implemented yet")))
}
