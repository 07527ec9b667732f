//! `rhizome-rdf`: RDF on the key-value layer.
//!
//! Owns: the encoding of terms to 8-byte ids (small literals inlined, the
//! rest in a dictionary), the quad indexes and their pattern scans, the bulk
//! loader (parse, encode, sort runs, ingest), dumps, statistics and the two
//! dataset modes (union of document graphs, or a plain RDF dataset).
//! Does not own: query evaluation (`rhizome-sparql`), documents and
//! revisions (`rhizome-docs`).
//!
//! Main types: [`Store`], [`StoreSnapshot`], [`TermId`], [`QuadPattern`],
//! [`QuadScan`], [`LoadOptions`], [`LoadSummary`], [`Stats`].

mod check;
mod dump;
mod error;
pub mod index;
mod load;
pub mod nesting;
pub mod segment;
pub mod segmented;
mod stats;
mod store;
pub mod term;
mod write;

pub use check::CheckReport;
pub use dump::{dump, DecodeCache, DumpOptions};
pub use error::{Error, Result, SyntaxIssue};
pub use index::{QuadPattern, QuadScan};
pub use load::{format_from_name, format_from_path, LoadInput, LoadOptions, LoadSummary};
pub use oxrdfio::RdfFormat;
pub use stats::{quads_counted, value_counts, PredicateStats, Stats, ValueCounts, VALUE_COUNT_LIMIT};
pub use store::{DatasetMode, Store, StoreSnapshot};
pub use term::TermId;
pub use write::StoreTransaction;
