//! `Prefer: return=representation; include="..."; omit="..."` (RFC 7240,
//! LDP §4.2.2.6 and §7.2): which derived triples a container's GET
//! carries.

use crate::vocab::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preferences {
    /// `ldp:contains` triples.
    pub containment: bool,
    /// Membership triples.
    pub membership: bool,
    /// Whether the request's `return=representation` was honoured (then
    /// the response says `Preference-Applied: return=representation`).
    pub applied: bool,
}

impl Default for Preferences {
    fn default() -> Preferences {
        Preferences { containment: true, membership: true, applied: false }
    }
}

/// The IRIs of a quoted, space-separated parameter value.
fn iris(v: &str) -> Vec<&str> {
    v.trim().trim_matches('"').split_whitespace().collect()
}

impl Preferences {
    /// From every `Prefer` header of a request.
    pub fn parse<'a>(headers: impl IntoIterator<Item = &'a str>) -> Preferences {
        let mut out = Preferences::default();
        for header in headers {
            for pref in header.split(',') {
                let mut params = pref.split(';').map(str::trim);
                let Some(first) = params.next() else { continue };
                if !first.replace(' ', "").eq_ignore_ascii_case("return=representation") {
                    continue;
                }
                let (mut include, mut omit) = (Vec::new(), Vec::new());
                for p in params {
                    match p.split_once('=') {
                        Some((k, v)) if k.trim().eq_ignore_ascii_case("include") => include.extend(iris(v)),
                        Some((k, v)) if k.trim().eq_ignore_ascii_case("omit") => omit.extend(iris(v)),
                        _ => {}
                    }
                }
                let minimal = include.iter().any(|i| *i == PREFER_MINIMAL_CONTAINER || *i == PREFER_EMPTY_CONTAINER);
                if minimal {
                    out.containment = false;
                    out.membership = false;
                }
                for i in &include {
                    match *i {
                        PREFER_CONTAINMENT => out.containment = true,
                        PREFER_MEMBERSHIP => out.membership = true,
                        _ => {}
                    }
                }
                for o in &omit {
                    match *o {
                        PREFER_CONTAINMENT => out.containment = false,
                        PREFER_MEMBERSHIP => out.membership = false,
                        _ => {}
                    }
                }
                out.applied = true;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefer_headers_select_derived_triples() {
        assert_eq!(Preferences::parse([]), Preferences::default());
        let minimal = Preferences::parse([r#"return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer""#]);
        assert_eq!((minimal.containment, minimal.membership, minimal.applied), (false, false, true));
        let omit = Preferences::parse([r#"return=representation; omit="http://www.w3.org/ns/ldp#PreferMembership http://www.w3.org/ns/ldp#PreferContainment""#]);
        assert_eq!((omit.containment, omit.membership), (false, false));
        let both = Preferences::parse([r#"return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer http://www.w3.org/ns/ldp#PreferContainment""#]);
        assert_eq!((both.containment, both.membership), (true, false));
        assert!(!Preferences::parse(["respond-async"]).applied);
    }
}
