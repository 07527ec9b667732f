//! `rhizome-replication`: CouchDB's replication protocol
//! (https://docs.couchdb.org/en/stable/replication/protocol.html).
//!
//! Owns: the [`Endpoint`] a replication reads from or writes to, as a
//! database of this process ([`LocalEndpoint`], written straight to its
//! store or through a server's write path, [`LocalDatabase`]) or any CouchDB-compatible
//! server over HTTP ([`HttpEndpoint`]: CouchDB, PouchDB Server, another
//! Rhizome); and the replicator ([`replicate`]) that moves every missing
//! revision from a source to a target, one-shot or continuous, with
//! checkpoints in `_local` documents on both sides so that a later run (or
//! a run after a crash) starts where the last one recorded.
//!
//! Does not own: revision trees and how a replicated revision is merged
//! (`rhizome-docs`), the server side of the protocol (`rhizome-server`
//! answers `_changes`, `_revs_diff`, `_bulk_get` and `_bulk_docs`).
//!
//! Everything is synchronous; the HTTP endpoint runs its own small runtime.

mod changes_answer;
mod endpoint;
mod error;
mod http;
mod replicator;

pub use endpoint::{ChangesBatch, Endpoint, Filter, LocalDatabase, LocalEndpoint, Wanted, WriteFailure};
pub use error::{Error, Result};
pub use changes_answer::MAX_CHANGE_REVS;
pub use http::{HttpEndpoint, MAX_ANSWER_BYTES};
pub use replicator::{replicate, replication_id, Options, Report};
