//! `rhizome-graph`: graph traversals over the quad indexes.
//!
//! Owns: walks over the links between nodes (a link is a quad whose object
//! is an IRI or a blank node, in any graph: the union of a database's
//! documents), namely neighbours to depth k ([`neighbours`],
//! `traverse.rs`), shortest paths by bidirectional breadth-first search
//! expanding the smaller frontier ([`shortest_paths`], one or all of them,
//! `path.rs`), cheapest paths where a numeric property of each node
//! entered is the cost ([`cheapest_path`], Dijkstra, `weighted.rs`) and
//! counts by object of a predicate ([`count_by_object`], from the store's
//! value counts when it keeps them), each within [`Limits`] (nodes
//! visited, a deadline).
//! Does not own: reading quads (`rhizome-rdf`'s scans), documents
//! (`rhizome-docs`), HTTP (`rhizome-server`'s `graph/`, serving
//! `POST /{db}/_traverse` and `/{db}/_path`), SPARQL (`rhizome-sparql`'s
//! `SERVICE <urn:rhizome:graph>`), the command line (`rhizome graph`).
//!
//! Frontiers and visited sets are sorted vectors of term ids, merged level
//! by level: no allocation per node, and a level of a million nodes is a
//! sort of 8-byte keys. Lookups re-point pooled reusable scans
//! (`links.rs`) instead of opening a cursor per node.
//!
//! Main types: [`LinkFilter`], [`Direction`], [`Limits`], [`Reached`],
//! [`Paths`].

mod error;
mod idset;
mod links;
mod path;
mod traverse;
mod weighted;

pub use error::{Error, Result};
pub use links::{Direction, LinkFilter, LinkReader, Source};
pub use path::{shortest_paths, PathOptions, Paths};
pub use traverse::{count_by_object, neighbours, scan_count_by_object, Reached, Traversal};
pub use weighted::{cheapest_path, CheapestPath, WeightOptions};

use std::time::Instant;

/// Bounds on one walk's work.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Nodes a walk may visit (reach), the start excluded. A traversal
    /// that reaches more stops and says it was cut; a path search fails.
    pub max_nodes: usize,
    /// The walk fails with [`Error::Timeout`] past this instant.
    pub deadline: Option<Instant>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_nodes: usize::MAX, deadline: None }
    }
}

impl Limits {
    pub(crate) fn check_time(&self) -> Result<()> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(Error::Timeout),
            _ => Ok(()),
        }
    }
}
