//! Helpers of the RDF endpoint tests: an HTTP client that sends any
//! method, headers and bytes and returns the whole response, and the reader
//! of the W3C protocol manifests (requests and expected responses in the
//! `ht:` vocabulary).
#![allow(dead_code)] // each test file uses its own subset

pub mod client;
pub mod manifest;
