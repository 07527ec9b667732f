//! The errors of a walk.

/// What can stop a walk.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] rhizome_rdf::Error),
    /// The walk ran past its deadline.
    #[error("the graph walk ran out of time")]
    Timeout,
    /// A path search visited more nodes than its limit allows.
    #[error("the path search visited more than {0} nodes without an answer (max_nodes)")]
    NodeLimit(usize),
    /// A node's weight is not a non-negative finite number.
    #[error("node {node} has weight {value:?}, not a non-negative number")]
    BadWeight { node: String, value: String },
}

pub type Result<T> = std::result::Result<T, Error>;
