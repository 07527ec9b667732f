//! `SELECT *` lists its variables in the order they first appear in the
//! query (`GRAPH ?g { ?s ?p ?o }` gives `g, s, p, o`), as Jena and
//! Virtuoso answer and as users read their query. spargebra sorts them
//! by name, so the order is put back here from the query's text.

use oxrdf::Variable;
use spargebra::algebra::GraphPattern;
use spargebra::Query;

/// Reorders the projection of a `SELECT *` query by first appearance in
/// `text`; any other query is left as it is.
pub fn restore_order(text: &str, query: &mut Query) {
    let Query::Select { pattern, .. } = query else { return };
    if !selects_star(text) {
        return;
    }
    let Some(variables) = projection(pattern) else { return };
    let first = first_appearances(text);
    let position = |v: &Variable| first.get(v.as_str()).copied().unwrap_or(usize::MAX);
    // Stable: a variable the text does not show keeps its place after the others.
    variables.sort_by_cached_key(position);
}

fn projection(p: &mut GraphPattern) -> Option<&mut Vec<Variable>> {
    match p {
        GraphPattern::Project { variables, .. } => Some(variables),
        GraphPattern::Slice { inner, .. } | GraphPattern::Distinct { inner } | GraphPattern::Reduced { inner } => projection(inner),
        _ => None,
    }
}

/// The query's tokens that matter here: words, variables and `*`, with
/// comments, strings and IRIs skipped.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Var(&'a str),
    Star,
    Other,
}

fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let c = bytes[i];
            match c {
                b'#' => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                b'"' | b'\'' => {
                    let long = bytes[i..].starts_with(&[c, c, c]);
                    i += if long { 3 } else { 1 };
                    while i < bytes.len() {
                        if bytes[i] == b'\\' {
                            i += 2;
                        } else if long && bytes[i..].starts_with(&[c, c, c]) {
                            i += 3;
                            break;
                        } else if !long && bytes[i] == c {
                            i += 1;
                            break;
                        } else {
                            i += 1;
                        }
                    }
                    return Some(Token::Other);
                }
                // An IRI, unless it is the less-than operator: IRIs hold no
                // spaces, quotes or braces.
                b'<' => {
                    let end = bytes[i + 1..].iter().position(|&b| b == b'>' || b.is_ascii_whitespace() || b"<\"{}|^`".contains(&b));
                    match end {
                        Some(n) if bytes[i + 1 + n] == b'>' => i += n + 2,
                        _ => i += 1,
                    }
                    return Some(Token::Other);
                }
                b'?' | b'$' => {
                    let start = i + 1;
                    let mut end = start;
                    while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] >= 0x80) {
                        end += 1;
                    }
                    i = end.max(start);
                    if end > start {
                        return Some(Token::Var(&text[start..end]));
                    }
                    return Some(Token::Other);
                }
                b'*' => {
                    i += 1;
                    return Some(Token::Star);
                }
                c if c.is_ascii_alphabetic() => {
                    let start = i;
                    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || b"_-:.".contains(&bytes[i])) {
                        i += 1;
                    }
                    return Some(Token::Word(&text[start..i]));
                }
                c if c.is_ascii_whitespace() => i += 1,
                _ => {
                    i += 1;
                    return Some(Token::Other);
                }
            }
        }
        None
    })
}

/// Whether the outer query is `SELECT [DISTINCT|REDUCED] *`: the first
/// SELECT of the text is the outer one (subqueries come later).
fn selects_star(text: &str) -> bool {
    let mut t = tokens(text).skip_while(|t| !matches!(t, Token::Word(w) if w.eq_ignore_ascii_case("select")));
    if t.next().is_none() {
        return false;
    }
    match t.next() {
        Some(Token::Star) => true,
        Some(Token::Word(w)) if w.eq_ignore_ascii_case("distinct") || w.eq_ignore_ascii_case("reduced") => t.next() == Some(Token::Star),
        _ => false,
    }
}

/// Variable names in the order they first appear.
/// Each variable's place among the first appearances (by a map: a query
/// of 45,000 variables spent minutes here, before its time limit began,
/// when each lookup walked a list).
fn first_appearances(text: &str) -> rustc_hash::FxHashMap<&str, usize> {
    let mut out = rustc_hash::FxHashMap::default();
    for t in tokens(text) {
        if let Token::Var(name) = t {
            let next = out.len();
            out.entry(name).or_insert(next);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(text: &str) -> Vec<String> {
        let mut q = spargebra::SparqlParser::new().parse_query(text).unwrap();
        restore_order(text, &mut q);
        let Query::Select { pattern, .. } = &mut q else { panic!("a SELECT") };
        projection(pattern).unwrap().iter().map(|v| v.as_str().to_owned()).collect()
    }

    #[test]
    fn select_star_lists_variables_in_order_of_appearance() {
        assert_eq!(vars("SELECT * { GRAPH ?g { ?s ?p ?o } }"), ["g", "s", "p", "o"]);
        assert_eq!(vars("# SELECT ?a\nPREFIX x: <http://e/?z>\nSELECT DISTINCT * WHERE { ?zeta x:p \"?str\" . ?alpha x:q $beta } LIMIT 3"), ["zeta", "alpha", "beta"]);
        assert_eq!(vars("SELECT * { ?b ?a ?c FILTER(?c < 3 && ?a > ?b) }"), ["b", "a", "c"]);
        // An explicit projection keeps its own order.
        assert_eq!(vars("SELECT ?o ?s { ?s ?p ?o }"), ["o", "s"]);
        assert_eq!(vars("SELECT ?a ?b ?c { ?c ?b ?a }"), ["a", "b", "c"]);
        // The outer SELECT decides, not a subquery's.
        assert_eq!(vars("SELECT ?y { { SELECT * { ?y ?x ?w } } }"), ["y"]);
        assert_eq!(vars("SELECT * { ?y ?q ?w { SELECT ?w { ?w ?v ?u } } }"), ["y", "q", "w"]);
    }
}
