//! Evaluating an expression over one row. `None` is SPARQL's error value
//! (an unbound variable, a type error), which FILTER treats as false and
//! BIND as leaving the variable unbound.

use super::value::{arithmetic, boolean, compare, ebv, equals, numeric, Num};
use super::Expr;
use rhizome_rdf::term::inline::{inline_integer_id, inline_integer_value};
use rhizome_rdf::term::tag;
use rhizome_rdf::TermId;
use crate::eval::Evaluator;
use crate::plan::Row;
use oxrdf::Term;
use std::cmp::Ordering;
use std::rc::Rc;

pub fn evaluate<'a>(ev: &Rc<Evaluator<'a>>, e: &'a Expr, row: &Row) -> Option<Term> {
    match e {
        Expr::Const(t) | Expr::Inlined(_, t) | Expr::Iri(_, t) => Some(t.clone()),
        Expr::Var(v) => {
            let id = row.get(*v).copied().flatten()?;
            ev.space.decode(id).ok()
        }
        Expr::Or(..) | Expr::And(..) | Expr::Equal(..) | Expr::Not(_) => truth(ev, e, row).map(boolean),
        Expr::SameTerm(a, b) => Some(boolean(evaluate(ev, a, row)? == evaluate(ev, b, row)?)),
        Expr::Greater(..) | Expr::GreaterOrEqual(..) | Expr::Less(..) | Expr::LessOrEqual(..) => truth(ev, e, row).map(boolean),
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
        // An error inside (a time limit, say) is raised again by the
        // operator around, which checks the same limits.
        Expr::Exists(p, alone) => ev.exists(p, alone.as_deref(), row).ok().map(boolean),
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

/// The effective boolean value of `e` over `row` (`None`: an error), as
/// FILTER needs it. Logical operators and comparisons decided on ids build
/// no terms: a filter over inlined values or stored IRIs decodes nothing.
pub fn truth<'a>(ev: &Rc<Evaluator<'a>>, e: &'a Expr, row: &Row) -> Option<bool> {
    match e {
        Expr::And(a, b) => connective(ev, a, b, row, false),
        Expr::Or(a, b) => connective(ev, a, b, row, true),
        Expr::Not(a) => truth(ev, a, row).map(|b| !b),
        Expr::Bound(v) => Some(row.get(*v).copied().flatten().is_some()),
        // As `evaluate` answers it, without building a boolean term to
        // take its effective boolean value again (once per filtered row).
        Expr::Exists(p, alone) => ev.exists(p, alone.as_deref(), row).ok(),
        Expr::Equal(a, b) => {
            if let Some(decided) = lang_equal_by_id(a, b, row).or_else(|| lang_equal_by_id(b, a, row)) {
                return decided;
            }
            if let (Some(x), Some(y)) = (operand_id(a, row), operand_id(b, row)) {
                if let Some(same) = equal_by_id(x, y) {
                    return Some(same);
                }
                if x == y {
                    // Same id, same term: decode once.
                    let t = ev.space.decode(x).ok()?;
                    return equals(&t, &t);
                }
            }
            equals(&evaluate(ev, a, row)?, &evaluate(ev, b, row)?)
        }
        Expr::Call(f, args) => match call_by_id(f, args, row).or_else(|| text_test_in_place(ev, f, args, row)) {
            Some(decided) => decided,
            None => ebv(&evaluate(ev, e, row)?),
        },
        Expr::Greater(a, b) => cmp(ev, a, b, row, |o| o == Ordering::Greater),
        Expr::GreaterOrEqual(a, b) => cmp(ev, a, b, row, |o| o != Ordering::Less),
        Expr::Less(a, b) => cmp(ev, a, b, row, |o| o == Ordering::Less),
        Expr::LessOrEqual(a, b) => cmp(ev, a, b, row, |o| o != Ordering::Greater),
        _ => ebv(&evaluate(ev, e, row)?),
    }
}

/// `&&` (`decisive` false) or `||` (`decisive` true) with SPARQL's error
/// rules: either side equal to `decisive` decides, even if the other errs;
/// otherwise both must be known.
fn connective<'a>(ev: &Rc<Evaluator<'a>>, a: &'a Expr, b: &'a Expr, row: &Row, decisive: bool) -> Option<bool> {
    let x = truth(ev, a, row);
    if x == Some(decisive) {
        return x;
    }
    match (x, truth(ev, b, row)) {
        (_, Some(y)) if y == decisive => Some(decisive),
        (Some(_), Some(_)) => Some(!decisive),
        _ => None,
    }
}

/// A constant simple literal's text (or an `xsd:string`'s).
fn plain_text(e: &Expr) -> Option<&str> {
    match e {
        Expr::Const(Term::Literal(l)) | Expr::Inlined(_, Term::Literal(l)) if l.datatype() == oxrdf::vocab::xsd::STRING => Some(l.value()),
        _ => None,
    }
}

/// The id of `lang(?v)`'s variable, if `e` is that call.
fn lang_of_var(e: &Expr, row: &Row) -> Option<Option<TermId>> {
    match e {
        Expr::Call(spargebra::algebra::Function::Lang, args) => match args.as_slice() {
            [Expr::Var(v)] => Some(row.get(*v).copied().flatten()),
            _ => None,
        },
        _ => None,
    }
}

/// The language a term's id tells without reading the term: `Some("")`
/// for literals without one; the outer `None` when the id does not tell
/// (a language tag not in the id), the inner `None` for an error (not a
/// literal, or unbound).
enum IdLanguage {
    Error,
    None,
    /// The language code (`rhizome_rdf::term::lang_code`), never 0.
    Code(u16),
}

fn id_language(id: Option<TermId>) -> Option<IdLanguage> {
    let Some(id) = id else { return Some(IdLanguage::Error) };
    match (id.lang_code(), id.tag()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(IdLanguage::Code(code)),
        // A base direction's: in the term only.
        (None, tag::DIR_LANG_STRING) => None,
        // Stored literals of every other kind: no language.
        (None, tag::SHORT_STRING..=tag::TYPED) => Some(IdLanguage::None),
        (None, tag::IRI | tag::BLANK) => Some(IdLanguage::Error),
        // A term of the query's own (computed, or a constant the store
        // lacks): its id does not tell what it is.
        _ => None,
    }
}

/// `lang(?v) = "xx"` decided on the id (`None`: read the term).
fn lang_equal_by_id(a: &Expr, b: &Expr, row: &Row) -> Option<Option<bool>> {
    use rhizome_rdf::term::lang_code;
    let (id, text) = (lang_of_var(a, row)?, plain_text(b)?);
    Some(match id_language(id)? {
        IdLanguage::Error => None,
        IdLanguage::None => Some(text.is_empty()),
        IdLanguage::Code(code) => {
            let wanted = lang_code::of(text);
            if wanted == 0 && !text.is_empty() {
                // Not a lowercase tag with a short primary subtag: no
                // stored tag with a code equals it unless only case
                // differs, which the term must tell.
                return None;
            }
            if code & lang_code::HAS_SUBTAGS != 0 && code == wanted {
                return None; // same primary, both with subtags: compare them
            }
            Some(code == wanted)
        }
    })
}

/// Calls decided on ids alone: `langMatches(lang(?v), "xx")` and `"*"`,
/// and `STRSTARTS` of an inlined short string (`None`: evaluate).
fn call_by_id(f: &spargebra::algebra::Function, args: &[Expr], row: &Row) -> Option<Option<bool>> {
    use rhizome_rdf::term::lang_code;
    use spargebra::algebra::Function;
    match (f, args) {
        (Function::LangMatches, [tag_arg, range]) => {
            let (id, range) = (lang_of_var(tag_arg, row)?, plain_text(range)?);
            if range.is_empty() {
                return None;
            }
            Some(match id_language(id)? {
                IdLanguage::Error => None,
                IdLanguage::None => Some(false), // "" matches no non-empty range
                IdLanguage::Code(_) if range == "*" => Some(true),
                IdLanguage::Code(code) => {
                    let range = range.to_ascii_lowercase();
                    let (first, more) = match range.split_once('-') {
                        Some((first, _)) => (first, true),
                        None => (range.as_str(), false),
                    };
                    let wanted = lang_code::primary(first);
                    if wanted == 0 {
                        return None;
                    }
                    let primary = code & !lang_code::HAS_SUBTAGS;
                    if primary != wanted {
                        Some(false)
                    } else if more {
                        return None; // "de-ch": the subtags decide
                    } else {
                        Some(true)
                    }
                }
            })
        }
        (Function::StrStarts, [Expr::Var(v), prefix]) => {
            let id = row.get(*v).copied().flatten()?;
            let prefix = plain_text(prefix)?;
            if id.tag() != tag::SHORT_STRING {
                return None;
            }
            let p = id.payload();
            let bytes = (0..7).map(|i| (p >> (8 * (6 - i))) as u8).take_while(|b| *b != 0);
            Some(Some(prefix.len() <= 7 && bytes.take(prefix.len()).eq(prefix.bytes())))
        }
        _ => None,
    }
}

/// `STRSTARTS`, `STRENDS`, `CONTAINS` and `REGEX` of a variable and
/// constants, tested on the stored text in place (no copy of the term;
/// `None`: evaluate as usual).
fn text_test_in_place<'a>(ev: &Rc<Evaluator<'a>>, f: &spargebra::algebra::Function, args: &[Expr], row: &Row) -> Option<Option<bool>> {
    use spargebra::algebra::Function;
    let (Expr::Var(v), Some(pattern)) = (args.first()?, args.get(1).and_then(plain_text)) else { return None };
    let id = row.get(*v).copied().flatten()?;
    if !matches!(id.tag(), tag::STRING | tag::LANG_STRING) {
        return None;
    }
    let regex = match (f, args.get(2)) {
        (Function::Regex, None) => Some(ev.regex(pattern, None)?),
        (Function::Regex, Some(flags)) => Some(ev.regex(pattern, Some(plain_text(flags)?))?),
        (Function::StrStarts | Function::StrEnds | Function::Contains, None) => None,
        _ => return None,
    };
    let test = |t: &Term| -> Option<bool> {
        let Term::Literal(l) = t else { return None };
        let text = l.value();
        Some(match (&regex, f) {
            (Some(re), _) => re.is_match(text),
            (None, Function::StrStarts) => text.starts_with(pattern),
            (None, Function::StrEnds) => text.ends_with(pattern),
            (None, _) => text.contains(pattern),
        })
    };
    ev.space.with_term(id, test).ok()
}

/// `+`, `-` or `*` over inlined integers (variables, constants or such
/// sums and products), computed on the ids: the inlined integer id of the
/// result, or `None` when an operand is anything else or the result
/// leaves the inlined range (then the terms are computed as SPARQL says:
/// the same value). Decoding both operands, building the result's term
/// and encoding it again took about 1,600 instructions a row (m21).
pub(crate) fn integer_id(e: &Expr, row: &Row) -> Option<TermId> {
    let (op, a, b) = match e {
        Expr::Add(a, b) => ('+', a, b),
        Expr::Subtract(a, b) => ('-', a, b),
        Expr::Multiply(a, b) => ('*', a, b),
        _ => return None,
    };
    let value = |e: &Expr| inline_integer_value(operand_id(e, row).or_else(|| integer_id(e, row))?);
    let (x, y) = (value(a)?, value(b)?);
    let v = match op {
        '+' => x.checked_add(y)?,
        '-' => x.checked_sub(y)?,
        _ => x.checked_mul(y)?,
    };
    // The id made from the value: writing its lexical form and parsing it
    // back (twice, to check it canonical) took half of m21's BIND.
    inline_integer_id(v)
}

/// The id of an operand that is a bound variable or an inlined constant.
fn operand_id(e: &Expr, row: &Row) -> Option<TermId> {
    match e {
        Expr::Inlined(id, _) | Expr::Iri(id, _) => Some(*id),
        Expr::Var(v) => row.get(*v).copied().flatten(),
        _ => None,
    }
}

/// Tags whose ids sort in value order, any two of one tag comparable:
/// canonical integers and decimals, booleans and short strings (zero
/// padded bytes, so in code point order).
const ORDERED_TAGS: [u8; 4] = [tag::INTEGER, tag::DECIMAL, tag::BOOLEAN, tag::SHORT_STRING];

/// Dates and date-times sort in value order among those with the same
/// time zone field (or none): only then does the id decide.
const TIME_ZONED_TAGS: [u8; 2] = [tag::DATE, tag::DATE_TIME];
const TIME_ZONE_BITS: u64 = 0xFFF;

/// How two ids' values compare, when the ids alone decide it.
pub(crate) fn order_by_id(x: TermId, y: TermId) -> Option<Ordering> {
    if x.tag() != y.tag() {
        return None;
    }
    let comparable = ORDERED_TAGS.contains(&x.tag()) || (TIME_ZONED_TAGS.contains(&x.tag()) && x.payload() & TIME_ZONE_BITS == y.payload() & TIME_ZONE_BITS);
    comparable.then(|| x.cmp(&y))
}

/// Whether two ids' terms are equal (`=`), when the ids alone decide it:
/// comparable values of one type, or terms the dictionary holds once each
/// (IRIs, blank nodes, long plain strings), equal only when the ids are.
fn equal_by_id(x: TermId, y: TermId) -> Option<bool> {
    if let Some(o) = order_by_id(x, y) {
        return Some(o == Ordering::Equal);
    }
    let unique = |t: u8| matches!(t, tag::IRI | tag::BLANK);
    if unique(x.tag()) || unique(y.tag()) {
        return Some(x == y);
    }
    (x.tag() == tag::STRING && y.tag() == tag::STRING).then_some(x == y)
}

fn cmp<'a>(ev: &Rc<Evaluator<'a>>, a: &'a Expr, b: &'a Expr, row: &Row, test: fn(Ordering) -> bool) -> Option<bool> {
    let id = |e: &Expr| operand_id(e, row).or_else(|| integer_id(e, row));
    if let (Some(x), Some(y)) = (id(a), id(b)) {
        if let Some(o) = order_by_id(x, y) {
            return Some(test(o));
        }
    }
    let (x, y) = (evaluate(ev, a, row)?, evaluate(ev, b, row)?);
    compare(&x, &y).map(test)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rhizome_rdf::term::inline::{inline_literal, XSD_INTEGER};
    use oxrdf::vocab::xsd;
    use oxrdf::Literal;
    use rhizome_rdf::term::{term_key, TermKey};

    fn id(lexical: &str, datatype: oxrdf::NamedNodeRef<'_>) -> TermId {
        match term_key(Literal::new_typed_literal(lexical, datatype).as_ref().into()) {
            TermKey::Inline(id) => id,
            other => panic!("{lexical} is not inlined: {other:?}"),
        }
    }

    /// Sums, differences and products of inlined integers computed on ids
    /// are the ids of the values SPARQL computes; a result past the
    /// inlined range, or an operand of another type, is left to terms.
    #[test]
    fn integer_arithmetic_on_ids_gives_the_ids_of_the_computed_values() {
        let int = |v: i64| id(&v.to_string(), xsd::INTEGER);
        let var = |v: usize| Box::new(Expr::Var(v));
        let values: [i64; 7] = [0, 1, -1, 7, -40, 123_456_789, 36_028_797_018_963_967];
        for &x in &values {
            for &y in &values {
                let (Some(_), Some(_)) = (inline_literal(&x.to_string(), XSD_INTEGER), inline_literal(&y.to_string(), XSD_INTEGER)) else { continue };
                let row = vec![Some(int(x)), Some(int(y))];
                for (e, want) in [
                    (Expr::Add(var(0), var(1)), x.checked_add(y)),
                    (Expr::Subtract(var(0), var(1)), x.checked_sub(y)),
                    (Expr::Multiply(var(0), var(1)), x.checked_mul(y)),
                ] {
                    let want = want.and_then(|v| inline_literal(&v.to_string(), XSD_INTEGER));
                    assert_eq!(integer_id(&e, &row), want, "{x} {e:?} {y}");
                }
            }
        }
        // Nested, with an inlined constant: (?a * ?b) - 2.
        let row = vec![Some(int(6)), Some(int(7))];
        let two = Box::new(Expr::Inlined(int(2), Literal::new_typed_literal("2", xsd::INTEGER).into()));
        assert_eq!(integer_id(&Expr::Subtract(Box::new(Expr::Multiply(var(0), var(1))), two), &row), Some(int(40)));
        // A decimal operand, or an unbound one: not decided on ids.
        let row = vec![Some(int(6)), Some(id("1.5", xsd::DECIMAL))];
        assert_eq!(integer_id(&Expr::Add(var(0), var(1)), &row), None);
        assert_eq!(integer_id(&Expr::Add(var(0), var(1)), &vec![Some(int(6)), None]), None);
    }

    #[test]
    fn inlined_values_of_one_type_order_by_id_as_by_value() {
        let pairs = [
            ("-5", "3", xsd::INTEGER),
            ("3", "100", xsd::INTEGER),
            ("-7", "-2", xsd::INTEGER),
            ("-2.25", "1.5", xsd::DECIMAL),
            ("0.5", "0.75", xsd::DECIMAL),
            ("false", "true", xsd::BOOLEAN),
            ("ab", "abc", xsd::STRING),
            ("Zoo", "ab", xsd::STRING),
            ("caf", "caf\u{e9}", xsd::STRING),
            ("1999-12-31", "2000-01-01", xsd::DATE),
            ("2010-05-01Z", "2010-05-02Z", xsd::DATE),
            ("2010-05-01T23:59:59", "2010-05-02T00:00:00", xsd::DATE_TIME),
            ("2010-05-01T10:00:00+02:00", "2010-05-01T11:00:00+02:00", xsd::DATE_TIME),
        ];
        for (a, b, dt) in pairs {
            let (x, y) = (id(a, dt), id(b, dt));
            let by_value = compare(&Literal::new_typed_literal(a, dt).into(), &Literal::new_typed_literal(b, dt).into());
            assert_eq!(by_value, Some(Ordering::Less), "{a} < {b} by value");
            assert_eq!(order_by_id(x, y), Some(Ordering::Less), "{a} < {b} by id");
            assert_eq!(order_by_id(y, x), Some(Ordering::Greater), "{b} > {a} by id");
            assert_eq!(equal_by_id(x, y), Some(false));
            assert_eq!(equal_by_id(x, x), Some(true));
        }
    }

    /// For every pair of inlined values: where the ids decide an order or
    /// an equality, it is the one the values give.
    #[test]
    fn orders_and_equalities_decided_by_id_are_those_of_the_values() {
        let values = [
            ("-7", xsd::INTEGER),
            ("0", xsd::INTEGER),
            ("2", xsd::INTEGER),
            ("-0.5", xsd::DECIMAL),
            ("2.0", xsd::DECIMAL),
            ("2.25", xsd::DECIMAL),
            ("true", xsd::BOOLEAN),
            ("false", xsd::BOOLEAN),
            ("", xsd::STRING),
            ("a", xsd::STRING),
            ("ab", xsd::STRING),
            ("B", xsd::STRING),
            ("\u{e9}t\u{e9}", xsd::STRING),
            ("2010-01-01", xsd::DATE),
            ("2010-01-02", xsd::DATE),
            ("2010-01-01Z", xsd::DATE),
            ("2010-01-02+13:00", xsd::DATE),
            ("2010-01-01-12:00", xsd::DATE),
            ("2010-01-01T10:00:00", xsd::DATE_TIME),
            ("2010-01-01T23:30:00", xsd::DATE_TIME),
            ("2010-01-01T10:00:00Z", xsd::DATE_TIME),
            ("2010-01-01T11:00:00+02:00", xsd::DATE_TIME),
            ("2010-01-01T09:00:00+02:00", xsd::DATE_TIME),
            ("2010-01-01T10:00:00-12:00", xsd::DATE_TIME),
        ];
        let (mut decided_order, mut decided_equal) = (0, 0);
        for (a, da) in values {
            for (b, db) in values {
                let (x, y) = (id(a, da), id(b, db));
                let (s, t): (Term, Term) = (Literal::new_typed_literal(a, da).into(), Literal::new_typed_literal(b, db).into());
                if let Some(o) = order_by_id(x, y) {
                    assert_eq!(Some(o), compare(&s, &t), "{s} and {t}: order by id");
                    decided_order += 1;
                }
                if let Some(e) = equal_by_id(x, y) {
                    assert_eq!(Some(e), equals(&s, &t), "{s} = {t} by id");
                    decided_equal += 1;
                }
            }
        }
        // Guards against a fast path that never applies.
        assert!(decided_order > 50 && decided_equal > 50, "{decided_order} orders, {decided_equal} equalities decided by id");
        // Stored IRIs and blank nodes: one id per term.
        let (i1, i2) = (TermId::new(tag::IRI, 1), TermId::new(tag::IRI, 2));
        assert_eq!(equal_by_id(i1, i2), Some(false));
        assert_eq!(equal_by_id(i1, i1), Some(true));
        assert_eq!(equal_by_id(i1, id("2", xsd::INTEGER)), Some(false));
        assert_eq!(order_by_id(i1, i2), None, "IRIs have no order");
    }

    #[test]
    fn ids_do_not_decide_what_only_values_can() {
        // Other time zones: the later-looking date-time is the earlier one.
        let (x, y) = (id("2010-05-01T10:00:00Z", xsd::DATE_TIME), id("2010-05-01T11:00:00+02:00", xsd::DATE_TIME));
        assert_eq!(order_by_id(x, y), None);
        assert_eq!(equal_by_id(x, y), None);
        // With and without a time zone: no order at all in some cases.
        assert_eq!(order_by_id(id("2010-05-01", xsd::DATE), id("2010-05-01Z", xsd::DATE)), None);
        // An integer and a decimal of the same value are equal.
        assert_eq!(equal_by_id(id("1", xsd::INTEGER), id("1.0", xsd::DECIMAL)), None);
        // A short and a long string need no decoding to differ, but their
        // order does.
        assert_eq!(order_by_id(id("abc", xsd::STRING), TermId::new(tag::STRING, 7)), None);
    }
}
