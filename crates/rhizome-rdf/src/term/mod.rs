//! Terms: ids, inlined values and the dictionary of everything else.

mod dictionary;
mod rebase;
mod id;
mod cache;
pub mod inline;
pub mod range;

pub(crate) use dictionary::serialize_with_head;
pub use dictionary::{decode_entry, decode_term, new_dictionary_id, triple_bytes, triple_ids, term2id_key, term2id_key_into, term_key, Dictionary, TermKey, KEYED_BY_BYTES};
pub use cache::{IdCache, TermCache};
pub use id::{lang_code, tag, TermId};
pub use rebase::{rebase_dictionary, rebased_iri};
