//! Evaluating an expression over one row. `None` is SPARQL's error value
//! (an unbound variable, a type error), which FILTER treats as false and
//! BIND as leaving the variable unbound.

use super::value::{arithmetic, boolean, compare, ebv, equals, numeric, Num};
use super::{Expr, NUMBER_TAGS};
use rhizome_rdf::TermId;
use crate::eval::Evaluator;
use crate::plan::Row;
use oxrdf::Term;
use std::cmp::Ordering;
use std::rc::Rc;

pub fn evaluate<'a>(ev: &Rc<Evaluator<'a>>, e: &'a Expr, row: &Row) -> Option<Term> {
    match e {
        Expr::Const(t) | Expr::Number(_, t) => Some(t.clone()),
        Expr::Var(v) => {
            let id = row.get(*v).copied().flatten()?;
            ev.space.decode(id).ok()
        }
        Expr::Or(a, b) => {
            let x = evaluate(ev, a, row).as_ref().and_then(ebv);
            if x == Some(true) {
                return Some(boolean(true));
            }
            let y = evaluate(ev, b, row).as_ref().and_then(ebv);
            match (x, y) {
                (_, Some(true)) => Some(boolean(true)),
                (Some(false), Some(false)) => Some(boolean(false)),
                _ => None,
            }
        }
        Expr::And(a, b) => {
            let x = evaluate(ev, a, row).as_ref().and_then(ebv);
            if x == Some(false) {
                return Some(boolean(false));
            }
            let y = evaluate(ev, b, row).as_ref().and_then(ebv);
            match (x, y) {
                (_, Some(false)) => Some(boolean(false)),
                (Some(true), Some(true)) => Some(boolean(true)),
                _ => None,
            }
        }
        Expr::Equal(a, b) => {
            if let (Expr::Var(x), Expr::Var(y)) = (&**a, &**b) {
                // Same id, same term: no decoding needed.
                if let (Some(Some(p)), Some(Some(q))) = (row.get(*x), row.get(*y)) {
                    if p == q {
                        let t = ev.space.decode(*p).ok()?;
                        return equals(&t, &t).map(boolean);
                    }
                }
            }
            let (x, y) = (evaluate(ev, a, row)?, evaluate(ev, b, row)?);
            equals(&x, &y).map(boolean)
        }
        Expr::SameTerm(a, b) => Some(boolean(evaluate(ev, a, row)? == evaluate(ev, b, row)?)),
        Expr::Greater(a, b) => cmp(ev, a, b, row, |o| o == Ordering::Greater),
        Expr::GreaterOrEqual(a, b) => cmp(ev, a, b, row, |o| o != Ordering::Less),
        Expr::Less(a, b) => cmp(ev, a, b, row, |o| o == Ordering::Less),
        Expr::LessOrEqual(a, b) => cmp(ev, a, b, row, |o| o != Ordering::Greater),
        Expr::In(a, list) => {
            let x = evaluate(ev, a, row)?;
            let mut error = false;
            for e in list {
                match evaluate(ev, e, row).and_then(|y| equals(&x, &y)) {
                    Some(true) => return Some(boolean(true)),
                    Some(false) => {}
                    None => error = true,
                }
            }
            if error {
                None
            } else {
                Some(boolean(false))
            }
        }
        Expr::Add(a, b) => arithmetic('+', &evaluate(ev, a, row)?, &evaluate(ev, b, row)?),
        Expr::Subtract(a, b) => arithmetic('-', &evaluate(ev, a, row)?, &evaluate(ev, b, row)?),
        Expr::Multiply(a, b) => arithmetic('*', &evaluate(ev, a, row)?, &evaluate(ev, b, row)?),
        Expr::Divide(a, b) => {
            let (x, y) = (evaluate(ev, a, row)?, evaluate(ev, b, row)?);
            // Division by zero is an error for integers and decimals.
            if let (Some(p), Some(q)) = (numeric(&x), numeric(&y)) {
                if let Some((Num::Integer(_) | Num::Decimal(_), d)) = Num::promote(p, q) {
                    if d.is_zero_or_nan() {
                        return None;
                    }
                }
            }
            arithmetic('/', &x, &y)
        }
        Expr::UnaryPlus(a) => {
            let x = evaluate(ev, a, row)?;
            numeric(&x).map(Num::into_term)
        }
        Expr::UnaryMinus(a) => {
            let x = evaluate(ev, a, row)?;
            Some(match numeric(&x)? {
                Num::Integer(i) => Num::Integer(i.checked_neg()?),
                Num::Decimal(d) => Num::Decimal(d.checked_neg()?),
                Num::Float(f) => Num::Float(-f),
                Num::Double(d) => Num::Double(-d),
            }
            .into_term())
        }
        Expr::Not(a) => Some(boolean(!ebv(&evaluate(ev, a, row)?)?)),
        Expr::Exists(p) => {
            let mut rows = ev.eval(p, row.clone());
            Some(boolean(matches!(rows.next(), Some(Ok(_)))))
        }
        Expr::Bound(v) => Some(boolean(row.get(*v).copied().flatten().is_some())),
        Expr::If(c, a, b) => {
            if ebv(&evaluate(ev, c, row)?)? {
                evaluate(ev, a, row)
            } else {
                evaluate(ev, b, row)
            }
        }
        Expr::Coalesce(list) => list.iter().find_map(|e| evaluate(ev, e, row)),
        Expr::Call(f, args) => super::functions::call(ev, f, args, row),
    }
}

/// The id of an operand that is an inlined number, if it is one.
fn inline_number(e: &Expr, row: &Row) -> Option<TermId> {
    let id = match e {
        Expr::Number(id, _) => *id,
        Expr::Var(v) => row.get(*v).copied().flatten()?,
        _ => return None,
    };
    NUMBER_TAGS.contains(&id.tag()).then_some(id)
}

fn cmp<'a>(ev: &Rc<Evaluator<'a>>, a: &'a Expr, b: &'a Expr, row: &Row, test: fn(Ordering) -> bool) -> Option<Term> {
    // Inlined numbers of one type compare by id: no decoding.
    if let (Some(x), Some(y)) = (inline_number(a, row), inline_number(b, row)) {
        if x.tag() == y.tag() {
            return Some(boolean(test(x.cmp(&y))));
        }
    }
    let (x, y) = (evaluate(ev, a, row)?, evaluate(ev, b, row)?);
    compare(&x, &y).map(|o| boolean(test(o)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::vocab::xsd;
    use oxrdf::Literal;
    use rhizome_rdf::term::{term_key, TermKey};

    fn id(lexical: &str, datatype: oxrdf::NamedNodeRef<'_>) -> TermId {
        match term_key(Literal::new_typed_literal(lexical, datatype).as_ref().into()) {
            TermKey::Inline(id) => id,
            other => panic!("{lexical} is not inlined: {other:?}"),
        }
    }

    #[test]
    fn inlined_numbers_of_one_type_order_by_id_as_by_value() {
        let pairs = [("-5", "3", xsd::INTEGER), ("3", "100", xsd::INTEGER), ("-7", "-2", xsd::INTEGER), ("-2.25", "1.5", xsd::DECIMAL), ("0.5", "0.75", xsd::DECIMAL)];
        for (a, b, dt) in pairs {
            let (x, y) = (id(a, dt), id(b, dt));
            assert!(NUMBER_TAGS.contains(&x.tag()));
            assert_eq!(x.cmp(&y), Ordering::Less, "{a} < {b}");
        }
    }
}
