//! `rhizome-sparql`: SPARQL 1.1 query and update over the encoded store.
//!
//! Owns: the translation of spargebra's algebra to a plan over term ids
//! (`plan`), its execution as iterators of rows of ids with index nested
//! loop and hash joins (`eval`), expressions and built-in functions over XSD
//! values (`expression`), SPARQL Update as one store transaction per request
//! (`update`) and result serialization (`results`), and the bounds on a
//! request's nesting and chains checked before anything recursive runs
//! (`nesting`).
//! Does not own: parsing (spargebra), result formats (sparesults), storage
//! and term encoding (`rhizome-rdf`).
//!
//! Main types: [`PreparedQuery`], [`QueryResults`], [`SparqlError`];
//! functions [`parse_query`], [`execute_update`], [`write_results`].
//!
//! Limits of this version (the next steps): rows are vectors cloned per
//! binding and scans are boxed iterators (no batching yet); merge joins
//! only for patterns binding one shared subject (with predicate and
//! object bound); property paths, ORDER BY, GROUP BY and hash-join sides are
//! materialized (bounded by the memory limit, no spilling); expressions
//! work on decoded terms (only comparisons of inlined integers and
//! decimals use ids); EXPLAIN counts rows but
//! estimates only quad patterns.

mod error;
mod eval;
mod explain;
mod memory;
mod expression;
mod graph_service;
pub mod nesting;
mod plan;
mod query;
mod results;
mod select_star;
mod terms;
mod update;

pub use error::{Result, SparqlError};
pub use memory::{MemoryPool, MemoryReservation};
pub use plan::Statistics;
pub use query::{parse_query, PreparedQuery, QueryResults};
pub use results::{write_results, ResultFormat};
pub use update::{execute_update, execute_update_in, execute_update_with_stored_default, parse_update, LoadFolder, LoadPolicy, UpdateLimits, UpdateSummary, DEFAULT_LOAD_MAX_BYTES};
