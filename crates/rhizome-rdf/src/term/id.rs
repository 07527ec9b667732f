//! Term ids: every RDF term is a fixed 8-byte id. The top byte is a tag
//! saying what kind of term it is; the 56 bits below are either a dictionary
//! sequence number or, for small literals, the value itself (inlined), laid
//! out so that big-endian byte order is value order within a tag. Ids are
//! written big-endian in index keys, so an index scan over one tag's range is
//! a scan in value order: a range filter on numbers or dates is a key range.

/// An encoded RDF term (or the default graph, `TermId::DEFAULT_GRAPH`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TermId(pub u64);

/// The tags. Their order puts blank nodes before IRIs before literals, as
/// SPARQL's ORDER BY does.
pub mod tag {
    /// The default graph of a plain dataset (only ever a graph name).
    pub const DEFAULT_GRAPH: u8 = 0x00;
    /// Blank node: a fresh sequence number, nothing stored.
    pub const BLANK: u8 = 0x01;
    /// IRI: dictionary.
    pub const IRI: u8 = 0x02;
    /// xsd:string of at most 7 UTF-8 bytes without NUL, inlined, zero padded.
    pub const SHORT_STRING: u8 = 0x10;
    /// Longer xsd:string: dictionary.
    pub const STRING: u8 = 0x11;
    /// Language-tagged string: dictionary.
    pub const LANG_STRING: u8 = 0x12;
    /// xsd:boolean in canonical form, inlined.
    pub const BOOLEAN: u8 = 0x20;
    /// xsd:integer in canonical form within 56 signed bits, inlined.
    pub const INTEGER: u8 = 0x21;
    /// xsd:decimal in canonical form, fixed point with 6 fraction digits, inlined.
    pub const DECIMAL: u8 = 0x22;
    /// xsd:date in canonical form (years 0000-9999), inlined.
    pub const DATE: u8 = 0x23;
    /// xsd:dateTime in canonical form without fractional seconds, inlined.
    pub const DATE_TIME: u8 = 0x24;
    /// Any other literal: dictionary.
    pub const TYPED: u8 = 0x2F;
    /// Reserved for terms that live only in one query's memory (constants
    /// and computed values the store does not hold): never written to the
    /// store, so no stored id has this tag.
    pub const QUERY_LOCAL: u8 = 0xF0;
}

pub(crate) const PAYLOAD_BITS: u32 = 56;
pub(crate) const PAYLOAD_MASK: u64 = (1 << PAYLOAD_BITS) - 1;

impl TermId {
    pub const DEFAULT_GRAPH: TermId = TermId(0);

    pub fn new(tag: u8, payload: u64) -> TermId {
        debug_assert!(payload <= PAYLOAD_MASK, "payload exceeds 56 bits");
        TermId(((tag as u64) << PAYLOAD_BITS) | payload)
    }
    pub fn tag(self) -> u8 {
        (self.0 >> PAYLOAD_BITS) as u8
    }
    pub fn payload(self) -> u64 {
        self.0 & PAYLOAD_MASK
    }
    /// Terms stored in the dictionary (as opposed to inlined or blank).
    pub fn is_in_dictionary(self) -> bool {
        matches!(self.tag(), tag::IRI | tag::STRING | tag::LANG_STRING | tag::TYPED)
    }
    pub fn is_blank(self) -> bool {
        self.tag() == tag::BLANK
    }
    pub fn is_iri(self) -> bool {
        self.tag() == tag::IRI
    }
    pub fn is_literal(self) -> bool {
        self.tag() >= tag::SHORT_STRING
    }
    pub fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
    pub fn from_be_slice(b: &[u8]) -> TermId {
        let mut a = [0; 8];
        a.copy_from_slice(&b[..8]);
        TermId(u64::from_be_bytes(a))
    }
}
