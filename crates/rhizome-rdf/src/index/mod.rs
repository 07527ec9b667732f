//! Quad indexes: which orderings exist, how keys are laid out, and how a
//! quad pattern becomes prefix scans.

pub mod layout;
mod scan;

pub use scan::{QuadPattern, QuadScan};
