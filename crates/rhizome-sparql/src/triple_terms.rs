//! SPARQL 1.2 triple term patterns (`?x :says <<( ?s :p ?o )>>`) and
//! templates.
//!
//! A triple term is one stored term (its id in the dictionary names its
//! three parts), so a pattern with a triple term whose parts are all
//! constants is a constant like any other. A pattern whose triple term
//! holds variables is rewritten before planning: the triple term becomes a
//! hidden variable of the basic graph pattern, and its parts are taken
//! apart with SPARQL 1.2's own functions over the rows that pattern gives
//! (`isTRIPLE`, `SUBJECT`, `PREDICATE`, `OBJECT`: a variable seen for the
//! first time is bound to a part, one seen before must be the same term,
//! a constant must equal its part, a nested triple term goes round
//! again). So the scans and joins need know nothing of triple terms: the
//! BGP scans for `?x :says ?t`, and the rest is expressions over `?t`
//! (https://www.w3.org/TR/sparql12-query/#defn_TripleTermPattern).

use oxrdf::{BlankNode, NamedOrBlankNode, Term, Triple, Variable};
use spargebra::algebra::{Expression, Function, GraphPattern};
use spargebra::term::{GroundTermPattern, NamedNodePattern, TermPattern, TriplePattern};
use std::collections::HashSet;

/// Whether a term pattern is a triple term holding a variable or blank
/// node (which then needs [`expand_bgp`]).
fn has_variables(t: &TermPattern) -> bool {
    let open = |t: &TermPattern| matches!(t, TermPattern::Variable(_) | TermPattern::BlankNode(_)) || has_variables(t);
    match t {
        TermPattern::Triple(tp) => matches!(tp.predicate, NamedNodePattern::Variable(_)) || open(&tp.subject) || open(&tp.object),
        _ => false,
    }
}

/// A BGP holding triple term patterns with variables, rewritten as
/// described in the module's comment; `None` when it holds none. `fresh`
/// names hidden variables (names a query cannot write).
pub fn expand_bgp(patterns: &[TriplePattern], mut fresh: impl FnMut() -> Variable) -> Option<GraphPattern> {
    if !patterns.iter().any(|p| has_variables(&p.subject) || has_variables(&p.object)) {
        return None;
    }
    let mut pending: Vec<(Variable, TriplePattern)> = Vec::new();
    let mut flat = Vec::with_capacity(patterns.len());
    for p in patterns {
        let mut hide = |t: &TermPattern| -> TermPattern {
            match t {
                TermPattern::Triple(tp) if has_variables(t) => {
                    let v = fresh();
                    pending.push((v.clone(), (**tp).clone()));
                    TermPattern::Variable(v)
                }
                other => other.clone(),
            }
        };
        let (subject, object) = (hide(&p.subject), hide(&p.object));
        flat.push(TriplePattern { subject, predicate: p.predicate.clone(), object });
    }
    // Variables the BGP binds: a part naming one must equal it.
    let mut bound: HashSet<Variable> = HashSet::new();
    for p in &flat {
        for t in [&p.subject, &p.object] {
            if let Some(v) = variable_of(t) {
                bound.insert(v);
            }
        }
        if let NamedNodePattern::Variable(v) = &p.predicate {
            bound.insert(v.clone());
        }
    }
    let mut pattern = GraphPattern::Bgp { patterns: flat };
    while let Some((t, tp)) = pending.pop() {
        let var = Expression::Variable(t.clone());
        pattern = filter(pattern, call(Function::IsTriple, var.clone()));
        let predicate = match &tp.predicate {
            NamedNodePattern::Variable(v) => TermPattern::Variable(v.clone()),
            NamedNodePattern::NamedNode(n) => TermPattern::NamedNode(n.clone()),
        };
        for (function, part) in [(Function::Subject, tp.subject), (Function::Predicate, predicate), (Function::Object, tp.object)] {
            let value = call(function, var.clone());
            pattern = match part {
                TermPattern::NamedNode(n) => filter(pattern, Expression::SameTerm(Box::new(value), Box::new(Expression::NamedNode(n)))),
                TermPattern::Literal(l) => filter(pattern, Expression::SameTerm(Box::new(value), Box::new(Expression::Literal(l)))),
                TermPattern::Triple(inner) => {
                    let v = fresh();
                    pending.push((v.clone(), *inner));
                    GraphPattern::Extend { inner: Box::new(pattern), variable: v, expression: value }
                }
                other => {
                    let v = variable_of(&other).expect("a variable or blank node");
                    if bound.insert(v.clone()) {
                        GraphPattern::Extend { inner: Box::new(pattern), variable: v, expression: value }
                    } else {
                        filter(pattern, Expression::SameTerm(Box::new(Expression::Variable(v)), Box::new(value)))
                    }
                }
            };
        }
    }
    Some(pattern)
}

/// The variable a term pattern is, blank nodes as the translator names
/// them (`_:label`, never projected).
fn variable_of(t: &TermPattern) -> Option<Variable> {
    match t {
        TermPattern::Variable(v) => Some(v.clone()),
        TermPattern::BlankNode(b) => Some(Variable::new_unchecked(format!("_:{}", b.as_str()))),
        _ => None,
    }
}

fn call(f: Function, arg: Expression) -> Expression {
    Expression::FunctionCall(f, vec![arg])
}

fn filter(inner: GraphPattern, expr: Expression) -> GraphPattern {
    GraphPattern::Filter { expr, inner: Box::new(inner) }
}

/// A template term with a solution's values (`value`) and fresh blank
/// nodes (`blank`); `None` where a variable is unbound or the result is
/// not a term (a triple term whose subject would be a literal).
pub fn instantiate(t: &TermPattern, value: &dyn Fn(&Variable) -> Option<Term>, blank: &mut dyn FnMut(&BlankNode) -> Term) -> Option<Term> {
    Some(match t {
        TermPattern::Variable(v) => value(v)?,
        TermPattern::BlankNode(b) => blank(b),
        TermPattern::NamedNode(n) => n.clone().into(),
        TermPattern::Literal(l) => l.clone().into(),
        TermPattern::Triple(tp) => {
            let subject = match instantiate(&tp.subject, value, blank)? {
                Term::NamedNode(n) => NamedOrBlankNode::NamedNode(n),
                Term::BlankNode(b) => NamedOrBlankNode::BlankNode(b),
                _ => return None,
            };
            let predicate = match &tp.predicate {
                NamedNodePattern::NamedNode(n) => n.clone(),
                NamedNodePattern::Variable(v) => match value(v)? {
                    Term::NamedNode(n) => n,
                    _ => return None,
                },
            };
            Triple::new(subject, predicate, instantiate(&tp.object, value, blank)?).into()
        }
    })
}

/// A DELETE template term with a solution's values (no blank nodes).
pub fn instantiate_ground(t: &GroundTermPattern, value: &dyn Fn(&Variable) -> Option<Term>) -> Option<Term> {
    let pattern = TermPattern::from(t.clone());
    instantiate(&pattern, value, &mut |_| unreachable!("DELETE templates hold no blank nodes"))
}

/// A ground term with its blank nodes renamed through `blank` (INSERT
/// DATA: blank nodes are fresh for each operation, inside triple terms too).
pub fn rename_blanks(t: &Term, blank: &mut dyn FnMut(&BlankNode) -> BlankNode) -> Term {
    match t {
        Term::BlankNode(b) => blank(b).into(),
        Term::Triple(tr) => {
            let subject = match &tr.subject {
                NamedOrBlankNode::BlankNode(b) => blank(b).into(),
                other => other.clone(),
            };
            Triple::new(subject, tr.predicate.clone(), rename_blanks(&tr.object, blank)).into()
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_bgp(text: &str) -> Vec<TriplePattern> {
        let q = spargebra::SparqlParser::new().parse_query(&format!("SELECT * WHERE {{ {text} }}")).unwrap();
        let spargebra::Query::Select { pattern, .. } = q else { panic!() };
        fn find(p: &GraphPattern) -> Vec<TriplePattern> {
            match p {
                GraphPattern::Bgp { patterns } => patterns.clone(),
                GraphPattern::Project { inner, .. } => find(inner),
                other => panic!("{other:?}"),
            }
        }
        find(&pattern)
    }

    #[test]
    fn only_triple_terms_with_variables_are_rewritten() {
        let mut n = 0;
        let mut fresh = || {
            n += 1;
            Variable::new_unchecked(format!("#t{n}"))
        };
        assert!(expand_bgp(&parse_bgp("?x <http://e/p> <<( <http://e/a> <http://e/b> <http://e/c> )>>"), &mut fresh).is_none());
        let rewritten = expand_bgp(&parse_bgp("?x <http://e/p> <<( ?x <http://e/b> <<( ?y ?q \"o\" )>> )>>"), &mut fresh).unwrap();
        // ?x is bound by the BGP: the subject must be it; ?y and ?q are
        // bound from the nested triple term's parts; constants compared.
        assert_eq!(
            rewritten.to_string(),
            "?x <http://e/p> ?#t1 . FILTER(isTRIPLE(?#t1)) FILTER(sameTerm(?x, SUBJECT(?#t1))) FILTER(sameTerm(PREDICATE(?#t1), <http://e/b>)) \
             BIND(OBJECT(?#t1) AS ?#t2) FILTER(isTRIPLE(?#t2)) BIND(SUBJECT(?#t2) AS ?y) BIND(PREDICATE(?#t2) AS ?q) FILTER(sameTerm(OBJECT(?#t2), \"o\"))"
        );
    }
}
