//! The built-in functions of SPARQL 1.1 (section 17.4) and the XSD casts.

use super::eval::evaluate;
use super::value::{boolean, ebv, numeric, Num};
use super::Expr;
use crate::eval::Evaluator;
use crate::plan::Row;
use oxrdf::vocab::xsd;
use oxrdf::{BaseDirection, BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, Triple};
use oxsdatatypes::*;
use spargebra::algebra::Function;
use std::rc::Rc;

/// A string argument: its lexical form and language, if any.
fn string_arg(t: &Term) -> Option<(&str, Option<&str>)> {
    match t {
        Term::Literal(l) if l.datatype() == xsd::STRING || l.language().is_some() => Some((l.value(), l.language())),
        _ => None,
    }
}

fn string_like(value: impl Into<String>, lang: Option<&str>) -> Term {
    match lang {
        Some(lang) => Literal::new_language_tagged_literal_unchecked(value, lang).into(),
        None => Literal::new_simple_literal(value).into(),
    }
}

/// A string with the language and base direction of `like` (SPARQL 1.2:
/// string functions keep a direction where they keep the language).
fn string_like_literal(value: impl Into<String>, like: &Literal) -> Term {
    match (like.language(), like.direction()) {
        (Some(lang), Some(dir)) => Literal::new_directional_language_tagged_literal_unchecked(value, lang, dir).into(),
        (lang, _) => string_like(value, lang),
    }
}

/// Argument compatibility of STRSTARTS and friends (17.4.3.1.4).
fn compatible<'t>(a: &'t Term, b: &'t Term) -> Option<((&'t str, Option<&'t str>), &'t str)> {
    let (x, lx) = string_arg(a)?;
    let (y, ly) = string_arg(b)?;
    match (lx, ly) {
        (_, None) => Some(((x, lx), y)),
        (Some(p), Some(q)) if p == q => Some(((x, lx), y)),
        _ => None,
    }
}

impl Evaluator<'_> {
    /// A compiled regular expression from the query's cache (`None`: the
    /// pattern or flags are invalid).
    pub(crate) fn regex(&self, pattern: &str, flags: Option<&str>) -> Option<Rc<regex::Regex>> {
        cached_regex(self, pattern, flags)
    }
}

/// `regex(pattern, flags)` from the query's cache of compiled patterns
/// (at most 256 kept: patterns computed per row do not grow it unbounded).
fn cached_regex(ev: &Evaluator<'_>, pattern: &str, flags: Option<&str>) -> Option<Rc<regex::Regex>> {
    let key = (pattern.to_owned(), flags.map(str::to_owned));
    if let Some(re) = ev.regexes.borrow().get(&key) {
        return re.clone();
    }
    let re = regex(pattern, flags).map(Rc::new);
    let mut cache = ev.regexes.borrow_mut();
    if cache.len() >= 256 {
        cache.clear();
    }
    cache.insert(key, re.clone());
    re
}

fn regex(pattern: &str, flags: Option<&str>) -> Option<regex::Regex> {
    let mut b = String::new();
    let mut literal = false;
    for f in flags.unwrap_or("").chars() {
        match f {
            'i' | 's' | 'm' | 'x' => b.push(f),
            'q' => literal = true,
            _ => return None,
        }
    }
    let pattern = if literal { regex::escape(pattern) } else { pattern.to_owned() };
    let full = if b.is_empty() { pattern } else { format!("(?{b}){pattern}") };
    regex::RegexBuilder::new(&full).size_limit(1 << 20).build().ok()
}

fn date_time_part(t: &Term) -> Option<(Option<DateTime>, Option<Date>, Option<Time>)> {
    let Term::Literal(l) = t else { return None };
    let dt = l.datatype();
    if dt == xsd::DATE_TIME {
        Some((Some(l.value().parse().ok()?), None, None))
    } else if dt == xsd::DATE {
        Some((None, Some(l.value().parse().ok()?), None))
    } else if dt == xsd::TIME {
        Some((None, None, Some(l.value().parse().ok()?)))
    } else {
        None
    }
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64));
    h.finish()
}

fn uuid() -> String {
    let (a, b) = (random_u64(), random_u64());
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x4000;
    format!("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48, b & 0xffff_ffff_ffff)
}

/// Values past this many bytes are weighed against the query's memory
/// budget (smaller ones are not worth the check).
const LARGE_VALUE_BYTES: usize = 4096;

/// A function's value, if it fits the query's memory budget: CONCAT,
/// REPLACE, UCASE or ENCODE_FOR_URI applied again and again can double a
/// string each time, so a value past the budget fails the query
/// (`Evaluator::value_fits`) instead of exhausting the server's memory.
pub fn call<'a>(ev: &Rc<Evaluator<'a>>, f: &'a Function, args: &'a [Expr], row: &Row) -> Option<Term> {
    let value = call_unchecked(ev, f, args, row)?;
    let bytes = match &value {
        Term::Literal(l) => l.value().len(),
        Term::NamedNode(n) => n.as_str().len(),
        _ => 0,
    };
    if bytes > LARGE_VALUE_BYTES && !ev.value_fits(bytes) {
        return None;
    }
    Some(value)
}

fn call_unchecked<'a>(ev: &Rc<Evaluator<'a>>, f: &'a Function, args: &'a [Expr], row: &Row) -> Option<Term> {
    let arg = |i: usize| -> Option<Term> { evaluate(ev, args.get(i)?, row) };
    match f {
        Function::Str => Some(match arg(0)? {
            Term::NamedNode(n) => Literal::new_simple_literal(n.into_string()).into(),
            Term::Literal(l) => Literal::new_simple_literal(l.value()).into(),
            _ => return None,
        }),
        Function::Lang => match arg(0)? {
            Term::Literal(l) => Some(Literal::new_simple_literal(l.language().unwrap_or("")).into()),
            _ => None,
        },
        Function::LangMatches => {
            let (tag, _) = string_arg(&arg(0)?).map(|(a, b)| (a.to_owned(), b.map(str::to_owned)))?;
            let (range, _) = string_arg(&arg(1)?).map(|(a, b)| (a.to_owned(), b.map(str::to_owned)))?;
            let (tag, range) = (tag.to_ascii_lowercase(), range.to_ascii_lowercase());
            Some(boolean(if range == "*" {
                !tag.is_empty()
            } else {
                tag == range || (tag.starts_with(&range) && tag.as_bytes().get(range.len()) == Some(&b'-'))
            }))
        }
        Function::Datatype => match arg(0)? {
            Term::Literal(l) => Some(l.datatype().into_owned().into()),
            _ => None,
        },
        Function::Iri => match arg(0)? {
            Term::NamedNode(n) => Some(n.into()),
            Term::Literal(l) if l.datatype() == xsd::STRING => {
                let iri = match &ev.base_iri {
                    Some(base) => base.resolve(l.value()).ok()?.into_inner(),
                    None => oxiri::Iri::parse(l.value().to_owned()).ok()?.into_inner(),
                };
                Some(NamedNode::new_unchecked(iri).into())
            }
            _ => None,
        },
        Function::BNode => match args.first() {
            None => Some(BlankNode::default().into()),
            Some(_) => {
                let (s, _) = string_arg(&arg(0)?).map(|(a, b)| (a.to_owned(), b.is_some()))?;
                // Same string, same solution: same blank node. Values this
                // query made up (earlier BNODE results of the same solution)
                // are left out of the solution's identity.
                let solution: Vec<u64> = row.iter().flatten().filter(|id| id.tag() != rhizome_rdf::term::tag::QUERY_LOCAL).map(|id| id.0).collect();
                let key = format!("{s}\u{0}{solution:?}");
                Some(BlankNode::new_unchecked(format!("q{:x}", xxh(&key))).into())
            }
        },
        Function::Rand => Some(Literal::from(Double::from((random_u64() >> 11) as f64 / (1u64 << 53) as f64)).into()),
        Function::Abs => num1(arg(0)?, |n| {
            Some(match n {
                Num::Integer(i) => Num::Integer(i.checked_abs()?),
                Num::Decimal(d) => Num::Decimal(d.checked_abs()?),
                Num::Float(f) => Num::Float(f.abs()),
                Num::Double(d) => Num::Double(d.abs()),
            })
        }),
        Function::Ceil => num1(arg(0)?, |n| {
            Some(match n {
                Num::Integer(i) => Num::Integer(i),
                Num::Decimal(d) => Num::Decimal(d.checked_ceil()?),
                Num::Float(f) => Num::Float(f.ceil()),
                Num::Double(d) => Num::Double(d.ceil()),
            })
        }),
        Function::Floor => num1(arg(0)?, |n| {
            Some(match n {
                Num::Integer(i) => Num::Integer(i),
                Num::Decimal(d) => Num::Decimal(d.checked_floor()?),
                Num::Float(f) => Num::Float(f.floor()),
                Num::Double(d) => Num::Double(d.floor()),
            })
        }),
        Function::Round => num1(arg(0)?, |n| {
            Some(match n {
                Num::Integer(i) => Num::Integer(i),
                Num::Decimal(d) => Num::Decimal(d.checked_round()?),
                Num::Float(f) => Num::Float(f.round()),
                Num::Double(d) => Num::Double(d.round()),
            })
        }),
        Function::Concat => {
            let mut out = String::new();
            // The language and direction all the arguments share, if any.
            let mut like: Option<Option<Literal>> = None;
            for i in 0..args.len() {
                let t = arg(i)?;
                let (s, _) = string_arg(&t)?;
                if out.len() + s.len() > LARGE_VALUE_BYTES && !ev.value_fits(out.len() + s.len()) {
                    return None;
                }
                out.push_str(s);
                let Term::Literal(l) = t else { return None };
                let same = |p: &Literal| p.language() == l.language() && p.direction() == l.direction();
                like = Some(match like {
                    None => l.language().is_some().then_some(l),
                    Some(Some(prev)) if same(&prev) => Some(prev),
                    Some(_) => None,
                });
            }
            Some(match like.flatten() {
                Some(l) => string_like_literal(out, &l),
                None => Literal::new_simple_literal(out).into(),
            })
        }
        Function::SubStr => {
            let t = arg(0)?;
            let (s, lang) = string_arg(&t)?;
            let start = numeric(&arg(1)?)?.to_double();
            let start: f64 = start.into();
            let chars: Vec<char> = s.chars().collect();
            let (from, to) = match args.get(2) {
                Some(_) => {
                    let len: f64 = numeric(&arg(2)?)?.to_double().into();
                    (start.round(), start.round() + len.round())
                }
                None => (start.round(), f64::INFINITY),
            };
            if from.is_nan() || to.is_nan() {
                return Some(string_like("", lang));
            }
            let out: String = chars
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    let p = (*i + 1) as f64;
                    p >= from && p < to
                })
                .map(|(_, c)| *c)
                .collect();
            Some(string_like(out, lang))
        }
        Function::StrLen => Some(Literal::from(string_arg(&arg(0)?)?.0.chars().count() as i64).into()),
        Function::Replace => {
            let t = arg(0)?;
            let (s, lang) = string_arg(&t)?;
            let p = arg(1)?;
            let r = arg(2)?;
            let flags = match args.get(3) {
                Some(_) => Some(string_arg(&arg(3)?)?.0.to_owned()),
                None => None,
            };
            let re = cached_regex(ev, string_arg(&p)?.0, flags.as_deref())?;
            if re.is_match("") {
                return None;
            }
            let replacement = xpath_replacement(string_arg(&r)?.0)?;
            let mut bounded = BoundedReplacement { replacement: &replacement, room: LARGE_VALUE_BYTES.max(s.len()), over: false };
            let mut out = re.replace_all(s, &mut bounded).into_owned();
            if bounded.over {
                // Past the room for a small value: redone once with the
                // room the budget leaves.
                if !ev.value_fits(bounded.room + 1) {
                    return None;
                }
                let room = ev.limits.memory_bytes.get().saturating_sub(ev.space.local_bytes());
                bounded = BoundedReplacement { replacement: &replacement, room, over: false };
                out = re.replace_all(s, &mut bounded).into_owned();
                if bounded.over && !ev.value_fits(room.saturating_add(1)) {
                    return None;
                }
            }
            Some(string_like(out, lang))
        }
        Function::UCase => {
            let t = arg(0)?;
            let (s, l) = string_arg(&t)?;
            Some(string_like(s.to_uppercase(), l))
        }
        Function::LCase => {
            let t = arg(0)?;
            let (s, l) = string_arg(&t)?;
            Some(string_like(s.to_lowercase(), l))
        }
        Function::EncodeForUri => {
            let t = arg(0)?;
            let (s, _) = string_arg(&t)?;
            let mut out = String::new();
            for b in s.bytes() {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            Some(Literal::new_simple_literal(out).into())
        }
        Function::Contains => {
            let (a, b) = (arg(0)?, arg(1)?);
            let ((x, _), y) = compatible(&a, &b)?;
            Some(boolean(x.contains(y)))
        }
        Function::StrStarts => {
            let (a, b) = (arg(0)?, arg(1)?);
            let ((x, _), y) = compatible(&a, &b)?;
            Some(boolean(x.starts_with(y)))
        }
        Function::StrEnds => {
            let (a, b) = (arg(0)?, arg(1)?);
            let ((x, _), y) = compatible(&a, &b)?;
            Some(boolean(x.ends_with(y)))
        }
        Function::StrBefore => {
            let (a, b) = (arg(0)?, arg(1)?);
            let ((x, lang), y) = compatible(&a, &b)?;
            Some(match x.find(y) {
                Some(i) => string_like(&x[..i], if i == 0 && y.is_empty() { lang } else if i == 0 { None } else { lang }),
                None => string_like("", None),
            })
        }
        Function::StrAfter => {
            let (a, b) = (arg(0)?, arg(1)?);
            let ((x, lang), y) = compatible(&a, &b)?;
            Some(match x.find(y) {
                Some(i) => string_like(&x[i + y.len()..], if x.len() == i + y.len() && !y.is_empty() { None } else { lang }),
                None => string_like("", None),
            })
        }
        Function::Year => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(d.year()).into()),
            (_, Some(d), _) => Some(Literal::from(d.year()).into()),
            _ => None,
        },
        Function::Month => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(i64::from(d.month())).into()),
            (_, Some(d), _) => Some(Literal::from(i64::from(d.month())).into()),
            _ => None,
        },
        Function::Day => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(i64::from(d.day())).into()),
            (_, Some(d), _) => Some(Literal::from(i64::from(d.day())).into()),
            _ => None,
        },
        Function::Hours => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(i64::from(d.hour())).into()),
            (_, _, Some(t)) => Some(Literal::from(i64::from(t.hour())).into()),
            _ => None,
        },
        Function::Minutes => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(i64::from(d.minute())).into()),
            (_, _, Some(t)) => Some(Literal::from(i64::from(t.minute())).into()),
            _ => None,
        },
        Function::Seconds => match date_time_part(&arg(0)?)? {
            (Some(d), _, _) => Some(Literal::from(d.second()).into()),
            (_, _, Some(t)) => Some(Literal::from(t.second()).into()),
            _ => None,
        },
        Function::Timezone => {
            let tz = match date_time_part(&arg(0)?)? {
                (Some(d), _, _) => d.timezone(),
                (_, Some(d), _) => d.timezone(),
                (_, _, Some(t)) => t.timezone(),
                _ => None,
            }?;
            Some(Literal::from(tz).into())
        }
        Function::Tz => {
            let t = arg(0)?;
            let Term::Literal(l) = &t else { return None };
            date_time_part(&t)?;
            let v = l.value();
            let tz = if v.ends_with('Z') {
                "Z".to_owned()
            } else if v.len() > 6 && (v.as_bytes()[v.len() - 6] == b'+' || v.as_bytes()[v.len() - 6] == b'-') && v.as_bytes()[v.len() - 3] == b':' {
                v[v.len() - 6..].to_owned()
            } else {
                String::new()
            };
            Some(Literal::new_simple_literal(tz).into())
        }
        Function::Now => Some(Literal::from(*ev.now.get_or_init(DateTime::now)).into()),
        Function::Uuid => Some(NamedNode::new_unchecked(format!("urn:uuid:{}", uuid())).into()),
        Function::StrUuid => Some(Literal::new_simple_literal(uuid()).into()),
        Function::StrLang => {
            let t = arg(0)?;
            let Term::Literal(l) = &t else { return None };
            if l.datatype() != xsd::STRING {
                return None;
            }
            let lang = arg(1)?;
            let (lang, None) = string_arg(&lang)? else { return None };
            Literal::new_language_tagged_literal(l.value(), lang).ok().map(Into::into)
        }
        Function::StrDt => {
            let t = arg(0)?;
            let Term::Literal(l) = &t else { return None };
            if l.datatype() != xsd::STRING {
                return None;
            }
            let Term::NamedNode(dt) = arg(1)? else { return None };
            Some(Literal::new_typed_literal(l.value(), dt).into())
        }
        Function::IsIri => Some(boolean(matches!(arg(0)?, Term::NamedNode(_)))),
        Function::IsBlank => Some(boolean(matches!(arg(0)?, Term::BlankNode(_)))),
        Function::IsLiteral => Some(boolean(matches!(arg(0)?, Term::Literal(_)))),
        Function::IsNumeric => Some(boolean(numeric(&arg(0)?).is_some())),
        Function::Regex => {
            let t = arg(0)?;
            let (s, _) = string_arg(&t)?;
            let p = arg(1)?;
            let flags = match args.get(2) {
                Some(_) => Some(string_arg(&arg(2)?)?.0.to_owned()),
                None => None,
            };
            let (pattern, None) = string_arg(&p)? else { return None };
            Some(boolean(cached_regex(ev, pattern, flags.as_deref())?.is_match(s)))
        }
        Function::Md5 => hash::<md5::Md5>(&arg(0)?),
        Function::Sha1 => hash::<sha1::Sha1>(&arg(0)?),
        Function::Sha256 => hash::<sha2::Sha256>(&arg(0)?),
        Function::Sha384 => hash::<sha2::Sha384>(&arg(0)?),
        Function::Sha512 => hash::<sha2::Sha512>(&arg(0)?),
        Function::Custom(name) => cast(name, arg(0)?),
        // SPARQL 1.2: triple terms (https://www.w3.org/TR/sparql12-query/#func-triple).
        Function::Triple => {
            let subject = match arg(0)? {
                Term::NamedNode(n) => NamedOrBlankNode::NamedNode(n),
                Term::BlankNode(b) => NamedOrBlankNode::BlankNode(b),
                _ => return None,
            };
            let Term::NamedNode(predicate) = arg(1)? else { return None };
            Some(Triple::new(subject, predicate, arg(2)?).into())
        }
        Function::Subject => match arg(0)? {
            Term::Triple(t) => Some(t.subject.into()),
            _ => None,
        },
        Function::Predicate => match arg(0)? {
            Term::Triple(t) => Some(t.predicate.into()),
            _ => None,
        },
        Function::Object => match arg(0)? {
            Term::Triple(t) => Some(t.object),
            _ => None,
        },
        Function::IsTriple => Some(boolean(matches!(arg(0)?, Term::Triple(_)))),
        // Base directions (https://www.w3.org/TR/sparql12-query/#func-langdir).
        Function::LangDir => match arg(0)? {
            Term::Literal(l) => Some(
                Literal::new_simple_literal(match l.direction() {
                    Some(BaseDirection::Ltr) => "ltr",
                    Some(BaseDirection::Rtl) => "rtl",
                    None => "",
                })
                .into(),
            ),
            _ => None,
        },
        Function::HasLang => Some(boolean(matches!(arg(0)?, Term::Literal(l) if l.language().is_some()))),
        Function::HasLangDir => Some(boolean(matches!(arg(0)?, Term::Literal(l) if l.direction().is_some()))),
        Function::StrLangDir => {
            let t = arg(0)?;
            let Term::Literal(l) = &t else { return None };
            if l.datatype() != xsd::STRING {
                return None;
            }
            let (lang, dir) = (arg(1)?, arg(2)?);
            let ((lang, None), (dir, None)) = (string_arg(&lang)?, string_arg(&dir)?) else { return None };
            let direction = match dir {
                "ltr" => BaseDirection::Ltr,
                "rtl" => BaseDirection::Rtl,
                _ => return None,
            };
            Literal::new_directional_language_tagged_literal(l.value(), lang, direction).ok().map(Into::into)
        }
    }
}

/// MD5 and SHA of a string's UTF-8 bytes, as lower-case hex.
/// A regex replacement that stops expanding once the output passes
/// `room` bytes, judged before each expansion (a `$0` repeated in the
/// replacement copies the whole match each time).
struct BoundedReplacement<'r> {
    replacement: &'r str,
    room: usize,
    over: bool,
}

impl regex::Replacer for &mut BoundedReplacement<'_> {
    fn replace_append(&mut self, caps: &regex::Captures<'_>, dst: &mut String) {
        let matched = caps.get(0).map_or(0, |m| m.len());
        let references = self.replacement.bytes().filter(|b| *b == b'$').count();
        let most = self.replacement.len().saturating_add(references.saturating_mul(matched));
        if self.over || dst.len().saturating_add(most) > self.room {
            self.over = true;
            return;
        }
        caps.expand(self.replacement, dst);
    }
}

fn hash<H: sha2::Digest>(t: &Term) -> Option<Term> {
    let Term::Literal(l) = t else { return None };
    if l.datatype() != xsd::STRING {
        return None;
    }
    let digest = H::digest(l.value().as_bytes());
    Some(Literal::new_simple_literal(digest.iter().map(|b| format!("{b:02x}")).collect::<String>()).into())
}

/// XPath's cast of a double to a string: plain decimal notation between
/// 1e-6 and 1e6 ("1", "1.25"), scientific notation outside.
fn xpath_double_string(v: f64, scientific: String) -> String {
    let a = v.abs();
    if v.is_finite() && (a == 0.0 || (1e-6..1e6).contains(&a)) {
        format!("{v}")
    } else {
        scientific
    }
}

/// An XPath replacement string in the regex crate's syntax: `$1` becomes
/// `${1}` (no ambiguity with names), `\$` and `\\` are literal; a lone `$`
/// or `\` is an error.
fn xpath_replacement(r: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                '$' => out.push_str("$$"),
                '\\' => out.push('\\'),
                _ => return None,
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    return None;
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            c => out.push(c),
        }
    }
    Some(out)
}

fn xxh(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

fn num1(t: Term, f: impl Fn(Num) -> Option<Num>) -> Option<Term> {
    f(numeric(&t)?).map(Num::into_term)
}

/// XSD constructor functions (`xsd:integer(?x)` and friends).
fn cast(name: &NamedNode, t: Term) -> Option<Term> {
    let dt = name.as_ref();
    let lexical = match &t {
        Term::Literal(l) if l.language().is_some() => return None,
        Term::Literal(l) => l.value().to_owned(),
        Term::NamedNode(n) if dt == xsd::STRING => n.as_str().to_owned(),
        _ => return None,
    };
    let num = numeric(&t);
    let is_bool = matches!(&t, Term::Literal(l) if l.datatype() == xsd::BOOLEAN);
    let from_string = matches!(&t, Term::Literal(l) if l.datatype() == xsd::STRING);
    let lit: Literal = if dt == xsd::STRING {
        // Numbers become their canonical form.
        let canonical = match num {
            Some(Num::Integer(i)) => i.to_string(),
            Some(Num::Decimal(d)) => d.to_string(),
            Some(Num::Float(f)) => xpath_double_string(f64::from(f32::from(f)), f.to_string()),
            Some(Num::Double(d)) => xpath_double_string(f64::from(d), d.to_string()),
            None if is_bool => (ebv(&t)? ).to_string(),
            None => lexical,
        };
        Literal::new_simple_literal(canonical)
    } else if dt == xsd::BOOLEAN {
        if let Some(n) = num {
            Literal::from(!n.is_zero_or_nan())
        } else if is_bool || from_string {
            Literal::from(lexical.trim().parse::<Boolean>().ok()?)
        } else {
            return None;
        }
    } else if dt == xsd::INTEGER {
        match num {
            Some(Num::Integer(i)) => Literal::from(i),
            Some(Num::Decimal(d)) => Literal::from(Integer::try_from(d).ok()?),
            Some(Num::Float(f)) => Literal::from(Integer::try_from(f).ok()?),
            Some(Num::Double(d)) => Literal::from(Integer::try_from(d).ok()?),
            None if is_bool => Literal::from(Integer::from(ebv(&t)?)),
            None if from_string => Literal::from(lexical.trim().parse::<Integer>().ok()?),
            None => return None,
        }
    } else if dt == xsd::DECIMAL {
        match num {
            Some(Num::Integer(i)) => Literal::from(Decimal::from(i)),
            Some(Num::Decimal(d)) => Literal::from(d),
            Some(Num::Float(f)) => Literal::from(Decimal::try_from(f).ok()?),
            Some(Num::Double(d)) => Literal::from(Decimal::try_from(d).ok()?),
            None if is_bool => Literal::from(Decimal::from(ebv(&t)?)),
            None if from_string => Literal::from(lexical.trim().parse::<Decimal>().ok()?),
            None => return None,
        }
    } else if dt == xsd::FLOAT {
        match num {
            Some(Num::Double(d)) => Literal::from(Float::from(d)),
            Some(n) => Literal::from(match Num::promote(n, Num::Float(Float::from(0u8)))?.0 {
                Num::Float(f) => f,
                _ => return None,
            }),
            None if is_bool => Literal::from(Float::from(Boolean::from(ebv(&t)?))),
            None if from_string => Literal::from(lexical.trim().parse::<Float>().ok()?),
            None => return None,
        }
    } else if dt == xsd::DOUBLE {
        match num {
            Some(n) => Literal::from(n.to_double()),
            None if is_bool => Literal::from(Double::from(Boolean::from(ebv(&t)?))),
            None if from_string => Literal::from(lexical.trim().parse::<Double>().ok()?),
            None => return None,
        }
    } else if dt == xsd::DATE_TIME {
        let src_dt = if let Term::Literal(l) = &t { l.datatype() } else { return None };
        if src_dt == xsd::DATE {
            Literal::from(DateTime::try_from(lexical.parse::<Date>().ok()?).ok()?)
        } else if src_dt == xsd::DATE_TIME || from_string {
            Literal::from(lexical.trim().parse::<DateTime>().ok()?)
        } else {
            return None;
        }
    } else if dt == xsd::DATE {
        let src_dt = if let Term::Literal(l) = &t { l.datatype() } else { return None };
        if src_dt == xsd::DATE_TIME {
            Literal::from(Date::try_from(lexical.parse::<DateTime>().ok()?).ok()?)
        } else if src_dt == xsd::DATE || from_string {
            Literal::from(lexical.trim().parse::<Date>().ok()?)
        } else {
            return None;
        }
    } else if dt == xsd::TIME {
        Literal::from(lexical.trim().parse::<Time>().ok()?)
    } else if dt == xsd::DURATION {
        Literal::from(lexical.trim().parse::<Duration>().ok()?)
    } else {
        return None;
    };
    Some(lit.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xpath_replacements_become_regex_syntax() {
        assert_eq!(xpath_replacement("$1-$10").as_deref(), Some("${1}-${10}"));
        assert_eq!(xpath_replacement("\\$5").as_deref(), Some("$$5"));
        assert_eq!(xpath_replacement("a$"), None);
    }

    #[test]
    fn doubles_cast_to_plain_decimals_in_the_middle_range() {
        assert_eq!(xpath_double_string(1.0, "1E0".into()), "1");
        assert_eq!(xpath_double_string(-7.875, String::new()), "-7.875");
        assert_eq!(xpath_double_string(1e7, "1E7".into()), "1E7");
    }
}
