//! Expressions: the plan's form (variables numbered), their evaluation over
//! terms, XSD values (oxsdatatypes) and the built-in functions.

mod eval;
mod functions;
pub mod value;

pub use eval::{evaluate, truth};
pub(crate) use eval::integer_id;

use crate::error::Result;
use crate::plan::{Plan, Translator, Var};
use oxrdf::Term;
use rhizome_rdf::term::{term_key, TermKey};
use rhizome_rdf::TermId;
use spargebra::algebra::{Expression, Function};

#[derive(Clone, Debug)]
pub enum Expr {
    Const(Term),
    /// A literal constant the store inlines (numbers, dates, short
    /// strings...), with its id: compared with stored values by id,
    /// without decoding.
    Inlined(TermId, Term),
    /// An IRI constant with its id (the store's, or a query-local one when
    /// the store lacks it): `=` and `!=` with a stored IRI are decided by
    /// id, as the dictionary holds each IRI once.
    Iri(TermId, Term),
    Var(Var),
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Equal(Box<Expr>, Box<Expr>),
    SameTerm(Box<Expr>, Box<Expr>),
    Greater(Box<Expr>, Box<Expr>),
    GreaterOrEqual(Box<Expr>, Box<Expr>),
    Less(Box<Expr>, Box<Expr>),
    LessOrEqual(Box<Expr>, Box<Expr>),
    In(Box<Expr>, Vec<Expr>),
    Add(Box<Expr>, Box<Expr>),
    Subtract(Box<Expr>, Box<Expr>),
    Multiply(Box<Expr>, Box<Expr>),
    Divide(Box<Expr>, Box<Expr>),
    UnaryPlus(Box<Expr>),
    UnaryMinus(Box<Expr>),
    Not(Box<Expr>),
    /// The pattern ordered for lookups from the rows it filters, and
    /// (when it is one BGP) ordered for reading it alone, as a semi-join
    /// does.
    Exists(Box<Plan>, Option<Box<Plan>>),
    Bound(Var),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    Coalesce(Vec<Expr>),
    Call(Function, Vec<Expr>),
}

impl Expr {
    /// Variables the expression reads (not inside EXISTS).
    pub fn vars(&self) -> Vec<Var> {
        let mut out = Vec::new();
        self.visit(&mut |e| match e {
            Expr::Var(v) | Expr::Bound(v) => out.push(*v),
            _ => {}
        });
        out
    }

    /// The patterns of the EXISTS in the expression.
    pub(crate) fn exists_plans(&self) -> Vec<&Plan> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Exists(p, _) = e {
                out.push(&**p);
            }
        });
        out
    }

    /// Variables whose stored text the expression reads: the first
    /// argument of a string function (`STRSTARTS(?code, "UE")`,
    /// `REGEX(?e, ...)`, `STR(?x)`...). A FILTER decodes their terms for a
    /// batch of rows at once (`Evaluator::filtered`); variables only
    /// compared, or read through their ids (`lang`, numbers), are not.
    pub(crate) fn text_vars(&self) -> Vec<Var> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Call(f, args) = e {
                let reads_text = matches!(
                    f,
                    Function::StrStarts
                        | Function::StrEnds
                        | Function::Contains
                        | Function::Regex
                        | Function::Str
                        | Function::StrLen
                        | Function::SubStr
                        | Function::UCase
                        | Function::LCase
                        | Function::StrBefore
                        | Function::StrAfter
                        | Function::Concat
                        | Function::Replace
                );
                if let (true, Some(Expr::Var(v))) = (reads_text, args.first()) {
                    if !out.contains(v) {
                        out.push(*v);
                    }
                }
            }
        });
        out
    }

    /// The operands of the expression's top-level `&&`s (itself if none).
    pub(crate) fn conjuncts(&self) -> Vec<&Expr> {
        match self {
            Expr::And(a, b) => {
                let mut out = a.conjuncts();
                out.extend(b.conjuncts());
                out
            }
            e => vec![e],
        }
    }

    pub fn has_exists(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Exists(..)));
        found
    }

    fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Expr)) {
        f(self);
        match self {
            Expr::Const(_) | Expr::Inlined(..) | Expr::Iri(..) | Expr::Var(_) | Expr::Exists(..) | Expr::Bound(_) => {}
            Expr::Or(a, b)
            | Expr::And(a, b)
            | Expr::Equal(a, b)
            | Expr::SameTerm(a, b)
            | Expr::Greater(a, b)
            | Expr::GreaterOrEqual(a, b)
            | Expr::Less(a, b)
            | Expr::LessOrEqual(a, b)
            | Expr::Add(a, b)
            | Expr::Subtract(a, b)
            | Expr::Multiply(a, b)
            | Expr::Divide(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::UnaryPlus(a) | Expr::UnaryMinus(a) | Expr::Not(a) => a.visit(f),
            Expr::In(a, list) => {
                a.visit(f);
                list.iter().for_each(|e| e.visit(f));
            }
            Expr::If(a, b, c) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
            Expr::Coalesce(list) | Expr::Call(_, list) => list.iter().for_each(|e| e.visit(f)),
        }
    }
}

pub fn translate_expression(t: &mut Translator<'_, '_>, e: &Expression) -> Result<Expr> {
    t.descend(|t| translate_node(t, e))
}

fn translate_node(t: &mut Translator<'_, '_>, e: &Expression) -> Result<Expr> {
    use Expression as E;
    let two = |t: &mut Translator<'_, '_>, a: &Expression, b: &Expression| -> Result<(Box<Expr>, Box<Expr>)> {
        Ok((Box::new(translate_expression(t, a)?), Box::new(translate_expression(t, b)?)))
    };
    Ok(match e {
        E::NamedNode(n) => {
            let term: Term = n.clone().into();
            Expr::Iri(t.space.encode(term.as_ref())?, term)
        }
        E::Literal(l) => match term_key(l.as_ref().into()) {
            TermKey::Inline(id) => Expr::Inlined(id, l.clone().into()),
            _ => Expr::Const(l.clone().into()),
        },
        E::Variable(v) => Expr::Var(t.var(v)),
        E::Or(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Or(a, b)
        }
        E::And(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::And(a, b)
        }
        E::Equal(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Equal(a, b)
        }
        E::SameTerm(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::SameTerm(a, b)
        }
        E::Greater(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Greater(a, b)
        }
        E::GreaterOrEqual(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::GreaterOrEqual(a, b)
        }
        E::Less(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Less(a, b)
        }
        E::LessOrEqual(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::LessOrEqual(a, b)
        }
        E::Add(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Add(a, b)
        }
        E::Subtract(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Subtract(a, b)
        }
        E::Multiply(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Multiply(a, b)
        }
        E::Divide(a, b) => {
            let (a, b) = two(t, a, b)?;
            Expr::Divide(a, b)
        }
        E::In(a, list) => Expr::In(
            Box::new(translate_expression(t, a)?),
            list.iter().map(|e| translate_expression(t, e)).collect::<Result<_>>()?,
        ),
        E::UnaryPlus(a) => Expr::UnaryPlus(Box::new(translate_expression(t, a)?)),
        E::UnaryMinus(a) => Expr::UnaryMinus(Box::new(translate_expression(t, a)?)),
        E::Not(a) => Expr::Not(Box::new(translate_expression(t, a)?)),
        E::Exists(p) => Expr::Exists(Box::new(t.pattern(p)?), t.exists_alone(p)?.map(Box::new)),
        E::Bound(v) => Expr::Bound(t.var(v)),
        E::If(a, b, c) => Expr::If(
            Box::new(translate_expression(t, a)?),
            Box::new(translate_expression(t, b)?),
            Box::new(translate_expression(t, c)?),
        ),
        E::Coalesce(list) => Expr::Coalesce(list.iter().map(|e| translate_expression(t, e)).collect::<Result<_>>()?),
        E::FunctionCall(f, args) => {
            Expr::Call(f.clone(), args.iter().map(|e| translate_expression(t, e)).collect::<Result<_>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::Literal;

    /// Only the variables a string function reads the text of are decoded
    /// ahead for a FILTER's batch; compared or id-tested ones are not.
    #[test]
    fn text_vars_are_the_variables_string_functions_read() {
        let text = |s: &str| Expr::Const(Literal::new_simple_literal(s).into());
        let e = Expr::And(
            Box::new(Expr::Call(Function::StrStarts, vec![Expr::Var(2), text("UE")])),
            Box::new(Expr::Or(
                Box::new(Expr::Equal(Box::new(Expr::Var(0)), Box::new(Expr::Var(1)))),
                Box::new(Expr::Call(Function::Regex, vec![Expr::Var(3), text("^a"), text("i")])),
            )),
        );
        assert_eq!(e.text_vars(), vec![2, 3]);
        assert!(Expr::Call(Function::Lang, vec![Expr::Var(0)]).text_vars().is_empty());
        assert!(Expr::Less(Box::new(Expr::Var(0)), Box::new(Expr::Var(1))).text_vars().is_empty());
    }
}
