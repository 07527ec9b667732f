//! Term ids: every RDF term is a fixed 8-byte id. The top byte is a tag
//! saying what kind of term it is; the 56 bits below are either a dictionary
//! sequence number or, for small literals, the value itself (inlined), laid
//! out so that big-endian byte order is value order within a tag. Ids are
//! written big-endian in index keys, so an index scan over one tag's range is
//! a scan in value order: a range filter on numbers or dates is a key range.

/// An encoded RDF term (or the default graph, `TermId::DEFAULT_GRAPH`).
/// `repr(transparent)`: scans copy columns of ids as slices of `u64`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
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
    /// Language-tagged string: dictionary, with the language's primary
    /// subtag in the id (see `TermId::lang_code`).
    pub const LANG_STRING: u8 = 0x12;
    /// Language-tagged string with a base direction (RDF 1.2,
    /// `"x"@en--ltr`): dictionary, `lang--dir NUL lexical` (no language
    /// code in the id: read the term).
    pub const DIR_LANG_STRING: u8 = 0x13;
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
    /// Triple term (RDF 1.2, `<<( s p o )>>`): dictionary, its bytes the
    /// three component ids (24 bytes, big-endian), so nested triple terms
    /// are ids of ids and a pattern over a triple term's parts works on
    /// ids. After literals, as SPARQL 1.2's ORDER BY puts them.
    pub const TRIPLE: u8 = 0x30;
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
        matches!(self.tag(), tag::IRI | tag::STRING | tag::LANG_STRING | tag::DIR_LANG_STRING | tag::TYPED | tag::TRIPLE)
    }
    pub fn is_triple(self) -> bool {
        self.tag() == tag::TRIPLE
    }
    pub fn is_blank(self) -> bool {
        self.tag() == tag::BLANK
    }
    pub fn is_iri(self) -> bool {
        self.tag() == tag::IRI
    }
    pub fn is_literal(self) -> bool {
        (tag::SHORT_STRING..=tag::TYPED).contains(&self.tag())
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

/// The language of a language-tagged string, in its id: the payload's top
/// 16 bits above a 40-bit dictionary sequence number. Bit 15 says the tag
/// has subtags after the primary one; bits 14-0 are the primary subtag
/// when it is 2 or 3 lowercase ASCII letters (5 bits each, `a` = 1, a
/// third letter of 0 for two-letter subtags), which covers ISO 639. Code 0
/// means "not in the id" (another shape of tag, or an id written before
/// codes existed): read the term. Filters on `lang` and `langMatches`
/// decide on the code without reading the dictionary.
pub mod lang_code {
    pub const SEQUENCE_BITS: u32 = 40;
    pub const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;
    pub const HAS_SUBTAGS: u16 = 1 << 15;

    /// The code of a primary subtag of 2-3 lowercase letters, else 0.
    pub fn primary(subtag: &str) -> u16 {
        let b = subtag.as_bytes();
        if !(2..=3).contains(&b.len()) || !b.iter().all(u8::is_ascii_lowercase) {
            return 0;
        }
        let letter = |i: usize| b.get(i).map_or(0, |c| (c - b'a' + 1) as u16);
        (letter(0) << 10) | (letter(1) << 5) | letter(2)
    }

    /// The code of a whole language tag as stored (0: not representable).
    pub fn of(tag: &str) -> u16 {
        let (first, rest) = match tag.split_once('-') {
            Some((first, _)) => (first, HAS_SUBTAGS),
            None => (tag, 0),
        };
        match primary(first) {
            0 => 0,
            code => code | rest,
        }
    }
}

impl TermId {
    /// A dictionary id from its sequence number; language-tagged strings
    /// carry their language code (`lang_code`) above it. `None` when a
    /// language-tagged string's sequence number passes 40 bits (a trillion
    /// terms).
    pub fn dictionary(tag: u8, sequence: u64, language: Option<&str>) -> Option<TermId> {
        match language {
            Some(lang) if tag == tag::LANG_STRING => {
                (sequence <= lang_code::SEQUENCE_MASK).then(|| TermId::new(tag, ((lang_code::of(lang) as u64) << lang_code::SEQUENCE_BITS) | sequence))
            }
            _ => Some(TermId::new(tag, sequence)),
        }
    }

    /// The sequence number of a dictionary or blank id (the payload without
    /// a language code).
    pub fn sequence(self) -> u64 {
        if self.tag() == tag::LANG_STRING { self.payload() & lang_code::SEQUENCE_MASK } else { self.payload() }
    }

    /// The language code of a language-tagged string's id (0: unknown,
    /// read the term); `None` for any other term.
    pub fn lang_code(self) -> Option<u16> {
        (self.tag() == tag::LANG_STRING).then(|| (self.payload() >> lang_code::SEQUENCE_BITS) as u16)
    }
}

#[cfg(test)]
mod lang_code_tests {
    use super::*;

    #[test]
    fn language_codes_keep_the_primary_subtag_and_whether_more_follows() {
        assert_eq!(lang_code::of("de"), lang_code::primary("de"));
        assert_ne!(lang_code::of("de"), lang_code::of("en"));
        assert_ne!(lang_code::of("de"), lang_code::of("deu"));
        assert_eq!(lang_code::of("de-ch"), lang_code::of("de-at"));
        assert_eq!(lang_code::of("de-ch") & !lang_code::HAS_SUBTAGS, lang_code::of("de"));
        for odd in ["DE", "De-CH", "x-klingon", "i-navajo", "abcd", "e", ""] {
            assert_eq!(lang_code::of(odd), 0, "{odd}");
        }
        let id = TermId::dictionary(tag::LANG_STRING, 12345, Some("fr-be")).unwrap();
        assert_eq!((id.tag(), id.sequence(), id.lang_code()), (tag::LANG_STRING, 12345, Some(lang_code::of("fr-be"))));
        assert_eq!(TermId::dictionary(tag::IRI, 12345, None).unwrap(), TermId::new(tag::IRI, 12345));
        assert!(TermId::dictionary(tag::LANG_STRING, 1 << 40, Some("fr")).is_none());
    }
}
