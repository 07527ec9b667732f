//! The dictionary: IRIs, long strings, language-tagged and other literals,
//! each stored once under a sequential id.
//!
//! Two keyspaces: `id2term` (id -> serialized term) to decode, and
//! `term2id` to encode, keyed by the term itself: tag and serialized bytes
//! -> id. Sorted terms share long prefixes (namespaces), which the blocks'
//! prefix compression removes, so this map is smaller than one keyed by
//! hashes (random, incompressible), and a lookup is one read with nothing
//! to verify. Terms longer than [`KEYED_BY_BYTES`] (long literals) are keyed
//! by a 64-bit hash instead, so the map does not hold their text twice: the
//! ids with that hash, 8 bytes each, told apart by comparing the serialized
//! terms (a collision costs a read, never a wrong id). Sequential ids
//! (rather than hashes as ids) keep index keys small and compressible.

use super::id::{tag, TermId};
use super::inline::{decode_inline, inline_literal, XSD_STRING};
use crate::index::layout::{ID2TERM, TERM2ID};
use crate::{Error, Result};
use oxrdf::{BaseDirection, BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, TermRef, Triple};
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
    /// A triple term: in the dictionary under `tag::TRIPLE` once its three
    /// terms have ids ([`triple_bytes`]).
    Triple(&'a Triple),
}

/// The serialized form of a triple term: its three terms' ids.
pub fn triple_bytes(s: TermId, p: TermId, o: TermId) -> [u8; 24] {
    let mut b = [0; 24];
    b[..8].copy_from_slice(&s.to_be_bytes());
    b[8..16].copy_from_slice(&p.to_be_bytes());
    b[16..].copy_from_slice(&o.to_be_bytes());
    b
}

/// The three ids of a triple term's serialized form.
pub fn triple_ids(bytes: &[u8]) -> Result<[TermId; 3]> {
    if bytes.len() != 24 {
        return Err(Error::Corrupt("a triple term's entry is not three ids".into()));
    }
    Ok([TermId::from_be_slice(&bytes[..8]), TermId::from_be_slice(&bytes[8..16]), TermId::from_be_slice(&bytes[16..])])
}

/// The separator of a directional language-tagged string's head
/// (`lang--dir`): a language tag never holds two hyphens in a row.
const DIRECTION_SEPARATOR: &str = "--";

fn direction_name(d: BaseDirection) -> &'static str {
    match d {
        BaseDirection::Ltr => "ltr",
        BaseDirection::Rtl => "rtl",
    }
}

impl TermKey<'_> {
    /// The hash of a dictionary term: a long term's key in `term2id`, and
    /// the loader's in-memory key for every term.
    pub fn hash(tag: u8, bytes: &[u8]) -> u64 {
        xxh3_64_with_seed(bytes, tag as u64)
    }
}

/// Serialized terms up to this length are `term2id` keys themselves.
pub const KEYED_BY_BYTES: usize = 240;
/// First byte of a hashed `term2id` key (no tag is 0xFF).
const HASHED: u8 = 0xFF;

/// The `term2id` key of a dictionary term, and whether it is a hash (its
/// value then lists every id with that hash).
pub fn term2id_key(tag: u8, bytes: &[u8]) -> (Vec<u8>, bool) {
    let mut key = Vec::with_capacity(1 + bytes.len().min(KEYED_BY_BYTES));
    let hashed = term2id_key_into(tag, bytes, &mut key);
    (key, hashed)
}

/// [`term2id_key`] appended to `out` (a loader writes a million of them).
pub fn term2id_key_into(tag: u8, bytes: &[u8], out: &mut Vec<u8>) -> bool {
    if bytes.len() <= KEYED_BY_BYTES {
        out.push(tag);
        out.extend_from_slice(bytes);
        false
    } else {
        out.push(HASHED);
        out.push(tag);
        out.extend_from_slice(&TermKey::hash(tag, bytes).to_be_bytes());
        true
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
            if let (Some(lang), Some(direction)) = (l.language(), l.direction()) {
                let dir = direction_name(direction);
                let mut bytes = Vec::with_capacity(lang.len() + 6 + l.value().len());
                bytes.extend_from_slice(lang.as_bytes());
                bytes.extend_from_slice(DIRECTION_SEPARATOR.as_bytes());
                bytes.extend_from_slice(dir.as_bytes());
                bytes.push(0);
                bytes.extend_from_slice(l.value().as_bytes());
                return TermKey::Dictionary { tag: tag::DIR_LANG_STRING, bytes: bytes.into() };
            }
            if let Some(lang) = l.language() {
                let mut bytes = Vec::with_capacity(lang.len() + 1 + l.value().len());
                serialize_with_head(lang, l.value(), &mut bytes);
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
            serialize_with_head(datatype, l.value(), &mut bytes);
            TermKey::Dictionary { tag: tag::TYPED, bytes: bytes.into() }
        }
        TermRef::Triple(t) => TermKey::Triple(t),
    }
}

/// Appends the serialized form of a language-tagged string (`head` its
/// language) or a typed literal (`head` its datatype) to `out`:
/// `head NUL lexical`.
pub(crate) fn serialize_with_head(head: &str, lexical: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(head.as_bytes());
    out.push(0);
    out.extend_from_slice(lexical.as_bytes());
}

/// The id a new dictionary term gets from its sequence number: a
/// language-tagged string's carries its language (`TermId::lang_code`).
pub fn new_dictionary_id(tag: u8, bytes: &[u8], sequence: u64) -> Result<TermId> {
    let language = if tag == tag::LANG_STRING {
        let nul = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        Some(utf8(&bytes[..nul])?)
    } else {
        None
    };
    TermId::dictionary(tag, sequence, language).ok_or_else(|| Error::Invalid("the store has used every id for language-tagged strings (2^40)".into()))
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| Error::Corrupt("dictionary entry is not UTF-8".into()))
}

/// Rebuilds a dictionary term from its tag and serialized bytes; a triple
/// term's parts are read through `snapshot`.
pub fn decode_entry(snapshot: &dyn KvRead, tag: u8, bytes: &[u8]) -> Result<Term> {
    if tag != tag::TRIPLE {
        return decode_term(tag, bytes);
    }
    let [s, p, o] = triple_ids(bytes)?;
    let part = |id: TermId| Dictionary::decode(snapshot, id)?.ok_or_else(|| Error::Corrupt("a triple term holds the default graph".into()));
    let subject = match part(s)? {
        Term::NamedNode(n) => NamedOrBlankNode::NamedNode(n),
        Term::BlankNode(b) => NamedOrBlankNode::BlankNode(b),
        _ => return Err(Error::Corrupt("a triple term's subject is not an IRI or blank node".into())),
    };
    let Term::NamedNode(predicate) = part(p)? else {
        return Err(Error::Corrupt("a triple term's predicate is not an IRI".into()));
    };
    Ok(Triple::new(subject, predicate, part(o)?).into())
}

/// Rebuilds a dictionary term from its tag and serialized bytes (not a
/// triple term: see [`decode_entry`]).
pub fn decode_term(tag: u8, bytes: &[u8]) -> Result<Term> {
    Ok(match tag {
        tag::IRI => NamedNode::new_unchecked(utf8(bytes)?).into(),
        tag::STRING => Literal::new_simple_literal(utf8(bytes)?).into(),
        tag::DIR_LANG_STRING => {
            let nul = bytes
                .iter()
                .position(|b| *b == 0)
                .ok_or_else(|| Error::Corrupt("dictionary literal without separator".into()))?;
            let (head, lexical) = (utf8(&bytes[..nul])?, utf8(&bytes[nul + 1..])?);
            let (lang, dir) = head.rsplit_once(DIRECTION_SEPARATOR).ok_or_else(|| Error::Corrupt("directional literal without direction".into()))?;
            let direction = match dir {
                "ltr" => BaseDirection::Ltr,
                "rtl" => BaseDirection::Rtl,
                other => return Err(Error::Corrupt(format!("unknown base direction {other:?}"))),
            };
            Literal::new_directional_language_tagged_literal_unchecked(lexical, lang, direction).into()
        }
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
            TermKey::Triple(t) => {
                let Some(s) = Self::lookup(snapshot, t.subject.as_ref().into())? else { return Ok(None) };
                let Some(p) = Self::lookup(snapshot, t.predicate.as_ref().into())? else { return Ok(None) };
                let Some(o) = Self::lookup(snapshot, t.object.as_ref())? else { return Ok(None) };
                Self::lookup_key(snapshot, tag::TRIPLE, &triple_bytes(s, p, o))
            }
        }
    }

    pub fn lookup_key(snapshot: &dyn KvRead, tag: u8, bytes: &[u8]) -> Result<Option<TermId>> {
        let (key, hashed) = term2id_key(tag, bytes);
        let Some(ids) = snapshot.get(TERM2ID, &key)? else {
            return Ok(None);
        };
        if !hashed {
            if ids.len() != 8 {
                return Err(Error::Corrupt("a term2id entry is not one id".into()));
            }
            return Ok(Some(TermId::from_be_slice(&ids)));
        }
        for chunk in ids.chunks_exact(8) {
            let id = TermId::from_be_slice(chunk);
            if snapshot.get(ID2TERM, &id.to_be_bytes())?.as_deref() == Some(bytes) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The `term2id` entry that adds `id` for a term: its key and value.
    /// `existing` reads the entry already stored under a key (for hashed
    /// keys, whose value lists every id with that hash).
    pub fn new_entry(tag: u8, bytes: &[u8], id: TermId, existing: impl FnOnce(&[u8]) -> Result<Option<Vec<u8>>>) -> Result<(Vec<u8>, Vec<u8>)> {
        let (key, hashed) = term2id_key(tag, bytes);
        let mut value = if hashed { existing(&key)?.unwrap_or_default() } else { Vec::with_capacity(8) };
        value.extend_from_slice(&id.to_be_bytes());
        Ok((key, value))
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
        decode_entry(snapshot, id.tag(), &bytes).map(Some)
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
        if snapshot.reads_are_round_trips() {
            // A cluster's store: every read a round trip, a cursor's seeks
            // one after another; the reads together cost about one.
            return Self::decode_together(snapshot, ids, &mut out);
        }
        // Ids in runs close enough for a cursor's steps are walked; the
        // others are read together (a local engine's batched read: one
        // search of each index and data block for the keys in it). In a
        // fresh process a cursor's seek cost about 30,000 instructions
        // (every file of every level sought, blocks read for the first
        // time) and a point read 15,000: 39,000 per term for the 1,860
        // scattered terms of a 3,344-row result (m15 at 4.8M).
        let mut scattered = Vec::new();
        let mut walked = Vec::new();
        let mut start = 0;
        for i in 1..=ids.len() {
            if i == ids.len() || ids[i].0 - ids[i - 1].0 > WALK_GAP {
                let run = &ids[start..i];
                if run.len() >= WALK_RUN {
                    walked.extend_from_slice(run);
                } else {
                    scattered.extend_from_slice(run);
                }
                start = i;
            }
        }
        if !scattered.is_empty() {
            Self::decode_together(snapshot, &scattered, &mut out)?;
        }
        if walked.is_empty() {
            return Ok(());
        }
        let mut cursor = snapshot.cursor(ID2TERM, &[], None);
        let mut positioned = false;
        for &id in walked.iter() {
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
                let term = if id.is_triple() {
                    // Its parts are read with other lookups: copy the
                    // entry out of the cursor first.
                    let bytes = cursor.value().to_vec();
                    decode_entry(snapshot, id.tag(), &bytes)?
                } else {
                    decode_term(id.tag(), cursor.value())?
                };
                out(id, term);
            } else {
                cursor.status()?;
                return Err(Error::Corrupt(format!("term id {:#x} is not in the dictionary", id.0)));
            }
        }
        Ok(())
    }

    /// Decodes `ids` (dictionary ids) with one [`KvRead::get_many`] per
    /// [`TOGETHER`] of them.
    fn decode_together(snapshot: &dyn KvRead, ids: &[TermId], out: &mut impl FnMut(TermId, Term)) -> Result<()> {
        for ids in ids.chunks(TOGETHER) {
            let keys: Vec<Vec<u8>> = ids.iter().map(|id| id.to_be_bytes().to_vec()).collect();
            for (&id, bytes) in ids.iter().zip(snapshot.get_many(ID2TERM, &keys)?) {
                let bytes = bytes.ok_or_else(|| Error::Corrupt(format!("term id {:#x} is not in the dictionary", id.0)))?;
                out(id, decode_entry(snapshot, id.tag(), &bytes)?);
            }
        }
        Ok(())
    }
}

/// Ids at most this far apart are one run of [`Dictionary::decode_many`]'s
/// cursor: a step costs about 1,200 instructions, a scattered id read
/// together about 12,000 (the names of m29's 128k students, about 10 ids
/// apart, took 0.7 s more CPU read together than walked).
const WALK_GAP: u64 = 8;
/// Runs of at least this many ids are walked by a cursor (a seek costs
/// about 30,000 instructions); shorter ones are read together
/// ([`KvRead::get_many`]).
const WALK_RUN: usize = 4;
/// Ids per [`KvRead::get_many`] of [`Dictionary::decode_many`].
const TOGETHER: usize = 4096;

/// The label a stored blank node is written with.
pub fn blank_label(id: TermId) -> String {
    format!("b{:x}", id.payload())
}

fn parse_blank_label(label: &str) -> Option<TermId> {
    let hex = label.strip_prefix('b')?;
    let payload = u64::from_str_radix(hex, 16).ok()?;
    (format!("{payload:x}") == hex && payload < (1 << 56)).then(|| TermId::new(tag::BLANK, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rhizome_kv::Kv;

    /// A long term is found under its hash even when another term with
    /// the same hash is listed first (a 64-bit collision, built here by
    /// hand): the ids are told apart by their serialized terms, and a term
    /// with that hash that is not stored is not found.
    #[test]
    fn a_hashed_entry_listing_several_ids_gives_the_one_whose_term_matches() {
        let kv = Kv::memory();
        let mut txn = kv.transaction().unwrap();
        let stored = vec![b'a'; KEYED_BY_BYTES + 1];
        let other = vec![b'b'; KEYED_BY_BYTES + 7];
        let (stored_id, other_id) = (TermId::new(tag::STRING, 7), TermId::new(tag::STRING, 3));
        txn.put(ID2TERM, &other_id.to_be_bytes(), &other);
        txn.put(ID2TERM, &stored_id.to_be_bytes(), &stored);
        // The colliding term's id first, under the stored term's key.
        let (key, hashed) = term2id_key(tag::STRING, &stored);
        assert!(hashed);
        let (_, value) = Dictionary::new_entry(tag::STRING, &stored, stored_id, |_| Ok(Some(other_id.to_be_bytes().to_vec()))).unwrap();
        assert_eq!(value.len(), 16, "the new id joins the one already listed");
        txn.put(TERM2ID, &key, &value);
        assert_eq!(Dictionary::lookup_key(&txn, tag::STRING, &stored).unwrap(), Some(stored_id));
        let mut absent = stored.clone();
        absent.push(b'!');
        assert_eq!(Dictionary::lookup_key(&txn, tag::STRING, &absent).unwrap(), None);
        // A short term is its own key: one id, nothing to compare.
        let (key, hashed) = term2id_key(tag::IRI, b"http://ex/a");
        assert!(!hashed);
        assert_eq!(key, b"\x02http://ex/a");
    }
}
