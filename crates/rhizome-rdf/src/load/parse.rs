//! Parsing and local encoding, in worker threads.
//!
//! N-Triples and N-Quads are split at line ends into chunks that workers
//! parse in parallel (with oxttl); other formats are parsed by one thread.
//! Either way a worker turns each chunk into `EncodedChunk`: inlined
//! literals become ids right there, dictionary terms are serialized,
//! hashed and deduplicated within the chunk, so the single thread that
//! assigns ids does one map lookup per distinct term of a chunk and
//! nothing else. A chunk's terms are
//! serialized one after the other into one buffer (`EncodedChunk::arena`),
//! not each into its own allocation.

use super::input::{self, LoadInput};
use crate::term::inline::{inline_literal, XSD_STRING};
use crate::term::{serialize_with_head, tag, term_key, TermId, TermKey};
use crate::{Error, Result, SyntaxIssue};
use oxrdf::{GraphNameRef, NamedOrBlankNodeRef, QuadRef, TermRef};
use oxrdfio::{RdfFormat, RdfParseError, RdfParser};
use oxttl::{NQuadsParser, NTriplesParser};
use rustc_hash::FxHashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// A term of an encoded quad.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot {
    Id(TermId),
    /// Index into the chunk's dictionary terms.
    Term(u32),
    /// Index into the chunk's blank node labels.
    Blank(u32),
    DefaultGraph,
}

/// A dictionary term of a chunk: its serialized bytes are
/// `EncodedChunk::arena[start..start + len]`; for a triple term
/// (`tag::TRIPLE`), until the id assigner numbers its parts, their three
/// slots ([`triple_of_slots`]).
pub(crate) struct LocalTerm {
    pub tag: u8,
    pub hash: u64,
    start: usize,
    len: usize,
}

/// A triple term whose parts are slots of its chunk (terms the chunk
/// lists before it, so the id assigner has numbered them by the time it
/// reaches this one): 9 bytes a part, a kind then a number.
fn triple_of_slots(parts: [Slot; 3], out: &mut Vec<u8>) {
    for part in parts {
        let (kind, n) = match part {
            Slot::Id(id) => (0u8, id.0),
            Slot::Term(i) => (1, i as u64),
            Slot::Blank(i) => (2, i as u64),
            Slot::DefaultGraph => (3, 0),
        };
        out.push(kind);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

impl EncodedChunk {
    /// A term's serialized bytes.
    pub fn bytes(&self, t: &LocalTerm) -> &[u8] {
        &self.arena[t.start..t.start + t.len]
    }

    /// A triple term's real serialized form once its parts have ids
    /// (`terms` for the chunk's terms numbered so far, `blanks` for its
    /// blank nodes).
    pub fn resolve_triple(&self, t: &LocalTerm, terms: &[TermId], blanks: &[TermId]) -> [u8; 24] {
        debug_assert_eq!(t.tag, tag::TRIPLE);
        let slots = self.bytes(t);
        let mut ids = [TermId::DEFAULT_GRAPH; 3];
        for (k, id) in ids.iter_mut().enumerate() {
            let part = &slots[k * 9..k * 9 + 9];
            let n = u64::from_be_bytes(part[1..9].try_into().expect("8 bytes"));
            *id = match part[0] {
                0 => TermId(n),
                1 => terms[n as usize],
                2 => blanks[n as usize],
                _ => TermId::DEFAULT_GRAPH,
            };
        }
        crate::term::triple_bytes(ids[0], ids[1], ids[2])
    }
}

pub(crate) struct EncodedChunk {
    pub file: usize,
    pub terms: Vec<LocalTerm>,
    /// The serialized bytes of `terms`, one after the other.
    arena: Vec<u8>,
    pub blanks: Vec<Box<str>>,
    pub quads: Vec<[Slot; 4]>,
    pub errors: Vec<SyntaxIssue>,
    /// An error that ends the input (I/O, or a parser that cannot go on).
    pub fatal: Option<Error>,
}

struct ChunkEncoder {
    chunk: EncodedChunk,
    /// A literal holds a line break: the lenient parser may have read a raw
    /// one that the strict parser rejects.
    suspicious: bool,
    by_hash: FxHashMap<u64, u32>,
    /// The slot of the last subject IRI: lines of the same subject follow
    /// one another, and comparing with it is cheaper than a lookup.
    last_subject: Option<u32>,
    blank_index: FxHashMap<Box<str>, u32>,
}

impl ChunkEncoder {
    fn new(file: usize) -> Self {
        ChunkEncoder {
            chunk: EncodedChunk { file, terms: Vec::new(), arena: Vec::new(), blanks: Vec::new(), quads: Vec::new(), errors: Vec::new(), fatal: None },
            suspicious: false,
            by_hash: FxHashMap::default(),
            last_subject: None,
            blank_index: FxHashMap::default(),
        }
    }

    fn term(&mut self, term: TermRef<'_>) -> Slot {
        if let TermRef::Literal(l) = term {
            if memchr::memchr2(b'\n', b'\r', l.value().as_bytes()).is_some() {
                self.suspicious = true;
            }
            // term_key's cases, serialized straight into the arena (a
            // directional string goes through term_key itself).
            if l.direction().is_none() {
                if let Some(language) = l.language() {
                    return self.serialized_term(tag::LANG_STRING, |out| serialize_with_head(language, l.value(), out));
                }
                let datatype = l.datatype().as_str();
                if let Some(id) = inline_literal(l.value(), datatype) {
                    return Slot::Id(id);
                }
                if datatype == XSD_STRING {
                    return self.dictionary_term(tag::STRING, l.value().as_bytes());
                }
                return self.serialized_term(tag::TYPED, |out| serialize_with_head(datatype, l.value(), out));
            }
        }
        match term_key(term) {
            TermKey::Inline(id) => Slot::Id(id),
            TermKey::Blank(label) => {
                if let Some(i) = self.blank_index.get(label) {
                    return Slot::Blank(*i);
                }
                let i = self.chunk.blanks.len() as u32;
                self.chunk.blanks.push(label.into());
                self.blank_index.insert(label.into(), i);
                Slot::Blank(i)
            }
            TermKey::Triple(t) => {
                let parts = [self.term(t.subject.as_ref().into()), self.term(t.predicate.as_ref().into()), self.term(t.object.as_ref())];
                self.serialized_term(tag::TRIPLE, |out| triple_of_slots(parts, out))
            }
            TermKey::Dictionary { tag, bytes } => self.dictionary_term(tag, &bytes),
        }
    }

    /// The chunk's slot of a term, added if the chunk does not have it.
    fn dictionary_term(&mut self, tag: u8, bytes: &[u8]) -> Slot {
        let hash = TermKey::hash(tag, bytes);
        if let Some(i) = self.known(tag, hash, bytes) {
            return Slot::Term(i);
        }
        let start = self.chunk.arena.len();
        self.chunk.arena.extend_from_slice(bytes);
        self.add(tag, hash, start)
    }

    /// [`Self::dictionary_term`] for a term that `write` serializes (into
    /// the arena, taken back if the chunk has the term already).
    fn serialized_term(&mut self, tag: u8, write: impl FnOnce(&mut Vec<u8>)) -> Slot {
        let start = self.chunk.arena.len();
        write(&mut self.chunk.arena);
        let hash = TermKey::hash(tag, &self.chunk.arena[start..]);
        let (before, bytes) = self.chunk.arena.split_at(start);
        if let Some(i) = Self::known_in(&self.by_hash, &self.chunk.terms, before, tag, hash, bytes) {
            self.chunk.arena.truncate(start);
            return Slot::Term(i);
        }
        self.add(tag, hash, start)
    }

    fn known(&self, tag: u8, hash: u64, bytes: &[u8]) -> Option<u32> {
        Self::known_in(&self.by_hash, &self.chunk.terms, &self.chunk.arena, tag, hash, bytes)
    }

    fn known_in(by_hash: &FxHashMap<u64, u32>, terms: &[LocalTerm], arena: &[u8], tag: u8, hash: u64, bytes: &[u8]) -> Option<u32> {
        let &i = by_hash.get(&hash)?;
        let t = &terms[i as usize];
        // A hash collision inside the chunk keeps both terms; the id
        // assigner tells them apart by their bytes.
        (t.tag == tag && arena[t.start..t.start + t.len] == *bytes).then_some(i)
    }

    /// Adds the term whose bytes are the arena's from `start` on.
    fn add(&mut self, tag: u8, hash: u64, start: usize) -> Slot {
        let i = self.chunk.terms.len() as u32;
        self.chunk.terms.push(LocalTerm { tag, hash, start, len: self.chunk.arena.len() - start });
        self.by_hash.entry(hash).or_insert(i);
        Slot::Term(i)
    }

    fn subject_iri(&mut self, iri: &[u8]) -> Slot {
        if let Some(i) = self.last_subject {
            let t = &self.chunk.terms[i as usize];
            if t.tag == tag::IRI && self.chunk.arena[t.start..t.start + t.len] == *iri {
                return Slot::Term(i);
            }
        }
        let slot = self.dictionary_term(tag::IRI, iri);
        if let Slot::Term(i) = slot {
            self.last_subject = Some(i);
        }
        slot
    }

    fn quad(&mut self, q: QuadRef<'_>) {
        let s = match q.subject {
            NamedOrBlankNodeRef::NamedNode(n) => self.subject_iri(n.as_str().as_bytes()),
            NamedOrBlankNodeRef::BlankNode(b) => self.term(b.into()),
        };
        let p = self.term(q.predicate.into());
        let o = self.term(q.object);
        let g = match q.graph_name {
            GraphNameRef::DefaultGraph => Slot::DefaultGraph,
            GraphNameRef::NamedNode(n) => self.term(n.into()),
            GraphNameRef::BlankNode(b) => self.term(b.into()),
        };
        self.chunk.quads.push([s, p, o, g]);
    }
}

fn issue(file: &str, line0: Option<u64>, column0: u64, message: impl Into<String>) -> SyntaxIssue {
    SyntaxIssue {
        file: file.to_owned(),
        line: line0.map_or(0, |l| l + 1),
        column: line0.map_or(0, |_| column0 + 1),
        message: message.into(),
    }
}

/// A line-aligned piece of an N-Triples or N-Quads file.
pub(crate) struct LineChunk {
    pub file: usize,
    pub name: Arc<str>,
    pub quads: bool,
    pub first_line: u64,
    pub bytes: Vec<u8>,
}

const CHUNK_BYTES: usize = 4 << 20;

/// Reads a line-based file into line-aligned chunks.
pub(crate) fn split_lines(
    file: usize,
    input: &LoadInput,
    quads: bool,
    read: Arc<AtomicU64>,
    cancel: &AtomicBool,
    out: &SyncSender<LineChunk>,
) -> Result<()> {
    let name: Arc<str> = input.display_name().into();
    let mut reader = input::open(input, read)?;
    let mut line = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut buf = std::mem::take(&mut carry);
        let start = buf.len();
        buf.resize(start + CHUNK_BYTES, 0);
        let mut filled = start;
        while filled < buf.len() {
            let n = reader.read(&mut buf[filled..]).map_err(|source| Error::Io { path: input.path.clone(), source })?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        buf.truncate(filled);
        let eof = filled < start + CHUNK_BYTES;
        if buf.is_empty() {
            return Ok(());
        }
        if !eof {
            match memchr::memrchr(b'\n', &buf) {
                Some(end) => carry = buf.split_off(end + 1),
                // A line longer than a chunk: keep reading until it ends.
                None => {
                    carry = buf;
                    continue;
                }
            }
        }
        let lines = memchr::memchr_iter(b'\n', &buf).count() as u64;
        let chunk = LineChunk { file, name: name.clone(), quads, first_line: line, bytes: buf };
        line += lines;
        if out.send(chunk).is_err() {
            return Ok(());
        }
        if eof {
            return Ok(());
        }
    }
}

/// Parses line chunks taken from `rx` until it closes.
pub(crate) fn parse_line_chunks(rx: &Mutex<Receiver<LineChunk>>, out: &SyncSender<EncodedChunk>) {
    loop {
        let chunk = match rx.lock().map(|r| r.recv()) {
            Ok(Ok(c)) => c,
            _ => return,
        };
        if out.send(parse_line_chunk(&chunk)).is_err() {
            return;
        }
    }
}

/// Parses one chunk. oxttl's strict mode validates every IRI occurrence,
/// which is most of its cost; a chunk repeats its terms many times. So the
/// chunk is parsed leniently and its distinct terms are then validated the
/// way strict mode does. A chunk with any error, invalid term or pattern
/// lenient mode reads differently (a raw CR, a line break in a literal, a
/// surrogate escape) is parsed again strictly, which gives exactly the
/// strict result and error positions.
fn parse_line_chunk(chunk: &LineChunk) -> EncodedChunk {
    if !might_differ_when_lenient(&chunk.bytes) {
        let enc = parse_with(chunk, true);
        if enc.chunk.errors.is_empty() && !enc.suspicious && enc.chunk.terms.iter().all(|t| is_valid_term(t, &enc.chunk.arena)) {
            return enc.chunk;
        }
    }
    parse_with(chunk, false).chunk
}

fn might_differ_when_lenient(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\r', bytes).any(|i| bytes.get(i + 1) != Some(&b'\n'))
        || memchr::memmem::find(bytes, b"\\uD").is_some()
        || memchr::memmem::find(bytes, b"\\ud").is_some()
}

/// What strict N-Triples/N-Quads parsing checks and lenient parsing skips.
fn is_valid_term(t: &LocalTerm, arena: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(&arena[t.start..t.start + t.len]) else { return false };
    let split = || text.split_once('\0');
    match t.tag {
        tag::IRI => oxiri::Iri::parse(text).is_ok(),
        tag::LANG_STRING => split().is_some_and(|(lang, _)| oxilangtag::LanguageTag::parse(lang).is_ok()),
        tag::DIR_LANG_STRING => split()
            .and_then(|(head, _)| head.rsplit_once("--"))
            .is_some_and(|(lang, dir)| matches!(dir, "ltr" | "rtl") && oxilangtag::LanguageTag::parse(lang).is_ok()),
        tag::TYPED => split().is_some_and(|(datatype, _)| {
            !matches!(datatype, "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString" | "http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString")
                && oxiri::Iri::parse(datatype).is_ok()
        }),
        _ => true,
    }
}

fn parse_with(chunk: &LineChunk, lenient: bool) -> ChunkEncoder {
    let mut enc = ChunkEncoder::new(chunk.file);
    // About one distinct term per 256 bytes of N-Triples, and a statement
    // per 100 to 200 bytes: grown one doubling at a time, the quads were
    // copied about a dozen times a chunk.
    enc.by_hash.reserve(chunk.bytes.len() / 256);
    enc.chunk.terms.reserve(chunk.bytes.len() / 256);
    enc.chunk.quads.reserve(chunk.bytes.len() / 128);
    if chunk.quads {
        let parser = if lenient { NQuadsParser::new().lenient() } else { NQuadsParser::new() };
        for r in parser.for_slice(&chunk.bytes) {
            match r {
                Ok(q) => enc.quad(q.as_ref()),
                Err(e) => {
                    let loc = e.location();
                    enc.chunk.errors.push(issue(&chunk.name, Some(chunk.first_line + loc.start.line), loc.start.column, e.message()))
                }
            }
        }
    } else {
        let parser = if lenient { NTriplesParser::new().lenient() } else { NTriplesParser::new() };
        for r in parser.for_slice(&chunk.bytes) {
            match r {
                Ok(t) => enc.quad(t.as_ref().in_graph(GraphNameRef::DefaultGraph)),
                Err(e) => {
                    let loc = e.location();
                    enc.chunk.errors.push(issue(&chunk.name, Some(chunk.first_line + loc.start.line), loc.start.column, e.message()))
                }
            }
        }
    }
    enc
}

const QUADS_PER_CHUNK: usize = 16 * 1024;

/// Parses a file of any format in this thread.
pub(crate) fn parse_sequential(
    file: usize,
    input: &LoadInput,
    format: RdfFormat,
    base_iri: Option<&str>,
    read: Arc<AtomicU64>,
    cancel: &AtomicBool,
    out: &SyncSender<EncodedChunk>,
) -> Result<()> {
    let name = input.display_name();
    let reader = input::open(input, read)?;
    let mut parser = RdfParser::from_format(format);
    if let Some(base) = base_iri {
        parser = parser.with_base_iri(base).map_err(|e| Error::Invalid(format!("invalid base IRI {base}: {e}")))?;
    }
    let mut enc = ChunkEncoder::new(file);
    let mut consecutive_errors = 0;
    for r in parser.for_reader(reader) {
        match r {
            Ok(q) => {
                consecutive_errors = 0;
                enc.quad(q.as_ref());
            }
            Err(RdfParseError::Syntax(e)) => {
                let loc = e.location();
                enc.chunk.errors.push(match loc {
                    Some(l) => issue(&name, Some(l.start.line), l.start.column, e.to_string()),
                    None => issue(&name, None, 0, e.to_string()),
                });
                consecutive_errors += 1;
                // Some parsers cannot resynchronize; do not spin on them.
                if consecutive_errors > 1000 {
                    break;
                }
            }
            Err(RdfParseError::Io(source)) => {
                enc.chunk.fatal = Some(Error::Io { path: input.path.clone(), source });
                break;
            }
        }
        if enc.chunk.quads.len() >= QUADS_PER_CHUNK || !enc.chunk.errors.is_empty() {
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let full = std::mem::replace(&mut enc, ChunkEncoder::new(file));
            if out.send(full.chunk).is_err() {
                return Ok(());
            }
        }
    }
    let _ = out.send(enc.chunk);
    Ok(())
}
