//! Quad indexes: which orderings exist, how keys are laid out, and how a
//! quad pattern becomes prefix scans.

mod graphs;
pub mod layout;
mod scan;

pub use graphs::graph_names;
pub use scan::{approximate_bytes, families_present, Families, FamilyMarks, QuadBatch, QuadPattern, QuadScan};
