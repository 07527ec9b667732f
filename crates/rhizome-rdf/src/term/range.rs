//! Id ranges for comparisons with an inlined value: which term ids can hold
//! a term `t` for which `t >= c`, `t <= c` or `t = c` may be true, when `c`
//! is an inlined number, date or date-time. Inlined ids of one tag sort in
//! value order, so a filter such as `?x >= 10` becomes a key range of an
//! index ordered by the object, instead of a scan of every object.
//!
//! The ranges are a superset of the answer (the filter still runs on what
//! they let through):
//! - the constant's own tag, cut at the constant (dates and date-times
//!   widened by a day each way, as values with other time zones can compare
//!   either way within 14 hours);
//! - every other inlined tag of the same kind whole (integers and decimals
//!   compare with each other);
//! - every dictionary literal of another datatype whole (doubles, floats,
//!   derived integer types, non-canonical forms, dates out of the inlined
//!   range).

use super::id::{tag, TermId, PAYLOAD_MASK};


/// Which side of the constant the term must lie on (strict comparisons
/// use the same ranges; the filter drops the constant itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    AtLeast,
    AtMost,
    Equal,
}

/// Inclusive id intervals, sorted and disjoint.
pub type IdRanges = Vec<(TermId, TermId)>;

fn whole(t: u8) -> (TermId, TermId) {
    (TermId::new(t, 0), TermId::new(t, PAYLOAD_MASK))
}

/// The ids a term comparing with `constant` on `side` can have; `None` when
/// the constant is not an inlined number, date or date-time (no pruning).
pub fn comparison_ranges(side: Side, constant: TermId) -> Option<IdRanges> {
    let (low, high) = match constant.tag() {
        tag::INTEGER | tag::DECIMAL => (constant, constant),
        tag::DATE => widen(constant, 21, 17, 12)?,
        tag::DATE_TIME => widen(constant, 38, 34, 29)?,
        _ => return None,
    };
    let own = constant.tag();
    let (min, max) = whole(own);
    let cut = match side {
        Side::AtLeast => (low, max),
        Side::AtMost => (min, high),
        Side::Equal => (low, high),
    };
    let mut out: IdRanges = Vec::with_capacity(3);
    for t in [tag::INTEGER, tag::DECIMAL, tag::DATE, tag::DATE_TIME, tag::TYPED] {
        if t == own {
            out.push(cut);
        } else if t == tag::TYPED || (own == tag::INTEGER && t == tag::DECIMAL) || (own == tag::DECIMAL && t == tag::INTEGER) {
            out.push(whole(t));
        }
    }
    Some(out)
}

/// The intervals both sets allow.
pub fn intersect(a: &[(TermId, TermId)], b: &[(TermId, TermId)]) -> IdRanges {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let low = a[i].0.max(b[j].0);
        let high = a[i].1.min(b[j].1);
        if low <= high {
            out.push((low, high));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The ids from the day before to the day after the date part of an
/// inlined date or date-time whose year, month and day start at the given
/// payload bits: every value of the tag within 14 hours of it lies inside.
fn widen(id: TermId, year_bit: u32, month_bit: u32, day_bit: u32) -> Option<(TermId, TermId)> {
    let p = id.payload();
    let y = p >> year_bit;
    let m = (p >> month_bit) & 0xF;
    let d = (p >> day_bit) & 0x1F;
    if !(1..=12).contains(&m) || d == 0 {
        return None;
    }
    // A day before (the 28th stands for a month's last day: lower is safe).
    let (y0, m0, d0) = match (d, m) {
        (d, m) if d > 1 => (y, m, d - 1),
        (_, m) if m > 1 => (y, m - 1, 28),
        _ if y > 0 => (y - 1, 12, 28),
        _ => (0, 0, 0),
    };
    // A day after (from the 28th on, the first of the next month is later
    // than every day left in this one: higher is safe).
    let (y1, m1, d1) = match (d, m) {
        (d, m) if d < 28 => (y, m, d + 1),
        (_, m) if m < 12 => (y, m + 1, 1),
        _ => (y + 1, 1, 1),
    };
    let at = |y: u64, m: u64, d: u64| (y << year_bit) | (m << month_bit) | (d << day_bit);
    let low = at(y0, m0, d0);
    let high = (at(y1, m1, d1) | ((1 << day_bit) - 1)).min(PAYLOAD_MASK);
    Some((TermId::new(id.tag(), low), TermId::new(id.tag(), high)))
}

#[cfg(test)]
mod tests {
    use crate::term::inline::{inline_literal, XSD_DATE, XSD_DATE_TIME, XSD_DECIMAL, XSD_INTEGER};
    use super::*;

    fn inside(ranges: &[(TermId, TermId)], id: TermId) -> bool {
        ranges.iter().any(|(l, h)| *l <= id && id <= *h)
    }

    #[test]
    fn integers_at_least_keep_larger_integers_every_decimal_and_the_dictionary() {
        let ten = inline_literal("10", XSD_INTEGER).unwrap();
        let r = comparison_ranges(Side::AtLeast, ten).unwrap();
        assert!(inside(&r, inline_literal("10", XSD_INTEGER).unwrap()));
        assert!(inside(&r, inline_literal("11", XSD_INTEGER).unwrap()));
        assert!(!inside(&r, inline_literal("9", XSD_INTEGER).unwrap()));
        assert!(!inside(&r, inline_literal("-20", XSD_INTEGER).unwrap()));
        assert!(inside(&r, inline_literal("2.5", XSD_DECIMAL).unwrap()));
        assert!(inside(&r, TermId::new(tag::TYPED, 7)));
        assert!(!inside(&r, TermId::new(tag::STRING, 7)));
        assert!(!inside(&r, TermId::new(tag::IRI, 7)));
        assert!(!inside(&r, inline_literal("2010-01-01", XSD_DATE).unwrap()));
    }

    #[test]
    fn dates_are_widened_by_a_day_across_month_and_year_ends() {
        let c = inline_literal("2010-01-01", XSD_DATE).unwrap();
        let at_least = comparison_ranges(Side::AtLeast, c).unwrap();
        assert!(inside(&at_least, inline_literal("2009-12-31+10:00", XSD_DATE).unwrap()));
        assert!(inside(&at_least, inline_literal("2010-01-01", XSD_DATE).unwrap()));
        assert!(!inside(&at_least, inline_literal("2009-12-01", XSD_DATE).unwrap()));
        let c = inline_literal("2011-12-31", XSD_DATE).unwrap();
        let at_most = comparison_ranges(Side::AtMost, c).unwrap();
        assert!(inside(&at_most, inline_literal("2012-01-01-05:00", XSD_DATE).unwrap()));
        assert!(!inside(&at_most, inline_literal("2012-01-02", XSD_DATE).unwrap()));
        assert!(inside(&at_most, TermId::new(tag::TYPED, 1)));
        let both = intersect(&at_least, &at_most);
        assert!(inside(&both, inline_literal("2011-06-15", XSD_DATE).unwrap()));
        assert!(!inside(&both, inline_literal("2013-06-15", XSD_DATE).unwrap()));
        assert!(!inside(&both, TermId::new(tag::INTEGER, 5)));
    }

    #[test]
    fn date_times_are_widened_by_a_day() {
        let c = inline_literal("2018-03-01T00:00:00", XSD_DATE_TIME).unwrap();
        let r = comparison_ranges(Side::AtLeast, c).unwrap();
        assert!(inside(&r, inline_literal("2018-02-28T20:00:00-08:00", XSD_DATE_TIME).unwrap()));
        assert!(inside(&r, inline_literal("2019-01-01T00:00:00", XSD_DATE_TIME).unwrap()));
        assert!(!inside(&r, inline_literal("2018-01-15T00:00:00", XSD_DATE_TIME).unwrap()));
    }

    #[test]
    fn other_constants_give_no_ranges() {
        assert!(comparison_ranges(Side::AtLeast, TermId::new(tag::STRING, 3)).is_none());
        assert!(comparison_ranges(Side::Equal, TermId::new(tag::IRI, 3)).is_none());
    }
}
