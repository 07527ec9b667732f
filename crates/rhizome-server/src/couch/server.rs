//! Server endpoints: `/`, `/_up`, `/_uuids`, `/_all_dbs`, `/_session`
//! (https://docs.couchdb.org/en/stable/api/server/common.html).

use crate::auth::{self, UserCtx};
use crate::error::HttpError;
use crate::http::{self, json, Body, Request};
use crate::state::Server;
use hyper::{Method, Response};
use serde_json::{json, Value};

/// The CouchDB version whose API we follow.
pub const COUCHDB_VERSION: &str = "3.3.3";

fn only(m: &Method, allowed: &[Method], names: &str) -> Result<(), HttpError> {
    if allowed.contains(m) {
        Ok(())
    } else {
        Err(HttpError::method_not_allowed(names))
    }
}

pub fn welcome(server: &Server, m: &Method) -> Result<Response<Body>, HttpError> {
    only(m, &[Method::GET, Method::HEAD], "GET,HEAD")?;
    Ok(json(
        200,
        &json!({
            "couchdb": "Welcome",
            "version": COUCHDB_VERSION,
            "git_sha": "rhizome",
            "uuid": server.identity.uuid,
            "features": ["access-ready"],
            "vendor": { "name": "Rhizome", "version": env!("CARGO_PKG_VERSION") },
        }),
    ))
}

pub fn up(m: &Method) -> Result<Response<Body>, HttpError> {
    only(m, &[Method::GET, Method::HEAD], "GET,HEAD")?;
    Ok(json(200, &json!({ "status": "ok", "seeds": {} })))
}

pub fn uuids(req: &Request) -> Result<Response<Body>, HttpError> {
    only(&req.method, &[Method::GET, Method::HEAD], "GET,HEAD")?;
    let count = req.number("count")?.unwrap_or(1);
    if count > 1000 {
        return Err(HttpError::bad_request("count parameter too large (at most 1000)"));
    }
    let ids: Vec<String> = (0..count).map(|_| http::uuid()).collect();
    Ok(json(200, &json!({ "uuids": ids })))
}

pub fn all_dbs(server: &Server, req: &Request) -> Result<Response<Body>, HttpError> {
    only(&req.method, &[Method::GET, Method::HEAD], "GET,HEAD")?;
    Ok(json(200, &json!(super::all_dbs::select(server.all_dbs()?, req)?)))
}

/// `/_session`: cookie login and logout
/// (https://docs.couchdb.org/en/stable/api/server/authn.html#cookie-authentication).
pub fn session(server: &Server, req: &Request, ctx: &UserCtx) -> Result<Response<Body>, HttpError> {
    match req.method {
        Method::GET | Method::HEAD => Ok(json(
            200,
            &json!({
                "ok": true,
                "userCtx": ctx.to_json(),
                "info": { "authentication_handlers": ["cookie", "default"], "authenticated": ctx.method },
            }),
        )),
        Method::POST => {
            let (name, password) = credentials(req)?;
            let Some(roles) = auth::check_password(server, &name, &password, req.peer)? else {
                return Err(HttpError::unauthorized("Name or password is incorrect."));
            };
            let mut r = json(200, &json!({ "ok": true, "name": name, "roles": roles }));
            http::set_header(&mut r, "set-cookie", &session_set_cookie(server, &name)?);
            Ok(r)
        }
        Method::DELETE => {
            auth::end_session(server, req)?;
            let mut r = json(200, &json!({ "ok": true }));
            let cookie = format!("AuthSession=; Version=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/; Max-Age=0; HttpOnly{}", server.auth.same_site.attributes());
            http::set_header(&mut r, "set-cookie", &cookie);
            Ok(r)
        }
        _ => Err(HttpError::method_not_allowed("GET,HEAD,POST,DELETE")),
    }
}

/// The `Set-Cookie` value of a new session of `name`, at login and when a
/// session is renewed (`auth::renewal_cookie`).
pub fn session_set_cookie(server: &Server, name: &str) -> Result<String, HttpError> {
    // Expires as well as Max-Age: some cookie jars (nano's) read only Expires.
    let lifetime = server.auth.session_timeout_secs;
    let expires = http::http_date(std::time::SystemTime::now() + std::time::Duration::from_secs(lifetime));
    Ok(format!("AuthSession={}; Version=1; Expires={expires}; Path=/; Max-Age={lifetime}; HttpOnly{}", auth::make_cookie(server, name)?, server.auth.same_site.attributes()))
}

/// Name and password from a JSON or form body, as CouchDB reads them
/// (`couch_httpd_auth:extract_username`): the name as `name` or
/// `username` (IBM's Cloudant SDK sends `username`; both, if they differ,
/// are a 400), the password empty when absent (so a wrong login, 401).
fn credentials(req: &Request) -> Result<(String, String), HttpError> {
    let content_type = req.header("content-type").unwrap_or("").trim_start().to_ascii_lowercase();
    let pairs: Vec<(String, String)> = if content_type.starts_with("application/x-www-form-urlencoded") {
        let text = std::str::from_utf8(&req.body).map_err(|_| HttpError::bad_request("form body is not UTF-8"))?;
        http::parse_query(text)?
    } else if content_type.starts_with("application/json") {
        let body = req.json_object()?;
        body.into_iter().filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            _ => None,
        }).collect()
    } else {
        return Err(HttpError::new(415, "bad_content_type", "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'"));
    };
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let name = match (get("name"), get("username")) {
        (None, None) => return Err(HttpError::bad_request("request body must contain a username")),
        (Some(a), Some(b)) if a != b => return Err(HttpError::bad_request("request body contains different usernames")),
        (Some(n), _) | (None, Some(n)) => n,
    };
    Ok((name, get("password").unwrap_or_default()))
}
