//! XSD values of literals (oxsdatatypes): numbers with type promotion,
//! comparisons, effective boolean values and the ORDER BY order of terms.

use oxrdf::vocab::xsd;
use oxrdf::{Literal, Term};
use oxsdatatypes::*;
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug)]
pub enum Num {
    Integer(Integer),
    Decimal(Decimal),
    Float(Float),
    Double(Double),
}

const DERIVED_INTEGERS: &[&str] = &[
    "http://www.w3.org/2001/XMLSchema#int",
    "http://www.w3.org/2001/XMLSchema#long",
    "http://www.w3.org/2001/XMLSchema#short",
    "http://www.w3.org/2001/XMLSchema#byte",
    "http://www.w3.org/2001/XMLSchema#nonNegativeInteger",
    "http://www.w3.org/2001/XMLSchema#nonPositiveInteger",
    "http://www.w3.org/2001/XMLSchema#negativeInteger",
    "http://www.w3.org/2001/XMLSchema#positiveInteger",
    "http://www.w3.org/2001/XMLSchema#unsignedLong",
    "http://www.w3.org/2001/XMLSchema#unsignedInt",
    "http://www.w3.org/2001/XMLSchema#unsignedShort",
    "http://www.w3.org/2001/XMLSchema#unsignedByte",
];

pub fn is_numeric_datatype(dt: &str) -> bool {
    dt == xsd::INTEGER.as_str()
        || dt == xsd::DECIMAL.as_str()
        || dt == xsd::FLOAT.as_str()
        || dt == xsd::DOUBLE.as_str()
        || DERIVED_INTEGERS.contains(&dt)
}

pub fn numeric(t: &Term) -> Option<Num> {
    let Term::Literal(l) = t else { return None };
    let dt = l.datatype().as_str();
    let v = l.value();
    if dt == xsd::INTEGER.as_str() || DERIVED_INTEGERS.contains(&dt) {
        v.parse().ok().map(Num::Integer)
    } else if dt == xsd::DECIMAL.as_str() {
        v.parse().ok().map(Num::Decimal)
    } else if dt == xsd::FLOAT.as_str() {
        v.parse().ok().map(Num::Float)
    } else if dt == xsd::DOUBLE.as_str() {
        v.parse().ok().map(Num::Double)
    } else {
        None
    }
}

impl Num {
    fn rank(self) -> u8 {
        match self {
            Num::Integer(_) => 0,
            Num::Decimal(_) => 1,
            Num::Float(_) => 2,
            Num::Double(_) => 3,
        }
    }
    fn to_decimal(self) -> Option<Decimal> {
        match self {
            Num::Integer(i) => Some(i.into()),
            Num::Decimal(d) => Some(d),
            _ => None,
        }
    }
    fn to_float(self) -> Float {
        match self {
            Num::Integer(i) => i.into(),
            Num::Decimal(d) => d.into(),
            Num::Float(f) => f,
            Num::Double(d) => d.into(),
        }
    }
    pub fn to_double(self) -> Double {
        match self {
            Num::Integer(i) => i.into(),
            Num::Decimal(d) => d.into(),
            Num::Float(f) => f.into(),
            Num::Double(d) => d,
        }
    }
    /// Both operands promoted to their common type.
    pub fn promote(a: Num, b: Num) -> Option<(Num, Num)> {
        let r = a.rank().max(b.rank());
        let up = |n: Num| -> Option<Num> {
            Some(match r {
                0 => n,
                1 => Num::Decimal(n.to_decimal()?),
                2 => Num::Float(n.to_float()),
                _ => Num::Double(n.to_double()),
            })
        };
        Some((up(a)?, up(b)?))
    }
    pub fn into_term(self) -> Term {
        match self {
            Num::Integer(i) => Literal::from(i).into(),
            Num::Decimal(d) => Literal::from(d).into(),
            Num::Float(f) => Literal::from(f).into(),
            Num::Double(d) => Literal::from(d).into(),
        }
    }
    pub fn is_zero_or_nan(self) -> bool {
        match self {
            Num::Integer(i) => i == Integer::from(0),
            Num::Decimal(d) => d == Decimal::from(0),
            Num::Float(f) => f.is_nan() || f == Float::from(0u8),
            Num::Double(d) => d.is_nan() || d == Double::from(0u8),
        }
    }
    pub fn partial_cmp(a: Num, b: Num) -> Option<Ordering> {
        match Num::promote(a, b)? {
            (Num::Integer(x), Num::Integer(y)) => x.partial_cmp(&y),
            (Num::Decimal(x), Num::Decimal(y)) => x.partial_cmp(&y),
            (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
            (Num::Double(x), Num::Double(y)) => x.partial_cmp(&y),
            _ => None,
        }
    }
}

pub fn arithmetic(op: char, a: &Term, b: &Term) -> Option<Term> {
    if let (Some(x), Some(y)) = (numeric(a), numeric(b)) {
        return num_arithmetic(op, x, y).map(Num::into_term);
    }
    temporal_arithmetic(op, a, b)
}

/// `+ - * /` on numbers with XSD type promotion; `None` on overflow or a
/// division of integers or decimals by zero.
pub fn num_arithmetic(op: char, x: Num, y: Num) -> Option<Num> {
    Some(match Num::promote(x, y)? {
        (Num::Integer(x), Num::Integer(y)) => match op {
            '+' => Num::Integer(x.checked_add(y)?),
            '-' => Num::Integer(x.checked_sub(y)?),
            '*' => Num::Integer(x.checked_mul(y)?),
            _ => Num::Decimal(Decimal::from(x).checked_div(Decimal::from(y))?),
        },
        (Num::Decimal(x), Num::Decimal(y)) => Num::Decimal(match op {
            '+' => x.checked_add(y)?,
            '-' => x.checked_sub(y)?,
            '*' => x.checked_mul(y)?,
            _ => x.checked_div(y)?,
        }),
        (Num::Float(x), Num::Float(y)) => Num::Float(match op {
            '+' => x + y,
            '-' => x - y,
            '*' => x * y,
            _ => x / y,
        }),
        (Num::Double(x), Num::Double(y)) => Num::Double(match op {
            '+' => x + y,
            '-' => x - y,
            '*' => x * y,
            _ => x / y,
        }),
        _ => return None,
    })
}

fn temporal_arithmetic(op: char, a: &Term, b: &Term) -> Option<Term> {
    let (Term::Literal(a), Term::Literal(b)) = (a, b) else { return None };
    let (da, db) = (a.datatype(), b.datatype());
    let parse_dur = |l: &Literal| -> Option<Duration> {
        let dt = l.datatype();
        if dt == xsd::DURATION || dt == xsd::DAY_TIME_DURATION || dt == xsd::YEAR_MONTH_DURATION {
            l.value().parse().ok()
        } else {
            None
        }
    };
    if da == xsd::DATE_TIME {
        let x: DateTime = a.value().parse().ok()?;
        if db == xsd::DATE_TIME && op == '-' {
            let y: DateTime = b.value().parse().ok()?;
            return Some(Literal::from(x.checked_sub(y)?).into());
        }
        let d = parse_dur(b)?;
        return Some(Literal::from(if op == '+' { x.checked_add_duration(d)? } else { x.checked_sub_duration(d)? }).into());
    }
    if da == xsd::DATE {
        let x: Date = a.value().parse().ok()?;
        if db == xsd::DATE && op == '-' {
            let y: Date = b.value().parse().ok()?;
            return Some(Literal::from(x.checked_sub(y)?).into());
        }
        let d = parse_dur(b)?;
        return Some(Literal::from(if op == '+' { x.checked_add_duration(d)? } else { x.checked_sub_duration(d)? }).into());
    }
    if da == xsd::TIME {
        let x: Time = a.value().parse().ok()?;
        if db == xsd::TIME && op == '-' {
            let y: Time = b.value().parse().ok()?;
            return Some(Literal::from(x.checked_sub(y)?).into());
        }
        let d = parse_dur(b)?;
        return Some(Literal::from(if op == '+' { x.checked_add_duration(d)? } else { x.checked_sub_duration(d)? }).into());
    }
    let (x, y) = (parse_dur(a)?, parse_dur(b)?);
    let r = match op {
        '+' => x.checked_add(y)?,
        '-' => x.checked_sub(y)?,
        _ => return None,
    };
    Some(Literal::from(r).into())
}

pub fn is_string(l: &Literal) -> bool {
    l.datatype() == xsd::STRING && l.language().is_none()
}

/// Value comparison for `<`, `=` and friends; `None` is a type error.
pub fn compare(a: &Term, b: &Term) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (numeric(a), numeric(b)) {
        return Num::partial_cmp(x, y);
    }
    let (Term::Literal(x), Term::Literal(y)) = (a, b) else { return None };
    let (dx, dy) = (x.datatype(), y.datatype());
    if is_string(x) && is_string(y) {
        return Some(x.value().cmp(y.value()));
    }
    if dx != dy {
        // Durations of different subtypes compare as durations.
        let durations = [xsd::DURATION, xsd::DAY_TIME_DURATION, xsd::YEAR_MONTH_DURATION];
        if durations.contains(&dx) && durations.contains(&dy) {
            let (p, q): (Duration, Duration) = (x.value().parse().ok()?, y.value().parse().ok()?);
            return p.partial_cmp(&q);
        }
        return None;
    }
    macro_rules! by {
        ($t:ty) => {{
            let (p, q): ($t, $t) = (x.value().parse().ok()?, y.value().parse().ok()?);
            p.partial_cmp(&q)
        }};
    }
    if dx == xsd::BOOLEAN {
        by!(Boolean)
    } else if dx == xsd::DATE_TIME {
        by!(DateTime)
    } else if dx == xsd::DATE {
        by!(Date)
    } else if dx == xsd::TIME {
        by!(Time)
    } else if dx == xsd::DURATION || dx == xsd::DAY_TIME_DURATION || dx == xsd::YEAR_MONTH_DURATION {
        by!(Duration)
    } else if dx == xsd::G_YEAR {
        by!(GYear)
    } else {
        None
    }
}

/// How `=` treats a term (SPARQL 1.1 section 17.4.1.7, as Oxigraph reads
/// it): IRIs, blank nodes and language strings compare as terms; literals
/// of known datatypes with valid lexical forms by value; other literals
/// (unknown datatypes, ill-typed values) only equal themselves, and are
/// otherwise incomparable with values.
#[derive(PartialEq, Eq)]
enum EqClass {
    Term,
    Value,
    Other,
}

fn eq_class(t: &Term) -> EqClass {
    let Term::Literal(l) = t else { return EqClass::Term };
    if l.language().is_some() {
        return EqClass::Term;
    }
    let dt = l.datatype();
    let v = l.value();
    let valid = if dt == xsd::STRING {
        true
    } else if is_numeric_datatype(dt.as_str()) {
        numeric(t).is_some()
    } else if dt == xsd::BOOLEAN {
        v.parse::<Boolean>().is_ok()
    } else if dt == xsd::DATE_TIME {
        v.parse::<DateTime>().is_ok()
    } else if dt == xsd::DATE {
        v.parse::<Date>().is_ok()
    } else if dt == xsd::TIME {
        v.parse::<Time>().is_ok()
    } else if dt == xsd::DURATION || dt == xsd::DAY_TIME_DURATION || dt == xsd::YEAR_MONTH_DURATION {
        v.parse::<Duration>().is_ok()
    } else {
        false
    };
    if valid {
        EqClass::Value
    } else {
        EqClass::Other
    }
}

/// RDFterm-equal with value equality for known datatypes; `None` is an error.
pub fn equals(a: &Term, b: &Term) -> Option<bool> {
    // SPARQL 1.2: triple terms are equal when their parts are
    // (RDFterm-equal, so `<<( :a :b 1 )>> = <<( :a :b 1.0 )>>`).
    if let (Term::Triple(x), Term::Triple(y)) = (a, b) {
        if x.subject != y.subject || x.predicate != y.predicate {
            return Some(false);
        }
        return equals(&x.object, &y.object);
    }
    match (eq_class(a), eq_class(b)) {
        (EqClass::Term, _) | (_, EqClass::Term) => Some(a == b),
        (EqClass::Other, EqClass::Other) if a == b => Some(true),
        (EqClass::Other, _) | (_, EqClass::Other) => None,
        (EqClass::Value, EqClass::Value) => match compare(a, b) {
            Some(o) => Some(o == Ordering::Equal),
            // NaN is unequal to everything.
            None if numeric(a).is_some() && numeric(b).is_some() => Some(false),
            // Same type, no order: a date with and one without a timezone.
            None if matches!((a, b), (Term::Literal(x), Term::Literal(y)) if x.datatype() == y.datatype()) => None,
            None => Some(false),
        },
    }
}

/// Effective boolean value; `None` is an error.
pub fn ebv(t: &Term) -> Option<bool> {
    let Term::Literal(l) = t else { return None };
    let dt = l.datatype();
    if dt == xsd::BOOLEAN {
        // An invalid lexical form (`"z"^^xsd:boolean`) has no value: an error.
        return l.value().parse::<Boolean>().ok().map(bool::from);
    }
    if l.language().is_none() && dt == xsd::STRING {
        return Some(!l.value().is_empty());
    }
    if is_numeric_datatype(dt.as_str()) {
        return Some(match numeric(t) {
            Some(n) => !n.is_zero_or_nan(),
            None => false,
        });
    }
    None
}

fn kind_rank(t: Option<&Term>) -> u8 {
    match t {
        None => 0,
        Some(Term::BlankNode(_)) => 1,
        Some(Term::NamedNode(_)) => 2,
        Some(Term::Literal(_)) => 3,
        Some(Term::Triple(_)) => 4,
    }
}

/// The total order ORDER BY uses: unbound, blank nodes, IRIs, literals;
/// literals by value where comparable, else by their lexical form and type.
pub fn order(a: Option<&Term>, b: Option<&Term>) -> Ordering {
    let (ra, rb) = (kind_rank(a), kind_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        (Some(Term::BlankNode(x)), Some(Term::BlankNode(y))) => x.as_str().cmp(y.as_str()),
        (Some(Term::NamedNode(x)), Some(Term::NamedNode(y))) => x.as_str().cmp(y.as_str()),
        (Some(x @ Term::Literal(lx)), Some(y @ Term::Literal(ly))) => match compare(x, y) {
            Some(o) if o != Ordering::Equal => o,
            _ => {
                // Simple literals before others, then by lexical form.
                let sx = is_string(lx) as u8;
                let sy = is_string(ly) as u8;
                sy.cmp(&sx)
                    .then_with(|| lx.value().cmp(ly.value()))
                    .then_with(|| lx.datatype().as_str().cmp(ly.datatype().as_str()))
                    .then_with(|| lx.language().cmp(&ly.language()))
            }
        },
        // SPARQL 1.2: triple terms by subject, then predicate, then object.
        (Some(Term::Triple(x)), Some(Term::Triple(y))) => order(Some(&x.subject.clone().into()), Some(&y.subject.clone().into()))
            .then_with(|| x.predicate.as_str().cmp(y.predicate.as_str()))
            .then_with(|| order(Some(&x.object), Some(&y.object))),
        _ => Ordering::Equal,
    }
}

pub fn boolean(b: bool) -> Term {
    Literal::from(b).into()
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_of_different_types_compare_by_value() {
        let one: Term = Literal::from(1).into();
        let one_dec: Term = Literal::new_typed_literal("1.0", xsd::DECIMAL).into();
        assert_eq!(equals(&one, &one_dec), Some(true));
        let two: Term = Literal::from(2.5f64).into();
        assert_eq!(compare(&one, &two), Some(Ordering::Less));
    }

    #[test]
    fn integer_division_gives_a_decimal() {
        let (a, b): (Term, Term) = (Literal::from(1).into(), Literal::from(2).into());
        assert_eq!(arithmetic('/', &a, &b), Some(Literal::new_typed_literal("0.5", xsd::DECIMAL).into()));
    }

    #[test]
    fn order_puts_unbound_then_blank_then_iri_then_literal() {
        let iri: Term = oxrdf::NamedNode::new_unchecked("http://a").into();
        let lit: Term = Literal::from("a").into();
        assert_eq!(order(None, Some(&iri)), Ordering::Less);
        assert_eq!(order(Some(&lit), Some(&iri)), Ordering::Greater);
    }
}
