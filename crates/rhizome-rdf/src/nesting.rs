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

use oxrdfio::RdfFormat;

/// The default bound: far above real data, far below what costs.
pub const MAX_RDF_NESTING: usize = 256;

/// A body nested deeper than the limit: where the first level past it opens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} nested deeper than {limit} levels at line {line}, column {column}")]
pub struct NestingError {
    /// 1-based.
    pub line: u64,
    /// 1-based, in bytes.
    pub column: u64,
    pub limit: usize,
    /// What nests: "collections and blank nodes", "XML elements", ...
    pub what: &'static str,
}

/// Checks that `data` in `format` nests at most `limit` levels.
pub fn check_nesting(format: RdfFormat, data: &[u8], limit: usize) -> Result<(), NestingError> {
    let mut scan = Scan { data, pos: 0, line: 1, line_start: 0, depth: 0, limit, what: "" };
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

struct Scan<'a> {
    data: &'a [u8],
    pos: usize,
    line: u64,
    line_start: usize,
    depth: usize,
    limit: usize,
    what: &'static str,
}

impl Scan<'_> {
    fn peek(&self, at: usize) -> Option<u8> {
        self.data.get(self.pos + at).copied()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.data[self.pos..].starts_with(s)
    }

    /// Moves one byte on, keeping the line count.
    fn bump(&mut self) {
        if self.data[self.pos] == b'\n' {
            self.line += 1;
            self.line_start = self.pos + 1;
        }
        self.pos += 1;
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
            return Err(NestingError { line: self.line, column: (self.pos - self.line_start + 1) as u64, limit: self.limit, what: self.what });
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
            }
        }
    }

    fn turtle(&mut self) -> Result<(), NestingError> {
        while let Some(b) = self.peek(0) {
            match b {
                b'#' => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.bump();
                    }
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
                    while self.peek(0).is_some_and(|c| c != b'>' && c > b' ') {
                        self.bump();
                    }
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
                _ => self.bump(),
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

    fn xml(&mut self) -> Result<(), NestingError> {
        while let Some(b) = self.peek(0) {
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
                self.bump_n(2);
                let mut brackets = 0usize;
                while let Some(c) = self.peek(0) {
                    match c {
                        b'"' | b'\'' => self.skip_xml_quoted(c),
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
            } else if self.peek(1) == Some(b'/') {
                self.close();
                self.skip_past(b">");
            } else {
                // A start tag: attributes may hold `>` in quotes; `/>` at
                // the end makes it empty.
                let (line, column) = (self.line, (self.pos - self.line_start + 1) as u64);
                self.bump();
                let mut empty = false;
                while let Some(c) = self.peek(0) {
                    match c {
                        b'"' | b'\'' => self.skip_xml_quoted(c),
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
                        return Err(NestingError { line, column, limit: self.limit, what: self.what });
                    }
                }
            }
        }
        Ok(())
    }

    /// An XML attribute or entity value: no escapes, ends at its quote.
    fn skip_xml_quoted(&mut self, quote: u8) {
        self.bump();
        while let Some(c) = self.peek(0) {
            self.bump();
            if c == quote {
                return;
            }
        }
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
        assert_eq!((e.line, e.what), (3, "XML elements"), "{e}");
        assert_eq!(e.column, 56, "{e}");
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
