//! Terms: ids, inlined values and the dictionary of everything else.

mod dictionary;
mod id;
mod cache;
pub mod inline;
pub mod range;

pub use dictionary::{decode_term, term_key, Dictionary, TermKey};
pub use cache::TermCache;
pub use id::{tag, TermId};
