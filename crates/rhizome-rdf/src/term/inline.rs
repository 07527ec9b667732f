//! Inlined literals: small values carried inside the 56-bit payload of a
//! term id. A literal is inlined only when decoding gives back exactly its
//! lexical form, so `"01"^^xsd:integer` (not canonical) goes to the
//! dictionary and round-trips unchanged, while `"1"^^xsd:integer` is inlined.

use super::id::{tag, TermId, PAYLOAD_BITS};
use std::fmt::Write;

pub const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
pub const XSD_STRING: &str = "http://www.w3.org/2001/XMLSchema#string";
pub const XSD_BOOLEAN: &str = "http://www.w3.org/2001/XMLSchema#boolean";
pub const XSD_INTEGER: &str = "http://www.w3.org/2001/XMLSchema#integer";
pub const XSD_DECIMAL: &str = "http://www.w3.org/2001/XMLSchema#decimal";
pub const XSD_DATE: &str = "http://www.w3.org/2001/XMLSchema#date";
pub const XSD_DATE_TIME: &str = "http://www.w3.org/2001/XMLSchema#dateTime";

const SIGN_BIAS: i64 = 1 << (PAYLOAD_BITS - 1);
const DECIMAL_SCALE: i64 = 1_000_000;
const DECIMAL_DIGITS: usize = 6;

/// The inlined id of a typed literal, if it has one.
pub fn inline_literal(lexical: &str, datatype: &str) -> Option<TermId> {
    let local = datatype.strip_prefix(XSD)?;
    let id = match local {
        "string" => inline_string(lexical),
        "boolean" => match lexical {
            "true" => Some(TermId::new(tag::BOOLEAN, 1)),
            "false" => Some(TermId::new(tag::BOOLEAN, 0)),
            _ => None,
        },
        "integer" => inline_integer(lexical),
        "decimal" => inline_decimal(lexical),
        "date" => inline_date(lexical),
        "dateTime" => inline_date_time(lexical),
        _ => None,
    }?;
    // The rule of this module: never inline what would not come back as is.
    debug_assert_eq!(decode_inline(id).map(|(l, _)| l).as_deref(), Some(lexical));
    Some(id)
}

fn inline_string(s: &str) -> Option<TermId> {
    let b = s.as_bytes();
    if b.len() > 7 || b.contains(&0) {
        return None;
    }
    let mut payload = 0u64;
    for (i, byte) in b.iter().enumerate() {
        payload |= (*byte as u64) << (8 * (6 - i));
    }
    Some(TermId::new(tag::SHORT_STRING, payload))
}

fn signed_payload(v: i64) -> Option<u64> {
    if !(-SIGN_BIAS..SIGN_BIAS).contains(&v) {
        return None;
    }
    Some((v + SIGN_BIAS) as u64)
}

fn unsigned_payload(p: u64) -> i64 {
    p as i64 - SIGN_BIAS
}

/// The inlined id of the `xsd:integer` of value `v` (the id
/// `inline_literal(&v.to_string(), XSD_INTEGER)` gives, without writing the
/// lexical form): `None` outside the inlined range.
pub fn inline_integer_id(v: i64) -> Option<TermId> {
    Some(TermId::new(tag::INTEGER, signed_payload(v)?))
}

fn inline_integer(lexical: &str) -> Option<TermId> {
    let v: i64 = lexical.parse().ok()?;
    if v.to_string() != lexical {
        return None;
    }
    inline_integer_id(v)
}

fn inline_decimal(lexical: &str) -> Option<TermId> {
    let (int, frac) = lexical.split_once('.')?;
    if frac.is_empty() || frac.len() > DECIMAL_DIGITS || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (negative, digits) = match int.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, int),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 12 {
        return None;
    }
    let whole: i64 = digits.parse().ok()?;
    let mut f: i64 = frac.parse().ok()?;
    for _ in frac.len()..DECIMAL_DIGITS {
        f *= 10;
    }
    let magnitude = whole.checked_mul(DECIMAL_SCALE)?.checked_add(f)?;
    let v = if negative { -magnitude } else { magnitude };
    let id = TermId::new(tag::DECIMAL, signed_payload(v)?);
    (format_decimal(v) == lexical).then_some(id)
}

fn format_decimal(v: i64) -> String {
    let mut s = String::new();
    if v < 0 {
        s.push('-');
    }
    let m = v.unsigned_abs();
    let scale = DECIMAL_SCALE as u64;
    let _ = write!(s, "{}.", m / scale);
    let frac = format!("{:06}", m % scale);
    let trimmed = frac.trim_end_matches('0');
    s.push_str(if trimmed.is_empty() { "0" } else { trimmed });
    s
}

fn two_digits(s: &[u8], at: usize) -> Option<u32> {
    let a = *s.get(at)?;
    let b = *s.get(at + 1)?;
    if !a.is_ascii_digit() || !b.is_ascii_digit() {
        return None;
    }
    Some(((a - b'0') * 10 + (b - b'0')) as u32)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Parses `YYYY-MM-DD` at the start of `s`: (year, month, day).
fn parse_ymd(s: &[u8]) -> Option<(u32, u32, u32)> {
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let year = two_digits(s, 0)? * 100 + two_digits(s, 2)?;
    let month = two_digits(s, 5)?;
    let day = two_digits(s, 8)?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some((year, month, day))
}

/// Timezone field: 0 = none, else minutes east of UTC + 841.
fn parse_tz(s: &[u8]) -> Option<u64> {
    match s {
        [] => Some(0),
        [b'Z'] => Some(841),
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let h = two_digits(s, 1)?;
            let m = two_digits(s, 4)?;
            if m >= 60 || h > 14 || (h == 14 && m != 0) {
                return None;
            }
            let minutes = (h * 60 + m) as i64;
            let offset = if *sign == b'-' { -minutes } else { minutes };
            Some((offset + 841) as u64)
        }
        _ => None,
    }
}

fn format_tz(out: &mut String, tz: u64) {
    if tz == 0 {
        return;
    }
    let offset = tz as i64 - 841;
    if offset == 0 {
        out.push('Z');
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let m = offset.unsigned_abs();
        let _ = write!(out, "{sign}{:02}:{:02}", m / 60, m % 60);
    }
}

/// Whether a timezone field `parse_tz` accepted decodes as written: every
/// field does but `+00:00` and `-00:00`, which come back as `Z`. (Dates and
/// times are checked this way rather than by decoding and comparing: the
/// decode's formatting was 2% of a bulk load's CPU. The digits need no
/// check: `two_digits` reads exactly the widths the decode writes.)
fn tz_round_trips(field: &[u8]) -> bool {
    !(field.len() == 6 && &field[1..] == b"00:00")
}

fn inline_date(lexical: &str) -> Option<TermId> {
    let s = lexical.as_bytes();
    date_id(s).filter(|_| tz_round_trips(&s[10..]))
}

/// The id of a date, whether or not it decodes as written.
fn date_id(s: &[u8]) -> Option<TermId> {
    let (y, m, d) = parse_ymd(s)?;
    let tz = parse_tz(&s[10..])?;
    let payload = ((y as u64) << 21) | ((m as u64) << 17) | ((d as u64) << 12) | tz;
    Some(TermId::new(tag::DATE, payload))
}

fn inline_date_time(lexical: &str) -> Option<TermId> {
    let s = lexical.as_bytes();
    date_time_id(s).filter(|_| tz_round_trips(&s[19..]))
}

/// The id of a date and time, whether or not it decodes as written.
fn date_time_id(s: &[u8]) -> Option<TermId> {
    let (y, mo, d) = parse_ymd(s)?;
    if s.len() < 19 || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let h = two_digits(s, 11)?;
    let mi = two_digits(s, 14)?;
    let se = two_digits(s, 17)?;
    if h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let tz = parse_tz(&s[19..])?;
    let payload = ((y as u64) << 38)
        | ((mo as u64) << 34)
        | ((d as u64) << 29)
        | ((h as u64) << 24)
        | ((mi as u64) << 18)
        | ((se as u64) << 12)
        | tz;
    Some(TermId::new(tag::DATE_TIME, payload))
}

/// The lexical form and datatype of an inlined literal.
pub fn decode_inline(id: TermId) -> Option<(String, &'static str)> {
    let p = id.payload();
    Some(match id.tag() {
        tag::SHORT_STRING => {
            let bytes: Vec<u8> = (0..7).map(|i| (p >> (8 * (6 - i))) as u8).take_while(|b| *b != 0).collect();
            (String::from_utf8(bytes).ok()?, XSD_STRING)
        }
        tag::BOOLEAN => ((if p == 1 { "true" } else { "false" }).to_owned(), XSD_BOOLEAN),
        tag::INTEGER => (unsigned_payload(p).to_string(), XSD_INTEGER),
        tag::DECIMAL => (format_decimal(unsigned_payload(p)), XSD_DECIMAL),
        tag::DATE => {
            let mut s = format!("{:04}-{:02}-{:02}", p >> 21, (p >> 17) & 0xF, (p >> 12) & 0x1F);
            format_tz(&mut s, p & 0xFFF);
            (s, XSD_DATE)
        }
        tag::DATE_TIME => {
            let mut s = format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                p >> 38,
                (p >> 34) & 0xF,
                (p >> 29) & 0x1F,
                (p >> 24) & 0x1F,
                (p >> 18) & 0x3F,
                (p >> 12) & 0x3F
            );
            format_tz(&mut s, p & 0xFFF);
            (s, XSD_DATE_TIME)
        }
        _ => return None,
    })
}

/// The value of an inlined integer (for range scans and filters above).
pub fn inline_integer_value(id: TermId) -> Option<i64> {
    (id.tag() == tag::INTEGER).then(|| unsigned_payload(id.payload()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(lexical: &str, datatype: &str) -> bool {
        match inline_literal(lexical, datatype) {
            Some(id) => {
                let (l, d) = decode_inline(id).unwrap();
                assert_eq!((l.as_str(), d), (lexical, datatype));
                true
            }
            None => false,
        }
    }

    #[test]
    fn canonical_forms_are_inlined_and_round_trip() {
        for (l, d) in [
            ("1", XSD_INTEGER),
            ("-42", XSD_INTEGER),
            ("0", XSD_INTEGER),
            ("36028797018963967", XSD_INTEGER),
            ("1.5", XSD_DECIMAL),
            ("-0.25", XSD_DECIMAL),
            ("3.0", XSD_DECIMAL),
            ("true", XSD_BOOLEAN),
            ("false", XSD_BOOLEAN),
            ("2005-09-19", XSD_DATE),
            ("2005-09-19Z", XSD_DATE),
            ("2005-09-19-05:30", XSD_DATE),
            ("2000-02-29", XSD_DATE),
            ("2005-09-19T10:00:00", XSD_DATE_TIME),
            ("2005-09-19T23:59:59+14:00", XSD_DATE_TIME),
            ("", XSD_STRING),
            ("Bern", XSD_STRING),
            ("caf\u{e9}!", XSD_STRING),
        ] {
            assert!(round_trip(l, d), "{l} {d} should be inlined");
        }
    }

    /// The id of a value is the id of its canonical lexical form, in the
    /// inlined range and at both of its ends; past them there is none.
    #[test]
    fn integer_ids_from_values_are_those_of_their_lexical_forms() {
        for v in [0, 1, -1, 2, 239_273, -42, SIGN_BIAS - 1, -SIGN_BIAS, SIGN_BIAS, -SIGN_BIAS - 1, i64::MAX, i64::MIN] {
            assert_eq!(inline_integer_id(v), inline_literal(&v.to_string(), XSD_INTEGER), "{v}");
        }
        assert!(inline_integer_id(SIGN_BIAS).is_none() && inline_integer_id(-SIGN_BIAS - 1).is_none());
        assert_eq!(inline_integer_id(7).and_then(inline_integer_value), Some(7));
    }

    #[test]
    fn non_canonical_or_invalid_forms_are_not_inlined() {
        for (l, d) in [
            ("01", XSD_INTEGER),
            ("+1", XSD_INTEGER),
            ("-0", XSD_INTEGER),
            ("36028797018963968", XSD_INTEGER),
            ("1", XSD_DECIMAL),
            ("1.50", XSD_DECIMAL),
            ("-0.0", XSD_DECIMAL),
            (".5", XSD_DECIMAL),
            ("1.0000001", XSD_DECIMAL),
            ("1", XSD_BOOLEAN),
            ("2005-13-01", XSD_DATE),
            ("2001-02-29", XSD_DATE),
            ("2005-09-19+00:00", XSD_DATE),
            ("12005-09-19", XSD_DATE),
            ("2005-09-19T24:00:00", XSD_DATE_TIME),
            ("2005-09-19T10:00:00.5", XSD_DATE_TIME),
            ("2005-09-19T10:00:00+15:00", XSD_DATE_TIME),
            ("12345678", XSD_STRING),
            ("a\u{0}b", XSD_STRING),
        ] {
            assert!(!round_trip(l, d), "{l} {d} must not be inlined");
        }
    }

    #[test]
    fn a_date_is_inlined_exactly_when_its_decode_gives_it_back() {
        let mut lexicals = Vec::new();
        for tz in ["", "Z", "+00:00", "-00:00", "+14:00", "-14:00", "+05:30", "-01:05", "+14:01", "+15:00", "+1:00", "z", "+00:60"] {
            for date in ["0000-01-01", "2000-02-29", "2001-02-29", "9999-12-31", "2005-9-19", "2005-09-19"] {
                lexicals.push((format!("{date}{tz}"), XSD_DATE));
                for time in ["T00:00:00", "T23:59:59", "T24:00:00", "T10:00:00.5", "T1:00:00"] {
                    lexicals.push((format!("{date}{time}{tz}"), XSD_DATE_TIME));
                }
            }
        }
        for (lexical, datatype) in lexicals {
            let id = if datatype == XSD_DATE { date_id(lexical.as_bytes()) } else { date_time_id(lexical.as_bytes()) };
            let round_trips = id.and_then(decode_inline).is_some_and(|(l, _)| l == lexical);
            assert_eq!(inline_literal(&lexical, datatype).is_some(), round_trips, "{lexical}");
        }
    }

    #[test]
    fn inlined_numbers_and_dates_sort_by_value() {
        let ints: Vec<_> = ["-1000", "-1", "0", "7", "12", "99999"].iter().map(|l| inline_literal(l, XSD_INTEGER).unwrap()).collect();
        assert!(ints.windows(2).all(|w| w[0] < w[1]));
        let decs: Vec<_> = ["-2.5", "-0.25", "0.0", "0.001", "1.5", "10.0"].iter().map(|l| inline_literal(l, XSD_DECIMAL).unwrap()).collect();
        assert!(decs.windows(2).all(|w| w[0] < w[1]));
        let dates: Vec<_> = ["1999-12-31", "2000-01-01", "2000-02-01", "2010-01-01"].iter().map(|l| inline_literal(l, XSD_DATE).unwrap()).collect();
        assert!(dates.windows(2).all(|w| w[0] < w[1]));
        let strings: Vec<_> = ["", "a", "ab", "b", "ba"].iter().map(|l| inline_literal(l, XSD_STRING).unwrap()).collect();
        assert!(strings.windows(2).all(|w| w[0] < w[1]));
    }
}
