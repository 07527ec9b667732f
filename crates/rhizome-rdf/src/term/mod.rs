//! Terms: ids, inlined values and the dictionary of everything else.

mod dictionary;
mod id;
pub mod inline;
pub mod range;

pub use dictionary::{decode_term, term_key, Dictionary, TermKey};
pub use id::{tag, TermId};
