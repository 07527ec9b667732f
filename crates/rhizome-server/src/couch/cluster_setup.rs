//! `/_cluster_setup`, which Fauxton's setup screen calls
//! (https://docs.couchdb.org/en/stable/api/server/common.html#cluster-setup),
//! answered as a single-node CouchDB 3.5 answers once set up: Rhizome is
//! one node whose system databases (`_users`, `_replicator`) always exist,
//! so its state is always `single_node_enabled`.
//!
//! The POST actions:
//! - `enable_single_node` is `{"ok": true}`, as CouchDB answers on a node
//!   already set up. Nothing changes: the bind address, the port and the
//!   admins are `rhizome serve`'s options (`--bind`, `RHIZOME_ADMIN`).
//! - `finish_cluster` is CouchDB's 400 "Cluster is already finished".
//! - `enable_cluster`, `add_node`, `receive_cookie` and `complete` (the
//!   steps that form a cluster) are a 400 that says so: a Rhizome server
//!   is one node (servers share data through a Cassandra store, not
//!   CouchDB's clustering), where CouchDB would start forming one.
//! - anything else is CouchDB's 400 "Invalid Action".

use crate::error::HttpError;
use crate::http::{json, Body, Request};
use hyper::{Method, Response};
use serde_json::{json, Value};

/// The state CouchDB names for a single node whose system databases exist.
const STATE: &str = "single_node_enabled";

/// `/_cluster_setup` (server admins only, as CouchDB).
pub fn handle(req: &Request) -> Result<Response<Body>, HttpError> {
    match req.method {
        // `ensure_dbs_exist` names databases to check; Rhizome's system
        // databases always exist, as CouchDB's do once set up.
        Method::GET | Method::HEAD => Ok(json(200, &json!({ "state": STATE }))),
        Method::POST => {
            let body = req.json_object()?;
            match body.get("action").and_then(Value::as_str) {
                Some("enable_single_node") => Ok(json(200, &json!({ "ok": true }))),
                Some("finish_cluster") => Err(HttpError::bad_request("Cluster is already finished")),
                Some(action @ ("enable_cluster" | "add_node" | "receive_cookie" | "complete")) => Err(HttpError::bad_request(format!(
                    "{action}: this server is one node and does not form a CouchDB cluster; servers share data through one Cassandra store (rhizome serve --store cassandra://...)"
                ))),
                _ => Err(HttpError::bad_request("Invalid Action")),
            }
        }
        _ => Err(HttpError::method_not_allowed("GET,POST")),
    }
}
