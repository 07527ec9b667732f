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

pub fn all_dbs(server: &Server, m: &Method) -> Result<Response<Body>, HttpError> {
    only(m, &[Method::GET, Method::HEAD], "GET,HEAD")?;
    Ok(json(200, &json!(server.all_dbs()?)))
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
            // Expires as well as Max-Age: some cookie jars (nano's) read only Expires.
            let expires = http::http_date(std::time::SystemTime::now() + std::time::Duration::from_secs(auth::SESSION_SECONDS));
            let cookie = format!("AuthSession={}; Version=1; Expires={expires}; Path=/; Max-Age={}; HttpOnly{}", auth::make_cookie(server, &name)?, auth::SESSION_SECONDS, server.auth.same_site.attributes());
            http::set_header(&mut r, "set-cookie", &cookie);
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

/// Name and password from a JSON or form body.
fn credentials(req: &Request) -> Result<(String, String), HttpError> {
    let form = req.header("content-type").is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    let (name, password) = if form {
        let text = std::str::from_utf8(&req.body).map_err(|_| HttpError::bad_request("form body is not UTF-8"))?;
        let pairs = http::parse_query(text)?;
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        (get("name"), get("password"))
    } else {
        let body = req.json()?;
        let get = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
        (get("name"), get("password"))
    };
    match (name, password) {
        (Some(n), Some(p)) => Ok((n, p)),
        _ => Err(HttpError::bad_request("name and password are required")),
    }
}
