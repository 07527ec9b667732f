//! The dictionary: IRIs, long strings, language-tagged and other literals,
//! each stored once under a sequential id.
//!
//! Two keyspaces: `id2term` (id -> serialized term) to decode, and
//! `term2id` (64-bit hash of the serialized term -> the ids with that hash,
//! 8 bytes each) to encode. Hash collisions are resolved by comparing the
//! serialized terms, so they cost a lookup, never a wrong id. Sequential ids
//! (rather than hashes as ids) keep index keys small and compressible.

use super::id::{tag, TermId};
use super::inline::{decode_inline, inline_literal, XSD_STRING};
use crate::index::layout::{ID2TERM, TERM2ID};
use crate::{Error, Result};
use oxrdf::{BlankNode, Literal, NamedNode, Term, TermRef};
use rhizome_kv::KvRead;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// How a term is encoded: inline (its id is its value), blank (scoped to
/// the load or update that creates it), or in the dictionary under a tag
/// with its serialized bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermKey<'a> {
    Inline(TermId),
    Blank(&'a str),
    Dictionary { tag: u8, bytes: std::borrow::Cow<'a, [u8]> },
}

impl TermKey<'_> {
    /// The hash under which a dictionary term is found in `term2id`.
    pub fn hash(tag: u8, bytes: &[u8]) -> u64 {
        xxh3_64_with_seed(bytes, tag as u64)
    }
}

/// The serialized form of a dictionary term: IRI bytes; string lexical form;
/// `lang NUL lexical`; `datatype NUL lexical` (NUL is in neither IRIs nor
/// language tags).
pub fn term_key(term: TermRef<'_>) -> TermKey<'_> {
    match term {
        TermRef::NamedNode(n) => TermKey::Dictionary { tag: tag::IRI, bytes: n.as_str().as_bytes().into() },
        TermRef::BlankNode(b) => TermKey::Blank(b.as_str()),
        TermRef::Literal(l) => {
            if let Some(lang) = l.language() {
                let mut bytes = Vec::with_capacity(lang.len() + 1 + l.value().len());
                bytes.extend_from_slice(lang.as_bytes());
                bytes.push(0);
                bytes.extend_from_slice(l.value().as_bytes());
                return TermKey::Dictionary { tag: tag::LANG_STRING, bytes: bytes.into() };
            }
            let datatype = l.datatype().as_str();
            if let Some(id) = inline_literal(l.value(), datatype) {
                return TermKey::Inline(id);
            }
            if datatype == XSD_STRING {
                return TermKey::Dictionary { tag: tag::STRING, bytes: l.value().as_bytes().into() };
            }
            let mut bytes = Vec::with_capacity(datatype.len() + 1 + l.value().len());
            bytes.extend_from_slice(datatype.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(l.value().as_bytes());
            TermKey::Dictionary { tag: tag::TYPED, bytes: bytes.into() }
        }
        #[allow(unreachable_patterns)]
        _ => TermKey::Dictionary { tag: tag::TYPED, bytes: Vec::new().into() },
    }
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| Error::Corrupt("dictionary entry is not UTF-8".into()))
}

/// Rebuilds a dictionary term from its tag and serialized bytes.
pub fn decode_term(tag: u8, bytes: &[u8]) -> Result<Term> {
    Ok(match tag {
        tag::IRI => NamedNode::new_unchecked(utf8(bytes)?).into(),
        tag::STRING => Literal::new_simple_literal(utf8(bytes)?).into(),
        tag::LANG_STRING | tag::TYPED => {
            let nul = bytes
                .iter()
                .position(|b| *b == 0)
                .ok_or_else(|| Error::Corrupt("dictionary literal without separator".into()))?;
            let (head, lexical) = (utf8(&bytes[..nul])?, utf8(&bytes[nul + 1..])?);
            if tag == tag::LANG_STRING {
                Literal::new_language_tagged_literal_unchecked(lexical, head).into()
            } else {
                Literal::new_typed_literal(lexical, NamedNode::new_unchecked(head)).into()
            }
        }
        other => return Err(Error::Corrupt(format!("unknown dictionary tag {other:#x}"))),
    })
}

/// Reads the dictionary through a snapshot.
pub struct Dictionary;

impl Dictionary {
    /// The id of a term already in the store, if it is there. Blank nodes
    /// are only found by the labels the store gives them (`b` + hex id).
    pub fn lookup(snapshot: &dyn KvRead, term: TermRef<'_>) -> Result<Option<TermId>> {
        match term_key(term) {
            TermKey::Inline(id) => Ok(Some(id)),
            TermKey::Blank(label) => Ok(parse_blank_label(label)),
            TermKey::Dictionary { tag, bytes } => Self::lookup_key(snapshot, tag, &bytes),
        }
    }

    pub fn lookup_key(snapshot: &dyn KvRead, tag: u8, bytes: &[u8]) -> Result<Option<TermId>> {
        let hash = TermKey::hash(tag, bytes);
        let Some(ids) = snapshot.get(TERM2ID, &hash.to_be_bytes())? else {
            return Ok(None);
        };
        for chunk in ids.chunks_exact(8) {
            let id = TermId::from_be_slice(chunk);
            if id.tag() != tag {
                continue;
            }
            if snapshot.get(ID2TERM, &id.to_be_bytes())?.as_deref() == Some(bytes) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The term of an id. The default graph has no term (`None`).
    pub fn decode(snapshot: &dyn KvRead, id: TermId) -> Result<Option<Term>> {
        if id == TermId::DEFAULT_GRAPH {
            return Ok(None);
        }
        if id.is_blank() {
            return Ok(Some(BlankNode::new_unchecked(blank_label(id)).into()));
        }
        if let Some((lexical, datatype)) = decode_inline(id) {
            return Ok(Some(Literal::new_typed_literal(lexical, NamedNode::new_unchecked(datatype)).into()));
        }
        let bytes = snapshot
            .get(ID2TERM, &id.to_be_bytes())?
            .ok_or_else(|| Error::Corrupt(format!("term id {:#x} is not in the dictionary", id.0)))?;
        decode_term(id.tag(), &bytes).map(Some)
    }
}

impl Dictionary {
    /// Decodes many dictionary ids (sorted and deduplicated here) with one
    /// cursor walking the dictionary in id order: ids close together cost
    /// a step or two of the cursor instead of a point lookup each (result
    /// rows decode their terms in batches). Ids that are not dictionary
    /// terms are skipped.
    pub fn decode_many(snapshot: &dyn KvRead, ids: &mut Vec<TermId>, mut out: impl FnMut(TermId, Term)) -> Result<()> {
        ids.retain(|id| id.is_in_dictionary());
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(());
        }
        let mut cursor = snapshot.cursor(ID2TERM, &[], None);
        let mut positioned = false;
        for &id in ids.iter() {
            let target = id.to_be_bytes();
            // A few steps forward when the next id is near, else a seek.
            let mut steps = 0;
            while positioned && cursor.valid() && cursor.key() < &target[..] && steps < 8 {
                cursor.next();
                steps += 1;
            }
            if !positioned || !cursor.valid() || cursor.key() < &target[..] {
                cursor.seek(&target);
                positioned = true;
            }
            if cursor.valid() && cursor.key() == &target[..] {
                out(id, decode_term(id.tag(), cursor.value())?);
            } else {
                cursor.status()?;
                return Err(Error::Corrupt(format!("term id {:#x} is not in the dictionary", id.0)));
            }
        }
        Ok(())
    }
}

/// The label a stored blank node is written with.
pub fn blank_label(id: TermId) -> String {
    format!("b{:x}", id.payload())
}

fn parse_blank_label(label: &str) -> Option<TermId> {
    let hex = label.strip_prefix('b')?;
    let payload = u64::from_str_radix(hex, 16).ok()?;
    (format!("{payload:x}") == hex && payload < (1 << 56)).then(|| TermId::new(tag::BLANK, payload))
}
