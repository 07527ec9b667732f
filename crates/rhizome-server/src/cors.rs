//! Cross-origin requests (CORS), with CouchDB's settings and behaviour
//! (`chttpd_cors`, https://docs.couchdb.org/en/stable/config/http.html#cross-origin-resource-sharing):
//! off unless enabled (CouchDB's `[chttpd] enable_cors`; `rhizome serve
//! --enable-cors`), then for the listed origins or `*` (`[cors] origins`).
//!
//! - A preflight (`OPTIONS` with `Origin` and
//!   `Access-Control-Request-Method`) from an accepted origin, for an
//!   allowed method and only allowed request headers, is answered here,
//!   204, before authentication (a browser sends no credentials with it):
//!   `Access-Control-Allow-Origin` (the request's origin),
//!   `-Max-Age`, `-Allow-Methods`, `-Allow-Headers` (the requested ones),
//!   and `-Allow-Credentials: true` when credentials are allowed. Anything
//!   else is not a preflight and goes on as a request.
//! - Any other answer to a request with an accepted `Origin`, errors
//!   included, gets `Access-Control-Allow-Origin`, `-Allow-Credentials`
//!   when allowed, and `-Expose-Headers` (`content-type`, the simple
//!   headers of the answer and CouchDB's own: `etag`,
//!   `x-couch-update-newrev`, ...), so a page reads what PouchDB reads.
//!
//! An origin is accepted when it is in the list exactly (scheme, host and
//! port) or the list holds `*`. The origin is echoed, never `*`, so with
//! `--cors-credentials` and `*` a page from any origin may send cookies or
//! Basic credentials, as CouchDB allows: list the origins instead.

use hyper::header::{HeaderMap, HeaderValue};

/// CouchDB's `?SUPPORTED_HEADERS`: request headers a preflight may name.
const SUPPORTED_HEADERS: &[&str] = &[
    "accept",
    "accept-language",
    "authorization",
    "content-length",
    "content-range",
    "content-type",
    "destination",
    "expires",
    "if-match",
    "last-modified",
    "origin",
    "pragma",
    "x-couch-full-commit",
    "x-couch-id",
    "x-couch-persist",
    "x-couchdb-www-authenticate",
    "x-http-method-override",
    "x-requested-with",
    "x-couchdb-vhost-path",
];

/// CouchDB's `?SUPPORTED_METHODS`.
const SUPPORTED_METHODS: &[&str] = &["CONNECT", "COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE"];

/// CouchDB's `?COUCH_HEADERS`: answer headers exposed to pages by default.
const EXPOSED_HEADERS: &[&str] = &["accept-ranges", "etag", "server", "x-couch-request-id", "x-couch-update-newrev", "x-couchdb-body-time"];

/// Answer headers a page may read without being told (CORS's simple
/// response headers, as CouchDB lists them).
const SIMPLE_HEADERS: &[&str] = &["cache-control", "content-language", "content-type", "expires", "last-modified", "pragma"];

/// CouchDB's default `[cors] max_age`.
pub const DEFAULT_MAX_AGE_SECS: u64 = 600;

/// The `[cors]` settings (`rhizome serve --enable-cors` and `--cors-*`).
#[derive(Clone, Debug)]
pub struct CorsSettings {
    pub enabled: bool,
    /// Exact origins (`https://app.example:8443`), or `*`.
    pub origins: Vec<String>,
    pub credentials: bool,
    /// Methods a preflight may ask for; empty: CouchDB's list.
    pub methods: Vec<String>,
    /// Request headers a preflight may name; empty: CouchDB's list.
    pub headers: Vec<String>,
    /// Answer headers exposed besides the simple ones; empty: CouchDB's.
    pub exposed_headers: Vec<String>,
    pub max_age_secs: u64,
}

impl Default for CorsSettings {
    fn default() -> CorsSettings {
        CorsSettings {
            enabled: false,
            origins: Vec::new(),
            credentials: false,
            methods: Vec::new(),
            headers: Vec::new(),
            exposed_headers: Vec::new(),
            max_age_secs: DEFAULT_MAX_AGE_SECS,
        }
    }
}

impl CorsSettings {
    pub(crate) fn accepts(&self, origin: &str) -> bool {
        self.enabled && self.origins.iter().any(|o| o == "*" || o == origin)
    }

    pub(crate) fn methods(&self) -> Vec<String> {
        if self.methods.is_empty() {
            SUPPORTED_METHODS.iter().map(|m| m.to_string()).collect()
        } else {
            self.methods.clone()
        }
    }

    pub(crate) fn allowed_headers(&self) -> Vec<String> {
        if self.headers.is_empty() {
            SUPPORTED_HEADERS.iter().map(|h| h.to_string()).collect()
        } else {
            self.headers.iter().map(|h| h.to_ascii_lowercase()).collect()
        }
    }

    pub(crate) fn exposed(&self) -> Vec<String> {
        if self.exposed_headers.is_empty() {
            EXPOSED_HEADERS.iter().map(|h| h.to_string()).collect()
        } else {
            self.exposed_headers.iter().map(|h| h.to_ascii_lowercase()).collect()
        }
    }

    /// The answer's headers to a preflight, or `None` when the request is
    /// not one this server answers as such.
    pub fn preflight(&self, method: &hyper::Method, request: &HeaderMap) -> Option<Vec<(&'static str, String)>> {
        if *method != hyper::Method::OPTIONS {
            return None;
        }
        let origin = header(request, "origin")?;
        if !self.accepts(origin) {
            return None;
        }
        let asked = header(request, "access-control-request-method")?;
        let methods = self.methods();
        if !methods.iter().any(|m| m == asked) {
            return None;
        }
        let asked_headers = header(request, "access-control-request-headers").unwrap_or("");
        let allowed = self.allowed_headers();
        let all_allowed = asked_headers.split(',').map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).all(|h| allowed.contains(&h));
        if !all_allowed {
            return None;
        }
        let mut out = vec![
            ("access-control-allow-origin", origin.to_owned()),
            ("access-control-max-age", self.max_age_secs.to_string()),
            ("access-control-allow-methods", methods.join(", ")),
        ];
        if self.credentials {
            out.push(("access-control-allow-credentials", "true".to_owned()));
        }
        out.push(("access-control-allow-headers", asked_headers.to_owned()));
        Some(out)
    }

    /// Adds the CORS headers to an answer to a request with an accepted
    /// `Origin` (CouchDB lowercases the origin it echoes).
    pub fn decorate(&self, request: &HeaderMap, answer: &mut HeaderMap) {
        let Some(origin) = header(request, "origin").map(str::to_ascii_lowercase) else { return };
        if !self.accepts(&origin) {
            return;
        }
        let mut exposed: Vec<String> = answer.keys().map(|k| k.as_str().to_ascii_lowercase()).filter(|k| SIMPLE_HEADERS.contains(&k.as_str())).collect();
        // Content-Type is exposed unless its value is one of the simple ones.
        let simple_type = answer
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"].contains(&t.to_ascii_lowercase().as_str()));
        if !simple_type {
            exposed.retain(|h| h != "content-type");
            exposed.insert(0, "content-type".into());
        }
        exposed.extend(self.exposed());
        set(answer, "access-control-allow-origin", &origin);
        if self.credentials {
            set(answer, "access-control-allow-credentials", "true");
        }
        set(answer, "access-control-expose-headers", &exposed.join(", "));
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::Method;

    fn request(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn settings(origins: &[&str], credentials: bool) -> CorsSettings {
        CorsSettings { enabled: true, origins: origins.iter().map(|o| o.to_string()).collect(), credentials, ..CorsSettings::default() }
    }

    #[test]
    fn preflights_from_listed_origins_for_allowed_methods_and_headers_are_answered() {
        let cors = settings(&["http://app.example:8080"], true);
        let asked = request(&[("origin", "http://app.example:8080"), ("access-control-request-method", "PUT"), ("access-control-request-headers", "Content-Type, Authorization")]);
        let out = cors.preflight(&Method::OPTIONS, &asked).expect("a preflight");
        let get = |k: &str| out.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("access-control-allow-origin"), Some("http://app.example:8080"));
        assert_eq!(get("access-control-allow-credentials"), Some("true"));
        assert_eq!(get("access-control-allow-headers"), Some("Content-Type, Authorization"));
        assert_eq!(get("access-control-max-age"), Some("600"));
        assert!(get("access-control-allow-methods").unwrap().contains("PUT"));
        // Another origin, a method or header not allowed, CORS off: not a preflight.
        assert!(cors.preflight(&Method::OPTIONS, &request(&[("origin", "http://evil.example"), ("access-control-request-method", "GET")])).is_none());
        assert!(cors.preflight(&Method::OPTIONS, &request(&[("origin", "http://app.example:8080"), ("access-control-request-method", "PATCH")])).is_none());
        let odd = request(&[("origin", "http://app.example:8080"), ("access-control-request-method", "GET"), ("access-control-request-headers", "x-secret")]);
        assert!(cors.preflight(&Method::OPTIONS, &odd).is_none());
        assert!(CorsSettings { enabled: false, ..cors.clone() }.preflight(&Method::OPTIONS, &asked).is_none());
        assert!(cors.preflight(&Method::GET, &asked).is_none());
    }

    #[test]
    fn answers_to_accepted_origins_say_so_and_expose_couchdbs_headers() {
        let cors = settings(&["*"], false);
        let mut answer = request(&[("content-type", "application/json"), ("etag", "\"1-a\""), ("cache-control", "must-revalidate")]);
        cors.decorate(&request(&[("origin", "http://Page.example")]), &mut answer);
        assert_eq!(answer["access-control-allow-origin"], "http://page.example");
        assert!(answer.get("access-control-allow-credentials").is_none());
        let exposed = answer["access-control-expose-headers"].to_str().unwrap();
        assert!(exposed.starts_with("content-type, cache-control") && exposed.contains("etag") && exposed.contains("x-couch-update-newrev"), "{exposed}");
        let mut untouched = HeaderMap::new();
        settings(&["http://app.example"], true).decorate(&request(&[("origin", "http://other.example")]), &mut untouched);
        assert!(untouched.is_empty());
    }
}
