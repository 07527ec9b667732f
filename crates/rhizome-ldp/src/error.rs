/// What the LDP model refuses, and the store's failures under it.
#[derive(Debug, thiserror::Error)]
pub enum LdpError {
    /// A request that would break an LDP constraint (a server-managed
    /// triple, a change of interaction model): 409 with `constrainedBy`.
    #[error("{0}")]
    Constraint(String),
    #[error(transparent)]
    Store(#[from] rhizome_rdf::Error),
    #[error(transparent)]
    Kv(#[from] rhizome_kv::Error),
    #[error("corrupt LDP index: {0}")]
    Corrupt(String),
}
