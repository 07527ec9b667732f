//! What a request's body may be, checked by the router before a handler
//! runs (issue 44): the rules that keep a web page on another site from
//! writing through a signed-in user's browser.
//!
//! A page can make a browser send a `POST` to any server, with the user's
//! cookie or Basic credentials, without the server's leave, as long as the
//! body is `text/plain`, `application/x-www-form-urlencoded` or
//! `multipart/form-data` (a form, or `fetch` in `no-cors` mode). Any other
//! type makes the browser ask first (a CORS preflight), which this server
//! does not grant to other sites. So:
//!
//! - CouchDB's endpoints that take a JSON body take it only as
//!   `application/json` (or `application/ld+json`, a Rhizome extension
//!   for documents): 415 `bad_content_type` otherwise, with or without a
//!   body, exactly as CouchDB 3.5 answers (`chttpd:validate_ctype`), for
//!   `POST /{db}`, `_bulk_docs`, `_replicate`, `_find`, `_index`,
//!   `_all_docs`, `_changes`, `_compact` and the rest. `PUT` is not
//!   checked, as CouchDB does not: no page can send one without asking.
//! - `POST /_session` takes JSON or a form (CouchDB's rule).
//! - An LDP `POST` takes no form (a form is no resource; 415).
//! - The writes that must take a form-like body (a SPARQL update as a
//!   form, a Graph Store `multipart/form-data` or N-Triples as
//!   `text/plain`, an LDP `POST` of a `text/plain` file, a login) are
//!   refused (403) when the request says it comes from a page of another
//!   origin: an `Origin` that is not this server's (browsers send it with
//!   every cross-origin `POST`), or `Sec-Fetch-Site: cross-site`. Clients
//!   that are not browsers send neither. Origins the CORS settings accept
//!   (`--enable-cors --cors-origins`) are the admin's trusted pages, which
//!   may send any type anyway, so they are not refused; nor is a SPARQL
//!   query sent as a form, which only reads (a page of another origin
//!   cannot read the answer without CORS).

use crate::cors::CorsSettings;
use crate::error::HttpError;
use crate::http::Request;
use crate::router::{DbOp, Route};
use hyper::Method;

/// What a route takes as a `POST` body.
#[derive(Debug, PartialEq, Eq)]
enum Takes {
    /// `application/json` (or `application/ld+json`).
    Json,
    /// JSON or a URL-encoded form (`/_session`).
    JsonOrForm,
    /// Any type but a form (LDP: a file of any type).
    NoForm,
    /// The handler decides (SPARQL, the Graph Store Protocol, attachments).
    Own,
}

fn takes(route: &Route) -> Takes {
    match route {
        Route::Db(_) | Route::Replicate | Route::DbsInfo | Route::MangoIndex(..) | Route::ClusterSetup => Takes::Json,
        Route::DbOp(_, op) => match op {
            // CouchDB takes any body here (it reads none).
            DbOp::ViewCleanup => Takes::Own,
            _ => Takes::Json,
        },
        // Views queried by POST (`keys`) and a design document's compaction.
        Route::DesignAction(..) => Takes::Json,
        Route::Extension(_, what) if what == "_traverse" || what == "_path" => Takes::Json,
        Route::Session => Takes::JsonOrForm,
        Route::Ldp(..) => Takes::NoForm,
        _ => Takes::Own,
    }
}

/// The three types a page may send without a preflight (the Fetch
/// standard's CORS-safelisted `Content-Type`s), or none at all.
fn sendable_by_any_page(essence: Option<&str>) -> bool {
    matches!(essence, None | Some("text/plain" | "application/x-www-form-urlencoded" | "multipart/form-data"))
}

fn is_form(essence: Option<&str>) -> bool {
    matches!(essence, Some("application/x-www-form-urlencoded" | "multipart/form-data"))
}

/// Whether the request says a page of another origin made it, one the
/// CORS settings do not accept.
fn from_another_origin(req: &Request, cors: &CorsSettings) -> bool {
    if req.header("origin").is_some_and(|origin| cors.accepts(origin)) {
        return false;
    }
    if req.header("sec-fetch-site").is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) {
        return true;
    }
    let Some(origin) = req.header("origin") else { return false };
    let host = req.header("host").unwrap_or("");
    // `Origin: null` (a sandboxed frame, a redirect across sites) is
    // another origin too.
    match origin.split_once("://") {
        Some((_, authority)) => !authority.trim_end_matches('/').eq_ignore_ascii_case(host),
        None => true,
    }
}

/// Whether a form-like `POST` may write: a SPARQL query sent as a form
/// only reads (and a page of another origin cannot read the answer), so a
/// query form on another site keeps working; everything else here may
/// write. The protocol reads `update` from the URL's query string as well
/// as from the form (`sparql_protocol::operation`), so both are looked at.
fn may_write(route: &Route, req: &Request, essence: Option<&str>) -> bool {
    if !matches!(route, Route::Extension(_, what) if what == "_sparql") || essence != Some("application/x-www-form-urlencoded") {
        return true;
    }
    if req.query.iter().any(|(k, _)| k == "update") {
        return true;
    }
    match std::str::from_utf8(&req.body).ok().map(crate::http::parse_query) {
        Some(Ok(pairs)) => pairs.iter().any(|(k, _)| k == "update") || !pairs.iter().any(|(k, _)| k == "query"),
        _ => true,
    }
}

/// 415 or 403 for a body the route does not take from this request.
pub fn check(route: &Route, req: &Request, cors: &CorsSettings) -> Result<(), HttpError> {
    if req.method != Method::POST {
        return Ok(());
    }
    let essence = crate::rdf::negotiate::essence(req.header("content-type"));
    let essence = essence.as_deref();
    match takes(route) {
        Takes::Json if !matches!(essence, Some("application/json" | "application/ld+json")) => {
            return Err(HttpError::new(415, "bad_content_type", "Content-Type must be application/json"));
        }
        Takes::JsonOrForm if !matches!(essence, Some("application/json" | "application/x-www-form-urlencoded")) => {
            return Err(HttpError::new(415, "bad_content_type", "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'"));
        }
        Takes::NoForm if is_form(essence) => {
            return Err(HttpError::new(415, "unsupported_media_type", format!("an LDP resource is not a form ({}): send the body with its own media type", essence.unwrap_or(""))));
        }
        _ => {}
    }
    if sendable_by_any_page(essence) && may_write(route, req, essence) && from_another_origin(req, cors) {
        return Err(HttpError::forbidden(
            "a page of another origin sent this write with a body any page may send without asking (a form or text/plain): refused, so that no site can write through a signed-in browser",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check with CORS off (the default).
    fn check(route: &Route, req: &Request) -> Result<(), HttpError> {
        super::check(route, req, &CorsSettings::default())
    }

    fn req(method: Method, headers: &[(&str, &str)]) -> Request {
        let mut map = hyper::header::HeaderMap::new();
        for (k, v) in headers {
            map.insert(hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        Request {
            method,
            segments: Vec::new(),
            query: Vec::new(),
            headers: map,
            body: Default::default(),
            peer: None,
            cancelled: Default::default(),
            responder: Default::default(),
            memory: rhizome_sparql::MemoryPool::new(usize::MAX).reservation(),
        }
    }

    #[test]
    fn json_endpoints_take_json_only() {
        let db = Route::Db("db".into());
        let bulk = Route::DbOp("db".into(), DbOp::BulkDocs);
        for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/json"] {
            assert_eq!(check(&db, &req(Method::POST, &[("content-type", ct)])).unwrap_err().status, 415, "{ct}");
            assert_eq!(check(&bulk, &req(Method::POST, &[("content-type", ct)])).unwrap_err().status, 415, "{ct}");
        }
        assert_eq!(check(&Route::Replicate, &req(Method::POST, &[])).unwrap_err().status, 415, "no type at all");
        assert!(check(&db, &req(Method::POST, &[("content-type", "application/json; charset=utf-8")])).is_ok());
        assert!(check(&db, &req(Method::PUT, &[("content-type", "text/plain")])).is_ok(), "PUT is not checked, as CouchDB");
        assert!(check(&Route::Session, &req(Method::POST, &[("content-type", "application/x-www-form-urlencoded")])).is_ok());
        assert_eq!(check(&Route::Session, &req(Method::POST, &[("content-type", "text/plain")])).unwrap_err().status, 415);
    }

    #[test]
    fn form_like_writes_from_another_origin_are_refused() {
        let sparql = Route::Extension("db".into(), "_sparql".into());
        let form = ("content-type", "application/x-www-form-urlencoded");
        assert!(check(&sparql, &req(Method::POST, &[form])).is_ok(), "no Origin: not a browser's page");
        assert!(check(&sparql, &req(Method::POST, &[form, ("host", "h:5984"), ("origin", "http://h:5984")])).is_ok(), "same origin");
        assert_eq!(check(&sparql, &req(Method::POST, &[form, ("host", "h:5984"), ("origin", "http://evil.example")])).unwrap_err().status, 403);
        assert_eq!(check(&sparql, &req(Method::POST, &[form, ("host", "h:5984"), ("origin", "null")])).unwrap_err().status, 403);
        assert_eq!(check(&sparql, &req(Method::POST, &[form, ("sec-fetch-site", "cross-site")])).unwrap_err().status, 403);
        let mut query = req(Method::POST, &[form, ("host", "h:5984"), ("origin", "http://console.example")]);
        query.body = bytes::Bytes::from_static(b"query=ASK%7B%7D");
        assert!(check(&sparql, &query).is_ok(), "a query only reads");
        query.body = bytes::Bytes::from_static(b"query=ASK%7B%7D&update=DROP%20ALL");
        assert_eq!(check(&sparql, &query).unwrap_err().status, 403);
        query.body = bytes::Bytes::from_static(b"a=b");
        query.query = vec![("update".into(), "DROP ALL".into())];
        assert_eq!(check(&sparql, &query).unwrap_err().status, 403, "an update in the URL's query string");
        let update = ("content-type", "application/sparql-update");
        assert!(check(&sparql, &req(Method::POST, &[update, ("host", "h:5984"), ("origin", "http://app.example")])).is_ok(), "a type that needs the server's leave");
        let ldp = Route::Ldp("db".into(), Vec::new());
        assert_eq!(check(&ldp, &req(Method::POST, &[form])).unwrap_err().status, 415);
        assert!(check(&ldp, &req(Method::POST, &[("content-type", "text/plain")])).is_ok());
        assert_eq!(check(&ldp, &req(Method::POST, &[("content-type", "text/plain"), ("host", "h"), ("origin", "http://evil.example")])).unwrap_err().status, 403);
    }

    #[test]
    fn origins_cors_accepts_may_send_form_like_writes() {
        let graph = Route::Extension("db".into(), "_graph".into());
        let from = |origin: &'static str| req(Method::POST, &[("content-type", "text/plain"), ("host", "h:5984"), ("origin", origin), ("sec-fetch-site", "cross-site")]);
        let cors = CorsSettings { enabled: true, origins: vec!["https://app.example".into()], ..CorsSettings::default() };
        assert!(super::check(&graph, &from("https://app.example"), &cors).is_ok());
        assert_eq!(super::check(&graph, &from("https://evil.example"), &cors).unwrap_err().status, 403);
        let off = CorsSettings { enabled: false, ..cors };
        assert_eq!(super::check(&graph, &from("https://app.example"), &off).unwrap_err().status, 403, "listed but CORS off");
    }
}
