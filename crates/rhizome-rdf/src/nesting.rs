//! How deeply an RDF document nests, checked before it is parsed.
//!
//! The parsers keep their nesting on heap stacks, but the cost of a body
//! grows with it: Turtle with 200,000 nested collections (800 KB) took
//! 11.6 s and 850 MB to parse, RDF/XML of 5,000 nested descriptions wrote
//! ever slower. Real data nests a few levels. [`check_nesting`] scans the
//! bytes once (no allocation, no recursion), skipping what cannot nest
//! (IRIs, strings, comments, XML comments, CDATA, processing instructions
//! and declarations), and refuses the first bracket or element past the
//! limit with its line and column:
//!
//! - Turtle, TriG, N3: `(`, `[`, `{` and RDF-star's `<<`;
//! - RDF/XML: elements;
//! - JSON-LD: arrays and objects.
//!
//! N-Triples and N-Quads do not nest (but for RDF-star's `<<`, counted too).
//!
//! RDF/XML entities are bounded too ([`MAX_XML_ENTITY_BYTES`],
//! [`MAX_XML_EXPANSION_BYTES`]): the parser expands `<!ENTITY>`
//! declarations of the DOCTYPE eagerly, nested ones included.

use oxrdfio::RdfFormat;

/// The default bound: far above real data, far below what costs.
pub const MAX_RDF_NESTING: usize = 256;
/// RDF/XML entities (`<!ENTITY name "value">` in the DOCTYPE) are expanded
/// by the parser where they are declared and where they are used, so a
/// few nested declarations ("billion laughs") would make gigabytes: one
/// entity may expand to at most this many bytes...
pub const MAX_XML_ENTITY_BYTES: u64 = 1 << 20;
/// ... and all uses of entities in a document together to this many.
pub const MAX_XML_EXPANSION_BYTES: u64 = 64 << 20;

/// A body nested deeper than the limit: where the first level past it opens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at line {line}, column {column}")]
pub struct NestingError {
    /// 1-based.
    pub line: u64,
    /// 1-based, in bytes.
    pub column: u64,
    pub limit: usize,
    /// What went past the limit: "XML elements nested deeper than 256
    /// levels", ...
    pub what: String,
}

/// Checks that `data` in `format` nests at most `limit` levels.
pub fn check_nesting(format: RdfFormat, data: &[u8], limit: usize) -> Result<(), NestingError> {
    let mut scan = Scan { data, pos: 0, depth: 0, limit, what: "", entities: Vec::new(), expanded: 0 };
    match format {
        RdfFormat::RdfXml => {
            scan.what = "XML elements";
            scan.xml()
        }
        RdfFormat::JsonLd { .. } => {
            scan.what = "JSON arrays and objects";
            scan.json()
        }
        _ => {
            scan.what = "collections, blank nodes and graphs";
            scan.turtle()
        }
    }
}

/// The bytes the Turtle scan acts on; it skips runs of the others at once.
const TURTLE_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let special = b"#\"'<>\\([{)]}";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = true;
        i += 1;
    }
    t
};

struct Scan<'a> {
    data: &'a [u8],
    pos: usize,
    depth: usize,
    limit: usize,
    what: &'static str,
    /// RDF/XML: declared entities and their expanded sizes.
    entities: Vec<(&'a [u8], u64)>,
    /// RDF/XML: bytes that entity references expand to so far.
    expanded: u64,
}

impl<'a> Scan<'a> {
    fn peek(&self, at: usize) -> Option<u8> {
        self.data.get(self.pos + at).copied()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.data[self.pos..].starts_with(s)
    }

    /// Moves one byte on.
    fn bump(&mut self) {
        self.pos += 1;
    }

    /// The line and column (1-based, in bytes) of `pos`, counted only for
    /// an error: keeping a line count at every byte was most of the scan
    /// (0.2M instructions of a 200-triple LDP PUT, issue 46).
    fn line_column(&self, pos: usize) -> (u64, u64) {
        let before = &self.data[..pos];
        let line = 1 + before.iter().filter(|&&c| c == b'\n').count() as u64;
        let line_start = before.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        (line, (pos - line_start + 1) as u64)
    }

    /// Moves on to the first byte at or after the current one for which
    /// `stop` holds (or to the end).
    fn skip_until(&mut self, stop: impl Fn(u8) -> bool) {
        self.pos += self.data[self.pos..].iter().position(|&c| stop(c)).unwrap_or(self.data.len() - self.pos);
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            if self.pos >= self.data.len() {
                return;
            }
            self.bump();
        }
    }

    /// Skips past the next `end` (or to the end of the data).
    fn skip_past(&mut self, end: &[u8]) {
        while self.pos < self.data.len() && !self.starts_with(end) {
            self.bump();
        }
        self.bump_n(end.len());
    }

    /// One level deeper at the current position.
    fn open(&mut self) -> Result<(), NestingError> {
        self.depth += 1;
        if self.depth > self.limit {
            let (line, column) = self.line_column(self.pos);
            return Err(NestingError { line, column, limit: self.limit, what: format!("{} nested deeper than {} levels", self.what, self.limit) });
        }
        Ok(())
    }

    fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// A string opened by `quote` at the current position (long if tripled),
    /// with backslash escapes.
    fn skip_string(&mut self, quote: u8, may_be_long: bool) {
        let long = may_be_long && self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.bump_n(if long { 3 } else { 1 });
        while let Some(b) = self.peek(0) {
            if b == b'\\' {
                self.bump_n(2);
            } else if long && b == quote && self.peek(1) == Some(quote) && self.peek(2) == Some(quote) {
                self.bump_n(3);
                return;
            } else if !long && b == quote {
                self.bump();
                return;
            } else if !long && b == b'\n' {
                return; // unterminated: the parser reports it
            } else {
                self.bump();
                let rest = &self.data[self.pos..];
                self.pos += memchr::memchr3(b'\\', quote, b'\n', rest).unwrap_or(rest.len());
            }
        }
    }

    fn turtle(&mut self) -> Result<(), NestingError> {
        while let Some(b) = self.peek(0) {
            match b {
                b'#' => {
                    let rest = &self.data[self.pos..];
                    self.pos += memchr::memchr(b'\n', rest).unwrap_or(rest.len());
                }
                b'"' | b'\'' => self.skip_string(b, true),
                b'<' if self.peek(1) == Some(b'<') => {
                    self.open()?;
                    self.bump_n(2);
                }
                b'<' => {
                    // An IRI: up to `>`; an IRI holds no space, so a space
                    // ends a malformed one (the parser reports it).
                    self.bump();
                    self.skip_until(|c| c == b'>' || c <= b' ');
                    if self.peek(0) == Some(b'>') {
                        self.bump();
                    }
                }
                b'>' if self.peek(1) == Some(b'>') => {
                    self.close();
                    self.bump_n(2);
                }
                b'\\' => self.bump_n(2), // an escape in a local name: `ex:a\(`
                b'(' | b'[' | b'{' => {
                    self.open()?;
                    self.bump();
                }
                b')' | b']' | b'}' => {
                    self.close();
                    self.bump();
                }
                // Names, numbers, punctuation and space, up to the next
                // byte that may matter.
                _ => {
                    self.bump();
                    self.skip_until(|c| TURTLE_SPECIAL[c as usize]);
                }
            }
        }
        Ok(())
    }

    fn json(&mut self) -> Result<(), NestingError> {
        while let Some(b) = self.peek(0) {
            match b {
                b'"' => self.skip_string(b'"', false),
                b'[' | b'{' => {
                    self.open()?;
                    self.bump();
                }
                b']' | b'}' => {
                    self.close();
                    self.bump();
                }
                _ => self.bump(),
            }
        }
        Ok(())
    }

    /// Refuses entity expansion past the limits (`what` says which).
    fn entity_error(&self, what: &str, limit: u64) -> NestingError {
        let (line, column) = self.line_column(self.pos);
        NestingError { line, column, limit: limit as usize, what: format!("{what} past {limit} bytes") }
    }

    /// The expanded size of an entity value: its bytes, with references
    /// to declared entities replaced by their sizes.
    fn expanded_size(&self, value: &[u8]) -> u64 {
        let mut size = 0u64;
        let mut i = 0;
        while i < value.len() {
            if value[i] == b'&' {
                if let Some(end) = value[i..].iter().position(|&c| c == b';') {
                    let name = &value[i + 1..i + end];
                    if let Some((_, n)) = self.entities.iter().rev().find(|(e, _)| *e == name) {
                        size = size.saturating_add(*n);
                        i += end + 1;
                        continue;
                    }
                }
            }
            size += 1;
            i += 1;
        }
        size
    }

    /// `<!ENTITY name "value">` declarations of a DOCTYPE, read as the
    /// RDF/XML parser reads them.
    fn xml_entities(&mut self, doctype: &'a [u8]) -> Result<(), NestingError> {
        let mut rest = doctype;
        while let Some(at) = rest.windows(8).position(|w| w == b"<!ENTITY") {
            rest = &rest[at + 8..];
            let trimmed = rest.trim_ascii_start();
            let trimmed = trimmed.strip_prefix(b"%").unwrap_or(trimmed).trim_ascii_start();
            let Some(name_end) = trimmed.iter().position(|c| c.is_ascii_whitespace()) else { break };
            let name = &trimmed[..name_end];
            let Some(value) = trimmed[name_end..].trim_ascii_start().strip_prefix(b"\"") else { continue };
            let Some(value_end) = value.iter().position(|&c| c == b'"') else { break };
            let size = self.expanded_size(&value[..value_end]);
            if size > MAX_XML_ENTITY_BYTES {
                return Err(self.entity_error("an XML entity declared in the DOCTYPE expands", MAX_XML_ENTITY_BYTES));
            }
            self.entities.push((name, size));
            rest = &value[value_end..];
        }
        Ok(())
    }

    /// A reference `&name;` at the current position: counts what it
    /// expands to.
    fn xml_reference(&mut self) -> Result<(), NestingError> {
        if self.entities.is_empty() {
            return Ok(());
        }
        let rest = &self.data[self.pos + 1..];
        let Some(end) = rest.iter().take(256).position(|&c| c == b';') else { return Ok(()) };
        let name = &rest[..end];
        if let Some((_, n)) = self.entities.iter().rev().find(|(e, _)| *e == name) {
            self.expanded = self.expanded.saturating_add(*n);
            if self.expanded > MAX_XML_EXPANSION_BYTES {
                return Err(self.entity_error("the XML entity references of the document expand", MAX_XML_EXPANSION_BYTES));
            }
        }
        Ok(())
    }

    fn xml(&mut self) -> Result<(), NestingError> {
        while let Some(b) = self.peek(0) {
            if b == b'&' {
                self.xml_reference()?;
            }
            if b != b'<' {
                self.bump();
                continue;
            }
            if self.starts_with(b"<!--") {
                self.skip_past(b"-->");
            } else if self.starts_with(b"<![CDATA[") {
                self.skip_past(b"]]>");
            } else if self.starts_with(b"<?") {
                self.skip_past(b"?>");
            } else if self.starts_with(b"<!") {
                // A declaration; a DOCTYPE's internal subset is in brackets
                // and holds its own `<!...>` and quoted values.
                let start = self.pos;
                self.bump_n(2);
                let mut brackets = 0usize;
                while let Some(c) = self.peek(0) {
                    match c {
                        b'"' | b'\'' => self.skip_xml_quoted(c)?,
                        b'[' => {
                            brackets += 1;
                            self.bump();
                        }
                        b']' => {
                            brackets = brackets.saturating_sub(1);
                            self.bump();
                        }
                        b'<' if brackets > 0 && self.starts_with(b"<!--") => self.skip_past(b"-->"),
                        b'>' if brackets == 0 => {
                            self.bump();
                            break;
                        }
                        _ => self.bump(),
                    }
                }
                let declaration: &[u8] = &self.data[start..self.pos];
                if declaration.starts_with(b"<!DOCTYPE") {
                    self.xml_entities(declaration)?;
                }
            } else if self.peek(1) == Some(b'/') {
                self.close();
                self.skip_past(b">");
            } else {
                // A start tag: attributes may hold `>` in quotes; `/>` at
                // the end makes it empty.
                let start = self.pos;
                self.bump();
                let mut empty = false;
                while let Some(c) = self.peek(0) {
                    match c {
                        b'"' | b'\'' => self.skip_xml_quoted(c)?,
                        b'/' if self.peek(1) == Some(b'>') => {
                            empty = true;
                            self.bump_n(2);
                            break;
                        }
                        b'>' => {
                            self.bump();
                            break;
                        }
                        _ => self.bump(),
                    }
                }
                if !empty {
                    self.depth += 1;
                    if self.depth > self.limit {
                        let (line, column) = self.line_column(start);
                        return Err(NestingError { line, column, limit: self.limit, what: format!("{} nested deeper than {} levels", self.what, self.limit) });
                    }
                }
            }
        }
        Ok(())
    }

    /// An XML attribute or entity value: no escapes, ends at its quote.
    /// Entity references in it count (an entity's own value is counted
    /// when it is declared, before this runs past it).
    fn skip_xml_quoted(&mut self, quote: u8) -> Result<(), NestingError> {
        self.bump();
        while let Some(c) = self.peek(0) {
            if c == b'&' {
                self.xml_reference()?;
            }
            self.bump();
            if c == quote {
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turtle(s: &str, limit: usize) -> Result<(), NestingError> {
        check_nesting(RdfFormat::Turtle, s.as_bytes(), limit)
    }

    #[test]
    fn turtle_brackets_count_outside_iris_strings_and_comments() {
        assert!(turtle("<s> <p> ((1)) .", 2).is_ok());
        let e = turtle("<s> <p> ((1)) .\n<s> <p> [ <p> [ <p> [ <p> 1 ] ] ] .", 2).unwrap_err();
        assert_eq!((e.line, e.column), (2, 21), "{e}");
        assert!(turtle("# ((((\n<s(((> <p> \"((((\" , '''[[[\n[[[''' , \"\"\"{{{\"\"\" , 'a\\'((' .", 1).is_ok());
        assert!(turtle("ex:a\\(\\( <p> 1 .", 0).is_ok());
        // Lines are counted across what the scan skips at once: long
        // strings, comments, IRIs and names.
        let e = turtle("# a (\n<s> <p> '''x\n(\ny''' ; ex:q \"(\" .\n\n  ex:s ex:p ( (", 1).unwrap_err();
        assert_eq!((e.line, e.column), (6, 15), "{e}");
        assert!(turtle("<< <s> <p> << <a> <b> <c> >> >> <q> 1 .", 1).is_err());
        assert!(turtle("<< <s> <p> << <a> <b> <c> >> >> <q> 1 .", 2).is_ok());
        let trig = "<g> { <s> <p> ( 1 ) }";
        assert!(check_nesting(RdfFormat::TriG, trig.as_bytes(), 1).is_err());
        assert!(check_nesting(RdfFormat::TriG, trig.as_bytes(), 2).is_ok());
    }

    #[test]
    fn xml_elements_count_but_not_comments_cdata_or_empty_elements() {
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE rdf:RDF [ <!ENTITY e \"<a><b>\"> ]>\n<rdf:RDF a='>'><!-- <x><y> --><d><![CDATA[<z><z>]]><e/><p x=\"/>\"><q/></p></d></rdf:RDF>";
        assert!(check_nesting(RdfFormat::RdfXml, xml.as_bytes(), 3).is_ok());
        let e = check_nesting(RdfFormat::RdfXml, xml.as_bytes(), 2).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.what.starts_with("XML elements nested deeper than 2 levels"), "{e}");
        assert_eq!(e.column, 56, "{e}");
    }

    #[test]
    fn xml_entities_that_expand_too_far_are_refused() {
        let mut laughs = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE rdf:RDF [\n<!ENTITY a0 \"lol\">\n");
        for i in 1..12 {
            laughs.push_str(&format!("<!ENTITY a{i} \"{}\">\n", format!("&a{};", i - 1).repeat(10)));
        }
        laughs.push_str("]>\n<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><rdf:Description rdf:about=\"&a11;\"/></rdf:RDF>");
        let e = check_nesting(RdfFormat::RdfXml, laughs.as_bytes(), MAX_RDF_NESTING).unwrap_err();
        assert!(e.to_string().contains("entity"), "{e}");
        // Small entities, used many times, up to the total.
        let mut uses = String::from("<!DOCTYPE rdf:RDF [ <!ENTITY big \"");
        uses.push_str(&"x".repeat(1 << 20));
        uses.push_str("\"> <!ENTITY e \"http://e/\"> ]><rdf:RDF>");
        uses.push_str(&"<e:p rdf:resource=\"&e;x\"/>".repeat(100));
        assert!(check_nesting(RdfFormat::RdfXml, uses.as_bytes(), MAX_RDF_NESTING).is_ok());
        uses.push_str(&"<e:p>&big;</e:p>".repeat(65));
        let e = check_nesting(RdfFormat::RdfXml, uses.as_bytes(), MAX_RDF_NESTING).unwrap_err();
        assert!(e.to_string().contains("references"), "{e}");
    }

    #[test]
    fn json_nesting_counts_outside_strings() {
        assert!(check_nesting(RdfFormat::JsonLd { profile: Default::default() }, br#"{"a": [[1]], "b": "[[[[\"{{"}"#, 3).is_ok());
        assert!(check_nesting(RdfFormat::JsonLd { profile: Default::default() }, br#"{"a": [[1]]}"#, 2).is_err());
    }

    #[test]
    fn deep_inputs_are_refused_quickly() {
        let deep = format!("<s> <p> {}1{} .", "(".repeat(1_000_000), ")".repeat(1_000_000));
        let e = turtle(&deep, MAX_RDF_NESTING).unwrap_err();
        assert_eq!(e.column, 9 + MAX_RDF_NESTING as u64);
    }
}
