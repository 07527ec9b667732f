//! Bounds on the shape of request text, checked before spargebra parses it.
//!
//! Every stage of a query is recursive over its nesting: spargebra's parser
//! (one rule chain per bracket and per prefix `!`), its checks of variable
//! scope, the translation to a plan, the plan's evaluation (each operator
//! pulls from the one below it), expression evaluation and, finally, the
//! drop of each tree. Chains are nesting too: `A UNION B UNION C` is
//! `Union(Union(A, B), C)`, so 20,000 UNIONs are 20,000 levels, as are
//! 20,000 OPTIONALs, path steps, `||` or `+`. A deep enough request
//! overflows the stack, which aborts the whole process.
//!
//! So the text is measured first, with a small lexer that knows strings,
//! IRIs and comments: the nesting of brackets, braces and prefix operators
//! may not pass [`MAX_NESTING`], and the operators that build chains
//! (UNION, OPTIONAL, MINUS, FILTER, BIND, AS, groups, path and binary
//! operators) may not pass [`MAX_OPERATORS`] in one request. Inside
//! `INSERT DATA`, `DELETE DATA` and `VALUES` blocks, where nothing chains,
//! nothing is counted but nesting, so large data requests stay allowed.
//! The translator checks the depth of the algebra it walks again
//! (`plan::translate`, [`MAX_PLAN_DEPTH`]) for requests built without text,
//! and work runs on a thread whose stack is known ([`run_with_query_stack`])
//! and was measured to hold the deepest request these limits let through
//! (`tests/nesting.rs`).

use crate::error::{Result, SparqlError};

/// Brackets, braces and prefix operators (`!`, `+`, `-`, `^`) nested in
/// each other: far above what people write (a dozen), far below what
/// overflows the query stack.
pub const MAX_NESTING: usize = 256;

/// `!` applied to something that holds another `!` applied to something,
/// and so on: spargebra's parser reads the operand of each such `!` twice
/// (a SPARQL 1.2 rule tried first, then the 1.1 one), so the parse costs
/// 2^depth times the text inside. 5 levels (32 times) is more than queries
/// use (`!EXISTS { ... !BOUND(?x) }` is two).
pub const MAX_NEGATION_NESTING: usize = 5;

/// Operators that build chains in one request (see the module doc).
pub const MAX_OPERATORS: usize = 10_000;

/// Depth of the algebra the translator walks (patterns, expressions and
/// paths together).
pub const MAX_PLAN_DEPTH: usize = MAX_NESTING + MAX_OPERATORS + 64;

/// The stack of the threads that parse, plan and run requests: measured to
/// hold [`MAX_NESTING`] and [`MAX_OPERATORS`] at their worst with room to
/// spare (it is address space; only the pages a request touches are
/// memory).
pub const QUERY_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a thread of [`QUERY_STACK_BYTES`] and waits for it: the
/// callers' threads (a server's blocking pool, 2 MiB) are too small for
/// the deepest requests the limits allow.
pub fn run_with_query_stack<R: Send>(f: impl FnOnce() -> R + Send) -> Result<R> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("rhizome-query".into())
            .stack_size(QUERY_STACK_BYTES)
            .spawn_scoped(scope, f)
            .map_err(|e| SparqlError::Evaluation(format!("cannot start a query thread: {e}")))?;
        match handle.join() {
            Ok(r) => Ok(r),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Patterns and expressions: operators count.
    Query,
    /// `INSERT DATA {`, `DELETE DATA {`, `VALUES ... {`: only nesting counts.
    Data,
}

/// Refuses request text whose nesting or chains pass the limits, with a
/// message saying which and where.
pub fn check_request_text(text: &str) -> Result<()> {
    Scanner::new(text, MAX_NESTING, MAX_OPERATORS).run()
}

struct Scanner<'t> {
    text: &'t [u8],
    i: usize,
    blocks: Vec<Block>,
    /// A DATA or VALUES keyword was seen: the next `{` opens a data block.
    data_next: bool,
    /// Prefix operators in a row, since the last operand.
    prefix_run: usize,
    /// The last token closed a parenthesis (`(a) (b)`: HAVING's chain).
    after_close: bool,
    /// For each open bracket, how many `!` apply to something around it.
    negations: Vec<usize>,
    /// `!` seen since the last boundary (operand, separator, bracket):
    /// they apply to the next operand, a bracket included.
    pending_nots: usize,
    operators: usize,
    max_nesting: usize,
    max_operators: usize,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'%' | b'\\') || b >= 0x80
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str, max_nesting: usize, max_operators: usize) -> Self {
        Scanner { text: text.as_bytes(), i: 0, blocks: Vec::new(), negations: Vec::new(), pending_nots: 0, data_next: false, prefix_run: 0, after_close: false, operators: 0, max_nesting, max_operators }
    }

    fn position(&self) -> String {
        let before = &self.text[..self.i.min(self.text.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        format!("line {line}, column {column}")
    }

    fn in_data(&self) -> bool {
        self.blocks.last() == Some(&Block::Data)
    }

    fn nesting(&self) -> Result<()> {
        let depth = self.blocks.len() + if self.in_data() { 0 } else { self.prefix_run };
        if depth > self.max_nesting {
            return Err(SparqlError::TooComplex(format!(
                "query nesting deeper than {} (brackets, braces and prefix operators such as ! or ^) at {}",
                self.max_nesting,
                self.position()
            )));
        }
        Ok(())
    }

    fn operator(&mut self) -> Result<()> {
        if self.in_data() {
            return Ok(());
        }
        self.operators += 1;
        if self.operators > self.max_operators {
            return Err(SparqlError::TooComplex(format!(
                "query has more than {} operators (UNION, OPTIONAL, MINUS, FILTER, BIND, AS, groups, property path steps, arithmetic and logical operators) at {}; split it",
                self.max_operators,
                self.position()
            )));
        }
        Ok(())
    }

    fn peek(&self, k: usize) -> u8 {
        self.text.get(self.i + k).copied().unwrap_or(0)
    }

    /// An operand (name, variable, literal, IRI) ends a run of prefix
    /// operators.
    fn operand(&mut self) {
        self.prefix_run = 0;
        self.pending_nots = 0;
        self.after_close = false;
    }

    fn run(mut self) -> Result<()> {
        while self.i < self.text.len() {
            let b = self.text[self.i];
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => self.i += 1,
                b'#' => {
                    while self.i < self.text.len() && self.text[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                b'"' | b'\'' => {
                    self.skip_string(b);
                    self.operand();
                }
                b'<' if self.iri_end().is_some() => {
                    self.i = self.iri_end().expect("checked") + 1;
                    self.operand();
                }
                b'(' | b'[' | b'{' => {
                    if b == b'{' && !self.in_data() && !self.data_next {
                        // A group: `{A} {B}` joins, so groups chain.
                        self.operator()?;
                    }
                    if b == b'(' && self.after_close {
                        self.operator()?;
                    }
                    let block = if b == b'{' && std::mem::take(&mut self.data_next) || self.in_data() { Block::Data } else { Block::Query };
                    self.blocks.push(block);
                    let negations = self.negations.last().copied().unwrap_or(0) + std::mem::take(&mut self.pending_nots);
                    self.negations.push(negations);
                    if negations > MAX_NEGATION_NESTING && block == Block::Query {
                        return Err(SparqlError::TooComplex(format!(
                            "query nests ! deeper than {MAX_NEGATION_NESTING} (a ! around something holding another !) at {}",
                            self.position()
                        )));
                    }
                    self.after_close = false;
                    self.nesting()?;
                    self.i += 1;
                }
                b')' | b']' | b'}' => {
                    self.blocks.pop();
                    self.negations.pop();
                    self.pending_nots = 0;
                    self.prefix_run = 0;
                    self.after_close = b == b')';
                    self.i += 1;
                }
                b'?' | b'$' if is_name_byte(self.peek(1)) => {
                    self.i += 1;
                    while self.i < self.text.len() && is_name_byte(self.text[self.i]) {
                        self.i += 1;
                    }
                    self.operand();
                }
                b'0'..=b'9' => {
                    // Numbers, with their exponents' signs.
                    while self.i < self.text.len() {
                        let c = self.text[self.i];
                        let sign = matches!(c, b'+' | b'-') && matches!(self.text[self.i - 1], b'e' | b'E');
                        if !(c.is_ascii_alphanumeric() || c == b'.' || sign) {
                            break;
                        }
                        self.i += 1;
                    }
                    self.operand();
                }
                b'^' if self.peek(1) == b'^' => self.i += 2,
                b'!' | b'+' | b'-' | b'^' if !(b == b'!' && self.peek(1) == b'=') => {
                    self.operator()?;
                    self.prefix_run += 1;
                    if b == b'!' {
                        self.pending_nots += 1;
                    }
                    self.after_close = false;
                    self.nesting()?;
                    self.i += 1;
                }
                b'|' | b'&' | b'=' | b'!' | b'<' | b'>' | b'*' | b'/' | b'?' => {
                    self.operator()?;
                    self.prefix_run = 0;
                    self.pending_nots = 0;
                    self.after_close = false;
                    // Two-byte operators count once.
                    self.i += if matches!((b, self.peek(1)), (b'|', b'|') | (b'&', b'&') | (b'!', b'=') | (b'<', b'=') | (b'>', b'=')) { 2 } else { 1 };
                }
                _ if is_name_byte(b) => {
                    let start = self.i;
                    while self.i < self.text.len() && (is_name_byte(self.text[self.i]) || matches!(self.text[self.i], b'-' | b'.')) {
                        self.i += 1;
                    }
                    let word = &self.text[start..self.i];
                    self.keyword(word)?;
                    // A function's or EXISTS's name: a `!` before it
                    // applies to the bracket after it.
                    let nots = self.pending_nots;
                    self.operand();
                    self.pending_nots = nots;
                }
                _ => {
                    self.prefix_run = 0;
                    self.pending_nots = 0;
                    self.i += 1;
                }
            }
        }
        Ok(())
    }

    fn keyword(&mut self, word: &[u8]) -> Result<()> {
        let word = word.strip_suffix(b".").unwrap_or(word);
        const CHAINING: [&[u8]; 6] = [b"UNION", b"OPTIONAL", b"MINUS", b"FILTER", b"BIND", b"AS"];
        if CHAINING.iter().any(|k| word.eq_ignore_ascii_case(k)) {
            self.operator()?;
        } else if word.eq_ignore_ascii_case(b"DATA") || word.eq_ignore_ascii_case(b"VALUES") {
            self.data_next = true;
        }
        Ok(())
    }

    /// Where an IRI reference starting here ends (its `>`), if this `<`
    /// opens one rather than comparing.
    fn iri_end(&self) -> Option<usize> {
        let mut j = self.i + 1;
        while let Some(&c) = self.text.get(j) {
            match c {
                b'>' => return Some(j),
                b'<' | b'"' | b'{' | b'}' | b'|' | b'^' | b'`' | b'\\' => return None,
                c if c <= b' ' => return None,
                _ => j += 1,
            }
        }
        None
    }

    fn skip_string(&mut self, quote: u8) {
        let long = self.peek(1) == quote && self.peek(2) == quote;
        self.i += if long { 3 } else { 1 };
        while self.i < self.text.len() {
            let c = self.text[self.i];
            if c == b'\\' {
                self.i += 2;
                continue;
            }
            if c == quote {
                if !long {
                    self.i += 1;
                    return;
                }
                if self.peek(1) == quote && self.peek(2) == quote {
                    self.i += 3;
                    return;
                }
            } else if !long && c == b'\n' {
                return;
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<()> {
        Scanner::new(text, 8, 20).run()
    }

    #[test]
    fn nesting_counts_brackets_and_prefix_operators_but_not_strings_or_iris() {
        assert!(check("SELECT * { ?s ?p ?o FILTER((((1)))) }").is_ok());
        assert!(check("SELECT * { ?s ?p ?o FILTER(((((((((1))))))))) }").is_err());
        assert!(check("SELECT * { ?s ?p ?o FILTER(!!!!!!!!!!?o) }").is_err());
        assert!(check("SELECT * { ?s ?p \"((((((((((((\" . ?s <http://e/((((((((((> ?o # ((((((((((\n }").is_ok());
    }

    #[test]
    fn chains_count_outside_data_blocks_only() {
        let unions = format!("SELECT * {{ {} }}", vec!["{ ?s ?p ?o }"; 30].join(" UNION "));
        assert!(matches!(check(&unions), Err(SparqlError::TooComplex(m)) if m.contains("operators")));
        let data = format!("INSERT DATA {{ {} }}", "<http://e/s> <http://e/p> -5 . ".repeat(100));
        assert!(check(&data).is_ok());
        let values = format!("SELECT * {{ VALUES ?x {{ {} }} }}", "-1 ".repeat(100));
        assert!(check(&values).is_ok());
        let arithmetic = format!("SELECT * {{ BIND(1 {} AS ?x) }}", "- 1 ".repeat(30));
        assert!(check(&arithmetic).is_err());
    }

    #[test]
    fn nested_negations_are_bounded() {
        let nested = |n: usize| format!("SELECT * {{ ?s ?p ?o FILTER({}?o{}) }}", "!(".repeat(n), ")".repeat(n));
        assert!(Scanner::new(&nested(MAX_NEGATION_NESTING), 64, 64).run().is_ok());
        assert!(Scanner::new(&nested(MAX_NEGATION_NESTING + 1), 64, 64).run().is_err());
        let exists = |n: usize| format!("SELECT * {{ {}?s ?p ?o{} }}", "FILTER(!EXISTS { ".repeat(n), " })".repeat(n));
        assert!(Scanner::new(&exists(MAX_NEGATION_NESTING), 64, 64).run().is_ok());
        assert!(Scanner::new(&exists(MAX_NEGATION_NESTING + 1), 64, 64).run().is_err());
        let siblings = format!("SELECT * {{ ?s ?p ?o FILTER({}) }}", vec!["!BOUND(?o)"; 50].join(" && "));
        assert!(Scanner::new(&siblings, 64, 200).run().is_ok());
    }

    #[test]
    fn comparisons_are_not_taken_for_iris() {
        assert!(check("SELECT * { ?s ?p ?o FILTER(?o < 3 && ?o > 1) }").is_ok());
    }
}
