//! `rhizome-ldp`: the Linked Data Platform 1.0 model
//! (<https://www.w3.org/TR/ldp/>) over a database's documents, without HTTP.
//!
//! Owns: the interaction models ([`InteractionModel`]) and resource paths
//! ([`LdpPath`]); the index of LDP resources, container children and
//! membership targets kept in the database's store ([`index`], keyspaces
//! 45-47, entry format 1), maintained by [`LdpProjector`] (wrapping the
//! JSON-LD projector) inside every document write, whatever door the write
//! came through (LDP, CouchDB's API, SPARQL Update, the Graph Store
//! Protocol, replication, Python); containers' membership settings
//! ([`Membership`]); `Prefer` headers ([`Preferences`]); ETags ([`etag`]);
//! the server-managed triples a client may not write ([`constraints`]);
//! the rules every write of an LDP resource keeps, whatever its door
//! (`rights.rs`, checked by [`LdpProjector`]: `ldp:contains` is nobody's,
//! interaction models fixed, membership settings the admins', a parent
//! that is a container); and the store side of writes every door shares
//! ([`storage`]: revisions, ETags, a graph replaced, slugs, deletions with
//! descendants).
//! Does not own HTTP (`rhizome-server/src/ldp/`, at `/{db}/_ldp/`), nor
//! documents themselves (`rhizome-docs`): an LDP resource *is* a document
//! whose id is its absolute IRI under `<base>/<db>/_ldp/`, and whose graph,
//! of that same IRI, holds its triples.
//!
//! Containment (`ldp:contains`) and membership triples are never stored in
//! a container's graph: they are derived from the children index, one key
//! per child keyed by its parent, so a write under a container with 100k
//! children costs what it costs under an empty one, and a listing is a
//! prefix scan.
//!
//! Main types: [`LdpProjector`], [`InteractionModel`], [`LdpPath`],
//! [`ResourceEntry`], [`Membership`], [`Preferences`].

pub mod constraints;
mod error;
pub mod index;
pub mod storage;
mod membership;
mod model;
mod prefer;
mod projector;
mod rights;
pub mod vocab;

pub use error::LdpError;
pub use index::ResourceEntry;
pub use membership::{Membership, MemberRelation};
pub use membership::{objects, types};
pub use model::{encode_segment, etag, link_types, InteractionModel, LdpPath};
pub use prefer::Preferences;
pub use projector::LdpProjector;
