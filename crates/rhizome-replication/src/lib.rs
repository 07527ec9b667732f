//! `rhizome-replication`: CouchDB's replication protocol
//! (<https://docs.couchdb.org/en/stable/replication/protocol.html>).
//!
//! Owns: the [`Endpoint`] a replication reads from or writes to, as a
//! database of this process ([`LocalEndpoint`], written straight to its
//! store or through a server's write path, [`LocalDatabase`]) or any
//! CouchDB-compatible server over HTTP ([`HttpEndpoint`]: CouchDB, PouchDB
//! Server, another Rhizome); and the replicator ([`replicate`]) that moves
//! every missing revision from a source to a target, one-shot or
//! continuous, with checkpoints in `_local` documents on both sides so that
//! a later run (or a run after a crash) starts where the last one recorded.
//!
//! Does not own: revision trees and how a replicated revision is merged
//! (`rhizome-docs`), the server side of the protocol (`rhizome-server`
//! answers `_changes`, `_revs_diff`, `_bulk_get` and `_bulk_docs` from the
//! same `rhizome-docs` calls the local endpoint makes), design-document
//! filters (`rhizome-views`).
//!
//! Everything is synchronous; the HTTP endpoint runs its own small runtime
//! (`hyper` 1 client on a current-thread `tokio` runtime).
//!
//! - **Endpoints look alike** (`endpoint.rs`): the replicator speaks only
//!   the protocol's JSON shapes (`_changes` rows with `style=all_docs`,
//!   `_revs_diff` answers, documents with `_revisions`), so a local
//!   database and a remote server are interchangeable.
//! - **The loop** (`replicator.rs`): read up to `batch_size` changes (500,
//!   as CouchDB's replicator), ask the target which revisions it lacks,
//!   fetch those (`_bulk_get` with `revs`, `latest`, inline attachments
//!   except those the target's `possible_ancestors` already have; one
//!   `open_revs` per document when a server lacks `_bulk_get`) in slices of
//!   100 revisions, fewer while the revisions are large (a slice holds
//!   about 8 MiB), store them with `new_edits=false` in writes of at most
//!   8 MiB of JSON (large attachments stay under servers' request limits),
//!   then checkpoint. Continuous mode long-polls the source
//!   for more and waits out failures of either side from its very start
//!   (backoff up to 10 s): two nodes restarting together find each other.
//!   `doc_ids` and `selector` filters are the source's own `_changes`
//!   filters (`_doc_ids`, `_selector`), and part of the replication id.
//! - **Checkpoints**: `_local/<replication id>` on both sides (the id is the
//!   MD5 of the two endpoints' names, passwords left out), written target
//!   first, each with the session id, the sequence reached and a history
//!   of 50 sessions. A run starts from the sequence of the newest session
//!   both sides recorded, so a crash between the two writes, or a side that
//!   lost its checkpoint, costs a recheck and never a missed change. Source
//!   sequences are kept opaque (CouchDB's are strings).
//! - **HTTP** (`http.rs`): one keep-alive connection, one request at a
//!   time, Basic auth from the URL, a stale kept connection retried once
//!   (every request the replicator makes is safe to repeat). No TLS yet.
//! - **Bounds on what a source sends**: each answer within
//!   `MAX_ANSWER_BYTES` (64 MiB; `rhizome serve` sets its own
//!   `--max-body-bytes`), `_changes` read row by row up to the batch
//!   size (`changes_answer.rs`), at most `MAX_CHANGE_REVS` (10,000)
//!   revisions per change; past either, that document fails and the
//!   replication goes on.

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
